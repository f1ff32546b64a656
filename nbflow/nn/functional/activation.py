"""Activations: PyTorch's F.relu, F.gelu, F.softmin, ... on nbflow's ops.

Most are nbflow's ops themselves; the rest are composed from them (so gradients, graph mode
and the GPU come with them) and take PyTorch's `inplace=` (the result is written into the
input). The in-place forms (PyTorch's trailing underscore) write into their input."""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ... import ops
from ...argcheck import flag, integer, real, shown, tensors
from ...core.errors import AttrError, DomainError, ShapeError
from ...eager.operators import written_back

log_softmax = ops.log_softmax


sigmoid = ops.sigmoid


softmax = ops.softmax


softplus = ops.softplus


tanh = ops.tanh


def _maybe_inplace(x, fn, inplace: bool):
    """fn(x), or with PyTorch's `inplace=True` written into x (by copy_, which bumps x's
    version; fn reads a clone where autograd records it: operators.written_back)."""
    if not isinstance(inplace, (bool, np.bool_)):
        name = sys._getframe(1).f_code.co_name  # the activation that was called
        raise AttrError(f"{name}: inplace must be a bool, got {shown(inplace)}")
    tensors(sys._getframe(1).f_code.co_name, input=x)
    return written_back(x, fn) if inplace else fn(x)


def relu(input, inplace=False):
    return _maybe_inplace(input, ops.relu, inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    negative_slope = real(negative_slope, "leaky_relu: negative_slope")
    return _maybe_inplace(
        input, lambda x: ops.leaky_relu(x, negative_slope=negative_slope), inplace
    )


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped into [min_val, max_val]; its gradient is 0 at the bounds (PyTorch's)."""
    min_val, max_val = real(min_val, "hardtanh: min_val"), real(max_val, "hardtanh: max_val")
    if min_val > max_val:
        raise AttrError(f"hardtanh: min_val {min_val} is greater than max_val {max_val}")
    bounds = {"min_val": min_val, "max_val": max_val}
    return _maybe_inplace(input, lambda x: ops.hardtanh(x, **bounds), inplace)


def _not_positive(x):
    """x where x <= 0, else 0: the negative branch's input of elu and celu, whose gradient at
    0 is the whole of the negative branch's (PyTorch's elu_backward takes x <= 0 there; a
    minimum(x, 0) would split it in two at the tie)."""
    return ops.where(x > 0, 0.0, x)


def elu(input, alpha=1.0, inplace=False):
    alpha = real(alpha, "elu: alpha")

    def fn(x):
        return ops.where(x > 0, x, ops.expm1(_not_positive(x)) * alpha)

    return _maybe_inplace(input, fn, inplace)


def silu(input, inplace=False):
    return _maybe_inplace(input, lambda x: x * ops.sigmoid(x), inplace)


def gelu(input, approximate="none"):
    """PyTorch's F.gelu: approximate 'none' (the erf form) or 'tanh' (nbflow.gelu's bool)."""
    if not isinstance(approximate, bool):
        if approximate not in ("none", "tanh"):
            raise AttrError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        approximate = approximate == "tanh"
    return ops.gelu(input, approximate=approximate)


def logsigmoid(input):
    tensors("logsigmoid", input=input)
    return -ops.softplus(-input)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1, generator=None):
    """softmax((logits + g) / tau) over `dim` with Gumbel noise g = -log(-log(u)) (PyTorch's
    gumbel_softmax): a differentiable sample of the categorical softmax(logits). hard=True
    gives the one-hot of its argmax forward and the soft sample's gradient backward (the
    straight-through estimator). `eps` is PyTorch's deprecated, unused argument."""
    number = isinstance(tau, (int, float, np.integer, np.floating)) and not isinstance(tau, bool)
    if not (number and tau > 0):
        raise DomainError(f"gumbel_softmax: tau must be a number > 0, got {tau!r}")
    if logits.ndim == 0:
        raise ShapeError("gumbel_softmax: logits need at least 1 dim (the categories)")
    # u in [0, 1): -log(u) is an exponential draw (inf where u is 0: that category gets no
    # weight, where -log(1 - u) would give it an infinite one and the softmax NaN), and minus
    # its log a Gumbel draw
    u = ops.rand_like(logits, generator=generator)
    gumbels = -ops.log(-ops.log(u))
    soft = ops.softmax((logits + gumbels) / tau, axis=dim)
    if not hard:
        return soft
    axis = ops.shape.axis_of(dim, soft.ndim)
    index = ops.argmax(soft, axis=axis, keepdims=True)
    one_hot_ = ops.scatter(ops.zeros_like(soft), axis, index, value=1.0)
    return one_hot_ - soft.detach() + soft


# SELU's constants (Klambauer et al.), as PyTorch writes them
_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def _relu6(x):
    return ops.hardtanh(x, min_val=0.0, max_val=6.0)


def hardswish(input, inplace=False):
    return _maybe_inplace(input, lambda x: x * _relu6(x + 3.0) / 6.0, inplace)


def hardsigmoid(input, inplace=False):
    return _maybe_inplace(input, lambda x: _relu6(x + 3.0) / 6.0, inplace)


def mish(input, inplace=False):
    return _maybe_inplace(input, lambda x: x * ops.tanh(ops.softplus(x)), inplace)


def selu(input, inplace=False):
    return _maybe_inplace(input, lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE, inplace)


def celu(input, alpha=1.0, inplace=False):
    alpha = real(alpha, "celu: alpha")
    if alpha == 0:
        raise AttrError("celu: alpha must not be 0 (it divides the input)")

    def fn(x):
        return ops.where(x > 0, x, ops.expm1(_not_positive(x) / alpha) * alpha)

    return _maybe_inplace(input, fn, inplace)


def softsign(input):
    tensors("softsign", input=input)
    return input / (ops.abs(input) + 1.0)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    tensors("softmin", input=input)
    if dim is None:
        dim = legacy_softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = ops.astype(input, dtype)
    return ops.softmax(-input, axis=dim)


def legacy_softmax_dim(name, ndim, stacklevel):
    """PyTorch's implicit dim (deprecated there too): 0 for 0-, 1- and 3-D inputs, else 1."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def tanhshrink(input):
    tensors("tanhshrink", input=input)
    return input - ops.tanh(input)


def _check_lambd(name, lambd, input):
    lambd = real(lambd, f"{name}: lambd")
    tensors(name, input=input)
    if lambd < 0:
        raise AttrError(f"{name}: lambd must be >= 0, got {lambd}")
    return lambd


def softshrink(input, lambd=0.5):
    lambd = _check_lambd("softshrink", lambd, input)
    shrunk = ops.where(input > lambd, input - lambd, input + lambd)
    return ops.where(ops.abs(input) > lambd, shrunk, 0.0)


def hardshrink(input, lambd=0.5):
    lambd = _check_lambd("hardshrink", lambd, input)
    return ops.where(ops.abs(input) > lambd, input, 0.0)


def threshold(input, threshold, value, inplace=False):
    # checked as numbers, used as given: an int threshold and value keep an int input int
    real(threshold, "threshold: threshold"), real(value, "threshold: value")
    return _maybe_inplace(input, lambda x: ops.where(x > threshold, x, value), inplace)


def glu(input, dim=-1):
    """a * sigmoid(b), a and b the two halves of input along dim."""
    if input.ndim == 0:
        raise ShapeError("glu: a 0-D input has no dim to halve")
    size = input.shape[ops.shape.axis_of(integer(dim, "glu: dim"), input.ndim)]
    if size >= 0 and size % 2:  # (-1: unknown until run time)
        raise ShapeError(f"glu: dim {dim} of input shape {tuple(input.shape)} is odd")
    if size == 0:  # two empty halves: an empty result of input's shape
        return input * ops.sigmoid(input)
    a, b = ops.chunk(input, 2, axis=dim)
    return a * ops.sigmoid(b)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight one value or one per channel (dim 1; dim 0 of a
    1-D input)."""
    if weight.ndim > 1:
        raise ShapeError(f"prelu: weight must be 0-D or 1-D, got shape {tuple(weight.shape)}")
    count = weight.size
    if count == 1:
        weight = ops.reshape(weight, ())
    elif input.ndim == 0 or input.shape[min(1, input.ndim - 1)] not in (count, -1):
        raise ShapeError(
            f"prelu: {count} weights do not fit the channels of input shape {tuple(input.shape)}"
        )
    elif input.ndim > 2:
        weight = ops.reshape(weight, (count,) + (1,) * (input.ndim - 2))
    return ops.where(input > 0, input, input * weight)


# the in-place forms (PyTorch's trailing underscore): the result is written into input
def relu_(input):
    return relu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):
    return _maybe_inplace(input, lambda x: ops.where(x > threshold, x, value), True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False, generator=None):
    """PyTorch's F.rrelu: x where x > 0, else x * a; while training a is drawn uniformly from
    [lower, upper] per element (from `generator`, or the default generator), in eval a is the
    mean slope (lower + upper) / 2. The gradient is the slope used."""
    lower, upper = real(lower, "rrelu: lower"), real(upper, "rrelu: upper")
    if lower > upper:
        raise AttrError(f"rrelu: lower bound {lower} must be at most the upper bound {upper}")
    if not flag(training, "rrelu: training"):
        return leaky_relu(input, (lower + upper) / 2, inplace)

    def fn(x):
        slope = ops.rand_like(x, generator=generator) * (upper - lower) + lower
        return ops.where(x > 0, x, x * slope)

    return _maybe_inplace(input, fn, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training, True, generator)


__all__ = [
    "celu",
    "celu_",
    "elu",
    "elu_",
    "gelu",
    "glu",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
]
