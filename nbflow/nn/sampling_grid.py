"""PyTorch's sampling-grid functions and the 1-d / 2-d pools nbflow lacked, composed from
nbflow's ops (so gradients and graph mode come with them): affine_grid and grid_sample,
max_unpool, lp_pool, fractional_max_pool2d, rrelu, pdist, the deprecated upsample aliases and
the `*_with_indices` pool aliases, with their modules.

- grid_sample turns each output point into a few taps of the input (the corners around it, or
  the nearest pixel, or a 4 x 4 bicubic neighbourhood), each an integer position per axis and a
  weight. All taps are read with one take_along_axis on the flattened (N, C, H W) input, so the
  input's gradient is that gather's (a scatter-add) and the grid's flows through the weights
  (floor has none), as PyTorch's. Padding follows PyTorch's grid_sampler_compute_source_index:
  'border' clamps a coordinate, 'reflection' folds it back into the image, then clamps; both
  with PyTorch's zero gradient at the clamp bounds. 'zeros' masks the taps outside.
- max_unpool scatters each value to its flat plane index; fractional_max_pool2d gathers its
  windows (at PyTorch's pseudo-random interval starts) and takes their argmax.

Errors name the PyTorch function and its argument.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from .. import ops
from ..argcheck import integers, real
from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError, ShapeError
from ..ops.conv import _batched
from . import functional as _functional  # (at call time: functional imports this module)
from . import spatial as _spatial
from .module import Module
from .spatial import _index, _ints, _known_dims, _shaped_like, _unbatch

# ---------------------------------------------------------------- helpers


def _align_corners(align_corners, fn):
    """PyTorch's default None: False, with PyTorch's warning."""
    if align_corners is None:
        warnings.warn(
            f"{fn}: default grid_sample and affine_grid behavior has changed to "
            "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
            "behavior is desired. See the documentation of grid_sample for details.",
            stacklevel=4,
        )
        return False
    return bool(align_corners)


def _floats(x, fn, what="input"):
    if not dt.is_float(x.dtype):
        raise DTypeError(f"{fn}: expected {what} to have a floating point dtype, got {x.dtype}")


def _float_const(values, like):
    """A float constant in like's dtype, on like's device."""
    return _functional._constant(values, like.dtype, like)


# ---------------------------------------------------------------- affine_grid


def _linspace(n, align_corners):
    """PyTorch's linspace_from_neg_one: n points across [-1, 1] (pixel corners with
    align_corners, else pixel centres), one point at 0."""
    if n <= 1:
        return np.zeros(max(n, 0))
    r = np.linspace(-1.0, 1.0, n)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """PyTorch's F.affine_grid: the sampling grid of a batch of affine maps, theta (N, 2, 3)
    for size (N, C, H, W) -> (N, H, W, 2), or theta (N, 3, 4) for size (N, C, D, H, W) -> (N, D,
    H, W, 3); each point is theta @ (x, y[, z], 1) over the output's normalised coordinates."""
    fn = "affine_grid"
    align_corners = _align_corners(align_corners, fn)
    _floats(theta, fn, "theta")
    size = integers(size, f"{fn}: size")
    if len(size) not in (4, 5):
        raise ShapeError(
            f"{fn}: only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively; got size {size}"
        )
    k = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[-2:]) != (k, k + 1):
        raise ShapeError(
            f"{fn}: expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size "
            f"{size}, got theta of shape {tuple(theta.shape)}"
        )
    if min(size) <= 0:
        raise ShapeError(f"{fn}: expected a non-zero, positive output size, got {size}")
    if theta.shape[0] not in (size[0], UNKNOWN):
        raise ShapeError(
            f"{fn}: theta of shape {tuple(theta.shape)} holds {theta.shape[0]} matrices for a "
            f"batch of {size[0]} (size {size})"
        )
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(
            f"{fn}: since version 1.3.0, affine_grid behavior has changed for unit-size grids "
            "when align_corners=True. This is not an intended use case of affine_grid.",
            stacklevel=3,
        )
    axes = np.meshgrid(*[_linspace(n, align_corners) for n in spatial], indexing="ij")
    # (x, y[, z], 1) per point: x runs along the last dim
    base = np.stack([*axes[::-1], np.ones(spatial)], axis=-1).reshape(-1, k + 1)
    grid = ops.matmul(_float_const(base, theta), ops.transpose(theta, 1, 2))
    return ops.reshape(grid, (-1, *spatial, k))


# ---------------------------------------------------------------- grid_sample

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution constant


def _check_grid(input, grid, mode, padding_mode, fn):
    if mode not in _MODES:
        raise AttrError(f"{fn}: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise AttrError(
            f"{fn}: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}"
        )
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise ShapeError(
            f"{fn}: expected 4D or 5D input and grid with the same number of dims, got input "
            f"of shape {tuple(input.shape)} and grid of shape {tuple(grid.shape)}"
        )
    k = input.ndim - 2
    if grid.shape[-1] != k:
        raise ShapeError(
            f"{fn}: expected grid of a {input.ndim}D input to have size {k} in its last dim, "
            f"got grid of shape {tuple(grid.shape)}"
        )
    if UNKNOWN not in (input.shape[0], grid.shape[0]) and input.shape[0] != grid.shape[0]:
        raise ShapeError(
            f"{fn}: expected input and grid to have the same batch size, got input of shape "
            f"{tuple(input.shape)} and grid of shape {tuple(grid.shape)}"
        )
    _known_dims(input, fn)
    _known_dims(grid, fn)
    if 0 in tuple(input.shape[2:]):
        raise ShapeError(f"{fn}: expected non-empty spatial dims, got input {tuple(input.shape)}")
    _floats(input, fn)
    if input.dtype != grid.dtype:
        raise DTypeError(
            f"{fn}: expected input and grid to have the same dtype, got {input.dtype} and "
            f"{grid.dtype}"
        )
    if mode == "bicubic" and k == 3:
        raise AttrError(f"{fn}: mode 'bicubic' only supports 4D input, got {tuple(input.shape)}")


def _unnormalize(coord, size, align_corners):
    """Grid coordinates in [-1, 1] to pixel positions (PyTorch's grid_sampler_unnormalize):
    -1 and 1 are the corner pixels' centres with align_corners, else their outer edges."""
    if align_corners:
        return (coord + 1.0) / 2.0 * (size - 1)
    return ((coord + 1.0) * size - 1.0) / 2.0


def _clamp(x, size):
    """x clamped into [0, size - 1], its gradient 0 at and past the bounds (PyTorch's
    clip_coordinates_set_grad)."""
    return ops.where(x > 0, ops.where(x < size - 1, x, float(size - 1)), 0.0)


def _reflect(x, twice_low, twice_high):
    """x folded back into [low, high] by reflections at the bounds (PyTorch's
    reflect_coordinates; the bounds are given doubled so that they stay integers)."""
    if twice_low == twice_high:
        return x * 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = x - low
    x = ops.where(x < 0, -x, x)
    flips = ops.floor(x / span)
    extra = ops.fmod(x, span)
    even = ops.fmod(flips, 2.0) == 0
    return ops.where(even, extra + low, (span + low) - extra)


def _pad(x, size, padding_mode, align_corners):
    """A pixel position after PyTorch's padding rule (compute_coordinates)."""
    if padding_mode == "border":
        return _clamp(x, size)
    if padding_mode == "reflection":
        bounds = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        return _clamp(_reflect(x, *bounds), size)
    return x


def _cubic_weights(t):
    """The weights of the four taps at -1, 0, 1, 2 around a point t past the first pixel
    (Keys' cubic convolution with A = -0.75, PyTorch's get_cubic_upsample_coefficients)."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((x * (a + 2) - (a + 3)) * x) * x + 1.0

    def far(x):  # 1 < |x| < 2
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _axis_taps(coord, size, mode, padding_mode, align_corners):
    """The taps along one axis: (position, weight or None) pairs, a position a float tensor
    of whole numbers (possibly outside [0, size - 1] for 'zeros' padding)."""
    x = _unnormalize(coord, size, align_corners)
    if mode == "bicubic":  # padding applies to each tap's position (get_value_bounded)
        first = ops.floor(x)
        weights = _cubic_weights(x - first)
        return [
            (_pad(first + (i - 1.0), size, padding_mode, align_corners), w)
            for i, w in enumerate(weights)
        ]
    x = _pad(x, size, padding_mode, align_corners)
    if mode == "nearest":
        return [(ops.round(x), None)]  # (halves to even: PyTorch's nearbyint)
    low = ops.floor(x)
    frac = x - low
    return [(low, 1.0 - frac), (low + 1.0, frac)]


def _gather_taps(input, taps, sizes):
    """sum over taps of weight * input at the tap ((N, C, P) from (N, C, *spatial)); taps is
    one list per axis, x (the last dim) first. A tap outside the input (or at a NaN
    coordinate) reads 0 (read at index 0, then masked; a NaN weight still makes NaN, as in
    PyTorch)."""
    n_points = taps[0][0][0].shape[-1]
    strides = [math.prod(sizes[:d]) for d in range(len(sizes))]
    indices, inside, weights = [], [], []
    for combo in itertools.product(*taps):
        flat, ok, weight = 0, None, None
        for (pos, w), size, stride in zip(combo, sizes, strides):
            within = ops.logical_and(pos >= 0, pos <= size - 1)
            ok = within if ok is None else ops.logical_and(ok, within)
            flat = flat + ops.where(within, pos, 0.0).astype(dt.int64) * stride
            weight = w if weight is None else weight * w  # (nearest: None throughout)
        indices.append(flat)
        inside.append(ok)
        weights.append(weight)
    count, channels = len(indices), input.shape[1]

    def stacked(parts):  # (N, 1, taps, points)
        return ops.reshape(ops.stack(parts, axis=1), (-1, 1, count, n_points))

    index = ops.reshape(stacked(indices), (-1, 1, count * n_points))
    values = ops.take_along_axis(ops.reshape(input, (-1, channels, math.prod(sizes))), index, 2)
    values = ops.where(stacked(inside), ops.reshape(values, (-1, channels, count, n_points)), 0.0)
    if weights[0] is None:  # nearest: one tap
        return ops.squeeze(values, 2)
    return ops.sum(values * stacked(weights), axis=2)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """PyTorch's F.grid_sample: input (N, C, H, W) sampled at grid (N, Ho, Wo, 2) -> (N, C, Ho,
    Wo), or (N, C, D, H, W) at (N, Do, Ho, Wo, 3) -> (N, C, Do, Ho, Wo); grid[..., 0] is x
    (along W), [..., 1] y, [..., 2] z, each in [-1, 1]. mode 'bilinear' (trilinear for 5-D),
    'nearest' or 'bicubic' (4-D only); padding_mode 'zeros', 'border' or 'reflection'.
    Differentiable in input, and in grid for 'bilinear' and 'bicubic' ('nearest': zero)."""
    fn = "grid_sample"
    _check_grid(input, grid, mode, padding_mode, fn)
    align_corners = _align_corners(align_corners, fn)
    k = input.ndim - 2
    out_spatial = tuple(grid.shape[1:-1])
    points = math.prod(out_spatial)
    sizes = tuple(input.shape[2:])[::-1]  # (W, H[, D]): grid order
    taps = [
        _axis_taps(
            ops.reshape(grid[..., d], (-1, points)), sizes[d], mode, padding_mode, align_corners
        )
        for d in range(k)
    ]
    out = _gather_taps(input, taps, sizes)
    return ops.reshape(out, (-1, input.shape[1], *out_spatial))


# ---------------------------------------------------------------- max_unpool


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
    x, added = _batched(input, k + 2, fn, layout)
    if tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(
            f"{fn}: expected indices of the input's shape {tuple(input.shape)}, got "
            f"{tuple(indices.shape)}"
        )
    if indices.dtype != dt.int64:
        raise DTypeError(f"{fn}: expected int64 indices, got {indices.dtype}")
    _known_dims(x, fn)
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


# ---------------------------------------------------------------- lp_pool


def _lp_pool(fn, input, norm_type, kernel, stride, ceil_mode, max_pool, avg_pool):
    """PyTorch's rule: p = +-inf is the max (min) of |x| over each window; otherwise
    (sign(mean) relu(|mean|) count)^(1 / p), the mean of x^p over each window times the
    kernel's count (so a ceil_mode window cut at the edge keeps the full count, as PyTorch's)."""
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
    pools = (_spatial.max_pool1d, _spatial.avg_pool1d)
    return _lp_pool("lp_pool1d", input, norm_type, k, stride, ceil_mode, *pools)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """PyTorch's F.lp_pool2d: (sum over each window of x^p)^(1 / p) on (N, C, H, W) or (C, H,
    W)."""
    kernel = _ints(kernel_size, 2, "lp_pool2d", "kernel_size", 1)
    pools = (ops.max_pool2d, ops.avg_pool2d)
    return _lp_pool("lp_pool2d", input, norm_type, kernel, stride, ceil_mode, *pools)


# ---------------------------------------------------------------- fractional_max_pool2d


def _interval_starts(sample, n, m, k, like):
    """PyTorch's generate_intervals: the m window starts of a fractional pool of windows k over
    n, for one uniform sample u per plane ((N, C) -> (N, C, m)): floor((i + u) alpha) -
    floor(u alpha) for i < m - 1, alpha = (n - k) / (m - 1), and n - k last."""
    last = ops.full_like(ops.unsqueeze(sample, -1), float(n - k))
    if m == 1:
        return last
    dtype = np.dtype(like.dtype)
    alpha = float(dtype.type(n - k) / dtype.type(m - 1))  # (in the input's dtype, as PyTorch)
    i = _float_const(np.arange(m - 1), like)
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
    x, added = _batched(input, 4, fn, "(N, C, H, W)")
    _known_dims(x, fn, 0)
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


# ---------------------------------------------------------------- rrelu, pdist


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):
    """PyTorch's F.rrelu: x where x > 0, else x * a; while training a is drawn uniformly from
    [lower, upper] per element (from `generator`, or the default generator), in eval a is the
    mean slope (lower + upper) / 2. The gradient is the slope used."""
    lower, upper = real(lower, "rrelu: lower"), real(upper, "rrelu: upper")
    if lower > upper:
        raise AttrError(f"rrelu: lower bound {lower} must be at most the upper bound {upper}")
    if not training:
        return _functional.leaky_relu(input, (lower + upper) / 2, inplace)

    def fn(x):
        slope = ops.rand_like(x, generator=generator) * (upper - lower) + lower
        return ops.where(x > 0, x, x * slope)

    return _functional._maybe_inplace(input, fn, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training, True, generator)


def pdist(input, p=2):
    """PyTorch's F.pdist: the p-norm distances between the rows of an (N, M) input, pair (i, j)
    for i < j in row-major order, (N (N - 1) / 2,). The gradient is 0 where two rows are equal
    (and, for p < 1, along a coordinate where they agree), as PyTorch's."""
    fn = "pdist"
    if input.ndim != 2:
        raise ShapeError(f"{fn}: only supports 2D tensors, got {input.ndim}D {tuple(input.shape)}")
    _floats(input, fn)
    if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, bool) or p < 0:
        raise AttrError(f"{fn}: only supports non-negative p values, got {p!r}")
    _known_dims(input, fn, 0)
    first, second = np.triu_indices(input.shape[0], 1)
    diff = ops.index_select(input, 0, _index(first, input)) - ops.index_select(
        input, 0, _index(second, input)
    )
    if p == 0 or math.isinf(p):
        return ops.norm(diff, p, axis=1)
    size = ops.abs(diff)
    nonzero = size > 0
    powered = ops.where(nonzero, ops.where(nonzero, size, 1.0) ** p, 0.0)
    total = ops.sum(powered, axis=1)
    positive = total > 0
    return ops.where(positive, ops.where(positive, total, 1.0) ** (1.0 / p), 0.0)


# ---------------------------------------------------------------- deprecated aliases


def _deprecated(name):
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=4,
    )


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's deprecated F.upsample: F.interpolate."""
    _deprecated("upsample")
    return _functional.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """PyTorch's deprecated F.upsample_nearest: F.interpolate with mode 'nearest'."""
    _deprecated("upsample_nearest")
    return _functional.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """PyTorch's deprecated F.upsample_bilinear: F.interpolate with mode 'bilinear' and
    align_corners=True."""
    _deprecated("upsample_bilinear")
    return _functional.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """max_pool1d's values and indices (return_indices is PyTorch's, ignored)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    return _spatial.max_pool1d(input, *args, return_indices=True)


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """max_pool2d's values and indices (return_indices is PyTorch's, ignored)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    return ops.max_pool2d(input, *args, return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool1d's values and indices (return_indices is PyTorch's, ignored)."""
    return _spatial.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool2d's values and indices (return_indices is PyTorch's, ignored)."""
    return _spatial.adaptive_max_pool2d(input, output_size, return_indices=True)


# ---------------------------------------------------------------- modules


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
        return max_unpool1d(input, indices, *args)


class MaxUnpool2d(_MaxUnpoolNd):
    """max_pool2d's partial inverse: forward(input, indices, output_size=None)."""

    def forward(self, input, indices, output_size=None):
        args = (self.kernel_size, self.stride, self.padding, output_size)
        return max_unpool2d(input, indices, *args)


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
        return lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """(sum over each window of x^p)^(1 / p) over H and W."""

    def forward(self, input):
        return lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


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
            if not all(0 < r < 1 for r in ratios):
                raise AttrError(f"{name}: output_ratio must be between 0 and 1, got {output_ratio}")
        self.kernel_size, self.output_size = kernel_size, output_size
        self.output_ratio = output_ratio
        self.return_indices, self._random_samples = return_indices, _random_samples

    def forward(self, input):
        return fractional_max_pool2d(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples,
        )  # fmt: skip

    def extra_repr(self) -> str:
        if self.output_size is not None:
            return f"kernel_size={self.kernel_size}, output_size={self.output_size}"
        return f"kernel_size={self.kernel_size}, output_ratio={self.output_ratio}"


class RReLU(Module):
    """Randomized leaky ReLU (F.rrelu): a slope drawn uniformly from [lower, upper] for each
    negative element while training, the mean slope (lower + upper) / 2 in eval mode."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False, generator=None):
        super().__init__()
        if lower > upper:
            raise AttrError(f"RReLU: lower bound {lower} must be at most the upper bound {upper}")
        self.lower, self.upper, self.inplace, self.generator = lower, upper, inplace, generator

    def forward(self, input):
        args = (self.lower, self.upper, self.training, self.inplace, self.generator)
        return rrelu(input, *args)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else ""
        )


FUNCTIONS = [
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "affine_grid",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "grid_sample",
    "lp_pool1d",
    "lp_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "pdist",
    "rrelu",
    "rrelu_",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]
LAYERS = ["FractionalMaxPool2d", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d", "RReLU"]
__all__ = FUNCTIONS + LAYERS
