"""Optimizers and learning-rate schedules (PyTorch's torch.optim, semantics and defaults).

optimizer.py holds the Optimizer base and its parameter groups, algorithms.py SGD, the Adam
family, RMSprop, Adagrad, Adadelta, Rprop and ASGD, adafactor.py and lbfgs.py one algorithm
each; lr_scheduler.py and swa_utils.py are PyTorch's submodules of those names. Gradient
clipping is torch.nn.utils' (nbflow/nn/utils/clip_grad.py), named here too.
"""

from ..nn.utils.clip_grad import clip_grad_norm_, clip_grads_by_norm_
from . import algorithms, lr_scheduler, swa_utils
from .adafactor import Adafactor
from .algorithms import *  # noqa: F403
from .lbfgs import LBFGS
from .lr_scheduler import *  # noqa: F403
from .optimizer import ComposedOptimizer, Optimizer, ParamGroup

__all__ = [*algorithms.__all__, "Adafactor", "LBFGS", "ComposedOptimizer", "Optimizer"]
__all__ += ["ParamGroup", *lr_scheduler.__all__, "clip_grad_norm_", "clip_grads_by_norm_"]
__all__ += ["lr_scheduler", "swa_utils"]
