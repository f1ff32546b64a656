"""Sorting: the sort op (values and indices along an axis, PyTorch's order), and argsort and
topk built on it.

The kernel sorts each row's indices with a stable merge sort (kernels/sorting.py, shared with
the GPU kernel): ascending puts NaN last, descending puts NaN first, and equal values keep
their order. The values' gradient goes back to the positions they came from."""

import numpy as np

from ..core import UNKNOWN, Attr, Op, Spec
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, OutOfRangeError, ShapeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT, axis_rows, write_axis_rows
from ..kernels.sorting import sort_row
from .creation import on_device, uniform_op, zeros_like
from .elementwise import isnan, where
from .index import scatter_add_op
from .reduce import ValuesIndices
from .reduce import any as any_
from .shape import as_scalar, axis_of, reshape_op, split_op, squeeze_op

_sort_row = njit(**JIT)(sort_row)


@njit(**JIT)
def _sort_rows(x, work, descending):
    """The sorted indices of each row of x (2-D), in work[0]."""
    for r in range(x.shape[0]):
        if _sort_row(x, r, work, descending) == 1:
            for j in range(x.shape[1]):
                work[0, r, j] = work[1, r, j]
    return work[0]


def _sort_spec(x, axis, descending):
    axis_of(axis, x.ndim)  # (an axis out of range raises here)
    return Spec(x.shape, x.dtype), Spec(x.shape, dt.int64)


def _sort_cpu(x, values, indices, axis, descending):
    a = axis_of(axis, x.ndim)
    rows = axis_rows(x, a)
    perm = _sort_rows(rows, np.empty((2, *rows.shape), np.int64), descending)
    write_axis_rows(indices, a, lambda out: np.copyto(out, perm))
    write_axis_rows(values, a, lambda out: np.copyto(out, np.take_along_axis(rows, perm, 1)))


def _sort_ref(x, axis=-1, descending=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    if descending:  # stable descending: the stable ascending order of the reversed axis,
        n = x.shape[axis]  # reversed (equal values keep their order; NaN comes first)
        flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
        idx = np.flip(n - 1 - flipped, axis)
    else:
        idx = np.argsort(x, axis=axis, kind="stable")
    return np.take_along_axis(x, idx, axis), idx.astype(np.int64)


sort_op = Op(
    name="sort",
    inputs=("x",),
    outputs=("values", "indices"),
    spec=_sort_spec,
    kernels={"cpu": _sort_cpu, "cuda": None},
    dtypes=dt.ALL,
    ref=_sort_ref,
    attrs={"axis": Attr("int", -1), "descending": Attr("bool", False)},
    doc="x sorted along `axis` and where each value came from (int64), as PyTorch's sort: "
    "stable, NaN last ascending and first descending.",
)


@sort_op.defgrad
def _sort_grad(g, out, x, axis, descending):
    g_values = g[0]
    if g_values is None or x.ndim == 0:
        return (g_values,)
    return (scatter_add_op(zeros_like(x), out[1], g_values, axis=axis),)


def sort(x, axis=-1, descending=False, *, stable=False):
    """(values, indices) of x sorted along `axis` (PyTorch's sort; see sort_op). The sort is
    always stable, so `stable=` (PyTorch's) changes nothing."""
    return ValuesIndices(*sort_op(x, axis=axis, descending=descending))


def argsort(x, axis=-1, descending=False, *, stable=False):
    """The indices that sort x along `axis` (always stable, whatever `stable=` says; PyTorch's
    NaN order)."""
    return sort_op(x, axis=axis, descending=descending)[1]


def topk(x, k: int, axis=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (largest=False: smallest) values along `axis`,
    in sorted order (also when sorted=False: any order is allowed there), as PyTorch's
    topk; a NaN counts as the largest. A 0-d x is one element (PyTorch's)."""
    if x.ndim == 0:
        axis_of(axis, 0)
        return as_scalar(topk(reshape_op(x, shape=(1,)), k, 0, largest, sorted))
    n = x.shape[axis_of(axis, x.ndim)]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ArgumentError(f"topk: k must be an int, got {type(k).__name__}")
    if n == UNKNOWN:
        raise ShapeError("topk: the axis has an unknown (-1) length")
    if not 0 <= k <= n:
        raise OutOfRangeError(f"topk: k={k} is outside [0, {n}] for an axis of length {n}")
    values_indices = sort_op(x, axis=axis, descending=largest)
    return ValuesIndices(*_pieces(values_indices, (int(k), n - int(k)), axis, 0))


def _pieces(tensors, sizes, axis, i):
    """Piece i of each tensor cut along `axis` into pieces of `sizes`."""
    return [split_op(t, sizes=sizes, axis=axis)[i] for t in tensors]


def randperm(n: int, generator=None, dtype=dt.DEFAULT_INT, device=None):
    """A random permutation of 0 .. n-1 (PyTorch's randperm): the order that sorts n uniform
    draws from `generator`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise AttrError(f"randperm: n must be an int >= 0, got {n!r}")
    keys = uniform_op(shape=(int(n),), low=0.0, high=1.0, dtype=dt.float64, generator=generator)
    order = sort_op(keys)[1]
    return on_device(order if np.dtype(dtype) == dt.int64 else order.astype(dtype), device)


def median(x, axis=None, keepdims=False):
    """PyTorch's median: the lower median (the ((n - 1) // 2)-th smallest value) of all the
    elements, or, along `axis`, (values, indices) as max(dim=) gives; NaN if any is NaN."""
    if axis is None:
        return median(reshape_op(x, shape=(-1,)), 0).values
    if x.ndim == 0:  # one element along axis 0 or -1 (PyTorch's)
        axis_of(axis, 0)
        return as_scalar(median(reshape_op(x, shape=(1,)), 0))
    a = axis_of(axis, x.ndim)
    n = x.shape[a] if x.ndim else 1
    if n == 0:
        raise ShapeError(f"median of an empty axis (x of shape {x.shape})")
    values_indices = sort_op(x, axis=a)  # NaN sorts last
    k = (n - 1) // 2
    value, index = _pieces(values_indices, (k, 1, n - k - 1), a, 1)
    if dt.is_float(x.dtype):  # a NaN anywhere: the last sorted value (a NaN) and its index
        nan = any_(isnan(x), axis=a, keepdims=True)
        last_value, last_index = _pieces(values_indices, (n - 1, 1), a, 1)
        value, index = where(nan, last_value, value), where(nan, last_index, index)
    if not keepdims:
        value, index = squeeze_op(value, axis=a), squeeze_op(index, axis=a)
    return ValuesIndices(value, index)


__all__ = ["argsort", "median", "randperm", "sort", "sort_op", "topk"]
