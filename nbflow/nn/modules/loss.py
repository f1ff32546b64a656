"""Loss modules: PyTorch's nn.*Loss classes, each calling its nbflow.nn.functional loss with
the options given at construction (class weights are buffers: they follow .to(device) and
state_dict)."""

from __future__ import annotations

import warnings

from ... import ops
from ...argcheck import integer, real, tensors
from ...core.errors import AttrError, DomainError, ShapeError
from .. import functional as F
from ..functional.loss import resolve_reduction
from .distance import PairwiseDistance
from .module import Module
from .utils import flag, ints, reals

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
            raise DomainError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = integer(ignore_index, "CrossEntropyLoss: ignore_index")
        self.label_smoothing = real(label_smoothing, "CrossEntropyLoss: label_smoothing")

    def forward(self, input, target):
        return F.cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        [self.ignore_index] = ints(self, ignore_index=ignore_index)

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, self.reduction, self.pos_weight
        )


class _LegacyLoss(_Loss):
    """A loss taking PyTorch's deprecated size_average and reduce (which, when given, set the
    reduction as in PyTorch) before reduction."""

    more_reductions: tuple = ()

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        if size_average is not None or reduce is not None:
            reduction = resolve_reduction(type(self).__name__, reduction, size_average, reduce)
        if isinstance(reduction, str) and reduction in self.more_reductions:
            Module.__init__(self)
            self.reduction = reduction
        else:
            super().__init__(reduction)


class BCELoss(_LegacyLoss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = real(delta, "HuberLoss: delta")

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_LegacyLoss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        [self.beta] = reals(self, beta=beta)

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class KLDivLoss(_LegacyLoss):
    more_reductions = ("batchmean",)

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = flag(self, "log_target", log_target)

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_LegacyLoss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        [self.margin] = reals(self, margin=margin)

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_LegacyLoss):
    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = real(margin, "HingeEmbeddingLoss: margin")

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class SoftMarginLoss(_LegacyLoss):
    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_LegacyLoss):
    def __init__(
        self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full = flag(self, "log_input", log_input), flag(self, "full", full)
        [self.eps] = reals(self, eps=eps)

    def forward(self, log_input, target):
        return F.poisson_nll_loss(
            log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, [self.eps] = flag(self, "full", full), reals(self, eps=eps)

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class CosineEmbeddingLoss(_LegacyLoss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        [self.margin] = reals(self, margin=margin)

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(
            input1, input2, target, self.margin, reduction=self.reduction
        )


class TripletMarginLoss(_LegacyLoss):
    def __init__(
        self,
        margin=1.0,
        p=2.0,
        eps=1e-6,
        swap=False,
        size_average=None,
        reduce=None,
        reduction="mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.margin, self.p, self.eps = reals(self, margin=margin, p=p, eps=eps)
        if self.margin <= 0:
            raise AttrError(f"TripletMarginLoss: margin must be positive, got {margin}")
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            reduction=self.reduction,
        )


class MultiLabelSoftMarginLoss(_LegacyLoss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class CTCLoss(_Loss):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction)
        self.blank = integer(blank, "CTCLoss: blank")
        self.zero_infinity = flag(self, "zero_infinity", zero_infinity)

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
        if real(p, "MultiMarginLoss: p") not in (1, 2):
            raise DomainError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p!r}")
        tensors("MultiMarginLoss", weight=0 if weight is None else weight)
        ndim = None if weight is None else getattr(weight, "ndim", 0)  # (a number is 0-d)
        if ndim not in (None, 1):
            raise ShapeError(f"MultiMarginLoss: weight must be 1-D, got {ndim}-D")
        self.register_buffer("weight", weight)
        self.p, [self.margin] = p, reals(self, margin=margin)

    def forward(self, input, target):
        return F.multi_margin_loss(
            input, target, self.p, self.margin, self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_LegacyLoss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction)
        [self.margin] = reals(self, margin=margin)
        if self.margin <= 0:
            raise DomainError(
                f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}"
            )
        self.distance_function = distance_function or PairwiseDistance()
        self.swap = flag(self, "swap", swap)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
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
        reduction = resolve_reduction("NLLLoss2d", reduction, size_average, reduce)
        super().__init__(weight, ignore_index=ignore_index, reduction=reduction)


__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "MSELoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss",
    "NLLLoss2d",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]
