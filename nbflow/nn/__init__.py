"""nbflow.nn: Module, layers and initialisers, written on nbflow's public ops.

Layers run eagerly and, unchanged, inside @nbflow.jit functions: a module's parameters are
eager Tensors that a traced Program captures as persistable vars. The classes live in
nn/modules/ and the functions in nn/functional/, as in PyTorch's tree.
"""

from . import functional, init, modules, parallel, utils
from . import parameter as _parameter
from .parallel import DataParallel

globals().update({name: getattr(modules, name) for name in modules.__all__})
globals().update({name: getattr(_parameter, name) for name in _parameter.__all__})

__all__ = [
    *modules.__all__,
    *_parameter.__all__,
    "DataParallel",
    "functional",
    "init",
    "parallel",
    "utils",
]
