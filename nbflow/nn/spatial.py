"""More of PyTorch's spatial functions, composed from nbflow's ops (so gradients, graph mode and
the GPU come with them): transposed convolutions, 1-d and adaptive max pools, pixel and channel
shuffles, unfold / fold, and pad's 'reflect', 'replicate' and 'circular' modes.

- conv_transpose2d is the op that computes conv2d's input gradient (`conv2d_input_grad`) with
  the roles arranged: its input is that op's output gradient, and PyTorch's transposed weight
  layout (in_channels, out_channels / groups, kH, kW) is conv2d's (O, C / groups, kH, kW). Its
  own gradients are then conv2d (for the input) and conv2d's weight gradient.
- The 1-d pools run the 2-d ones on a height-1 plane.
- Adaptive max pooling is separable: a bin's max is the max over its rows of the max over its
  columns. Each axis gathers its ragged bins into a rectangle (a short bin repeats its last
  index, which cannot change a max), takes argmax and picks the values there, so the gradient
  goes to one element, as PyTorch's.
- unfold gathers the taps of each axis with index_select; fold, its adjoint, scatters them back
  with index_put(accumulate=True). Index arrays are made in numpy, as constants.

Errors name the PyTorch function and its argument.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np

from .. import ops
from ..argcheck import integers
from ..core import UNKNOWN
from ..core.errors import AttrError, ShapeError
from ..eager.tensor import tensor as new_tensor
from ..ops.conv import _batched, conv2d_input_grad

ALL = slice(None)

# ---------------------------------------------------------------- helpers


def _ints(value, n, fn, name, minimum=None) -> tuple[int, ...]:
    """An int or an n-tuple of ints as an n-tuple, checked >= minimum."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n or not all(isinstance(v, (int, np.integer)) for v in values):
        raise AttrError(f"{fn}: {name} must be an int or {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in values):
        raise AttrError(f"{fn}: {name} must be >= {minimum}, got {value!r}")
    return tuple(int(v) for v in values)


def _known_dims(x, fn, start=1):
    if UNKNOWN in tuple(x.shape[start:]):
        raise ShapeError(f"{fn}: input of shape {tuple(x.shape)} needs known dims after the batch")


def _index(values, like):
    """An int64 tensor of `values` on `like`'s device (a graph value captures it as is)."""
    t = new_tensor(np.asarray(values, dtype=np.int64))
    device = getattr(like, "device", None)
    return t if device is None else t.to(device)


def _shaped_like(x, shape):
    """A stand-in of shape (x's batch, *shape) whose values are never read: a broadcast view
    of one element of x (no memory; an unknown batch dim stays unknown in graph mode)."""
    corner = ops.getitem(x, (ALL,) + (slice(0, 1),) * (x.ndim - 1))
    corner = ops.reshape(corner, (-1,) + (1,) * len(shape))
    return ops.broadcast_to(corner, (-1, *shape))


@contextlib.contextmanager
def _named(fn):
    """Errors from the ops underneath, prefixed with the PyTorch function the user called."""
    try:
        yield
    except (ShapeError, AttrError) as e:
        if str(e).startswith(f"{fn}:"):
            raise
        raise type(e)(f"{fn}: {e}") from None


def _unbatch(out, added):
    return ops.squeeze(out, 0) if added else out


# ---------------------------------------------------------------- transposed convolution


def _transposed_size(n, k, s, p, op, d) -> int:
    return (n - 1) * s - 2 * p + d * (k - 1) + op + 1


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
    x, added = _batched(input, n + 2, fn, kind.x_layout)
    _known_dims(x, fn)
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


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """PyTorch's F.conv_transpose1d: input (N, C_in, L) or (C_in, L), weight (C_in, C_out /
    groups, k); runs as conv_transpose2d of height 1."""
    fn = "conv_transpose1d"
    x, added = _batched(input, 3, fn, "(N, C_in, L)")
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
    output_size = tuple(output_size)[-k:]
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


# ---------------------------------------------------------------- 1-d pools


def _plane(x, fn):
    """(N, C, L) or (C, L) as a height-1 plane (N, C, 1, L) or (C, 1, L)."""
    if x.ndim not in (2, 3):
        raise ShapeError(f"{fn}: input of shape {tuple(x.shape)} must be (N, C, L) or (C, L)")
    return ops.unsqueeze(x, x.ndim - 1)


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """PyTorch's F.max_pool1d on (N, C, L) or (C, L); return_indices also returns the int64
    position of each maximum along L."""
    fn = "max_pool1d"
    (k,) = _ints(kernel_size, 1, fn, "kernel_size", 1)
    (s,) = (k,) if stride is None else _ints(stride, 1, fn, "stride", 1)
    (p,), (d,) = _ints(padding, 1, fn, "padding", 0), _ints(dilation, 1, fn, "dilation", 1)
    with _named(fn):
        out, indices = ops.max_pool2d(
            _plane(input, fn), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices=True
        )
    out, indices = ops.squeeze(out, -2), ops.squeeze(indices, -2)
    return (out, indices) if return_indices else out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """PyTorch's F.avg_pool1d on (N, C, L) or (C, L)."""
    fn = "avg_pool1d"
    (k,) = _ints(kernel_size, 1, fn, "kernel_size", 1)
    (s,) = (k,) if stride is None else _ints(stride, 1, fn, "stride", 1)
    (p,) = _ints(padding, 1, fn, "padding", 0)
    with _named(fn):
        out = ops.avg_pool2d(
            _plane(input, fn), (1, k), (1, s), (0, p), ceil_mode, count_include_pad
        )
    return ops.squeeze(out, -2)


def adaptive_avg_pool1d(input, output_size):
    """PyTorch's F.adaptive_avg_pool1d on (N, C, L) or (C, L)."""
    fn = "adaptive_avg_pool1d"
    (size,) = _ints(output_size, 1, fn, "output_size", 1)
    with _named(fn):
        out = ops.adaptive_avg_pool2d(_plane(input, fn), (1, size))
    return ops.squeeze(out, -2)


# ---------------------------------------------------------------- adaptive max pools


def _bins(n, m):
    """PyTorch's adaptive bins of n positions into m: bin i is [floor(i n / m), ceil((i + 1) n
    / m)). Returns the starts and an (m, longest bin) index array, short bins repeating their
    last index."""
    from ..core.errors import ResourceExhaustedError
    from ..eager.checking import get_memory_budget

    if m * 8 > get_memory_budget():  # (numpy reserved 8 TiB for 2**40 bins: MemoryError)
        raise ResourceExhaustedError(
            f"adaptive max pool: {m} output positions need {m * 8} bytes of bin starts, over "
            f"the memory budget of {get_memory_budget()} bytes"
        )
    i = np.arange(m)
    starts, ends = (i * n) // m, -(-((i + 1) * n) // m)
    taps = np.arange(int((ends - starts).max()))
    return starts, np.minimum(starts[:, None] + taps, ends[:, None] - 1)


def _adaptive_max_axis(x, axis, m, riders=()):
    """Max over the adaptive bins of `axis` (m bins): the values, the source index along the
    axis of each max, and each `rider` (a tensor shaped as x) taken at the same places."""
    starts, index = _bins(x.shape[axis], m)
    taps = index.shape[1]
    shape = tuple(x.shape[:axis]) + (m, taps) + tuple(x.shape[axis + 1 :])
    shape = (-1,) + shape[1:]  # the batch dim may be unknown in graph mode

    def gather(t):
        return ops.reshape(ops.index_select(t, axis, _index(index.ravel(), x)), shape)

    windows = gather(x)
    best = ops.argmax(windows, axis=axis + 1, keepdims=True)

    def pick(t):
        return ops.squeeze(ops.take_along_axis(t, best, axis + 1), axis + 1)

    where = [1] * x.ndim
    where[axis] = m
    source = ops.squeeze(best, axis + 1) + ops.reshape(_index(starts, x), where)
    return pick(windows), source, [pick(gather(r)) for r in riders]


def _adaptive_sizes(x, output_size, k, fn):
    if x.ndim not in (k + 1, k + 2):
        layout = "(N, C, L) or (C, L)" if k == 1 else "(N, C, H, W) or (C, H, W)"
        raise ShapeError(f"{fn}: input of shape {tuple(x.shape)} must be {layout}")
    _known_dims(x, fn, x.ndim - k)
    if hasattr(output_size, "ndim"):  # a tensor or an array: its ints
        ints = integers(output_size, f"{fn}: output_size")
        output_size = ints[0] if output_size.ndim == 0 else ints
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * k
    if len(sizes) != k:
        raise AttrError(f"{fn}: output_size must be an int or {k} ints, got {output_size!r}")
    sizes = tuple(n if s is None else s for n, s in zip(x.shape[-k:], sizes))
    _ints(sizes, k, fn, "output_size", 1)
    if 0 in tuple(x.shape[-k:]):
        raise ShapeError(f"{fn}: input of shape {tuple(x.shape)} has an empty spatial dim")
    return sizes


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """PyTorch's F.adaptive_max_pool1d on (N, C, L) or (C, L); return_indices also returns the
    int64 position of each maximum along L."""
    (size,) = _adaptive_sizes(input, output_size, 1, "adaptive_max_pool1d")
    out, indices, _ = _adaptive_max_axis(input, input.ndim - 1, size)
    return (out, indices) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """PyTorch's F.adaptive_max_pool2d on (N, C, H, W) or (C, H, W); output_size an int or a
    pair, where None keeps the input's size; return_indices also returns the int64 flat index
    into the H x W plane of each maximum."""
    oh, ow = _adaptive_sizes(input, output_size, 2, "adaptive_max_pool2d")
    if not isinstance(return_indices, (bool, np.bool_)):
        raise AttrError(
            f"adaptive_max_pool2d: return_indices must be a bool, got {return_indices!r}"
        )
    h_axis, w_axis = input.ndim - 2, input.ndim - 1
    out, cols, _ = _adaptive_max_axis(input, w_axis, ow)
    out, rows, (cols,) = _adaptive_max_axis(out, h_axis, oh, riders=(cols,))
    return (out, rows * input.shape[w_axis] + cols) if return_indices else out


# ---------------------------------------------------------------- pixel and channel shuffles


def _factor(value, fn, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise AttrError(f"{fn}: {name} must be a positive int, got {value!r}")
    return int(value)


def pixel_shuffle(input, upscale_factor):
    """PyTorch's F.pixel_shuffle: (*, C r^2, H, W) -> (*, C, H r, W r)."""
    fn = "pixel_shuffle"
    r = _factor(upscale_factor, fn, "upscale_factor")
    if input.ndim < 3:
        raise ShapeError(f"{fn}: input of shape {tuple(input.shape)} needs at least 3 dims")
    _known_dims(input, fn, input.ndim - 3)
    lead, (c, h, w) = tuple(input.shape[:-3]), tuple(input.shape[-3:])
    if c % (r * r):
        raise ShapeError(
            f"{fn}: {c} channels of input {tuple(input.shape)} are not divisible by "
            f"upscale_factor**2 = {r * r}"
        )
    b = len(lead)
    x = ops.reshape(input, lead + (c // (r * r), r, r, h, w))
    x = ops.permute(x, tuple(range(b)) + tuple(b + a for a in (0, 3, 1, 4, 2)))
    return ops.reshape(x, lead + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """PyTorch's F.pixel_unshuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    fn = "pixel_unshuffle"
    r = _factor(downscale_factor, fn, "downscale_factor")
    if input.ndim < 3:
        raise ShapeError(f"{fn}: input of shape {tuple(input.shape)} needs at least 3 dims")
    _known_dims(input, fn, input.ndim - 3)
    lead, (c, h, w) = tuple(input.shape[:-3]), tuple(input.shape[-3:])
    if h % r or w % r:
        raise ShapeError(
            f"{fn}: height and width of input {tuple(input.shape)} must be divisible by "
            f"downscale_factor={r}"
        )
    b = len(lead)
    x = ops.reshape(input, lead + (c, h // r, r, w // r, r))
    x = ops.permute(x, tuple(range(b)) + tuple(b + a for a in (0, 2, 4, 1, 3)))
    return ops.reshape(x, lead + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """PyTorch's F.channel_shuffle: (N, C, *) with C = groups x k: channel g k + i moves to
    i groups + g."""
    fn = "channel_shuffle"
    g = _factor(groups, fn, "groups")
    if input.ndim < 3:
        raise ShapeError(f"{fn}: input of shape {tuple(input.shape)} needs at least 3 dims")
    _known_dims(input, fn)
    c, rest = input.shape[1], tuple(input.shape[2:])
    if c % g:
        raise ShapeError(f"{fn}: {c} channels are not divisible by groups={g}")
    x = ops.reshape(input, (-1, g, c // g) + rest)
    return ops.reshape(ops.transpose(x, 1, 2), (-1, c) + rest)


# ---------------------------------------------------------------- unfold and fold


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
    x, added = _batched(input, 4, fn, "(N, C, H, W)")
    _known_dims(x, fn)
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
    x, added = _batched(input, 3, fn, "(N, C * kH * kW, L)")
    _known_dims(x, fn)
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


# ---------------------------------------------------------------- pad modes


def _pad_index(n, before, after, mode, fn):
    """Where each padded position reads from along an axis of length n."""
    j = np.arange(-before, n + after)  # (a negative width crops, as PyTorch's)
    if j.size == 0:
        raise ShapeError(f"{fn}: padding ({before}, {after}) leaves nothing of a dim of {n}")
    if mode == "reflect":
        if max(before, after) >= n:
            raise ShapeError(
                f"{fn}: 'reflect' padding ({before}, {after}) must be smaller than the dim ({n})"
            )
        return np.abs(n - 1 - np.abs(n - 1 - np.abs(j)))
    if mode == "replicate":
        if n == 0:
            raise ShapeError(f"{fn}: 'replicate' padding of an empty dim")
        return np.clip(j, 0, n - 1)
    # PyTorch crops a negative side first, then wraps around what is left
    low, m = max(-before, 0), n - max(-before, 0) - max(-after, 0)
    if max(before, after) > m:
        raise ShapeError(
            f"{fn}: 'circular' padding ({before}, {after}) wraps around more than once (dim {n})"
        )
    return low + np.arange(-max(before, 0), m + max(after, 0)) % m


def pad_modes(input, pad, mode):
    """F.pad's 'reflect', 'replicate' and 'circular' modes: `pad` holds (before, after) pairs
    from the last dim backwards; k pairs pad k dims of a (k + 1)- or (k + 2)-D input, as
    PyTorch's."""
    fn = "pad"
    if mode not in ("reflect", "replicate", "circular"):
        raise AttrError(
            f"{fn}: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}"
        )
    pad = tuple(pad)
    k = len(pad) // 2
    if len(pad) % 2 or not 1 <= k <= 3 or not all(isinstance(p, (int, np.integer)) for p in pad):
        raise AttrError(f"{fn}: mode {mode!r} takes 2, 4 or 6 ints as pad, got {pad!r}")
    if input.ndim not in (k + 1, k + 2):
        raise ShapeError(
            f"{fn}: mode {mode!r} with {len(pad)} pad values takes a {k + 1}-D or {k + 2}-D "
            f"input, got shape {tuple(input.shape)}"
        )
    _known_dims(input, fn, input.ndim - k)
    x = input
    for i in range(k):
        axis, (before, after) = x.ndim - 1 - i, pad[2 * i : 2 * i + 2]
        if before or after:
            index = _pad_index(x.shape[axis], before, after, mode, fn)
            x = ops.index_select(x, axis, _index(index, x))
    return x


__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "channel_shuffle",
    "conv_transpose1d",
    "conv_transpose2d",
    "fold",
    "max_pool1d",
    "pad_modes",
    "pixel_shuffle",
    "pixel_unshuffle",
    "transposed_output_padding",
    "unfold",
]
