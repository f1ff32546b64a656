"""Pooling modules: max, average, adaptive, lp, fractional and unpooling, in 1, 2 and 3 dims."""

from __future__ import annotations

from ... import ops
from ...argcheck import real
from ...core.errors import AttrError
from .. import functional as F
from .module import Module
from .utils import _tuple, flag


class _Pool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 2)
        self.stride = self.kernel_size if stride is None else _tuple(stride, 2)
        self.padding = _tuple(padding, 2)
        self.ceil_mode = flag(self, "ceil_mode", ceil_mode)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Max over kernel_size windows (stride defaults to kernel_size; padding counts as -inf),
    PyTorch's options: dilation, return_indices, ceil_mode."""

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
        ceil_mode=False,
    ):  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation = _tuple(dilation, 2)
        self.return_indices = flag(self, "return_indices", return_indices)

    def forward(self, x):
        return F.max_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip


class AvgPool2d(_Pool2d):
    """Mean over kernel_size windows (stride defaults to kernel_size), PyTorch's options:
    ceil_mode, count_include_pad, divisor_override."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
        divisor_override=None,
    ):  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x):
        return F.avg_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        # (None keeps the input's size, as PyTorch's: F.adaptive_avg_pool2d reads it)
        self.output_size = (
            output_size if isinstance(output_size, (tuple, list)) else (_tuple(output_size, 2))
        )

    def forward(self, x):
        return ops.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class MaxPool1d(Module):
    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices=False,
        ceil_mode=False,
    ):
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
        return F.max_pool1d(x, *args, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool1d(Module):
    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.ceil_mode)
        return F.avg_pool1d(x, *args, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Max over PyTorch's adaptive bins; return_indices also returns the argmax positions."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveMaxPool1d):
    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """max_pool1d's partial inverse: forward(input, indices, output_size=None)."""

    def forward(self, input, indices, output_size=None):
        args = (self.kernel_size, self.stride, self.padding, output_size)
        return F.max_unpool1d(input, indices, *args)


class MaxUnpool2d(_MaxUnpoolNd):
    """max_pool2d's partial inverse: forward(input, indices, output_size=None)."""

    def forward(self, input, indices, output_size=None):
        args = (self.kernel_size, self.stride, self.padding, output_size)
        return F.max_unpool2d(input, indices, *args)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """(sum over each window of x^p)^(1 / p) along L."""

    def forward(self, input):
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """(sum over each window of x^p)^(1 / p) over H and W."""

    def forward(self, input):
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class FractionalMaxPool2d(Module):
    """Fractional max pooling (F.fractional_max_pool2d) to output_size, or to output_ratio (in
    (0, 1)) of the input's size; new pseudo-random window starts every call unless
    _random_samples is given."""

    def __init__(
        self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
        _random_samples=None,
    ):  # fmt: skip
        super().__init__()
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise AttrError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise AttrError(f"{name}: only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,)
            if not all(0 < real(r, f"{name}: output_ratio") < 1 for r in ratios):
                raise AttrError(f"{name}: output_ratio must be between 0 and 1, got {output_ratio}")
        self.kernel_size, self.output_size = kernel_size, output_size
        self.output_ratio = output_ratio
        self.return_indices, self._random_samples = return_indices, _random_samples

    def forward(self, input):
        return F.fractional_max_pool2d(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples,
        )  # fmt: skip

    def extra_repr(self) -> str:
        if self.output_size is not None:
            return f"kernel_size={self.kernel_size}, output_size={self.output_size}"
        return f"kernel_size={self.kernel_size}, output_ratio={self.output_ratio}"


class MaxPool3d(MaxPool1d):
    """Max over kernel_size boxes (stride defaults to kernel_size; padding counts as -inf),
    PyTorch's options: dilation, return_indices, ceil_mode."""

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
        return F.max_pool3d(x, *args, return_indices=self.return_indices)


class AvgPool3d(AvgPool1d):
    """Mean over kernel_size boxes, PyTorch's options: ceil_mode, count_include_pad,
    divisor_override."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
        divisor_override=None,
    ):  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.ceil_mode)
        return F.avg_pool3d(x, *args, self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    def forward(self, x):
        return F.adaptive_avg_pool3d(x, self.output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool1d):
    def forward(self, x):
        return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)


class LPPool3d(_LPPoolNd):
    """(sum over each window of x^p)^(1 / p) over D, H and W."""

    def forward(self, input):
        return F.lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class MaxUnpool3d(_MaxUnpoolNd):
    """max_pool3d's partial inverse: forward(input, indices, output_size=None)."""

    def forward(self, input, indices, output_size=None):
        args = (self.kernel_size, self.stride, self.padding, output_size)
        return F.max_unpool3d(input, indices, *args)


class FractionalMaxPool3d(FractionalMaxPool2d):
    """Fractional max pooling (F.fractional_max_pool3d) to output_size, or to output_ratio (in
    (0, 1)) of the input's size; new pseudo-random box starts every call unless
    _random_samples is given."""

    def forward(self, input):
        return F.fractional_max_pool3d(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples,
        )  # fmt: skip


__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
]
