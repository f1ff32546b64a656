"""PyTorch's top-level functions of nbflow/ops/joins.py, search.py, queries.py ... (hstack ...
get_default_dtype), each
against an independent reference: numpy's and scipy's functions (np.hstack, np.cov,
np.searchsorted, np.trapezoid, scipy's cdist and block_diag, ...) or a formula written here;
float64 finite differences for the differentiable ones, and eager against nbflow.jit."""

import itertools
import math

import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.spatial.distance
import scipy.special

import nbflow as nb
from nbflow.testing import check_modes, gradcheck

RNG = np.random.default_rng(0)


def leaf(*shape, low=-2.0, high=2.0):
    """A float64 tensor requiring grad."""
    return nb.tensor(RNG.uniform(low, high, shape), dtype="float64", requires_grad=True)


def same(got, want, rtol=1e-6, atol=1e-9):
    got = got.numpy() if isinstance(got, nb.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol, atol)


# ---------------------------------------------------------------- joins and shapes


def test_stacks_match_numpy():
    a, b, c = np.float32(1.5), np.arange(3.0, dtype=np.float32), np.ones((2, 3), np.float32)
    one, v, m = nb.tensor(a), nb.tensor(b), nb.tensor(c)
    same(nb.hstack([v, v, one]), np.hstack([b, b, a]))
    same(nb.hstack((m, m)), np.hstack([c, c]))
    same(nb.vstack([v, m, one * nb.ones(3)]), np.vstack([b, c, np.full(3, a)]))
    same(nb.row_stack([v, m]), np.vstack([b, c]))
    same(nb.dstack([v, v]), np.dstack([b, b]))
    same(nb.dstack([m, nb.ones(2, 3, 2)]), np.dstack([c, np.ones((2, 3, 2))]))
    same(nb.column_stack([v, m.T, one * nb.ones(3)]), np.column_stack([b, c.T, np.full(3, a)]))
    assert nb.hstack([v, v]).dtype == np.float32


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast_nd_match_numpy(n):
    ours = getattr(nb, f"atleast_{n}d")
    theirs = getattr(np, f"atleast_{n}d")
    arrays = [np.float64(2.0), np.arange(3.0), np.ones((2, 3)), np.ones((2, 1, 3, 1))]
    for a in arrays:
        same(ours(nb.tensor(a)), theirs(a))
    got = ours(*[nb.tensor(a) for a in arrays])  # several: a tuple, as PyTorch
    assert isinstance(got, tuple) and len(got) == 4
    for g, w in zip(got, theirs(*arrays)):
        same(g, w)
    assert isinstance(ours([nb.tensor(arrays[0])]), tuple)


def test_broadcast_tensors_matches_numpy():
    arrays = [RNG.standard_normal(s) for s in [(3, 1), (4,), (2, 1, 1), ()]]
    got = nb.broadcast_tensors(*[nb.tensor(a) for a in arrays])
    for g, w in zip(got, np.broadcast_arrays(*arrays)):
        same(g, w)
    with pytest.raises(nb.ShapeError):
        nb.broadcast_tensors(nb.ones(2), nb.ones(3))


def test_ravel_t_numel_swapdims_empty_like():
    a = RNG.standard_normal((2, 3, 4))
    x = nb.tensor(a)
    same(nb.ravel(x), a.ravel())
    same(nb.ravel(x.transpose(0, 2)), a.transpose(2, 1, 0).ravel())
    same(nb.t(x[0]), a[0].T)
    same(nb.t(x[0, 0]), a[0, 0])
    same(nb.t(x[0, 0, 0]), a[0, 0, 0])
    with pytest.raises(nb.ShapeError):
        nb.t(x)
    assert nb.numel(x) == 24 and isinstance(nb.numel(x), int) and nb.numel(x[0, 0, 0]) == 1
    same(nb.swapdims(x, 0, 2), np.swapaxes(a, 0, 2))
    same(nb.swapdims(x, dim0=-1, dim1=1), np.swapaxes(a, -1, 1))
    e = nb.empty_like(x)
    assert e.shape == (2, 3, 4) and e.dtype == np.float64
    f = nb.empty_like(x, dtype="int32", requires_grad=False)
    assert f.dtype == np.int32 and f.shape == x.shape


def test_diagflat_block_diag_cartesian_prod():
    a = RNG.standard_normal((2, 2))
    for k in (0, 2, -1):
        same(nb.diagflat(nb.tensor(a), k), np.diagflat(a, k))
    same(nb.diagflat(nb.tensor(3.0), 0), np.diagflat(3.0))
    blocks = [RNG.standard_normal((2, 3)), np.array(4.0), np.arange(3.0), np.ones((1, 1))]
    same(nb.block_diag(*[nb.tensor(b) for b in blocks]), scipy.linalg.block_diag(*blocks))
    mixed = nb.block_diag(nb.tensor([[1, 2]]), nb.tensor([[0.5]]))
    assert mixed.dtype == np.float32
    same(mixed, [[1, 2, 0], [0, 0, 0.5]])
    assert nb.block_diag().shape == (1, 0)
    xs = [np.arange(2), np.array([5, 7, 9]), np.array([-1])]
    want = np.array(list(itertools.product(*xs)))
    got = nb.cartesian_prod(*[nb.tensor(x) for x in xs])
    assert got.dtype == np.int64
    same(got, want)
    same(nb.cartesian_prod(nb.tensor(xs[1])), xs[1])


@pytest.mark.parametrize(
    "row, col, offset", [(4, 4, 0), (4, 3, -1), (3, 5, 1), (3, 3, 5), (0, 2, 0)]
)
def test_triangle_indices_match_numpy(row, col, offset):
    lower = nb.tril_indices(row, col, offset)
    upper = nb.triu_indices(row, col, offset=offset)
    assert lower.dtype == upper.dtype == np.int64
    np.testing.assert_array_equal(lower.numpy(), np.stack(np.tril_indices(row, offset, col)))
    np.testing.assert_array_equal(upper.numpy(), np.stack(np.triu_indices(row, offset, col)))
    assert lower.shape[0] == 2
    assert nb.tril_indices(row, col, offset, dtype="int32").dtype == np.int32


def test_join_and_shape_gradients():
    a, b, c = leaf(3), leaf(2, 3), leaf(2, 2)
    gradcheck(lambda a, b: nb.hstack([b, b * 2]), [a, b])
    gradcheck(lambda a, b: nb.vstack([a, b]), [a, b])
    gradcheck(lambda a, b: nb.dstack([b, a * b]), [a, b])
    gradcheck(lambda a, b: nb.column_stack([a, b.T]), [a, b])
    gradcheck(lambda a, b, c: nb.block_diag(a, b, c), [a, b, c])
    gradcheck(lambda a, b: nb.cartesian_prod(a, b[0]), [a, b])
    gradcheck(lambda a, b: nb.broadcast_tensors(a, b), [a, b])
    gradcheck(lambda c: nb.diagflat(c, 1), [c])


# ---------------------------------------------------------------- numbers


def test_erfc_rsub_logspace():
    a = np.linspace(-3, 3, 13)
    same(nb.erfc(nb.tensor(a)), scipy.special.erfc(a), rtol=0, atol=1e-15)
    same(nb.erfc(nb.tensor([0, 1])), scipy.special.erfc([0.0, 1.0]), rtol=0, atol=1e-6)
    tail = np.array([2.0, 3.9, 5.0, 9.0], np.float32)  # 1 - erf(x) would lose all digits
    same(nb.erfc(nb.tensor(tail)), scipy.special.erfc(tail.astype(np.float64)), rtol=2e-6, atol=0)
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    same(nb.rsub(nb.tensor(x), nb.tensor(y)), y - x)
    same(nb.rsub(nb.tensor(x), 2.0, alpha=3), 2.0 - 3 * x)
    same(nb.logspace(0, 3, 4), np.logspace(0, 3, 4), rtol=1e-6)
    same(nb.logspace(-1.5, 2, 6, base=2.0, dtype="float64"), np.logspace(-1.5, 2, 6, base=2.0))
    assert nb.logspace(0, 1, 3).dtype == np.float32 and nb.logspace(0, 1, 0).shape == (0,)
    with pytest.raises(nb.NbflowError):
        nb.logspace(0, 1, -1)
    gradcheck(nb.erfc, [leaf(5)])
    gradcheck(lambda a, b: nb.rsub(a, b, alpha=0.5), [leaf(2, 3), leaf(3)])


def test_gcd_and_lcm_match_numpy():
    a = RNG.integers(-500, 500, 200)
    b = RNG.integers(-500, 500, 200)
    a[:3], b[:3] = [0, 0, 7], [0, 9, 0]
    for dtype in ("int64", "int32"):
        x, y = nb.tensor(a, dtype=dtype), nb.tensor(b, dtype=dtype)
        g, m = nb.gcd(x, y), nb.lcm(x, y)
        assert g.dtype == m.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g.numpy(), np.gcd(a, b))
        np.testing.assert_array_equal(m.numpy(), np.lcm(a, b))
    fib = np.array([2**62, 7540113804746346429, 4660046610375530309])  # Fibonacci: worst case
    other = np.array([3 * 2**40, 4660046610375530309, 2880067194370816120])
    np.testing.assert_array_equal(
        nb.gcd(nb.tensor(fib), nb.tensor(other)).numpy(), np.gcd(fib, other)
    )
    np.testing.assert_array_equal(
        nb.gcd(nb.tensor([[12], [9]]), nb.tensor([8, 6, 27])).numpy(),
        np.gcd([[12], [9]], [8, 6, 27]),
    )
    with pytest.raises(nb.DTypeError):
        nb.gcd(nb.tensor([1.0]), nb.tensor([2.0]))


def test_gcd_and_lcm_run_in_graph_mode():
    fib = np.array([7540113804746346429, 12, 0], np.int64)
    other = np.array([4660046610375530309, 18, 5], np.int64)  # 90 Euclid steps for the first
    check_modes(nb.gcd, fib, other)
    check_modes(nb.lcm, np.array([4, 6], np.int32), np.array([6, -9], np.int32))


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("dim", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_mean_and_std_mean_match_numpy(dim, keepdim):
    a = RNG.standard_normal((3, 4, 5))
    x = nb.tensor(a)
    for correction in (1, 0, 2):
        v, m = nb.var_mean(x, dim, correction=correction, keepdim=keepdim)
        same(v, np.var(a, axis=dim, ddof=correction, keepdims=keepdim))
        same(m, np.mean(a, axis=dim, keepdims=keepdim))
        s, m = nb.std_mean(x, dim=dim, correction=correction, keepdim=keepdim)
        same(s, np.std(a, axis=dim, ddof=correction, keepdims=keepdim))
        same(m, np.mean(a, axis=dim, keepdims=keepdim))
    s, _ = nb.std_mean(x, dim, False, keepdim)  # PyTorch's (input, dim, unbiased, keepdim)
    same(s, np.std(a, axis=dim, ddof=0, keepdims=keepdim))


def test_var_mean_spellings_and_gradients():
    a = RNG.standard_normal((3, 4))
    x = nb.tensor(a)
    same(nb.var_mean(x, True)[0], np.var(a, ddof=1))  # the (input, unbiased) overload
    same(nb.std_mean(x, False)[0], np.std(a))
    same(nb.var_mean(x, axis=0, keepdims=True)[0], np.var(a, axis=0, ddof=1, keepdims=True))
    with pytest.raises(nb.AttrError):
        nb.var_mean(x, 0, True, correction=0)
    gradcheck(lambda t: nb.std_mean(t, dim=1), [leaf(3, 4)])
    gradcheck(lambda t: nb.var_mean(t, (0, 1), correction=0), [leaf(3, 4)])


@pytest.mark.parametrize("shape", [(3, 7), (7,), (1, 5)])
def test_cov_and_corrcoef_match_numpy(shape):
    a = RNG.standard_normal(shape)
    x = nb.tensor(a)
    for correction in (1, 0, 3):
        same(nb.cov(x, correction=correction), np.cov(a, ddof=correction))
    fw = RNG.integers(0, 4, shape[-1])
    fw[0] = 2
    aw = RNG.uniform(0.1, 2.0, shape[-1])
    fwt, awt = nb.tensor(fw), nb.tensor(aw)
    same(nb.cov(x, fweights=fwt), np.cov(a, fweights=fw))
    same(nb.cov(x, aweights=awt), np.cov(a, aweights=aw))
    same(
        nb.cov(x, correction=0, fweights=fwt, aweights=awt),
        np.cov(a, ddof=0, fweights=fw, aweights=aw),
    )
    same(nb.cov(x, fweights=fwt, aweights=awt), np.cov(a, fweights=fw, aweights=aw))
    same(nb.corrcoef(x), np.corrcoef(a))


def test_cov_integer_input_errors_and_gradients():
    a = RNG.integers(-5, 5, (2, 6))
    got = nb.cov(nb.tensor(a))
    assert got.dtype == np.float32
    same(got, np.cov(a), rtol=1e-5)
    with pytest.raises(nb.ShapeError):
        nb.cov(nb.ones(2, 2, 2))
    with pytest.raises(nb.DTypeError):
        nb.cov(nb.ones(2, 3), fweights=nb.ones(3))
    with pytest.raises(nb.ShapeError):
        nb.cov(nb.ones(2, 3), aweights=nb.ones(4))
    with pytest.raises(nb.DomainError):
        nb.cov(nb.ones(2, 3), fweights=nb.tensor([1, -1, 2]))
    with pytest.warns(RuntimeWarning, match="degrees of freedom"):
        assert np.all(np.isnan(nb.cov(nb.ones(2, 1)).numpy()))
    aw = nb.tensor(RNG.uniform(0.5, 2.0, 6))
    gradcheck(lambda t: nb.cov(t), [leaf(3, 6)])
    gradcheck(lambda t, w: nb.cov(t, aweights=w), [leaf(2, 6), aw.requires_grad_(True)])
    gradcheck(nb.corrcoef, [leaf(3, 6)])


def test_trapezoid_matches_numpy_and_scipy():
    y = RNG.standard_normal((3, 6))
    xs = np.sort(RNG.uniform(0, 5, 6))
    xx = np.sort(RNG.uniform(0, 5, (3, 6)), axis=1)
    ty = nb.tensor(y)
    same(nb.trapezoid(ty), np.trapezoid(y))
    same(nb.trapezoid(ty, dx=0.3), np.trapezoid(y, dx=0.3))
    same(nb.trapezoid(ty, nb.tensor(xs)), np.trapezoid(y, xs))
    same(nb.trapezoid(ty, nb.tensor(xx)), np.trapezoid(y, xx))
    same(nb.trapezoid(ty, nb.tensor(xs[:3]), dim=0), np.trapezoid(y, xs[:3], axis=0))
    same(nb.trapezoid(ty, axis=0), np.trapezoid(y, axis=0))
    same(nb.trapezoid(nb.tensor([1, 2, 4])), np.trapezoid([1.0, 2, 4]))  # ints: a float
    same(nb.trapezoid(nb.ones(2, 1)), [0.0, 0.0])
    same(nb.trapezoid(nb.ones(2, 0)), [0.0, 0.0])
    ct = scipy.integrate.cumulative_trapezoid
    same(nb.cumulative_trapezoid(ty), ct(y))
    same(nb.cumulative_trapezoid(ty, dx=2.0, dim=0), ct(y, dx=2.0, axis=0))
    same(nb.cumulative_trapezoid(ty, nb.tensor(xs)), ct(y, xs))
    same(nb.cumulative_trapezoid(ty, nb.tensor(xx)), ct(y, xx))
    with pytest.raises(nb.ShapeError):
        nb.trapezoid(ty, nb.tensor(xs[:4]))
    with pytest.raises(nb.AttrError):
        nb.trapezoid(ty, nb.tensor(xs), dx=1.0)
    gradcheck(lambda y, x: nb.trapezoid(y, x), [leaf(3, 6), leaf(6)])
    gradcheck(lambda y, x: nb.cumulative_trapezoid(y, x, dim=0), [leaf(3, 2), leaf(3, 2)])


# ---------------------------------------------------------------- distances


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, math.inf])
def test_cdist_matches_scipy(p):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    b[1, 0] = a[2, 0]  # one equal coordinate (p=0 counts the differing ones)
    metric = {
        1.0: ("cityblock", {}),
        0.0: ("hamming", {}),
        math.inf: ("chebyshev", {}),
    }.get(p, ("minkowski", {"p": p}))
    want = scipy.spatial.distance.cdist(a, b, metric[0], **metric[1])
    want = want * 3 if p == 0 else want  # scipy's hamming is the fraction of coordinates
    same(nb.cdist(nb.tensor(a), nb.tensor(b), p=p), want, rtol=1e-10)
    if p == 2:
        for mode in ("use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
            same(nb.cdist(nb.tensor(a), nb.tensor(b), compute_mode=mode), want, rtol=1e-10)


def test_cdist_batched_large_and_gradients():
    a, b = RNG.standard_normal((2, 30, 4)), RNG.standard_normal((1, 27, 4))  # the matmul form
    got = nb.cdist(nb.tensor(a), nb.tensor(b))
    assert got.shape == (2, 30, 27)
    for i in range(2):
        same(got[i], scipy.spatial.distance.cdist(a[i], b[0]), rtol=1e-9)
    with pytest.raises(nb.DTypeError):
        nb.cdist(nb.ones(2, 3, dtype="int64"), nb.ones(2, 3, dtype="int64"))
    with pytest.raises(nb.ShapeError):
        nb.cdist(nb.ones(2, 3), nb.ones(2, 4))
    with pytest.raises(nb.DomainError):
        nb.cdist(nb.ones(2, 3), nb.ones(2, 3), p=-1)
    for p, mode in [(2.0, "use_mm_for_euclid_dist"), (2.0, "donot_use_mm_for_euclid_dist")]:
        gradcheck(lambda x, y, p=p, mode=mode: nb.cdist(x, y, p, mode), [leaf(3, 4), leaf(2, 4)])
    for p in (1.0, 3.0, 0.5):
        gradcheck(lambda x, y, p=p: nb.cdist(x, y, p), [leaf(3, 4), leaf(2, 4)])
    for p in (2.0, 1.5, 0.5):  # a zero distance: PyTorch's zero gradient, not NaN
        x = nb.tensor(a[0, :2], requires_grad=True)
        nb.cdist(x, x, p=p).sum().backward()
        assert np.all(np.isfinite(x.grad.numpy()))


# ---------------------------------------------------------------- sorted sequences, counts


def test_searchsorted_and_bucketize_match_numpy():
    seq = np.sort(RNG.integers(0, 10, 12)).astype(np.float64)  # repeated values
    values = np.concatenate([seq[:4], RNG.uniform(-1, 11, 8)]).reshape(3, 4)
    s, v = nb.tensor(seq), nb.tensor(values)
    for side in ("left", "right"):
        want = np.searchsorted(seq, values, side=side)
        got = nb.searchsorted(s, v, right=side == "right")
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(nb.searchsorted(s, v, side=side).numpy(), want)
    assert nb.searchsorted(s, v, out_int32=True).dtype == np.int32
    assert int(nb.searchsorted(s, 4.5)) == np.searchsorted(seq, 4.5)
    # numpy's digitize(right=True): bins[i-1] < x <= bins[i], bucketize's default
    bounds = np.unique(seq)
    for right in (False, True):
        got = nb.bucketize(v, nb.tensor(bounds), right=right)
        np.testing.assert_array_equal(got.numpy(), np.digitize(values, bounds, right=not right))
    with pytest.raises(nb.AttrError):
        nb.searchsorted(s, v, right=True, side="left")
    with pytest.raises(nb.AttrError):
        nb.searchsorted(s, v, side="middle")


def test_searchsorted_batched_sorter_and_nan():
    seqs = np.sort(RNG.standard_normal((2, 3, 5)), axis=-1)
    values = RNG.standard_normal((2, 3, 4))
    got = nb.searchsorted(nb.tensor(seqs), nb.tensor(values), side="right").numpy()
    for i, j in itertools.product(range(2), range(3)):
        np.testing.assert_array_equal(got[i, j], np.searchsorted(seqs[i, j], values[i, j], "right"))
    with pytest.raises(nb.ShapeError):
        nb.searchsorted(nb.tensor(seqs), nb.ones(3, 3, 4))
    raw = RNG.standard_normal(6)
    order = np.argsort(raw)
    got = nb.searchsorted(nb.tensor(raw), nb.tensor([-0.5, 0.0, 2.0]), sorter=nb.tensor(order))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(raw, [-0.5, 0.0, 2.0], sorter=order))
    seq = np.array([1.0, 2.0, 2.0, np.nan])  # numpy sorts NaN last and finds it there
    vals = np.array([np.nan, 2.0, 5.0, -np.inf])
    for side in ("left", "right"):
        got = nb.searchsorted(nb.tensor(seq), nb.tensor(vals), side=side)
        np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, vals, side=side))


def test_isin_matches_numpy():
    a = RNG.integers(0, 8, (3, 4))
    b = np.array([1, 3, 3, 7])
    np.testing.assert_array_equal(nb.isin(nb.tensor(a), nb.tensor(b)).numpy(), np.isin(a, b))
    inv = nb.isin(nb.tensor(a), nb.tensor(b.reshape(2, 2)), invert=True)
    np.testing.assert_array_equal(inv.numpy(), np.isin(a, b, invert=True))
    np.testing.assert_array_equal(nb.isin(nb.tensor(a), 3).numpy(), np.isin(a, 3))
    assert bool(nb.isin(3, nb.tensor(b))) and not bool(nb.isin(4, nb.tensor(b)))
    f = np.array([0.5, np.nan, 2.0])
    got = nb.isin(nb.tensor(f), nb.tensor([np.nan, 2.0]))
    np.testing.assert_array_equal(got.numpy(), np.isin(f, [np.nan, 2.0]))  # NaN in nothing
    with pytest.raises(nb.AttrError, match="isin: invert must be a bool"):
        nb.isin(nb.tensor(a), nb.tensor(b), invert=nb.tensor([True, False]))


def test_bincount_matches_numpy():
    a = RNG.integers(0, 6, 20)
    w = RNG.standard_normal(20)
    got = nb.bincount(nb.tensor(a))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), np.bincount(a))
    np.testing.assert_array_equal(
        nb.bincount(nb.tensor(a), minlength=9).numpy(), np.bincount(a, minlength=9)
    )
    same(nb.bincount(nb.tensor(a), nb.tensor(w)), np.bincount(a, w))
    assert nb.bincount(nb.tensor(a), nb.tensor(w, dtype="float32")).dtype == np.float32
    assert nb.bincount(nb.tensor(a), nb.tensor(a)).dtype == np.float64  # as PyTorch
    assert nb.bincount(nb.tensor(np.zeros(0, np.int64))).shape == (0,)
    with pytest.raises(nb.DomainError):
        nb.bincount(nb.tensor([1, -1]))
    with pytest.raises(nb.DTypeError):
        nb.bincount(nb.tensor([1.0]))
    with pytest.raises(nb.UnsupportedError):
        nb.jit(nb.bincount)(nb.tensor([1, 2]))
    gradcheck(
        lambda w: nb.bincount(nb.tensor(a), w, minlength=8), [nb.tensor(w, requires_grad=True)]
    )


# ---------------------------------------------------------------- tensors and dtypes


def test_is_tensor_as_tensor_and_the_default_dtype():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    assert nb.is_tensor(x) and not nb.is_tensor(np.ones(2)) and not nb.is_tensor(1.0)
    assert nb.as_tensor(x) is x and nb.as_tensor(x, dtype="float32") is x
    y = nb.as_tensor(x, dtype="float64")
    assert y.dtype == np.float64 and y.requires_grad  # converted, still on the tape
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    assert nb.as_tensor([1.5, 2]).dtype == np.float32
    assert nb.as_tensor([1, 2]).dtype == np.int64
    assert nb.as_tensor(np.arange(3.0)).dtype == np.float64
    assert nb.as_tensor(np.arange(3, dtype=np.int8)).dtype == np.int8
    assert nb.as_tensor(np.arange(3, dtype=np.uint16)).dtype == np.int32  # (widened)
    np.testing.assert_array_equal(nb.as_tensor([[1, 2]], dtype="float64").numpy(), [[1.0, 2.0]])
    with pytest.raises(nb.DTypeError):
        nb.as_tensor(["a"])
    with pytest.raises(nb.ShapeError):
        nb.as_tensor([[1], [2, 3]])
    assert nb.get_default_dtype() == np.float32 == nb.tensor(1.5).dtype
    # numpy scalars keep their dtype, as in PyTorch; Python scalars take the defaults
    scalars = (np.float64(1.5), np.float16(1.5), np.int32(3), np.complex128(1j), np.bool_(True))
    assert [nb.tensor(v).dtype for v in scalars] == [v.dtype for v in scalars]
    assert (nb.tensor(3).dtype, nb.tensor(1j).dtype) == (np.int64, np.complex64)
    assert nb.jit(lambda t: t * nb.is_tensor(t))(nb.ones(2)).numpy().tolist() == [1.0, 1.0]


# ---------------------------------------------------------------- typed errors, both modes


def test_bad_arguments_raise_typed_errors():
    with pytest.raises(nb.ArgumentError):
        nb.hstack(nb.ones(2))  # a tensor, not a sequence of them
    with pytest.raises(nb.ArgumentError):
        nb.vstack([nb.ones(2), 3.0])
    with pytest.raises(nb.ShapeError):
        nb.block_diag(nb.ones(2, 2, 2))
    with pytest.raises(nb.ShapeError):
        nb.cartesian_prod(nb.ones(2, 2))
    with pytest.raises(nb.DomainError):
        nb.tril_indices(-1, 2)
    with pytest.raises(nb.AttrError):
        nb.triu_indices(2, 2, 0.5)
    with pytest.raises(nb.DTypeError):
        nb.tril_indices(2, 2, dtype="float32")
    with pytest.raises(nb.ShapeError):
        nb.bucketize(nb.ones(3), nb.ones(2, 2))
    with pytest.raises(nb.ArgumentError):
        nb.isin(1, 2)


def test_eager_and_jit_agree():
    r = RNG.standard_normal
    check_modes(lambda a, b: nb.cdist(a, b), r((4, 3)), r((30, 3)))
    check_modes(lambda a, b: nb.cdist(a, b, p=1.5), r((2, 4, 3)), r((2, 5, 3)))
    check_modes(lambda a: nb.cov(a), r((3, 6)))
    check_modes(nb.corrcoef, r((3, 6)))
    check_modes(lambda y, x: nb.trapezoid(y, x), r((3, 6)), np.sort(r(6)))
    check_modes(lambda y: nb.cumulative_trapezoid(y, dx=0.5, dim=0), r((4, 2)))
    check_modes(lambda a, b: nb.hstack([a, b]) * nb.vstack([a, a]).sum(), r((2, 3)), r((2, 1)))
    check_modes(lambda a: nb.std_mean(a, dim=0), r((4, 3)))
    check_modes(lambda a, b: nb.block_diag(a, b), r((2, 2)), r(3))
    check_modes(lambda a: a[nb.tril_indices(3, 3)[0], nb.tril_indices(3, 3)[1]], r((3, 3)))
    seq = np.sort(r(7))
    check_modes(lambda s, v: nb.searchsorted(s, v, right=True), seq, r((2, 3)))
    check_modes(lambda v, b: nb.bucketize(v, b), r(5), seq)
    check_modes(nb.isin, np.arange(6) % 4, np.array([1, 3]))
    check_modes(lambda a: nb.erfc(a) + nb.rsub(a, 1.0) + nb.logspace(0, 1, 3), r(3))


# ---------------------------------------------------------------- windows, histograms


def _symmetric(formula, n, periodic):
    """The window written from its definition: m = n + 1 points (periodic) or n, first n."""
    if n <= 1:
        return np.ones(n)
    m = n + 1 if periodic else n
    k = np.arange(m)
    return formula(k, m)[:n]


WINDOWS = {
    "hann_window": lambda k, m: 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1)),
    "hamming_window": lambda k, m: 0.54 - 0.46 * np.cos(2 * np.pi * k / (m - 1)),
    "blackman_window": lambda k, m: (
        0.42 - 0.5 * np.cos(2 * np.pi * k / (m - 1)) + 0.08 * np.cos(4 * np.pi * k / (m - 1))
    ),
    "bartlett_window": lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1),
    "kaiser_window": lambda k, m: (
        scipy.special.i0(12.0 * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None)))
        / scipy.special.i0(12.0)
    ),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_match_their_formulas(name):
    fn = getattr(nb, name)
    for n in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            got = fn(n, periodic, dtype="float64")
            same(got, _symmetric(WINDOWS[name], n, periodic), rtol=1e-12, atol=1e-15)
    assert fn(4).dtype == np.float32 and fn(4).shape == (4,)
    with pytest.raises(nb.DTypeError):
        fn(4, dtype="int64")
    with pytest.raises(nb.DomainError):
        fn(-1)


def test_windows_against_numpy_and_parameters():
    same(nb.hann_window(7, periodic=False, dtype="float64"), np.hanning(7), atol=1e-15)
    same(nb.hamming_window(7, False, dtype="float64"), np.hamming(7), atol=1e-15)
    same(nb.blackman_window(7, False, dtype="float64"), np.blackman(7), atol=1e-15)
    same(nb.bartlett_window(7, False, dtype="float64"), np.bartlett(7), atol=1e-15)
    same(nb.kaiser_window(7, False, 3.0, dtype="float64"), np.kaiser(7, 3.0), atol=1e-14)
    got = nb.hamming_window(6, True, 0.6, 0.3, dtype="float64")
    same(got, 0.6 - 0.3 * np.cos(2 * np.pi * np.arange(6) / 6))


def test_histc_matches_numpy():
    a = RNG.standard_normal(50)
    got = nb.histc(nb.tensor(a), bins=7)
    want, _ = np.histogram(a, bins=7, range=(a.min(), a.max()))
    assert got.dtype == np.float64
    same(got, want)
    same(nb.histc(nb.tensor(a), 4, min=-1, max=1), np.histogram(a, 4, range=(-1, 1))[0])
    same(nb.histc(nb.tensor([1.0, 2, 1, 4]), bins=4), [2, 1, 0, 1])  # max lands in the last
    same(nb.histc(nb.tensor([3.0, 3.0]), bins=2), [0, 2])  # one value: [2, 4]
    same(nb.histc(nb.tensor([0.5, np.nan, 3.0]), 2, 0, 1), [0, 1])  # outside and NaN ignored
    with pytest.raises(nb.DomainError):
        nb.histc(nb.tensor([1.0]), 3, min=2, max=1)
    with pytest.raises(nb.DomainError):
        nb.histc(nb.tensor([1.0, np.nan]), 3)
    with pytest.raises(nb.DTypeError):
        nb.histc(nb.tensor([1, 2]))
    check_modes(lambda x: nb.histc(x, 5) + nb.histc(x, 3, -1, 1).sum(), a.astype(np.float32))


def test_histogram_matches_numpy():
    a = RNG.standard_normal(40)
    w = RNG.uniform(0, 2, 40)
    x = nb.tensor(a)
    for kw in ({}, {"range": (-1.0, 2.0)}, {"density": True}):
        hist, edges = nb.histogram(x, 6, **kw)
        want, want_edges = np.histogram(a, 6, **kw)
        same(hist, want, rtol=1e-12)
        same(edges, want_edges, rtol=1e-12)
    hist, _ = nb.histogram(x, 5, weight=nb.tensor(w), density=True)
    same(hist, np.histogram(a, 5, weights=w, density=True)[0], rtol=1e-12)
    bounds = np.array([-1.0, -0.2, 0.0, 1.5])
    hist, edges = nb.histogram(x, nb.tensor(bounds))
    same(hist, np.histogram(a, bounds)[0])
    same(edges, bounds)
    same(nb.histogram(nb.tensor([1.0, 1, 1]), 2).bin_edges, [0.5, 1, 1.5])
    with pytest.raises(nb.DomainError):
        nb.histogram(x, nb.tensor([1.0, 0.0], dtype="float64"))
    with pytest.raises(nb.AttrError):
        nb.histogram(x, nb.tensor(bounds), range=(0.0, 1.0))
    with pytest.raises(nb.ShapeError):
        nb.histogram(x, 3, weight=nb.ones(3, dtype="float64"))
    check_modes(lambda t: nb.histogram(t, 4)[0] * nb.histogram(t, 4)[1][1:], a[:10])


# ---------------------------------------------------------------- elementwise


def test_bitwise_ops_match_numpy():
    a, b = RNG.integers(-100, 100, 30), RNG.integers(-100, 100, 30)
    p, q = RNG.integers(0, 2, 30).astype(bool), RNG.integers(0, 2, 30).astype(bool)
    for name in ("and", "or", "xor"):
        ours, theirs = getattr(nb, f"bitwise_{name}"), getattr(np, f"bitwise_{name}")
        for dtype in ("int32", "int64"):
            got = ours(nb.tensor(a, dtype=dtype), nb.tensor(b, dtype=dtype))
            assert got.dtype == np.dtype(dtype)
            np.testing.assert_array_equal(got.numpy(), theirs(a, b))
        got = ours(nb.tensor(p), nb.tensor(q))
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), theirs(p, q))
    np.testing.assert_array_equal(nb.bitwise_not(nb.tensor(a)).numpy(), ~a)
    np.testing.assert_array_equal(nb.bitwise_not(nb.tensor(p)).numpy(), ~p)
    assert nb.bitwise_xor(nb.tensor([True]), nb.tensor([3])).numpy().tolist() == [2]
    with pytest.raises(nb.DTypeError):
        nb.bitwise_and(nb.tensor([1.0]), nb.tensor([1.0]))
    check_modes(lambda x, y: nb.bitwise_or(nb.bitwise_and(x, y), nb.bitwise_not(x)), a, b)


def test_shifts_wrap_and_saturate_as_pytorch():
    x = np.array([1, -8, 5, -5, 3, 7], np.int64)
    s = np.array([3, 1, 0, 70, 64, -1], np.int64)
    # a shift past the width or negative: 0 to the left, the sign bits to the right
    left = nb.bitwise_left_shift(nb.tensor(x), nb.tensor(s)).numpy()
    np.testing.assert_array_equal(left, [8, -16, 5, 0, 0, 0])
    right = nb.bitwise_right_shift(nb.tensor(x), nb.tensor(s)).numpy()
    np.testing.assert_array_equal(right, [0, -4, 5, -1, 0, 0])
    x32 = nb.tensor([1, -5, 3], dtype="int32")
    s32 = nb.tensor([31, 40, 33], dtype="int32")
    np.testing.assert_array_equal(nb.bitwise_left_shift(x32, s32).numpy(), [-(2**31), 0, 0])
    np.testing.assert_array_equal(nb.bitwise_right_shift(x32, s32).numpy(), [0, -1, 0])
    assert nb.bitwise_right_shift(nb.tensor([-8]), 1).numpy().tolist() == [-4]
    check_modes(nb.bitwise_left_shift, x, np.abs(s) % 8)


def test_frexp_ldexp_nextafter_match_numpy():
    a = np.concatenate([RNG.standard_normal(10) * 1e3, [0.0, -0.0, np.inf, -np.inf, 1e-310]])
    mantissa, exponent = nb.frexp(nb.tensor(a))
    want_m, want_e = np.frexp(a)
    assert exponent.dtype == np.int32 and mantissa.dtype == np.float64
    np.testing.assert_array_equal(mantissa.numpy(), want_m)
    np.testing.assert_array_equal(exponent.numpy(), want_e)
    f = a[:10].astype(np.float32)
    np.testing.assert_array_equal(nb.frexp(nb.tensor(f)).mantissa.numpy(), np.frexp(f)[0])
    e = RNG.integers(-5, 5, 10)
    same(nb.ldexp(nb.tensor(a[:10]), nb.tensor(e)), np.ldexp(a[:10], e), rtol=0)
    got = nb.ldexp(nb.tensor([1, 3]), nb.tensor([3, -1]))
    assert got.dtype == np.float32
    same(got, [8.0, 1.5])
    y = RNG.standard_normal(10)
    for dtype in (np.float32, np.float64):
        got = nb.nextafter(nb.tensor(f.astype(dtype)), nb.tensor(y.astype(dtype)))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), np.nextafter(f.astype(dtype), y.astype(dtype)))
    gradcheck(lambda t: nb.ldexp(t, nb.tensor([2, -1, 0])), [leaf(3)])
    check_modes(lambda t, s: nb.frexp(t.detach()).mantissa * nb.ldexp(t, s), a[:10], e)


def test_fmax_fmin_ignore_nan():
    a = np.array([1.0, np.nan, np.nan, -2.0, 3.0])
    b = np.array([np.nan, 2.0, np.nan, -1.0, 3.0])
    same(nb.fmax(nb.tensor(a), nb.tensor(b)), np.fmax(a, b))
    same(nb.fmin(nb.tensor(a), nb.tensor(b)), np.fmin(a, b))
    np.testing.assert_array_equal(
        nb.fmax(nb.tensor([1, 5]), nb.tensor([3, 2])).numpy(), np.fmax([1, 5], [3, 2])
    )
    x = nb.tensor(a, requires_grad=True)
    y = nb.tensor(b, requires_grad=True)
    nb.fmax(x, y).sum().backward()  # the gradient goes to the number
    same(x.grad, [1, 0, 1, 0, 1])  # ties and two NaNs: input, as PyTorch
    same(y.grad, [0, 1, 0, 1, 0])
    gradcheck(nb.fmin, [leaf(4), leaf(4)])
    check_modes(nb.fmax, a, b)


def test_i0_matches_scipy():
    a = np.concatenate([np.linspace(-30, 30, 61), [0.0, 7.99, 8.0, 8.01, 700.0]])
    same(nb.i0(nb.tensor(a)), scipy.special.i0(a), rtol=1e-13)
    same(nb.i0(nb.tensor(a[:61].astype(np.float32))), scipy.special.i0(a[:61]), rtol=2e-6)
    got = nb.i0(nb.tensor([1, 2]))
    assert got.dtype == np.float32
    same(got, scipy.special.i0([1.0, 2.0]), rtol=1e-6)
    assert np.isinf(nb.i0(nb.tensor([800.0], dtype="float32")).numpy()[0])
    x = nb.tensor(np.array([-9.0, -2.5, 0.0, 1.0, 8.5, 20.0]), requires_grad=True)
    nb.i0(x).sum().backward()  # i0' = i1
    same(x.grad, scipy.special.i1(x.numpy()), rtol=1e-10, atol=1e-12)
    gradcheck(nb.i0, [leaf(5, low=-12, high=12)])
    check_modes(nb.i0, a[:20])


def test_inf_tests_floor_divide_and_dtype_queries():
    a = np.array([np.inf, -np.inf, 1.0, np.nan])
    np.testing.assert_array_equal(nb.isposinf(nb.tensor(a)).numpy(), np.isposinf(a))
    np.testing.assert_array_equal(nb.isneginf(nb.tensor(a)).numpy(), np.isneginf(a))
    assert nb.isreal(nb.tensor([1, 2])).numpy().tolist() == [True, True]
    np.testing.assert_array_equal(
        nb.floor_divide(nb.tensor([-7, 7, -7.5]), 2).numpy(), np.floor_divide([-7, 7, -7.5], 2)
    )
    x, i, b = nb.ones(2), nb.ones(2, dtype="int32"), nb.ones(2, dtype="bool")
    assert nb.is_floating_point(x) and not nb.is_floating_point(i) and not nb.is_complex(x)
    assert nb.is_signed(i) and not nb.is_signed(b)
    assert nb.is_same_size(x, i) and not nb.is_same_size(x, nb.ones(3))
    assert nb.is_nonzero(nb.tensor([2.0])) and not nb.is_nonzero(nb.tensor(0))
    with pytest.raises(nb.ShapeError):
        nb.is_nonzero(x)
    assert not nb.can_cast(nb.float32, nb.int32) and nb.can_cast(nb.float64, nb.float16)
    assert nb.can_cast(nb.bool, nb.int64) and not nb.can_cast(nb.int32, nb.bool)
    assert nb.promote_types(nb.int32, nb.float16) == np.float16
    assert nb.promote_types("int64", "int32") == np.int64
    assert nb.result_type(i, 2.0) == np.float32 and nb.result_type(i, 2) == np.int32
    assert nb.result_type(2, 3.0) == np.float32
    assert nb.result_type(i, nb.ones(1, dtype="float64")) == (i + nb.ones(1, dtype="float64")).dtype
    assert nb.finfo().eps == np.finfo(np.float32).eps and nb.iinfo(nb.int32).max == 2**31 - 1
    with pytest.raises(nb.DTypeError):
        nb.finfo(nb.int64)
    assert nb.pi == math.pi and nb.e == math.e and math.isinf(nb.inf) and nb.newaxis is None
    assert nb.get_device(x) == -1


# ---------------------------------------------------------------- shapes, joins, indices


def test_combinations_and_unravel_index():
    v = np.array([3.0, 1.0, 4.0, 1.5])
    for r in (1, 2, 3):
        for repl in (False, True):
            pick = itertools.combinations_with_replacement if repl else itertools.combinations
            want = np.array(list(pick(v, r))).reshape(-1, r)
            same(nb.combinations(nb.tensor(v), r, with_replacement=repl), want)
    assert nb.combinations(nb.tensor(v), 5).shape == (0, 5)
    assert nb.combinations(nb.tensor(v), 0).shape == (0,)
    gradcheck(lambda t: nb.combinations(t, 2), [leaf(4)])
    idx = np.array([[0, 5], [17, 23]])
    got = nb.unravel_index(nb.tensor(idx), (2, 3, 4))
    for g, w in zip(got, np.unravel_index(idx, (2, 3, 4))):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g.numpy(), w)
    # out of range: modulo the size, as PyTorch (-1 is the last element)
    got = nb.unravel_index(nb.tensor([-1, 6, -7]), (2, 3))
    np.testing.assert_array_equal(np.stack([g.numpy() for g in got]), [[1, 0, 1], [2, 0, 2]])
    with pytest.raises(nb.DTypeError):
        nb.unravel_index(nb.tensor([1.0]), (2, 2))
    check_modes(lambda i: nb.unravel_index(i, (3, 4))[1], np.arange(12))


def test_scatter_variants_match_numpy():
    a = RNG.standard_normal((3, 4, 5))
    x = nb.tensor(a)
    want = a.copy()
    want[:, 2] = 7.0
    same(nb.select_scatter(x, nb.full((3, 5), 7.0, dtype="float64"), 1, -2), want)
    same(nb.select(x, 1, -2), a[:, -2])
    src = RNG.standard_normal((3, 2, 5))
    want = a.copy()
    want[:, 0:4:2] = src
    same(nb.slice_scatter(x, nb.tensor(src), dim=1, start=0, end=4, step=2), want)
    want = a.copy()
    want[-2:] = 1.0
    same(nb.slice_scatter(x, nb.ones(2, 4, 5, dtype="float64"), start=-2), want)
    d = RNG.standard_normal((3, 4))
    want = a.copy()
    for k in range(4):
        want[:, k, k + 1] = d[:, k]
    same(nb.diagonal_scatter(x, nb.tensor(d), 1, dim1=1, dim2=2), want)
    same(nb.diagonal(nb.diagonal_scatter(x, nb.tensor(d), 1, 1, 2), 1, 1, 2), d)
    want = a.copy()
    for k in range(2):  # offset -1 of dims (0, 2): rows 1 and 2, columns 0 and 1
        want[k + 1, :, k] = 2.0
    got = nb.diagonal_scatter(x, nb.full((4, 2), 2.0, dtype="float64"), -1, 0, 2)
    same(got, want)
    with pytest.raises(nb.ShapeError):
        nb.select_scatter(x, nb.ones(3, 4, dtype="float64"), 1, 0)
    with pytest.raises(nb.OutOfRangeError):
        nb.select(x, 0, 3)
    with pytest.raises(nb.DTypeError):
        nb.slice_scatter(x, nb.ones(3, 4, 5), 0)
    gradcheck(lambda t, s: nb.select_scatter(t, s, 0, 1), [leaf(3, 2), leaf(2)])
    gradcheck(lambda t, s: nb.slice_scatter(t, s, 1, 1, None, 2), [leaf(2, 5), leaf(2, 2)])
    gradcheck(lambda t, s: nb.diagonal_scatter(t, s, -1), [leaf(3, 4), leaf(2)])
    check_modes(lambda t, s: nb.diagonal_scatter(t, s, 0, 1, 0), a[:, :, 0], a[0, :3, 0])


def test_masked_fill_masked_scatter_put_index_reduce():
    a = RNG.standard_normal((3, 4))
    m = RNG.integers(0, 2, (3, 4)).astype(bool)
    x, mask = nb.tensor(a), nb.tensor(m)
    same(nb.masked_fill(x, mask, 2.5), np.where(m, 2.5, a))
    same(nb.masked_fill(x, mask[0], nb.tensor(-1.0)), np.where(m[0], -1.0, a))
    src = RNG.standard_normal(12)
    want = a.copy()
    want[m] = src[: m.sum()]
    same(nb.masked_scatter(x, mask, nb.tensor(src)), want)
    want = a.copy()
    want[:, m[1]] = src[: 3 * m[1].sum()].reshape(3, -1)
    same(nb.masked_scatter(x, mask[1], nb.tensor(src)), want)  # the mask broadcasts
    with pytest.raises(nb.ShapeError):
        nb.masked_scatter(x, mask, nb.tensor(src[:1] if m.sum() > 1 else src[:0]))
    with pytest.raises(nb.DTypeError):
        nb.masked_fill(x, nb.tensor(m.astype(np.int64)), 1.0)
    idx = np.array([0, -1, 5, 5])
    vals = np.array([1.0, 2.0, 3.0, 4.0])
    want = a.copy().reshape(-1)
    want[idx] = vals
    same(nb.put(x, nb.tensor(idx), nb.tensor(vals)), want.reshape(3, 4))
    want = a.copy().reshape(-1)
    np.add.at(want, idx, vals)
    same(nb.put(x, nb.tensor(idx), nb.tensor(vals), accumulate=True), want.reshape(3, 4))
    index = np.array([0, 2, 0])
    source = RNG.uniform(0.5, 2, (3, 3))
    for reduce, fold in (("prod", np.multiply), ("amax", np.maximum), ("amin", np.minimum)):
        for include_self in (True, False):
            want = a[:, :3].T.copy()
            if not include_self:
                want[np.unique(index)] = {"prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
            fold.at(want, index, source)
            got = nb.index_reduce(
                nb.tensor(a[:, :3].T.copy()),
                0,
                nb.tensor(index),
                nb.tensor(source),
                reduce,
                include_self=include_self,
            )
            same(got, want)
    got = nb.index_reduce(
        nb.ones(3, 2, dtype="float64"),
        0,
        nb.tensor([0, 0]),
        nb.tensor([[2.0, 3], [4, 5]], "float64"),
        "mean",
        include_self=False,
    )
    same(got, [[3, 4], [1, 1], [1, 1]])
    with pytest.raises(nb.AttrError):
        nb.index_reduce(x, 0, nb.tensor([0]), x[:1], "sum")
    gradcheck(lambda t, s: nb.masked_scatter(t, mask, s), [leaf(3, 4), leaf(12)])
    gradcheck(lambda t, v: nb.put(t, nb.tensor(idx), v, accumulate=True), [leaf(3, 4), leaf(4)])
    gradcheck(lambda t, v: nb.masked_fill(t, mask, v), [leaf(3, 4), leaf()])
    check_modes(lambda t, s: nb.masked_scatter(t, nb.tensor(m), s), a, src)
    check_modes(lambda t, v: nb.put(t, nb.tensor(idx), v), a, vals)


def test_aliases_and_small_functions():
    a = RNG.standard_normal((3, 4))
    x = nb.tensor(a)
    same(nb.concatenate([x, x], axis=1), np.concatenate([a, a], axis=1))
    same(nb.concatenate([x, x], dim=0), np.concatenate([a, a]))
    same(nb.moveaxis(nb.ones(2, 3, 4), 0, -1), np.ones((3, 4, 2)))
    same(nb.msort(x), np.sort(a, axis=0))
    same(nb.adjoint(x), a.T)
    same(nb.trapz(x, dx=2.0), np.trapezoid(a, dx=2.0))
    same(nb.ger(x[0], x[1]), np.outer(a[0], a[1]))
    d = nb.detach(nb.tensor(a, requires_grad=True))
    assert not d.requires_grad
    found = nb.argwhere(nb.tensor([[0, 1], [1, 1]]))
    assert found.dtype == np.int64
    same(found, np.argwhere([[0, 1], [1, 1]]))
    assert nb.argwhere(nb.tensor(3)).shape == (1, 0)
    with pytest.raises(nb.UnsupportedError):
        nb.jit(nb.argwhere)(nb.ones(2))
    with pytest.warns(UserWarning, match="deprecated"):
        got = nb.range(0, 1, 0.3)
    assert got.dtype == np.float32
    same(got, [0, 0.3, 0.6, 0.9], rtol=1e-6)
    with pytest.warns(UserWarning):
        same(nb.range(1, 4, dtype="int64"), [1, 2, 3, 4])
        with pytest.raises(nb.DomainError):
            nb.range(4, 1)
    s = nb.scalar_tensor(3)
    assert s.shape == () and s.dtype == np.float32 and float(s) == 3.0
    assert nb.scalar_tensor(2, dtype="int64").dtype == np.int64
    t = nb.tensor([1.0, 2.0], requires_grad=True)
    assert nb.asarray(t) is t and nb.asarray(t, requires_grad=False).requires_grad is False
    arr = np.arange(3.0)
    copied = nb.asarray(arr)
    arr[0] = 5.0
    assert copied.numpy()[0] == 0.0 and copied.dtype == np.float64  # a copy (see from_numpy)
    with pytest.raises(nb.AttrError):
        nb.asarray(arr, copy=False)
    c = nb.asarray(t, copy=True)
    assert c is not t and c.numpy().tolist() == [1.0, 2.0]
    assert nb.asarray([1, 2]).dtype == np.int64
    with pytest.raises(nb.AttrError):
        nb.asarray(t, dtype="float64", copy=False)
    assert nb.asarray([1.0], requires_grad=True).requires_grad


# ---------------------------------------------------------------- products, norms, statistics


def test_tensordot_chain_matmul_dist_renorm_vander():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 4, 5))
    c = b.transpose(1, 0, 2)[:, :2]  # (4, 2, 5): its dim 1 matches a's dim 0
    for other, dims in ((b, 2), (b, 0), (b, ([1, 2], [0, 1])), (c, ([0], [1])), (b, (1, 0))):
        want = np.tensordot(a, other, dims)
        same(nb.tensordot(nb.tensor(a), nb.tensor(other), dims), want, rtol=1e-10)
    with pytest.raises(nb.ShapeError):
        nb.tensordot(nb.tensor(a), nb.tensor(b), ([0], [0, 1]))
    gradcheck(lambda p, q: nb.tensordot(p, q, 1), [leaf(2, 3), leaf(3, 2)])
    ms = [RNG.standard_normal(s) for s in [(2, 3), (3, 4), (4, 2)]]
    with pytest.warns(UserWarning):
        same(nb.chain_matmul(*[nb.tensor(m) for m in ms]), ms[0] @ ms[1] @ ms[2])
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    for p in (2, 1, 3.5, 0, math.inf):
        d = x - y
        want = {0: np.count_nonzero(d), math.inf: np.abs(d).max()}.get(p)
        want = (np.abs(d) ** p).sum() ** (1 / p) if want is None else want
        same(nb.dist(nb.tensor(x), nb.tensor(y), p), want, rtol=1e-10)
    gradcheck(lambda p, q: nb.dist(p, q, 3), [leaf(3, 4), leaf(4)])
    for dim in (0, 1):
        got = nb.renorm(nb.tensor(x), 2, dim, 1.0)
        norms = np.linalg.norm(x, axis=1 - dim, keepdims=True)
        same(got, x * np.where(norms > 1, 1 / (norms + 1e-7), 1))
    gradcheck(lambda t: nb.renorm(t, 1.5, 0, 0.8), [leaf(3, 4)])
    v = np.array([2, 3, -1])
    got = nb.vander(nb.tensor(v, dtype="int32"))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), np.vander(v))
    same(nb.vander(nb.tensor(v * 0.5), N=4, increasing=True), np.vander(v * 0.5, 4, True))
    assert nb.vander(nb.tensor(v), 0).shape == (3, 0)
    gradcheck(
        lambda t: nb.vander(t, 4), [nb.tensor([0.0, 1.5, -2.0], "float64", requires_grad=True)]
    )
    check_modes(lambda p, q: nb.tensordot(p, q, ([0], [1])) + nb.dist(p, q.T), x, x.T)
    check_modes(lambda t: nb.renorm(t, 2, 1, 0.5) * nb.vander(t[0], 3)[0].sum(), x)


def test_nanmedian_and_mode_match_numpy():
    a = RNG.standard_normal((4, 7))
    a[0, 1], a[2, :] = np.nan, np.nan
    x = nb.tensor(a)
    got = nb.nanmedian(x, 1)
    for i in range(4):
        row = a[i][~np.isnan(a[i])]
        want = np.sort(row)[(len(row) - 1) // 2] if len(row) else np.nan
        np.testing.assert_equal(got.values.numpy()[i], want)
        if len(row):
            assert a[i, got.indices.numpy()[i]] == want
    same(nb.nanmedian(nb.tensor([1.0, np.nan, 3, 2])), 2.0)
    assert nb.nanmedian(x, 0, keepdim=True).values.shape == (1, 7)
    same(nb.nanmedian(nb.tensor([3, 1, 2])), 2)
    gradcheck(lambda t: nb.nanmedian(t, 1).values, [leaf(3, 5)])
    v = np.array([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]])
    values, indices = nb.mode(nb.tensor(v), 1)
    np.testing.assert_array_equal(values.numpy(), [1, 4])  # the smallest of equally frequent
    np.testing.assert_array_equal(indices.numpy(), [3, 4])  # and its last index
    values, indices = nb.mode(nb.tensor(v), 0, keepdim=True)
    assert values.shape == (1, 5)
    np.testing.assert_array_equal(values.numpy()[0], np.minimum(v[0], v[1]))
    y = nb.tensor([2.0, 1.0, 2.0, 3.0], requires_grad=True)
    nb.mode(y).values.backward()
    same(y.grad, [0, 0, 1, 0])  # to the one element the index names
    check_modes(lambda t: nb.mode(t, 0).values + nb.nanmedian(t, 0).values, np.round(a[:2]))


# ---------------------------------------------------------------- linear algebra


def test_linalg_delegates():
    a = RNG.standard_normal((4, 3))
    u, s, v = nb.svd(nb.tensor(a))
    assert u.shape == (4, 3) and v.shape == (3, 3)
    same(nb.matmul(u * s, v.T), a, rtol=1e-10, atol=1e-12)
    same(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    u, s, v = nb.svd(nb.tensor(a), some=False)
    assert u.shape == (4, 4) and v.shape == (3, 3)
    u, s, v = nb.svd(nb.tensor(a), compute_uv=False)
    assert u.shape == (4, 4) and not np.any(u.numpy()) and not np.any(v.numpy())
    q, r = nb.qr(nb.tensor(a))
    assert q.shape == (4, 3)
    same(nb.matmul(q, r), a, rtol=1e-10, atol=1e-12)
    assert nb.qr(nb.tensor(a), some=False)[0].shape == (4, 4)
    same(nb.pinverse(nb.tensor(a)), np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    spd = a.T @ a + np.eye(3)
    lower = np.linalg.cholesky(spd)
    same(nb.cholesky(nb.tensor(spd)), lower, rtol=1e-12)
    b = RNG.standard_normal((3, 2))
    for L, upper in ((lower, False), (lower.T, True)):
        same(nb.cholesky_solve(nb.tensor(b), nb.tensor(L), upper), np.linalg.solve(spd, b))
        same(nb.cholesky_inverse(nb.tensor(L), upper), np.linalg.inv(spd), rtol=1e-10)
    for upper, transpose in itertools.product((True, False), repeat=2):
        tri = np.triu(spd) if upper else np.tril(spd)
        got = nb.triangular_solve(nb.tensor(b), nb.tensor(spd), upper, transpose)
        same(got.solution, np.linalg.solve(tri.T if transpose else tri, b), rtol=1e-10)
        same(got.cloned_coefficient, spd)
    gradcheck(
        lambda m, f: nb.cholesky_solve(m, f), [leaf(3, 2), nb.tensor(lower, requires_grad=True)]
    )
    check_modes(lambda m: nb.svd(m).S + nb.pinverse(m).sum(), a)


# ---------------------------------------------------------------- nn ops at the top level


def test_nn_aliases_are_functional():
    import nbflow.nn.functional as F

    for name in (
        "selu",
        "celu",
        "prelu",
        "threshold",
        "hardshrink",
        "pixel_shuffle",
        "pixel_unshuffle",
        "channel_shuffle",
        "pairwise_distance",
        "cosine_similarity",
        "rms_norm",
        "bilinear",
        "conv_transpose1d",
        "conv_transpose2d",
        "max_pool1d",
        "avg_pool1d",
        "adaptive_avg_pool1d",
        "rrelu",
        "pdist",
    ):
        assert getattr(nb, name) is getattr(F, name), name
    x = RNG.standard_normal((2, 3, 6))
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    same(nb.selu(nb.tensor(x)), scale * np.where(x > 0, x, alpha * np.expm1(x)))
    values, indices = nb.adaptive_max_pool1d(nb.tensor(x), 2)
    np.testing.assert_array_equal(values.numpy(), x.reshape(2, 3, 2, 3).max(-1))
    np.testing.assert_array_equal(indices.numpy(), x.reshape(2, 3, 2, 3).argmax(-1) + [0, 3])


def test_losses_at_the_top_level_take_reduction_codes():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    t = np.sign(RNG.standard_normal(3))
    x, y = nb.tensor(a), nb.tensor(b)
    p = scipy.special.softmax(b, axis=1)
    pointwise = p * (np.log(p) - a)
    same(nb.kl_div(x, nb.tensor(p)), pointwise)  # no reduction by default, as torch.kl_div
    same(nb.kl_div(x, nb.tensor(p), 1), pointwise.mean())
    same(nb.kl_div(x, nb.tensor(p), 2), pointwise.sum())
    same(nb.kl_div(x, nb.tensor(np.log(p)), "sum", log_target=True), pointwise.sum())
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    want = np.where(t > 0, 1 - cos, np.maximum(0, cos - 0.1))
    same(nb.cosine_embedding_loss(x, y, nb.tensor(t), 0.1), want, rtol=1e-6)
    sign = np.sign(RNG.standard_normal((3, 4)))
    same(
        nb.margin_ranking_loss(x, y, nb.tensor(sign), 0.2, 2),
        np.maximum(0, -sign * (a - b) + 0.2).sum(),
    )
    same(
        nb.hinge_embedding_loss(x, nb.tensor(sign), 1.0, 1),
        np.where(sign > 0, a, np.maximum(0, 1 - a)).mean(),
    )
    c = RNG.standard_normal((3, 4))
    dp = np.linalg.norm(a - b + 1e-6, axis=1)
    dn = np.linalg.norm(a - c + 1e-6, axis=1)
    same(nb.triplet_margin_loss(x, y, nb.tensor(c)), np.maximum(dp - dn + 1.0, 0), rtol=1e-6)
    rate = RNG.uniform(0.5, 2, (3, 4))
    same(
        nb.poisson_nll_loss(x, nb.tensor(rate), True, False, 1e-8, 1), (np.exp(a) - rate * a).mean()
    )
    with pytest.raises(nb.AttrError):
        nb.kl_div(x, y, 3)
    z = RNG.standard_normal((2, 3, 5))
    got = nb.instance_norm(nb.tensor(z), None, None, None, None, True, 0.1, 1e-5, False)
    want = (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
    same(got, want, rtol=1e-6)
    same(nb.alpha_dropout(x, 0.5, False), a)
    same(nb.feature_alpha_dropout(nb.tensor(z), 0.5, False), z)
    check_modes(lambda p, q: nb.kl_div(p, q, 1) + nb.hinge_embedding_loss(p, q, 1.0, 2), a, p)


def test_pytorch_agrees_on_the_new_names():
    torch = pytest.importorskip("torch")
    T = torch.tensor
    a = RNG.standard_normal((4, 5)).astype(np.float32)
    for name in sorted(WINDOWS):
        for periodic in (True, False):
            same(
                getattr(nb, name)(7, periodic),
                getattr(torch, name)(7, periodic),
                rtol=1e-5,
                atol=1e-6,
            )
    same(nb.histc(nb.tensor(a), 6), torch.histc(T(a), 6))
    h, edges = torch.histogram(T(a), 5, density=True)
    same(nb.histogram(nb.tensor(a), 5, density=True).hist, h, rtol=1e-5)
    same(nb.i0(nb.tensor(a * 10)), torch.i0(T(a * 10)), rtol=1e-5)
    same(nb.kl_div(nb.tensor(a), nb.tensor(np.abs(a))), torch.kl_div(T(a), T(np.abs(a))))
    same(
        nb.cosine_embedding_loss(nb.tensor(a), nb.tensor(a[::-1].copy()), nb.ones(4)),
        torch.cosine_embedding_loss(T(a), T(a[::-1].copy()), torch.ones(4)),
        rtol=1e-5,
    )
    v = np.array([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4]])
    for ours, theirs in zip(nb.mode(nb.tensor(v)), torch.mode(T(v))):
        same(ours, theirs)
    n = a.copy()
    n[1, 2] = np.nan
    for ours, theirs in zip(nb.nanmedian(nb.tensor(n), 1), torch.nanmedian(T(n), 1)):
        same(ours, theirs)
    for ours, theirs in zip(
        nb.unravel_index(nb.tensor([-7, 3, 13]), (2, 3)),
        torch.unravel_index(T([-7, 3, 13]), (2, 3)),
    ):
        same(ours, theirs)
    x, s = np.array([1, -8, 5, -5]), np.array([3, 1, 70, -1])
    same(nb.bitwise_right_shift(nb.tensor(x), nb.tensor(s)), torch.bitwise_right_shift(T(x), T(s)))
    same(nb.bitwise_left_shift(nb.tensor(x), nb.tensor(s)), torch.bitwise_left_shift(T(x), T(s)))
    same(nb.vander(nb.tensor([1, 2, 3])), torch.vander(T([1, 2, 3])))
    same(nb.renorm(nb.tensor(a), 3, 1, 0.7), torch.renorm(T(a), 3, 1, 0.7), rtol=1e-5)
    for dtypes in [("int32", "float16"), ("bool", "int64"), ("float64", "float32")]:
        ours = nb.promote_types(*dtypes)
        theirs = torch.promote_types(*(getattr(torch, d) for d in dtypes))
        assert str(ours) == str(theirs).replace("torch.", "")
        ours = nb.can_cast(*dtypes)
        assert ours == torch.can_cast(*(getattr(torch, d) for d in dtypes))
