"""nbflow.nn: Module, layers and initialisers, written on nbflow's public ops.

Layers run eagerly and, unchanged, inside @nbflow.jit functions: a module's parameters are
eager Tensors that a traced Program captures as persistable vars.
"""

from . import functional, init, layers
from .module import Module, ModuleDict, ModuleList, Parameter, StateDictError
from .rnn import dynamic_rnn, pack_offsets

# the layers, re-exported by their own list (as nbflow.ops does with its families)
globals().update({name: getattr(layers, name) for name in layers.__all__})

__all__ = [
    *layers.__all__,
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "StateDictError",
    "dynamic_rnn",
    "functional",
    "init",
    "pack_offsets",
]
