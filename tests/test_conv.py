"""Convolution and pooling: conv2d, conv1d, max_pool2d, avg_pool2d, adaptive_avg_pool2d.

Forward against independent numpy references for every float dtype (shape and dtype equal the
op's spec first), stride/padding/dilation/groups variants, float64 gradient checks (first and
second order), typed errors raised while the op is built, graph mode with an unknown batch
dim, and PyTorch parity when torch is installed."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import Spec
from nbflow.ops import conv_columns

FLOATS = dt.FLOATS
RNG = np.random.default_rng(0)
TOL = {dt.float16: (2e-2, 2e-2), dt.float32: (1e-4, 1e-5), dt.float64: (1e-10, 1e-12)}


def _ids(dtypes):
    return [dt.SHORT[d] for d in dtypes]


def check_spec(op, arrays, attrs, out):
    """The result's shape and dtype equal what the op's shape rule says."""
    specs = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))
    outs = out if isinstance(out, tuple) else (out,)
    for o, s in zip(outs, specs):
        assert (o.shape, o.dtype) == (s.shape, s.dtype)


def conv2d_numpy(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """Direct loops over output pixels: an independent reference (float64)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * sh : i * sh + dh * (kh - 1) + 1 : dh,
                    j * sw : j * sw + dw * (kw - 1) + 1 : dw,
                ]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out


CONV_CASES = [
    # x shape, w shape, attrs
    ((1, 2, 5, 5), (3, 2, 3, 3), {}),
    ((2, 3, 6, 7), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 2)}),
    ((2, 4, 7, 6), (6, 2, 3, 3), {"stride": 2, "padding": 1, "dilation": (2, 1), "groups": 2}),
    ((1, 4, 5, 5), (4, 1, 3, 3), {"padding": 1, "groups": 4}),  # depthwise
    ((3, 2, 4, 4), (5, 2, 1, 1), {}),  # 1x1
    ((2, 4, 6, 7), (6, 2, 2, 3), {"padding": (0, 2), "dilation": (2, 1), "groups": 2}),
]


def _pairs(attrs):
    def two(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    return {
        "stride": two(attrs.get("stride", 1)),
        "padding": two(attrs.get("padding", 0)),
        "dilation": two(attrs.get("dilation", 1)),
        "groups": attrs.get("groups", 1),
    }


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_conv2d_forward(case, dtype):
    xs, ws, attrs = CONV_CASES[case]
    x = RNG.uniform(-1, 1, xs).astype(dtype)
    w = RNG.uniform(-1, 1, ws).astype(dtype)
    out = nb.conv2d_op(nb.tensor(x), nb.tensor(w), **attrs)
    check_spec(nb.conv2d_op, [x, w], attrs, out)
    expected = conv2d_numpy(x.astype(np.float64), w.astype(np.float64), **_pairs(attrs))
    rtol, atol = TOL[dtype]
    nt.assert_close(out, expected.astype(dtype), rtol=rtol, atol=atol)
    nt.assert_close(nb.conv2d_op.ref(x, w, **attrs), expected.astype(dtype), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_gradients(case):
    xs, ws, attrs = CONV_CASES[case]
    x = nb.tensor(RNG.standard_normal(xs), requires_grad=True)
    w = nb.tensor(RNG.standard_normal(ws), requires_grad=True)
    b = nb.tensor(RNG.standard_normal(ws[0]), requires_grad=True)
    nt.gradcheck(lambda x, w, b: nb.conv2d(x, w, b, **attrs), [x, w, b])


@pytest.mark.parametrize("case", [0, 2])
def test_conv2d_second_order(case):
    xs, ws, attrs = CONV_CASES[case]
    x = nb.tensor(RNG.standard_normal(xs), requires_grad=True)
    w = nb.tensor(RNG.standard_normal(ws), requires_grad=True)
    nt.gradgradcheck(lambda x, w: nb.conv2d(x, w, **attrs), [x, w])


def test_gradient_ops_match_their_references():
    xs, ws, attrs = CONV_CASES[2]
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    g = RNG.standard_normal(nb.conv2d_op(nb.tensor(x), nb.tensor(w), **attrs).shape)
    dx = nb.conv2d_input_grad(nb.tensor(g), nb.tensor(w), nb.tensor(x), **attrs)
    dw = nb.conv2d_weight_grad(nb.tensor(x), nb.tensor(g), nb.tensor(w), **attrs)
    nt.assert_close(dx, nb.conv2d_input_grad.ref(g, w, x, **attrs))
    nt.assert_close(dw, nb.conv2d_weight_grad.ref(x, g, w, **attrs))
    # adjoint identity: <conv(x, w), g> = <x, input_grad(g, w)> = <w, weight_grad(x, g)>
    y = conv2d_numpy(x, w, **_pairs(attrs))
    assert np.isclose((y * g).sum(), (x * dx.numpy()).sum())
    assert np.isclose((y * g).sum(), (w * dw.numpy()).sum())


@pytest.mark.parametrize("shifted", [False, True], ids=["columns", "shifted"])
@pytest.mark.parametrize("threaded", [False, True], ids=["in-turn", "threaded"])
@pytest.mark.parametrize("chunk_columns", [1, 60, 1 << 30])
@pytest.mark.parametrize("small", [0, 1024], ids=["one-product", "small-blocks"])
def test_batch_loops_in_chunks_and_parts(monkeypatch, shifted, threaded, chunk_columns, small):
    """conv2d's batch loops with one image, a few or all of a part's per chunk, in turn or in
    parts over numba's threads (7 images: parts of 3 and 4; one image: the forward's columns
    in parts), unfolding or shifting (strided too), each product in one call or in blocks of
    columns (a limit of 1024 multiply-adds splits the first case's products, shifted and
    unfolded): the three ops against their references, in float64 and float32."""
    monkeypatch.setattr(conv_columns.blas, "small_product_limit", lambda: small)
    monkeypatch.setattr(conv_columns, "CHUNK_COLUMNS", chunk_columns)
    monkeypatch.setattr(conv_columns, "SHIFTED_CHUNK_COLUMNS", chunk_columns)
    monkeypatch.setattr(conv_columns, "THREADED_WORK", 0 if threaded else 1 << 62)
    monkeypatch.setattr(conv_columns, "SHIFTED_CHANNELS", 1 if shifted else 1 << 30)
    monkeypatch.setattr(conv_columns, "SHIFTED_STRIDED_COLUMNS", 0)
    for xs, ws, attrs in CONV_CASES:
        for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
            x = RNG.standard_normal((7, *xs[1:])).astype(dtype)
            w, b = RNG.standard_normal(ws).astype(dtype), RNG.standard_normal(ws[0]).astype(dtype)
            out = nb.conv2d_op(nb.tensor(x), nb.tensor(w), nb.tensor(b), **attrs)
            nt.assert_close(out, nb.conv2d_op.ref(x, w, b, **attrs), rtol=tol, atol=tol)
            # one image, fewer than the threads: the forward splits its columns over them
            one = nb.conv2d_op(nb.tensor(x[:1]), nb.tensor(w), nb.tensor(b), **attrs)
            nt.assert_close(one, nb.conv2d_op.ref(x[:1], w, b, **attrs), rtol=tol, atol=tol)
            g = RNG.standard_normal(out.shape).astype(dtype)
            dx = nb.conv2d_input_grad(nb.tensor(g), nb.tensor(w), nb.tensor(x), **attrs)
            dw = nb.conv2d_weight_grad(nb.tensor(x), nb.tensor(g), nb.tensor(w), **attrs)
            nt.assert_close(dx, nb.conv2d_input_grad.ref(g, w, x, **attrs), rtol=tol, atol=tol)
            nt.assert_close(dw, nb.conv2d_weight_grad.ref(x, g, w, **attrs), rtol=tol, atol=tol)


@pytest.mark.parametrize("stride", [1, 2, (3, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_1x1_convolution_of_one_image_is_one_product(stride, dtype):
    x = RNG.uniform(-1, 1, (1, 3, 5, 7)).astype(dtype)
    w, b = RNG.uniform(-1, 1, (4, 3, 1, 1)).astype(dtype), RNG.uniform(-1, 1, 4).astype(dtype)
    columns = AssertionError("a 1x1 convolution of one image needs no columns")
    with (
        mock.patch.object(conv_columns, "_forward_images", side_effect=columns),
        mock.patch.object(conv_columns, "_forward_split", side_effect=columns),
    ):
        out = nb.conv2d_op(nb.tensor(x), nb.tensor(w), nb.tensor(b), stride=stride)
    pairs = _pairs({"stride": stride})
    expected = conv2d_numpy(x.astype(np.float64), w.astype(np.float64), **pairs)
    rtol, atol = TOL[np.dtype(dtype)]
    nt.assert_close(out, (expected + b[:, None, None]).astype(dtype), rtol=rtol, atol=atol)


@st.composite
def conv_geometries(draw):
    """A small convolution: batch, groups, channels a group, kernel, stride, padding and
    dilation per axis, and an input large enough for one output position or more."""
    groups = draw(st.sampled_from([1, 2]))
    channels, outs = (groups * draw(st.integers(1, 3)) for _ in range(2))
    kernel, stride, dilation, padding = (
        tuple(draw(st.integers(lo, hi)) for _ in range(2))
        for lo, hi in ((1, 3), (1, 3), (1, 2), (0, 2))
    )
    size = [
        draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 9))
        for k, d, p in zip(kernel, dilation, padding)
    ]
    x_shape = (draw(st.integers(1, 3)), channels, *size)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    return x_shape, (outs, channels // groups, *kernel), attrs


@given(conv_geometries(), st.booleans(), st.booleans())
def test_conv2d_ops_on_any_geometry(geometry, shifted, threaded):
    """The three conv2d ops on random geometries (strides 1-3: the planes some tap reads, or
    none), by shifted products or by columns, in turn or over the threads: the forward against
    the direct loops above, the gradients against their references, in float64."""
    xs, ws, attrs = geometry
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    with (
        mock.patch.object(conv_columns, "SHIFTED_CHANNELS", 1 if shifted else 1 << 30),
        mock.patch.object(conv_columns, "SHIFTED_STRIDED_COLUMNS", 0),
        mock.patch.object(conv_columns, "THREADED_WORK", 0 if threaded else 1 << 62),
    ):
        out = nb.conv2d_op(nb.tensor(x), nb.tensor(w), **attrs)
        g = RNG.standard_normal(out.shape)
        dx = nb.conv2d_input_grad(nb.tensor(g), nb.tensor(w), nb.tensor(x), **attrs)
        dw = nb.conv2d_weight_grad(nb.tensor(x), nb.tensor(g), nb.tensor(w), **attrs)
    nt.assert_close(out, conv2d_numpy(x, w, **attrs), rtol=1e-10, atol=1e-10)
    nt.assert_close(dx, nb.conv2d_input_grad.ref(g, w, x, **attrs), rtol=1e-10, atol=1e-10)
    nt.assert_close(dw, nb.conv2d_weight_grad.ref(x, g, w, **attrs), rtol=1e-10, atol=1e-10)


def test_conv1d_is_conv2d_of_height_one():
    x = RNG.standard_normal((2, 4, 9))
    w = RNG.standard_normal((6, 2, 3))
    b = RNG.standard_normal(6)
    out = nb.conv1d(nb.tensor(x), nb.tensor(w), nb.tensor(b), stride=2, padding=1, groups=2)
    expected = (
        conv2d_numpy(x[:, :, None], w[:, :, None], (1, 2), (0, 1), (1, 1), groups=2)[:, :, 0]
        + b[:, None]
    )
    nt.assert_close(out, expected)
    args = [nb.tensor(a, requires_grad=True) for a in (x, w, b)]
    nt.gradcheck(lambda x, w, b: nb.conv1d(x, w, b, dilation=2, padding="same", groups=2), args)
    unbatched = nb.conv1d(nb.tensor(x[0]), nb.tensor(w), stride=2, groups=2)
    assert unbatched.shape == (6, 4)


def test_conv2d_padding_strings_and_unbatched_input():
    x = RNG.standard_normal((3, 6, 5))
    w = RNG.standard_normal((2, 3, 3, 5))
    same = nb.conv2d(nb.tensor(x), nb.tensor(w), padding="same")
    assert same.shape == (2, 6, 5)
    nt.assert_close(same, conv2d_numpy(x[None], w, padding=(1, 2))[0])
    assert nb.conv2d(nb.tensor(x), nb.tensor(w), padding="valid").shape == (2, 4, 1)
    with pytest.raises(nb.AttrError, match="stride 1"):
        nb.conv2d(nb.tensor(x), nb.tensor(w), padding="same", stride=2)
    # an even kernel (or dilation): PyTorch's symmetric padding plus one more after the input
    even = nb.conv2d(nb.tensor(x), nb.tensor(w[:, :, :2, :4]), padding="same", dilation=(1, 3))
    assert even.shape == (2, 6, 5)
    padded = np.pad(x[None], ((0, 0), (0, 0), (0, 1), (4, 5)))
    nt.assert_close(even, conv2d_numpy(padded, w[:, :, :2, :4], dilation=(1, 3))[0])
    args = [nb.tensor(a[..., :4], requires_grad=True) for a in (x[None], w)]
    nt.gradcheck(lambda x, w: nb.conv2d(x, w, padding="same"), args)
    x1, w1 = RNG.standard_normal((2, 3, 7)), RNG.standard_normal((4, 3, 4))
    nt.assert_close(
        nb.conv1d(nb.tensor(x1), nb.tensor(w1), padding="same"),
        conv2d_numpy(np.pad(x1, ((0, 0), (0, 0), (1, 2)))[:, :, None], w1[:, :, None])[:, :, 0],
    )


def test_conv2d_errors_are_typed_and_name_the_shapes():
    x, w = nb.zeros(1, 3, 5, 5), nb.zeros(4, 2, 3, 3)
    with pytest.raises(nb.ShapeError, match=r"conv2d\(x: f32\[1,3,5,5\], weight: f32\[4,2,3,3\]\)"):
        nb.conv2d(x, w)
    with pytest.raises(nb.ShapeError, match=r"weight of shape \(4, 3, 3\) must be 4-D"):
        nb.conv2d(x, nb.zeros(4, 3, 3))
    with pytest.raises(nb.ShapeError, match=r"input of shape \(5, 5\)"):
        nb.conv2d(nb.zeros(5, 5), w)
    with pytest.raises(nb.ShapeError, match="smaller than the kernel"):
        nb.conv2d(nb.zeros(1, 2, 2, 2), w)
    with pytest.raises(nb.ShapeError, match="not divisible by groups=2"):
        nb.conv2d(nb.zeros(1, 3, 5, 5), nb.zeros(4, 1, 3, 3), groups=2)
    with pytest.raises(nb.AttrError, match="stride must be >= 1"):
        nb.conv2d(nb.zeros(1, 2, 5, 5), w, stride=0)
    with pytest.raises(nb.KernelNotFoundError):
        nb.conv2d(nb.zeros(1, 2, 5, 5, dtype="bool"), nb.zeros(4, 2, 3, 3, dtype="bool"))


def test_integer_convolutions_and_pools_as_pytorchs():
    """PyTorch convolves and pools integer tensors (no gradient): exact integer results."""
    x, w = RNG.integers(-9, 9, (2, 4, 7, 6)), RNG.integers(-9, 9, (6, 2, 3, 3))
    got = nb.conv2d(nb.tensor(x), nb.tensor(w), stride=2, padding=1, groups=2)
    want = conv2d_numpy(x, w, stride=(2, 2), padding=(1, 1), groups=2)
    assert got.dtype == nb.int64 and np.array_equal(got.numpy(), want)
    pooled = nb.avg_pool2d(nb.tensor(-x), kernel_size=(2,))
    mean = (-x[:, :, :6]).reshape(2, 4, 3, 2, 3, 2).sum(axis=(3, 5)) / 4
    assert np.array_equal(pooled.numpy(), np.trunc(mean).astype(np.int64))  # toward zero


def test_graph_mode_errors_at_build_time_and_unknown_batch():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 2, 8, 8])
        with pytest.raises(nb.ShapeError, match=r"weight: f32\[4,3,3,3\]"):
            nb.conv2d(x, nb.zeros(4, 3, 3, 3))  # fails while building: no kernel has run
        y = nb.max_pool2d(nb.relu(nb.conv2d(x, nb.ones(4, 2, 3, 3), padding=1)), 2)
        z = nb.adaptive_avg_pool2d(nb.avg_pool2d(y, 2), 1)
    assert y.shape == (-1, 4, 4, 4) and z.shape == (-1, 4, 1, 1)
    data = RNG.standard_normal((3, 2, 8, 8)).astype(np.float32)
    (out,) = nb.Executor().run(main, {"x": data}, [z], nb.Scope())
    eager = nb.max_pool2d(nb.relu(nb.conv2d(nb.tensor(data), nb.ones(4, 2, 3, 3), padding=1)), 2)
    nt.assert_close(out, nb.adaptive_avg_pool2d(nb.avg_pool2d(eager, 2), 1).numpy(), rtol=1e-5)


# ---------------------------------------------------------------- pooling


def max_pool_numpy(x, k, s, p):
    n, c, h, w = x.shape
    xp = np.full((n, c, h + 2 * p, w + 2 * p), -np.inf)
    xp[:, :, p : p + h, p : p + w] = x
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = xp[:, :, i * s : i * s + k, j * s : j * s + k].max(axis=(2, 3))
    return out


def avg_pool_numpy(x, k, s, p):
    """count_include_pad=True: zero padding counts in the divisor k * k."""
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * p, w + 2 * p))
    xp[:, :, p : p + h, p : p + w] = x
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = xp[:, :, i * s : i * s + k, j * s : j * s + k].mean(axis=(2, 3))
    return out


POOL_CASES = [(2, 2, 0), (3, 2, 1), (3, 1, 1), (2, 1, 0)]


@pytest.mark.parametrize("k,s,p", POOL_CASES)
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_pool_forward(k, s, p, dtype):
    x = RNG.uniform(-2, 2, (2, 3, 6, 5)).astype(dtype)
    attrs = {"kernel_size": k, "stride": s, "padding": p}
    out, indices = nb.max_pool2d_op(nb.tensor(x), **attrs)
    check_spec(nb.max_pool2d_op, [x], attrs, (out, indices))
    nt.assert_close(out, max_pool_numpy(x.astype(np.float64), k, s, p).astype(dtype))
    # the indices point at the maxima
    picked = np.take_along_axis(x.reshape(2, 3, -1), indices.numpy().reshape(2, 3, -1), 2)
    nt.assert_close(picked.reshape(out.shape), out)
    avg = nb.avg_pool2d_op(nb.tensor(x), **attrs)
    check_spec(nb.avg_pool2d_op, [x], attrs, avg)
    rtol, atol = TOL[dtype]
    expected = avg_pool_numpy(x.astype(np.float64), k, s, p).astype(dtype)
    nt.assert_close(avg, expected, rtol=rtol, atol=atol)
    nt.assert_close(nb.avg_pool2d_op.ref(x, **attrs), expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_adaptive_avg_pool_forward(dtype):
    x = RNG.uniform(-2, 2, (2, 3, 6, 5)).astype(dtype)
    out = nb.adaptive_avg_pool2d(nb.tensor(x), (3, 1))
    check_spec(nb.adaptive_avg_pool2d_op, [x], {"output_size": (3, 1)}, out)
    expected = x.astype(np.float64).reshape(2, 3, 3, 2, 5).mean(axis=(3, 4))[..., None]
    rtol, atol = TOL[dtype]
    nt.assert_close(out, expected.astype(dtype), rtol=rtol, atol=atol)
    # bins that overlap: width 5 -> 3 takes columns [0, 2), [1, 4), [3, 5)
    y = nb.adaptive_avg_pool2d(nb.tensor(x), (2, 3)).numpy()
    nt.assert_close(
        y[:, :, 0, 1], x[:, :, :3, 1:4].astype(np.float64).mean(axis=(2, 3)).astype(dtype)
    )
    assert nb.adaptive_avg_pool2d(nb.tensor(x), (None, 2)).shape == (2, 3, 6, 2)


@pytest.mark.parametrize(
    "fn,attrs",
    [
        (nb.max_pool2d, {"kernel_size": 2}),
        (nb.max_pool2d, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
        (nb.max_pool2d, {"kernel_size": 2, "dilation": 2}),
        (nb.avg_pool2d, {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
        (nb.avg_pool2d, {"kernel_size": 2, "count_include_pad": False, "padding": 1}),
        (nb.avg_pool2d, {"kernel_size": 2, "divisor_override": 3}),
        (nb.adaptive_avg_pool2d, {"output_size": (2, 3)}),
    ],
)
def test_pool_gradients(fn, attrs):
    x = nb.tensor(RNG.permutation(70).reshape(1, 2, 5, 7) / 10.0, requires_grad=True)
    nt.gradcheck(lambda x: fn(x, **attrs), [x])
    nt.gradgradcheck(lambda x: fn(x, **attrs) * fn(x, **attrs), [x])


def test_pool_errors():
    with pytest.raises(nb.AttrError, match="at most half"):
        nb.max_pool2d(nb.zeros(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(nb.ShapeError, match=r"input of shape \(1, 1, 1, 1\)"):
        nb.max_pool2d(nb.zeros(1, 1, 1, 1), 2)
    with pytest.raises(nb.ShapeError, match="must be 4-D"):
        nb.avg_pool2d(nb.zeros(4, 4), 2)
    with pytest.raises(nb.AttrError, match="divisor_override"):
        nb.avg_pool2d(nb.zeros(1, 1, 4, 4), 2, divisor_override=0)
    assert nb.max_pool2d(nb.zeros(1, 4, 4), 2).shape == (1, 2, 2)  # unbatched


# ---------------------------------------------------------------- PyTorch parity


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    xs, ws, attrs = CONV_CASES[case]
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    args = [nb.tensor(a, requires_grad=True) for a in (x, w, b)]
    targs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = nb.conv2d(*args, **attrs)
    tout = torch.nn.functional.conv2d(*targs, **attrs)
    nt.assert_close(out, tout.detach().numpy())
    seed = RNG.standard_normal(out.shape)
    out.backward(nb.tensor(seed, dtype=nb.float64))
    tout.backward(torch.tensor(seed))
    for a, t in zip(args, targs):
        nt.assert_close(a.grad, t.grad.numpy())


@pytest.mark.parametrize(
    "name,attrs",
    [
        ("max_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
        ("max_pool2d", {"kernel_size": 2, "dilation": 2, "padding": 1}),
        ("avg_pool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
        (
            "avg_pool2d",
            {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        ),
        ("adaptive_avg_pool2d", {"output_size": (4, 3)}),
    ],
)
def test_pooling_matches_pytorch(name, attrs):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 7, 6))
    xt = torch.tensor(x, requires_grad=True)
    xn = nb.tensor(x, requires_grad=True)
    out = getattr(nb, name)(xn, **attrs)
    tout = getattr(torch.nn.functional, name)(xt, **attrs)
    nt.assert_close(out, tout.detach().numpy())
    seed = RNG.standard_normal(out.shape)
    out.backward(nb.tensor(seed, dtype=nb.float64))
    tout.backward(torch.tensor(seed))
    nt.assert_close(xn.grad, xt.grad.numpy())
    if name == "max_pool2d":
        _, idx = nb.max_pool2d(xn, return_indices=True, **attrs)
        _, tidx = torch.nn.functional.max_pool2d(xt, return_indices=True, **attrs)
        np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


def test_max_pool_picks_a_nan_and_points_at_it():
    # PyTorch's rule: a NaN in a window is its max; the index says where it is
    x = RNG.uniform(-2, 2, (1, 2, 4, 4))
    x[0, 1, 2, 1] = np.nan
    out, idx = nb.max_pool2d(nb.tensor(x), kernel_size=2, stride=2, return_indices=True)
    expected = max_pool_numpy(np.nan_to_num(x, nan=np.inf), 2, 2, 0)
    nan_window = (0, 1, 1, 0)  # the window holding x[0, 1, 2, 1]
    assert np.isnan(out.numpy()[nan_window]) and idx.numpy()[nan_window] == 2 * 4 + 1
    finite = ~np.isnan(out.numpy())
    nt.assert_close(out.numpy()[finite], expected[finite])
    assert finite.sum() == out.size - 1
