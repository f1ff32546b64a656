"""nbflow.fft: PyTorch's torch.fft on real and complex tensors: fft, ifft, rfft, ihfft and
their 2-D and n-D forms, the inverse real transforms irfft and hfft (and their 2-D and n-D
forms), fftshift and ifftshift, and torch.stft and istft (nbflow.stft, nbflow.istft).

Every transform is one op, `fft_c2c` (nbflow/ops/fourier.py: pocketfft's complex transform,
O(n log n)), on a complex signal cut or zero-padded to the sizes asked: a real input is made
complex first, rfft keeps the first n // 2 + 1 terms of the result, and the complex-to-real
inverses rebuild the whole Hermitian spectrum from its half (the imaginary parts of its first
term, and of its middle one for an even n, drop out with the real part taken at the end, as in
PyTorch and numpy). Gradients follow from the op's (its adjoint) and those of the ops around
it, in eager and graph mode."""

import math

import numpy as np

from . import ops
from .argcheck import choice, flag, integer, integers
from .core import dtypes as dt
from .core import graph_mode, public
from .core.errors import ArgumentError, DomainError, DTypeError, ShapeError, UnsupportedError
from .ops.fourier import fft_c2c

NORMS = ("backward", "ortho", "forward")


def _as_complex(name, input, real_only=False):
    """(input as a complex tensor, the dtype of the result or None for the transform's own):
    an integer input is transformed in complex128 and given the default float's complex
    dtype, as PyTorch's; real_only refuses a complex input (rfft and ihfft take real ones)."""
    if dt.is_complex(input.dtype):
        if real_only:
            raise DTypeError(f"{name}: expects a real input, got {input.dtype}")
        return input, None
    if dt.is_float(input.dtype):
        return ops.astype(input, dt.to_complex(input.dtype)), None
    return ops.astype(input, "complex128"), dt.to_complex(dt.default_float())


def _resized(x, dim, n):
    """x cut off or zero-padded to n points along dim."""
    m = x.shape[dim]
    if n < m:
        return ops.narrow(x, dim, 0, n)
    if n > m:
        return ops.pad(x, [(0, 0)] * dim + [(0, n - m)] + [(0, 0)] * (x.ndim - dim - 1))
    return x


def _scale(norm, total, inverse):
    """The factor of norm ('backward', 'ortho', 'forward') for a transform of `total` points
    in the forward direction, or the inverse one (the dual factor)."""
    if inverse:
        norm = NORMS[2 - NORMS.index(norm)]
    return {"backward": 1.0, "ortho": 1 / math.sqrt(total), "forward": 1 / total}[norm]


def _complex_transform(name, input, s, dim, norm, inverse, half=False):
    """fftn and ifftn (inverse), and with half=True rfftn and ihfftn (inverse) of a real input:
    only the first n // 2 + 1 terms along the last dim."""
    norm = choice("backward" if norm is None else norm, NORMS, f"{name}: norm")
    x, result = _as_complex(name, input, real_only=half)
    dims, sizes = _sizes(name, x, s, dim, lambda m: m)
    for d, n in zip(dims, sizes):
        x = _resized(x, d, n)
    scale = _scale(norm, math.prod(sizes), inverse)
    out = fft_c2c(x, dims=dims, inverse=inverse, scale=scale)
    if half:
        out = ops.narrow(out, dims[-1], 0, sizes[-1] // 2 + 1)
    return out if result is None else ops.astype(out, result)


def _hermitian(half, dim, n):
    """The n terms of the Hermitian spectrum whose first n // 2 + 1 terms are `half` (cut or
    zero-padded to them) along dim: X_k = conj(X_(n - k)) past the middle."""
    half = _resized(half, dim, n // 2 + 1)
    rest = n - n // 2 - 1
    if not rest:
        return half
    mirrored = ops.flip(ops.narrow(half, dim, 1, rest), (dim,))
    return ops.concat(half, ops.conj(mirrored), axis=dim)


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
    """irfftn (forward False) or hfftn (True: of conj(input), with the dual scaling)."""
    norm = choice("backward" if norm is None else norm, NORMS, f"{name}: norm")
    x, result = _as_complex(name, input)
    if forward:
        x = ops.conj(x)
    dims, sizes = _sizes(name, x, s, dim, lambda m: 2 * (m - 1))
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = _resized(x, d, n)
    if len(dims) > 1:  # the other dims first: the last one's spectrum is Hermitian after them
        x = fft_c2c(x, dims=dims[:-1], inverse=True)
    x = _hermitian(x, dims[-1], sizes[-1])
    scale = _scale(norm, math.prod(sizes), inverse=not forward)
    out = ops.real(fft_c2c(x, dims=dims[-1:], inverse=True, scale=scale))
    return out if result is None else ops.astype(out, dt.to_real(result))


def fftn(input, s=None, dim=None, norm=None):
    """The n-D discrete Fourier transform (complex), over dim (all by default), of sizes s."""
    return _complex_transform("fft.fftn", input, s, dim, norm, inverse=False)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """fftn over two dims."""
    return _complex_transform("fft.fft2", input, s, dim, norm, inverse=False)


def fft(input, n=None, dim=-1, norm=None):
    """fftn along one dim, to n points."""
    return _complex_transform("fft.fft", input, _one(n), (dim,), norm, inverse=False)


def ifftn(input, s=None, dim=None, norm=None):
    """The inverse of fftn."""
    return _complex_transform("fft.ifftn", input, s, dim, norm, inverse=True)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """ifftn over two dims."""
    return _complex_transform("fft.ifft2", input, s, dim, norm, inverse=True)


def ifft(input, n=None, dim=-1, norm=None):
    """ifftn along one dim, to n points."""
    return _complex_transform("fft.ifft", input, _one(n), (dim,), norm, inverse=True)


def rfftn(input, s=None, dim=None, norm=None):
    """fftn of a real input, its last dim's n // 2 + 1 non-negative frequencies only."""
    return _complex_transform("fft.rfftn", input, s, dim, norm, inverse=False, half=True)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """rfftn over two dims."""
    return _complex_transform("fft.rfft2", input, s, dim, norm, inverse=False, half=True)


def rfft(input, n=None, dim=-1, norm=None):
    """rfftn along one dim, to n points."""
    return _complex_transform("fft.rfft", input, _one(n), (dim,), norm, inverse=False, half=True)


def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of hfftn: ifftn of a real input, its last dim's n // 2 + 1 terms only."""
    return _complex_transform("fft.ihfftn", input, s, dim, norm, inverse=True, half=True)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """ihfftn over two dims."""
    return _complex_transform("fft.ihfft2", input, s, dim, norm, inverse=True, half=True)


def ihfft(input, n=None, dim=-1, norm=None):
    """ihfftn along one dim, to n points."""
    return _complex_transform("fft.ihfft", input, _one(n), (dim,), norm, inverse=True, half=True)


def _one(n):
    """A 1-D transform's n as s: None, or a one-element tuple."""
    return None if n is None else (n,)


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of rfftn, of a real input (a half spectrum with zero imaginary parts):
    real, of sizes s along dim (the last one 2 (m - 1) by default)."""
    return _inverse_real("fft.irfftn", input, s, dim, norm, forward=False)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """irfftn over two dims."""
    return _inverse_real("fft.irfft2", input, s, dim, norm, forward=False)


def irfft(input, n=None, dim=-1, norm=None):
    """irfftn along one dim, to n points (2 (m - 1) by default)."""
    return _inverse_real("fft.irfft", input, _one(n), (dim,), norm, False)


def hfftn(input, s=None, dim=None, norm=None):
    """The FFT of a Hermitian signal given by its half (a real input here): irfftn with the
    forward transform's scaling."""
    return _inverse_real("fft.hfftn", input, s, dim, norm, forward=True)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """hfftn over two dims."""
    return _inverse_real("fft.hfft2", input, s, dim, norm, forward=True)


def hfft(input, n=None, dim=-1, norm=None):
    """hfftn along one dim, to n points (2 (m - 1) by default)."""
    return _inverse_real("fft.hfft", input, _one(n), (dim,), norm, True)


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


def _window(name, n_fft, hop_length, win_length, window, dtype):
    """(n_fft, hop, the window zero-padded to n_fft, centred) from stft's arguments."""
    n_fft = integer(n_fft, f"{name}: n_fft")
    hop = n_fft // 4 if hop_length is None else integer(hop_length, f"{name}: hop_length")
    win = n_fft if win_length is None else integer(win_length, f"{name}: win_length")
    if not 0 < win <= n_fft or hop <= 0:
        raise DomainError(
            f"{name}: needs 0 < win_length {win} <= n_fft {n_fft}, hop_length {hop} > 0"
        )
    if window is None:
        window = ops.ones(win, dtype=dtype)
    elif tuple(window.shape) != (win,):
        raise ShapeError(f"{name}: window of shape {tuple(window.shape)}, win_length {win}")
    left = (n_fft - win) // 2
    return n_fft, hop, ops.pad(window, [(left, n_fft - win - left)])


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
    signal. A complex signal gives the two-sided spectrum, complex unless return_complex=False."""
    complex_signal = dt.is_complex(input.dtype)
    if return_complex is None and not complex_signal:
        raise UnsupportedError(
            "stft: give return_complex (True: complex results; False: their real and imaginary "
            "parts in a last dim of 2), as PyTorch requires for a real input"
        )
    if not (dt.is_float(input.dtype) or complex_signal):
        raise DTypeError(f"stft: input must be a float or complex signal, got {input.dtype}")
    if input.ndim not in (1, 2):
        raise ShapeError(f"stft: input must be (L,) or (B, L), got shape {tuple(input.shape)}")
    n_fft, hop, window = _window("stft", n_fft, hop_length, win_length, window, input.dtype)
    frames = _frames(input, n_fft, hop, center, pad_mode) * window
    one_sided = not complex_signal if onesided is None else flag(onesided, "stft: onesided")
    if one_sided and complex_signal:
        raise ArgumentError("stft: a complex signal has no one-sided spectrum (onesided=False)")
    spectrum = (rfft if one_sided else fft)(frames, norm="ortho" if normalized else None)
    spectrum = ops.matrix_transpose(spectrum)  # (..., freq, frames)
    if return_complex is None or flag(return_complex, "stft: return_complex"):
        return spectrum
    return ops.view_as_real(spectrum)


def istft(
    input,
    n_fft,
    hop_length=None,
    win_length=None,
    window=None,
    center=True,
    normalized=False,
    onesided=None,
    length=None,
    return_complex=False,
):
    """PyTorch's torch.istft, the inverse of stft: each frame of a complex spectrum (freq,
    frames) or batch (B, freq, frames) back to n_fft samples (irfft of the non-negative
    frequencies; ifft of a two-sided spectrum with return_complex), times the
    window, overlap-added hop_length apart and divided by the overlap-added squared window;
    center drops stft's n_fft // 2 padding, `length` trims or zero-pads the signal. A window
    whose overlap-add comes to 0 somewhere cannot be inverted (DomainError)."""
    if not dt.is_complex(input.dtype):
        raise DTypeError(f"istft: expects a complex spectrum, got {input.dtype}")
    if input.ndim not in (2, 3):
        raise ShapeError(
            f"istft: input must be (freq, frames) or (B, freq, frames), got {input.shape}"
        )
    real = dt.to_real(input.dtype)
    n_fft, hop, window = _window("istft", n_fft, hop_length, win_length, window, real)
    freqs, count = input.shape[-2], input.shape[-1]
    one_sided = freqs != n_fft if onesided is None else flag(onesided, "istft: onesided")
    if freqs != (n_fft // 2 + 1 if one_sided else n_fft):
        raise ShapeError(f"istft: {freqs} frequencies for n_fft {n_fft} (onesided {one_sided})")
    spectrum = input * math.sqrt(n_fft) if normalized else input
    if flag(return_complex, "istft: return_complex"):
        if one_sided:
            raise DomainError("istft: return_complex=True needs a two-sided spectrum")
        frames = ifft(spectrum, n=n_fft, dim=-2)
    else:  # a real signal: its spectrum's non-negative half, as PyTorch reads it
        frames = irfft(spectrum[..., : n_fft // 2 + 1, :], n=n_fft, dim=-2)
    total = n_fft + hop * (count - 1)
    positions = (np.arange(n_fft)[:, None] + hop * np.arange(count)[None, :]).ravel()
    index = ops.astype(positions, "int64")
    pieces = ops.reshape(frames * ops.unsqueeze(window, -1), frames.shape[:-2] + (-1,))
    signal = ops.index_add(
        ops.zeros(frames.shape[:-2] + (total,), dtype=pieces.dtype), -1, index, pieces
    )
    squares = ops.reshape(
        ops.broadcast_to(ops.unsqueeze(window * window, -1), (n_fft, count)), (-1,)
    )
    envelope = ops.index_add(ops.zeros(total, dtype=squares.dtype), 0, index, squares)
    start = n_fft // 2 if center else 0
    stop = total - n_fft // 2 if center else total
    if length is not None:
        stop = start + integer(length, "istft: length", 0)
    signal, envelope = signal[..., start : min(stop, total)], envelope[start : min(stop, total)]
    if not graph_mode() and envelope.numel() and float(ops.min(ops.abs(envelope))) < 1e-11:
        raise DomainError("istft: the window's overlap-add is 0 somewhere (NOLA): not invertible")
    signal = signal / envelope
    if stop > total:  # (a length past the frames: zeros, as PyTorch pads)
        signal = ops.pad(signal, [(0, 0)] * (signal.ndim - 1) + [(0, stop - total)])
    return signal


__all__ = [
    "fft", "fft2", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2", "ifftn",
    "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "istft", "rfft",
    "rfft2", "rfftn", "stft",
]  # fmt: skip

# as users call them: PyTorch's argument names, and a clear error for a non-tensor input
globals().update({name: public(globals()[name]) for name in __all__})
