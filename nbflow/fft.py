"""nbflow.fft: the functions of PyTorch's torch.fft whose results are real for nbflow's real
tensors (nbflow has no complex dtype yet): fftshift and ifftshift, and the inverse real
transforms irfft, irfft2, irfftn and the Hermitian hfft, hfft2, hfftn of a real input, which
PyTorch reads as complex with a zero imaginary part; and torch.stft (nbflow.stft) with
return_complex=False, the real and imaginary parts in a last dim of 2.

Each transform is written as real matrix products, one dim at a time, carrying a complex
signal as its (real, imaginary) parts: the inverse DFT along every transformed dim but the
last, then the complex-to-real inverse along the last, whose input is the first n // 2 + 1
terms of a Hermitian spectrum (the imaginary parts of its first term, and of its middle one
for an even n, drop out, as in PyTorch and numpy). So they run in eager and graph mode and
differentiate through matmul. A DFT matrix has n^2 entries: meant for the short signals of
the models that use them, not for long ones."""

import math

import numpy as np

from . import ops
from .argcheck import choice, flag, integer, integers
from .core import dtypes as dt
from .core import public
from .core.errors import DomainError, DTypeError, ShapeError, UnsupportedError

NORMS = ("backward", "ortho", "forward")


def _matmul_along(x, matrix, dim):
    """x with `matrix` (out, in) applied along dim: sum_k matrix[j, k] x[..., k, ...]."""
    m = ops.astype(matrix, x.dtype)
    return ops.movedim(ops.matmul(ops.movedim(x, dim, -1), ops.matrix_transpose(m)), -1, dim)


def _angles(n, m):
    """2 pi j k / n for the n outputs j and the m inputs k."""
    return 2 * np.pi * np.arange(n)[:, None] * np.arange(m)[None, :] / n


def _inverse_dft(re, im, dim, n):
    """The complex inverse DFT (unscaled) of length n along dim, on (re, im); im None is 0.
    Inputs past n are cut off (their columns zero), fewer are zero-padded."""
    m = re.shape[dim]
    used = np.arange(m) < n
    c, s = np.cos(_angles(n, m)) * used, np.sin(_angles(n, m)) * used
    out_re, out_im = _matmul_along(re, c, dim), _matmul_along(re, s, dim)
    if im is not None:
        out_re = out_re - _matmul_along(im, s, dim)
        out_im = out_im + _matmul_along(im, c, dim)
    return out_re, out_im


def _complex_to_real(re, im, dim, n):
    """The real signal of length n whose half spectrum (n // 2 + 1 terms) is (re, im) along
    dim, unscaled: X_0 + sum 2 Re(X_k e^(2 pi i k t / n)) (+ X_(n/2) (-1)^t for even n)."""
    m = re.shape[dim]
    k = np.arange(m)
    weight = np.where((k == 0) | (2 * k == n), 1.0, 2.0) * (k <= n // 2)
    out = _matmul_along(re, np.cos(_angles(n, m)) * weight, dim)
    if im is not None:
        out = out - _matmul_along(im, np.sin(_angles(n, m)) * weight, dim)
    return out


def _sizes(name, input, s, dim, last_default):
    """(dims, output sizes) as PyTorch resolves s= and dim=; the last dim's default size is
    last_default(m) of its input length m, the others' their input length."""
    if input.ndim == 0:
        raise ShapeError(f"{name}: needs a tensor of at least 1 dim, got a 0-d one")
    if dim is not None:
        dims = tuple(ops.shape.axis_of(d, input.ndim) for d in integers(dim, f"{name}: dim"))
        if s is not None and len(integers(s, f"{name}: s")) != len(dims):
            raise ShapeError(f"{name}: when given, dim and s must have the same length")
    elif s is not None:
        count = len(integers(s, f"{name}: s"))
        if count > input.ndim:
            raise ShapeError(f"{name}: s has {count} sizes, input only {input.ndim} dims")
        dims = tuple(range(input.ndim - count, input.ndim))
    else:
        dims = tuple(range(input.ndim))
    if not dims or len(set(dims)) != len(dims):
        raise ShapeError(f"{name}: needs distinct dims to transform, got {dims}")
    given = integers(s, f"{name}: s") if s is not None else (-1,) * len(dims)
    sizes = [input.shape[d] if n == -1 else n for d, n in zip(dims, given)]
    if given[-1] == -1:
        sizes[-1] = last_default(input.shape[dims[-1]])
    if min(sizes) < 1:
        raise DomainError(f"{name}: invalid number of data points {sizes} (each must be >= 1)")
    return dims, sizes


def _inverse_real(name, input, s, dim, norm, forward):
    """irfftn (forward False) or hfftn (True, the dual scaling) of a real input."""
    norm = choice("backward" if norm is None else norm, NORMS, f"{name}: norm")
    x = input if dt.is_float(input.dtype) else ops.astype(input, dt.default_float())
    dims, sizes = _sizes(name, x, s, dim, lambda m: 2 * (m - 1))
    re, im = x, None
    for d, n in zip(dims[:-1], sizes[:-1]):
        re, im = _inverse_dft(re, im, d, n)
    out = _complex_to_real(re, im, dims[-1], sizes[-1])
    total = math.prod(sizes)
    scale = {"backward": 1 / total, "ortho": 1 / math.sqrt(total), "forward": 1.0}
    return out * scale[norm if not forward else NORMS[2 - NORMS.index(norm)]]


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of rfftn, of a real input (a half spectrum with zero imaginary parts):
    real, of sizes s along dim (the last one 2 (m - 1) by default)."""
    return _inverse_real("fft.irfftn", input, s, dim, norm, forward=False)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """irfftn over two dims."""
    return _inverse_real("fft.irfft2", input, s, dim, norm, forward=False)


def irfft(input, n=None, dim=-1, norm=None):
    """irfftn along one dim, to n points (2 (m - 1) by default)."""
    return _inverse_real("fft.irfft", input, None if n is None else (n,), (dim,), norm, False)


def hfftn(input, s=None, dim=None, norm=None):
    """The FFT of a Hermitian signal given by its half (a real input here): irfftn with the
    forward transform's scaling."""
    return _inverse_real("fft.hfftn", input, s, dim, norm, forward=True)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """hfftn over two dims."""
    return _inverse_real("fft.hfft2", input, s, dim, norm, forward=True)


def hfft(input, n=None, dim=-1, norm=None):
    """hfftn along one dim, to n points (2 (m - 1) by default)."""
    return _inverse_real("fft.hfft", input, None if n is None else (n,), (dim,), norm, True)


def _shift(input, dim, sign):
    if input.ndim == 0 and dim is not None:
        raise ShapeError("fft.fftshift: a 0-d tensor has no dim to shift")
    dims = tuple(range(input.ndim)) if dim is None else integers(dim, "fft.fftshift: dim")
    dims = tuple(ops.shape.axis_of(d, input.ndim) for d in dims)
    if not dims:
        return input
    return ops.roll(input, tuple(sign * (input.shape[d] // 2) for d in dims), dims)


def fftshift(input, dim=None):
    """The zero-frequency term moved to the middle: a roll by n // 2 along each dim (all by
    default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """fftshift's inverse: a roll by -(n // 2) along each dim."""
    return _shift(input, dim, -1)


# ---------------------------------------------------------------- torch.stft

_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}  # numpy's names


def _frames(x, n_fft, hop, center, pad_mode):
    """The windows of n_fft samples, hop apart, along x's last dim: (..., frames, n_fft);
    with center, x first padded by n_fft // 2 each side (its edge samples mirrored etc.)."""
    if center:
        half, length = n_fft // 2, x.shape[-1]
        mode = choice(pad_mode, ("constant", *_PAD_MODES), "stft: pad_mode")
        if mode == "constant":
            x = ops.pad(x, [(0, 0)] * (x.ndim - 1) + [(half, half)])
        else:
            if mode == "reflect" and half >= length:
                raise ShapeError(
                    f"stft: reflect padding of {half} needs more than {length} samples"
                )
            source = np.pad(np.arange(length), half, mode=_PAD_MODES[mode])
            x = ops.index_select(x, -1, source)
    if x.shape[-1] < n_fft:
        raise ShapeError(f"stft: n_fft {n_fft} is longer than the (padded) signal {x.shape[-1]}")
    return x.unfold(-1, n_fft, hop)


def stft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    pad_mode="reflect",
    normalized=False,
    onesided=None,
    return_complex=None,
):
    """PyTorch's torch.stft of a real signal (L,) or batch (B, L): the DFT of each window of
    n_fft samples, hop_length apart (n_fft // 4), times `window` (win_length long, centred in
    n_fft; ones by default), as (..., freq, frames) complex numbers (return_complex=True) or
    (..., freq, frames, 2) holding their real and imaginary parts (return_complex=False);
    onesided (the default) keeps the n_fft // 2 + 1 non-negative frequencies; normalized
    divides by sqrt(n_fft). return_complex must be given, as PyTorch requires for a real
    signal."""
    if return_complex is None:
        raise UnsupportedError(
            "stft: give return_complex (True: complex results; False: their real and imaginary "
            "parts in a last dim of 2), as PyTorch requires for a real input"
        )
    if not dt.is_float(input.dtype):
        raise DTypeError(f"stft: input must be a float signal, got {input.dtype}")
    if input.ndim not in (1, 2):
        raise ShapeError(f"stft: input must be (L,) or (B, L), got shape {tuple(input.shape)}")
    n_fft = integer(n_fft, "stft: n_fft")
    hop = n_fft // 4 if hop_length is None else integer(hop_length, "stft: hop_length")
    win = n_fft if win_length is None else integer(win_length, "stft: win_length")
    if not 0 < win <= n_fft or hop <= 0:
        raise DomainError(
            f"stft: needs 0 < win_length {win} <= n_fft {n_fft}, hop_length {hop} > 0"
        )
    if window is None:
        window = ops.ones(win, dtype=input.dtype)
    elif tuple(window.shape) != (win,):
        raise ShapeError(f"stft: window of shape {tuple(window.shape)}, win_length {win}")
    left = (n_fft - win) // 2
    window = ops.pad(window, [(left, n_fft - win - left)])
    frames = _frames(input, n_fft, hop, center, pad_mode) * window
    freqs = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    # (freq, time): X_f = sum_t x_t e^(-2 pi i f t / n_fft)
    angles = 2 * np.pi * np.arange(freqs)[:, None] * np.arange(n_fft)[None, :] / n_fft
    re = ops.matmul(frames, ops.astype(np.cos(angles).T, input.dtype))
    im = ops.matmul(frames, ops.astype(-np.sin(angles).T, input.dtype))
    re, im = ops.matrix_transpose(re), ops.matrix_transpose(im)
    if normalized:
        re, im = re / math.sqrt(n_fft), im / math.sqrt(n_fft)
    if flag(return_complex, "stft: return_complex"):
        return ops.complex(re, im)
    return ops.stack([re, im], axis=-1)


__all__ = ["fftshift", "hfft", "hfft2", "hfftn", "ifftshift", "irfft", "irfft2", "irfftn", "stft"]

# as users call them: PyTorch's argument names, and a clear error for a non-tensor input
globals().update({name: public(globals()[name]) for name in __all__})
