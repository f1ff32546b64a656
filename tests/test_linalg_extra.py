"""The rest of torch.linalg (nbflow/linalg.py, nbflow/ops/factorizations.py) against
scipy.linalg and numpy: shapes and dtypes first, values second; info tensors and errors on
singular input as PyTorch's; float64 gradients against finite differences; eager vs jit; and
torch where it is installed."""

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import lapack

import nbflow as nb
from nbflow import testing as nt

L = nb.linalg
DTYPES = ["float32", "float64"]
TOL = {"float32": 2e-4, "float64": 1e-10}


def general(*shape, dtype="float64", seed=0, shift=3.0):
    """Random matrices, square ones kept well-conditioned by a shifted diagonal."""
    a = np.random.default_rng(seed).standard_normal(shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + shift * np.eye(shape[-1])
    return a.astype(dtype)


def check(out, expected, dtype):
    out = out.numpy() if isinstance(out, nb.Tensor) else out
    assert out.shape == np.shape(expected)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out, expected, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


def leaf(a):
    return nb.tensor(a, dtype="float64", requires_grad=True)


def each(a):
    """The matrices of a batch (..., m, n), one by one."""
    return a.reshape((-1,) + a.shape[-2:])


batches = st.sampled_from([(), (2,), (2, 1)])
sizes = st.integers(1, 4)


# ---------------------------------------------------------------- LU against scipy


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=6, deadline=None)
@given(batch=batches, m=sizes, n=sizes, seed=st.integers(0, 99))
def test_lu_factor_and_lu_match_scipy(dtype, batch, m, n, seed):
    a = general(*batch, m, n, dtype=dtype, seed=seed)
    factor, pivots, info = L.lu_factor_ex(nb.tensor(a))
    k = min(m, n)
    assert pivots.shape == (*batch, k) and pivots.dtype == np.int32
    assert info.shape == batch and info.dtype == np.int32 and not info.numpy().any()
    p, lower, upper = L.lu(nb.tensor(a))
    assert (p.shape, lower.shape, upper.shape) == ((*batch, m, m), (*batch, m, k), (*batch, k, n))
    for i, x in enumerate(each(a)):
        lu_ref, piv_ref = sl.lu_factor(x)  # 0-based pivots
        check(each(factor.numpy())[i], lu_ref, dtype)
        np.testing.assert_array_equal(pivots.numpy().reshape(-1, k)[i], piv_ref + 1)
        for got, ref in zip((p, lower, upper), sl.lu(x)):
            check(each(got.numpy())[i], ref, dtype)
    check(p @ lower @ upper, a, dtype)
    same_lu, same_piv = L.lu_factor(nb.tensor(a))
    np.testing.assert_array_equal(same_lu.numpy(), factor.numpy())
    np.testing.assert_array_equal(same_piv.numpy(), pivots.numpy())


def test_lu_unpack_and_torch_lu():
    a = general(2, 4, 3, seed=1)
    factor, pivots = nb.tensor(a).lu()
    p, lower, upper = nb.lu_unpack(factor, pivots)
    np.testing.assert_allclose((p @ lower @ upper).numpy(), a, atol=1e-12)
    assert np.all(p.numpy().sum(-1) == 1) and np.all(p.numpy().sum(-2) == 1)
    factor2, pivots2, infos = nb.lu(nb.tensor(a), get_infos=True)
    assert infos.shape == (2,) and infos.dtype == np.int32
    np.testing.assert_array_equal(factor2.numpy(), factor.numpy())
    p_only, no_l, no_u = nb.lu_unpack(factor, pivots, unpack_data=False)
    assert no_l.shape == (0,) and no_u.shape == (0,) and p_only.shape == (2, 4, 4)
    no_p, l_only, _ = nb.lu_unpack(factor, pivots, unpack_pivots=False)
    assert no_p.shape == (0,) and l_only.shape == (2, 4, 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_matches_scipy(dtype, left, adjoint):
    a = general(2, 1, 3, 3, dtype=dtype, seed=2)
    b = general(1, 3, 3, 2, dtype=dtype, seed=3) if left else general(2, 2, 3, dtype=dtype)
    factor, pivots = L.lu_factor(nb.tensor(a))
    x = L.lu_solve(factor, pivots, nb.tensor(b), left=left, adjoint=adjoint)
    op_a = np.swapaxes(a, -1, -2) if adjoint else a
    if left:  # op(A) X = B, batch dims broadcast
        expected = np.linalg.solve(op_a.astype("float64"), b.astype("float64"))
    else:  # X op(A) = B
        expected = np.swapaxes(
            np.linalg.solve(np.swapaxes(op_a, -1, -2).astype("float64"), np.swapaxes(b, -1, -2)),
            -1,
            -2,
        )
    check(x, expected, dtype)
    if left:  # scipy's own lu_solve, one matrix at a time
        lu_ref = sl.lu_factor(a[0, 0])
        check(x.numpy()[0, 0], sl.lu_solve(lu_ref, b[0, 0], trans=int(adjoint)), dtype)


def test_torch_lu_solve_and_the_method():
    a, b = general(2, 3, 3, seed=4), general(2, 3, 1, seed=5)
    factor, pivots = nb.tensor(a).lu()
    expected = np.linalg.solve(a, b)
    np.testing.assert_allclose(nb.lu_solve(nb.tensor(b), factor, pivots).numpy(), expected)
    np.testing.assert_allclose(nb.tensor(b).lu_solve(factor, pivots).numpy(), expected)


# ---------------------------------------------------------------- matrix_exp


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_exp_matches_scipy_and_eigh(dtype):
    a = (0.5 * np.random.default_rng(6).standard_normal((2, 3, 4, 4))).astype(dtype)
    got = L.matrix_exp(nb.tensor(a))
    check(got, sl.expm(a.astype("float64")), dtype)
    s = a + np.swapaxes(a, -1, -2)  # symmetric: exp through the eigendecomposition
    w, v = np.linalg.eigh(s.astype("float64"))
    check(
        nb.matrix_exp(nb.tensor(s)), (v * np.exp(w)[..., None, :]) @ np.swapaxes(v, -1, -2), dtype
    )
    nilpotent = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype)
    exact = np.eye(3) + nilpotent + nilpotent @ nilpotent / 2  # the series ends
    check(nb.tensor(nilpotent).matrix_exp(), exact, dtype)
    big = np.diag([20.0, -30.0]).astype(dtype)  # scaling and squaring's territory
    check(L.matrix_exp(nb.tensor(big)) / np.exp(20.0), np.diag([1.0, np.exp(-50.0)]), dtype)
    assert L.matrix_exp(nb.ones(2, 0, 0)).shape == (2, 0, 0)


# ---------------------------------------------------------------- info tensors and errors


def singular_batch():
    return np.stack([np.eye(3) * 2, [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]])


def test_lu_factor_ex_info_and_lu_factor_errors():
    a = singular_batch()
    _, _, info = L.lu_factor_ex(nb.tensor(a))
    expected = [lapack.dgetrf(x)[2] for x in a]  # LAPACK's 1-based index of U's zero
    assert info.numpy().tolist() == expected and expected[1] > 0
    with pytest.raises(nb.LinAlgError, match=r"lu_factor \(batch element 1\): U\[3,3\] is zero"):
        L.lu_factor(nb.tensor(a))
    with pytest.raises(nb.LinAlgError, match=r"lu_factor_ex: U\[3,3\] is zero"):
        L.lu_factor_ex(nb.tensor(a[1]), check_errors=True)
    with pytest.raises(nb.LinAlgError, match="U"):
        nb.jit(lambda t: L.lu_factor(t).LU)(nb.tensor(a))
    factor, pivots = nb.tensor(a).lu()  # torch.lu raises nothing
    assert factor.shape == (2, 3, 3)


def test_solve_ex_and_inv_ex_report_singular_matrices():
    a = singular_batch()
    b = np.ones((2, 3))
    x, info = L.solve_ex(nb.tensor(a), nb.tensor(b))
    assert x.shape == (2, 3) and info.dtype == np.int32
    assert info.numpy()[0] == 0 and info.numpy()[1] > 0
    np.testing.assert_allclose(x.numpy()[0], np.linalg.solve(a[0], b[0]))
    inverse, info = L.inv_ex(nb.tensor(a))
    lu_info = [lapack.dgetrf(m)[2] for m in a]  # both are A's LU's, as in PyTorch
    assert info.numpy().tolist() == lu_info == [0, 3]
    np.testing.assert_allclose(inverse.numpy()[0], np.linalg.inv(a[0]))
    with pytest.raises(nb.LinAlgError, match=r"solve_ex \(batch element 1\): The solver failed"):
        L.solve_ex(nb.tensor(a), nb.tensor(b), check_errors=True)
    with pytest.raises(nb.LinAlgError, match="inv_ex: The diagonal element 3 is zero"):
        L.inv_ex(nb.tensor(a[1]), check_errors=True)
    good = general(2, 3, 3, seed=7)
    right = general(4, 3, seed=8)
    x, info = L.solve_ex(nb.tensor(good), nb.tensor(right), left=False)
    np.testing.assert_allclose(x.numpy() @ good, np.broadcast_to(right, (2, 4, 3)), atol=1e-12)
    assert not info.numpy().any()


def first_bad_minor(x):
    """The order of the first leading minor that is not positive-definite (0 if none)."""
    for k in range(1, len(x) + 1):
        if np.linalg.eigvalsh(x[:k, :k]).min() <= 0:
            return k
    return 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky_ex_info(dtype):
    spd = general(3, 3, seed=9) @ general(3, 3, seed=9).T
    not_pd = np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    a = np.stack([spd, not_pd, -np.eye(3)]).astype(dtype)
    low, info = L.cholesky_ex(nb.tensor(a))
    assert low.dtype == np.dtype(dtype) and info.dtype == np.int32
    assert info.numpy().tolist() == [first_bad_minor(x) for x in a] == [0, 2, 1]
    check(low.numpy()[0], np.linalg.cholesky(spd), dtype)
    up, _ = L.cholesky_ex(nb.tensor(a), upper=True)
    check(up.numpy()[0], np.linalg.cholesky(spd).T, dtype)
    with pytest.raises(nb.LinAlgError, match="leading minor of order 2"):
        L.cholesky_ex(nb.tensor(a), check_errors=True)


def test_typed_errors():
    f64 = {"dtype": "float64"}
    factor, pivots = L.lu_factor(nb.eye(3, **f64))
    with pytest.raises(nb.ShapeError):
        L.lu_factor(nb.ones(3))
    with pytest.raises(nb.UnsupportedError):
        L.lu(nb.ones(2, 2), pivot=False)
    with pytest.raises(nb.NbflowError):  # no integer kernels (nor PyTorch's)
        L.lu_factor(nb.tensor([[1, 2], [3, 4]]))
    with pytest.raises(nb.DTypeError):
        L.lu_solve(factor, nb.astype(pivots, "int64"), nb.ones(3, 1, **f64))
    with pytest.raises(nb.DTypeError):
        L.lu_solve(factor, pivots, nb.ones(3, 1))  # float32 B for a float64 LU
    with pytest.raises(nb.ShapeError):
        L.lu_solve(factor, pivots, nb.ones(2, 1, **f64))
    with pytest.raises(nb.ShapeError):
        L.lu_solve(factor, pivots[:2], nb.ones(3, 1, **f64))
    with pytest.raises(nb.OutOfRangeError):  # never handed to LAPACK
        L.lu_solve(factor, pivots * 5, nb.ones(3, 1, **f64))
    with pytest.raises(nb.OutOfRangeError):
        nb.lu_unpack(factor, pivots - 1)
    with pytest.raises(nb.ShapeError):
        L.matrix_exp(nb.ones(2, 3))
    with pytest.raises(nb.ShapeError):
        L.solve_ex(nb.ones(3, 3), nb.ones(3), left=False)
    with pytest.raises(nb.DTypeError):
        L.solve_ex(nb.ones(3, 3), nb.ones(3, **f64))
    with pytest.raises(nb.ShapeError):
        L.inv_ex(nb.ones(2, 3))
    with pytest.raises(nb.ShapeError):
        L.householder_product(nb.ones(2, 3), nb.ones(2))  # m < n
    with pytest.raises(nb.ShapeError):
        L.householder_product(nb.ones(4, 3), nb.ones(4))  # k > n
    with pytest.raises(nb.ShapeError):
        L.householder_product(nb.ones(2, 4, 3), nb.ones(3, 2))  # batch dims differ
    with pytest.raises(nb.ShapeError):
        L.tensorinv(nb.ones(2, 3), 1)
    with pytest.raises(ValueError):
        L.tensorinv(nb.ones(2, 2), 0)
    with pytest.raises(nb.ShapeError):
        L.tensorsolve(nb.ones(2, 3, 4), nb.ones(2, 3))
    with pytest.raises(ValueError):
        L.vander(nb.ones(3), N=1)
    with pytest.raises(nb.DTypeError):
        L.vander(nb.tensor([True, False]))
    with pytest.raises(nb.LinAlgError, match=r"ldl_factor: D\[1,1\] is exactly zero"):
        L.ldl_factor(nb.zeros(2, 2, **f64))


# ---------------------------------------------------------------- tensor equations, vander, qr


def test_tensorinv_and_tensorsolve_match_numpy():
    a = general(6, 2, 3, seed=10) + np.eye(6).reshape(6, 2, 3) * 3
    check(L.tensorinv(nb.tensor(a), ind=1), np.linalg.tensorinv(a, ind=1), "float64")
    a4 = general(2, 3, 6, seed=11) + np.eye(6).reshape(2, 3, 6) * 3
    check(L.tensorinv(nb.tensor(a4)), np.linalg.tensorinv(a4), "float64")
    b = general(2, 3, seed=12)
    check(L.tensorsolve(nb.tensor(a4), nb.tensor(b)), np.linalg.tensorsolve(a4, b), "float64")
    moved = np.moveaxis(a4, -1, 0)  # dims= moves these dims back to the end first
    got = L.tensorsolve(nb.tensor(moved), nb.tensor(b), dims=(0,))
    expected = np.linalg.tensorsolve(moved, b, axes=(0,))
    check(got, expected, "float64")


@pytest.mark.parametrize("dtype", DTYPES + ["int64", "int32"])
def test_vander_is_increasing_powers(dtype):
    x = np.array([[1, 2, 3], [0, -1, 4]], dtype)
    got = L.vander(nb.tensor(x))
    assert got.shape == (2, 3, 3) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.numpy(), np.stack([np.vander(r, increasing=True) for r in x]))
    wide = L.vander(nb.tensor(x[0]), N=5)
    np.testing.assert_array_equal(wide.numpy(), np.vander(x[0], 5, increasing=True))
    with pytest.raises(ValueError):  # a 0-d x is one element, and N = 1 is refused
        L.vander(nb.tensor(np.array(2, dtype)))
    assert L.vander(nb.tensor(np.array(2, dtype)), N=2).shape == (1, 2)
    # (not torch.vander: that one's powers decrease)
    assert nb.vander(nb.tensor(x[0])).numpy()[0, 0] == 1 and got.numpy()[0, 0, -1] == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_matches_lapack_orgqr(dtype):
    a = general(2, 5, 3, dtype=dtype, seed=13)
    geqrf, orgqr = lapack.get_lapack_funcs(("geqrf", "orgqr"), (a[0],))
    refs = []
    reflectors = np.empty_like(a)
    taus = np.empty((2, 3), dtype)
    for i, x in enumerate(a):
        qr, tau = geqrf(x)[:2]
        reflectors[i], taus[i] = qr, tau
        refs.append(orgqr(qr, tau)[0])
    got = L.householder_product(nb.tensor(reflectors), nb.tensor(taus))
    check(got, np.stack(refs), dtype)
    check(got @ nb.triu(nb.tensor(reflectors))[..., :3, :], a, dtype)  # Q R = A
    fewer = nb.tensor(reflectors[0]).orgqr(nb.tensor(taus[0, :2]))  # k < n reflections
    check(fewer, orgqr(reflectors[0], taus[0, :2])[0], dtype)
    check(nb.orgqr(nb.tensor(reflectors), nb.tensor(taus)), np.stack(refs), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ldl_factor_and_solve_match_scipy(dtype):
    rng = np.random.default_rng(14)
    s = rng.standard_normal((2, 4, 4))
    a = (s + np.swapaxes(s, -1, -2)).astype(dtype)  # symmetric, indefinite
    ld, pivots, info = L.ldl_factor_ex(nb.tensor(a))
    assert ld.shape == a.shape and pivots.shape == (2, 4) and pivots.dtype == np.int32
    assert not info.numpy().any()
    for i, x in enumerate(a):
        ref_ld, ref_piv, _ = lapack.get_lapack_funcs("sytrf", (x,))(np.tril(x), lower=1)
        check(ld.numpy()[i], np.tril(ref_ld), dtype)
        np.testing.assert_array_equal(pivots.numpy()[i], ref_piv)
        lu_, d, perm = sl.ldl(x.astype("float64"))  # the same factors, unpacked by scipy
        np.testing.assert_allclose(lu_ @ d @ lu_.T, x, rtol=1e-4, atol=1e-4)
    b = rng.standard_normal((3, 1, 4, 2)).astype(dtype)
    x = L.ldl_solve(*L.ldl_factor(nb.tensor(a)), nb.tensor(b))
    check(x, np.linalg.solve(a.astype("float64"), b.astype("float64")), dtype)


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("shape", [(2, 3, 3), (4, 3), (3, 5)])
def test_lu_gradients(shape):
    a = general(*shape, seed=15, shift=2.0)
    nt.gradcheck(lambda t: L.lu_factor_ex(t).LU, [leaf(a)], atol=1e-6)
    nt.gradcheck(lambda t: tuple(L.lu(t))[1:], [leaf(a)], atol=1e-6)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_gradients_in_lu_and_b(left, adjoint):
    a = general(2, 3, 3, seed=16)
    b = general(2, 3, 2, seed=17) if left else general(2, 2, 3, seed=17)
    pivots = L.lu_factor(nb.tensor(a)).pivots

    def fn(factor, rhs):  # LU itself the leaf: its gradient is linalg_lu_solve_LU's
        return L.lu_solve(factor, pivots, rhs, left=left, adjoint=adjoint)

    nt.gradcheck(fn, [leaf(L.lu_factor(nb.tensor(a)).LU.numpy()), leaf(b)], atol=1e-6)

    def through_a(m, rhs):
        return L.lu_solve(*L.lu_factor(m), rhs, left=left, adjoint=adjoint)

    nt.gradcheck(through_a, [leaf(a), leaf(b)], atol=1e-6)


def test_matrix_exp_gradients():
    a = 0.5 * general(2, 3, 3, seed=18, shift=0.0)
    nt.gradcheck(L.matrix_exp, [leaf(a)], atol=1e-6)
    nt.gradgradcheck(L.matrix_exp, [leaf(a[0])], atol=1e-5)
    grads = []
    for dtype in DTYPES:  # float32's gradient follows float64's
        t = nb.tensor(a, dtype=dtype, requires_grad=True)
        grads.append(nb.grad(L.matrix_exp(t).sum(), [t])[0].numpy())
    assert grads[0].dtype == np.float32
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5)


def test_other_gradients():
    a, b = general(2, 3, 3, seed=19), general(2, 3, seed=20)
    nt.gradcheck(lambda m, r: L.solve_ex(m, r).result, [leaf(a), leaf(b)], atol=1e-6)
    nt.gradcheck(lambda m: L.inv_ex(m).inverse, [leaf(a)], atol=1e-6)
    spd = lambda m: m @ m.mT + nb.eye(3, dtype="float64")
    nt.gradcheck(lambda m: L.cholesky_ex(spd(m)).L, [leaf(a)], atol=1e-6)
    nt.gradcheck(L.householder_product, [leaf(general(2, 5, 3)), leaf(general(2, 2))], atol=1e-6)
    nt.gradcheck(lambda x: L.vander(x, N=4), [leaf(general(2, 3))], atol=1e-6)
    a4 = general(2, 3, 6, seed=21) + np.eye(6).reshape(2, 3, 6) * 3
    nt.gradcheck(L.tensorsolve, [leaf(a4), leaf(general(2, 3))], atol=1e-6)
    nt.gradcheck(lambda m: L.tensorinv(m, 1), [leaf(a4.reshape(6, 2, 3))], atol=1e-6)


# ---------------------------------------------------------------- eager vs jit


@pytest.mark.parametrize(
    "name",
    ["lu_factor", "lu", "lu_solve", "matrix_exp", "solve_ex", "inv_ex", "cholesky_ex", "orgqr"],
)
def test_eager_equals_jit(name):
    a, b = general(2, 3, 3, seed=22), general(2, 3, 2, seed=23)
    cases = {
        "lu_factor": (lambda m: L.lu_factor(m).LU, [a]),
        "lu": (lambda m: tuple(L.lu(m)), [general(4, 3, seed=24)]),
        "lu_solve": (lambda m, r: r.lu_solve(*m.lu()), [a, b]),
        "matrix_exp": (lambda m: m.matrix_exp(), [0.5 * a]),
        "solve_ex": (lambda m, r: L.solve_ex(m, r).result, [a, b]),
        "inv_ex": (lambda m: L.inv_ex(m).inverse, [a]),
        "cholesky_ex": (lambda m: L.cholesky_ex(m @ m.mT).L, [a]),
        "orgqr": (lambda m, t: m.orgqr(t), [general(4, 3, seed=25), general(2, seed=26)]),
    }
    fn, inputs = cases[name]
    counts = nt.check_modes(fn, *inputs, rtol=1e-10, atol=1e-12)
    assert counts["gradients"] == len(inputs)


def test_info_outputs_in_a_program():
    fn = nb.jit(lambda m, r: tuple(L.solve_ex(m, r)) + tuple(L.lu_factor_ex(m))[1:])
    x, info, pivots, lu_info = fn(nb.tensor(singular_batch()), nb.ones(2, 3, dtype="float64"))
    assert info.dtype == pivots.dtype == lu_info.dtype == np.int32
    assert info.numpy()[1] > 0 and lu_info.numpy().tolist() == [0, 3]
    assert pivots.shape == (2, 3)


# ---------------------------------------------------------------- torch, where installed


def test_against_torch():
    torch = pytest.importorskip("torch")
    a, b = general(2, 4, 4, seed=27), general(2, 4, 2, seed=28)
    ta = torch.tensor(a)
    factor, pivots = L.lu_factor(nb.tensor(a))
    t_factor, t_pivots = torch.linalg.lu_factor(ta)
    np.testing.assert_allclose(factor.numpy(), t_factor.numpy(), atol=1e-12)
    np.testing.assert_array_equal(pivots.numpy(), t_pivots.numpy())
    for left in (True, False):
        rhs = b if left else np.swapaxes(b, -1, -2)
        got = L.lu_solve(factor, pivots, nb.tensor(rhs), left=left, adjoint=True)
        expected = torch.linalg.lu_solve(
            t_factor, t_pivots, torch.tensor(rhs), left=left, adjoint=True
        )
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-10)
    np.testing.assert_allclose(
        L.matrix_exp(nb.tensor(a)).numpy(), torch.linalg.matrix_exp(ta).numpy(), rtol=1e-10
    )
    s = torch.tensor(singular_batch())
    assert L.solve_ex(
        nb.tensor(singular_batch()), nb.ones(2, 3, dtype="float64")
    ).info.numpy().tolist() == (
        torch.linalg.solve_ex(s, torch.ones(2, 3, dtype=torch.float64)).info.tolist()
    )
    assert (
        L.inv_ex(nb.tensor(singular_batch())).info.numpy().tolist()
        == torch.linalg.inv_ex(s).info.tolist()
    )
    x = torch.tensor(0.5 * a, requires_grad=True)
    torch.linalg.matrix_exp(x).sum().backward()
    t = leaf(0.5 * a)
    got = nb.grad(L.matrix_exp(t).sum(), [t])[0]
    np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-8)
    np.testing.assert_allclose(
        L.vander(nb.tensor(general(2, 3)), N=4).numpy(),
        torch.linalg.vander(torch.tensor(general(2, 3)), N=4).numpy(),
    )
    h = L.householder_product(nb.tensor(general(5, 3)), nb.tensor(general(2, seed=1)))
    th = torch.linalg.householder_product(
        torch.tensor(general(5, 3)), torch.tensor(general(2, seed=1))
    )
    np.testing.assert_allclose(h.numpy(), th.numpy(), atol=1e-12)
