"""Initialisers (PyTorch's torch.nn.init): each fills a tensor in place, under no_grad, and
returns it. The random ones take an optional nbflow.Generator (default: the default generator,
reseeded by nbflow.manual_seed)."""

from __future__ import annotations

import math

from .. import ops
from ..core import no_grad
from ..tensor import Tensor

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _write(t: Tensor, value: Tensor) -> Tensor:
    with no_grad():
        ops.copy_(t, value)
    return t


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill t with samples from uniform[a, b)."""
    return _write(t, ops.uniform(t.shape, low=a, high=b, dtype=t.dtype, generator=generator))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill t with samples from normal(mean, std)."""
    return _write(t, ops.normal(t.shape, mean=mean, std=std, dtype=t.dtype, generator=generator))


def constant_(t: Tensor, value: float) -> Tensor:
    with no_grad():
        ops.fill_(t, value)
    return t


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "identity")
    if nonlinearity in linear or nonlinearity.startswith("conv_transpose"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def fan_in_and_fan_out(shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight laid out as PyTorch's: (out, in, *kernel)."""
    if len(shape) < 2:
        raise ValueError(f"fan in and fan out need at least 2 dims, got shape {tuple(shape)}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fan_in_and_fan_out(shape)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot: uniform(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = fan_in_and_fan_out(t.shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = fan_in_and_fan_out(t.shape)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(
    t: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He: uniform(-b, b) with b = gain * sqrt(3 / fan). With a=sqrt(5) (PyTorch's default for
    Linear and Conv weights) b = 1 / sqrt(fan_in)."""
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(t.shape, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(
    t: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    gain = calculate_gain(nonlinearity, a)
    return normal_(t, 0.0, gain / math.sqrt(_fan(t.shape, mode)), generator)
