"""Independent: reinterpret the rightmost batch dims of a distribution as event dims.

A diagonal Gaussian over vectors is Independent(Normal(loc, scale), 1): log_prob and entropy
sum over the reinterpreted dims, everything else delegates to the base distribution.
"""

from ..core.errors import ShapeError
from . import constraints
from .distribution import Distribution


def _sum_rightmost(x, n):
    return x.sum(tuple(range(-n, 0))) if n > 0 else x


class Independent(Distribution):
    """PyTorch's Independent(base_distribution, reinterpreted_batch_ndims)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        if n > len(base_distribution.batch_shape):
            raise ShapeError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {n} vs {len(base_distribution.batch_shape)}"
            )
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        shape = base_distribution.batch_shape + base_distribution.event_shape
        event_dim = n + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        extra = self.event_shape[: self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + extra)
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)
    support = property(
        lambda self: constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims)
    )
    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    def sample(self, sample_shape=(), generator=None):
        return self.base_dist.sample(sample_shape, generator=generator)

    def rsample(self, sample_shape=(), generator=None):
        return self.base_dist.rsample(sample_shape, generator=generator)

    def log_prob(self, value):
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
