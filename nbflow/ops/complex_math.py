"""What the elementwise ops need of complex numbers, below them: the conjugate and the complex
sign, which their gradient rules apply (PyTorch's convention: for a holomorphic f, the input's
gradient is the output's times conj(f'(z))), and cast's dtype rule. On a real value `conj` is
the value itself, with no op: real tensors pay nothing."""

import numpy as np

from ..core import dtypes as dt
from ..core.errors import DTypeError
from ..kernels.cuda.loader import not_supported
from ._define import elementwise


@elementwise(dtypes=dt.COMPLEX, ref=np.conjugate)
def conj_physical(x):
    """The complex conjugate, computed (real - imag * 1j)."""
    return x.conjugate()


conj_physical.defgrad(lambda g, out, x: (conj_physical(g),))


def conj(x):
    """The complex conjugate of x: x itself when its dtype is real."""
    return conj_physical(x) if x.dtype.kind == "c" else x


def _sgn_ref(x):
    magnitude = np.abs(x)
    return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude)).astype(x.dtype)


@elementwise(dtypes=dt.COMPLEX, ref=_sgn_ref)
def complex_sgn(x):
    """x / |x|, 0 at 0 (a complex tensor's sign: PyTorch's sgn)."""
    return x / abs(x) if x != 0 else x * 0


@complex_sgn.defgrad
def _complex_sgn_grad(g, out, x):
    # s = z / |z|: ds = (dz - s Re(conj(s) dz)) / |z|, whose adjoint takes the output's
    # gradient g to (g - s Re(conj(s) g)) / |z|; 0 at z = 0, as PyTorch's
    from .elementwise import where  # (elementwise imports this module)

    m = abs(x)
    along = (conj_physical(out) * g + out * conj_physical(g)) * 0.5  # Re(conj(s) g), complex
    return (where(m == 0, 0, (g - out * along) / where(m == 0, 1, m)),)


def cast_dtype(x, dtype):
    """cast's output dtype: `dtype`, refused from a complex dtype to a real one (the imaginary
    part would be lost; PyTorch warns and drops it). (astype takes a complex x to bool as
    x != 0.)"""
    if x.dtype.kind == "c" and dtype.kind != "c":
        raise DTypeError(
            f"a {x.dtype} tensor cast to {dtype} would lose the imaginary part: "
            "take .real or .abs()"
        )
    return dtype


# (a complex tensor refuses the GPU before any kernel is chosen: eager/device_tensor.py)
ON_CPU_ONLY = "complex tensors run on the CPU only so far (issue 39)"
for _op in (conj_physical, complex_sgn):
    _op.kernels["cuda"] = not_supported(ON_CPU_ONLY)

__all__ = []  # public through complex_parts, which also takes real tensors
