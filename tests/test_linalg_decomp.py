"""nbflow.linalg: the decompositions against numpy.linalg and torch.linalg (shape and dtype
first, values second), float64 gradients against finite differences, and typed errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbflow as nb
from nbflow import testing as nt

L = nb.linalg
DTYPES = ["float32", "float64"]
TOL = {"float32": 2e-4, "float64": 1e-10}
RNG = np.random.default_rng(0)


def general(*shape, dtype="float64", seed=None):
    """Random matrices kept well-conditioned by a shifted diagonal."""
    rng = np.random.default_rng(seed) if seed is not None else RNG
    a = rng.standard_normal(shape) + 3 * np.eye(shape[-1])
    return a.astype(dtype)


def spd(*shape, dtype="float64", seed=None):
    rng = np.random.default_rng(seed) if seed is not None else RNG
    b = rng.standard_normal(shape)
    return (b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def check(out, expected, dtype):
    out = out.numpy() if isinstance(out, nb.Tensor) else out
    assert out.shape == np.shape(expected)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out, expected, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


def leaf(a):
    return nb.tensor(a, dtype="float64", requires_grad=True)


batches = st.sampled_from([(), (2,), (2, 1)])
sizes = st.integers(1, 4)


# ---------------------------------------------------------------- against numpy


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=5, deadline=None)
@given(batch=batches, n=sizes, seed=st.integers(0, 99))
def test_square_ops_match_numpy(dtype, batch, n, seed):
    a = general(*batch, n, n, dtype=dtype, seed=seed)
    s = spd(*batch, n, n, dtype=dtype, seed=seed)
    t, ts = nb.tensor(a), nb.tensor(s)
    check(L.inv(t), np.linalg.inv(a), dtype)
    check(L.det(t), np.linalg.det(a), dtype)
    sign, logabs = np.linalg.slogdet(a)
    check(L.slogdet(t).sign, sign, dtype)
    check(L.slogdet(t).logabsdet, logabs, dtype)
    check(L.cholesky(ts), np.linalg.cholesky(s), dtype)
    check(L.cholesky(ts, upper=True), np.swapaxes(np.linalg.cholesky(s), -1, -2), dtype)
    w, v = L.eigh(ts)
    check(w, np.linalg.eigh(s)[0], dtype)
    check(v @ nb.diag_embed(w) @ v.mT, s, dtype)  # eigenvectors up to sign
    check(L.eigvalsh(ts), np.linalg.eigvalsh(s), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=5, deadline=None)
@given(batch=batches, m=sizes, n=sizes, seed=st.integers(0, 99))
def test_qr_and_svd_match_numpy(dtype, batch, m, n, seed):
    a = np.random.default_rng(seed).standard_normal((*batch, m, n)).astype(dtype)
    t = nb.tensor(a)
    q, r = L.qr(t)
    nq, nr = np.linalg.qr(a)
    assert q.shape == nq.shape and r.shape == nr.shape and q.dtype == a.dtype
    check(q @ r, a, dtype)
    check(abs(r), np.abs(nr), dtype)  # R up to the signs of its rows
    check(nb.tril(r, -1), np.zeros_like(nr), dtype)
    cq, cr = L.qr(t, mode="complete")  # an orthonormal basis of all of R^m
    assert cq.shape == (*batch, m, m) and cr.shape == (*batch, m, n)
    check(cq @ cr, a, dtype)
    check(cq.mT @ cq, np.broadcast_to(np.eye(m), (*batch, m, m)), dtype)
    check(nb.tril(cr, -1), np.zeros_like(cr.numpy()), dtype)
    check(abs(cr), np.abs(np.linalg.qr(a, mode="complete")[1]), dtype)
    empty, rr = L.qr(t, mode="r")
    assert empty.shape == (0,) and np.array_equal(rr.numpy(), r.numpy())
    u, s, vh = L.svd(t, full_matrices=False)
    check(s, np.linalg.svd(a, compute_uv=False), dtype)
    check(u * s.unsqueeze(-2) @ vh, a, dtype)
    check(L.svdvals(t), np.linalg.svd(a, compute_uv=False), dtype)
    fu, _, fvh = L.svd(t)  # torch's default: full matrices
    assert fu.shape == (*batch, m, m) and fvh.shape == (*batch, n, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_broadcasts_and_takes_vectors(dtype):
    a = general(2, 3, 3, dtype=dtype)
    for b in (RNG.standard_normal(3), RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))):
        b = b.astype(dtype)
        out = L.solve(nb.tensor(a), nb.tensor(b))
        vector = b.ndim == 1 or b.shape == a.shape[:-1]
        expected = np.linalg.solve(a, b[..., None])[..., 0] if vector else np.linalg.solve(a, b)
        check(out, expected, dtype)
    b = RNG.standard_normal((4, 1, 3, 2)).astype(dtype)  # batch dims broadcast
    check(L.solve(nb.tensor(a), nb.tensor(b)), np.linalg.solve(a, b), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_composites_match_numpy(dtype):
    a = RNG.standard_normal((2, 4, 3)).astype(dtype)
    sq = general(3, 3, dtype=dtype)
    t, tsq = nb.tensor(a), nb.tensor(sq)
    check(L.pinv(t), np.linalg.pinv(a), dtype)
    for ord in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        check(L.matrix_norm(t, ord), np.linalg.norm(a, ord, axis=(-2, -1)), dtype)
    check(L.vector_norm(t, 3, dim=-1), np.linalg.norm(a, 3, axis=-1), dtype)
    check(L.norm(t), np.linalg.norm(a.ravel()), dtype)
    check(L.norm(tsq, 1), np.linalg.norm(sq, 1), dtype)
    check(L.cond(tsq), np.linalg.cond(sq), dtype)
    assert L.matrix_rank(nb.tensor(np.ones((3, 3), dtype))).item() == 1
    check(L.multi_dot([t[0], tsq, tsq]), a[0] @ sq @ sq, dtype)
    b = RNG.standard_normal((2, 4, 2)).astype(dtype)
    check(L.lstsq(t, nb.tensor(b)).solution, np.linalg.pinv(a) @ b, dtype)
    check(L.matrix_power(tsq, -2), np.linalg.matrix_power(sq, -2), dtype)
    check(L.vecdot(t, t), (a * a).sum(-1), dtype)


# ---------------------------------------------------------------- against torch


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a, s = general(2, 3, 3), spd(2, 3, 3)
    ta, ts = torch.tensor(a), torch.tensor(s)
    pairs = [
        (L.inv(nb.tensor(a)), torch.linalg.inv(ta)),
        (L.det(nb.tensor(a)), torch.linalg.det(ta)),
        (L.cholesky(nb.tensor(s), upper=True), torch.linalg.cholesky(ts, upper=True)),
        (L.eigh(nb.tensor(s), "U").eigenvalues, torch.linalg.eigh(ts, "U").eigenvalues),
        (L.svdvals(nb.tensor(a)), torch.linalg.svdvals(ta)),
        (L.pinv(nb.tensor(a)), torch.linalg.pinv(ta)),
        (L.cond(nb.tensor(a)), torch.linalg.cond(ta)),
        (L.matrix_norm(nb.tensor(a), "nuc"), torch.linalg.matrix_norm(ta, "nuc")),
        (L.solve(nb.tensor(a), nb.tensor(s[:, 0])), torch.linalg.solve(ta, ts[:, 0])),
    ]
    for upper in (True, False):
        for left in (True, False):
            got = L.solve_triangular(nb.tensor(a), nb.tensor(s), upper=upper, left=left)
            want = torch.linalg.solve_triangular(ta, ts, upper=upper, left=left)
            pairs.append((got, want))
    for ours, theirs in pairs:
        check(ours, theirs.numpy(), "float64")


def test_gradients_match_torch():
    torch = pytest.importorskip("torch")
    s = spd(3, 3)
    x, tx = leaf(s), torch.tensor(s, requires_grad=True)
    (nb.linalg.eigh(x).eigenvectors.abs().sum() + nb.linalg.cholesky(x).sum()).backward()
    (torch.linalg.eigh(tx).eigenvectors.abs().sum() + torch.linalg.cholesky(tx).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- gradients


def _sym(a):
    return a + a.mT


def _spd_of(a):
    return a @ a.mT + nb.eye(a.shape[-1], dtype=a.dtype) * 3


def _shift(a):
    return a + nb.eye(a.shape[-1], dtype=a.dtype) * 3


GRADS = {
    "inv": (lambda a: L.inv(_shift(a)), [(2, 3, 3)]),
    "solve_matrix": (lambda a, b: L.solve(_shift(a), b), [(2, 3, 3), (3, 2)]),
    "solve_vector": (lambda a, b: L.solve(_shift(a), b), [(2, 3, 3), (2, 3)]),
    "det": (lambda a: L.det(_shift(a)), [(2, 3, 3)]),
    "slogdet": (lambda a: L.slogdet(_shift(a)).logabsdet, [(2, 3, 3)]),
    "cholesky": (lambda a: L.cholesky(_spd_of(a)), [(2, 3, 3)]),
    "cholesky_upper": (lambda a: L.cholesky(_spd_of(a), upper=True), [(3, 3)]),
    "eigh": (lambda a: tuple(L.eigh(_sym(a))), [(2, 3, 3)]),
    "eigvalsh": (lambda a: L.eigvalsh(_sym(a)), [(3, 3)]),
    "qr_tall": (lambda a: tuple(L.qr(a)), [(2, 4, 3)]),
    "qr_square": (lambda a: tuple(L.qr(a)), [(3, 3)]),
    "qr_complete": (lambda a: tuple(L.qr(a, mode="complete")), [(2, 4, 2)]),
    # svd: the gauge-invariant U diag(S) Vh, S, and sums of |U| and |Vh| (PyTorch's tests)
    "svd_tall": (lambda a: _svd_invariants(a), [(2, 4, 3)]),
    "svd_wide": (lambda a: _svd_invariants(a), [(3, 5)]),
    "svd_full": (lambda a: L.svd(a).S, [(4, 3)]),
    "pinv": (lambda a: L.pinv(a), [(4, 3)]),
    "matrix_norm_nuc": (lambda a: L.matrix_norm(a, "nuc"), [(2, 3, 4)]),
    "cond": (lambda a: L.cond(a), [(3, 3)]),
    "solve_triangular": (
        lambda a, b: L.solve_triangular(_shift(a), b, upper=True),
        [(3, 3), (3, 2)],
    ),
    "lstsq": (lambda a, b: L.lstsq(a, b).solution, [(4, 3), (4, 2)]),
}


def _svd_invariants(a):
    u, s, vh = L.svd(a, full_matrices=False)
    return (u * s.unsqueeze(-2)) @ vh, s, abs(u).sum(), abs(vh).sum()


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_against_finite_differences(name):
    fn, shapes = GRADS[name]
    rng = np.random.default_rng(1)
    nt.gradcheck(fn, [leaf(rng.standard_normal(s)) for s in shapes], rtol=1e-5, atol=1e-6)


def test_second_order_gradient_of_inv():
    a = leaf(general(3, 3))
    (g,) = nb.grad(L.inv(a).sum(), [a], create_graph=True)
    nt.gradcheck(lambda x: nb.grad(L.inv(x).sum(), [x], create_graph=True)[0], [a])
    assert g.shape == (3, 3)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0), (2, 0, 3), (2, 3, 0)])
def test_empty_matrices_decompose_as_numpy(shape):
    # LAPACK refuses empty matrices: their factors are empty (full bases the identity)
    a = np.ones(shape)
    pairs = [(L.qr(nb.tensor(a)), np.linalg.qr(a))]
    for full in (False, True):
        pairs.append((L.svd(nb.tensor(a), full_matrices=full), np.linalg.svd(a, full)))
    if shape[-1] == shape[-2]:
        pairs += [(L.inv(nb.tensor(a)), np.linalg.inv(a)), (L.det(nb.tensor(a)), np.linalg.det(a))]
    for got, want in pairs:
        got = got if isinstance(got, tuple) else (got,)
        want = tuple(want) if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g.numpy(), w)
    t = leaf(a)
    q, r = L.qr(t)
    (q.sum() + r.sum()).backward()
    assert t.grad.shape == shape


# ---------------------------------------------------------------- errors


def test_singular_and_non_positive_definite_raise_linalg_error():
    singular = nb.tensor(np.array([[1.0, 2.0], [2.0, 4.0]]))
    for fn, name in ((L.inv, "inv"), (lambda a: L.solve(a, nb.ones(2, dtype="float64")), "solve")):
        with pytest.raises(nb.LinAlgError, match=name):
            fn(singular)
    with pytest.raises(nb.LinAlgError, match="cholesky") as info:
        L.cholesky(nb.tensor(-np.eye(3)))
    assert isinstance(info.value, ValueError) and isinstance(info.value, nb.NbflowError)
    check(L.det(singular), 0.0, "float64")  # no error: det of a singular matrix is 0


@pytest.mark.parametrize("fn", [L.inv, L.det, L.cholesky, L.eigh, L.slogdet])
def test_non_square_raises_shape_error_naming_the_op(fn):
    with pytest.raises(nb.ShapeError, match="square"):
        fn(nb.ones(2, 3))


def test_integer_input_and_gpu_slot_are_typed_errors():
    with pytest.raises(nb.NbflowError, match="inv"):
        L.inv(nb.tensor(np.eye(2, dtype=np.int64)))
    launch = nb.REGISTRY["cholesky"].kernels["cuda"]
    with pytest.raises(nb.UnsupportedError, match="cholesky: no CUDA kernel"):
        launch()


def test_graph_mode_runs_the_same_ops():
    a = general(2, 3, 3)
    program = nb.Program()
    with nb.program_guard(program):
        x = nb.static.data("x", (-1, 3, 3), "float64")
        out = L.inv(x)
        w = L.eigh(_sym(x)).eigenvalues
    got, got_w = nb.Executor().run(program, feed={"x": a}, fetch_list=[out, w])
    check(got, np.linalg.inv(a), "float64")
    check(got_w, np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), "float64")
