"""Resampling and rearranging: interpolate (and the deprecated upsample aliases), affine_grid and
grid_sample, pad, and the pixel and channel shuffles, composed from nbflow's ops.

- grid_sample turns each output point into a few taps of the input (the corners around it, or
  the nearest pixel, or a 4 x 4 bicubic neighbourhood), each an integer position per axis and a
  weight. All taps are read with one take_along_axis on the flattened (N, C, H W) input, so the
  input's gradient is that gather's (a scatter-add) and the grid's flows through the weights
  (floor has none), as PyTorch's. Padding follows PyTorch's grid_sampler_compute_source_index:
  'border' clamps a coordinate, 'reflection' folds it back into the image, then clamps; both
  with PyTorch's zero gradient at the clamp bounds. 'zeros' masks the taps outside.

Errors name the PyTorch function and its argument."""

import itertools
import math
import warnings

import numpy as np

from ... import ops
from ...argcheck import choice, flag, integers, shown, within_budget
from ...core import UNKNOWN, is_int
from ...core import dtypes as dt
from ...core.errors import AttrError, DomainError, DTypeError, ShapeError, UnsupportedError
from .helpers import _constant, _index, check_known_dims, float_const
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

# the interpolating modes, each with the spatial dims it takes (None: any number)
MODES = {
    "nearest": None, "nearest-exact": None, "area": None,
    "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3,
}  # fmt: skip
CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """PyTorch's interpolate over the dims after (N, C), one pass per dim: 'nearest' (the
    source index floor(i * in / out)), 'nearest-exact' (floor((i + 0.5) * in / out)), 'linear',
    'bilinear', 'trilinear' and 'bicubic' (align_corners as PyTorch's, default False), and
    'area' (adaptive average pooling). With scale_factor, the source positions use 1 /
    scale_factor unless recompute_scale_factor, as PyTorch's. Composed from index_select, so it
    differentiates."""
    spatial = input.ndim - 2
    if spatial < 1:
        raise ShapeError(f"interpolate needs (N, C, ...) input, got shape {tuple(input.shape)}")
    choice(mode, tuple(MODES), "interpolate: mode")
    if (size is None) == (scale_factor is None):
        raise DomainError("interpolate: give exactly one of size and scale_factor")
    if MODES[mode] not in (None, spatial):
        raise ShapeError(f"interpolate: mode {mode!r} does not fit {spatial} spatial dims")
    if align_corners is not None and MODES[mode] is None:
        raise DomainError(
            "interpolate: align_corners can only be set with the interpolating modes "
            f"(linear, bilinear, bicubic, trilinear), not {mode!r}"
        )
    if flag(antialias, "interpolate: antialias"):
        raise UnsupportedError("interpolate: antialias=True is not supported")
    ins = input.shape[2:]
    if size is not None:
        outs = integers(size, "interpolate: size")
        outs = outs * spatial if len(outs) == 1 and not isinstance(size, (list, tuple)) else outs
        if len(outs) != spatial or not all(is_int(n) and n >= 1 for n in outs):
            raise DomainError(f"interpolate: output size {outs} for {spatial} spatial dims")
        ratios = [n / m for n, m in zip(ins, outs)]
    else:  # as PyTorch: the source position of output i uses 1 / scale_factor itself
        factors = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,)
        factors = factors * spatial if len(factors) == 1 else factors
        if len(factors) != spatial or not all(
            isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0 for f in factors
        ):
            raise DomainError(f"interpolate: scale_factor {scale_factor!r} for {spatial} dims")
        outs = tuple(int(math.floor(n * f)) for n, f in zip(ins, factors))
        if min(outs) < 1:
            raise DomainError(f"interpolate: output size {outs} for {spatial} spatial dims")
        recompute = flag(recompute_scale_factor, "interpolate: recompute_scale_factor")
        ratios = [n / m if recompute else 1.0 / f for n, m, f in zip(ins, outs, factors)]
    if mode == "area":  # (PyTorch's: adaptive average pooling, 1 to 3 spatial dims)
        if spatial > 3:
            raise ShapeError(f"interpolate: mode 'area' takes 1 to 3 spatial dims, not {spatial}")
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[spatial - 1]
        return pool(input, outs)
    x = input
    for d, (n_in, n_out, ratio) in enumerate(zip(ins, outs, ratios)):
        x = _resize_axis(x, 2 + d, n_in, n_out, ratio, mode, bool(align_corners))
    return x


def _resize_axis(x, axis, n_in, n_out, ratio, mode, align_corners):
    """x resampled from n_in to n_out along `axis` (`ratio`: input positions per output
    position): each output a weighted sum of input rows, whose indices and weights are worked
    out in numpy, as constants of the computation."""
    i = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        src = i * ratio if mode == "nearest" else (i + 0.5) * ratio
        return _taps(x, axis, [np.minimum(np.floor(src), n_in - 1)], [None], n_in)
    if align_corners:
        src = i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:  # (PyTorch clamps the linear modes' source at 0, not the cubic one's)
        src = (i + 0.5) * ratio - 0.5
        src = src if mode == "bicubic" else np.maximum(src, 0.0)
    low = np.floor(src)
    t = src - low
    if mode == "bicubic":
        return _taps(x, axis, [low - 1, low, low + 1, low + 2], _cubic_weights(t), n_in)
    return _taps(x, axis, [low, low + 1], [1 - t, t], n_in)


def _cubic_weights(t):
    """The four taps' weights of cubic convolution at fraction t (PyTorch's upsample_bicubic)."""
    a = CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(x, axis, indices, weights, n_in):
    """sum_k weights[k] * x gathered at indices[k] along axis (indices clamped into the input;
    a weight None: 1)."""
    shape = [1] * x.ndim
    shape[axis] = len(indices[0])
    out = None
    for index, weight in zip(indices, weights):
        rows = ops.index_select(x, axis, _constant(np.clip(index, 0, n_in - 1), np.int64, x))
        if weight is not None:
            rows = rows * _constant(weight.reshape(shape), x.dtype, x)
        out = rows if out is None else out + rows
    return out


def pad(input, pad, mode="constant", value=None):
    """PyTorch's pad: `pad` holds (before, after) pairs from the last dim backwards, so
    pad(x, (1, 1)) pads the last dim; mode 'constant' (with `value`), 'reflect', 'replicate'
    or 'circular' (pad_modes)."""
    pad = integers(pad, "pad: pad")
    if not isinstance(mode, str):
        raise AttrError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {shown(mode)}"
        )
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise UnsupportedError(f"pad: mode {mode!r} takes no value (got {value!r})")
        return pad_modes(input, pad, mode)
    if len(pad) % 2 or len(pad) > 2 * input.ndim:
        raise ShapeError(f"pad: {len(pad)} values for a tensor of {input.ndim} dims")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return ops.pad(input, pairs, value=0 if value is None else value, mode=mode)


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
    check_known_dims(input, fn, input.ndim - 3)
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
    check_known_dims(input, fn, input.ndim - 3)
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
    check_known_dims(input, fn)
    c, rest = input.shape[1], tuple(input.shape[2:])
    if c % g:
        raise ShapeError(f"{fn}: {c} channels are not divisible by groups={g}")
    x = ops.reshape(input, (-1, g, c // g) + rest)
    return ops.reshape(ops.transpose(x, 1, 2), (-1, c) + rest)


def _pad_index(n, before, after, mode, fn):
    """Where each padded position reads from along an axis of length n."""
    within_budget(fn, (n + before + after,), np.int64)  # (the index array np.arange makes)
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
    check_known_dims(input, fn, input.ndim - k)
    x = input
    for i in range(k):
        axis, (before, after) = x.ndim - 1 - i, pad[2 * i : 2 * i + 2]
        if before or after:
            index = _pad_index(x.shape[axis], before, after, mode, fn)
            x = ops.index_select(x, axis, _index(index, x))
    return x


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
    grid = ops.matmul(float_const(base, theta), ops.transpose(theta, 1, 2))
    return ops.reshape(grid, (-1, *spatial, k))


_MODES = ("bilinear", "nearest", "bicubic")


_PADDINGS = ("zeros", "border", "reflection")


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution constant


def _check_grid(input, grid, mode, padding_mode, fn):
    choice(mode, _MODES, f"{fn}: mode", AttrError)  # (`in` of an array: no truth value)
    choice(padding_mode, _PADDINGS, f"{fn}: padding_mode", AttrError)
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
    check_known_dims(input, fn)
    check_known_dims(grid, fn)
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


def _deprecated(name):
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=4,
    )


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's deprecated F.upsample: F.interpolate."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """PyTorch's deprecated F.upsample_nearest: F.interpolate with mode 'nearest'."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """PyTorch's deprecated F.upsample_bilinear: F.interpolate with mode 'bilinear' and
    align_corners=True."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ = [
    "affine_grid",
    "channel_shuffle",
    "grid_sample",
    "interpolate",
    "pad",
    "pixel_shuffle",
    "pixel_unshuffle",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]
