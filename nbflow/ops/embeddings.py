"""Embedding: `embedding` gathers weight rows with a bounds check (OutOfRangeError before the
kernel); its gradient is an op of its own, `embedding_backward`, that adds rows back (skipping
padding_idx)."""

import numpy as np

from ..core import Attr, Op, Spec, known
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError, OutOfRangeError, ShapeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from . import shape as _shape
from .elementwise import where

FLOATS = dt.FLOATS


# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _first_bad_index(idx, n):
    """Flat position of the first index outside [0, n), else -1."""
    for i in range(idx.size):
        if idx[i] < 0 or idx[i] >= n:
            return i
    return -1


@njit(**JIT)
def _gather_rows(weight, idx, out):
    for i in range(idx.size):
        out[i, :] = weight[idx[i]]


@njit(**JIT)
def _add_rows(g, idx, out, skip):
    """out[idx[i]] += g[i] for every i with idx[i] != skip (out zeroed first)."""
    for i in range(idx.size):
        k = idx[i]
        if k != skip:
            for j in range(g.shape[1]):
                out[k, j] += g[i, j]


# ---------------------------------------------------------------- embedding


def _embedding_spec(indices, weight, padding_idx):
    if indices.dtype not in dt.INTS:
        raise DTypeError(f"indices must be int32 or int64, got {indices.dtype}")
    if weight.ndim != 2:
        raise ShapeError(
            f"weight of shape {tuple(weight.shape)} must be 2-D (num_embeddings, embedding_dim)"
        )
    _check_padding_idx(padding_idx, weight.shape[0])
    return Spec(tuple(indices.shape) + (weight.shape[1],), weight.dtype)


def _check_padding_idx(padding_idx, num):
    if padding_idx is not None and known(num) and not -num <= padding_idx < num:
        raise AttrError(f"padding_idx {padding_idx} is outside [-{num}, {num})")


def _padding_row(padding_idx, num) -> int:
    """padding_idx as a row number (-1: none)."""
    if padding_idx is None:
        return -1
    return padding_idx + num if padding_idx < 0 else padding_idx


def _checked_indices(indices, num):
    flat = np.ascontiguousarray(indices).reshape(-1)
    bad = _first_bad_index(flat, num)
    if bad >= 0:
        where_ = tuple(int(i) for i in np.unravel_index(bad, indices.shape))
        raise OutOfRangeError(
            f"embedding: index {int(flat[bad])} at position {where_} is outside "
            f"[0, {num}) for a weight of {num} rows"
        )
    return flat


def _embedding_cpu(indices, weight, out, padding_idx):
    flat = _checked_indices(indices, weight.shape[0])
    if flat.size:
        _gather_rows(np.ascontiguousarray(weight), flat, out.reshape(flat.size, weight.shape[1]))


def _embedding_ref(indices, weight, padding_idx=None):
    if indices.size and (indices.min() < 0 or indices.max() >= weight.shape[0]):
        raise OutOfRangeError("embedding: index out of range")
    return weight[indices]


embedding_op = Op(
    name="embedding",
    inputs=("indices", "weight"),
    outputs=("out",),
    spec=_embedding_spec,
    kernels={"cpu": _embedding_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_embedding_ref,
    attrs={"padding_idx": Attr("int", None, optional=True)},
    promote=(1,),
    doc=(
        "weight[indices]: rows of weight (num_embeddings, dim) for int indices of any shape "
        "-> indices.shape + (dim,). An index outside [0, num_embeddings) raises "
        "OutOfRangeError. The row padding_idx gets no gradient (PyTorch's padding_idx)."
    ),
)


@embedding_op.defgrad
def _embedding_grad(g, out, indices, weight, padding_idx):
    return None, embedding_backward(g, indices, weight, padding_idx=padding_idx)


def _embedding_back_spec(g, indices, weight, padding_idx):
    want = _embedding_spec(indices, weight, padding_idx).shape
    if len(g.shape) != len(want) or any(
        a != b and known(a, b) for a, b in zip(g.shape, want, strict=True)
    ):
        raise ShapeError(f"the output gradient of shape {tuple(g.shape)} should be {want}")
    return Spec(weight.shape, g.dtype)


def _embedding_back_cpu(g, indices, weight, out, padding_idx):
    num = weight.shape[0]
    flat = _checked_indices(indices, num)
    out[...] = 0
    if flat.size:
        g2 = np.ascontiguousarray(g).reshape(flat.size, out.shape[1])
        _add_rows(g2, flat, out, _padding_row(padding_idx, num))


def _embedding_back_ref(g, indices, weight, padding_idx=None):
    out = np.zeros(weight.shape)
    flat = indices.reshape(-1)
    np.add.at(out, flat, g.astype(np.float64).reshape(flat.size, -1))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out.astype(g.dtype)


embedding_backward = Op(
    name="embedding_backward",
    inputs=("g", "indices", "weight"),
    outputs=("out",),
    spec=_embedding_back_spec,
    kernels={"cpu": _embedding_back_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_embedding_back_ref,
    attrs={"padding_idx": Attr("int", None, optional=True)},
    promote=(0,),
    shape_only=("weight",),
    doc=(
        "The gradient of embedding for its weight: a zero tensor of weight's shape with each "
        "g row added at its index, the row padding_idx left zero. weight: shape only."
    ),
)


@embedding_backward.defgrad
def _embedding_back_grad(h, out, g, indices, weight, padding_idx):
    picked = embedding_op(indices, h)  # the adjoint of adding rows: gathering them
    if padding_idx is not None:
        row = _padding_row(padding_idx, weight.shape[0])
        picked = where(_shape.unsqueeze(indices != row, -1), picked, 0)
    return picked, None, None


def embedding(indices, weight, padding_idx=None):
    """PyTorch's F.embedding(input, weight, padding_idx)."""
    return embedding_op(indices, weight, padding_idx=padding_idx)


__all__ = ["embedding", "embedding_op", "embedding_backward"]
