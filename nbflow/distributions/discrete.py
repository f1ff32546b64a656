"""Bernoulli, Categorical and OneHotCategorical, parameterized by probs or by logits.

Either parameter determines the other; the one not given is derived on first use, so the
distribution stays differentiable through whichever the caller passed.
"""

import numpy as np

from .. import ops
from ..core.errors import DomainError
from ..ops import creation, sampling
from ..ops.sampling import _device
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all


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
        u = creation.rand(shape, dtype=p.dtype, generator=generator, device=_device(p))
        return (u < p).astype(p.dtype)

    def log_prob(self, value):
        value = as_tensor(value, self.logits)
        self._validate_sample(value)
        return value * self.logits - self.logits.softplus()

    def entropy(self):
        return self.logits.softplus() - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = ops.arange(2, dtype=self.probs.dtype, device=_device(self.probs))
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
        return ops.full(self._batch_shape, float("nan"), dtype=p.dtype, device=_device(p))

    def sample(self, sample_shape=(), generator=None):
        """Inverse-CDF sampling: count the cumulative probabilities below one uniform draw."""
        probs = self.probs.detach()
        shape = self._extended_shape(sample_shape) + (1,)
        u = creation.rand(shape, dtype=probs.dtype, generator=generator, device=_device(probs))
        return sampling.inverse_cdf(probs, u)

    def log_prob(self, value):
        value = as_tensor(value, ops.zeros((), dtype=np.int64, device=_device(self.logits)))
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
        values = ops.arange(self._num_events, dtype=np.int64, device=_device(self.probs))
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
        values = ops.eye(k, dtype=self.probs.dtype, device=_device(self.probs)).reshape(
            (k,) + (1,) * len(self._batch_shape) + (k,)
        )
        return values.broadcast_to((k,) + self._batch_shape + (k,)) if expand else values
