"""TransformedDistribution and the families PyTorch writes as one.

Y = f(X) for X from a base distribution and f a chain of Transforms:
log p(y) = log p_X(f^-1(y)) - log |det df/dx|. LogNormal, HalfNormal, HalfCauchy, Gumbel,
Weibull, Pareto, Kumaraswamy, InverseGamma and LogisticNormal are built this way, as in
PyTorch, keeping closed forms (log_prob, moments, entropy) where a family has them. Each keeps
its own parameters as attributes (checked by validate_args, broadcast by expand).
"""

import math

import numpy as np

from .. import ops
from ..core.errors import DomainError, ShapeError
from ..eager.tensor import tensor
from . import constraints
from .continuous import Cauchy, Exponential, Normal, Uniform
from .distribution import Distribution, as_tensor, broadcast_all
from .gamma import Gamma
from .independent import Independent, _sum_rightmost
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
    Transform,
)

_EULER = 0.57721566490153286060
_INF = float("inf")


def _any_param(dist):
    """A parameter tensor of `dist` or of its base, whose dtype and device values take."""
    while dist is not None:
        for name in dist._params:
            value = dist.__dict__.get(name)
            if value is not None:
                return value
        dist = getattr(dist, "base_dist", None)
    return tensor(0.0)


class TransformedDistribution(Distribution):
    """PyTorch's TransformedDistribution(base_distribution, transforms)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, list) or not all(
            isinstance(t, Transform) for t in transforms
        ):
            raise DomainError(f"transforms must be a Transform or a list of them, got {transforms}")
        self.transforms = transforms
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ShapeError(
                f"base_distribution needs to have shape with size at least "
                f"{transform.domain.event_dim}, but got {base_shape}."
            )
        forward_shape = transform.forward_shape(base_shape)
        expanded = transform.inverse_shape(forward_shape)
        if base_shape != expanded:  # parameters of the transforms broadcast the base
            base_distribution = base_distribution.expand(expanded[: len(expanded) - base_event_dim])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        shape = tuple(batch_shape) + self._event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[: len(shape) - len(self.base_dist.event_shape)])
        return new

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support, len(self._event_shape) - support.event_dim)
        return support

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    def _value(self, value):
        return as_tensor(value, _any_param(self))

    def sample(self, sample_shape=(), generator=None):
        x = self.base_dist.sample(sample_shape, generator=generator)
        for transform in self.transforms:
            x = transform(x)
        return x.detach()

    def rsample(self, sample_shape=(), generator=None):
        x = self.base_dist.rsample(sample_shape, generator=generator)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value):
        y = self._value(value)
        self._validate_sample(y)
        event_dim, log_prob = len(self._event_shape), 0.0
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            term = transform.log_abs_det_jacobian(x, y)
            log_prob = log_prob - _sum_rightmost(term, event_dim - transform.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """1 - cdf where the chain is decreasing, so that the cdf increases."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        value = self._value(value)
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(self._value(value)))
        for transform in self.transforms:
            value = transform(value)
        return value

    def __repr__(self):
        if type(self) is not TransformedDistribution:
            return super().__repr__()
        return f"TransformedDistribution({self.base_dist!r}, {self.transforms!r})"


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ Normal(loc, scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    _params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        base = Normal(self.loc, self.scale, validate_args=False)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    mean = property(lambda self: (self.loc + self.scale.square() / 2).exp())
    mode = property(lambda self: (self.loc - self.scale.square()).exp())

    @property
    def variance(self):
        s2 = self.scale.square()
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedDistribution):
    """|X| for X symmetric about zero with scale `scale` (HalfNormal, HalfCauchy): the
    density doubles on x >= 0 and the CDF is 2 F(x) - 1."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    _params = ("scale",)
    _base = Normal

    def __init__(self, scale, validate_args=None):
        (self.scale,) = broadcast_all(scale)
        base = self._base(ops.zeros_like(self.scale), self.scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    mode = property(lambda self: ops.zeros_like(self.scale))

    def log_prob(self, value):
        value = self._value(value)
        self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ops.where(value >= 0, log_prob, -_INF)

    def cdf(self, value):
        value = self._value(value)
        self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value):
        return self.base_dist.icdf((self._value(value) + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """|X| for X ~ Normal(0, scale)."""

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi))
    variance = property(lambda self: self.scale.square() * (1 - 2 / math.pi))


class HalfCauchy(_Folded):
    """|X| for X ~ Cauchy(0, scale): infinite mean and variance."""

    _base = Cauchy
    mean = property(lambda self: ops.full_like(self.scale, _INF))
    variance = property(lambda self: self.base_dist.variance)


class Gumbel(TransformedDistribution):
    """Gumbel(loc, scale): loc - scale log(-log U) for U uniform on (0, 1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = np.finfo(self.loc.dtype)
        low = ops.full_like(self.loc, float(finfo.tiny))
        high = ops.full_like(self.loc, 1 - float(finfo.eps))
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-ops.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=self.loc, scale=-self.scale),
        ]
        base = Uniform(low, high, validate_args=False)
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value):
        value = self._value(value)
        self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return y - y.exp() - self.scale.log()

    mean = property(lambda self: self.loc + self.scale * _EULER)
    mode = property(lambda self: self.loc)
    stddev = property(lambda self: math.pi / math.sqrt(6) * self.scale)
    variance = property(lambda self: self.stddev.square())

    def entropy(self):
        return self.scale.log() + (1 + _EULER)


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration): scale * E^(1 / concentration), E ~ Exponential(1)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _params = ("scale", "concentration")

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        transforms = [
            PowerTransform(exponent=self.concentration.reciprocal()),
            AffineTransform(loc=0, scale=self.scale),
        ]
        base = Exponential(ops.ones_like(self.scale), validate_args=False)
        super().__init__(base, transforms, validate_args=validate_args)

    def _moment(self, n):  # Gamma(1 + n / k)
        return (1 + n * self.concentration.reciprocal()).lgamma().exp()

    mean = property(lambda self: self.scale * self._moment(1))

    @property
    def mode(self):
        """scale ((k - 1) / k)^(1 / k): NaN where k < 1, as PyTorch's."""
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(k.reciprocal())

    @property
    def variance(self):
        return self.scale.square() * (self._moment(2) - self._moment(1).square())

    def entropy(self):
        inv = self.concentration.reciprocal()
        return _EULER * (1 - inv) + (self.scale * inv).log() + 1


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): scale * exp(E), E ~ Exponential(alpha), on [scale, inf)."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _params = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        base = Exponential(self.alpha, validate_args=False)
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp_min(1)  # infinite for alpha <= 1
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale)

    @property
    def variance(self):
        a = self.alpha.clamp_min(2)  # infinite for alpha <= 2
        return self.scale.square() * a / ((a - 1).square() * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


def _kumaraswamy_moment(a, b, n):
    """E[X^n] = b B(1 + n / a, b)."""
    arg = 1 + n / a
    return b * (arg.lgamma() + b.lgamma() - (arg + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy(a, b) on [0, 1]: (1 - U^(1/b))^(1/a), density a b x^(a-1) (1-x^a)^(b-1)."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    _params = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        a, b = self.concentration1, self.concentration0
        transforms = [
            PowerTransform(exponent=b.reciprocal()),
            AffineTransform(loc=1.0, scale=-1.0),
            PowerTransform(exponent=a.reciprocal()),
        ]
        base = Uniform(ops.zeros_like(b), ops.ones_like(b), validate_args=False)
        super().__init__(base, transforms, validate_args=validate_args)

    mean = property(lambda self: _kumaraswamy_moment(self.concentration1, self.concentration0, 1))

    @property
    def mode(self):
        """((a - 1) / (a b - 1))^(1 / a), NaN where a < 1 or b < 1. (PyTorch 2.x's formula
        gives NaN everywhere; this is the mode of the density.)"""
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        return ops.where((a < 1) | (b < 1), float("nan"), log_mode.exp())

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _kumaraswamy_moment(a, b, 2) - self.mean.square()

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        t1, t0 = 1 - a.reciprocal(), 1 - b.reciprocal()
        h0 = (b + 1).digamma() + _EULER
        return t0 + t1 * h0 - a.log() - b.log()


class InverseGamma(TransformedDistribution):
    """1 / X for X ~ Gamma(concentration, rate) (reparameterized, as Gamma)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    _params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        base = Gamma(self.concentration, self.rate, validate_args=False)
        neg_one = -ops.ones((), dtype=self.rate.dtype)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    @property
    def mean(self):
        a = self.concentration
        return ops.where(a > 1, self.rate / (a - 1), _INF)

    mode = property(lambda self: self.rate / (self.concentration + 1))

    @property
    def variance(self):
        a = self.concentration
        return ops.where(a > 2, self.rate.square() / ((a - 1).square() * (a - 2)), _INF)

    def entropy(self):
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()


class LogisticNormal(TransformedDistribution):
    """StickBreakingTransform of a diagonal Normal over K - 1 dims: a law on the K-simplex."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    _params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        base = Normal(self.loc, self.scale, validate_args=False)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)


__all__ = [
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "InverseGamma",
    "Kumaraswamy",
    "LogNormal",
    "LogisticNormal",
    "Pareto",
    "TransformedDistribution",
    "Weibull",
]
