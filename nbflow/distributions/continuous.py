"""Location-scale and interval distributions: Normal, Laplace, Uniform, Exponential.

Each samples by transforming uniform or standard-normal draws from an nbflow Generator, so the
sample is a differentiable function of the parameters (rsample) and is reproducible per seed.
"""

import math

import numpy as np

from .. import ops
from ..core.errors import DomainError
from ..ops import creation
from ..ops.sampling import _device
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all, traced

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
            shape, dtype=self.loc.dtype, generator=generator, device=_device(self.loc)
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
            device=_device(self.loc),
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
            shape, dtype=self.low.dtype, generator=generator, device=_device(self.low)
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
            shape, dtype=self.rate.dtype, generator=generator, device=_device(self.rate)
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
