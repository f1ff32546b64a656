"""Matrix decompositions and inverses (torch.linalg's essentials): inv, solve, cholesky, det,
slogdet, qr, eigh, eig and svd, batched over the leading dims, float32 and float64.

The CPU kernels loop over the batch in `@njit` and call numba's np.linalg (LAPACK through
SciPy). A singular or non positive-definite matrix raises LinAlgError naming the op, never a
numba traceback. numba-cuda has no cuSOLVER binding: the CUDA slots say so when called.

Gradient rules follow PyTorch's (FunctionsManual.cpp): they are written with nbflow ops, so
higher-order gradients follow. eigh and cholesky read only the lower triangle, and, as in
PyTorch, their gradient is the symmetric one (correct for symmetric inputs).
"""

import math

import numpy as np

from ..core import UNKNOWN, Attr, Op, Spec, broadcast_shapes, needs_grad
from ..core import dtypes as dt
from ..core.errors import GradientError, LinAlgError, ShapeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..kernels.cuda.loader import not_supported
from .complex_math import conj
from .complex_parts import imag_part, real_part
from .creation import full, zeros_like
from .elementwise import astype, log
from .linalg import matmul, matrix_transpose
from .select import diag_embed, diagonal, narrow, tril, triu
from .shape import concat, unsqueeze

FLOATS = (dt.float32, dt.float64)


def _no_cuda(name):
    return not_supported(
        f"{name}: no CUDA kernel (numba-cuda has no cuSOLVER binding); move the tensor to the "
        "CPU with .cpu() for this op"
    )


def _mT(x):
    return matrix_transpose(x)


def _mH(x):
    """The conjugate transpose (the transpose of a real x: no op more)."""
    return conj(matrix_transpose(x))


def square_size(a):
    """n for a batch of square matrices (..., n, n); -1 when unknown at compile time."""
    if a.ndim < 2:
        raise ShapeError(f"needs a matrix or a batch of matrices (..., n, n), got {a.shape}")
    n, m = a.shape[-2:]
    if UNKNOWN not in (n, m) and n != m:
        raise ShapeError(f"needs square matrices, got {n}x{m}")
    return m if n == UNKNOWN else n


def _float(a):
    # ints and float16 keep their dtype here: the kernel lookup then names the op and dtypes
    return a.dtype


def _rows(x, ndim_tail):
    """x as a C-contiguous array with one leading batch dim: (batch, *tail)."""
    tail = x.shape[x.ndim - ndim_tail :]
    # (the batch size spelled out: -1 is ambiguous for an empty tail)
    return np.ascontiguousarray(x).reshape((math.prod(x.shape[: x.ndim - ndim_tail]),) + tail)


def _lapack(name, kernel, *args):
    """Run a batched kernel, turning numba's np.linalg.LinAlgError into nbflow's."""
    try:
        kernel(*args)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"{name}: {e} (input {args[0].dtype}{list(args[0].shape)})") from None


def _fill(outs, results):
    for out, r in zip(outs, results):
        np.copyto(out, r.reshape(out.shape))


def _grads(g, out):
    """The output gradients of a several-output op, with None where no gradient flows."""
    return tuple(g) if isinstance(g, tuple) else (g,)


def _sym_lower(a):
    """The symmetric matrix whose lower triangle is a's (what eigh and cholesky read)."""
    return tril(a) + _mT(tril(a, -1))


# ---------------------------------------------------------------- inv


@njit(**JIT)
def _inv_rows(a, out):
    for i in range(a.shape[0]):
        out[i] = np.linalg.inv(a[i])


def _inv_cpu(a, out):
    x = _rows(a, 2)
    res = np.empty_like(x)
    _lapack("inv", _inv_rows, x, res)
    _fill((out,), (res,))


def _square_spec(a):
    square_size(a)
    return Spec(a.shape, _float(a))


inv = Op(
    name="inv",
    inputs=("a",),
    outputs=("out",),
    spec=_square_spec,
    kernels={"cpu": _inv_cpu, "cuda": _no_cuda("inv")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=lambda a: np.linalg.inv(a),
    doc="torch.linalg.inv: the inverse of each square matrix (..., n, n); a singular one "
    "raises LinAlgError.",
)


@inv.defgrad
def _inv_grad(g, out, a):
    # d(A^-1) = -A^-1 dA A^-1, so gA = -A^-H g A^-H
    out_h = _mH(out)
    return (-matmul(matmul(out_h, g), out_h),)


# ---------------------------------------------------------------- solve


def is_vector_rhs(a_shape, b_shape):
    """torch.linalg.solve's rule: B is a batch of vectors when it is 1-D or has A's shape
    without the last dim."""
    return len(b_shape) == 1 or tuple(b_shape) == tuple(a_shape[:-1])


def _solve_spec(a, b):
    n = square_size(a)
    vector = is_vector_rhs(a.shape, b.shape)
    b_mat = b.shape + (1,) if vector else b.shape
    if len(b_mat) < 2:
        raise ShapeError(f"B needs at least 1 dim, got {b.shape}")
    if UNKNOWN not in (n, b_mat[-2]) and n != b_mat[-2]:
        raise ShapeError(f"A is {n}x{n} but B has {b_mat[-2]} rows")
    batch = broadcast_shapes(a.shape[:-2], b_mat[:-2])
    shape = batch + (n,) if vector else batch + b_mat[-2:]
    return Spec(shape, dt.promote([a.dtype, b.dtype]))


@njit(**JIT)
def _solve_rows(a, b, out):
    for i in range(a.shape[0]):
        out[i] = np.linalg.solve(a[i], b[i])


def _solve_cpu(a, b, out):
    b_mat = b[..., None] if is_vector_rhs(a.shape, b.shape) else b
    batch = np.broadcast_shapes(a.shape[:-2], b_mat.shape[:-2])
    a3 = _rows(np.broadcast_to(a, batch + a.shape[-2:]).astype(out.dtype), 2)
    b3 = _rows(np.broadcast_to(b_mat, batch + b_mat.shape[-2:]).astype(out.dtype), 2)
    res = np.empty_like(b3)
    _lapack("solve", _solve_rows, a3, b3, res)
    _fill((out,), (res,))


def _solve_ref(a, b):
    if is_vector_rhs(a.shape, b.shape):
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


solve = Op(
    name="solve",
    inputs=("a", "b"),
    outputs=("out",),
    spec=_solve_spec,
    kernels={"cpu": _solve_cpu, "cuda": _no_cuda("solve")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_solve_ref,
    doc="torch.linalg.solve: X with A X = B, A (..., n, n), B a batch of vectors (..., n) or "
    "of matrices (..., n, k); batch dims broadcast. A singular A raises LinAlgError.",
)


@solve.defgrad
def _solve_grad(g, out, a, b):
    # X = A^-1 B: gB = A^-H g, gA = -gB X^H (the driver sums broadcast batch dims back)
    gb = solve(_mH(a), g)
    if is_vector_rhs(a.shape, b.shape):
        ga = -(unsqueeze(gb, -1) * unsqueeze(conj(out), -2))
    else:
        ga = -matmul(gb, _mH(out))
    return (ga if needs_grad(a) else None), (gb if needs_grad(b) else None)


# ---------------------------------------------------------------- cholesky


@njit(**JIT)
def _hermitian(a):
    """The Hermitian (real: symmetric) matrix of a's lower triangle and its diagonal's real
    part, what LAPACK's uplo='L' reads."""
    s = a.copy()
    n = s.shape[0]
    for r in range(n):
        s[r, r] = s[r, r].real
        for c in range(r + 1, n):
            s[r, c] = np.conj(s[c, r])
    return s


@njit(**JIT)
def _cholesky_rows(a, out):
    for i in range(a.shape[0]):
        out[i] = np.linalg.cholesky(_hermitian(a[i]))


def _cholesky_cpu(a, out, upper):
    x = _rows(a, 2)
    res = np.empty_like(x)
    _lapack("cholesky", _cholesky_rows, x, res)
    _fill((out,), (np.swapaxes(res, -1, -2).conj() if upper else res,))


def _hermitian_ref(a):
    """numpy: _hermitian of each matrix in a's last two dims."""
    low, n = np.tril(a, -1), a.shape[-1]
    diagonal_part = np.diagonal(a, 0, -2, -1).real[..., None] * np.eye(n, dtype=a.dtype)
    return low + np.swapaxes(low, -1, -2).conj() + diagonal_part


def _cholesky_ref(a, upper=False):
    low = np.linalg.cholesky(_hermitian_ref(a))
    return np.swapaxes(low, -1, -2).conj() if upper else low


cholesky = Op(
    name="cholesky",
    inputs=("a",),
    outputs=("out",),
    spec=lambda a, upper: _square_spec(a),
    kernels={"cpu": _cholesky_cpu, "cuda": _no_cuda("cholesky")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_cholesky_ref,
    attrs={"upper": Attr("bool", False)},
    doc="torch.linalg.cholesky: L lower triangular with A = L L^H (upper=True: U = L^H) of "
    "each Hermitian (real: symmetric) positive-definite matrix, read from its lower triangle; "
    "a matrix that is not positive-definite raises LinAlgError.",
)


@cholesky.defgrad
def _cholesky_grad(g, out, a, upper):
    # PyTorch's rule (Murray 2016): gA = L^-H Phi(L^H gL) L^-1 with Phi taking the lower
    # triangle and halving the diagonal, made Hermitian
    low, g_low = (_mH(out), _mH(g)) if upper else (out, g)
    x = tril(matmul(_mH(low), g_low))
    phi = (x + _mH(tril(x, -1))) * 0.5
    low_inv = inv(low)
    return (matmul(matmul(_mH(low_inv), phi), low_inv),)


# ---------------------------------------------------------------- det and slogdet


@njit(**JIT)
def _det_rows(a, out):
    for i in range(a.shape[0]):
        out[i] = np.linalg.det(a[i])


def _det_cpu(a, out):
    x = _rows(a, 2)
    res = np.empty(x.shape[0], x.dtype)
    _lapack("det", _det_rows, x, res)
    _fill((out,), (res,))


def _batch_spec(a):
    square_size(a)
    return Spec(a.shape[:-2], _float(a))


det = Op(
    name="det",
    inputs=("a",),
    outputs=("out",),
    spec=_batch_spec,
    kernels={"cpu": _det_cpu, "cuda": _no_cuda("det")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=lambda a: np.asarray(np.linalg.det(a)),
    doc="torch.linalg.det: the determinant of each square matrix (..., n, n) -> (...). The "
    "gradient needs an invertible matrix.",
)


@det.defgrad
def _det_grad(g, out, a):
    # d det = det tr(A^-1 dA): gA = g conj(det) A^-H
    return (unsqueeze(unsqueeze(g * conj(out), -1), -1) * _mH(inv(a)),)


@njit(**JIT)
def _slogdet_rows(a, sign_out, log_out):
    for i in range(a.shape[0]):
        s, ld = np.linalg.slogdet(a[i])
        sign_out[i] = s
        log_out[i] = ld


def _slogdet_cpu(a, sign_out, log_out):
    x = _rows(a, 2)
    s, ld = np.empty(x.shape[0], x.dtype), np.empty(x.shape[0], dt.to_real(x.dtype))
    _lapack("slogdet", _slogdet_rows, x, s, ld)
    _fill((sign_out, log_out), (s, ld))


def _slogdet_ref(a):
    s, ld = np.linalg.slogdet(a)
    return np.asarray(s, a.dtype), np.asarray(ld, dt.to_real(a.dtype))


slogdet = Op(
    name="slogdet",
    inputs=("a",),
    outputs=("sign", "logabsdet"),
    spec=lambda a: (_batch_spec(a), Spec(a.shape[:-2], dt.to_real(_float(a)))),
    kernels={"cpu": _slogdet_cpu, "cuda": _no_cuda("slogdet")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_slogdet_ref,
    doc="torch.linalg.slogdet: (sign, log|det|) of each square matrix (a complex matrix's sign "
    "is det / |det|, its log|det| real); a singular one gives (0, -inf). A real sign has no "
    "gradient.",
)


@slogdet.defgrad
def _slogdet_grad(g, out, a):
    # d log det = tr(A^-1 dA): log|det| takes its real part, a complex sign (e^(i arg det))
    # its imaginary part, so gA = c A^-H with c = g_log - i Im(conj(g_sign) sign) (PyTorch's)
    g_sign, c = _grads(g, out)
    if g_sign is not None and dt.is_complex(a.dtype):
        turn = imag_part(conj(g_sign) * out[0]) * -1j
        c = turn if c is None else c + turn
    if c is None:
        return (None,)
    return (unsqueeze(unsqueeze(c, -1), -1) * _mH(inv(a)),)


# ---------------------------------------------------------------- qr


def _reduced_dim(m, n):
    return UNKNOWN if UNKNOWN in (m, n) else min(m, n)


def _matrix(a):
    if a.ndim < 2:
        raise ShapeError(f"needs a matrix or a batch of matrices (..., m, n), got {a.shape}")
    return a.shape[:-2], a.shape[-2], a.shape[-1]


def _qr_spec(a):
    batch, m, n = _matrix(a)
    k = _reduced_dim(m, n)
    return Spec(batch + (m, k), _float(a)), Spec(batch + (k, n), _float(a))


@njit(**JIT)
def _qr_rows(a, q, r):
    for i in range(a.shape[0]):
        qi, ri = np.linalg.qr(a[i])
        q[i] = qi
        r[i] = ri


def _qr_cpu(a, q_out, r_out):
    x = _rows(a, 2)
    m, n = x.shape[1:]
    k = min(m, n)
    if k == 0:  # LAPACK refuses an empty matrix; its reduced factors are empty too
        return
    q, r = np.empty((x.shape[0], m, k), x.dtype), np.empty((x.shape[0], k, n), x.dtype)
    _lapack("qr", _qr_rows, x, q, r)
    _fill((q_out, r_out), (q, r))


qr = Op(
    name="qr",
    inputs=("a",),
    outputs=("q", "r"),
    spec=_qr_spec,
    kernels={"cpu": _qr_cpu, "cuda": _no_cuda("qr")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=lambda a: np.linalg.qr(a, mode="reduced"),
    doc="torch.linalg.qr with mode='reduced': Q (..., m, k) with orthonormal columns and R "
    "(..., k, n) upper triangular, k = min(m, n), A = Q R (LAPACK's signs). The gradient "
    "needs R's leading k x k block invertible.",
)


@qr.defgrad
def _qr_grad(g, out, a):
    g_q, g_r = _grads(g, out)
    q, r = out
    m, n = a.shape[-2:]
    if m >= n:
        return (_qr_grad_tall(g_q, g_r, q, r),)
    # PyTorch's rule for m < n: A = [X | Y] with X = Q R1 square and Y = Q R2; then
    # gX is the square rule for (gQ + Y gR2^H, gR1) and gY = Q gR2
    y = narrow(a, -1, m, n - m)
    g_y = zeros_like(y)
    if g_r is not None:
        g_r2 = narrow(g_r, -1, m, n - m)
        g_y = matmul(q, g_r2)
        g_q = matmul(y, _mH(g_r2)) if g_q is None else g_q + matmul(y, _mH(g_r2))
        g_r = narrow(g_r, -1, 0, m)
    g_x = _qr_grad_tall(g_q, g_r, q, narrow(r, -1, 0, m))
    return (concat(g_x, g_y, axis=-1),)


def _qr_grad_tall(g_q, g_r, q, r):
    """PyTorch's rule for m >= n: M = gR R^H - Q^H gQ; gA = (gQ + Q copyltu(triu(M))) R^-H,
    copyltu(X) = X + X^H less the diagonal's real part (a complex diagonal stays real)."""
    m = None
    if g_r is not None:
        m = matmul(g_r, _mH(r))
    if g_q is not None:
        m = -matmul(_mH(q), g_q) if m is None else m - matmul(_mH(q), g_q)
    x = triu(m)
    ga = matmul(q, _real_diagonal(x + _mH(triu(x, 1))))
    if g_q is not None:
        ga = ga + g_q
    return matmul(ga, _mH(inv(r)))


def _real_diagonal(x):
    """x with the imaginary part of its diagonal dropped (x itself when real)."""
    if not dt.is_complex(x.dtype):
        return x
    d = diagonal(x, 0, -2, -1)
    return x - diag_embed(d) + diag_embed(astype(real_part(d), x.dtype))


# ---------------------------------------------------------------- eigh


@njit(**JIT)
def _eigh_rows(a, w, v):
    for i in range(a.shape[0]):
        wi, vi = np.linalg.eigh(_hermitian(a[i]))  # UPLO='L': the lower triangle is read
        w[i] = wi
        v[i] = vi


def _eigh_cpu(a, w_out, v_out):
    x = _rows(a, 2)
    w, v = np.empty(x.shape[:2], dt.to_real(x.dtype)), np.empty_like(x)
    _lapack("eigh", _eigh_rows, x, w, v)
    _fill((w_out, v_out), (w, v))


def _eigh_spec(a):
    n = square_size(a)
    return Spec(a.shape[:-2] + (n,), dt.to_real(_float(a))), Spec(a.shape, _float(a))


eigh = Op(
    name="eigh",
    inputs=("a",),
    outputs=("eigenvalues", "eigenvectors"),
    spec=_eigh_spec,
    kernels={"cpu": _eigh_cpu, "cuda": _no_cuda("eigh")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=lambda a: np.linalg.eigh(_hermitian_ref(a)),
    doc="torch.linalg.eigh (UPLO='L'): eigenvalues (real) in ascending order and orthonormal "
    "eigenvectors (columns) of each Hermitian (real: symmetric) matrix, read from its lower "
    "triangle. The eigenvectors' gradient needs distinct eigenvalues; a complex eigenvector "
    "is defined up to a phase, and a loss that depends on the phase has no gradient (its "
    "phase-invariant part's is given, where PyTorch raises).",
)


@eigh.defgrad
def _eigh_grad(g, out, a):
    g_w, g_v = _grads(g, out)
    w, v = out
    # PyTorch's rule: gA = V (skew(V^H gV) / E + diag(gW)) V^H, E_ij = w_j - w_i
    inner = None
    if g_v is not None:
        x = matmul(_mH(v), g_v)
        e = unsqueeze(w, -2) - unsqueeze(w, -1)
        off = _off_diagonal(e)
        inner = (x - _mH(x)) * 0.5 / (e + (1 - off)) * off
    if g_w is not None:
        inner = diag_embed(g_w) if inner is None else inner + diag_embed(g_w)
    return (matmul(matmul(v, inner), _mH(v)),)


def _off_diagonal(x):
    """1 off the diagonal of x's last two dims, 0 on it (x's dtype)."""
    from .creation import ones_like

    ones = ones_like(x)
    return ones - diag_embed(diagonal(ones, 0, -2, -1))


# ---------------------------------------------------------------- eig


def _eig_spec(a):
    n, d = square_size(a), _complex_of(a)
    return Spec(a.shape[:-2] + (n,), d), Spec(a.shape, d)


def _complex_of(a):
    return a.dtype if dt.is_complex(a.dtype) else dt.to_complex(a.dtype)


def _eig_cpu(a, w_out, v_out):
    _lapack("eig", lambda x: _fill((w_out, v_out), np.linalg.eig(x)), a)


eig = Op(
    name="eig",
    inputs=("a",),
    outputs=("eigenvalues", "eigenvectors"),
    spec=_eig_spec,
    kernels={"cpu": _eig_cpu, "cuda": _no_cuda("eig")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=np.linalg.eig,
    materialize_grads=False,
    doc="torch.linalg.eig: the complex eigenvalues and eigenvectors (columns of unit norm, "
    "LAPACK's geev) of each square matrix, a real one's too. The eigenvectors' gradient "
    "needs distinct eigenvalues and a loss that does not depend on their phases.",
)


@eig.defgrad
def _eig_grad(g, out, a):
    w, v = out
    g_w, g_v = (full((), 0.0, dtype=w.dtype) if d is None else d for d in g)
    return (eig_backward(g_w, g_v, w, v, real=not dt.is_complex(a.dtype)),)


def _eig_backward_spec(g_w, g_v, w, v, real):
    return Spec(tuple(v.shape), dt.to_real(v.dtype) if real else v.dtype)


def _eig_backward_math(g_w, g_v, w, v, real=True):
    # PyTorch's linalg_eig_backward: gA = V^-H (diag(gW) + (V^H gV - V^H V re(diag(V^H gV)))
    # / conj(W_j - W_i)) V^H, off the diagonal for the second term; its real part for a real A
    vh = np.conj(np.swapaxes(v, -1, -2))
    inner = np.zeros(v.shape, v.dtype)
    if g_v.ndim:
        vhgv = vh @ g_v
        diagonal = np.diagonal(vhgv, 0, -2, -1)
        if not np.allclose(diagonal.imag, 0, rtol=1e-2, atol=1e-2):
            raise GradientError(
                "eig: the eigenvectors are specified up to a phase e^(i phi), and this loss "
                "depends on it: its gradient is not defined (PyTorch refuses it too)"
            )
        inner = vhgv - vh @ (v * diagonal.real[..., None, :])
        wc = np.conj(w)
        gaps = wc[..., None, :] - wc[..., :, None]
        np.einsum("...ii->...i", gaps)[...] = 1
        inner = inner / gaps
    np.einsum("...ii->...i", inner)[...] = g_w if g_w.ndim else 0
    ga = np.linalg.solve(vh, inner @ vh)
    return ga.real if real else ga


def _eig_backward_cpu(g_w, g_v, w, v, out, real):
    out[...] = _eig_backward_math(g_w, g_v, w, v, real)


eig_backward = Op(
    name="eig_backward",
    inputs=("g_eigenvalues", "g_eigenvectors", "eigenvalues", "eigenvectors"),
    outputs=("g_a",),
    spec=_eig_backward_spec,
    kernels={"cpu": _eig_backward_cpu, "cuda": _no_cuda("eig_backward")},
    dtypes=dt.COMPLEX,
    ref=_eig_backward_math,
    attrs={"real": Attr("bool", True)},
    no_derivative="second derivatives of eig are not implemented",
    doc="The gradient of eig: from its outputs' gradients (0-d zeros where none) and its "
    "outputs to the input's (real for a real input).",
)


# ---------------------------------------------------------------- svd


def _svd_spec(a, full_matrices):
    batch, m, n = _matrix(a)
    k = _reduced_dim(m, n)
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    d = _float(a)
    s = Spec(batch + (k,), dt.to_real(d))  # (real for a complex matrix too)
    return Spec(batch + (m, u_cols), d), s, Spec(batch + (vh_rows, n), d)


@njit(**JIT)
def _svd_rows(a, u, s, vh, full_matrices):
    for i in range(a.shape[0]):
        ui, si, vhi = np.linalg.svd(a[i], full_matrices=full_matrices)
        u[i] = ui
        s[i] = si
        vh[i] = vhi


def _svd_cpu(a, u_out, s_out, vh_out, full_matrices):
    x = _rows(a, 2)
    b, m, n = x.shape
    k = min(m, n)
    u_cols, vh_rows = (m, n) if full_matrices else (k, k)
    if k == 0:  # LAPACK refuses an empty matrix: no singular values, the bases the identity
        u_out[...] = np.eye(m, u_cols, dtype=x.dtype)
        vh_out[...] = np.eye(vh_rows, n, dtype=x.dtype)
        return
    u, s = np.empty((b, m, u_cols), x.dtype), np.empty((b, k), dt.to_real(x.dtype))
    vh = np.empty((b, vh_rows, n), x.dtype)
    _lapack("svd", _svd_rows, x, u, s, vh, full_matrices)
    _fill((u_out, s_out, vh_out), (u, s, vh))


svd = Op(
    name="svd",
    inputs=("a",),
    outputs=("u", "s", "vh"),
    spec=_svd_spec,
    kernels={"cpu": _svd_cpu, "cuda": _no_cuda("svd")},
    dtypes=FLOATS + dt.COMPLEX,
    ref=lambda a, full_matrices=False: np.linalg.svd(a, full_matrices=full_matrices),
    attrs={"full_matrices": Attr("bool", False)},
    doc="torch.linalg.svd: U (..., m, k), S (..., k) descending, Vh (..., k, n) with "
    "A = U diag(S) Vh, k = min(m, n) (full_matrices=True: U (..., m, m), Vh (..., n, n)). The "
    "gradient of U and Vh needs distinct nonzero singular values (that of S alone does "
    "not); with full_matrices=True the columns beyond k get no gradient, as in PyTorch. A "
    "complex matrix's S is real, and its singular vectors are defined up to a phase: a loss "
    "that depends on the phases gets its phase-invariant part's gradient (PyTorch raises).",
)


@svd.defgrad
def _svd_grad(g, out, a, full_matrices):
    g_u, g_s, g_vh = _grads(g, out)
    u, s, vh = out
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    if full_matrices:  # the columns beyond k are any orthonormal completion: no gradient
        u, vh = narrow(u, -1, 0, k), narrow(vh, -2, 0, k)
        g_u = None if g_u is None else narrow(g_u, -1, 0, k)
        g_vh = None if g_vh is None else narrow(g_vh, -2, 0, k)
    if g_u is None and g_vh is None:
        return (matmul(u, unsqueeze(g_s, -1) * vh),)
    return (_svd_vectors_grad(u, s, vh, g_u, g_s, g_vh, m, n),)


def _svd_vectors_grad(u, s, vh, g_u, g_s, g_vh, m, n):
    # PyTorch's rule: gA = U [(skew(U^H gU) S + S skew(V^H gV)) / E + diag(gS)] V^H plus the
    # parts of gU (gV) outside U's (V's) span, E_jk = s_k^2 - s_j^2; for a complex matrix
    # the diagonal also gets skew(U^H gU)_jj / (2 s_j) (imaginary: the phases' share)
    v = _mH(vh)
    s2 = s * s
    e = unsqueeze(s2, -2) - unsqueeze(s2, -1)
    off = _off_diagonal(e)
    e = e + (1 - off)
    inner = skew_u = None
    if g_u is not None:
        skew_u = matmul(_mH(u), g_u)
        skew_u = skew_u - _mH(skew_u)
        inner = skew_u * unsqueeze(s, -2) / e
    if g_vh is not None:
        y = matmul(vh, _mH(g_vh))  # V^H gV
        term = unsqueeze(s, -1) * (y - _mH(y)) / e
        inner = term if inner is None else inner + term
    if g_s is not None:
        inner = inner + diag_embed(g_s)
    if skew_u is not None and dt.is_complex(u.dtype):
        inner = inner + diag_embed(diagonal(skew_u, 0, -2, -1) / (2 * s))
    k = min(m, n)
    ga = matmul(matmul(u, inner), vh)
    if m > k and g_u is not None:  # (I - U U^H) gU S^-1 V^H
        gus = g_u / unsqueeze(s, -2)
        ga = ga + matmul(gus - matmul(u, matmul(_mH(u), gus)), vh)
    if n > k and g_vh is not None:  # U S^-1 gV^H (I - V V^H)
        sgv = g_vh / unsqueeze(s, -1)
        ga = ga + matmul(u, sgv - matmul(matmul(sgv, v), vh))
    return ga


# ---------------------------------------------------------------- thin wrappers


def logdet(a):
    """log det A (NaN for a negative determinant, as torch.logdet)."""
    sgn, logabs = slogdet(a)
    return logabs + log(sgn)


def inverse(a):
    """torch.inverse: the same as inv."""
    return inv(a)


__all__ = ["det", "inverse", "logdet", "slogdet"]
