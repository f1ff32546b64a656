"""PyTorch's as_strided family on nbflow's tensors, which have no storage apart from their
elements: `size`, `stride` and `storage_offset` address the input's elements in row-major
order (its flat contiguous form), as they address the storage of a contiguous PyTorch tensor.

as_strided reads out[i] = flat[storage_offset + sum_k i_k * stride_k]: a gather, so its
result is a copy (PyTorch's is a view) and its gradient is the gather's scatter-add, which
sums where positions overlap. as_strided_scatter writes src to those positions of a copy of
the input. Positions past the input's last element raise OutOfRangeError; negative strides
and offsets are refused, as PyTorch refuses them."""

import math

import numpy as np

from ..argcheck import integer, integers, shown, within_budget
from ..core import UNKNOWN
from ..core.errors import ArgumentError, DomainError, OutOfRangeError, ShapeError
from ..core.op import is_value
from .index import index_put
from .select import take
from .shape import reshape


def strided_positions(name, input, size, stride, storage_offset):
    """The flat row-major positions of input that (size, stride, storage_offset) address, an
    int64 array of shape `size`, checked to lie inside input."""
    if not is_value(input):
        raise ArgumentError(f"{name}: argument 'input' must be a tensor, got {shown(input)}")
    size, stride = integers(size, f"{name}: size"), integers(stride, f"{name}: stride")
    offset = 0 if storage_offset is None else integer(storage_offset, f"{name}: storage_offset")
    if len(size) != len(stride):
        raise ShapeError(f"{name}: {len(size)} sizes but {len(stride)} strides")
    if min(size, default=0) < 0 or min(stride, default=0) < 0 or offset < 0:
        raise DomainError(
            f"{name}: sizes, strides and storage_offset must be >= 0, got size {size}, "
            f"stride {stride}, storage_offset {offset}"
        )
    if UNKNOWN in tuple(input.shape):
        raise ShapeError(f"{name}: the input's shape {input.shape} must be known")
    within_budget(name, size, np.int64)  # (the positions: as many as the result's elements)
    positions = np.full(size, offset, dtype=np.int64)
    for k, (n, step) in enumerate(zip(size, stride)):
        positions += (np.arange(n, dtype=np.int64) * step).reshape(
            (n,) + (1,) * (len(size) - k - 1)
        )
    count = math.prod(input.shape)
    if positions.size and positions.max() >= count:
        raise OutOfRangeError(
            f"{name}: size {size}, stride {stride} and storage_offset {offset} reach element "
            f"{positions.max()} of an input of {count} elements (shape {tuple(input.shape)})"
        )
    return positions


def as_strided(input, size, stride, storage_offset=None):
    """The elements of input at flat positions storage_offset + sum_k i_k * stride_k, in a
    tensor of shape `size` (see the module: a copy; storage_offset None is 0)."""
    positions = strided_positions("as_strided", input, size, stride, storage_offset)
    return take(input, positions)


def as_strided_copy(input, size, stride, storage_offset=None):
    """as_strided, whose result is already a copy here."""
    positions = strided_positions("as_strided_copy", input, size, stride, storage_offset)
    return take(input, positions)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with src (of shape `size`) written at the positions as_strided reads;
    where positions overlap, one of the values written lands (which is unspecified)."""
    positions = strided_positions("as_strided_scatter", input, size, stride, storage_offset)
    if tuple(src.shape) != positions.shape:
        raise ShapeError(f"as_strided_scatter: src of shape {tuple(src.shape)}, size {size}")
    out = index_put(reshape(input, (-1,)), (positions,), src)
    return reshape(out, tuple(input.shape))


__all__ = ["as_strided", "as_strided_copy", "as_strided_scatter"]
