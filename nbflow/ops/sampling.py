"""PyTorch's sampling functions, composed from the random creation ops (so they run in
eager and graph mode, on either device): `rand_like`, `randn_like`, `randint_like`,
`bernoulli`, `multinomial`. They draw from `generator`, or the default generator, as the
creation ops do, and carry no gradient. Draws need a known shape: a graph value with a -1 dim
raises UnsupportedError."""

import numpy as np

from .. import dtypes as dt
from ..core import UNKNOWN
from ..errors import AttrError, UnsupportedError
from .creation import normal, randint, uniform
from .elementwise import isfinite, log, logical_and, logical_not
from .index import checked_range
from .optim import depend_
from .reduce import cumsum
from .reduce import sum as reduce_sum
from .sorting import topk


def _known_shape(name: str, x) -> tuple:
    shape = tuple(x.shape)
    if UNKNOWN in shape:
        raise UnsupportedError(
            f"{name}: a value of shape {list(shape)} (a dim known only when the program "
            "runs); a random draw needs a known shape"
        )
    return shape


def _device(x):
    return getattr(x, "device", None)  # (a graph value has none: the executor places it)


def rand_like(x, dtype=None, generator=None, requires_grad=False):
    """Uniform draws in [0, 1) of x's shape, in x's dtype (or `dtype`)."""
    shape = _known_shape("rand_like", x)
    dtype = x.dtype if dtype is None else dtype
    return uniform(
        shape, dtype=dtype, generator=generator, device=_device(x), requires_grad=requires_grad
    )


def randn_like(x, dtype=None, generator=None, requires_grad=False):
    """Standard normal draws of x's shape, in x's dtype (or `dtype`)."""
    shape = _known_shape("randn_like", x)
    dtype = x.dtype if dtype is None else dtype
    return normal(
        shape, dtype=dtype, generator=generator, device=_device(x), requires_grad=requires_grad
    )


def randint_like(x, low, high=None, dtype=None, generator=None):
    """Integers in [low, high) (`randint_like(x, high)`: from 0) of x's shape, in x's dtype
    (or `dtype`; a float dtype holds the integers drawn, as in PyTorch)."""
    low, high = (0, low) if high is None else (low, high)
    dtype = dt.as_dtype(x.dtype if dtype is None else dtype)
    draw_dtype = dtype if dtype in dt.INTS else dt.int64
    out = randint(
        low,
        high,
        _known_shape("randint_like", x),
        dtype=draw_dtype,
        generator=generator,
        device=_device(x),
    )
    return out if draw_dtype == dtype else out.astype(dtype)


def bernoulli(p, generator=None):
    """1 with probability p, else 0, elementwise, in p's float dtype (PyTorch's bernoulli).
    A probability outside [0, 1] (or NaN) raises OutOfRangeError when the draw runs."""
    if not dt.is_float(p.dtype):
        raise AttrError(f"bernoulli: needs float probabilities, got {p.dtype}")
    p = p.detach()
    outside = reduce_sum(logical_not(logical_and(p >= 0, p <= 1)).astype(dt.int64))
    check = _checked_zero(outside, "bernoulli: the count of probabilities outside [0, 1]")
    drawn = (rand_like(p, generator=generator) < p).astype(p.dtype)
    return depend_(drawn, check)  # (a program that needs the draw runs the check)


def inverse_cdf(weights, u):
    """The category of each uniform draw in u (its last dim 1, against the weights' last dim
    of categories; the other dims broadcast): the count of cumulative weights, over their
    total, at or below the draw, so category i with probability weights[i] / total."""
    cdf = cumsum(weights, axis=-1)
    below = cdf <= u * cdf[..., -1:]
    return reduce_sum(below.astype(dt.int64), axis=-1).clamp(0, weights.shape[-1] - 1)


def _checked_zero(count, what):
    return checked_range(count, low=0, high=0, what=what)


def multinomial(probs, num_samples: int, replacement: bool = False, generator=None):
    """`num_samples` category indices per row of `probs` (1-D, or 2-D: one row per
    distribution), drawn in proportion to the row's non-negative weights (PyTorch's
    multinomial), int64. Without replacement each category is drawn at most once (the
    weighted sampling of Efraimidis and Spirakis: the k smallest exponential draws divided by
    the weights), so a row needs at least `num_samples` positive weights. A negative,
    infinite or NaN weight, or a row without enough positive ones, raises OutOfRangeError
    when the draw runs."""
    if probs.ndim not in (1, 2):
        raise AttrError(f"multinomial: probs must be 1-D or 2-D, got {probs.ndim} dims")
    if not dt.is_float(probs.dtype):
        raise AttrError(f"multinomial: needs float weights, got {probs.dtype}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise AttrError(f"multinomial: num_samples must be an int, got {num_samples!r}")
    n = probs.shape[-1]
    k = int(num_samples)
    if k <= 0 or (not replacement and n != UNKNOWN and k > n):
        raise AttrError(
            f"multinomial: num_samples={k} must be >= 1"
            + ("" if replacement else f" and at most the {n} categories without replacement")
        )
    p = probs.detach().astype(dt.float64)  # (the CDF's rounding stays far below one draw's)
    bad = reduce_sum(logical_not(logical_and(isfinite(p), p >= 0)).astype(dt.int64), axis=-1)
    positive = reduce_sum((p > 0).astype(dt.int64), axis=-1)
    least = k if not replacement else 1
    checks = [
        _checked_zero(bad, "multinomial: a row's count of negative, infinite or NaN weights"),
        checked_range(
            positive,
            low=least,
            high=max(n, least),
            what="multinomial: a row's count of positive weights",
        ),
    ]
    rows = tuple(_known_shape("multinomial", p)[:-1])
    if replacement:
        u = uniform((*rows, k, 1), dtype=dt.float64, generator=generator, device=_device(p))
        index = inverse_cdf(p.unsqueeze(-2), u)
    else:
        u = uniform((*rows, n), dtype=dt.float64, generator=generator, device=_device(p))
        keys = -log(u) / p  # exponential draws over the weights: inf where a weight is 0
        index = topk(keys, k, axis=-1, largest=False).indices
    return depend_(index, *checks)  # (a program that needs the draw runs the checks)


__all__ = ["rand_like", "randn_like", "randint_like", "bernoulli", "multinomial"]
