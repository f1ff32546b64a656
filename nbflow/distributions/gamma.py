"""Gamma and Beta: densities through lgamma/digamma, samples through the standard_gamma op.

standard_gamma draws on the nbflow Generator's stream (reproducible per seed, in eager and
graph mode) and is differentiable by implicit reparameterization, so rsample is too, as
PyTorch's. Beta is X / (X + Y) for X ~ Gamma(a, 1), Y ~ Gamma(b, 1).
"""

import numpy as np

from .. import ops
from ..ops.random_params import standard_gamma
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all


def gamma_draws(concentration, shape, generator=None):
    """Gamma(concentration, 1) samples of `shape` (concentration broadcast to it)."""
    return standard_gamma(concentration.broadcast_to(shape), generator=generator)


class Gamma(Distribution):
    """Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp_min(0))
    variance = property(lambda self: self.concentration / self.rate.square())

    def rsample(self, sample_shape=(), generator=None):
        x = gamma_draws(self.concentration, self._extended_shape(sample_shape), generator)
        tiny = float(np.finfo(self.rate.dtype).tiny)  # PyTorch clamps samples away from 0
        return (x / self.rate).clamp_min(tiny)

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
    has_rsample = True
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

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        x = gamma_draws(self.concentration1, shape, generator)
        y = gamma_draws(self.concentration0, shape, generator)
        return x / (x + y)  # (both at least finfo.tiny: never 0 / 0)

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
