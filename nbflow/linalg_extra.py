"""The rest of torch.linalg: the LU family, the `_ex` functions with their info tensors,
matrix_exp, tensorinv and tensorsolve, vander, householder_product and LDL.

The factorizations are ops (nbflow/ops/factorizations.py); the rest is written with nbflow
ops, so it runs in eager and graph mode and differentiates through them. As in PyTorch,
solve_ex and inv_ex are lu_factor_ex then lu_solve, so their info codes are lu_factor_ex's.
nbflow.linalg re-exports everything here.
"""

import math
from collections import namedtuple

from . import dtypes as dt
from .errors import DTypeError, ShapeError, UnsupportedError
from .ops import factorizations as fz
from .ops.creation import eye, ones_like
from .ops.decomp import _is_vector_rhs, _square, inv, solve
from .ops.shape import broadcast_to, concat, movedim, reshape, squeeze, unsqueeze

LUFactorResult = namedtuple("LUFactorResult", "LU pivots")
LUFactorExResult = namedtuple("LUFactorExResult", "LU pivots info")
LUResult = namedtuple("LUResult", "P L U")
SolveExResult = namedtuple("SolveExResult", "result info")
InvExResult = namedtuple("InvExResult", "inverse info")
CholeskyExResult = namedtuple("CholeskyExResult", "L info")
LDLFactorResult = namedtuple("LDLFactorResult", "LD pivots")
LDLFactorExResult = namedtuple("LDLFactorExResult", "LD pivots info")

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
    """X with A X = B (adjoint: A^T X = B; left=False: X A = B, or X A^T = B), A given by
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
    _square(A)
    vector = _is_vector_rhs(A.shape, B.shape)
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
    return api if check_errors else ""


def inv_ex(A, *, check_errors=False):
    """(inverse, info): linalg.inv whose singular A gives info > 0 (and a non-finite
    inverse) instead of an error."""
    n = _square(A)
    factor, pivots, info = fz.lu_factor_ex(A, errors=_errors("inv_ex", check_errors))
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
        raise ValueError(f"linalg.tensorinv: expected a strictly positive integer ind, got {ind!r}")
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
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
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
        raise ValueError(f"linalg.vander: N must be greater than 1, got {n!r}")
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
