"""nbflow.masked: PyTorch's torch.masked reductions and normalizations on dense tensors.

Each function takes a boolean `mask=` (True: the element takes part) that broadcasts to the
input's shape; None takes every element. As in PyTorch, masked-out elements are replaced by
the operation's identity (0 for sum, 1 for prod, -inf for amax, ...) and the ordinary op runs
on the result, so a slice whose elements are all masked out gives that identity (sum 0, amax
-inf, logsumexp -inf, argmax 0) or, where there is none, NaN (mean, median, var, std, softmax).
Everything is composed of nbflow's ops (where, sum, amax, softmax, ...), so it runs eagerly
and under @nbflow.jit, and the gradients are theirs: zero for masked-out elements.

One difference from PyTorch: the mask must be a bool tensor (PyTorch converts any dtype with
.to(bool)), so that a tensor of values passed as a mask by mistake raises a DTypeError.
"""

import math

import numpy as np

from .argcheck import integer, real, shown, tensors
from .core import dtypes as dt
from .core.errors import ArgumentError, AttrError, DomainError, DTypeError, ShapeError
from .ops.creation import full_like
from .ops.elementwise import abs as abs_
from .ops.elementwise import astype, isnan, maximum, sqrt, where
from .ops.elementwise import logaddexp as _logaddexp
from .ops.linalg import norm as _norm
from .ops.nn import log_softmax as _log_softmax
from .ops.nn import softmax as _softmax
from .ops.queries import eager_values_or_none
from .ops.reduce import amax as _amax
from .ops.reduce import amin as _amin
from .ops.reduce import argmax as _argmax
from .ops.reduce import argmin as _argmin
from .ops.reduce import logsumexp as _logsumexp
from .ops.reduce import prod as _prod
from .ops.reduce import reduced_axes
from .ops.reduce import sum as _sum
from .ops.scans import cumprod as _cumprod
from .ops.scans import cumsum as _cumsum
from .ops.select import highest_value, lowest_value
from .ops.shape import broadcast_to
from .ops.statistics import nanmedian

# ---------------------------------------------------------------- masks, dims and dtypes


def _mask(name, input, mask):
    """mask as a bool tensor of input's shape (broadcast to it), or None for no mask."""
    if not hasattr(input, "shape"):  # (a number has no dims to reduce or mask)
        raise ArgumentError(f"{name}: argument 'input' must be a tensor, got {shown(input)}")
    if mask is None:
        return None
    tensors(name, mask=mask)
    mask = mask if hasattr(mask, "dtype") else np.asarray(mask)
    if mask.dtype != dt.bool_:
        raise DTypeError(f"{name}: mask must be a bool tensor, got {mask.dtype}")
    if mask.ndim > input.ndim:
        raise ShapeError(
            f"{name}: mask {tuple(mask.shape)} has more dims than input {tuple(input.shape)}"
        )
    if tuple(mask.shape) == tuple(input.shape):
        return mask
    try:
        return broadcast_to(mask, tuple(input.shape))
    except ShapeError:
        shapes = f"mask {tuple(mask.shape)} to input {tuple(input.shape)}"
        raise ShapeError(f"{name}: cannot broadcast {shapes}") from None


def _dtype(x):
    """The nbflow dtype of a tensor or array (a numpy int8 array's is int32, as nbflow.tensor
    makes it); DTypeError for one nbflow has no dtype for."""
    return dt.as_dtype(dt.widen(np.dtype(x.dtype)))


def _fill(input, mask, value):
    """input with its masked-out elements replaced by value."""
    return input if mask is None else where(mask, input, value)


def _count(input, mask, dim, keepdim):
    """The number of elements taking part in each reduced slice (int64)."""
    if mask is None:
        mask = full_like(input, True, dtype=dt.bool_)
    return _sum(mask, axis=_dims(dim), keepdims=keepdim)


def _dims(dim):
    """PyTorch's dim= of a masked reduction: () means every dim, as None does."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


def _one_dim(name, input, dim):
    """dim as a single checked axis (a 0-d input takes 0 and -1)."""
    dim = integer(dim, f"{name}: dim")
    try:
        reduced_axes(dim, input.ndim)
    except ShapeError as e:
        raise ShapeError(f"{name}: {e}") from None
    return dim


def _to(x, dtype):
    """x cast to dtype (None: unchanged)."""
    return x if dtype is None or dt.as_dtype(dtype) == x.dtype else astype(x, dt.as_dtype(dtype))


def _summing_dtype(input, dtype):
    """sum's and prod's result dtype: dtype, else input's, with integers and bools in int64."""
    if dtype is not None:
        return dt.as_dtype(dtype)
    kind = _dtype(input)
    return kind if dt.is_float(kind) or dt.is_complex(kind) else dt.int64


def _float_dtype(name, input, dtype):
    """mean's, var's and std's dtype: dtype, else input's; a float or complex one."""
    dtype = _dtype(input) if dtype is None else dt.as_dtype(dtype)
    if not (dt.is_float(dtype) or dt.is_complex(dtype)):
        raise DTypeError(f"{name}: the result needs a float or complex dtype, got {dtype}")
    return dtype


# ---------------------------------------------------------------- reductions


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The sum of the elements taking part (0 over a fully masked-out slice)."""
    m = _mask("masked.sum", input, mask)
    x = _to(_fill(input, m, 0), _summing_dtype(input, dtype))
    return _sum(x, axis=_dims(dim), keepdims=keepdim)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The product of the elements taking part (1 over a fully masked-out slice)."""
    m = _mask("masked.prod", input, mask)
    x = _to(_fill(input, m, 1), _summing_dtype(input, dtype))
    return _prod(x, axis=_dims(dim), keepdims=keepdim)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The largest element taking part (-inf, or the dtype's least integer, where none)."""
    m = _mask("masked.amax", input, mask)
    return _to(_amax(_fill(input, m, lowest_value(_dtype(input))), _dims(dim), keepdim), dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The smallest element taking part (inf, or the dtype's greatest integer, where none)."""
    m = _mask("masked.amin", input, mask)
    return _to(_amin(_fill(input, m, highest_value(_dtype(input))), _dims(dim), keepdim), dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the largest element taking part, in input's dtype unless dtype= says
    otherwise (PyTorch's); 0 over a fully masked-out slice."""
    m = _mask("masked.argmax", input, mask)
    index = _argmax(_fill(input, m, lowest_value(_dtype(input))), axis=dim, keepdims=keepdim)
    return _to(index, _dtype(input) if dtype is None else dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The index of the smallest element taking part, in input's dtype unless dtype= says
    otherwise (PyTorch's); 0 over a fully masked-out slice."""
    m = _mask("masked.argmin", input, mask)
    index = _argmin(_fill(input, m, highest_value(_dtype(input))), axis=dim, keepdims=keepdim)
    return _to(index, _dtype(input) if dtype is None else dtype)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The mean of the elements taking part (NaN over a fully masked-out slice); a float
    result dtype (input's or dtype=)."""
    m = _mask("masked.mean", input, mask)
    dtype = _float_dtype("masked.mean", input, dtype)
    total = _sum(_to(_fill(input, m, 0), dtype), axis=_dims(dim), keepdims=keepdim)
    return total / _count(input, m, dim, keepdim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """The lower median of the elements taking part along dim (NaN over a fully masked-out
    slice: PyTorch's nanmedian of the input with NaN for masked-out elements, so the input's
    own NaNs are skipped too). Integer inputs are computed in float32 and may not have a fully
    masked-out slice (DomainError)."""
    name = "masked.median"
    m = _mask(name, input, mask)
    dim = _one_dim(name, input, dim)
    if not isinstance(keepdim, (bool, np.bool_)):
        raise AttrError(f"{name}: keepdim must be a bool, got {shown(keepdim)}")
    x = input if dt.is_float(_dtype(input)) else astype(input, dt.float32)
    out = nanmedian(_fill(x, m, math.nan), dim, keepdim).values
    if dt.is_float(_dtype(input)):
        return out
    values = eager_values_or_none(isnan(out))  # (a graph value is checked by no one: None)
    if values is not None and values.any():
        raise DomainError(f"{name}: an integer input may not have a fully masked-out slice")
    return astype(out, _dtype(input) if dtype is None else dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp(x))) over the elements taking part (-inf over a fully masked-out slice), in
    input's dtype unless dtype= says otherwise (an integer input's result is truncated, as
    PyTorch's)."""
    m = _mask("masked.logsumexp", input, mask)
    x = _fill(input, m, lowest_value(_dtype(input)))
    out = _logsumexp(x, axis=_dims(dim), keepdims=keepdim)
    return _to(out, _dtype(input) if dtype is None else dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The vector ord-norm of the elements taking part (torch.linalg.vector_norm's ords)."""
    m = _mask("masked.norm", input, mask)
    ord = real(ord, "masked.norm: ord")
    x = _fill(_to(input, dtype), m, math.inf if ord == -math.inf else 0)
    return _norm(x, ord, axis=_dims(dim), keepdims=keepdim)


def _var(name, input, dim, unbiased, correction, keepdim, dtype, mask):
    """The variance of the elements taking part, divided by max(count - correction, 0)."""
    if unbiased is not None and correction is not None:
        raise AttrError(f"{name}: give unbiased or correction, not both")
    if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
        raise AttrError(f"{name}: unbiased must be a bool, got {shown(unbiased)}")
    if correction is None:
        correction = 1.0 if unbiased is None or unbiased else 0.0
    correction = real(correction, f"{name}: correction")
    m = _mask(name, input, mask)
    if dtype is None:
        kind = _dtype(input)
        dtype = kind if dt.is_float(kind) or dt.is_complex(kind) else dt.float32
    dtype = dt.as_dtype(dtype)
    complex_ = dt.is_complex(dtype)
    x = _to(input, dtype if dt.is_float(dtype) or complex_ else dt.float32)  # (float or complex)
    dims = _dims(dim)
    centre = _sum(_fill(x, m, 0), axis=dims, keepdims=True) / _count(input, m, dim, True)
    d = x - centre
    squares = abs_(d) ** 2 if complex_ else d * d  # (|d|^2: in the complex dtype, as PyTorch's)
    total = _sum(_fill(squares, m, 0), axis=dims, keepdims=keepdim)
    count = astype(_count(input, m, dim, keepdim), total.dtype)
    return _to(total / maximum(count - correction, 0.0), dtype)


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The variance of the elements taking part (correction 1 unless unbiased=False or
    correction= says otherwise; NaN where no more than `correction` elements take part).
    Integer inputs give float32."""
    return _var("masked.var", input, dim, unbiased, correction, keepdim, dtype, mask)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """The square root of masked.var."""
    return sqrt(_var("masked.std", input, dim, unbiased, correction, keepdim, dtype, mask))


# ---------------------------------------------------------------- normalizations


def softmax(input, dim, *, dtype=None, mask=None):
    """softmax along dim over the elements taking part; masked-out elements give 0 (NaN in a
    fully masked-out slice)."""
    m = _mask("masked.softmax", input, mask)
    dim = _one_dim("masked.softmax", input, dim)
    return _softmax(_fill(input, m, -math.inf), axis=dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax along dim over the elements taking part; masked-out elements give -inf
    (NaN in a fully masked-out slice)."""
    m = _mask("masked.log_softmax", input, mask)
    dim = _one_dim("masked.log_softmax", input, dim)
    return _log_softmax(_fill(input, m, -math.inf), axis=dim, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmax(-input) along dim over the elements taking part; masked-out elements give 0."""
    m = _mask("masked.softmin", input, mask)
    dim = _one_dim("masked.softmin", input, dim)
    return _softmax(-_fill(input, m, math.inf), axis=dim, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """input divided by max(its masked ord-norm along dim, eps); masked-out elements give 0."""
    m = _mask("masked.normalize", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=m)
    return _fill(input, m, 0) / maximum(nrm, real(eps, "masked.normalize: eps"))


def cumsum(input, dim, *, dtype=None, mask=None):
    """Running sums along dim, masked-out elements counting as 0."""
    m = _mask("masked.cumsum", input, mask)
    dim = _one_dim("masked.cumsum", input, dim)
    dtype = _dtype(input) if dtype is None else dtype  # (integers keep their dtype: PyTorch's)
    return _to(_cumsum(_to(_fill(input, m, 0), dtype), axis=dim), dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Running products along dim, masked-out elements counting as 1."""
    m = _mask("masked.cumprod", input, mask)
    dim = _one_dim("masked.cumprod", input, dim)
    dtype = _dtype(input) if dtype is None else dtype  # (integers keep their dtype: PyTorch's)
    return _to(_cumprod(_to(_fill(input, m, 1), dtype), dim), dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)) elementwise, each operand's masked-out elements counting
    as -inf (so both masked out gives -inf)."""
    tensors("masked.logaddexp", input=input, other=other)
    a = _fill(input, _mask("masked.logaddexp", input, input_mask), lowest_value(_dtype(input)))
    b = _fill(other, _mask("masked.logaddexp", other, other_mask), lowest_value(_dtype(other)))
    return _to(_logaddexp(a, b), _dtype(input) if dtype is None else dtype)


__all__ = [
    "sum",
    "prod",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "mean",
    "median",
    "logsumexp",
    "norm",
    "var",
    "std",
    "softmax",
    "log_softmax",
    "softmin",
    "normalize",
    "cumsum",
    "cumprod",
    "logaddexp",
]
