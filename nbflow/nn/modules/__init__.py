"""nbflow.nn's classes, a file per family as PyTorch's torch/nn/modules: module.py (Module),
container.py, linear.py, conv.py, pooling.py, activation.py, the norms, dropout.py, sparse.py
(Embedding, EmbeddingBag), rnn.py, attention.py, transformer.py, loss.py, lazy.py, ... The
layers run eagerly and, unchanged, under @nbflow.jit (where their parameters become the
Program's persistable vars). Weights use PyTorch's layouts and default initialisation, so
PyTorch state dicts load as they are; every layer with parameters takes `generator=` (an
nbflow.Generator) for reproducible init."""

from . import (
    activation,
    adaptive,
    attention,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)

_FAMILIES = (activation, adaptive, attention, batchnorm, channelshuffle, container, conv)
_FAMILIES += (distance, dropout, flatten, fold, instancenorm, lazy, linear, loss, module)
_FAMILIES += (normalization, padding, pixelshuffle, pooling, rnn, sparse, transformer, upsampling)

__all__ = sorted(name for family in _FAMILIES for name in family.__all__)
globals().update({name: getattr(f, name) for f in _FAMILIES for name in f.__all__})
