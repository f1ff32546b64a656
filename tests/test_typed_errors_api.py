"""Typed errors for the bad arguments tools/fuzz_campaign.py's api campaign found ending in a
plain ValueError/TypeError or in numpy's and Python's own errors (issue 42, item 6): each raises
one of nbflow's errors, naming the function, and the valid call next to it still works."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import errors


@pytest.fixture
def x():
    return nb.tensor(np.arange(6.0).reshape(2, 3))


def test_expand_with_fewer_sizes_than_dims(x):
    with pytest.raises(errors.ShapeError, match="expand"):
        x.expand()
    assert x.expand(4, 2, 3).shape == (4, 2, 3)


def test_expand_with_a_tensor_size(x):
    with pytest.raises(errors.AttrError, match="expand"):
        x.expand(nb.ones(2, 3), 3)


def test_repeat_with_fewer_sizes_than_dims(x):
    with pytest.raises(errors.ShapeError, match="repeat"):
        x.repeat(2)


def test_sum_to_size_with_sizes_that_are_not_ints(x):
    with pytest.raises(errors.AttrError, match="sum_to_size"):
        x.sum_to_size(4, "nan")
    with pytest.raises(errors.ShapeError, match="sum_to_size"):
        x.sum_to_size(4, 3)
    np.testing.assert_array_equal(x.sum_to_size(1, 3).numpy(), [[3.0, 5.0, 7.0]])


def test_fill_diagonal_of_a_tensor_without_a_diagonal():
    with pytest.raises(errors.ShapeError, match="fill_diagonal_"):
        nb.zeros(2, 4, 4).fill_diagonal_(1.0)
    with pytest.raises(errors.ShapeError, match="fill_diagonal_"):
        nb.zeros(()).fill_diagonal_(1.0)


@pytest.mark.parametrize("other", [{"a": 1}, 3, "float32"])
def test_type_as_a_non_tensor(x, other):
    with pytest.raises(errors.ArgumentError, match="type_as"):
        x.type_as(other)
    assert x.type_as(nb.tensor([1], dtype=nb.int64)).dtype == nb.int64


def test_t_and_unfold(x):
    with pytest.raises(errors.ShapeError, match="t()"):
        nb.zeros(2, 2, 2).t()
    with pytest.raises(errors.AttrError, match="unfold"):
        x.unfold(1, 1.5, 1)
    with pytest.raises(errors.DomainError, match="unfold"):
        x.unfold(1, 4, 1)


def test_resize_with_bad_sizes(x):
    with pytest.raises(errors.AttrError, match="resize_"):
        x.clone().resize_(2.5)
    with pytest.raises(errors.DomainError, match="resize_"):
        x.clone().resize_(-1, 3)


def test_from_numpy_of_a_tensor(x):
    with pytest.raises(errors.ArgumentError, match="from_numpy"):
        nb.from_numpy(x)


def test_masked_select_with_shapes_that_do_not_broadcast():
    with pytest.raises(errors.ShapeError, match="masked_select"):
        nb.masked_select(nb.zeros(2, 4, 1), nb.ones(4, 2, 1, dtype=nb.bool_))


def test_unique_consecutive_with_a_tensor_flag(x):
    with pytest.raises(errors.AttrError, match="unique_consecutive"):
        nb.unique_consecutive(x, return_inverse=nb.ones(2))


def test_unique_consecutive_along_a_dim():
    torch = pytest.importorskip("torch")
    data = np.array([[1, 1, 2, 2, 1], [3, 3, 4, 5, 3]], np.int64)
    got = nb.unique_consecutive(nb.tensor(data), return_inverse=True, return_counts=True, dim=1)
    want = torch.unique_consecutive(
        torch.tensor(data), return_inverse=True, return_counts=True, dim=1
    )
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_allclose_with_a_string_tolerance(x):
    with pytest.raises(errors.AttrError, match="allclose"):
        nb.allclose(x, x, rtol="float32")


def test_summed_axes_of_a_0d_tensor():
    with pytest.raises(errors.AttrError, match="summed_axes"):
        nb.summed_axes(nb.tensor(1.0), nb.tensor(2.0))
    with pytest.raises(errors.ShapeError, match="summed_axes"):
        nb.summed_axes((3,), (2, 3))
    assert nb.summed_axes((2, 3), (1, 3)) == (0,)


def test_i0_of_small_integer_arrays():
    # numpy's uint8 is widened to int32 as every op widens it: a float result, not a KeyError
    np.testing.assert_allclose(nb.i0(np.array([1, 2], np.uint8)).numpy(), np.i0([1.0, 2.0]))
    with pytest.raises(errors.DTypeError, match="i0"):
        nb.i0(np.array(["a"]))


def test_sgd_with_a_bool_gradient():
    p = nb.nn.Parameter(nb.ones(3))
    p.grad = nb.tensor([True, False, True])
    with pytest.raises(errors.DTypeError, match="grad must be a float tensor"):
        nb.optim.SGD([p], lr=0.1).step()
    np.testing.assert_array_equal(p.numpy(), [1.0, 1.0, 1.0])  # nothing written


@pytest.fixture
def no_memory_budget():
    budget = nb.get_memory_budget()
    nb.set_memory_budget(1 << 62)  # (None is the physical memory)
    yield
    nb.set_memory_budget(budget)


def test_an_allocation_the_system_refuses(no_memory_budget):
    # with no budget to refuse it first, the system's refusal of an exabyte comes back as
    # nbflow's ResourceExhaustedError (a MemoryError) naming the size, not numpy's
    with pytest.raises(errors.ResourceExhaustedError, match="cannot allocate"):
        nb.ones(2).new_ones(2**60, dtype=nb.bool_)


def test_cat_of_a_non_sequence(x):
    with pytest.raises(errors.ArgumentError, match="cat"):
        nb.cat(3)
    with pytest.raises(errors.ArgumentError, match="cat"):
        nb.cat(x)  # (PyTorch's TypeError too: a tensor is not a sequence of tensors)


def test_divide_with_a_tensor_rounding_mode(x):
    with pytest.raises(errors.AttrError, match="rounding_mode"):
        x.divide(x, rounding_mode=nb.ones(2))


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: nb.split(nb.ones(4), 1.5), errors.AttrError),
        (lambda: nb.randint(0, 3, 2.5), errors.AttrError),
        (lambda: nb.ones(2).requires_grad_(nb.ones(2)), errors.AttrError),
        (lambda: nb.reduced_axes(1, "x"), errors.AttrError),
        (lambda: nb.reduced_shape((2, 3), "x", False), errors.AttrError),
        (lambda: nb.rot90(nb.ones(2, 2), 1, 3), errors.ShapeError),
        (lambda: nb.diagonal(nb.ones(2, 2), 1j), errors.AttrError),
        (lambda: nb.broadcast_shapes(None), errors.AttrError),
        (lambda: nb.ones(2).new_full(nb.Generator(0), 1.0), errors.AttrError),
        (lambda: nb.gradient(nb.ones(4), edge_order=nb.ones(2)), errors.AttrError),
        (lambda: nb.ones(3).cauchy_([1], 2.0), errors.AttrError),
        (lambda: nb.ones(3).geometric_([0.5]), errors.AttrError),
        (lambda: nb.normal(nb.ones(2, 4, 1), nb.ones(4, 2, 1)), errors.ShapeError),
        (lambda: nb.linalg.tensorsolve(nb.ones(2, 2), nb.ones(2), np.float32(1)), errors.AttrError),
        (lambda: nb.linalg.solve_triangular(nb.eye(2), nb.ones(2, 1), upper=nb.ones(2)), None),
        (lambda: nb.lu_unpack(nb.eye(2), nb.tensor([1, 2], dtype=nb.int32), nb.ones(2)), None),
        (lambda: nb.elementwise(dtypes=("float32",), ref=None, attrs=np.ones(2)), None),
    ],
)
def test_arguments_of_the_wrong_kind(call, error):
    with pytest.raises(error or errors.NbflowError):
        call()


def test_vander_with_a_huge_n_is_refused_before_its_columns_are_made():
    with pytest.raises(errors.ResourceExhaustedError, match="linalg.vander"):
        nb.linalg.vander(nb.ones(3), N=2**40)
    assert nb.linalg.vander(nb.ones(0), N=2**40).shape == (0, 2**40)


def test_fmin_with_a_numpy_int8_array():
    # numpy's int8 is widened as every op widens it: a result, not a KeyError
    got = nb.fmin(nb.tensor([1.0, 1.0]), np.array([1, 0], np.int8))
    np.testing.assert_array_equal(got.numpy(), [1.0, 0.0])


def test_memory_format_is_checked(x):
    assert x.float(memory_format=nb.preserve_format).dtype == nb.float32
    assert nb.zeros_like(x, memory_format="contiguous_format").shape == x.shape
    with pytest.raises(errors.DomainError, match="memory_format"):
        nb.clone(x, memory_format="sideways")
