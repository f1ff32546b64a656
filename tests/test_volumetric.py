"""The 3-D layers: conv3d (an op: vol2col + BLAS), conv_transpose3d, max / avg / adaptive pools
(composed from the 2-D pools), their modules, BatchNorm3d and InstanceNorm3d.

Forward against numpy references written here (direct sums over every output voxel's window,
float64), float64 gradient checks, eager vs jit, unbatched input, ceil_mode and
count_include_pad, typed errors for bad input, graph mode with an unknown batch dim, and
PyTorch parity when torch is installed."""

import itertools

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt
from nbflow.core import REGISTRY, Spec

RNG = np.random.default_rng(0)


def _three(v):
    return (v,) * 3 if isinstance(v, int) else tuple(v)


def _leaf(a):
    return nb.tensor(a, dtype="float64", requires_grad=True)


# ---------------------------------------------------------------- numpy references


def conv3d_numpy(x, w, stride=1, padding=0, dilation=1, groups=1):
    """Each output voxel as the sum over its window of input x weight (float64 loops)."""
    (s, p, d) = (_three(v) for v in (stride, padding, dilation))
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    kernel = w.shape[2:]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(q, q) for q in p])
    size = [(xp.shape[2 + i] - d[i] * (kernel[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    out = np.zeros((n, o, *size))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for z, y, t in itertools.product(*(range(m) for m in size)):
            patch = xp[
                :,
                g * cg : (g + 1) * cg,
                z * s[0] : z * s[0] + d[0] * (kernel[0] - 1) + 1 : d[0],
                y * s[1] : y * s[1] + d[1] * (kernel[1] - 1) + 1 : d[1],
                t * s[2] : t * s[2] + d[2] * (kernel[2] - 1) + 1 : d[2],
            ]
            out[:, oc, z, y, t] = (patch * w[oc]).sum(axis=(1, 2, 3, 4))
    return out


def conv_transpose3d_numpy(x, w, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Each input voxel scattered through the kernel into the (uncropped) output, then cropped
    by padding (output_padding extends the far side)."""
    (s, p, op, d) = (_three(v) for v in (stride, padding, output_padding, dilation))
    n, c = x.shape[:2]
    cg, og = c // groups, w.shape[1]
    kernel = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (kernel[i] - 1) + 1 + op[i] for i in range(3)]
    out = np.zeros((n, og * groups, *full))
    for ci in range(c):
        g = ci // cg
        for z, y, t in itertools.product(*(range(m) for m in x.shape[2:])):
            for a, i, j in itertools.product(*(range(k) for k in kernel)):
                at = (z * s[0] + a * d[0], y * s[1] + i * d[1], t * s[2] + j * d[2])
                out[(slice(None), slice(g * og, (g + 1) * og), *at)] += (
                    x[:, ci, z, y, t][:, None] * w[ci, :, a, i, j][None, :]
                )
    size = [full[i] - 2 * p[i] for i in range(3)]
    return out[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + size[i]) for i in range(3))]


def _pool_size(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling output length."""
    room = n + 2 * p - d * (k - 1) - 1
    out = (-(-room // s) if ceil_mode else room // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def pool3d_numpy(x, kind, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):  # fmt: skip
    """max (values and flat D*H*W indices, the first maximum) or avg, voxel by voxel."""
    k = _three(kernel_size)
    s = k if stride is None else _three(stride)
    p, d = _three(padding), _three(dilation)
    dims = x.shape[2:]
    size = [_pool_size(dims[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    out = np.zeros(x.shape[:2] + tuple(size))
    where = np.zeros(out.shape, np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for v in itertools.product(*(range(m) for m in size)):
            start = [v[i] * s[i] - p[i] for i in range(3)]
            if kind == "max":
                best, arg = -np.inf, -1
                for taps in itertools.product(*(range(kk) for kk in k)):
                    at = [start[i] + taps[i] * d[i] for i in range(3)]
                    if all(0 <= at[i] < dims[i] for i in range(3)) and x[(n, c, *at)] > best:
                        best, arg = x[(n, c, *at)], np.ravel_multi_index(at, dims)
                out[(n, c, *v)], where[(n, c, *v)] = best, arg
                continue
            end = [min(start[i] + k[i], dims[i] + p[i]) for i in range(3)]
            padded = np.prod([end[i] - start[i] for i in range(3)])
            lo = [max(start[i], 0) for i in range(3)]
            hi = [min(end[i], dims[i]) for i in range(3)]
            box = x[n, c, lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]
            divisor = divisor_override or (padded if count_include_pad else box.size)
            out[(n, c, *v)] = box.sum() / divisor
    return (out, where) if kind == "max" else out


def adaptive3d_numpy(x, size, kind):
    """PyTorch's bins: [floor(i n / m), ceil((i + 1) n / m)) per axis; max also gives the
    flat D*H*W index of the first maximum."""
    dims = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(size))
    where = np.zeros(out.shape, np.int64)
    for v in itertools.product(*(range(m) for m in size)):
        lo = [(v[i] * dims[i]) // size[i] for i in range(3)]
        hi = [-(-((v[i] + 1) * dims[i]) // size[i]) for i in range(3)]
        box = x[:, :, lo[0] : hi[0], lo[1] : hi[1], lo[2] : hi[2]]
        if kind == "avg":
            out[(..., *v)] = box.mean(axis=(2, 3, 4))
            continue
        flat = box.reshape(box.shape[:2] + (-1,))
        arg = flat.argmax(axis=2)
        out[(..., *v)] = flat.max(axis=2)
        local = np.unravel_index(arg, box.shape[2:])
        where[(..., *v)] = np.ravel_multi_index(tuple(lo[i] + local[i] for i in range(3)), dims)
    return (out, where) if kind == "max" else out


# ---------------------------------------------------------------- conv3d

CONV_CASES = [
    # x shape, w shape, attrs
    ((1, 2, 3, 4, 4), (3, 2, 2, 3, 3), {}),
    ((2, 3, 4, 5, 4), (4, 3, 3, 2, 2), {"stride": (2, 1, 2), "padding": (1, 0, 1)}),
    (
        (1, 4, 5, 4, 5),
        (6, 2, 2, 2, 3),
        {"stride": 2, "padding": 1, "dilation": (2, 1, 1), "groups": 2},
    ),  # fmt: skip
    ((2, 3, 3, 3, 3), (3, 1, 3, 3, 3), {"padding": 1, "groups": 3}),  # depthwise
    ((1, 2, 2, 3, 2), (5, 2, 1, 1, 1), {}),  # 1x1x1
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv3d_forward_matches_the_direct_sum(case, dtype):
    xs, ws, attrs = CONV_CASES[case]
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    args = [nb.tensor(a, dtype=dtype) for a in (x, w, b)]
    out = nb.conv3d(*args, **attrs)
    op = REGISTRY["conv3d"]
    (spec,) = op.infer([Spec(a.shape, a.dtype) for a in args], op.check_attrs(attrs))
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    tol = 1e-10 if dtype == "float64" else 1e-4
    expected = conv3d_numpy(x, w, **attrs) + b.reshape(-1, 1, 1, 1)
    nt.assert_close(out, expected.astype(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", [1, 2])
def test_conv3d_gradients(case):
    xs, ws, attrs = CONV_CASES[case]
    inputs = [_leaf(RNG.standard_normal(s)) for s in (xs, ws, ws[:1])]
    nt.gradcheck(lambda a, w, b: nb.conv3d(a, w, b, **attrs), inputs)


def test_conv3d_second_order():
    xs, ws, attrs = CONV_CASES[2]
    inputs = [_leaf(RNG.standard_normal(s)) for s in (xs, ws)]
    nt.gradgradcheck(lambda a, w: nb.conv3d(a, w, **attrs), inputs)


def test_conv3d_padding_strings_and_unbatched_input():
    x, w = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((4, 2, 2, 3, 2))
    out = F.conv3d(nb.tensor(x), nb.tensor(w), padding="same", dilation=(1, 2, 1))
    assert out.shape == (4, 3, 4, 5)  # unbatched in, unbatched out; 'same' keeps the size
    # PyTorch's 'same': total padding d (k - 1) split symmetrically, the odd one after
    xp = np.pad(x, ((0, 0), (0, 1), (2, 2), (0, 1)))
    expected = conv3d_numpy(xp[None], w, dilation=(1, 2, 1))[0]
    nt.assert_close(out, expected, rtol=1e-10, atol=1e-12)
    valid = F.conv3d(nb.tensor(x), nb.tensor(w), padding="valid")
    nt.assert_close(valid, conv3d_numpy(x[None], w)[0], rtol=1e-10, atol=1e-12)


def test_conv3d_errors_are_typed_and_name_the_shapes():
    x, w = nb.zeros(1, 2, 4, 4, 4), nb.zeros(3, 2, 2, 2, 2)
    with pytest.raises(nb.ShapeError, match=r"conv3d: input of shape \(2, 4, 4\) must be 5-D"):
        nb.conv3d(nb.zeros(2, 4, 4), w)
    with pytest.raises(nb.ShapeError, match="weight of shape .* must be 5-D"):
        nb.conv3d(x, nb.zeros(3, 2, 2, 2))
    with pytest.raises(nb.ShapeError, match="has 2 channels, but weight .* expects 3"):
        nb.conv3d(x, nb.zeros(3, 3, 2, 2, 2))
    with pytest.raises(nb.ShapeError, match="smaller than the kernel"):
        nb.conv3d(x, nb.zeros(3, 2, 5, 2, 2), padding=(0, 1, 1))
    with pytest.raises(nb.ShapeError, match="not divisible by groups=3"):
        nb.conv3d(x, w, groups=3)
    with pytest.raises(nb.AttrError, match="stride must be an int or 3 ints"):
        nb.conv3d(x, w, stride=(1, 2))
    with pytest.raises(nb.AttrError, match="'same' needs stride 1"):
        nb.conv3d(x, w, padding="same", stride=2)
    with pytest.raises(nb.ShapeError, match="bias of shape"):
        nb.conv3d(x, w, nb.zeros(4))


def test_conv3d_cuda_launchers_check_the_geometry_before_any_gpu_work():
    # the kernels run in the CUDA simulator (tests/cuda_sim_cases.py) and compile to PTX
    # (tests/cuda_ptx_matrix.py); the geometry is checked as on the CPU
    x, w, g = np.zeros((1, 2, 3, 3, 3)), np.zeros((4, 2, 4, 1, 1)), np.zeros((1, 4, 1, 1, 1))
    geometry = {"stride": (1,), "padding": (0,), "dilation": (1,), "groups": 1}
    for name, args in (("conv3d", (x, w)), ("conv3d_input_grad", (g, w, x))):
        launch = REGISTRY[name].kernels["cuda"]
        assert not hasattr(launch, "cuda_unsupported")
        with pytest.raises(nb.ShapeError, match="smaller than the kernel"):
            launch(*args, None, **geometry)
    with pytest.raises(nb.ShapeError, match="not divisible by groups=3"):
        REGISTRY["conv3d_weight_grad"].kernels["cuda"](x, g, w, None, **dict(geometry, groups=3))


def test_gradient_ops_match_their_references():
    x, w = RNG.standard_normal((2, 4, 4, 5, 3)), RNG.standard_normal((6, 2, 2, 3, 2))
    attrs = {"stride": (1, 2, 1), "padding": (1, 1, 0), "dilation": (2, 1, 1), "groups": 2}
    g = RNG.standard_normal(nb.conv3d(nb.tensor(x), nb.tensor(w), **attrs).shape)
    for name, args in (("conv3d_input_grad", (g, w, x)), ("conv3d_weight_grad", (x, g, w))):
        op = REGISTRY[name]
        out = op(*(nb.tensor(a) for a in args), **attrs)
        nt.assert_close(out, op.ref(*args, **attrs), rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- conv_transpose3d

TRANSPOSE_CASES = [
    ((1, 2, 2, 3, 2), (2, 3, 2, 2, 3), {}),
    (
        (2, 4, 2, 2, 3),
        (4, 1, 3, 2, 2),
        {"stride": (2, 1, 2), "padding": (1, 0, 1), "output_padding": (1, 0, 1), "groups": 2},
    ),  # fmt: skip
    # output_padding >= stride (allowed by dilation): the unpadded path
    ((1, 2, 2, 2, 2), (2, 2, 2, 2, 2), {"dilation": 2, "output_padding": (1, 0, 1)}),
]


@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_conv_transpose3d_matches_the_scatter(case):
    xs, ws, attrs = TRANSPOSE_CASES[case]
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    groups = attrs.get("groups", 1)
    b = RNG.standard_normal(ws[1] * groups)
    out = F.conv_transpose3d(nb.tensor(x), nb.tensor(w), nb.tensor(b), **attrs)
    expected = conv_transpose3d_numpy(x, w, **attrs) + b.reshape(-1, 1, 1, 1)
    nt.assert_close(out, expected, rtol=1e-10, atol=1e-12)
    single = F.conv_transpose3d(nb.tensor(x[0]), nb.tensor(w), **attrs)  # unbatched
    nt.assert_close(single, conv_transpose3d_numpy(x[:1], w, **attrs)[0], rtol=1e-10, atol=1e-12)


def test_conv_transpose3d_gradients_and_errors():
    xs, ws, attrs = TRANSPOSE_CASES[1]
    inputs = [_leaf(RNG.standard_normal(s)) for s in (xs, ws, (2,))]
    nt.gradcheck(lambda a, w, b: F.conv_transpose3d(a, w, b, **attrs), inputs)
    x = nb.zeros(1, 2, 2, 2, 2)
    with pytest.raises(nb.ShapeError, match="conv_transpose3d: weight of shape .* must be 5-D"):
        F.conv_transpose3d(x, nb.zeros(2, 2, 2, 2))
    with pytest.raises(nb.ShapeError, match="has 2 channels, weight .* expects 3"):
        F.conv_transpose3d(x, nb.zeros(3, 2, 2, 2, 2))
    with pytest.raises(nb.AttrError, match="output_padding .* must be smaller"):
        F.conv_transpose3d(x, nb.zeros(2, 2, 2, 2, 2), stride=2, output_padding=2)
    with pytest.raises(nb.ShapeError, match=r"must be 5-D \(N, C_in, D, H, W\)"):
        F.conv_transpose3d(nb.zeros(2, 2, 2), nb.zeros(2, 2, 2, 2, 2))


# ---------------------------------------------------------------- pools

MAX_CASES = [
    {"kernel_size": 2},
    {"kernel_size": (3, 2, 3), "stride": (2, 1, 2), "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 2, "stride": 2, "dilation": (1, 2, 1), "ceil_mode": True},
]
AVG_CASES = [
    {"kernel_size": 2},
    {"kernel_size": (3, 2, 3), "stride": (2, 1, 2), "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (2, 3, 2), "stride": 2, "padding": (1, 0, 1), "divisor_override": 5},
]


def _distinct(shape):
    """Values without ties (so the argmax and max's gradient are unambiguous)."""
    return RNG.permutation(np.prod(shape)).reshape(shape) / 7.0 - 3.0


@pytest.mark.parametrize("attrs", MAX_CASES, ids=str)
def test_max_pool3d_values_and_indices(attrs):
    x = RNG.standard_normal((2, 3, 5, 6, 7))
    out, indices = F.max_pool3d(nb.tensor(x), return_indices=True, **attrs)
    expected, where = pool3d_numpy(x, "max", **attrs)
    nt.assert_close(out, expected)
    np.testing.assert_array_equal(indices.numpy(), where)
    assert indices.dtype == np.int64
    single = F.max_pool3d(nb.tensor(x[1]), **attrs)  # unbatched
    nt.assert_close(single, expected[1])


@pytest.mark.parametrize("attrs", AVG_CASES, ids=str)
def test_avg_pool3d_divisors(attrs):
    x = RNG.standard_normal((2, 3, 5, 6, 7))
    out = F.avg_pool3d(nb.tensor(x), **attrs)
    nt.assert_close(out, pool3d_numpy(x, "avg", **attrs), rtol=1e-12, atol=1e-12)
    nt.assert_close(F.avg_pool3d(nb.tensor(x[0]), **attrs), pool3d_numpy(x, "avg", **attrs)[0])


def test_ceil_mode_and_count_include_pad_change_the_result():
    # the claims the cases above rest on: each option matters on this input
    x = nb.tensor(RNG.standard_normal((1, 1, 5, 5, 5)))
    base = {"kernel_size": 2, "stride": 2, "padding": 1}
    assert F.avg_pool3d(x, **base).shape == (1, 1, 3, 3, 3)
    assert F.avg_pool3d(x, 2, 2, ceil_mode=True).shape == (1, 1, 3, 3, 3)
    assert F.avg_pool3d(x, 2, 2).shape == (1, 1, 2, 2, 2)
    with_pad = F.avg_pool3d(x, **base).numpy()
    without = F.avg_pool3d(x, **base, count_include_pad=False).numpy()
    assert with_pad[0, 0, 0, 0, 0] * 8 == pytest.approx(without[0, 0, 0, 0, 0])  # 1 of 8 inside
    nt.assert_close(with_pad[0, 0, 1, 1, 1], without[0, 0, 1, 1, 1])  # all 8 inside


@pytest.mark.parametrize("size", [(2, 3, 4), 1, (None, 2, 5), (3, 4, 3)], ids=str)
def test_adaptive_pools(size):
    x = _distinct((2, 3, 5, 6, 7))
    full = tuple(x.shape[2 + i] if s is None else s for i, s in enumerate(_three_none(size)))
    nt.assert_close(F.adaptive_avg_pool3d(nb.tensor(x), size), adaptive3d_numpy(x, full, "avg"))
    out, indices = F.adaptive_max_pool3d(nb.tensor(x), size, return_indices=True)
    expected, where = adaptive3d_numpy(x, full, "max")
    nt.assert_close(out, expected)
    np.testing.assert_array_equal(indices.numpy(), where)
    single = F.adaptive_max_pool3d(nb.tensor(x[0]), size)
    nt.assert_close(single, expected[0])
    nt.assert_close(
        F.adaptive_avg_pool3d(nb.tensor(x[0]), size), adaptive3d_numpy(x, full, "avg")[0]
    )


def _three_none(size):
    return (size,) * 3 if not isinstance(size, tuple) else size


@pytest.mark.parametrize(
    "fn,attrs",
    [
        (F.max_pool3d, {"kernel_size": 2, "stride": 1, "padding": 1}),
        (
            F.avg_pool3d,
            {
                "kernel_size": 3,
                "stride": 2,
                "padding": 1,
                "ceil_mode": True,
                "count_include_pad": False,
            },
        ),  # fmt: skip
        (F.adaptive_avg_pool3d, {"output_size": (2, 3, 2)}),
        (F.adaptive_max_pool3d, {"output_size": (2, 3, 2)}),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_pool_gradients(fn, attrs):
    x = _leaf(_distinct((1, 2, 3, 5, 4)))
    nt.gradcheck(lambda a: fn(a, **attrs), [x])


def test_max_pool3d_gradient_goes_to_the_maximum():
    x = _distinct((1, 1, 4, 4, 4))
    t = _leaf(x)
    F.max_pool3d(t, 2).sum().backward()
    blocks = x.reshape(2, 2, 2, 2, 2, 2).transpose(0, 2, 4, 1, 3, 5).reshape(8, 8)
    assert t.grad.numpy().sum() == 8.0
    assert set(x[t.grad.numpy() == 1.0]) == set(blocks.max(axis=1))


def test_pool_errors_are_typed():
    x = nb.zeros(1, 2, 3, 4, 4)
    with pytest.raises(nb.ShapeError, match=r"max_pool3d: input of shape \(4, 4\) must be 5-D"):
        F.max_pool3d(nb.zeros(4, 4), 2)
    with pytest.raises(nb.ShapeError, match="smaller than the window"):
        F.max_pool3d(x, (4, 2, 2))
    with pytest.raises(nb.ShapeError, match="smaller than the window"):
        F.avg_pool3d(x, 5, padding=(2, 0, 0))
    with pytest.raises(nb.AttrError, match="padding .* at most half"):
        F.avg_pool3d(x, 2, padding=(0, 2, 0))
    with pytest.raises(nb.AttrError, match="padding .* at most half"):
        F.max_pool3d(x, 3, padding=2)
    with pytest.raises(nb.AttrError, match="kernel_size must be an int or 3 ints"):
        F.max_pool3d(x, (2, 2))
    with pytest.raises(nb.AttrError, match="divisor_override must be >= 1"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(nb.ShapeError, match=r"adaptive_avg_pool3d: input of shape \(3, 4\)"):
        F.adaptive_avg_pool3d(nb.zeros(3, 4), 2)
    with pytest.raises(nb.AttrError, match="output_size must be an int or 3 ints"):
        F.adaptive_max_pool3d(x, (2, 2))
    with pytest.raises(nb.ShapeError, match="empty spatial dim"):
        F.adaptive_max_pool3d(nb.zeros(1, 2, 0, 4, 4), 2)


# ---------------------------------------------------------------- eager vs jit, graph mode


def test_eager_and_jit_agree():
    x = RNG.standard_normal((2, 2, 4, 5, 4))
    w = RNG.standard_normal((3, 2, 2, 3, 2))
    wt = RNG.standard_normal((3, 2, 2, 2, 2))

    def net(x, w, wt):
        y = nb.relu(F.conv3d(x, w, padding=1, stride=(1, 2, 1)))
        y = F.conv_transpose3d(y, wt, stride=2, output_padding=1)
        a = F.max_pool3d(y, 2, padding=1) + F.avg_pool3d(y, 2, padding=1, ceil_mode=True)
        return a.sum() + F.adaptive_max_pool3d(y, (2, 1, 3)).sum(), F.adaptive_avg_pool3d(y, 2)

    counts = nt.check_modes(net, x, w, wt)
    assert counts == {"outputs": 2, "gradients": 3}


def test_graph_mode_with_an_unknown_batch():
    main = nb.Program()
    w = nb.ones(3, 2, 3, 3, 3)
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 2, 4, 6, 6])
        with pytest.raises(nb.ShapeError, match=r"weight: f32\[3,3,3,3,3\]"):
            nb.conv3d(x, nb.zeros(3, 3, 3, 3, 3))  # fails while building: no kernel has run
        y = F.max_pool3d(nb.relu(nb.conv3d(x, w, padding=1)), 2)
        z = F.adaptive_avg_pool3d(F.avg_pool3d(y, (1, 3, 3)), 1)
    assert y.shape == (-1, 3, 2, 3, 3) and z.shape == (-1, 3, 1, 1, 1)
    data = RNG.standard_normal((3, 2, 4, 6, 6)).astype(np.float32)
    (out,) = nb.Executor().run(main, {"x": data}, [z], nb.Scope())
    eager = F.max_pool3d(nb.relu(nb.conv3d(nb.tensor(data), w, padding=1)), 2)
    nt.assert_close(out, F.adaptive_avg_pool3d(F.avg_pool3d(eager, (1, 3, 3)), 1).numpy())


# ---------------------------------------------------------------- modules and norms


PAD_MODES = [
    ("zeros", "constant"),
    ("reflect", "reflect"),
    ("replicate", "edge"),
    ("circular", "wrap"),
]


@pytest.mark.parametrize("mode,numpy_mode", PAD_MODES)
def test_conv3d_module_padding_modes(mode, numpy_mode):
    layer = nn.Conv3d(2, 4, (2, 3, 3), padding=(1, 1, 2), padding_mode=mode, dtype="float64")
    assert layer.weight.shape == (4, 2, 2, 3, 3) and layer.bias.shape == (4,)
    x = RNG.standard_normal((1, 2, 3, 4, 5))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1), (2, 2)), mode=numpy_mode)
    expected = conv3d_numpy(xp, layer.weight.numpy()) + layer.bias.numpy().reshape(-1, 1, 1, 1)
    nt.assert_close(layer(nb.tensor(x)), expected, rtol=1e-10, atol=1e-12)


def test_pool_and_transpose_modules():
    x = nb.tensor(RNG.standard_normal((1, 2, 4, 5, 6)))
    out, idx = nn.MaxPool3d(2, return_indices=True, ceil_mode=True)(x)
    expected, where = pool3d_numpy(x.numpy(), "max", 2, ceil_mode=True)
    nt.assert_close(out, expected)
    np.testing.assert_array_equal(idx.numpy(), where)
    avg = nn.AvgPool3d(3, 2, 1, count_include_pad=False, divisor_override=None)(x)
    nt.assert_close(avg, pool3d_numpy(x.numpy(), "avg", 3, 2, 1, count_include_pad=False))
    third = pool3d_numpy(x.numpy(), "avg", 2, divisor_override=3)
    nt.assert_close(nn.AvgPool3d(2, divisor_override=3)(x), third)
    assert nn.AdaptiveAvgPool3d((1, 2, 3))(x).shape == (1, 2, 1, 2, 3)
    assert nn.AdaptiveMaxPool3d(2, return_indices=True)(x)[1].dtype == np.int64
    up = nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1, dtype="float64")
    assert up.weight.shape == (2, 3, 3, 3, 3)
    assert up(x, output_size=(8, 10, 12)).shape == (1, 3, 8, 10, 12)
    assert up(x).shape == (1, 3, 7, 9, 11)


def test_batch_norm3d_normalises_per_channel_and_tracks_statistics():
    x = RNG.standard_normal((3, 2, 2, 3, 2)) * 2 + 1
    bn = nn.BatchNorm3d(2, dtype="float64")
    out = bn(nb.tensor(x)).numpy()
    mean = x.mean(axis=(0, 2, 3, 4), keepdims=True)
    var = x.var(axis=(0, 2, 3, 4), keepdims=True)
    nt.assert_close(out, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-10)
    unbiased = x.var(axis=(0, 2, 3, 4), ddof=1)
    nt.assert_close(bn.running_mean, 0.1 * mean.ravel(), rtol=1e-10, atol=1e-12)
    nt.assert_close(bn.running_var, 0.9 + 0.1 * unbiased, rtol=1e-10, atol=1e-12)
    bn.eval()
    expected = (x - bn.running_mean.numpy().reshape(1, -1, 1, 1, 1)) / np.sqrt(
        bn.running_var.numpy().reshape(1, -1, 1, 1, 1) + 1e-5
    )
    nt.assert_close(bn(nb.tensor(x)), expected, rtol=1e-10, atol=1e-10)
    with pytest.raises(nb.ShapeError, match="BatchNorm3d expects a 5-D input"):
        bn(nb.zeros(2, 2, 3, 3))


def test_instance_norm3d_and_its_gradient():
    x = RNG.standard_normal((2, 3, 2, 3, 4))
    norm = nn.InstanceNorm3d(3, affine=True, dtype="float64")
    mean = x.mean(axis=(2, 3, 4), keepdims=True)
    var = x.var(axis=(2, 3, 4), keepdims=True)
    nt.assert_close(norm(nb.tensor(x)), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-10, atol=1e-10)
    nt.assert_close(norm(nb.tensor(x[1])), ((x - mean) / np.sqrt(var + 1e-5))[1], atol=1e-10)
    with pytest.raises(nb.ShapeError, match="InstanceNorm3d: expects a 4-D or 5-D input"):
        norm(nb.zeros(3, 4, 4))
    nt.gradcheck(lambda a: F.instance_norm(a), [_leaf(x)])
    nt.gradcheck(
        lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True),
        [_leaf(x), _leaf(RNG.standard_normal(3)), _leaf(RNG.standard_normal(3))],
    )


# ---------------------------------------------------------------- PyTorch parity


def _compare_with_torch(ours, theirs, *arrays):
    """Values and the gradients of a random cotangent, nbflow against PyTorch."""
    torch = pytest.importorskip("torch")
    args = [_leaf(a) for a in arrays]
    targs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = ours(*args), theirs(*targs)
    nt.assert_close(out, tout.detach().numpy(), rtol=1e-10, atol=1e-10)
    seed = RNG.standard_normal(tuple(out.shape))
    out.backward(nb.tensor(seed, dtype="float64"))
    tout.backward(torch.tensor(seed))
    for a, t in zip(args, targs):
        nt.assert_close(a.grad, t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv3d_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    xs, ws, attrs = CONV_CASES[case]
    arrays = [RNG.standard_normal(s) for s in (xs, ws, ws[:1])]
    _compare_with_torch(
        lambda *a: F.conv3d(*a, **attrs),
        lambda *a: torch.nn.functional.conv3d(*a, **attrs),
        *arrays,
    )


@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_conv_transpose3d_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    xs, ws, attrs = TRANSPOSE_CASES[case]
    arrays = [RNG.standard_normal(s) for s in (xs, ws)]
    _compare_with_torch(
        lambda *a: F.conv_transpose3d(*a, **attrs),
        lambda *a: torch.nn.functional.conv_transpose3d(*a, **attrs),
        *arrays,
    )


@pytest.mark.parametrize(
    "name,attrs",
    [("max_pool3d", a) for a in MAX_CASES]
    + [("avg_pool3d", a) for a in AVG_CASES]
    + [("adaptive_avg_pool3d", {"output_size": (3, 4, 2)})]
    + [("adaptive_max_pool3d", {"output_size": (3, 4, 2), "return_indices": True})],
    ids=str,
)
def test_pools_match_pytorch(name, attrs):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(F, name), getattr(torch.nn.functional, name)
    x = _distinct((2, 2, 5, 6, 7))
    if attrs.get("return_indices"):
        _, idx = ours(nb.tensor(x), **attrs)
        np.testing.assert_array_equal(idx.numpy(), theirs(torch.tensor(x), **attrs)[1].numpy())
    plain = {k: v for k, v in attrs.items() if k != "return_indices"}
    _compare_with_torch(lambda a: ours(a, **plain), lambda a: theirs(a, **plain), x)
    if name == "max_pool3d":
        ours_idx = ours(nb.tensor(x), return_indices=True, **attrs)[1]
        theirs_idx = theirs(torch.tensor(x), return_indices=True, **attrs)[1]
        np.testing.assert_array_equal(ours_idx.numpy(), theirs_idx.numpy())


def test_modules_load_pytorch_state_dicts_and_agree():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    pairs = [
        (nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1, padding_mode="reflect", dtype="float64"),
         torch.nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1, padding_mode="reflect")),
        (nn.ConvTranspose3d(2, 4, 2, stride=2, groups=2, dtype="float64"),
         torch.nn.ConvTranspose3d(2, 4, 2, stride=2, groups=2)),
        (nn.BatchNorm3d(2, dtype="float64"), torch.nn.BatchNorm3d(2)),
        (nn.InstanceNorm3d(2, affine=True, track_running_stats=True, dtype="float64"),
         torch.nn.InstanceNorm3d(2, affine=True, track_running_stats=True)),
    ]  # fmt: skip
    x = RNG.standard_normal((2, 2, 4, 4, 4))
    for ours, theirs in pairs:
        theirs.double()
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
        nt.assert_close(ours(nb.tensor(x)), theirs(torch.tensor(x)).detach().numpy(), atol=1e-10)
        for k, v in theirs.state_dict().items():  # the running statistics moved alike
            nt.assert_close(getattr(ours, k), v.numpy(), atol=1e-10)
