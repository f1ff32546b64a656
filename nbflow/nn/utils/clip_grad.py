"""Gradient clipping (PyTorch's torch/nn/utils/clip_grad.py): by the total norm of the
gradients (clip_grad_norm_, its two halves get_total_norm and clip_grads_with_norm_, and
clip_grads_by_norm_, which also clips graph mode's gradient vars) or by value."""

from __future__ import annotations

import math

from ... import ops
from ...core import dtypes as dt
from ...core import no_grad
from ...core.errors import DomainError, GradientError, UnsupportedError
from ...eager.tensor import Tensor
from ...graph import Var

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_by_norm_",
    "clip_grads_with_norm_",
    "get_total_norm",
]


def _as_list(tensors) -> list:
    """A tensor or an iterable of them, as a list (PyTorch accepts both)."""
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters) -> list:
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of all `tensors` together, as if concatenated into one vector (a 0-d tensor).
    `foreach` is accepted for PyTorch's signature; nbflow has one code path."""
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not norm_type > 0:
        raise DomainError(f"norm_type must be > 0 (or inf), got {norm_type}")
    if not tensors:
        return ops.zeros()
    with no_grad():
        if math.isinf(norm_type):
            total = ops.max(ops.stack(*[ops.max(ops.abs(t)) for t in tensors]))
        else:
            powers = [ops.sum(ops.abs(t) ** norm_type) for t in tensors]
            total = ops.add_n(*powers) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(float(total.item())):
        raise GradientError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None) -> None:
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)), in place: the second
    half of clip_grad_norm_, for a norm computed elsewhere (e.g. across data-parallel ranks)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = ops.clip(float(max_norm) / (total_norm + 1e-6), max=1.0)
        for g in grads:
            ops.mul_(g, coef if g.dtype == coef.dtype else ops.cast(coef, dtype=g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """PyTorch's: clip the .grad of `parameters` (a tensor or an iterable of them) in place so
    that their total norm is at most max_norm; returns the total norm before clipping. With
    error_if_nonfinite a nan or inf total raises GradientError (a RuntimeError, as PyTorch's)
    before any gradient changes. Eager mode (also nbflow.optim.clip_grad_norm_): in graph mode
    use minimize(loss, max_grad_norm=...) or clip_grads_by_norm_ on the gradient vars."""
    parameters = _as_list(parameters)  # (a generator would be spent by the first pass)
    if any(isinstance(p, Var) for p in parameters):
        raise UnsupportedError(
            "clip_grad_norm_ is eager; in graph mode use minimize(loss, max_grad_norm=...) or "
            "clip_grads_by_norm_ on the gradient vars"
        )
    grads = _grads(parameters)
    if not error_if_nonfinite:
        return clip_grads_by_norm_(grads, max_norm, norm_type)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient into [-clip_value, clip_value], in place."""
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                ops.clip_(p.grad, min=-float(clip_value), max=float(clip_value))


def clip_grads_by_norm_(grads, max_norm: float, norm_type: float = 2.0):
    """Scale the gradients in place so that their total norm is at most max_norm; returns the
    total norm before clipping (a 0-d float32 value). Written with ops only, so it works on
    eager tensors and on graph vars (minimize(max_grad_norm=...) uses it): as in PyTorch, the
    gradients are multiplied by min(1, max_norm / (total + 1e-6))."""
    grads = [g for g in grads if g is not None]
    norm_type = float(norm_type)
    if not norm_type > 0:
        raise DomainError(f"norm_type must be > 0 (or inf), got {norm_type}")
    if not grads:
        return ops.zeros()
    with no_grad():
        wide = [g if g.dtype != dt.float16 else ops.cast(g, dtype=dt.float32) for g in grads]
        if math.isinf(norm_type):
            total = ops.max(ops.stack(*[ops.max(ops.abs(g)) for g in wide]))
        elif norm_type == 2.0:
            total = ops.sqrt(ops.add_n(*[ops.sum(g * g) for g in wide]))
        else:
            powers = [ops.sum(ops.abs(g) ** norm_type) for g in wide]
            total = ops.add_n(*powers) ** (1.0 / norm_type)
        coef = ops.clip(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            ops.mul_(g, coef if g.dtype == coef.dtype else ops.cast(coef, dtype=g.dtype))
    return total
