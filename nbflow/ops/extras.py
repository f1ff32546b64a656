"""PyTorch's top-level functions that nbflow had under other names or not at all: joins
(hstack, vstack, dstack, block_diag, cartesian_prod), shapes (atleast_nd, broadcast_tensors,
ravel, t), distances (cdist),
sorted-sequence search (searchsorted, bucketize, isin) and a few conveniences. Each is
composed from nbflow's ops, so gradients, graph mode and the GPU come from those ops; gcd and
lcm are elementwise ops of their own (a loop in the scalar body).

Searches and membership compare every value with every element (memory values.numel() *
sequence length): meant for moderate sizes, and exact. A result whose shape depends on the
input's values (bincount) is eager only: UnsupportedError on a graph value.

The rest of PyTorch's top-level names that nbflow adds are in queries.py (tensor and dtype
questions, constants), signal.py (windows, histograms), elementwise_more.py (bitwise ops,
frexp, fmax, i0, ...), index_more.py (aliases, the scatter views, masked ops, range) and
../torch_names.py (legacy linear-algebra names, top-level losses with reduction codes).
"""

import math

import numpy as np

from ..argcheck import integers, known_size, number, shown, tensor_args, tensor_list
from ..core import UNKNOWN, broadcast_shapes
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    AttrError,
    DomainError,
    DTypeError,
    ShapeError,
    UnsupportedError,
)
from ._define import elementwise
from .creation import check_memory_format, endpoint, linspace, on_device, zeros, zeros_like
from .elementwise import (
    abs,
    astype,
    eq,
    exp,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    mul,
    sqrt,
    sub,
    where,
)
from .index import index_put, take_along_axis
from .linalg import matmul
from .reduce import any as any_
from .reduce import norm
from .reduce import sum as reduce_sum
from .select import (
    _int,
    diag,
    eager_values,
)
from .shape import (
    broadcast_to,
    concat,
    meshgrid,
    pad,
    reshape,
    stack,
    swapaxes,
    transpose,
    unsqueeze,
)


def _is_value(x) -> bool:
    """A tensor, a graph value or an array (what the ops take as a tensor argument)."""
    return all(hasattr(x, a) for a in ("shape", "ndim", "dtype"))


def _floats(name, x):
    """x as a float tensor (integers and bools in the default float dtype, as PyTorch); a numpy
    array of a dtype nbflow widens (uint8, int16 ...) counts as the dtype it becomes."""
    if not hasattr(x, "dtype"):
        raise ArgumentError(f"{name}: expected a tensor, got {shown(x)}")
    dtype = dt.widen(np.dtype(x.dtype))
    if dtype not in dt.ALL:
        raise DTypeError(f"{name}: expected a tensor of numbers, got dtype {dtype}")
    return x if dt.is_float(dtype) else astype(x, dt.default_float())


def _eager_or_none(t):
    """t's values in eager mode; None for a graph value (it has none until the program runs)."""
    try:
        return np.asarray(t.numpy())
    except (AttributeError, UnsupportedError):
        return None


# ---------------------------------------------------------------- at least n dims, joins


def _at_least_1d(x):
    return reshape(x, (1,)) if x.ndim == 0 else x


def _at_least_2d(x):
    return unsqueeze(_at_least_1d(x), 0) if x.ndim < 2 else x


def _at_least_3d(x):
    if x.ndim == 2:
        return unsqueeze(x, -1)
    return unsqueeze(_at_least_2d(x), -1) if x.ndim < 2 else x


def _at_least(name, tensors, fix):
    # one tensor gives a tensor; several (or one list of them) give a tuple, as PyTorch
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return fix(tensor_args(name, tensors)[0])
    return tuple(fix(x) for x in tensor_args(name, tensors))


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d one as shape (1,))."""
    return _at_least("atleast_1d", tensors, _at_least_1d)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (a 1-d one of n as (1, n))."""
    return _at_least("atleast_2d", tensors, _at_least_2d)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims ((n,) as (1, n, 1), (m, n) as (m, n, 1))."""
    return _at_least("atleast_3d", tensors, _at_least_3d)


def hstack(tensors):
    """The tensors joined column-wise: along dim 1, or dim 0 when they are 1-D (numpy's)."""
    xs = [_at_least_1d(x) for x in tensor_list("hstack", tensors)]
    return concat(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def vstack(tensors):
    """The tensors joined row-wise: along dim 0 after atleast_2d."""
    return concat([_at_least_2d(x) for x in tensor_list("vstack", tensors)], axis=0)


row_stack = vstack


def dstack(tensors):
    """The tensors joined depth-wise: along dim 2 after atleast_3d."""
    return concat([_at_least_3d(x) for x in tensor_list("dstack", tensors)], axis=2)


def column_stack(tensors):
    """The tensors as columns: 0-d and 1-d ones become (n, 1), then joined along dim 1."""
    xs = tensor_list("column_stack", tensors)
    return concat([unsqueeze(_at_least_1d(x), 1) if x.ndim < 2 else x for x in xs], axis=1)


def block_diag(*tensors):
    """A block-diagonal matrix of the tensors (0-d as 1x1, 1-D of n as 1xn), zeros elsewhere;
    dtypes promote together."""
    xs = [_at_least_2d(x) for x in tensor_args("block_diag", tensors)]
    if not xs:
        return zeros(1, 0)  # PyTorch's answer for no blocks
    for x in xs:
        if x.ndim > 2 or UNKNOWN in x.shape:
            raise ShapeError(f"block_diag: each block must be at most 2-D and known, got {x.shape}")
    dtype = dt.promote([x.dtype for x in xs])
    width = sum(x.shape[1] for x in xs)
    rows, left = [], 0
    for x in xs:  # each block padded out to the full width, the rows then stacked
        right = width - left - x.shape[1]
        rows.append(pad(astype(x, dtype), ((0, 0), (left, right))))
        left += x.shape[1]
    return concat(rows, axis=0)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, one row per combination (itertools.product's
    order); one tensor is returned as it is."""
    xs = tensor_args("cartesian_prod", tensors)
    if not xs:
        raise ShapeError("cartesian_prod needs at least one tensor")
    if any(x.ndim != 1 for x in xs):
        raise ShapeError(f"cartesian_prod needs 1-D tensors, got {[tuple(x.shape) for x in xs]}")
    if len(xs) == 1:
        return xs[0]
    return stack([reshape(g, (-1,)) for g in meshgrid(*xs, indexing="ij")], axis=1)


# ---------------------------------------------------------------- shapes


def _broadcast_shape(name, shapes):
    """core.broadcast_shapes (an unknown (-1) dim taken as matching), its error naming `name`."""
    try:
        return broadcast_shapes(*shapes)
    except ShapeError as e:
        raise ShapeError(f"{name}: {e}") from None


def broadcast_tensors(*tensors):
    """The tensors broadcast to their common shape (a tuple of views)."""
    xs = tensor_args("broadcast_tensors", tensors)
    shape = _broadcast_shape("broadcast_tensors", [tuple(x.shape) for x in xs])
    out = []
    for x in xs:
        if tuple(x.shape) == shape:
            out.append(x)
            continue
        lead = len(shape) - x.ndim
        # an unknown target dim can only be kept from x (broadcast_to's -1), never grown
        if any(
            n == UNKNOWN and (d < lead or x.shape[d - lead] != UNKNOWN) for d, n in enumerate(shape)
        ):
            raise ShapeError(
                f"broadcast_tensors: can't broadcast shape {x.shape} to {shape}, whose -1 dims "
                "are known only at run time"
            )
        out.append(broadcast_to(x, shape))
    return tuple(out)


def ravel(input):
    """input flattened to 1-D."""
    return reshape(input, (-1,))


def t(input):
    """A 2-D tensor transposed; 0-d and 1-D ones as they are."""
    if input.ndim > 2:
        raise ShapeError(f"t() takes a tensor of at most 2 dims, got {input.ndim}: use mT")
    return input if input.ndim < 2 else transpose(input, 0, 1)


def numel(input):
    """The number of elements (an int)."""
    if UNKNOWN in tuple(input.shape):
        raise UnsupportedError(f"numel of a value of shape {input.shape}: a dim is unknown")
    return math.prod(input.shape)


def swapdims(input, dim0, dim1):
    """swapaxes with PyTorch's other name."""
    return swapaxes(input, dim0, dim1)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of input's shape, filled with zeros (nbflow hands out no uninitialised
    memory), in input's dtype unless given."""
    check_memory_format("empty_like", memory_format)
    return on_device(zeros_like(input, dtype=dtype), device, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False):
    """PyTorch's empty_permuted: a tensor of `size` (filled with zeros, as empty) whose memory
    PyTorch lays out in the order `physical_layout`, a permutation of the dims: checked, and
    every layout gives the same tensor (nbflow's kernels take any strides)."""
    size = integers(size, "empty_permuted: size")
    layout = integers(physical_layout, "empty_permuted: physical_layout")
    if sorted(layout) != list(range(len(size))):
        raise DomainError(
            f"empty_permuted: physical_layout {layout} is not a permutation of {len(size)} dims"
        )
    return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """PyTorch's empty_strided: a tensor of `size` (filled with zeros, as empty); `stride`,
    one int per dim, is checked, and the tensor is laid out contiguously (nbflow's tensors
    have no user-set strides; their values are the same)."""
    size = integers(size, "empty_strided: size")
    stride = integers(stride, "empty_strided: stride")
    if len(stride) != len(size):
        raise ShapeError(f"empty_strided: {len(stride)} strides for {len(size)} dims")
    return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad)


def diagflat(input, offset=0):
    """input flattened, placed on the `offset`-th diagonal of a square matrix."""
    flat = reshape(input, (-1,))
    known_size("diagflat", flat, 0)
    return diag(flat, _int("diagflat", "offset", offset))


# ---------------------------------------------------------------- numbers


_erfc64 = np.vectorize(math.erfc, otypes=[np.float64])  # (the reference)


@elementwise(dtypes=dt.FLOATS, ref=lambda x: _erfc64(x).astype(x.dtype), to_float=True)
def erfc(x):
    """The complementary error function 1 - erf(x), to relative precision where it is
    small (math.erfc: 1 - erf(x) in float32 is 0 from x = 3.9, erfc(5) is 1.5e-12)."""
    return math.erfc(x)


erfc.defgrad(lambda g, out, x: (g * exp(x * x * -1) * (-2 / math.sqrt(math.pi)),))


def rsub(input, other, *, alpha=1):
    """other - alpha * input (PyTorch's reversed sub)."""
    number("rsub", "alpha", alpha)
    return sub(other, input if alpha == 1 else mul(input, alpha))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """`steps` numbers from base**start to base**end, evenly spaced in the exponent (start
    and end may be 0-d tensors)."""
    start, end = endpoint("logspace", "start", start), endpoint("logspace", "end", end)
    for arg, v in (("start", start), ("end", end), ("base", base)):
        number("logspace", arg, v)
    steps = _int("logspace", "steps", steps, low=0)
    exponents = linspace(float(start), float(end), steps, dtype=dt.float64)
    # computed in float64, then rounded once to the dtype asked for
    values = float(base) ** exponents
    dtype = dt.as_dtype(dtype)
    return on_device(astype(values, dtype), device, requires_grad)


@elementwise(dtypes=dt.INTS, ref=np.gcd, differentiable=False)
def gcd(a, b):
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) is 0): Euclid's
    algorithm in the scalar body, one kernel for both modes."""
    a, b = (a if a >= 0 else -a), (b if b >= 0 else -b)
    while b != 0:
        a, b = b, a % b
    return a


@elementwise(dtypes=dt.INTS, ref=np.lcm, differentiable=False)
def lcm(a, b):
    """The least common multiple, elementwise (non-negative; 0 where either is 0; it wraps
    around on overflow, as PyTorch's)."""
    g, r = (a if a >= 0 else -a), (b if b >= 0 else -b)
    while r != 0:
        g, r = r, g % r
    m = a // g * b if g != 0 else g
    return m if m >= 0 else -m


# ---------------------------------------------------------------- index grids


def _triangle_indices(name, pick, row, col, offset, dtype, device):
    row, col = _int(name, "row", row, low=0), _int(name, "col", col, low=0)
    offset = _int(name, "offset", offset)
    dtype = dt.as_dtype(dtype)
    if dtype not in dt.INTS:
        raise DTypeError(f"{name}: dtype must be int32 or int64, got {dtype}")
    # fixed by the ints: numpy's indices (PyTorch's order), made a tensor (a graph constant)
    indices = np.stack(pick(row, offset, col)).astype(np.int64).reshape(2, -1)
    return on_device(astype(indices, dtype), device)


def tril_indices(row, col, offset=0, *, dtype=dt.int64, device=None):
    """The (2, N) row and column indices of the lower triangle of a row x col matrix, on and
    below the `offset`-th diagonal, row by row."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=dt.int64, device=None):
    """The (2, N) row and column indices of the upper triangle of a row x col matrix, on and
    above the `offset`-th diagonal, row by row."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


# ---------------------------------------------------------------- distances


_COMPUTE_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between each row of x1 (..., P, M) and each row of x2 (..., R, M):
    (..., P, R), batch dims broadcasting. p >= 0 or inf; p=0 counts the differing
    coordinates. The gradient at a zero distance is 0, as PyTorch's."""
    for arg, x in (("x1", x1), ("x2", x2)):
        if x.ndim < 2:
            raise ShapeError(f"cdist: {arg} must have at least 2 dims, got shape {x.shape}")
        if not dt.is_float(x.dtype):
            raise DTypeError(f"cdist: {arg} must be a float tensor, got {x.dtype}")
    m1, m2 = x1.shape[-1], x2.shape[-1]
    if UNKNOWN not in (m1, m2) and m1 != m2:
        raise ShapeError(f"cdist: x1 and x2 rows differ in length: {x1.shape} and {x2.shape}")
    p = number("cdist", "p", p)
    if not p >= 0:
        raise DomainError(f"cdist: p must be >= 0 (or inf), got {p}")
    if compute_mode not in _COMPUTE_MODES:
        raise AttrError(f"cdist: compute_mode must be one of {_COMPUTE_MODES}")
    if p == 2 and _use_mm(compute_mode, x1.shape[-2], x2.shape[-2]):
        return _euclid_by_matmul(x1, x2)
    diff = unsqueeze(x1, -2) - unsqueeze(x2, -3)  # (..., P, R, M): memory P * R * M
    if p in (0, 1, 2, math.inf):
        return norm(diff, p, axis=-1)
    a = abs(diff)
    # |d|**p and s**(1/p) have infinite slopes at 0: the inner wheres keep them out
    powered = where(a > 0, where(a > 0, a, 1) ** p, 0)
    s = reduce_sum(powered, axis=-1)
    return where(s > 0, where(s > 0, s, 1) ** (1.0 / p), 0)


def _use_mm(mode, p_rows, r_rows):
    # PyTorch's rule: the matmul form (memory P * R) beyond 25 rows; the difference form
    # (exact, memory P * R * M) otherwise
    if mode == "use_mm_for_euclid_dist_if_necessary":
        return UNKNOWN in (p_rows, r_rows) or p_rows > 25 or r_rows > 25
    return mode == "use_mm_for_euclid_dist"


def _euclid_by_matmul(x1, x2):
    """sqrt(|a|^2 + |b|^2 - 2 a.b): rounding can leave a small negative, clamped to 0."""
    sq1 = reduce_sum(x1 * x1, axis=-1, keepdims=True)
    sq2 = unsqueeze(reduce_sum(x2 * x2, axis=-1), -2)
    d2 = sq1 + sq2 - matmul(x1, swapaxes(x2, -1, -2)) * 2
    positive = d2 > 0
    return where(positive, sqrt(where(positive, d2, 1)), 0)


# ---------------------------------------------------------------- sorted sequences


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
    if side not in (None, "left", "right"):
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
    if not _is_value(elements) and not _is_value(test_elements):
        raise ArgumentError("isin: elements or test_elements must be a tensor")
    if not _is_value(test_elements):
        hit = eq(elements, number("isin", "test_elements", test_elements))
    elif not _is_value(elements):
        hit = any_(eq(test_elements, number("isin", "elements", elements)))
    else:
        hit = any_(eq(unsqueeze(elements, -1), reshape(test_elements, (-1,))), axis=-1)
    return logical_not(hit) if invert else hit


def bincount(input, weights=None, minlength=0):
    """The count of each value 0..max(input) in a 1-D tensor of non-negative ints (the sum
    of their weights, when given). Eager only: the result's length is input's maximum."""
    if input.ndim != 1:
        raise ShapeError(f"bincount: input must be 1-D, got shape {input.shape}")
    if input.dtype not in dt.INTS:
        raise DTypeError(f"bincount: input must be an integer tensor, got {input.dtype}")
    minlength = _int("bincount", "minlength", minlength, low=0)
    values = eager_values("bincount", "input", input)
    if values.size and values.min() < 0:
        raise DomainError(f"bincount: input must be non-negative, got {int(values.min())}")
    n = max(int(values.max()) + 1 if values.size else 0, minlength)
    device = getattr(input, "device", None)
    if weights is None:
        counts = zeros(n, dtype=dt.int64, device=device)
        return index_put(counts, (input,), 1, accumulate=True)
    if tuple(weights.shape) != tuple(input.shape):
        raise ShapeError(f"bincount: weights {weights.shape} must match input {input.shape}")
    # PyTorch's result dtype: float32 for float32 weights, float64 for any other
    dtype = dt.float32 if weights.dtype == dt.float32 else dt.float64
    out = zeros(n, dtype=dtype, device=device)
    return index_put(out, (input,), astype(weights, dtype), accumulate=True)


__all__ = [
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "hstack",
    "vstack",
    "row_stack",
    "dstack",
    "column_stack",
    "block_diag",
    "cartesian_prod",
    "broadcast_tensors",
    "ravel",
    "t",
    "numel",
    "swapdims",
    "empty_like",
    "empty_permuted",
    "empty_strided",
    "diagflat",
    "erfc",
    "rsub",
    "logspace",
    "gcd",
    "lcm",
    "tril_indices",
    "triu_indices",
    "cdist",
    "searchsorted",
    "bucketize",
    "isin",
    "bincount",
]
