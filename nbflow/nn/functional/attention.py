"""Scaled dot-product attention, and the attention weights that MultiheadAttention shares."""

import math

from ... import ops
from ...core.errors import ShapeError


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


__all__ = ["scaled_dot_product_attention"]
