"""nbflow.nn: Module, layers and initialisers, written on nbflow's public ops.

Layers run eagerly and, unchanged, inside @nbflow.jit functions: a module's parameters are
eager Tensors that a traced Program captures as persistable vars.
"""

from . import attention, functional, init, layers, loss, parallel, recurrent, transformer, utils
from . import lazy as _lazy
from . import losses_extra as _losses_extra
from . import more_layers as _more_layers
from . import parameter as _parameter
from . import sampling_grid as _sampling_grid
from . import volumetric as _volumetric
from .embedding_bag import EmbeddingBag
from .module import Module, ModuleDict, ModuleList, Parameter, StateDictError
from .rnn import dynamic_rnn, pack_offsets

# the layers, losses and recurrent layers, re-exported by their own lists (as nbflow.ops
# does with its families)
for _module in (layers, loss, recurrent, attention, transformer):
    globals().update({name: getattr(_module, name) for name in _module.__all__})
globals().update({name: getattr(_sampling_grid, name) for name in _sampling_grid.LAYERS})
globals().update({name: getattr(_losses_extra, name) for name in _losses_extra.MODULES})
globals().update({name: getattr(_volumetric, name) for name in _volumetric.MODULES})
globals().update({name: getattr(_more_layers, name) for name in _more_layers.MODULES})
for _module in (_lazy, _parameter):
    globals().update({name: getattr(_module, name) for name in _module.__all__})

__all__ = [
    *layers.__all__,
    *loss.__all__,
    *recurrent.__all__,
    *attention.__all__,
    *transformer.__all__,
    *_sampling_grid.LAYERS,
    *_losses_extra.MODULES,
    *_volumetric.MODULES,
    *_more_layers.MODULES,
    *_lazy.__all__,
    *_parameter.__all__,
    "EmbeddingBag",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "StateDictError",
    "dynamic_rnn",
    "functional",
    "init",
    "parallel",
    "utils",
    "pack_offsets",
]
