"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Poisson, Binomial,
Geometric, NegativeBinomial and Multinomial.

Bernoulli, Categorical and OneHotCategorical are parameterized by probs or by logits: either
determines the other; the one not given is derived on first use, so the distribution stays
differentiable through whichever the caller passed. Binomial, Geometric and NegativeBinomial
take probs or logits (as Bernoulli, whose lazy probs/logits properties they share). Geometric
and Multinomial sample with nbflow's random ops (Geometric by inverting the CDF, Multinomial by
counting Categorical draws), Poisson and Binomial with the poisson and binomial ops,
NegativeBinomial as a Gamma-Poisson mixture of standard_gamma and poisson; so they all sample
under nbflow.jit, on the Generator's stream.
"""

import numpy as np

from .. import ops
from ..core.errors import DomainError
from ..ops import creation, sampling
from ..ops.random_params import binomial, poisson
from ..ops.sampling import device_or_none
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all, traced
from .gamma import gamma_draws


def _clamp_probs(probs):
    eps = float(np.finfo(probs.dtype).eps)
    return probs.clamp(eps, 1 - eps)


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise DomainError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """Bernoulli(probs) on {0, 1}; logits are log(p / (1 - p))."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        self.__dict__["probs" if probs is not None else "logits"] = param
        super().__init__(tuple(param.shape), validate_args=validate_args)

    @property
    def probs(self):
        if self.__dict__.get("probs") is None:
            self.__dict__["probs"] = self.logits.sigmoid()
        return self.__dict__["probs"]

    @property
    def logits(self):
        if self.__dict__.get("logits") is None:
            p = _clamp_probs(self.probs)
            self.__dict__["logits"] = p.log() - (-p).log1p()
        return self.__dict__["logits"]

    @property
    def param_shape(self):
        return self._batch_shape

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        p = self.probs
        mode = (p >= 0.5).astype(p.dtype)
        return ops.where(p == 0.5, float("nan"), mode)

    def sample(self, sample_shape=(), generator=None):
        shape, p = self._extended_shape(sample_shape), self.probs.detach()
        u = creation.rand(shape, dtype=p.dtype, generator=generator, device=device_or_none(p))
        return (u < p).astype(p.dtype)

    def log_prob(self, value):
        value = as_tensor(value, self.logits)
        self._validate_sample(value)
        return value * self.logits - self.logits.softplus()

    def entropy(self):
        return self.logits.softplus() - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = ops.arange(2, dtype=self.probs.dtype, device=device_or_none(self.probs))
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.broadcast_to((2,) + self._batch_shape) if expand else values


class Categorical(Distribution):
    """Categorical(probs) over {0, ..., K-1}, the last dim indexing the categories.

    probs are normalized to sum to one and logits to logsumexp zero, as in PyTorch.
    """

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True
    _params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (probs,) = broadcast_all(probs)
            if probs.ndim < 1:
                raise DomainError("`probs` parameter must be at least one-dimensional.")
            self.__dict__["probs"] = probs / probs.sum(-1, keepdim=True)
            param = probs
        else:
            (logits,) = broadcast_all(logits)
            if logits.ndim < 1:
                raise DomainError("`logits` parameter must be at least one-dimensional.")
            self.__dict__["logits"] = logits - logits.logsumexp(-1, keepdim=True)
            param = logits
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape[:-1]), validate_args=validate_args)

    @property
    def probs(self):
        if self.__dict__.get("probs") is None:
            self.__dict__["probs"] = self.logits.softmax(-1)
        return self.__dict__["probs"]

    @property
    def logits(self):
        if self.__dict__.get("logits") is None:
            self.__dict__["logits"] = _clamp_probs(self.probs).log()
        return self.__dict__["logits"]

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        return self._batch_shape + (self._num_events,)

    mean = property(lambda self: self._nans())
    variance = property(lambda self: self._nans())
    mode = property(lambda self: self.probs.argmax(-1))

    def _nans(self):
        p = self.probs
        return ops.full(self._batch_shape, float("nan"), dtype=p.dtype, device=device_or_none(p))

    def sample(self, sample_shape=(), generator=None):
        """Inverse-CDF sampling: count the cumulative probabilities below one uniform draw."""
        probs = self.probs.detach()
        shape = self._extended_shape(sample_shape) + (1,)
        u = creation.rand(
            shape, dtype=probs.dtype, generator=generator, device=device_or_none(probs)
        )
        return sampling.inverse_cdf(probs, u)

    def log_prob(self, value):
        value = as_tensor(value, ops.zeros((), dtype=np.int64, device=device_or_none(self.logits)))
        self._validate_sample(value)
        value = value.astype(np.int64).unsqueeze(-1)
        shape = np.broadcast_shapes(tuple(value.shape)[:-1], tuple(self.logits.shape)[:-1])
        logits = self.logits.broadcast_to(shape + (self._num_events,))
        return logits.gather(-1, value.broadcast_to(shape + (1,))).squeeze(-1)

    def entropy(self):
        min_real = float(np.finfo(self.logits.dtype).min)
        return -(self.logits.clamp_min(min_real) * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        n = len(self._batch_shape)
        values = ops.arange(self._num_events, dtype=np.int64, device=device_or_none(self.probs))
        values = values.reshape((-1,) + (1,) * n)
        return values.broadcast_to((self._num_events,) + self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """A Categorical whose samples are one-hot vectors of length K (the event shape)."""

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(
            self._categorical.batch_shape,
            (self._categorical.param_shape[-1],),
            validate_args=validate_args,
        )

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        return new

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        return ops.one_hot(self.probs.argmax(-1), self._event_shape[0]).astype(self.probs.dtype)

    def sample(self, sample_shape=(), generator=None):
        index = self._categorical.sample(sample_shape, generator=generator)
        return ops.one_hot(index, self._event_shape[0]).astype(self.probs.dtype)

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self._event_shape[0]
        values = ops.eye(k, dtype=self.probs.dtype, device=device_or_none(self.probs)).reshape(
            (k,) + (1,) * len(self._batch_shape) + (k,)
        )
        return values.broadcast_to((k,) + self._batch_shape + (k,)) if expand else values


def _probs_or_logits(dist, probs, logits, *others):
    """Broadcast `others` with whichever of probs / logits was given, into dist.__dict__."""
    _one_of(probs, logits)
    name = "probs" if probs is not None else "logits"
    *others, param = broadcast_all(*others, probs if probs is not None else logits)
    dist.__dict__[name] = param
    return [o.astype(param.dtype) for o in others], param


class Poisson(Distribution):
    """Poisson(rate) on {0, 1, 2, ...}: log p(k) = k log(rate) - rate - log k!."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _params = ("rate",)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=(), generator=None):
        rate = self.rate.detach().broadcast_to(self._extended_shape(sample_shape))
        return poisson(rate, generator=generator)

    def log_prob(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        rate = self.rate
        return ops.xlogy(value, rate) - rate - (value + 1).lgamma()


class _BinaryParams(Distribution):
    """A family over counts of successes, parameterized by probs or logits."""

    probs = Bernoulli.probs
    logits = Bernoulli.logits
    _params = ("total_count", "probs", "logits")

    @property
    def _param(self):
        return self.__dict__.get("probs", self.__dict__.get("logits"))

    param_shape = property(lambda self: tuple(self._param.shape))


def _clamp_by_zero(x):
    return (x.clamp_min(0) + x - x.clamp_max(0)) / 2


class Binomial(_BinaryParams):
    """Binomial(total_count, probs): successes in total_count Bernoulli(probs) trials."""

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (self.total_count,), param = _probs_or_logits(self, probs, logits, total_count)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    @property
    def mode(self):
        n = self.total_count
        return ops.minimum(((n + 1) * self.probs).floor(), n)

    def sample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        n, p = (t.detach().broadcast_to(shape) for t in (self.total_count, self.probs))
        return binomial(n, p, generator=generator)

    def log_prob(self, value):
        value = as_tensor(value, self._param)
        self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_choose = (n + 1).lgamma() - (value + 1).lgamma() - (n - value + 1).lgamma()
        # n log(1 + e^logits), stable for either sign of the logits
        normalize = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p()
        return value * logits + log_choose - normalize

    def _homogeneous_count(self, what):
        n = self.total_count.detach().numpy()
        if n.size and n.min() != n.max():
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return int(n.max()) if n.size else 0

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        n = self._homogeneous_count("enumerate_support")
        values = ops.arange(n + 1, dtype=self._param.dtype).reshape(
            (-1,) + (1,) * len(self._batch_shape)
        )
        return values.broadcast_to((n + 1,) + self._batch_shape) if expand else values


class Geometric(_BinaryParams):
    """Geometric(probs): failures before the first success, on {0, 1, 2, ...}."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        _, param = _probs_or_logits(self, probs, logits)
        super().__init__(tuple(param.shape), validate_args=validate_args)
        checked = self._validate_args and probs is not None and not traced(param)
        if checked and not np.all(param.detach().numpy() > 0):
            raise DomainError(
                f"Expected parameter probs of distribution {self!r} to be positive but "
                f"found invalid values:\n{param}"
            )

    mean = property(lambda self: 1.0 / self.probs - 1.0)
    mode = property(lambda self: ops.zeros_like(self.probs))
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs)

    def sample(self, sample_shape=(), generator=None):
        probs = self.probs.detach()
        tiny = float(np.finfo(probs.dtype).tiny)
        shape = self._extended_shape(sample_shape)
        u = creation.uniform(
            shape,
            low=tiny,
            high=1.0,
            dtype=probs.dtype,
            generator=generator,
            device=device_or_none(probs),
        )
        return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value):
        value = as_tensor(value, self._param)
        self._validate_sample(value)
        probs = self.probs
        # 0 log(0) = 0 at probs = 1, value = 0
        safe = ops.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-safe).log1p() + probs.log()

    def entropy(self):
        logits, probs = self.logits, self.probs
        return (logits.softplus() - probs * logits) / probs


class NegativeBinomial(_BinaryParams):
    """NegativeBinomial(total_count, probs): successes (each of probability probs) before
    total_count failures; a Gamma-Poisson mixture."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (self.total_count,), param = _probs_or_logits(self, probs, logits, total_count)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    mean = property(lambda self: self.total_count * self.logits.exp())
    variance = property(lambda self: self.mean / (-self.logits).sigmoid())

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp_min(0.0)

    def sample(self, sample_shape=(), generator=None):
        n, odds = self.total_count.detach(), self.logits.detach().exp()
        some = n > 0  # a total count of 0 gives 0 (standard_gamma needs a concentration > 0)
        x = gamma_draws(ops.where(some, n, 1.0), self._extended_shape(sample_shape), generator)
        return poisson(ops.where(some, x * odds, 0.0), generator=generator)

    def log_prob(self, value):
        value = as_tensor(value, self._param)
        self._validate_sample(value)
        n, logits = self.total_count, self.logits
        unnormalized = -n * logits.softplus() - value * (-logits).softplus()
        normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        normalization = ops.where(n + value == 0.0, 0.0, normalization)
        return unnormalized - normalization


class Multinomial(Distribution):
    """Multinomial(total_count, probs): counts per category of total_count Categorical draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if isinstance(total_count, bool) or not isinstance(total_count, (int, np.integer)):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = int(total_count)
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param_shape = self._categorical.param_shape
        super().__init__(param_shape[:-1], param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        return new

    @property
    def support(self):
        return constraints.multinomial(self.total_count)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=(), generator=None):
        k = self._event_shape[0]
        draws = self._categorical.sample((self.total_count,) + tuple(sample_shape), generator)
        counts = ops.one_hot(draws, k).astype(self.probs.dtype).sum(0)
        return counts.broadcast_to(self._extended_shape(sample_shape))

    def log_prob(self, value):
        value = as_tensor(value, self.probs)
        self._validate_sample(value)
        logits = self.logits
        shape = np.broadcast_shapes(tuple(logits.shape), tuple(value.shape))
        logits, value = logits.broadcast_to(shape), value.broadcast_to(shape)
        logits = ops.where((value == 0) & (logits == -float("inf")), 0.0, logits)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self):
        """n H(probs) - log n! + sum_i E[log x_i!], each x_i ~ Binomial(n, p_i)."""
        n = self.total_count
        term1 = n * self._categorical.entropy() - float(np.log(np.arange(1, n + 1)).sum())
        binomial = Binomial(n, self.probs, validate_args=False)
        support = binomial.enumerate_support(expand=False)[1:]
        binomial_probs = binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        return term1 + (binomial_probs * weights).sum((0, -1))
