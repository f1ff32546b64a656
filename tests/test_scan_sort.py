"""cumsum and sort (with argsort and topk): forward against numpy per dtype (shape and dtype
first), PyTorch's NaN order and stability, gradients by finite differences and the typed
errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import Spec

DTYPES = [pytest.param(d, id=dt.SHORT[d]) for d in dt.ALL]


@st.composite
def array_and_axis(draw, dtype):
    shape = draw(nt.shapes(min_dims=0, max_dims=3))
    x = draw(nt.arrays(dtype, shape))
    axis = draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    return x, axis


def _spec(op, x, attrs):
    return op.infer([Spec(x.shape, x.dtype)], op.check_attrs(attrs))


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_cumsum_matches_numpy(dtype, data):
    x, axis = data.draw(array_and_axis(dtype))
    out = nb.cumsum(nb.from_numpy(x), axis)
    (spec,) = _spec(nb.cumsum, x, {"axis": axis})
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    wide = np.float64 if dtype.kind == "f" else np.int64
    expected = np.cumsum(x.astype(wide), axis=axis if x.ndim else None).reshape(x.shape)
    nt.assert_close(out, expected.astype(spec.dtype))


def test_cumsum_dtypes_and_errors():
    assert nb.cumsum(nb.tensor([True, True]), 0).dtype == np.int64  # as PyTorch
    assert nb.cumsum(nb.tensor(np.arange(3, dtype=np.int32)), 0).dtype == np.int64
    assert nb.cumsum(nb.ones(3, dtype="float16"), 0).dtype == np.float16
    big = np.full(10_000, 0.1, np.float32)  # float64 accumulation: no float32 drift
    assert abs(nb.cumsum(nb.tensor(big), 0).numpy()[-1] - 1000.0) < 1e-3
    with pytest.raises(nb.ShapeError, match="cumsum"):
        nb.cumsum(nb.ones(2, 3), 2)
    with pytest.raises(nb.AttrError, match="axis"):
        nb.cumsum(nb.ones(2))


@given(data=st.data())
def test_cumsum_gradients(data):
    x, axis = data.draw(array_and_axis(np.dtype(np.float64)))
    nt.gradcheck(lambda t: nb.cumsum(t, axis), [nb.tensor(x, requires_grad=True)])
    nt.gradgradcheck(lambda t: nb.cumsum(t * t, axis), [nb.tensor(x, requires_grad=True)])


def _sort_expected(x, axis, descending):
    """numpy's stable argsort; descending: the stable ascending order of the reversed axis,
    reversed (equal values keep their order, NaN first as in PyTorch)."""
    if x.ndim == 0:
        return x, np.zeros((), np.int64)
    if descending:
        n = x.shape[axis]
        idx = np.flip(n - 1 - np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        idx = np.argsort(x, axis=axis, kind="stable")
    return np.take_along_axis(x, idx, axis), idx


@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_sort_matches_numpy(dtype, data):
    x, axis = data.draw(array_and_axis(dtype))
    if dtype.kind == "f" and x.size and data.draw(st.booleans(), label="with NaN and ties"):
        x = x.copy()
        x.flat[0] = np.nan
        x.flat[-1] = x.flat[x.size // 2]
    descending = data.draw(st.booleans(), label="descending")
    values, indices = nb.sort(nb.from_numpy(x), axis, descending)
    v_spec, i_spec = _spec(nb.sort_op, x, {"axis": axis, "descending": descending})
    assert (values.shape, values.dtype) == (v_spec.shape, v_spec.dtype)
    assert (indices.shape, indices.dtype) == (i_spec.shape, np.int64)
    exp_values, exp_indices = _sort_expected(x, axis, descending)
    np.testing.assert_array_equal(indices.numpy(), exp_indices)  # stable: one right answer
    np.testing.assert_array_equal(values.numpy(), exp_values)  # (NaN equals NaN here)


def test_sort_puts_nan_last_ascending_and_first_descending():
    x = nb.tensor([2.0, np.nan, -np.inf, 2.0, np.inf])
    assert nb.sort(x).indices.tolist() == [2, 0, 3, 4, 1]
    assert nb.sort(x, descending=True).indices.tolist() == [1, 4, 0, 3, 2]
    assert x.argsort(dim=0, descending=True).tolist() == [1, 4, 0, 3, 2]


def test_topk():
    x = np.array([[1.0, 7.0, 3.0, 7.0], [np.nan, 0.0, -1.0, 2.0]], np.float32)
    values, indices = nb.topk(nb.tensor(x), 2)
    np.testing.assert_array_equal(values.numpy(), [[7.0, 7.0], [np.nan, 2.0]])
    np.testing.assert_array_equal(indices.numpy(), [[1, 3], [0, 3]])
    low = nb.tensor(x).topk(2, dim=0, largest=False)  # the whole axis, smallest first
    np.testing.assert_array_equal(low.indices.numpy(), [[0, 1, 1, 1], [1, 0, 0, 0]])
    small = nb.topk(nb.tensor(x), 1, axis=1, largest=False)
    np.testing.assert_array_equal(small.indices.numpy(), [[0], [2]])
    assert nb.topk(nb.tensor(x), 0).values.shape == (2, 0)
    with pytest.raises(nb.OutOfRangeError, match="k=5"):
        nb.topk(nb.tensor(x), 5)
    with pytest.raises(TypeError):
        nb.topk(nb.tensor(x), 1.5)


def test_sort_and_topk_gradients_go_where_the_values_came_from():
    x = nb.tensor(np.random.default_rng(0).standard_normal((3, 5)), requires_grad=True)
    nt.gradcheck(lambda t: nb.sort(t, 1).values, [x])
    nt.gradcheck(lambda t: nb.topk(t, 2, axis=0).values, [x])
    y = nb.tensor([3.0, 1.0, 2.0], requires_grad=True)
    (nb.sort(y).values * nb.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [100.0, 1.0, 10.0])


def test_sort_runs_alike_eager_and_in_graph_mode():
    x = np.random.default_rng(1).standard_normal((4, 6))
    counts = nt.check_modes(lambda t: nb.topk(t * 2, 3).values.sum(axis=1), x)
    assert counts == {"outputs": 1, "gradients": 1}


@given(data=st.data())
def test_median_is_the_lower_median(data):
    x, axis = data.draw(array_and_axis(np.dtype(np.float64)))
    if x.ndim == 0 or x.shape[axis] == 0:
        return
    if x.size == 0:  # other dims empty: an empty result of the right shape
        assert nb.median(nb.tensor(x), dim=axis).values.shape == tuple(np.delete(x.shape, axis))
        return
    if data.draw(st.booleans(), label="a NaN"):
        x = x.copy()
        x.flat[0] = np.nan
    n = x.shape[axis]
    lower = np.take(np.sort(x, axis=axis), (n - 1) // 2, axis=axis)  # NaN sorts last
    expected = np.where(np.isnan(x).any(axis=axis), np.nan, lower)
    got = nb.median(nb.tensor(x), dim=axis)
    np.testing.assert_array_equal(got.values.numpy(), expected)
    picked = np.take_along_axis(x, np.expand_dims(got.indices.numpy(), axis), axis)
    np.testing.assert_array_equal(np.squeeze(picked, axis), expected)  # the index points at it
    flat = np.sort(x.ravel())[(x.size - 1) // 2]
    np.testing.assert_array_equal(
        nb.median(nb.tensor(x)).numpy(), np.nan if np.isnan(x).any() else flat
    )


def test_median_gradient_and_errors():
    x = nb.tensor([3.0, 1.0, 2.0, 5.0], requires_grad=True)
    nb.median(x).backward()  # the lower median 2.0 came from position 2
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 1.0, 0.0])
    with pytest.raises(nb.ShapeError, match="empty"):
        nb.median(nb.ones(2, 0), dim=1)


def test_nonzero_and_unique_are_eager_only():
    x = np.array([[0, 3, 0], [4, 0, 5]])
    np.testing.assert_array_equal(nb.nonzero(nb.tensor(x)).numpy(), np.argwhere(x))
    rows, cols = nb.nonzero(nb.tensor(x), as_tuple=True)
    np.testing.assert_array_equal(x[rows.numpy(), cols.numpy()], [3, 4, 5])
    assert nb.nonzero(nb.tensor(7)).shape == (1, 0)
    values, inverse, counts = nb.unique(
        nb.tensor([3, 1, 3, 2, 3]), return_inverse=True, return_counts=True
    )
    assert values.tolist() == [1, 2, 3] and counts.tolist() == [1, 1, 3]
    assert values.numpy()[inverse.numpy()].tolist() == [3, 1, 3, 2, 3]
    with nb.program_guard(nb.Program()):
        v = nb.static.data("v", [3])
        with pytest.raises(nb.UnsupportedError, match="eager"):
            nb.nonzero(v)
        with pytest.raises(nb.UnsupportedError, match="eager"):
            nb.unique(v)
