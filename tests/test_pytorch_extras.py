"""PyTorch's top-level functions of nbflow/ops/extras.py (hstack ... get_default_dtype), each
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
    assert nb.as_tensor(np.arange(3, dtype=np.int8)).dtype == np.int32
    np.testing.assert_array_equal(nb.as_tensor([[1, 2]], dtype="float64").numpy(), [[1.0, 2.0]])
    with pytest.raises(nb.DTypeError):
        nb.as_tensor(["a"])
    with pytest.raises(nb.ShapeError):
        nb.as_tensor([[1], [2, 3]])
    assert nb.get_default_dtype() == np.float32 == nb.tensor(1.5).dtype
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
