"""PyTorch's torch.utils: data (nbflow.data under PyTorch's name) and checkpoint (activation
checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
