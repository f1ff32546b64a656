"""Distances: cosine_similarity, pairwise_distance and pdist."""

import math

import numpy as np

from ... import ops
from ...argcheck import real, tensors
from ...core.errors import AttrError, ShapeError
from .helpers import _index, check_known_dims
from .sampling import _floats


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


def pdist(input, p=2):
    """PyTorch's F.pdist: the p-norm distances between the rows of an (N, M) input, pair (i, j)
    for i < j in row-major order, (N (N - 1) / 2,). The gradient is 0 where two rows are equal
    (and, for p < 1, along a coordinate where they agree), as PyTorch's."""
    fn = "pdist"
    if input.ndim != 2:
        raise ShapeError(f"{fn}: only supports 2D tensors, got {input.ndim}D {tuple(input.shape)}")
    _floats(input, fn)
    if not isinstance(p, (int, float, np.integer, np.floating)) or isinstance(p, bool) or p < 0:
        raise AttrError(f"{fn}: only supports non-negative p values, got {p!r}")
    check_known_dims(input, fn, 0)
    first, second = np.triu_indices(input.shape[0], 1)
    diff = ops.index_select(input, 0, _index(first, input)) - ops.index_select(
        input, 0, _index(second, input)
    )
    if p == 0 or math.isinf(p):
        return ops.norm(diff, p, axis=1)
    size = ops.abs(diff)
    nonzero = size > 0
    powered = ops.where(nonzero, ops.where(nonzero, size, 1.0) ** p, 0.0)
    total = ops.sum(powered, axis=1)
    positive = total > 0
    return ops.where(positive, ops.where(positive, total, 1.0) ** (1.0 / p), 0.0)


__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]
