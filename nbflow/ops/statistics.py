"""PyTorch's statistics over tensors: var_mean and std_mean (both of PyTorch's spellings of the
correction), cov and corrcoef (numpy's weights), trapezoid and cumulative_trapezoid, and
gradient (finite differences of edge order 1 or 2, spacings as numbers, coordinates or
tensors), nanmedian and mode. Each is composed from nbflow's ops, so gradients, graph mode and
the GPU come from those ops."""

import warnings

import numpy as np

from ..argcheck import choice, integers, known_size, number
from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DomainError, DTypeError, ShapeError
from .complex_parts import complex, conj, imag, real
from .elementwise import astype, clip, eq, floor_div, isnan, logical_not, maximum, mul, sqrt, where
from .floating import _floats
from .index import take_along_axis
from .linalg import matmul
from .queries import _is_value, eager_values_or_none
from .reduce import ValuesIndices, amax, amin, mean, reduced_count, var
from .reduce import sum as reduce_sum
from .scans import cumsum
from .select import _dim, diagonal, eager_values, highest_value, narrow
from .shape import axis_of, concat, movedim, reshape, squeeze, transpose, unsqueeze
from .sorting import median, sort_op


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
    values = eager_values_or_none(w)
    if values is not None and np.any(values < 0):
        raise DomainError(f"cov: {name} must be non-negative")
    return w


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in its columns;
    a 1-D input is one variable, giving a 0-d result). fweights are integer frequencies and
    aweights float importance weights of the observations, as numpy's cov. Complex
    variables give E[(x - mean) conj(y - mean)], as PyTorch's."""
    if input.ndim > 2:
        raise ShapeError(f"cov: input must have at most 2 dims, got {input.ndim}")
    if input.dtype == dt.bool_:
        raise DTypeError("cov: bool input is not supported")
    number("cov", "correction", correction)
    x = _floats("cov", input, complex_ok=True)
    x = reshape(x, (1, -1)) if x.ndim < 2 else x
    # one variable gives a 0-d result (PyTorch squeezes): the rank needs the count known
    variables, n = known_size("cov", x, 0), x.shape[1]
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
        total = eager_values_or_none(w_sum)
        if total is not None and total == 0:
            raise DomainError("cov: the weights sum to zero")
        avg = reduce_sum(x * w, axis=1) / w_sum
        factor = w_sum - correction
        if aw is not None and correction != 0:
            factor = w_sum - correction * reduce_sum(w * aw) / w_sum
    known = eager_values_or_none(factor)
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
    c = matmul(centered, transpose(conj(weighted), 0, 1)) / factor
    return reshape(c, ()) if variables == 1 else c


def corrcoef(input):
    """Pearson's correlation coefficients of the variables in input's rows (numpy's
    corrcoef), clipped to [-1, 1] (complex coefficients: each part clipped, as PyTorch's)."""
    c = cov(input)
    if c.ndim == 0:  # one variable: 1, or NaN when its variance is 0, inf or NaN
        return c / c
    std = sqrt(real(diagonal(c)))  # (a complex variance is real: |x - mean|^2)
    c = c / unsqueeze(std, 1) / unsqueeze(std, 0)
    if dt.is_complex(c.dtype):
        return complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
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
    if not dt.is_complex(y.dtype):  # (complex samples integrate as they are)
        y = _floats(name, y)
    lo, hi = _slices(y, a)
    if x is None:
        return (lo + hi) * (0.5 if dx is None else number(name, "dx", dx) / 2), a
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


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """PyTorch's gradient (numpy's): the derivative of input's samples along each dim in
    `dim` (all by default), one tensor per dim. Second-order central differences inside,
    one-sided differences of order `edge_order` (1 or 2) at the ends. `spacing` is a number
    (one step for every dim), one number per dim, or one 1-D tensor of coordinates per dim
    (unevenly spaced samples; its values must be known: an eager tensor). spacing=None is
    PyTorch's spelling of 1. Complex samples differentiate as they are."""
    spacing = 1 if spacing is None else spacing
    f = _floats("gradient", input, complex_ok=True)
    dims = range(f.ndim) if dim is None else integers(dim, "gradient: dim")
    if f.ndim == 0 and dims:  # (axis_of lets a 0-d tensor's dim 0 through, as for a sum)
        raise ShapeError(f"gradient: a 0-d input has no dim {dims[0]} to differentiate along")
    dims = [axis_of(d, f.ndim) for d in dims]
    edge_order = choice(edge_order, (1, 2), "gradient: edge_order", AttrError)
    steps = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(steps) != len(dims):
        raise ArgumentError(f"gradient: {len(steps)} spacings for {len(dims)} dims")
    return tuple(_derivative(f, a, step, edge_order) for a, step in zip(dims, steps))


def _derivative(f, a, step, edge_order):
    """gradient along axis a, with numpy's weights of the neighbouring samples, from the
    spacing dx (uniform, or per interval for coordinates)."""
    n = f.shape[a]
    if n == UNKNOWN or n < edge_order + 1:
        known = "an unknown number" if n == UNKNOWN else n
        raise ShapeError(
            f"gradient: dim {a} needs at least edge_order + 1 = {edge_order + 1} samples, "
            f"got {known}"
        )
    if _is_value(step):
        x = eager_values("gradient", "spacing", step).astype(np.float64)
        if x.shape != (n,):
            raise ShapeError(f"gradient: coordinates of shape {x.shape} for {n} samples")
        dx = np.diff(x)
    else:
        dx = np.full(n - 1, float(number("gradient", "spacing", step)))
    if edge_order == 1:
        first, last = (-1 / dx[0], 1 / dx[0]), (-1 / dx[-1], 1 / dx[-1])
    else:
        d1, d2 = dx[0], dx[1]
        first = (-(2 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2)))
        d1, d2 = dx[-2], dx[-1]
        last = (d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2 * d2 + d1) / (d2 * (d1 + d2)))
    parts = [_weighted(f, a, 0, 1, first)]
    if n > 2:
        hs, hd = dx[:-1], dx[1:]  # the intervals before and after each inner sample
        inner = (-hd / (hs * (hd + hs)), (hd - hs) / (hd * hs), hs / (hd * (hd + hs)))
        parts.append(_weighted(f, a, 0, n - 2, inner))
    parts.append(_weighted(f, a, n - len(last), 1, last))
    return concat(parts, axis=a)


def _weighted(f, a, start, count, weights):
    """The sum over k of weights[k] * f[start + k : start + k + count] along axis a (a weight
    is a number or one per position along a)."""
    total = None
    for k, w in enumerate(weights):
        w = np.asarray(w, np.float64)
        if w.ndim:  # one weight per position along a, broadcast over the dims after it
            w = w.reshape((-1,) + (1,) * (f.ndim - a - 1))
        term = narrow(f, a, start + k, count) * astype(w, f.dtype)
        total = term if total is None else total + term
    return total


# ---------------------------------------------------------------- medians and modes


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaN: the lower median of the numbers (NaN where there are none); with
    dim, (values, indices) along it."""
    if dim is None:
        return nanmedian(reshape(input, (-1,)), 0).values
    if not dt.is_float(input.dtype):
        return median(input, dim, keepdim)
    if input.ndim == 0:  # one element (PyTorch's): dim 0 or -1 of a 0-d tensor
        _dim("nanmedian", reshape(input, (1,)), dim)
        values, indices = nanmedian(reshape(input, (1,)), 0)
        return ValuesIndices(reshape(values, ()), reshape(indices, ()))
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
    best = amin(where(top, key, highest_value(key.dtype)), axis=-1, keepdims=True)
    index = amax(where(eq(key, best), np.arange(n), -1), axis=-1, keepdims=True)
    value = take_along_axis(x, index, -1)  # the gradient goes to that one element
    if keepdim:
        return ValuesIndices(movedim(value, -1, a), movedim(index, -1, a))
    return ValuesIndices(squeeze(value, -1), squeeze(index, -1))


__all__ = [
    "var_mean",
    "std_mean",
    "cov",
    "corrcoef",
    "trapezoid",
    "cumulative_trapezoid",
    "gradient",
    "nanmedian",
    "mode",
]
