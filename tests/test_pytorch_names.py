"""PyTorch's spellings: `dim=`/`keepdim=` and the other argument names, max/min(dim=) with
indices, the Tensor conveniences (view, size(), expand, masked_fill, float(), ...), norm,
cat/chunk, `requires_grad=` on creation functions, allclose/equal and nbflow.nn.functional.
References are numpy formulas written here, and nbflow's own axis= spelling where the claim is
that the two spellings are one call."""

import math

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow.testing import check_modes, gradcheck

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)


@pytest.mark.parametrize(
    "name", ["sum", "mean", "prod", "var", "std", "logsumexp", "argmax", "argmin", "all", "any"]
)
def test_reductions_take_dim_and_keepdim(name):
    x = nb.tensor(X)
    fn = getattr(nb, name)
    for keep in (False, True):
        torch_style = fn(x, dim=1, keepdim=keep)
        np.testing.assert_array_equal(torch_style.numpy(), fn(x, axis=1, keepdims=keep).numpy())
        assert torch_style.shape == ((3, 1) if keep else (3,))
    method = getattr(x, name)(dim=0)  # the Tensor method too
    np.testing.assert_array_equal(method.numpy(), fn(x, axis=0).numpy())


def test_softmax_and_the_function_wrappers_take_pytorch_names():
    x = nb.tensor(X)
    np.testing.assert_array_equal(nb.softmax(x, dim=0).numpy(), nb.softmax(x, axis=0).numpy())
    e = np.exp(X - X.max(axis=0))
    np.testing.assert_allclose(nb.softmax(x, dim=0).numpy(), e / e.sum(axis=0), rtol=1e-6)
    pairs = [
        (nb.concat([x, x], dim=1), np.concatenate([X, X], axis=1)),
        (nb.stack([x, x], dim=2), np.stack([X, X], axis=2)),
        (x.unsqueeze(dim=1), X[:, None]),
        (x.transpose(dim0=0, dim1=1), X.T),
        (nb.flip(x, dims=(1,)), X[:, ::-1]),
        (nb.ones(2, 3, 4).flatten(start_dim=1).numpy(), np.ones((2, 12))),
        (x.gather(dim=1, index=nb.tensor([[1], [0], [3]])), X[[0, 1, 2], [1, 0, 3]][:, None]),
        (nb.index_select(x, dim=1, index=nb.tensor([2, 0])), X[:, [2, 0]]),
        (nb.split(x, 2, dim=1)[1], X[:, 2:]),
    ]
    for got, expected in pairs:
        np.testing.assert_array_equal(np.asarray(got), expected)


def test_both_names_or_a_name_the_op_lacks_is_an_error():
    x = nb.tensor(X)
    with pytest.raises(TypeError, match="'dim' and 'axis'"):
        nb.sum(x, dim=1, axis=1)
    with pytest.raises(TypeError, match="'dim' and 'axis'"):
        nb.concat([x, x], dim=1, axis=1)
    with pytest.raises(nb.AttrError, match="dim"):
        nb.relu(x, dim=1)  # relu has no axis: the op's own error names the argument


def test_max_and_min_with_dim_give_values_and_indices():
    x = np.array([[1.0, 5.0, 5.0], [np.nan, 2.0, 0.0], [-1.0, -3.0, -2.0]], np.float32)
    t = nb.tensor(x)
    values, indices = t.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), [5.0, np.nan, -1.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0, 0])  # the first tie; NaN wins
    low = nb.min(t, dim=0, keepdim=True)
    assert low.values.shape == low.indices.shape == (1, 3)
    np.testing.assert_array_equal(low.indices.numpy(), [[1, 2, 2]])
    np.testing.assert_array_equal(low.values.numpy(), [[np.nan, -3.0, -2.0]])
    assert isinstance(t.max(axis=1), nb.Tensor)  # nbflow's spelling: the values only


def test_max_with_dim_sends_the_gradient_to_the_index_as_pytorch_does():
    x = nb.tensor([[2.0, 7.0, 7.0], [4.0, 1.0, 3.0]], requires_grad=True)
    x.max(dim=1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])  # not split by ties
    y = nb.tensor([[2.0, 7.0, 7.0]], requires_grad=True)
    nb.max(y, axis=1).sum().backward()  # amax: ties share it
    np.testing.assert_array_equal(y.grad.numpy(), [[0, 0.5, 0.5]])
    z = nb.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    gradcheck(lambda t: t.min(dim=0).values, [z])


def test_cat_and_chunk_follow_pytorch():
    a, b = nb.tensor(X), nb.tensor(X[:1])
    np.testing.assert_array_equal(nb.cat([a, b], 0).numpy(), np.concatenate([X, X[:1]]))
    np.testing.assert_array_equal(nb.cat((a, a), dim=1).numpy(), np.concatenate([X, X], 1))
    cases = [(5, 2, [3, 2]), (5, 4, [2, 2, 1]), (6, 3, [2, 2, 2]), (2, 5, [1, 1])]
    for n, chunks, expected in cases:
        pieces = nb.chunk(nb.arange(n), chunks)
        assert [len(p) for p in pieces] == expected  # ceil(n / chunks) each, as torch.chunk
        np.testing.assert_array_equal(np.concatenate([p.numpy() for p in pieces]), np.arange(n))
    assert [p.shape for p in nb.tensor(X).chunk(2, dim=1)] == [(3, 2), (3, 2)]
    with pytest.raises(nb.AttrError):
        nb.chunk(nb.arange(4), 0)


@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, 0, 3, 0.5, "fro"])
@pytest.mark.parametrize("axis", [None, 1])
def test_norm_matches_numpy(p, axis):
    x = X.copy()
    x[0, 1] = 0.0
    order = 2 if p == "fro" else p
    flat = x.ravel() if axis is None else x
    expected = np.linalg.norm(flat.astype(np.float64), order, axis=None if axis is None else 1)
    got = nb.norm(nb.tensor(x), p, dim=axis)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)
    kept = nb.tensor(x).norm(p, dim=axis, keepdim=True) if axis is not None else None
    if kept is not None:
        assert kept.shape == (3, 1)


def test_norm_gradients():
    x = nb.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    for p in (2, 1, 3):
        gradcheck(lambda t, p=p: nb.norm(t, p, axis=1), [x])
    zero = nb.zeros(3, dtype="float64", requires_grad=True)
    nb.norm(zero).backward()
    np.testing.assert_array_equal(zero.grad.numpy(), [0.0, 0.0, 0.0])  # a subgradient, not NaN
    with pytest.raises(nb.DTypeError):
        nb.norm(nb.arange(3))
    with pytest.raises(ValueError):
        nb.norm(nb.tensor(X), -1)


def test_tensor_conveniences():
    t = nb.tensor(X)
    assert t.view(4, 3).shape == t.view((4, 3)).shape == (4, 3)
    np.testing.assert_array_equal(t.view(-1).numpy(), X.ravel())
    assert t.size == 12 and t.size() == (3, 4) and t.size(1) == 4 and t.size(dim=0) == 3
    assert t.numel() == 12 and t.dim() == 2
    row = nb.tensor(X[:1])
    np.testing.assert_array_equal(row.expand(3, -1).numpy(), np.repeat(X[:1], 3, axis=0))
    assert row.expand(2, 3, 4).shape == (2, 3, 4)  # new leading dims
    with pytest.raises(ValueError):
        t.expand(4)
    for method, dtype in [("float", "float32"), ("double", "float64"), ("half", "float16"),
                          ("int", "int32"), ("long", "int64"), ("bool", "bool")]:  # fmt: skip
        assert getattr(t, method)().dtype == np.dtype(dtype)
    assert t.type_as(nb.arange(2)).dtype == np.int64
    assert t.to(nb.float64).dtype == np.float64 and t.to("cpu", nb.float16).dtype == np.float16
    assert t.to("cpu") is t


def test_contiguous_copies_only_a_strided_buffer():
    t = nb.tensor(X)
    assert t.contiguous() is t
    strided = t.T
    c = strided.contiguous()
    assert c is not strided and c.numpy().flags.c_contiguous
    np.testing.assert_array_equal(c.numpy(), X.T)


def test_masked_fill_keeps_the_dtype_and_broadcasts_the_mask():
    t = nb.tensor(np.arange(6).reshape(2, 3))
    mask = nb.tensor([True, False, True])
    out = t.masked_fill(mask, -1)
    np.testing.assert_array_equal(out.numpy(), np.where([True, False, True], -1, t.numpy()))
    assert out.dtype == np.int64
    x = nb.tensor(X, requires_grad=True)
    y = x * 1.0
    y.masked_fill_(y > 0, 0.0)  # in place, through autograd
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (X <= 0).astype(np.float32))


def test_creation_functions_take_requires_grad():
    made = [
        nb.ones(2, 3, requires_grad=True),
        nb.zeros((2,), requires_grad=True),
        nb.full((2,), 0.5, requires_grad=True),
        nb.randn(2, requires_grad=True),
        nb.rand(2, requires_grad=True),
        nb.arange(3.0, requires_grad=True),
        nb.linspace(0, 1, 3, requires_grad=True),
        nb.eye(2, requires_grad=True),
        nb.zeros_like(nb.ones(2), requires_grad=True),
        nb.ones_like(nb.ones(2), requires_grad=True),
        nb.full_like(nb.ones(2), 3.0, requires_grad=True),
    ]
    for t in made:
        assert t.requires_grad and t.is_leaf
        (t * 2).sum().backward()
        np.testing.assert_array_equal(t.grad.numpy(), np.full(t.shape, 2.0, np.float32))
    with pytest.raises(nb.DTypeError):
        nb.ones(2, dtype="int64", requires_grad=True)
    assert not nb.ones(2).requires_grad
    with nb.program_guard(nb.Program()), pytest.raises(nb.UnsupportedError):
        nb.ones(2, requires_grad=True)


def test_allclose_and_equal():
    a = nb.tensor([1.0, 2.0, np.nan])
    assert nb.allclose(a, a, equal_nan=True) and not nb.allclose(a, a)
    assert nb.allclose(nb.tensor([1.0]), [1.0 + 1e-9])
    assert nb.equal(nb.ones(2), nb.ones(2)) and not nb.equal(nb.ones(2), nb.ones(3))
    assert not nb.equal(nb.ones(2), nb.zeros(2))


def test_tensor_repeat_tiles_as_pytorchs_does():
    x = nb.tensor(X[:2, :3])
    for sizes in [(2, 2), (3, 1, 2), ((1, 2),)]:
        reps = sizes[0] if len(sizes) == 1 else sizes
        np.testing.assert_array_equal(x.repeat(*sizes).numpy(), np.tile(X[:2, :3], reps))
    np.testing.assert_array_equal(x.repeat(2, axis=1).numpy(), X[:2, :3].repeat(2, axis=1))
    with pytest.raises(ValueError, match="one size per dim"):
        x.repeat(3)  # PyTorch refuses fewer sizes than dims; numpy would repeat elements
    check_modes(lambda t: t.repeat(2, 1, 3), X[:2, :3])
    gradcheck(
        lambda t: t.repeat(2, 3), [nb.tensor(X[:2, :3].astype(np.float64), requires_grad=True)]
    )


def test_graph_values_have_size_view_and_the_casts():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 3])
        assert x.size == -1 and x.size(1) == 3 and x.dim() == 2
        y = x.view(-1, 3).double().masked_fill(x > 0, 1.0)
        with pytest.raises(nb.UnsupportedError):
            x.numel()
    (out,) = nb.Executor().run(main, {"x": X[:, :3]}, [y])
    np.testing.assert_array_equal(out, np.where(X[:, :3] > 0, 1.0, X[:, :3]).astype(np.float64))


def test_a_pytorch_style_model_runs_alike_eager_and_jitted():
    def model(x, w):
        h = F.relu(x.view(x.size(0), -1) @ w)
        values, indices = h.max(dim=1)
        return F.normalize(h, dim=1).sum(dim=0, keepdim=True), values, indices.float()

    x = RNG.standard_normal((4, 2, 3))
    counts = check_modes(model, x, RNG.standard_normal((6, 5)))
    assert counts["outputs"] == 3 and counts["gradients"] == 2


def test_functional_activations_match_their_formulas():
    x = RNG.standard_normal(50)
    t = nb.tensor(x)
    expected = {
        "silu": x / (1 + np.exp(-x)),
        "elu": np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
        "hardtanh": np.clip(x, -1, 1),
        "relu6": np.clip(x, 0, 6),
        "logsigmoid": -np.log1p(np.exp(-x)),
        "leaky_relu": np.where(x > 0, x, 0.01 * x),
    }
    for name, ref in expected.items():
        np.testing.assert_allclose(getattr(F, name)(t).numpy(), ref, rtol=1e-6, atol=1e-7)
    v = RNG.standard_normal((3, 4))
    ref = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(F.normalize(nb.tensor(v)).numpy(), ref, rtol=1e-12)


def test_functional_inplace_writes_the_input():
    t = nb.tensor([-1.0, 2.0])
    version = t.version
    out = F.relu(t, inplace=True)
    assert out is t and t.version == version + 1
    np.testing.assert_array_equal(t.numpy(), [0.0, 2.0])
    assert F.relu(nb.tensor([-1.0])).numpy()[0] == 0.0


def test_functional_cross_entropy_with_class_weights():
    logits = RNG.standard_normal((6, 3))
    labels = np.array([0, 2, 1, 1, -100, 2])
    weight = np.array([0.5, 2.0, 1.0])
    lse = np.log(np.exp(logits).sum(axis=1))
    keep = labels != -100
    picked = logits[keep, labels[keep]]
    w = weight[labels[keep]]
    expected = (w * (lse[keep] - picked)).sum() / w.sum()  # PyTorch's weighted mean
    got = F.cross_entropy(nb.tensor(logits), nb.tensor(labels), weight=nb.tensor(weight))
    np.testing.assert_allclose(got.item(), expected, rtol=1e-12)
    plain = F.cross_entropy(nb.tensor(logits), nb.tensor(labels))
    expected_plain = (lse[keep] - picked).mean()
    np.testing.assert_allclose(plain.item(), expected_plain, rtol=1e-12)
    # with label smoothing, PyTorch's weighted smoothing term (its mean divided as nll's)
    log_p = logits - lse[:, None]
    smooth = -(log_p[keep] * weight).sum() / w.sum()
    got = F.cross_entropy(
        nb.tensor(logits), nb.tensor(labels), nb.tensor(weight), label_smoothing=0.1
    )
    np.testing.assert_allclose(got.item(), 0.9 * expected + 0.1 / 3 * smooth, rtol=1e-12)
    rows = F.cross_entropy(
        nb.tensor(logits),
        nb.tensor(labels),
        nb.tensor(weight),
        reduction="none",
        label_smoothing=0.1,
    ).numpy()
    want_rows = np.zeros(6)
    want_rows[keep] = 0.9 * w * (lse[keep] - picked) - 0.1 / 3 * (log_p[keep] * weight).sum(axis=1)
    np.testing.assert_allclose(rows, want_rows, rtol=1e-12)


def test_functional_one_hot_and_pad_follow_pytorch():
    labels = nb.tensor([0, 3, 1])
    np.testing.assert_array_equal(F.one_hot(labels).numpy(), np.eye(4, dtype=np.int64)[[0, 3, 1]])
    assert F.one_hot(labels, 6).shape == (3, 6)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(F.pad(nb.tensor(x), (1, 2)).numpy(), np.pad(x, ((0, 0), (1, 2))))
    both = F.pad(nb.tensor(x), (0, 1, 2, 0), value=9.0)  # last dim first, then the one before
    np.testing.assert_array_equal(both.numpy(), np.pad(x, ((2, 0), (0, 1)), constant_values=9))
    with pytest.raises(ValueError):
        F.pad(nb.tensor(x), (1, 1, 1))


def test_fixed_rank_products_and_their_errors():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))
    np.testing.assert_allclose(nb.mm(nb.tensor(a), nb.tensor(b)).numpy(), a @ b, rtol=1e-12)
    c, d = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
    np.testing.assert_allclose(nb.tensor(c).bmm(nb.tensor(d)).numpy(), c @ d, rtol=1e-12)
    u, v = RNG.standard_normal(3), RNG.standard_normal(5)
    np.testing.assert_allclose(nb.outer(nb.tensor(u), nb.tensor(v)).numpy(), np.outer(u, v))
    np.testing.assert_allclose(nb.dot(nb.tensor(u), nb.tensor(u)).item(), u @ u, rtol=1e-12)
    for fn, args in [(nb.mm, (u, u)), (nb.bmm, (a, b)), (nb.dot, (a, a)), (nb.outer, (a, u))]:
        with pytest.raises(nb.ShapeError, match=fn.__name__):
            fn(*[nb.tensor(t) for t in args])


def test_axis_moves_rolls_and_grids_match_numpy():
    x = RNG.standard_normal((2, 3, 4))
    t = nb.tensor(x)
    np.testing.assert_array_equal(t.swapaxes(0, 2).numpy(), np.swapaxes(x, 0, 2))
    for src, dst in [(0, -1), ((0, 1), (2, 0)), (-1, 0)]:
        np.testing.assert_array_equal(nb.movedim(t, src, dst).numpy(), np.moveaxis(x, src, dst))
    for shifts, axis in [(1, None), (-7, None), (2, 1), ((1, -1), (0, 2)), (0, 0), (5, 2)]:
        np.testing.assert_array_equal(nb.roll(t, shifts, axis).numpy(), np.roll(x, shifts, axis))
    np.testing.assert_array_equal(t.mT.numpy(), np.swapaxes(x, -1, -2))
    np.testing.assert_array_equal(nb.amax(t, dim=(0, 2)).numpy(), x.max(axis=(0, 2)))
    np.testing.assert_array_equal(t.amin(dim=1, keepdim=True).numpy(), x.min(1, keepdims=True))
    p, q = np.arange(2.0), np.arange(3.0)
    for indexing in ("ij", "xy"):
        got = nb.meshgrid(nb.tensor(p), nb.tensor(q), indexing=indexing)
        for g, e in zip(got, np.meshgrid(p, q, indexing=indexing)):
            np.testing.assert_array_equal(g.numpy(), e)


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_triangles_and_diagonals_match_numpy(k):
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(nb.tril(nb.tensor(x), k).numpy(), np.tril(x, k))
    np.testing.assert_array_equal(nb.tensor(x).triu(k).numpy(), np.triu(x, k))
    m = x[0]
    m[0, 1] = np.nan  # off most diagonals: must not leak into them
    np.testing.assert_array_equal(nb.diag(nb.tensor(m), k).numpy(), np.diag(m, k))
    v = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(nb.diag(nb.tensor(v), k).numpy(), np.diag(v, k))


def test_composed_ops_differentiate():
    x = nb.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    for fn in (
        lambda t: nb.roll(t, (1, 2), (0, 1)),
        lambda t: nb.tril(t, 1),
        lambda t: nb.diag(t, 1),
        lambda t: nb.diag(nb.diag(t)),
        lambda t: nb.movedim(t, 0, 1),
        lambda t: nb.lerp(t, t * t, 0.3),
        lambda t: nb.einsum("ij,kj->ik", t, t),
    ):
        gradcheck(fn, [x])


def test_isclose_lerp_empty_and_new_tensors():
    a = np.array([1.0, 1.0, np.inf, np.nan, -np.inf, 0.0])
    b = np.array([1.0 + 1e-9, 1.1, np.inf, np.nan, np.inf, 1e-9])
    for equal_nan in (False, True):
        got = nb.isclose(nb.tensor(a), nb.tensor(b), equal_nan=equal_nan).numpy()
        np.testing.assert_array_equal(got, np.isclose(a, b, equal_nan=equal_nan))
    np.testing.assert_allclose(nb.lerp(nb.zeros(2), nb.full((2,), 4.0), 0.25).numpy(), [1, 1])
    e = nb.empty(2, 3, requires_grad=True)
    assert e.shape == (2, 3) and not e.numpy().any() and e.requires_grad
    t = nb.ones(2, dtype="int64")
    assert t.new_zeros(3).dtype == np.int64 and t.new_ones((2, 2)).shape == (2, 2)
    assert t.new_full((2,), 7).tolist() == [7, 7] and t.new_empty(1).shape == (1,)
    assert t.new_tensor([1.5]).dtype == np.int64 and t.new_tensor([1.5], "float32").item() == 1.5


def test_einsum_diagonal_ignores_nan_off_the_diagonal():
    m = np.array([[1.0, np.nan], [2.0, 3.0]])
    np.testing.assert_array_equal(nb.einsum("ii->i", nb.tensor(m)).numpy(), [1.0, 3.0])


def test_activation_and_loss_modules_call_their_functions():
    x = nb.tensor(RNG.standard_normal((4, 3)))
    pairs = [
        (nn.SiLU(), F.silu(x)),
        (nn.ELU(0.5), F.elu(x, 0.5)),
        (nn.Softplus(2.0), nb.softplus(x, beta=2.0)),
        (nn.Hardtanh(-0.5, 0.5), nb.clip(x, -0.5, 0.5)),
        (nn.ReLU6(), nb.clip(x, 0.0, 6.0)),
        (nn.LogSoftmax(dim=0), nb.log_softmax(x, axis=0)),
    ]
    for module, expected in pairs:
        np.testing.assert_array_equal(module(x).numpy(), expected.numpy())
    assert nn.Unflatten(1, (2, -1))(nb.ones(3, 4, 5)).shape == (3, 2, 2, 5)
    y = nb.tensor([0, 2, 1, 1])
    weight = nb.tensor([1.0, 2.0, 0.5], dtype="float64")
    loss = nn.CrossEntropyLoss(weight=weight, reduction="sum")
    assert "weight" in loss.state_dict()  # a buffer, as in PyTorch
    expected = F.cross_entropy(x, y, weight, reduction="sum")
    np.testing.assert_array_equal(loss(x, y).numpy(), expected.numpy())
    mse = nn.MSELoss()(x, x * 0).numpy()
    np.testing.assert_array_equal(mse, F.mse_loss(x, x * 0).numpy())
    np.testing.assert_allclose(mse, nb.mean(x * x).numpy(), rtol=1e-14)  # (another sum order)
    np.testing.assert_array_equal(nn.L1Loss("sum")(x, x * 0).numpy(), nb.sum(nb.abs(x)).numpy())
    nll = nn.NLLLoss(ignore_index=2)(nb.log_softmax(x, 1), y)
    np.testing.assert_array_equal(
        nll.numpy(), nb.nll_loss(nb.log_softmax(x, 1), y, ignore_index=2).numpy()
    )
    z = nb.tensor(RNG.random((4, 3)))
    bce = nn.BCEWithLogitsLoss(pos_weight=nb.tensor([1.0, 2.0, 3.0], dtype="float64"))(x, z)
    ref = nb.binary_cross_entropy_with_logits(x, z, pos_weight=nb.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(bce.numpy(), ref.numpy(), rtol=1e-7)
    with pytest.raises(ValueError):
        nn.MSELoss("average")


def test_more_learning_rate_schedules():
    from nbflow.optim.lr_scheduler import ExponentialLR, LambdaLR, MultiStepLR

    def lrs(make, n=6):
        optimizer = nb.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
        schedule = make(optimizer)
        seen = []
        for _ in range(n):
            seen.append(optimizer.lr)
            schedule.step()
        return seen, schedule

    seen, _ = lrs(lambda o: MultiStepLR(o, [2, 4], gamma=0.5))
    np.testing.assert_allclose(seen, [0.1, 0.1, 0.05, 0.05, 0.025, 0.025])
    seen, _ = lrs(lambda o: ExponentialLR(o, 0.9))
    np.testing.assert_allclose(seen, [0.1 * 0.9**e for e in range(6)])
    seen, schedule = lrs(lambda o: LambdaLR(o, lambda e: 1 / (e + 1)))
    np.testing.assert_allclose(seen, [0.1 / (e + 1) for e in range(6)])
    state = schedule.state_dict()
    assert "lr_lambda" not in state and state["last_epoch"] == 6
    with pytest.raises(TypeError):
        LambdaLR(nb.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1), 0.5)


def test_reduce_lr_on_plateau():
    from nbflow.optim.lr_scheduler import ReduceLROnPlateau

    optimizer = nb.optim.SGD(nn.Linear(2, 2).parameters(), lr=1.0)
    schedule = ReduceLROnPlateau(optimizer, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    seen = []
    for loss in [5.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 3.0]:
        schedule.step(nb.tensor(loss))
        seen.append(optimizer.lr)
    # two epochs without improvement halve the lr, a cooldown epoch follows, never < 0.2
    assert seen == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    schedule.step(3.0)
    schedule.step(3.0)
    assert optimizer.lr == 0.2  # 0.125 is below min_lr
    state = schedule.state_dict()
    again = ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
    again.load_state_dict(state)
    assert again.best == 3.0 and again.min_lrs == [0.2]
    with pytest.raises(ValueError):
        ReduceLROnPlateau(optimizer, mode="lowest")


def test_dtype_names_modules_casts_and_utilities():
    assert (nb.long, nb.double, nb.half) == (np.int64, np.float64, np.float16)
    assert (nb.float, nb.int, nb.bool) == (np.float32, np.int32, np.bool_)
    assert nb.tensor([1, 2], dtype=nb.long).dtype == np.int64
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model[0].bias.requires_grad_(False)  # frozen: .to() keeps it frozen
    model[1].register_buffer("seen", nb.zeros(1, dtype="int64"))
    model.double()
    assert model[0].weight.dtype == np.float64 and model[1].running_mean.dtype == np.float64
    assert model[1].seen.dtype == np.int64  # not a float: not cast
    assert model[0].weight.requires_grad and not model[0].bias.requires_grad
    assert model.float()[0].weight.dtype == np.float32
    perm = nb.randperm(10, generator=nb.Generator(0))
    assert sorted(perm.tolist()) == list(range(10)) and perm.dtype == np.int64
    assert perm.tolist() == nb.randperm(10, generator=nb.Generator(0)).tolist()  # seeded
    p = nb.tensor([1.0, -3.0], requires_grad=True)
    (p * p).sum().backward()
    nn.utils.clip_grad_value_([p], 1.5)
    assert p.grad.tolist() == [1.5, -1.5]
    from nbflow.utils.data import DataLoader

    assert DataLoader is nb.data.DataLoader
    with nb.inference_mode():
        assert not nb.is_grad_enabled()
    x = nb.tensor(X)
    assert x.t().shape == (4, 3) and nb.ones(3).t().shape == (3,)
    np.testing.assert_array_equal(x.round().numpy(), np.round(X))
    np.testing.assert_array_equal(x.floor().numpy(), np.floor(X))
    np.testing.assert_allclose(x.square().numpy(), X * X)
    with pytest.raises(ValueError):
        nb.ones(2, 2, 2).t()


@pytest.mark.parametrize("name", ["relu", "exp", "sqrt", "sigmoid", "tanh", "abs", "round"])
def test_in_place_unary_methods_write_the_tensor(name):
    data = np.abs(X) + 0.1
    t = nb.tensor(data)
    version = t.version
    assert getattr(t, f"{name}_")() is t and t.version > version
    expected = getattr(nb, name)(nb.tensor(data)).numpy()
    np.testing.assert_array_equal(t.numpy(), expected)


def test_in_place_unary_methods_and_autograd():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    y = w * 1.0
    y.tanh_()
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 1 - np.tanh([1.0, 2.0]) ** 2, rtol=1e-6)
    with pytest.raises(nb.GradientError, match="leaf"):
        w.exp_()


def test_embedding_from_pretrained_copies_and_freezes():
    table = np.arange(6.0).reshape(3, 2)
    frozen = nn.Embedding.from_pretrained(nb.tensor(table))
    np.testing.assert_array_equal(frozen(nb.tensor([2, 0])).numpy(), table[[2, 0]])
    assert not frozen.weight.requires_grad and frozen.weight.dtype == np.float64
    assert [name for name, _ in frozen.named_parameters()] == ["weight"]
    trained = nn.Embedding.from_pretrained(nb.tensor(table), freeze=False)
    trained(nb.tensor([1])).sum().backward()
    np.testing.assert_array_equal(trained.weight.grad.numpy(), [[0, 0], [1, 1], [0, 0]])
    with pytest.raises(nb.ShapeError):
        nn.Embedding.from_pretrained(nb.ones(3))


def _linear_resize(a, axis, n_out, align_corners):
    """Linear interpolation along one axis, written from PyTorch's documented coordinates."""
    n_in = a.shape[axis]
    out = []
    for i in range(n_out):
        if align_corners:
            src = i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((i + 0.5) * n_in / n_out - 0.5, 0.0)
        lo = min(int(np.floor(src)), n_in - 1)
        hi = min(lo + 1, n_in - 1)
        w = src - lo
        out.append(np.take(a, lo, axis) * (1 - w) + np.take(a, hi, axis) * w)
    return np.stack(out, axis=axis)


@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_matches_the_coordinate_rules(align_corners):
    x = RNG.standard_normal((2, 3, 5, 4))
    got = F.interpolate(nb.tensor(x), size=(7, 3), mode="bilinear", align_corners=align_corners)
    expected = _linear_resize(_linear_resize(x, 2, 7, align_corners), 3, 3, align_corners)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    near = F.interpolate(nb.tensor(x), scale_factor=2)  # each element repeated
    np.testing.assert_array_equal(near.numpy(), x.repeat(2, axis=2).repeat(2, axis=3))
    up = nn.Upsample(size=4, mode="linear", align_corners=align_corners)
    y = RNG.standard_normal((1, 2, 6))
    np.testing.assert_allclose(up(nb.tensor(y)).numpy(), _linear_resize(y, 2, 4, align_corners))
    gradcheck(lambda t: F.interpolate(t, scale_factor=1.5, mode="bilinear"),
              [nb.tensor(x, requires_grad=True)])  # fmt: skip
    with pytest.raises(ValueError):
        F.interpolate(nb.tensor(x), size=3, scale_factor=2)
    with pytest.raises(ValueError):
        F.interpolate(nb.tensor(x), size=3, mode="linear")  # 2 spatial dims: bilinear


def test_interpolate_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 7))
    for kw in ({"scale_factor": 0.5, "mode": "bilinear"}, {"scale_factor": 1.7},
               {"size": (3, 11), "mode": "bilinear", "align_corners": True}):  # fmt: skip
        expected = torch.nn.functional.interpolate(torch.from_numpy(x), **kw).numpy()
        np.testing.assert_allclose(F.interpolate(nb.tensor(x), **kw).numpy(), expected, atol=1e-12)


def test_functions_written_with_pytorchs_names_take_numpys_too():
    # the composites of ops/select.py, scans.py, products.py name their argument `dim`
    x = nb.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(
        nb.narrow(x, axis=1, start=1, length=2).numpy(), x.numpy()[:, 1:3]
    )
    np.testing.assert_array_equal(x.cumprod(axis=1).numpy(), np.cumprod(x.numpy(), axis=1))
    with pytest.raises(TypeError, match="one argument, two names"):
        nb.narrow(x, axis=1, dim=1, start=0, length=1)


def test_tensor_queries_and_more_methods_as_pytorch_has_them():
    x = nb.tensor([[1.0, -2.0], [3.0, 4.0]], dtype="float64")
    i = nb.tensor([1, 2], dtype="int32")
    assert x.is_floating_point() and not i.is_floating_point() and not x.is_complex()
    assert x.is_cpu and not x.is_cuda and x.get_device() == -1 and x.is_contiguous()
    assert (x.element_size(), x.itemsize, x.nbytes, x.nelement(), x.ndimension()) == (
        8,
        8,
        32,
        4,
        2,
    )
    assert i.is_signed() and not nb.tensor([True]).is_signed()
    a = x.numpy()
    np.testing.assert_array_equal(x.where(x > 0, 0.0).numpy(), np.where(a > 0, a, 0.0))
    np.testing.assert_allclose(x.det().numpy(), np.linalg.det(a), rtol=1e-12)
    np.testing.assert_allclose(x.inverse().numpy(), np.linalg.inv(a), rtol=1e-12)
    assert x.moveaxis(0, 1).shape == x.swapdims(0, 1).shape == (2, 2)
    np.testing.assert_array_equal(x.ravel().numpy(), a.ravel())
    assert x.nonzero().shape == (4, 2) and x.allclose(x) and x.equal(x)
    # in-place comparisons and scans write their result into the tensor, in its dtype
    y = x.clone()
    assert y.gt_(0) is y and y.dtype == x.dtype
    np.testing.assert_array_equal(y.numpy(), (a > 0).astype(a.dtype))
    z = x.clone()
    z.cumsum_(1)
    np.testing.assert_array_equal(z.numpy(), np.cumsum(a, axis=1))

    @nb.jit
    def masked(t):  # the methods run on graph values too
        return t.where(t > 0, 0.0).ravel()

    np.testing.assert_array_equal(masked(x).numpy(), np.where(a > 0, a, 0.0).ravel())


def test_functional_gelu_takes_pytorchs_approximate_strings():
    x = nb.tensor(RNG.standard_normal(5))
    np.testing.assert_array_equal(F.gelu(x, approximate="tanh").numpy(), nb.gelu(x, True).numpy())
    np.testing.assert_array_equal(F.gelu(x, "none").numpy(), nb.gelu(x, False).numpy())
    with pytest.raises(nb.AttrError, match="approximate"):
        F.gelu(x, approximate="fast")
