"""Dropout: `dropout` is `x * mask`, where the mask (0 or 1 / (1 - p)) comes from
`dropout_mask`, a non-differentiable random op seeded by an nbflow.Generator like the other
random ops; the gradient is g * mask, the same mask.
"""

import numpy as np

from ..core import Attr, Op, Spec, is_probability
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from .creation import Generator, default_generator


@njit(**JIT)
def _dropout_mask_cpu(gen, out, p, scale):
    for i in range(out.size):
        out[i] = scale if gen.random() >= p else 0.0


def _dropout_mask_spec(x, p, generator):
    if not dt.is_float(x.dtype):
        raise DTypeError(f"the input must be a float tensor, got {x.dtype}")
    if not is_probability(p):
        raise AttrError(f"dropout probability must be in [0, 1], got {p}")
    if generator is not None and not isinstance(generator, Generator):
        raise AttrError("generator must be an nbflow.Generator")
    return Spec(x.shape, x.dtype)


def _mask_scale(p) -> float:
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


def _dropout_mask_launch(x, out, p, generator):
    if out.size:
        gen = (generator or default_generator).numpy
        _dropout_mask_cpu(gen, out.reshape(-1), p, _mask_scale(p))


def _dropout_mask_ref(x, p, generator=None):
    gen = (generator or default_generator).numpy
    keep = gen.random(x.size) >= p
    return np.where(keep, _mask_scale(p), 0.0).reshape(x.shape).astype(x.dtype)


dropout_mask = Op(
    name="dropout_mask",
    inputs=("x",),
    outputs=("out",),
    spec=_dropout_mask_spec,
    kernels={"cpu": _dropout_mask_launch, "cuda": None},
    dtypes=dt.FLOATS,
    ref=_dropout_mask_ref,
    differentiable=False,
    attrs={"p": Attr("float"), "generator": Attr("any", None, optional=True)},
    promote=(),
    shape_only=("x",),
    doc=(
        "A random dropout mask of x's shape and dtype: 0 with probability p, else 1 / (1 - p) "
        "(all 0 when p is 1). Drawn from `generator` (an nbflow.Generator; the default one "
        "when None). x is read for its shape only."
    ),
)


def dropout(x, p=0.5, training=True, generator=None):
    """PyTorch's F.dropout: in training, zero each element with probability p and scale the
    others by 1 / (1 - p); the identity when not training or p is 0."""
    if not is_probability(p):
        raise AttrError(f"dropout probability must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    return x * dropout_mask(x, p=p, generator=generator)


__all__ = ["dropout", "dropout_mask"]
