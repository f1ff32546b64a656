"""PyTorch's functions of complex numbers, on nbflow's real tensors (nbflow has no complex
dtype yet): a real number is its own conjugate and its own real part, and its angle is 0 or
pi. As in PyTorch, conj, conj_physical, resolve_conj, resolve_neg and real return the input
itself; the imaginary part of a real tensor is refused, as PyTorch refuses it."""

import math

from ..argcheck import shown
from ..core import dtypes as dt
from ..core.errors import ArgumentError, DTypeError
from ..core.op import _is_value
from .creation import full_like, zeros_like
from .elementwise import astype, isnan, where


def _tensor(name, input):
    if not _is_value(input):
        raise ArgumentError(f"{name}: argument 'input' must be a tensor, got {shown(input)}")
    return input


def conj(input):
    """The complex conjugate: a real tensor is its own (the input itself)."""
    return _tensor("conj", input)


def conj_physical(input):
    """The conjugate, computed now rather than lazily: a real tensor is its own."""
    return _tensor("conj_physical", input)


def resolve_conj(input):
    """input with a pending lazy conjugation applied: real tensors have none (the input)."""
    return _tensor("resolve_conj", input)


def resolve_neg(input):
    """input with a pending lazy negation applied: nbflow has none (the input itself)."""
    return _tensor("resolve_neg", input)


def real(input):
    """The real part: a real tensor is its own (the input itself)."""
    return _tensor("real", input)


def imag(input):
    """The imaginary part: not defined for real dtypes (PyTorch raises too)."""
    _tensor("imag", input)
    raise DTypeError(f"imag is not defined for tensors of a real dtype, got {input.dtype}")


def angle(input):
    """The argument of each element: 0 for x >= 0, pi for x < 0, NaN for NaN; in a float
    dtype (integers give the default float dtype). Its gradient is zero, as PyTorch's."""
    x = _tensor("angle", input)
    x = x if dt.is_float(x.dtype) else astype(x, dt.default_float())
    half_turns = where(x < 0, full_like(x, math.pi), zeros_like(x))
    # x * 0 keeps a NaN and makes the gradient zero (0 * g) while staying on the tape
    return where(isnan(x), x * 0, half_turns)


__all__ = ["angle", "conj", "conj_physical", "imag", "real", "resolve_conj", "resolve_neg"]
