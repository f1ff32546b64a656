"""Vectorisable exp, expm1, tanh and sigmoid for scalar bodies; log, sqrt and magnitude for the
bodies that also take complex numbers.

numba calls libm for math.exp and math.tanh, one element at a time (the PyPI llvmlite has no
SVML), which made nbflow's tanh 45x slower than numpy's on float32. These versions are
branch-free arithmetic (range reduction, a polynomial, and a power of two built from bits; for
float32 tanh a rational function), so LLVM vectorises the loops that call them. Accuracy: a few
ulps in float64 and float32, checked against numpy by the tests.

Each function is generic over float32 and float64 through numba's @overload: the float32
version keeps every operation in float32 (twice the SIMD width).
"""

import cmath
import math

import numpy as np
from numba import types
from numba.extending import intrinsic, overload, register_jitable

# Polynomials by Horner's rule with each multiply-add contracted into one FMA: one rounding
# instead of two (as accurate or better) and half the instructions, which the float32 tanh of
# a fused chain is bound by. Only the polynomials: range reductions and the ops around them
# keep numpy's roundings, so eager and graph mode still agree bit for bit.
HORNER = {"fastmath": {"contract"}}

LN2_HI = 6.93147180369123816490e-01  # ln 2 split in two, so n * LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10
LOG2E = 1.4426950408889634
LN2, LN10 = math.log(2.0), math.log(10.0)


@intrinsic
def _bits_to_float64(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@intrinsic
def _bits_to_float32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return types.float32(types.int32), codegen


# expm1 on |r| <= ln2/2 by its Taylor series, degree 13 (float64) or 7 (float32): the first
# term left out is below half an ulp there.
_C64 = tuple(1.0 / math.factorial(k) for k in range(2, 14))
_C32 = tuple(np.float32(1.0 / math.factorial(k)) for k in range(2, 8))


@register_jitable(**HORNER)
def _expm1_poly64(r):
    p = _C64[11]
    for k in range(10, -1, -1):
        p = p * r + _C64[k]
    return r + r * r * p


@register_jitable(**HORNER)
def _expm1_poly32(r):
    p = _C32[5]
    for k in range(4, -1, -1):
        p = p * r + _C32[k]
    return r + r * r * p


@register_jitable
def _exp_parts64(x):
    """(expm1(r), 2**n1, 2**n2) with x = n ln2 + r, n = n1 + n2 (two factors so that
    overflow and gradual underflow come out right)."""
    x = min(max(x, -746.0), 710.0) if x == x else x
    n = np.floor(x * LOG2E + 0.5)
    r = (x - n * LN2_HI) - n * LN2_LO
    n1 = np.int64(n) >> 1
    n2 = np.int64(n) - n1
    s1 = _bits_to_float64((n1 + 1023) << 52)
    s2 = _bits_to_float64((n2 + 1023) << 52)
    return _expm1_poly64(r), s1, s2, n


@register_jitable
def _exp_parts32(x):
    lo, hi = np.float32(-104.0), np.float32(89.0)
    x = min(max(x, lo), hi) if x == x else x
    n = np.floor(x * np.float32(LOG2E) + np.float32(0.5))
    r = (x - n * np.float32(0.693359375)) - n * np.float32(-2.12194440e-4)
    n1 = np.int32(n) >> 1
    n2 = np.int32(n) - n1
    s1 = _bits_to_float32((n1 + np.int32(127)) << np.int32(23))
    s2 = _bits_to_float32((n2 + np.int32(127)) << np.int32(23))
    return _expm1_poly32(r), s1, s2, n


# The Python bodies below run only where numba does not compile (NUMBA_DISABLE_JIT, the CUDA
# simulator); compiled code uses the overloads (the CPU ones here, the GPU ones in
# cuda/skeletons.py).


def exp(x):
    """e ** x."""
    return np.exp(x)


def expm1(x):
    """e ** x - 1, accurate near 0."""
    return np.expm1(x)


def tanh(x):
    """Hyperbolic tangent (complex x too)."""
    return np.tanh(x)


def sigmoid(x):
    """1 / (1 + e ** -x), accurate in both tails."""
    e = np.exp(-np.abs(x))
    return 1 / (1 + e) if x >= 0 else e / (1 + e)


def _parts(x):
    """The range reduction and the constants 1 and 2 in x's float type (a Python int would
    promote float32 arithmetic to float64)."""
    if x == types.float32:
        return _exp_parts32, np.float32(1), np.float32(2)
    return _exp_parts64, 1.0, 2.0


@overload(exp)
def _exp(x):
    if isinstance(x, types.Complex):
        return lambda x: cmath.exp(x)
    if not isinstance(x, types.Float):
        return None
    parts, one, _ = _parts(x)

    def impl(x):
        e, s1, s2, n = parts(x)
        return (e + one) * s1 * s2

    return impl


@overload(expm1)
def _expm1(x):
    if isinstance(x, types.Complex):
        return _complex_expm1
    if not isinstance(x, types.Float):
        return None
    parts, one, _ = _parts(x)

    def impl(x):
        e, s1, s2, n = parts(x)
        # for n == 0 (|x| < ln2/2) the polynomial is expm1 itself, with no cancellation
        return e if n == 0 else ((e + one) * s1 * s2 - one)

    return impl


# float32 tanh as a rational function, odd degree 13 over even degree 6: the interpolant of
# Eigen's generic_fast_tanh_float (which XLA also uses), 1.8x as fast as through expm1 with a
# worst relative error of 3.3 eps instead of 2.7. Beyond the clamp it is 1.0 exactly.
_TANH_P32 = tuple(
    np.float32(c)
    for c in (
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    )
)
_TANH_Q32 = tuple(
    np.float32(c)
    for c in (
        1.19825839466702e-06,
        1.18534705686654e-04,
        2.26843463243900e-03,
        4.89352518554385e-03,
    )
)
_TANH_CLAMP32 = np.float32(7.90531110763549805)
_TANH_TINY32 = np.float32(0.0004)  # below it tanh(x) is x in float32


@register_jitable(**HORNER)
def _tanh32_ratio(c):
    c2 = c * c
    p = _TANH_P32[0]
    for k in range(1, 7):
        p = p * c2 + _TANH_P32[k]
    q = _TANH_Q32[0]
    for k in range(1, 4):
        q = q * c2 + _TANH_Q32[k]
    return c * p / q


@register_jitable
def _tanh32(x):
    a = abs(x)
    if a < _TANH_TINY32:
        return x
    if a >= _TANH_CLAMP32:  # (the FMA-evaluated ratio is 1 - 4 ulps at the clamp)
        return np.float32(1.0) if x > 0 else np.float32(-1.0)
    return _tanh32_ratio(x)  # (NaN comes out NaN)


@overload(tanh)
def _tanh(x):
    if isinstance(x, types.Complex):
        return lambda x: cmath.tanh(x)
    if x == types.float32:
        return _tanh32
    if not isinstance(x, types.Float):
        return None
    big = 20.0  # tanh(big) rounds to 1 in float64
    _, _, two = _parts(x)

    def impl(x):
        a = abs(x)
        a = a if not a > big else big  # NaN stays NaN
        e = expm1(a + a)
        t = e / (e + two)
        return t if x >= 0 else -t

    return impl


@overload(sigmoid)
def _sigmoid(x):
    if isinstance(x, types.Complex):
        return lambda x: 1 / (1 + cmath.exp(-x))
    if not isinstance(x, types.Float):
        return None

    _, one, _ = _parts(x)

    def impl(x):
        e = exp(-abs(x))
        r = one / (one + e)
        return r if x >= 0 else e * r

    return impl


# ---------------------------------------------------------------- complex arguments
# For the ops that also take complex tensors (nbflow's dtypes.COMPLEX): a real formula with a
# comparison does not type for complex numbers, so the body calls one of these, whose real
# version is the op's formula and whose complex one is cmath's (principal branches, as numpy's
# and PyTorch's). numba picks the version when it compiles: a real kernel runs the same code.


def _real_logarithm(name):
    """math.<name> (log, log2, log10) of a real x: -inf at 0, NaN below 0 or for NaN (where
    math's would raise)."""
    fn = getattr(math, name)

    def impl(x):
        if x > 0:
            return fn(x)
        return -math.inf if x == 0 else math.nan

    return impl


def _real_sqrt(x):
    return math.sqrt(x) if x >= 0 else math.nan


def _real_magnitude(x):
    return x if x >= 0 else -x


def _real_log1p(x):
    if x > -1:
        return math.log1p(x)
    return -math.inf if x == -1 else math.nan


def _real_rsqrt(x):
    return 1 / math.sqrt(x) if x >= 0 else math.nan


def _complex_log1p(x):
    """log(1 + x), accurate near 0 (PyTorch's formula): with x = a + bj, the modulus's log
    through log1p of a (2 + a) + b**2 while |x| < 1/2."""
    a, b = x.real, x.imag
    angle = math.atan2(b, a + 1)
    if abs(x) < 0.5:
        r = a * (2 + a) + b * b
        return make_complex(a if r == 0 else 0.5 * math.log1p(r), angle)
    return make_complex(math.log(math.hypot(a + 1, b)), angle)


def _complex_expm1(x):
    """e ** x - 1, accurate near 0 (PyTorch's formula): with x = a + bj, expm1(a) cos(b) -
    2 sin(b/2)**2 for the real part, e**a sin(b) for the imaginary."""
    a, b = x.real, x.imag
    half = math.sin(b / 2)
    return make_complex(math.expm1(a) * math.cos(b) - 2 * half * half, math.exp(a) * math.sin(b))


def _by_kind(complex_impl, real_impl):
    """An overload's typing function: complex_impl for a complex x, else real_impl."""
    return lambda x: complex_impl if isinstance(x, types.Complex) else real_impl


def _either(name, complex_fn, real_fn, doc):
    """A function of a real or complex x: complex_fn (cmath's) for a complex x, real_fn for a
    real one, in Python and, through its overload, in numba (which picks when it compiles)."""

    def fn(x):
        return complex_fn(x) if np.iscomplexobj(x) else real_fn(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    # (cmath's builtins wrapped in a Python function, which numba compiles)
    complex_impl = complex_fn if hasattr(complex_fn, "__code__") else lambda x: complex_fn(x)
    overload(fn)(_by_kind(complex_impl, real_fn))
    return fn


EXP_MAX = 709.78  # math.sinh and math.cosh overflow (and raise, in Python) beyond this


def _real_sinh(x):
    return math.sinh(x) if -EXP_MAX < x < EXP_MAX else x * math.inf


def _real_cosh(x):
    if x != x:
        return x
    return math.cosh(x) if -EXP_MAX < x < EXP_MAX else math.inf


def _real_asin(x):
    return math.asin(x) if -1 <= x <= 1 else math.nan


def _real_acos(x):
    return math.acos(x) if -1 <= x <= 1 else math.nan


def _real_acosh(x):
    return math.acosh(x) if x >= 1 else math.nan


def _real_atanh(x):
    if -1 < x < 1:
        return math.atanh(x)
    if x == 1 or x == -1:
        return x * math.inf
    return math.nan


def _real_isinf(x):
    return x == math.inf or x == -math.inf


def _real_isfinite(x):
    return -math.inf < x < math.inf  # (x - x == 0 fails for numpy bools in the simulator)


def _math(name):
    """math.<name> as a function numba's overload can return (math's own is a builtin)."""
    fn = getattr(math, name)
    return lambda x: fn(x)


log = _either("log", cmath.log, _real_logarithm("log"), "Natural log: -inf at 0, NaN below 0.")
sqrt = _either("sqrt", cmath.sqrt, _real_sqrt, "Square root: NaN below 0 (real x).")
magnitude = _either(
    "magnitude", abs, _real_magnitude, "|x|: a real number of the same precision for a complex x."
)
sin = _either("sin", cmath.sin, _math("sin"), "Sine.")
cos = _either("cos", cmath.cos, _math("cos"), "Cosine.")
tan = _either("tan", cmath.tan, _math("tan"), "Tangent.")
sinh = _either("sinh", cmath.sinh, _real_sinh, "Hyperbolic sine: +-inf past the float range.")
cosh = _either("cosh", cmath.cosh, _real_cosh, "Hyperbolic cosine: inf past the float range.")
asin = _either("asin", cmath.asin, _real_asin, "Arcsine: NaN outside [-1, 1] (real x).")
acos = _either("acos", cmath.acos, _real_acos, "Arccosine: NaN outside [-1, 1] (real x).")
atan = _either("atan", cmath.atan, _math("atan"), "Arctangent.")
asinh = _either("asinh", cmath.asinh, _math("asinh"), "Inverse hyperbolic sine.")
acosh = _either("acosh", cmath.acosh, _real_acosh, "Inverse hyperbolic cosine: NaN below 1.")
isinf = _either("isinf", cmath.isinf, _real_isinf, "Whether x is +-inf (either part).")
isfinite = _either("isfinite", cmath.isfinite, _real_isfinite, "Neither NaN nor +-inf.")
atanh = _either(
    "atanh", cmath.atanh, _real_atanh, "Inverse hyperbolic tangent: +-inf at +-1, NaN outside."
)
log1p = _either("log1p", _complex_log1p, _real_log1p, "log(1 + x), accurate near 0.")
rsqrt = _either("rsqrt", lambda x: 1 / cmath.sqrt(x), _real_rsqrt, "1 / sqrt(x): NaN below 0.")
log2 = _either("log2", lambda x: cmath.log(x) / LN2, _real_logarithm("log2"), "Base-2 logarithm.")
log10 = _either("log10", lambda x: cmath.log(x) / LN10, _real_logarithm("log10"), "Base-10 log.")
exp2 = _either("exp2", lambda x: cmath.exp(x * LN2), lambda x: 2.0**x, "2 ** x.")


def _real_sinc(x):
    if x == 0:
        return x - x + 1
    if x == math.inf or x == -math.inf:
        return math.nan  # as PyTorch and numpy (math.sin raises there)
    t = math.pi * x
    return math.sin(t) / t


def _complex_sinc(x):
    if x == 0:
        return x - x + 1
    t = math.pi * x
    return cmath.sin(t) / t


def _real_log_of_sum(x):
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else x  # (empty or all -inf; else NaN)


def _complex_log_of_sum(x):
    return cmath.log(x) if x != 0 else complex(-math.inf, 0.0)


sinc = _either("sinc", _complex_sinc, _real_sinc, "sin(pi x) / (pi x), 1 at 0; NaN at +-inf.")
log_of_sum = _either(
    "log_of_sum",
    _complex_log_of_sum,
    _real_log_of_sum,
    "The log of a sum of exponentials (logsumexp's): -inf for 0, principal for a complex sum.",
)


def make_complex(re, im):
    """The complex number re + im * 1j of two floats (of float32s: a complex64), exact for
    infinite parts too (inf * 1j would give a NaN real part)."""
    return (np.complex64 if np.float32 in (type(re), type(im)) else complex)(complex(re, im))


@overload(make_complex)
def _make_complex(re, im):
    if re == types.float32 and im == types.float32:
        return lambda re, im: np.complex64(complex(re, im))
    # (.real: the template also types a branch it never takes with a complex argument)
    return lambda re, im: complex(re.real, im.real)


def divide(x, y):
    """x / y, with numpy's complex division by zero: each part divided by 0 as a float is
    (1 + 1j) / 0 = inf + infj, 0 / 0 = nan + nanj (numba's raises ZeroDivisionError)."""
    return np.divide(x, y)


@overload(divide, jit_options={"error_model": "numpy"})
def _divide(x, y):
    if not isinstance(x, types.Complex) and not isinstance(y, types.Complex):
        return lambda x, y: x / y

    def impl(x, y):
        if y == 0:
            return complex(x.real / 0.0, x.imag / 0.0) + y * 0  # (+ y * 0: the result's type)
        return x / y

    return impl


def _real_logaddexp(x, y):
    if x != x or y != y:
        return x + y
    if x == y:  # (also two equal infinities, where x - y is NaN)
        return x + math.log(2.0)
    if x > y:
        return x + math.log1p(math.exp(y - x))
    return y + math.log1p(math.exp(x - y))


def _complex_logaddexp(x, y):
    """PyTorch's: a NaN part in either operand gives NaN + NaNj; otherwise the operand of the
    larger real part plus log1p of the other's exponential over its, so the imaginary part is
    that operand's plus an angle (not reduced to the principal branch); real parts equal and
    infinite give the operand (-inf) or the log of the sum of the exponentials (+inf)."""
    if x != x or y != y:  # (a complex number differs from itself when either part is NaN)
        return make_complex(math.nan, math.nan)
    low, high = (x, y) if x.real < y.real else (y, x)
    if low.real == high.real and (low.real == math.inf or low.real == -math.inf):
        return low if low.real < 0 else cmath.log(cmath.exp(low) + cmath.exp(high))
    return high + log1p(cmath.exp(low - high))


def logaddexp(x, y):
    """log(exp(x) + exp(y)) without overflow, of two reals or two complex numbers."""
    return (_complex_logaddexp if np.iscomplexobj(x) else _real_logaddexp)(x, y)


@overload(logaddexp)
def _logaddexp(x, y):
    return _complex_logaddexp if isinstance(x, types.Complex) else _real_logaddexp
