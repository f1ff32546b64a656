"""PyTorch's small linear-algebra functions (cross, kron, inner, mv, the add-products,
tensordot, dist, renorm, vander, ...) and cdist, composed from matmul, einsum and elementwise
ops."""

import math

import numpy as np

from ..argcheck import finite, integer, known_size, number
from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import AttrError, DomainError, DTypeError, ShapeError
from .complex_math import conj
from .creation import eye, full_like, zeros
from .decomp import inv
from .einsum import einsum
from .elementwise import abs, astype, div, mul, sqrt, where
from .index import getitem
from .linalg import bmm, dot, matmul, norm, outer
from .reduce import sum as reduce_sum
from .shape import axis_of, broadcast_to, reshape, stack, swapaxes, unsqueeze


def _ranks(name, **named):
    for arg, (x, want) in named.items():
        if x.ndim != want:
            raise ShapeError(f"{name}: {arg} must be {want}-D, got shape {tuple(x.shape)}")


def _scaled_sum(name, x, product, beta, alpha):
    """beta * x + alpha * product; beta == 0 ignores x (NaN in x does not spread, as BLAS and
    PyTorch). For integer tensors alpha and beta are cast to ints (truncated), as PyTorch's."""
    if product.dtype in dt.INTS:
        beta, alpha = (
            int(finite(v, f"{name}: {k}")) for k, v in (("beta", beta), ("alpha", alpha))
        )
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
    if not shape:
        raise ShapeError("cross: needs tensors of at least one dim (of size 3)")
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
    """The dot product of two 1-D tensors, a conjugated: sum(conj(a) * b)."""
    return dot(conj(a), b)


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
    if result is None:  # the identity, as a function of x whose gradient is zero (PyTorch's)
        ident = eye(x.shape[-1], dtype=x.dtype, device=getattr(x, "device", None))
        chosen = full_like(x, True, dtype="bool")
        return where(chosen, broadcast_to(ident, tuple(x.shape)), x)
    return result


# ---------------------------------------------------------------- tensordot, norms, vander


def tensordot(a, b, dims=2):
    """The sum of products over a's last `dims` dims and b's first (or over the dim lists
    dims=(dims_a, dims_b)), composed as an einsum; a contracted dim of size 1 broadcasts
    against the other's, as in PyTorch."""
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        k = integer(dims, "tensordot: dims", 0)
        if k > a.ndim or k > b.ndim:
            raise ShapeError(f"tensordot: dims={k} exceeds the dims of {a.shape} or {b.shape}")
        da, db = list(range(a.ndim - k, a.ndim)), list(range(k))
    else:
        try:
            da, db = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
        except (TypeError, ValueError):
            raise AttrError(f"tensordot: dims must be an int or two lists, got {dims!r}") from None
    if len(da) != len(db):
        raise ShapeError(f"tensordot: {len(da)} dims of a against {len(db)} of b")
    da, db = [axis_of(d, a.ndim) for d in da], [axis_of(d, b.ndim) for d in db]
    a, b = _contracted_sizes_matched(a, b, da, db)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa, sb = [next(letters) for _ in range(a.ndim)], [None] * b.ndim
    for i, j in zip(da, db):
        if UNKNOWN not in (a.shape[i], b.shape[j]) and a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: dim {i} of {a.shape} and dim {j} of {b.shape} differ")
        sb[j] = sa[i]
    sb = [s or next(letters) for s in sb]
    kept = [s for i, s in enumerate(sa) if i not in da] + [
        s for j, s in enumerate(sb) if j not in db
    ]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(kept)}", a, b)


def _contracted_sizes_matched(a, b, da, db):
    """a and b with a contracted dim of size 1 against a longer one summed on the other side
    (kept as size 1): PyTorch's tensordot broadcasts such dims."""
    for i, j in zip(da, db):
        if a.shape[i] == 1 and b.shape[j] not in (1, UNKNOWN):
            b = reduce_sum(b, axis=j, keepdims=True)
        elif b.shape[j] == 1 and a.shape[i] not in (1, UNKNOWN):
            a = reduce_sum(a, axis=i, keepdims=True)
    return a, b


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over every element (real for complex ones)."""
    for x in (input, other):
        if not (dt.is_float(x.dtype) or dt.is_complex(x.dtype)):
            raise DTypeError(f"dist: inputs must be float or complex tensors, got {x.dtype}")
    return norm(input - other, number("dist", "p", p))


def renorm(input, p, dim, maxnorm):
    """input with each slice along `dim` whose p-norm exceeds maxnorm scaled down to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch); a complex slice's norm is its moduli's."""
    if not (dt.is_float(input.dtype) or dt.is_complex(input.dtype)):
        raise DTypeError(f"renorm: input must be a float or complex tensor, got {input.dtype}")
    p, maxnorm = number("renorm", "p", p), number("renorm", "maxnorm", maxnorm)
    if not p > 0 or not maxnorm >= 0:
        raise DomainError(f"renorm: p must be > 0 and maxnorm >= 0, got p={p}, maxnorm={maxnorm}")
    a = axis_of(dim, input.ndim)
    rest = tuple(d for d in range(input.ndim) if d != a)
    size = norm(input, p, axis=rest, keepdims=True) if rest else abs(input)
    return input * where(size > maxnorm, maxnorm / (size + 1e-7), 1.0)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: columns x**(N-1), ..., x**0 (x**0 first with
    increasing); integers (and bools) in int64, as PyTorch."""
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-D, got shape {x.shape}")
    n = known_size("vander", x, 0) if N is None else integer(N, "vander: N", 0)
    if not dt.is_float(x.dtype):
        x = astype(x, dt.int64)
    if n == 0:
        return zeros(known_size("vander", x, 0), 0, dtype=x.dtype)
    columns = [full_like(x, 1)]
    for _ in range(n - 1):  # products, not powers: pow's gradient at 0 would be 0 * inf
        columns.append(columns[-1] * x)
    return stack(columns if increasing else columns[::-1], axis=1)


# ---------------------------------------------------------------- distances


_COMPUTE_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distances between each row of x1 (..., P, M) and each row of x2 (..., R, M):
    (..., P, R), batch dims broadcasting. p >= 0 or inf; p=0 counts the differing
    coordinates. The gradient at a zero distance is 0, as PyTorch's."""
    for arg, x in (("x1", x1), ("x2", x2)):
        if x.ndim < 2:
            raise ShapeError(f"cdist: {arg} must have at least 2 dims, got shape {x.shape}")
        if not dt.is_float(x.dtype):
            raise DTypeError(f"cdist: {arg} must be a float tensor, got {x.dtype}")
    m1, m2 = x1.shape[-1], x2.shape[-1]
    if UNKNOWN not in (m1, m2) and m1 != m2:
        raise ShapeError(f"cdist: x1 and x2 rows differ in length: {x1.shape} and {x2.shape}")
    p = number("cdist", "p", p)
    if not p >= 0:
        raise DomainError(f"cdist: p must be >= 0 (or inf), got {p}")
    if compute_mode not in _COMPUTE_MODES:
        raise AttrError(f"cdist: compute_mode must be one of {_COMPUTE_MODES}")
    if p == 2 and _use_mm(compute_mode, x1.shape[-2], x2.shape[-2]):
        return _euclid_by_matmul(x1, x2)
    diff = unsqueeze(x1, -2) - unsqueeze(x2, -3)  # (..., P, R, M): memory P * R * M
    if p in (0, 1, 2, math.inf):
        return norm(diff, p, axis=-1)
    a = abs(diff)
    # |d|**p and s**(1/p) have infinite slopes at 0: the inner wheres keep them out
    powered = where(a > 0, where(a > 0, a, 1) ** p, 0)
    s = reduce_sum(powered, axis=-1)
    return where(s > 0, where(s > 0, s, 1) ** (1.0 / p), 0)


def _use_mm(mode, p_rows, r_rows):
    # PyTorch's rule: the matmul form (memory P * R) beyond 25 rows; the difference form
    # (exact, memory P * R * M) otherwise
    if mode == "use_mm_for_euclid_dist_if_necessary":
        return UNKNOWN in (p_rows, r_rows) or p_rows > 25 or r_rows > 25
    return mode == "use_mm_for_euclid_dist"


def _euclid_by_matmul(x1, x2):
    """sqrt(|a|^2 + |b|^2 - 2 a.b): rounding can leave a small negative, clamped to 0."""
    sq1 = reduce_sum(x1 * x1, axis=-1, keepdims=True)
    sq2 = unsqueeze(reduce_sum(x2 * x2, axis=-1), -2)
    d2 = sq1 + sq2 - matmul(x1, swapaxes(x2, -1, -2)) * 2
    positive = d2 > 0
    return where(positive, sqrt(where(positive, d2, 1)), 0)


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
    "tensordot",
    "dist",
    "renorm",
    "vander",
    "cdist",
]
