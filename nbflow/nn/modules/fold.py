"""Unfold and Fold (sliding blocks to columns and back)."""

from __future__ import annotations

from .. import functional as F
from .module import Module


class Unfold(Module):
    """im2col: (N, C, H, W) -> (N, C kH kW, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x):
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Unfold):
    """col2im, Unfold's adjoint: (N, C kH kW, L) -> (N, C, output_size), blocks summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, x):
        args = (self.kernel_size, self.dilation, self.padding, self.stride)
        return F.fold(x, self.output_size, *args)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, " + super().extra_repr()


__all__ = ["Fold", "Unfold"]
