"""PyTorch's functions of complex numbers: a complex tensor's parts (real, imag, angle, conj),
complex tensors made of parts (complex, polar, view_as_complex) and taken apart again
(view_as_real). Gradients follow PyTorch's convention (docs/eager.md, "Complex tensors").

On a real tensor, as in PyTorch: conj, conj_physical, resolve_conj, resolve_neg and real
return the input itself, imag is refused, and angle is 0 or pi."""

import math

import numpy as np

from ..argcheck import shown
from ..core import dtypes as dt
from ..core.errors import ArgumentError, DTypeError, ShapeError
from ..core.op import is_value
from ..kernels.cpu import vecmath
from ..kernels.cuda.loader import not_supported
from ._define import elementwise
from .complex_math import ON_CPU_ONLY, complex_sgn
from .complex_math import conj_physical as _conj_op
from .creation import full_like, zeros_like
from .elementwise import astype, cos, isnan, sign, sin, where
from .index import getitem
from .shape import stack


def _tensor(name, input):
    if not is_value(input):
        raise ArgumentError(f"{name}: argument 'input' must be a tensor, got {shown(input)}")
    return input


def _complex(x) -> bool:
    return np.dtype(x.dtype).kind == "c"


# ---------------------------------------------------------------- the parts: ops


@elementwise(dtypes=dt.COMPLEX, ref=np.real, real_out=True)
def real_part(x):
    """The real part of a complex tensor (nbflow.real takes real tensors too)."""
    return x.real


@elementwise(dtypes=dt.COMPLEX, ref=np.imag, real_out=True)
def imag_part(x):
    """The imaginary part of a complex tensor (nbflow.imag)."""
    return x.imag


@elementwise(dtypes=dt.COMPLEX, ref=np.angle, real_out=True)
def complex_angle(x):
    """The argument of a complex tensor's elements, in [-pi, pi] (nbflow.angle)."""
    return math.atan2(x.imag, x.real)


def _complex_spec(*specs):
    return dt.to_complex(dt.promote([s.dtype for s in specs]))


@elementwise(dtypes=dt.FLOATS, ref=lambda re, im: re + 1j * im, out_dtype=_complex_spec)
def complex(real, imag):
    """The complex tensor real + imag * 1j of two float tensors (they broadcast; float64
    gives complex128, float32 complex64), as torch.complex."""
    return vecmath.make_complex(real, imag)


# a real gradient g of a part is the complex gradient g (real part) or g * 1j (imaginary)
real_part.defgrad(lambda g, out, x: (complex(g, zeros_like(g)),))
imag_part.defgrad(lambda g, out, x: (complex(zeros_like(g), g),))
complex.defgrad(lambda g, out, real, imag: (real_part(g), imag_part(g)))


@complex_angle.defgrad
def _complex_angle_grad(g, out, x):
    # d angle = (x d y - y d x) / |z|^2: the complex gradient g * 1j * z / |z|^2, 0 at 0
    # (PyTorch's convention there); 1j * z as complex(-y, x): a complex Python number in a
    # rule would be a captured tensor of a graph
    m = abs(x)
    return (complex(-imag_part(x), real_part(x)) * (g / where(m == 0, 1, m * m)),)


for _op in (real_part, imag_part, complex_angle, complex):
    _op.kernels["cuda"] = not_supported(ON_CPU_ONLY)

# ---------------------------------------------------------------- the public functions


def conj(input):
    """The complex conjugate; a real tensor is its own (the input itself). nbflow computes it
    (no lazy conjugate bit): conj, conj_physical and resolve_conj give the same values."""
    x = _tensor("conj", input)
    return _conj_op(x) if _complex(x) else x


def conj_physical(input):
    """The conjugate, computed now rather than lazily: a real tensor is its own."""
    x = _tensor("conj_physical", input)
    return _conj_op(x) if _complex(x) else x


def resolve_conj(input):
    """input with a pending lazy conjugation applied: nbflow has none (the input itself)."""
    return _tensor("resolve_conj", input)


def resolve_neg(input):
    """input with a pending lazy negation applied: nbflow has none (the input itself)."""
    return _tensor("resolve_neg", input)


def real(input):
    """The real part, in the real dtype of the input's precision: a real tensor is its own
    (the input itself). A new tensor, not a view that writes into the input."""
    x = _tensor("real", input)
    return real_part(x) if _complex(x) else x


def imag(input):
    """The imaginary part of a complex tensor (a new tensor, not a view); not defined for real
    dtypes (PyTorch raises too)."""
    x = _tensor("imag", input)
    if not _complex(x):
        raise DTypeError(f"imag is not defined for tensors of a real dtype, got {x.dtype}")
    return imag_part(x)


def angle(input):
    """The argument of each element, in [-pi, pi] (complex: atan2(imag, real)); for a real
    tensor 0 for x >= 0, pi for x < 0, NaN for NaN, in a float dtype (integers give the
    default float dtype), with a zero gradient, as PyTorch's."""
    x = _tensor("angle", input)
    if _complex(x):
        return complex_angle(x)
    x = x if dt.is_float(x.dtype) else astype(x, dt.default_float())
    half_turns = where(x < 0, full_like(x, math.pi), zeros_like(x))
    # x * 0 keeps a NaN and makes the gradient zero (0 * g) while staying on the tape
    return where(isnan(x), x * 0, half_turns)


def polar(abs, angle):
    """The complex tensor abs * (cos(angle) + sin(angle) * 1j) of two float tensors."""
    return complex(abs * cos(angle), abs * sin(angle))


def view_as_real(input):
    """A complex tensor as a real one with a last dim of 2 (real part, imaginary part). A
    copy, where PyTorch's is a view of the same memory: writing into it does not change the
    input."""
    x = _tensor("view_as_real", input)
    if not _complex(x):
        raise DTypeError(f"view_as_real takes a complex tensor, got {x.dtype}")
    return stack([real_part(x), imag_part(x)], axis=-1)


def view_as_complex(input):
    """A float32 or float64 tensor whose last dim is 2 (real part, imaginary part) as a
    complex tensor without that dim. A copy, where PyTorch's is a view of the same memory."""
    x = _tensor("view_as_complex", input)
    if x.dtype not in (dt.float32, dt.float64):
        raise DTypeError(f"view_as_complex takes a float32 or float64 tensor, got {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ShapeError(f"view_as_complex needs a last dim of size 2, got shape {x.shape}")
    return complex(getitem(x, (..., 0)), getitem(x, (..., 1)))


def sgn(x):
    """PyTorch's sgn: sign, and for a complex x, x / |x| (0 at 0)."""
    return complex_sgn(x) if dt.is_complex(x.dtype) else sign(x)


__all__ = [
    "sgn",
    "angle",
    "complex",
    "conj",
    "conj_physical",
    "imag",
    "polar",
    "real",
    "resolve_conj",
    "resolve_neg",
    "view_as_complex",
    "view_as_real",
]
