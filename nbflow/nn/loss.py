"""Loss modules: PyTorch's nn.*Loss classes, each calling its nbflow.nn.functional loss with
the options given at construction (class weights are buffers: they follow .to(device) and
state_dict)."""

from __future__ import annotations

from . import functional as F
from .module import Module

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(
            input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing
        )


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = int(ignore_index)

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


__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "L1Loss", "MSELoss", "NLLLoss"]
