"""AdaptiveLogSoftmaxWithLoss: it computes each cluster's log-softmax for every row and keeps
it where the target falls in that cluster (PyTorch runs a cluster on its rows only: that
selection has a data-dependent size, which a traced program cannot have). Outputs, loss and
gradients are PyTorch's."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ... import ops
from ...argcheck import integers, real
from ...core import dtypes as dt
from ...core import graph_mode
from ...core.dtypes import as_dtype
from ...core.errors import DomainError, DTypeError, ShapeError
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module
from .utils import ints

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """PyTorch's adaptive softmax (Grave et al.): the classes below cutoffs[0] (the shortlist)
    and one entry per cluster share the head's softmax; cluster i's classes [cutoffs[i],
    cutoffs[i+1]) get their own softmax from a two-layer projection of size in_features //
    div_value^(i+1). forward(input (N, in_features), target (N,)) -> (output: each target's
    log-probability, loss: the mean of -output); log_prob(input) gives all n_classes."""

    def __init__(
        self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
        dtype=None,
    ):  # fmt: skip
        super().__init__()
        in_features, n_classes = ints(self, in_features=in_features, n_classes=n_classes)
        div_value = real(div_value, "AdaptiveLogSoftmaxWithLoss: div_value")
        if not (math.isfinite(div_value) and div_value > 0):  # (it divides in_features)
            raise DomainError(f"AdaptiveLogSoftmaxWithLoss: div_value must be > 0, got {div_value}")
        cutoffs = list(integers(cutoffs, "AdaptiveLogSoftmaxWithLoss: cutoffs"))
        if len(cutoffs) == 0:
            raise ShapeError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise DomainError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        dtype = as_dtype(dtype)
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = [int(c) for c in cutoffs] + [self.n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(self.in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(self.in_features, hidden, bias=False, dtype=dtype),
                    Linear(hidden, size, bias=False, dtype=dtype),
                )
            )
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check(self, input, target):
        name = type(self).__name__
        if target.ndim == 1:
            if input.ndim != 2:
                raise ShapeError(
                    f"{name}: 1D target tensor expects 2D input tensors, but found inputs with "
                    f"size {tuple(input.shape)}"
                )
            if input.shape[0] != target.shape[0]:
                raise ShapeError(
                    f"{name}: Input and target should have the same size in the batch dimension "
                    f"(input {tuple(input.shape)}, target {tuple(target.shape)})"
                )
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ShapeError(
                    f"{name}: 0D target tensor expects 1D input tensors, but found inputs with "
                    f"size {tuple(input.shape)}"
                )
        else:
            raise ShapeError(f"{name}: 0D or 1D target tensor expected, multi-target not supported")
        if np.dtype(target.dtype).kind not in "iu":
            raise DTypeError(f"{name}: target must be an integer tensor, got {target.dtype}")
        if not graph_mode():  # (a traced target has no values: an
            values = np.asarray(target.numpy())  # invalid one fails the head's gather)
            if values.size and (values.min() < 0 or values.max() >= self.n_classes):
                raise DomainError(
                    f"{name}: Target values should be in [0, {self.n_classes - 1}], but values "
                    f"in range [{values.min()}, {values.max()}] were found."
                )

    def forward(self, input, target):
        self._check(input, target)
        batched = target.ndim > 0
        x = input if batched else ops.unsqueeze(input, 0)
        t = (target if batched else ops.unsqueeze(target, 0)).astype(dt.int64)
        head = F.log_softmax(self.head(x), dim=1)
        # the head's column for each target: itself in the shortlist, else its cluster's; an
        # invalid target points past the head (take_along_axis then raises)
        bucket = sum((t >= c).astype(dt.int64) for c in self.cutoffs)
        column = ops.where(bucket == 0, t, bucket + (self.shortlist_size - 1))
        column = ops.where(t < 0, self.head_size, column)
        output = _pick(head, column)
        for i, tail in enumerate(self.tail):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            inside = (t >= low) & (t < high)
            local = _pick(F.log_softmax(tail(x), dim=1), ops.clip(t - low, 0, high - low - 1))
            output = output + ops.where(inside, local, 0.0)
        loss = ops.mean(-output)
        return _ASMoutput(output if batched else ops.squeeze(output, 0), loss)

    def log_prob(self, input):
        """The log-probabilities of all n_classes for each row of input (N, in_features)."""
        if input.ndim != 2:
            raise ShapeError(
                f"{type(self).__name__}.log_prob: expects input (N, in_features), got "
                f"{tuple(input.shape)}"
            )
        head = F.log_softmax(self.head(input), dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = head[:, self.shortlist_size + i : self.shortlist_size + i + 1]
            parts.append(F.log_softmax(tail(input), dim=1) + cluster)
        return ops.concat(parts, axis=1)

    def predict(self, input):
        """The most probable class of each row: log_prob(input).argmax(1) (PyTorch's shortcut
        through the head picks the same classes)."""
        return ops.argmax(self.log_prob(input), axis=1)


def _pick(values, columns):
    """values[i, columns[i]] for each row i."""
    return ops.squeeze(ops.take_along_axis(values, ops.unsqueeze(columns, 1), 1), 1)


__all__ = ["AdaptiveLogSoftmaxWithLoss"]
