"""nbflow.nn.functional: PyTorch's `torch.nn.functional` names on nbflow's ops.

Most are nbflow's functions themselves (their arguments already follow PyTorch's, and every op
takes `dim=` for `axis=`); the rest adapt PyTorch's conventions: `inplace=`, class weights in
cross_entropy, one_hot's inferred class count, pad's pairs from the last dim backwards, and a
few activations composed from nbflow's ops. `import nbflow.nn.functional as F` then reads as
PyTorch code does. The functions live in files by family (activation, conv, pooling, ...);
this face re-exports each file's `__all__`.
"""

from ...core import public
from . import (
    activation,
    attention,
    conv,
    dense,
    distance,
    dropouts,
    loss,
    normalization,
    pooling,
    sampling,
    sparse,
)

_FAMILIES = (activation, attention, conv, dense, distance, dropouts, loss, normalization)
_FAMILIES += (pooling, sampling, sparse)

# as users call them: PyTorch's argument names, and a clear error for a non-tensor input
__all__ = sorted(name for family in _FAMILIES for name in family.__all__)
globals().update({name: public(getattr(f, name)) for f in _FAMILIES for name in f.__all__})
