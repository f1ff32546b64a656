"""nbflow.nn.functional: PyTorch's `torch.nn.functional` names on nbflow's ops.

Most are nbflow's functions themselves (their arguments already follow PyTorch's, and every op
takes `dim=` for `axis=`); the rest adapt PyTorch's conventions: `inplace=`, class weights in
cross_entropy, one_hot's inferred class count, pad's pairs from the last dim backwards, and a
few activations composed from nbflow's ops. `import nbflow.nn.functional as F` then reads as
PyTorch code does.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..errors import UnsupportedError
from ..tensor import tensor as new_tensor  # (one_hot has a parameter named tensor)
from . import spatial as _spatial

# the same call as in PyTorch
adaptive_avg_pool2d = ops.adaptive_avg_pool2d
avg_pool2d = ops.avg_pool2d
batch_norm = ops.batch_norm
binary_cross_entropy_with_logits = ops.binary_cross_entropy_with_logits
conv1d = ops.conv1d
conv2d = ops.conv2d
embedding = ops.embedding
gelu = ops.gelu
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


def _maybe_inplace(x, out, inplace: bool):
    """PyTorch's `inplace=True`: the result written into x (through copy_, which bumps x's
    version so that autograd refuses a stale read)."""
    return x.copy_(out) if inplace else out


def relu(input, inplace=False):
    return _maybe_inplace(input, ops.relu(input), inplace)


def relu6(input, inplace=False):
    return _maybe_inplace(input, ops.clip(input, 0.0, 6.0), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_inplace(input, ops.leaky_relu(input, negative_slope=negative_slope), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _maybe_inplace(input, ops.clip(input, min_val, max_val), inplace)


def elu(input, alpha=1.0, inplace=False):
    out = ops.where(input > 0, input, ops.expm1(ops.minimum(input, 0.0)) * alpha)
    return _maybe_inplace(input, out, inplace)


def silu(input, inplace=False):
    return _maybe_inplace(input, input * ops.sigmoid(input), inplace)


def logsigmoid(input):
    return -ops.softplus(-input)


def dropout(input, p=0.5, training=True, inplace=False):
    return _maybe_inplace(input, ops.dropout(input, p, training), inplace)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(norm(input, p, dim), eps), the norm kept as a dim to divide by."""
    return input / ops.maximum(ops.norm(input, p, axis=dim, keepdims=True), eps)


def cross_entropy(
    input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """The fused cross_entropy op; with class weights, log_softmax and nll_loss (which weighs
    classes as PyTorch does)."""
    if weight is None:
        return ops.cross_entropy(
            input,
            target,
            reduction=reduction,
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
        )
    if label_smoothing:
        raise UnsupportedError("cross_entropy with class weights and label_smoothing")
    log_probs = ops.log_softmax(input, axis=1 if input.ndim > 1 else 0)
    return ops.nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)


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
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ops.matmul(query, ops.matrix_transpose(key)) * scale
    if is_causal:
        device = getattr(query, "device", None)
        seen = ops.tril(ops.ones(query.shape[-2], key.shape[-2], dtype="bool", device=device))
        scores = ops.where(seen, scores, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype == bool:
            scores = ops.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    return ops.softmax(scores, axis=-1)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's interpolate over the dims after (N, C): mode 'nearest' (the source index
    floor(i * in / out)) or 'linear' / 'bilinear' (separable, one pass per dim; align_corners
    as PyTorch's, default False), composed from index_select, so it differentiates."""
    spatial = input.ndim - 2
    if spatial < 1:
        raise ValueError(f"interpolate needs (N, C, ...) input, got shape {tuple(input.shape)}")
    if mode not in ("nearest", "linear", "bilinear"):
        raise ValueError(f"interpolate: mode {mode!r} is not 'nearest', 'linear' or 'bilinear'")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if mode != "nearest" and (mode == "bilinear") != (spatial == 2):
        raise ValueError(f"interpolate: mode {mode!r} does not fit {spatial} spatial dims")
    ins = input.shape[2:]
    if size is not None:
        outs = (size,) * spatial if isinstance(size, int) else tuple(size)
        ratios = [n / m for n, m in zip(ins, outs)]
    else:  # as PyTorch: the source position of output i uses 1 / scale_factor itself
        factors = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,)
        factors = factors * spatial if len(factors) == 1 else factors
        outs = tuple(int(math.floor(n * f)) for n, f in zip(ins, factors))
        ratios = [1.0 / f for f in factors]
    if len(outs) != spatial or min(outs) < 1:
        raise ValueError(f"interpolate: output size {outs} for {spatial} spatial dims")
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
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor")
        num_classes = int(ops.max(tensor).item()) + 1
    return ops.one_hot(tensor, num_classes=num_classes)


def pad(input, pad, mode="constant", value=None):
    """PyTorch's pad: `pad` holds (before, after) pairs from the last dim backwards, so
    pad(x, (1, 1)) pads the last dim; mode 'constant' (with `value`), 'reflect', 'replicate'
    or 'circular' (nn/spatial.py)."""
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise UnsupportedError(f"pad: mode {mode!r} takes no value (got {value!r})")
        return _spatial.pad_modes(input, pad, mode)
    if len(pad) % 2 or len(pad) > 2 * input.ndim:
        raise ValueError(f"pad: {len(pad)} values for a tensor of {input.ndim} dims")
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
    "gelu",
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


# ---- spatial layers (more of PyTorch's): transposed convolutions, 1-d and adaptive pools,
# pixel and channel shuffles, unfold / fold, and pad's other modes (nbflow/nn/spatial.py)

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
