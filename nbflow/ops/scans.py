"""The scans, PyTorch's NaN-aware reductions and order statistics.

cumsum is an op with its own row kernel (float64 running sums). The other scans (cumprod,
cummax, cummin, logcumsumexp) are composed from nbflow's ops and double their reach each step
(Hillis and Steele): log2(n) elementwise steps of "combine with the value k places back". Every
step is an ordinary op, so cumprod's gradient is exact also where x holds zeros (no division
by x), and graph mode and the GPU come free.
"""

from collections import namedtuple

import numpy as np

from ..argcheck import integer, real
from ..core import UNKNOWN, Attr, Op, Spec
from ..core import dtypes as dt
from ..core.errors import AttrError, DomainError, ShapeError, UnsupportedError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT, axis_rows, write_axis_rows, zero_acc
from . import reduce
from .broadcast import broadcast_to_like
from .complex_math import conj
from .creation import arange, full, full_like
from .elementwise import (
    ceil,
    floor,
    isnan,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    mul,
    round,
    where,
)
from .index import take_along_axis
from .reduce import ValuesIndices, _int64_for_ints, amax, amin
from .reduce import any as any_
from .reduce import sum as reduce_sum
from .shape import axis_of, concat, flip, flip_op, pad, reshape, split, squeeze, unsqueeze
from .sorting import sort

MinMax = namedtuple("MinMax", ["min", "max"])


def _axis_length(name, x, dim):
    a = axis_of(dim, x.ndim)
    n = x.shape[a] if x.ndim else 1
    if n == UNKNOWN:
        raise ShapeError(f"{name}: dim {a} of x (shape {x.shape}) must be known")
    return a, n


# ---------------------------------------------------------------- NaN-aware reductions


def nansum(x, dim=None, keepdim=False, dtype=None):
    """The sum with NaNs counted as zero."""
    x = x if dtype is None else x.astype(dtype)
    if dt.is_float(x.dtype):
        x = where(isnan(x), 0, x)
    return reduce_sum(x, axis=dim, keepdims=keepdim)


def nanmean(x, dim=None, keepdim=False, dtype=None):
    """The mean of the non-NaN values (NaN where there are none)."""
    x = x if dtype is None else x.astype(dtype)
    if not dt.is_float(x.dtype):
        raise AttrError(f"nanmean: needs a float tensor, got {x.dtype}")
    count = reduce_sum(logical_not(isnan(x)), axis=dim, keepdims=keepdim)
    return nansum(x, dim, keepdim) / count.astype(x.dtype)


def count_nonzero(x, dim=None):
    """The number of nonzero elements (over `dim`: an int, a tuple, or all), int64."""
    return reduce_sum(x != 0, axis=dim).astype(dt.int64)


def aminmax(x, dim=None, keepdim=False):
    """(min, max) over `dim` (all elements when None)."""
    return MinMax(amin(x, axis=dim, keepdims=keepdim), amax(x, axis=dim, keepdims=keepdim))


# ---------------------------------------------------------------- scans


def _shifted(y, k, a, fill):
    """y moved k places along axis a (the first k filled with `fill`)."""
    n = y.shape[a]
    head = split(y, (n - k, k), a)[0]
    widths = [(0, 0)] * y.ndim
    widths[a] = (k, 0)
    return pad(head, widths, value=fill)


def _scan(x, dim, fill, combine):
    """out[i] = combine over x[0..i] along dim, in log2(n) doubling steps."""
    if x.ndim == 0:
        return x
    a, n = _axis_length("scan", x, dim)
    y, k = x, 1
    while k < n:
        y = combine(y, _shifted(y, k, a, fill))
        k *= 2
    return y


def cumprod(x, dim, dtype=None):
    """Running products along `dim` (integers and bools give int64, as PyTorch). Exact
    gradients also with zeros in x."""
    x = x if dtype is None else x.astype(dtype)
    if not dt.differentiable(x.dtype):
        x = x.astype(dt.int64)
    return _scan(x, dim, 1, mul)


# prod's gradient is written here, with the scans (which build on the reductions)
@reduce.prod.defgrad
def _prod_grad(g, out, x, axis, keepdims):
    axes = reduce.reduced_axes(axis, x.ndim)
    if not axes:  # (a 0-d x: prod is the identity)
        others = full_like(x, 1)
    elif any(x.shape[a] == UNKNOWN for a in axes):
        others = reduce.prod_of_others_by_division(x, axis)
    else:
        others = _prod_of_others(x, axes)
    return (reduce.expand_reduced(g, x, axis=axis, keepdims=keepdims) * conj(others),)


def _prod_of_others(x, axes):
    """At each position, the product of the other elements over `axes`: the exclusive
    running products from both ends along the last axis, times that of the rows' products
    over the rest. No division, so exact at zeros and differentiable again there."""
    a = axes[-1]
    before = _shifted(cumprod(x, a), 1, a, 1)
    after = flip(_shifted(cumprod(flip(x, a), a), 1, a, 1), a)
    others = before * after
    if len(axes) > 1:
        others = others * _prod_of_others(reduce.prod(x, axis=a, keepdims=True), axes[:-1])
    return others


def _cumulative_extreme(name, x, dim, better):
    if x.ndim == 0:
        return ValuesIndices(x, reshape(arange(1, device=getattr(x, "device", None)), ()))
    a, n = _axis_length(name, x, dim)
    shape = [1] * x.ndim
    shape[a] = n
    positions = reshape(arange(n, device=getattr(x, "device", None)), shape)
    index = broadcast_to_like(positions, x)
    value, k = x, 1
    while k < n:
        old_value, old_index = _shifted(value, k, a, 0), _shifted(index, k, a, -1)
        # the earlier window's answer wins only if strictly better (ties: the later index)
        take = logical_and(old_index >= 0, better(old_value, value))
        value, index = where(take, old_value, value), where(take, old_index, index)
        k *= 2
    return ValuesIndices(take_along_axis(x, index, a), index)


def _above(old, new):
    if not dt.is_float(old.dtype):
        return old > new
    return logical_or(old > new, logical_and(isnan(old), logical_not(isnan(new))))


def _below(old, new):
    if not dt.is_float(old.dtype):
        return old < new
    return logical_or(old < new, logical_and(isnan(old), logical_not(isnan(new))))


def cummax(x, dim):
    """(values, indices) of the running maximum along `dim`; a NaN stays the maximum once
    seen, and ties take the later index (as PyTorch). The gradient goes to those indices."""
    return _cumulative_extreme("cummax", x, dim, _above)


def cummin(x, dim):
    """(values, indices) of the running minimum along `dim` (see cummax)."""
    return _cumulative_extreme("cummin", x, dim, _below)


def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) along `dim`, without overflow (complex x: with logaddexp's
    complex formula, as PyTorch's)."""
    if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
        x = x.astype(dt.default_float())
    return _scan(x, dim, -np.inf, logaddexp)


def diff(x, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim`, after joining prepend and append there."""
    if x.ndim == 0:  # (axis_of lets a 0-d tensor's dim 0 through; it has no length)
        raise ShapeError("diff: expects input to be at least one-dimensional, got a 0-d tensor")
    a = axis_of(dim, x.ndim)
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = concat([_as_part(p, x, a) for p in parts], axis=a)
    for _ in range(integer(n, "diff: n")):
        length = x.shape[a]
        if length <= 0:
            break
        tail, head = split(x, (1, length - 1), a)[1], split(x, (length - 1, 1), a)[0]
        x = (tail != head) if x.dtype == dt.bool_ else tail - head
    return x


def _as_part(p, x, a):
    """prepend / append as a tensor: a number fills one slice along a (numpy allows it)."""
    if hasattr(p, "shape") and p.ndim == x.ndim:
        return p
    one = split(x, (1, x.shape[a] - 1), a)[0]
    return full_like(one, p)


# ---------------------------------------------------------------- order statistics


def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest value along `dim` (k from 1)."""
    a, n = _axis_length("kthvalue", x, dim)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise DomainError(f"kthvalue: k={k!r} must be an int in [1, {n}]")
    if x.ndim == 0:
        return ValuesIndices(x, reshape(arange(1, device=getattr(x, "device", None)), ()))
    values, indices = sort(x, axis=a)
    pieces = (int(k) - 1, 1, n - int(k))
    value, index = split(values, pieces, a)[1], split(indices, pieces, a)[1]
    if not keepdim:
        value, index = squeeze(value, a), squeeze(index, a)
    return ValuesIndices(value, index)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    """The q-th quantiles along `dim` (of every element when None), by sorting; q a number
    in [0, 1] or a 1-D tensor of them (the result then has q's dim first). A line holding a
    NaN gives NaN."""
    return _quantile("quantile", x, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    """quantile over the non-NaN values of each line (NaN where all are NaN)."""
    return _quantile("nanquantile", x, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(name, x, q, dim, keepdim, interpolation, ignore_nan):
    if interpolation not in _INTERPOLATIONS:
        raise AttrError(f"{name}: interpolation must be one of {_INTERPOLATIONS}")
    if not dt.is_float(x.dtype):
        raise AttrError(f"{name}: needs a float tensor, got {x.dtype}")
    scalar_q = not hasattr(q, "shape")
    qs = _check_q(name, q, x)
    if x.ndim == 0 and dim is not None:  # one element along dim 0 or -1 (PyTorch's)
        axis_of(dim, 0)
        x, dim, keepdim = reshape(x, (1,)), 0, False
    if dim is None:
        x, a, out_ndim = reshape(x, (-1,)), 0, x.ndim
    else:
        a, out_ndim = axis_of(dim, x.ndim), x.ndim
    a, n = _axis_length(name, x, a)
    values = sort(x, axis=a).values  # NaN last
    nan = isnan(values)
    valid = reduce_sum(logical_not(nan), axis=a, keepdims=True).astype(x.dtype)
    count = valid if ignore_nan else valid * 0 + n
    # q along a new leading dim: (len(q), *line shape with dim a kept as 1)
    qq = reshape(qs, (-1,) + (1,) * x.ndim)
    rank = qq * (count - 1)
    rank = where(rank < 0, 0, rank)  # an all-NaN line: read index 0, made NaN below
    lo, hi = floor(rank), ceil(rank)
    if interpolation == "nearest":
        lo = hi = round(rank)
    lines = unsqueeze(values, 0) + qq * 0  # (len(q), ...)
    below = take_along_axis(lines, lo.astype(dt.int64), a + 1)
    above = take_along_axis(lines, hi.astype(dt.int64), a + 1)
    if interpolation in ("lower", "nearest"):
        out = below
    elif interpolation == "higher":
        out = above
    elif interpolation == "midpoint":
        out = below + (above - below) * 0.5
    else:
        out = below + (above - below) * (rank - lo)
    missing = valid == 0 if ignore_nan else any_(nan, axis=a, keepdims=True)
    out = where(missing, np.nan, out)
    out = _quantile_shape(out, a, keepdim, dim is None, out_ndim)
    return squeeze(out, 0) if scalar_q else out


def _check_q(name, q, x):
    device = getattr(x, "device", None)
    if hasattr(q, "shape"):
        if q.ndim > 1:
            raise ShapeError(f"{name}: q must be a number or a 1-D tensor, got {q.ndim} dims")
        try:
            values = q.numpy()
        except (AttributeError, UnsupportedError):  # a graph value: checked by nobody
            values = None
        q = q.astype(x.dtype)
    else:
        q = real(q, f"{name}: q")
        values = np.asarray([q], np.float64)
        q = full((1,), q, dtype=x.dtype, device=device)
    if values is not None and (np.any(values < 0) or np.any(values > 1)):
        raise DomainError(f"{name}: q must be in [0, 1], got {np.asarray(values).tolist()}")
    return q


def _quantile_shape(out, a, keepdim, flat, ndim):
    if not keepdim:
        return squeeze(out, a + 1)
    if flat:  # every dim kept as 1, as PyTorch's keepdim with dim=None
        return reshape(out, (out.shape[0],) + (1,) * ndim)
    return out


# ---------------------------------------------------------------- cumsum


@njit(**JIT)
def _cumsum_rows(x, out):
    """Running sums along each row, accumulated in float64 (integers and bools in int64)."""
    for i in range(x.shape[0]):
        acc = zero_acc(x)
        for j in range(x.shape[1]):
            acc += x[i, j]
            out[i, j] = acc


def _cumsum_spec(x, axis):
    axis_of(axis, x.ndim)  # (an axis out of range raises here)
    return Spec(x.shape, _int64_for_ints(x.dtype))


def _cumsum_cpu(x, out, axis):
    a = axis_of(axis, x.ndim)
    rows = axis_rows(x, a)
    write_axis_rows(out, a, lambda o: _cumsum_rows(rows, o))


def _cumsum_ref(x, axis):
    wide = (
        np.complex128
        if dt.is_complex(x.dtype)
        else np.float64
        if dt.is_float(x.dtype)
        else np.int64
    )
    out = np.cumsum(x.astype(wide), axis=axis if x.ndim else None).reshape(x.shape)
    return out.astype(_int64_for_ints(x.dtype))


cumsum = Op(
    name="cumsum",
    inputs=("x",),
    outputs=("out",),
    spec=_cumsum_spec,
    kernels={"cpu": _cumsum_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=_cumsum_ref,
    attrs={"axis": Attr("int")},
    doc="Running sums along `axis` (PyTorch's cumsum): out[..., i] = x[..., 0] + ... + "
    "x[..., i], accumulated in float64 (int64 for integers and bools, which give int64).",
)


@cumsum.defgrad
def _cumsum_grad(g, out, x, axis):
    if x.ndim == 0:
        return (g,)
    # each x[i] adds to every out[j] with j >= i: the reversed running sum of g
    return (flip_op(cumsum(flip_op(g, axis=axis), axis=axis), axis=axis),)


__all__ = [
    "cumsum",
    "MinMax",
    "nansum",
    "nanmean",
    "count_nonzero",
    "aminmax",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "diff",
    "kthvalue",
    "quantile",
    "nanquantile",
]
