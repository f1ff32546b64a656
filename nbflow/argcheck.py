"""Checks of hyperparameters (the numbers, sizes and choices a function or layer takes besides its
tensors): each returns the value normalised or raises an nbflow error naming the function and the
argument (issue 42, 6), where float(), int(), a comparison or numpy deep inside would raise a
builtin TypeError or ValueError naming neither.

- `real(v, what)`: a real number (a Python or numpy int or float, or a 0-d real tensor/array),
  as a float; else AttrError (a TypeError).
- `integer(v, what)`: an int (core.as_int: a float, even 2.0, or a bool is refused).
- `integers(v, what)`: an int or a sequence of ints, as a tuple.
- `choice(v, options, what)`: one of `options`; else DomainError (a ValueError, as PyTorch's).
- `flag(v, what)`: v's truth (any value with one, as PyTorch's flags take); else AttrError.
- `tensors(name, arg=v, ...)`: each a tensor (or an array or a number); else ArgumentError.
- `within_budget(name, shape, dtype)`: ResourceExhaustedError for an array over the memory
  budget, before numpy is asked for it (its MemoryError or ValueError names nothing).
- `tensor_list`, `tensor_args`, `number`, `known_size`: the composite ops' checks of a list of
  tensors, of f(a, b) or f([a, b]), of a number, of a dim's size known before running.
"""

from __future__ import annotations

import math

import numpy as np

from .core import STATE, UNKNOWN, as_int
from .core.errors import ArgumentError, AttrError, DomainError, ResourceExhaustedError, ShapeError
from .core.op import is_value

__all__ = ["real", "integer", "integers", "choice", "flag", "shown", "tensors", "within_budget"]
__all__ += ["number", "known_size", "tensor_list", "tensor_args"]


def shown(value) -> str:
    """The type and a short repr of value, for messages."""
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"


def real(value, what: str) -> float:
    """value as a float: a Python or numpy real number (a bool counts, as for float()), or a 0-d
    tensor or array of a real dtype; anything else raises AttrError naming `what`."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    if getattr(value, "ndim", None) == 0 and kind in ("b", "i", "u", "f"):
        return float(value)
    raise AttrError(f"{what} must be a real number, got {shown(value)}")


def optional_real(value, what: str) -> float | None:
    return None if value is None else real(value, what)


def integer(value, what: str, low: int | None = None) -> int:
    """value as an int (core.as_int: an int, a numpy integer, a 0-d integer tensor; a float is
    refused, not truncated); with `low`, one below it raises DomainError."""
    n = as_int(value, what)
    if low is not None and n < low:
        raise DomainError(f"{what} must be >= {low}, got {n}")
    return n


def finite(value, what: str) -> float:
    """value as a finite float (real): a NaN or an infinity raises DomainError."""
    x = real(value, what)
    if not math.isfinite(x):
        raise DomainError(f"{what} must be finite, got {x}")
    return x


def integers(value, what: str) -> tuple[int, ...]:
    """An int or a sequence of ints (a list, a tuple, a 1-d integer tensor) as a tuple of ints;
    anything else (a string, a float, a nested list, None) raises AttrError naming `what`."""
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise AttrError(f"{what} must be an int or a sequence of ints, got {shown(value)}")
    if getattr(value, "ndim", 1) == 0 or isinstance(value, (int, np.integer)):
        return (as_int(value, what),)
    try:
        items = list(value)
    except TypeError:
        raise AttrError(
            f"{what} must be an int or a sequence of ints, got {shown(value)}"
        ) from None
    return tuple(as_int(v, f"{what}[{i}]") for i, v in enumerate(items))


def choice(value, options, what: str, error=DomainError):
    """value if it is one of options (strings, numbers, None), else `error` (DomainError, a
    ValueError, as PyTorch's; AttrError where the function raised that) naming `what` and the
    options. A tensor, an array or a list is never one (no elementwise ==)."""
    if _hashable_scalar(value):
        for o in options:
            if isinstance(o, str) != isinstance(value, str):
                continue
            if isinstance(o, bool) != isinstance(value, (bool, np.bool_)):
                continue
            if value == o:
                return value
    names = ", ".join(repr(o) for o in options)
    raise error(f"{what} must be one of {names}, got {shown(value)}")


def flag(value, what: str) -> bool:
    """value's truth (a flag takes any value, as PyTorch's do), or an AttrError naming `what`
    for a value with no single truth value (an array or a tensor of several elements), where
    bool() would raise a ValueError naming neither."""
    try:
        return bool(value)
    except (TypeError, ValueError):
        raise AttrError(f"{what} must be a bool, got {shown(value)}") from None


def _hashable_scalar(value) -> bool:
    return value is None or isinstance(value, (str, int, float, np.integer, np.floating))


def tensors(name: str, **values) -> None:
    """Raise ArgumentError naming `name` and the argument for a value that is not a tensor
    (an nbflow tensor or graph value, a numpy array or a real number, which ops take as
    constants): a list, a string, a Module ... would otherwise fail inside an operator with
    a TypeError naming neither."""
    for arg, v in values.items():
        if is_value(v) or isinstance(v, np.ndarray):
            continue
        if isinstance(v, (int, float, np.integer, np.floating)):
            continue
        raise ArgumentError(f"{name}: argument '{arg}' must be a tensor, got {shown(v)}")


def within_budget(name: str, shape, dtype) -> None:
    """Refuse an array of `shape` and `dtype` over the memory budget (nbflow.set_memory_budget)
    with ResourceExhaustedError naming `name`, before it is made: a result built column by
    column (linalg.vander's N = 2**40 looped for hours) or an index array numpy is asked for
    (np.arange of 2**62 raised a ValueError naming nothing). A shape with an unknown dim passes.
    """
    if UNKNOWN in shape:
        return
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes > STATE.memory_budget:
        raise ResourceExhaustedError(
            f"{name}: a result of shape {tuple(shape)} {np.dtype(dtype)} needs {nbytes} bytes, "
            f"over the memory budget of {STATE.memory_budget} bytes (nbflow.set_memory_budget)"
        )


def tensor_list(name, tensors):
    """PyTorch's `tensors` argument: a list or tuple of tensors, each checked."""
    if not isinstance(tensors, (list, tuple)):
        raise ArgumentError(
            f"{name}: tensors must be a list or tuple of tensors, got {type(tensors).__name__}"
        )
    return _checked(name, tuple(tensors))


def tensor_args(name, tensors):
    """f(a, b) and f([a, b]) both mean the tensors a and b."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return _checked(name, tensors)


def _checked(name, tensors):
    for i, x in enumerate(tensors):
        if not all(hasattr(x, a) for a in ("shape", "ndim", "dtype")):  # (an array too)
            raise ArgumentError(f"{name}: tensors[{i}] must be a tensor, got {type(x).__name__}")
    return tensors


def number(name, arg, v):
    """v, a Python or numpy real number (not a bool); else AttrError."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise AttrError(f"{name}: {arg} must be a number, got {v!r}")
    return v


def known_size(name, x, dim):
    """The size of x's dim `dim`, which must be known (not a graph var's -1)."""
    if x.ndim == 0:
        raise ShapeError(f"{name}: needs at least one dim, got a 0-d tensor")
    n = x.shape[dim]
    if n == UNKNOWN:
        raise ShapeError(f"{name}: dim {dim} of the input (shape {x.shape}) must be known")
    return n
