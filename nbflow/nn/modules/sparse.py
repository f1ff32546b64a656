"""Embedding and EmbeddingBag."""

from __future__ import annotations

from ... import ops
from ...argcheck import choice, optional_real, real
from ...core import as_int, no_grad
from ...core.errors import DomainError, ShapeError, UnsupportedError
from ...eager.tensor import tensor
from .. import functional as F
from .. import init
from .module import Module, Parameter
from .utils import _empty, flag


class Embedding(Module):
    """A lookup table: weight (num_embeddings, embedding_dim), initialised normal(0, 1);
    the row padding_idx, when given, starts at zero; max_norm renormalises the rows looked
    up (F.embedding)."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        if flag(self, "scale_grad_by_freq", scale_grad_by_freq) or flag(self, "sparse", sparse):
            raise UnsupportedError(
                "Embedding: scale_grad_by_freq and sparse gradients are not supported"
            )
        self.max_norm = optional_real(max_norm, "Embedding: max_norm")
        self.norm_type = real(norm_type, "Embedding: norm_type")
        self.num_embeddings = as_int(num_embeddings, "Embedding: num_embeddings")
        self.embedding_dim = as_int(embedding_dim, "Embedding: embedding_dim")
        if padding_idx is not None:
            padding_idx = as_int(padding_idx, "Embedding: padding_idx")
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise DomainError(f"padding_idx {padding_idx} out of range")
            padding_idx = padding_idx % self.num_embeddings
        self.padding_idx = padding_idx
        self.weight = _empty(self.num_embeddings, self.embedding_dim, dtype=dtype)
        self.reset_parameters(generator)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None) -> Embedding:
        """An Embedding holding a copy of the 2-D `embeddings` (frozen unless freeze=False),
        as PyTorch's Embedding.from_pretrained."""
        if embeddings.ndim != 2:
            raise ShapeError(f"from_pretrained needs 2-D embeddings, got {embeddings.shape}")
        rows, dim = embeddings.shape
        module = cls(rows, dim, padding_idx, dtype=embeddings.dtype)
        module.weight = Parameter(tensor(embeddings, dtype=embeddings.dtype))
        module.weight.requires_grad_(not freeze)
        return module

    def reset_parameters(self, generator=None) -> None:
        init.normal_(self.weight, generator=generator)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, indices):  # (no gradient to the padding row)
        return F.embedding(indices, self.weight, self.padding_idx, self.max_norm, self.norm_type)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s if self.max_norm is None else s + f", max_norm={self.max_norm}"


class EmbeddingBag(Module):
    """A lookup table whose bags of rows are reduced on the fly (F.embedding_bag); weight
    (num_embeddings, embedding_dim) initialised normal(0, 1), the padding_idx row zero."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        mode="mean",
        sparse=False,
        _weight=None,
        include_last_offset=False,
        padding_idx=None,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        self.num_embeddings = as_int(num_embeddings, "EmbeddingBag: num_embeddings")
        self.embedding_dim = as_int(embedding_dim, "EmbeddingBag: embedding_dim")
        if padding_idx is not None:
            padding_idx = as_int(padding_idx, "EmbeddingBag: padding_idx")
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise DomainError(f"padding_idx {padding_idx} out of range")
            padding_idx %= self.num_embeddings
        self.max_norm = optional_real(max_norm, "EmbeddingBag: max_norm")
        self.norm_type = real(norm_type, "EmbeddingBag: norm_type")
        self.mode = choice(mode, ("sum", "mean", "max"), "EmbeddingBag: mode")
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is not None:
            self.weight = Parameter(_weight)
        else:
            self.weight = Parameter(ops.zeros((num_embeddings, embedding_dim), dtype=dtype))
            self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        init.normal_(self.weight, generator=generator)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode='{self.mode}'"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"


__all__ = ["Embedding", "EmbeddingBag"]
