"""nbflow.nn: Module, layers and initialisers, written on nbflow's public ops.

Layers run eagerly and, unchanged, inside @nbflow.jit functions: a module's parameters are
eager Tensors that a traced Program captures as persistable vars.
"""

from . import init
from .layers import (
    GELU,
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    GRUCell,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LSTMCell,
    MaxPool2d,
    ReLU,
    RNNCell,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from .module import Module, ModuleDict, ModuleList, Parameter, StateDictError

__all__ = [
    "GELU",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "Identity",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "RNNCell",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "StateDictError",
    "Tanh",
    "init",
]
