"""The log-gamma function and its derivatives, elementwise: lgamma, digamma, trigamma and
polygamma (PyTorch's), with the Hurwitz zeta sum that digamma's derivatives and
special.zeta share."""

import math

import numpy as np
from numba.extending import register_jitable

from ..core import Attr, is_int
from ..core import dtypes as dt
from ..core.errors import DomainError
from ._define import elementwise
from .elementwise import _INTEGRAL

FLOATS = dt.FLOATS


def _is_pole(x):
    return x <= 0 and x == math.floor(x) if -_INTEGRAL < x < _INTEGRAL else x == -math.inf


_lgamma64 = np.vectorize(lambda v: math.inf if _is_pole(v) else math.lgamma(v), otypes=[float])


@elementwise(dtypes=FLOATS, ref=lambda x: _lgamma64(x).astype(x.dtype), to_float=True)
def lgamma(x):
    """log |gamma(x)| (inf at 0 and the negative integers)."""
    if x != x:
        return x
    if x <= 0 and (x == -math.inf or (x > -_INTEGRAL and x == math.floor(x))):
        return math.inf  # a pole (math.lgamma raises there)
    if x == math.inf:
        return x
    return math.lgamma(x)


lgamma.defgrad(lambda g, out, x: (g * digamma(x),))


def _digamma_ref(x):
    """Recurrence up to 20, then the asymptotic series, in float64 numpy."""
    x64 = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        neg = x64 < 0
        shift = np.where(neg, -np.pi / np.tan(np.pi * x64), 0.0)
        z = np.where(neg, 1 - x64, x64)
        acc = np.zeros_like(z)
        for _ in range(20):
            small = z < 20
            acc = acc - np.where(small, 1 / z, 0)
            z = np.where(small, z + 1, z)
        z2 = 1 / (z * z)
        series = z2 * (1 / 12 - z2 * (1 / 120 - z2 * (1 / 252 - z2 * (1 / 240 - z2 / 132))))
        out = shift + acc + np.log(z) - 0.5 / z - series
        pole = (x64 <= 0) & (x64 == np.floor(x64))
        out = np.where(pole, np.where(x64 == 0, np.copysign(np.inf, -x64), np.nan), out)
    return out.astype(x.dtype)


@elementwise(dtypes=FLOATS, ref=_digamma_ref, to_float=True)
def digamma(x):
    """The logarithmic derivative of gamma (-inf at 0, NaN at the negative integers, as
    PyTorch). Reflection below 0, the recurrence up to 10, then the asymptotic series."""
    if x != x or x == math.inf:
        return x
    if x == 0:
        return math.copysign(math.inf, -x)  # the side 0 is approached from (-0.0: +inf)
    acc = x - x
    if x < 0:
        if x <= -_INTEGRAL or x == math.floor(x):
            return math.nan
        acc = -math.pi / math.tan(math.pi * x)
        x = 1 - x
    while x < 10:
        acc -= 1 / x
        x += 1
    z2 = 1 / (x * x)
    series = z2 * (1 / 12 - z2 * (1 / 120 - z2 * (1 / 252 - z2 * (1 / 240 - z2 / 132))))
    return acc + math.log(x) - 0.5 / x - series


digamma.defgrad(lambda g, out, x: (g * trigamma(x),))


def _trigamma_ref(x):
    x64 = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        neg = x64 < 0
        z = np.where(neg, 1 - x64, x64)
        acc = np.zeros_like(z)
        for _ in range(20):
            small = z < 20
            acc = acc + np.where(small, 1 / (z * z), 0)
            z = np.where(small, z + 1, z)
        z2 = 1 / (z * z)
        series = 1 / z + z2 / 2 + z2 / z * (1 / 6 - z2 * (1 / 30 - z2 * (1 / 42 - z2 / 30)))
        out = acc + series
        out = np.where(neg, (np.pi / np.sin(np.pi * x64)) ** 2 - out, out)
        out = np.where((x64 <= 0) & (x64 == np.floor(x64)), np.inf, out)
        out = np.where(x64 == -np.inf, np.nan, out)
    return out.astype(x.dtype)


@elementwise(dtypes=FLOATS, ref=_trigamma_ref, to_float=True)
def trigamma(x):
    """The derivative of digamma (PyTorch's polygamma(1, x)); inf at 0 and the negative
    integers."""
    if x != x or x == math.inf:
        return 1 / x if x == math.inf else x
    if x <= -_INTEGRAL:
        return math.nan if x == -math.inf else math.inf  # (every such float is a pole)
    reflect = x < 0
    x0 = x
    if x <= 0:
        if x == math.floor(x):
            return math.inf
        x = 1 - x
    acc = x - x
    while x < 10:
        acc += 1 / (x * x)
        x += 1
    z2 = 1 / (x * x)
    acc += 1 / x + z2 / 2 + z2 / x * (1 / 6 - z2 * (1 / 30 - z2 * (1 / 42 - z2 / 30)))
    if reflect:  # trigamma(x) + trigamma(1 - x) = pi^2 / sin^2(pi x)
        s = math.pi / math.sin(math.pi * x0)
        return s * s - acc
    return acc


trigamma.defgrad(lambda g, out, x: (g * polygamma_op(x, n=2),))


def _polygamma_ref(x, n=2):
    import scipy.special  # (a dependency: numba's LAPACK needs it)

    out = scipy.special.polygamma(n, x.astype(np.float64))
    return np.where(x == -np.inf, np.nan, out).astype(x.dtype)


# Cephes' zeta: (2j)! / B_2j, the Euler-Maclaurin coefficients
_ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
)  # fmt: skip


@register_jitable
def hurwitz_zeta_sum(q, s, direct_until):
    """sum_k (k + q)^-s for s > 1, as Cephes' zeta: the first terms directly (at least 9,
    and until k + q passes direct_until), then the Euler-Maclaurin tail; it stops once a
    term no longer changes the float64 sum. zeta and polygamma both sum it."""
    total = math.pow(q, -s)
    a, b, i = q, 0.0, 0
    while i < 9 or a <= direct_until:
        i += 1
        a += 1.0
        b = math.pow(a, -s)
        total += b
        if math.fabs(b / total) < 2.220446049250313e-16:
            return total
    w = a
    total += b * w / (s - 1.0) - 0.5 * b
    rising, k = 1.0, 0.0
    for bernoulli in _ZETA_A:  # B_2j / (2j)! as Cephes' A[j]
        rising *= s + k
        b /= w
        t = rising * b / bernoulli
        total += t
        if math.fabs(t / total) < 2.220446049250313e-16:
            break
        k += 1.0
        rising *= s + k
        b /= w
        k += 1.0
    return total


@elementwise(dtypes=FLOATS, ref=_polygamma_ref, to_float=True, attrs={"n": Attr("int", 2)})
def polygamma_op(x, n):
    """The n-th derivative of digamma (polygamma(n, x) calls it for n >= 2): (-1)^(n+1) n!
    zeta(n + 1, x), the Hurwitz zeta summed directly until the terms reach 9 + n, then
    Euler-Maclaurin (Cephes' zeta, whose tail converges for any n from there). A pole at 0
    and the negative integers (the limit from the right), 0 at inf, NaN at -inf. Summed in
    float64 whatever the dtype: the terms' powers leave float16's range (a GPU computes
    float16 as float16)."""
    if x != x or x == -math.inf or n < 1 or n != math.floor(n):
        return math.nan
    if x == math.inf:
        return 0.0
    q, s = float(x), float(n) + 1.0
    sign = 1.0 if s % 2 == 0 else -1.0  # (-1)^(n+1)
    if q <= 0 and q == math.floor(q):
        return sign * math.inf
    return sign * math.gamma(s) * hurwitz_zeta_sum(q, s, 9.0 + s)


polygamma_op.defgrad(lambda g, out, x, n: (g * polygamma_op(x, n=n + 1),))


def polygamma(n, x):
    """PyTorch's polygamma: the n-th derivative of digamma (n = 0: digamma itself)."""
    if not is_int(n) or n < 0:
        raise DomainError(f"polygamma: n must be a non-negative int, got {n!r}")
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    return polygamma_op(x, n=int(n))


__all__ = ["lgamma", "digamma", "trigamma", "polygamma"]
