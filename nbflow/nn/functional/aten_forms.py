"""PyTorch's top-level aten forms of nn.functional's functions (torch.native_layer_norm,
torch.constant_pad_nd, torch.grid_sampler_2d, ...): their signatures over F's functions.
They are torch.*'s names, not F's: nbflow's face (nbflow/__init__.py) exports this __all__."""

import math

from ... import ops
from ...argcheck import choice, integer, integers, real
from ...core.errors import ShapeError
from . import sampling
from .normalization import batch_norm, group_norm, layer_norm
from .sampling import grid_sample


def constant_pad_nd(input, pad, value=0):
    """F.pad(input, pad, "constant", value): pairs from the last dim backwards."""
    return sampling.pad(input, integers(pad, "constant_pad_nd: pad"), "constant", value)


# aten's integer codes of grid_sample's modes
_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _grid_sampler(name, ndim):
    def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
        if input.ndim != ndim:
            raise ShapeError(f"{name}: input must be {ndim}-D, got shape {tuple(input.shape)}")
        mode = _INTERPOLATION[choice(interpolation_mode, _INTERPOLATION, f"{name}: mode")]
        padding = _PADDING[choice(padding_mode, _PADDING, f"{name}: padding_mode")]
        return grid_sample(input, grid, mode, padding, align_corners)

    grid_sampler.__name__ = grid_sampler.__qualname__ = name
    grid_sampler.__doc__ = (
        f"PyTorch's torch.{name}: F.grid_sample on a {ndim}-D input, the interpolation mode "
        "(0 bilinear, 1 nearest, 2 bicubic) and padding mode (0 zeros, 1 border, 2 reflection) "
        "given by aten's integer codes."
    )
    return grid_sampler


grid_sampler_2d = _grid_sampler("grid_sampler_2d", 4)
grid_sampler_3d = _grid_sampler("grid_sampler_3d", 5)


# the norms' forms return the normalised output and the statistics it was normalised with,
# (out, mean, 1 / std), each differentiable


def _stats(x, axes, eps):
    """(mean, 1 / sqrt(biased var + eps)) over axes, the axes kept."""
    mean = ops.mean(x, axis=axes, keepdims=True)
    return mean, ops.rsqrt(ops.var(x, axis=axes, keepdims=True, correction=0) + eps)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """layer_norm's (out, mean, rstd); the statistics keep the normalised dims as size 1."""
    shape = integers(normalized_shape, "native_layer_norm: normalized_shape")
    eps = real(eps, "native_layer_norm: eps")
    out = layer_norm(input, shape, weight, bias, eps)
    return (out, *_stats(input, tuple(range(input.ndim - len(shape), input.ndim)), eps))


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """group_norm's (out, mean, rstd), the statistics of shape (N, group); N, C and HxW
    restate input's shape (N, C, *) and are checked against it."""
    n, c, hw = (
        integer(v, f"native_group_norm: {k}") for k, v in zip("N C HxW".split(), (N, C, HxW))
    )
    if input.ndim < 2 or (n, c, hw) != (*input.shape[:2], math.prod(input.shape[2:])):
        raise ShapeError(
            f"native_group_norm: N={n}, C={c}, HxW={hw} do not match input {tuple(input.shape)}"
        )
    eps = real(eps, "native_group_norm: eps")
    out = group_norm(input, group, weight, bias, eps)
    mean, rstd = _stats(ops.reshape(input, (n, group, -1)), (2,), eps)
    return out, ops.reshape(mean, (n, group)), ops.reshape(rstd, (n, group))


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """batch_norm's (out, save_mean, save_invstd): in training the batch's mean and 1 / std
    per channel (the running statistics updated in place, as batch_norm does); in evaluation
    two empty tensors, as PyTorch's."""
    eps = real(eps, "native_batch_norm: eps")
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = ops.zeros((0,), dtype=input.dtype)
        return out, empty, empty
    mean, invstd = _stats(input, (0, *range(2, input.ndim)), eps)
    return out, ops.reshape(mean, (-1,)), ops.reshape(invstd, (-1,))


__all__ = [
    "constant_pad_nd",
    "grid_sampler_2d",
    "grid_sampler_3d",
    "native_batch_norm",
    "native_group_norm",
    "native_layer_norm",
]
