"""embedding, dropout, layer_norm, batch_norm.

Forward against independent numpy references per float dtype (shape and dtype equal the op's
spec first), float64 gradient checks (second order for layer_norm and batch_norm), typed
errors before any kernel runs, dropout determinism with a seed and eval identity, batch_norm's
running statistics updated in place (versions bump, graph mode keeps the update), and PyTorch
parity when torch is installed."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import Spec
from nbflow.kernels.cpu import threads

FLOATS = dt.FLOATS
RNG = np.random.default_rng(0)
TOL = {dt.float16: (2e-2, 2e-2), dt.float32: (1e-5, 1e-5), dt.float64: (1e-10, 1e-12)}


def _ids(dtypes):
    return [dt.SHORT[d] for d in dtypes]


def check_spec(op, arrays, attrs, out):
    specs = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))
    assert (out.shape, out.dtype) == (specs[0].shape, specs[0].dtype)


def leaf(*shape):
    return nb.tensor(RNG.standard_normal(shape), requires_grad=True)


# ---------------------------------------------------------------- embedding


@pytest.mark.parametrize("index_dtype", dt.INTS, ids=_ids(dt.INTS))
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_embedding_forward(dtype, index_dtype):
    w = RNG.standard_normal((7, 3)).astype(dtype)
    idx = RNG.integers(0, 7, (2, 4)).astype(index_dtype)
    out = nb.embedding(nb.tensor(idx), nb.tensor(w))
    check_spec(nb.embedding_op, [idx, w], {}, out)
    nt.assert_close(out, np.stack([w[i] for i in idx.reshape(-1)]).reshape(2, 4, 3))
    assert nb.embedding(nb.tensor(np.zeros(0, index_dtype)), nb.tensor(w)).shape == (0, 3)


def test_embedding_gradient_skips_padding_idx():
    w = leaf(5, 3)
    idx = nb.tensor([[0, 2, 2], [4, 2, 1]])
    nt.gradcheck(lambda w: nb.embedding(idx, w), [w])
    out = nb.embedding(idx, w, padding_idx=2)
    out.backward(nb.ones(2, 3, 3, dtype="float64"))
    expected = np.zeros((5, 3))
    for i in (0, 4, 1):
        expected[i] += 1
    nt.assert_close(w.grad, expected)  # row 2 (padding) gets nothing, row 3 is unused
    nt.gradgradcheck(lambda w: nb.embedding(idx, w * w, padding_idx=-3), [w])


def test_embedding_errors_before_the_kernel():
    w = nb.zeros(4, 2)
    with pytest.raises(nb.OutOfRangeError, match=r"embedding: index 4 at position \(1, 0\)"):
        nb.embedding(nb.tensor([[0, 1], [4, 0]]), w)
    with pytest.raises(nb.OutOfRangeError, match="index -1"):
        nb.embedding(nb.tensor([-1]), w)
    with pytest.raises(nb.DTypeError, match="int32 or int64"):
        nb.embedding(nb.tensor([0.0]), w)
    with pytest.raises(nb.ShapeError, match=r"weight of shape \(4,\) must be 2-D"):
        nb.embedding(nb.tensor([0]), nb.zeros(4))
    with pytest.raises(nb.AttrError, match="padding_idx 4"):
        nb.embedding(nb.tensor([0]), w, padding_idx=4)


# ---------------------------------------------------------------- dropout


@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_dropout_is_seeded_and_scaled(dtype):
    x = nb.tensor(RNG.uniform(1, 2, (40, 50)), dtype=dtype)
    a = nb.dropout(x, 0.3, generator=nb.Generator(5))
    b = nb.dropout(x, 0.3, generator=nb.Generator(5))
    c = nb.dropout(x, 0.3, generator=nb.Generator(6))
    assert (a.shape, a.dtype) == (x.shape, x.dtype)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    kept = a.numpy() != 0
    assert 0.6 < kept.mean() < 0.8
    rtol, atol = TOL[dtype]
    nt.assert_close(a.numpy()[kept], (x.numpy()[kept] / np.float64(0.7)).astype(dtype), rtol, atol)
    mask = nb.dropout_mask.ref(x.numpy(), p=0.3, generator=nb.Generator(5))
    nt.assert_close(a, (x.numpy() * mask).astype(dtype), rtol, atol)


def test_dropout_eval_identity_edges_and_gradient():
    x = leaf(4, 5)
    assert nb.dropout(x, 0.5, training=False) is x
    assert nb.dropout(x, 0.0) is x
    np.testing.assert_array_equal(nb.dropout(x, 1.0).numpy(), np.zeros((4, 5)))
    nb.manual_seed(3)
    y = nb.dropout(x, 0.5)
    y.backward(nb.ones(4, 5, dtype="float64"))
    mask = y.numpy() / x.numpy()
    nt.assert_close(x.grad, mask)  # the gradient uses the same mask
    assert set(np.round(np.unique(mask), 12)) <= {0.0, 2.0}
    with pytest.raises(nb.AttrError, match="probability"):
        nb.dropout(x, 1.5)


def test_dropout_in_graph_mode_draws_a_new_mask_each_run():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 8])
        y = nb.dropout(x, 0.5, generator=nb.Generator(0))
    exe, feed = nb.Executor(), {"x": np.ones((4, 8), np.float32)}
    first, second = (exe.run(main, feed, [y], nb.Scope())[0] for _ in range(2))
    assert set(np.unique(first)) <= {0.0, 2.0} and not np.array_equal(first, second)


# ---------------------------------------------------------------- layer_norm


def layer_norm_numpy(x, k, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize("shape,k", [((3, 4), 1), ((2, 3, 4), 2), ((5,), 1), ((0, 3), 1)])
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_layer_norm_forward(shape, k, dtype):
    x = RNG.uniform(-2, 2, shape).astype(dtype)
    norm_shape = shape[len(shape) - k :]
    w = RNG.uniform(0.5, 1.5, norm_shape).astype(dtype)
    b = RNG.uniform(-1, 1, norm_shape).astype(dtype)
    out = nb.layer_norm_op(nb.tensor(x), normalized_shape=norm_shape)
    check_spec(nb.layer_norm_op, [x], {"normalized_shape": norm_shape}, out)
    rtol, atol = TOL[dtype]
    expected = layer_norm_numpy(x.astype(np.float64), k)
    nt.assert_close(out, expected.astype(dtype), rtol, atol)
    affine = nb.layer_norm(nb.tensor(x), norm_shape, nb.tensor(w), nb.tensor(b))
    nt.assert_close(affine, (expected * w + b).astype(dtype), rtol, atol)


def test_layer_norm_gradients_first_and_second_order():
    args = [leaf(3, 2, 4), leaf(2, 4), leaf(2, 4)]
    nt.gradcheck(lambda x, w, b: nb.layer_norm(x, (2, 4), w, b), args)
    nt.gradgradcheck(lambda x, w, b: nb.layer_norm(x, (2, 4), w, b), args)


def test_fused_layer_norm_on_rows_split_over_threads_matches_numpy():
    # 300 x 256 elements: the kernels split the rows over threads, each summing its part of
    # dweight and dbias; compared with numpy in float64
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((2, 300, 256))
    w, b = rng.standard_normal((2, 256))
    xt, wt, bt = (nb.tensor(a, requires_grad=True) for a in (x, w, b))
    out = nb.layer_norm(xt, 256, wt, bt)
    y = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    nt.assert_close(out, y * w + b, 1e-12, 1e-12)
    out.backward(nb.tensor(g))
    gw = g * w
    rstd = 1 / np.sqrt(x.var(1, keepdims=True) + 1e-5)
    dx = rstd * (gw - gw.mean(1, keepdims=True) - y * (gw * y).mean(1, keepdims=True))
    nt.assert_close(xt.grad, dx, 1e-10, 1e-10)
    nt.assert_close(wt.grad, (g * y).sum(0), 1e-10, 1e-10)
    nt.assert_close(bt.grad, g.sum(0), 1e-10, 1e-10)


def _norms_and_grads(rng):
    """Batch norm, layer norm (plain and affine) and softmax of an x over THREADED_ELEMENTS
    elements, with their gradients (float64); and the references of the forward values."""
    x, g = rng.standard_normal((2, 4, 16, 32, 32))
    w, b = rng.standard_normal((2, 16))
    lw, lb = rng.standard_normal((2, 32, 32))
    axes = (0, 2, 3)
    bn = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    rows = x.reshape(-1, 1024)
    ln = (rows - rows.mean(1, keepdims=True)) / np.sqrt(rows.var(1, keepdims=True) + 1e-5)
    ln = ln.reshape(x.shape)
    e = np.exp(x - x.max(-1, keepdims=True))
    cases = [
        (lambda t, w, b: nb.nn.functional.batch_norm(t, None, None, w, b, True), w, b),
        (lambda t, w, b: nb.layer_norm(t, (32, 32)), w, b),
        (lambda t, w, b: nb.layer_norm(t, (32, 32), w, b), lw, lb),
        (lambda t, w, b: nb.softmax(t, -1), w, b),
    ]
    refs = [
        bn * w.reshape(-1, 1, 1) + b.reshape(-1, 1, 1),
        ln,
        ln * lw + lb,
        e / e.sum(-1)[..., None],
    ]
    results = []
    for fn, w, b in cases:
        xt, wt, bt = (nb.tensor(a, requires_grad=True) for a in (x, w, b))
        out = fn(xt, wt, bt)
        out.backward(nb.tensor(g))
        grads = [t.grad.numpy() for t in (xt, wt, bt) if t.grad is not None]
        results.append((out.numpy(), grads))
    return results, refs


def test_norms_on_numba_threads_or_one_agree_bit_for_bit(monkeypatch):
    """The row and channel kernels' twins over numba's threads (threads.measured's other
    choice) give the one-thread kernels' values exactly."""
    assert threads.THREADED_ELEMENTS <= 4 * 16 * 32 * 32
    runs = {}
    for path in ("serial", "threaded"):

        def take(key, serial, threaded, elements, path=path):
            return serial() if path == "serial" else threaded()

        monkeypatch.setattr(threads, "measured", take)
        runs[path], refs = _norms_and_grads(np.random.default_rng(4))
    for (out, grads), (out1, grads1), ref in zip(runs["serial"], runs["threaded"], refs):
        assert np.array_equal(out, out1)
        assert all(np.array_equal(d, d1) for d, d1 in zip(grads, grads1, strict=True))
        nt.assert_close(out, ref, 1e-10, 1e-10)


def test_layer_norm_errors():
    with pytest.raises(nb.ShapeError, match=r"\(2, 3\) does not end with normalized_shape \(4,\)"):
        nb.layer_norm(nb.zeros(2, 3), 4)
    with pytest.raises(nb.ShapeError, match=r"weight of shape \(2,\) should be \(3,\)"):
        nb.layer_norm(nb.zeros(2, 3), 3, nb.zeros(2))
    with pytest.raises(nb.DTypeError):
        nb.layer_norm(nb.tensor([[1, 2]]), 2)


# ---------------------------------------------------------------- batch_norm


def batch_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    return x.mean(axis=axes), x.var(axis=axes), x.var(axis=axes, ddof=1)


@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 2, 2)])
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_batch_norm_training_updates_running_stats_in_place(shape, dtype):
    x = RNG.uniform(-2, 2, shape).astype(dtype)
    c = shape[1]
    mean0, var0 = RNG.uniform(-1, 1, c), RNG.uniform(0.5, 2, c)
    rm, rv = nb.tensor(mean0, dtype=dtype), nb.tensor(var0, dtype=dtype)
    buffers = rm.numpy(), rv.numpy()
    out = nb.batch_norm(nb.tensor(x), rm, rv, training=True, momentum=0.3)
    check_spec(nb.batch_norm_train, [x], {}, out)
    assert (rm.version, rv.version) == (1, 1)
    # written in place: the same memory as before
    assert np.shares_memory(rm.numpy(), buffers[0]) and np.shares_memory(rv.numpy(), buffers[1])
    x64 = x.astype(np.float64)
    mean, var, unbiased = batch_stats(x64)
    rtol, atol = TOL[dtype]
    r = (1,) * (x.ndim - 2)
    expected = (x64 - mean.reshape(-1, *r)) / np.sqrt(var.reshape(-1, *r) + 1e-5)
    nt.assert_close(out, expected.astype(dtype), rtol, atol)
    m0, v0 = mean0.astype(dtype).astype(np.float64), var0.astype(dtype).astype(np.float64)
    nt.assert_close(rm, (0.7 * m0 + 0.3 * mean).astype(dtype), rtol, atol)
    nt.assert_close(rv, (0.7 * v0 + 0.3 * unbiased).astype(dtype), rtol, atol)
    # eval mode normalises by the running statistics and leaves them alone
    w, b = RNG.uniform(0.5, 1.5, c), RNG.uniform(-1, 1, c)
    ev = nb.batch_norm(nb.tensor(x), rm, rv, nb.tensor(w), nb.tensor(b), training=False)
    assert rm.version == 1
    rm64, rv64 = rm.numpy().astype(np.float64), rv.numpy().astype(np.float64)
    expected = (x64 - rm64.reshape(-1, *r)) / np.sqrt(rv64.reshape(-1, *r) + 1e-5)
    expected = expected * w.reshape(-1, *r) + b.reshape(-1, *r)
    nt.assert_close(ev, expected.astype(ev.dtype), max(rtol, 1e-5), max(atol, 1e-5))


def test_batch_norm_gradients():
    x, w, b = leaf(4, 3, 2), leaf(3), leaf(3)
    nt.gradcheck(lambda x, w, b: nb.batch_norm(x, None, None, w, b, training=True), [x, w, b])
    nt.gradgradcheck(lambda x: nb.batch_norm(x, None, None, training=True), [x])
    rm, rv = nb.tensor(RNG.standard_normal(3)), nb.tensor(RNG.uniform(0.5, 2, 3))
    nt.gradcheck(lambda x, w, b: nb.batch_norm(x, rm, rv, w, b, training=False), [x, w, b])


def test_batch_norm_errors():
    with pytest.raises(nb.ShapeError, match="1 value per channel"):
        nb.batch_norm(nb.zeros(1, 3), nb.zeros(3), nb.ones(3), training=True)
    with pytest.raises(nb.ShapeError, match=r"running statistics of shape \(4,\)"):
        nb.batch_norm(nb.zeros(2, 3), nb.zeros(4), nb.ones(4), training=True)
    with pytest.raises(nb.ShapeError, match=r"\(N, C\)"):
        nb.batch_norm(nb.zeros(3), nb.zeros(3), nb.ones(3))
    with pytest.raises(nb.ShapeError, match="running_mean and running_var"):
        nb.batch_norm(nb.zeros(2, 3), None, None, training=False)


def test_batch_norm_graph_mode_keeps_the_running_stats_update():
    rm, rv = nb.zeros(2), nb.ones(2)
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 2, 3])
        y = nb.batch_norm(x, rm, rv, training=True, momentum=0.5)
    assert "batch_norm_update_stats_" in str(main)
    data = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    (out,) = nb.Executor().run(main, {"x": data}, [y], nb.Scope())  # fetch only the output
    mean, var, unbiased = batch_stats(data.astype(np.float64))
    nt.assert_close(rm, (0.5 * mean).astype(np.float32))
    nt.assert_close(rv, (0.5 + 0.5 * unbiased).astype(np.float32), rtol=1e-5)
    assert out.shape == (4, 2, 3)


# ---------------------------------------------------------------- PyTorch parity


def test_norm_ops_match_pytorch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b = RNG.standard_normal((4, 3, 5)), RNG.standard_normal(3), RNG.standard_normal(3)
    args = [nb.tensor(a, requires_grad=True) for a in (x, w, b)]
    targs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    rm, rv = nb.zeros(3, dtype="float64"), nb.ones(3, dtype="float64")
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out = nb.batch_norm(args[0], rm, rv, args[1], args[2], training=True, momentum=0.2)
    tout = F.batch_norm(targs[0], trm, trv, targs[1], targs[2], training=True, momentum=0.2)
    seed = RNG.standard_normal(out.shape)
    out.backward(nb.tensor(seed))
    tout.backward(torch.tensor(seed))
    nt.assert_close(out, tout.detach().numpy())
    nt.assert_close(rm, trm.numpy())
    nt.assert_close(rv, trv.numpy())
    for a, t in zip(args, targs):
        nt.assert_close(a.grad, t.grad.numpy())
    ln = nb.layer_norm(nb.tensor(x), (5,), nb.tensor(x[0, 0]), None, eps=1e-3)
    tln = F.layer_norm(torch.tensor(x), (5,), torch.tensor(x[0, 0]), None, eps=1e-3)
    nt.assert_close(ln, tln.numpy())
    emb = RNG.standard_normal((6, 2))
    idx = np.array([[1, 5], [0, 1]])
    nt.assert_close(
        nb.embedding(nb.tensor(idx), nb.tensor(emb), padding_idx=1),
        F.embedding(torch.tensor(idx), torch.tensor(emb), padding_idx=1).numpy(),
    )


def _group_norm_numpy(x, groups, weight, bias, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    y = (g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * weight.reshape(shape) + bias.reshape(shape)


@pytest.mark.parametrize(
    "shape, groups", [((2, 6, 3, 4), 3), ((4, 4), 2), ((2, 6, 5), 6), ((1, 4, 2), 1)]
)
def test_group_norm_matches_numpy(shape, groups):
    rng = np.random.default_rng(0)
    x, w, b = (
        rng.standard_normal(shape),
        rng.standard_normal(shape[1]),
        rng.standard_normal(shape[1]),
    )
    got = nb.group_norm(nb.tensor(x), groups, nb.tensor(w), nb.tensor(b))
    np.testing.assert_allclose(
        got.numpy(), _group_norm_numpy(x, groups, w, b), rtol=1e-10, atol=1e-12
    )
    module = nb.nn.GroupNorm(groups, shape[1], dtype="float64")  # weight 1, bias 0
    plain = _group_norm_numpy(x, groups, np.ones(shape[1]), np.zeros(shape[1]))
    np.testing.assert_allclose(module(nb.tensor(x)).numpy(), plain, rtol=1e-10, atol=1e-12)


def test_group_norm_gradients_modes_and_errors():
    rng = np.random.default_rng(1)
    x = nb.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    w = nb.tensor(rng.standard_normal(4), requires_grad=True)
    b = nb.tensor(rng.standard_normal(4), requires_grad=True)
    nt.gradcheck(lambda x, w, b: nb.group_norm(x, 2, w, b), [x, w, b])
    counts = nt.check_modes(lambda x, w: nb.group_norm(x, 2, w), x.numpy(), w.numpy())
    assert counts == {"outputs": 1, "gradients": 2}
    with pytest.raises(nb.ShapeError, match="groups"):
        nb.group_norm(x, 3)
    with pytest.raises(nb.ShapeError):
        nb.group_norm(nb.ones(4), 2)
    with pytest.raises(ValueError):
        nb.nn.GroupNorm(3, 4)
