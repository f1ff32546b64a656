"""Convolutions: conv1d/2d/3d, the transposed convolutions, and unfold / fold.

- conv_transpose2d is the op that computes conv2d's input gradient (`conv2d_input_grad`) with
  the roles arranged: its input is that op's output gradient, and PyTorch's transposed weight
  layout (in_channels, out_channels / groups, kH, kW) is conv2d's (O, C / groups, kH, kW). Its
  own gradients are then conv2d (for the input) and conv2d's weight gradient. conv3d is the op
  of nbflow/ops/conv3d.py (vol2col + BLAS); conv_transpose3d is its input gradient likewise.
- complex tensors: each convolution is three real convolutions of the parts (Gauss's product,
  PyTorch's complex_convolution), so their gradients come from the parts' ops.
- unfold gathers the taps of each axis with index_select; fold, its adjoint, scatters them back
  with index_put(accumulate=True). Index arrays are made in numpy, as constants.

Errors name the PyTorch function and its argument."""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ... import ops
from ...argcheck import integers
from ...core import UNKNOWN
from ...core import dtypes as dt
from ...core.errors import AttrError, ShapeError
from ...ops.conv import conv2d_input_grad, with_batch_dim
from ...ops.conv3d import conv3d as _real_conv3d
from ...ops.conv3d import conv3d_input_grad
from .helpers import ALL, _index, _ints, _named, _shaped_like, _unbatch, check_known_dims


def _parts(t):
    """(real part, imaginary part) of a tensor; a real one's imaginary part is zeros."""
    if dt.is_complex(t.dtype):
        return ops.real(t), ops.imag(t)
    return t, ops.zeros_like(t)


def _complex_convolution(conv):
    """The convolution `conv` (input, weight, bias=None, ...) taking complex tensors too, as
    PyTorch's complex_convolution: with input a + bi, weight c + di and bias e + fi, three real
    convolutions (Gauss's product): A = conv(a, c, e), B = conv(b, d), C = conv(a + b, c + d,
    e + f) give A - B + (C - A - B) i."""

    @functools.wraps(conv)
    def convolution(input, weight, bias=None, *args, **kwargs):
        # (getattr: another argument is the real convolution's to refuse, with its message)
        if not any(np.dtype(getattr(t, "dtype", "f8")).kind == "c" for t in (input, weight, bias)):
            return conv(input, weight, bias, *args, **kwargs)
        (a, b), (c, d) = _parts(input), _parts(weight)
        e, f = (None, None) if bias is None else _parts(bias)
        ac = conv(a, c, e, *args, **kwargs)
        bd = conv(b, d, None, *args, **kwargs)
        cross = conv(a + b, c + d, None if bias is None else e + f, *args, **kwargs)
        return ops.complex(ac - bd, cross - ac - bd)

    return convolution


conv1d = _complex_convolution(ops.conv1d)


conv2d = _complex_convolution(ops.conv2d)


conv3d = _complex_convolution(_real_conv3d)


def _transposed_size(n, k, s, p, op, d) -> int:
    return (n - 1) * s - 2 * p + d * (k - 1) + op + 1


@_complex_convolution
def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """PyTorch's F.conv_transpose2d: input (N, C_in, H, W) or (C_in, H, W), weight (C_in,
    C_out / groups, kH, kW), bias (C_out,) or None; output height (H - 1) stride - 2 padding +
    dilation (kH - 1) + output_padding + 1."""
    geometry = (stride, padding, output_padding, groups, dilation)
    return conv_transpose(TRANSPOSE2D, input, weight, bias, *geometry)


class Transposed(NamedTuple):
    """What a transposed convolution is built from: its name, its spatial dims, the
    input-gradient op of the matching convolution, and its layouts (for errors)."""

    fn: str
    dims: int
    input_grad: object
    x_layout: str
    w_layout: str


TRANSPOSE2D = Transposed(
    "conv_transpose2d",
    2,
    conv2d_input_grad,
    "(N, C_in, H, W)",
    "(in_channels, out_channels / groups, kH, kW)",
)


def conv_transpose(kind, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """The transposed convolution of `kind` (a Transposed): the input-gradient op of its
    convolution, with the roles arranged (module doc)."""
    fn, n = kind.fn, kind.dims
    x, added = with_batch_dim(input, n + 2, fn, kind.x_layout)
    check_known_dims(x, fn)
    if weight.ndim != n + 2:
        raise ShapeError(
            f"{fn}: weight of shape {tuple(weight.shape)} must be {n + 2}-D {kind.w_layout}"
        )
    stride = _ints(stride, n, fn, "stride", 1)
    padding = _ints(padding, n, fn, "padding", 0)
    output_padding = _ints(output_padding, n, fn, "output_padding", 0)
    dilation = _ints(dilation, n, fn, "dilation", 1)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise AttrError(f"{fn}: groups must be an int >= 1, got {groups!r}")
    channels, kernel = x.shape[1], tuple(weight.shape[2:])
    if channels != weight.shape[0]:
        raise ShapeError(
            f"{fn}: input of shape {tuple(x.shape)} has {channels} channels, weight of shape "
            f"{tuple(weight.shape)} expects {weight.shape[0]} (its first dim)"
        )
    if channels % groups:
        raise ShapeError(f"{fn}: {channels} input channels are not divisible by groups={groups}")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= max(s, d):  # PyTorch's rule
            raise AttrError(
                f"{fn}: output_padding {output_padding} must be smaller than stride {stride} "
                f"or dilation {dilation}"
            )
    size = tuple(
        _transposed_size(*a)
        for a in zip(x.shape[2:], kernel, stride, padding, output_padding, dilation)
    )
    if min(size) <= 0:
        raise ShapeError(f"{fn}: the output size {size} of input {tuple(x.shape)} is not positive")
    out_channels = weight.shape[1] * groups
    geometry = {"stride": stride, "dilation": dilation, "groups": groups}
    if all(op < s for op, s in zip(output_padding, stride)):
        like = _shaped_like(x, (out_channels, *size))
        with _named(fn):
            out = kind.input_grad(x, weight, like, padding=padding, **geometry)
    else:  # output_padding >= stride: the convolution's size rule cannot say it; no padding
        out = _transposed_unpadded(kind, x, weight, size, padding, out_channels, geometry)
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] not in (out_channels, UNKNOWN):
            raise ShapeError(
                f"{fn}: bias of shape {tuple(bias.shape)} must be ({out_channels},) (out_channels)"
            )
        out = out + ops.reshape(bias, (1, out_channels) + (1,) * n)
    return _unbatch(out, added)


def _transposed_unpadded(kind, x, weight, size, padding, out_channels, geometry):
    """The transposed convolution without padding, cropped by `padding` at the start and cut
    (or zero-extended, for output_padding past it) to `size`."""
    kernel, stride, dilation = tuple(weight.shape[2:]), geometry["stride"], geometry["dilation"]
    full = tuple(
        _transposed_size(n, k, s, 0, 0, d)
        for n, k, s, d in zip(x.shape[2:], kernel, stride, dilation)
    )
    like = _shaped_like(x, (out_channels, *full))
    with _named(kind.fn):
        out = kind.input_grad(x, weight, like, padding=(0,) * kind.dims, **geometry)
    key = (ALL, ALL) + tuple(slice(p, min(p + n, f)) for p, n, f in zip(padding, size, full))
    out = ops.getitem(out, key)
    extra = [(0, max(0, p + n - f)) for p, n, f in zip(padding, size, full)]
    return ops.pad(out, [(0, 0), (0, 0), *extra])


@_complex_convolution
def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """PyTorch's F.conv_transpose1d: input (N, C_in, L) or (C_in, L), weight (C_in, C_out /
    groups, k); runs as conv_transpose2d of height 1."""
    fn = "conv_transpose1d"
    x, added = with_batch_dim(input, 3, fn, "(N, C_in, L)")
    if weight.ndim != 3:
        raise ShapeError(
            f"{fn}: weight of shape {tuple(weight.shape)} must be 3-D "
            "(in_channels, out_channels / groups, k)"
        )
    (s,), (p,) = _ints(stride, 1, fn, "stride", 1), _ints(padding, 1, fn, "padding", 0)
    (op,), (d,) = (
        _ints(output_padding, 1, fn, "output_padding", 0),
        _ints(dilation, 1, fn, "dilation", 1),
    )
    with _named(fn):
        out = conv_transpose2d(
            ops.unsqueeze(x, 2),
            ops.unsqueeze(weight, 2),
            bias,
            stride=(1, s),
            padding=(0, p),
            output_padding=(0, op),
            groups=groups,
            dilation=(1, d),
        )
    return _unbatch(ops.squeeze(out, 2), added)


def transposed_output_padding(input_size, output_size, kernel_size, stride, padding, dilation, fn):
    """The output_padding that makes a transposed convolution's output `output_size` (its last
    len(kernel_size) entries), as PyTorch's ConvTranspose modules' forward(x, output_size)."""
    k = len(kernel_size)
    output_size = integers(output_size, f"{fn}: output_size")[-k:]
    if len(output_size) != k:
        raise ShapeError(f"{fn}: output_size {output_size} needs {k} spatial sizes")
    pads = []
    for n, want, ks, s, p, d in zip(
        input_size[-k:], output_size, kernel_size, stride, padding, dilation
    ):
        low = _transposed_size(n, ks, s, p, 0, d)
        if not low <= want < low + s:
            raise ShapeError(
                f"{fn}: output_size {output_size} is not reachable: each size must lie in "
                f"[{low}, {low + s - 1}] for this input, kernel, stride and padding"
            )
        pads.append(want - low)
    return tuple(pads)


def _window_args(fn, kernel_size, dilation, padding, stride):
    return (
        _ints(kernel_size, 2, fn, "kernel_size", 1),
        _ints(dilation, 2, fn, "dilation", 1),
        _ints(padding, 2, fn, "padding", 0),
        _ints(stride, 2, fn, "stride", 1),
    )


def _blocks(fn, size, kernel, dilation, padding, stride):
    """The number of sliding blocks along each of the two spatial dims."""
    counts = tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, d, p, s in zip(size, kernel, dilation, padding, stride)
    )
    if min(counts) <= 0:
        raise ShapeError(
            f"{fn}: a spatial size {tuple(size)} with padding {padding} holds no block of "
            f"kernel_size {kernel} with dilation {dilation}"
        )
    return counts


def _taps(kernel, dilation, stride, blocks):
    """Row r of block b, tap t (in the padded input): t dilation + b stride; (kernel, blocks)."""
    return np.arange(kernel)[:, None] * dilation + np.arange(blocks)[None, :] * stride


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's F.unfold (im2col): (N, C, H, W) or (C, H, W) -> (N, C kH kW, L), the L sliding
    blocks as columns, each column channel-major then kernel row then kernel column."""
    fn = "unfold"
    x, added = with_batch_dim(input, 4, fn, "(N, C, H, W)")
    check_known_dims(x, fn)
    kernel, dilation, padding, stride = _window_args(fn, kernel_size, dilation, padding, stride)
    c = x.shape[1]
    oh, ow = _blocks(fn, x.shape[2:], kernel, dilation, padding, stride)
    if any(padding):
        x = ops.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    rows = _taps(kernel[0], dilation[0], stride[0], oh)
    cols = _taps(kernel[1], dilation[1], stride[1], ow)
    x = ops.index_select(x, 2, _index(rows.ravel(), x))
    x = ops.index_select(x, 3, _index(cols.ravel(), x))  # (N, C, kH oh, kW ow)
    x = ops.permute(ops.reshape(x, (-1, c, kernel[0], oh, kernel[1], ow)), (0, 1, 2, 4, 3, 5))
    return _unbatch(ops.reshape(x, (-1, c * kernel[0] * kernel[1], oh * ow)), added)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's F.fold (col2im), unfold's adjoint: (N, C kH kW, L) or (C kH kW, L) -> (N, C,
    H, W), overlapping blocks summed."""
    fn = "fold"
    x, added = with_batch_dim(input, 3, fn, "(N, C * kH * kW, L)")
    check_known_dims(x, fn)
    size = _ints(output_size, 2, fn, "output_size", 1)
    kernel, dilation, padding, stride = _window_args(fn, kernel_size, dilation, padding, stride)
    oh, ow = _blocks(fn, size, kernel, dilation, padding, stride)
    taps = kernel[0] * kernel[1]
    if x.shape[1] % taps:
        raise ShapeError(
            f"{fn}: dim 1 of input {tuple(x.shape)} must be divisible by the kernel's "
            f"{kernel[0]} x {kernel[1]} = {taps} taps"
        )
    if x.shape[2] != oh * ow:
        raise ShapeError(
            f"{fn}: input {tuple(x.shape)} has {x.shape[2]} blocks; output_size {size} with "
            f"this kernel_size, dilation, padding and stride has {oh} x {ow} = {oh * ow}"
        )
    c = x.shape[1] // taps
    hp, wp = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
    x = ops.reshape(x, (-1, c, kernel[0], kernel[1], oh, ow))
    x = ops.reshape(ops.permute(x, (0, 1, 2, 4, 3, 5)), (-1, c, kernel[0] * oh, kernel[1] * ow))
    cols = _taps(kernel[1], dilation[1], stride[1], ow)
    rows = _taps(kernel[0], dilation[0], stride[0], oh)
    into = ops.zeros_like(_shaped_like(x, (c, kernel[0] * oh, wp)))
    x = ops.index_put(into, (ALL, ALL, ALL, _index(cols.ravel(), x)), x, accumulate=True)
    into = ops.zeros_like(_shaped_like(x, (c, hp, wp)))
    x = ops.index_put(into, (ALL, ALL, _index(rows.ravel(), x)), x, accumulate=True)
    if any(padding):
        crop = tuple(slice(p, p + n) for p, n in zip(padding, size))
        x = ops.getitem(x, (ALL, ALL, *crop))
    return _unbatch(x, added)


TRANSPOSE3D = Transposed(
    "conv_transpose3d",
    3,
    conv3d_input_grad,
    "(N, C_in, D, H, W)",
    "(in_channels, out_channels / groups, kD, kH, kW)",
)


@_complex_convolution
def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """PyTorch's F.conv_transpose3d: input (N, C_in, D, H, W) or (C_in, D, H, W), weight (C_in,
    C_out / groups, kD, kH, kW), bias (C_out,) or None; output depth (D - 1) stride - 2 padding
    + dilation (kD - 1) + output_padding + 1 (and so height and width)."""
    geometry = (stride, padding, output_padding, groups, dilation)
    return conv_transpose(TRANSPOSE3D, input, weight, bias, *geometry)


__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "unfold",
]
