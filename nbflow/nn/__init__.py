"""nbflow.nn: Module, layers and initialisers, written on nbflow's public ops.

Layers run eagerly and, unchanged, inside @nbflow.jit functions: a module's parameters are
eager Tensors that a traced Program captures as persistable vars.
"""

from . import attention, functional, init, layers, loss, recurrent, transformer, utils
from .embedding_bag import EmbeddingBag
from .module import Module, ModuleDict, ModuleList, Parameter, StateDictError
from .rnn import dynamic_rnn, pack_offsets

# the layers, losses and recurrent layers, re-exported by their own lists (as nbflow.ops
# does with its families)
for _module in (layers, loss, recurrent, attention, transformer):
    globals().update({name: getattr(_module, name) for name in _module.__all__})

__all__ = [
    *layers.__all__,
    *loss.__all__,
    *recurrent.__all__,
    *attention.__all__,
    *transformer.__all__,
    "EmbeddingBag",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "StateDictError",
    "dynamic_rnn",
    "functional",
    "init",
    "utils",
    "pack_offsets",
]
