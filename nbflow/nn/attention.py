"""PyTorch's MultiheadAttention, composed from nbflow's ops (so it differentiates, runs in
graph mode and on the GPU): one projection GEMM for q, k and v, the heads as a batch dim,
scaled dot-product attention (functional.attention_weights), and the output projection.
Parameters by PyTorch's names (in_proj_weight, in_proj_bias, out_proj.weight, ...)."""

from __future__ import annotations

import math

import nbflow as nb

from ..dtypes import float32
from . import functional as F
from . import init
from .layers import Linear
from .module import Module, Parameter


class MultiheadAttention(Module):
    """Attention of `num_heads` heads over embed_dim features; query, key and value share
    embed_dim (PyTorch's default layout)."""

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        batch_first=False,
        dtype=float32,
        generator=None,
    ):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout, self.batch_first, self.generator = float(dropout), batch_first, generator
        self.in_proj_weight = Parameter(nb.zeros(3 * embed_dim, embed_dim, dtype=dtype))
        if bias:
            self.in_proj_bias = Parameter(nb.zeros(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, generator=generator)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None):
        """PyTorch's: xavier-uniform projections, zero biases."""
        bound = math.sqrt(6.0 / (self.embed_dim + 3 * self.embed_dim))
        init.uniform_(self.in_proj_weight, -bound, bound, generator)
        for b in (self.in_proj_bias, self.out_proj.bias):
            if b is not None:
                init.zeros_(b)

    def forward(
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
        """(attention output like query, weights (batch, L, S), averaged over the heads
        unless average_attn_weights=False: (batch, heads, L, S); None unless need_weights).
        Masks as PyTorch's: a bool mask is True where attention is NOT allowed, a float one
        is added to the scores; attn_mask (L, S) or (batch * heads, L, S), key_padding_mask
        (batch, S)."""
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = (nb.unsqueeze(t, 1) for t in (query, key, value))
        elif self.batch_first:
            query, key, value = (nb.transpose(t, 0, 1) for t in (query, key, value))
        length, batch, _ = query.shape
        w_q, w_k, w_v = nb.split(self.in_proj_weight, self.embed_dim, axis=0)
        b_q, b_k, b_v = (
            nb.split(self.in_proj_bias, self.embed_dim) if self.in_proj_bias is not None
            else (None,) * 3
        )  # fmt: skip
        q, k, v = (self._heads(nb.linear(t, w, b)) for t, w, b in
                   ((query, w_q, b_q), (key, w_k, b_k), (value, w_v, b_v)))  # fmt: skip
        allowed = self._allowed(attn_mask, key_padding_mask, batch, length, key.shape[0])
        weights = F.attention_weights(q, k, allowed, is_causal)
        if self.dropout and self.training:
            weights = nb.dropout(weights, self.dropout, True, self.generator)
        out = nb.matmul(weights, v)  # (batch, heads, L, head_dim)
        out = nb.reshape(nb.permute(out, 2, 0, 1, 3), length, batch, self.embed_dim)
        out = self.out_proj(out)
        if unbatched:
            out = nb.squeeze(out, 1)
        elif self.batch_first:
            out = nb.transpose(out, 0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = nb.mean(weights, axis=1)
        return out, (nb.squeeze(weights, 0) if unbatched else weights)

    def _heads(self, t):
        """(S, batch, E) -> (batch, heads, S, head_dim)."""
        s, batch = t.shape[0], t.shape[1]
        return nb.permute(nb.reshape(t, s, batch, self.num_heads, self.head_dim), 1, 2, 0, 3)

    def _allowed(self, attn_mask, key_padding_mask, batch, length, source):
        """The masks as one float mask added to the scores (None: none given)."""
        total = None
        for mask, shape in (
            (attn_mask, (-1, length, source)),
            (key_padding_mask, (batch, 1, 1, source)),
        ):
            if mask is None:
                continue
            add = nb.where(mask, -math.inf, 0.0) if mask.dtype == bool else mask
            if mask is attn_mask and mask.ndim == 3:  # (batch * heads, L, S)
                add = nb.reshape(add, batch, self.num_heads, length, source)
            elif mask is key_padding_mask:
                add = nb.reshape(add, *shape)
            total = add if total is None else total + add
        return total

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


__all__ = ["MultiheadAttention"]
