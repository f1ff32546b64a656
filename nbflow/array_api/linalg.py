"""The Array API standard's `linalg` extension over nbflow.linalg (autograd records through
it as through nbflow.linalg)."""

from __future__ import annotations

import math
from collections import namedtuple

from .. import linalg as _la
from ..core.errors import ShapeError as _ShapeError
from . import _arr, _nb, _scalar_like, float64
from . import matmul as matmul
from . import matrix_transpose as matrix_transpose
from . import tensordot as tensordot
from . import vecdot as vecdot

EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
QRResult = namedtuple("QRResult", "Q R")
SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
SVDResult = namedtuple("SVDResult", "U S Vh")


def cholesky(x, /, *, upper=False):
    return _la.cholesky(_arr(x), upper=upper)


def cross(x1, x2, /, *, axis=-1):
    x1, x2 = _arr(x1), _arr(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise _ShapeError("cross: the axis must have size 3")
    return _la.cross(x1, x2, dim=axis)


def det(x, /):
    return _la.det(_arr(x))


def diagonal(x, /, *, offset=0):
    return _la.diagonal(_arr(x), offset=offset)


def eigh(x, /):
    w, v = _la.eigh(_arr(x))
    return EighResult(w, v)


def eigvalsh(x, /):
    return _la.eigvalsh(_arr(x))


def inv(x, /):
    return _la.inv(_arr(x))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return _la.matrix_norm(_arr(x), ord=ord, keepdim=keepdims)


def matrix_power(x, n, /):
    return _la.matrix_power(_arr(x), n)


def matrix_rank(x, /, *, rtol=None):
    return _la.matrix_rank(_arr(x), rtol=rtol)


def outer(x1, x2, /):
    return _nb.outer(_arr(x1), _arr(x2))


def pinv(x, /, *, rtol=None):
    return _la.pinv(_arr(x), rtol=rtol)


def qr(x, /, *, mode="reduced"):
    q, r = _la.qr(_arr(x), mode=mode)
    return QRResult(q, r)


def slogdet(x, /):
    s, v = _la.slogdet(_arr(x))
    return SlogdetResult(s, v)


def solve(x1, x2, /):
    return _la.solve(_arr(x1), _arr(x2))


def svd(x, /, *, full_matrices=True):
    u, s, vh = _la.svd(_arr(x), full_matrices=full_matrices)
    return SVDResult(u, s, vh)


def svdvals(x, /):
    return _la.svdvals(_arr(x))


def trace(x, /, *, offset=0, dtype=None):
    x = _arr(x)
    out = _nb.sum(_la.diagonal(x, offset=offset), axis=-1)
    if dtype is not None and out.dtype != dtype:
        out = _nb.astype(out, dtype)
    elif dtype is None and out.dtype.kind in "iub" and out.dtype != _nb.int64:
        out = _nb.astype(out, _nb.int64)
    return out


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _arr(x)
    if isinstance(ord, int | float) and -math.inf < ord < 0:  # (nbflow's norm takes p >= 0)
        from . import sum as sum_

        p = _nb.abs(x) ** _scalar_like(float(ord), x)
        s = sum_(p, axis=axis, keepdims=keepdims)
        return s ** _scalar_like(1.0 / ord, s)
    return _la.vector_norm(x, ord=ord, dim=axis, keepdim=keepdims)


__all__ = [
    n for n in dir() if not n.startswith("_") and n not in ("namedtuple", "annotations", "math")
]
del float64
