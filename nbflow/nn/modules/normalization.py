"""LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm and CrossMapLRN2d.

CrossMapLRN2d is PyTorch's legacy forward exactly, including its window: channel c sums the
squares over [c - pre_pad + 1, c + pre_pad - 1] and always channel 0 too (the running sum never
subtracts it), one constant (C, C) matrix product. Its gradient is that function's; PyTorch's
hand-written backward assumes the symmetric window instead."""

from __future__ import annotations

import numpy as np

from ... import ops
from ...argcheck import integers, optional_real
from ...core import is_int
from ...core.errors import DomainError, ShapeError
from .. import functional as F
from .. import init
from ..functional.helpers import check_known_dims, float_const
from .module import Module, Parameter
from .utils import flag, ints, reals


class LayerNorm(Module):
    """Normalise over the last len(normalized_shape) dims, then scale and shift."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        self.normalized_shape = integers(normalized_shape, "LayerNorm: normalized_shape")
        [self.eps], self.elementwise_affine = reals(self, eps=eps), elementwise_affine
        if flag(self, "elementwise_affine", elementwise_affine):
            self.weight = Parameter(ops.ones(self.normalized_shape, dtype=dtype))
            if flag(self, "bias", bias):
                self.bias = Parameter(ops.zeros(self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return ops.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """Normalise each group of num_channels / num_groups channels, then scale and shift per
    channel (PyTorch's GroupNorm)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype=None):
        super().__init__()
        if not all(is_int(v) and v > 0 for v in (num_groups, num_channels)):
            raise DomainError(
                f"GroupNorm: num_groups and num_channels must be positive ints, got "
                f"{num_groups!r} and {num_channels!r}"
            )
        if num_channels % num_groups:
            raise DomainError(f"{num_channels} channels do not split into {num_groups} groups")
        self.num_groups, self.num_channels = int(num_groups), int(num_channels)
        [self.eps], self.affine = reals(self, eps=eps), affine
        if flag(self, "affine", affine):
            self.weight = Parameter(ops.ones(self.num_channels, dtype=dtype))
            self.bias = Parameter(ops.zeros(self.num_channels, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return ops.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times a weight;
    eps None is the machine epsilon of the input's dtype (PyTorch's default)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, dtype=None):
        super().__init__()
        self.normalized_shape = integers(normalized_shape, "RMSNorm: normalized_shape")
        self.eps = optional_real(eps, "RMSNorm: eps")
        self.elementwise_affine = elementwise_affine
        if flag(self, "elementwise_affine", elementwise_affine):
            self.weight = Parameter(ops.ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        [self.size] = ints(self, size=size)
        self.alpha, self.beta, self.k = reals(self, alpha=alpha, beta=beta, k=k)

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_window(channels: int, size: int) -> np.ndarray:
    """(C, C) 0/1: row c marks the channels PyTorch's legacy running sum adds for channel c."""
    pre_pad = int((size - 1) / 2 + 1)  # (PyTorch's expression, float division and all)
    c = np.arange(channels)[:, None]
    j = np.arange(channels)[None, :]
    inside = (j >= np.maximum(1, c - pre_pad + 1)) & (j <= c + pre_pad - 1)
    return (inside | (j == 0)).astype(np.float64)


class CrossMapLRN2d(Module):
    """PyTorch's legacy cross-channel local response normalisation of (N, C, H, W): x / (k +
    alpha / size * (sum of x^2 over the channel window))^beta (see the module doc for its
    window)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.ndim != 4:
            raise ShapeError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        check_known_dims(input, "CrossMapLRN2d", 1)
        window = float_const(_cross_map_window(input.shape[1], self.size).T, input)
        # channels last, so the window is one matrix product over them
        squares = ops.permute(input * input, (0, 2, 3, 1))
        sums = ops.permute(ops.matmul(squares, window), (0, 3, 1, 2))
        return input * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["CrossMapLRN2d", "GroupNorm", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
