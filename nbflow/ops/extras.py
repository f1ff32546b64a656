"""PyTorch's top-level functions that nbflow had under other names or not at all: joins
(hstack, vstack, dstack, block_diag, cartesian_prod), shapes (atleast_nd, broadcast_tensors,
ravel, t), statistics (std_mean, var_mean, cov, corrcoef, trapezoid), distances (cdist),
sorted-sequence search (searchsorted, bucketize, isin) and a few conveniences. Each is
composed from nbflow's ops, so gradients, graph mode and the GPU come from those ops; gcd and
lcm are elementwise ops of their own (a loop in the scalar body).

Searches and membership compare every value with every element (memory values.numel() *
sequence length): meant for moderate sizes, and exact. A result whose shape depends on the
input's values (bincount) is eager only: UnsupportedError on a graph value.
"""

import itertools
import math
import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes as dt
from ..core import UNKNOWN, broadcast_shapes
from ..errors import (
    ArgumentError,
    AttrError,
    DomainError,
    DTypeError,
    OutOfRangeError,
    ShapeError,
    UnsupportedError,
)
from ._define import NOT_IN_PYTORCH, elementwise
from .creation import full_like, linspace, manual_seed, on_device, zeros, zeros_like
from .einsum import einsum
from .elementwise import (
    abs,
    astype,
    clip,
    clone,
    eq,
    exp,
    exp2,
    floor,
    floor_div,
    isinf,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    mod,
    mul,
    sqrt,
    sub,
    where,
)
from .index import diag, index_put, index_select, take_along_axis
from .linalg import matmul, outer
from .reduce import ValuesIndices, amax, amin, cumsum, mean, norm, reduced_count, var
from .reduce import any as any_
from .reduce import sum as reduce_sum
from .select import (
    _highest,
    _int,
    diagonal,
    eager_values,
    scatter_reduce,
    split_with_sizes,
    take,
)
from .shape import (
    axis_of,
    broadcast_to,
    cat,
    chunk,
    concat,
    meshgrid,
    movedim,
    pad,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    transpose,
    unsqueeze,
)
from .sorting import median, sort_op


def _is_value(x) -> bool:
    """A tensor, a graph value or an array (what the ops take as a tensor argument)."""
    return all(hasattr(x, a) for a in ("shape", "ndim", "dtype"))


def _sequence(name, tensors):
    """PyTorch's `tensors` argument: a list or tuple of tensors, each checked."""
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentError(
            f"{name}: tensors must be a list or tuple of tensors, got {type(tensors).__name__}"
        )
    return _checked(name, tuple(tensors))


def _variadic(name, tensors):
    """f(a, b) and f([a, b]) both mean the tensors a and b."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return _checked(name, tensors)


def _checked(name, tensors):
    for i, x in enumerate(tensors):
        if not _is_value(x):
            raise ArgumentError(f"{name}: tensors[{i}] must be a tensor, got {type(x).__name__}")
    return tensors


def _number(name, arg, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise AttrError(f"{name}: {arg} must be a number, got {v!r}")
    return v


def _known(name, x, dim):
    n = x.shape[dim]
    if n == UNKNOWN:
        raise ShapeError(f"{name}: dim {dim} of the input (shape {x.shape}) must be known")
    return n


def _floats(x):
    """x as a float tensor (integers and bools in the default float dtype, as PyTorch)."""
    return x if dt.is_float(x.dtype) else astype(x, dt.DEFAULT_FLOAT)


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
        return fix(_checked(name, tensors)[0])
    return tuple(fix(x) for x in _variadic(name, tensors))


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
    xs = [_at_least_1d(x) for x in _sequence("hstack", tensors)]
    return concat(xs, axis=0 if xs and xs[0].ndim == 1 else 1)


def vstack(tensors):
    """The tensors joined row-wise: along dim 0 after atleast_2d."""
    return concat([_at_least_2d(x) for x in _sequence("vstack", tensors)], axis=0)


row_stack = vstack


def dstack(tensors):
    """The tensors joined depth-wise: along dim 2 after atleast_3d."""
    return concat([_at_least_3d(x) for x in _sequence("dstack", tensors)], axis=2)


def column_stack(tensors):
    """The tensors as columns: 0-d and 1-d ones become (n, 1), then joined along dim 1."""
    xs = _sequence("column_stack", tensors)
    return concat([unsqueeze(_at_least_1d(x), 1) if x.ndim < 2 else x for x in xs], axis=1)


def block_diag(*tensors):
    """A block-diagonal matrix of the tensors (0-d as 1x1, 1-D of n as 1xn), zeros elsewhere;
    dtypes promote together."""
    xs = [_at_least_2d(x) for x in _variadic("block_diag", tensors)]
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
    xs = _variadic("cartesian_prod", tensors)
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
    xs = _variadic("broadcast_tensors", tensors)
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


def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    """A tensor of input's shape, filled with zeros (nbflow hands out no uninitialised
    memory), in input's dtype unless given."""
    return on_device(zeros_like(input, dtype=dtype), device, requires_grad)


def diagflat(input, offset=0):
    """input flattened, placed on the `offset`-th diagonal of a square matrix."""
    flat = reshape(input, (-1,))
    _known("diagflat", flat, 0)
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
    _number("rsub", "alpha", alpha)
    return sub(other, input if alpha == 1 else mul(input, alpha))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """`steps` numbers from base**start to base**end, evenly spaced in the exponent."""
    for arg, v in (("start", start), ("end", end), ("base", base)):
        _number("logspace", arg, v)
    steps = _int("logspace", "steps", steps, low=0)
    exponents = linspace(float(start), float(end), steps, dtype=dt.float64)
    # computed in float64, then rounded once to the dtype asked for
    values = float(base) ** exponents
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
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


# ---------------------------------------------------------------- statistics


def _correction(name, dim, unbiased, correction):
    """(dim, correction) from PyTorch's two spellings: unbiased= (True: 1) or correction=."""
    if isinstance(dim, bool):  # f(x, True): the (input, unbiased) overload
        if unbiased is not None:
            raise AttrError(f"{name}: dim must be an int or a tuple of ints, got {dim}")
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise AttrError(f"{name}: give unbiased or correction, not both")
        if not isinstance(unbiased, (bool, np.bool_)):
            raise AttrError(f"{name}: unbiased must be a bool, got {unbiased!r}")
        return dim, int(bool(unbiased))
    return dim, 1 if correction is None else correction


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over `dim` (every element when None); correction=1 (unbiased=True) by
    default, as PyTorch."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    v = var(input, axis=dim, keepdims=keepdim, correction=correction)
    return v, mean(input, axis=dim, keepdims=keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over `dim` (every element when None); correction=1 (unbiased=True) by
    default, as PyTorch."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    v, m = var_mean(input, dim, keepdim=keepdim, correction=correction)
    return sqrt(v), m


def _weights(name, w, n, integer):
    if w.ndim != 1:
        raise ShapeError(f"cov: {name} must be 1-D, got shape {w.shape}")
    if integer and w.dtype not in dt.INTS or not integer and not dt.is_float(w.dtype):
        kind = "an integer" if integer else "a float"
        raise DTypeError(f"cov: {name} must be {kind} tensor, got {w.dtype}")
    if UNKNOWN not in (n, w.shape[0]) and w.shape[0] != n:
        raise ShapeError(f"cov: {name} has {w.shape[0]} entries for {n} observations")
    values = _eager_or_none(w)
    if values is not None and np.any(values < 0):
        raise DomainError(f"cov: {name} must be non-negative")
    return w


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in its columns;
    a 1-D input is one variable, giving a 0-d result). fweights are integer frequencies and
    aweights float importance weights of the observations, as numpy's cov."""
    if input.ndim > 2:
        raise ShapeError(f"cov: input must have at most 2 dims, got {input.ndim}")
    if input.dtype == dt.bool_:
        raise DTypeError("cov: bool input is not supported")
    _number("cov", "correction", correction)
    x = _floats(input)
    x = reshape(x, (1, -1)) if x.ndim < 2 else x
    # one variable gives a 0-d result (PyTorch squeezes): the rank needs the count known
    variables, n = _known("cov", x, 0), x.shape[1]
    w = None if fweights is None else _weights("fweights", fweights, n, True)
    aw = None if aweights is None else _weights("aweights", aweights, n, False)
    if aw is not None:
        w = aw if w is None else mul(w, aw)
    if w is None:
        w_sum = reduced_count(x, axis=1)  # (known only at run time for a graph value)
        avg = mean(x, axis=1)
        factor = w_sum - correction
    else:
        w_sum = reduce_sum(w)
        total = _eager_or_none(w_sum)
        if total is not None and total == 0:
            raise DomainError("cov: the weights sum to zero")
        avg = reduce_sum(x * w, axis=1) / w_sum
        factor = w_sum - correction
        if aw is not None and correction != 0:
            factor = w_sum - correction * reduce_sum(w * aw) / w_sum
    known = _eager_or_none(factor)
    if known is not None and known <= 0:
        warnings.warn(
            "cov: degrees of freedom <= 0 (correction should be less than the number of "
            "observations): the result is inf or NaN",
            RuntimeWarning,
            stacklevel=2,
        )
    # numpy's and PyTorch's rule: no degrees of freedom divide by zero (inf or NaN)
    factor = where(factor > 0, factor, 0)
    centered = x - unsqueeze(avg, 1)
    weighted = centered if w is None else centered * w
    c = matmul(centered, transpose(weighted, 0, 1)) / factor
    return reshape(c, ()) if variables == 1 else c


def corrcoef(input):
    """Pearson's correlation coefficients of the variables in input's rows (numpy's
    corrcoef), clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:  # one variable: 1, or NaN when its variance is 0, inf or NaN
        return c / c
    std = sqrt(diagonal(c))
    c = c / unsqueeze(std, 1) / unsqueeze(std, 0)
    return clip(c, -1, 1)


def _slices(y, a):
    """y without its last and without its first slice along axis a."""
    n = y.shape[a]
    lead = (slice(None),) * a
    if n == UNKNOWN:
        return y[lead + (slice(None, -1),)], y[lead + (slice(1, None),)]
    return y[lead + (slice(0, max(n - 1, 0)),)], y[lead + (slice(min(1, n), n),)]


def _areas(name, y, x, dx, dim):
    """The trapezoids' areas between neighbouring samples along dim."""
    if y.ndim == 0:
        raise ShapeError(f"{name}: y must have at least 1 dim")
    a = axis_of(dim, y.ndim)
    y = _floats(y)
    lo, hi = _slices(y, a)
    if x is None:
        return (lo + hi) * (0.5 if dx is None else _number(name, "dx", dx) / 2), a
    if dx is not None:
        raise AttrError(f"{name}: give x or dx, not both")
    if x.ndim > y.ndim:
        raise ShapeError(f"{name}: x has more dims ({x.ndim}) than y ({y.ndim})")
    if x.ndim == 1 and y.ndim > 1:  # sample points along dim, shared by every line
        n, m = x.shape[0], y.shape[a]
        if UNKNOWN not in (n, m) and n != m:
            raise ShapeError(f"{name}: x has {n} sample points for {m} values of y along {a}")
        x_lo, x_hi = _slices(x, 0)
        spacing = reshape(x_hi - x_lo, (-1,) + (1,) * (y.ndim - a - 1))
    else:  # x broadcasts with y, leading dims added as PyTorch does
        for _ in range(y.ndim - x.ndim):
            x = unsqueeze(x, 0)
        x_lo, x_hi = _slices(x, a)
        spacing = x_hi - x_lo
    return spacing * (lo + hi) * 0.5, a


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule's integral of y along `dim`, at sample points x (1-D along dim,
    or broadcasting with y) or spaced dx apart (1 by default)."""
    areas, a = _areas("trapezoid", y, x, dx, dim)
    return reduce_sum(areas, axis=a)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral of y along `dim` (one fewer element there)."""
    areas, a = _areas("cumulative_trapezoid", y, x, dx, dim)
    return cumsum(areas, axis=a)


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
    p = _number("cdist", "p", p)
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
        _number("searchsorted", "values", values)
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
        hit = eq(elements, _number("isin", "test_elements", test_elements))
    elif not _is_value(elements):
        hit = any_(eq(test_elements, _number("isin", "elements", elements)))
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


# ---------------------------------------------------------------- tensors and dtypes


def is_tensor(obj):
    """Whether obj is an nbflow tensor (a graph value counts, so a function traced by
    nbflow.jit decides as it does in eager mode)."""
    from ..operators import Operators  # (lazily: operators imports the ops)

    return isinstance(obj, Operators)


def as_tensor(data, dtype=None, device=None):
    """data as a tensor: a tensor of that dtype (and device) itself, no copy; another one
    converted (recorded, so gradients flow back); other data copied as nbflow.tensor does
    (nbflow.from_numpy shares a numpy array's memory)."""
    want = None if dtype is None else dt.as_dtype(dtype)
    if not is_tensor(data):
        try:
            array = np.asarray(data)
        except ValueError as e:  # ragged nested lists
            raise ShapeError(f"as_tensor: cannot make a tensor from this data: {e}") from None
        if want is None:
            want = _data_dtype(data, array)
        data = astype(array, want)
    elif want is not None and want != data.dtype:
        data = astype(data, want)
    return on_device(data, device)


def _data_dtype(data, array):
    """nbflow.tensor's inferred dtype: Python floats and ints as float32 and int64."""
    kind = array.dtype.kind
    if kind not in "biuf":
        raise DTypeError(f"as_tensor: cannot make a tensor from data of dtype {array.dtype}")
    if not isinstance(data, np.ndarray) and kind in "fiu":
        return dt.DEFAULT_FLOAT if kind == "f" else dt.DEFAULT_INT
    return dt.widen(array.dtype.newbyteorder("="))


def get_default_dtype():
    """The dtype of float tensors made from Python floats: float32 (nbflow's is fixed)."""
    return dt.DEFAULT_FLOAT


# ---------------------------------------------------------------- constants and dtypes

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None  # x[nbflow.newaxis] adds a dim, as numpy's


def is_floating_point(input):
    """Whether input's dtype is a float dtype."""
    return dt.is_float(input.dtype)


def is_complex(input):
    """False: nbflow has no complex dtypes."""
    return False


def is_signed(input):
    """Whether input's dtype is signed (every nbflow dtype but bool)."""
    return np.dtype(input.dtype).kind in "if"


def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    """Whether a tensor of exactly one element is nonzero (eager tensors: a graph value has
    no value until its program runs)."""
    if numel(input) != 1:
        raise ShapeError(f"is_nonzero: input must have one element, got shape {input.shape}")
    return bool(reshape(input, ()))


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ to to: never to a lower kind (float to
    int, int or float to bool)."""
    return dt.kind(dt.as_dtype(to)) >= dt.kind(dt.as_dtype(from_))


def promote_types(type1, type2):
    """The dtype the two dtypes promote to (nbflow/dtypes.py's table, PyTorch's)."""
    return dt.promote_pair(dt.as_dtype(type1), dt.as_dtype(type2))


def result_type(tensor1, tensor2):
    """The dtype an elementwise op on the two (tensors or numbers) gives. nbflow's rule: a
    number is weak (counts only when of a higher kind), a 0-d tensor is not (PyTorch also
    makes 0-d tensors weak against dimensioned ones)."""
    both = (tensor1, tensor2)
    strong = [x.dtype for x in both if _is_value(x)]
    return dt.promote(strong, [dt.scalar_dtype(x) for x in both if not _is_value(x)])


def finfo(type=None):
    """numpy's finfo of a float dtype (float32 when None): eps, max, min, tiny, bits..."""
    dtype = dt.DEFAULT_FLOAT if type is None else dt.as_dtype(type)
    if not dt.is_float(dtype):
        raise DTypeError(f"finfo takes a float dtype, got {dtype}")
    return np.finfo(dtype)


def iinfo(type):
    """numpy's iinfo of an integer dtype: min, max, bits."""
    dtype = dt.as_dtype(type)
    if dtype not in dt.INTS:
        raise DTypeError(f"iinfo takes an integer dtype, got {dtype}")
    return np.iinfo(dtype)


def seed():
    """Seed the default generator from the system's entropy; returns the seed (an int)."""
    value = int(np.random.SeedSequence().entropy % 2**63)
    manual_seed(value)
    return value


def get_device(input):
    """-1 on the CPU, else the GPU's index (PyTorch's answer)."""
    return input.get_device()


# ---------------------------------------------------------------- windows


def _window(name, window_length, periodic, dtype, device, requires_grad, formula):
    """formula(k, m): the symmetric window of m points at k = 0..m-1, in float64. A periodic
    window (PyTorch's default, for spectral analysis) is the first window_length points of
    the symmetric one of window_length + 1; 0 and 1 points give [] and [1]."""
    n = _int(name, "window_length", window_length, low=0)
    if not isinstance(periodic, (bool, np.bool_)):
        raise AttrError(f"{name}: periodic must be a bool, got {periodic!r}")
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    if not dt.is_float(dtype):
        raise DTypeError(f"{name} takes a float dtype, got {dtype}")
    if n <= 1:
        values = np.ones(n)
    else:
        m = n + 1 if periodic else n
        values = formula(np.arange(m, dtype=np.float64), m)[:n]
    return on_device(astype(values, dtype), device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi k / (M - 1))."""

    def formula(k, m):
        return 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1))

    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, formula)


def hamming_window(
    window_length,
    periodic=True,
    alpha=0.54,
    beta=0.46,
    *,
    dtype=None,
    device=None,
    requires_grad=False,
):
    """The Hamming window alpha - beta cos(2 pi k / (M - 1))."""
    alpha, beta = _number("hamming_window", "alpha", alpha), _number("hamming_window", "beta", beta)

    def formula(k, m):
        return alpha - beta * np.cos(2 * np.pi * k / (m - 1))

    name = "hamming_window"
    return _window(name, window_length, periodic, dtype, device, requires_grad, formula)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2 pi k / (M - 1)) + 0.08 cos(4 pi k / (M - 1))."""

    def formula(k, m):
        t = 2 * np.pi * k / (m - 1)
        return 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t)

    name = "blackman_window"
    return _window(name, window_length, periodic, dtype, device, requires_grad, formula)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window 1 - |2k / (M - 1) - 1|."""

    def formula(k, m):
        return 1 - np.abs(2 * k / (m - 1) - 1)

    name = "bartlett_window"
    return _window(name, window_length, periodic, dtype, device, requires_grad, formula)


def kaiser_window(
    window_length, periodic=True, beta=12.0, *, dtype=None, device=None, requires_grad=False
):
    """The Kaiser window I0(beta sqrt(1 - (2k / (M - 1) - 1)^2)) / I0(beta)."""
    beta = _number("kaiser_window", "beta", beta)

    def formula(k, m):
        r = 2 * k / (m - 1) - 1
        return np.i0(beta * np.sqrt(np.maximum(1 - r * r, 0))) / np.i0(beta)

    name = "kaiser_window"
    return _window(name, window_length, periodic, dtype, device, requires_grad, formula)


# ---------------------------------------------------------------- histograms


Histogram = namedtuple("Histogram", ["hist", "bin_edges"])


def _float_input(name, input):
    if not dt.is_float(input.dtype):
        raise DTypeError(f"{name}: input must be a float tensor, got {input.dtype}")
    return reshape(input, (-1,))


def _data_range(name, x, widen):
    """(min, max) of x's values (tensors, so graph mode works), pulled apart by `widen` each
    way where they are equal; eager values must be finite, as PyTorch checks."""
    values = _eager_or_none(x)
    if values is not None:
        if values.size == 0:
            return 0.0, 1.0  # numpy's range for no data
        if not np.all(np.isfinite(values)):
            raise DomainError(
                f"{name}: the data's range [{values.min()}, {values.max()}] is not finite"
            )
    low, high = amin(x), amax(x)
    same = eq(low, high)
    return where(same, low - widen, low), where(same, high + widen, high)


def _counts(x, slot, inside, bins, weight, dtype):
    """The sum of weight (1 when None) over the elements in each of the bins: slot is each
    element's bin, and elements not inside go to an extra slot that is dropped."""
    slot = astype(where(inside, minimum(slot, bins - 1), bins), dt.int64)
    ones = full_like(x, 1, dtype=dtype) if weight is None else astype(weight, dtype)
    counts = index_put(zeros(bins + 1, dtype=dtype), (slot,), ones, accumulate=True)
    return counts[:bins]


def histc(input, bins=100, min=0, max=0):
    """The counts of input's elements in `bins` equal bins over [min, max] (the data's range
    when min == max); elements outside are ignored. Float input; no gradient, as PyTorch."""
    x = _float_input("histc", input)
    bins = _int("histc", "bins", bins, low=1)
    low, high = float(_number("histc", "min", min)), float(_number("histc", "max", max))
    if low > high:
        raise DomainError(f"histc: max must be larger than min, got min={low}, max={high}")
    if low == high:
        low, high = _data_range("histc", x, 1)
    inside = logical_and(x >= low, x <= high)
    slot = floor((x - low) * bins / (high - low))  # PyTorch's formula
    return _counts(x, slot, inside, bins, None, input.dtype)


def histogram(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges): numpy's histogram. bins is a count of equal bins over `range` (the
    data's range by default) or a 1-D tensor of increasing edges; each bin holds
    [edge, next edge) but the last, which is closed. weight: a weight per element; density:
    hist divided by the total and the bin widths."""
    name = "histogram"
    x = _float_input(name, input)
    if _is_value(bins):
        edges = _bin_edges(name, bins, range, input.dtype)
    else:
        n = _int(name, "bins", bins, low=1)
        if range is None:
            low, high = _data_range(name, x, 0.5)
        else:
            low, high = (float(_number(name, "range", v)) for v in range)
            if low > high:
                raise DomainError(f"{name}: max must be larger than min, got range {range}")
        edges = _uniform_edges(low, high, n, input.dtype)
    count = _known(name, edges, 0) - 1
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ShapeError(f"{name}: weight {weight.shape} must match input {input.shape}")
    w = None if weight is None else reshape(weight, (-1,))
    inside = logical_and(x >= edges[0], x <= edges[-1])
    slot = searchsorted(edges, x, right=True) - 1
    hist = _counts(x, slot, inside, count, w, input.dtype)
    if density:
        hist = hist / (reduce_sum(hist) * (edges[1:] - edges[:-1]))
    return Histogram(hist, edges)


def _bin_edges(name, bins, range, dtype):
    if range is not None:
        raise AttrError(f"{name}: range goes with a count of bins, not a tensor of edges")
    if bins.ndim != 1 or bins.shape[0] == 0:
        raise ShapeError(f"{name}: bin edges must be a 1-D tensor of at least 1, got {bins.shape}")
    if bins.dtype != dtype:
        raise DTypeError(f"{name}: bin edges ({bins.dtype}) must have input's dtype {dtype}")
    values = _eager_or_none(bins)
    if values is not None and np.any(np.diff(values) < 0):
        raise DomainError(f"{name}: bin edges must be increasing")
    return bins


def _uniform_edges(low, high, n, dtype):
    """numpy's linspace(low, high, n + 1) (low + i * step, the last edge high itself)."""
    if isinstance(low, float):
        if low == high:
            low, high = low - 0.5, high + 0.5
        return astype(np.linspace(low, high, n + 1), dtype)
    steps = astype(np.arange(n, dtype=np.float64), dtype) * ((high - low) / n) + low
    return concat([steps, reshape(high, (1,))], axis=0)


# ---------------------------------------------------------------- elementwise


_BITS = dt.INTS + (dt.bool_,)


@elementwise(dtypes=_BITS, ref=np.bitwise_and, differentiable=False)
def bitwise_and(x, y):
    """x & y, bit by bit (logical and for bools)."""
    return x & y


@elementwise(dtypes=_BITS, ref=np.bitwise_or, differentiable=False)
def bitwise_or(x, y):
    """x | y, bit by bit (logical or for bools)."""
    return x | y


@elementwise(dtypes=_BITS, ref=np.bitwise_xor, differentiable=False)
def bitwise_xor(x, y):
    """x ^ y, bit by bit (logical xor for bools)."""
    return x ^ y


@elementwise(dtypes=_BITS, ref=np.invert, differentiable=False)
def bitwise_not(x):
    """~x, bit by bit (logical not for bools)."""
    return ~x


def _shift_ref(shift, past):
    """numpy's shift, with PyTorch's answer for a shift past the width or negative (numpy
    leaves it to the hardware)."""

    def ref(x, y):
        dtype = np.result_type(x, y)
        bits = 8 * dtype.itemsize
        x, y = np.asarray(x, dtype), np.asarray(y, dtype)
        out = shift(x, np.clip(y, 0, bits - 1))
        return np.where((y < 0) | (y >= bits), past(x), out).astype(dtype)

    return ref


@elementwise(
    dtypes=dt.INTS,
    ref=_shift_ref(np.left_shift, np.zeros_like),
    differentiable=False,
)
def bitwise_left_shift(x, y):
    """x shifted left by y bits (wrapping around; 0 when y is negative or past the width)."""
    if y < 0 or y >= 64:
        return x - x
    return x << y  # (numba computes int32 in int64: the store wraps it back)


@elementwise(
    dtypes=dt.INTS,
    ref=_shift_ref(np.right_shift, lambda x: np.where(x < 0, -1, 0)),
    differentiable=False,
)
def bitwise_right_shift(x, y):
    """x shifted right by y bits, the sign bit filling in (-1 or 0 when y is negative or past
    the width)."""
    if y < 0 or y >= 64:
        y = 63
    return x >> y


@elementwise(dtypes=(dt.float32, dt.float64), ref=np.nextafter, no_derivative=NOT_IN_PYTORCH)
def nextafter(x, y):
    """The next float after x toward y, in x's dtype (no float16: numba's CPU target would
    step in float32)."""
    return math.nextafter(x, y)


def _frexp_mantissa_ref(x):
    return np.frexp(x)[0]


def _frexp_exponent_ref(x):
    return np.frexp(x)[1].astype(np.int32)


@elementwise(dtypes=dt.FLOATS, ref=_frexp_mantissa_ref, no_derivative=NOT_IN_PYTORCH)
def frexp_mantissa(x):
    """The mantissa of frexp: x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1."""
    return math.frexp(x)[0]


@elementwise(dtypes=dt.FLOATS, ref=_frexp_exponent_ref, out_dtype=dt.int32, differentiable=False)
def frexp_exponent(x):
    """The exponent of frexp (int32; 0 for 0, inf and NaN)."""
    return math.frexp(x)[1]


Frexp = namedtuple("Frexp", ["mantissa", "exponent"])


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, 0.5 <= |mantissa| < 1 (0, inf
    and NaN give themselves and exponent 0), the exponent in int32. No gradient, as PyTorch."""
    return Frexp(frexp_mantissa(input), frexp_exponent(input))


def ldexp(input, other):
    """input * 2**other, in a float dtype (integer input gives float32, as PyTorch)."""
    x = _floats(input)
    scale = astype(other, x.dtype) if _is_value(other) else float(_number("ldexp", "other", other))
    return mul(x, exp2(scale))


def fmax(input, other):
    """The elementwise maximum, NaN only where both are NaN (numpy's fmax). The gradient goes
    to input where input >= other (ties too) or other is NaN, else to other, as PyTorch's."""
    first = input >= other
    if _is_float_pair(input, other):
        first = logical_or(first, isnan(other))
    return where(first, input, other)


def fmin(input, other):
    """The elementwise minimum, NaN only where both are NaN (numpy's fmin); the gradient as
    fmax's, with input <= other."""
    first = input <= other
    if _is_float_pair(input, other):
        first = logical_or(first, isnan(other))
    return where(first, input, other)


def _is_float_pair(a, b):
    return any(_is_value(x) and dt.is_float(x.dtype) for x in (a, b))


floor_divide = floor_div  # PyTorch's floor_divide rounds toward minus infinity since 1.13


def isposinf(input):
    """True where input is +inf."""
    return logical_and(isinf(input), input > 0)


def isneginf(input):
    """True where input is -inf."""
    return logical_and(isinf(input), input < 0)


def isreal(input):
    """True everywhere: nbflow's tensors are real."""
    return full_like(input, 1, dtype=dt.bool_)


# Cephes' Chebyshev coefficients of exp(-x) i0(x) on [0, 8] and of exp(-x) sqrt(x) i0(x) on
# (8, inf), as numpy's i0 uses them
_I0_SMALL = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
    -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11,
    9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
    1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
    -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
    0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764,
    0.17162090152220877, -0.3046826723431984, 0.6767952744094761,
)  # fmt: skip
_I0_LARGE = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
    3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16,
    1.7725601330565263e-15, 3.8116806693526224e-15, -9.554846698828307e-15,
    -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11,
    -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
    3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
    2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088,
)  # fmt: skip


def _chebyshev(y, coefficients):
    """Clenshaw's sum of the Chebyshev series at y (Cephes' chbevl)."""
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return (b0 - b2) * 0.5


def i0(input):
    """The modified Bessel function of the first kind of order 0 (integers give float32).
    Composed from the Chebyshev series numpy's i0 uses, so its gradient (i1) is the series'
    own derivative."""
    # summed in float64 (float32's rounding piles up over the 30 terms), returned in input's
    # float dtype
    dtype = _floats(input).dtype
    x = abs(astype(input, dt.float64))
    small = x <= 8
    # each series sees only its own range (the other's input is a harmless 8), so neither
    # overflows into a NaN gradient where it is not used
    near = _chebyshev(where(small, x, 8.0) / 2 - 2, _I0_SMALL)
    far_x = where(small, 8.0, x)
    far = _chebyshev(32 / far_x - 2, _I0_LARGE) / sqrt(far_x)
    return astype(exp(x) * where(small, near, far), dtype)


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
    return swapaxes(input, -2, -1)


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
    n = numel(input)
    if numel(index) != numel(source):
        raise ShapeError(f"put: index has {numel(index)} elements, source {numel(source)}")
    idx = reshape(index, (-1,))
    idx = where(idx < 0, idx + n, idx)
    out = index_put(reshape(input, (-1,)), (idx,), reshape(source, (-1,)), accumulate=accumulate)
    return reshape(out, tuple(input.shape))


def argwhere(input):
    """The (count, ndim) int64 indices of input's nonzero elements, row by row (eager: the
    count depends on the values)."""
    found = np.argwhere(eager_values("argwhere", "input", input)).astype(np.int64)
    return on_device(astype(found, dt.int64), getattr(input, "device", None))


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
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
    return on_device(astype(values, dtype), device, requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """The number s as a 0-d tensor, in the default float dtype unless given."""
    if not isinstance(s, (bool, np.bool_)):
        _number("scalar_tensor", "s", s)
    dtype = dt.DEFAULT_FLOAT if dtype is None else dt.as_dtype(dtype)
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


# ---------------------------------------------------------------- products, norms


def tensordot(a, b, dims=2):
    """The sum of products over a's last `dims` dims and b's first (or over the dim lists
    dims=(dims_a, dims_b)), composed as an einsum."""
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        k = _int("tensordot", "dims", dims, low=0)
        if k > a.ndim or k > b.ndim:
            raise ShapeError(f"tensordot: dims={k} exceeds the dims of {a.shape} or {b.shape}")
        da, db = list(range(a.ndim - k, a.ndim)), list(range(k))
    else:
        try:
            da, db = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
        except (TypeError, ValueError):
            raise AttrError(f"tensordot: dims must be an int or two lists, got {dims!r}") from None
    if len(da) != len(db):
        raise ShapeError(f"tensordot: {len(da)} dims of a against {len(db)} of b")
    da, db = [axis_of(d, a.ndim) for d in da], [axis_of(d, b.ndim) for d in db]
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa, sb = [next(letters) for _ in range(a.ndim)], [None] * b.ndim
    for i, j in zip(da, db):
        if UNKNOWN not in (a.shape[i], b.shape[j]) and a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: dim {i} of {a.shape} and dim {j} of {b.shape} differ")
        sb[j] = sa[i]
    sb = [s or next(letters) for s in sb]
    kept = [s for i, s in enumerate(sa) if i not in da] + [
        s for j, s in enumerate(sb) if j not in db
    ]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(kept)}", a, b)


def chain_matmul(*matrices):
    """The product of the matrices (deprecated in PyTorch: linalg.multi_dot)."""
    warnings.warn("chain_matmul is deprecated: use linalg.multi_dot", UserWarning, stacklevel=3)
    xs = _variadic("chain_matmul", matrices)
    if any(x.ndim != 2 for x in xs) or not xs:
        raise ShapeError(f"chain_matmul needs 2-D matrices, got {[tuple(x.shape) for x in xs]}")
    return xs[0] if len(xs) == 1 else _linalg().multi_dot(list(xs))


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over every element."""
    for x in (input, other):
        if not dt.is_float(x.dtype):
            raise DTypeError(f"dist: inputs must be float tensors, got {x.dtype}")
    return norm(input - other, _number("dist", "p", p))


def renorm(input, p, dim, maxnorm):
    """input with each slice along `dim` whose p-norm exceeds maxnorm scaled down to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch)."""
    if not dt.is_float(input.dtype):
        raise DTypeError(f"renorm: input must be a float tensor, got {input.dtype}")
    p, maxnorm = _number("renorm", "p", p), _number("renorm", "maxnorm", maxnorm)
    if not p > 0 or not maxnorm >= 0:
        raise DomainError(f"renorm: p must be > 0 and maxnorm >= 0, got p={p}, maxnorm={maxnorm}")
    a = axis_of(dim, input.ndim)
    rest = tuple(d for d in range(input.ndim) if d != a)
    size = norm(input, p, axis=rest, keepdims=True) if rest else abs(input)
    return input * where(size > maxnorm, maxnorm / (size + 1e-7), 1.0)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: columns x**(N-1), ..., x**0 (x**0 first with
    increasing); integers (and bools) in int64, as PyTorch."""
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-D, got shape {x.shape}")
    n = _known("vander", x, 0) if N is None else _int("vander", "N", N, low=0)
    if not dt.is_float(x.dtype):
        x = astype(x, dt.int64)
    if n == 0:
        return zeros(_known("vander", x, 0), 0, dtype=x.dtype)
    columns = [full_like(x, 1)]
    for _ in range(n - 1):  # products, not powers: pow's gradient at 0 would be 0 * inf
        columns.append(columns[-1] * x)
    return stack(columns if increasing else columns[::-1], axis=1)


# ---------------------------------------------------------------- medians and modes


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaN: the lower median of the numbers (NaN where there are none); with
    dim, (values, indices) along it."""
    if dim is None:
        return nanmedian(reshape(input, (-1,)), 0).values
    if not dt.is_float(input.dtype):
        return median(input, dim, keepdim)
    a, n = _dim("nanmedian", input, dim)
    if n == 0:
        raise ShapeError(f"nanmedian of an empty dim (input of shape {input.shape})")
    values, indices = sort_op(input, axis=a)  # NaN sorts last, stably
    numbers = reduce_sum(logical_not(isnan(input)), axis=a, keepdims=True)
    k = floor_div(maximum(numbers - 1, 0), 2)
    value, index = take_along_axis(values, k, a), take_along_axis(indices, k, a)
    if not keepdim:
        value, index = squeeze(value, a), squeeze(index, a)
    return ValuesIndices(value, index)


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along `dim` (the smallest of equally
    frequent ones) and the last index where it occurs, as PyTorch's CPU mode. Compares every
    pair along dim (memory numel * n)."""
    if input.ndim == 0:
        values, indices = mode(reshape(input, (1,)), 0, keepdim=False)
        return ValuesIndices(values, indices)
    a, n = _dim("mode", input, dim)
    if n == 0:
        raise ShapeError(f"mode of an empty dim (input of shape {input.shape})")
    x = movedim(input, a, -1)
    key = astype(x, dt.int64) if x.dtype == dt.bool_ else x
    counts = reduce_sum(eq(unsqueeze(key, -1), unsqueeze(key, -2)), axis=-1)
    top = eq(counts, amax(counts, axis=-1, keepdims=True))
    best = amin(where(top, key, _highest(key.dtype)), axis=-1, keepdims=True)
    index = amax(where(eq(key, best), np.arange(n), -1), axis=-1, keepdims=True)
    value = take_along_axis(x, index, -1)  # the gradient goes to that one element
    if keepdim:
        return ValuesIndices(movedim(value, -1, a), movedim(index, -1, a))
    return ValuesIndices(squeeze(value, -1), squeeze(index, -1))


# ---------------------------------------------------------------- linear algebra


SVD = namedtuple("SVD", ["U", "S", "V"])
TriangularSolve = namedtuple("TriangularSolve", ["solution", "cloned_coefficient"])


def _linalg():
    from .. import linalg  # (lazily: nbflow.linalg imports the ops)

    return linalg


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^T (V, not linalg.svd's Vh); some=False gives the
    full U and V; compute_uv=False gives zero U and V of the full shapes, as PyTorch."""
    linalg = _linalg()
    if not compute_uv:
        m, n = (_known("svd", input, d) for d in (-2, -1))
        batch = tuple(input.shape[:-2])
        u, v = (zeros(*batch, k, k, dtype=input.dtype) for k in (m, n))
        return SVD(u, linalg.svdvals(input), v)
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return SVD(u, s, swapaxes(vh, -1, -2))


def qr(input, some=True):
    """(Q, R): linalg.qr in mode "reduced" (some) or "complete"."""
    return _linalg().qr(input, "reduced" if some else "complete")


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse, singular values below rcond times the largest taken as 0."""
    return _linalg().pinv(input, rtol=_number("pinverse", "rcond", rcond))


def cholesky(input, upper=False):
    """The Cholesky factor (lower, or upper with upper=True): linalg.cholesky."""
    return _linalg().cholesky(input, upper=upper)


def cholesky_solve(B, L, upper=False):
    """X with A X = B, A given by its Cholesky factor L (A = L L^T, or U^T U with upper)."""
    solve = _linalg().solve_triangular
    if upper:
        return solve(L, solve(swapaxes(L, -1, -2), B, upper=False), upper=True)
    return solve(swapaxes(L, -1, -2), solve(L, B, upper=False), upper=True)


def cholesky_inverse(L, upper=False):
    """The inverse of A from its Cholesky factor L (A = L L^T, or U^T U with upper)."""
    n = _known("cholesky_inverse", L, -1)
    identity = broadcast_to(astype(np.eye(n), L.dtype), tuple(L.shape))
    return cholesky_solve(identity, L, upper)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """(solution, cloned_coefficient): X with A X = b (A^T X = b with transpose), A
    triangular (deprecated in PyTorch: linalg.solve_triangular)."""
    coefficient = swapaxes(A, -1, -2) if transpose else A
    x = _linalg().solve_triangular(
        coefficient, b, upper=upper != bool(transpose), unitriangular=unitriangular
    )
    return TriangularSolve(x, clone(A))


# ---------------------------------------------------------------- nn ops at the top level
# (those whose torch.* signature is F's are imported by nbflow/__init__.py; these differ)


def _functional():
    from ..nn import functional  # (lazily: nn is built on the ops)

    return functional


_REDUCTION_CODES = {0: "none", 1: "mean", 2: "sum"}


def _reduction(name, reduction):
    """The top-level losses take torch's reduction codes (0 none, 1 mean, 2 sum); a name is
    passed on as it is."""
    if isinstance(reduction, str):
        return reduction
    if isinstance(reduction, bool) or reduction not in _REDUCTION_CODES:
        raise AttrError(f"{name}: reduction must be 0, 1, 2 or a name, got {reduction!r}")
    return _REDUCTION_CODES[int(reduction)]


# torch.kl_div and the others below default to no reduction (what torch 2.x's top-level
# functions do when reduction is left out), unlike F's "mean"
def kl_div(input, target, reduction=0, *, log_target=False):
    """F.kl_div with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("kl_div", reduction)
    return _functional().kl_div(input, target, reduction=r, log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.cosine_embedding_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("cosine_embedding_loss", reduction)
    return _functional().cosine_embedding_loss(input1, input2, target, margin, reduction=r)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.margin_ranking_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("margin_ranking_loss", reduction)
    return _functional().margin_ranking_loss(input1, input2, target, margin, reduction=r)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """F.hinge_embedding_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("hinge_embedding_loss", reduction)
    return _functional().hinge_embedding_loss(input, target, margin, reduction=r)


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0
):
    """F.triplet_margin_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("triplet_margin_loss", reduction)
    return _functional().triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=r
    )


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """F.poisson_nll_loss with every argument given and a reduction code."""
    r = _reduction("poisson_nll_loss", reduction)
    return _functional().poisson_nll_loss(
        input, target, log_input=log_input, full=full, eps=eps, reduction=r
    )


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    """F.instance_norm in torch.instance_norm's argument order (cudnn_enabled is ignored)."""
    return _functional().instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def alpha_dropout(input, p, train):
    """F.alpha_dropout(input, p, training=train)."""
    return _functional().alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input, p, train):
    """F.feature_alpha_dropout(input, p, training=train)."""
    return _functional().feature_alpha_dropout(input, p, training=train)


def adaptive_max_pool1d(input, output_size):
    """(values, indices) of F.adaptive_max_pool1d (torch's top-level one returns both)."""
    return tuple(_functional().adaptive_max_pool1d(input, output_size, return_indices=True))


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
    "diagflat",
    "erfc",
    "rsub",
    "logspace",
    "gcd",
    "lcm",
    "var_mean",
    "std_mean",
    "cov",
    "corrcoef",
    "trapezoid",
    "cumulative_trapezoid",
    "tril_indices",
    "triu_indices",
    "cdist",
    "searchsorted",
    "bucketize",
    "isin",
    "bincount",
    "is_tensor",
    "as_tensor",
    "get_default_dtype",
    "is_floating_point",
    "is_complex",
    "is_signed",
    "is_same_size",
    "is_nonzero",
    "can_cast",
    "promote_types",
    "result_type",
    "finfo",
    "iinfo",
    "get_device",
    "hann_window",
    "hamming_window",
    "blackman_window",
    "bartlett_window",
    "kaiser_window",
    "histc",
    "histogram",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "nextafter",
    "frexp",
    "ldexp",
    "fmax",
    "fmin",
    "isposinf",
    "isneginf",
    "isreal",
    "i0",
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
    "scalar_tensor",
    "asarray",
    "tensordot",
    "chain_matmul",
    "dist",
    "renorm",
    "vander",
    "nanmedian",
    "mode",
    "svd",
    "qr",
    "pinverse",
    "cholesky",
    "cholesky_solve",
    "cholesky_inverse",
    "triangular_solve",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "triplet_margin_loss",
    "poisson_nll_loss",
    "instance_norm",
    "alpha_dropout",
    "feature_alpha_dropout",
    "adaptive_max_pool1d",
    "newaxis",
    "floor_divide",
    "concatenate",
    "moveaxis",
    "unsafe_chunk",
    "unsafe_split",
    "trapz",
    "unsafe_split_with_sizes",
    "ger",
    "seed",
    "e",
    "pi",
    "inf",
    "nan",
]
