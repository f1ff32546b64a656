"""PyTorch's integer elementwise ops: the bitwise ops and shifts, gcd and lcm, each a scalar
body (gcd and lcm loop in it), not differentiable."""

import numpy as np

from ..core import dtypes as dt
from ._define import elementwise

_BITS = dt.INTS + (dt.bool_,)


@elementwise(dtypes=_BITS, ref=np.bitwise_and, differentiable=False)
def bitwise_and(x, y):
    """x & y, bit by bit (logical and for bools)."""
    return x & y


@elementwise(dtypes=_BITS, ref=np.bitwise_or, differentiable=False)
def bitwise_or(x, y):
    """x | y, bit by bit (logical or for bools)."""
    return x | y


@elementwise(dtypes=_BITS, ref=np.bitwise_xor, differentiable=False)
def bitwise_xor(x, y):
    """x ^ y, bit by bit (logical xor for bools)."""
    return x ^ y


@elementwise(dtypes=_BITS, ref=np.invert, differentiable=False)
def bitwise_not(x):
    """~x, bit by bit (logical not for bools)."""
    return ~x


def _shift_ref(shift, past):
    """numpy's shift, with PyTorch's answer for a shift past the width or negative (numpy
    leaves it to the hardware)."""

    def ref(x, y):
        dtype = np.result_type(x, y)
        bits = 8 * dtype.itemsize
        x, y = np.asarray(x, dtype), np.asarray(y, dtype)
        out = shift(x, np.clip(y, 0, bits - 1))
        return np.where((y < 0) | (y >= bits), past(x), out).astype(dtype)

    return ref


@elementwise(
    dtypes=dt.INTS,
    ref=_shift_ref(np.left_shift, np.zeros_like),
    differentiable=False,
)
def bitwise_left_shift(x, y):
    """x shifted left by y bits (wrapping around; 0 when y is negative or past the width)."""
    if y < 0 or y >= 64:
        return x - x
    return x << y  # (numba computes int32 in int64: the store wraps it back)


@elementwise(
    dtypes=dt.INTS,
    ref=_shift_ref(np.right_shift, lambda x: np.where(x < 0, -1, 0)),
    differentiable=False,
)
def bitwise_right_shift(x, y):
    """x shifted right by y bits, the sign bit filling in (-1 or 0 when y is negative or past
    the width)."""
    if y < 0 or y >= 64:
        y = 63
    return x >> y


@elementwise(dtypes=dt.INTS, ref=np.gcd, differentiable=False)
def gcd(a, b):
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) is 0): Euclid's
    algorithm in the scalar body, one kernel for both modes."""
    a, b = (a if a >= 0 else -a), (b if b >= 0 else -b)
    while b != 0:
        a, b = b, a % b
    return a


@elementwise(dtypes=dt.INTS, ref=np.lcm, differentiable=False)
def lcm(a, b):
    """The least common multiple, elementwise (non-negative; 0 where either is 0; it wraps
    around on overflow, as PyTorch's)."""
    g, r = (a if a >= 0 else -a), (b if b >= 0 else -b)
    while r != 0:
        g, r = r, g % r
    m = a // g * b if g != 0 else g
    return m if m >= 0 else -m


__all__ = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "gcd",
    "lcm",
]
