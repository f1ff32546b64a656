"""nbflow.signal.windows: PyTorch's torch.signal.windows, M points of a window with sym=True
(symmetric, for filter design) or sym=False (periodic, for spectral analysis: the first M of
the symmetric window of M + 1). hann, hamming, general_hamming, blackman, bartlett and kaiser
are nbflow's hann_window & co. under these names; the others share their helper
`window_from_formula`.
dtype is float32 (the default) or float64; M = 0 and 1 give [] and [1], as PyTorch."""

import math

import numpy as np

from ..argcheck import integer, real
from ..core import dtypes as dt
from ..core.errors import AttrError, DomainError, DTypeError
from ..ops.creation import check_layout
from ..ops.signal import (
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
    window_from_formula,
)


def _checked(name, M, sym, dtype, layout):
    """(periodic, dtype) for the *_window functions, after PyTorch's checks."""
    integer(M, f"{name}: M", 0)
    check_layout(name, layout)
    if not isinstance(sym, (bool, np.bool_)):
        raise AttrError(f"{name}: sym must be a bool, got {sym!r}")
    dtype = dt.as_dtype(dtype)
    if dtype not in (dt.float32, dt.float64):
        raise DTypeError(f"{name}: dtype must be float32 or float64, got {dtype}")
    return not sym, dtype


def _positive(name, arg, value):
    value = real(value, f"{name}: {arg}")
    if not value > 0:
        raise DomainError(f"{name}: {arg} must be positive, got {value}")
    return value


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window 1 - |2k / (M - 1) - 1|."""
    periodic, dtype = _checked("bartlett", M, sym, dtype, layout)
    return bartlett_window(M, periodic, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window: general_cosine with a = [0.42, 0.5, 0.08]."""
    periodic, dtype = _checked("blackman", M, sym, dtype, layout)
    return blackman_window(M, periodic, dtype=dtype, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window: general_hamming with alpha = 0.5."""
    periodic, dtype = _checked("hann", M, sym, dtype, layout)
    return hann_window(M, periodic, dtype=dtype, device=device, requires_grad=requires_grad)


def general_hamming(
    M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False
):
    """alpha - (1 - alpha) cos(2 pi k / (M - 1))."""
    periodic, dtype = _checked("general_hamming", M, sym, dtype, layout)
    alpha = real(alpha, "general_hamming: alpha")
    kw = {"dtype": dtype, "device": device, "requires_grad": requires_grad}
    return hamming_window(M, periodic, alpha, 1.0 - alpha, **kw)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window: general_hamming with alpha = 0.54."""
    kw = {"dtype": dtype, "layout": layout, "device": device, "requires_grad": requires_grad}
    return general_hamming(M, sym=sym, **kw)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2k / (M - 1) - 1)^2)) / I0(beta), beta >= 0."""
    periodic, dtype = _checked("kaiser", M, sym, dtype, layout)
    beta = real(beta, "kaiser: beta")
    if beta < 0:
        raise DomainError(f"kaiser: beta must be non-negative, got {beta}")
    kw = {"dtype": dtype, "device": device, "requires_grad": requires_grad}
    return kaiser_window(M, periodic, beta, **kw)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum_i (-1)^i a[i] cos(2 pi i k / (M - 1)): a weighted sum of cosines."""
    name = "general_cosine"
    periodic, dtype = _checked(name, M, sym, dtype, layout)
    if isinstance(a, (str, bytes)) or not hasattr(a, "__iter__"):
        raise AttrError(f"{name}: the coefficients a must be a list or tuple, got {a!r}")
    a = [real(w, f"{name}: a coefficient") for w in a]
    if not a:
        raise DomainError(f"{name}: the coefficients a cannot be empty")

    def formula(k, m):
        t = 2 * np.pi * k / (m - 1)
        return np.sum([(-1) ** i * w * np.cos(i * t) for i, w in enumerate(a)], axis=0)

    return window_from_formula(name, M, periodic, dtype, device, requires_grad, formula)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Nuttall window: general_cosine with a = [0.3635819, 0.4891775, 0.1365995,
    0.0106411]."""
    a = [0.3635819, 0.4891775, 0.1365995, 0.0106411]
    kw = {"dtype": dtype, "layout": layout, "device": device, "requires_grad": requires_grad}
    return general_cosine(M, a=a, sym=sym, **kw)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The sine window sin(pi (k + 0.5) / M)."""
    periodic, dtype = _checked("cosine", M, sym, dtype, layout)

    def formula(k, m):
        return np.sin(np.pi * (k + 0.5) / m)

    return window_from_formula("cosine", M, periodic, dtype, device, requires_grad, formula)


def exponential(
    M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False
):
    """exp(-|k - center| / tau), centre (M - 1) / 2 by default; a centre of one's own is for
    periodic windows (sym=False) only."""
    name = "exponential"
    periodic, dtype = _checked(name, M, sym, dtype, layout)
    tau = _positive(name, "tau", tau)
    if center is not None:
        if sym:
            raise AttrError(f"{name}: center must be None for a symmetric window (sym=True)")
        center = real(center, f"{name}: center")

    def formula(k, m):
        c = (m - 1) / 2 if center is None else center
        return np.exp(-np.abs(k - c) / tau)

    one = 1.0 if center is None else math.exp(-abs(center) / tau)
    return window_from_formula(name, M, periodic, dtype, device, requires_grad, formula, one=one)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-(k - (M - 1) / 2)^2 / (2 std^2))."""
    name = "gaussian"
    periodic, dtype = _checked(name, M, sym, dtype, layout)
    std = _positive(name, "std", std)

    def formula(k, m):
        return np.exp(-(((k - (m - 1) / 2) / std) ** 2) / 2)

    return window_from_formula(name, M, periodic, dtype, device, requires_grad, formula)


__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]
