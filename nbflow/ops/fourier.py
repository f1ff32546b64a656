"""The discrete Fourier transform as one op: `fft_c2c`, a complex tensor's unscaled DFT (or
inverse DFT) over some of its dims, times a real scale, by numpy's pocketfft (O(n log n)).
nbflow.fft builds PyTorch's transforms on it (sizes, real inputs and outputs, norms)."""

import numpy as np

from ..core import Attr, Op, Spec
from ..core import dtypes as dt
from ..kernels.cuda.loader import not_supported


def _c2c_spec(x, dims, inverse, scale):
    return Spec(tuple(x.shape), x.dtype)


def _c2c(x, dims, inverse, scale):
    """sum_k x_k e^(-+2 pi i j k / n) along each of dims (+ for inverse), times scale."""
    dims = tuple(dims)
    if not x.size or not dims:
        return np.asarray(x * scale)
    # (norm="forward" leaves numpy's inverse unscaled, as its forward is by default)
    y = np.fft.ifftn(x, axes=dims, norm="forward") if inverse else np.fft.fftn(x, axes=dims)
    return y * scale if scale != 1 else y


def _c2c_cpu(x, out, dims, inverse, scale):
    out[...] = _c2c(x, dims, inverse, scale)


fft_c2c = Op(
    name="fft_c2c",
    inputs=("x",),
    outputs=("out",),
    spec=_c2c_spec,
    kernels={
        "cpu": _c2c_cpu,
        "cuda": not_supported(
            "fft_c2c: no CUDA kernel (numba-cuda has no cuFFT binding, and complex tensors are "
            "CPU-only so far); move the tensor to the CPU with .cpu() for nbflow.fft"
        ),
    },
    dtypes=dt.COMPLEX,
    ref=_c2c,
    attrs={"dims": Attr("ints"), "inverse": Attr("bool", False), "scale": Attr("float", 1.0)},
    doc="The unscaled discrete Fourier transform (inverse: its unscaled inverse) of a complex "
    "tensor over `dims`, times `scale` (pocketfft).",
)


@fft_c2c.defgrad
def _fft_c2c_grad(g, out, x, dims, inverse, scale):
    # y = scale F x, F unitary up to n: the adjoint (PyTorch's conjugate convention) is
    # scale F^H g, and F^H is the unscaled transform the other way
    return (fft_c2c(g, dims=dims, inverse=not inverse, scale=scale),)


__all__ = ["fft_c2c"]
