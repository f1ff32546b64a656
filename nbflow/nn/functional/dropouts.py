"""Dropouts: dropout, its channel-wise forms (dropout1d/2d/3d) and the alpha dropouts that keep
SELU's mean and variance."""

import math
import warnings

from ... import ops
from ...core import is_probability
from ...core.errors import AttrError, ShapeError
from .activation import _SELU_ALPHA, _SELU_SCALE, _maybe_inplace


def dropout(input, p=0.5, training=True, inplace=False):
    return _maybe_inplace(input, lambda x: ops.dropout(x, p, training), inplace)


# the value alpha_dropout gives a dropped unit is -_ALPHA_PRIME (SELU's negative saturation)
_ALPHA_PRIME = _SELU_ALPHA * _SELU_SCALE


def _check_p(name, p):
    if not is_probability(p):
        raise AttrError(f"{name}: dropout probability must be in [0, 1], got {p}")


def _feature_mask(input, p, kept, generator):
    """A dropout mask (0, or 1 / (1 - p)) with one value per index of the first `kept` dims,
    drawn for a slice of input whose other dims are 1 (dropout_mask reads its shape only)."""
    like = input[(slice(None),) * kept + (slice(0, 1),) * (input.ndim - kept)]
    return ops.dropout_mask(like, p=p, generator=generator)


def _feature_dropout(name, input, p, training, inplace, kept, generator=None):
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    return _maybe_inplace(input, lambda x: x * _feature_mask(x, p, kept, generator), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero whole channels of (N, C, L) or (C, L) input with probability p, scaling the rest
    by 1 / (1 - p)."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"dropout1d: expects 2-D or 3-D input, got shape {tuple(input.shape)}")
    return _feature_dropout("dropout1d", input, p, training, inplace, input.ndim - 1, generator)


def dropout2d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero whole channels of (N, C, H, W) input with probability p, scaling the rest by
    1 / (1 - p). A 3-D input is taken as (N, C, L), as PyTorch does (with its warning)."""
    if input.ndim < 2:
        raise ShapeError(f"dropout2d: expects 3-D or 4-D input, got shape {tuple(input.shape)}")
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: a 3-D input is taken as (N, C, L) (channel-wise 1-D dropout), as "
            "PyTorch does; use dropout1d for that",
            stacklevel=2,
        )
    return _feature_dropout("dropout2d", input, p, training, inplace, 2, generator)


def dropout3d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p,
    scaling the rest by 1 / (1 - p)."""
    if input.ndim not in (4, 5):
        raise ShapeError(f"dropout3d: expects 4-D or 5-D input, got shape {tuple(input.shape)}")
    return _feature_dropout("dropout3d", input, p, training, inplace, input.ndim - 3, generator)


def _alpha_dropout(name, input, p, training, inplace, kept, generator):
    """PyTorch's alpha dropout: dropped units take SELU's saturation -alpha', then an affine
    map a x + b keeps a zero-mean unit-variance input so."""
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, lambda x: x * 0.0, inplace)
    a = 1.0 / math.sqrt((_ALPHA_PRIME**2 * p + 1.0) * (1.0 - p))

    def fn(x):
        kept_mask = _feature_mask(x, p, kept, generator) > 0
        return ops.where(kept_mask, x * a, -_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p

    return _maybe_inplace(input, fn, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False, generator=None):
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, input.ndim, generator)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False, generator=None):
    """alpha_dropout with one draw per channel (dims 0 and 1)."""
    if input.ndim < 2:
        raise ShapeError(
            f"feature_alpha_dropout: expects (N, C, ...) input, got shape {tuple(input.shape)}"
        )
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, 2, generator)


__all__ = [
    "alpha_dropout",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
]
