"""Dtypes, dtype groups, promotion and the CPU compute dtype.

Promotion follows PyTorch (which agrees with numpy 2 except where noted):

| a \\ b          | bool  | int32 | int64 | float16 | float32 | float64 |
|----------------|-------|-------|-------|---------|---------|---------|
| bool           | bool  | int32 | int64 | float16 | float32 | float64 |
| int32          | int32 | int32 | int64 | float16 | float32 | float64 |
| int64          | int64 | int64 | int64 | float16 | float32 | float64 |
| float16        | f16   | f16   | f16   | float16 | float32 | float64 |
| float32        | f32   | f32   | f32   | float32 | float32 | float64 |
| float64        | f64   | f64   | f64   | float64 | float64 | float64 |

The small integers follow numpy's (and PyTorch's) integer rule: uint8 with int8 gives int16,
either with int16 gives int16, and int32 or int64 beside them wins.

Kinds are ordered bool < int < float < complex. Two dtypes of one kind give the wider; two
kinds give the dtype of the higher kind (so int64 + float16 is float16, where numpy says
float64), except that a complex result is at least as precise as the float beside it (float64 +
complex64 is complex128, as in PyTorch and numpy).
Python scalars are "weak": they take the tensor's dtype when their kind is not higher
(`int32_tensor + 1` is int32, `float16_tensor * 0.5` is float16); otherwise the default dtype of
their kind (int64, float32), so `int_tensor * 0.5` is float32; a complex scalar gives the complex
dtype of the tensor's precision (`float32_tensor * 1j` is complex64, float64 gives complex128).

The complex dtypes are in no group but COMPLEX: an op takes them only where it opts in.
"""

import numpy as np

from .errors import DTypeError

bool_ = np.dtype(np.bool_)
uint8 = np.dtype(np.uint8)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

FLOATS = (float16, float32, float64)
INTS = (uint8, int8, int16, int32, int64)
NUMERIC = INTS + FLOATS
ALL = (bool_,) + NUMERIC
COMPLEX = (complex64, complex128)  # opted into by the ops that take them (never in ALL)

DEFAULT_INT = int64


class _DefaultFloat:
    """The default float dtype as a value to pass on (an op attr's default, a `dtype=`
    default): it stands for whatever `default_float()` is when it is used."""

    def __repr__(self) -> str:
        return "the default float dtype"


DEFAULT = _DefaultFloat()
_default_float = float32  # what Python floats and float creation ops give: set_default_float


def default_float() -> np.dtype:
    """The dtype of tensors made from Python floats and of float creation ops without a dtype
    (float32 unless set_default_dtype changed it)."""
    return _default_float


def set_default_float(d) -> None:
    """Make `d`, float32 or float64, the default float dtype. float16 is refused: numba has no
    CPU float16 arithmetic, so every op would compute through float32 copies."""
    global _default_float
    d = as_dtype(d)
    if d not in (float32, float64):
        raise DTypeError(f"the default float dtype must be float32 or float64, not {d}")
    _default_float = d


SHORT = {bool_: "bool", int32: "i32", int64: "i64", float16: "f16", float32: "f32", float64: "f64"}
SHORT.update({uint8: "u8", int8: "i8", int16: "i16"})
SHORT.update({complex64: "c64", complex128: "c128"})

# numba's CPU target has no float16 arithmetic: store it, compute in float32.
CPU_COMPUTE = {float16: float32}

# numpy dtypes accepted by nbflow.tensor() and mapped onto a supported one (a copy is made).
_WIDEN = {
    np.dtype(np.uint16): int32,
    np.dtype(np.uint32): int64,
    np.dtype(np.uint64): int64,
}

_KIND = {
    bool_: 0,
    uint8: 1,
    int8: 1,
    int16: 1,
    int32: 1,
    int64: 1,
    float16: 2,
    float32: 2,
    float64: 2,
    complex64: 3,
    complex128: 3,
}
# the complex dtype of a real dtype's precision, and the real dtype of a complex one's
_TO_COMPLEX = {float16: complex64, float32: complex64, float64: complex128}
_TO_REAL = {complex64: float32, complex128: float64}


def as_dtype(d) -> np.dtype:
    """The supported numpy dtype for `d` (a dtype, a type, or a name like 'float32' or 'f32');
    None or DEFAULT: the default float dtype, as PyTorch's dtype=None (numpy's would be
    float64 whatever the default)."""
    if d is None or d is DEFAULT:
        return _default_float
    if isinstance(d, str) and d in _BY_SHORT:
        return _BY_SHORT[d]
    try:
        dt = np.dtype(d)
    except TypeError as e:
        raise DTypeError(f"not a dtype: {d!r}") from e
    if dt not in _KIND:
        names = ", ".join(str(x) for x in ALL + COMPLEX)
        raise DTypeError(f"dtype {dt} is not supported (supported: {names})")
    return dt


_BY_SHORT = {v: k for k, v in SHORT.items()}


def widen(dt: np.dtype) -> np.dtype:
    """The supported dtype a numpy array of dtype `dt` converts to."""
    return _WIDEN.get(dt, dt)


def kind(dt: np.dtype) -> int:
    """0 bool, 1 integer, 2 float; a numpy array's dtype nbflow widens (int8, uint8, ...) as
    the one it becomes, any other a DTypeError (composites read a numpy input's dtype before
    an op converts it: a KeyError named nothing)."""
    try:
        return _KIND[dt]
    except KeyError:
        return _KIND[as_dtype(widen(np.dtype(dt)))]


def is_float(dt: np.dtype) -> bool:
    return kind(dt) == 2


def is_complex(dt: np.dtype) -> bool:
    return dt.kind == "c"


def differentiable(dt: np.dtype) -> bool:
    """Whether values of dtype `dt` can carry gradients: float and complex."""
    return dt.kind in "fc"


def to_complex(dt: np.dtype) -> np.dtype:
    """The complex dtype holding `dt`'s values at its precision (float64: complex128; others:
    the default float's complex)."""
    return dt if dt.kind == "c" else _TO_COMPLEX.get(dt, _TO_COMPLEX[_default_float])


def to_real(dt: np.dtype) -> np.dtype:
    """The real dtype of a complex dtype's parts (complex64: float32); a real dtype itself."""
    return _TO_REAL.get(dt, dt)


def promote_pair(a: np.dtype, b: np.dtype) -> np.dtype:
    if a == b:
        return a
    ka, kb = _KIND[a], _KIND[b]
    if ka != kb:
        high, low = (a, b) if ka > kb else (b, a)
        if high.kind == "c" and low == float64:  # float64 + complex64: complex128
            return complex128
        return high
    if ka == 1:  # integers: numpy's rule, as PyTorch's (uint8 with int8 gives int16)
        return np.promote_types(a, b)
    return a if a.itemsize >= b.itemsize else b


def promote(dts, weak=None) -> np.dtype:
    """Result dtype of tensors with dtypes `dts` and `weak` Python-scalar dtypes."""
    result = None
    for d in dts:
        result = d if result is None else promote_pair(result, d)
    for w in weak or ():
        # a weak scalar only matters when its kind is higher than what the tensors have
        if result is None or _KIND[w] > _KIND[result]:
            if _KIND[w] == 3:  # a complex scalar: complex at the tensors' precision
                result = to_complex(_default_float if result is None else result)
            else:
                result = (bool_, DEFAULT_INT, _default_float)[_KIND[w]]
    return result


def scalar_dtype(value) -> np.dtype:
    """The weak dtype of a Python scalar."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return DEFAULT_INT
    if isinstance(value, (float, np.floating)):
        return _default_float
    if isinstance(value, (complex, np.complexfloating)):
        return to_complex(_default_float)
    raise DTypeError(f"not a number: {value!r} of type {type(value).__name__}")


def scalar(value, dtype: np.dtype):
    """`value` as a numpy scalar of `dtype`; DTypeError when it cannot be one (an infinity or
    NaN into an integer, 2**40 into int32), instead of an OverflowError or a wrapped value."""
    dtype = np.dtype(dtype)
    if isinstance(value, (complex, np.complexfloating)) and dtype.kind != "c":
        raise DTypeError(f"the complex number {value} cannot be stored in {dtype}")
    if dtype.kind not in "iu":
        return dtype.type(value)
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        raise DTypeError(f"{value} cannot be stored in {dtype}")
    info = np.iinfo(dtype)
    if not info.min <= int(value) <= info.max:
        raise DTypeError(f"{value} is out of range for {dtype} [{info.min}, {info.max}]")
    return dtype.type(int(value))
