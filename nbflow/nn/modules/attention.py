"""PyTorch's MultiheadAttention, composed from nbflow's ops (so it differentiates, runs in
graph mode and on the GPU): its parameters and out_proj module run through
functional.AttentionHeads (the q, k and v projections, the heads as a batch dim, scaled
dot-product attention and the output projection), as F.multi_head_attention_forward does.
Parameters by PyTorch's names (in_proj_weight, or q_proj_weight, k_proj_weight and
v_proj_weight when kdim / vdim differ from embed_dim; in_proj_bias, bias_k, bias_v,
out_proj.weight, ...). The Transformer modules are in transformer.py."""

from __future__ import annotations

from ... import ops
from ...argcheck import integer, real
from ...core import is_int
from ...core.errors import DomainError
from .. import init
from ..functional.attention import AttentionHeads
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
        weights = {name: getattr(self, name) for name in AttentionHeads.WEIGHTS}
        heads = AttentionHeads(
            "MultiheadAttention",
            self.embed_dim,
            self.num_heads,
            weights,
            self.out_proj,
            add_zero_attn=self.add_zero_attn,
            dropout=self.dropout if self.training else 0.0,
            batch_first=self.batch_first,
            generator=self.generator,
        )
        return heads(
            query,
            key,
            value,
            key_padding_mask,
            need_weights,
            attn_mask,
            average_attn_weights,
            is_causal,
        )

    def extra_repr(self) -> str:
        out = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if not self._qkv_same_embed_dim:
            out += f", kdim={self.kdim}, vdim={self.vdim}"
        return out


__all__ = ["MultiheadAttention"]
