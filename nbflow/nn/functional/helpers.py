"""Argument and shape helpers that the convolution, pooling and sampling functions share."""

from __future__ import annotations

import contextlib

import numpy as np

from ... import ops
from ...core import UNKNOWN
from ...core.errors import AttrError, ShapeError
from ...eager.tensor import tensor as new_tensor

ALL = slice(None)


def _ints(value, n, fn, name, minimum=None) -> tuple[int, ...]:
    """An int or an n-tuple of ints as an n-tuple, checked >= minimum."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n or not all(isinstance(v, (int, np.integer)) for v in values):
        raise AttrError(f"{fn}: {name} must be an int or {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in values):
        raise AttrError(f"{fn}: {name} must be >= {minimum}, got {value!r}")
    return tuple(int(v) for v in values)


def check_known_dims(x, fn, start=1):
    if UNKNOWN in tuple(x.shape[start:]):
        raise ShapeError(f"{fn}: input of shape {tuple(x.shape)} needs known dims after the batch")


def _index(values, like):
    """An int64 tensor of `values` on `like`'s device (a graph value captures it as is)."""
    return _constant(values, np.int64, like)


def _constant(values, dtype, like):
    """values as a tensor of dtype on `like`'s device (a graph value: captured as is)."""
    t = new_tensor(np.asarray(values).astype(dtype))
    device = getattr(like, "device", None)
    return t if device is None else t.to(device)


def float_const(values, like):
    """A float constant in like's dtype, on like's device."""
    return _constant(values, like.dtype, like)


def _shaped_like(x, shape):
    """A stand-in of shape (x's batch, *shape) whose values are never read: a broadcast view
    of one element of x (no memory; an unknown batch dim stays unknown in graph mode)."""
    corner = ops.getitem(x, (ALL,) + (slice(0, 1),) * (x.ndim - 1))
    corner = ops.reshape(corner, (-1,) + (1,) * len(shape))
    return ops.broadcast_to(corner, (-1, *shape))


@contextlib.contextmanager
def _named(fn):
    """Errors from the ops underneath, prefixed with the PyTorch function the user called."""
    try:
        yield
    except (ShapeError, AttrError) as e:
        if str(e).startswith(f"{fn}:"):
            raise
        raise type(e)(f"{fn}: {e}") from None


def _unbatch(out, added):
    return ops.squeeze(out, 0) if added else out


LAYOUT = "(N, C, D, H, W)"
