"""PyTorch's torch.utils.data: nbflow.data under that name."""

from ..data import *  # noqa: F403
from ..data import __all__  # noqa: F401
