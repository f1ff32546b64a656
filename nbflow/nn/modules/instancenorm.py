"""Instance normalisation: InstanceNorm1d/2d/3d."""

from __future__ import annotations

from ... import ops
from ...core.errors import ShapeError
from .. import functional as F
from .batchnorm import _NormBase


class _InstanceNorm(_NormBase):
    """Normalise each (sample, channel) over its spatial dims; affine and running statistics
    as PyTorch's InstanceNorm (both off by default; num_batches_tracked is kept for its
    state_dict keys and, as in PyTorch, never counts)."""

    spatial = 1

    def __init__(
        self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
        dtype=None,
    ):  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def forward(self, x):
        if x.ndim not in (self.spatial + 1, self.spatial + 2):
            raise ShapeError(
                f"{type(self).__name__}: expects a {self.spatial + 1}-D or {self.spatial + 2}-D "
                f"input, got shape {tuple(x.shape)}"
            )
        unbatched = x.ndim == self.spatial + 1
        channels = x.shape[0 if unbatched else 1]
        if self.affine and channels != self.num_features:
            raise ShapeError(
                f"{type(self).__name__}: input shape {tuple(x.shape)} has {channels} channels, "
                f"num_features is {self.num_features}"
            )
        if unbatched:
            x = ops.unsqueeze(x, 0)
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return ops.squeeze(out, 0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L)."""

    spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W)."""

    spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W)."""

    spatial = 3


__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
