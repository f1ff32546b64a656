"""Wrong answers found by PyTorch's OpInfo samples (issue 39), each checked against an
independent reference: numpy, or finite differences."""

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
