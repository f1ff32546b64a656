"""PyTorch's MultiheadAttention, composed from nbflow's ops (so it differentiates, runs in
graph mode and on the GPU): the q, k and v projections (one GEMM for self-attention), the
heads as a batch dim, scaled dot-product attention (functional.attention_weights) and the
output projection. Parameters by PyTorch's names (in_proj_weight, or q_proj_weight,
k_proj_weight and v_proj_weight when kdim / vdim differ from embed_dim; in_proj_bias,
bias_k, bias_v, out_proj.weight, ...). The Transformer modules are in transformer.py."""

from __future__ import annotations

import math

from ... import ops
from ...argcheck import integer, real
from ...core import dtypes as dt
from ...core import is_int
from ...core.errors import DomainError, DTypeError, ShapeError
from .. import init
from ..functional.attention import attention_weights
from .linear import Linear
from .module import Module, Parameter
from .utils import flag


class MultiheadAttention(Module):
    """Attention of `num_heads` heads over embed_dim features; keys of kdim and values of
    vdim features (embed_dim by default). add_bias_kv appends a learned key and value,
    add_zero_attn a zero one, to every sequence (both always attended), as PyTorch's."""

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        if not all(is_int(v) for v in (embed_dim, num_heads)) or embed_dim <= 0 or num_heads <= 0:
            raise DomainError(
                f"MultiheadAttention: embed_dim and num_heads must be greater than 0, got "
                f"embed_dim={embed_dim} and num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise DomainError(
                f"MultiheadAttention: embed_dim {embed_dim} is not divisible by num_heads "
                f"{num_heads}"
            )
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.kdim = self.embed_dim if kdim is None else integer(kdim, "MultiheadAttention: kdim")
        self.vdim = self.embed_dim if vdim is None else integer(vdim, "MultiheadAttention: vdim")
        self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout = real(dropout, "MultiheadAttention: dropout")
        self.batch_first, self.generator = batch_first, generator
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(ops.zeros(3 * e, e, dtype=dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(ops.zeros(e, e, dtype=dtype))
            self.k_proj_weight = Parameter(ops.zeros(e, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(ops.zeros(e, self.vdim, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if flag(self, "bias", bias):
            self.in_proj_bias = Parameter(ops.zeros(3 * e, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        if flag(self, "add_bias_kv", add_bias_kv):
            self.bias_k = Parameter(ops.zeros(1, 1, e, dtype=dtype))
            self.bias_v = Parameter(ops.zeros(1, 1, e, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self.out_proj = Linear(e, e, bias=bias, dtype=dtype, generator=generator)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None):
        """PyTorch's: xavier-uniform projections, zero biases, xavier-normal bias_k / bias_v."""
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w, generator=generator)
        for b in (self.in_proj_bias, self.out_proj.bias):
            if b is not None:
                init.zeros_(b)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                init.xavier_normal_(b, generator=generator)

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
        (batch, S). Unbatched inputs are (L, E), (S, kdim), (S, vdim) with key_padding_mask
        (S,). is_causal applies the causal mask (PyTorch takes it as a hint that attn_mask is
        that mask, and asks for attn_mask: here attn_mask may be left out)."""
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
        q, k, v = self._project(query, key, value, self_attention)
        if self.bias_k is not None:  # a learned key and value at the end of each sequence
            k = ops.cat([k, ops.broadcast_to(self.bias_k, (batch, 1, self.embed_dim))], axis=1)
            v = ops.cat([v, ops.broadcast_to(self.bias_v, (batch, 1, self.embed_dim))], axis=1)
        q, k, v = (self._heads(t) for t in (q, k, v))
        if self.add_zero_attn:  # and a zero one
            zeros = k.new_zeros((batch, self.num_heads, 1, self.head_dim))
            k, v = ops.cat([k, zeros], axis=2), ops.cat([v, zeros], axis=2)
        mask = self._mask(query, attn_mask, key_padding_mask, is_causal, batch, length, source)
        if mask is not None and k.shape[2] > source:  # the appended keys are always seen
            mask = ops.pad(mask, ((0, 0),) * (mask.ndim - 1) + ((0, k.shape[2] - source),))
        weights = attention_weights(q, k, mask)
        if self.dropout and self.training:
            weights = ops.dropout(weights, self.dropout, True, self.generator)
        out = ops.matmul(weights, v)  # (batch, heads, L, head_dim)
        out = ops.reshape(ops.permute(out, 0, 2, 1, 3), batch, length, self.embed_dim)
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
                f"MultiheadAttention: query must be unbatched 2-D or batched 3-D, got shape "
                f"{tuple(query.shape)}"
            )
        batched = query.ndim == 3
        kind = "batched (3-D)" if batched else "unbatched (2-D)"
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(
                f"MultiheadAttention: for {kind} query, key and value must be {query.ndim}-D, "
                f"got shapes {tuple(key.shape)} and {tuple(value.shape)}"
            )
        if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
            raise ShapeError(
                f"MultiheadAttention: for {kind} query, key_padding_mask must be "
                f"{query.ndim - 1}-D, got shape {tuple(key_padding_mask.shape)}"
            )
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise ShapeError(
                f"MultiheadAttention: attn_mask must be 2-D or 3-D, got shape "
                f"{tuple(attn_mask.shape)}"
            )
        for name, t, size in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            if not _fits(t.shape[-1:], (size,)):
                raise ShapeError(
                    f"MultiheadAttention: {name} must have {size} features (the last dim), got "
                    f"shape {tuple(t.shape)}"
                )
        if not _fits(key.shape[:-1], value.shape[:-1]):
            raise ShapeError(
                f"MultiheadAttention: key and value must have the same sequence and batch dims, "
                f"got shapes {tuple(key.shape)} and {tuple(value.shape)}"
            )
        axis = 0 if self.batch_first else 1
        if batched and not _fits(query.shape[axis : axis + 1], key.shape[axis : axis + 1]):
            raise ShapeError(
                f"MultiheadAttention: query and key must have the same batch size, got shapes "
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
                    f"MultiheadAttention: {name} must be bool or floating point, got {mask.dtype}"
                )
            if not _fits(mask.shape, expected[name]):
                raise ShapeError(
                    f"MultiheadAttention: {name} has shape {tuple(mask.shape)}, expected "
                    f"{expected[name]} (batch {batch}, target length {length}, source length "
                    f"{source}, {self.num_heads} heads)"
                )

    def extra_repr(self) -> str:
        out = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if not self._qkv_same_embed_dim:
            out += f", kdim={self.kdim}, vdim={self.vdim}"
        return out


class GivenAttention(MultiheadAttention):
    """MultiheadAttention's forward over given tensors instead of its own parameters: what
    F.multi_head_attention_forward computes (nn/functional/attention.py), sequence first."""

    def __init__(self, embed_dim, num_heads, weights, add_zero_attn, dropout, training):
        Module.__init__(self)
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise DomainError(
                f"multi_head_attention_forward: embed_dim {embed_dim} must be a positive "
                f"multiple of num_heads {num_heads}"
            )
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.batch_first, self.generator, self.training = False, None, bool(training)
        self.dropout, self.add_zero_attn = dropout, add_zero_attn
        separate = weights["in_proj_weight"] is None
        self._qkv_same_embed_dim = not separate
        for name, w in weights.items():
            self.__dict__[name] = w  # plain attributes: the caller's tensors, not parameters
        self.kdim = weights["k_proj_weight"].shape[1] if separate else embed_dim
        self.vdim = weights["v_proj_weight"].shape[1] if separate else embed_dim
        w, b = weights["out_proj_weight"], weights["out_proj_bias"]
        self.__dict__["out_proj"] = lambda x: ops.linear(x, w, b)


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


__all__ = ["MultiheadAttention"]
