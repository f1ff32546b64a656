"""Upsample and its aliases UpsamplingNearest2d and UpsamplingBilinear2d."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class Upsample(Module):
    """F.interpolate as a module (PyTorch's Upsample): size or scale_factor, any of
    interpolate's modes ('nearest' by default)."""

    def __init__(
        self, size=None, scale_factor=None, mode="nearest", align_corners=None,
        recompute_scale_factor=None,
    ):  # fmt: skip
        super().__init__()
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, x):
        return F.interpolate(
            x, self.size, self.scale_factor, self.mode, self.align_corners,
            self.recompute_scale_factor,
        )  # fmt: skip

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Upsample with mode 'nearest' (PyTorch's alias)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode 'bilinear' and align_corners=True (PyTorch's alias)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
