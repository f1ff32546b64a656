"""Scaled dot-product attention, and the attention weights that MultiheadAttention shares."""

import math

from ... import ops
from ...argcheck import integer, real
from ...core.errors import ArgumentError, ShapeError, UnsupportedError


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


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    """PyTorch's F.multi_head_attention_forward: nn.MultiheadAttention's forward (sequence
    first: (L, N, E), or unbatched (L, E)) over the given projection weights and biases;
    returns (output, attention weights or None)."""
    from ..modules.attention import GivenAttention  # (the modules are built on functional)

    if static_k is not None or static_v is not None:
        raise UnsupportedError("multi_head_attention_forward: static_k and static_v")
    embed_dim = integer(embed_dim_to_check, "multi_head_attention_forward: embed_dim_to_check")
    if query.ndim < 1 or query.shape[-1] != embed_dim:
        raise ShapeError(
            f"multi_head_attention_forward: query {tuple(query.shape)} must have "
            f"embed_dim_to_check={embed_dim} features"
        )
    separate = bool(use_separate_proj_weight)
    projections = (q_proj_weight, k_proj_weight, v_proj_weight) if separate else (in_proj_weight,)
    if any(w is None for w in projections):
        raise ArgumentError(
            "multi_head_attention_forward: give in_proj_weight, or use_separate_proj_weight="
            "True with q_proj_weight, k_proj_weight and v_proj_weight"
        )
    weights = {
        "in_proj_weight": None if separate else in_proj_weight,
        "q_proj_weight": q_proj_weight,
        "k_proj_weight": k_proj_weight,
        "v_proj_weight": v_proj_weight,
        "in_proj_bias": in_proj_bias,
        "bias_k": bias_k,
        "bias_v": bias_v,
        "out_proj_weight": out_proj_weight,
        "out_proj_bias": out_proj_bias,
    }
    dropout = real(dropout_p, "multi_head_attention_forward: dropout_p")
    heads = integer(num_heads, "multi_head_attention_forward: num_heads")
    layer = GivenAttention(embed_dim, heads, weights, add_zero_attn, dropout, training)
    return layer.forward(
        query,
        key,
        value,
        key_padding_mask,
        need_weights,
        attn_mask,
        average_attn_weights,
        is_causal,
    )


__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]
