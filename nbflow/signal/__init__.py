"""nbflow.signal: PyTorch's torch.signal (its window functions, in nbflow.signal.windows)."""

from . import windows

__all__ = ["windows"]
