"""The activations declared from a scalar body (elementwise ops, fused like the others in graph
mode): relu and its gradient relu_grad (PyTorch's threshold_backward), leaky_relu,
gelu (exact or tanh) and softplus. Activations composed from other ops are in
nn/functional/activation.py."""

import math

import numpy as np

from ..core import Attr
from ..kernels.cpu import vecmath
from ._define import elementwise
from .elementwise import (
    FLOATS,
    INV_SQRT_2PI,
    NUMERIC,
    SQRT_HALF,
    _erf64,
    erf,
    exp,
    sigmoid,
    tanh,
    where,
)


@elementwise(dtypes=NUMERIC, ref=lambda x: np.maximum(x, 0).astype(x.dtype))
def relu(x):
    """max(x, 0); NaN stays NaN, -inf gives 0 (x - x would be NaN there)."""
    return 0 if x < 0 else x


relu.defgrad(lambda g, out, x: (relu_grad(x, g),))

# the attr of the ops that apply a ReLU in their own pass (linear, batch norm): graph mode folds
# a following relu into them (graph/rewrite.py's fold_activations)
ACTIVATION = Attr("str", "none", choices=("none", "relu"))


@elementwise(dtypes=NUMERIC, ref=lambda x, g: np.where(x <= 0, 0, g).astype(np.result_type(x, g)))
def relu_grad(x, g):
    """0 where x <= 0 (even where g is infinite or NaN), else g (at a NaN x too): relu's
    gradient in one pass (instead of le, two constants and a where), PyTorch's
    threshold_backward."""
    return 0 if x <= 0 else g


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


__all__ = ["relu", "relu_grad", "leaky_relu", "gelu", "softplus"]
