"""PyTorch's torch.nn.utils.stateless: functional_call (nbflow.func.functional_call, the
same function: PyTorch deprecates this name in its favour)."""

from ...func import functional_call

__all__ = ["functional_call"]
