"""PyTorch's torch.nn.utils names for nbflow's gradient clipping."""

from __future__ import annotations

from .. import ops
from ..core import no_grad
from ..optim import clip_grad_norm_


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient into [-clip_value, clip_value], in place."""
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                ops.clip_(p.grad, min=-float(clip_value), max=float(clip_value))


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
