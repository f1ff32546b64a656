"""PyTorch's copying view functions (ops/copies.py), the as_strided family (ops/strided.py),
the complex-number functions on real tensors (ops/complex_parts.py) and the aten forms of F's
functions (nn/functional/aten_forms.py): values and gradients against PyTorch and finite
differences, copies that share no memory, and typed errors for bad input."""

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
