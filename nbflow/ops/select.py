"""PyTorch's indexing, scatter and piece-cutting functions (with the scatter views select_scatter,
slice_scatter and diagonal_scatter, the masked ops, index_reduce, put, argwhere, combinations
and unravel_index), composed from the structured ops (index_put, take_along_axis, index_select,
scatter_add, split, flip): gradients, graph mode and the GPU come from those ops.

Indices follow nbflow's index ops: an index in [-n, n) is valid (negative ones count from the
end, as numpy; PyTorch rejects them in scatter and gather); anything else raises
OutOfRangeError (an IndexError) before a kernel runs.
"""

import itertools

import numpy as np

from ..argcheck import integer, integers, known_size, number, real
from ..core import UNKNOWN, as_int
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    AttrError,
    DomainError,
    DTypeError,
    OutOfRangeError,
    ShapeError,
    UnsupportedError,
)
from .creation import arange, eye, full, full_like, full_like_op, on_device, ones_like
from .elementwise import astype, clone, eq, floor_div, mod, mul, where
from .index import checked_range, getitem, index_put, index_put_, index_select, take_along_axis
from .joins import broadcast_tensors
from .queries import _is_value, eager_values_or_none, numel
from .reduce import amax, amin, prod
from .reduce import sum as reduce_sum
from .scans import cumsum
from .shape import (
    as_scalar,
    as_vector,
    axis_of,
    broadcast_to,
    concat,
    flip,
    movedim,
    pad,
    reshape,
    reshape_op,
    split,
    transpose,
    unsqueeze,
    unsqueeze_op,
)


def eager_values(name, arg, t):
    """The values of an eager tensor (for a result whose shape depends on them); graph values
    have none until the program runs."""
    if not hasattr(t, "shape"):
        raise ArgumentError(f"{name}: {arg} must be a tensor, got {type(t).__name__}")
    try:
        return np.asarray(t.numpy())  # (a graph value's numpy() raises)
    except (AttributeError, UnsupportedError):
        raise UnsupportedError(
            f"{name}: {arg} must be an eager tensor (the result's shape depends on its values, "
            "so it can't be part of a graph program)"
        ) from None


def _along(dim):
    """The key prefix that puts an index at `dim`: (:, :, ..., index)."""
    return (slice(None),) * dim


# ---------------------------------------------------------------- scatter


def _scatter_key(name, x, dim, index):
    """The index_put key for PyTorch's scatter: index's values along `dim`, and each other
    dim's own position (index covers a leading block of x there)."""
    if not x.ndim == index.ndim or x.ndim == 0:
        raise ShapeError(f"{name}: x and index need the same number of dims (>= 1)")
    a = axis_of(dim, x.ndim)
    key = []
    for d, n in enumerate(index.shape):
        if d == a:
            key.append(index)
            continue
        if n == UNKNOWN:  # (a graph's -1 dim: each entry's position, counted as it runs)
            key.append(cumsum(ones_like(index), axis=d) - 1)
            continue
        if x.shape[d] != UNKNOWN and n > x.shape[d]:
            raise ShapeError(f"{name}: index dim {d} ({n}) is larger than x's ({x.shape[d]})")
        shape = [1] * x.ndim
        shape[d] = n
        key.append(reshape(arange(n, device=getattr(x, "device", None)), shape))
    return a, tuple(key)


def _src_block(name, src, index):
    """The block of src that index covers (src may be larger, as PyTorch allows)."""
    if not hasattr(src, "shape"):
        return src  # a value
    if src.ndim != index.ndim:
        raise ShapeError(f"{name}: src and index need the same number of dims")
    if any(i > s for i, s in zip(index.shape, src.shape, strict=True)):
        raise ShapeError(f"{name}: index (shape {index.shape}) is larger than src {src.shape}")
    if tuple(src.shape) == tuple(index.shape):
        return src
    return getitem(src, tuple(slice(0, n) for n in index.shape))


def scatter(x, dim, index, src=None, value=None, reduce=None):
    """PyTorch's scatter, out of place: out[..., index[p], ...] = src[p] along `dim` (or
    `value`) for every position p of index; where an index repeats, one write wins (PyTorch
    leaves which one unspecified). reduce="add" / "multiply" is scatter_reduce's sum / prod."""
    src = value if src is None else src
    if src is None:
        raise AttrError("scatter: give src (a tensor) or value (a number)")
    if x.ndim == 0 and getattr(index, "ndim", None) == 0:
        out = scatter(as_vector(x), axis_of(dim, 0), as_vector(index), as_vector(src), None, reduce)
        return as_scalar(out)
    if reduce is not None:
        ops = {"add": "sum", "multiply": "prod"}
        if not isinstance(reduce, str) or reduce not in ops:
            raise AttrError(f"scatter: reduce must be 'add' or 'multiply', got {reduce!r}")
        if not hasattr(src, "shape"):  # a value: one per index entry
            src = full(tuple(index.shape), src, dtype=x.dtype, device=getattr(x, "device", None))
        return scatter_reduce(x, dim, index, src, ops[reduce])
    _, key = _scatter_key("scatter", x, dim, index)
    return index_put(x, key, _src_block("scatter", src, index))


def scatter_(x, dim, index, src=None, value=None):
    """scatter in place; returns x."""
    src = value if src is None else src
    _, key = _scatter_key("scatter_", x, dim, index)
    return index_put_(x, key, _src_block("scatter_", src, index))


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """PyTorch's scatter_reduce: the src entries sent to each position of x (along `dim`, by
    index) reduced with "sum", "prod", "mean", "amax" or "amin", together with x's own value
    when include_self; positions nothing is sent to keep x's value.

    Composed as a one-hot comparison of index with every position along `dim`, so it takes
    memory index.numel() * x.shape[dim]: meant for moderate sizes. Gradients are those of
    sum / prod / max / min over the one-hot (ties in amax / amin share the gradient)."""
    if not isinstance(reduce, str) or reduce not in _REDUCTIONS:
        raise AttrError(f"scatter_reduce: reduce must be one of {_REDUCTIONS}, got {reduce!r}")
    if x.ndim == 0 and getattr(index, "ndim", None) == 0:
        vectors = (as_vector(x), axis_of(dim, 0), as_vector(index), as_vector(src))
        return as_scalar(scatter_reduce(*vectors, reduce, include_self))
    a, _ = _scatter_key("scatter_reduce", x, dim, index)
    src = _src_block("scatter_reduce", src, index)
    n = known_size("scatter_reduce", x, a)
    region = tuple(slice(0, m) if d != a else slice(None) for d, m in enumerate(index.shape))
    base = getitem(x, region)  # the block of x that index reaches
    # every index in [0, n), as PyTorch requires (no negative ones: -1 is out of range), in
    # every mode: the checked index is what the one-hot below reads, so a program runs the check
    index = checked_range(index, low=0, high=n - 1, what=f"scatter_reduce: index along dim {a}")
    # hit[..., j, k, ...] = index[..., j, ...] == k, with k (the target position) after dim
    targets = reshape(arange(n, device=getattr(x, "device", None)), (n,) + (1,) * (x.ndim - a - 1))
    hit = eq(unsqueeze(index, a + 1), targets)
    count = reduce_sum(hit, axis=a)
    value = unsqueeze(src, a + 1)
    out = _reduce_hits(reduce, hit, value, count, base, a, include_self)
    out = where(count > 0, out, base).astype(x.dtype)
    if tuple(base.shape) == tuple(x.shape):
        return out
    return index_put(x, region, out)


def _reduce_hits(reduce, hit, value, count, base, a, include_self):
    if reduce in ("sum", "mean"):
        total = reduce_sum(where(hit, value, 0), axis=a)
        if include_self:
            total, count = total + base, count + 1
        if reduce == "sum":
            return total
        return total / count if dt.is_float(base.dtype) else total // count
    if reduce == "prod":
        out = prod(where(hit, value, 1), axis=a)
        return out * base if include_self else out
    fill = lowest_value(base.dtype) if reduce == "amax" else highest_value(base.dtype)
    pick = amax if reduce == "amax" else amin
    candidates = where(hit, value, fill)
    if include_self:  # one reduction over all, so that ties share the gradient evenly
        candidates = concat([candidates, unsqueeze(base, a)], axis=a)
    return pick(candidates, axis=a)


def lowest_value(dtype):
    """A fill below every value of dtype (-inf for a float or complex dtype: a complex fill
    for sums of exps; the ops that order values refuse complex ones themselves)."""
    if dt.is_float(dtype) or dt.is_complex(dtype):
        return -np.inf
    return int(np.iinfo(dtype).min) if dtype != dt.bool_ else 0


def highest_value(dtype):
    """lowest_value's mirror: a fill above every value of dtype."""
    if dt.is_float(dtype) or dt.is_complex(dtype):
        return np.inf
    return int(np.iinfo(dtype).max) if dtype != dt.bool_ else 1


# ---------------------------------------------------------------- index_add, _copy, _fill


def index_add(x, dim, index, source, alpha=1):
    """x with source's slices added at `index` along `dim` (repeated indices add up)."""
    real(alpha, "index_add: alpha")  # (a number; `alpha == 1` of an array has no truth value)
    if x.ndim == 0:
        return as_scalar(index_add(as_vector(x), axis_of(dim, 0), index, as_vector(source), alpha))
    a = axis_of(dim, x.ndim)
    source = source if alpha == 1 else mul(source, alpha)
    return index_put(x, _along(a) + (index,), source, accumulate=True)


def index_add_(x, dim, index, source, alpha=1):
    """index_add in place; returns x."""
    a = axis_of(dim, x.ndim)
    source = source if alpha == 1 else mul(source, alpha)
    return index_put_(x, _along(a) + (index,), source, accumulate=True)


def index_copy(x, dim, index, source):
    """x with its slices at `index` along `dim` replaced by source's."""
    if x.ndim == 0:
        return as_scalar(index_copy(as_vector(x), axis_of(dim, 0), index, as_vector(source)))
    a = axis_of(dim, x.ndim)
    return index_put(x, _along(a) + (index,), source)


def index_fill(x, dim, index, value):
    """x with its slices at `index` along `dim` set to `value`. The slices are marked first and
    filled once each, so a repeated index counts once in value's gradient (the sum of the
    gradient over the filled slices, as in PyTorch); index_put would count it per repeat."""
    if x.ndim == 0:
        return as_scalar(index_fill(as_vector(x), axis_of(dim, 0), index, value))
    a = axis_of(dim, x.ndim)
    filled = index_put(full_like_op(x, value=0, dtype=dt.bool_), _along(a) + (index,), True)
    out = where(filled, value, x)
    return out if out.dtype == x.dtype else out.astype(x.dtype)


# ---------------------------------------------------------------- take


def take(x, index):
    """x read as 1-D at `index` (any shape; the result has index's shape)."""
    return getitem(reshape(x, -1), index)


def take_along_dim(x, indices, dim=None):
    """take_along_axis with PyTorch's name; dim None reads x and indices flattened."""
    if dim is None:
        return take_along_axis(reshape(x, -1), reshape(indices, -1), 0)
    return take_along_axis(x, indices, dim)


# ---------------------------------------------------------------- pieces


def narrow(x, dim, start, length):
    """x[..., start:start + length, ...] along `dim` (start may count from the end, and may be
    a 0-d integer tensor, as in PyTorch)."""
    a = axis_of(dim, x.ndim)
    n = known_size("narrow", x, a)
    start, length = integer(start, "narrow: start"), integer(length, "narrow: length")
    if not -n <= start <= n:
        raise OutOfRangeError(f"narrow: start {start} is out of range for dim {a} of size {n}")
    start %= n if n else 1
    if length < 0 or start + length > n:
        raise OutOfRangeError(f"narrow: start {start} + length {length} exceeds size {n}")
    return getitem(x, _along(a) + (slice(start, start + length),))


def unbind(x, dim=0):
    """The slices of x along `dim`, that dim removed (a tuple)."""
    if x.ndim == 0:
        raise ShapeError("unbind needs at least one dim, got a 0-d tensor")
    a = axis_of(dim, x.ndim)
    n = known_size("unbind", x, a)
    return tuple(getitem(x, _along(a) + (i,)) for i in range(n))


def split_with_sizes(x, split_sizes, dim=0):
    """x cut along `dim` into pieces of the given lengths (they must sum to its length)."""
    return split(x, list(integers(split_sizes, "split_with_sizes: split_sizes")), dim)


def tensor_split(x, indices_or_sections, dim=0):
    """numpy's array_split: an int cuts n pieces whose lengths differ by at most one (the
    first ones longer); a sequence of indices cuts at those positions (clamped, as PyTorch)."""
    a = axis_of(dim, x.ndim)
    n = known_size("tensor_split", x, a)
    if hasattr(indices_or_sections, "shape") and len(indices_or_sections.shape) == 0:
        # a 0-d tensor is a number of sections (PyTorch's)
        indices_or_sections = int(
            eager_values("tensor_split", "indices_or_sections", indices_or_sections)
        )
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise AttrError(f"tensor_split: sections must be >= 1, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        cuts = indices_or_sections
        if hasattr(cuts, "shape"):
            cuts = eager_values("tensor_split", "indices_or_sections", cuts).tolist()
        cuts = integers(cuts, "tensor_split: indices_or_sections")
        bounds = [0] + [min(max(c if c >= 0 else c + n, 0), n) for c in cuts] + [n]
    pieces = zip(bounds[:-1], bounds[1:], strict=True)
    return tuple(getitem(x, _along(a) + (slice(lo, max(lo, hi)),)) for lo, hi in pieces)


def _even_split(name, x, sections, dim, min_ndim):
    if x.ndim < min_ndim:
        raise ShapeError(f"{name} needs a tensor of at least {min_ndim} dims, got {x.ndim}")
    if isinstance(sections, (int, np.integer)):
        n = known_size(name, x, dim)
        if sections <= 0 or n % sections:
            raise ShapeError(f"{name}: dim {dim} of size {n} can't be split into {sections}")
    return tensor_split(x, sections, dim)


def hsplit(x, sections):
    """tensor_split along dim 1 (dim 0 for a 1-D x); an int must divide the length."""
    return _even_split("hsplit", x, sections, 0 if x.ndim == 1 else 1, 1)


def vsplit(x, sections):
    """tensor_split along dim 0 of a tensor of at least 2 dims."""
    return _even_split("vsplit", x, sections, 0, 2)


def dsplit(x, sections):
    """tensor_split along dim 2 of a tensor of at least 3 dims."""
    return _even_split("dsplit", x, sections, 2, 3)


def repeat_interleave(x, repeats=None, dim=None, output_size=None):
    """Each element (slice along `dim`; of flattened x when dim is None) repeated `repeats`
    times: an int, or a tensor giving each its count (eager only: the result's length is
    its sum). repeat_interleave(counts) alone gives arange(len(counts)) repeated."""
    if repeats is None:  # repeat_interleave(repeats): the indices, repeated
        n = eager_values("repeat_interleave", "repeats", x).size
        return repeat_interleave(arange(n, device=getattr(x, "device", None)), x, 0)
    if dim is None:
        x, dim = reshape(x, -1), 0
    a = axis_of(dim, x.ndim)
    if isinstance(repeats, (int, np.integer)):
        from .tiling import repeat

        return repeat(x, integer(repeats, "repeat_interleave: repeats"), a)
    counts = eager_values("repeat_interleave", "repeats", repeats).reshape(-1)
    n = known_size("repeat_interleave", x, a)
    if counts.size == 1:
        counts = np.full(n, counts[0])
    if counts.size != n or counts.dtype.kind not in "iu" or np.any(counts < 0):
        raise ShapeError(
            f"repeat_interleave: repeats must be {n} non-negative ints (one per slice along "
            f"dim {a}), got {counts.tolist()}"
        )
    index = repeats.new_tensor(np.repeat(np.arange(n), counts), dtype=dt.int64)
    return index_select(x, a, index.to(getattr(x, "device", None)))


# ---------------------------------------------------------------- diagonals and rotations


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The `offset`-th diagonal of the (dim1, dim2) planes of x, as a last dim."""
    a, b = axis_of(dim1, x.ndim), axis_of(dim2, x.ndim)
    if a == b:
        raise ShapeError(f"diagonal: dim1 and dim2 are the same dim ({a})")
    moved = movedim(x, (a, b), (-2, -1))
    n, m = known_size("diagonal", moved, -2), known_size("diagonal", moved, -1)
    k = min(max(integer(offset, "diagonal: offset"), -n), m)  # (past the plane: empty, no 2**63)
    r0, c0 = max(0, -k), max(0, k)
    length = max(0, min(n - r0, m - c0))
    device = getattr(x, "device", None)
    rows, cols = arange(r0, r0 + length, device=device), arange(c0, c0 + length, device=device)
    return getitem(moved, (Ellipsis, rows, cols))


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """Each last-dim vector of x placed on the `offset`-th diagonal of a square plane at
    (dim1, dim2) of the result (zeros elsewhere)."""
    if x.ndim == 0:
        raise ShapeError("diag_embed needs at least one dim")
    n = known_size("diag_embed", x, -1)
    k = integer(offset, "diag_embed: offset")
    mask = eye(n, dtype="bool", device=getattr(x, "device", None))
    square = where(mask, unsqueeze(x, -1), 0)
    widths = [(0, 0)] * (x.ndim - 1) + ([(0, k), (k, 0)] if k >= 0 else [(-k, 0), (0, -k)])
    square = pad(square, widths) if k else square
    a, b = axis_of(dim1, x.ndim + 1), axis_of(dim2, x.ndim + 1)
    if a == b:
        raise ShapeError(f"diag_embed: dim1 and dim2 are the same dim ({a})")
    return movedim(square, (-2, -1), (a, b))


def trace(x):
    """The sum of the main diagonal of a 2-D x."""
    if x.ndim != 2:
        raise ShapeError(f"trace needs a 2-D tensor, got {x.ndim} dims")
    return reduce_sum(diagonal(x))


def rot90(x, k=1, dims=(0, 1)):
    """x rotated by 90 degrees k times, from dims[0] toward dims[1] (PyTorch's rot90)."""
    dims = integers(dims, "rot90: dims")
    if len(dims) != 2:
        raise ShapeError(f"rot90: dims must name 2 dims, got {dims}")
    a, b = axis_of(dims[0], x.ndim), axis_of(dims[1], x.ndim)
    if a == b:
        raise ShapeError(f"rot90: the two dims are the same ({a})")
    k = integer(k, "rot90: k") % 4
    if k == 1:
        return transpose(flip(x, b), a, b)
    if k == 2:
        return flip(x, (a, b))
    if k == 3:
        return transpose(flip(x, a), a, b)
    return x


def fliplr(x):
    """x reversed along dim 1 (at least 2 dims)."""
    if x.ndim < 2:
        raise ShapeError(f"fliplr needs at least 2 dims, got {x.ndim}")
    return flip(x, 1)


def flipud(x):
    """x reversed along dim 0 (at least 1 dim)."""
    if x.ndim < 1:
        raise ShapeError("flipud needs at least 1 dim")
    return flip(x, 0)


# ---------------------------------------------------------------- shapes of others


def expand_as(x, other):
    """x broadcast to other's shape."""
    return broadcast_to(x, tuple(other.shape))


def reshape_as(x, other):
    """x reshaped to other's shape."""
    return reshape(x, tuple(other.shape))


view_as = reshape_as


def unflatten(x, dim, sizes):
    """Dim `dim` of x split into dims of `sizes` (one may be -1)."""
    a = axis_of(dim, x.ndim)
    sizes = integers(sizes, "unflatten: sizes")
    return reshape(x, tuple(x.shape[:a]) + sizes + tuple(x.shape[a + 1 :]))


# ---------------------------------------------------------------- triangles and diagonals


def _triangle(name, x, diagonal, keep):
    if x.ndim < 2 or UNKNOWN in x.shape[-2:]:
        raise ShapeError(f"{name} needs a tensor of at least 2 known trailing dims, got {x.shape}")
    n, m = x.shape[-2:]
    device = getattr(x, "device", None)  # (a graph value has none: the executor places it)
    cols, rows = arange(m, device=device), arange(n, device=device)
    offset = reshape_op(cols, shape=(1, m)) - reshape_op(rows, shape=(n, 1))
    return where(keep(offset, as_int(diagonal, f"{name}: diagonal")), x, 0)


def tril(x, diagonal=0):
    """x with the elements above the `diagonal`-th diagonal of its last two dims set to 0."""
    return _triangle("tril", x, diagonal, lambda offset, k: offset <= k)


def triu(x, diagonal=0):
    """x with the elements below the `diagonal`-th diagonal of its last two dims set to 0."""
    return _triangle("triu", x, diagonal, lambda offset, k: offset >= k)


def diag(x, diagonal=0):
    """PyTorch's diag: a 1-D x becomes a square matrix with x on the `diagonal`-th diagonal
    (zeros elsewhere); a 2-D x gives its `diagonal`-th diagonal."""
    k = as_int(diagonal, "diag: diagonal")
    if x.ndim == 1:
        n = x.shape[0]
        mask = eye(n, dtype="bool", device=getattr(x, "device", None))
        square = where(mask, unsqueeze_op(x, axis=1), 0)
        return pad(square, ((0, k), (k, 0)) if k >= 0 else ((-k, 0), (0, -k)))
    if x.ndim != 2 or UNKNOWN in x.shape:
        raise ShapeError(f"diag needs a 1-D or a 2-D tensor of known shape, got {x.shape}")
    n, m = x.shape
    r0, c0 = max(0, -k), max(0, k)
    length = max(0, min(n - r0, m - c0))
    return getitem(x, (arange(r0, r0 + length), arange(c0, c0 + length)))


def diagflat(input, offset=0):
    """input flattened, placed on the `offset`-th diagonal of a square matrix."""
    flat = reshape(input, (-1,))
    known_size("diagflat", flat, 0)
    return diag(flat, integer(offset, "diagflat: offset"))


# ---------------------------------------------------------------- combinations and flat indices


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-D tensor's elements, one per row, in
    itertools.combinations' order (combinations_with_replacement's with with_replacement)."""
    if input.ndim != 1:
        raise ShapeError(f"combinations: input must be 1-D, got shape {input.shape}")
    r = integer(r, "combinations: r", 0)
    n = known_size("combinations", input, 0)
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
    dims = tuple(
        integer(d, "unravel_index: shape", 0) for d in integers(shape, "unravel_index: shape")
    )
    if 0 in dims:
        raise DomainError(f"unravel_index: shape {dims} has no elements to index")
    rest, coords = astype(indices, dt.int64), []
    for d in reversed(dims):
        coords.append(mod(rest, d))
        rest = floor_div(rest, d)
    return tuple(reversed(coords))


# ---------------------------------------------------------------- select and the scatter views


def _dim(name, input, dim):
    """(axis, its size) of `dim`, whose size must be known."""
    a = axis_of(dim, input.ndim)
    return a, known_size(name, input, a)


def _position(name, index, n):
    index = integer(index, f"{name}: index")
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
    if input.ndim == 0:
        raise ShapeError("select: needs at least one dim, got a 0-d tensor")
    a = axis_of(dim, input.ndim)
    n = input.shape[a]
    index = integer(index, "select: index")
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
            integer(v, f"{name}: {arg}")
    positions = np.arange(n)[slice(start, end, integer(step, f"{name}: step", 1))]
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
    offset = integer(offset, f"{name}: offset")
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


# ---------------------------------------------------------------- masked ops, put, argwhere


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
        number("masked_fill", "value", value)
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
    taken = eager_values_or_none(reduce_sum(hit))
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
    size = integer(size, "nonzero_static: size", 0)
    fill_value = integer(fill_value, "nonzero_static: fill_value")
    found = np.argwhere(eager_values("nonzero_static", "input", input)).astype(np.int64)[:size]
    padded = np.full((size, found.shape[1]), fill_value, np.int64)
    padded[: len(found)] = found
    return on_device(astype(padded, dt.int64), getattr(input, "device", None))


__all__ = [
    "tril",
    "triu",
    "diag",
    "scatter",
    "scatter_",
    "scatter_reduce",
    "index_add",
    "index_add_",
    "index_copy",
    "index_fill",
    "take",
    "take_along_dim",
    "narrow",
    "unbind",
    "split_with_sizes",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "repeat_interleave",
    "diagonal",
    "diag_embed",
    "trace",
    "rot90",
    "fliplr",
    "flipud",
    "expand_as",
    "reshape_as",
    "view_as",
    "unflatten",
    "diagflat",
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
    "combinations",
]
