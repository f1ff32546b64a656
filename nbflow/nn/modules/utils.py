"""Helpers the layers share: argument tuples, empty parameters and PyTorch's default init."""

from __future__ import annotations

import math

from ... import ops
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
