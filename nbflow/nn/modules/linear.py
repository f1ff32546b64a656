"""Identity, Linear and Bilinear."""

from __future__ import annotations

import math

from ... import ops
from ...core import as_int
from .. import functional as F
from .. import init
from .module import Module
from .utils import _default_init, _empty, flag, ints


class Identity(Module):
    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, dtype=None, generator=None) -> None:
        super().__init__()
        self.in_features = as_int(in_features, "Linear: in_features")
        self.out_features = as_int(out_features, "Linear: out_features")
        self.weight = _empty(self.out_features, self.in_features, dtype=dtype)
        if flag(self, "bias", bias):
            self.bias = _empty(self.out_features, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        _default_init(self.weight, self.bias, self.in_features, generator)

    def forward(self, x):
        return ops.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Bilinear(Module):
    """y[o] = x1^T weight[o] x2 + bias[o]; weight (out, in1, in2), both initialised
    uniform(+-1/sqrt(in1_features)) as PyTorch's."""

    def __init__(
        self, in1_features, in2_features, out_features, bias=True, dtype=None, generator=None
    ):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = ints(
            self, in1_features=in1_features, in2_features=in2_features, out_features=out_features
        )
        self.weight = _empty(self.out_features, self.in1_features, self.in2_features, dtype=dtype)
        if flag(self, "bias", bias):
            self.bias = _empty(self.out_features, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        bound = 1.0 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound, generator)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound, generator)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


__all__ = ["Bilinear", "Identity", "Linear"]
