"""Continuous distributions: the location-scale and interval families (Normal, Laplace,
Uniform, Exponential) and Cauchy, StudentT, Chi2, FisherSnedecor, Dirichlet and VonMises.

Normal, Laplace, Uniform and Exponential sample by transforming uniform or standard-normal
draws from an nbflow Generator, so the sample is a differentiable function of the parameters
(rsample) and is reproducible per seed; Cauchy by the inverse CDF of a uniform draw. The
Gamma-based ones (StudentT, Chi2, FisherSnedecor, Dirichlet) sample through the standard_gamma
op, which is reparameterized (implicitly), so they have rsample and sample under nbflow.jit, as
PyTorch's. VonMises samples by Best and Fisher's rejection sampler, as PyTorch's, in float64 on
the Generator's numpy stream (on the host: not under nbflow.jit).
"""

import math

import numpy as np

from .. import ops
from ..core.errors import DomainError, ShapeError, UnsupportedError
from ..eager.tensor import tensor
from ..ops import creation
from ..ops.sampling import device_or_none
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all, numpy_generator, traced
from .gamma import Gamma, gamma_draws

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _eps(t):
    return float(np.finfo(t.dtype).eps)


class _LocationScale(Distribution):
    """A real-valued family of a location and a positive scale (Normal, Laplace): its mean
    and mode are the location."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)


class Normal(_LocationScale):
    """N(loc, scale**2), reparameterized as loc + scale * eps with eps ~ N(0, 1)."""

    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.scale.square())

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        eps = creation.randn(
            shape, dtype=self.loc.dtype, generator=generator, device=device_or_none(self.loc)
        )
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -0.5 * z.square() - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value):
        value = as_tensor(value, self.loc)
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()


class Laplace(_LocationScale):
    """Laplace(loc, scale), reparameterized through the inverse CDF of a uniform draw."""

    stddev = property(lambda self: math.sqrt(2) * self.scale)
    variance = property(lambda self: 2 * self.scale.square())

    def rsample(self, sample_shape=(), generator=None):
        shape, dtype = self._extended_shape(sample_shape), self.loc.dtype
        # u in (-1, 1): u = -1 would put log1p(-|u|) at -inf
        u = creation.uniform(
            shape,
            low=_eps(self.loc) - 1,
            high=1.0,
            dtype=dtype,
            generator=generator,
            device=device_or_none(self.loc),
        )
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value):
        value = as_tensor(value, self.loc)
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Uniform(Distribution):
    """U[low, high), reparameterized as low + (high - low) * u."""

    arg_constraints = {"low": constraints.real, "high": constraints.real}
    has_rsample = True
    _params = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(tuple(self.low.shape), validate_args=validate_args)
        checked = self._validate_args and not (traced(self.low) or traced(self.high))
        if checked and not np.all(self.low.detach().numpy() < self.high.detach().numpy()):
            raise DomainError("Uniform is not defined when low>= high")

    @property
    def support(self):
        return constraints.half_open_interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2)
    mode = property(lambda self: ops.full_like(self.low, float("nan")))
    stddev = property(lambda self: (self.high - self.low) / math.sqrt(12))
    variance = property(lambda self: (self.high - self.low).square() / 12)

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        u = creation.rand(
            shape, dtype=self.low.dtype, generator=generator, device=device_or_none(self.low)
        )
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = as_tensor(value, self.low)
        self._validate_sample(value)
        inside = ((self.low <= value) & (self.high > value)).astype(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        value = as_tensor(value, self.low)
        self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value):
        value = as_tensor(value, self.low)
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(Distribution):
    """Exponential(rate), reparameterized as -log(1 - u) / rate."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("rate",)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: ops.zeros_like(self.rate))
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate.square().reciprocal())

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        u = creation.rand(
            shape, dtype=self.rate.dtype, generator=generator, device=device_or_none(self.rate)
        )
        return -(-u).log1p() / self.rate

    def log_prob(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        value = as_tensor(value, self.rate)
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1 - self.rate.log()


_NAN, _INF = float("nan"), float("inf")


def _full(dist, value, like):
    return ops.full(dist._extended_shape(), value, dtype=like.dtype, device=device_or_none(like))


class Cauchy(Distribution):
    """Cauchy(loc, scale): density 1 / (pi scale (1 + z^2)), z = (x - loc) / scale."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    mean = property(lambda self: _full(self, _NAN, self.loc))
    mode = property(lambda self: self.loc)
    variance = property(lambda self: _full(self, _INF, self.loc))

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        u = creation.rand(
            shape, dtype=self.loc.dtype, generator=generator, device=device_or_none(self.loc)
        )
        return self.icdf(u)

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - z.square().log1p()

    def cdf(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        value = as_tensor(value, self.loc)
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Chi2(Gamma):
    """Chi2(df) = Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}
    _params = ("concentration", "rate", "df")

    def __init__(self, df, validate_args=None):
        (self.df,) = broadcast_all(df)
        super().__init__(0.5 * self.df, 0.5, validate_args=validate_args)


class StudentT(Distribution):
    """Student's t(df, loc, scale): loc + scale * X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df)."""

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True
    _params = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    mode = property(lambda self: self.loc)

    @property
    def mean(self):
        return ops.where(self.df <= 1, _NAN, self.loc)

    @property
    def variance(self):
        df = self.df
        finite = self.scale.square() * df / (df - 2).clamp_min(1e-30)
        return ops.where(df > 2, finite, ops.where(df > 1, _INF, _NAN))

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        df = self.df
        x = creation.randn(shape, dtype=df.dtype, generator=generator, device=device_or_none(df))
        z = Chi2(df, validate_args=False).rsample(sample_shape, generator=generator)
        return self.loc + self.scale * x * (z / df).rsqrt()

    def log_prob(self, value):
        value = as_tensor(value, self.df)
        self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + (0.5 * df).lgamma()
            - (0.5 * (df + 1.0)).lgamma()
        )
        return -0.5 * (df + 1.0) * (y.square() / df).log1p() - z

    def entropy(self):
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        half = 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma())
        return self.scale.log() + half + 0.5 * df.log() + lbeta


class FisherSnedecor(Distribution):
    """F(df1, df2): the ratio of two chi-square draws, each over its degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True
    _params = ("df1", "df2")

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(tuple(self.df1.shape), validate_args=validate_args)

    @property
    def mean(self):
        df2 = ops.where(self.df2 <= 2, _NAN, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        df1, df2 = self.df1, self.df2
        return ops.where(df1 <= 2, _NAN, (df1 - 2) / df1 * df2 / (df2 + 2))

    @property
    def variance(self):
        df1, df2 = self.df1, ops.where(self.df2 <= 4, _NAN, self.df2)
        return 2 * df2.square() * (df1 + df2 - 2) / (df1 * (df2 - 2).square() * (df2 - 4))

    def rsample(self, sample_shape=(), generator=None):
        df1, df2 = self.df1, self.df2
        x1 = Gamma(df1 * 0.5, df1, validate_args=False).rsample(sample_shape, generator)
        x2 = Gamma(df2 * 0.5, df2, validate_args=False).rsample(sample_shape, generator)
        tiny = float(np.finfo(df1.dtype).tiny)
        return (x1 / x2.clamp_min(tiny)).clamp_min(tiny)

    def log_prob(self, value):
        value = as_tensor(value, self.df1)
        self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3


class Dirichlet(Distribution):
    """Dirichlet(concentration) on the simplex of the last dim: Gamma draws, normalized."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _params = ("concentration",)

    def __init__(self, concentration, validate_args=None):
        (concentration,) = broadcast_all(concentration)
        if concentration.ndim < 1:
            raise ShapeError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def _total(self, keepdim=True):
        return self.concentration.sum(-1, keepdim=keepdim)

    mean = property(lambda self: self.concentration / self._total())

    @property
    def mode(self):
        """The clamped ratio; the one-hot of its largest entry where every a_i < 1."""
        a = self.concentration
        am1 = (a - 1).clamp_min(0.0)
        ratio = am1 / am1.sum(-1, keepdim=True)
        corner = ops.one_hot(ratio.argmax(-1), a.shape[-1]).astype(a.dtype)
        return ops.where((a < 1).all(-1, keepdim=True), corner, ratio)

    @property
    def variance(self):
        a, total = self.concentration, self._total()
        return a * (total - a) / (total.square() * (total + 1))

    def rsample(self, sample_shape=(), generator=None):
        x = gamma_draws(self.concentration, self._extended_shape(sample_shape), generator)
        return x / x.sum(-1, keepdim=True)  # (each draw at least finfo.tiny: never 0 / 0)

    def log_prob(self, value):
        value = as_tensor(value, self.concentration)
        self._validate_sample(value)
        a = self.concentration
        return ops.xlogy(a - 1.0, value).sum(-1) + self._total(False).lgamma() - a.lgamma().sum(-1)

    def entropy(self):
        a, total = self.concentration, self._total(False)
        k = a.shape[-1]
        return (
            a.lgamma().sum(-1)
            - total.lgamma()
            - (k - total) * total.digamma()
            - ((a - 1.0) * a.digamma()).sum(-1)
        )


# Abramowitz and Stegun 9.8.1-9.8.4 (PyTorch's coefficients): I_n(x) for x < 3.75 in
# (x / 3.75)^2, and sqrt(x) e^-x I_n(x) beyond in 3.75 / x, good to about 1e-7 relative.
_BESSEL_SMALL = (
    (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2),
    (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3),
)
_BESSEL_LARGE = (
    (
        0.39894228,
        0.1328592e-1,
        0.225319e-2,
        -0.157565e-2,
        0.916281e-2,
        -0.2057706e-1,
        0.2635537e-1,
        -0.1647633e-1,
        0.392377e-2,
    ),
    (
        0.39894228,
        -0.3988024e-1,
        -0.362018e-2,
        0.163801e-2,
        -0.1031555e-1,
        0.2282967e-1,
        -0.2895312e-1,
        0.1787654e-1,
        -0.420059e-2,
    ),
)


def _poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def log_modified_bessel(x, order=0):
    """log I_order(x) for x > 0 and order 0 or 1, without overflow for large x."""
    if order not in (0, 1):
        raise DomainError(f"order must be 0 or 1, got {order}")
    small_x = x.clamp_max(3.75)  # each branch sees only the arguments it is accurate for
    small = _poly((small_x / 3.75).square(), _BESSEL_SMALL[order])
    small = (small_x.abs() * small if order == 1 else small).log()
    large_x = x.clamp_min(3.75)
    large = large_x - 0.5 * large_x.log() + _poly(3.75 / large_x, _BESSEL_LARGE[order]).log()
    return ops.where(x < 3.75, small, large)


def _host(t, shape):
    """The parameter as float64 numpy for the host sampler: a graph value has no data yet."""
    if traced(t):
        raise UnsupportedError(
            "sample() under nbflow.jit: VonMises draws on the host by rejection, which needs "
            "the parameters' values; sample outside the jitted function and pass the sample in"
        )
    return np.broadcast_to(t.detach().numpy().astype(np.float64), shape)


def _von_mises_draws(loc, kappa, shape, rng):
    """Best and Fisher (1979): wrapped-Cauchy proposals accepted by a squeeze test."""
    tau = 1 + np.sqrt(1 + 4 * kappa**2)
    rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
    r = np.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))
    x, done = np.zeros(shape), np.zeros(shape, dtype=bool)
    while not done.all():
        u1, u2, u3 = rng.random((3,) + shape)
        z = np.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kappa * (r - f)
        with np.errstate(divide="ignore"):
            accept = ((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0)
        accept &= ~done
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
        done |= accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The circular von Mises(loc, concentration): density e^(k cos(x - loc)) / (2 pi I0(k)).

    mean and variance are the circular ones, as PyTorch's; sample only (no rsample)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    _params = ("loc", "concentration")

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        k = self.concentration
        return 1 - (log_modified_bessel(k, 1) - log_modified_bessel(k, 0)).exp()

    def sample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        loc, kappa = _host(self.loc, shape), _host(self.concentration, shape)
        x = _von_mises_draws(loc, kappa, shape, numpy_generator(generator))
        return tensor(x.astype(self.loc.dtype), device=self.loc.device)

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        k = self.concentration
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_modified_bessel(k, 0)
