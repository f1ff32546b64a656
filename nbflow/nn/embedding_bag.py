"""PyTorch's F.embedding_bag and nn.EmbeddingBag: sums, means or maxima of bags of embeddings
without materializing the (bags, entries, dim) lookup.

Composed from ops: index_select gathers the rows, index_add (sum, mean) or scatter_reduce
'amax' (max) reduces them into their bags. The bag of each entry comes from the offsets on
the host (they are data of the call, like packing lengths); the indices themselves may be
graph vars. Entries equal to padding_idx are left out of their bag (and of a mean's count);
an empty bag gives zeros, as in PyTorch.
"""

from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..core import UNKNOWN, as_int, no_grad
from ..core.errors import ShapeError, UnsupportedError
from ..eager.tensor import Tensor, tensor
from . import init
from .module import Module, Parameter


def _bags(input, offsets, include_last_offset, device):
    """(flat indices (n,), the bag of each entry as an int64 tensor (n,) on `device`, number
    of bags)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None")
        bags, per_bag = input.shape
        seg = np.repeat(np.arange(bags), per_bag)
        return ops.reshape(input, -1), tensor(seg.astype(np.int64), device=device), bags
    if input.ndim != 1 or offsets is None:
        raise ShapeError(f"input must be 2-D, or 1-D with offsets; got {tuple(input.shape)}")
    if not isinstance(offsets, (Tensor, list, tuple, np.ndarray)):  # a graph value (@jit)
        return _graph_bags(input, offsets, include_last_offset)
    offs = np.asarray(offsets.numpy() if isinstance(offsets, Tensor) else offsets, np.int64)
    n = input.shape[0]
    if offs.ndim != 1 or (len(offs) and offs[0] != 0) or np.any(np.diff(offs) < 0):
        raise ShapeError(f"offsets must start at 0 and never decrease, got {offs.tolist()}")
    if len(offs) and offs[-1] > n:
        raise ShapeError(f"offsets {offs.tolist()} point past the {n} indices")
    starts = offs[:-1] if include_last_offset else offs
    seg = np.searchsorted(starts, np.arange(n), side="right") - 1
    return input, tensor(seg.astype(np.int64), device=device), len(starts)


def _graph_bags(input, offsets, include_last_offset):
    """_bags for offsets known only when the program runs: the bag of entry i is the number
    of starts <= i, less 1. The offsets are checked as they run (the first 0, none smaller
    than the one before, none past the input), by checked_range ops whose outputs make the
    starts, so the checks run as eager mode's do."""
    count = offsets.shape[0]
    if count == UNKNOWN:
        raise UnsupportedError("embedding_bag: under @jit the number of offsets must be known")
    n = input.shape[0]
    high = n if n != UNKNOWN else (1 << 62)
    what = "embedding_bag: offsets (from 0, never decreasing, up to the number of indices)"
    parts = [ops.checked_range(offsets[:1], low=0, high=0, what=what)]
    if count > 1:
        parts.append(ops.checked_range(offsets[1:] - offsets[:-1], low=0, high=high, what=what))
    offs = ops.checked_range(ops.cumsum(ops.concat(parts), 0), low=0, high=high, what=what)
    starts = offs[:-1] if include_last_offset else offs
    if n != UNKNOWN:
        positions = ops.arange(n, dtype=offs.dtype)
    else:
        positions = ops.cumsum(ops.ones_like(input, dtype=offs.dtype), 0) - 1
    hit = ops.reshape(positions, (-1, 1)) >= ops.reshape(starts, (1, -1))
    seg = ops.sum(ops.cast(hit, "int64"), axis=1) - 1
    return input, seg, count - 1 if include_last_offset else count


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type=2,
    scale_grad_by_freq=False,
    mode="mean",
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=None,
):
    """(bags, dim): each bag's rows of `weight` reduced by `mode` ('sum', 'mean', 'max').
    Bags are the rows of a 2-D input, or the runs of a 1-D input starting at `offsets`.
    per_sample_weights scales each entry ('sum' only). max_norm and scale_grad_by_freq are
    not implemented; sparse gradients are dense here."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise UnsupportedError("embedding_bag: max_norm and scale_grad_by_freq are unsupported")
    if per_sample_weights is not None and mode != "sum":
        raise UnsupportedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request"
        )
    # what is made here goes on the weight's device (a graph value has none: the executor
    # places it)
    device = getattr(weight, "device", None)
    idx, seg, bags = _bags(input, offsets, include_last_offset, device)
    rows = ops.index_select(weight, 0, idx)  # (n, dim)
    if per_sample_weights is not None:
        rows = rows * ops.reshape(per_sample_weights, (-1, 1))
    zeros = ops.zeros((bags, weight.shape[1]), dtype=weight.dtype, device=device)
    if padding_idx is not None:
        keep = ops.cast(idx != (padding_idx % weight.shape[0]), weight.dtype)  # (n,)
    else:
        keep = ops.ones(idx.shape, dtype=weight.dtype, device=device)
    count = ops.zeros((bags, 1), dtype=weight.dtype, device=device)
    count = ops.index_add(count, 0, seg, ops.reshape(keep, (-1, 1)))
    if mode == "max":
        rows = ops.where(ops.reshape(keep, (-1, 1)) > 0, rows, -math.inf)
        full_seg = ops.reshape(seg, (-1, 1)) + ops.zeros(rows.shape, dtype=seg.dtype, device=device)
        out = ops.scatter_reduce(zeros, 0, full_seg, rows, "amax", include_self=False)
        return ops.where(count > 0, out, 0.0)
    out = ops.index_add(zeros, 0, seg, rows * ops.reshape(keep, (-1, 1)))
    return out / ops.maximum(count, 1.0) if mode == "mean" else out


class EmbeddingBag(Module):
    """A lookup table whose bags of rows are reduced on the fly (F.embedding_bag); weight
    (num_embeddings, embedding_dim) initialised normal(0, 1), the padding_idx row zero."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        self.num_embeddings = as_int(num_embeddings, "EmbeddingBag: num_embeddings")
        self.embedding_dim = as_int(embedding_dim, "EmbeddingBag: embedding_dim")
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise ValueError(f"padding_idx {padding_idx} out of range")
            padding_idx %= self.num_embeddings
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is not None:
            self.weight = Parameter(_weight)
        else:
            self.weight = Parameter(ops.zeros((num_embeddings, embedding_dim), dtype=dtype))
            self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        init.normal_(self.weight, generator=generator)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"


__all__ = ["EmbeddingBag", "embedding_bag"]
