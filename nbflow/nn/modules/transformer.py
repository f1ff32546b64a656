"""PyTorch's Transformer family, composed from MultiheadAttention, Linear, LayerNorm and
Dropout (so it differentiates, runs in graph mode and on the GPU): the encoder and decoder
layers, their stacks and nn.Transformer, with PyTorch's signatures, defaults and submodule
names (self_attn, multihead_attn, linear1, norm1, ...), so state_dicts load either way.

Masks and the is_causal flags are as MultiheadAttention's (bool: True where attention is
not allowed; float: added to the scores). PyTorch's is_causal is a hint that the mask given
is the causal one; here it applies the causal mask itself, so the mask may be left out."""

import copy
import math

from ... import ops
from ...argcheck import integer, shown, within_budget
from ...core.dtypes import as_dtype
from ...core.errors import ArgumentError, ShapeError
from .. import functional as F
from .. import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _activation(activation, module):
    """PyTorch's activation argument: "relu", "gelu" or a callable (a function or a module)."""
    if isinstance(activation, str):
        if activation in ("relu", "gelu"):
            return getattr(F, activation)
        raise RuntimeError(f"{module}: activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise ArgumentError(f"{module}: activation must be 'relu', 'gelu' or a callable")
    return activation


def _build_layer(
    layer, attentions, d_model, nhead, ff, dropout, eps, bias, batch_first, norm_first, dtype, g
):
    """An encoder (1 attention) or decoder (2: self_attn, multihead_attn) layer's submodules,
    made and registered in PyTorch's order, so a seeded generator draws the same weights and
    state_dicts list the same keys."""
    for name in ("self_attn", "multihead_attn")[:attentions]:
        attention = MultiheadAttention(
            d_model, nhead, dropout, bias, batch_first=batch_first, dtype=dtype, generator=g
        )
        setattr(layer, name, attention)
    layer.linear1 = Linear(d_model, ff, bias, dtype=dtype, generator=g)
    layer.dropout = Dropout(dropout, generator=g)
    layer.linear2 = Linear(ff, d_model, bias, dtype=dtype, generator=g)
    layer.norm_first = norm_first
    for i in range(1, attentions + 2):  # a norm and a dropout per block, feed-forward included
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps, bias=bias, dtype=dtype))
    for i in range(1, attentions + 2):
        setattr(layer, f"dropout{i}", Dropout(dropout, generator=g))


class TransformerEncoderLayer(Module):
    """PyTorch's TransformerEncoderLayer: self-attention and a feed-forward block, each
    with dropout, a residual connection and LayerNorm (after each block, or before with
    norm_first)."""

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        sizes = (d_model, nhead, dim_feedforward, dropout, layer_norm_eps, bias)
        _build_layer(self, 1, *sizes, batch_first, norm_first, dtype, generator)
        self.activation = _activation(activation, "TransformerEncoderLayer")

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out, _ = self.self_attn(
            x, x, x, key_padding_mask, False, attn_mask, is_causal=bool(is_causal)
        )
        return self.dropout1(out)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """PyTorch's TransformerDecoderLayer: self-attention over the target (tgt_mask,
    tgt_key_padding_mask, tgt_is_causal), attention over the encoder's output `memory`
    (memory_mask, memory_key_padding_mask) and a feed-forward block, each with dropout, a
    residual connection and LayerNorm (after each block, or before with norm_first)."""

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        sizes = (d_model, nhead, dim_feedforward, dropout, layer_norm_eps, bias)
        _build_layer(self, 2, *sizes, batch_first, norm_first, dtype, generator)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=False,
        memory_is_causal=False,
    ):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(
            x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        )
        return self.norm3(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        out, _ = self.self_attn(
            x, x, x, key_padding_mask, False, attn_mask, is_causal=bool(is_causal)
        )
        return self.dropout1(out)

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        out, _ = self.multihead_attn(
            x, memory, memory, key_padding_mask, False, attn_mask, is_causal=bool(is_causal)
        )
        return self.dropout2(out)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(layer, num_layers):
    """`num_layers` deep copies of `layer` (fresh parameters each, as PyTorch makes), their
    parameters counted against the memory budget first (2**31 copies looped on)."""
    if not isinstance(layer, Module):
        raise ArgumentError(f"the layer to repeat must be a Module, got {shown(layer)}")
    count = sum(math.prod(p.shape) for p in layer.parameters()) * max(num_layers, 0)
    within_budget(f"{num_layers} copies of {type(layer).__name__}", (count,), "float32")
    return ModuleList([copy.deepcopy(layer) for _ in range(int(num_layers))])


def _norm_module(norm, name):
    """norm: a Module or None (it is called on the last layer's output)."""
    if norm is not None and not isinstance(norm, Module):
        raise ArgumentError(f"{name}: norm must be a Module or None, got {shown(norm)}")
    return norm


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` in sequence, then `norm` when given.
    enable_nested_tensor and mask_check are PyTorch's fast-path switches: accepted, no
    effect (nbflow has no nested tensors)."""

    def __init__(
        self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True
    ):
        super().__init__()
        num_layers = integer(num_layers, "TransformerEncoder: num_layers")
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, _norm_module(norm, "TransformerEncoder")
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, mask, src_key_padding_mask, bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer` in sequence, then `norm` when given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        num_layers = integer(num_layers, "TransformerDecoder: num_layers")
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, _norm_module(norm, "TransformerDecoder")

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        x = tgt
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask,
                memory_mask,
                tgt_key_padding_mask,
                memory_key_padding_mask,
                bool(tgt_is_causal),
                memory_is_causal,
            )
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """PyTorch's nn.Transformer: an encoder of num_encoder_layers layers and a decoder of
    num_decoder_layers layers, each stack ending in a LayerNorm (or custom_encoder /
    custom_decoder in their place); every weight of 2 or more dims xavier-uniform, as
    PyTorch's _reset_parameters does."""

    def __init__(
        self,
        d_model=512,
        nhead=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        custom_encoder=None,
        custom_decoder=None,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps)
        layer_args += (batch_first, norm_first, bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(*layer_args, dtype=dtype, generator=generator)
            norm = LayerNorm(d_model, layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(*layer_args, dtype=dtype, generator=generator)
            norm = LayerNorm(d_model, layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self.reset_parameters(generator)
        self.d_model = integer(d_model, "Transformer: d_model")
        self.nhead, self.batch_first = integer(nhead, "Transformer: nhead"), batch_first

    def reset_parameters(self, generator=None):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p, generator=generator)

    def forward(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        batch = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch] != tgt.shape[batch]:
            raise ShapeError(
                f"Transformer: the batch number of src and tgt must be equal, got shapes "
                f"{tuple(src.shape)} and {tuple(tgt.shape)}"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model "
                f"{self.d_model}, got shapes {tuple(src.shape)} and {tuple(tgt.shape)}"
            )
        memory = self.encoder(src, src_mask, src_key_padding_mask, src_is_causal)
        return self.decoder(
            tgt,
            memory,
            tgt_mask,
            memory_mask,
            tgt_key_padding_mask,
            memory_key_padding_mask,
            tgt_is_causal,
            memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """PyTorch's causal mask for a sequence of sz: 0 on and below the diagonal, -inf
        above it (the default float dtype unless dtype is given)."""
        full = ops.full((int(sz), int(sz)), -math.inf, dtype=as_dtype(dtype), device=device)
        return ops.triu(full, 1)


__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]
