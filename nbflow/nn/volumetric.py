"""PyTorch's 3-D (volumetric) layers over (N, C, D, H, W) or unbatched (C, D, H, W) input: the
functions conv3d, conv_transpose3d, max_pool3d, avg_pool3d, adaptive_avg_pool3d and
adaptive_max_pool3d, and their modules, with BatchNorm3d and InstanceNorm3d.

- conv3d is the op of nbflow/ops/conv3d.py (vol2col + BLAS); conv_transpose3d is that op's
  input gradient with the roles arranged, as conv_transpose2d is conv2d's (nn/spatial.py).
- The pools are composed from the 2-D pooling ops (so gradients, graph mode and the GPU come
  with them), because a box window is separable: the max (or sum) over a (kD, kH, kW) box is
  the max (sum) over kD of the max (sum) over each (kH, kW) window. One 2-D pool runs over
  the (H, W) planes of x viewed as (N, C * D, H, W); a second runs with a (kD, 1) window over
  the (D, oH * oW) planes of that result viewed as (N, C, D, oH * oW). Both views are free
  reshapes. The second stage's argmax picks the depth, whose first stage's argmax gives the
  plane position: the first maximum in (d, h, w) order, as PyTorch's scan finds it. An
  average's divisor is a product over the axes too (the window clipped to the padded input,
  or to the input without count_include_pad), so the two stages divide in turn;
  divisor_override divides once, in the first.
- The modules reuse the 1-D and 2-D modules' bases in nn/layers.py with 3-D dims.

Errors name the PyTorch function and its 3-D arguments, checked before the 2-D ops run.
"""

from __future__ import annotations

from .. import ops
from ..core.errors import AttrError, ShapeError
from ..ops.conv import _batched, _out_size
from ..ops.conv3d import conv3d, conv3d_input_grad
from . import spatial as _spatial
from .layers import (
    AdaptiveAvgPool1d,
    AdaptiveMaxPool1d,
    AvgPool1d,
    MaxPool1d,
    _BatchNorm,
    _ConvNd,
    _ConvTransposeNd,
    _InstanceNorm,
)
from .spatial import _adaptive_max_axis, _adaptive_sizes, _ints, _known_dims, _named, _unbatch

LAYOUT = "(N, C, D, H, W)"

# ---------------------------------------------------------------- transposed convolution

TRANSPOSE3D = _spatial.Transposed(
    "conv_transpose3d",
    3,
    conv3d_input_grad,
    "(N, C_in, D, H, W)",
    "(in_channels, out_channels / groups, kD, kH, kW)",
)


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """PyTorch's F.conv_transpose3d: input (N, C_in, D, H, W) or (C_in, D, H, W), weight (C_in,
    C_out / groups, kD, kH, kW), bias (C_out,) or None; output depth (D - 1) stride - 2 padding
    + dilation (kD - 1) + output_padding + 1 (and so height and width)."""
    geometry = (stride, padding, output_padding, groups, dilation)
    return _spatial.conv_transpose(TRANSPOSE3D, input, weight, bias, *geometry)


# ---------------------------------------------------------------- pools


def _window(fn, input, kernel_size, stride, padding, dilation, ceil_mode, half):
    """The batched input and the checked triples (kernel, stride, padding, dilation) of a 3-D
    pool, with its output size; `half(k, d)` is the most padding a window allows."""
    x, added = _batched(input, 5, fn, LAYOUT)
    _known_dims(x, fn)
    kernel = _ints(kernel_size, 3, fn, "kernel_size", 1)
    stride = kernel if stride is None else _ints(stride, 3, fn, "stride", 1)
    padding = _ints(padding, 3, fn, "padding", 0)
    dilation = _ints(dilation, 3, fn, "dilation", 1)
    if any(p > half(k, d) for k, p, d in zip(kernel, padding, dilation)):
        raise AttrError(
            f"{fn}: padding {padding} must be at most half of the kernel {kernel} "
            f"(dilation {dilation})"
        )
    size = tuple(
        _out_size(n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation)
    )
    if min(size) <= 0:
        raise ShapeError(
            f"{fn}: input of shape {tuple(input.shape)} with padding {padding} is smaller than "
            f"the window {kernel} with dilation {dilation}"
        )
    return x, added, (kernel, stride, padding, dilation), size


def _max_padding(k, d):
    """The most padding a max pool's window allows: half its dilated span (PyTorch's)."""
    return (d * (k - 1) + 1) // 2


def _avg_padding(k, d):
    return k // 2


def _planes(x):
    """(N, C, D, H, W) as the (H, W) planes (N, C * D, H, W) (a free reshape)."""
    c, d, h, w = x.shape[1:]
    return ops.reshape(x, (-1, c * d, h, w))


def _depth_planes(y, channels):
    """A first stage's (N, C * D, oH, oW) as the (D, oH * oW) planes (N, C, D, oH * oW)."""
    oh, ow = y.shape[2:]
    return ops.reshape(y, (-1, channels, y.shape[1] // channels, oh * ow))


def _volume(z, size):
    """The second stage's (N, C, oD, oH * oW) as (N, C, oD, oH, oW)."""
    return ops.reshape(z, (-1, z.shape[1], *size))


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """PyTorch's F.max_pool3d on (N, C, D, H, W) or (C, D, H, W); return_indices also returns
    the int64 flat index into the D x H x W volume of each maximum."""
    fn = "max_pool3d"
    x, added, (k, s, p, d), size = _window(
        fn, input, kernel_size, stride, padding, dilation, ceil_mode, _max_padding
    )
    channels, (height, width) = x.shape[1], x.shape[3:]
    with _named(fn):
        planes, where = ops.max_pool2d(
            _planes(x), k[1:], s[1:], p[1:], d[1:], ceil_mode, return_indices=True
        )
        out, picked = ops.max_pool2d(
            _depth_planes(planes, channels),
            (k[0], 1),
            (s[0], 1),
            (p[0], 0),
            (d[0], 1),
            ceil_mode,
            return_indices=True,
        )
    out = _unbatch(_volume(out, size), added)
    if not return_indices:
        return out
    # picked = depth * (oH oW) + the output's plane position; the first stage's argmax there
    # is the position in that depth's (H, W) plane
    plane = size[1] * size[2]
    z = ops.maximum(picked, 0) // plane
    at = ops.take_along_axis(_depth_planes(where, channels), z, axis=2)
    indices = ops.where(picked < 0, picked, z * (height * width) + at)
    return out, _unbatch(_volume(indices, size), added)


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """PyTorch's F.avg_pool3d on (N, C, D, H, W) or (C, D, H, W)."""
    fn = "avg_pool3d"
    if divisor_override is not None:
        _ints(divisor_override, 1, fn, "divisor_override", 1)
    x, added, (k, s, p, _), size = _window(
        fn, input, kernel_size, stride, padding, 1, ceil_mode, _avg_padding
    )
    with _named(fn):
        planes = ops.avg_pool2d(
            _planes(x), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, divisor_override
        )
        out = ops.avg_pool2d(
            _depth_planes(planes, x.shape[1]),
            (k[0], 1),
            (s[0], 1),
            (p[0], 0),
            ceil_mode,
            count_include_pad,
            None if divisor_override is None else 1,  # divided once already
        )
    return _unbatch(_volume(out, size), added)


def _adaptive_input(fn, input, output_size):
    if input.ndim not in (4, 5):
        raise ShapeError(
            f"{fn}: input of shape {tuple(input.shape)} must be {LAYOUT} or (C, D, H, W)"
        )
    return _adaptive_sizes(input, output_size, 3, fn)


def adaptive_avg_pool3d(input, output_size):
    """PyTorch's F.adaptive_avg_pool3d on (N, C, D, H, W) or (C, D, H, W); output_size an int
    or a triple, where None keeps the input's size."""
    fn = "adaptive_avg_pool3d"
    od, oh, ow = _adaptive_input(fn, input, output_size)
    x, added = _batched(input, 5, fn, LAYOUT)
    with _named(fn):
        planes = ops.adaptive_avg_pool2d(_planes(x), (oh, ow))
        out = ops.adaptive_avg_pool2d(_depth_planes(planes, x.shape[1]), (od, oh * ow))
    return _unbatch(_volume(out, (od, oh, ow)), added)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """PyTorch's F.adaptive_max_pool3d on (N, C, D, H, W) or (C, D, H, W); output_size an int
    or a triple, where None keeps the input's size; return_indices also returns the int64 flat
    index into the D x H x W volume of each maximum. Separable, as adaptive_max_pool2d: the
    width, height and depth bins in turn, each carrying the positions found so far."""
    od, oh, ow = _adaptive_input("adaptive_max_pool3d", input, output_size)
    d_axis, h_axis, w_axis = input.ndim - 3, input.ndim - 2, input.ndim - 1
    out, cols, _ = _adaptive_max_axis(input, w_axis, ow)
    out, rows, (cols,) = _adaptive_max_axis(out, h_axis, oh, riders=(cols,))
    out, deps, (rows, cols) = _adaptive_max_axis(out, d_axis, od, riders=(rows, cols))
    if not return_indices:
        return out
    height, width = input.shape[h_axis], input.shape[w_axis]
    return out, (deps * height + rows) * width + cols


# ---------------------------------------------------------------- modules


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) (cross-correlation, as in PyTorch); padding_mode
    'zeros', 'reflect', 'replicate' or 'circular'."""

    dims = 3

    def forward(self, x):
        x, padding = self._padded(x)
        return conv3d(x, self.weight, self.bias, *self._args(padding))


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over (N, C, D, H, W); forward(x, output_size=None) picks the
    output_padding that gives output_size, as PyTorch's."""

    dims = 3

    def forward(self, x, output_size=None):
        output_padding = self._output_padding(x, output_size)
        args = (self.stride, self.padding, output_padding, self.groups, self.dilation)
        return conv_transpose3d(x, self.weight, self.bias, *args)


class MaxPool3d(MaxPool1d):
    """Max over kernel_size boxes (stride defaults to kernel_size; padding counts as -inf),
    PyTorch's options: dilation, return_indices, ceil_mode."""

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
        return max_pool3d(x, *args, return_indices=self.return_indices)


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
        return avg_pool3d(x, *args, self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    def forward(self, x):
        return adaptive_avg_pool3d(x, self.output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool1d):
    def forward(self, x):
        return adaptive_max_pool3d(x, self.output_size, self.return_indices)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) (see BatchNorm1d)."""

    expected_dims = (5,)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W)."""

    spatial = 3


FUNCTIONS = [
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "avg_pool3d",
    "conv3d",
    "conv_transpose3d",
    "max_pool3d",
]
MODULES = [
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
    "AvgPool3d",
    "BatchNorm3d",
    "Conv3d",
    "ConvTranspose3d",
    "InstanceNorm3d",
    "MaxPool3d",
]
__all__ = FUNCTIONS + MODULES
