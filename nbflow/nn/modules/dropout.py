"""Dropout modules: Dropout, Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout."""

from __future__ import annotations

from ... import ops
from ...core import is_probability
from ...core.errors import AttrError, DomainError
from .. import functional as F
from .module import Module
from .utils import reals


class Dropout(Module):
    """Zero each element with probability p while training, scaling the rest by 1/(1-p);
    the identity in eval mode. `generator` seeds the masks (default: the default generator)."""

    def __init__(self, p: float = 0.5, inplace: bool = False, generator=None):
        super().__init__()
        if not is_probability(p):
            raise DomainError(f"dropout probability must be in [0, 1], got {p}")
        [self.p], self.generator = reals(self, p=p), generator

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        return ops.dropout(x, self.p, True, self.generator)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False, generator=None):
        super().__init__()
        if not is_probability(p):
            raise AttrError(f"{type(self).__name__}: probability must be in [0, 1], got {p}")
        [self.p], self.inplace, self.generator = reals(self, p=p), inplace, generator

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input while training (the rest scaled by
    1 / (1 - p)); the identity in eval mode."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace, self.generator)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input while training (the rest scaled by
    1 / (1 - p)); the identity in eval mode."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace, self.generator)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input while training."""

    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, self.inplace, self.generator)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks (keeps zero mean and unit variance) while training; the
    identity in eval mode."""

    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training, self.inplace, self.generator)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout with one draw per channel."""

    def forward(self, x):
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace, self.generator)


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
