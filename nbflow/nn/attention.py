"""PyTorch's MultiheadAttention, composed from nbflow's ops (so it differentiates, runs in
graph mode and on the GPU): one projection GEMM for q, k and v, the heads as a batch dim,
scaled dot-product attention (functional.attention_weights), and the output projection.
Parameters by PyTorch's names (in_proj_weight, in_proj_bias, out_proj.weight, ...)."""

from __future__ import annotations

import copy
import math

import nbflow as nb

from ..dtypes import float32
from . import functional as F
from . import init
from .layers import Dropout, LayerNorm, Linear
from .module import Module, ModuleList, Parameter


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
        weights = nb.split(self.in_proj_weight, self.embed_dim, axis=0)
        biases = (None,) * 3
        if self.in_proj_bias is not None:
            biases = nb.split(self.in_proj_bias, self.embed_dim)
        q, k, v = (
            self._heads(nb.linear(t, w, b)) for t, w, b in zip((query, key, value), weights, biases)
        )
        mask = self._mask(attn_mask, key_padding_mask, batch, length, key.shape[0])
        weights = F.attention_weights(q, k, mask, is_causal)
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

    def _mask(self, attn_mask, key_padding_mask, batch, length, source):
        """The masks as one float mask added to the scores (None: none given)."""
        total = None
        if attn_mask is not None:
            total = _additive(attn_mask)
            if total.ndim == 3:  # (batch * heads, L, S)
                total = nb.reshape(total, batch, self.num_heads, length, source)
        if key_padding_mask is not None:
            padding = nb.reshape(_additive(key_padding_mask), batch, 1, 1, source)
            total = padding if total is None else total + padding
        return total

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"


def _additive(mask):
    """A bool mask (True: not allowed) as 0 / -inf to add to the scores; a float one as it is."""
    return nb.where(mask, -math.inf, 0.0) if mask.dtype == bool else mask


class TransformerEncoderLayer(Module):
    """PyTorch's TransformerEncoderLayer: self-attention and a feed-forward block, each
    with dropout, a residual connection and LayerNorm (after each block, or before with
    norm_first); submodules by PyTorch's names (self_attn, linear1, linear2, norm1, ...)."""

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        dtype=float32,
        generator=None,
    ):
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', got {activation!r}")
        g = generator
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout, bias, batch_first, dtype=dtype, generator=g
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias, dtype=dtype, generator=g)
        self.linear2 = Linear(dim_feedforward, d_model, bias, dtype=dtype, generator=g)
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout, self.dropout1, self.dropout2 = (
            Dropout(dropout, generator=g) for _ in range(3)
        )
        self.activation, self.norm_first = activation, norm_first

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        def attend(x):
            out, _ = self.self_attn(
                x, x, x, src_key_padding_mask, False, src_mask, is_causal=is_causal
            )
            return self.dropout1(out)

        def feed_forward(x):
            h = self.linear1(x)
            h = nb.relu(h) if self.activation == "relu" else nb.gelu(h)
            return self.dropout2(self.linear2(self.dropout(h)))

        x = src
        if self.norm_first:
            x = x + attend(self.norm1(x))
            return x + feed_forward(self.norm2(x))
        x = self.norm1(x + attend(x))
        return self.norm2(x + feed_forward(x))


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` in sequence (fresh copies of its parameters,
    as PyTorch makes), then `norm` when given."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(int(num_layers))])
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        for layer in self.layers:
            x = layer(x, mask, src_key_padding_mask, is_causal)
        return x if self.norm is None else self.norm(x)


__all__ = ["MultiheadAttention", "TransformerEncoder", "TransformerEncoderLayer"]
