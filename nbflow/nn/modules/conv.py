"""Convolution modules: Conv1d/2d/3d and ConvTranspose1d/2d/3d, with PyTorch's weight layouts
(Conv2d (out, in/groups, kh, kw)) and default initialisation, so PyTorch state dicts load as
they are."""

from __future__ import annotations

import math

from ...argcheck import choice
from ...core.errors import DomainError
from .. import functional as F
from ..functional.conv import transposed_output_padding
from .module import Module
from .utils import _default_init, _empty, _tuple, flag, ints

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    dims = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        dtype=None,
        generator=None,
    ):
        super().__init__()
        n = self.dims
        name = type(self).__name__
        self.padding_mode = choice(padding_mode, PADDING_MODES, f"{name}: padding_mode")
        in_channels, out_channels, groups = ints(
            self, in_channels=in_channels, out_channels=out_channels, groups=groups
        )
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise DomainError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                f"divisible by groups ({groups})"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.groups = groups
        shape = (self.out_channels, self.in_channels // groups, *self.kernel_size)
        self.weight = _empty(*shape, dtype=dtype)
        if flag(self, "bias", bias):
            self.bias = _empty(self.out_channels, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        fan_in = self.in_channels // self.groups * math.prod(self.kernel_size)
        _default_init(self.weight, self.bias, fan_in, generator)

    def _args(self, padding):
        if self.dims == 1:  # conv1d takes ints
            padding = padding if isinstance(padding, (str, int)) else padding[0]
            return self.stride[0], padding, self.dilation[0], self.groups
        return self.stride, padding, self.dilation, self.groups

    def _padded(self, x):
        """(input, padding) of the convolution: a padding_mode other than zeros pads the input
        by F.pad, and the convolution then pads nothing (PyTorch's way)."""
        if self.padding_mode == "zeros":
            return x, self.padding
        pads = []  # (before, after) from the last dim backwards
        for i in reversed(range(self.dims)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                pads += [total // 2, total - total // 2]
            else:
                pads += [0, 0] if self.padding == "valid" else [self.padding[i]] * 2
        return F.pad(x, pads, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self.dims:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) (cross-correlation, as in PyTorch)."""

    dims = 2

    def forward(self, x):
        x, padding = self._padded(x)
        return F.conv2d(x, self.weight, self.bias, *self._args(padding))


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L)."""

    dims = 1

    def forward(self, x):
        x, padding = self._padded(x)
        return F.conv1d(x, self.weight, self.bias, *self._args(padding))


class _ConvTransposeNd(Module):
    """PyTorch's ConvTranspose layers: weight (in_channels, out_channels / groups, *kernel),
    initialised as PyTorch does (its fan_in is then out_channels / groups * kernel size)."""

    dims = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        dtype=None,
        generator=None,
    ):
        super().__init__()
        name = type(self).__name__
        if not isinstance(padding_mode, str) or padding_mode != "zeros":
            raise DomainError(f"{name}: only padding_mode='zeros' is supported (as in PyTorch)")
        in_channels, out_channels, groups = ints(
            self, in_channels=in_channels, out_channels=out_channels, groups=groups
        )
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise DomainError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        n = self.dims
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding, self.output_padding = _tuple(padding, n), _tuple(output_padding, n)
        self.dilation, self.groups = _tuple(dilation, n), groups
        self.padding_mode = padding_mode
        shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        self.weight = _empty(*shape, dtype=dtype)
        if flag(self, "bias", bias):
            self.bias = _empty(self.out_channels, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        fan_in = self.out_channels // self.groups * math.prod(self.kernel_size)
        _default_init(self.weight, self.bias, fan_in, generator)

    def _output_padding(self, x, output_size):
        if output_size is None:
            return self.output_padding
        return transposed_output_padding(
            x.shape,
            output_size,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            type(self).__name__,
        )

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        for name, default in (("padding", 0), ("output_padding", 0), ("dilation", 1)):
            if getattr(self, name) != (default,) * self.dims:
                s += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W); forward(x, output_size=None) picks the
    output_padding that gives output_size, as PyTorch's."""

    dims = 2

    def forward(self, x, output_size=None):
        output_padding = self._output_padding(x, output_size)
        args = (self.stride, self.padding, output_padding, self.groups, self.dilation)
        return F.conv_transpose2d(x, self.weight, self.bias, *args)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L)."""

    dims = 1

    def forward(self, x, output_size=None):
        (output_padding,) = self._output_padding(x, output_size)
        (stride,), (padding,), (dilation,) = self.stride, self.padding, self.dilation
        args = (stride, padding, output_padding, self.groups, dilation)
        return F.conv_transpose1d(x, self.weight, self.bias, *args)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) (cross-correlation, as in PyTorch); padding_mode
    'zeros', 'reflect', 'replicate' or 'circular'."""

    dims = 3

    def forward(self, x):
        x, padding = self._padded(x)
        return F.conv3d(x, self.weight, self.bias, *self._args(padding))


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W); forward(x, output_size=None) picks the
    output_padding that gives output_size, as PyTorch's."""

    dims = 3

    def forward(self, x, output_size=None):
        output_padding = self._output_padding(x, output_size)
        args = (self.stride, self.padding, output_padding, self.groups, self.dilation)
        return F.conv_transpose3d(x, self.weight, self.bias, *args)


__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
