"""nbflow.nn.functional: PyTorch's `torch.nn.functional` names on nbflow's ops.

Most are nbflow's functions themselves (their arguments already follow PyTorch's, and every op
takes `dim=` for `axis=`); the rest adapt PyTorch's conventions: `inplace=`, class weights in
cross_entropy, one_hot's inferred class count, pad's pairs from the last dim backwards, and a
few activations composed from nbflow's ops. `import nbflow.nn.functional as F` then reads as
PyTorch code does.
"""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from .. import ops
from ..argcheck import choice, integer, integers, real, shown, tensors
from ..core import is_int, is_probability, no_grad, public
from ..core.errors import AttrError, DomainError, DTypeError, ShapeError, UnsupportedError
from ..eager.operators import written_back
from ..eager.tensor import tensor as new_tensor  # (one_hot has a parameter named tensor)
from . import losses_extra as _losses_extra  # (reads this module at call time)
from . import more_layers as _more_layers  # (reads this module at call time)
from . import sampling_grid as _sampling_grid
from . import spatial as _spatial
from . import volumetric as _volumetric
from .embedding_bag import embedding_bag

# the same call as in PyTorch
adaptive_avg_pool2d = ops.adaptive_avg_pool2d
avg_pool2d = ops.avg_pool2d
batch_norm = ops.batch_norm
binary_cross_entropy_with_logits = ops.binary_cross_entropy_with_logits
conv1d = ops.conv1d
conv2d = ops.conv2d


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """PyTorch's F.embedding: rows of weight picked by the integer `input`. With max_norm,
    each looked-up row whose norm_type-norm exceeds it is first scaled to max_norm, in place
    and without gradient, as PyTorch does (so the weight's version moves)."""
    if scale_grad_by_freq or sparse:
        raise UnsupportedError(
            "embedding: scale_grad_by_freq and sparse gradients are not supported"
        )
    if max_norm is not None:
        _renorm_rows(weight, input, float(max_norm), float(norm_type))
    return ops.embedding(input, weight, padding_idx)


def _renorm_rows(weight, indices, max_norm: float, norm_type: float):
    """PyTorch's embedding_renorm_: row i *= max_norm / (norm + 1e-7) where norm > max_norm
    (a row looked up twice gets the same new value twice)."""
    with no_grad():
        index = ops.reshape(indices, -1)
        rows = ops.index_select(weight, 0, index)  # (an index out of range: before any write)
        norms = ops.norm(rows, norm_type, axis=1, keepdims=True)
        scale = ops.where(norms > max_norm, max_norm / (norms + 1e-7), ops.ones_like(norms))
        ops.index_put_(weight, (index,), rows * scale)


group_norm = ops.group_norm
l1_loss = ops.l1_loss
layer_norm = ops.layer_norm
log_softmax = ops.log_softmax
max_pool2d = ops.max_pool2d
mse_loss = ops.mse_loss
nll_loss = ops.nll_loss
sigmoid = ops.sigmoid
softmax = ops.softmax
softplus = ops.softplus
tanh = ops.tanh


def linear(input, weight, bias=None):
    return ops.linear(input, weight, bias)


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
    return -ops.softplus(-input)


def dropout(input, p=0.5, training=True, inplace=False):
    return _maybe_inplace(input, lambda x: ops.dropout(x, p, training), inplace)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(norm(input, p, dim), eps), the norm kept as a dim to divide by."""
    return input / ops.maximum(ops.norm(input, p, axis=dim, keepdims=True), eps)


def cross_entropy(
    input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """The fused cross_entropy op; with class weights, log_softmax and nll_loss (which weighs
    classes as PyTorch does), plus PyTorch's weighted smoothing term: (1 - s) nll + s / C
    sum_c -w_c log p_c, a mean divided by the targets' weights as nll_loss's is."""
    if weight is None:
        return ops.cross_entropy(
            input,
            target,
            reduction=reduction,
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
        )
    axis = 1 if input.ndim > 1 else 0
    log_probs = ops.log_softmax(input, axis=axis)
    nll = ops.nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if not label_smoothing:
        return nll
    if not 0.0 <= label_smoothing <= 1.0:
        raise AttrError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    shape = [1] * input.ndim
    shape[axis] = -1
    kept = ops.ne(target, ignore_index)
    smooth = ops.where(kept, -ops.sum(log_probs * ops.reshape(weight, shape), axis=axis), 0.0)
    if reduction == "mean":  # (an ignored target reads class 0's weight, masked out)
        picked = ops.getitem(weight, ops.where(kept, target, 0))
        smooth = ops.sum(smooth) / ops.sum(ops.where(kept, picked, 0.0))
    elif reduction == "sum":
        smooth = ops.sum(smooth)
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / input.shape[axis])


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None
):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims (PyTorch's): a
    bool attn_mask says which positions take part (True), a float one is added to the
    scores; is_causal lets position i see positions <= i. scale defaults to 1/sqrt(E)."""
    weights = attention_weights(query, key, attn_mask, is_causal, scale)
    if dropout_p:
        weights = ops.dropout(weights, dropout_p)
    return ops.matmul(weights, value)


def attention_weights(query, key, attn_mask=None, is_causal=False, scale=None):
    """The softmax of the masked, scaled scores (scaled_dot_product_attention's weights)."""
    if query.ndim < 2 or key.ndim < 2:
        raise ShapeError(
            f"attention: query and key need (..., L, E) shapes, got {query.shape} and {key.shape}"
        )
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ops.matmul(query, ops.matrix_transpose(key)) * scale
    if is_causal:
        device = getattr(query, "device", None)
        seen = ops.tril(ops.ones(query.shape[-2], key.shape[-2], dtype="bool", device=device))
        scores = ops.where(seen, scores, -math.inf)
    if attn_mask is None:
        return ops.softmax(scores, axis=-1)
    if attn_mask.dtype == bool:
        scores = ops.where(attn_mask, scores, -math.inf)
    else:
        scores = scores + attn_mask
    # a row the mask leaves empty attends to nothing: weights 0 (PyTorch's safe softmax), its
    # scores replaced first so that no NaN reaches the softmax or its gradient
    empty = ops.all(scores == -math.inf, axis=-1, keepdims=True)
    weights = ops.softmax(ops.where(empty, 0.0, scores), axis=-1)
    return ops.where(empty, 0.0, weights)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's interpolate over the dims after (N, C): mode 'nearest' (the source index
    floor(i * in / out)) or 'linear' / 'bilinear' (separable, one pass per dim; align_corners
    as PyTorch's, default False), composed from index_select, so it differentiates."""
    spatial = input.ndim - 2
    if spatial < 1:
        raise ShapeError(f"interpolate needs (N, C, ...) input, got shape {tuple(input.shape)}")
    choice(mode, ("nearest", "linear", "bilinear"), "interpolate: mode")
    if (size is None) == (scale_factor is None):
        raise DomainError("interpolate: give exactly one of size and scale_factor")
    if mode != "nearest" and (mode == "bilinear") != (spatial == 2):
        raise ShapeError(f"interpolate: mode {mode!r} does not fit {spatial} spatial dims")
    ins = input.shape[2:]
    if size is not None:
        outs = (size,) * spatial if isinstance(size, int) else tuple(size)
        if len(outs) != spatial or not all(is_int(n) and n >= 1 for n in outs):
            raise DomainError(f"interpolate: output size {outs} for {spatial} spatial dims")
        ratios = [n / m for n, m in zip(ins, outs)]
    else:  # as PyTorch: the source position of output i uses 1 / scale_factor itself
        factors = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,)
        factors = factors * spatial if len(factors) == 1 else factors
        if len(factors) != spatial or not all(
            isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0 for f in factors
        ):
            raise DomainError(f"interpolate: scale_factor {scale_factor!r} for {spatial} dims")
        outs = tuple(int(math.floor(n * f)) for n, f in zip(ins, factors))
        ratios = [1.0 / f for f in factors]
        if min(outs) < 1:
            raise DomainError(f"interpolate: output size {outs} for {spatial} spatial dims")
    x = input
    for d, (n_in, n_out, ratio) in enumerate(zip(ins, outs, ratios)):
        x = _resize_axis(x, 2 + d, n_in, n_out, ratio, mode, bool(align_corners))
    return x


def _resize_axis(x, axis, n_in, n_out, ratio, mode, align_corners):
    """x resampled from n_in to n_out along `axis` (nearest, or linear between neighbours;
    `ratio`: input positions per output position); the source positions are worked out in
    numpy, as constants of the computation."""
    i = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        index = np.minimum(np.floor(i * ratio), n_in - 1)
        return ops.index_select(x, axis, _constant(index, np.int64, x))
    if align_corners:
        src = i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        src = np.maximum((i + 0.5) * ratio - 0.5, 0.0)
    low = np.minimum(np.floor(src), n_in - 1)
    shape = [1] * x.ndim
    shape[axis] = n_out
    weight = _constant((src - low).reshape(shape), x.dtype, x)
    a = ops.index_select(x, axis, _constant(low, np.int64, x))
    b = ops.index_select(x, axis, _constant(np.minimum(low + 1, n_in - 1), np.int64, x))
    return a + (b - a) * weight


def _constant(values, dtype, like):
    """values as a tensor of dtype on `like`'s device (a graph value: captured as is)."""
    t = new_tensor(np.asarray(values).astype(dtype))
    device = getattr(like, "device", None)
    return t if device is None else t.to(device)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows; num_classes -1 takes the largest label + 1 (eager tensors only,
    as it reads the values)."""
    if num_classes == -1:
        if tensor.size == 0:
            raise DomainError("one_hot: cannot infer num_classes from an empty tensor")
        num_classes = int(ops.max(tensor).item()) + 1
    return ops.one_hot(tensor, num_classes=num_classes)


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


def pad(input, pad, mode="constant", value=None):
    """PyTorch's pad: `pad` holds (before, after) pairs from the last dim backwards, so
    pad(x, (1, 1)) pads the last dim; mode 'constant' (with `value`), 'reflect', 'replicate'
    or 'circular' (nn/spatial.py)."""
    pad = integers(pad, "pad: pad")
    if not isinstance(mode, str):
        raise AttrError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {shown(mode)}"
        )
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise UnsupportedError(f"pad: mode {mode!r} takes no value (got {value!r})")
        return _spatial.pad_modes(input, pad, mode)
    if len(pad) % 2 or len(pad) > 2 * input.ndim:
        raise ShapeError(f"pad: {len(pad)} values for a tensor of {input.ndim} dims")
    pairs = [(0, 0)] * input.ndim
    for i in range(len(pad) // 2):
        pairs[input.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return ops.pad(input, pairs, value=0 if value is None else value, mode=mode)


__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "embedding_bag",
    "gelu",
    "gumbel_softmax",
    "group_norm",
    "hardtanh",
    "interpolate",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "max_pool2d",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "relu6",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]


# ---------------------------------------------------------------- spatial: transposed
# convolutions, 1-d and adaptive pools, pixel and channel shuffles, unfold / fold
# (nbflow/nn/spatial.py)

adaptive_avg_pool1d = _spatial.adaptive_avg_pool1d
adaptive_max_pool1d = _spatial.adaptive_max_pool1d
adaptive_max_pool2d = _spatial.adaptive_max_pool2d
avg_pool1d = _spatial.avg_pool1d
channel_shuffle = _spatial.channel_shuffle
conv_transpose1d = _spatial.conv_transpose1d
conv_transpose2d = _spatial.conv_transpose2d
fold = _spatial.fold
max_pool1d = _spatial.max_pool1d
pixel_shuffle = _spatial.pixel_shuffle
pixel_unshuffle = _spatial.pixel_unshuffle
unfold = _spatial.unfold


__all__ += [
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "channel_shuffle",
    "conv_transpose1d",
    "conv_transpose2d",
    "fold",
    "max_pool1d",
    "pixel_shuffle",
    "pixel_unshuffle",
    "unfold",
]


# ---------------------------------------------------------------- more activations, losses,
# norms and dropouts, composed from nbflow's ops

# SELU's constants (Klambauer et al.), as PyTorch writes them
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
# the value alpha_dropout gives a dropped unit is -_ALPHA_PRIME (SELU's negative saturation)
_ALPHA_PRIME = _SELU_ALPHA * _SELU_SCALE


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
    return input / (ops.abs(input) + 1.0)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _legacy_softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = ops.astype(input, dtype)
    return ops.softmax(-input, axis=dim)


def _legacy_softmax_dim(name, ndim, stacklevel):
    """PyTorch's implicit dim (deprecated there too): 0 for 0-, 1- and 3-D inputs, else 1."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def tanhshrink(input):
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


# ---- losses


def _reduction(name, reduction, size_average=None, reduce=None, more=()):
    """The reduction, PyTorch's deprecated size_average / reduce pair winning when given."""
    if size_average is not None or reduce is not None:
        if reduce is False:
            reduction = "none"
        else:
            reduction = "sum" if size_average is False else "mean"
    allowed = ("mean", "sum", "none", *more)
    if not isinstance(reduction, str) or reduction not in allowed:
        raise AttrError(f"{name}: reduction must be one of {allowed}, got {reduction!r}")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    return loss


def _same_dims(name, **tensors):
    dims = {what: t.ndim for what, t in tensors.items()}
    if len(set(dims.values())) > 1:
        shapes = ", ".join(f"{what} {tuple(t.shape)}" for what, t in tensors.items())
        raise ShapeError(f"{name}: inputs must have the same number of dims, got {shapes}")


def _same_shape(name, a, b, what="target"):
    fits = a.ndim == b.ndim and all(m == n or -1 in (m, n) for m, n in zip(a.shape, b.shape))
    if not fits:
        raise ShapeError(
            f"{name}: {what} shape {tuple(b.shape)} differs from input shape {tuple(a.shape)}"
        )


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """-(target log(input) + (1 - target) log(1 - input)), each log clamped at -100 (PyTorch's
    rule), times weight; input holds probabilities."""
    reduction = _reduction("binary_cross_entropy", reduction, size_average, reduce)
    _same_shape("binary_cross_entropy", input, target)
    loss = ops.binary_cross_entropy_pointwise(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); d = input - target."""
    reduction = _reduction("huber_loss", reduction)
    delta = real(delta, "huber_loss: delta")
    tensors("huber_loss", input=input, target=target)
    if delta <= 0:
        raise AttrError(f"huber_loss: delta must be positive, got {delta}")
    diff = ops.abs(input - target)
    loss = ops.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        _same_shape("huber_loss", input, weight, "weight")
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (the l1 loss when beta is 0)."""
    reduction = _reduction("smooth_l1_loss", reduction, size_average, reduce)
    beta = real(beta, "smooth_l1_loss: beta")
    tensors("smooth_l1_loss", input=input, target=target)
    if beta < 0:
        raise AttrError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    diff = ops.abs(input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    return _reduce(ops.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input) pointwise, input holding log-probabilities (0 where target
    is 0); 'batchmean' divides the sum by the batch size (dim 0)."""
    reduction = _reduction("kl_div", reduction, size_average, reduce, more=("batchmean",))
    if log_target:
        loss = ops.exp(target) * (target - input)
    else:  # xlogy(target, target): 0 where target is 0, with a finite gradient there
        positive = target > 0
        xlogx = ops.where(positive, target * ops.log(ops.where(positive, target, 1.0)), 0.0)
        loss = xlogx - target * input
    if reduction == "batchmean":
        total = ops.sum(loss)
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum((x1 / n1) (x2 / n2)) along dim, x1 and x2 broadcast together first and n1, n2 the
    2-norms of each along dim raised to eps where smaller: PyTorch's formula (a norm taken
    before broadcasting would count a broadcast element once, not once per copy, and the
    result could exceed 1). PyTorch clamps the norms in place under no_grad, so the gradient
    goes through the unclamped norm; so it does here."""
    x1, x2 = ops.broadcast_tensors(x1, x2)
    n1 = _at_least(ops.norm(x1, 2, axis=dim, keepdims=True), eps)
    n2 = _at_least(ops.norm(x2, 2, axis=dim, keepdims=True), eps)
    return ops.sum((x1 / n1) * (x2 / n2), axis=dim)


def _at_least(n, eps):
    """max(n, eps) whose gradient is n's (the clamp itself passes the gradient through)."""
    return n + (ops.maximum(n, eps) - n).detach()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim."""
    p, eps = real(p, "pairwise_distance: p"), real(eps, "pairwise_distance: eps")
    tensors("pairwise_distance", x1=x1, x2=x2)
    if p < 0:
        raise AttrError(f"pairwise_distance: p must be >= 0, got {p}")
    return ops.norm(x1 - x2 + eps, p, axis=-1, keepdims=keepdim)


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """max(0, -target (input1 - input2) + margin); target holds 1 or -1. margin is a float,
    as in PyTorch's signature: integer inputs give a float loss (the default dtype)."""
    reduction = _reduction("margin_ranking_loss", reduction, size_average, reduce)
    _same_dims("margin_ranking_loss", input1=input1, input2=input2, target=target)
    margin = real(margin, "margin_ranking_loss: margin")
    return _reduce(ops.relu(-target * (input1 - input2) + margin), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """input where target is 1, max(0, margin - input) where target is -1 (PyTorch's rule:
    the first where target != -1, the second where target != 1, summed)."""
    reduction = _reduction("hinge_embedding_loss", reduction, size_average, reduce)
    margin = real(margin, "hinge_embedding_loss: margin")
    tensors("hinge_embedding_loss", input=input, target=target)
    loss = ops.where(target != 1, ops.relu(margin - input), 0.0)
    loss = loss + ops.where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target input)), averaged over every element by 'mean'."""
    reduction = _reduction("soft_margin_loss", reduction, size_average, reduce)
    tensors("soft_margin_loss", input=input, target=target)
    return _reduce(ops.softplus(-target * input), reduction)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """exp(input) - target input (log_input), else input - target log(input + eps); full adds
    Stirling's target log(target) - target + 0.5 log(2 pi target) where target > 1."""
    reduction = _reduction("poisson_nll_loss", reduction, size_average, reduce)
    if log_input:
        loss = ops.exp(input) - target * input
    else:
        loss = input - target * ops.log(input + eps)
    if full:
        big = target > 1
        safe = ops.where(big, target, 2.0)  # (log of a target <= 1 is never kept)
        stirling = safe * ops.log(safe) - safe + 0.5 * ops.log(safe * (2 * math.pi))
        loss = loss + ops.where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(var) + (input - target)^2 / var) with var clamped at eps (its gradient not:
    PyTorch's); var has input's shape, or one dim of size 1 (or input's shape without the last
    dim)."""
    reduction = _reduction("gaussian_nll_loss", reduction)
    if isinstance(var, (int, float)):
        if var < 0:
            raise DomainError("gaussian_nll_loss: var has negative entry/entries")
        var = ops.full_like(input, float(var))
    elif tuple(var.shape) != tuple(input.shape):
        if tuple(var.shape) == tuple(input.shape[:-1]):
            var = ops.unsqueeze(var, -1)
        elif (
            var.ndim != input.ndim or sum(n for m, n in zip(input.shape, var.shape) if m != n) != 1
        ):
            raise ShapeError(
                f"gaussian_nll_loss: var of shape {tuple(var.shape)} does not fit input of "
                f"shape {tuple(input.shape)}"
            )
    var = ops.gaussian_nll_variance(var, eps=eps)  # (negative entries: a DomainError)
    loss = (ops.log(var) + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def cosine_embedding_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1 (cos
    along the last dim, each squared norm + 1e-12 as PyTorch's)."""
    reduction = _reduction("cosine_embedding_loss", reduction, size_average, reduce)
    _same_dims("cosine_embedding_loss", input1=input1, input2=input2)
    if input1.ndim not in (1, 2) or target.ndim != input1.ndim - 1:
        raise ShapeError(
            f"cosine_embedding_loss: expects 1-D or 2-D inputs and a target of one dim less, got "
            f"{tuple(input1.shape)} and target {tuple(target.shape)}"
        )
    dot = ops.sum(input1 * input2, axis=-1)
    squares = (ops.sum(input1 * input1, axis=-1) + 1e-12) * (
        ops.sum(input2 * input2, axis=-1) + 1e-12
    )
    cos = dot / ops.sqrt(squares)
    loss = ops.where(target == 1, 1.0 - cos, 0.0) + ops.where(
        target == -1, ops.relu(cos - margin), 0.0
    )
    return _reduce(loss, reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise p-distance;
    swap uses min(d(anchor, negative), d(positive, negative))."""
    reduction = _reduction("triplet_margin_loss", reduction, size_average, reduce)
    _same_dims("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    if margin <= 0:
        raise AttrError(f"triplet_margin_loss: margin must be positive, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(ops.relu(d_pos - d_neg + margin), reduction)


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """-(target logsigmoid(input) + (1 - target) logsigmoid(-input)) times weight, averaged
    over the classes (last dim), then reduced over the samples."""
    reduction = _reduction("multilabel_soft_margin_loss", reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = ops.mean(loss, axis=-1)
    return _reduce(loss, reduction)


# ---- normalisation


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """input / sqrt(mean(input^2) + eps) over the last len(normalized_shape) dims, times
    weight; eps None is the machine epsilon of input's dtype (PyTorch's default)."""
    shape = integers(normalized_shape, "rms_norm: normalized_shape")
    eps = None if eps is None else real(eps, "rms_norm: eps")
    if tuple(input.shape[input.ndim - len(shape) :]) != shape or len(shape) > input.ndim:
        raise ShapeError(
            f"rms_norm: normalized_shape {shape} does not end input shape {tuple(input.shape)}"
        )
    if np.dtype(input.dtype).kind != "f":
        raise DTypeError(f"rms_norm: needs a floating-point input, got {input.dtype}")
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    axes = tuple(range(-len(shape), 0))
    out = input * ops.rsqrt(ops.mean(input * input, axis=axes, keepdims=True) + eps)
    return out if weight is None else out * weight


def _per_channel(t, ndim):
    """A (C,) tensor shaped (C, 1, ...) to broadcast along dim 1 of an ndim-D input."""
    return ops.reshape(t, (t.shape[0],) + (1,) * (ndim - 2))


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each (sample, channel) over its spatial dims (use_input_stats), or by the
    running statistics; then scale and shift per channel. With use_input_stats and running
    statistics, these move toward the batch's average instance statistics, in place."""
    if input.ndim < 3:
        raise ShapeError(
            f"instance_norm: expects (N, C, ...) input, got shape {tuple(input.shape)}"
        )
    axes = tuple(range(2, input.ndim))
    if (running_mean is None) != (running_var is None):
        raise ShapeError("instance_norm: give both running_mean and running_var, or neither")
    if use_input_stats:
        spatial = math.prod(input.shape[2:])
        if spatial == 1:
            raise ShapeError(
                f"instance_norm: expected more than 1 spatial element when training, got input "
                f"shape {tuple(input.shape)}"
            )
        mean = ops.mean(input, axis=axes, keepdims=True)
        var = ops.var(input, axis=axes, keepdims=True, correction=0)
        out = (input - mean) * ops.rsqrt(var + eps)
        if running_mean is not None:
            new_mean, _ = _update_instance_stats(input, running_mean, running_var, momentum)
            # a zero that reads the updated statistics (for their shape only): graph pruning
            # keeps an in-place update only where a later op reads its target
            zero = ops.zeros_like(new_mean)
            bias = zero if bias is None else bias + zero
    else:
        if running_mean is None:
            raise ShapeError("instance_norm: use_input_stats=False needs running statistics")
        mean, var = _per_channel(running_mean, input.ndim), _per_channel(running_var, input.ndim)
        out = (input - mean) * ops.rsqrt(var + eps)
    if weight is not None:
        out = out * _per_channel(weight, input.ndim)
    if bias is not None:
        out = out + _per_channel(bias, input.ndim)
    return out


def _update_instance_stats(input, running_mean, running_var, momentum):
    """PyTorch's rule: running = (1 - momentum) running + momentum batch, batch the average
    over the samples of each instance's mean and unbiased variance. batch_norm_update_stats_
    makes that update in place, here from a stand-in (2, C) input whose two rows have exactly
    that mean and unbiased variance (mean +- sqrt(var / 2))."""
    axes = tuple(range(2, input.ndim))
    mean = ops.mean(ops.mean(input, axis=axes), axis=0)
    var = ops.mean(ops.var(input, axis=axes, correction=1), axis=0)
    half = ops.sqrt(var * 0.5)
    rows = ops.stack([mean + half, mean - half])
    return ops.batch_norm_update_stats_(running_mean, running_var, rows, momentum=momentum)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of input^2 over `size` neighbouring channels)^beta, the
    window zero-padded as PyTorch's (size // 2 before, (size - 1) // 2 after)."""
    if input.ndim < 3:
        raise ShapeError(
            f"local_response_norm: expects 3-D or more input, got shape {tuple(input.shape)}"
        )
    if size < 1:
        raise AttrError(f"local_response_norm: size must be positive, got {size}")
    if input.size == 0:
        return input
    channels = input.shape[1]
    pairs = [(0, 0)] * input.ndim
    pairs[1] = (size // 2, (size - 1) // 2)
    padded = ops.pad(input * input, pairs)
    window = padded[:, 0:channels]
    for i in range(1, size):
        window = window + padded[:, i : i + channels]
    return input / (window * (alpha / size) + k) ** beta


# ---- small layers' functions


def bilinear(input1, input2, weight, bias=None):
    """input1^T weight[o] input2 for each output o (+ bias[o]); weight (out, in1, in2), the
    inputs (..., in1) and (..., in2)."""
    if min(input1.ndim, input2.ndim) < 1:
        raise ShapeError(
            f"bilinear: inputs need at least 1 dim, got shapes {tuple(input1.shape)} and "
            f"{tuple(input2.shape)}"
        )
    if (
        weight.ndim != 3
        or input1.shape[-1] != weight.shape[1]
        or input2.shape[-1] != weight.shape[2]
    ):
        raise ShapeError(
            f"bilinear: weight {tuple(weight.shape)} does not fit inputs {tuple(input1.shape)} "
            f"and {tuple(input2.shape)}: expected (out, {input1.shape[-1]}, {input2.shape[-1]})"
        )
    outs, n1, n2 = weight.shape
    # one matmul: input1 against every weight[o] side by side, then the dot with input2
    flat = ops.reshape(ops.permute(weight, 1, 0, 2), (n1, outs * n2))
    partial = ops.reshape(ops.matmul(input1, flat), (*input1.shape[:-1], outs, n2))
    out = ops.sum(partial * ops.unsqueeze(input2, -2), axis=-1)
    return out if bias is None else out + bias


def _check_p(name, p):
    if not is_probability(p):
        raise AttrError(f"{name}: dropout probability must be in [0, 1], got {p}")


def _feature_mask(input, p, kept, generator):
    """A dropout mask (0, or 1 / (1 - p)) with one value per index of the first `kept` dims,
    drawn for a slice of input whose other dims are 1 (dropout_mask reads its shape only)."""
    like = input[(slice(None),) * kept + (slice(0, 1),) * (input.ndim - kept)]
    return ops.dropout_mask(like, p=p, generator=generator)


def _feature_dropout(name, input, p, training, inplace, kept, generator=None):
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    return _maybe_inplace(input, lambda x: x * _feature_mask(x, p, kept, generator), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero whole channels of (N, C, L) or (C, L) input with probability p, scaling the rest
    by 1 / (1 - p)."""
    if input.ndim not in (2, 3):
        raise ShapeError(f"dropout1d: expects 2-D or 3-D input, got shape {tuple(input.shape)}")
    return _feature_dropout("dropout1d", input, p, training, inplace, input.ndim - 1, generator)


def dropout2d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero whole channels of (N, C, H, W) input with probability p, scaling the rest by
    1 / (1 - p). A 3-D input is taken as (N, C, L), as PyTorch does (with its warning)."""
    if input.ndim < 2:
        raise ShapeError(f"dropout2d: expects 3-D or 4-D input, got shape {tuple(input.shape)}")
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: a 3-D input is taken as (N, C, L) (channel-wise 1-D dropout), as "
            "PyTorch does; use dropout1d for that",
            stacklevel=2,
        )
    return _feature_dropout("dropout2d", input, p, training, inplace, 2, generator)


def dropout3d(input, p=0.5, training=True, inplace=False, generator=None):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p,
    scaling the rest by 1 / (1 - p)."""
    if input.ndim not in (4, 5):
        raise ShapeError(f"dropout3d: expects 4-D or 5-D input, got shape {tuple(input.shape)}")
    return _feature_dropout("dropout3d", input, p, training, inplace, input.ndim - 3, generator)


def _alpha_dropout(name, input, p, training, inplace, kept, generator):
    """PyTorch's alpha dropout: dropped units take SELU's saturation -alpha', then an affine
    map a x + b keeps a zero-mean unit-variance input so."""
    _check_p(name, p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _maybe_inplace(input, lambda x: x * 0.0, inplace)
    a = 1.0 / math.sqrt((_ALPHA_PRIME**2 * p + 1.0) * (1.0 - p))

    def fn(x):
        kept_mask = _feature_mask(x, p, kept, generator) > 0
        return ops.where(kept_mask, x * a, -_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p

    return _maybe_inplace(input, fn, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False, generator=None):
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, input.ndim, generator)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False, generator=None):
    """alpha_dropout with one draw per channel (dims 0 and 1)."""
    if input.ndim < 2:
        raise ShapeError(
            f"feature_alpha_dropout: expects (N, C, ...) input, got shape {tuple(input.shape)}"
        )
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, 2, generator)


__all__ += [
    "alpha_dropout",
    "bilinear",
    "binary_cross_entropy",
    "celu",
    "celu_",
    "cosine_embedding_loss",
    "cosine_similarity",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu_",
    "feature_alpha_dropout",
    "gaussian_nll_loss",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh_",
    "hinge_embedding_loss",
    "huber_loss",
    "instance_norm",
    "kl_div",
    "leaky_relu_",
    "local_response_norm",
    "margin_ranking_loss",
    "mish",
    "multilabel_soft_margin_loss",
    "pairwise_distance",
    "poisson_nll_loss",
    "prelu",
    "relu_",
    "rms_norm",
    "selu",
    "selu_",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmin",
    "softshrink",
    "softsign",
    "tanhshrink",
    "threshold",
    "threshold_",
    "triplet_margin_loss",
]

# grid sampling, unpooling, lp / fractional pools, rrelu, pdist, the deprecated upsample and
# *_with_indices aliases (nbflow/nn/sampling_grid.py)
globals().update({name: getattr(_sampling_grid, name) for name in _sampling_grid.FUNCTIONS})
__all__ += _sampling_grid.FUNCTIONS

# ctc_loss (nbflow/ops/ctc.py), and the margin losses of nbflow/nn/losses_extra.py
ctc_loss = ops.ctc_loss
globals().update({name: getattr(_losses_extra, name) for name in _losses_extra.FUNCTIONS})
__all__ += ["ctc_loss", *_losses_extra.FUNCTIONS]

# the 3-D convolutions and pools (nbflow/nn/volumetric.py)
globals().update({name: getattr(_volumetric, name) for name in _volumetric.FUNCTIONS})
__all__ += _volumetric.FUNCTIONS

# the 3-D lp / unpool / fractional pools and *_with_indices aliases (nbflow/nn/more_layers.py)
globals().update({name: getattr(_more_layers, name) for name in _more_layers.FUNCTIONS})
__all__ += _more_layers.FUNCTIONS

# as users call them: PyTorch's argument names, and a clear error for a non-tensor input
globals().update({name: public(globals()[name]) for name in __all__})
