"""Every op declaration, by family. REGISTRY maps each op name to its declaration.

The family modules' public names (the ops, and friendlier functions such as `zeros(2, 3)`
for the creation ops) are re-exported here.
"""

import functools
import inspect

from ..core import PYTORCH_NAMES, REGISTRY, Op, nbflow_names
from . import (
    _cuda,
    broadcast,
    conv,
    creation,
    decomp,
    einsum,
    elementwise,
    index,
    linalg,
    losses,
    nn,
    norm,
    optim,
    products,
    reduce,
    scans,
    select,
    shape,
    sorting,
)

FAMILIES = (elementwise, broadcast, creation, reduce, linalg, shape, index, nn, optim)
FAMILIES += (conv, norm, losses, sorting, einsum, select, scans, products, decomp)

_AXIS_NAMES = {name for names in PYTORCH_NAMES.values() for name in names}
_ALL_NAMES = _AXIS_NAMES | PYTORCH_NAMES.keys()


def _taking_pytorch_names(fn):
    """fn, or (when it takes an axis-like argument) fn accepting PyTorch's names for it
    (`concat(xs, dim=1)`), as the ops themselves do (core.PYTORCH_NAMES), and numpy's for a
    function written with PyTorch's (`narrow(x, axis=0, ...)`)."""
    if isinstance(fn, Op) or not inspect.isfunction(fn):
        return fn
    names = inspect.signature(fn).parameters
    if _AXIS_NAMES.isdisjoint(names) and PYTORCH_NAMES.keys().isdisjoint(names):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs and not (_ALL_NAMES.isdisjoint(kwargs)):
            kwargs = nbflow_names(fn.__name__, names, kwargs)
        return fn(*args, **kwargs)

    return call


for _family in FAMILIES:
    globals().update(
        {name: _taking_pytorch_names(getattr(_family, name)) for name in _family.__all__}
    )

_cuda.install()  # the GPU kernels of the structured ops

# nbflow's own ops: the registry-driven tests cover these, not the ops users declare later
BUILTIN = frozenset(REGISTRY)

__all__ = ["REGISTRY", "Op"] + [name for f in FAMILIES for name in f.__all__]
