"""Helpers the layers share: argument tuples, empty parameters and PyTorch's default init."""

from __future__ import annotations

import math

from ... import argcheck, ops
from ...argcheck import integer, real
from ...core import as_int
from ...core.errors import AttrError
from .. import init
from .module import Parameter


def _tuple(value, n: int) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise AttrError(f"expected {n} values, got {tuple(value)}")
        return tuple(as_int(v, "a size") for v in value)
    return (as_int(value, "a size"),) * n


def _empty(*shape, dtype):
    return Parameter(ops.zeros(shape, dtype=dtype))


def _default_init(weight, bias, fan_in: int, generator) -> None:
    """PyTorch's Linear/Conv default: kaiming_uniform(a=sqrt(5)) for the weight, that is
    uniform(+-1/sqrt(fan_in)), and uniform(+-1/sqrt(fan_in)) for the bias."""
    init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
    if bias is not None:
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(bias, -bound, bound, generator)


def reals(owner, **values) -> list[float]:
    """values as floats (argcheck.real), a bad one an AttrError naming owner's class and the
    argument, where float() would raise a TypeError or ValueError naming neither."""
    return [real(v, f"{type(owner).__name__}: {k}") for k, v in values.items()]


def ints(owner, **values) -> list[int]:
    """values as ints (argcheck.integer: a float such as 1.5 is refused, not truncated)."""
    return [integer(v, f"{type(owner).__name__}: {k}") for k, v in values.items()]


def flag(owner, name: str, value) -> bool:
    """value's truth (a flag takes any, as PyTorch's), or an AttrError naming owner's class and
    the argument for a value with no single truth value (an array of several elements)."""
    return argcheck.flag(value, f"{type(owner).__name__}: {name}")
