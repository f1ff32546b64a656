"""The Tensor methods PyTorch users reach for beyond the ops' mirrors: unfold, fill_diagonal_,
sum_to_size, type(), H / mH, the memory-layout queries (stride, storage_offset, data_ptr),
detach_, and the methods and in-place forms of the top-level functions (x.cov(), x.gcd_(y)).
References are numpy's (sliding_window_view, fill_diagonal, strides), written here."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import nbflow as nb
from nbflow import testing as nt
from nbflow.errors import GradientError

RNG = np.random.default_rng(11)
X = RNG.standard_normal((5, 7))


@pytest.mark.parametrize(
    "dim, size, step", [(0, 2, 1), (1, 3, 2), (-1, 7, 1), (1, 0, 3), (0, 5, 4)]
)
def test_unfold_takes_windows_along_a_dim_as_numpy_does(dim, size, step):
    got = nb.tensor(X).unfold(dim, size, step)
    want = sliding_window_view(X, size, axis=dim)
    want = want[(slice(None),) * (dim % 2) + (slice(None, None, step),)]
    np.testing.assert_array_equal(got.numpy(), want)


def test_unfold_differentiates_and_runs_under_jit():
    x = nb.tensor(RNG.standard_normal((3, 6)), requires_grad=True)
    nt.gradcheck(lambda t: x_unfold(t), [x])
    nt.check_modes(x_unfold, x)
    assert nb.tensor(2.5).unfold(0, 1, 1).numpy().tolist() == [2.5]  # PyTorch's 0-d answer
    with pytest.raises(ValueError):
        nb.tensor(X).unfold(1, 8, 1)
    with pytest.raises(ValueError):
        nb.tensor(X).unfold(1, 2, 0)


def x_unfold(t):
    return t.unfold(1, 4, 2) * 2.0


@pytest.mark.parametrize(
    "shape, wrap",
    [((4, 4), False), ((7, 3), False), ((7, 3), True), ((3, 7), True), ((3, 3, 3), False)],
)
def test_fill_diagonal_matches_numpy(shape, wrap):
    x = nb.zeros(*shape, dtype=nb.float64)
    version = x.version
    out = x.fill_diagonal_(4.5, wrap=wrap)
    want = np.zeros(shape)
    np.fill_diagonal(want, 4.5, wrap=wrap)
    assert out is x and x.version > version
    np.testing.assert_array_equal(x.numpy(), want)
    with pytest.raises(ValueError):
        nb.zeros(2, 3, 4).fill_diagonal_(1.0)


def test_sum_to_size_sums_what_broadcasting_added():
    x = RNG.standard_normal((2, 3, 4))
    t = nb.tensor(x, requires_grad=True)
    np.testing.assert_allclose(t.sum_to_size(3, 1).numpy(), x.sum(0).sum(1, keepdims=True))
    np.testing.assert_allclose(t.sum_to_size(1, 1, 4).numpy(), x.sum((0, 1), keepdims=True))
    assert t.sum_to_size(2, 3, 4).shape == (2, 3, 4)
    nt.gradcheck(lambda a: a.sum_to_size(1, 3, 1), [t])
    with pytest.raises(ValueError):
        t.sum_to_size(2, 4)


def test_type_h_and_the_layout_queries():
    x = nb.tensor(np.arange(24.0).reshape(4, 6))
    assert x.type() == "nbflow.DoubleTensor" and nb.zeros(2, dtype=nb.int64).type().endswith(
        "LongTensor"
    )
    assert x.type(nb.float32).dtype == nb.float32
    np.testing.assert_array_equal(x.H.numpy(), x.numpy().T)
    np.testing.assert_array_equal(nb.zeros(2, 3, 4).mH.numpy(), np.zeros((2, 4, 3)))
    view = x[1:, ::2]
    base = x.numpy()
    assert view.stride() == (6, 2) and view.stride(1) == 2
    assert view.storage_offset() == 6 and x.storage_offset() == 0
    assert view.data_ptr() - x.data_ptr() == 6 * base.itemsize
    assert x.data_ptr() == base.__array_interface__["data"][0]


def test_detach_cuts_a_tensor_from_the_graph_in_place():
    w = nb.ones(3, requires_grad=True)
    y = w * 2.0
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None
    (y * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])  # y counts as a constant


def test_the_top_level_functions_are_methods_too():
    a, b = nb.tensor([12, 18, -7]), nb.tensor([8, 12, 21])
    np.testing.assert_array_equal(a.gcd(b).numpy(), np.gcd([12, 18, -7], [8, 12, 21]))
    np.testing.assert_array_equal(
        a.bitwise_xor(b).numpy(), np.bitwise_xor([12, 18, -7], [8, 12, 21])
    )
    m = nb.tensor(X)
    np.testing.assert_allclose(m.cov().numpy(), np.cov(X), rtol=1e-12)
    np.testing.assert_allclose(
        nb.tensor([0.5, 2.0]).erfc().numpy(), [0.4795001222, 0.0046777350], rtol=2e-7
    )
    np.testing.assert_array_equal(m.msort().numpy(), np.sort(X, axis=0))
    np.testing.assert_allclose(m.dist(nb.zeros(5, 7)).numpy(), np.linalg.norm(X))
    counts = nb.tensor([0, 2, 2, 5]).bincount()
    np.testing.assert_array_equal(counts.numpy(), np.bincount([0, 2, 2, 5]))


def test_inplace_forms_write_into_the_tensor():
    a = nb.tensor([12, 18, 9])
    version = a.version
    assert a.gcd_(nb.tensor([8, 12, 6])) is a and a.version > version
    np.testing.assert_array_equal(a.numpy(), [4, 6, 3])
    a.bitwise_left_shift_(nb.tensor([1, 2, 0]))
    np.testing.assert_array_equal(a.numpy(), [8, 24, 3])
    f = nb.tensor([0.0, 1.0])
    f.erfc_()
    np.testing.assert_allclose(f.numpy(), [1.0, 0.1572992070], rtol=1e-7)
    w = nb.ones(2, requires_grad=True)
    with pytest.raises(GradientError):
        w.erfc_()  # a leaf that requires grad, as for every in-place op
