"""Sorted-sequence search and membership (searchsorted, bucketize, isin), composed from nbflow's
ops. Each compares every value with every element (memory values.numel() * sequence length):
meant for moderate sizes, and exact."""

import numpy as np

from ..argcheck import flag, number
from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DTypeError, ShapeError
from .elementwise import astype, eq, isnan, logical_and, logical_not, logical_or
from .index import take_along_axis
from .queries import _is_value
from .reduce import any as any_
from .reduce import sum as reduce_sum
from .shape import reshape, unsqueeze


def _below(seq, v, right):
    """seq[i] < v (<= v when right), with NaN above every number (numpy's order)."""
    if right:
        hit = seq <= v
        return logical_or(hit, isnan(v)) if dt.is_float(v.dtype) else hit
    hit = seq < v
    if dt.is_float(v.dtype):
        hit = logical_or(hit, logical_and(isnan(v), logical_not(isnan(seq))))
    return hit


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value would be inserted into the sorted last dim of sorted_sequence to
    keep it sorted: the count of its elements below the value (at or below with right=True
    or side="right"). sorted_sequence is 1-D, or has values' leading dims; values may be a
    number (1-D sequence). Composed as comparisons: memory values.numel() * sequence length."""
    if not (side is None or isinstance(side, str)) or side not in (None, "left", "right"):
        raise AttrError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if side == "left" and right:
        raise AttrError("searchsorted: side='left' and right=True contradict each other")
    right = bool(right) or side == "right"
    seq = sorted_sequence
    if seq.ndim == 0:
        raise ShapeError("searchsorted: sorted_sequence must have at least 1 dim")
    if sorter is not None:
        if sorter.dtype not in dt.INTS:
            raise DTypeError(f"searchsorted: sorter must be an integer tensor, got {sorter.dtype}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise ShapeError(f"searchsorted: sorter {sorter.shape} must match {seq.shape}")
        seq = take_along_axis(seq, sorter, -1)
    if not _is_value(values):
        number("searchsorted", "values", values)
        if seq.ndim != 1:
            raise ShapeError("searchsorted: a number as values needs a 1-D sorted_sequence")
        dtype = dt.promote([seq.dtype], [dt.scalar_dtype(values)])
        values = astype(np.asarray(values), dtype)  # a 0-d tensor (a graph constant)
    if seq.ndim > 1:
        lead, want = tuple(seq.shape[:-1]), tuple(values.shape[:-1])
        if values.ndim != seq.ndim or any(
            UNKNOWN not in (a, b) and a != b for a, b in zip(lead, want)
        ):
            raise ShapeError(
                f"searchsorted: sorted_sequence {seq.shape} and values {values.shape} must "
                "agree on all but their last dim (or the sequence be 1-D)"
            )
        seq = unsqueeze(seq, -2)  # (..., 1, M) against (..., K, 1)
    count = reduce_sum(_below(seq, unsqueeze(values, -1), right), axis=-1)
    return astype(count, dt.int32 if out_int32 else dt.int64)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The index of the bucket of each element among the sorted 1-D boundaries:
    boundaries[i-1] < x <= boundaries[i] (boundaries[i-1] <= x < boundaries[i] with right)."""
    if not _is_value(boundaries) or boundaries.ndim != 1:
        raise ShapeError("bucketize: boundaries must be a 1-D tensor")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in test_elements (either may be a number);
    NaN is in nothing. Memory elements.numel() * test_elements.numel()."""
    flag(assume_unique, "isin: assume_unique")
    invert = flag(invert, "isin: invert")
    if not _is_value(elements) and not _is_value(test_elements):
        raise ArgumentError("isin: elements or test_elements must be a tensor")
    if not _is_value(test_elements):
        hit = eq(elements, number("isin", "test_elements", test_elements))
    elif not _is_value(elements):
        hit = any_(eq(test_elements, number("isin", "elements", elements)))
    else:
        hit = any_(eq(unsqueeze(elements, -1), reshape(test_elements, (-1,))), axis=-1)
    return logical_not(hit) if invert else hit


__all__ = [
    "searchsorted",
    "bucketize",
    "isin",
]
