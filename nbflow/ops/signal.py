"""Window functions (hann, hamming, blackman, bartlett, kaiser), histograms (histc, histogram)
and bincount, composed from nbflow's ops. A result whose shape depends on the input's values
(bincount) is eager only: UnsupportedError on a graph value."""

from collections import namedtuple

import numpy as np

from ..argcheck import integer, known_size, number
from ..core import STATE
from ..core import dtypes as dt
from ..core.errors import (
    AttrError,
    DomainError,
    DTypeError,
    ResourceExhaustedError,
    ShapeError,
)
from .creation import full_like, on_device, zeros
from .elementwise import (
    astype,
    eq,
    floor,
    logical_and,
    minimum,
    where,
)
from .index import index_put
from .queries import _is_value, eager_values_or_none
from .reduce import amax, amin
from .reduce import sum as reduce_sum
from .search import searchsorted
from .select import (
    eager_values,
)
from .shape import (
    concat,
    reshape,
)

# ---------------------------------------------------------------- windows


def window_from_formula(
    name, window_length, periodic, dtype, device, requires_grad, formula, one=1.0
):
    """formula(k, m): the symmetric window of m points at k = 0..m-1, in float64. A periodic
    window (PyTorch's default, for spectral analysis) is the first window_length points of
    the symmetric one of window_length + 1; 0 and 1 points give [] and [one]."""
    n = integer(window_length, f"{name}: window_length", 0)
    if not isinstance(periodic, (bool, np.bool_)):
        raise AttrError(f"{name}: periodic must be a bool, got {periodic!r}")
    dtype = dt.as_dtype(dtype)
    if not dt.is_float(dtype):
        raise DTypeError(f"{name} takes a float dtype, got {dtype}")
    if n * 8 > STATE.memory_budget:  # (the points are computed in float64 first)
        raise ResourceExhaustedError(
            f"{name}: {n} points need {n * 8} bytes, over the memory budget of "
            f"{STATE.memory_budget} bytes (nbflow.set_memory_budget)"
        )
    if n <= 1:
        values = np.full(n, one)
    else:
        m = n + 1 if periodic else n
        values = formula(np.arange(m, dtype=np.float64), m)[:n]
    return on_device(astype(values, dtype), device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi k / (M - 1))."""

    def formula(k, m):
        return 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1))

    return window_from_formula(
        "hann_window", window_length, periodic, dtype, device, requires_grad, formula
    )


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
    alpha, beta = number("hamming_window", "alpha", alpha), number("hamming_window", "beta", beta)

    def formula(k, m):
        return alpha - beta * np.cos(2 * np.pi * k / (m - 1))

    name = "hamming_window"
    return window_from_formula(name, window_length, periodic, dtype, device, requires_grad, formula)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Blackman window 0.42 - 0.5 cos(2 pi k / (M - 1)) + 0.08 cos(4 pi k / (M - 1))."""

    def formula(k, m):
        t = 2 * np.pi * k / (m - 1)
        return 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t)

    name = "blackman_window"
    return window_from_formula(name, window_length, periodic, dtype, device, requires_grad, formula)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window 1 - |2k / (M - 1) - 1|."""

    def formula(k, m):
        return 1 - np.abs(2 * k / (m - 1) - 1)

    name = "bartlett_window"
    return window_from_formula(name, window_length, periodic, dtype, device, requires_grad, formula)


def kaiser_window(
    window_length, periodic=True, beta=12.0, *, dtype=None, device=None, requires_grad=False
):
    """The Kaiser window I0(beta sqrt(1 - (2k / (M - 1) - 1)^2)) / I0(beta)."""
    beta = number("kaiser_window", "beta", beta)

    def formula(k, m):
        r = 2 * k / (m - 1) - 1
        return np.i0(beta * np.sqrt(np.maximum(1 - r * r, 0))) / np.i0(beta)

    name = "kaiser_window"
    return window_from_formula(name, window_length, periodic, dtype, device, requires_grad, formula)


# ---------------------------------------------------------------- histograms


Histogram = namedtuple("Histogram", ["hist", "bin_edges"])


def _float_input(name, input):
    if not dt.is_float(input.dtype):
        raise DTypeError(f"{name}: input must be a float tensor, got {input.dtype}")
    return reshape(input, (-1,))


def _data_range(name, x, widen):
    """(min, max) of x's values (tensors, so graph mode works), pulled apart by `widen` each
    way where they are equal; eager values must be finite, as PyTorch checks."""
    values = eager_values_or_none(x)
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
    bins = integer(bins, "histc: bins", 1)
    low, high = float(number("histc", "min", min)), float(number("histc", "max", max))
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
        n = integer(bins, f"{name}: bins", 1)
        if range is None:
            low, high = _data_range(name, x, 0.5)
        else:
            low, high = (float(number(name, "range", v)) for v in range)
            if low > high:
                raise DomainError(f"{name}: max must be larger than min, got range {range}")
        edges = _uniform_edges(low, high, n, input.dtype)
    count = known_size(name, edges, 0) - 1
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
    values = eager_values_or_none(bins)
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


# ---------------------------------------------------------------- counts


def bincount(input, weights=None, minlength=0):
    """The count of each value 0..max(input) in a 1-D tensor of non-negative ints (the sum
    of their weights, when given). Eager only: the result's length is input's maximum."""
    if input.ndim != 1:
        raise ShapeError(f"bincount: input must be 1-D, got shape {input.shape}")
    if input.dtype not in dt.INTS:
        raise DTypeError(f"bincount: input must be an integer tensor, got {input.dtype}")
    minlength = integer(minlength, "bincount: minlength", 0)
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
    "hann_window",
    "hamming_window",
    "blackman_window",
    "bartlett_window",
    "kaiser_window",
    "histc",
    "histogram",
    "bincount",
]
