"""PyTorch's small linear-algebra functions (cross, kron, inner, mv, the add-products, ...),
composed from matmul and elementwise ops."""

import numpy as np

from ..core import UNKNOWN
from ..core.errors import AttrError, ShapeError
from .creation import eye
from .decomp import inv
from .elementwise import div, mul
from .index import getitem
from .linalg import bmm, dot, matmul, outer
from .reduce import sum as reduce_sum
from .shape import axis_of, broadcast_to, reshape, stack


def _ranks(name, **named):
    for arg, (x, want) in named.items():
        if x.ndim != want:
            raise ShapeError(f"{name}: {arg} must be {want}-D, got shape {tuple(x.shape)}")


def _scaled_sum(name, x, product, beta, alpha):
    """beta * x + alpha * product; beta == 0 ignores x (NaN in x does not spread, as BLAS and
    PyTorch)."""
    product = product if alpha == 1 else mul(product, alpha)
    if beta == 0:
        return broadcast_to(product, _broadcast_shape(name, x, product)) * 1
    return (x if beta == 1 else mul(x, beta)) + product


def _broadcast_shape(name, x, product):
    try:
        return tuple(np.broadcast_shapes(tuple(x.shape), tuple(product.shape)))
    except ValueError:
        raise ShapeError(f"{name}: input {x.shape} does not broadcast to {product.shape}") from None


def cross(a, b, dim=None):
    """The cross product of 3-vectors along `dim` (None: the first dim of size 3, as
    torch.cross; linalg.cross uses -1). a and b broadcast."""
    shape = _broadcast_shape("cross", a, b)
    if dim is None:
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dim of size 3 in the broadcast shape {shape}")
    a, b = broadcast_to(a, shape), broadcast_to(b, shape)
    d = axis_of(dim, len(shape))
    if shape[d] != 3:
        raise ShapeError(f"cross: dim {d} has size {shape[d]}, not 3")

    def part(x, i):
        return getitem(x, (slice(None),) * d + (i,))

    (a1, a2, a3), (b1, b2, b3) = [part(a, i) for i in range(3)], [part(b, i) for i in range(3)]
    return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], axis=d)


def kron(a, b):
    """The Kronecker product: block (i, j, ...) of the result is a[i, j, ...] * b."""
    n = max(a.ndim, b.ndim)
    sa, sb = (1,) * (n - a.ndim) + tuple(a.shape), (1,) * (n - b.ndim) + tuple(b.shape)
    if UNKNOWN in sa + sb:
        raise ShapeError(f"kron: shapes must be known, got {sa} and {sb}")
    # a's dims interleaved with b's: (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...)
    wide_a = reshape(a, tuple(v for m in sa for v in (m, 1)))
    wide_b = reshape(b, tuple(v for m in sb for v in (1, m)))
    return reshape(wide_a * wide_b, tuple(p * q for p, q in zip(sa, sb, strict=True)))


def inner(a, b):
    """The sum over the last dims of a and b of their products (a number times a tensor when
    either is 0-D); the result has a's leading dims, then b's."""
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: last dims differ: {a.shape} and {b.shape}")
    rows_a, rows_b = reshape(a, (-1, a.shape[-1])), reshape(b, (-1, b.shape[-1]))
    out = matmul(rows_a, rows_b.mT)
    return reshape(out, tuple(a.shape[:-1]) + tuple(b.shape[:-1]))


def vdot(a, b):
    """The dot product of two 1-D tensors (real: no conjugation to do)."""
    return dot(a, b)


def mv(mat, vec):
    """The matrix-vector product of a 2-D mat and a 1-D vec."""
    _ranks("mv", mat=(mat, 2), vec=(vec, 1))
    return matmul(mat, vec)


def addmv(input, mat, vec, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


def baddbmm(input, batch1, batch2, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), batch by batch."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, beta=1, alpha=1):
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]."""
    return _scaled_sum("addbmm", input, reduce_sum(bmm(batch1, batch2), axis=0), beta, alpha)


def addcmul(input, tensor1, tensor2, value=1):
    """input + value * tensor1 * tensor2 (broadcast)."""
    return input + mul(mul(tensor1, tensor2), value)


def addcdiv(input, tensor1, tensor2, value=1):
    """input + value * tensor1 / tensor2 (broadcast)."""
    return input + mul(div(tensor1, tensor2), value)


def addcmul_(input, tensor1, tensor2, value=1):
    """addcmul written into input; returns input."""
    return input.copy_(addcmul(input, tensor1, tensor2, value))


def addcdiv_(input, tensor1, tensor2, value=1):
    """addcdiv written into input; returns input."""
    return input.copy_(addcdiv(input, tensor1, tensor2, value))


def matrix_power(x, n):
    """x multiplied by itself n times (square matrices in the last two dims, by repeated
    squaring; n = 0 gives the identity, n < 0 the power -n of inv(x))."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2] or UNKNOWN in x.shape[-2:]:
        raise ShapeError(f"matrix_power needs square matrices in the last 2 dims, got {x.shape}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise AttrError(f"matrix_power: n must be an int, got {n!r}")
    result, square, n = None, x, int(n)
    if n < 0:
        square, n = inv(x), -n
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    if result is None:
        ident = eye(x.shape[-1], dtype=x.dtype, device=getattr(x, "device", None))
        return broadcast_to(ident, tuple(x.shape)) * 1
    return result


__all__ = [
    "cross",
    "kron",
    "inner",
    "vdot",
    "mv",
    "addmv",
    "addr",
    "baddbmm",
    "addbmm",
    "addcmul",
    "addcdiv",
    "addcmul_",
    "addcdiv_",
    "matrix_power",
]
