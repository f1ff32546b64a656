"""nbflow.linalg: PyTorch's torch.linalg on nbflow's ops.

The decompositions are ops (nbflow/ops/decomp.py, and the LU and LDL factorizations
nbflow/ops/factorizations.py); everything else here is written with nbflow ops, so it runs in
eager and graph mode and differentiates through them. Results with several parts are named
tuples, as in PyTorch (`eigh(a).eigenvalues`). As in PyTorch, solve_ex and inv_ex are
lu_factor_ex then lu_solve, so their info codes are lu_factor_ex's.
"""

import math
from collections import namedtuple

import numpy as np

from .argcheck import choice, flag, integers, shown, within_budget
from .core import UNKNOWN, public
from .core import dtypes as dt
from .core.errors import (
    ArgumentError,
    AttrError,
    DomainError,
    DTypeError,
    ShapeError,
    UnsupportedError,
)
from .ops import decomp
from .ops import factorizations as fz
from .ops.aliases import adjoint
from .ops.complex_math import conj
from .ops.creation import eye, ones_like, zeros
from .ops.decomp import det, inv, is_vector_rhs, solve, square_size
from .ops.elementwise import abs as abs_
from .ops.elementwise import astype, mul, where
from .ops.linalg import matmul, matrix_transpose
from .ops.linalg import norm as _vector_norm
from .ops.products import cross as _cross
from .ops.products import matrix_power
from .ops.reduce import max as max_
from .ops.reduce import min as min_
from .ops.reduce import sum as sum_
from .ops.select import diag_embed, narrow, tril, triu
from .ops.select import diagonal as _diagonal
from .ops.shape import broadcast_to, concat, movedim, reshape, squeeze, unsqueeze

SlogdetResult = namedtuple("SlogdetResult", "sign logabsdet")
QRResult = namedtuple("QRResult", "Q R")
EighResult = namedtuple("EighResult", "eigenvalues eigenvectors")
EigResult = namedtuple("EigResult", "eigenvalues eigenvectors")
SVDResult = namedtuple("SVDResult", "U S Vh")
LstsqResult = namedtuple("LstsqResult", "solution residuals rank singular_values")
LUFactorResult = namedtuple("LUFactorResult", "LU pivots")
LUFactorExResult = namedtuple("LUFactorExResult", "LU pivots info")
LUResult = namedtuple("LUResult", "P L U")
SolveExResult = namedtuple("SolveExResult", "result info")
InvExResult = namedtuple("InvExResult", "inverse info")
CholeskyExResult = namedtuple("CholeskyExResult", "L info")
LDLFactorResult = namedtuple("LDLFactorResult", "LD pivots")
LDLFactorExResult = namedtuple("LDLFactorExResult", "LD pivots info")

# ---------------------------------------------------------------- the decompositions


def cholesky(A, *, upper=False):
    """L lower triangular with A = L L^T (upper=True: L^T), read from A's lower triangle."""
    return decomp.cholesky(A, upper=upper)


def qr(A, mode="reduced"):
    """(Q, R) with A = Q R, as torch.linalg.qr: mode 'reduced' gives Q (..., m, k) and R
    (..., k, n), k = min(m, n); 'complete' Q (..., m, m) and R (..., m, n) (Q's columns past
    n one orthonormal completion, differentiated as computed where PyTorch refuses); 'r' R
    alone, with an empty Q."""
    choice(mode, ("reduced", "complete", "r"), "qr: mode")  # (`in` of an array: ambiguous)
    m, n = A.shape[-2:] if A.ndim >= 2 else (0, 0)  # (decomp.qr raises for a vector)
    device = getattr(A, "device", None)
    if mode != "complete" or m <= n:
        q, r = decomp.qr(A)
        if mode == "r":  # PyTorch's empty Q
            q = zeros(0, dtype=q.dtype, device=device)
        return QRResult(q, r)
    if UNKNOWN in (m, n):
        raise UnsupportedError("qr: mode='complete' needs the matrix dims known")
    # the QR of [A | I]: its first n reflections are A's own, and its Q is a complete basis
    basis = broadcast_to(eye(m, dtype=A.dtype, device=device), (*A.shape[:-2], m, m))
    q, r = decomp.qr(concat(A, basis, axis=-1))
    return QRResult(q, narrow(r, -1, 0, n))


def eigh(A, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, read from the lower
    (UPLO='L') or upper ('U') triangle."""
    return EighResult(*decomp.eigh(_lower_from(A, UPLO)))


def eig(A):
    """(eigenvalues, eigenvectors as columns of unit norm) of square A, complex (a real A's
    too), as LAPACK's geev gives them."""
    return EigResult(*decomp.eig(A))


def eigvals(A):
    """The complex eigenvalues of square A."""
    return decomp.eig(A)[0]


def eigvalsh(A, UPLO="L"):
    """The eigenvalues of symmetric A, ascending."""
    return decomp.eigh(_lower_from(A, UPLO))[0]


def _lower_from(A, UPLO):
    if not isinstance(UPLO, str) or UPLO not in ("L", "U"):
        raise DomainError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    return A if UPLO == "L" else matrix_transpose(A)  # A^T's lower triangle is A's upper


def svd(A, full_matrices=True):
    """(U, S, Vh) with A = U diag(S) Vh, S descending."""
    return SVDResult(*decomp.svd(A, full_matrices=full_matrices))


def svdvals(A):
    """The singular values of A, descending."""
    return decomp.svd(A, full_matrices=False)[1]


def slogdet(A):
    """(sign, log|det A|); the sign has no gradient."""
    return SlogdetResult(*decomp.slogdet(A))


# ---------------------------------------------------------------- built on them


def _eps(x):
    return float(np.finfo(np.dtype(x.dtype)).eps)


def _largest(s):
    """The largest singular value of each matrix (0 for a matrix with none: 0 x n)."""
    if s.shape[-1] == 0:
        return zeros(*s.shape[:-1], dtype=s.dtype, device=getattr(s, "device", None))
    return max_(s, axis=-1)


def pinv(A, *, rtol=None, hermitian=False):
    """The pseudo-inverse through the SVD: singular values below rtol * max(S) (default
    max(m, n) * eps) count as zero. With `hermitian`, A is read from its lower triangle (the
    upper one mirrored, conjugated) and its diagonal's real part, as PyTorch's eigh-based
    path reads it; the SVD is used anyway."""
    if hermitian:
        low, diagonal = tril(A, -1), triu(tril(A))
        A = low + adjoint(low) + (diagonal + adjoint(diagonal)) * 0.5
    const = A.detach() if A.requires_grad else A
    u, s, vh = decomp.svd(const, full_matrices=False)
    if rtol is None:
        rtol = max(A.shape[-2:]) * _eps(A)
    cutoff = unsqueeze(_largest(s), -1) * rtol
    keep = s > cutoff
    s_inv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    X = matmul(adjoint(vh) * unsqueeze(s_inv, -2), adjoint(u))
    if not A.requires_grad:
        return X
    # The gradient by the pseudo-inverse's own derivative (Golub & Pereyra; PyTorch's
    # pinv_backward), not through the SVD's, which is NaN at repeated singular values: X plus
    # a term linear in D = A - const, which is 0 in value and dX = -X D X + X X^H D^H (I - A X)
    # + (I - X A) D^H X^H X in derivative.
    D = A - const
    Dt, Xt = adjoint(D), adjoint(X)
    XXt, XtX = matmul(X, Xt), matmul(Xt, X)
    P = matmul(XXt, Dt)  # X X^H D^H
    Q = matmul(Dt, XtX)  # D^H X^H X
    term = (
        -matmul(matmul(X, D), X) + P - matmul(matmul(P, const), X) + Q - matmul(matmul(X, const), Q)
    )
    return X + term


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):
    """The matrix norm over the two dims `dim`: 'fro', 'nuc', 2, -2 (singular values),
    1, -1 (column sums), inf, -inf (row sums) of |A|."""
    if A.ndim < 2:
        raise ShapeError(f"matrix_norm needs at least 2 dims, got {A.shape}")
    dim = integers(dim, "matrix_norm: dim")
    if len(dim) != 2:
        raise ShapeError(f"matrix_norm: dim must name two dims, got {dim}")
    choice(ord, ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf), "matrix_norm: ord")
    rows, cols = (d % A.ndim for d in dim)
    if rows == cols:
        raise ShapeError(f"matrix_norm: dim must name two different dims, got {dim}")
    if ord in ("fro", "nuc", 2, -2):
        moved = _moved_last(A, rows, cols)
        result = _spectral_norm(moved, ord)
        return _keep(result, (rows, cols)) if keepdim else result
    sums_over, pick_over = _norm_axes(ord, rows, cols)
    sums = sum_(abs_(A), axis=sums_over, keepdims=True)
    pick = max_ if ord > 0 else min_
    result = pick(sums, axis=pick_over, keepdims=True)
    return result if keepdim else _drop(result, (rows, cols))


def _norm_axes(ord, rows, cols):
    if ord in (1, -1):
        return rows, cols  # the largest (smallest) column sum
    if ord in (math.inf, -math.inf):
        return cols, rows  # the largest (smallest) row sum
    raise DomainError(f"matrix_norm: ord must be 'fro', 'nuc', 2, -2, 1, -1, inf or -inf: {ord!r}")


def _spectral_norm(A, ord):
    if ord == "fro":
        return vector_norm(A, 2, (-2, -1))
    s = svdvals(A)
    if ord == "nuc":
        return sum_(s, axis=-1)
    return max_(s, axis=-1) if ord == 2 else min_(s, axis=-1)


def _moved_last(A, rows, cols):
    return movedim(A, (rows, cols), (-2, -1))


def _keep(x, axes):
    for a in sorted(axes):
        x = unsqueeze(x, a)
    return x


def _drop(x, axes):
    return squeeze(x, axis=tuple(axes))


def vector_norm(x, ord=2, dim=None, keepdim=False):
    """The vector ord-norm over `dim` (None: every element): 2, 1, inf, -inf, 0 or p > 0."""
    return _vector_norm(x, p=ord, axis=dim, keepdims=keepdim)


def norm(A, ord=None, dim=None, keepdim=False):
    """torch.linalg.norm: a vector norm for an int `dim`, or for ord None over every element
    (dim None); a matrix norm for a 2-tuple `dim` or a 2-D A with ord given."""
    if isinstance(dim, int):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim)
    if dim is not None:
        dim = integers(dim, "linalg.norm: dim")
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim)
    if A.ndim == 1:
        return vector_norm(A, ord, dim, keepdim)
    raise ShapeError(f"norm: ord={ord!r} needs a 1-D or 2-D A or a dim, got {A.shape}")


def cond(A, p=None):
    """The condition number in the 2-norm (p None or 2): largest / smallest singular value;
    other p: norm(A, p) * norm(inv(A), p)."""
    if p is None or p == 2:
        s = svdvals(A)
        return max_(s, axis=-1) / min_(s, axis=-1)
    if p == -2:
        s = svdvals(A)
        return min_(s, axis=-1) / max_(s, axis=-1)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """How many singular values exceed max(atol, rtol * max(S)) (int64; PyTorch's default
    rtol max(m, n) * eps when neither is given)."""
    s = svdvals(A)
    if rtol is None:
        rtol = 0.0 if atol is not None else max(A.shape[-2:]) * _eps(A)
    tol = unsqueeze(_largest(s), -1) * rtol
    if atol is not None:
        tol = where(tol > atol, tol, atol)
    return sum_(astype(s > tol, dt.int64), axis=-1)


def multi_dot(tensors):
    """The product of the matrices in `tensors`, left to right; the first may be a row and
    the last a column vector (their dims are dropped from the result)."""
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentError(f"multi_dot: tensors must be a list of tensors, got {shown(tensors)}")
    if len(tensors) < 2:
        raise DomainError(f"multi_dot needs at least 2 tensors, got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (left=False: X A = B), A triangular: only its upper (lower) triangle is
    read, its diagonal taken as ones when unitriangular."""
    for arg, value in (("upper", upper), ("left", left), ("unitriangular", unitriangular)):
        choice(value, (False, True), f"linalg.solve_triangular: {arg}", AttrError)
    tri = triu(A) if upper else tril(A)
    if unitriangular:
        tri = tri - diag_embed(_diagonal(tri, 0, -2, -1)) + _identity(A)
    if left:
        return solve(tri, B)
    return matrix_transpose(solve(matrix_transpose(tri), matrix_transpose(B)))


def _identity(A):
    return eye(A.shape[-1], dtype=A.dtype, device=getattr(A, "device", None))


LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A X = B through the pseudo-inverse (of full or
    deficient rank), with what PyTorch's CPU `driver` ("gelsy" by default, "gels", "gelsd",
    "gelss") reports beside it: residuals (the squared residual of each column, where A has
    more rows than columns and full rank; not for gelsy), rank (not for gels) and
    singular_values (gelsd, gelss); what a driver does not report is an empty tensor."""
    driver = "gelsy" if driver is None else choice(driver, LSTSQ_DRIVERS, "linalg.lstsq: driver")
    p = pinv(A) if rcond is None else pinv(A, rtol=rcond)
    vector = B.ndim == A.ndim - 1
    x = squeeze(matmul(p, unsqueeze(B, -1)), axis=-1) if vector else matmul(p, B)
    m, n = A.shape[-2:]
    # what a driver does not report: empty, and computed from x as PyTorch's is (it requires
    # grad where x does; its gradient is empty); real, as residuals and singular values are
    empty = reshape(x, (-1,))[:0]
    empty = abs_(empty) if dt.is_complex(empty.dtype) else empty
    rank = None
    if driver != "gels":
        rank = matrix_rank(A) if rcond is None else matrix_rank(A, rtol=rcond)
    residuals = empty
    full_rank = driver == "gels" or (m > n and bool((rank == n).all()))
    if m > n and driver != "gelsy" and full_rank:
        columns = (unsqueeze(x, -1), unsqueeze(B, -1)) if vector else (x, B)
        r = matmul(A, columns[0]) - columns[1]
        residuals = sum_(abs_(r) ** 2 if dt.is_complex(r.dtype) else r * r, axis=-2)
    values = svdvals(A) if driver in ("gelsd", "gelss") else empty
    if rank is None:
        rank = zeros(0, dtype=dt.int64, device=getattr(A, "device", None))
    return LstsqResult(x, residuals, rank, values)


# ---------------------------------------------------------------- PyTorch's aliases


def cross(input, other, dim=-1):
    """The cross product of 3-vectors along `dim` (-1 by default, unlike torch.cross)."""
    return _cross(input, other, dim=dim)


def diagonal(A, offset=0, dim1=-2, dim2=-1):
    """The `offset`-th diagonal of the matrices in the last two dims."""
    return _diagonal(A, offset, dim1, dim2)


def vecdot(x, y, dim=-1):
    """The dot product of x and y along `dim` (they broadcast), x conjugated: sum(conj(x) y)."""
    return sum_(mul(conj(x), y), axis=dim)  # (the op: `*` of two numpy arrays would be numpy's)


# ---------------------------------------------------------------- LU


def _pivoted(name, pivot):
    if not pivot:
        raise UnsupportedError(f"linalg.{name}: LU without pivoting is not implemented on the CPU")


def lu_factor(A, *, pivot=True):
    """(LU, pivots): A = P L U packed as LAPACK's getrf, pivots 1-based int32; a zero on U's
    diagonal raises LinAlgError (lu_factor_ex returns it as info)."""
    _pivoted("lu_factor", pivot)
    factor, pivots, _ = fz.lu_factor_ex(A, errors="lu_factor")
    return LUFactorResult(factor, pivots)


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info): lu_factor without the error; info is 0 or the 1-based i of the
    first zero U[i, i]."""
    _pivoted("lu_factor_ex", pivot)
    return LUFactorExResult(*fz.lu_factor_ex(A, errors=_errors("lu_factor_ex", check_errors)))


def lu(A, *, pivot=True):
    """(P, L, U) with A = P L U: P (..., m, m), L (..., m, k) unit lower triangular, U (..., k,
    n) upper, k = min(m, n). A singular A raises nothing."""
    _pivoted("lu", pivot)
    factor, pivots, _ = fz.lu_factor_ex(A)
    return LUResult(*fz.lu_unpack(factor, pivots))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (adjoint: A^H X = B; left=False: X A = B, or X A^H = B), A given by
    lu_factor's (LU, pivots)."""
    return fz.linalg_lu_solve(LU, pivots, B, left=left, adjoint=adjoint)


# ---------------------------------------------------------------- the _ex functions


def _same_dtype(name, A, B):
    if A.dtype != B.dtype:
        raise DTypeError(
            f"linalg.{name}: expected A and B to have the same dtype, got {A.dtype} and {B.dtype}"
        )


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info): linalg.solve (B a batch of vectors or of matrices; left=False solves X A
    = B) whose singular A gives info = the first zero pivot of its LU instead of an error."""
    _same_dtype("solve_ex", A, B)
    square_size(A)
    vector = is_vector_rhs(A.shape, B.shape)
    if vector and not left:
        raise ShapeError(
            "linalg.solve_ex: vector broadcasting of the left hand side is not supported for "
            "left=False; there linalg.solve is B / A.squeeze(-1)"
        )
    factor, pivots, info = fz.lu_factor_ex(A, errors=_errors("solve_ex", check_errors))
    b = unsqueeze(B, -1) if vector else B
    x = fz.linalg_lu_solve(factor, pivots, b, left=left)
    return SolveExResult(squeeze(x, -1) if vector else x, info)


def _errors(api, check_errors):
    return api if flag(check_errors, f"{api}: check_errors") else ""


def inv_ex(A, *, check_errors=False):
    """(inverse, info): linalg.inv whose singular A gives info > 0 (and a non-finite
    inverse) instead of an error."""
    n = square_size(A)
    factor, pivots, info = fz.lu_factor_ex(A, errors=_errors("inv_ex", check_errors))
    if n == 0:  # the empty inverse (and an empty gradient: no 0x0 solve)
        return InvExResult(A * 0.0, info)
    identity = broadcast_to(eye(n, dtype=A.dtype, device=getattr(A, "device", None)), A.shape)
    return InvExResult(fz.linalg_lu_solve(factor, pivots, identity), info)


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): linalg.cholesky whose matrix that is not positive-definite gives info = the
    order of the failing leading minor instead of an error."""
    return CholeskyExResult(*fz.cholesky_ex(A, upper=upper, check_errors=check_errors))


def matrix_exp(A):
    """The matrix exponential of each square matrix (..., n, n)."""
    return fz.matrix_exp(A)


# ---------------------------------------------------------------- tensor equations


def tensorinv(A, ind=2):
    """The inverse of A for tensordot over `ind` dims: A.shape[ind:] + A.shape[:ind], with
    prod(A.shape[:ind]) == prod(A.shape[ind:])."""
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise DomainError(
            f"linalg.tensorinv: expected a strictly positive integer ind, got {ind!r}"
        )
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(rows) != math.prod(cols):
        raise ShapeError(
            "linalg.tensorinv: expected prod(A.shape[:ind]) == prod(A.shape[ind:]), got "
            f"{math.prod(rows)} != {math.prod(cols)} for shape {A.shape}, ind={ind}"
        )
    return reshape(inv(reshape(A, (math.prod(rows), math.prod(cols)))), cols + rows)


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B; `dims` names A's dims moved to the end first."""
    if dims is not None:
        dims = integers(dims, "linalg.tensorsolve: dims")
        A = movedim(A, dims, tuple(range(A.ndim - len(dims), A.ndim)))
    shape = tuple(A.shape[B.ndim :])
    n, b_size = math.prod(shape), math.prod(B.shape)
    if n != b_size:
        raise ShapeError(
            "linalg.tensorsolve: expected prod(A.shape[B.ndim:]) == prod(B.shape), got "
            f"{n} != {b_size} for A {A.shape} and B {B.shape}"
        )
    return reshape(solve(reshape(A, (n, n)), reshape(B, (n,))), shape)


# ---------------------------------------------------------------- vander, householder_product


def vander(x, *, N=None):
    """The Vandermonde matrix of x (..., n): (..., n, N) with columns x^0, x^1, ..., x^(N-1)
    (increasing powers, unlike torch.vander); N defaults to n and must exceed 1."""
    if x.dtype == dt.bool_ or x.dtype == dt.float16:
        raise DTypeError(
            f"linalg.vander supports floating point and integer tensors, got {x.dtype}"
        )
    x = unsqueeze(x, -1) if x.ndim == 0 else x
    n = x.shape[-1] if N is None else N
    if isinstance(n, bool) or not isinstance(n, int) or n <= 1:
        raise DomainError(f"linalg.vander: N must be greater than 1, got {n!r}")
    within_budget("linalg.vander", tuple(x.shape) + (n,), x.dtype)
    if 0 in x.shape:  # no element: no column to make one op each
        return zeros(*x.shape, n, dtype=x.dtype, device=getattr(x, "device", None))
    columns = [unsqueeze(ones_like(x), -1)]
    for _ in range(n - 1):  # products, not powers: pow's gradient at 0 would be 0 * inf
        columns.append(columns[-1] * unsqueeze(x, -1))
    return concat(*columns, axis=-1)


def householder_product(A, tau):
    """The first n columns of the product of the Householder reflections that A (..., m, n)
    and tau (..., k) encode (LAPACK's orgqr, as after geqrf); m >= n >= k."""
    return fz.householder_product(A, tau)


# ---------------------------------------------------------------- LDL


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """(LD, pivots, info): the Bunch-Kaufman LDL^T of symmetric A from its lower triangle,
    packed as LAPACK's sytrf; info is 0 or the 1-based i of an exactly zero D[i, i]. No
    gradient (none in PyTorch)."""
    return LDLFactorExResult(
        *fz.ldl_factor_ex(A, hermitian=hermitian, errors=_errors("ldl_factor_ex", check_errors))
    )


def ldl_factor(A, *, hermitian=False):
    """(LD, pivots): ldl_factor_ex that raises LinAlgError for a singular D."""
    factor, pivots, _ = fz.ldl_factor_ex(A, hermitian=hermitian, errors="ldl_factor")
    return LDLFactorResult(factor, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with A X = B, A given by ldl_factor's (LD, pivots)."""
    return fz.ldl_solve(LD, pivots, B, hermitian=hermitian)


__all__ = [
    "cholesky",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "lstsq",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vecdot",
    "vector_norm",
]

__all__ += [
    "cholesky_ex",
    "householder_product",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matrix_exp",
    "solve_ex",
    "tensorinv",
    "tensorsolve",
    "vander",
]

# as users call them: PyTorch's argument names, and a clear error for a non-tensor input
globals().update({name: public(globals()[name]) for name in __all__})
