"""PyTorch's torch.nn.utils: gradient clipping, flat parameter vectors, and the rnn,
parametrize, parametrizations and prune submodules (packed sequences, weight and spectral
norm, pruning masks)."""

from __future__ import annotations

import math

from ... import ops
from ...core import no_grad
from ...errors import GradientError, ShapeError
from ...optim import clip_grads_by_norm_
from ...tensor import Tensor
from . import fusion, parametrizations, parametrize, prune, rnn, stateless
from .fusion import *  # noqa: F403  (PyTorch's nn.utils names)
from .fusion import __all__ as _fusion_all
from .legacy import *  # noqa: F403
from .legacy import __all__ as _legacy_all


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
        raise ValueError(f"norm_type must be > 0 (or inf), got {norm_type}")
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
    """PyTorch's: clip the .grad of `parameters` in place so that their total norm is at most
    max_norm; returns the total norm before clipping. With error_if_nonfinite a nan or inf
    total raises GradientError (a RuntimeError, as PyTorch's) before any gradient changes."""
    parameters = _as_list(parameters)  # (a generator would be spent by the first pass)
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


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-d tensor (differentiable, as
    PyTorch's: gradients reach the parameters)."""
    return ops.concat([ops.reshape(p, -1) for p in _as_list(parameters)])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of the 1-d `vec` into the parameters, in place (no gradient),
    each reshaped to its parameter's shape."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected vec to be a Tensor, but got: {type(vec).__name__}")
    params = _as_list(parameters)
    total = sum(p.numel() if callable(p.numel) else p.numel for p in params)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ShapeError(f"vector_to_parameters: vec of shape {vec.shape}, need ({total},)")
    start = 0
    with no_grad():
        for p in params:
            n = p.numel() if callable(p.numel) else p.numel
            p.copy_(ops.reshape(vec[start : start + n], p.shape))
            start += n


__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "rnn",
    "vector_to_parameters",
    "fusion",
    "stateless",
    *_fusion_all,
    *_legacy_all,
]
