"""PyTorch's aliases of nbflow's shape ops (concatenate, moveaxis, unsafe_split, ...), the
scatter family of views written back (select_scatter, slice_scatter, diagonal_scatter),
masked_fill/masked_scatter, index_reduce, put, argwhere, combinations, unravel_index, and
creation helpers (range, scalar_tensor, asarray), composed from nbflow's ops."""

import itertools
import math
import warnings

import numpy as np

from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    AttrError,
    DomainError,
    DTypeError,
    OutOfRangeError,
    ShapeError,
)
from .complex_math import conj
from .creation import full_like, on_device
from .elementwise import (
    astype,
    clone,
    floor_div,
    mod,
    where,
)
from .extras import _eager_or_none, _is_value, _known, _number, broadcast_tensors, numel
from .index import index_put, index_select
from .linalg import outer
from .queries import as_tensor, is_tensor
from .reduce import sum as reduce_sum
from .scans import cumsum
from .select import (
    _int,
    eager_values,
    scatter_reduce,
    split_with_sizes,
    take,
)
from .shape import (
    as_scalar,
    as_vector,
    axis_of,
    broadcast_to,
    cat,
    chunk,
    movedim,
    reshape,
    split,
    swapaxes,
    unsqueeze,
)
from .sorting import sort_op
from .statistics import trapezoid

# ---------------------------------------------------------------- shapes, joins, indices


concatenate = cat
moveaxis = movedim
unsafe_chunk = chunk  # nbflow's pieces are separate tensors: the "unsafe" aliasing is moot
unsafe_split = split
unsafe_split_with_sizes = split_with_sizes
ger = outer  # (deprecated in PyTorch: outer)
trapz = trapezoid


def msort(input):
    """input sorted along its first dim (ascending; NaN last)."""
    return sort_op(input, axis=0)[0]


def adjoint(input):
    """The conjugate transpose of the last two dims (for real tensors, the transpose)."""
    if input.ndim < 2:
        raise ShapeError(f"adjoint: input must have at least 2 dims, got shape {input.shape}")
    return conj(swapaxes(input, -2, -1))


def detach(input):
    """input cut from the autograd graph (the same values, no gradient)."""
    return input.detach()


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-D tensor's elements, one per row, in
    itertools.combinations' order (combinations_with_replacement's with with_replacement)."""
    if input.ndim != 1:
        raise ShapeError(f"combinations: input must be 1-D, got shape {input.shape}")
    r = _int("combinations", "r", r, low=0)
    n = _known("combinations", input, 0)
    if r == 0:  # PyTorch's empty 1-D answer
        return index_select(input, 0, np.zeros(0, np.int64))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(n), r)), np.int64).reshape(-1, r)
    return reshape(index_select(input, 0, rows.reshape(-1)), (-1, r))


def unravel_index(indices, shape):
    """The coordinates in `shape` (row-major) of each flat index: a tuple of int64 tensors,
    one per dim. Indices are taken modulo the size, as PyTorch does (-1 is the last)."""
    if not _is_value(indices):
        raise ArgumentError(f"unravel_index: indices must be a tensor, got {indices!r}")
    if indices.dtype not in dt.INTS:
        raise DTypeError(f"unravel_index: indices must be an integer tensor, got {indices.dtype}")
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dims = tuple(_int("unravel_index", "shape", d, low=0) for d in dims)
    if 0 in dims:
        raise DomainError(f"unravel_index: shape {dims} has no elements to index")
    rest, coords = astype(indices, dt.int64), []
    for d in reversed(dims):
        coords.append(mod(rest, d))
        rest = floor_div(rest, d)
    return tuple(reversed(coords))


def _dim(name, input, dim):
    a = axis_of(dim, input.ndim)
    return a, _known(name, input, a)


def _position(name, index, n):
    index = _int(name, "index", index)
    if not -n <= index < n:
        raise OutOfRangeError(f"{name}: index {index} is out of range for a dim of size {n}")
    return index % n


def _along_dim(mask, a, ndim):
    """A 1-D mask over dim a, shaped to broadcast against a tensor of ndim dims."""
    return mask.reshape(mask.shape + (1,) * (ndim - a - 1))


def _same_dtype(name, input, src, what="src"):
    if src.dtype != input.dtype:
        raise DTypeError(f"{name}: {what} ({src.dtype}) must have input's dtype {input.dtype}")


def _want_shape(name, src, shape):
    got = tuple(src.shape)
    if len(got) != len(shape) or any(UNKNOWN not in (g, w) and g != w for g, w in zip(got, shape)):
        raise ShapeError(f"{name}: src has shape {got}, expected {tuple(shape)}")


def select(input, dim, index):
    """input's slice at `index` of `dim` (that dim removed)."""
    a = axis_of(dim, input.ndim)
    n = input.shape[a]
    index = _int("select", "index", index)
    if n != UNKNOWN and not -n <= index < n:
        raise OutOfRangeError(f"select: index {index} is out of range for a dim of size {n}")
    return input[(slice(None),) * a + (index,)]


def select_scatter(input, src, dim, index):
    """A copy of input with its slice at `index` of `dim` replaced by src."""
    a, n = _dim("select_scatter", input, dim)
    index = _position("select_scatter", index, n)
    _same_dtype("select_scatter", input, src)
    _want_shape("select_scatter", src, input.shape[:a] + input.shape[a + 1 :])
    hit = _along_dim(np.arange(n) == index, a, input.ndim)
    return where(hit, unsqueeze(src, a), input)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[start:end:step] along `dim` replaced by src."""
    name = "slice_scatter"
    a, n = _dim(name, input, dim)
    for arg, v in (("start", start), ("end", end)):
        if v is not None:
            _int(name, arg, v)
    positions = np.arange(n)[slice(start, end, _int(name, "step", step, low=1))]
    _same_dtype(name, input, src)
    _want_shape(name, src, input.shape[:a] + (len(positions),) + input.shape[a + 1 :])
    if len(positions) == 0:
        return clone(input)
    which, hit = np.zeros(n, np.int64), np.zeros(n, bool)
    which[positions], hit[positions] = np.arange(len(positions)), True
    spread = index_select(src, a, which)  # src's slice for each position of the dim
    return where(_along_dim(hit, a, input.ndim), spread, input)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with its `offset`-th diagonal over (dim1, dim2) replaced by src
    (which has diagonal(input, offset, dim1, dim2)'s shape)."""
    name = "diagonal_scatter"
    a1, n1 = _dim(name, input, dim1)
    a2, n2 = _dim(name, input, dim2)
    if a1 == a2:
        raise ShapeError(f"{name}: dim1 and dim2 must differ, both are {a1}")
    offset = _int(name, "offset", offset)
    row0, col0 = max(0, -offset), max(0, offset)
    length = max(0, min(n1 - row0, n2 - col0))
    _same_dtype(name, input, src)
    batch = tuple(s for d, s in enumerate(input.shape) if d not in (a1, a2))
    _want_shape(name, src, batch + (length,))
    if length == 0:
        return clone(input)
    which, hit = np.zeros((n1, n2), np.int64), np.zeros((n1, n2), bool)
    k = np.arange(length)
    which[row0 + k, col0 + k], hit[row0 + k, col0 + k] = k, True
    x = movedim(input, (a1, a2), (-2, -1))
    spread = index_select(src, -1, which.reshape(-1))  # (batch..., n1 * n2)
    spread = reshape(spread, tuple(x.shape[:-2]) + (n1, n2))
    return movedim(where(hit, spread, x), (-2, -1), (a1, a2))


def masked_fill(input, mask, value):
    """A copy of input with `value` (a number or a 0-d tensor) where the bool mask is True
    (mask broadcasts)."""
    if mask.dtype != dt.bool_:
        raise DTypeError(f"masked_fill: mask must be a bool tensor, got {mask.dtype}")
    if _is_value(value):
        if value.ndim != 0:
            raise ShapeError(f"masked_fill: value must be a number or 0-d, got shape {value.shape}")
        return where(mask, astype(value, input.dtype), input)
    if not isinstance(value, (bool, np.bool_)):
        _number("masked_fill", "value", value)
    return where(mask, full_like(input, value), input)


def masked_scatter(input, mask, source):
    """A copy of input whose elements where the bool mask is True (mask broadcasts) are
    source's first elements, in row-major order."""
    if mask.dtype != dt.bool_:
        raise DTypeError(f"masked_scatter: mask must be a bool tensor, got {mask.dtype}")
    _same_dtype("masked_scatter", input, source, "source")
    x, m = broadcast_tensors(input, mask)
    hit = reshape(m, (-1,))
    flat = reshape(source, (-1,))
    taken = _eager_or_none(reduce_sum(hit))
    if taken is not None and taken > numel(flat):
        raise ShapeError(
            f"masked_scatter: the mask selects {int(taken)} elements, source has {numel(flat)}"
        )
    if taken is not None and taken == 0:
        return clone(x)
    position = cumsum(astype(hit, dt.int64), axis=0) - 1  # the source element of each hit
    picked = take(flat, where(hit, position, 0))
    return reshape(where(hit, picked, reshape(x, (-1,))), tuple(x.shape))


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of input whose slices at `index` along `dim` are reduced ("prod", "mean",
    "amax", "amin") with source's slices (source.shape[dim] == len(index)); include_self=False
    leaves input's own values out where an index hits."""
    name = "index_reduce"
    if reduce not in _INDEX_REDUCTIONS:
        raise AttrError(f"{name}: reduce must be one of {_INDEX_REDUCTIONS}, got {reduce!r}")
    if input.ndim == 0:  # one element along dim 0 (PyTorch's)
        vectors = (as_vector(input), axis_of(dim, 0), index, as_vector(source))
        return as_scalar(index_reduce(*vectors, reduce, include_self=include_self))
    a = axis_of(dim, input.ndim)
    if index.ndim != 1 or index.dtype not in dt.INTS:
        raise DTypeError(
            f"{name}: index must be a 1-D integer tensor, got {index.dtype} {index.shape}"
        )
    want = input.shape[:a] + (index.shape[0],) + input.shape[a + 1 :]
    _same_dtype(name, input, source, "source")
    _want_shape(name, source, want)
    idx = reshape(index, (1,) * a + (-1,) + (1,) * (input.ndim - a - 1))
    return scatter_reduce(
        input, a, broadcast_to(idx, tuple(source.shape)), source, reduce, include_self
    )


def put(input, index, source, accumulate=False):
    """A copy of input with input.flatten()[index] = source (added up with accumulate);
    negative indices count from the end."""
    if index.dtype not in dt.INTS:
        raise DTypeError(f"put: index must be an integer tensor, got {index.dtype}")
    _same_dtype("put", input, source, "source")
    if numel(index) != numel(source):
        raise ShapeError(f"put: index has {numel(index)} elements, source {numel(source)}")
    idx = reshape(index, (-1,))  # index_put counts a negative index from the end, once
    out = index_put(reshape(input, (-1,)), (idx,), reshape(source, (-1,)), accumulate=accumulate)
    return reshape(out, tuple(input.shape))


def argwhere(input):
    """The (count, ndim) int64 indices of input's nonzero elements, row by row (eager: the
    count depends on the values)."""
    found = np.argwhere(eager_values("argwhere", "input", input)).astype(np.int64)
    return on_device(astype(found, dt.int64), getattr(input, "device", None))


def nonzero_static(input, *, size, fill_value=-1):
    """PyTorch's nonzero_static: argwhere's (count, ndim) indices cut or padded with
    fill_value to exactly `size` rows, so that the shape does not depend on the values."""
    size = _int("nonzero_static", "size", size, low=0)
    fill_value = _int("nonzero_static", "fill_value", fill_value)
    found = np.argwhere(eager_values("nonzero_static", "input", input)).astype(np.int64)[:size]
    padded = np.full((size, found.shape[1]), fill_value, np.int64)
    padded[: len(found)] = found
    return on_device(astype(padded, dt.int64), getattr(input, "device", None))


# ---------------------------------------------------------------- creation


def inclusive_range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """PyTorch's deprecated torch.range: start, start + step, ... up to and including end,
    in the default float dtype unless given (nbflow.range is this; use arange)."""
    warnings.warn(
        "torch.range is deprecated: use arange, which excludes end", UserWarning, stacklevel=2
    )
    if end is None:
        start, end = 0, start
    for arg, v in (("start", start), ("end", end), ("step", step)):
        _number("range", arg, v)
    if step == 0 or (end - start) * step < 0:
        raise DomainError(f"range: end {end} can't be reached from start {start} by step {step}")
    count = int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(count, dtype=np.float64)
    dtype = dt.as_dtype(dtype)
    return on_device(astype(values, dtype), device, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """The number s as a 0-d tensor, in the default float dtype unless given."""
    if not isinstance(s, (bool, np.bool_)):
        _number("scalar_tensor", "s", s)
    dtype = dt.as_dtype(dtype)
    return on_device(astype(np.asarray(dt.scalar(s, dtype)), dtype), device, requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """obj as a tensor: a tensor of that dtype is itself (a copy with copy=True); other data
    are copied as as_tensor does (PyTorch would share a numpy array's memory, which
    nbflow.from_numpy does: here copy=False raises where a copy is made). requires_grad:
    None keeps a tensor's, False detaches, True asks for it."""
    want = None if dtype is None else dt.as_dtype(dtype)
    same = is_tensor(obj) and (want is None or want == obj.dtype)
    if copy is False and not same:
        raise AttrError(
            f"asarray: copy=False, but {type(obj).__name__} needs a copy here "
            "(nbflow.from_numpy shares a numpy array's memory)"
        )
    if not is_tensor(obj):
        out = as_tensor(obj, dtype=want)
    else:
        out = obj if same else astype(obj, want)
        out = clone(out) if copy and out is obj else out
    if requires_grad is False and out.requires_grad:
        out = out.detach()
    out = on_device(out, device)
    if requires_grad and not out.requires_grad:
        out = on_device(out.detach() if out is obj else out, None, True)
    return out


__all__ = [
    "msort",
    "adjoint",
    "detach",
    "combinations",
    "unravel_index",
    "select",
    "select_scatter",
    "slice_scatter",
    "diagonal_scatter",
    "masked_fill",
    "masked_scatter",
    "index_reduce",
    "put",
    "argwhere",
    "nonzero_static",
    "scalar_tensor",
    "asarray",
    "concatenate",
    "moveaxis",
    "unsafe_chunk",
    "unsafe_split",
    "trapz",
    "unsafe_split_with_sizes",
    "ger",
]
