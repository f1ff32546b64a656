"""MultivariateNormal through the Cholesky factor of the covariance.

Everything works on L with covariance = L L^T: samples are loc + L eps, the Mahalanobis term
is a triangular solve, and log det covariance is 2 sum(log diag L), all differentiable.
"""

import math

import numpy as np

from .. import linalg
from ..core.errors import DomainError, ShapeError
from ..ops import creation
from ..ops.sampling import device_or_none
from . import constraints
from .distribution import Distribution, as_tensor, broadcast_all


def batch_mahalanobis(L, x):
    """||L^{-1} x||^2 over the last dim, L and x broadcasting over their batch dims."""
    batch = np.broadcast_shapes(tuple(L.shape)[:-2], tuple(x.shape)[:-1])
    n = x.shape[-1]
    L = L.broadcast_to(batch + (n, n))
    x = x.broadcast_to(batch + (n,)).unsqueeze(-1)
    return linalg.solve_triangular(L, x, upper=False).square().sum((-2, -1))


def half_log_det(L):
    return L.diagonal(0, -2, -1).log().sum(-1)


class MultivariateNormal(Distribution):
    """N(loc, covariance_matrix), given the covariance, its precision, or its scale_tril."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True
    _params = ("loc", "_unbroadcasted_scale_tril")

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise DomainError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        (loc,) = broadcast_all(loc)
        (matrix,) = broadcast_all(given[0])
        if loc.ndim < 1:
            raise ShapeError("loc must be at least one-dimensional.")
        if matrix.ndim < 2:
            raise DomainError("the matrix parameter must be at least two-dimensional")
        if matrix.dtype != loc.dtype:
            matrix = matrix.astype(loc.dtype)
        name = ("covariance_matrix", "precision_matrix", "scale_tril")[
            [covariance_matrix is not None, precision_matrix is not None, True].index(True)
        ]
        self.__dict__[name] = matrix
        batch = np.broadcast_shapes(tuple(matrix.shape)[:-2], tuple(loc.shape)[:-1])
        event = tuple(loc.shape)[-1:]
        self.loc = loc.broadcast_to(batch + event)
        super().__init__(batch, event, validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = linalg.cholesky(linalg.inv(matrix))

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.broadcast_to(self._matrix_shape())

    @property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).broadcast_to(self._matrix_shape())

    @property
    def precision_matrix(self):
        return linalg.inv(self.covariance_matrix)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return L.square().sum(-1).broadcast_to(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=(), generator=None):
        shape = self._extended_shape(sample_shape)
        eps = creation.randn(
            shape, dtype=self.loc.dtype, generator=generator, device=device_or_none(self.loc)
        )
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        value = as_tensor(value, self.loc)
        self._validate_sample(value)
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        d = self._event_shape[0]
        return -0.5 * (d * math.log(2 * math.pi) + m) - half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self):
        d = self._event_shape[0]
        h = 0.5 * d * (1.0 + math.log(2 * math.pi)) + half_log_det(self._unbroadcasted_scale_tril)
        return h.broadcast_to(self._batch_shape) if tuple(h.shape) != self._batch_shape else h
