"""PyTorch's conventions where nbflow once answered otherwise (bitwise operators on integers,
max/min against a tensor, broadcasting cosine similarity, index_fill's value gradient, relu
at -inf, norm and elu-family gradients at 0), each checked against an independent reference:
numpy, or finite differences."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import errors
from nbflow.testing import check_modes, gradcheck

# ---------------------------------------------------------------- &, |, ^, ~ on integers


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_operators_are_bitwise_on_integers(dtype):
    a = np.array([6, 5, -3, 0, 12], dtype)
    b = np.array([3, 1, 7, -1, 10], dtype)
    x, y = nb.tensor(a), nb.tensor(b)
    for got, want in [
        (x & y, a & b),
        (x | y, a | b),
        (x ^ y, a ^ b),
        (~x, ~a),
        (x & 3, a & 3),
        (3 & x, 3 & a),
        (x | 8, a | 8),
        (9 ^ x, 9 ^ a),
    ]:
        assert got.dtype == nb.tensor(want).dtype
        np.testing.assert_array_equal(got.numpy(), want)
    z = nb.tensor(a)
    z &= y
    np.testing.assert_array_equal(z.numpy(), a & b)
    z = nb.tensor(a)
    z ^= 5
    np.testing.assert_array_equal(z.numpy(), a ^ 5)


def test_operators_stay_logical_on_bools():
    p = np.array([True, False, True, False])
    q = np.array([True, True, False, False])
    x, y = nb.tensor(p), nb.tensor(q)
    np.testing.assert_array_equal((x & y).numpy(), p & q)
    np.testing.assert_array_equal((x | y).numpy(), p | q)
    np.testing.assert_array_equal((x ^ y).numpy(), p ^ q)
    np.testing.assert_array_equal((~x).numpy(), ~p)
    assert (~x).dtype == nb.bool


def test_bitwise_operators_refuse_floats():
    x = nb.tensor([1.0, 2.0])
    with pytest.raises(errors.NbflowError):
        _ = x & x
    with pytest.raises(errors.NbflowError):
        _ = ~x


# ---------------------------------------------------------------- max(input, other)


@pytest.mark.parametrize(
    "name, ref", [("max", np.maximum), ("min", np.minimum)], ids=["max", "min"]
)
def test_max_min_with_a_tensor_other_compare_elementwise(name, ref):
    a = np.array([[1.0, 5.0, 3.0], [-2.0, 4.0, np.nan]])
    for b in (np.array(4.0), np.array([0.0, 9.0, 3.5]), np.array([[2.0], [3.0]])):
        fn = getattr(nb, name)
        for got in (
            fn(nb.tensor(a), nb.tensor(b)),
            fn(nb.tensor(a), other=nb.tensor(b)),
            getattr(nb.tensor(a), name)(nb.tensor(b)),
        ):
            np.testing.assert_array_equal(got.numpy(), ref(a, b))
    ints = np.array([1, 7, -3])
    got = fn(nb.tensor(ints), nb.tensor(2))
    assert got.dtype == nb.int64
    np.testing.assert_array_equal(got.numpy(), ref(ints, 2))
    # a number is still the dim
    values, indices = fn(nb.tensor(a[:, :2]), dim=1)
    np.testing.assert_array_equal(values.numpy(), getattr(np, name)(a[:, :2], axis=1))
    # the gradient: each element to the input it came from (finite differences)
    x = np.array([1.0, 5.0, 3.0])
    gradcheck(lambda u, v: fn(u, v), [nb.tensor(x), nb.tensor(4.0)])
    check_modes(fn, x, np.array(4.0))


# ---------------------------------------------------------------- cosine_similarity


def _cosine_ref(a, b, dim, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    n1 = np.maximum(np.linalg.norm(a, axis=dim, keepdims=True), eps)
    n2 = np.maximum(np.linalg.norm(b, axis=dim, keepdims=True), eps)
    return np.sum((a / n1) * (b / n2), axis=dim)


@pytest.mark.parametrize(
    "shapes, dim",
    [(((1, 2), (2, 2)), 0), (((3, 1, 4), (5, 4)), 1), (((3, 1, 4), (5, 4)), 2), (((2, 3),) * 2, 1)],
)
def test_cosine_similarity_broadcasting_along_dim(shapes, dim):
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.1, 1, s) for s in shapes)
    got = nb.nn.functional.cosine_similarity(nb.tensor(a), nb.tensor(b), dim=dim).numpy()
    np.testing.assert_allclose(got, _cosine_ref(a, b, dim), rtol=1e-12)
    assert np.all(got <= 1 + 1e-12)
    gradcheck(
        lambda u, v: nb.nn.functional.cosine_similarity(u, v, dim=dim),
        [nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)],
    )


def test_cosine_similarity_of_same_direction_is_one_when_broadcast():
    # x1 (1, 2) against two rows along dim 0: each column is (1, 1) against (v, v)
    x1 = nb.tensor([[1.0, 2.0]])
    x2 = nb.tensor([[3.0, 5.0], [3.0, 5.0]])
    got = nb.nn.functional.cosine_similarity(x1, x2, dim=0).numpy()
    np.testing.assert_allclose(got, [1.0, 1.0], rtol=1e-6)


def test_cosine_similarity_clamped_norm_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = np.array([[1e-10, 2e-10]]), np.array([[3.0, -1.0]])
    t1 = torch.tensor(a, requires_grad=True)
    torch.nn.functional.cosine_similarity(t1, torch.tensor(b)).sum().backward()
    x1 = nb.tensor(a, requires_grad=True)
    nb.nn.functional.cosine_similarity(x1, nb.tensor(b)).sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), t1.grad.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- index_fill


def test_index_fill_value_gradient_counts_a_repeated_index_once():
    a = np.arange(6.0).reshape(2, 3)
    index = np.array([0, 2, 0])
    want = a.copy()
    want[:, np.unique(index)] = 2.0
    x = nb.tensor(a, requires_grad=True)
    v = nb.tensor(2.0, dtype=nb.float64, requires_grad=True)
    y = x.index_fill(1, nb.tensor(index), v)
    np.testing.assert_array_equal(y.numpy(), want)
    g = np.array([[1.0, 10.0, 100.0], [1000.0, 1e4, 1e5]])
    y.backward(nb.tensor(g))
    assert v.grad.item() == g[:, [0, 2]].sum()  # 202 + 101000: each filled column once
    np.testing.assert_array_equal(x.grad.numpy(), g * [0, 1, 0])  # the filled columns: 0
    gradcheck(
        lambda u, w: nb.index_fill(u, 1, nb.tensor(index), w),
        [nb.tensor(a, requires_grad=True), nb.tensor(2.0, dtype=nb.float64, requires_grad=True)],
    )


def test_index_fill_keeps_dtype_and_negative_indices():
    got = nb.arange(3).index_fill(0, nb.tensor([1]), 2.7)
    assert got.dtype == nb.int64 and got.numpy().tolist() == [0, 2, 2]  # truncated, as torch
    got = nb.arange(3.0).index_fill(0, nb.tensor([-1, -1]), 7.0)
    np.testing.assert_array_equal(got.numpy(), [0.0, 1.0, 7.0])
    x = nb.ones(3)
    x.index_fill_(0, nb.tensor([1, 1]), 0.0)
    np.testing.assert_array_equal(x.numpy(), [1.0, 0.0, 1.0])


# ---------------------------------------------------------------- relu and the margin losses

INF = np.inf


def test_relu_of_infinities_and_its_gradient_convention():
    a = np.array([-INF, INF, np.nan, -1.0, 0.0, 2.0])
    x = nb.tensor(a, requires_grad=True)
    y = nb.relu(x)
    np.testing.assert_array_equal(y.numpy(), np.maximum(a, 0))  # relu(-inf) is 0, not NaN
    g = np.array([1.0, 2.0, 5.0, np.nan, INF, 3.0])
    y.backward(nb.tensor(g))
    # PyTorch's threshold_backward: 0 where x <= 0 whatever g is, g elsewhere (NaN x too)
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 2.0, 5.0, 0.0, 0.0, 3.0])


def _margin_ranking_ref(a, b, t, margin=0.0):
    with np.errstate(invalid="ignore"):
        return np.maximum(-t * (a - b) + margin, 0)


def test_margin_ranking_loss_with_infinite_inputs():
    a = np.array([INF, -INF, 1.0, INF, 2.0])
    b = np.array([1.0, 1.0, INF, INF, -INF])
    for t in (np.array([1.0, 1, 1, -1, -1]), np.array([-1.0, -1, -1, 1, 1])):
        got = nb.nn.functional.margin_ranking_loss(
            nb.tensor(a), nb.tensor(b), nb.tensor(t), reduction="none"
        )
        want = _margin_ranking_ref(a, b, t)
        np.testing.assert_array_equal(got.numpy(), want)
        assert np.isnan(want[3]) and np.isnan(want).sum() == 1  # only inf - inf


def test_margin_ranking_loss_on_integers_is_float():
    a, b, t = np.array([1, 5, 3]), np.array([2, 2, 2]), np.array([1, -1, 1])
    F = nb.nn.functional
    for reduction, reduce in (("none", lambda v: v), ("mean", np.mean), ("sum", np.sum)):
        for margin in (0, 1):
            got = F.margin_ranking_loss(
                nb.tensor(a), nb.tensor(b), nb.tensor(t), margin=margin, reduction=reduction
            )
            assert got.dtype == nb.float32
            want = reduce(_margin_ranking_ref(a, b, t, margin))
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_hinge_embedding_loss_with_infinite_inputs():
    x = np.array([INF, -INF, INF, -INF, 1.0, 0.5])
    t = np.array([1.0, 1, -1, -1, -1, 0])
    got = nb.nn.functional.hinge_embedding_loss(nb.tensor(x), nb.tensor(t), reduction="none")
    # PyTorch's rule: max(0, 1 - x) where t != 1, plus x where t != -1
    want = np.where(t != 1, np.maximum(1 - x, 0), 0) + np.where(t != -1, x, 0)
    np.testing.assert_array_equal(got.numpy(), want.astype(np.float32))
    assert not np.isnan(got.numpy()).any()


def test_margin_losses_match_torch_at_infinities():
    torch = pytest.importorskip("torch")
    TF, F = torch.nn.functional, nb.nn.functional
    a = np.array([INF, -INF, 1.0, INF, 2.0])
    b = np.array([1.0, 1.0, INF, INF, -INF])
    t = np.array([1.0, 1, 1, -1, -1])
    want = TF.margin_ranking_loss(*map(torch.tensor, (a, b, t)), reduction="none").numpy()
    got = F.margin_ranking_loss(*map(nb.tensor, (a, b, t)), reduction="none").numpy()
    np.testing.assert_array_equal(got, want)
    want = TF.hinge_embedding_loss(torch.tensor(a), torch.tensor(t), reduction="none").numpy()
    got = F.hinge_embedding_loss(nb.tensor(a), nb.tensor(t), reduction="none").numpy()
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- vector norms' gradients


def _norm_grad_ref(v, p):
    """PyTorch's rule: sgn(v) |v|^(p-1) / norm^(p-1), 0 at zero elements and at the zero
    vector."""
    a = np.abs(v)
    n = np.sum(a**p) ** (1 / p)
    if n == 0:
        return np.zeros_like(v)
    safe = np.where(a > 0, a, 1.0)
    return np.where(a > 0, np.sign(v) * safe ** (p - 1) / n ** (p - 1), 0.0)


@pytest.mark.parametrize("p", [0.5, 1.5, 3.0])
def test_vector_norm_gradient_at_zeros(p):
    for v in (np.zeros(3), np.array([0.0, 1.0, -2.0]), np.array([0.5, 1.0, -2.0])):
        x = nb.tensor(v, requires_grad=True)
        y = nb.linalg.norm(x, p)
        np.testing.assert_allclose(y.item(), np.linalg.norm(v, p))
        y.backward()
        np.testing.assert_allclose(x.grad.numpy(), _norm_grad_ref(v, p), rtol=1e-12)
    v = np.array([0.5, 1.0, -2.0])  # away from zeros: finite differences
    gradcheck(lambda u: nb.linalg.norm(u, p), [nb.tensor(v, requires_grad=True)])


def test_vector_norm_of_nan_is_nan():
    for p in (2, 0.5, 3.0, 1, np.inf):
        assert np.isnan(nb.linalg.norm(nb.tensor([np.nan, 1.0]), p).item())
        assert nb.linalg.norm(nb.tensor([np.inf, 1.0]), p).item() == np.inf


# ---------------------------------------------------------------- elu, celu, selu at 0


@pytest.mark.parametrize(
    "name, fn, slope_at_0",
    [
        ("elu", lambda x: nb.nn.functional.elu(x, alpha=2.0), 2.0),
        ("celu", lambda x: nb.nn.functional.celu(x, alpha=2.0), 1.0),
        ("selu", nb.nn.functional.selu, 1.6732632423543772 * 1.0507009873554805),
    ],
    ids=["elu", "celu", "selu"],
)
def test_elu_family_gradient_at_zero_is_the_negative_branch(name, fn, slope_at_0):
    # PyTorch's elu_backward takes the x <= 0 branch at 0: its left derivative (the one-sided
    # finite difference from below)
    x = nb.tensor([0.0, -0.0, -1.0, 1.0], requires_grad=True, dtype=nb.float64)
    fn(x).sum().backward()
    assert x.grad.numpy()[:2].tolist() == pytest.approx([slope_at_0] * 2, rel=1e-12)
    h = 1e-7
    left = (fn(nb.tensor(0.0, dtype=nb.float64)) - fn(nb.tensor(-h, dtype=nb.float64))).item()
    assert x.grad.numpy()[0] == pytest.approx(left / h, rel=1e-6)
    gradcheck(fn, [nb.tensor([-1.0, 1.0, -0.3], requires_grad=True, dtype=nb.float64)])


# ---------------------------------------------------------------- issue 39, second round
# (the OpInfo sweep's wrong answers and internal errors; references: PyTorch, mpmath values)

torch = pytest.importorskip("torch")


def test_pinv_gradient_at_repeated_singular_values_matches_torch():
    rng = np.random.default_rng(0)
    for a in (np.linalg.qr(rng.standard_normal((3, 3)))[0], rng.standard_normal((2, 4, 3))):
        cot = rng.standard_normal(a.shape[:-2] + a.shape[-2:][::-1])
        x = nb.tensor(a, requires_grad=True)
        (nb.linalg.pinv(x) * nb.tensor(cot)).sum().backward()
        xt = torch.tensor(a, requires_grad=True)
        (torch.linalg.pinv(xt) * torch.tensor(cot)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_igamma_for_large_a_near_x():
    # P(a, x) and Q(a, x) by mpmath (50 digits); torch and scipy lose the lower tail here
    a = np.array([1e20, 2e6, 2e6])
    x = np.array([1e20, 2e6 - 5 * np.sqrt(2e6), 2e6])
    p = nb.igamma(nb.tensor(a), nb.tensor(x)).numpy()
    q = nb.igammac(nb.tensor(a), nb.tensor(x)).numpy()
    np.testing.assert_allclose(p[:2], [0.5000000000132981, 2.7834177838339720e-07], rtol=1e-9)
    np.testing.assert_allclose(p + q, 1.0, rtol=1e-12)
    want = torch.igamma(torch.tensor(a[[0, 2]]), torch.tensor(x[[0, 2]])).numpy()
    np.testing.assert_allclose(p[[0, 2]], want, rtol=1e-9)


def test_frexp_and_nextafter_gradients_match_torch():
    v = np.array([1.5, 3.0, -0.3, 0.0, 1e-310])
    x = nb.tensor(v, requires_grad=True)
    nb.frexp(x).mantissa.sum().backward()
    xt = torch.tensor(v, requires_grad=True)
    torch.frexp(xt).mantissa.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    x, y = nb.tensor(v, requires_grad=True), nb.tensor(np.full(5, 2.0), requires_grad=True)
    nb.nextafter(x, y).sum().backward()
    xt, yt = torch.tensor(v, requires_grad=True), torch.tensor(np.full(5, 2.0), requires_grad=True)
    torch.nextafter(xt, yt).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    np.testing.assert_array_equal(0 if y.grad is None else y.grad.numpy(), yt.grad.numpy())


def test_nanmedian_of_a_0d_tensor():
    for keepdim in (False, True):
        got = nb.nanmedian(nb.tensor(3.0, dtype=nb.float64), 0, keepdim=keepdim)
        want = torch.nanmedian(torch.tensor(3.0, dtype=torch.float64), 0, keepdim=keepdim)
        assert got.values.shape == tuple(want.values.shape)
        assert got.values.item() == want.values.item() and got.indices.item() == 0


def test_tensor_split_with_a_0d_tensor_of_sections():
    got = nb.tensor_split(nb.arange(10), nb.tensor(3))
    want = torch.tensor_split(torch.arange(10), torch.tensor(3))
    assert [p.numpy().tolist() for p in got] == [p.numpy().tolist() for p in want]


def test_randint_forms_and_float_dtype():
    x = nb.randint(0, 5, (3, 4), dtype=nb.float32)
    assert x.dtype == nb.float32 and x.shape == (3, 4)
    assert ((x.numpy() >= 0) & (x.numpy() < 5) & (x.numpy() == np.floor(x.numpy()))).all()
    y = nb.randint(5, (6,))  # randint(high, size), as torch.randint(5, (6,))
    assert y.shape == (6,) and y.dtype == nb.int64 and ((y.numpy() >= 0) & (y.numpy() < 5)).all()
    z = nb.randint(2, 4, size=(2,))
    assert ((z.numpy() >= 2) & (z.numpy() < 4)).all()


def test_inv_ex_gradient_of_an_empty_matrix():
    for shape in ((0, 0), (2, 0, 0)):
        x = nb.tensor(np.zeros(shape), requires_grad=True)
        inverse, info = nb.linalg.inv_ex(x)
        inverse.sum().backward()
        assert inverse.shape == shape and x.grad.shape == shape
        assert info.shape == shape[:-2]


def test_stack_with_a_positional_dim_and_squeeze_of_a_non_1_dim():
    a = np.arange(6.0).reshape(2, 3)
    got = nb.stack([nb.tensor(a), nb.tensor(a + 1)], -1)
    want = torch.stack([torch.tensor(a), torch.tensor(a + 1)], -1)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = nb.tensor(a.reshape(2, 1, 3))
    for dim in (0, 1, 2, (0, 1)):
        assert x.squeeze(dim).shape == tuple(torch.tensor(a.reshape(2, 1, 3)).squeeze(dim).shape)


def test_sort_and_argsort_take_stable():
    v = np.array([3.0, 1.0, 3.0, 1.0, 2.0])
    got = nb.sort(nb.tensor(v), stable=True)
    want = torch.sort(torch.tensor(v), stable=True)
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    got = nb.argsort(nb.tensor(v), descending=True, stable=True)
    want = torch.argsort(torch.tensor(v), descending=True, stable=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
