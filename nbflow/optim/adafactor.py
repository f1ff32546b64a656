"""Adafactor (PyTorch's torch.optim.Adafactor, 2.5+): Adam-like steps whose second moment of a
matrix is kept factored, as a row and a column mean of the squared gradient (O(m + n) state
for an m x n weight, over the last two dims of a higher-rank one), with a relative step size
(the parameter's RMS times min(lr, 1/sqrt(t))) and update clipping by d.

A composition of tensor ops (a ComposedOptimizer, as Adamax and NAdam): `step()` runs it
eagerly, `minimize(loss)` appends it to a program (static or under @nbflow.jit), the lr, d and
beta2_decay read from the group's 0-d tensors so a schedule reaches the program. The scalars
PyTorch reads back with .item() (the parameter's and the update's RMS) are float64 values of
the program there, the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..core import dtypes as dt
from ..core.errors import DomainError, DTypeError
from .optimizer import (
    ComposedOptimizer,
    _check,
    _coef,
    _count_step,
    _flags,
    _is_real,
    _maximum,
    _number,
    _sqrt,
)

__all__ = ["Adafactor"]


def _minimum(a, b):
    return min(a, b) if not hasattr(a, "dtype") and not hasattr(b, "dtype") else ops.minimum(a, b)


def _rms(x):
    """sqrt(mean(x^2)) as a float64 coefficient (PyTorch's x.norm(2).item() / sqrt(numel)):
    the norm in x's dtype, as PyTorch computes it, then widened."""
    return _number(ops.sqrt(ops.sum(x * x))) / math.sqrt(math.prod(x.shape))


def _lerp_(avg, value, weight):
    """avg += weight * (value - avg), in place (torch.lerp_)."""
    ops.add_(avg, (value - avg) * _coef(weight, avg))


class Adafactor(ComposedOptimizer):
    """Adafactor (PyTorch's defaults: lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
    weight_decay=0.0, foreach=None, maximize=False). eps[0] (None: the dtype's machine epsilon)
    floors the second moment, eps[1] the parameter's RMS in the step size; d clips the
    update's RMS; weight_decay is decoupled (p *= 1 - lr * weight_decay). `foreach` is
    accepted for PyTorch's signature (one code path). State: `row_var` and `col_var` for a
    parameter of two dims or more, `variance` for a vector or a scalar, and `step`."""

    state_names = ("step", "row_var", "col_var", "variance")

    def __init__(
        self,
        params=None,
        lr=1e-2,
        beta2_decay=-0.8,
        eps=(None, 1e-3),
        d=1.0,
        weight_decay=0.0,
        *,
        foreach=None,
        maximize=False,
    ):
        _check(lr=lr, weight_decay=weight_decay)
        if not _is_real(beta2_decay) or not beta2_decay <= 0.0:
            raise DomainError(f"beta2_decay should be a number <= 0 but is: {beta2_decay!r}")
        eps1, eps2 = _eps_pair(eps)
        if not _is_real(d) or not d >= 1.0:
            raise DomainError(f"Clipping threshold d should be a number >= 1 but is: {d!r}")
        hyper = {
            "lr": float(lr),
            "beta2_decay": float(beta2_decay),
            # (a pair with a None: read when an update is built, not a program input)
            "eps": (None if eps1 is None else float(eps1), float(eps2)),
            "d": float(d),
            "weight_decay": float(weight_decay),
            "foreach": foreach,
            **_flags(self, maximize=maximize),
        }
        super().__init__(params, hyper)

    def states_for(self, p) -> tuple[str, ...]:
        """The factored second moment for a parameter of two dims or more, else the full one."""
        if dt.is_complex(p.dtype):  # (its factored moments have no pairs-of-reals form)
            raise DTypeError("Adafactor does not support complex parameters (nor does PyTorch's)")
        return ("step", "row_var", "col_var") if len(p.shape) > 1 else ("step", "variance")

    def state_spec(self, name: str, p) -> tuple:
        shape = tuple(p.shape)
        if name == "row_var":
            return (*shape[:-1], 1), p.dtype, 0.0
        if name == "col_var":
            return (*shape[:-2], 1, shape[-1]), p.dtype, 0.0
        return super().state_spec(name, p)

    def update(self, p, g, s, h):
        if self.hyper["maximize"]:
            g = -g
        eps1, eps2 = self.hyper["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(p.dtype).eps)
        t = _count_step(s)
        one_minus_beta2 = t ** h["beta2_decay"]
        rho = _minimum(h["lr"], 1 / _sqrt(t))
        alpha = _maximum(_rms(p), eps2) * rho  # (the parameter before the weight decay)
        if self.hyper["weight_decay"]:
            ops.mul_(p, _coef(1 - h["lr"] * h["weight_decay"], p))
        if len(p.shape) > 1:
            _lerp_(s["row_var"], ops.mean(g * g, axis=-1, keepdims=True), one_minus_beta2)
            _lerp_(s["col_var"], ops.mean(g * g, axis=-2, keepdims=True), one_minus_beta2)
            row_mean = ops.mean(s["row_var"], axis=-2, keepdims=True)
            var_estimate = ops.matmul(s["row_var"], s["col_var"]) / ops.clip(row_mean, min=eps1)
        else:
            _lerp_(s["variance"], g * g, one_minus_beta2)
            var_estimate = s["variance"]
        update = ops.rsqrt(ops.clip(var_estimate, min=eps1 * eps1)) * g
        denom = _maximum(_rms(update) / h["d"], 1.0)
        ops.add_(p, update * _coef(-alpha / denom, p))


def _eps_pair(eps) -> tuple:
    """Adafactor's eps: a pair (eps1 or None, eps2), each >= 0 (unpacking anything else raised
    a builtin ValueError or TypeError)."""
    pair = isinstance(eps, (tuple, list)) and len(eps) == 2
    if not pair or not all(e is None or _is_real(e) for e in eps) or eps[1] is None:
        raise DomainError(f"eps must be a pair (eps1 or None, eps2) of numbers, got {eps!r}")
    eps1, eps2 = eps
    if eps1 is not None and not eps1 >= 0.0:
        raise DomainError(f"epsilon1 should be >= 0 but is: {eps1}")
    if not eps2 >= 0.0:
        raise DomainError(f"epsilon2 should be >= 0 but is: {eps2}")
    return eps1, eps2
