"""Scaled dot-product attention and multi-head attention: AttentionHeads computes both
nn.MultiheadAttention's forward and F.multi_head_attention_forward."""

import math

from ... import ops
from ...argcheck import integer, real
from ...core import dtypes as dt
from ...core.errors import ArgumentError, DomainError, DTypeError, ShapeError, UnsupportedError


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


class AttentionHeads:
    """Multi-head attention over given weights, sequence first unless batch_first: one
    computation for MultiheadAttention's forward (its parameters, its out_proj module) and
    F.multi_head_attention_forward (PyTorch's, the caller's tensors). The q, k and v
    projections (one GEMM for self-attention), the heads as a batch dim, the attention weights
    (attention_weights, above) and the output projection; errors name `name`."""

    WEIGHTS = ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight")
    WEIGHTS += ("in_proj_bias", "bias_k", "bias_v")

    def __init__(
        self,
        name,
        embed_dim,
        num_heads,
        weights,
        out_proj,
        *,
        add_zero_attn=False,
        dropout=0.0,
        batch_first=False,
        generator=None,
    ):
        self.name, self.embed_dim, self.num_heads = name, embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        for key in self.WEIGHTS:
            setattr(self, key, weights[key])
        self._qkv_same_embed_dim = self.in_proj_weight is not None
        same = self._qkv_same_embed_dim
        self.kdim = embed_dim if same else self.k_proj_weight.shape[1]
        self.vdim = embed_dim if same else self.v_proj_weight.shape[1]
        self.out_proj, self.add_zero_attn, self.dropout = out_proj, add_zero_attn, dropout
        self.batch_first, self.generator = batch_first, generator

    def __call__(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        batched = self._check(query, key, value, key_padding_mask, attn_mask)
        self_attention = query is key and key is value
        # batch first inside: each head's rows then sit 3E apart in the in-projection's
        # output, not batch * 3E (sequence first), which kept the per-head products out of cache
        if not batched:
            query, key, value = (ops.unsqueeze(t, 0) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = ops.unsqueeze(key_padding_mask, 0)
        elif not self.batch_first:
            query, key, value = (ops.transpose(t, 0, 1) for t in (query, key, value))
        batch, length, source = query.shape[0], query.shape[1], key.shape[1]
        self._check_masks(attn_mask, key_padding_mask, batch, length, source)
        mask = self._mask(query, attn_mask, key_padding_mask, is_causal, batch, length, source)
        if self._plain(query, self_attention, mask, need_weights):
            qkv = ops.linear(query, self.in_proj_weight, self.in_proj_bias)
            scale = 1.0 / math.sqrt(self.head_dim)
            out, weights = ops.self_attention(qkv, heads=self.num_heads, scale=scale), None
        else:
            out, weights = self._heads_attention(query, key, value, self_attention, mask)
        out = self.out_proj(out)
        if not batched:
            out = ops.squeeze(out, 0)
        elif not self.batch_first:
            out = ops.transpose(out, 0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = ops.mean(weights, axis=1)
        return out, (weights if batched else ops.squeeze(weights, 0))

    def _plain(self, query, self_attention, mask, need_weights):
        """Whether the attention is the self_attention op's: one in-projection, no mask,
        dropout, added keys or weights returned, on the CPU."""
        return (
            self_attention
            and self._qkv_same_embed_dim
            and mask is None
            and not need_weights
            and not self.dropout
            and self.bias_k is None
            and not self.add_zero_attn
            and not getattr(query, "is_cuda", False)
        )

    def _heads_attention(self, query, key, value, self_attention, mask):
        """(output before the out-projection (batch, L, E), attention weights (batch, heads,
        L, S)), op by op."""
        batch, length, source = query.shape[0], query.shape[1], key.shape[1]
        q, k, v = self._project(query, key, value, self_attention)
        if self.bias_k is not None:  # a learned key and value at the end of each sequence
            k = ops.cat([k, ops.broadcast_to(self.bias_k, (batch, 1, self.embed_dim))], axis=1)
            v = ops.cat([v, ops.broadcast_to(self.bias_v, (batch, 1, self.embed_dim))], axis=1)
        q, k, v = (self._heads(t) for t in (q, k, v))
        if self.add_zero_attn:  # and a zero one
            zeros = k.new_zeros((batch, self.num_heads, 1, self.head_dim))
            k, v = ops.cat([k, zeros], axis=2), ops.cat([v, zeros], axis=2)
        if mask is not None and k.shape[2] > source:  # the appended keys are always seen
            mask = ops.pad(mask, ((0, 0),) * (mask.ndim - 1) + ((0, k.shape[2] - source),))
        weights = attention_weights(q, k, mask)
        if self.dropout:
            weights = ops.dropout(weights, self.dropout, True, self.generator)
        out = ops.matmul(weights, v)  # (batch, heads, L, head_dim)
        return ops.reshape(ops.permute(out, 0, 2, 1, 3), batch, length, self.embed_dim), weights

    def _project(self, query, key, value, self_attention):
        """The in-projections: (batch, L, E), (batch, S, E), (batch, S, E)."""
        e = self.embed_dim
        biases = (None,) * 3
        if self.in_proj_bias is not None:
            biases = ops.split(self.in_proj_bias, e)
        if self._qkv_same_embed_dim and self_attention:  # one GEMM for the three
            return ops.split(ops.linear(query, self.in_proj_weight, self.in_proj_bias), e, axis=-1)
        if self._qkv_same_embed_dim:
            weights = ops.split(self.in_proj_weight, e, axis=0)
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(ops.linear(t, w, b) for t, w, b in zip((query, key, value), weights, biases))

    def _heads(self, t):
        """(batch, S, E) -> (batch, heads, S, head_dim)."""
        batch, s = t.shape[0], t.shape[1]
        return ops.permute(ops.reshape(t, batch, s, self.num_heads, self.head_dim), 0, 2, 1, 3)

    def _mask(self, query, attn_mask, key_padding_mask, is_causal, batch, length, source):
        """The masks as one float mask (in query's dtype, on its device) added to the
        scores: (L, S), (batch, heads, L, S) or (batch, 1, 1, S); None when none is given."""
        total = None
        if is_causal:  # position i sees positions <= i
            full = query.new_full((length, source), -math.inf)
            total = ops.triu(full, 1)
        if attn_mask is not None:
            mask = _additive(attn_mask, query)
            if mask.ndim == 3:  # (batch * heads, L, S)
                mask = ops.reshape(mask, batch, self.num_heads, length, source)
            total = mask if total is None else total + mask
        if key_padding_mask is not None:
            padding = ops.reshape(_additive(key_padding_mask, query), batch, 1, 1, source)
            total = padding if total is None else total + padding
        return total

    def _check(self, query, key, value, key_padding_mask, attn_mask):
        """PyTorch's checks of the input dims and features; True when batched."""
        if query.ndim not in (2, 3):
            raise ShapeError(
                f"{self.name}: query must be unbatched 2-D or batched 3-D, got shape "
                f"{tuple(query.shape)}"
            )
        batched = query.ndim == 3
        kind = "batched (3-D)" if batched else "unbatched (2-D)"
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(
                f"{self.name}: for {kind} query, key and value must be {query.ndim}-D, "
                f"got shapes {tuple(key.shape)} and {tuple(value.shape)}"
            )
        if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
            raise ShapeError(
                f"{self.name}: for {kind} query, key_padding_mask must be "
                f"{query.ndim - 1}-D, got shape {tuple(key_padding_mask.shape)}"
            )
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise ShapeError(
                f"{self.name}: attn_mask must be 2-D or 3-D, got shape {tuple(attn_mask.shape)}"
            )
        for name, t, size in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            if not _fits(t.shape[-1:], (size,)):
                raise ShapeError(
                    f"{self.name}: {name} must have {size} features (the last dim), got "
                    f"shape {tuple(t.shape)}"
                )
        if not _fits(key.shape[:-1], value.shape[:-1]):
            raise ShapeError(
                f"{self.name}: key and value must have the same sequence and batch dims, "
                f"got shapes {tuple(key.shape)} and {tuple(value.shape)}"
            )
        axis = 0 if self.batch_first else 1
        if batched and not _fits(query.shape[axis : axis + 1], key.shape[axis : axis + 1]):
            raise ShapeError(
                f"{self.name}: query and key must have the same batch size, got shapes "
                f"{tuple(query.shape)} and {tuple(key.shape)}"
            )
        return batched

    def _check_masks(self, attn_mask, key_padding_mask, batch, length, source):
        """The masks' dtypes (bool or float) and shapes, as PyTorch's."""
        expected = {"key_padding_mask": (batch, source)}
        if attn_mask is not None:  # (L, S) for every batch and head, or one per pair
            heads = (batch * self.num_heads,) if attn_mask.ndim == 3 else ()
            expected["attn_mask"] = (*heads, length, source)
        for name, mask in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask)):
            if mask is None:
                continue
            if mask.dtype != bool and not dt.is_float(mask.dtype):
                raise DTypeError(
                    f"{self.name}: {name} must be bool or floating point, got {mask.dtype}"
                )
            if not _fits(mask.shape, expected[name]):
                raise ShapeError(
                    f"{self.name}: {name} has shape {tuple(mask.shape)}, expected "
                    f"{expected[name]} (batch {batch}, target length {length}, source length "
                    f"{source}, {self.num_heads} heads)"
                )


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
    if static_k is not None or static_v is not None:
        raise UnsupportedError("multi_head_attention_forward: static_k and static_v")
    name = "multi_head_attention_forward"
    embed_dim = integer(embed_dim_to_check, f"{name}: embed_dim_to_check")
    heads = integer(num_heads, f"{name}: num_heads")
    if embed_dim <= 0 or heads <= 0 or embed_dim % heads:
        raise DomainError(
            f"{name}: embed_dim {embed_dim} must be a positive multiple of num_heads {heads}"
        )
    if query.ndim < 1 or not _fits(query.shape[-1:], (embed_dim,)):
        raise ShapeError(
            f"{name}: query {tuple(query.shape)} must have embed_dim_to_check={embed_dim} features"
        )
    separate = bool(use_separate_proj_weight)
    projections = (q_proj_weight, k_proj_weight, v_proj_weight) if separate else (in_proj_weight,)
    if any(w is None for w in projections):
        raise ArgumentError(
            f"{name}: give in_proj_weight, or use_separate_proj_weight=True with q_proj_weight, "
            "k_proj_weight and v_proj_weight"
        )
    if any(w.ndim != 2 for w in projections):
        raise ShapeError(f"{name}: the projection weights must be matrices (2-D)")
    weights = {
        "in_proj_weight": None if separate else in_proj_weight,
        "q_proj_weight": q_proj_weight if separate else None,
        "k_proj_weight": k_proj_weight if separate else None,
        "v_proj_weight": v_proj_weight if separate else None,
        "in_proj_bias": in_proj_bias,
        "bias_k": bias_k,
        "bias_v": bias_v,
    }
    dropout = real(dropout_p, f"{name}: dropout_p") if training else 0.0
    attention = AttentionHeads(
        name,
        embed_dim,
        heads,
        weights,
        lambda x: ops.linear(x, out_proj_weight, out_proj_bias),
        add_zero_attn=add_zero_attn,
        dropout=dropout,
    )
    return attention(
        query,
        key,
        value,
        key_padding_mask,
        need_weights,
        attn_mask,
        average_attn_weights,
        is_causal,
    )


def _fits(shape, expected):
    """Shapes equal, a graph value's unknown dim (-1) fitting any size."""
    pairs = zip(tuple(shape), tuple(expected))
    return len(shape) == len(expected) and all(a == b or -1 in (a, b) for a, b in pairs)


def _additive(mask, like):
    """A bool mask (True: not allowed) as 0 / -inf in `like`'s dtype, on its device, to add
    to the scores; a float mask as it is (PyTorch adds it as given)."""
    if mask.dtype == bool:
        return like.new_zeros(tuple(mask.shape)).masked_fill(mask, -math.inf)
    return mask


__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]
