"""PyTorch's other names and thin spellings of nbflow's ops (concatenate, moveaxis, swapdims,
ravel, t, adjoint, ger, trapz, floor_divide, rsub, msort, detach, the unsafe_ splits)."""

from ..argcheck import number
from ..core.errors import ShapeError
from .complex_math import conj
from .elementwise import floor_div, mul, sub
from .linalg import outer
from .select import split_with_sizes
from .shape import cat, chunk, movedim, reshape, split, swapaxes, transpose
from .sorting import sort_op
from .statistics import trapezoid

concatenate = cat
moveaxis = movedim
unsafe_chunk = chunk  # nbflow's pieces are separate tensors: the "unsafe" aliasing is moot
unsafe_split = split
unsafe_split_with_sizes = split_with_sizes
ger = outer  # (deprecated in PyTorch: outer)
trapz = trapezoid
floor_divide = floor_div  # PyTorch's floor_divide rounds toward minus infinity since 1.13


def ravel(input):
    """input flattened to 1-D."""
    return reshape(input, (-1,))


def t(input):
    """A 2-D tensor transposed; 0-d and 1-D ones as they are."""
    if input.ndim > 2:
        raise ShapeError(f"t() takes a tensor of at most 2 dims, got {input.ndim}: use mT")
    return input if input.ndim < 2 else transpose(input, 0, 1)


def swapdims(input, dim0, dim1):
    """swapaxes with PyTorch's other name."""
    return swapaxes(input, dim0, dim1)


def rsub(input, other, *, alpha=1):
    """other - alpha * input (PyTorch's reversed sub)."""
    number("rsub", "alpha", alpha)
    return sub(other, input if alpha == 1 else mul(input, alpha))


def msort(input):
    """input sorted along its first dim (ascending; NaN last)."""
    return sort_op(input, axis=0)[0]


def adjoint(input):
    """The conjugate transpose of the last two dims (for real tensors, the transpose)."""
    if input.ndim < 2:
        raise ShapeError(f"adjoint: input must have at least 2 dims, got shape {input.shape}")
    return conj(swapaxes(input, -2, -1))


def detach(input):
    """input cut from the autograd graph (the same values, no gradient)."""
    return input.detach()


__all__ = [
    "ravel",
    "t",
    "swapdims",
    "rsub",
    "floor_divide",
    "concatenate",
    "moveaxis",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "ger",
    "trapz",
    "msort",
    "adjoint",
    "detach",
]
