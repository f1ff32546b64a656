"""The LU and LDL factorizations, the solves on them, cholesky with an info tensor, and
matrix_exp: the kernels the rest of torch.linalg needs, batched over the leading dims,
float32, float64, complex64 and complex128.

The CPU kernels call LAPACK through scipy_linalg.lapack (getrf, getrs, potrf, sytrf, sytrs,
hetrf, hetrs) and scipy_linalg.expm, one matrix at a time. As in PyTorch, pivots are
LAPACK's: 1-based int32; an `info` output holds, per matrix, 0 or the 1-based index of the
failing pivot or minor, and the `*_ex` ops raise only when asked to. Pivots given by the
user are checked before LAPACK reads them (an out-of-range pivot would read outside the
matrix).

Gradients follow PyTorch's (FunctionsManual.cpp: linalg_lu_backward, linalg_lu_solve_LU,
the block-matrix rule of matrix_exp), written with nbflow ops. The torch.* functions at the
end (lu, lu_solve, lu_unpack, orgqr) are compositions of these ops.
"""

import numpy as np

from ..argcheck import choice, flag
from ..core import UNKNOWN, Attr, Deferred, Op, Spec, broadcast_shapes, needs_grad
from ..core import dtypes as dt
from ..core.errors import (
    AttrError,
    DTypeError,
    LinAlgError,
    OutOfRangeError,
    ShapeError,
    UnsupportedError,
)
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ._define import NOT_IN_PYTORCH
from .creation import arange, eye, zeros, zeros_like
from .decomp import (
    FLOATS,
    _cholesky_grad,
    _fill,
    _grads,
    _hermitian_ref,
    _mH,
    _mT,
    _no_cuda,
    _rows,
    square_size,
)
from .decomp import _square_spec as _square_float_spec
from .elementwise import astype, eq
from .linalg import matmul
from .select import narrow, tril, triu
from .shape import broadcast_to, concat, unsqueeze

lapack, scipy_linalg = Deferred("scipy.linalg.lapack"), Deferred("scipy.linalg")

# ---------------------------------------------------------------- errors from info


def _message(api, code):
    """PyTorch's _linalg_check_errors text for an info code > 0."""
    if api == "lu_factor":
        return (
            f"U[{code},{code}] is zero and using it on lu_solve would result in a division by "
            "zero. If you still want to perform the factorization, consider calling "
            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        )
    if api == "inv":
        return (
            f"The diagonal element {code} is zero, the inversion could not be completed "
            "because the input matrix is singular."
        )
    if api == "solve":
        return "The solver failed because the input matrix is singular."
    if api == "cholesky":
        return (
            "The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {code} is not positive-definite)."
        )
    return f"D[{code},{code}] is exactly zero: the matrix is singular."  # ldl_factor


def _raise_on(name, info):
    """Raise LinAlgError for the first matrix whose info is not 0 (PyTorch's check_errors):
    `name` is the function's (lu_factor, inv_ex, ...), `_ex` dropped for the message's kind."""
    api = name.removesuffix("_ex")
    flat = info.reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        where = "" if info.ndim == 0 else f" (batch element {bad[0]})"
        raise LinAlgError(f"linalg.{name}{where}: {_message(api, int(flat[bad[0]]))}")


def _check_pivots(name, pivots, n, signed=False):
    """Pivots are 1-based rows: refuse any LAPACK would read outside the matrix by."""
    p = np.abs(pivots) if signed else pivots
    if p.size and (p.min() < 1 or p.max() > n):
        raise OutOfRangeError(
            f"{name}: pivots must lie in [1, {n}] (LAPACK's 1-based rows), got values in "
            f"[{int(pivots.min())}, {int(pivots.max())}]"
        )


def _int32(name, what, spec):
    if spec.dtype != dt.int32:
        raise DTypeError(f"{name}: {what} should be a tensor of dtype int32, got {spec.dtype}")


def _matrices(name, a):
    if a.ndim < 2:
        raise ShapeError(f"{name}: expected a tensor with 2 or more dimensions, got {a.shape}")
    return a.shape[:-2], a.shape[-2], a.shape[-1]


def _min(m, n):
    return UNKNOWN if UNKNOWN in (m, n) else min(m, n)


def _known(name, x, dim):
    size = x.shape[dim]
    if size == UNKNOWN:
        raise UnsupportedError(f"{name} needs dim {dim} of the input known, got {x.shape}")
    return size


def _batched(x, batch):
    """x's matrices broadcast to the batch dims `batch`, as rows (b, *matrix)."""
    return _rows(np.broadcast_to(x, tuple(batch) + x.shape[-2:]), 2)


# ---------------------------------------------------------------- lu_factor_ex

LU_ERRORS = ("", "lu_factor", "lu_factor_ex", "inv_ex", "solve_ex")


def _lu_factor_spec(a, errors):
    batch, m, n = _matrices("lu_factor", a)
    k = _min(m, n)
    return Spec(a.shape, a.dtype), Spec(batch + (k,), dt.int32), Spec(batch, dt.int32)


def _lu_factor_cpu(a, lu_out, piv_out, info_out, errors):
    x = _rows(a, 2)
    b, m, n = x.shape
    lu, piv, info = x.copy(), np.zeros((b, min(m, n)), np.int32), np.zeros(b, np.int32)
    if min(m, n):
        getrf = lapack.get_lapack_funcs("getrf", (x,))
        for i in range(b):
            lu[i], p, info[i] = getrf(x[i])
            piv[i] = p + 1  # scipy's are 0-based
    _fill((lu_out, piv_out, info_out), (lu, piv, info))
    if errors:
        _raise_on(errors, info_out)


def _lu_factor_ref(a, errors=""):
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    flat = _rows(a, 2)
    lu, piv = flat.copy(), np.zeros((len(flat), min(m, n)), np.int32)
    info = np.zeros(len(flat), np.int32)
    for i, x in enumerate(flat if min(m, n) else ()):  # (LAPACK refuses an empty matrix)
        lu[i], p, info[i] = lapack.get_lapack_funcs("getrf", (x,))(x)
        piv[i] = p + 1
    return lu.reshape(a.shape), piv.reshape(batch + (-1,)), info.reshape(batch)


lu_factor_ex = Op(
    name="lu_factor_ex",
    inputs=("a",),
    outputs=("LU", "pivots", "info"),
    spec=_lu_factor_spec,
    kernels={"cpu": _lu_factor_cpu, "cuda": _no_cuda("lu_factor_ex")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_lu_factor_ref,
    attrs={"errors": Attr("str", "", choices=LU_ERRORS)},
    doc="torch.linalg.lu_factor_ex: A (..., m, n) = P L U with partial pivoting, packed as "
    "LAPACK's getrf (L's unit diagonal implied), pivots (..., min(m, n)) 1-based int32 and "
    "info (...) int32: 0, or i where U[i, i] (1-based) is zero. `errors` names the function "
    "(lu_factor, inv_ex, ...) whose LinAlgError a nonzero info raises; '' raises none.",
)


@lu_factor_ex.defgrad
def _lu_factor_grad(g, out, a, errors):
    g_lu = _grads(g, out)[0]
    if g_lu is None:
        return (None,)
    lu, pivots = out[0], out[1]
    m, n = lu.shape[-2:]
    k = min(m, n)
    p, lower, upper = lu_unpack(lu, pivots)
    return (_lu_backward(narrow(g_lu, -1, 0, k), narrow(g_lu, -2, 0, k), p, lower, upper),)


def _solve_triangular(a, b, **kw):
    from .. import linalg  # (lazily: nbflow.linalg is built on the ops)

    return linalg.solve_triangular(a, b, **kw)


def _lu_backward(g_l, g_u, p, lower, upper):
    """PyTorch's linalg_lu_backward (pivot=True): A's gradient from L's (m, k) and U's (k, n)."""
    m, n = lower.shape[-2], upper.shape[-1]
    k = min(m, n)
    solve = _solve_triangular
    if m == n:  # P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H
        x = tril(matmul(_mH(lower), g_l), -1) + triu(matmul(g_u, _mH(upper)))
        x = solve(_mH(upper), x, upper=False, left=False)
        x = solve(_mH(lower), x, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2] with U1 square
        x = matmul(_mH(lower), g_l) - matmul(triu(g_u), _mH(upper))
        x = solve(_mH(narrow(upper, -1, 0, k)), tril(x, -1), upper=False, left=False)
        x = concat(x + triu(narrow(g_u, -1, 0, k)), narrow(g_u, -1, k, n - k), axis=-1)
        x = solve(_mH(lower), x, upper=True, unitriangular=True)
    else:  # tall: L = [L1; L2] with L1 square
        x = matmul(g_u, _mH(upper)) - matmul(_mH(lower), tril(g_l, -1))
        x = solve(_mH(narrow(lower, -2, 0, k)), triu(x), upper=True, unitriangular=True)
        x = concat(x + tril(narrow(g_l, -2, 0, k), -1), narrow(g_l, -2, k, m - k), axis=-2)
        x = solve(_mH(upper), x, upper=False, left=False)
    return matmul(p, x)


# ---------------------------------------------------------------- the permutation of pivots


@njit(**JIT)
def _permutation_rows(pivots, perm):
    for b in range(pivots.shape[0]):
        for i in range(perm.shape[1]):
            perm[b, i] = i
        for i in range(pivots.shape[1]):  # row i was swapped with row pivots[i] - 1
            j = pivots[b, i] - 1
            perm[b, i], perm[b, j] = perm[b, j], perm[b, i]


def _permutation_cpu(pivots, out, m):
    _check_pivots("lu_unpack", pivots, m)
    rows = int(np.prod(pivots.shape[:-1]))  # (-1 cannot be inferred when pivots is empty)
    flat = np.ascontiguousarray(pivots).reshape(rows, pivots.shape[-1])
    perm = np.empty((flat.shape[0], m), np.int64)
    _permutation_rows(flat, perm)
    np.copyto(out, perm.reshape(out.shape))


def _permutation_spec(pivots, m):
    if pivots.ndim < 1:
        raise ShapeError(f"lu_permutation: pivots need at least 1 dim, got {pivots.shape}")
    _int32("lu_unpack", "LU_pivots", pivots)
    if UNKNOWN != pivots.shape[-1] > m:
        raise ShapeError(f"lu_permutation: {pivots.shape[-1]} pivots for {m} rows")
    return Spec(pivots.shape[:-1] + (m,), dt.int64)


def _permutation_ref(pivots, m):
    flat = pivots.reshape(-1, pivots.shape[-1])
    perm = np.tile(np.arange(m), (len(flat), 1))
    for row, piv in zip(perm, flat):
        for i, p in enumerate(piv):
            row[[i, p - 1]] = row[[p - 1, i]]
    return perm.reshape(pivots.shape[:-1] + (m,))


lu_permutation = Op(
    name="lu_permutation",
    inputs=("pivots",),
    outputs=("perm",),
    spec=_permutation_spec,
    kernels={"cpu": _permutation_cpu, "cuda": _no_cuda("lu_permutation")},
    dtypes=(dt.int32,),
    ref=_permutation_ref,
    attrs={"m": Attr("int")},
    differentiable=False,
    doc="The row permutation (..., m) int64 that LAPACK's 1-based pivots (..., k) apply: row "
    "i of P^T A is row perm[i] of A (lu_unpack's P[perm[j], j] = 1).",
)


# ---------------------------------------------------------------- lu_solve


def _lu_solve_spec(lu, pivots, b, left, adjoint):
    name = "linalg.lu_solve"
    if lu.dtype != b.dtype:
        raise DTypeError(
            f"{name}: expected LU and B to have the same dtype, got {lu.dtype} and {b.dtype}"
        )
    _int32(name, "pivots", pivots)
    n = square_size(lu)
    if b.ndim < 2:
        raise ShapeError(f"{name}: B needs at least 2 dims (..., n, k), got {b.shape}")
    rows = b.shape[-2] if left else b.shape[-1]
    if UNKNOWN not in (n, rows) and n != rows:
        side = "rows" if left else "columns"
        raise ShapeError(f"{name}: LU is {n}x{n} but B {b.shape} has {rows} {side}")
    if pivots.ndim != lu.ndim - 1 or any(
        UNKNOWN not in (p, s) and p != s for p, s in zip(pivots.shape, lu.shape[:-1])
    ):
        raise ShapeError(
            f"{name}: expected LU.shape[:-1] and pivots.shape to be the same, got LU "
            f"{lu.shape} and pivots {pivots.shape}"
        )
    return Spec(broadcast_shapes(b.shape[:-2], lu.shape[:-2]) + b.shape[-2:], b.dtype)


def _lu_solve_cpu(lu, pivots, b, out, left, adjoint):
    if out.size == 0:
        return
    n = lu.shape[-1]
    _check_pivots("lu_solve", pivots, n)
    batch = out.shape[:-2]
    lu3 = _batched(lu, batch)
    piv = np.broadcast_to(pivots, tuple(batch) + (n,)).reshape(-1, n) - 1
    rhs, trans, conjugate = _as_left_solve(b, left, adjoint)
    rhs = _batched(rhs, batch)
    getrs = lapack.get_lapack_funcs("getrs", (lu3,))
    res = np.empty_like(rhs)
    for i in range(len(rhs)):
        res[i] = getrs(lu3[i], piv[i], rhs[i], trans=trans)[0]
    np.copyto(out, _from_left_solve(res, left, conjugate).reshape(out.shape))


def _as_left_solve(b, left, adjoint):
    """(rhs, trans, conjugate): the solve as LAPACK's op(A) Y = rhs, trans 0 (A), 1 (A^T) or
    2 (A^H). X A = B is A^T X^T = B^T; X A^H = B is conj(A) X^T = B^T, which is A Y = conj(B^T)
    with X^T = conj(Y) (for real matrices the plain A X^T = B^T)."""
    if left:
        return b, (2 if b.dtype.kind == "c" else 1) if adjoint else 0, False
    rhs = np.swapaxes(b, -1, -2)
    return (np.conj(rhs), 0, True) if adjoint else (rhs, 1, False)


def _from_left_solve(y, left, conjugate):
    if left:
        return y
    return np.swapaxes(np.conj(y) if conjugate else y, -1, -2)


def _lu_solve_ref(lu, pivots, b, left=True, adjoint=False):
    batch = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    lu3, piv = _batched(lu, batch), np.broadcast_to(pivots, batch + pivots.shape[-1:]) - 1
    piv = piv.reshape(-1, lu.shape[-1])
    res = []
    for f, p, rhs in zip(lu3, piv, _batched(b, batch)):  # A = P L U rebuilt, then solved
        a = _lu_matrix(f, p)
        a = a.conj().T if adjoint else a
        res.append(scipy_linalg.solve(a, rhs) if left else scipy_linalg.solve(a.T, rhs.T).T)
    return np.stack(res).reshape(batch + b.shape[-2:])


def _lu_matrix(f, piv):
    """A = P L U from one packed square LU and its 0-based pivots: row i of L U was swapped
    with row piv[i], in order, so the swaps are undone in reverse."""
    a = (np.tril(f, -1) + np.eye(len(f))) @ np.triu(f)
    for i in reversed(range(len(piv))):
        a[[i, piv[i]]] = a[[piv[i], i]]
    return a


linalg_lu_solve = Op(
    name="lu_solve",
    inputs=("LU", "pivots", "B"),
    outputs=("out",),
    spec=_lu_solve_spec,
    kernels={"cpu": _lu_solve_cpu, "cuda": _no_cuda("lu_solve")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_lu_solve_ref,
    attrs={"left": Attr("bool", True), "adjoint": Attr("bool", False)},
    promote=(0, 2),
    doc="torch.linalg.lu_solve: X with A X = B for A = P L U given by lu_factor's (LU, "
    "pivots); adjoint=True solves A^H X = B, left=False X A = B (X A^H = B with adjoint). "
    "B (..., n, k) broadcasts against LU's batch dims. Differentiable in LU and B.",
)


@linalg_lu_solve.defgrad
def _lu_solve_grad(g, out, lu, pivots, b, left, adjoint):
    gb = linalg_lu_solve(lu, pivots, g, left=left, adjoint=not adjoint) if needs_grad(b) else None
    g_lu = _lu_solve_lu_grad(g, out, lu, pivots, left, adjoint) if needs_grad(lu) else None
    return g_lu, None, gb


def _lu_solve_lu_grad(g, x, lu, pivots, left, adjoint):
    """PyTorch's linalg_lu_solve_LU: the packed LU's gradient."""
    p, lower, upper = lu_unpack(lu, pivots)
    solve = _solve_triangular
    if left != adjoint:  # gR = U^-H op(-gX) op(X)^H; gLU = tril(L^-H gR U^H, -1) + triu(gR)
        gx, xx = (g, x) if left else (_mH(g), _mH(x))
        g_r = solve(_mH(upper), -matmul(gx, _mH(xx)), upper=False)
        g_l = solve(_mH(lower), matmul(g_r, _mH(upper)), upper=True, unitriangular=True)
        return tril(g_l, -1) + triu(g_r)
    # gR = -P^T op(X) op(gX)^H P L^-H; gLU = tril(gR, -1) + triu(L^H gR U^-H)
    xx, gx = (x, _mH(g)) if left else (_mH(x), g)
    g_r = -matmul(matmul(matmul(_mT(p), xx), gx), p)
    g_r = solve(_mH(lower), g_r, upper=True, left=False, unitriangular=True)
    g_u = solve(_mH(upper), matmul(_mH(lower), g_r), upper=False, left=False)
    return tril(g_r, -1) + triu(g_u)


# ---------------------------------------------------------------- cholesky_ex


def _cholesky_ex_spec(a, upper, check_errors):
    square_size(a)
    return Spec(a.shape, a.dtype), Spec(a.shape[:-2], dt.int32)


def _cholesky_ex_cpu(a, l_out, info_out, upper, check_errors):
    x = _rows(a, 2)
    res, info = np.zeros_like(x), np.zeros(len(x), np.int32)
    if x.shape[-1]:
        potrf = lapack.get_lapack_funcs("potrf", (x,))
        for i in range(len(x)):  # the lower triangle is what is read, as in PyTorch
            res[i], info[i] = potrf(np.tril(x[i]), lower=1, clean=1)
    _fill((l_out, info_out), (np.swapaxes(res, -1, -2).conj() if upper else res, info))
    if check_errors:
        _raise_on("cholesky_ex", info_out)


def _cholesky_ex_ref(a, upper=False, check_errors=False):
    flat = _rows(a, 2)
    res, info = np.zeros_like(flat), np.zeros(len(flat), np.int32)
    for i, x in enumerate(flat):
        try:
            res[i] = np.linalg.cholesky(_hermitian_ref(x))
        except np.linalg.LinAlgError:  # the failing minor: the first leading one not PD
            info[i] = next(k for k in range(1, len(x) + 1) if not _pd(x[:k, :k]))
    res = res.reshape(a.shape)
    return (np.swapaxes(res, -1, -2).conj() if upper else res), info.reshape(a.shape[:-2])


def _pd(x):
    return bool(np.all(np.linalg.eigvalsh(_hermitian_ref(x)) > 0))


cholesky_ex = Op(
    name="cholesky_ex",
    inputs=("a",),
    outputs=("L", "info"),
    spec=_cholesky_ex_spec,
    kernels={"cpu": _cholesky_ex_cpu, "cuda": _no_cuda("cholesky_ex")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_cholesky_ex_ref,
    attrs={"upper": Attr("bool", False), "check_errors": Attr("bool", False)},
    doc="torch.linalg.cholesky_ex: (L, info) with A = L L^H read from A's lower triangle "
    "(upper=True: U = L^H); info (...) int32 is 0, or the order of the leading minor that "
    "is not positive-definite, L then LAPACK's partial factor. check_errors=True raises "
    "LinAlgError instead. The gradient is cholesky's.",
)


@cholesky_ex.defgrad
def _cholesky_ex_grad(g, out, a, upper, check_errors):
    g_l = _grads(g, out)[0]
    return (None,) if g_l is None else _cholesky_grad(g_l, out[0], a, upper)


# ---------------------------------------------------------------- matrix_exp


def _wide(a):
    """a in float64 (complex128 for a complex a)."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _matrix_exp_cpu(a, out):
    # computed in float64 and rounded once: the squarings multiply float32's rounding errors
    # (an ill-conditioned 5x5 float32 sample of OpInfo's: 1e-6 of its largest entry off in
    # float32, 2e-8 this way)
    if a.size:
        np.copyto(out, scipy_linalg.expm(_wide(a)), casting="same_kind")


matrix_exp = Op(
    name="matrix_exp",
    inputs=("a",),
    outputs=("out",),
    spec=_square_float_spec,
    kernels={"cpu": _matrix_exp_cpu, "cuda": _no_cuda("matrix_exp")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=lambda a: scipy_linalg.expm(_wide(a)).astype(a.dtype) if a.size else a.copy(),
    doc="torch.linalg.matrix_exp: the exponential of each square matrix (..., n, n), by "
    "scaling and squaring with a Pade approximant of degree up to 13 (scipy_linalg.expm), "
    "computed in float64 (complex128).",
)


@matrix_exp.defgrad
def _matrix_exp_grad(g, out, a):
    # PyTorch's rule: exp([[A^H, G], [0, A^H]]) holds the gradient in its upper-right block
    n = a.shape[-1]
    at = _mH(a)
    block = concat(concat(at, g, axis=-1), concat(zeros_like(at), at, axis=-1), axis=-2)
    return (narrow(narrow(matrix_exp(block), -2, 0, n), -1, n, n),)


# ---------------------------------------------------------------- LDL (no gradient, as PyTorch)


def _ldl_factor_spec(a, hermitian, errors):
    square_size(a)
    return Spec(a.shape, a.dtype), Spec(a.shape[:-1], dt.int32), Spec(a.shape[:-2], dt.int32)


def _ldl_factor_cpu(a, ld_out, piv_out, info_out, hermitian, errors):
    x = _rows(a, 2)
    b, n = x.shape[:2]
    ld, piv, info = np.zeros_like(x), np.zeros((b, n), np.int32), np.zeros(b, np.int32)
    if n:
        sytrf = lapack.get_lapack_funcs(_ldl_routine("trf", x, hermitian), (x,))
        for i in range(b):  # uplo='L' on the lower triangle, as PyTorch
            ld[i], piv[i], info[i] = sytrf(np.tril(x[i]), lower=1)
    _fill((ld_out, piv_out, info_out), (np.tril(ld), piv, info))
    if errors:
        _raise_on(errors, info_out)


def _ldl_routine(kind, x, hermitian):
    """LAPACK's name: he* for a Hermitian complex matrix (A = L D L^H), sy* otherwise."""
    return ("he" if hermitian and x.dtype.kind == "c" else "sy") + kind


def _ldl_factor_ref(a, hermitian=False, errors=""):
    flat = _rows(a, 2)
    routine = _ldl_routine("trf", flat, hermitian)
    out = [lapack.get_lapack_funcs(routine, (x,))(np.tril(x), lower=1) for x in flat]
    ld = np.stack([np.tril(o[0]) for o in out]).reshape(a.shape)
    piv = np.stack([o[1] for o in out]).astype(np.int32).reshape(a.shape[:-1])
    return ld, piv, np.array([o[2] for o in out], np.int32).reshape(a.shape[:-2])


ldl_factor_ex = Op(
    name="ldl_factor_ex",
    inputs=("a",),
    outputs=("LD", "pivots", "info"),
    spec=_ldl_factor_spec,
    kernels={"cpu": _ldl_factor_cpu, "cuda": _no_cuda("ldl_factor_ex")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_ldl_factor_ref,
    attrs={
        "hermitian": Attr("bool", False),
        "errors": Attr("str", "", choices=("", "ldl_factor", "ldl_factor_ex")),
    },
    no_derivative=NOT_IN_PYTORCH,
    doc="torch.linalg.ldl_factor_ex: the Bunch-Kaufman A = L D L^T of each symmetric matrix "
    "(L D L^H of a Hermitian one with hermitian=True) read from its lower triangle, packed "
    "as LAPACK's sytrf or hetrf (LD, pivots 1-based int32, "
    "negative for 2x2 blocks) and info: 0, or i where D[i, i] is exactly zero (1-based). "
    "`errors` names the function whose LinAlgError a nonzero info raises; '' raises none.",
)


def _ldl_solve_spec(ld, pivots, b, hermitian):
    name = "linalg.ldl_solve"
    n = square_size(ld)
    if b.ndim < 2:
        raise ShapeError(f"{name}: expected B to have at least 2 dimensions, got {b.shape}")
    if ld.dtype != b.dtype:
        raise DTypeError(f"{name}: LD dtype {ld.dtype} does not match B dtype {b.dtype}")
    if pivots.dtype not in dt.INTS:
        raise DTypeError(f"{name}: expected pivots to be integers, got {pivots.dtype}")
    if UNKNOWN not in (n, b.shape[-2]) and n != b.shape[-2]:
        raise ShapeError(f"{name}: LD is {n}x{n} but B {b.shape} has {b.shape[-2]} rows")
    if tuple(pivots.shape) != tuple(ld.shape[:-1]):
        raise ShapeError(
            f"{name}: expected LD.shape[:-1] and pivots.shape to be the same, got LD "
            f"{ld.shape} and pivots {pivots.shape}"
        )
    return Spec(broadcast_shapes(b.shape[:-2], ld.shape[:-2]) + b.shape[-2:], b.dtype)


def _ldl_solve_cpu(ld, pivots, b, out, hermitian):
    if out.size == 0:
        return
    _check_pivots("ldl_solve", pivots, ld.shape[-1], signed=True)
    out[...] = _ldl_solve_ref(ld, pivots, b, hermitian)


def _ldl_solve_ref(ld, pivots, b, hermitian=False):
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld3, rhs = _batched(ld, batch), _batched(b, batch)
    n = ld.shape[-1]
    piv = np.broadcast_to(pivots, batch + (n,)).reshape(-1, n).astype(np.int32)
    sytrs = lapack.get_lapack_funcs(_ldl_routine("trs", ld3, hermitian), (ld3,))
    res = np.stack([sytrs(f, p, r, lower=1)[0] for f, p, r in zip(ld3, piv, rhs)])
    return res.reshape(batch + b.shape[-2:])


ldl_solve = Op(
    name="ldl_solve",
    inputs=("LD", "pivots", "B"),
    outputs=("out",),
    spec=_ldl_solve_spec,
    kernels={"cpu": _ldl_solve_cpu, "cuda": _no_cuda("ldl_solve")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_ldl_solve_ref,
    attrs={"hermitian": Attr("bool", False)},
    promote=(0, 2),
    no_derivative=NOT_IN_PYTORCH,
    doc="torch.linalg.ldl_solve: X with A X = B for A given by ldl_factor's (LD, pivots); "
    "B (..., n, k) broadcasts against LD's batch dims.",
)


# ---------------------------------------------------------------- compositions: torch.*


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) with A = P L U from lu_factor's packed LU (..., m, n) and pivots: P (..., m,
    m), L (..., m, k) unit lower, U (..., k, n) upper, k = min(m, n). What is not unpacked is
    an empty tensor, as in PyTorch. Differentiable in LU_data."""
    _, m, n = _matrices("lu_unpack", LU_data)
    for arg, value in (("unpack_data", unpack_data), ("unpack_pivots", unpack_pivots)):
        choice(value, (False, True), f"lu_unpack: {arg}", AttrError)
    empty = zeros(0, dtype=LU_data.dtype, device=getattr(LU_data, "device", None))
    p = l_ = u = empty
    if unpack_data:
        m, n = _known("lu_unpack", LU_data, -2), _known("lu_unpack", LU_data, -1)
        k = min(m, n)
        l_ = tril(narrow(LU_data, -1, 0, k), -1) + _eye(m, k, LU_data)
        u = triu(narrow(LU_data, -2, 0, k))
    if unpack_pivots:
        m = _known("lu_unpack", LU_data, -2)
        perm = lu_permutation(LU_pivots, m=m)
        rows = unsqueeze(arange(m, device=getattr(LU_data, "device", None)), -1)
        p = astype(eq(rows, unsqueeze(perm, -2)), LU_data.dtype)  # P[perm[j], j] = 1
    return p, l_, u


def _eye(m, n, like):
    return eye(m, n, dtype=like.dtype, device=getattr(like, "device", None))


def lu(A, pivot=True, get_infos=False):
    """torch.lu: (LU, pivots), or (LU, pivots, infos) with get_infos, from linalg's
    lu_factor_ex; a singular matrix raises nothing (its info says so)."""
    get_infos = flag(get_infos, "lu: get_infos")
    if not flag(pivot, "lu: pivot"):
        raise UnsupportedError("lu: LU without pivoting is not implemented on the CPU")
    factor, pivots, info = lu_factor_ex(A)
    return (factor, pivots, info) if get_infos else (factor, pivots)


def lu_solve(b, LU_data, LU_pivots):
    """torch.lu_solve (deprecated in PyTorch, arguments reversed from linalg.lu_solve): X with
    A X = b, A given by lu_factor's (LU_data, LU_pivots)."""
    return linalg_lu_solve(LU_data, LU_pivots, b)


def householder_product(A, tau):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T with v_i's i-th entry 1
    and the entries below it A[i+1:, i] (LAPACK's orgqr after geqrf). A (..., m, n) with
    m >= n >= k, tau (..., k); built with matmuls, so differentiable in A and tau."""
    name = "linalg.householder_product"
    if A.ndim < 2:
        raise ShapeError(f"{name}: input must have at least 2 dimensions, got {A.shape}")
    m, n, k = _known(name, A, -2), _known(name, A, -1), _known(name, tau, -1)
    if m < n or n < k:
        raise ShapeError(f"{name}: needs m >= n >= k for input {A.shape} and tau {tau.shape}")
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise ShapeError(
            f"{name}: expected tau's batch dims to be input.shape[:-2], got input {A.shape} "
            f"and tau {tau.shape}"
        )
    if tau.dtype != A.dtype:
        raise DTypeError(f"{name}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")
    v = tril(A, -1) + _eye(m, n, A)
    q = broadcast_to(_eye(m, n, A), tuple(A.shape))
    for i in reversed(range(k)):  # Q = H_i Q, the last reflection first
        vi = narrow(v, -1, i, 1)
        ti = unsqueeze(narrow(tau, -1, i, 1), -1)
        q = q - matmul(vi * ti, matmul(_mH(vi), q))
    return q


def orgqr(input, tau):
    """torch.orgqr: householder_product."""
    return householder_product(input, tau)


__all__ = ["lu", "lu_solve", "lu_unpack", "matrix_exp", "orgqr"]
