"""tile and repeat: copies of x laid side by side (numpy's tile, and repeat of each element
along an axis); each gradient sums the copies back, with ops, so it differentiates again."""

import numpy as np

from ..core import UNKNOWN, Attr, Spec, normalize_axis
from ..core.errors import ShapeError
from .broadcast import sum_to_like
from .shape import (
    _declare,
    axes_of,
    dims,
    flatten_op,
    permute_op,
    reshape_like,
    reshape_op,
    size_of,
    unsqueeze_op,
)


def _tile_dims(shape, reps):
    """(input dims, reps), both padded with leading 1s to the output's rank."""
    k = max(len(shape), len(reps))
    return (1,) * (k - len(shape)) + tuple(shape), (1,) * (k - len(reps)) + tuple(reps)


def _tile_spec(x, reps):
    if any(r < 0 for r in reps):
        raise ShapeError(f"negative reps {reps}")
    xs, rs = _tile_dims(x.shape, reps)
    return Spec(
        tuple(
            0 if r == 0 else (UNKNOWN if n == UNKNOWN else n * r)
            for n, r in zip(xs, rs, strict=True)
        ),
        x.dtype,
    )


def _tile_cpu(x, out, reps):
    xs, rs = _tile_dims(x.shape, reps)
    # out viewed as (r0, n0, r1, n1, ...) receives x viewed as (1, n0, 1, n1, ...)
    np.copyto(
        out.reshape([v for pair in zip(rs, xs, strict=True) for v in pair]),
        x.reshape([v for n in xs for v in (1, n)]),
    )


tile_op = _declare(
    "tile",
    ("x",),
    _tile_spec,
    _tile_cpu,
    lambda x, reps: np.tile(x, reps),
    "x repeated `reps` times along each axis (numpy's tile; PyTorch's Tensor.repeat).",
    {"reps": Attr("ints")},
)


def _tile_grad(g, out, x, reps):
    xs, rs = _tile_dims(x.shape, reps)
    k = len(xs)
    parts = reshape_op(g, shape=tuple(v for pair in zip(rs, xs, strict=True) for v in pair))
    # the repeat axes first, so that sum_to_like sums them as leading dims
    parts = permute_op(parts, axes=tuple(range(0, 2 * k, 2)) + tuple(range(1, 2 * k, 2)))
    like = x if k == x.ndim else unsqueeze_op(x, axis=tuple(range(k - x.ndim)))
    return (reshape_like(sum_to_like(parts, like), x),)


tile_op.defgrad(_tile_grad)


def tile(x, *reps):
    """tile(x, 2, 3) or tile(x, (2, 3))."""
    return tile_op(x, reps=dims(reps))


def _repeat_spec(x, repeats, axis):
    if repeats < 0:
        raise ShapeError(f"negative repeats {repeats}")
    if axis is None or x.ndim == 0:
        if x.ndim == 0 and axis is not None:
            axes_of(axis, 0)
        n = size_of(x.shape)
        return Spec((0 if repeats == 0 else (UNKNOWN if n == UNKNOWN else n * repeats),), x.dtype)
    a = normalize_axis(axis, x.ndim)
    n = x.shape[a]
    n = 0 if repeats == 0 else (UNKNOWN if n == UNKNOWN else n * repeats)
    return Spec(x.shape[:a] + (n,) + x.shape[a + 1 :], x.dtype)


def _repeat_cpu(x, out, repeats, axis):
    if axis is None or x.ndim == 0:
        x, axis = x.reshape(-1), 0
    a = axis % x.ndim
    # out viewed as (..., n, repeats, ...) receives x viewed as (..., n, 1, ...)
    shape = x.shape[: a + 1] + (repeats,) + x.shape[a + 1 :]
    np.copyto(out.reshape(shape), np.expand_dims(x, a + 1))


repeat_op = _declare(
    "repeat",
    ("x",),
    _repeat_spec,
    _repeat_cpu,
    lambda x, repeats, axis=None: np.repeat(x, repeats, axis),
    "Each element repeated `repeats` times along `axis` (numpy's repeat, PyTorch's "
    "repeat_interleave); a flattened x when axis is None.",
    {"repeats": Attr("int"), "axis": Attr("int", None, optional=True)},
)


def _repeat_grad(g, out, x, repeats, axis):
    flat = axis is None or x.ndim == 0
    src = flatten_op(x) if flat else x
    a = 0 if flat else axis % x.ndim
    parts = reshape_op(g, shape=src.shape[: a + 1] + (repeats,) + src.shape[a + 1 :])
    # the repeat axis first, so that sum_to_like sums it as a leading dim
    order = (a + 1,) + tuple(i for i in range(parts.ndim) if i != a + 1)
    summed = sum_to_like(permute_op(parts, axes=order), src)
    return (reshape_like(summed, x) if flat else summed,)


repeat_op.defgrad(_repeat_grad)


def repeat(x, repeats, axis=None):
    """numpy.repeat(x, repeats, axis) with an int `repeats` (not PyTorch's Tensor.repeat,
    which is `tile`)."""
    return repeat_op(x, repeats=repeats, axis=axis)


__all__ = ["tile", "repeat", "tile_op", "repeat_op"]
