"""PyTorch's sampling-grid functions and the pools, activation and aliases of
nbflow/nn/functional/sampling.py: grid_sample and affine_grid against numpy references written here
(PyTorch's unnormalisation and padding formulas, one output point at a time), gradients by
float64 finite differences, eager vs jit, typed errors, and PyTorch itself when it imports."""

import math
import warnings

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt

RNG = np.random.default_rng(0)
TOL = {"rtol": 1e-10, "atol": 1e-12}
PADDINGS = ("zeros", "border", "reflection")


def t(a, grad=False):
    return nb.tensor(np.asarray(a), requires_grad=grad)


def close(got, expected, **tol):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    np.testing.assert_allclose(got, expected, **(tol or TOL))


# ---------------------------------------------------------------- numpy references


def unnormalize(g, size, align_corners):
    return (g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2


def reflect(x, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = abs(x - low)
    extra, flips = math.fmod(x, span), math.floor(x / span)
    return extra + low if flips % 2 == 0 else span - extra + low


def pad_coord(x, size, padding_mode, align_corners):
    if padding_mode == "reflection":
        x = reflect(x, 0, 2 * (size - 1)) if align_corners else reflect(x, -1, 2 * size - 1)
    if padding_mode in ("border", "reflection"):
        x = min(max(x, 0.0), size - 1.0)
    return x


def cubic_weights(t):
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def read(plane, pos):
    """plane[pos] (pos in (z,) y, x order, whole numbers), 0 outside."""
    pos = tuple(int(p) for p in pos)
    inside = all(0 <= p < n for p, n in zip(pos, plane.shape[1:]))
    return plane[(slice(None), *pos)] if inside else np.zeros(plane.shape[0])


def sample_point(plane, coords, mode, padding_mode, align_corners):
    """One output point of grid_sample for one batch item: plane (C, *spatial), coords in
    grid order (x, y[, z])."""
    sizes = plane.shape[1:][::-1]  # (W, H[, D])
    if mode == "bicubic":
        x, y = (unnormalize(g, n, align_corners) for g, n in zip(coords, sizes))
        x0, y0 = math.floor(x), math.floor(y)
        wx, wy = cubic_weights(x - x0), cubic_weights(y - y0)
        total = 0.0
        for i in range(4):
            for j in range(4):
                px = pad_coord(x0 - 1 + j, sizes[0], padding_mode, align_corners)
                py = pad_coord(y0 - 1 + i, sizes[1], padding_mode, align_corners)
                total = total + wy[i] * wx[j] * read(plane, (py, px))
        return total
    src = [
        pad_coord(unnormalize(g, n, align_corners), n, padding_mode, align_corners)
        for g, n in zip(coords, sizes)
    ]
    if mode == "nearest":
        return read(plane, [np.rint(s) for s in src][::-1])
    total = 0.0
    for corner in np.ndindex(*(2,) * len(src)):  # each corner: floor or floor + 1 per axis
        pos = [math.floor(s) + c for s, c in zip(src, corner)]
        weight = np.prod([1 - abs(s - p) for s, p in zip(src, pos)])
        total = total + weight * read(plane, pos[::-1])
    return total


def grid_sample_ref(x, grid, mode, padding_mode, align_corners):
    out = np.zeros(x.shape[:2] + grid.shape[1:-1])
    for n in range(x.shape[0]):
        for point in np.ndindex(*grid.shape[1:-1]):
            coords = grid[(n, *point)]
            out[(n, slice(None), *point)] = sample_point(
                x[n], coords, mode, padding_mode, align_corners
            )
    return out


def affine_grid_ref(theta, size, align_corners):
    spatial = size[2:]
    k = len(spatial)

    def lin(n):
        if n == 1:
            return np.zeros(1)
        r = np.linspace(-1, 1, n)
        return r if align_corners else r * (n - 1) / n

    out = np.zeros((size[0], *spatial, k))
    for n in range(size[0]):
        for point in np.ndindex(*spatial):
            coords = [lin(m)[i] for m, i in zip(spatial, point)][::-1]  # x from the last dim
            out[(n, *point)] = theta[n] @ np.array([*coords, 1.0])
    return out


def to_grid(pos, size, align_corners):
    """Grid coordinates of pixel positions pos (inverse of unnormalize)."""
    return pos / (size - 1) * 2 - 1 if align_corners else (2 * pos + 1) / size - 1


def smooth_grid(shape, sizes, align_corners, outside=True, frac=(0.15, 0.85)):
    """A grid (N, *out, k) whose points lie at a fractional pixel position in `frac` (away
    from the kinks of nearest / bilinear / clamping / reflection), some outside the input."""
    cols = []
    for size in sizes:  # x first
        low, high = (-2, size + 1) if outside else (0, size - 1)
        whole = RNG.integers(low, high, shape)
        cols.append(to_grid(whole + RNG.uniform(*frac, shape), size, align_corners))
    return np.stack(cols, axis=-1)


# ---------------------------------------------------------------- grid_sample


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", PADDINGS)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_the_numpy_reference(mode, padding_mode, align_corners):
    x = RNG.standard_normal((2, 3, 4, 5))
    grid = RNG.uniform(-1.5, 1.5, (2, 3, 4, 2))  # some points outside the image
    got = F.grid_sample(t(x), t(grid), mode, padding_mode, align_corners)
    close(got, grid_sample_ref(x, grid, mode, padding_mode, align_corners))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", PADDINGS)
def test_grid_sample_5d_matches_the_numpy_reference(mode, padding_mode):
    x = RNG.standard_normal((2, 2, 3, 4, 5))
    grid = RNG.uniform(-1.4, 1.4, (2, 2, 3, 2, 3))
    for align_corners in (False, True):
        got = F.grid_sample(t(x), t(grid), mode, padding_mode, align_corners)
        close(got, grid_sample_ref(x, grid, mode, padding_mode, align_corners))


def test_grid_sample_float32_keeps_the_dtype():
    x = RNG.standard_normal((1, 2, 4, 4))
    grid = RNG.uniform(-1, 1, (1, 3, 3, 2))
    got = F.grid_sample(t(x.astype(np.float32)), t(grid.astype(np.float32)), align_corners=False)
    assert got.dtype == np.float32
    close(got, grid_sample_ref(x, grid, "bilinear", "zeros", False), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "mode,padding_mode,align_corners",
    [
        ("bilinear", "zeros", False),
        ("bilinear", "border", True),
        ("bilinear", "reflection", False),
        ("bilinear", "reflection", True),
        ("bicubic", "zeros", True),
        ("bicubic", "reflection", False),
        ("nearest", "zeros", False),
    ],
)
def test_grid_sample_gradients_by_finite_differences(mode, padding_mode, align_corners):
    x = t(RNG.standard_normal((2, 2, 4, 5)), grad=True)
    grid = t(smooth_grid((2, 3, 3), (5, 4), align_corners), grad=True)

    def fn(x, grid):
        return F.grid_sample(x, grid, mode, padding_mode, align_corners)

    nt.gradcheck(fn, [x, grid], atol=1e-6, rtol=1e-5)


def test_grid_sample_5d_gradients_by_finite_differences():
    x = t(RNG.standard_normal((1, 2, 3, 4, 3)), grad=True)
    grid = t(smooth_grid((1, 2, 2, 3), (3, 4, 3), True), grad=True)
    nt.gradcheck(lambda x, g: F.grid_sample(x, g, "bilinear", "border", True), [x, grid])


def test_grid_sample_nearest_sends_each_gradient_to_one_pixel():
    x = t(np.zeros((1, 1, 3, 3)), grad=True)
    grid = t(np.array([[[[0.0, 0.0], [0.0, 0.05], [1.0, -1.0]]]]))  # centre twice, a corner
    F.grid_sample(x, grid, "nearest", align_corners=True).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[0, 0, 1], [0, 2, 0], [0, 0, 0]])


def test_grid_sample_nan_coordinates_and_an_unknown_batch_dim():
    x = RNG.standard_normal((1, 1, 3, 3))
    grid = np.array([[[[np.nan, 0.0], [0.2, -0.4]]]])
    near = F.grid_sample(t(x), t(grid), "nearest", align_corners=False).numpy()
    assert near[0, 0, 0, 0] == 0.0  # outside the image: zero (no index error)
    close(near[0, 0, 0, 1:], grid_sample_ref(x, grid[:, :, 1:], "nearest", "zeros", False)[0, 0, 0])
    border = F.grid_sample(t(x), t(grid), "bilinear", "border", align_corners=False).numpy()
    assert np.isfinite(border).all()
    main = nb.Program()
    with nb.program_guard(main):
        xv = nb.static.data("x", [-1, 1, 3, 3], "float64")
        gv = nb.static.data("g", [-1, 1, 2, 2], "float64")
        out = F.grid_sample(xv, gv, "bilinear", "reflection", align_corners=True)
    grid = RNG.uniform(-1.5, 1.5, (1, 1, 2, 2))
    (got,) = nb.Executor().run(main, {"x": x, "g": grid}, [out], nb.Scope())
    close(got, grid_sample_ref(x, grid, "bilinear", "reflection", True))


def test_affine_grid_identity_reproduces_the_input():
    x = RNG.standard_normal((2, 3, 4, 5))
    theta = np.tile(np.eye(2, 3), (2, 1, 1))
    for align_corners in (False, True):
        grid = F.affine_grid(t(theta), x.shape, align_corners=align_corners)
        for mode in ("bilinear", "nearest", "bicubic"):
            close(F.grid_sample(t(x), grid, mode, align_corners=align_corners), x)
    x3 = RNG.standard_normal((1, 2, 3, 4, 2))
    grid3 = F.affine_grid(t(np.eye(3, 4)[None]), x3.shape, align_corners=False)
    close(F.grid_sample(t(x3), grid3, align_corners=False), x3)


def test_affine_grid_matches_the_numpy_reference_and_differentiates():
    for size in [(2, 1, 3, 4), (2, 1, 2, 3, 4), (1, 1, 1, 3)]:
        k = len(size) - 2
        theta = RNG.standard_normal((size[0], k, k + 1))
        for align_corners in (False, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (a unit-size grid with align_corners warns)
                got = F.affine_grid(t(theta), size, align_corners=align_corners)
            close(got, affine_grid_ref(theta, size, align_corners))
    theta = t(RNG.standard_normal((2, 2, 3)), grad=True)
    nt.gradcheck(lambda th: F.affine_grid(th, (2, 3, 3, 4), align_corners=False), [theta])


def test_rotation_by_affine_grid_and_grid_sample():
    """A 90-degree rotation on a square image is np.rot90 (pixel centres map to centres)."""
    x = RNG.standard_normal((1, 1, 4, 4))
    theta = np.array([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]])
    grid = F.affine_grid(t(theta), x.shape, align_corners=False)
    got = F.grid_sample(t(x), grid, align_corners=False).numpy()
    close(got[0, 0], np.rot90(x[0, 0], k=1))


def test_default_align_corners_warns_as_pytorch():
    x, grid = t(np.ones((1, 1, 2, 2))), t(np.zeros((1, 1, 1, 2)))
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.affine_grid(t(np.eye(2, 3)[None]), (1, 1, 2, 2))


def test_grid_sample_and_affine_grid_errors():
    x, grid = t(np.ones((1, 2, 3, 3))), t(np.zeros((1, 2, 2, 2)))
    kw = {"align_corners": False}
    with pytest.raises(nb.AttrError, match="mode"):
        F.grid_sample(x, grid, "area", **kw)
    with pytest.raises(nb.AttrError, match="padding_mode"):
        F.grid_sample(x, grid, padding_mode="circular", **kw)
    with pytest.raises(nb.ShapeError, match="size 2 in its last dim"):
        F.grid_sample(x, t(np.zeros((1, 2, 2, 3))), **kw)
    with pytest.raises(nb.ShapeError, match="same batch size"):
        F.grid_sample(x, t(np.zeros((2, 2, 2, 2))), **kw)
    with pytest.raises(nb.ShapeError, match="4D or 5D"):
        F.grid_sample(t(np.ones((2, 3, 3))), t(np.zeros((2, 2, 2))), **kw)
    with pytest.raises(nb.DTypeError, match="same dtype"):
        F.grid_sample(x, t(np.zeros((1, 2, 2, 2), np.float32)), **kw)
    with pytest.raises(nb.DTypeError, match="floating point"):
        F.grid_sample(t(np.ones((1, 2, 3, 3), np.int64)), t(np.zeros((1, 2, 2, 2))), **kw)
    with pytest.raises(nb.AttrError, match="bicubic"):
        F.grid_sample(t(np.ones((1, 1, 2, 2, 2))), t(np.zeros((1, 1, 1, 1, 3))), "bicubic", **kw)
    with pytest.raises(nb.ShapeError, match="non-empty"):
        F.grid_sample(t(np.ones((1, 1, 0, 2))), grid, **kw)
    theta = t(np.zeros((1, 2, 3)))
    with pytest.raises(nb.ShapeError, match="Nx2x3"):
        F.affine_grid(t(np.zeros((1, 3, 4))), (1, 1, 2, 2), **kw)
    with pytest.raises(nb.ShapeError, match="4D and 5D"):
        F.affine_grid(theta, (1, 2, 2), **kw)
    with pytest.raises(nb.ShapeError, match="positive"):
        F.affine_grid(theta, (1, 1, 0, 2), **kw)
    with pytest.raises(nb.ShapeError, match="batch"):
        F.affine_grid(theta, (2, 1, 2, 2), **kw)
    with pytest.raises(nb.DTypeError, match="theta"):
        F.affine_grid(t(np.zeros((1, 2, 3), np.int64)), (1, 1, 2, 2), **kw)


def test_grid_sample_and_affine_grid_eager_equals_jit():
    x = RNG.standard_normal((2, 2, 4, 5))
    grid = smooth_grid((2, 3, 2), (5, 4), False)
    theta = RNG.standard_normal((2, 2, 3))
    nt.check_modes(lambda x, g: F.grid_sample(x, g, "bilinear", "zeros", False), x, grid)
    nt.check_modes(lambda x, g: F.grid_sample(x, g, "bicubic", "reflection", True), x, grid)
    nt.check_modes(
        lambda x, th: F.grid_sample(x, F.affine_grid(th, (2, 2, 3, 3), False), align_corners=False),
        x,
        theta,
    )


# ---------------------------------------------------------------- max_unpool


def unpool_ref(values, indices, size):
    out = np.zeros(values.shape[:2] + (math.prod(size),))
    flat_v = values.reshape(values.shape[:2] + (-1,))
    flat_i = indices.reshape(flat_v.shape)
    for n, c, j in np.ndindex(*flat_v.shape):
        out[n, c, flat_i[n, c, j]] = flat_v[n, c, j]
    return out.reshape(values.shape[:2] + tuple(size))


def test_max_unpool2d_puts_the_maxima_back():
    x = np.abs(RNG.standard_normal((2, 3, 6, 4))) + 0.1  # (positive: pooling again sees them)
    out, idx = F.max_pool2d(t(x), 2, return_indices=True)
    back = F.max_unpool2d(out, idx, 2)
    assert back.shape == x.shape
    close(back, unpool_ref(out.numpy(), idx.numpy(), (6, 4)))
    kept = back.numpy() != 0
    np.testing.assert_array_equal(back.numpy()[kept], x[kept])  # the maxima, where they were
    assert kept.sum() == out.size
    close(F.max_pool2d(back, 2), out.numpy())  # pooling again gives the same maxima
    # overlapping windows, padding and an output_size the default size misses
    out, idx = F.max_pool2d(t(x), 3, 2, 1, return_indices=True)
    back = F.max_unpool2d(out, idx, 3, 2, 1, output_size=(6, 4))
    close(back, unpool_ref(out.numpy(), idx.numpy(), (6, 4)))
    unbatched = F.max_unpool2d(out[0], idx[0], 3, 2, 1, output_size=(2, 3, 6, 4))
    close(unbatched, back.numpy()[0])


def test_max_unpool1d_and_the_modules():
    x = np.abs(RNG.standard_normal((2, 3, 8))) + 0.1
    out, idx = F.max_pool1d(t(x), 2, return_indices=True)
    back = nn.MaxUnpool1d(2)(out, idx)
    close(back, unpool_ref(out.numpy(), idx.numpy(), (8,)))
    close(F.max_pool1d(back, 2), out.numpy())
    close(nn.MaxUnpool1d(2)(out, idx, output_size=(9,)), unpool_ref(out.numpy(), idx.numpy(), (9,)))
    x2 = RNG.standard_normal((1, 2, 4, 4))
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    out2, idx2 = pool(t(x2))
    close(unpool(out2, idx2), unpool_ref(out2.numpy(), idx2.numpy(), (4, 4)))
    assert "kernel_size=2" in repr(unpool)


def test_max_unpool_gradient_and_jit():
    x = RNG.standard_normal((1, 2, 4, 4))
    out, idx = F.max_pool2d(t(x), 2, return_indices=True)
    values = t(out.numpy(), grad=True)
    nt.gradcheck(lambda v: F.max_unpool2d(v, idx, 2), [values])
    nt.check_modes(lambda v, i: F.max_unpool2d(v, i, 2), out.numpy(), idx)


def test_max_unpool_errors():
    out, idx = F.max_pool2d(t(RNG.standard_normal((1, 1, 4, 4))), 2, return_indices=True)
    with pytest.raises(nb.ShapeError, match="between"):
        F.max_unpool2d(out, idx, 2, output_size=(6, 4))
    with pytest.raises(nb.ShapeError, match="2 or 4 elements"):
        F.max_unpool2d(out, idx, 2, output_size=(4, 4, 4))
    with pytest.raises(nb.ShapeError, match="indices"):
        F.max_unpool2d(out, idx[:, :, :1], 2)
    with pytest.raises(nb.DTypeError, match="int64"):
        F.max_unpool2d(out, t(idx.numpy().astype(np.float64)), 2)
    with pytest.raises(nb.OutOfRangeError):
        F.max_unpool2d(out, t(np.full((1, 1, 2, 2), 16)), 2)
    with pytest.raises(nb.ShapeError, match="4-D"):
        F.max_unpool2d(t(np.ones(4)), t(np.zeros(4, np.int64)), 2)


# ---------------------------------------------------------------- lp_pool


def lp_pool_ref(x, p, kernel, stride, ceil_mode):
    """Over the last len(kernel) dims: (window sum of x^p / cells inside * kernel cells)^(1/p),
    windows cut at the edge under ceil_mode (PyTorch's count; exact without ceil_mode)."""
    k = len(kernel)
    spatial = x.shape[-k:]
    counts = []
    for n, ks, s in zip(spatial, kernel, stride):
        m = (-(-(n - ks) // s) if ceil_mode else (n - ks) // s) + 1
        if ceil_mode and (m - 1) * s >= n:
            m -= 1
        counts.append(m)
    out = np.zeros(x.shape[:-k] + tuple(counts))
    for pos in np.ndindex(*counts):
        window = tuple(
            slice(i * s, min(i * s + ks, n)) for i, s, ks, n in zip(pos, stride, kernel, spatial)
        )
        part = x[(Ellipsis, *window)]
        if math.isinf(p):
            part = np.abs(part)
            value = (
                part.max(axis=tuple(range(-k, 0))) if p > 0 else part.min(axis=tuple(range(-k, 0)))
            )
        else:
            inside = math.prod(w.stop - w.start for w in window)
            mean = (part**p).sum(axis=tuple(range(-k, 0))) / inside
            value = (mean * math.prod(kernel)) ** (1 / p)
        out[(Ellipsis, *pos)] = value
    return out


@pytest.mark.parametrize("p", [1, 2, 3.5, math.inf, -math.inf])
def test_lp_pool_matches_the_numpy_reference(p):
    x = np.abs(RNG.standard_normal((2, 3, 7, 6))) + 0.1
    for ceil_mode in (False, True):
        got = F.lp_pool2d(t(x), p, (3, 2), 2, ceil_mode)
        close(got, lp_pool_ref(x, p, (3, 2), (2, 2), ceil_mode))
        got = F.lp_pool1d(t(x[:, :, 0]), p, 3, 2, ceil_mode)
        close(got, lp_pool_ref(x[:, :, 0], p, (3,), (2,), ceil_mode))
    close(F.lp_pool2d(t(x), p, 2), lp_pool_ref(x, p, (2, 2), (2, 2), False))  # stride: kernel


def test_lp_pool_gradient_modules_and_jit():
    x = np.abs(RNG.standard_normal((1, 2, 4, 5))) + 0.5
    nt.gradcheck(lambda v: F.lp_pool2d(v, 2, 2, 1), [t(x, grad=True)])
    nt.gradcheck(lambda v: F.lp_pool1d(v, 3, 2), [t(x[:, :, 0], grad=True)])
    close(nn.LPPool2d(2, (2, 3))(t(x)), lp_pool_ref(x, 2, (2, 3), (2, 3), False))
    close(nn.LPPool1d(1.5, 2, 1)(t(x[0])), lp_pool_ref(x[0], 1.5, (2,), (1,), False))
    assert "norm_type=2" in repr(nn.LPPool2d(2, 2))
    with pytest.raises(nb.AttrError, match="norm_type"):
        F.lp_pool2d(t(x), 0, 2)
    nt.check_modes(lambda v: F.lp_pool2d(v, 2, 2, 1, True), x)


# ---------------------------------------------------------------- fractional_max_pool2d


def intervals_ref(u, n, m, k):
    """PyTorch's generate_intervals, in the sample's dtype."""
    if m == 1:
        return [n - k]
    alpha = u.dtype.type(n - k) / u.dtype.type(m - 1)
    starts = [int((u.dtype.type(i) + u) * alpha) - int(u * alpha) for i in range(m - 1)]
    return starts + [n - k]


def fractional_ref(x, kernel, size, samples):
    (kh, kw), (oh, ow) = kernel, size
    n, c, h, w = x.shape
    out, idx = np.zeros((n, c, oh, ow), x.dtype), np.zeros((n, c, oh, ow), np.int64)
    for b, ch in np.ndindex(n, c):
        cols = intervals_ref(samples[b, ch, 0], w, ow, kw)
        rows = intervals_ref(samples[b, ch, 1], h, oh, kh)
        for i, j in np.ndindex(oh, ow):
            window = x[b, ch, rows[i] : rows[i] + kh, cols[j] : cols[j] + kw]
            a = int(np.argmax(window))
            out[b, ch, i, j] = window.flat[a]
            idx[b, ch, i, j] = (rows[i] + a // kw) * w + cols[j] + a % kw
    return out, idx


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fractional_max_pool2d_matches_the_numpy_reference(dtype):
    x = RNG.standard_normal((2, 3, 11, 10)).astype(dtype)
    samples = RNG.uniform(size=(2, 3, 2)).astype(dtype)
    for kernel, size, ratio in [((3, 3), (5, 4), None), (2, None, (0.5, 0.7)), ((2, 3), 1, None)]:
        out, idx = F.fractional_max_pool2d(
            t(x), kernel, size, ratio, return_indices=True, _random_samples=t(samples)
        )
        if size is None:
            size = (int(11 * ratio[0]), int(10 * ratio[1]))
        size = (size, size) if isinstance(size, int) else size
        kernel = (kernel, kernel) if isinstance(kernel, int) else kernel
        ref_out, ref_idx = fractional_ref(x, kernel, size, samples)
        np.testing.assert_array_equal(out.numpy(), ref_out)
        np.testing.assert_array_equal(idx.numpy(), ref_idx)
        assert out.dtype == dtype and idx.dtype == np.int64


def test_fractional_max_pool2d_random_default_gradient_module_and_jit():
    x = RNG.standard_normal((2, 3, 9, 9))
    out, idx = F.fractional_max_pool2d(t(x), 2, output_size=4, return_indices=True)
    assert out.shape == (2, 3, 4, 4)
    flat = x.reshape(2, 3, -1)
    picked = np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_array_equal(picked, out.numpy().reshape(2, 3, -1))
    samples = t(RNG.uniform(size=(2, 3, 2)))
    module = nn.FractionalMaxPool2d(3, output_ratio=0.5, _random_samples=samples)
    close(module(t(x)), F.fractional_max_pool2d(t(x), 3, (4, 4), _random_samples=samples).numpy())
    unbatched = F.fractional_max_pool2d(t(x[0]), 3, 4, _random_samples=samples[:1])
    close(
        unbatched, F.fractional_max_pool2d(t(x[:1]), 3, 4, _random_samples=samples[:1]).numpy()[0]
    )
    nt.gradcheck(
        lambda v: F.fractional_max_pool2d(v, 3, 4, _random_samples=samples), [t(x, grad=True)]
    )
    nt.check_modes(lambda v, s: F.fractional_max_pool2d(v, 3, 4, _random_samples=s), x, samples)


def test_fractional_max_pool2d_errors():
    x = t(np.ones((1, 2, 6, 6)))
    with pytest.raises(nb.AttrError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(nb.ShapeError, match="at most"):
        F.fractional_max_pool2d(x, 3, 5)
    with pytest.raises(nb.ShapeError, match="_random_samples"):
        F.fractional_max_pool2d(x, 2, 3, _random_samples=t(np.zeros((1, 3, 2))))
    with pytest.raises(nb.AttrError, match="between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(nb.AttrError, match="only one"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(nb.AttrError, match="either"):
        nn.FractionalMaxPool2d(2)


# ---------------------------------------------------------------- rrelu


def test_rrelu_draws_slopes_in_range_and_uses_the_mean_in_eval():
    x = -np.abs(RNG.standard_normal(20000)) - 0.01
    x[:100] *= -1  # some positives: unchanged
    y = F.rrelu(t(x), 0.1, 0.4, training=True).numpy()
    np.testing.assert_array_equal(y[:100], x[:100])
    slopes = y[100:] / x[100:]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.4
    assert slopes.min() < 0.11 and slopes.max() > 0.39  # spread over the range
    assert abs(slopes.mean() - 0.25) < 0.005
    close(F.rrelu(t(x), 0.1, 0.4), np.where(x > 0, x, 0.25 * x))  # training=False: mean slope
    module = nn.RReLU(0.1, 0.4)
    assert abs((module(t(x)).numpy()[100:] / x[100:]).std() - 0.3 / math.sqrt(12)) < 0.005
    module.eval()
    close(module(t(x)), np.where(x > 0, x, 0.25 * x))
    assert repr(module) == "RReLU(lower=0.1, upper=0.4)"


def test_rrelu_gradient_generator_inplace_and_jit():
    x = t(RNG.standard_normal(50), grad=True)
    y = F.rrelu(x, training=True, generator=nb.Generator(3))
    y.backward(nb.ones_like(y))
    slopes = y.detach().numpy() / x.detach().numpy()
    close(x.grad, slopes)  # the gradient is the slope drawn
    again = F.rrelu(x.detach(), training=True, generator=nb.Generator(3))
    np.testing.assert_array_equal(again.numpy(), y.detach().numpy())
    z = t(RNG.standard_normal(10))
    expected = np.where(z.numpy() > 0, z.numpy(), z.numpy() * (1 / 8 + 1 / 3) / 2)
    assert F.rrelu_(z) is z
    close(z, expected)
    with pytest.raises(nb.AttrError, match="lower"):
        F.rrelu(z, 0.5, 0.1)
    neg = -np.abs(RNG.standard_normal(200)) - 0.1
    jitted = nb.jit(lambda v: F.rrelu(v, 0.2, 0.3, training=True))(t(neg)).numpy() / neg
    assert jitted.min() >= 0.2 and jitted.max() <= 0.3 and jitted.std() > 0.01
    nt.check_modes(lambda v: F.rrelu(v, 0.2, 0.3), RNG.standard_normal(8))


# ---------------------------------------------------------------- pdist


@pytest.mark.parametrize("p", [0, 0.5, 1, 2, 3, math.inf])
def test_pdist_matches_scipy(p):
    distance = pytest.importorskip("scipy.spatial.distance")
    x = RNG.standard_normal((5, 3))
    x[3] = x[1]  # a zero distance
    x[4, 0] = x[0, 0]  # a coordinate where two rows agree
    if p == 0:
        expected = distance.pdist(x, "hamming") * x.shape[1]
    elif math.isinf(p):
        expected = distance.pdist(x, "chebyshev")
    else:
        expected = distance.pdist(x, "minkowski", p=p)
    close(F.pdist(t(x), p), expected)
    if 0 < p < math.inf:
        v = t(x, grad=True)
        F.pdist(v, p).sum().backward()
        assert np.isfinite(v.grad.numpy()).all()  # 0 at the zero distance, as PyTorch's


def test_pdist_gradient_jit_and_errors():
    x = RNG.standard_normal((4, 3))
    for p in (1.5, 2, math.inf):
        nt.gradcheck(lambda v, p=p: F.pdist(v, p), [t(x, grad=True)])
    nt.check_modes(lambda v: F.pdist(v, 3), x)
    assert F.pdist(t(x[:1])).shape == (0,)
    with pytest.raises(nb.ShapeError, match="2D"):
        F.pdist(t(np.ones((2, 2, 2))))
    with pytest.raises(nb.AttrError, match="non-negative"):
        F.pdist(t(x), -1)
    with pytest.raises(nb.DTypeError, match="floating point"):
        F.pdist(t(np.ones((2, 2), np.int64)))


# ---------------------------------------------------------------- aliases


def test_upsample_aliases_are_interpolate_with_a_deprecation_warning():
    x = t(RNG.standard_normal((1, 2, 3, 4)))
    with pytest.warns(UserWarning, match="deprecated"):
        got = F.upsample(x, scale_factor=2, mode="bilinear", align_corners=False)
    close(got, F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False).numpy())
    with pytest.warns(UserWarning, match="upsample_nearest"):
        got = F.upsample_nearest(x, size=(5, 7))
    close(got, F.interpolate(x, size=(5, 7), mode="nearest").numpy())
    with pytest.warns(UserWarning, match="upsample_bilinear"):
        got = F.upsample_bilinear(x, scale_factor=2)
    close(got, F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True).numpy())


def test_with_indices_aliases_return_values_and_indices():
    x = t(RNG.standard_normal((2, 3, 6, 5)))
    rows = x[:, 0]
    pairs = [
        (F.max_pool1d_with_indices(rows, 3, 2, 1), F.max_pool1d(rows, 3, 2, 1, 1, False, True)),
        (F.max_pool2d_with_indices(x, 2), F.max_pool2d(x, 2, return_indices=True)),
        (F.adaptive_max_pool1d_with_indices(rows, 3), F.adaptive_max_pool1d(rows, 3, True)),
        (F.adaptive_max_pool2d_with_indices(x, (4, 3)), F.adaptive_max_pool2d(x, (4, 3), True)),
    ]
    for got, expected in pairs:
        assert len(got) == 2
        np.testing.assert_array_equal(got[0].numpy(), expected[0].numpy())
        np.testing.assert_array_equal(got[1].numpy(), expected[1].numpy())
        assert got[1].dtype == np.int64


# ---------------------------------------------------------------- PyTorch


def test_grid_sample_and_affine_grid_match_pytorch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    for shape, gshape, modes in [
        ((2, 3, 4, 5), (2, 3, 4, 2), ("bilinear", "nearest", "bicubic")),
        ((2, 2, 3, 4, 5), (2, 2, 3, 2, 3), ("bilinear", "nearest")),
    ]:
        x, grid = RNG.standard_normal(shape), RNG.uniform(-1.4, 1.4, gshape)
        for mode in modes:
            for padding_mode in PADDINGS:
                for align_corners in (False, True):
                    xt = torch.tensor(x, requires_grad=True)
                    gt = torch.tensor(grid, requires_grad=True)
                    ref = tf.grid_sample(xt, gt, mode, padding_mode, align_corners)
                    u = RNG.standard_normal(ref.shape)
                    (ref * torch.tensor(u)).sum().backward()
                    xn, gn = t(x, grad=True), t(grid, grad=True)
                    out = F.grid_sample(xn, gn, mode, padding_mode, align_corners)
                    (out * t(u)).sum().backward()
                    close(out, ref.detach().numpy())
                    close(xn.grad, xt.grad.numpy())
                    if mode != "nearest":
                        close(gn.grad, gt.grad.numpy(), rtol=1e-9, atol=1e-11)
    for size in [(2, 3, 4, 5), (2, 3, 2, 4, 5)]:
        k = len(size) - 2
        theta = RNG.standard_normal((2, k, k + 1))
        for align_corners in (False, True):
            ref = tf.affine_grid(torch.tensor(theta), size, align_corners).numpy()
            close(F.affine_grid(t(theta), size, align_corners), ref)


def test_pools_rrelu_pdist_match_pytorch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = RNG.standard_normal((2, 3, 7, 6))
    out, idx = tf.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    ref = tf.max_unpool2d(out, idx, 3, 2, 1, output_size=(7, 6)).numpy()
    close(F.max_unpool2d(t(out.numpy()), t(idx.numpy()), 3, 2, 1, output_size=(7, 6)), ref)
    xp = np.abs(x) + 0.1
    for p in (2, 3.5, math.inf):
        ref = tf.lp_pool2d(torch.tensor(xp), p, (3, 2), 2, True).numpy()
        close(F.lp_pool2d(t(xp), p, (3, 2), 2, True), ref)
        ref = tf.lp_pool1d(torch.tensor(xp[:, 0]), p, 2, 1).numpy()
        close(F.lp_pool1d(t(xp[:, 0]), p, 2, 1), ref)
    for dtype in (np.float32, np.float64):
        xs = RNG.standard_normal((2, 3, 11, 10)).astype(dtype)
        samples = RNG.uniform(size=(2, 3, 2)).astype(dtype)
        ref, ref_idx = tf.fractional_max_pool2d(
            torch.tensor(xs), 3, (5, 4), return_indices=True, _random_samples=torch.tensor(samples)
        )
        got, got_idx = F.fractional_max_pool2d(
            t(xs), 3, (5, 4), return_indices=True, _random_samples=t(samples)
        )
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
        np.testing.assert_array_equal(got_idx.numpy(), ref_idx.numpy())
    xr = RNG.standard_normal((6, 4))
    close(F.rrelu(t(xr), 0.1, 0.3), tf.rrelu(torch.tensor(xr), 0.1, 0.3).numpy())
    for p in (0.5, 1, 2, 3, math.inf):
        xt = torch.tensor(xr, requires_grad=True)
        tf.pdist(xt, p).sum().backward()
        xn = t(xr, grad=True)
        got = F.pdist(xn, p)
        got.sum().backward()
        close(got, tf.pdist(torch.tensor(xr), p).numpy())
        close(xn.grad, xt.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_max_unpool_runs_in_a_program_with_an_unknown_batch():
    x = RNG.standard_normal((3, 2, 4, 4)).astype(np.float32)
    main = nb.Program()
    with nb.program_guard(main):
        v = nb.static.data("x", [-1, 2, 4, 4])
        pooled, where = F.max_pool2d(v, 2, return_indices=True)
        out = F.max_unpool2d(pooled, where, 2)
    (got,) = nb.Executor().run(main, {"x": x}, [out], nb.Scope())
    windows = x.reshape(3, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(3, 2, 2, 2, 4)
    keep = windows == windows.max(axis=-1, keepdims=True)  # (no ties in normal draws)
    want = np.where(keep, windows, 0).reshape(3, 2, 2, 2, 2, 2).transpose(0, 1, 2, 4, 3, 5)
    np.testing.assert_array_equal(got, want.reshape(3, 2, 4, 4))
