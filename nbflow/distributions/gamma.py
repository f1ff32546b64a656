"""Gamma and Beta: densities through lgamma/digamma, samples from numpy's samplers.

nbflow has no gamma-variate kernel, so samples come from numpy's gamma/beta samplers driven by
the nbflow Generator's own numpy stream (reproducible per seed, never numpy's global state).
They are not reparameterized: rsample raises NotImplementedError (PyTorch's Gamma and Beta do
have rsample through implicit reparameterization).
"""

import numpy as np

from .. import ops
from ..errors import UnsupportedError
from ..tensor import tensor
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all, numpy_generator, traced


def _host(t, shape, dist=None):
    """The parameter as float64 numpy for numpy's sampler: a graph value has no data yet."""
    if traced(t):
        name = "this distribution" if dist is None else type(dist).__name__
        raise UnsupportedError(
            f"sample() under nbflow.jit: {name} draws through numpy's sampler, which "
            "needs the parameters' values; sample outside the jitted function and pass the "
            "sample in"
        )
    return np.broadcast_to(t.detach().numpy().astype(np.float64), shape)


class Gamma(Distribution):
    """Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    _params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp_min(0))
    variance = property(lambda self: self.concentration / self.rate.square())

    def sample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        a, rate = _host(self.concentration, shape, self), _host(self.rate, shape, self)
        x = numpy_generator(generator).gamma(a, 1.0, size=shape) / rate
        tiny = np.finfo(self.rate.dtype).tiny  # PyTorch clamps samples away from zero too
        return tensor(np.maximum(x, tiny).astype(self.rate.dtype), device=self.rate.device)

    def log_prob(self, value):
        value = as_tensor(value, self.rate)
        self._validate_sample(value)
        a, rate = self.concentration, self.rate
        return ops.xlogy(a, rate) + ops.xlogy(a - 1, value) - rate * value - a.lgamma()

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1 - a) * a.digamma()


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1]: density x^(a-1) (1-x)^(b-1) / B(a, b)."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    _params = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(tuple(self.concentration1.shape), validate_args=validate_args)

    def _total(self):
        return self.concentration1 + self.concentration0

    mean = property(lambda self: self.concentration1 / self._total())

    @property
    def mode(self):
        """PyTorch's (Dirichlet) mode: the clamped ratio, or the heavier end when a, b < 1."""
        a, b = self.concentration1, self.concentration0
        a1, b1 = (a - 1).clamp_min(0), (b - 1).clamp_min(0)
        end = (a >= b).astype(a.dtype)
        return ops.where((a < 1) & (b < 1), end, a1 / (a1 + b1))

    @property
    def variance(self):
        total = self._total()
        return self.concentration1 * self.concentration0 / (total.square() * (total + 1))

    def sample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        a, b = _host(self.concentration1, shape, self), _host(self.concentration0, shape, self)
        x = numpy_generator(generator).beta(a, b, size=shape)
        return tensor(x.astype(self.concentration1.dtype), device=self.concentration1.device)

    def _log_beta(self):
        a, b = self.concentration1, self.concentration0
        return a.lgamma() + b.lgamma() - self._total().lgamma()

    def log_prob(self, value):
        value = as_tensor(value, self.concentration1)
        self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return ops.xlogy(a - 1, value) + ops.xlogy(b - 1, 1 - value) - self._log_beta()

    def entropy(self):
        a, b, total = self.concentration1, self.concentration0, self._total()
        return (
            self._log_beta()
            - (a - 1) * a.digamma()
            - (b - 1) * b.digamma()
            + (total - 2) * total.digamma()
        )
