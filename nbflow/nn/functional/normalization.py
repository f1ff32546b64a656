"""Normalisation: batch, layer, group, instance, RMS and local response norms, and normalize."""

import math

import numpy as np

from ... import ops
from ...argcheck import integer, integers, real, tensors
from ...core import UNKNOWN
from ...core.errors import AttrError, DTypeError, ShapeError

batch_norm = ops.batch_norm


group_norm = ops.group_norm


layer_norm = ops.layer_norm


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(norm(input, p, dim), eps), the norm kept as a dim to divide by."""
    return input / ops.maximum(ops.norm(input, p, axis=dim, keepdims=True), eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2) + eps) over the last len(normalized_shape) dims, times
    weight; eps None is the machine epsilon of input's dtype (PyTorch's default)."""
    shape = integers(normalized_shape, "rms_norm: normalized_shape")
    eps = None if eps is None else real(eps, "rms_norm: eps")
    if tuple(input.shape[input.ndim - len(shape) :]) != shape or len(shape) > input.ndim:
        raise ShapeError(
            f"rms_norm: normalized_shape {shape} does not end input shape {tuple(input.shape)}"
        )
    if np.dtype(input.dtype).kind not in "fc":
        raise DTypeError(f"rms_norm: needs a floating-point input, got {input.dtype}")
    if eps is None:  # (a complex dtype's: that of its parts)
        eps = float(np.finfo(input.dtype).eps)
    # a complex input is squared, not |x|^2: PyTorch's formula, whose scale is complex
    axes = tuple(range(-len(shape), 0))
    out = input * ops.rsqrt(ops.mean(input * input, axis=axes, keepdims=True) + eps)
    return out if weight is None else out * weight


def _per_channel(t, input, name):
    """instance_norm's (C,) tensor `name` shaped (C, 1, ...) to broadcast along dim 1 of
    input (another shape raised IndexError or broadcast silently)."""
    tensors("instance_norm", **{name: t})
    c, shape = input.shape[1], tuple(getattr(t, "shape", ()))
    if len(shape) != 1 or (UNKNOWN not in (c, shape[0]) and shape[0] != c):
        raise ShapeError(
            f"instance_norm: {name} of shape {shape} should be ({c},), one per channel"
        )
    return ops.reshape(t, (t.shape[0],) + (1,) * (input.ndim - 2))


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each (sample, channel) over its spatial dims (use_input_stats), or by the
    running statistics; then scale and shift per channel. With use_input_stats and running
    statistics, these move toward the batch's average instance statistics, in place."""
    if input.ndim < 3:
        raise ShapeError(
            f"instance_norm: expects (N, C, ...) input, got shape {tuple(input.shape)}"
        )
    axes = tuple(range(2, input.ndim))
    if (running_mean is None) != (running_var is None):
        raise ShapeError("instance_norm: give both running_mean and running_var, or neither")
    if use_input_stats:
        spatial = math.prod(input.shape[2:])
        if spatial == 1:
            raise ShapeError(
                f"instance_norm: expected more than 1 spatial element when training, got input "
                f"shape {tuple(input.shape)}"
            )
        mean = ops.mean(input, axis=axes, keepdims=True)
        var = ops.var(input, axis=axes, keepdims=True, correction=0)
        out = (input - mean) * ops.rsqrt(var + eps)
        if running_mean is not None:
            new_mean, _ = _update_instance_stats(input, running_mean, running_var, momentum)
            # a zero that reads the updated statistics (for their shape only): graph pruning
            # keeps an in-place update only where a later op reads its target
            zero = ops.zeros_like(new_mean)
            bias = zero if bias is None else bias + zero
    else:
        if running_mean is None:
            raise ShapeError("instance_norm: use_input_stats=False needs running statistics")
        mean = _per_channel(running_mean, input, "running_mean")
        var = _per_channel(running_var, input, "running_var")
        out = (input - mean) * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * _per_channel(weight, input, "weight")
    if bias is not None:
        out = out + _per_channel(bias, input, "bias")
    return out


def _update_instance_stats(input, running_mean, running_var, momentum):
    """PyTorch's rule: running = (1 - momentum) running + momentum batch, batch the average
    over the samples of each instance's mean and unbiased variance. batch_norm_update_stats_
    makes that update in place, here from a stand-in (2, C) input whose two rows have exactly
    that mean and unbiased variance (mean +- sqrt(var / 2))."""
    axes = tuple(range(2, input.ndim))
    mean = ops.mean(ops.mean(input, axis=axes), axis=0)
    var = ops.mean(ops.var(input, axis=axes, correction=1), axis=0)
    half = ops.sqrt(var * 0.5)
    rows = ops.stack([mean + half, mean - half])
    return ops.batch_norm_update_stats_(running_mean, running_var, rows, momentum=momentum)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels)^beta, the
    window zero-padded as PyTorch's (size // 2 before, (size - 1) // 2 after)."""
    if input.ndim < 3:
        raise ShapeError(
            f"local_response_norm: expects 3-D or more input, got shape {tuple(input.shape)}"
        )
    size = integer(size, "local_response_norm: size")
    if size < 1:
        raise AttrError(f"local_response_norm: size must be positive, got {size}")
    if input.size == 0:
        return input
    channels = input.shape[1]
    pairs = [(0, 0)] * input.ndim
    pairs[1] = (size // 2, (size - 1) // 2)
    padded = ops.pad(input * input, pairs)
    window = padded[:, 0:channels]
    for i in range(1, size):
        window = window + padded[:, i : i + channels]
    return input / (window * (alpha / size) + k) ** beta


__all__ = [
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "local_response_norm",
    "normalize",
    "rms_norm",
]
