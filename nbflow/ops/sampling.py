"""PyTorch's sampling functions, composed from the random creation ops (so they run in
eager and graph mode, on either device): `rand_like`, `randn_like`, `randint_like`,
`bernoulli`, `multinomial`, and the Tensor's in-place fills (`x.normal_()`, `uniform_`,
`random_`, `exponential_`, `cauchy_`, `log_normal_`, `geometric_`, `bernoulli_`: a draw of x's
shape written by copy_, so the version counter and autograd's in-place rules follow). They
draw from `generator`, or the default generator, as the creation ops do, and carry no
gradient. Draws need a known shape: a graph value with a -1 dim raises UnsupportedError."""

import numpy as np

from ..argcheck import integer, real, shown
from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DomainError, DTypeError, UnsupportedError
from ..core.op import is_value
from .creation import check_memory_format, normal, randint, uniform
from .elementwise import copy_, exp, floor, isfinite, log, log1p, logical_and, logical_not, tan
from .index import checked_range
from .optim import depend_
from .reduce import sum as reduce_sum
from .scans import cumsum
from .sorting import topk


def _known_shape(name: str, x) -> tuple:
    shape = tuple(x.shape)
    if UNKNOWN in shape:
        raise UnsupportedError(
            f"{name}: a value of shape {list(shape)} (a dim known only when the program "
            "runs); a random draw needs a known shape"
        )
    return shape


def device_or_none(x):
    return getattr(x, "device", None)  # (a graph value has none: the executor places it)


def rand_like(
    x, dtype=None, generator=None, requires_grad=False, *, device=None, memory_format=None
):
    """Uniform draws in [0, 1) of x's shape, in x's dtype (or `dtype`), on x's device (or
    `device`)."""
    check_memory_format("rand_like", memory_format)
    shape = _known_shape("rand_like", x)
    dtype = x.dtype if dtype is None else dtype
    device = device_or_none(x) if device is None else device
    return uniform(
        shape, dtype=dtype, generator=generator, device=device, requires_grad=requires_grad
    )


def randn_like(
    x, dtype=None, generator=None, requires_grad=False, *, device=None, memory_format=None
):
    """Standard normal draws of x's shape, in x's dtype (or `dtype`), on x's device (or
    `device`)."""
    check_memory_format("randn_like", memory_format)
    shape = _known_shape("randn_like", x)
    dtype = x.dtype if dtype is None else dtype
    device = device_or_none(x) if device is None else device
    return normal(
        shape, dtype=dtype, generator=generator, device=device, requires_grad=requires_grad
    )


def randint_like(x, low, high=None, dtype=None, generator=None, *, device=None, memory_format=None):
    """Integers in [low, high) (`randint_like(x, high)`: from 0) of x's shape, in x's dtype
    (or `dtype`; a float dtype holds the integers drawn, as in PyTorch), on x's device (or
    `device`)."""
    check_memory_format("randint_like", memory_format)
    low, high = (0, low) if high is None else (low, high)
    dtype = dt.as_dtype(x.dtype if dtype is None else dtype)
    draw_dtype = dtype if dtype in dt.INTS else dt.int64
    out = randint(
        low,
        high,
        _known_shape("randint_like", x),
        dtype=draw_dtype,
        generator=generator,
        device=device_or_none(x) if device is None else device,
    )
    return out if draw_dtype == dtype else out.astype(dtype)


def bernoulli(p, generator=None):
    """1 with probability p, else 0, elementwise, in p's float dtype (PyTorch's bernoulli).
    A probability outside [0, 1] (or NaN) raises OutOfRangeError when the draw runs."""
    if not is_value(p):  # (an array's dtype may be one nbflow has no kind for: int8)
        raise ArgumentError(f"bernoulli: p must be a tensor, got {shown(p)}")
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
        u = uniform((*rows, k, 1), dtype=dt.float64, generator=generator, device=device_or_none(p))
        index = inverse_cdf(p.unsqueeze(-2), u)
    else:
        u = uniform((*rows, n), dtype=dt.float64, generator=generator, device=device_or_none(p))
        keys = -log(u) / p  # exponential draws over the weights: inf where a weight is 0
        index = topk(keys, k, axis=-1, largest=False).indices
    return depend_(index, *checks)  # (a program that needs the draw runs the checks)


# ---------------------------------------------------------------- in-place fills


def _float_target(name, x, complex_ok=False):
    if not (dt.is_float(x.dtype) or (complex_ok and dt.is_complex(x.dtype))):
        raise DTypeError(f"{name}: fills a float tensor, got {x.dtype}")


def _each_part(x, value):
    """A number to add to draws of x's dtype: to each part of a complex one (PyTorch draws
    into the complex tensor's real view, both parts alike)."""
    return complex(value, value) if dt.is_complex(x.dtype) else value


def uniform_(x, from_=0.0, to=1.0, *, generator=None):
    """x filled with uniform draws in [from_, to) (a complex x: each part's)."""
    _float_target("uniform_", x, complex_ok=True)
    from_, to = real(from_, "uniform_: from_"), real(to, "uniform_: to")
    if not from_ <= to:
        raise DomainError(f"uniform_: expects from_ <= to, got from_={from_}, to={to}")
    return copy_(x, rand_like(x, generator=generator) * (to - from_) + _each_part(x, from_))


def normal_(x, mean=0.0, std=1.0, *, generator=None):
    """x filled with normal draws of `mean` and `std` (>= 0); a complex x's parts each have
    mean `mean` and std std / sqrt(2), as PyTorch's."""
    _float_target("normal_", x, complex_ok=True)
    mean, std = real(mean, "normal_: mean"), real(std, "normal_: std")
    if not std >= 0:
        raise DomainError(f"normal_: expects std >= 0, got {std}")
    # (randn_like of a complex dtype draws each part with std 1 / sqrt(2))
    return copy_(x, randn_like(x, generator=generator) * std + _each_part(x, mean))


def log_normal_(x, mean=1.0, std=2.0, *, generator=None):
    """x filled with exp of normal draws of `mean` and `std` (> 0)."""
    _float_target("log_normal_", x)
    mean, std = real(mean, "log_normal_: mean"), real(std, "log_normal_: std")
    if not std > 0:
        raise DomainError(f"log_normal_: expects std > 0, got {std}")
    return copy_(x, exp(randn_like(x, generator=generator) * std + mean))


def exponential_(x, lambd=1.0, *, generator=None):
    """x filled with exponential draws of rate `lambd` (> 0): -log(1 - u) / lambd."""
    _float_target("exponential_", x)
    lambd = real(lambd, "exponential_: lambd")
    if not lambd > 0:
        raise DomainError(f"exponential_: expects lambd > 0, got {lambd}")
    return copy_(x, -log1p(-rand_like(x, generator=generator)) / lambd)


def cauchy_(x, median=0.0, sigma=1.0, *, generator=None):
    """x filled with Cauchy draws: median + sigma tan(pi (u - 1/2))."""
    _float_target("cauchy_", x)
    median, sigma = real(median, "cauchy_: median"), real(sigma, "cauchy_: sigma")
    if not sigma > 0:
        raise DomainError(f"cauchy_: expects sigma > 0, got {sigma}")
    return copy_(x, tan((rand_like(x, generator=generator) - 0.5) * np.pi) * sigma + median)


def geometric_(x, p, *, generator=None):
    """x filled with the trial of the first success, each with probability p in (0, 1]:
    floor(log(v) / log(1 - p)) + 1 for v uniform in (0, 1], so k with (1 - p)^(k-1) p."""
    p = real(p, "geometric_: p")
    if not 0 < p <= 1:
        raise DomainError(f"geometric_: expects 0 < p <= 1, got {p}")
    v = 1.0 - rand_like(x, dtype=dt.float64, generator=generator)
    trials = 1.0 if p == 1 else floor(log(v) / np.log1p(-p)) + 1.0
    return copy_(x, trials)


def bernoulli_(x, p=0.5, *, generator=None):
    """x filled with 1 with probability p (a number, or a tensor broadcast to x), else 0."""
    if isinstance(p, (int, float, np.integer, np.floating)):
        if not 0 <= p <= 1:
            raise DomainError(f"bernoulli_: expects 0 <= p <= 1, got {p}")
        return copy_(x, rand_like(x, dtype=dt.float64, generator=generator) < p)
    draws = bernoulli(p.broadcast_to(x.shape) if tuple(p.shape) != tuple(x.shape) else p)
    return copy_(x, draws)


def _random_end(dtype) -> int:
    """The exclusive end of x.random_()'s draws: past 2^mantissa for a float dtype, the
    largest value for an integer one (int64's itself excluded: the draw's bounds are int64)."""
    if dt.is_float(dtype):
        return 2 ** (np.finfo(dtype).nmant + 1) + 1
    if dtype == dt.bool_:
        return 2
    info = np.iinfo(dtype)
    return int(info.max) if dtype == dt.int64 else int(info.max) + 1


def random_(x, from_=None, to=None, *, generator=None):
    """x filled with integers drawn uniformly from [from_, to); `x.random_(to)` from [0, to);
    `x.random_()` from [0, 2^mantissa] for a float x (every integer it holds exactly), [0,
    its largest value] for an integer one (PyTorch's random_; see _random_end)."""
    if to is None:
        low, high = 0, from_
    else:
        low, high = 0 if from_ is None else from_, to
    if high is None:
        high = _random_end(dt.as_dtype(x.dtype))
    low, high = integer(low, "random_: from_"), integer(high, "random_: to")
    if not low < high:
        raise DomainError(f"random_: expects from_ < to, got from_={low}, to={high}")
    return copy_(x, randint_like(x, low, high, dtype=dt.int64, generator=generator))


__all__ = [
    "rand_like",
    "randn_like",
    "randint_like",
    "bernoulli",
    "multinomial",
    "bernoulli_",
    "cauchy_",
    "exponential_",
    "geometric_",
    "log_normal_",
    "normal_",
    "random_",
    "uniform_",
]
