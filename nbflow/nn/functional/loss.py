"""Losses: PyTorch's F.*_loss names, with PyTorch's `reduction=` (and the legacy `size_average=`
and `reduce=`). Those not ops are composed from nbflow's ops (gradients and graph mode come
with them); ctc_loss is an op (nbflow/ops/ctc.py)."""

import math

import numpy as np

from ... import ops
from ...argcheck import flag, real, shown, tensors
from ...core import dtypes as dt
from ...core.errors import ArgumentError, AttrError, DomainError, ShapeError
from .activation import logsigmoid
from .distance import pairwise_distance

binary_cross_entropy_with_logits = ops.binary_cross_entropy_with_logits


l1_loss = ops.l1_loss


mse_loss = ops.mse_loss


nll_loss = ops.nll_loss


def cross_entropy(
    input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """The fused cross_entropy op; with class weights, log_softmax and nll_loss (which weighs
    classes as PyTorch does), plus PyTorch's weighted smoothing term: (1 - s) nll + s / C
    sum_c -w_c log p_c, a mean divided by the targets' weights as nll_loss's is. A float
    target of the input's shape holds class probabilities (PyTorch's second form)."""
    if _probabilities(input, target):
        return _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing)
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
    label_smoothing = _smoothing(label_smoothing)
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


def _probabilities(input, target):
    """Whether target holds class probabilities: a float tensor of the input's shape (1-d at
    least), PyTorch's second form of cross_entropy's target."""
    kind = getattr(target, "dtype", None)
    if kind is None or not dt.is_float(kind) or getattr(input, "ndim", 0) < 1:
        return False
    return tuple(target.shape) == tuple(input.shape)


def _smoothing(value):
    s = real(value, "cross_entropy: label_smoothing")
    if not 0.0 <= s <= 1.0:
        raise AttrError(f"cross_entropy: label_smoothing must be in [0, 1], got {s}")
    return s


def _cross_entropy_probabilities(input, target, weight, reduction, label_smoothing):
    """-sum_c w_c t_c log_softmax(input)_c per sample, t the target smoothed towards 1 / C; a
    'mean' divides by the number of samples, whatever the weights (PyTorch's)."""
    reduction = resolve_reduction("cross_entropy", reduction)
    smoothing = _smoothing(label_smoothing)
    axis = 1 if input.ndim > 1 else 0
    classes = input.shape[axis]
    if smoothing:
        target = target * (1.0 - smoothing) + smoothing / classes
    terms = target * ops.log_softmax(input, axis=axis)
    if weight is not None:
        shape = [1] * input.ndim
        shape[axis] = -1
        terms = terms * ops.reshape(weight, shape)
    losses = -ops.sum(terms, axis=axis)
    if reduction == "none":
        return losses
    return ops.mean(losses) if reduction == "mean" else ops.sum(losses)


def resolve_reduction(name, reduction, size_average=None, reduce=None, more=()):
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
    reduction = resolve_reduction("binary_cross_entropy", reduction, size_average, reduce)
    _same_shape("binary_cross_entropy", input, target)
    loss = ops.binary_cross_entropy_pointwise(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); d = input - target."""
    reduction = resolve_reduction("huber_loss", reduction)
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
    reduction = resolve_reduction("smooth_l1_loss", reduction, size_average, reduce)
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
    reduction = resolve_reduction("kl_div", reduction, size_average, reduce, more=("batchmean",))
    tensors("kl_div", input=input, target=target)
    if flag(log_target, "kl_div: log_target"):
        loss = ops.exp(target) * (target - input)
    else:  # xlogy(target, target): 0 where target is 0, with a finite gradient there
        positive = target > 0
        xlogx = ops.where(positive, target * ops.log(ops.where(positive, target, 1.0)), 0.0)
        loss = xlogx - target * input
    if reduction == "batchmean":
        total = ops.sum(loss)
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """max(0, -target (input1 - input2) + margin); target holds 1 or -1. margin is a float,
    as in PyTorch's signature: integer inputs give a float loss (the default dtype)."""
    reduction = resolve_reduction("margin_ranking_loss", reduction, size_average, reduce)
    _same_dims("margin_ranking_loss", input1=input1, input2=input2, target=target)
    margin = real(margin, "margin_ranking_loss: margin")
    return _reduce(ops.relu(-target * (input1 - input2) + margin), reduction)


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """input where target is 1, max(0, margin - input) where target is -1 (PyTorch's rule:
    the first where target != -1, the second where target != 1, summed)."""
    reduction = resolve_reduction("hinge_embedding_loss", reduction, size_average, reduce)
    margin = real(margin, "hinge_embedding_loss: margin")
    tensors("hinge_embedding_loss", input=input, target=target)
    loss = ops.where(target != 1, ops.relu(margin - input), 0.0)
    loss = loss + ops.where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target input)), averaged over every element by 'mean'."""
    reduction = resolve_reduction("soft_margin_loss", reduction, size_average, reduce)
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
    reduction = resolve_reduction("poisson_nll_loss", reduction, size_average, reduce)
    tensors("poisson_nll_loss", input=input, target=target)
    full = flag(full, "poisson_nll_loss: full")
    if flag(log_input, "poisson_nll_loss: log_input"):
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
    reduction = resolve_reduction("gaussian_nll_loss", reduction)
    tensors("gaussian_nll_loss", input=input, target=target, var=var)
    full = flag(full, "gaussian_nll_loss: full")
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
    reduction = resolve_reduction("cosine_embedding_loss", reduction, size_average, reduce)
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
    reduction = resolve_reduction("triplet_margin_loss", reduction, size_average, reduce)
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
    reduction = resolve_reduction("multilabel_soft_margin_loss", reduction, size_average, reduce)
    tensors("multilabel_soft_margin_loss", input=input, target=target)
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = ops.mean(loss, axis=-1)
    return _reduce(loss, reduction)


# an op (nbflow/ops/ctc.py)
ctc_loss = ops.ctc_loss


def _class_scores(name, input, target):
    """(input as (N, C), target as (N, ...), whether input was one sample (C,))."""
    if input.ndim not in (1, 2):
        raise ShapeError(f"{name}: input must be (C,) or (N, C), got shape {tuple(input.shape)}")
    single = input.ndim == 1
    if single:
        input, target = ops.unsqueeze(input, 0), ops.unsqueeze(target, 0)
    return input, target, single


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """sum over i != y of weight[y] max(0, margin - x[y] + x[i])^p / C for each sample
    (input (N, C) or (C,), int target (N,) or () in [0, C)); p is 1 or 2."""
    reduction = resolve_reduction("multi_margin_loss", reduction, size_average, reduce)
    if not isinstance(p, (int, float, np.integer, np.floating)) or p not in (1, 2):
        raise DomainError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p!r}")
    if weight is not None and weight.ndim != 1:
        raise ShapeError(f"multi_margin_loss: weight must be 1-D, got shape {tuple(weight.shape)}")
    if input.ndim < 2 and tuple(target.shape) == (1,):  # (one sample's target, as PyTorch)
        target = ops.reshape(target, ())
    if target.ndim != max(input.ndim - 1, 0) or (
        input.ndim == 2 and target.shape[0] not in (input.shape[0], -1)
    ):
        raise ShapeError(
            f"multi_margin_loss: target of shape {tuple(target.shape)} must be (N,) for input "
            f"of shape {tuple(input.shape)}"
        )
    if input.ndim == 0:  # one sample of one class, as PyTorch takes it
        input = ops.reshape(input, (1,))
    x, y, single = _class_scores("multi_margin_loss", input, target)
    n_classes = x.shape[1]
    picked = ops.one_hot(y, num_classes=n_classes, dtype=x.dtype)  # (a label out of range raises)
    x_y = ops.sum(x * picked, axis=1, keepdims=True)
    hinge = ops.relu(margin - x_y + x) * (1 - picked)  # (the target's own class adds nothing)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        if weight.shape[0] not in (n_classes, -1):
            raise ShapeError(
                f"multi_margin_loss: weight of shape {tuple(weight.shape)} must be ({n_classes},)"
            )
        hinge = hinge * ops.sum(picked * weight, axis=1, keepdims=True)
    loss = ops.sum(hinge, axis=1) / n_classes
    return _reduce(ops.squeeze(loss, 0) if single else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over the target classes j and the other classes i of max(0, 1 - (x[j] - x[i])) / C
    per sample; target (input's shape) lists class indices up to its first -1."""
    reduction = resolve_reduction("multilabel_margin_loss", reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(
            f"multilabel_margin_loss: target of shape {tuple(target.shape)} must have the "
            f"input's shape {tuple(input.shape)}"
        )
    if input.ndim == 0:  # one sample of one class, as PyTorch takes it
        input, target = ops.reshape(input, (1,)), ops.reshape(target, (1,))
    x, y, single = _class_scores("multilabel_margin_loss", input, target)
    n_classes = x.shape[1]
    # labels in [-1, C) everywhere, as PyTorch checks; the ones before the first -1 count
    labels = ops.one_hot(y, num_classes=n_classes, dtype=x.dtype, ignore_index=-1)  # (N, S, C)
    before_end = ops.cumsum(ops.cast(y == -1, dtype="int64"), axis=1) == 0
    labels = labels * ops.unsqueeze(ops.cast(before_end, dtype=x.dtype), -1)
    is_target = ops.minimum(ops.sum(labels, axis=1), 1)  # (N, C)
    x_j = ops.sum(labels * ops.unsqueeze(x, 1), axis=2, keepdims=True)  # (N, S, 1)
    hinge = ops.relu(1 - x_j + ops.unsqueeze(x, 1))  # (N, S, C): target j against class i
    counted = ops.unsqueeze(ops.cast(before_end, dtype=x.dtype), -1) * ops.unsqueeze(
        1 - is_target, 1
    )
    loss = ops.sum(hinge * counted, axis=(1, 2)) / n_classes
    return _reduce(ops.squeeze(loss, 0) if single else loss, reduction)


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with any distance function
    (default pairwise_distance); swap uses min(d(anchor, negative), d(positive, negative))."""
    reduction = resolve_reduction("triplet_margin_with_distance_loss", reduction)
    margin = real(margin, "triplet_margin_with_distance_loss: margin")
    if margin <= 0:
        raise DomainError(
            f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}"
        )
    _same_dims(
        "triplet_margin_with_distance_loss", anchor=anchor, positive=positive, negative=negative
    )
    if distance_function is not None and not callable(distance_function):
        raise ArgumentError(
            "triplet_margin_with_distance_loss: distance_function must be callable, got "
            f"{shown(distance_function)}"
        )
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = ops.minimum(d_neg, distance(positive, negative))
    return _reduce(ops.relu(margin + d_pos - d_neg), reduction)


def linear_cross_entropy(
    input,
    linear_weight,
    target,
    *,
    linear_bias=None,
    weight=None,
    reduction="mean",
    ignore_index=None,
    label_smoothing=0.0,
    options=None,
):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): linear_weight
    (C, ..., in) maps input (..., in) to logits (..., C, ...) (a weight of more than 2 dims
    gives a K-dimensional loss). `options` is PyTorch's chunking strategy, a way to save
    memory that does not change the result: accepted, and the logits computed whole."""
    tensors("linear_cross_entropy", input=input, linear_weight=linear_weight)
    if linear_weight.ndim < 2 or input.ndim < 1 or input.shape[-1] != linear_weight.shape[-1]:
        raise ShapeError(
            f"linear_cross_entropy: linear_weight {tuple(linear_weight.shape)} does not map "
            f"input {tuple(input.shape)}: expected (C, ..., in), in input's last dim"
        )
    features = tuple(linear_weight.shape[:-1])
    flat_bias = None if linear_bias is None else ops.reshape(linear_bias, (-1,))
    logits = ops.linear(input, ops.reshape(linear_weight, (-1, input.shape[-1])), flat_bias)
    logits = ops.reshape(logits, (*input.shape[:-1], *features))
    ignore_index = -100 if ignore_index is None else ignore_index
    return cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing)


__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "linear_cross_entropy",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]
