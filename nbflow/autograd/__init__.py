"""PyTorch's torch.autograd: backward and grad (backprop.py, the one backward driver for the tape
and for graphs), Function and the anomaly switches (function.py), the functional API
(functional.py)."""

from . import function, functional
from .backprop import backward, grad
from .function import *  # noqa: F403

__all__ = ["backward", "grad", "functional", *function.__all__]
