"""More of PyTorch's spatial layers (nbflow/nn/functional/): transposed convolutions, 1-d and
adaptive pools, pixel and channel shuffles, unfold / fold, pad's modes, the padding modules and
the upsampling aliases. Each is checked against a numpy reference written here, against
PyTorch in float64 when it imports, for gradients (finite differences, and PyTorch's), for
typed errors, and once in graph mode."""

import math

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt

RNG = np.random.default_rng(0)
TOL = {"rtol": 1e-10, "atol": 1e-12}


def t(a, grad=False):
    return nb.tensor(np.asarray(a, np.float64), requires_grad=grad)


def close(got, expected):
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    np.testing.assert_allclose(got, expected, **TOL)


# ---------------------------------------------------------------- numpy references


def conv_transpose_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    """Scatter every input pixel times its kernel into the (uncropped) output, then crop."""
    n, cin, h, wd = x.shape
    cg, og, kh, kw = w.shape[0] // groups, w.shape[1], w.shape[2], w.shape[3]
    pairs = [(v, v) if isinstance(v, int) else v for v in (stride, padding, output_padding)]
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = (
        *pairs,
        (dilation,) * 2 if isinstance(dilation, int) else dilation,
    )
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + opw))  # fmt: skip
    for g in range(groups):
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for c in range(kw):
                        full[:, g * og : (g + 1) * og, i * sh + a * dh, j * sw + c * dw] += (
                            x[:, g * cg : (g + 1) * cg, i, j] @ w[g * cg : (g + 1) * cg, :, a, c]
                        )
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = full[:, :, ph : ph + oh, pw : pw + ow]
    return out if b is None else out + b[:, None, None]


def pool1d_ref(x, k, s, p, d, kind, count_include_pad=True):
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p, p)), constant_values=fill)
    n_out = (x.shape[2] + 2 * p - d * (k - 1) - 1) // s + 1
    out, idx = np.empty(x.shape[:2] + (n_out,)), np.empty(x.shape[:2] + (n_out,), np.int64)
    for i in range(n_out):
        taps = i * s + d * np.arange(k)
        window = xp[:, :, taps]
        if kind == "max":
            out[:, :, i] = window.max(axis=2)
            idx[:, :, i] = taps[window.argmax(axis=2)] - p
        else:
            inside = ((taps >= p) & (taps < p + x.shape[2])).sum()
            out[:, :, i] = window.sum(axis=2) / (k if count_include_pad else inside)
    return out, idx


def bins(n, m):
    return [((i * n) // m, -(-((i + 1) * n) // m)) for i in range(m)]


def adaptive2d_ref(x, oh, ow, kind):
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (oh, ow))
    idx = np.empty(x.shape[:-2] + (oh, ow), np.int64)
    for i, (h0, h1) in enumerate(bins(h, oh)):
        for j, (w0, w1) in enumerate(bins(w, ow)):
            window = x[..., h0:h1, w0:w1].reshape(x.shape[:-2] + (-1,))
            if kind == "avg":
                out[..., i, j] = window.mean(axis=-1)
                continue
            out[..., i, j] = window.max(axis=-1)
            r, c = np.divmod(window.argmax(axis=-1), w1 - w0)
            idx[..., i, j] = (h0 + r) * w + w0 + c
    return out, idx


def pixel_shuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r))
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[:, ch, i::r, j::r] = x[:, ch * r * r + i * r + j]
    return out


def unfold_ref(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.empty((n, c, k[0], k[1], oh * ow))
    for bi in range(oh):
        for bj in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    out[:, :, a, b, bi * ow + bj] = xp[
                        :, :, bi * s[0] + a * d[0], bj * s[1] + b * d[1]
                    ]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


def fold_ref(cols, size, k, d, p, s):
    """The adjoint of unfold_ref, column by column: sum each block back where it came from."""
    n, ckk, blocks = cols.shape
    c = ckk // (k[0] * k[1])
    out = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    ow = (size[1] + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    cols = cols.reshape(n, c, k[0], k[1], blocks)
    for blk in range(blocks):
        bi, bj = divmod(blk, ow)
        for a in range(k[0]):
            for b in range(k[1]):
                out[:, :, bi * s[0] + a * d[0], bj * s[1] + b * d[1]] += cols[:, :, a, b, blk]
    return out[:, :, p[0] : p[0] + size[0], p[1] : p[1] + size[1]]


NUMPY_PAD = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


# ---------------------------------------------------------------- transposed convolution

CT_CASES = [
    # stride, padding, output_padding, groups, dilation
    ((1, 1), (0, 0), (0, 0), 1, (1, 1)),
    ((2, 2), (1, 1), (1, 1), 1, (1, 1)),
    ((2, 3), (1, 0), (1, 2), 2, (1, 1)),
    ((1, 2), (0, 1), (0, 1), 2, (2, 1)),
    ((1, 1), (1, 0), (2, 0), 1, (3, 1)),  # output_padding >= stride (< dilation)
]


def _ct_inputs(groups, bias=True):
    x = RNG.standard_normal((2, 4, 4, 3))
    w = RNG.standard_normal((4, 3, 3, 2))
    b = RNG.standard_normal(3 * groups) if bias else None
    return x, w, b


@pytest.mark.parametrize("case", CT_CASES)
def test_conv_transpose2d_matches_numpy(case):
    stride, padding, output_padding, groups, dilation = case
    x, w, b = _ct_inputs(groups)
    got = F.conv_transpose2d(t(x), t(w), t(b), stride, padding, output_padding, groups, dilation)
    close(got, conv_transpose_ref(x, w, b, *case))


@pytest.mark.parametrize("case", CT_CASES[1:4])
def test_conv_transpose2d_gradients(case):
    x, w, b = _ct_inputs(case[3])
    nt.gradcheck(lambda *a: F.conv_transpose2d(*a, *case), [t(x, True), t(w, True), t(b, True)])


def test_conv_transpose2d_is_conv2d_input_gradient():
    """<conv_transpose2d(g, w), v> = <g, conv2d(v, w)>: the adjoint, with stride and groups."""
    g, w = RNG.standard_normal((2, 4, 3, 3)), RNG.standard_normal((4, 1, 3, 3))
    v = RNG.standard_normal((2, 2, 7, 7))
    lhs = np.sum(F.conv_transpose2d(t(g), t(w), stride=2, groups=2).numpy() * v)
    rhs = np.sum(g * F.conv2d(t(v), t(w), stride=2, groups=2).numpy())
    assert math.isclose(lhs, rhs, rel_tol=1e-10)


def test_conv_transpose1d_and_unbatched():
    x, w, b = RNG.standard_normal((2, 4, 5)), RNG.standard_normal((4, 3, 3)), RNG.standard_normal(6)
    got = F.conv_transpose1d(t(x), t(w), t(b), 2, 1, 1, 2, 1)
    ref = conv_transpose_ref(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (0, 1), 2, (1, 1))
    close(got, ref[:, :, 0])
    ref = conv_transpose_ref(x[:1, :, None], w[:, :, None], None, (1, 2), 0, 0, 1, 1)
    close(F.conv_transpose1d(t(x[0]), t(w), stride=2), ref[0, :, 0])  # unbatched
    nt.gradcheck(lambda *a: F.conv_transpose1d(*a, stride=3, dilation=2), [t(x, True), t(w, True)])


@pytest.mark.parametrize("case", CT_CASES)
def test_conv_transpose2d_matches_pytorch_with_gradients(case):
    torch = pytest.importorskip("torch")
    stride, padding, output_padding, groups, dilation = case
    x, w, b = _ct_inputs(groups)
    ours = [t(a, True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = F.conv_transpose2d(*ours, *case)
    expected = torch.nn.functional.conv_transpose2d(
        *theirs, stride, padding, output_padding, groups, dilation
    )
    close(out, expected.detach().numpy())
    cot = RNG.standard_normal(out.shape)
    (out * t(cot)).sum().backward()
    expected.backward(torch.from_numpy(cot))
    for a, b_ in zip(ours, theirs):
        close(a.grad, b_.grad.numpy())


def test_conv_transpose_modules_match_pytorch():
    torch = pytest.importorskip("torch")
    for dims, kw in ((2, {"stride": 2, "padding": 1, "groups": 2}), (1, {"dilation": 2})):
        ours = getattr(nn, f"ConvTranspose{dims}d")(4, 6, 3, dtype="float64", **kw)
        theirs = getattr(torch.nn, f"ConvTranspose{dims}d")(4, 6, 3, **kw).double()
        shapes = {k: tuple(v.shape) for k, v in ours.named_parameters()}
        assert shapes == {k: tuple(v.shape) for k, v in theirs.named_parameters()}
        # PyTorch's init: uniform(+-1/sqrt(fan_in)), fan_in = out_channels / groups * kernel
        fan_in = 6 // kw.get("groups", 1) * 3**dims
        for p in ours.parameters():
            assert np.abs(p.numpy()).max() <= 1 / math.sqrt(fan_in)
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
        x = RNG.standard_normal((2, 4) + (5,) * dims)
        close(ours(t(x)), theirs(torch.from_numpy(x)).detach().numpy())
    m, tm = (
        nn.ConvTranspose2d(4, 2, 3, stride=2, dtype="float64"),
        torch.nn.ConvTranspose2d(4, 2, 3, stride=2),
    )
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.double().state_dict().items()})
    x = RNG.standard_normal((1, 4, 3, 3))
    expected = tm(torch.from_numpy(x), output_size=[8, 8]).detach().numpy()
    assert expected.shape == (1, 2, 8, 8)
    close(m(t(x), output_size=(1, 2, 8, 8)), expected)
    with pytest.raises(nb.ShapeError, match="ConvTranspose2d: output_size"):
        m(t(x), output_size=(9, 9))


def test_conv_transpose_errors_are_typed_and_named():
    x, w = t(RNG.standard_normal((1, 4, 3, 3))), t(RNG.standard_normal((4, 2, 3, 3)))
    with pytest.raises(nb.ShapeError, match="conv_transpose2d: input of shape"):
        F.conv_transpose2d(t(np.ones((1, 1, 4, 3, 3))), w)
    with pytest.raises(nb.ShapeError, match="conv_transpose2d: weight"):
        F.conv_transpose2d(x, t(np.ones((4, 2, 3))))
    with pytest.raises(nb.ShapeError, match="has 4 channels"):
        F.conv_transpose2d(x, t(np.ones((3, 2, 3, 3))))
    with pytest.raises(nb.ShapeError, match="not divisible by groups=3"):
        F.conv_transpose2d(t(np.ones((1, 4, 3, 3))), w, groups=3)
    with pytest.raises(nb.AttrError, match="output_padding"):
        F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(nb.ShapeError, match="not positive"):
        F.conv_transpose2d(t(np.ones((1, 4, 1, 1))), w, padding=2)
    with pytest.raises(nb.AttrError, match="conv_transpose1d: stride"):
        F.conv_transpose1d(t(np.ones((1, 4, 3))), t(np.ones((4, 2, 3))), stride=0)
    with pytest.raises(nb.ShapeError, match="bias"):
        F.conv_transpose2d(x, w, t(np.ones(3)))


# ---------------------------------------------------------------- 1-d pools


@pytest.mark.parametrize("k, s, p, d", [(2, None, 0, 1), (3, 2, 1, 1), (2, 1, 1, 2)])
def test_pool1d_matches_numpy(k, s, p, d):
    x = RNG.standard_normal((2, 3, 9))
    out, idx = F.max_pool1d(t(x), k, s, p, d, return_indices=True)
    ref, ref_idx = pool1d_ref(x, k, s or k, p, d, "max")
    close(out, ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    close(nn.MaxPool1d(k, s, p, d)(t(x[0])), ref[0])  # unbatched
    if d == 1:
        for include in (True, False):
            avg = F.avg_pool1d(t(x), k, s, p, count_include_pad=include)
            close(avg, pool1d_ref(x, k, s or k, p, 1, "avg", include)[0])
        close(nn.AvgPool1d(k, s, p)(t(x)), pool1d_ref(x, k, s or k, p, 1, "avg")[0])
    nt.gradcheck(lambda a: F.max_pool1d(a, k, s, p, d), [t(x, True)])
    nt.gradcheck(lambda a: F.avg_pool1d(a, k, s, min(p, k // 2)), [t(x, True)])


@pytest.mark.parametrize("size", [1, 3, 4, 7])
def test_adaptive_pools_1d_match_numpy(size):
    x = RNG.standard_normal((2, 3, 7))
    for kind, fn in (("avg", F.adaptive_avg_pool1d), ("max", F.adaptive_max_pool1d)):
        ref, ref_idx = adaptive2d_ref(x[:, :, None], 1, size, kind)
        close(fn(t(x), size), ref[:, :, 0])
        close(fn(t(x[1]), size), ref[1, :, 0])
        nt.gradcheck(lambda a, fn=fn: fn(a, size), [t(x, True)])
    out, idx = F.adaptive_max_pool1d(t(x), size, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), ref_idx[:, :, 0])
    close(
        nn.AdaptiveAvgPool1d(size)(t(x)), adaptive2d_ref(x[:, :, None], 1, size, "avg")[0][:, :, 0]
    )
    close(nn.AdaptiveMaxPool1d(size, True)(t(x))[0], out.numpy())


@pytest.mark.parametrize("size", [(2, 3), 3, (4, None), (5, 6), (1, 1)])
def test_adaptive_max_pool2d_matches_numpy(size):
    x = RNG.standard_normal((2, 3, 5, 6))
    oh, ow = (size, size) if isinstance(size, int) else size
    ref, ref_idx = adaptive2d_ref(x, oh, 6 if ow is None else ow, "max")
    out, idx = F.adaptive_max_pool2d(t(x), size, return_indices=True)
    close(out, ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    close(nn.AdaptiveMaxPool2d(size)(t(x[0])), ref[0])
    nt.gradcheck(lambda a: F.adaptive_max_pool2d(a, size), [t(x, True)])


def test_pools_match_pytorch_with_gradients():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x1, x2 = RNG.standard_normal((2, 3, 10)), RNG.standard_normal((2, 3, 7, 9))
    calls = [
        ("max_pool1d", x1, (3, 2, 1, 2, True)),
        ("max_pool1d", x1, (4, 3, 2, 1, False)),
        ("avg_pool1d", x1, (3, 2, 1, True, False)),
        ("avg_pool1d", x1, (4, 1, 2, False, True)),
        ("adaptive_avg_pool1d", x1, (4,)),
        ("adaptive_max_pool1d", x1, (4,)),
        ("adaptive_max_pool2d", x2, ((3, 4),)),
        ("adaptive_max_pool2d", x2, ((7, 2),)),
    ]
    for name, x, args in calls:
        ours, theirs = t(x, True), torch.tensor(x, requires_grad=True)
        out, expected = getattr(F, name)(ours, *args), getattr(tf, name)(theirs, *args)
        close(out, expected.detach().numpy())
        cot = RNG.standard_normal(out.shape)
        (out * t(cot)).sum().backward()
        expected.backward(torch.from_numpy(cot))
        close(ours.grad, theirs.grad.numpy())
    for name, x, args in (("adaptive_max_pool2d", x2, ((3, 4),)), ("max_pool1d", x1, (3, 2, 1))):
        _, idx = getattr(F, name)(t(x), *args, return_indices=True)
        _, expected = getattr(tf, name)(torch.from_numpy(x), *args, return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), expected.numpy())


def test_pool_errors_are_typed_and_named():
    x = t(np.ones((2, 3, 4)))
    with pytest.raises(nb.ShapeError, match="max_pool1d: input of shape"):
        F.max_pool1d(t(np.ones((2, 3, 4, 4))), 2)
    with pytest.raises(nb.AttrError, match="max_pool1d: kernel_size"):
        F.max_pool1d(x, 0)
    with pytest.raises(nb.AttrError, match="avg_pool1d: .*padding"):
        F.avg_pool1d(x, 2, 1, 2)  # more than half the window
    with pytest.raises(nb.ShapeError, match="max_pool1d:.*smaller than"):
        F.max_pool1d(x, 5)
    with pytest.raises(nb.AttrError, match="adaptive_max_pool2d: output_size"):
        F.adaptive_max_pool2d(t(np.ones((1, 2, 3, 3))), (0, 2))
    with pytest.raises(nb.ShapeError, match="adaptive_max_pool1d: input of shape"):
        F.adaptive_max_pool1d(t(np.ones(4)), 2)
    with pytest.raises(nb.AttrError, match="adaptive_avg_pool1d: output_size"):
        F.adaptive_avg_pool1d(x, (2, 2))


# ---------------------------------------------------------------- shuffles


def test_pixel_and_channel_shuffles_match_numpy_and_invert():
    x = RNG.standard_normal((2, 8, 3, 4))
    out = F.pixel_shuffle(t(x), 2)
    close(out, pixel_shuffle_ref(x, 2))
    close(F.pixel_unshuffle(out, 2), x)
    close(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(t(x))), x)
    close(F.pixel_shuffle(t(x[None]), 2), pixel_shuffle_ref(x, 2)[None])  # leading dims
    shuffled = F.channel_shuffle(t(x), 2)
    close(shuffled, x[:, [0, 4, 1, 5, 2, 6, 3, 7]])
    close(nn.ChannelShuffle(4)(shuffled), x)  # 2 x 4 then 4 x 2: back
    for fn in (lambda a: F.pixel_shuffle(a, 2), lambda a: F.channel_shuffle(a, 4)):
        nt.gradcheck(fn, [t(x, True)])


def test_shuffles_match_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 18, 4, 6))
    tx = torch.from_numpy(x)
    close(F.pixel_shuffle(t(x), 3), torch.nn.functional.pixel_shuffle(tx, 3).numpy())
    close(F.pixel_unshuffle(t(x), 2), torch.nn.functional.pixel_unshuffle(tx, 2).numpy())
    close(F.channel_shuffle(t(x), 3), torch.nn.functional.channel_shuffle(tx, 3).numpy())


def test_shuffle_errors_are_typed_and_named():
    x = t(np.ones((1, 6, 4, 4)))
    with pytest.raises(nb.ShapeError, match=r"pixel_shuffle: 6 channels .* upscale_factor\*\*2"):
        F.pixel_shuffle(x, 2)
    with pytest.raises(nb.ShapeError, match="pixel_unshuffle: height and width"):
        F.pixel_unshuffle(x, 3)
    with pytest.raises(nb.AttrError, match="pixel_shuffle: upscale_factor"):
        F.pixel_shuffle(x, 0)
    with pytest.raises(nb.ShapeError, match="channel_shuffle: 6 channels"):
        F.channel_shuffle(x, 4)
    with pytest.raises(nb.ShapeError, match="channel_shuffle: input of shape"):
        F.channel_shuffle(t(np.ones((2, 6))), 2)


# ---------------------------------------------------------------- unfold and fold

FOLD_CASES = [
    # kernel_size, dilation, padding, stride
    ((2, 2), (1, 1), (0, 0), (1, 1)),
    ((3, 2), (1, 2), (1, 0), (2, 1)),
    ((2, 3), (2, 1), (1, 1), (1, 2)),
]


@pytest.mark.parametrize("case", FOLD_CASES)
def test_unfold_and_fold_match_numpy(case):
    x = RNG.standard_normal((2, 3, 6, 7))
    cols = F.unfold(t(x), *case)
    close(cols, unfold_ref(x, *case))
    c = RNG.standard_normal(cols.shape)
    close(F.fold(t(c), (6, 7), *case), fold_ref(c, (6, 7), *case))
    close(
        nn.Fold((6, 7), *case)(nn.Unfold(*case)(t(x[0]))),
        fold_ref(unfold_ref(x[:1], *case), (6, 7), *case)[0],
    )
    # adjoints: <unfold(x), c> = <x, fold(c)>
    lhs, rhs = np.sum(cols.numpy() * c), np.sum(x * F.fold(t(c), (6, 7), *case).numpy())
    assert math.isclose(lhs, rhs, rel_tol=1e-10)
    nt.gradcheck(lambda a: F.unfold(a, *case), [t(x, True)])
    nt.gradcheck(lambda a: F.fold(a, (6, 7), *case), [t(c, True)])


@pytest.mark.parametrize("case", FOLD_CASES)
def test_unfold_and_fold_match_pytorch(case):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 6, 7))
    cols = torch.nn.functional.unfold(torch.from_numpy(x), *case)
    close(F.unfold(t(x), *case), cols.numpy())
    close(
        F.fold(t(cols.numpy()), (6, 7), *case),
        torch.nn.functional.fold(cols, (6, 7), *case).numpy(),
    )


def test_unfold_fold_errors_are_typed_and_named():
    with pytest.raises(nb.ShapeError, match="unfold: input of shape"):
        F.unfold(t(np.ones((2, 3))), 2)
    with pytest.raises(nb.ShapeError, match="unfold: .* holds no block"):
        F.unfold(t(np.ones((1, 1, 2, 2))), 3)
    with pytest.raises(nb.ShapeError, match="fold: dim 1 of input"):
        F.fold(t(np.ones((1, 5, 9))), (4, 4), 2)
    with pytest.raises(nb.ShapeError, match="fold: input .* has 8 blocks"):
        F.fold(t(np.ones((1, 4, 8))), (4, 4), 2)
    with pytest.raises(nb.AttrError, match="fold: stride"):
        F.fold(t(np.ones((1, 4, 9))), (4, 4), 2, stride=0)


# ---------------------------------------------------------------- padding


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(2, 1), (0, 3, 1, 2), (1, 1, 2, 0, 1, 1)])
def test_pad_modes_match_numpy(mode, pad):
    k = len(pad) // 2
    x = RNG.standard_normal((2, 3, 4, 5, 6)[-(k + 2) :])
    widths = [(0, 0)] * 2 + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    close(F.pad(t(x), pad, mode=mode), np.pad(x, widths, mode=NUMPY_PAD[mode]))
    close(F.pad(t(x[0]), pad, mode=mode), np.pad(x[0], widths[1:], mode=NUMPY_PAD[mode]))
    nt.gradcheck(lambda a: F.pad(a, pad, mode=mode), [t(x, True)])


def test_pad_modes_match_pytorch_with_gradients():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 4, 5))
    for mode in ("reflect", "replicate", "circular", "constant"):
        for pad in ((3, 1), (1, 2, 3, 0), (-1, 2)):
            if mode == "constant" and min(pad) < 0:
                continue  # (nbflow's constant pad does not crop)
            xs = x[0] if len(pad) == 2 else x
            ours, theirs = t(xs, True), torch.tensor(xs, requires_grad=True)
            out, expected = F.pad(ours, pad, mode), torch.nn.functional.pad(theirs, pad, mode)
            close(out, expected.detach().numpy())
            cot = RNG.standard_normal(out.shape)
            (out * t(cot)).sum().backward()
            expected.backward(torch.from_numpy(cot))
            close(ours.grad, theirs.grad.numpy())


def test_padding_modules_match_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((1, 2, 4, 5, 6))
    for name in ("ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad"):
        for dims in (1, 2, 3):
            args = ((1, 2, 0, 3, 2, 1)[: 2 * dims],) + ((1.5,) if name == "ConstantPad" else ())
            ours, theirs = (
                getattr(nn, f"{name}{dims}d")(*args),
                getattr(torch.nn, f"{name}{dims}d")(*args),
            )
            xs = x[(0,) * (3 - dims)]
            close(ours(t(xs)), theirs(torch.from_numpy(xs)).numpy())
            assert ours.padding == theirs.padding
        assert (
            getattr(nn, f"{name}2d")(*((2,) + ((0.5,) if name == "ConstantPad" else ()))).padding
            == (2,) * 4
        )


def test_pad_errors_are_typed_and_named():
    x = t(np.ones((1, 2, 3)))
    with pytest.raises(nb.ShapeError, match="pad: 'reflect' padding"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(nb.ShapeError, match="pad: 'circular' padding"):
        F.pad(x, (0, 4), mode="circular")
    with pytest.raises(nb.ShapeError, match="pad: mode 'replicate' with 4 pad values"):
        F.pad(t(np.ones(3)), (1, 1, 1, 1), mode="replicate")
    with pytest.raises(nb.AttrError, match="pad: mode must be"):
        F.pad(x, (1, 1), mode="mirror")
    with pytest.raises(nb.UnsupportedError, match="takes no value"):
        F.pad(x, (1, 1), mode="reflect", value=2.0)


# ---------------------------------------------------------------- upsampling aliases


def test_upsampling_aliases_match_upsample_and_pytorch():
    x = RNG.standard_normal((1, 2, 3, 4))
    close(nn.UpsamplingNearest2d(scale_factor=2)(t(x)), x.repeat(2, axis=2).repeat(2, axis=3))
    bilinear = nn.UpsamplingBilinear2d(size=(5, 7))(t(x))
    close(bilinear, F.interpolate(t(x), size=(5, 7), mode="bilinear", align_corners=True).numpy())
    close(bilinear[:, :, ::2, ::2], x)  # align_corners: the corners (and here every other) stay
    torch = pytest.importorskip("torch")
    tx = torch.from_numpy(x)
    close(bilinear, torch.nn.UpsamplingBilinear2d(size=(5, 7))(tx).numpy())
    close(
        nn.UpsamplingNearest2d(size=(6, 6))(t(x)),
        torch.nn.UpsamplingNearest2d(size=(6, 6))(tx).numpy(),
    )


# ---------------------------------------------------------------- graph mode


def test_graph_mode_gives_eager_values_and_gradients():
    x = RNG.standard_normal((2, 4, 5, 5))
    w = RNG.standard_normal((4, 2, 3, 3))

    def net(x, w):
        y = F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2)
        y = F.pad(y, (1, 1, 2, 0), mode="reflect")
        y = F.pixel_unshuffle(F.channel_shuffle(F.pad(y, (1, 1, 0, 0), mode="circular"), 2), 2)
        y = (
            F.adaptive_max_pool2d(y, (3, 4))
            + F.fold(F.unfold(y, 2, padding=1), y.shape[2:], 2, padding=1)[:, :, :3, :4]
        )
        return F.max_pool1d(
            F.pad(nb.flatten(y, 2), (1, 0), mode="replicate"), 3, 2
        ) + F.adaptive_avg_pool1d(nb.flatten(y, 2), 6)

    assert nt.check_modes(net, x, w) == {"outputs": 1, "gradients": 2}


def test_static_program_with_an_unknown_batch_dim():
    def net(x):
        y = F.conv_transpose2d(x, nb.ones(4, 2, 3, 3), stride=2, output_padding=1)
        z = F.fold(F.unfold(y, 2, padding=1), (12, 12), 2, padding=1)
        return F.adaptive_max_pool2d(F.pad(z, (1, 1, 1, 1), mode="reflect"), 3)

    main = nb.Program()
    with nb.program_guard(main):
        out = net(nb.static.data("x", [-1, 4, 5, 5]))
    assert out.shape == (-1, 2, 3, 3)
    data = RNG.standard_normal((3, 4, 5, 5)).astype(np.float32)
    (got,) = nb.Executor().run(main, {"x": data}, [out], nb.Scope())
    nt.assert_close(got, net(nb.tensor(data)).numpy())
