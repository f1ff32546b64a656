"""More of PyTorch's losses: multi_margin_loss, multilabel_margin_loss and
triplet_margin_with_distance_loss composed from nbflow's ops (gradients and graph mode come
with them), and the modules CTCLoss, MultiMarginLoss, MultiLabelMarginLoss,
TripletMarginWithDistanceLoss and NLLLoss2d. ctc_loss itself is an op (nbflow/ops/ctc.py).

nbflow.nn.functional imports this module at its end and re-exports FUNCTIONS; nbflow.nn
re-exports MODULES. `F` is read only when a loss is called (this module is imported while
nbflow.nn.functional finishes loading).
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import ops
from ..argcheck import integer
from ..core.errors import DomainError, ShapeError
from . import functional as F
from .loss import NLLLoss, PairwiseDistance, _LegacyLoss, _Loss

# ---------------------------------------------------------------- functions


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
    reduction = F._reduction("multi_margin_loss", reduction, size_average, reduce)
    if not isinstance(p, (int, float, np.integer, np.floating)) or p not in (1, 2):
        raise DomainError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p!r}")
    if weight is not None and weight.ndim != 1:
        raise ShapeError(f"multi_margin_loss: weight must be 1-D, got shape {tuple(weight.shape)}")
    if target.ndim != max(input.ndim - 1, 0) or (
        input.ndim == 2 and target.shape[0] not in (input.shape[0], -1)
    ):
        raise ShapeError(
            f"multi_margin_loss: target of shape {tuple(target.shape)} must be (N,) for input "
            f"of shape {tuple(input.shape)}"
        )
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
    return F._reduce(ops.squeeze(loss, 0) if single else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over the target classes j and the other classes i of max(0, 1 - (x[j] - x[i])) / C
    per sample; target (input's shape) lists class indices up to its first -1."""
    reduction = F._reduction("multilabel_margin_loss", reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(
            f"multilabel_margin_loss: target of shape {tuple(target.shape)} must have the "
            f"input's shape {tuple(input.shape)}"
        )
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
    return F._reduce(ops.squeeze(loss, 0) if single else loss, reduction)


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)) with any distance function
    (default pairwise_distance); swap uses min(d(anchor, negative), d(positive, negative))."""
    reduction = F._reduction("triplet_margin_with_distance_loss", reduction)
    if margin <= 0:
        raise DomainError(
            f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}"
        )
    F._same_dims(
        "triplet_margin_with_distance_loss", anchor=anchor, positive=positive, negative=negative
    )
    distance = F.pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = ops.minimum(d_neg, distance(positive, negative))
    return F._reduce(ops.relu(margin + d_pos - d_neg), reduction)


FUNCTIONS = ["multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss"]


# ---------------------------------------------------------------- modules


class CTCLoss(_Loss):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction)
        self.blank = integer(blank, "CTCLoss: blank")
        self.zero_infinity = bool(zero_infinity)

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ops.ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )


class MultiMarginLoss(_LegacyLoss):
    def __init__(
        self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"
    ):
        super().__init__(size_average, reduce, reduction)
        if p not in (1, 2):
            raise DomainError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p!r}")
        if weight is not None and weight.ndim != 1:
            raise ShapeError(f"MultiMarginLoss: weight must be 1-D, got {weight.ndim}-D")
        self.register_buffer("weight", weight)
        self.p, self.margin = p, float(margin)

    def forward(self, input, target):
        return multi_margin_loss(
            input, target, self.p, self.margin, self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_LegacyLoss):
    def forward(self, input, target):
        return multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction)
        if margin <= 0:
            raise DomainError(
                f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}"
            )
        self.distance_function = distance_function or PairwiseDistance()
        self.margin, self.swap = float(margin), bool(swap)

    def forward(self, anchor, positive, negative):
        return triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated alias of NLLLoss (with its legacy size_average and reduce)."""

    def __init__(
        self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
    ):
        warnings.warn(
            "NLLLoss2d has been deprecated: use NLLLoss instead, a drop-in replacement",
            FutureWarning,
            stacklevel=2,
        )
        reduction = F._reduction("NLLLoss2d", reduction, size_average, reduce)
        super().__init__(weight, ignore_index=ignore_index, reduction=reduction)


MODULES = [
    "CTCLoss",
    "MultiLabelMarginLoss",
    "MultiMarginLoss",
    "NLLLoss2d",
    "TripletMarginWithDistanceLoss",
]

__all__ = FUNCTIONS + MODULES
