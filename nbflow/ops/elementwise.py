"""Elementwise ops: one scalar body each, compiled for every dtype; gradients right below.

Bodies are plain Python on scalars; nbflow.kernels turns them into loops with broadcasting.
Gradient rules are `(g, out, *inputs, **attrs) -> one gradient per input` written with nbflow
ops; the backward driver sums them back to broadcast shapes and casts them.
"""

import builtins
import math
import warnings

import numpy as np

from ..argcheck import choice, integer, real
from ..core import Attr, Op, Spec, broadcast_shapes, needs_grad
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DomainError, ShapeError
from ..kernels.cpu import vecmath
from ._define import elementwise, inplace_variant
from .complex_math import cast_dtype, complex_sgn, conj
from .creation import check_memory_format, zeros_like

ALL, NUMERIC, FLOATS, COMPLEX = dt.ALL, dt.NUMERIC, dt.FLOATS, dt.COMPLEX
SQRT_HALF = 0.7071067811865476
INV_SQRT_2PI = 0.3989422804014327
_erf64 = np.vectorize(math.erf, otypes=[np.float64])  # reference only (no scipy dependency)

# ---------------------------------------------------------------- PyTorch's call forms
# Ops whose PyTorch signature has more than the kernel: those call forms are compositions of
# ops (so gradients and graph mode come with them); the plain call is the op itself.


class _Div(Op):
    """div, which also takes PyTorch's rounding_mode= (None, "trunc", "floor"): divide()."""

    def __call__(self, *args, **attrs):
        if "rounding_mode" in attrs:
            return divide(*args, **attrs)
        return Op.__call__(self, *args, **attrs)


class _Round(Op):
    """round, which also takes PyTorch's decimals= (round_decimals())."""

    def __call__(self, *args, **attrs):
        if "decimals" in attrs:
            return round_decimals(*args, **attrs)
        return Op.__call__(self, *args, **attrs)


class _Clip(Op):
    """clip (clamp), which also takes PyTorch's tensor bounds (clamp_tensors())."""

    def __call__(self, *args, **attrs):
        bounds = dict(zip(("min", "max"), args[1:3]))
        bounds.update((k, v) for k, v in attrs.items() if k in ("min", "max"))
        if not any(_is_tensor(v) for v in bounds.values()):
            return Op.__call__(self, *args, **attrs)
        if len(args) > 3 or not args or set(attrs) - {"min", "max"}:
            raise ArgumentError(f"{self.name}(x, min, max) takes a tensor and its two bounds")
        return clamp_tensors(args[0], bounds.get("min"), bounds.get("max"))


# ---------------------------------------------------------------- arithmetic


@elementwise(dtypes=ALL + COMPLEX, ref=np.add)
def add(x, y):
    """x + y (for bools: logical or)."""
    return x + y


add.defgrad(lambda g, out, x, y: (g, g))


@elementwise(dtypes=NUMERIC + COMPLEX, ref=np.subtract)
def sub(x, y):
    """x - y."""
    return x - y


sub.defgrad(lambda g, out, x, y: (g, neg(g)))


@elementwise(dtypes=ALL + COMPLEX, ref=np.multiply)
def mul(x, y):
    """x * y (for bools: logical and)."""
    return x * y


def _mul_grad(g, out, x, y):
    # each product only when wanted: x * w with x a batch of data needs w's gradient alone
    gx, gy = (conj(y), conj(x)) if out.dtype.kind == "c" else (y, x)  # (real: one test)
    return (g * gx if needs_grad(x) else None, g * gy if needs_grad(y) else None)


mul.defgrad(_mul_grad)


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.true_divide, to_float=True, cls=_Div)
def div(x, y):
    """True division; integer inputs give float32 (complex division by 0: numpy's)."""
    return vecmath.divide(x, y)


def _div_grad(g, out, x, y):
    wants = needs_grad(x), needs_grad(y)
    out, y = (conj(out), conj(y)) if out.dtype.kind == "c" else (out, y)  # (real: one test)
    return (g / y if wants[0] else None, neg(g) * out / y if wants[1] else None)


div.defgrad(_div_grad)


@elementwise(dtypes=NUMERIC, ref=np.floor_divide)
def floor_div(x, y):
    """Division rounded toward minus infinity (Python's //)."""
    return x // y


@elementwise(dtypes=NUMERIC, ref=np.mod)
def mod(x, y):
    """Remainder with the sign of the divisor (Python's %, numpy's mod)."""
    return x % y


mod.defgrad(lambda g, out, x, y: (g, neg(g) * floor_div(x, y)))


def _check_integer_power(x, y):
    if y.dtype.kind in "iu" and np.any(y < 0):
        raise DomainError("integers to negative integer powers are not allowed (as numpy)")


@elementwise(dtypes=NUMERIC + COMPLEX, ref=np.power, check=_check_integer_power)
def pow(x, y):
    """x ** y (complex: the principal branch)."""
    return x**y


def _pow_grad(g, out, x, y):
    # d/dy x**y = x**y log x; where x <= 0 (complex: x = 0) the log is undefined and PyTorch
    # uses 0; conj: the complex convention (no op for real tensors)
    gx = g * conj(y * pow(x, y - 1)) if needs_grad(x) else None
    gy = None
    if needs_grad(y):
        if dt.is_complex(out.dtype):
            gy = where(x == 0, 0, g * conj(out * log(where(x == 0, 1, x))))
        else:
            gy = g * out * log(where(x > 0, x, 1))
    return gx, gy


pow.defgrad(_pow_grad)


@elementwise(dtypes=NUMERIC + COMPLEX, ref=np.negative)
def neg(x):
    """-x."""
    return -x


neg.defgrad(lambda g, out, x: (neg(g),))


@elementwise(dtypes=NUMERIC + COMPLEX, ref=np.abs, real_out=True)
def abs(x):
    """|x| (a complex tensor's magnitude, in the real dtype of its precision)."""
    return vecmath.magnitude(x)


abs.defgrad(lambda g, out, x: (g * (complex_sgn(x) if dt.is_complex(x.dtype) else sign(x)),))


@elementwise(dtypes=NUMERIC, ref=np.sign)
def sign(x):
    """-1, 0 or 1 (NaN stays NaN)."""
    if x > 0:
        return 1
    if x < 0:
        return -1
    return x - x  # 0, or NaN for NaN


# ---------------------------------------------------------------- rounding
# Floats of this magnitude (and infinities, NaN) have no fraction: returned as they are, which
# also keeps math.floor's integer result in range.
_INTEGRAL = 4503599627370496.0  # 2 ** 52


@elementwise(dtypes=NUMERIC, ref=np.floor)
def floor(x):
    """The largest integer <= x (integers unchanged)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    return math.floor(x)


@elementwise(dtypes=NUMERIC, ref=np.ceil)
def ceil(x):
    """The smallest integer >= x (integers unchanged)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    return math.ceil(x)


@elementwise(dtypes=NUMERIC, ref=np.trunc)
def trunc(x):
    """x rounded toward zero (integers unchanged)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    return math.floor(x) if x >= 0 else math.ceil(x)


@elementwise(dtypes=NUMERIC, ref=np.round, cls=_Round)
def round(x):
    """x rounded to the nearest integer, halves to even (numpy's and PyTorch's round)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    f = math.floor(x)
    d = x - f  # exact: no rounding error decides a tie
    if d > 0.5 or (d == 0.5 and f % 2 != 0):
        return f + 1
    return f


def _zero_grads(g, out, *inputs):
    """The gradient of a function constant between its jumps (rounding, sign, x // y): zero,
    as PyTorch's and JAX's, so that a loss reached only through one still differentiates."""
    return tuple(zeros_like(g) if needs_grad(a) else None for a in inputs)


for _op in (floor_div, sign, floor, ceil, trunc, round):
    _op.defgrad(_zero_grads)


@elementwise(dtypes=NUMERIC + COMPLEX, ref=np.square)
def square(x):
    """x * x."""
    return x * x


square.defgrad(lambda g, out, x: (g * conj(x * 2),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.reciprocal, to_float=True)
def reciprocal(x):
    """1 / x (inf at 0, as in PyTorch)."""
    return 1 / x


reciprocal.defgrad(lambda g, out, x: (neg(g) * conj(out * out),))


@elementwise(dtypes=NUMERIC, ref=np.fmod)
def fmod(x, y):
    """Remainder of x / y rounded toward zero: the sign of the dividend (C's fmod)."""
    a = x if x >= 0 else -x
    b = y if y >= 0 else -y
    r = a % b  # exact for positive operands
    return -r if x < 0 else r


fmod.defgrad(lambda g, out, x, y: (g, neg(g) * trunc(x / y)))
remainder = mod  # PyTorch's name for the remainder with the divisor's sign


@elementwise(dtypes=FLOATS, ref=np.hypot, to_float=True)
def hypot(x, y):
    """sqrt(x * x + y * y) without overflow."""
    return math.hypot(x, y)


hypot.defgrad(lambda g, out, x, y: (g * x / out, g * y / out))


@elementwise(dtypes=FLOATS, ref=np.copysign, to_float=True)
def copysign(x, y):
    """|x| with the sign of y (also of -0.0 and of a NaN)."""
    return math.copysign(x, y)


def _copysign_grad(g, out, x, y):
    # d|x|/dx times the sign applied; 0 at x == 0, as PyTorch; y gets none (zero)
    return g * sign(x) * sign(out), None


copysign.defgrad(_copysign_grad)


def _heaviside_ref(x, values):
    return np.where(x == 0, values, x > 0).astype(np.result_type(x, values))


@elementwise(dtypes=NUMERIC, ref=_heaviside_ref, differentiable=False)
def heaviside(x, values):
    """0 where x < 0, `values` where x == 0, 1 where x > 0 (NaN gives 0, as PyTorch)."""
    if x == 0:
        return values
    return 1 if x > 0 else 0


@elementwise(dtypes=FLOATS, ref=lambda x: x - np.trunc(x))
def frac(x):
    """x minus x rounded toward zero (the fraction, with x's sign)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x - x  # 0 for big values (no fraction), NaN for infinities and NaN
    return x - (math.floor(x) if x >= 0 else math.ceil(x))


frac.defgrad(lambda g, out, x: (g,))


@elementwise(dtypes=NUMERIC, ref=np.signbit, out_dtype=dt.bool_, differentiable=False)
def signbit(x):
    """True where the sign bit is set: x < 0, also -0.0 and negative NaNs."""
    if x < 0:
        return True
    if x > 0:
        return False
    return math.copysign(1.0, x) < 0


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


@elementwise(
    dtypes=NUMERIC,
    ref=_nan_to_num_ref,
    attrs={
        "nan": Attr("float", 0.0),
        "posinf": Attr("float"),
        "neginf": Attr("float"),
    },
)
def nan_to_num(x, nan, posinf, neginf):
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (the public nan_to_num
    fills in the dtype's largest and smallest finite values when those are None)."""
    if x != x:
        return nan
    if x == math.inf:
        return posinf
    if x == -math.inf:
        return neginf
    return x


nan_to_num.defgrad(lambda g, out, x, nan, posinf, neginf: (where(isfinite(x), g, 0),))
nan_to_num_op = nan_to_num


# ---------------------------------------------------------------- transcendental


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.exp, to_float=True)
def exp(x):
    """e ** x."""
    return vecmath.exp(x)


exp.defgrad(lambda g, out, x: (g * conj(out),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.log, to_float=True)
def log(x):
    """Natural logarithm (-inf at 0, NaN below; complex: the principal branch)."""
    return vecmath.log(x)


log.defgrad(lambda g, out, x: (g / conj(x),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.log1p, to_float=True)
def log1p(x):
    """log(1 + x), accurate for small x (complex x too)."""
    return vecmath.log1p(x)


log1p.defgrad(lambda g, out, x: (g / conj(x + 1),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.expm1, to_float=True)
def expm1(x):
    """exp(x) - 1, accurate for small x (complex x too)."""
    return vecmath.expm1(x)


expm1.defgrad(lambda g, out, x: (g * conj(out + 1),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.sqrt, to_float=True)
def sqrt(x):
    """Square root (NaN for negative x; complex: the principal root)."""
    return vecmath.sqrt(x)


sqrt.defgrad(lambda g, out, x: (g / conj(out * 2),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=lambda x: 1 / np.sqrt(x), to_float=True)
def rsqrt(x):
    """1 / sqrt(x) (NaN below 0; complex: of the principal root)."""
    return vecmath.rsqrt(x)


rsqrt.defgrad(lambda g, out, x: (g * conj(out * out * out * -0.5),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.sin, to_float=True)
def sin(x):
    """Sine."""
    return vecmath.sin(x)


sin.defgrad(lambda g, out, x: (g * conj(cos(x)),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.cos, to_float=True)
def cos(x):
    """Cosine."""
    return vecmath.cos(x)


cos.defgrad(lambda g, out, x: (neg(g) * conj(sin(x)),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.tan, to_float=True)
def tan(x):
    """Tangent."""
    return vecmath.tan(x)


tan.defgrad(lambda g, out, x: (g * conj(1 + out * out),))


def _conj_rsqrt(x):
    """conj(1 / sqrt(x)) (the inverse functions' derivatives; rsqrt for real x)."""
    return rsqrt(x) if not dt.is_complex(x.dtype) else conj(reciprocal(sqrt(x)))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.arcsin, to_float=True)
def asin(x):
    """Arcsine (NaN outside [-1, 1]; complex: the principal branch)."""
    return vecmath.asin(x)


asin.defgrad(lambda g, out, x: (g * _conj_rsqrt(1 - x * x),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.arccos, to_float=True)
def acos(x):
    """Arccosine (NaN outside [-1, 1]; complex: the principal branch)."""
    return vecmath.acos(x)


acos.defgrad(lambda g, out, x: (neg(g) * _conj_rsqrt(1 - x * x),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.arctan, to_float=True)
def atan(x):
    """Arctangent."""
    return vecmath.atan(x)


atan.defgrad(lambda g, out, x: (g / conj(1 + x * x),))


@elementwise(dtypes=FLOATS, ref=np.arctan2, to_float=True)
def atan2(y, x):
    """The angle of the point (x, y), in [-pi, pi] (numpy's arctan2, PyTorch's atan2)."""
    return math.atan2(y, x)


@atan2.defgrad
def _atan2_grad(g, out, y, x):
    r2 = x * x + y * y
    return g * x / r2, neg(g) * y / r2


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.log2, to_float=True)
def log2(x):
    """Base-2 logarithm (-inf at 0, NaN below; complex: the principal branch)."""
    return vecmath.log2(x)


log2.defgrad(lambda g, out, x: (g / conj(x * math.log(2.0)),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.log10, to_float=True)
def log10(x):
    """Base-10 logarithm (-inf at 0, NaN below; complex: the principal branch)."""
    return vecmath.log10(x)


log10.defgrad(lambda g, out, x: (g / conj(x * math.log(10.0)),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.tanh, to_float=True)
def tanh(x):
    """Hyperbolic tangent."""
    return vecmath.tanh(x)


tanh.defgrad(lambda g, out, x: (g * conj(1 - out * out),))


@elementwise(dtypes=FLOATS, ref=lambda x: _erf64(x).astype(x.dtype), to_float=True)
def erf(x):
    """The error function."""
    return math.erf(x)


erf.defgrad(lambda g, out, x: (g * exp(x * x * -1) * (2 / math.sqrt(math.pi)),))


# ---------------------------------------------------------------- hyperbolic


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.sinh, to_float=True)
def sinh(x):
    """Hyperbolic sine."""
    return vecmath.sinh(x)


sinh.defgrad(lambda g, out, x: (g * conj(cosh(x)),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.cosh, to_float=True)
def cosh(x):
    """Hyperbolic cosine."""
    return vecmath.cosh(x)


cosh.defgrad(lambda g, out, x: (g * conj(sinh(x)),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.arcsinh, to_float=True)
def asinh(x):
    """Inverse hyperbolic sine."""
    return vecmath.asinh(x)


asinh.defgrad(lambda g, out, x: (g * _conj_rsqrt(x * x + 1),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.arccosh, to_float=True)
def acosh(x):
    """Inverse hyperbolic cosine (NaN below 1; complex: the principal branch)."""
    return vecmath.acosh(x)


# (the principal branch's 1 / (sqrt(z - 1) sqrt(z + 1)): sqrt(z * z - 1) may differ in sign)
acosh.defgrad(lambda g, out, x: (g * _conj_rsqrt(x - 1) * _conj_rsqrt(x + 1),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.arctanh, to_float=True)
def atanh(x):
    """Inverse hyperbolic tangent (+-inf at +-1, NaN outside [-1, 1] for real x)."""
    return vecmath.atanh(x)


atanh.defgrad(lambda g, out, x: (g / conj(1 - x * x),))


# ---------------------------------------------------------------- exponentials and logs


@elementwise(dtypes=FLOATS + COMPLEX, ref=np.exp2, to_float=True)
def exp2(x):
    """2 ** x."""
    return vecmath.exp2(x)


exp2.defgrad(lambda g, out, x: (g * conj(out * math.log(2.0)),))


def _logit_ref(x, eps=None):
    x64 = x.astype(np.float64)
    if eps is not None:
        x64 = np.clip(x64, eps, 1 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x64 / (1 - x64)).astype(x.dtype)


@elementwise(
    dtypes=FLOATS,
    ref=_logit_ref,
    to_float=True,
    attrs={"eps": Attr("float", None, optional=True)},
)
def logit(x, eps):
    """log(x / (1 - x)); with eps, x is first clamped into [eps, 1 - eps] (PyTorch's)."""
    if eps is not None:
        x = eps if x < eps else (1 - eps if x > 1 - eps else x)
    if 0 < x < 1:
        return math.log(x / (1 - x))
    if x == 0:
        return -math.inf
    if x == 1:
        return math.inf
    return math.nan


def _logit_grad(g, out, x, eps):
    grad = g / (x * (1 - x))
    if eps is None:
        return (grad,)
    return (where(logical_and(x >= eps, x <= 1 - eps), grad, 0),)  # 0 where clamped (PyTorch)


logit.defgrad(_logit_grad)


def _xlogy_ref(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(x == 0, 0, x * np.log(y))
    return np.where(np.isnan(y), np.nan, out).astype(np.result_type(x, y))


@elementwise(dtypes=FLOATS, ref=_xlogy_ref, to_float=True)
def xlogy(x, y):
    """x * log(y), 0 where x == 0 (unless y is NaN), as PyTorch's xlogy."""
    if y != y:
        return y
    if x == 0:
        return x - x
    if y > 0:
        return x * math.log(y)
    return x * -math.inf if y == 0 else math.nan


def _xlogy_grad(g, out, x, y):
    gx = where(logical_and(x == 0, y <= 0), 0, g * log(y)) if needs_grad(x) else None
    return gx, (g * x / y if needs_grad(y) else None)


xlogy.defgrad(_xlogy_grad)


def _logaddexp_ref(x, y):
    if not (np.iscomplexobj(x) or np.iscomplexobj(y)):
        return np.logaddexp(x, y)
    # PyTorch's complex formula (numpy has none): the operand of the larger real part plus
    # log1p of the exponential of the difference (finite values: no NaN or infinity rules)
    d = np.result_type(x, y)
    x, y = np.broadcast_arrays(x.astype(np.complex128), y.astype(np.complex128))
    high = np.where(x.real < y.real, y, x)
    low = np.where(x.real < y.real, x, y)
    return (high + np.log1p(np.exp(low - high))).astype(d)


@elementwise(dtypes=FLOATS + COMPLEX, ref=_logaddexp_ref, to_float=True)
def logaddexp(x, y):
    """log(exp(x) + exp(y)) without overflow (complex: PyTorch's formula, whose imaginary
    part is not reduced to the principal branch)."""
    return vecmath.logaddexp(x, y)


logaddexp.defgrad(lambda g, out, x, y: (g * conj(sigmoid(x - y)), g * conj(sigmoid(y - x))))


@elementwise(dtypes=FLOATS, ref=np.logaddexp2, to_float=True)
def logaddexp2(x, y):
    """log2(2 ** x + 2 ** y) without overflow."""
    if x != x or y != y:
        return x + y
    if x == y:
        return x + 1
    if x > y:
        return x + math.log1p(2.0 ** (y - x)) / math.log(2.0)
    return y + math.log1p(2.0 ** (x - y)) / math.log(2.0)


logaddexp2.defgrad(
    lambda g, out, x, y: (
        g * sigmoid((x - y) * math.log(2.0)),
        g * sigmoid((y - x) * math.log(2.0)),
    )
)


# ---------------------------------------------------------------- special functions


def _erfinv_ref(y):
    """By bisection on math.erf in float64 (independent of the kernel's method)."""
    y64 = y.astype(np.float64)
    lo, hi = np.full(y64.shape, -6.0), np.full(y64.shape, 6.0)
    for _ in range(64):
        mid = (lo + hi) / 2
        below = _erf64(mid) < y64
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    edge = np.where(np.abs(y64) == 1, np.copysign(np.inf, y64), np.nan)
    return np.where(np.abs(y64) < 1, (lo + hi) / 2, edge).astype(y.dtype)


@elementwise(dtypes=FLOATS, ref=_erfinv_ref, to_float=True)
def erfinv(y):
    """The inverse error function (+-inf at +-1, NaN outside [-1, 1]).

    Giles' single-precision approximation, then two Newton steps on erf."""
    if not -1 < y < 1:
        return y * math.inf if (y == 1 or y == -1) else math.nan
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5:
        w = w - 2.5
        p = 2.81022636e-08
        for c in _ERFINV_CENTRE:
            p = c + p * w
    else:
        w = math.sqrt(w) - 3
        p = -0.000200214257
        for c in _ERFINV_TAIL:
            p = c + p * w
    x = p * y
    for _ in range(2):  # each squares the relative error
        x = x - (math.erf(x) - y) / (1.1283791670955126 * math.exp(-x * x))
    return x


_ERFINV_CENTRE = (
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV_TAIL = (
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)

erfinv.defgrad(lambda g, out, y: (g * exp(out * out) * (math.sqrt(math.pi) / 2),))


@elementwise(dtypes=FLOATS + COMPLEX, ref=lambda x: np.sinc(x).astype(x.dtype), to_float=True)
def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (the normalised sinc, as PyTorch and numpy)."""
    return vecmath.sinc(x)


def _sinc_grad(g, out, x):
    safe = where(x == 0, 1, x)  # (no 0 / 0 in the branch where doesn't take)
    return (where(x == 0, 0, g * conj((cos(safe * math.pi) - out) / safe)),)


sinc.defgrad(_sinc_grad)


@elementwise(dtypes=FLOATS, ref=np.deg2rad, to_float=True)
def deg2rad(x):
    """Degrees to radians."""
    return x * (math.pi / 180)


deg2rad.defgrad(lambda g, out, x: (g * (math.pi / 180),))


@elementwise(dtypes=FLOATS, ref=np.rad2deg, to_float=True)
def rad2deg(x):
    """Radians to degrees."""
    return x * (180 / math.pi)


rad2deg.defgrad(lambda g, out, x: (g * (180 / math.pi),))


# ---------------------------------------------------------------- sigmoid
# (the other activations: activations.py)


def _sigmoid_ref(x):
    wide = np.complex128 if dt.is_complex(x.dtype) else np.float64
    return (1 / (1 + np.exp(-x.astype(wide)))).astype(x.dtype)


@elementwise(dtypes=FLOATS + COMPLEX, ref=_sigmoid_ref, to_float=True)
def sigmoid(x):
    """1 / (1 + exp(-x)), stable for large |x| (real x)."""
    return vecmath.sigmoid(x)


sigmoid.defgrad(lambda g, out, x: (g * conj(out * (1 - out)),))


# ---------------------------------------------------------------- min, max, clip, where


@elementwise(dtypes=NUMERIC + (dt.bool_,), ref=np.maximum)
def maximum(x, y):
    """Elementwise max; NaN if either is NaN."""
    if x != x:
        return x
    if y != y:
        return y
    return x if x >= y else y


@elementwise(dtypes=NUMERIC + (dt.bool_,), ref=np.minimum)
def minimum(x, y):
    """Elementwise min; NaN if either is NaN."""
    if x != x:
        return x
    if y != y:
        return y
    return x if x <= y else y


def _minmax_grad(g, out, x, y):
    # ties share the gradient equally, as in PyTorch
    gx = where(x == out, g, 0)
    gy = where(y == out, g, 0)
    tie = x == y
    return where(tie, gx * 0.5, gx), where(tie, gy * 0.5, gy)


maximum.defgrad(_minmax_grad)
minimum.defgrad(_minmax_grad)


def _clip_ref(x, min=None, max=None):
    if min is not None:
        x = np.maximum(x, np.asarray(min).astype(x.dtype))
    if max is not None:
        x = np.minimum(x, np.asarray(max).astype(x.dtype))
    return x


@elementwise(
    dtypes=NUMERIC,
    ref=_clip_ref,
    attrs={"min": Attr("value", None, optional=True), "max": Attr("value", None, optional=True)},
    cls=_Clip,
)
def clip(x, min, max):
    """Clamp into [min, max] (either may be None); min > max gives max, as in PyTorch."""
    r = x
    if min is not None and r < min:
        r = min
    if max is not None and r > max:
        r = max
    return r


def _clip_grad(g, out, x, min, max):
    inside = x == x  # all True (same shape as x)
    if min is not None:
        inside = logical_and(inside, x >= min)
    if max is not None:
        inside = logical_and(inside, x <= max)
    return (where(inside, g, 0),)


clip.defgrad(_clip_grad)


def _hardtanh_ref(x, min_val=-1.0, max_val=1.0):
    return _clip_ref(x, min_val, max_val)


_BOUNDS = {"min_val": Attr("value", -1.0), "max_val": Attr("value", 1.0)}


@elementwise(dtypes=NUMERIC, ref=_hardtanh_ref, attrs=_BOUNDS)
def hardtanh(x, min_val, max_val):
    """x clamped into [min_val, max_val], as clip; the gradient passes strictly inside the
    bounds only (PyTorch's hardtanh, relu6, hardsigmoid and hardswish), where clip's includes
    them."""
    r = x
    if r < min_val:
        r = min_val
    if r > max_val:
        r = max_val
    return r


hardtanh.defgrad(
    lambda g, out, x, min_val, max_val: (hardtanh_grad(x, g, min_val=min_val, max_val=max_val),)
)


def _hardtanh_grad_ref(x, g, min_val=-1.0, max_val=1.0):
    return np.where((x > min_val) & (x < max_val), g, 0).astype(np.result_type(x, g))


@elementwise(dtypes=NUMERIC, ref=_hardtanh_grad_ref, attrs=_BOUNDS)
def hardtanh_grad(x, g, min_val, max_val):
    """g where min_val < x < max_val, else 0: hardtanh's gradient in one pass."""
    return g if x > min_val and x < max_val else g - g


hardtanh_grad.defgrad(
    lambda gg, out, x, g, min_val, max_val: (
        None,
        hardtanh_grad(x, gg, min_val=min_val, max_val=max_val),
    )
)


@elementwise(dtypes=ALL + COMPLEX, ref=np.where, promote=(1, 2))
def where(cond, x, y):
    """x where cond is true, else y (cond is cast to bool)."""
    return x if cond != 0 else y  # (a float16 `if cond` is invalid IR for numba-cuda's NVVM)


where.defgrad(lambda g, out, cond, x, y: (None, where(cond, g, 0), where(cond, 0, g)))


# ---------------------------------------------------------------- comparisons and logic


def _compare(ref, dtypes=ALL):
    return elementwise(dtypes=dtypes, ref=ref, out_dtype=dt.bool_, differentiable=False)


@_compare(np.equal, ALL + COMPLEX)
def eq(x, y):
    """x == y."""
    return x == y


@_compare(np.not_equal, ALL + COMPLEX)
def ne(x, y):
    """x != y."""
    return x != y


@_compare(np.less)
def lt(x, y):
    """x < y."""
    return x < y


@_compare(np.less_equal)
def le(x, y):
    """x <= y."""
    return x <= y


@_compare(np.greater)
def gt(x, y):
    """x > y."""
    return x > y


@_compare(np.greater_equal)
def ge(x, y):
    """x >= y."""
    return x >= y


@_compare(np.logical_and, ALL + COMPLEX)
def logical_and(x, y):
    """Truth of x and y."""
    return x != 0 and y != 0


@_compare(np.logical_or, ALL + COMPLEX)
def logical_or(x, y):
    """Truth of x or y."""
    return x != 0 or y != 0


@_compare(np.logical_xor, ALL + COMPLEX)
def logical_xor(x, y):
    """Truth of x xor y."""
    return (x != 0) != (y != 0)


@_compare(np.logical_not, ALL + COMPLEX)
def logical_not(x):
    """Truth of not x."""
    return x == 0


@_compare(np.isnan, ALL + COMPLEX)
def isnan(x):
    """True where x is NaN (a complex x: either part)."""
    return x != x


@_compare(np.isinf, ALL + COMPLEX)
def isinf(x):
    """True where x is +-inf (a complex x: either part)."""
    return vecmath.isinf(x)


@_compare(np.isfinite, ALL + COMPLEX)
def isfinite(x):
    """True where x is neither NaN nor +-inf (a complex x: both parts)."""
    return vecmath.isfinite(x)


# ---------------------------------------------------------------- cast


def _cast_ref(x, dtype):
    return x.astype(dtype)


@elementwise(
    dtypes=ALL + COMPLEX, ref=_cast_ref, attrs={"dtype": Attr("dtype")}, out_dtype=cast_dtype
)
def cast(x):
    """Convert to `dtype` (float to int truncates toward zero)."""
    return x


def _cast_grad(g, out, x, dtype):
    return (g,) if dt.differentiable(x.dtype) else (None,)


cast.defgrad(_cast_grad)


def clone(x, *, memory_format=None):
    """A copy of x that gradients flow through (memory_format= is PyTorch's: checked, and every
    format gives the same copy, see creation.check_memory_format)."""
    check_memory_format("clone", memory_format)
    return cast(x, dtype=x.dtype)


def astype(x, dtype):
    """cast(x, dtype=dtype), with the dtype positional as in numpy; a complex x to bool is
    x != 0, and to another real dtype its real part, with PyTorch's (and numpy's) warning."""
    target = dt.as_dtype(dtype)
    if dt.is_complex(x.dtype) and target == dt.bool_:
        return ne(x, 0)
    if dt.is_complex(x.dtype) and not dt.is_complex(target):
        from .complex_parts import real_part  # (complex_parts imports this module)

        warnings.warn(
            f"casting a {x.dtype} tensor to {target} discards the imaginary part", stacklevel=2
        )
        return cast(real_part(x), dtype=target)
    return cast(x, dtype=target)


def _copy_spec(x, src):
    shape = broadcast_shapes(x.shape, src.shape)
    if len(src.shape) > len(x.shape) or (shape != tuple(x.shape) and -1 not in x.shape):
        raise ShapeError(f"src of shape {src.shape} does not broadcast to the target's {x.shape}")
    return Spec(x.shape, x.dtype)


copy_ = Op(
    name="copy_",
    inputs=("x", "src"),
    outputs=("out",),
    spec=_copy_spec,
    kernels={"cpu": lambda x, src, out: np.copyto(out, src, casting="unsafe"), "cuda": None},
    dtypes=ALL + COMPLEX,
    ref=lambda x, src: np.broadcast_to(src, x.shape).astype(x.dtype),
    grad=lambda g, out, x, src: (None, g),
    inplace={0: 0},
    promote=(),
    doc="Copy src (broadcast, cast to x's dtype) into x in place.",
)


def _add_n_spec(*xs):
    if not xs:
        raise ShapeError("add_n needs at least one input")
    return Spec(broadcast_shapes(*(s.shape for s in xs)), add.key_dtype(xs))


def _add_n_cpu(*arrays):
    *xs, out = arrays
    add_kernel = add.kernels["cpu"]
    add_kernel(xs[0], xs[1] if len(xs) > 1 else np.zeros((), out.dtype), out)
    for x in xs[2:]:
        add_kernel(out, x, out)


add_n = Op(
    name="add_n",
    inputs=("*xs",),
    outputs=("out",),
    spec=_add_n_spec,
    kernels={"cpu": _add_n_cpu, "cuda": None},
    dtypes=ALL + COMPLEX,
    ref=lambda *xs: np.sum(np.broadcast_arrays(*xs), axis=0).astype(np.result_type(*xs)),
    doc="The sum of any number of tensors (broadcast); the backward pass accumulates with it.",
)
add_n.defgrad(lambda g, out, *xs: (g,) * len(xs))

# ---------------------------------------------------------------- in-place variants

add_ = inplace_variant(add, "add_")
sub_ = inplace_variant(sub, "sub_")
mul_ = inplace_variant(mul, "mul_", saves_target=True)  # d/dy needs the old x
div_ = inplace_variant(div, "div_")
clip_ = inplace_variant(clip, "clip_", saves_target=True)
clamp, clamp_ = clip, clip_  # PyTorch's names

# ---------------------------------------------------------------- composed


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol |b| elementwise (numpy's and PyTorch's rule; equal infinities
    are close; NaN only with equal_nan)."""
    within = le(abs(sub(a, b)), add(atol, mul(rtol, abs(b))))
    finite = logical_and(isfinite(a), isfinite(b))  # (inf and -inf are not close)
    close = logical_or(logical_and(finite, within), eq(a, b))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


def lerp(start, end, weight):
    """start + weight * (end - start)."""
    return add(start, mul(weight, sub(end, start)))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf`; posinf and neginf
    default to the dtype's largest and smallest finite values (PyTorch's nan_to_num)."""
    if dt.is_float(x.dtype):
        info = np.finfo(x.dtype)
        posinf = float(info.max) if posinf is None else posinf
        neginf = float(info.min) if neginf is None else neginf
    else:  # integers have no NaN or infinities: the values are never used
        bounds = (posinf, neginf)
        posinf, neginf = (0 if v is None else real(v, "nan_to_num: a bound") for v in bounds)
    return nan_to_num_op(x, nan=nan, posinf=posinf, neginf=neginf)


def _widened(v, dtype):
    """A number or tensor of float_power's as `dtype` (float64 or complex128)."""
    if isinstance(v, (int, float, complex, np.number)):
        return complex(v) if dtype.kind == "c" else float(v)
    return cast(v, dtype=dtype)


def float_power(x, y):
    """x ** y computed and returned in float64, or in complex128 where either is complex
    (PyTorch's float_power)."""
    kinds = {np.dtype(getattr(v, "dtype", type(v))).kind for v in (x, y)}  # (a number's type)
    dtype = dt.complex128 if "c" in kinds else dt.float64
    return pow(_widened(x, dtype), _widened(y, dtype))


def divide(x, y, rounding_mode=None):
    """PyTorch's div with rounding_mode: None (true division), "trunc" (toward zero) or
    "floor" (toward minus infinity; integers stay integers in both)."""
    choice(rounding_mode, (None, "trunc", "floor"), "divide: rounding_mode", AttrError)
    if rounding_mode is None:
        return div(x, y)
    if rounding_mode == "floor":
        return floor_div(x, y)
    q = floor_div(x, y)
    if dt.is_float(q.dtype):
        return trunc(div(x, y))
    # floor and trunc differ by one where the division is inexact and the signs differ
    inexact = ne(mod(x, y), 0)
    return where(logical_and(inexact, ne(lt(x, 0), lt(y, 0))), q + 1, q)


def _is_tensor(v):
    return hasattr(v, "shape") and not isinstance(v, np.ndarray | np.number)


def round_decimals(x, decimals=0):
    """x rounded to `decimals` decimal places (halves to even), as PyTorch's round(x,
    decimals=): scaled by 10**decimals, rounded and scaled back, in x's dtype; a negative
    `decimals` rounds to tens, hundreds ..."""
    decimals = integer(decimals, "round: decimals")
    if decimals == 0:
        return round(x)
    # PyTorch divides by the power for a negative `decimals` (10**-3 is inexact, 1000 is not)
    scale = 10.0 ** builtins.abs(decimals)
    return round(x * scale) / scale if decimals > 0 else round(x / scale) * scale


def clamp_tensors(x, min=None, max=None):
    """x clamped into [min, max] where a bound is a tensor (broadcast; None: no bound); min >
    max gives max, as in PyTorch. Each output element is x, min or max itself, so the
    gradient goes to the one chosen (PyTorch's clamp with tensor bounds); NaN in x stays."""
    out = x
    if min is not None:
        out = where(lt(out, min), min, out)
    if max is not None:
        out = where(gt(out, max), max, out)
    return out


def clamp_min(x, min):
    """max(x, min): min a number or a tensor (broadcast)."""
    return maximum(x, min) if _is_tensor(min) else clip(x, min=min)


def clamp_max(x, max):
    """min(x, max): max a number or a tensor (broadcast)."""
    return minimum(x, max) if _is_tensor(max) else clip(x, max=max)


def positive(x):
    """x itself (PyTorch's positive)."""
    return x


# PyTorch's other names for the ops above
remainder, fix = mod, trunc
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh
absolute, negative, multiply, subtract, true_divide = abs, neg, mul, sub, div
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


__all__ = [
    "sigmoid",
    "add",
    "sub",
    "mul",
    "div",
    "floor_div",
    "mod",
    "pow",
    "neg",
    "abs",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "round",
    "square",
    "reciprocal",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "log2",
    "log10",
    "tanh",
    "erf",
    "maximum",
    "minimum",
    "clip",
    "hardtanh",
    "hardtanh_grad",
    "where",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "isnan",
    "isinf",
    "isfinite",
    "cast",
    "add_",
    "sub_",
    "mul_",
    "div_",
    "clip_",
    "clamp",
    "clamp_",
    "clone",
    "astype",
    "copy_",
    "add_n",
    "isclose",
    "lerp",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "exp2",
    "logit",
    "xlogy",
    "hypot",
    "logaddexp",
    "logaddexp2",
    "fmod",
    "remainder",
    "copysign",
    "heaviside",
    "sinc",
    "deg2rad",
    "rad2deg",
    "frac",
    "nan_to_num",
    "nan_to_num_op",
    "float_power",
    "signbit",
    "erfinv",
    "divide",
    "clamp_min",
    "clamp_max",
    "positive",
    "fix",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "arcsinh",
    "arccosh",
    "arctanh",
    "absolute",
    "negative",
    "multiply",
    "subtract",
    "true_divide",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
]
