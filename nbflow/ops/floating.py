"""PyTorch's elementwise functions of floating-point numbers: their parts (nextafter, frexp,
ldexp), fmax and fmin (NaN-ignoring), isposinf/isneginf/isreal, and erfc and i0 (i0 composed
from Cephes' Chebyshev series, so its gradient is the series' own derivative)."""

import math
from collections import namedtuple

import numpy as np

from ..argcheck import number, shown, tensors
from ..core import dtypes as dt
from ..core import needs_grad
from ..core.errors import ArgumentError, DTypeError
from ._define import elementwise
from .complex_parts import imag_part
from .creation import full_like
from .elementwise import (
    abs,
    astype,
    exp,
    exp2,
    isinf,
    isnan,
    logical_and,
    logical_or,
    mul,
    neg,
    sqrt,
    where,
)
from .queries import _is_value


def _floats(name, x, complex_ok=False):
    """x as a float tensor (integers and bools in the default float dtype, as PyTorch); a numpy
    array of a dtype nbflow widens (uint8, int16 ...) counts as the dtype it becomes. A
    complex x passes where `complex_ok`."""
    if not hasattr(x, "dtype"):
        raise ArgumentError(f"{name}: expected a tensor, got {shown(x)}")
    dtype = dt.widen(np.dtype(x.dtype))
    if complex_ok and dt.is_complex(dtype):
        return x
    if dtype not in dt.ALL:
        raise DTypeError(f"{name}: expected a tensor of numbers, got dtype {dtype}")
    return x if dt.is_float(dtype) else astype(x, dt.default_float())


_erfc64 = np.vectorize(math.erfc, otypes=[np.float64])  # (the reference)


@elementwise(dtypes=dt.FLOATS, ref=lambda x: _erfc64(x).astype(x.dtype), to_float=True)
def erfc(x):
    """The complementary error function 1 - erf(x), to relative precision where it is
    small (math.erfc: 1 - erf(x) in float32 is 0 from x = 3.9, erfc(5) is 1.5e-12)."""
    return math.erfc(x)


erfc.defgrad(lambda g, out, x: (g * exp(x * x * -1) * (-2 / math.sqrt(math.pi)),))


@elementwise(dtypes=(dt.float32, dt.float64), ref=np.nextafter)
def nextafter(x, y):
    """The next float after x toward y, in x's dtype (no float16: numba's CPU target would
    step in float32). PyTorch's gradient: 1 for x, 0 for y."""
    return math.nextafter(x, y)


nextafter.defgrad(lambda g, out, x, y: (g if needs_grad(x) else None, None))


def _frexp_mantissa_ref(x):
    return np.frexp(x)[0]


def _frexp_exponent_ref(x):
    return np.frexp(x)[1].astype(np.int32)


@elementwise(dtypes=dt.FLOATS, ref=_frexp_mantissa_ref)
def frexp_mantissa(x):
    """The mantissa of frexp: x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1. Its gradient
    is 2**-exponent (PyTorch's)."""
    return math.frexp(x)[0]


@elementwise(dtypes=dt.FLOATS, ref=_frexp_exponent_ref, out_dtype=dt.int32, differentiable=False)
def frexp_exponent(x):
    """The exponent of frexp (int32; 0 for 0, inf and NaN)."""
    return math.frexp(x)[1]


frexp_mantissa.defgrad(lambda g, out, x: (ldexp(g, neg(frexp_exponent(x))),))


Frexp = namedtuple("Frexp", ["mantissa", "exponent"])


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, 0.5 <= |mantissa| < 1 (0, inf
    and NaN give themselves and exponent 0), the exponent in int32. The mantissa's gradient is
    2**-exponent, as PyTorch's; the exponent has none."""
    return Frexp(frexp_mantissa(input), frexp_exponent(input))


def ldexp(input, other):
    """input * 2**other, in a float dtype (integer input gives float32, as PyTorch); a
    complex input or exponent gives a complex result."""
    x = _floats("ldexp", input, complex_ok=True)
    if _is_value(other) and dt.is_complex(other.dtype) and not dt.is_complex(x.dtype):
        x = astype(x, dt.promote([x.dtype, other.dtype]))  # (else other would lose its imag)
    scale = astype(other, x.dtype) if _is_value(other) else float(number("ldexp", "other", other))
    return mul(x, exp2(scale))


def fmax(input, other):
    """The elementwise maximum, NaN only where both are NaN (numpy's fmax). The gradient goes
    to input where input >= other (ties too) or other is NaN, else to other, as PyTorch's."""
    tensors("fmax", input=input, other=other)
    first = input >= other
    if _is_float_pair(input, other):
        first = logical_or(first, isnan(other))
    return where(first, input, other)


def fmin(input, other):
    """The elementwise minimum, NaN only where both are NaN (numpy's fmin); the gradient as
    fmax's, with input <= other."""
    tensors("fmin", input=input, other=other)
    first = input <= other
    if _is_float_pair(input, other):
        first = logical_or(first, isnan(other))
    return where(first, input, other)


def _is_float_pair(a, b):
    # (by the dtype's kind: a numpy array's int8 or complex dtype is no key of dt's tables)
    return any(_is_value(x) and np.dtype(x.dtype).kind == "f" for x in (a, b))


def isposinf(input):
    """True where input is +inf."""
    return logical_and(isinf(input), input > 0)


def isneginf(input):
    """True where input is -inf."""
    return logical_and(isinf(input), input < 0)


def isreal(input):
    """True where the imaginary part is 0: everywhere for a real tensor."""
    if np.dtype(input.dtype).kind == "c":
        return imag_part(input) == 0
    return full_like(input, 1, dtype=dt.bool_)


# Cephes' Chebyshev coefficients of exp(-x) i0(x) on [0, 8] and of exp(-x) sqrt(x) i0(x) on
# (8, inf), as numpy's i0 uses them
_I0_SMALL = (
    -4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
    1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
    -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11,
    9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
    -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
    1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
    -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
    0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
    -0.02373741480589947, 0.04930528423967071, -0.09490109704804764,
    0.17162090152220877, -0.3046826723431984, 0.6767952744094761,
)  # fmt: skip


_I0_LARGE = (
    -7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
    3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16,
    1.7725601330565263e-15, 3.8116806693526224e-15, -9.554846698828307e-15,
    -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
    7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11,
    -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
    3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
    2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
    0.8044904110141088,
)  # fmt: skip


def _chebyshev(y, coefficients):
    """Clenshaw's sum of the Chebyshev series at y (Cephes' chbevl)."""
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return (b0 - b2) * 0.5


def i0(input):
    """The modified Bessel function of the first kind of order 0 (integers give float32).
    Composed from the Chebyshev series numpy's i0 uses, so its gradient (i1) is the series'
    own derivative."""
    # summed in float64 (float32's rounding piles up over the 30 terms), returned in input's
    # float dtype
    dtype = _floats("i0", input).dtype
    x = abs(astype(input, dt.float64))
    small = x <= 8
    # each series sees only its own range (the other's input is a harmless 8), so neither
    # overflows into a NaN gradient where it is not used
    near = _chebyshev(where(small, x, 8.0) / 2 - 2, _I0_SMALL)
    far_x = where(small, 8.0, x)
    far = _chebyshev(32 / far_x - 2, _I0_LARGE) / sqrt(far_x)
    return astype(exp(x) * where(small, near, far), dtype)


__all__ = [
    "erfc",
    "nextafter",
    "frexp",
    "ldexp",
    "fmax",
    "fmin",
    "isposinf",
    "isneginf",
    "isreal",
    "i0",
]
