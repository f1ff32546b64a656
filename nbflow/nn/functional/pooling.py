"""Pools: max, average, adaptive, lp, fractional and unpooling, in 1, 2 and 3 dims, composed from
nbflow's 2-D pooling ops (so gradients, graph mode and the GPU come with them).

- The 1-d pools run the 2-d ones on a height-1 plane.
- Adaptive max pooling is separable: a bin's max is the max over its rows of the max over its
  columns. Each axis gathers its ragged bins into a rectangle (a short bin repeats its last
  index, which cannot change a max), takes argmax and picks the values there, so the gradient
  goes to one element, as PyTorch's.
- The 3-D pools are separable too: the max (or sum) over a (kD, kH, kW) box is the max (sum)
  over kD of the max (sum) over each (kH, kW) window. One 2-D pool runs over the (H, W) planes
  of x viewed as (N, C * D, H, W); a second runs with a (kD, 1) window over the (D, oH * oW)
  planes of that result viewed as (N, C, D, oH * oW). Both views are free reshapes. The second
  stage's argmax picks the depth, whose first stage's argmax gives the plane position: the
  first maximum in (d, h, w) order, as PyTorch's scan finds it. An average's divisor is a
  product over the axes too (the window clipped to the padded input, or to the input without
  count_include_pad), so the two stages divide in turn; divisor_override divides once, in the
  first.
- max_unpool scatters each value to its flat plane index; fractional_max_pool gathers its
  windows (at PyTorch's pseudo-random interval starts) and takes their argmax.

Errors name the PyTorch function and its argument, checked before the 2-D ops run."""

import math

import numpy as np

from ... import ops
from ...argcheck import flag, integers, tensors
from ...core import dtypes as dt
from ...core.errors import AttrError, DTypeError, ShapeError
from ...ops.conv import window_out_size, with_batch_dim
from .helpers import (
    LAYOUT,
    _index,
    _ints,
    _named,
    _shaped_like,
    _unbatch,
    check_known_dims,
    float_const,
)

# the same call as in PyTorch
adaptive_avg_pool2d = ops.adaptive_avg_pool2d


avg_pool2d = ops.avg_pool2d


max_pool2d = ops.max_pool2d


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


def _bins(n, m):
    """PyTorch's adaptive bins of n positions into m: bin i is [floor(i n / m), ceil((i + 1) n
    / m)). Returns the starts and an (m, longest bin) index array, short bins repeating their
    last index."""
    from ...core.errors import ResourceExhaustedError
    from ...eager.checking import get_memory_budget

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
    check_known_dims(x, fn, x.ndim - k)
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
    return (out, indices) if flag(return_indices, "adaptive_max_pool1d: return_indices") else out


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


def _unpool_size(input_size, kernel, stride, padding, output_size, fn):
    """PyTorch's _unpool_output_size: (n - 1) stride + kernel - 2 padding per dim, or the
    output_size given (its last len(kernel) entries), which must lie within a stride of it."""
    k = len(kernel)
    default = [
        (n - 1) * s + ks - 2 * p for n, ks, s, p in zip(input_size[-k:], kernel, stride, padding)
    ]
    if output_size is None:
        size = default
    else:
        size = [int(v) for v in output_size]
        if len(size) == k + 2:
            size = size[2:]
        if len(size) != k:
            raise ShapeError(
                f"{fn}: output_size should be a sequence of {k} or {k + 2} elements, got "
                f"{tuple(output_size)}"
            )
        for d, (want, n, s) in enumerate(zip(size, default, stride)):
            if not n - s < want < n + s:
                raise ShapeError(
                    f"{fn}: invalid output_size {tuple(output_size)} (dim {d} must be between "
                    f"{n - s} and {n + s}, exclusive)"
                )
    if min(size) <= 0:
        raise ShapeError(f"{fn}: the output size {tuple(size)} is not positive")
    return tuple(size)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, k, fn):
    layout = "(N, C, L)" if k == 1 else "(N, C, H, W)"
    kernel = _ints(kernel_size, k, fn, "kernel_size", 1)
    stride = kernel if stride is None else _ints(stride, k, fn, "stride", 1)
    padding = _ints(padding, k, fn, "padding", 0)
    x, added = with_batch_dim(input, k + 2, fn, layout)
    if tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(
            f"{fn}: expected indices of the input's shape {tuple(input.shape)}, got "
            f"{tuple(indices.shape)}"
        )
    if indices.dtype != dt.int64:
        raise DTypeError(f"{fn}: expected int64 indices, got {indices.dtype}")
    check_known_dims(x, fn)
    size = _unpool_size(tuple(x.shape), kernel, stride, padding, output_size, fn)
    channels, cells = x.shape[1], math.prod(x.shape[2:])
    flat = ops.reshape(x, (-1, channels, cells))
    where = ops.reshape(indices, (-1, channels, cells))
    plane = ops.zeros_like(_shaped_like(flat, (channels, math.prod(size))))
    out = ops.scatter(plane, 2, where, flat)  # (an index outside the plane: OutOfRangeError)
    return _unbatch(ops.reshape(out, (-1, channels, *size)), added)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """PyTorch's F.max_unpool1d: max_pool1d's partial inverse, (N, C, L) or (C, L) values put
    at their `indices` (from max_pool1d(return_indices=True)) in zeros of length (L - 1) stride
    - 2 padding + kernel_size, or output_size."""
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, *args, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """PyTorch's F.max_unpool2d: max_pool2d's partial inverse, (N, C, H, W) or (C, H, W)
    values put at their flat plane `indices` (from max_pool2d(return_indices=True)) in zeros of
    (H - 1) stride - 2 padding + kernel_size by the same for W, or output_size."""
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, *args, 2, "max_unpool2d")


def _lp_pool(fn, input, norm_type, kernel, stride, ceil_mode, max_pool, avg_pool):
    """PyTorch's rule: p = +-inf is the max (min) of |x| over each window; otherwise
    (sign(mean) relu(|mean|) count)^(1 / p), the mean of x^p over each window times the
    kernel's count (so a ceil_mode window cut at the edge keeps the full count, as PyTorch's)."""
    tensors(fn, input=input)
    number = isinstance(norm_type, (int, float, np.integer, np.floating))
    if not number or isinstance(norm_type, bool) or norm_type == 0:
        raise AttrError(f"{fn}: norm_type must be a non-zero number, got {norm_type!r}")
    if norm_type == math.inf:
        return max_pool(ops.abs(input), kernel, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-ops.abs(input), kernel, stride, 0, 1, ceil_mode)
    mean = avg_pool(input**norm_type, kernel, stride, 0, ceil_mode)
    count = math.prod(kernel) if isinstance(kernel, tuple) else kernel
    return (ops.sign(mean) * ops.relu(ops.abs(mean)) * count) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """PyTorch's F.lp_pool1d: (sum over each window of x^p)^(1 / p) on (N, C, L) or (C, L)."""
    (k,) = _ints(kernel_size, 1, "lp_pool1d", "kernel_size", 1)
    pools = (max_pool1d, avg_pool1d)
    return _lp_pool("lp_pool1d", input, norm_type, k, stride, ceil_mode, *pools)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """PyTorch's F.lp_pool2d: (sum over each window of x^p)^(1 / p) on (N, C, H, W) or (C, H,
    W)."""
    kernel = _ints(kernel_size, 2, "lp_pool2d", "kernel_size", 1)
    pools = (ops.max_pool2d, ops.avg_pool2d)
    return _lp_pool("lp_pool2d", input, norm_type, kernel, stride, ceil_mode, *pools)


def _interval_starts(sample, n, m, k, like):
    """PyTorch's generate_intervals: the m window starts of a fractional pool of windows k over
    n, for one uniform sample u per plane ((N, C) -> (N, C, m)): floor((i + u) alpha) -
    floor(u alpha) for i < m - 1, alpha = (n - k) / (m - 1), and n - k last."""
    last = ops.full_like(ops.unsqueeze(sample, -1), float(n - k))
    if m == 1:
        return last
    dtype = np.dtype(like.dtype)
    alpha = float(dtype.type(n - k) / dtype.type(m - 1))  # (in the input's dtype, as PyTorch)
    i = float_const(np.arange(m - 1), like)
    u = ops.unsqueeze(sample, -1)
    starts = ops.floor((i + u) * alpha) - ops.floor(u * alpha)
    return ops.concat([starts, last], axis=-1)


def _check_samples(samples, x, fn):
    want = (x.shape[0], x.shape[1], 2)
    if samples.ndim != 3 or tuple(samples.shape) != want:
        raise ShapeError(
            f"{fn}: expected _random_samples of shape {want} (N, C, 2), got {tuple(samples.shape)}"
        )
    if samples.dtype != x.dtype:
        raise DTypeError(
            f"{fn}: expected _random_samples of the input's dtype {x.dtype}, got {samples.dtype}"
        )


def fractional_max_pool2d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """fractional_max_pool2d's values and int64 flat plane indices."""
    fn = "fractional_max_pool2d"
    x, added = with_batch_dim(input, 4, fn, "(N, C, H, W)")
    check_known_dims(x, fn, 0)
    kh, kw = _ints(kernel_size, 2, fn, "kernel_size", 1)
    h, w = x.shape[2:]
    if output_size is None:
        if output_ratio is None:
            raise AttrError(f"{fn}: requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * 2
        if len(ratio) != 2:
            raise AttrError(f"{fn}: output_ratio must be a number or 2 numbers, got {ratio!r}")
        output_size = (int(h * ratio[0]), int(w * ratio[1]))
    oh, ow = _ints(output_size, 2, fn, "output_size", 1)
    if oh + kh - 1 > h or ow + kw - 1 > w:
        raise ShapeError(
            f"{fn}: kernel_size ({kh}, {kw}) + output_size ({oh}, {ow}) - 1 must be at most the "
            f"input's spatial size ({h}, {w})"
        )
    if _random_samples is None:
        device = getattr(x, "device", None)
        samples = ops.uniform((x.shape[0], x.shape[1], 2), dtype=x.dtype, device=device)
    else:
        samples = _random_samples
        _check_samples(samples, x, fn)
    # sample 0 places the columns, sample 1 the rows (PyTorch's order)
    cols = _interval_starts(samples[..., 0], w, ow, kw, x).astype(dt.int64)
    rows = _interval_starts(samples[..., 1], h, oh, kh, x).astype(dt.int64)
    taps_h, taps_w = _index(np.arange(kh), x), _index(np.arange(kw), x)
    row_taps = ops.unsqueeze(rows, -1) + taps_h  # (N, C, oh, kh)
    col_taps = ops.unsqueeze(cols, -1) + taps_w  # (N, C, ow, kw)
    windows = ops.take_along_axis(x, ops.reshape(row_taps, (-1, x.shape[1], oh * kh, 1)), 2)
    windows = ops.take_along_axis(windows, ops.reshape(col_taps, (-1, x.shape[1], 1, ow * kw)), 3)
    windows = ops.reshape(windows, (-1, x.shape[1], oh, kh, ow, kw))
    windows = ops.reshape(
        ops.permute(windows, (0, 1, 2, 4, 3, 5)), (-1, x.shape[1], oh, ow, kh * kw)
    )
    best = ops.argmax(windows, axis=-1, keepdims=True)  # (the first maximum, as PyTorch's)
    out = ops.squeeze(ops.take_along_axis(windows, best, 4), 4)
    best = ops.squeeze(best, 4)
    row = ops.unsqueeze(rows, -1) + ops.floor_div(best, kw)
    col = ops.unsqueeze(cols, -2) + ops.remainder(best, kw)
    return _unbatch(out, added), _unbatch(row * w + col, added)


def fractional_max_pool2d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """PyTorch's F.fractional_max_pool2d (Graham's fractional max pooling) on (N, C, H, W) or
    (C, H, W): max over kernel_size windows whose starts step pseudo-randomly so that
    output_size (or floor(input size * output_ratio)) windows span the input. The starts come
    from _random_samples (N, C, 2) in [0, 1), drawn uniformly (default generator) when None."""
    out, indices = fractional_max_pool2d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """max_pool1d's values and indices (return_indices is PyTorch's, ignored)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    return max_pool1d(input, *args, return_indices=True)


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """max_pool2d's values and indices (return_indices is PyTorch's, ignored)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    return ops.max_pool2d(input, *args, return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d's values and indices (return_indices is PyTorch's, ignored)."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d's values and indices (return_indices is PyTorch's, ignored)."""
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def _window(fn, input, kernel_size, stride, padding, dilation, ceil_mode, half):
    """The batched input and the checked triples (kernel, stride, padding, dilation) of a 3-D
    pool, with its output size; `half(k, d)` is the most padding a window allows."""
    x, added = with_batch_dim(input, 5, fn, LAYOUT)
    check_known_dims(x, fn)
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
        window_out_size(n, k, s, p, d, ceil_mode)
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
    if dt.as_dtype(x.dtype).kind in "biu":  # (PyTorch truncates the mean once)
        raise DTypeError(
            f"{fn}: integer input is not supported: its two 2-D passes would truncate twice"
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
    x, added = with_batch_dim(input, 5, fn, LAYOUT)
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


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """PyTorch's F.lp_pool3d: (sum over each window of x^p)^(1 / p) on (N, C, D, H, W) or (C,
    D, H, W)."""
    with_batch_dim(input, 5, "lp_pool3d", LAYOUT)
    kernel = _ints(kernel_size, 3, "lp_pool3d", "kernel_size", 1)
    pools = (max_pool3d, avg_pool3d)
    return _lp_pool("lp_pool3d", input, norm_type, kernel, stride, ceil_mode, *pools)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """PyTorch's F.max_unpool3d: max_pool3d's partial inverse, (N, C, D, H, W) or (C, D, H, W)
    values put at their flat volume `indices` (from max_pool3d(return_indices=True)) in zeros
    of (D - 1) stride - 2 padding + kernel_size (and so H and W), or output_size."""
    with_batch_dim(input, 5, "max_unpool3d", LAYOUT)
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, *args, 3, "max_unpool3d")


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """max_pool3d's values and indices (return_indices is PyTorch's, ignored)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    return max_pool3d(input, *args, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d's values and indices (return_indices is PyTorch's, ignored)."""
    return adaptive_max_pool3d(input, output_size, return_indices=True)


def _fractional_size(x, kernel, output_size, output_ratio, fn):
    if output_size is None:
        if output_ratio is None:
            raise AttrError(f"{fn}: requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * 3
        if len(ratio) != 3:
            raise AttrError(f"{fn}: output_ratio must be a number or 3 numbers, got {ratio!r}")
        output_size = tuple(int(n * r) for n, r in zip(x.shape[2:], ratio))
    size = _ints(output_size, 3, fn, "output_size", 1)
    if any(o + k - 1 > n for o, k, n in zip(size, kernel, x.shape[2:])):
        raise ShapeError(
            f"{fn}: kernel_size {kernel} + output_size {size} - 1 must be at most the input's "
            f"spatial size {tuple(x.shape[2:])}"
        )
    return size


def _samples(x, _random_samples, fn):
    want = (x.shape[0], x.shape[1], 3)
    if _random_samples is None:
        return ops.uniform(want, dtype=x.dtype, device=getattr(x, "device", None))
    samples = _random_samples
    if samples.ndim != 3 or tuple(samples.shape) != want:
        raise ShapeError(
            f"{fn}: expected _random_samples of shape {want} (N, C, 3), got {tuple(samples.shape)}"
        )
    if samples.dtype != x.dtype:
        raise DTypeError(
            f"{fn}: expected _random_samples of the input's dtype {x.dtype}, got {samples.dtype}"
        )
    return samples


def fractional_max_pool3d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """fractional_max_pool3d's values and int64 flat volume indices."""
    fn = "fractional_max_pool3d"
    x, added = with_batch_dim(input, 5, fn, LAYOUT)
    check_known_dims(x, fn, 0)
    kernel = _ints(kernel_size, 3, fn, "kernel_size", 1)
    size = _fractional_size(x, kernel, output_size, output_ratio, fn)
    samples = _samples(x, _random_samples, fn)
    c, spatial = x.shape[1], x.shape[2:]
    # sample a places the windows along spatial axis a (depth, height, width: PyTorch's order)
    windows, starts = x, []
    for a in range(3):
        n, m, k = spatial[a], size[a], kernel[a]
        start = _interval_starts(samples[..., a], n, m, k, x).astype(dt.int64)  # (N, C, m)
        starts.append(start)
        taps = ops.reshape(ops.unsqueeze(start, -1) + _index(np.arange(k), x), (-1, c, m * k))
        shape = [-1, c, 1, 1, 1]
        shape[2 + a] = m * k
        windows = ops.take_along_axis(windows, ops.reshape(taps, tuple(shape)), 2 + a)
    (od, oh, ow), (kd, kh, kw) = size, kernel
    windows = ops.reshape(windows, (-1, c, od, kd, oh, kh, ow, kw))
    windows = ops.reshape(
        ops.permute(windows, (0, 1, 2, 4, 6, 3, 5, 7)), (-1, c, *size, kd * kh * kw)
    )
    best = ops.argmax(windows, axis=-1, keepdims=True)  # (the first maximum, as PyTorch's)
    out = ops.squeeze(ops.take_along_axis(windows, best, 5), 5)
    best = ops.squeeze(best, 5)
    depth = ops.reshape(starts[0], (-1, c, od, 1, 1)) + ops.floor_div(best, kh * kw)
    row = ops.reshape(starts[1], (-1, c, 1, oh, 1)) + ops.remainder(ops.floor_div(best, kw), kh)
    col = ops.reshape(starts[2], (-1, c, 1, 1, ow)) + ops.remainder(best, kw)
    indices = (depth * spatial[1] + row) * spatial[2] + col
    return _unbatch(out, added), _unbatch(indices, added)


def fractional_max_pool3d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """PyTorch's F.fractional_max_pool3d on (N, C, D, H, W) or (C, D, H, W): max over
    kernel_size boxes whose starts step pseudo-randomly so that output_size (or floor(input
    size * output_ratio)) boxes span each axis; the starts come from _random_samples (N, C, 3)
    in [0, 1) (depth, height, width), drawn uniformly when None."""
    out, indices = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out


__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]
