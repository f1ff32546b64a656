"""Functions whose result's shape or value depends on the data (eager only, as in PyTorch's
graph-breaking ops): allclose, equal, nonzero, unique, unique_consecutive and masked_select."""

import numpy as np

from .. import ops
from ..argcheck import choice, flag, integer, real
from ..core import normalize_axis
from ..core.errors import AttrError, DTypeError, ShapeError, UnsupportedError
from .tensor import Tensor, tensor


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether a and b (tensors, arrays or numbers, complex ones too) are close elementwise,
    by numpy's rule |a - b| <= atol + rtol |b| (PyTorch's allclose)."""
    a, b = _numeric("allclose", a), _numeric("allclose", b)
    rtol, atol = real(rtol, "allclose: rtol"), real(atol, "allclose: atol")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"allclose: shapes {a.shape} and {b.shape} do not broadcast") from None
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def _array(name: str, x) -> np.ndarray:
    try:
        return np.asarray(x)
    except ValueError as e:  # ragged nested lists
        raise ShapeError(f"{name}: cannot make an array of this data: {e}") from None


def _numeric(name: str, x) -> np.ndarray:
    a = _array(name, x)
    if a.dtype.kind not in "biufc":
        raise DTypeError(f"{name}: needs numbers, got an array of {a.dtype}")
    return a


def equal(a, b) -> bool:
    """Whether a and b have the same shape and the same elements (PyTorch's equal)."""
    a, b = _array("equal", a), _array("equal", b)
    return a.shape == b.shape and bool((a == b).all())


def _eager_values(name: str, x) -> np.ndarray:
    if not isinstance(x, Tensor):
        raise UnsupportedError(
            f"{name}: the result's shape depends on the values, so it runs on eager tensors "
            "only (not on graph values: use masks and where() there)"
        )
    return x.numpy()


def nonzero(x, as_tuple: bool = False):
    """The indices of the nonzero elements of an eager tensor, (count, ndim) int64 (PyTorch's
    nonzero), or one 1-D index tensor per dim with as_tuple (numpy's nonzero)."""
    data = _eager_values("nonzero", x)
    found = np.nonzero(data) if data.ndim else np.nonzero(data.reshape(1))
    if flag(as_tuple, "nonzero: as_tuple"):
        return tuple(tensor(i.astype(np.int64)).to(x.device) for i in found)
    if data.ndim == 0:  # (1, 0) when x is nonzero, else (0, 0), as PyTorch
        return tensor(np.zeros((int(data != 0), 0), np.int64)).to(x.device)
    return tensor(np.stack(found, axis=-1).astype(np.int64)).to(x.device)


def unique(
    x, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None
):
    """The distinct values of an eager tensor, sorted (PyTorch's unique); with
    return_inverse, where each element went, and with return_counts, how often each value
    occurs. Each NaN is distinct, as in PyTorch. With `dim`, the distinct slices along it
    (sorted lexicographically), the inverse and counts then per slice."""
    data = _eager_values("unique", x)
    return_inverse = flag(return_inverse, "unique: return_inverse")
    return_counts = flag(return_counts, "unique: return_counts")
    flag(sorted, "unique: sorted")  # (the values come sorted either way, as PyTorch's do)
    if dim is not None:
        return _unique_slices(x, data, dim, return_inverse, return_counts)
    values, inverse, counts = np.unique(
        data, return_inverse=True, return_counts=True, equal_nan=False
    )
    out = [tensor(values, dtype=data.dtype)]
    if return_inverse:
        out.append(tensor(inverse.reshape(data.shape).astype(np.int64)))
    if return_counts:
        out.append(tensor(counts.astype(np.int64)))
    out = [t.to(x.device) for t in out]
    return out[0] if len(out) == 1 else tuple(out)


def _unique_slices(x, data, dim, return_inverse, return_counts):
    """unique along `dim`: the distinct slices, sorted; inverse and counts per slice."""
    a = normalize_axis(integer(dim, "unique: dim"), data.ndim)
    if data.ndim == 0:
        data = data.reshape(1)
    values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True, axis=a)
    out = [tensor(values, dtype=data.dtype)]
    if return_inverse:
        out.append(tensor(inverse.reshape(-1).astype(np.int64)))
    if return_counts:
        out.append(tensor(counts.astype(np.int64)))
    out = [t.to(x.device) for t in out]
    return out[0] if len(out) == 1 else tuple(out)


def masked_select(x, mask):
    """The elements of x where mask is True (x and mask broadcast), as a 1-D tensor; eager
    only (the length depends on the mask's values). Gradients flow back to x."""
    _eager_values("masked_select", x)
    mask = mask if isinstance(mask, Tensor) else tensor(mask)
    try:
        shape = np.broadcast_shapes(x.shape, mask.shape) or (1,)  # (0-d: as one element)
    except ValueError:
        raise ShapeError(
            f"masked_select: x's shape {x.shape} and mask's {mask.shape} do not broadcast"
        ) from None
    keep = np.broadcast_to(_eager_values("masked_select", mask), shape)
    if keep.dtype != np.bool_:
        raise DTypeError(f"masked_select: mask must be bool, got {keep.dtype}")
    where = tuple(tensor(i.astype(np.int64)).to(x.device) for i in np.nonzero(keep))
    full = ops.broadcast_to(x, shape) if tuple(x.shape) != shape else x
    return ops.getitem(full, where)


def unique_consecutive(x, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """Each run of equal consecutive values of an eager tensor (flattened) kept once
    (PyTorch's unique_consecutive); with return_inverse, the run each element belongs to,
    and with return_counts, each run's length. With `dim`, runs of equal slices along it."""
    for arg, value in (("return_inverse", return_inverse), ("return_counts", return_counts)):
        choice(value, (False, True), f"unique_consecutive: {arg}", AttrError)
    data = _eager_values("unique_consecutive", x)
    if dim is not None:
        return _unique_consecutive_slices(x, data, dim, return_inverse, return_counts)
    flat = data.reshape(-1)
    starts = np.ones(flat.size, bool)
    starts[1:] = flat[1:] != flat[:-1]  # (each NaN starts a run, as NaN != NaN)
    out = [tensor(flat[starts], dtype=data.dtype)]
    if return_inverse:
        out.append(tensor((np.cumsum(starts) - 1).reshape(data.shape).astype(np.int64)))
    if return_counts:
        out.append(tensor(np.diff(np.append(np.flatnonzero(starts), flat.size)).astype(np.int64)))
    out = [t.to(x.device) for t in out]
    return out[0] if len(out) == 1 else tuple(out)


def _unique_consecutive_slices(x, data, dim, return_inverse, return_counts):
    """unique_consecutive along `dim`: each run of equal consecutive slices kept once."""
    a = normalize_axis(integer(dim, "unique_consecutive: dim"), data.ndim)
    slices = np.moveaxis(data.reshape(1) if data.ndim == 0 else data, a, 0)
    rows = slices.reshape(slices.shape[0], -1)
    starts = np.ones(rows.shape[0], bool)
    starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    out = [tensor(np.moveaxis(slices[starts], 0, a), dtype=data.dtype)]
    if return_inverse:
        out.append(tensor((np.cumsum(starts) - 1).astype(np.int64)))
    if return_counts:
        out.append(tensor(np.diff(np.append(np.flatnonzero(starts), starts.size)).astype(np.int64)))
    out = [t.to(x.device) for t in out]
    return out[0] if len(out) == 1 else tuple(out)


Tensor.masked_select = masked_select
Tensor.unique_consecutive = unique_consecutive


__all__ = ["allclose", "equal", "nonzero", "unique", "unique_consecutive", "masked_select"]
