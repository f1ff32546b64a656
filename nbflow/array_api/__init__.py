"""The Python Array API standard (2024.12) over nbflow tensors.

`import nbflow.array_api as xp` (or `x.__array_namespace__()`) gives a namespace that code
written for the standard (scikit-learn's array_api_dispatch, SciPy, array-api-compat users)
runs on: its arrays are nbflow Tensors, its dtypes nbflow's (bool, int32, int64, float32,
float64), and its functions thin wrappers over nbflow's ops, so autograd records through them.
What nbflow lacks is absent rather than emulated: the unsigned, int8/int16 and complex dtypes
and the `fft` extension. The standard's own test suite runs against it (tests/test_array_api.py
with its commented xfail list, tests/array_api_xfails.txt).

Functions whose results are integers or have data-dependent shapes (unique_*, nonzero,
searchsorted, argsort, eye, ...) compute through numpy on the CPU: they have no gradient.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from ..core import dtypes as _dt
from ..core.errors import ArgumentError as _ArgumentError
from ..core.errors import DomainError as _DomainError
from ..core.errors import OutOfRangeError as _OutOfRangeError
from ..core.errors import ShapeError as _ShapeError
from ..dlpack import from_dlpack as _from_dlpack
from ..eager.tensor import Tensor as _Tensor

_nb = __import__("nbflow")

__array_api_version__ = "2024.12"
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

# ------------------------------------------------------------------ constants and dtypes

e, inf, nan, pi = math.e, math.inf, math.nan, math.pi
newaxis = None

bool = _dt.bool_
int32, int64 = _dt.int32, _dt.int64
float32, float64 = _dt.float32, _dt.float64
_REAL_FLOATS = (float32, float64)
_INTS = (int32, int64)
_DTYPES = {"bool": bool, "int32": int32, "int64": int64, "float32": float32, "float64": float64}


def namespace(api_version=None):
    """This module, for Tensor.__array_namespace__ (api_version: a version it conforms to)."""
    if api_version is not None and api_version not in _VERSIONS:
        raise _DomainError(f"nbflow.array_api conforms to {_VERSIONS}, not {api_version!r}")
    import sys

    return sys.modules[__name__]


def _default_float():
    return np.dtype(_dt.default_float())


def _arr(x) -> _Tensor:
    if isinstance(x, _Tensor):
        return x
    raise _ArgumentError(f"expected an nbflow Tensor, got {type(x).__name__}")


def _dtype(d):
    if d is None:
        return None
    dd = np.dtype(d)
    if dd not in _DTYPES.values() and dd != _dt.float16:
        raise _ArgumentError(f"nbflow.array_api has no dtype {d}")
    return dd


def _device(device):
    if device is None or device == "cpu":
        return None
    return device


def _place(t, device):
    return t if device is None else t.to(device)


# ------------------------------------------------------------------ info


class _Info:
    """__array_namespace_info__()'s answers."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return "cpu"

    def default_dtypes(self, *, device=None):
        return {
            "real floating": _default_float(),
            "complex floating": None,
            "integral": int64,
            "indexing": int64,
        }

    def devices(self):
        return ["cpu"]

    def dtypes(self, *, device=None, kind=None):
        if kind is None:
            return dict(_DTYPES)
        return {n: d for n, d in _DTYPES.items() if isdtype(d, kind)}


def __array_namespace_info__():
    return _Info()


# ------------------------------------------------------------------ data type functions


def isdtype(dtype, kind):
    dtype = np.dtype(dtype)
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if not isinstance(kind, str):
        return dtype == np.dtype(kind)
    if kind == "bool":
        return dtype == bool
    if kind == "signed integer":
        return dtype.kind == "i"
    if kind == "unsigned integer":
        return dtype.kind == "u"
    if kind == "integral":
        return dtype.kind in "iu"
    if kind == "real floating":
        return dtype.kind == "f"
    if kind == "complex floating":
        return dtype.kind == "c"
    if kind == "numeric":
        return dtype.kind in "iufc"
    raise _DomainError(f"unknown dtype kind {kind!r}")


_PROMOTE = {
    (bool, bool): bool,
    (int32, int32): int32,
    (int32, int64): int64,
    (int64, int64): int64,
    (float32, float32): float32,
    (float32, float64): float64,
    (float64, float64): float64,
}


def _promote(a, b):
    a, b = np.dtype(a), np.dtype(b)
    r = _PROMOTE.get((a, b)) or _PROMOTE.get((b, a))
    if r is None:
        r = np.promote_types(a, b)  # mixed kinds: beyond the standard, numpy's answer
    return r


def result_type(*arrays_and_dtypes):
    dtypes, scalars = [], []
    for a in arrays_and_dtypes:
        if isinstance(a, builtins.bool | int | float | complex):
            scalars.append(a)
        elif isinstance(a, _Tensor):
            dtypes.append(a.dtype)
        else:
            dtypes.append(np.dtype(a))
    if not dtypes:
        raise _ArgumentError("result_type needs at least one array or dtype")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote(out, d)
    for s in scalars:
        if isinstance(s, builtins.bool):
            continue
        if isinstance(s, int) and out == bool:
            out = int64
        elif isinstance(s, float) and out.kind != "f":
            out = _default_float()
        elif isinstance(s, complex):
            raise _ArgumentError("nbflow has no complex dtypes")
    return out


def can_cast(from_, to, /):
    f = from_.dtype if isinstance(from_, _Tensor) else np.dtype(from_)
    to = np.dtype(to)
    if f == to:
        return True
    if f == bool:
        return True
    if f.kind in "iu" and to.kind in "iu":
        return np.can_cast(f, to)
    if f.kind in "iu" and to.kind == "f":
        return builtins.bool(np.can_cast(f, to))  # beyond the standard: numpy's safe casts
    if f.kind == "f" and to.kind == "f":
        return f.itemsize <= to.itemsize
    return False


finfo_object = namedtuple("finfo_object", "bits eps max min smallest_normal dtype")
iinfo_object = namedtuple("iinfo_object", "bits max min dtype")


def finfo(type, /):
    d = type.dtype if isinstance(type, _Tensor) else np.dtype(type)
    f = np.finfo(d)
    return finfo_object(
        int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), d
    )


def iinfo(type, /):
    d = type.dtype if isinstance(type, _Tensor) else np.dtype(type)
    i = np.iinfo(d)
    return iinfo_object(int(i.bits), int(i.max), int(i.min), d)


def astype(x, dtype, /, *, copy=True, device=None):
    x = _arr(x)
    dtype = _dtype(dtype)
    if x.dtype == dtype and not copy:
        out = x
    elif x.dtype == dtype:
        out = _nb.clone(x)
    else:
        out = _nb.astype(x, dtype)
    return _place(out, _device(device))


# ------------------------------------------------------------------ creation


def _scalar_dtype(value):
    if isinstance(value, builtins.bool | np.bool_):
        return bool
    if isinstance(value, int | np.integer):
        return int64
    if isinstance(value, float | np.floating):
        return _default_float()
    if isinstance(value, complex):
        raise _ArgumentError("nbflow has no complex dtypes")
    if isinstance(value, _Tensor):
        return value.dtype
    raise _ArgumentError(f"a fill value must be a Python scalar, got {type(value).__name__}")


def _shape(shape):
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _new(a: np.ndarray, device=None) -> _Tensor:
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)  # (which would make a 0-d array 1-d)
    return _place(_Tensor(a.view(np.ndarray)), _device(device))


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    dtype = _dtype(dtype)
    if isinstance(obj, _Tensor):
        out = obj
        if dtype is not None and out.dtype != dtype:
            if copy is False:
                raise _DomainError("asarray: a dtype change needs a copy, and copy=False")
            out = _nb.astype(out, dtype)
        elif copy:
            out = _nb.clone(out)
        return _place(out, _device(device))
    if (
        hasattr(obj, "__dlpack__")
        and not isinstance(obj, np.generic)
        and (not isinstance(obj, np.ndarray) or obj.dtype in _DTYPES.values())
    ):
        out = _from_dlpack(obj, copy=copy)
        return asarray(out, dtype=dtype, device=device, copy=False if copy else None)
    if isinstance(obj, np.ndarray | np.generic):
        a = np.asarray(obj)
        if copy is False and (dtype is not None and a.dtype != dtype):
            raise _DomainError("asarray: a dtype change needs a copy, and copy=False")
        if dtype is None and a.dtype not in _DTYPES.values():
            raise _ArgumentError(f"asarray: nbflow has no dtype {a.dtype}")
        a = a.astype(dtype or a.dtype, copy=copy is not False)
        return _new(a, device)
    if copy is False and not isinstance(obj, memoryview):
        raise _DomainError("asarray: a Python object can only be copied, and copy=False")
    if dtype is None:
        flat = _flatten(obj)
        if flat and builtins.all(isinstance(v, _Tensor) for v in flat):
            return _nb.stack([asarray(v) for v in obj]) if isinstance(obj, list | tuple) else obj
        if builtins.any(isinstance(v, complex) for v in flat):
            raise _ArgumentError("nbflow has no complex dtypes")
        if builtins.any(isinstance(v, float) for v in flat):
            dtype = _default_float()
        elif builtins.any(isinstance(v, builtins.bool) for v in flat) and builtins.all(
            isinstance(v, builtins.bool) for v in flat
        ):
            dtype = bool
        elif flat:
            dtype = int64
        else:
            dtype = _default_float()
    a = np.array(_unwrap(obj), dtype=dtype)
    return _new(a, device)


def _flatten(obj):
    if isinstance(obj, list | tuple):
        out = []
        for v in obj:
            out.extend(_flatten(v))
        return out
    return [obj]


def _unwrap(obj):
    if isinstance(obj, list | tuple):
        return [_unwrap(v) for v in obj]
    if isinstance(obj, _Tensor):
        return obj.numpy()
    return obj


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    if stop is None:
        start, stop = 0, start
    dtype = _dtype(dtype)
    if dtype is None:
        isint = builtins.all(isinstance(v, int) for v in (start, stop, step))
        dtype = int64 if isint else _default_float()
    if step == 0:
        raise _DomainError("arange: step must not be 0")
    n = builtins.max(math.ceil((stop - start) / step), 0)
    a = start + step * np.arange(n, dtype=np.float64 if dtype.kind == "f" else np.int64)
    return _new(a.astype(dtype), device)


def empty(shape, *, dtype=None, device=None):
    return _new(np.empty(_shape(shape), _dtype(dtype) or _default_float()), device)


def empty_like(x, /, *, dtype=None, device=None):
    return empty(x.shape, dtype=dtype or x.dtype, device=device)


def zeros(shape, *, dtype=None, device=None):
    return _new(np.zeros(_shape(shape), _dtype(dtype) or _default_float()), device)


def zeros_like(x, /, *, dtype=None, device=None):
    return zeros(x.shape, dtype=dtype or x.dtype, device=device)


def ones(shape, *, dtype=None, device=None):
    return _new(np.ones(_shape(shape), _dtype(dtype) or _default_float()), device)


def ones_like(x, /, *, dtype=None, device=None):
    return ones(x.shape, dtype=dtype or x.dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None):
    if isinstance(fill_value, _Tensor):
        fill_value = fill_value.item()
    dtype = _dtype(dtype) or _scalar_dtype(fill_value)
    return _new(np.full(_shape(shape), fill_value, dtype), device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    return full(x.shape, fill_value, dtype=dtype or x.dtype, device=device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    return _new(np.eye(n_rows, n_cols, k, dtype=_dtype(dtype) or _default_float()), device)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    dtype = _dtype(dtype) or _default_float()
    return _new(np.linspace(start, stop, num, endpoint=endpoint).astype(dtype), device)


def from_dlpack(x, /, *, device=None, copy=None):
    return _from_dlpack(x, device=device, copy=copy)


def meshgrid(*arrays, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise _DomainError(f"meshgrid: indexing is 'xy' or 'ij', not {indexing!r}")
    arrays = [_arr(a) for a in arrays]
    if indexing == "xy" and len(arrays) >= 2:
        out = list(_nb.meshgrid(arrays[1], arrays[0], *arrays[2:], indexing="ij"))
        out[0], out[1] = out[1], out[0]
        return out
    return list(_nb.meshgrid(*arrays, indexing="ij"))


def tril(x, /, *, k=0):
    return _nb.tril(_arr(x), k)


def triu(x, /, *, k=0):
    return _nb.triu(_arr(x), k)


# ------------------------------------------------------------------ elementwise


def _unary(name, fn=None):
    fn = fn or getattr(_nb, name)

    def f(x, /):
        return fn(_arr(x))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's {name}(x), nbflow's {getattr(fn, '__name__', name)}."
    return f


def _binary_args(x1, x2):
    if not isinstance(x1, _Tensor) and not isinstance(x2, _Tensor):
        raise _ArgumentError("at least one of the arguments must be an array")
    if not isinstance(x1, _Tensor):
        x1 = _scalar_like(x1, x2)
    if not isinstance(x2, _Tensor):
        x2 = _scalar_like(x2, x1)
    return x1, x2


def _scalar_like(value, other):
    """A Python scalar as a 0-d tensor of the array's dtype (the standard's weak scalars)."""
    d = other.dtype
    if isinstance(value, float) and d.kind != "f":
        d = _default_float()
    elif isinstance(value, int) and not isinstance(value, builtins.bool) and d == bool:
        d = int64
    return _Tensor(np.asarray(value, dtype=d))


def _binary(name, fn=None):
    fn = fn or getattr(_nb, name)

    def f(x1, x2, /):
        return fn(*_binary_args(x1, x2))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's {name}(x1, x2), nbflow's {getattr(fn, '__name__', name)}."
    return f


for _name in """abs acos acosh asin asinh atan atanh ceil cos cosh exp expm1 floor isfinite isinf
isnan log log1p log2 log10 logical_not negative positive sign signbit sin sinh sqrt square tan
tanh trunc reciprocal""".split():
    globals()[_name] = _unary(_name)

for _name in """add atan2 bitwise_and bitwise_or bitwise_xor copysign equal greater greater_equal
hypot less less_equal logaddexp logical_and logical_or logical_xor maximum minimum multiply
nextafter not_equal subtract""".split():
    globals()[_name] = _binary(_name)

equal = _binary("equal", _nb.eq)  # (nbflow.equal is PyTorch's: one bool for the whole)

bitwise_invert = _unary("bitwise_invert", _nb.bitwise_not)
bitwise_left_shift = _binary("bitwise_left_shift")
bitwise_right_shift = _binary("bitwise_right_shift")
floor_divide = _binary("floor_divide")
remainder = _binary("remainder")
pow = _binary("pow")
round = _unary("round")


def divide(x1, x2, /):
    return _nb.divide(*_binary_args(x1, x2))


def clip(x, /, min=None, max=None):
    x = _arr(x)
    if min is None and max is None:
        return _nb.clone(x)
    out = x
    if min is not None:
        out = _nb.maximum(out, min if isinstance(min, _Tensor) else _scalar_like(min, x))
    if max is not None:
        out = _nb.minimum(out, max if isinstance(max, _Tensor) else _scalar_like(max, x))
    return out.astype(x.dtype) if out.dtype != x.dtype else out


def conj(x, /):
    return _nb.clone(_arr(x))


def real(x, /):
    return _nb.clone(_arr(x))


def imag(x, /):
    return _nb.zeros_like(_arr(x))


# ------------------------------------------------------------------ statistical and utility


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, int | np.integer):
        return (int(axis),)
    return tuple(int(a) for a in axis)


def _reduce(fn, x, axis, keepdims, **kw):
    x = _arr(x)
    axes = _axes(axis)
    if axes == ():
        return _nb.clone(x)
    return fn(x, axis=axes, keepdims=keepdims, **kw)


def max(x, /, *, axis=None, keepdims=False):
    return _reduce(_nb.amax, x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):
    return _reduce(_nb.amin, x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    return _reduce(_nb.mean, x, axis, keepdims)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return _dtype(dtype)
    if x.dtype == bool or x.dtype.kind in "iu":
        return int64
    return x.dtype


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    x = _arr(x)
    d = _sum_dtype(x, dtype)
    if x.dtype != d:
        x = _nb.astype(x, d)
    out = _reduce(_nb.sum, x, axis, keepdims)
    return out if out.dtype == d else _nb.astype(out, d)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    x = _arr(x)
    d = _sum_dtype(x, dtype)
    if x.dtype != d:
        x = _nb.astype(x, d)
    out = _reduce(_nb.prod, x, axis, keepdims)
    return out if out.dtype == d else _nb.astype(out, d)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    x = _arr(x)
    axes = _axes(axis)
    axes_n = tuple(range(x.ndim)) if axes is None else axes
    n = math.prod(x.shape[a] for a in axes_n)
    m = _nb.mean(x, axis=axes_n, keepdims=True) if axes_n else x
    d = x - m
    s = _nb.sum(d * d, axis=axes_n, keepdims=keepdims) if axes_n else d * d
    return s / _scalar_like(float(n - correction), s)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _nb.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _cumulative(fn, x, axis, dtype, include_initial, initial):
    x = _arr(x)
    if axis is None:
        if x.ndim > 1:
            raise _ShapeError("cumulative functions need an axis for arrays of 2 or more dims")
        axis = 0
    d = _sum_dtype(x, dtype)
    if x.dtype != d:
        x = _nb.astype(x, d)
    if x.ndim == 0:
        raise _ShapeError("cumulative functions need an array of 1 or more dims")
    out = fn(x, axis) if x.shape[axis % x.ndim] else x
    if out.dtype != d:
        out = _nb.astype(out, d)
    if include_initial:
        shape = list(x.shape)
        shape[axis % x.ndim] = 1
        out = _nb.concat(full(tuple(shape), initial, dtype=d), out, axis=axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_nb.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_nb.cumprod, x, axis, dtype, include_initial, 1)


def all(x, /, *, axis=None, keepdims=False):
    x = _arr(x)
    if _axes(axis) == ():
        return _nb.astype(x, bool)
    return _nb.all(x, axis=_axes(axis), keepdims=keepdims)


def any(x, /, *, axis=None, keepdims=False):
    x = _arr(x)
    if _axes(axis) == ():
        return _nb.astype(x, bool)
    return _nb.any(x, axis=_axes(axis), keepdims=keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    x = _arr(x)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    for _ in range(n):
        k = x.shape[axis % x.ndim]
        x = take(x, arange(1, k), axis=axis) - take(x, arange(0, k - 1), axis=axis)
    return x


# ------------------------------------------------------------------ searching and sorting


def _arg_extremum(fn, x, axis, keepdims):
    """fn (nbflow's argmax or argmin) with the standard's axis=None: over the flattened x."""
    x = _arr(x)
    if axis is None:
        out = fn(_nb.reshape(x, -1), axis=0)
        return _nb.reshape(out, (1,) * x.ndim) if keepdims else out
    return fn(x, axis=axis, keepdims=keepdims)


def argmax(x, /, *, axis=None, keepdims=False):
    return _arg_extremum(_nb.argmax, x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    return _arg_extremum(_nb.argmin, x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    x = _arr(x)
    return sum(
        _nb.astype(_nb.not_equal(x, _scalar_like(0, x)), int64), axis=axis, keepdims=keepdims
    )


def nonzero(x, /):
    a = _arr(x).numpy()
    if a.ndim == 0:
        raise _ShapeError("nonzero of a 0-d array")
    return tuple(_new(i.astype(np.int64)) for i in np.nonzero(a))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    a, v = _arr(x1).numpy(), _arr(x2).numpy() if isinstance(x2, _Tensor) else x2
    s = None if sorter is None else _arr(sorter).numpy()
    return _new(np.asarray(np.searchsorted(a, v, side=side, sorter=s), dtype=np.int64))


def where(condition, x1, x2, /):
    condition = _arr(condition)
    x1, x2 = _binary_args(x1, x2)
    return _nb.where(condition, x1, x2)


def _sort_keys(a, axis, descending, stable):
    if descending:
        # stable descending: reverse, stable ascending sort of the negation's order, reverse
        flipped = np.flip(a, axis)
        idx = np.argsort(flipped, axis=axis, kind="stable")
        idx = np.flip(idx, axis)
        n = a.shape[axis]
        return (n - 1) - idx
    return np.argsort(a, axis=axis, kind="stable" if stable else "quicksort")


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    a = _arr(x).numpy()
    return _new(_sort_keys(a, axis, descending, stable).astype(np.int64))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    x = _arr(x)
    if x.ndim == 0:
        return _nb.clone(x)
    idx = argsort(x, axis=axis, descending=descending, stable=stable)
    return take_along_axis(x, idx, axis=axis)


# ------------------------------------------------------------------ set functions

UniqueAllResult = namedtuple("UniqueAllResult", "values indices inverse_indices counts")
UniqueCountsResult = namedtuple("UniqueCountsResult", "values counts")
UniqueInverseResult = namedtuple("UniqueInverseResult", "values inverse_indices")


def _unique(x, **kw):
    a = _arr(x).numpy()
    return np.unique(a.reshape(-1), equal_nan=False, **kw), a.shape


def unique_all(x, /):
    (v, i, inv, c), shape = _unique(x, return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(
        _new(v),
        _new(i.astype(np.int64)),
        _new(inv.reshape(shape).astype(np.int64)),
        _new(c.astype(np.int64)),
    )


def unique_counts(x, /):
    (v, c), _ = _unique(x, return_counts=True)
    return UniqueCountsResult(_new(v), _new(c.astype(np.int64)))


def unique_inverse(x, /):
    (v, inv), shape = _unique(x, return_inverse=True)
    return UniqueInverseResult(_new(v), _new(inv.reshape(shape).astype(np.int64)))


def unique_values(x, /):
    v, _ = _unique(x)
    return _new(v)


# ------------------------------------------------------------------ manipulation


def broadcast_arrays(*arrays):
    return list(_nb.broadcast_tensors(*[_arr(a) for a in arrays]))


def broadcast_to(x, /, shape):
    return _nb.broadcast_to(_arr(x), tuple(shape))


def concat(arrays, /, *, axis=0):
    arrays = [_arr(a) for a in arrays]
    if axis is None:
        arrays = [_nb.reshape(a, (-1,)) for a in arrays]
        axis = 0
    d = arrays[0].dtype
    for a in arrays[1:]:
        d = _promote(d, a.dtype)
    arrays = [a if a.dtype == d else _nb.astype(a, d) for a in arrays]
    return _nb.concat(*arrays, axis=axis)


def expand_dims(x, /, axis=0):
    x = _arr(x)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise _OutOfRangeError(f"expand_dims: axis {axis} is out of range for {x.ndim} dims")
    return _nb.unsqueeze(x, axis if axis >= 0 else x.ndim + 1 + axis)


def flip(x, /, *, axis=None):
    x = _arr(x)
    axes = _axes(axis)
    if axes == ():
        return _nb.clone(x)
    return _nb.flip(x, axes)


def moveaxis(x, source, destination, /):
    return _nb.moveaxis(_arr(x), source, destination)


def permute_dims(x, /, axes):
    return _nb.permute(_arr(x), *axes)


def repeat(x, repeats, /, *, axis=None):
    x = _arr(x)
    if axis is None:
        x, axis = _nb.reshape(x, (-1,)), 0
    return _nb.repeat_interleave(x, repeats, dim=axis)


def reshape(x, /, shape, *, copy=None):
    x = _arr(x)
    if copy:
        return _nb.clone(_nb.reshape(x, tuple(shape)))
    return _nb.reshape(x, tuple(shape))


def roll(x, /, shift, *, axis=None):
    x = _arr(x)
    if axis is None:
        return _nb.reshape(_nb.roll(_nb.reshape(x, (-1,)), shift, 0), x.shape)
    return _nb.roll(x, shift, axis)


def squeeze(x, /, axis):
    x = _arr(x)
    axes = _axes(axis)
    for a in axes:
        if x.shape[a] != 1:
            raise _ShapeError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return _nb.squeeze(x, axes)


def stack(arrays, /, *, axis=0):
    arrays = [_arr(a) for a in arrays]
    d = arrays[0].dtype
    for a in arrays[1:]:
        d = _promote(d, a.dtype)
    return _nb.stack(*[a if a.dtype == d else _nb.astype(a, d) for a in arrays], axis=axis)


def tile(x, repetitions, /):
    return _nb.tile(_arr(x), *repetitions)


def unstack(x, /, *, axis=0):
    return tuple(_nb.unbind(_arr(x), axis))


# ------------------------------------------------------------------ indexing


def take(x, indices, /, *, axis=None):
    x = _arr(x)
    if axis is None:
        if x.ndim != 1:
            raise _ShapeError("take: axis is needed for arrays of 2 or more dims")
        axis = 0
    return _nb.index_select(x, axis, _arr(indices))


def take_along_axis(x, indices, /, *, axis=-1):
    return _nb.take_along_axis(_arr(x), _arr(indices), axis)


# ------------------------------------------------------------------ linear algebra


def matmul(x1, x2, /):
    return _nb.matmul(_arr(x1), _arr(x2))


def matrix_transpose(x, /):
    x = _arr(x)
    if x.ndim < 2:
        raise _ShapeError("matrix_transpose needs an array of 2 or more dims")
    return _nb.swapaxes(x, -1, -2)


def tensordot(x1, x2, /, *, axes=2):
    """By permute, reshape and one matmul (differentiable; empty operands give zeros)."""
    x1, x2 = _arr(x1), _arr(x2)
    if isinstance(axes, int):
        a_axes = list(range(x1.ndim - axes, x1.ndim))
        b_axes = list(range(axes))
    else:
        a_axes = [a % x1.ndim for a in axes[0]]
        b_axes = [b % x2.ndim for b in axes[1]]
    for a, b in zip(a_axes, b_axes):
        if x1.shape[a] != x2.shape[b]:
            raise _ShapeError(f"tensordot: dims {x1.shape[a]} and {x2.shape[b]} differ")
    free_a = [i for i in range(x1.ndim) if i not in a_axes]
    free_b = [i for i in range(x2.ndim) if i not in b_axes]
    k = math.prod(x1.shape[a] for a in a_axes)
    m = math.prod(x1.shape[i] for i in free_a)
    n = math.prod(x2.shape[i] for i in free_b)
    d = _promote(x1.dtype, x2.dtype)
    x1, x2 = (x if x.dtype == d else _nb.astype(x, d) for x in (x1, x2))
    out_shape = tuple(x1.shape[i] for i in free_a) + tuple(x2.shape[i] for i in free_b)
    if k == 0 or m == 0 or n == 0:
        return zeros(out_shape, dtype=d) if k == 0 and m and n else empty(out_shape, dtype=d)
    a = _nb.reshape(_nb.permute(x1, *(free_a + a_axes)), (m, k))
    b = _nb.reshape(_nb.permute(x2, *(b_axes + free_b)), (k, n))
    return _nb.reshape(_nb.matmul(a, b), out_shape)


def vecdot(x1, x2, /, *, axis=-1):
    x1, x2 = _arr(x1), _arr(x2)
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[axis] != x2.shape[axis]:
        raise _ShapeError(f"vecdot: shapes {x1.shape} and {x2.shape} differ along axis {axis}")
    d = _promote(x1.dtype, x2.dtype)
    out = _nb.sum(x1 * x2, axis=axis)
    return out if out.dtype == d else _nb.astype(out, d)


from . import linalg as linalg  # noqa: E402  (the extension, after the names it uses)

__all__ = sorted(
    n
    for n in dir()
    if not n.startswith("_") and n not in ("builtins", "math", "namedtuple", "np", "annotations")
)
