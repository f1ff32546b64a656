"""Every op declaration, by family. REGISTRY maps each op name to its declaration.

The family modules' public names (the ops, and friendlier functions such as `zeros(2, 3)`
for the creation ops) are re-exported here.
"""

from ..core import REGISTRY, Op, public
from . import (
    _cuda,
    activations,
    aliases,
    attention,
    bitwise,
    broadcast,
    collective,  # noqa: F401  (nbflow.distributed's ops: public there, not top-level)
    complex_parts,
    conv,
    conv3d,
    copies,
    creation,
    ctc,
    decomp,
    dropouts,
    einsum,
    elementwise,
    embeddings,
    factorizations,
    floating,
    fourier,  # noqa: F401  (nbflow.fft's op: public there, not top-level)
    gamma,
    histogram_nd,
    householder,
    index,
    joins,
    layernorm,
    linalg,
    losses,
    lowrank,
    nn,
    norm,
    optim,
    products,
    queries,
    random_params,
    ranges,
    recurrent,
    reduce,
    sampling,
    scans,
    search,
    select,
    shape,
    signal,
    sorting,
    special,  # noqa: F401  (torch.special's ops: public as nbflow.special, not top-level)
    statistics,
    strided,
    tiling,
)

FAMILIES = (elementwise, activations, broadcast, creation, reduce, linalg, shape, index, nn, optim)
FAMILIES += (conv, norm, losses, sorting, einsum, select, scans, products, decomp, sampling, joins)
FAMILIES += (ctc,)
FAMILIES += (conv3d,)
FAMILIES += (factorizations,)
FAMILIES += (queries, signal, bitwise, floating, search, ranges, aliases)
FAMILIES += (random_params, recurrent, layernorm, statistics, tiling)
FAMILIES += (copies, complex_parts, strided, householder, histogram_nd)
FAMILIES += (lowrank, attention, gamma, embeddings, dropouts)

for _family in FAMILIES:
    globals().update({name: public(getattr(_family, name)) for name in _family.__all__})

_cuda.install()  # the GPU kernels of the structured ops

# nbflow's own ops: the registry-driven tests cover these, not the ops users declare later
BUILTIN = frozenset(REGISTRY)

__all__ = ["REGISTRY", "Op"] + [name for f in FAMILIES for name in f.__all__]
