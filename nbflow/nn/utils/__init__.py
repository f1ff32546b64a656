"""PyTorch's torch.nn.utils: gradient clipping, flat parameter vectors, and the rnn,
parametrize, parametrizations and prune submodules (packed sequences, weight and spectral
norm, pruning masks)."""

from __future__ import annotations

from ... import ops
from ...core import no_grad
from ...core.errors import ArgumentError, ShapeError
from ...eager.tensor import Tensor
from . import clip_grad, fusion, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import (
    _as_list,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .fusion import *  # noqa: F403  (PyTorch's nn.utils names)
from .fusion import __all__ as _fusion_all
from .legacy import *  # noqa: F403
from .legacy import __all__ as _legacy_all


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-d tensor (differentiable, as
    PyTorch's: gradients reach the parameters)."""
    return ops.concat([ops.reshape(p, -1) for p in _as_list(parameters)])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of the 1-d `vec` into the parameters, in place (no gradient),
    each reshaped to its parameter's shape."""
    if not isinstance(vec, Tensor):
        raise ArgumentError(f"expected vec to be a Tensor, but got: {type(vec).__name__}")
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
    "clip_grad",
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
