"""PyTorch's histogramdd (numpy's): the points of input (..., N) counted in an N-dimensional
grid of bins, each dim binned as histogram (ops/signal.py) bins its values, composed from the
same helpers."""

import builtins
import math
from collections import namedtuple

from ..argcheck import integer, known_size, number, shown
from ..core import dtypes as dt
from ..core.errors import AttrError, DomainError, DTypeError, ShapeError
from ..core.op import is_value
from .elementwise import logical_and, minimum
from .reduce import sum as reduce_sum

# histogram's helpers, and the ones it imports (signal.py names them for both files)
from .search import searchsorted
from .shape import reshape
from .signal import _bin_edges, _counts, _data_range, _uniform_edges

HistogramDD = namedtuple("HistogramDD", ["hist", "bin_edges"])


def _edges(name, column, bins, low_high, dtype):
    """One dim's bin edges: given (a 1-D tensor), or `bins` equal bins over low_high (the
    column's range when None)."""
    if is_value(bins):
        return _bin_edges(name, bins, low_high, dtype)
    n = integer(bins, f"{name}: bins", 1)
    if low_high is None:
        low, high = _data_range(name, column, 0.5)
    else:
        low, high = (float(number(name, "range", v)) for v in low_high)
        if low > high:
            raise DomainError(f"{name}: max must be larger than min, got range {low_high}")
    return _uniform_edges(low, high, n, dtype)


def _per_dim(name, bins, range, dims):
    """bins and range, one entry per dim."""
    if isinstance(bins, (list, tuple)):
        if len(bins) != dims:
            raise ShapeError(f"{name}: {len(bins)} bins for points of {dims} dims")
    else:
        bins = [bins] * dims
    if range is None:
        return bins, [None] * dims
    if not isinstance(range, (list, tuple)) or len(range) != 2 * dims:
        raise AttrError(f"{name}: range must be 2 numbers per dim ({2 * dims}), got {shown(range)}")
    return bins, [range[2 * d : 2 * d + 2] for d in builtins.range(dims)]


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges): input's rows (its last dim N, the others flattened) as points; bins
    an int, N ints or N 1-D tensors of increasing edges; range 2N numbers (min, max per dim);
    weight one per point; density divides by the total and each bin's volume. A point is in
    a bin when each coordinate is (bins hold [edge, next edge), the last one closed)."""
    name = "histogramdd"
    if not dt.is_float(input.dtype):
        raise DTypeError(f"{name}: input must be a float tensor, got {input.dtype}")
    if input.ndim < 2:
        raise ShapeError(f"{name}: input must have 2 dims or more, got shape {input.shape}")
    dims = known_size(name, input, -1)
    points = reshape(input, (-1, dims))
    bins, ranges = _per_dim(name, bins, range, dims)
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise ShapeError(f"{name}: weight {weight.shape} must match input's points {input.shape}")
    edges, slot, inside, counts = [], 0, None, []
    for d in builtins.range(dims):
        x = points[:, d]
        e = _edges(name, x, bins[d], ranges[d], input.dtype)
        n = known_size(name, e, 0) - 1
        within = logical_and(x >= e[0], x <= e[-1])
        slot = slot * n + minimum(searchsorted(e, x, right=True) - 1, n - 1)
        inside = within if inside is None else logical_and(inside, within)
        edges.append(e)
        counts.append(n)
    w = None if weight is None else reshape(weight, (-1,))
    hist = reshape(_counts(points[:, 0], slot, inside, math.prod(counts), w, input.dtype), counts)
    if density:
        volume = 1
        for d, e in enumerate(edges):
            width = e[1:] - e[:-1]
            volume = volume * reshape(width, (-1,) + (1,) * (dims - d - 1))
        hist = hist / (reduce_sum(hist) * volume)
    return HistogramDD(hist, tuple(edges))


__all__ = ["histogramdd"]
