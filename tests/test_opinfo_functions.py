"""The functions added to map PyTorch's OpInfo entries (issue 39): the copying view functions
(ops/copies.py), the as_strided family (ops/strided.py), the complex-number functions on real
tensors (ops/complex_parts.py), the aten forms of F's functions (nn/functional/aten_forms.py),
geqrf and ormqr (ops/householder.py), svd_lowrank and pca_lowrank (ops/lowrank.py),
histogramdd (ops/histogram_nd.py), F.linear_cross_entropy and F.multi_head_attention_forward:
values and gradients against numpy, scipy, PyTorch and finite differences, eager against
graph mode, copies that share no memory, and typed errors for bad input."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)

# (function name, input shape, arguments) for each *_copy function
COPY_CASES = [
    ("alias_copy", (2, 3), ()),
    ("diagonal_copy", (3, 4), (1,)),
    ("expand_copy", (3, 1), ((2, 3, 4),)),
    ("narrow_copy", (4, 5), (1, 1, 3)),
    ("permute_copy", (2, 3, 4), ((2, 0, 1),)),
    ("split_with_sizes_copy", (5, 2), ([2, 3],)),
    ("squeeze_copy", (2, 1, 3), (1,)),
    ("t_copy", (2, 3), ()),
    ("transpose_copy", (2, 3, 4), (0, 2)),
    ("unbind_copy", (3, 2), (1,)),
    ("unfold_copy", (6, 2), (0, 3, 2)),
    ("unsqueeze_copy", (2, 3), (-1,)),
    ("view_copy", (2, 6), ((3, 4),)),
]


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name, shape, args", COPY_CASES, ids=[c[0] for c in COPY_CASES])
def test_copies_match_pytorch_values_and_gradients(name, shape, args):
    a = RNG.standard_normal(shape)
    xt = torch.tensor(a, requires_grad=True)
    x = nb.tensor(a, requires_grad=True)
    want, got = _outputs(getattr(torch, name)(xt, *args)), _outputs(getattr(nb, name)(x, *args))
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.detach().numpy())
    cots = [RNG.standard_normal(tuple(w.shape)) for w in want]
    torch.autograd.backward(want, [torch.tensor(c) for c in cots])
    sum((g * nb.tensor(c)).sum() for g, c in zip(got, cots)).backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, shape, args", COPY_CASES, ids=[c[0] for c in COPY_CASES])
def test_copies_share_no_memory_with_their_input(name, shape, args):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    x = nb.tensor(a)
    for out in _outputs(getattr(nb, name)(x, *args)):
        out.numpy()[...] = -1.0
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("name", [c[0] for c in COPY_CASES])
def test_copies_refuse_a_non_tensor_input(name):
    with pytest.raises(nb.ArgumentError, match=name):
        getattr(nb, name)(np.zeros((2, 2)))


def test_copies_refuse_bad_arguments_with_the_views_typed_errors():
    x = nb.ones(2, 3)
    with pytest.raises(nb.ShapeError):
        nb.view_copy(x, (4, 2))
    with pytest.raises(nb.OutOfRangeError):
        nb.narrow_copy(x, 1, 2, 5)


@pytest.mark.parametrize("name, shape, args", COPY_CASES, ids=[c[0] for c in COPY_CASES])
def test_copies_run_in_graph_mode_as_eager(name, shape, args):
    counts = nt.check_modes(lambda x: getattr(nb, name)(x, *args), RNG.standard_normal(shape))
    assert counts["gradients"] == 1


# ---------------------------------------------------------------- as_strided


def _positions_by_loop(size, stride, offset):
    """The flat positions as_strided reads, element by element (the reference)."""
    out = np.zeros(size, dtype=np.int64)
    for idx in np.ndindex(*size):
        out[idx] = offset + sum(i * s for i, s in zip(idx, stride))
    return out


STRIDED_CASES = [
    ((3, 3), (2, 2), (1, 2), 1),
    ((16,), (2, 2, 2, 2), (8, 4, 2, 1), 0),
    ((16,), (2, 1, 1, 2), (1, 2, 4, 8), 0),
    ((4, 5), (3, 3), (1, 1), 2),  # overlapping windows: the gradient sums
    ((6,), (), (), 5),
    ((2, 3), (0, 4), (1, 1), 0),
]


@pytest.mark.parametrize("shape, size, stride, offset", STRIDED_CASES)
def test_as_strided_is_the_strided_gather_of_pytorch(shape, size, stride, offset):
    a = RNG.standard_normal(shape)
    want = a.reshape(-1)[_positions_by_loop(size, stride, offset)]
    for fn in (nb.as_strided, nb.as_strided_copy):
        got = fn(nb.tensor(a), size, stride, offset)
        assert got.shape == tuple(size) and got.dtype == np.float64
        np.testing.assert_array_equal(got.numpy(), want)
    xt = torch.tensor(a, requires_grad=True)
    torch_out = torch.as_strided(xt, size, stride, offset)
    np.testing.assert_array_equal(torch_out.detach().numpy(), want)
    cot = RNG.standard_normal(size)
    torch_out.backward(torch.tensor(cot))
    x = nb.tensor(a, requires_grad=True)
    (nb.as_strided(x, size, stride, offset) * nb.tensor(cot)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_as_strided_family_runs_in_graph_mode_as_eager():
    a, src = RNG.standard_normal((4, 5)), RNG.standard_normal((3, 3))
    nt.check_modes(lambda x: nb.as_strided(x, (3, 3), (1, 1), 2), a)
    nt.check_modes(lambda x, s: nb.as_strided_scatter(x, s, (3, 3), (5, 1), 1), a, src)


def test_as_strided_integers_and_default_offset():
    a = np.arange(12).reshape(3, 4)
    got = nb.as_strided(nb.tensor(a), (3, 2), (4, 2))
    np.testing.assert_array_equal(got.numpy(), [[0, 2], [4, 6], [8, 10]])
    assert got.dtype == np.int64


@pytest.mark.parametrize("shape, size, stride, offset", STRIDED_CASES[:3])
def test_as_strided_scatter_values_and_gradients(shape, size, stride, offset):
    a, src = RNG.standard_normal(shape), RNG.standard_normal(size)
    want = a.reshape(-1).copy()
    want[_positions_by_loop(size, stride, offset)] = src
    got = nb.as_strided_scatter(nb.tensor(a), nb.tensor(src), size, stride, offset)
    np.testing.assert_array_equal(got.numpy(), want.reshape(shape))
    want_t = torch.as_strided_scatter(torch.tensor(a), torch.tensor(src), size, stride, offset)
    np.testing.assert_array_equal(got.numpy(), want_t.numpy())
    # gradients against finite differences (PyTorch's input gradient is wrong: see
    # tests/test_opinfo.py's DOCUMENTED)
    leaves = [nb.tensor(a, requires_grad=True), nb.tensor(src, requires_grad=True)]
    nt.gradcheck(lambda x, s: nb.as_strided_scatter(x, s, size, stride, offset), leaves)
    x, s = leaves
    cot = RNG.standard_normal(shape)
    (nb.as_strided_scatter(x, s, size, stride, offset) * nb.tensor(cot)).sum().backward()
    written = np.zeros(a.size, dtype=bool)
    written[_positions_by_loop(size, stride, offset)] = True
    np.testing.assert_array_equal(
        x.grad.numpy(), np.where(written, 0, cot.reshape(-1)).reshape(shape)
    )
    np.testing.assert_array_equal(
        s.grad.numpy(), cot.reshape(-1)[_positions_by_loop(size, stride, offset)]
    )


def test_as_strided_refuses_bad_geometry_with_typed_errors():
    x = nb.ones(3, 3)
    with pytest.raises(nb.OutOfRangeError, match="element 9 of an input of 9"):
        nb.as_strided(x, (2, 2), (3, 1), 5)
    with pytest.raises(nb.DomainError, match="must be >= 0"):
        nb.as_strided(x, (2, 2), (-1, 1), 2)
    with pytest.raises(nb.DomainError, match="must be >= 0"):
        nb.as_strided(x, (2,), (1,), -1)
    with pytest.raises(nb.ShapeError, match="2 sizes but 1 strides"):
        nb.as_strided(x, (2, 2), (1,))
    with pytest.raises(nb.AttrError):
        nb.as_strided(x, "ab", (1, 1))
    with pytest.raises(nb.ArgumentError, match="as_strided"):
        nb.as_strided([1.0, 2.0], (1,), (1,))
    with pytest.raises(nb.ShapeError, match="src of shape"):
        nb.as_strided_scatter(x, nb.ones(3), (2, 2), (1, 1))
    with pytest.raises(nb.OutOfRangeError):
        nb.as_strided_scatter(x, nb.ones(2, 2), (2, 2), (5, 5))


# ---------------------------------------------------------------- complex functions, real input


@pytest.mark.parametrize("name", ["conj", "conj_physical", "resolve_conj", "resolve_neg", "real"])
def test_complex_identities_on_real_tensors(name):
    a = RNG.standard_normal((2, 3))
    x = nb.tensor(a, requires_grad=True)
    out = getattr(nb, name)(x)
    np.testing.assert_array_equal(out.numpy(), getattr(torch, name)(torch.tensor(a)).numpy())
    (out * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 3.0))
    with pytest.raises(nb.ArgumentError, match=name):
        getattr(nb, name)([1.0])


def test_angle_of_real_tensors_against_pytorch():
    a = np.array([2.0, -1.5, 0.0, -0.0, np.nan, np.inf, -np.inf])
    for dtype in ("float64", "float32"):
        got = nb.angle(nb.tensor(a.astype(dtype)))
        want = torch.angle(torch.tensor(a.astype(dtype)))
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    ints = np.array([3, -2, 0])
    got, want = nb.angle(nb.tensor(ints)), torch.angle(torch.tensor(ints))
    assert got.dtype == np.float32 and want.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = nb.tensor(a, requires_grad=True)
    nb.angle(x).sum().backward()
    xt = torch.tensor(a, requires_grad=True)
    torch.angle(xt).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


def test_imag_of_a_real_tensor_is_refused_as_in_pytorch():
    with pytest.raises(RuntimeError):
        torch.imag(torch.ones(2))
    with pytest.raises(nb.DTypeError, match="imag"):
        nb.imag(nb.ones(2))


# ---------------------------------------------------------------- aten forms of F's functions


def test_native_norms_statistics_against_numpy():
    a = RNG.standard_normal((4, 6, 5))
    out, mean, rstd = nb.native_layer_norm(nb.tensor(a), (6, 5), None, None, 1e-5)
    m = a.mean(axis=(1, 2), keepdims=True)
    r = 1 / np.sqrt(a.var(axis=(1, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-10)
    np.testing.assert_allclose(out.numpy(), (a - m) * r, rtol=1e-9, atol=1e-12)
    out, mean, rstd = nb.native_group_norm(nb.tensor(a), None, None, 4, 6, 5, 3, 1e-5)
    g = a.reshape(4, 3, 10)
    np.testing.assert_allclose(mean.numpy(), g.mean(axis=2), rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy(), 1 / np.sqrt(g.var(axis=2) + 1e-5), rtol=1e-10)
    out, mean, invstd = nb.native_batch_norm(nb.tensor(a), None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(mean.numpy(), a.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(a.var(axis=(0, 2)) + 1e-5), rtol=1e-10)
    rm, rv = nb.zeros(6, dtype=nb.float64), nb.ones(6, dtype=nb.float64)
    _, mean, invstd = nb.native_batch_norm(nb.tensor(a), None, None, rm, rv, False, 0.1, 1e-5)
    assert mean.shape == (0,) and invstd.shape == (0,)


def test_native_group_norm_checks_its_restated_shape():
    with pytest.raises(nb.ShapeError, match="N=2, C=6, HxW=5"):
        nb.native_group_norm(nb.ones(4, 6, 5), None, None, 2, 6, 5, 3, 1e-5)
    with pytest.raises(nb.AttrError):
        nb.native_layer_norm(nb.ones(2, 3), (3,), None, None, "small")


def test_constant_pad_nd_and_grid_samplers_against_pytorch():
    a = RNG.standard_normal((1, 2, 3, 4))
    got = nb.constant_pad_nd(nb.tensor(a), (1, 2, 0, 1), 0.5)
    want = torch.constant_pad_nd(torch.tensor(a), (1, 2, 0, 1), 0.5)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    grid = RNG.uniform(-1.1, 1.1, (1, 2, 3, 2))
    for mode in (0, 1, 2):
        for padding in (0, 1, 2):
            got = nb.grid_sampler_2d(nb.tensor(a), nb.tensor(grid), mode, padding, False)
            want = torch.grid_sampler_2d(torch.tensor(a), torch.tensor(grid), mode, padding, False)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(nb.DomainError, match="mode"):
        nb.grid_sampler_2d(nb.tensor(a), nb.tensor(grid), 3, 0, False)
    with pytest.raises(nb.ShapeError, match="5-D"):
        nb.grid_sampler_3d(nb.tensor(a), nb.tensor(grid), 0, 0, False)


# ---------------------------------------------------------------- geqrf, ormqr


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3), (4, 1), (3, 0)])
def test_geqrf_against_lapack(shape):
    from scipy.linalg import lapack

    a = RNG.standard_normal(shape)
    got, tau = nb.geqrf(nb.tensor(a))
    assert got.shape == shape and tau.shape == (*shape[:-2], min(shape[-2:]))
    batch = int(np.prod(shape[:-2]))
    got, tau = got.numpy().reshape(batch, *shape[-2:]), tau.numpy().reshape(batch, -1)
    for i, m in enumerate(a.reshape(batch, *shape[-2:])):
        if not m.size:  # (LAPACK refuses an empty matrix; the shapes are checked above)
            continue
        want, want_tau, _, info = lapack.dgeqrf(m)
        assert info == 0
        np.testing.assert_allclose(got[i], want, atol=1e-12)
        np.testing.assert_allclose(tau[i], want_tau, atol=1e-12)


def test_geqrf_of_a_column_already_reduced_and_in_graph_mode():
    a = RNG.standard_normal((4, 3))
    a[1:, 0] = 0  # LAPACK's dlarfg: no reflection (tau 0) for a column already zero below
    got, tau = nb.geqrf(nb.tensor(a))
    assert tau.numpy()[0] == 0 and got.numpy()[0, 0] == a[0, 0]
    nt.check_modes(lambda x: nb.geqrf(x)[0], nb.tensor(a))
    qr_q = np.linalg.qr(a)[0]  # Q from geqrf's reflections spans the same columns
    q = nb.linalg.householder_product(got, tau).numpy()
    np.testing.assert_allclose(np.abs(q.T @ qr_q), np.eye(3), atol=1e-12)


@pytest.mark.parametrize("left, transpose", [(True, False), (True, True), (False, False)])
def test_ormqr_is_the_product_with_lapacks_q(left, transpose):
    from scipy.linalg import lapack

    a = RNG.standard_normal((5, 3))
    factor, tau, _, _ = lapack.dgeqrf(a)
    q = lapack.dorgqr(np.hstack([factor, np.zeros((5, 2))]), tau)[0]  # the full 5 x 5 Q
    q = q.T if transpose else q
    c = RNG.standard_normal((5, 4) if left else (4, 5))
    want = q @ c if left else c @ q
    got = nb.ormqr(nb.tensor(factor), nb.tensor(tau), nb.tensor(c), left, transpose)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    leaves = [nb.tensor(x, requires_grad=True) for x in (factor, tau, c)]
    nt.gradcheck(lambda f, t, o: nb.ormqr(f, t, o, left, transpose), leaves)


def test_geqrf_and_ormqr_refuse_bad_input_with_typed_errors():
    with pytest.raises(nb.ShapeError, match="at least 2 dims"):
        nb.geqrf(nb.ones(3))
    with pytest.raises(nb.DTypeError, match="floating-point"):
        nb.geqrf(nb.tensor(np.ones((2, 2), dtype=np.int64)))
    a, tau = nb.geqrf(nb.tensor(RNG.standard_normal((4, 3))))
    with pytest.raises(nb.ShapeError, match="do not fit other"):
        nb.ormqr(a, tau, nb.ones(3, 3, dtype=nb.float64))
    with pytest.raises(nb.DTypeError, match="share a dtype"):
        nb.ormqr(a, tau, nb.ones(4, 2))


# ---------------------------------------------------------------- linalg.eig, eigvals


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_decomposes_as_numpy_and_its_gradient_matches_finite_differences(complex_input):
    a = RNG.standard_normal((2, 4, 4))
    if complex_input:
        a = a + 1j * RNG.standard_normal(a.shape)
    w, v = nb.linalg.eig(nb.tensor(a))
    assert w.dtype == nb.complex128 and v.shape == (2, 4, 4)
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[:, None, :], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=-2), 1.0, rtol=1e-12)
    want = np.sort_complex(np.linalg.eigvals(a).ravel())
    np.testing.assert_allclose(
        np.sort_complex(nb.linalg.eigvals(nb.tensor(a)).numpy().ravel()), want
    )
    if complex_input:
        return
    weights = RNG.standard_normal((2, 4)) + 1j * RNG.standard_normal((2, 4))
    magnitudes = RNG.standard_normal((2, 4, 4))

    def loss(t):  # (|v| does not depend on the eigenvectors' phases)
        w, v = nb.linalg.eig(t)
        return nb.real(nb.sum(w * nb.tensor(weights))) + nb.sum(nb.abs(v) * nb.tensor(magnitudes))

    nt.gradcheck(loss, [nb.tensor(a, requires_grad=True)])


def test_eig_refuses_a_loss_that_depends_on_the_eigenvectors_phase():
    x = nb.tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    _, v = nb.linalg.eig(x)
    with pytest.raises(nb.errors.GradientError, match="phase"):
        nb.sum(nb.imag(v)).backward()


# ---------------------------------------------------------------- svd_lowrank, pca_lowrank


def test_svd_lowrank_recovers_a_low_rank_matrix():
    a = RNG.standard_normal((8, 3)) @ RNG.standard_normal((3, 6))
    nb.manual_seed(0)
    u, s, v = nb.svd_lowrank(nb.tensor(a), q=3)
    assert (u.shape, s.shape, v.shape) == ((8, 3), (3,), (6, 3))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a)[1][:3], rtol=1e-10)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, a, atol=1e-10)
    np.testing.assert_allclose(u.numpy().T @ u.numpy(), np.eye(3), atol=1e-12)
    m = RNG.standard_normal((8, 6))
    u, s, v = nb.svd_lowrank(nb.tensor(a + m), q=3, M=nb.tensor(m))
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, a, atol=1e-9)
    wide = a.T  # (6, 8): the basis is drawn for the transpose
    u, s, v = nb.svd_lowrank(nb.tensor(wide), q=3)
    assert (u.shape, v.shape) == ((6, 3), (8, 3))
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, wide, atol=1e-10)


def test_pca_lowrank_centers_the_columns():
    a = RNG.standard_normal((10, 2)) @ RNG.standard_normal((2, 4)) + RNG.standard_normal(4)
    u, s, v = nb.pca_lowrank(nb.tensor(a), q=2)
    centered = a - a.mean(axis=0)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(centered)[1][:2], rtol=1e-10)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, centered, atol=1e-10)
    assert nb.pca_lowrank(nb.tensor(a))[1].shape == (4,)  # q = min(6, m, n)


def test_lowrank_gradients_against_finite_differences():
    a = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))

    def reconstructed(x):
        nb.manual_seed(1)  # the same draw for every evaluation
        u, s, v = nb.svd_lowrank(x, q=2)
        return (u * s) @ v.mT

    nt.gradcheck(reconstructed, [nb.tensor(a, requires_grad=True)])


def test_lowrank_refuses_bad_arguments_with_typed_errors():
    with pytest.raises(nb.DomainError, match="q=5"):
        nb.svd_lowrank(nb.ones(3, 4), q=5)
    with pytest.raises(nb.DomainError, match="niter=-1"):
        nb.pca_lowrank(nb.ones(3, 4), niter=-1)
    with pytest.raises(nb.ShapeError):
        nb.svd_lowrank(nb.ones(3))
    with pytest.raises(nb.DTypeError):
        nb.svd_lowrank(nb.tensor(np.ones((3, 3), dtype=np.int64)))


# ---------------------------------------------------------------- histogramdd


@pytest.mark.parametrize(
    "bins, kwargs",
    [
        (3, {}),
        ([2, 3, 4], {"density": True}),
        (2, {"range": [-1.0, 1.0, -2.0, 2.0, 0.0, 3.0]}),
        (3, {"weight": True}),
    ],
)
def test_histogramdd_against_numpy(bins, kwargs):
    x = RNG.standard_normal((2, 9, 3))
    w = RNG.random((2, 9))
    np_kwargs = {"density": kwargs.get("density", False)}
    if "range" in kwargs:
        np_kwargs["range"] = np.reshape(kwargs["range"], (3, 2))
    if "weight" in kwargs:
        np_kwargs["weights"] = w.reshape(-1)
        kwargs = {"weight": nb.tensor(w)}
    hist, edges = np.histogramdd(x.reshape(-1, 3), bins, **np_kwargs)
    got = nb.histogramdd(nb.tensor(x), bins, **kwargs)
    np.testing.assert_allclose(got.hist.numpy(), hist, rtol=1e-12)
    for g, e in zip(got.bin_edges, edges):
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-12, atol=1e-15)


def test_histogramdd_with_given_edges_and_bad_input():
    x = nb.tensor([[0.5, 0.5], [1.5, 0.2], [2.0, 1.0], [3.0, 0.0]])
    edges = [nb.tensor([0.0, 1.0, 2.0]), nb.tensor([0.0, 0.5, 1.0])]
    got = nb.histogramdd(x, edges).hist.numpy()
    np.testing.assert_array_equal(got, [[0, 1], [1, 1]])  # (3.0, 0.0) is outside
    with pytest.raises(nb.DomainError, match="increasing"):
        nb.histogramdd(x, [nb.tensor([1.0, 0.0]), edges[1]])
    with pytest.raises(nb.ShapeError, match="3 bins for points of 2 dims"):
        nb.histogramdd(x, [2, 2, 2])
    with pytest.raises(nb.AttrError, match="2 numbers per dim"):
        nb.histogramdd(x, 2, range=[0.0, 1.0])
    with pytest.raises(nb.DTypeError):
        nb.histogramdd(nb.tensor([[1, 2]]), 2)


# ---------------------------------------------------------------- F's PyTorch forms


def test_linear_cross_entropy_is_cross_entropy_of_the_linear_map():
    import torch.nn.functional as TF

    x, w = RNG.standard_normal((6, 4)), RNG.standard_normal((3, 4))
    bias, target = RNG.standard_normal(3), RNG.integers(0, 3, 6)
    for reduction in ("mean", "none", "sum"):
        want = TF.linear_cross_entropy(
            torch.tensor(x),
            torch.tensor(w),
            torch.tensor(target),
            linear_bias=torch.tensor(bias),
            reduction=reduction,
            label_smoothing=0.1,
        )
        got = nb.nn.functional.linear_cross_entropy(
            nb.tensor(x),
            nb.tensor(w),
            nb.tensor(target),
            linear_bias=nb.tensor(bias),
            reduction=reduction,
            label_smoothing=0.1,
        )
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(nb.ShapeError, match="does not map"):
        nb.nn.functional.linear_cross_entropy(nb.ones(2, 3), nb.ones(4, 2), nb.tensor([0, 1]))


def test_multi_head_attention_forward_against_pytorch():
    import torch.nn.functional as TF

    length, source, batch, embed, heads = 3, 4, 2, 4, 2
    arrays = [RNG.standard_normal(s) for s in [(length, batch, embed), (source, batch, embed)]]
    arrays += [arrays[1] * 0.5, RNG.standard_normal((3 * embed, embed))]
    arrays += [RNG.standard_normal(s) for s in [(3 * embed,), (1, 1, embed), (1, 1, embed)]]
    out_w, out_b = RNG.standard_normal((embed, embed)), RNG.standard_normal(embed)
    padding = np.zeros((batch, source), bool)
    padding[0, 1] = True

    def run(lib, to):
        q, k, v, w, b, bias_k, bias_v = (to(a) for a in arrays)
        return lib.multi_head_attention_forward(
            q,
            k,
            v,
            embed,
            heads,
            w,
            b,
            bias_k,
            bias_v,
            True,
            0.0,
            to(out_w),
            to(out_b),
            training=False,
            key_padding_mask=to(padding),
            average_attn_weights=False,
        )

    want = run(TF, torch.tensor)
    got = run(nb.nn.functional, nb.tensor)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
    q = nb.tensor(arrays[0])
    with pytest.raises(nb.ShapeError, match="embed_dim_to_check=5"):
        nb.nn.functional.multi_head_attention_forward(
            q, q, q, 5, 1, None, None, None, None, False, 0.0, nb.ones(4, 4), None
        )
    with pytest.raises(nb.ArgumentError, match="in_proj_weight"):
        nb.nn.functional.multi_head_attention_forward(
            q, q, q, 4, 1, None, None, None, None, False, 0.0, nb.ones(4, 4), None
        )


# ---------------------------------------------------------------- nbflow.fft


FFT_CASES = [
    ("irfft", {}),
    ("irfft", {"n": 9, "dim": 0, "norm": "ortho"}),
    ("irfft", {"n": 3, "norm": "forward"}),
    ("irfft2", {}),
    ("irfft2", {"s": (3, 10), "norm": "ortho"}),
    ("irfftn", {"s": (4, 5, 6), "dim": (0, 1, 2)}),
    ("irfftn", {"s": (7,), "dim": (1,)}),
    ("irfftn", {"s": (4, -1), "dim": (0, 2), "norm": "forward"}),
]


@pytest.mark.parametrize("name, kwargs", FFT_CASES)
def test_inverse_real_transforms_against_numpy(name, kwargs):
    x = RNG.standard_normal((3, 4, 5))
    np_kwargs = {"axes" if k == "dim" else k: v for k, v in kwargs.items()}
    if name == "irfft":
        np_kwargs = {"axis" if k == "axes" else k: v for k, v in np_kwargs.items()}
    if np_kwargs.get("s") is not None and -1 in np_kwargs["s"]:  # numpy has no -1 size
        np_kwargs["s"] = (4, 2 * (x.shape[2] - 1))
    want = getattr(np.fft, name)(x, **np_kwargs)
    got = getattr(nb.fft, name)(nb.tensor(x), **kwargs)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    # the Hermitian transform of a real input is the inverse one with the dual scaling
    dual = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
    hermitian = getattr(nb.fft, name.replace("irfft", "hfft"))
    h_kwargs = {**kwargs, "norm": dual[kwargs.get("norm", "backward")]}
    np.testing.assert_allclose(hermitian(nb.tensor(x), **h_kwargs).numpy(), want, rtol=1e-10)


def test_inverse_real_transforms_gradients_and_graph_mode():
    x = nb.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    nt.gradcheck(lambda t: nb.fft.irfft2(t, s=(5, 4), norm="ortho"), [x])
    nt.gradcheck(lambda t: nb.fft.hfft(t, n=7, dim=0), [x])
    nt.check_modes(lambda t: nb.fft.irfftn(t), RNG.standard_normal((3, 4)))
    assert nb.fft.irfft(nb.tensor([1, 2, 3])).dtype == np.float32  # integers: default float


def test_long_signals_take_the_fast_transform():
    # 2**16 points: a DFT matrix would hold 2**32 entries, over the memory budget
    x = RNG.standard_normal(2**16)
    np.testing.assert_allclose(nb.fft.rfft(nb.tensor(x)).numpy(), np.fft.rfft(x), atol=1e-8)
    y = RNG.standard_normal(2**15 + 1) + 1j * RNG.standard_normal(2**15 + 1)
    np.testing.assert_allclose(nb.fft.irfft(nb.tensor(y)).numpy(), np.fft.irfft(y), atol=1e-12)


COMPLEX_FFT_CASES = [
    ("fft", {}),
    ("fft", {"n": 7, "dim": 0, "norm": "ortho"}),
    ("ifft", {"n": 3, "norm": "forward"}),
    ("fft2", {}),
    ("ifft2", {"s": (3, 8)}),
    ("fftn", {"s": (2, 6), "dim": (0, 2)}),
    ("ifftn", {"norm": "ortho"}),
    ("rfft", {}),
    ("rfft", {"n": 8, "dim": 1}),
    ("rfft2", {"s": (3, 7), "norm": "forward"}),
    ("rfftn", {}),
    ("irfft", {}),  # (of a complex input)
    ("irfftn", {"s": (4, 6), "dim": (0, 1)}),
    ("hfft", {"n": 6}),
]


@pytest.mark.parametrize("name, kwargs", COMPLEX_FFT_CASES)
def test_complex_transforms_against_numpy(name, kwargs):
    real = name.startswith("rfft")  # (rfft takes real signals; the others complex ones too)
    x = RNG.standard_normal((3, 4, 5))
    inputs = [x] if real else [x, x + 1j * RNG.standard_normal(x.shape)]
    np_kwargs = {"axes" if k == "dim" else k: v for k, v in kwargs.items()}
    if "s" not in kwargs and "dim" not in kwargs and name.endswith("2"):
        np_kwargs["axes"] = (-2, -1)
    if name[-1] not in "2n":
        np_kwargs = {"axis" if k == "axes" else k: v for k, v in np_kwargs.items()}
    for a in inputs:
        want = getattr(np.fft, name)(a, **np_kwargs)
        got = getattr(nb.fft, name)(nb.tensor(a), **kwargs)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-11)


def test_complex_transforms_round_trip_differentiate_and_run_under_jit():
    z = RNG.standard_normal((4, 6)) + 1j * RNG.standard_normal((4, 6))
    back = nb.fft.ifftn(nb.fft.fftn(nb.tensor(z)))
    np.testing.assert_allclose(back.numpy(), z, atol=1e-12)
    x = RNG.standard_normal((4, 6))
    np.testing.assert_allclose(nb.fft.irfft(nb.fft.rfft(nb.tensor(x)), n=6).numpy(), x, atol=1e-12)
    np.testing.assert_allclose(
        nb.fft.ihfft(nb.tensor(x)).numpy(), np.fft.ihfft(x), rtol=1e-10, atol=1e-12
    )
    t = nb.tensor(x, requires_grad=True)
    nt.gradcheck(lambda u: nb.real(nb.fft.fft2(u, norm="ortho")), [t])
    nt.gradcheck(lambda u: nb.imag(nb.fft.rfft(u, n=5)), [t])
    nt.check_modes(lambda u: nb.real(nb.fft.fftn(u)), x)
    assert nb.fft.fft(nb.tensor([1, 2, 3])).dtype == nb.complex64  # integers: default float
    with pytest.raises(nb.DTypeError, match="real input"):
        nb.fft.rfft(nb.tensor(z))


def test_fftshift_against_numpy():
    x = RNG.standard_normal((4, 5))
    for dim in (None, 0, (1,), (0, 1)):
        got = nb.fft.fftshift(nb.tensor(x), dim)
        np.testing.assert_array_equal(got.numpy(), np.fft.fftshift(x, dim))
        back = nb.fft.ifftshift(got, dim)
        np.testing.assert_array_equal(back.numpy(), x)


def test_fft_functions_refuse_bad_arguments_with_typed_errors():
    x = nb.ones(3, 4)
    with pytest.raises(nb.DomainError, match="norm"):
        nb.fft.irfft(x, norm="bad")
    with pytest.raises(nb.DomainError, match="data points"):
        nb.fft.irfft(x, n=0)
    with pytest.raises(nb.ShapeError, match="same length"):
        nb.fft.irfftn(x, s=(3,), dim=(0, 1))
    with pytest.raises(nb.ArgumentError, match="irfft"):
        nb.fft.irfft([1.0, 2.0])


STFT_CASES = [
    ((50,), {"n_fft": 10}),
    ((10,), {"n_fft": 7, "center": False}),
    ((2, 30), {"n_fft": 8, "hop_length": 3, "win_length": 6, "normalized": True}),
    ((2, 30), {"n_fft": 8, "onesided": False, "pad_mode": "circular"}),
    ((40,), {"n_fft": 8, "pad_mode": "replicate", "hop_length": 5}),
    ((40,), {"n_fft": 8, "pad_mode": "constant"}),
]


@pytest.mark.parametrize("shape, kwargs", STFT_CASES)
def test_stft_real_and_imaginary_parts_against_pytorch(shape, kwargs):
    x = RNG.standard_normal(shape)
    window = np.hanning(kwargs["win_length"]) if "win_length" in kwargs else None
    want = torch.view_as_real(
        torch.stft(
            torch.tensor(x),
            window=None if window is None else torch.tensor(window),
            return_complex=True,
            **kwargs,
        )
    )
    got = nb.stft(
        nb.tensor(x),
        window=None if window is None else nb.tensor(window),
        return_complex=False,
        **kwargs,
    )
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    complex_result = nb.stft(
        nb.tensor(x),
        window=None if window is None else nb.tensor(window),
        return_complex=True,
        **kwargs,
    )
    assert complex_result.dtype == nb.complex128
    np.testing.assert_allclose(
        complex_result.numpy(), got.numpy()[..., 0] + 1j * got.numpy()[..., 1]
    )


def test_stft_complex_result_gradient_against_pytorch():
    x = RNG.standard_normal(20)
    weights = RNG.standard_normal((4, 11)) + 1j * RNG.standard_normal((4, 11))
    ours = nb.tensor(x, requires_grad=True)
    spectrum = nb.stft(ours, 6, hop_length=2, return_complex=True)
    nb.sum(nb.real(spectrum * nb.tensor(weights))).backward()
    theirs = torch.tensor(x, requires_grad=True)
    want = torch.stft(theirs, 6, hop_length=2, return_complex=True)
    (want * torch.tensor(weights)).real.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape, kwargs", STFT_CASES)
def test_istft_inverts_stft_as_pytorchs_does(shape, kwargs):
    x = RNG.standard_normal(shape)
    window = np.hanning(kwargs["win_length"]) + 0.1 if "win_length" in kwargs else None
    keep = {k: v for k, v in kwargs.items() if k != "pad_mode"}  # (istft has no pad_mode)
    spectrum = nb.stft(
        nb.tensor(x),
        window=None if window is None else nb.tensor(window),
        return_complex=True,
        **kwargs,
    )
    back = nb.istft(
        spectrum, window=None if window is None else nb.tensor(window), length=shape[-1], **keep
    )
    if kwargs.get("center", True):  # (without centring, the last samples may be no frame's)
        np.testing.assert_allclose(back.numpy(), x, atol=1e-12)
    want = torch.istft(
        torch.tensor(spectrum.numpy()),
        window=None if window is None else torch.tensor(window),
        length=shape[-1],
        **keep,
    )
    np.testing.assert_allclose(back.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_istft_gradient_graph_mode_and_errors():
    spectrum = nb.stft(nb.tensor(RNG.standard_normal(24)), 8, return_complex=True)
    z = nb.tensor(spectrum.numpy(), requires_grad=True)
    weights = RNG.standard_normal(24)
    nb.sum(nb.istft(z, 8) * nb.tensor(weights)).backward()
    theirs = torch.tensor(spectrum.numpy(), requires_grad=True)
    (torch.istft(theirs, 8) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    nt.check_modes(lambda s: nb.istft(s, 8), spectrum.numpy())
    with pytest.raises(nb.DomainError, match="overlap-add"):
        nb.istft(z, 8, window=nb.zeros(8))
    with pytest.raises(nb.DTypeError, match="complex"):
        nb.istft(nb.ones(5, 3), 8)
    with pytest.raises(nb.ShapeError, match="frequencies"):
        nb.istft(z, 10)


def test_stft_gradients_and_typed_errors():
    x = nb.tensor(RNG.standard_normal(20), requires_grad=True)
    nt.gradcheck(lambda t: nb.stft(t, 6, hop_length=2, return_complex=False), [x])
    nt.check_modes(lambda t: nb.stft(t, 6, return_complex=False), RNG.standard_normal((2, 20)))
    with pytest.raises(nb.UnsupportedError, match="return_complex"):
        nb.stft(x, 6)
    with pytest.raises(nb.ShapeError, match="longer than"):
        nb.stft(x, 30, center=False, return_complex=False)
    with pytest.raises(nb.DomainError, match="win_length"):
        nb.stft(x, 6, win_length=8, return_complex=False)
    with pytest.raises(nb.DomainError, match="pad_mode"):
        nb.stft(x, 6, pad_mode="wrap", return_complex=False)
