"""nbflow.amp, PyTorch's torch.amp: its names and docstring are nbflow/eager/amp.py's."""

from .eager import amp as _amp
from .eager.amp import *  # noqa: F403

__doc__ = _amp.__doc__
