"""LAPACK's Householder form of QR, as PyTorch's torch.geqrf and torch.ormqr expose it
(linalg.householder_product, LAPACK's orgqr, is in factorizations.py).

geqrf(A) factors A (..., m, n) as Q R with Q = H_1 ... H_k, k = min(m, n), each reflection
H_i = I - tau_i v_i v_i^T; it returns R in the upper triangle and v_i below the diagonal of
column i (v_i's i-th entry is an implied 1, the entries above it 0), and tau (..., k). Each
reflection is LAPACK's dlarfg: beta = -sign(alpha) |x| for the column x from the diagonal
down (alpha its first entry), tau = (beta - alpha) / beta, v = x / (alpha - beta); a column
already zero below the diagonal gets tau = 0 (H = I). A complex A takes LAPACK's zlarfg: H_i =
I - tau_i v_i v_i^H, beta = -sign(Re alpha) |x| real, tau = (beta - alpha) / beta, and geqrf
applies H_i^H to the columns right of i (alpha real and the rest zero: H = I). Written with
nbflow ops, so it runs in eager and graph mode and batched; PyTorch defines no gradient for
geqrf, ormqr's is the matmuls'."""

from ..core import dtypes as dt
from ..core.errors import DTypeError, ShapeError
from .complex_math import conj
from .complex_parts import imag, real
from .creation import eye, ones_like, zeros
from .decomp import _mH
from .elementwise import abs, astype, copysign, logical_and, sqrt, where
from .linalg import matmul
from .reduce import sum as sum_
from .select import narrow, tril
from .shape import concat, unsqueeze


def _reflector(x):
    """dlarfg (zlarfg) on columns x (..., r): (beta, tau, v) with v (..., r) whose first entry
    is 1."""
    alpha, rest = narrow(x, -1, 0, 1), narrow(x, -1, 1, x.shape[-1] - 1)
    tail = sum_(abs(rest) * abs(rest), axis=-1, keepdims=True)
    identity = tail == 0  # nothing to reflect: H = I
    if dt.is_complex(x.dtype):  # (a complex alpha is still reflected, to make beta real)
        identity = logical_and(identity, imag(alpha) == 0)
    norm = sqrt(abs(alpha) * abs(alpha) + tail)
    beta = where(identity, alpha, astype(-copysign(norm, real(alpha)), x.dtype))
    safe_beta = where(identity, ones_like(beta), beta)
    tau = where(identity, 0 * alpha, (beta - alpha) / safe_beta)
    scale = where(identity, 0 * alpha, 1 / where(identity, ones_like(beta), alpha - beta))
    return beta, tau, concat([ones_like(alpha), rest * scale], axis=-1)


def _device(x):
    return getattr(x, "device", None)


def _check_matrix(name, a):
    if a.ndim < 2:
        raise ShapeError(f"{name}: input must have at least 2 dims, got shape {tuple(a.shape)}")
    if not (dt.is_float(a.dtype) or dt.is_complex(a.dtype)):
        raise DTypeError(f"{name}: needs a floating-point or complex input, got {a.dtype}")
    if -1 in tuple(a.shape[-2:]):
        raise ShapeError(f"{name}: the matrix dims of {tuple(a.shape)} must be known")


def geqrf(input):
    """(a, tau): LAPACK's geqrf of input (..., m, n) (see the module)."""
    _check_matrix("geqrf", input)
    m, n = input.shape[-2:]
    a, taus = input, []
    for i in range(min(m, n)):
        column = narrow(a, -1, i, 1)[..., 0]  # (..., m)
        beta, tau, v = _reflector(narrow(column, -1, i, m - i))
        taus.append(tau)
        trailing = a[..., i:, i + 1 :]  # H_i^H applied to the columns right of i
        reflected = matmul(unsqueeze(conj(v), -2), trailing)
        trailing = trailing - matmul(unsqueeze(v * conj(tau), -1), reflected)
        column = concat([narrow(column, -1, 0, i), beta, narrow(v, -1, 1, m - i - 1)], axis=-1)
        right = concat([a[..., :i, i + 1 :], trailing], axis=-2)
        a = concat([a[..., :, :i], unsqueeze(column, -1), right], axis=-1)
    empty = zeros((*input.shape[:-2], 0), dtype=input.dtype, device=_device(input))
    tau = concat(taus, axis=-1) if taus else empty
    return a, tau


def ormqr(input, tau, other, left=True, transpose=False):
    """other multiplied by the Q of geqrf's (input, tau): Q other (left), other Q (left=False),
    with Q^H (Q^T for real tensors) instead when transpose. input (..., mn, k'), tau (..., k)
    with k <= k' <= mn, other (..., m, n), mn = m when left, n otherwise."""
    _check_matrix("ormqr", input)
    _check_matrix("ormqr", other)
    mn = other.shape[-2] if left else other.shape[-1]
    k = tau.shape[-1] if tau.ndim else -1
    if input.shape[-2] != mn or not 0 <= k <= input.shape[-1] <= mn:
        raise ShapeError(
            f"ormqr: input {tuple(input.shape)} and tau {tuple(tau.shape)} do not fit other "
            f"{tuple(other.shape)} (left={left}): expected input (..., {mn}, k'), tau (..., k), "
            f"k <= k' <= {mn}"
        )
    if tau.dtype != input.dtype or other.dtype != input.dtype:
        raise DTypeError(
            f"ormqr: input, tau and other must share a dtype, got {input.dtype}, {tau.dtype} "
            f"and {other.dtype}"
        )
    v = tril(input, -1) + eye(mn, input.shape[-1], dtype=input.dtype, device=_device(input))
    out = other
    # Q = H_1 ... H_k: Q^H C and C Q apply H_1 first, Q C and C Q^H apply H_k first; Q^H's
    # reflections are H_i^H = I - conj(tau_i) v_i v_i^H
    for i in range(k) if bool(left) == bool(transpose) else reversed(range(k)):
        vi, ti = narrow(v, -1, i, 1), unsqueeze(narrow(tau, -1, i, 1), -1)
        ti = conj(ti) if transpose else ti
        if left:
            out = out - matmul(vi * ti, matmul(_mH(vi), out))
        else:
            out = out - matmul(matmul(out, vi) * ti, _mH(vi))
    return out


__all__ = ["geqrf", "ormqr"]
