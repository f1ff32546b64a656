"""Elementwise ops: one scalar body each, compiled for every dtype; gradients right below.

Bodies are plain Python on scalars; nbflow.kernels turns them into loops with broadcasting.
Gradient rules are `(g, out, *inputs, **attrs) -> one gradient per input` written with nbflow
ops; the backward driver sums them back to broadcast shapes and casts them.
"""

import math

import numpy as np

from .. import dtypes as dt
from ..core import Attr, Op, Spec, broadcast_shapes, needs_grad
from ..errors import DomainError, ShapeError
from ..kernels import vecmath
from ._define import elementwise, inplace_variant

ALL, NUMERIC, FLOATS = dt.ALL, dt.NUMERIC, dt.FLOATS
SQRT_HALF = 0.7071067811865476
INV_SQRT_2PI = 0.3989422804014327
_erf64 = np.vectorize(math.erf, otypes=[np.float64])  # reference only (no scipy dependency)

# ---------------------------------------------------------------- arithmetic


@elementwise(dtypes=ALL, ref=np.add)
def add(x, y):
    """x + y (for bools: logical or)."""
    return x + y


add.defgrad(lambda g, out, x, y: (g, g))


@elementwise(dtypes=NUMERIC, ref=np.subtract)
def sub(x, y):
    """x - y."""
    return x - y


sub.defgrad(lambda g, out, x, y: (g, neg(g)))


@elementwise(dtypes=ALL, ref=np.multiply)
def mul(x, y):
    """x * y (for bools: logical and)."""
    return x * y


def _mul_grad(g, out, x, y):
    # each product only when wanted: x * w with x a batch of data needs w's gradient alone
    return (g * y if needs_grad(x) else None, g * x if needs_grad(y) else None)


mul.defgrad(_mul_grad)


@elementwise(dtypes=FLOATS, ref=np.true_divide, to_float=True)
def div(x, y):
    """True division; integer inputs give float32."""
    return x / y


def _div_grad(g, out, x, y):
    return (g / y if needs_grad(x) else None, neg(g) * out / y if needs_grad(y) else None)


div.defgrad(_div_grad)


@elementwise(dtypes=NUMERIC, ref=np.floor_divide, differentiable=False)
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


@elementwise(dtypes=NUMERIC, ref=np.power, check=_check_integer_power)
def pow(x, y):
    """x ** y."""
    return x**y


def _pow_grad(g, out, x, y):
    # d/dy x**y = x**y log x; where x <= 0 the log is undefined and PyTorch uses 0
    gx = g * y * pow(x, y - 1) if needs_grad(x) else None
    gy = g * out * log(where(x > 0, x, 1)) if needs_grad(y) else None
    return gx, gy


pow.defgrad(_pow_grad)


@elementwise(dtypes=NUMERIC, ref=np.negative)
def neg(x):
    """-x."""
    return -x


neg.defgrad(lambda g, out, x: (neg(g),))


@elementwise(dtypes=NUMERIC, ref=np.abs)
def abs(x):
    """|x|."""
    return x if x >= 0 else -x


abs.defgrad(lambda g, out, x: (g * sign(x),))


@elementwise(dtypes=NUMERIC, ref=np.sign, differentiable=False)
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


@elementwise(dtypes=NUMERIC, ref=np.floor, differentiable=False)
def floor(x):
    """The largest integer <= x (integers unchanged)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    return math.floor(x)


@elementwise(dtypes=NUMERIC, ref=np.ceil, differentiable=False)
def ceil(x):
    """The smallest integer >= x (integers unchanged)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    return math.ceil(x)


@elementwise(dtypes=NUMERIC, ref=np.trunc, differentiable=False)
def trunc(x):
    """x rounded toward zero (integers unchanged)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    return math.floor(x) if x >= 0 else math.ceil(x)


@elementwise(dtypes=NUMERIC, ref=np.round, differentiable=False)
def round(x):
    """x rounded to the nearest integer, halves to even (numpy's and PyTorch's round)."""
    if not -_INTEGRAL < x < _INTEGRAL:
        return x
    f = math.floor(x)
    d = x - f  # exact: no rounding error decides a tie
    if d > 0.5 or (d == 0.5 and f % 2 != 0):
        return f + 1
    return f


@elementwise(dtypes=NUMERIC, ref=np.square)
def square(x):
    """x * x."""
    return x * x


square.defgrad(lambda g, out, x: (g * x * 2,))


@elementwise(dtypes=FLOATS, ref=np.reciprocal, to_float=True)
def reciprocal(x):
    """1 / x (inf at 0, as in PyTorch)."""
    return 1 / x


reciprocal.defgrad(lambda g, out, x: (neg(g) * out * out,))


# ---------------------------------------------------------------- transcendental


@elementwise(dtypes=FLOATS, ref=np.exp, to_float=True)
def exp(x):
    """e ** x."""
    return vecmath.exp(x)


exp.defgrad(lambda g, out, x: (g * out,))


@elementwise(dtypes=FLOATS, ref=np.log, to_float=True)
def log(x):
    """Natural logarithm."""
    if x > 0:
        return math.log(x)
    if x == 0:
        return -math.inf
    return math.nan  # negative or NaN (math.log would raise)


log.defgrad(lambda g, out, x: (g / x,))


@elementwise(dtypes=FLOATS, ref=np.log1p, to_float=True)
def log1p(x):
    """log(1 + x), accurate for small x."""
    if x > -1:
        return math.log1p(x)
    if x == -1:
        return -math.inf
    return math.nan


log1p.defgrad(lambda g, out, x: (g / (x + 1),))


@elementwise(dtypes=FLOATS, ref=np.expm1, to_float=True)
def expm1(x):
    """exp(x) - 1, accurate for small x."""
    return vecmath.expm1(x)


expm1.defgrad(lambda g, out, x: (g * (out + 1),))


@elementwise(dtypes=FLOATS, ref=np.sqrt, to_float=True)
def sqrt(x):
    """Square root (NaN for negative x)."""
    return math.sqrt(x) if x >= 0 else math.nan


sqrt.defgrad(lambda g, out, x: (g / (out * 2),))


@elementwise(dtypes=FLOATS, ref=lambda x: 1 / np.sqrt(x), to_float=True)
def rsqrt(x):
    """1 / sqrt(x)."""
    return 1 / math.sqrt(x) if x >= 0 else math.nan


rsqrt.defgrad(lambda g, out, x: (g * out * out * out * -0.5,))


@elementwise(dtypes=FLOATS, ref=np.sin, to_float=True)
def sin(x):
    """Sine."""
    return math.sin(x)


sin.defgrad(lambda g, out, x: (g * cos(x),))


@elementwise(dtypes=FLOATS, ref=np.cos, to_float=True)
def cos(x):
    """Cosine."""
    return math.cos(x)


cos.defgrad(lambda g, out, x: (neg(g) * sin(x),))


@elementwise(dtypes=FLOATS, ref=np.tan, to_float=True)
def tan(x):
    """Tangent."""
    return math.tan(x)


tan.defgrad(lambda g, out, x: (g * (1 + out * out),))


@elementwise(dtypes=FLOATS, ref=np.arcsin, to_float=True)
def asin(x):
    """Arcsine (NaN outside [-1, 1])."""
    return math.asin(x) if -1 <= x <= 1 else math.nan


asin.defgrad(lambda g, out, x: (g * rsqrt(1 - x * x),))


@elementwise(dtypes=FLOATS, ref=np.arccos, to_float=True)
def acos(x):
    """Arccosine (NaN outside [-1, 1])."""
    return math.acos(x) if -1 <= x <= 1 else math.nan


acos.defgrad(lambda g, out, x: (neg(g) * rsqrt(1 - x * x),))


@elementwise(dtypes=FLOATS, ref=np.arctan, to_float=True)
def atan(x):
    """Arctangent."""
    return math.atan(x)


atan.defgrad(lambda g, out, x: (g / (1 + x * x),))


@elementwise(dtypes=FLOATS, ref=np.arctan2, to_float=True)
def atan2(y, x):
    """The angle of the point (x, y), in [-pi, pi] (numpy's arctan2, PyTorch's atan2)."""
    return math.atan2(y, x)


@atan2.defgrad
def _atan2_grad(g, out, y, x):
    r2 = x * x + y * y
    return g * x / r2, neg(g) * y / r2


@elementwise(dtypes=FLOATS, ref=np.log2, to_float=True)
def log2(x):
    """Base-2 logarithm (-inf at 0, NaN below)."""
    if x > 0:
        return math.log2(x)
    if x == 0:
        return -math.inf
    return math.nan


log2.defgrad(lambda g, out, x: (g / (x * math.log(2.0)),))


@elementwise(dtypes=FLOATS, ref=np.log10, to_float=True)
def log10(x):
    """Base-10 logarithm (-inf at 0, NaN below)."""
    if x > 0:
        return math.log10(x)
    if x == 0:
        return -math.inf
    return math.nan


log10.defgrad(lambda g, out, x: (g / (x * math.log(10.0)),))


@elementwise(dtypes=FLOATS, ref=np.tanh, to_float=True)
def tanh(x):
    """Hyperbolic tangent."""
    return vecmath.tanh(x)


tanh.defgrad(lambda g, out, x: (g * (1 - out * out),))


@elementwise(dtypes=FLOATS, ref=lambda x: _erf64(x).astype(x.dtype), to_float=True)
def erf(x):
    """The error function."""
    return math.erf(x)


erf.defgrad(lambda g, out, x: (g * exp(x * x * -1) * (2 / math.sqrt(math.pi)),))


# ---------------------------------------------------------------- activations


@elementwise(
    dtypes=FLOATS,
    ref=lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))).astype(x.dtype),
    to_float=True,
)
def sigmoid(x):
    """1 / (1 + exp(-x)), stable for large |x|."""
    return vecmath.sigmoid(x)


sigmoid.defgrad(lambda g, out, x: (g * out * (1 - out),))


@elementwise(dtypes=NUMERIC, ref=lambda x: np.maximum(x, 0).astype(x.dtype))
def relu(x):
    """max(x, 0); NaN stays NaN."""
    return x - x if x < 0 else x


relu.defgrad(lambda g, out, x: (relu_grad(x, g),))


@elementwise(dtypes=NUMERIC, ref=lambda x, g: np.where(x > 0, g, 0).astype(np.result_type(x, g)))
def relu_grad(x, g):
    """g where x > 0, else 0: relu's gradient in one pass (instead of gt, two constants and a
    where)."""
    return g if x > 0 else g - g


# linear in g (the mask is piecewise constant in x, whose gradient is 0 almost everywhere)
relu_grad.defgrad(lambda gg, out, x, g: (None, relu_grad(x, gg)))


def _leaky_relu_ref(x, negative_slope=0.01):
    return np.where(x >= 0, x, x * np.asarray(negative_slope, x.dtype)).astype(x.dtype)


@elementwise(dtypes=FLOATS, ref=_leaky_relu_ref, attrs={"negative_slope": Attr("float", 0.01)})
def leaky_relu(x, negative_slope):
    """x where x >= 0, else negative_slope * x."""
    return x if x >= 0 else x * negative_slope


leaky_relu.defgrad(lambda g, out, x, negative_slope: (where(x >= 0, g, g * negative_slope),))


def _gelu_ref(x, approximate=False):
    x64 = x.astype(np.float64)
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)
        return (0.5 * x64 * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x64 * (1 + _erf64(x64 * SQRT_HALF))).astype(x.dtype)


@elementwise(dtypes=FLOATS, ref=_gelu_ref, attrs={"approximate": Attr("bool", False)})
def gelu(x, approximate):
    """x * Phi(x); approximate=True uses the tanh form (PyTorch's approximate='tanh')."""
    if approximate:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1 + vecmath.tanh(inner))
    return 0.5 * x * (1 + math.erf(x * SQRT_HALF))


def _gelu_grad(g, out, x, approximate):
    if approximate:
        k = 0.7978845608028654
        t = tanh((x + x * x * x * 0.044715) * k)
        dinner = (x * x * (3 * 0.044715) + 1) * k
        return (g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner),)
    cdf = (erf(x * SQRT_HALF) + 1) * 0.5
    pdf = exp(x * x * -0.5) * INV_SQRT_2PI
    return (g * (cdf + x * pdf),)


gelu.defgrad(_gelu_grad)


def _softplus_ref(x, beta=1.0, threshold=20.0):
    x64 = x.astype(np.float64)
    soft = np.logaddexp(0, beta * x64) / beta
    return np.where(x64 * beta > threshold, x64, soft).astype(x.dtype)


@elementwise(
    dtypes=FLOATS,
    ref=_softplus_ref,
    to_float=True,
    attrs={"beta": Attr("float", 1.0), "threshold": Attr("float", 20.0)},
)
def softplus(x, beta, threshold):
    """log(1 + exp(beta x)) / beta; linear above `threshold` (as PyTorch)."""
    z = x * beta
    if z > threshold:
        return x
    if z > 0:
        return (z + math.log1p(vecmath.exp(-z))) / beta
    return math.log1p(vecmath.exp(z)) / beta


softplus.defgrad(
    lambda g, out, x, beta, threshold: (where(x * beta > threshold, g, g * sigmoid(x * beta)),)
)


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


@elementwise(dtypes=ALL, ref=np.where, promote=(1, 2))
def where(cond, x, y):
    """x where cond is true, else y (cond is cast to bool)."""
    return x if cond != 0 else y  # (a float16 `if cond` is invalid IR for numba-cuda's NVVM)


where.defgrad(lambda g, out, cond, x, y: (None, where(cond, g, 0), where(cond, 0, g)))


# ---------------------------------------------------------------- comparisons and logic


def _compare(ref):
    return elementwise(dtypes=ALL, ref=ref, out_dtype=dt.bool_, differentiable=False)


@_compare(np.equal)
def eq(x, y):
    """x == y."""
    return x == y


@_compare(np.not_equal)
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


@_compare(np.logical_and)
def logical_and(x, y):
    """Truth of x and y."""
    return x != 0 and y != 0


@_compare(np.logical_or)
def logical_or(x, y):
    """Truth of x or y."""
    return x != 0 or y != 0


@_compare(np.logical_xor)
def logical_xor(x, y):
    """Truth of x xor y."""
    return (x != 0) != (y != 0)


@_compare(np.logical_not)
def logical_not(x):
    """Truth of not x."""
    return x == 0


@_compare(np.isnan)
def isnan(x):
    """True where x is NaN."""
    return x != x


@_compare(np.isinf)
def isinf(x):
    """True where x is +-inf."""
    return x == math.inf or x == -math.inf


@_compare(np.isfinite)
def isfinite(x):
    """True where x is neither NaN nor +-inf."""
    return -math.inf < x < math.inf  # (x - x == 0 fails for numpy bools in the simulator)


# ---------------------------------------------------------------- cast


def _cast_ref(x, dtype):
    return x.astype(dtype)


@elementwise(
    dtypes=ALL, ref=_cast_ref, attrs={"dtype": Attr("dtype")}, out_dtype=lambda dtype: dtype
)
def cast(x):
    """Convert to `dtype` (float to int truncates toward zero)."""
    return x


def _cast_grad(g, out, x, dtype):
    return (g,) if dt.is_float(x.dtype) else (None,)


cast.defgrad(_cast_grad)


def clone(x):
    """A copy of x that gradients flow through."""
    return cast(x, dtype=x.dtype)


def astype(x, dtype):
    """cast(x, dtype=dtype), with the dtype positional as in numpy."""
    return cast(x, dtype=dtype)


def _copy_spec(x, src):
    broadcast_shapes(x.shape, src.shape)
    if len(src.shape) > len(x.shape):
        raise ShapeError("src has more dims than the target")
    return Spec(x.shape, x.dtype)


copy_ = Op(
    name="copy_",
    inputs=("x", "src"),
    outputs=("out",),
    spec=_copy_spec,
    kernels={"cpu": lambda x, src, out: np.copyto(out, src, casting="unsafe"), "cuda": None},
    dtypes=ALL,
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
    dtypes=ALL,
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


__all__ = [
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
    "sigmoid",
    "relu",
    "relu_grad",
    "leaky_relu",
    "gelu",
    "softplus",
    "maximum",
    "minimum",
    "clip",
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
]
