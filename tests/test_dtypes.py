"""Promotion follows the documented (PyTorch) table; float16 is stored, computed in float32."""

import itertools

import numpy as np
import pytest

import nbflow as nb
from nbflow import dtypes as dt

B, I32, I64, F16, F32, F64 = dt.bool_, dt.int32, dt.int64, dt.float16, dt.float32, dt.float64
U8, I8, I16 = dt.uint8, dt.int8, dt.int16
# written out by hand from PyTorch's rules (the independent reference)
TABLE = {
    (B, U8): U8, (B, I8): I8, (B, I16): I16, (U8, U8): U8, (U8, I8): I16, (U8, I16): I16,
    (I8, I8): I8, (I8, I16): I16, (I16, I16): I16,
    **{(small, big): big for small in (U8, I8, I16) for big in (I32, I64, F16, F32, F64)},
    (B, B): B, (B, I32): I32, (B, I64): I64, (B, F16): F16, (B, F32): F32, (B, F64): F64,
    (I32, I32): I32, (I32, I64): I64, (I32, F16): F16, (I32, F32): F32, (I32, F64): F64,
    (I64, I64): I64, (I64, F16): F16, (I64, F32): F32, (I64, F64): F64,
    (F16, F16): F16, (F16, F32): F32, (F16, F64): F64,
    (F32, F32): F32, (F32, F64): F64, (F64, F64): F64,
}  # fmt: skip


@pytest.mark.parametrize("a,b", list(itertools.product(dt.ALL, dt.ALL)))
def test_promotion_table(a, b):
    expected = TABLE.get((a, b)) or TABLE[(b, a)]
    assert dt.promote([a, b]) == expected
    x = nb.from_numpy(np.ones(2, a))
    y = nb.from_numpy(np.ones(2, b))
    assert nb.add(x, y).dtype == expected
    assert nb.maximum(x, y).dtype == expected
    assert nb.eq(x, y).dtype == np.bool_


@pytest.mark.parametrize("d", dt.ALL)
def test_weak_scalars(d):
    x = nb.from_numpy(np.ones(2, d))
    assert nb.mul(x, True).dtype == d
    assert nb.mul(x, 2).dtype == (d if d != B else I64)
    assert nb.mul(x, 2.0).dtype == (d if dt.is_float(d) else F32)


def test_tensor_constructor_defaults():
    assert nb.tensor(1.0).dtype == F32
    assert nb.tensor([1, 2]).dtype == I64
    assert nb.tensor([True]).dtype == B
    assert nb.tensor(np.zeros(2, np.float64)).dtype == F64
    assert nb.tensor(np.zeros(2, np.uint8)).dtype == U8
    assert nb.tensor(np.zeros(2, np.uint16)).dtype == I32  # widened, documented
    assert nb.tensor([1, 2], dtype="f16").dtype == F16


def test_integer_inputs_to_float_ops():
    assert nb.exp(nb.tensor([0, 1])).dtype == F32
    assert nb.div(nb.tensor([1, 2]), nb.tensor([2, 2])).numpy().tolist() == [0.5, 1.0]


def test_float16_inputs_outside_promotion_compute_in_float32():
    # numba has no CPU float16: an input the op does not promote (where's condition, copy_'s
    # source, index_put_'s value) is computed in float32 as well
    c = np.array([0, 1, 2], np.float16)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    got = nb.where(nb.tensor(c), nb.tensor(x), nb.tensor(np.array(5.0, np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.where(c, x, 5.0))
    half = nb.where(nb.tensor(c), nb.tensor(c), nb.tensor(np.array(7, np.int64)))
    assert half.dtype == np.float16  # (a float16 tensor with an int64 one: float16)
    np.testing.assert_array_equal(half.numpy(), np.where(c, c, 7).astype(np.float16))
    t = nb.zeros(3)
    t.copy_(nb.tensor(c))
    np.testing.assert_array_equal(t.numpy(), c.astype(np.float32))
    t = nb.zeros(3, dtype="float64")
    t[1:] = nb.tensor(c[1:])
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0])
