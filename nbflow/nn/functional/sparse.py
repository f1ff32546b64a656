"""Lookups: embedding, embedding_bag and one_hot.

embedding_bag sums, means or maxima of bags of embeddings without materializing the (bags,
entries, dim) lookup: index_select gathers the rows, index_add (sum, mean) or scatter_reduce
'amax' (max) reduces them into their bags. The bag of each entry comes from the offsets on the
host (they are data of the call, like packing lengths); the indices themselves may be graph
vars. Entries equal to padding_idx are left out of their bag (and of a mean's count); an empty
bag gives zeros, as in PyTorch."""

from __future__ import annotations

import math

import numpy as np

from ... import ops
from ...argcheck import choice, flag, integer
from ...core import UNKNOWN, no_grad
from ...core.errors import DomainError, ShapeError, UnsupportedError
from ...eager.tensor import Tensor, tensor


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
    if flag(scale_grad_by_freq, "embedding: scale_grad_by_freq") or flag(
        sparse, "embedding: sparse"
    ):
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


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows; num_classes -1 takes the largest label + 1 (eager tensors only,
    as it reads the values)."""
    num_classes = integer(num_classes, "one_hot: num_classes")
    if num_classes == -1:
        if tensor.size == 0:
            raise DomainError("one_hot: cannot infer num_classes from an empty tensor")
        num_classes = int(ops.max(tensor).item()) + 1
    return ops.one_hot(tensor, num_classes=num_classes)


def _bags(input, offsets, include_last_offset, device):
    """(flat indices (n,), the bag of each entry as an int64 tensor (n,) on `device`, number
    of bags)."""
    if input.ndim == 2:
        if offsets is not None:
            raise DomainError("embedding_bag: if input is 2D, then offsets has to be None")
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
    choice(mode, ("sum", "mean", "max"), "embedding_bag: mode")
    include_last_offset = flag(include_last_offset, "embedding_bag: include_last_offset")
    flag(sparse, "embedding_bag: sparse")
    if max_norm is not None or flag(scale_grad_by_freq, "embedding_bag: scale_grad_by_freq"):
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


__all__ = ["embedding", "embedding_bag", "one_hot"]
