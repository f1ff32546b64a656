"""Flatten and Unflatten."""

from __future__ import annotations

from ... import ops
from ...argcheck import integer, integers
from .module import Module


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (PyTorch's Unflatten; one size may be -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim = integer(dim, "Unflatten: dim")
        self.unflattened_size = integers(unflattened_size, "Unflatten: unflattened_size")

    def forward(self, x):
        return ops.unflatten(x, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Flatten(Module):
    """Flatten dims start_dim..end_dim (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return ops.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


__all__ = ["Flatten", "Unflatten"]
