"""The two ops the backward driver uses to undo broadcasting: sum_to_like and
broadcast_to_like. They take the target as a tensor, not a shape, so they also work in graph
mode where the target's shape has unknown (-1) dims until run time."""

import numpy as np

from ..argcheck import integers
from ..core import Op, Spec, broadcast_shapes
from ..core import dtypes as dt
from ..core.errors import ShapeError
from ..kernels.cpu.templates import reduce_rows, sum_cols, sum_rows


def _sum_to_like_spec(x, like):
    if like.ndim > x.ndim:
        raise ShapeError("the target has more dims than the input")
    broadcast_shapes(x.shape, like.shape)
    return Spec(like.shape, x.dtype)


def summed_axes(shape, target) -> tuple[int, ...]:
    """Axes of `shape` to sum so that the result has shape `target` (numpy broadcasting)."""
    if type(shape) is not tuple or type(target) is not tuple:  # (the kernels pass tuples)
        shape = integers(shape, "summed_axes: shape")
        target = integers(target, "summed_axes: target")
    lead = len(shape) - len(target)
    if lead < 0:
        raise ShapeError(f"summed_axes: {shape} has fewer dims than the target {target}")
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1
    )


def _sum_to_like_cpu(x, like, out):
    reduce_rows(sum_rows, x, summed_axes(x.shape, like.shape), out, cols=sum_cols)


def _sum_to_like_ref(x, like):
    axes = summed_axes(x.shape, like.shape)
    return np.sum(x, axis=axes).reshape(like.shape).astype(x.dtype)


sum_to_like = Op(
    name="sum_to_like",
    inputs=("x", "like"),
    outputs=("out",),
    spec=_sum_to_like_spec,
    kernels={"cpu": _sum_to_like_cpu, "cuda": None},
    dtypes=dt.NUMERIC + dt.COMPLEX,
    ref=_sum_to_like_ref,
    promote=(0,),
    shape_only=("like",),
    doc="Sum x over its broadcast dims so that it gets the shape of `like`.",
)


def _broadcast_to_like_spec(x, like):
    shape = broadcast_shapes(x.shape, like.shape)
    if len(shape) != like.ndim or any(a != b and b != -1 for a, b in zip(shape, like.shape)):
        raise ShapeError("x does not broadcast to the target's shape")
    return Spec(like.shape, x.dtype)


def _broadcast_to_like_cpu(x, like, out):
    np.copyto(out, x)


broadcast_to_like = Op(
    name="broadcast_to_like",
    inputs=("x", "like"),
    outputs=("out",),
    spec=_broadcast_to_like_spec,
    kernels={"cpu": _broadcast_to_like_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, like: np.broadcast_to(x, like.shape).copy(),
    promote=(0,),
    shape_only=("like",),
    doc="x broadcast (copied) to the shape of `like`.",
)

sum_to_like.defgrad(lambda g, out, x, like: (broadcast_to_like(g, x), None))
broadcast_to_like.defgrad(lambda g, out, x, like: (sum_to_like(g, x), None))

__all__ = ["sum_to_like", "broadcast_to_like", "summed_axes"]
