"""PyTorch's randomized low-rank SVD and PCA (torch.svd_lowrank, torch.pca_lowrank): Halko,
Martinsson and Tropp's algorithm 5, as PyTorch's torch/_lowrank.py runs it. A basis Q of A's
range is drawn from A times a Gaussian matrix and refined by `niter` power iterations (a QR
after each product); the SVD of the small Q^T A then gives U = Q U_small, S and V. The draw
is random (nbflow's global generator: nbflow.manual_seed fixes it); for q at least A's rank
the factors reproduce A to rounding. Written with nbflow's qr, svd and matmul, so it
differentiates through them. A complex A takes conjugate transposes (PyTorch's transjugate)
and a complex draw: A - M ~ U diag(S) V^H."""

from ..argcheck import integer
from ..core import dtypes as dt
from ..core.errors import DomainError, DTypeError, ShapeError
from .creation import randn
from .decomp import _mH, qr, svd
from .linalg import matmul
from .reduce import mean
from .shape import broadcast_to


def _minus(product, a, m, x):
    """product(a, x), less product(m, x) when a mean matrix m is given."""
    return product(a, x) if m is None else product(a, x) - product(m, x)


def _approximate_basis(a, q, niter, m):
    """An orthonormal (..., rows, q) basis of the range of a - m (get_approximate_basis)."""
    r = randn(a.shape[-1], q, dtype=a.dtype, device=getattr(a, "device", None))
    basis = qr(_minus(matmul, a, m, r))[0]
    for _ in range(niter):
        basis = qr(_minus(matmul, _mH(a), None if m is None else _mH(m), basis))[0]
        basis = qr(_minus(matmul, a, m, basis))[0]
    return basis


def _check(name, A, q, niter):
    if A.ndim < 2:
        raise ShapeError(f"{name}: A must be a matrix or a batch of them, got shape {A.shape}")
    if not (dt.is_float(A.dtype) or dt.is_complex(A.dtype)):
        raise DTypeError(f"{name}: A must be a float or complex tensor, got {A.dtype}")
    rows, cols = A.shape[-2:]
    q = min(6, rows, cols) if q is None else integer(q, f"{name}: q")
    niter = integer(niter, f"{name}: niter")
    if not 0 <= q <= min(rows, cols) or niter < 0:
        raise DomainError(
            f"{name}: q={q} must be in [0, min(m, n) = {min(rows, cols)}] and niter={niter} >= 0"
        )
    return q, niter


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with A - M ~ U diag(S) V^H of rank q (M, a matrix broadcast to A's shape, is
    subtracted without forming A - M; None is zero): U (..., m, q), S (..., q), V (..., n, q)
    for q <= min(m, n)."""
    q, niter = _check("svd_lowrank", A, 6 if q is None else q, 2 if niter is None else niter)
    tall = A.shape[-2] >= A.shape[-1]
    m = None if M is None else broadcast_to(M, tuple(A.shape))
    if not tall:  # (the basis is drawn for the longer side)
        A, m = _mH(A), None if m is None else _mH(m)
    basis = _approximate_basis(A, q, niter, m)
    small = matmul(_mH(basis), A) if m is None else matmul(_mH(basis), A) - matmul(_mH(basis), m)
    u, s, vh = svd(small, full_matrices=False)
    u, v = matmul(basis, u), _mH(vh)
    return (u, s, v) if tall else (v, s, u)


def pca_lowrank(A, q=None, center=True, niter=2):
    """svd_lowrank of A with its column means subtracted (center), q = min(6, m, n) by
    default: (U, S, V), V's columns the principal directions."""
    q, niter = _check("pca_lowrank", A, q, niter)
    if center:
        A = A - mean(A, axis=-2, keepdims=True)
    return svd_lowrank(A, q, niter)


__all__ = ["pca_lowrank", "svd_lowrank"]
