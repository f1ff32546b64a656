"""Activation modules: PyTorch's nn.ReLU, nn.GELU, nn.PReLU, ..., each calling its function."""

from __future__ import annotations

from ... import ops
from ...argcheck import choice, integer, real
from ...core.errors import AttrError, ShapeError
from .. import functional as F
from .. import init
from ..functional.activation import legacy_softmax_dim
from .module import Module, Parameter
from .utils import reals


class ReLU(Module):
    def __init__(self, inplace: bool = False):  # inplace is accepted and ignored
        super().__init__()

    def forward(self, x):
        return ops.relu(x)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        [self.negative_slope] = reals(self, negative_slope=negative_slope)

    def forward(self, x):
        return ops.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class GELU(Module):
    """approximate: 'none' (the erf form) or 'tanh'."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = choice(approximate, ("none", "tanh"), "GELU: approximate")

    def forward(self, x):
        return ops.gelu(x, approximate=self.approximate == "tanh")

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, x):
        return ops.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return ops.sigmoid(x)


class Softmax(Module):
    """softmax over `dim`; dim=None picks PyTorch's implicit dim (0 for 0-, 1- and 3-D
    inputs, else 1) with its deprecation warning."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def _dim(self, x) -> int:
        return legacy_softmax_dim(type(self).__name__, x.ndim, 5) if self.dim is None else self.dim

    def forward(self, x):
        return ops.softmax(x, axis=self._dim(x))

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, x):
        return ops.log_softmax(x, axis=self._dim(x))


class SiLU(Module):
    def __init__(self, inplace: bool = False):  # inplace is accepted and ignored
        super().__init__()

    def forward(self, x):
        return F.silu(x)


class ELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        [self.alpha] = reals(self, alpha=alpha)

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = reals(self, beta=beta, threshold=threshold)

    def forward(self, x):
        return ops.softplus(x, beta=self.beta, threshold=self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val = reals(self, min_val=min_val, max_val=max_val)

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0)


class _InplaceActivation(Module):
    """An activation whose function takes PyTorch's `inplace=` (honoured: the result is
    written into the input)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Hardswish(_InplaceActivation):
    def forward(self, x):
        return F.hardswish(x, self.inplace)


class Hardsigmoid(_InplaceActivation):
    def forward(self, x):
        return F.hardsigmoid(x, self.inplace)


class Mish(_InplaceActivation):
    def forward(self, x):
        return F.mish(x, self.inplace)


class SELU(_InplaceActivation):
    def forward(self, x):
        return F.selu(x, self.inplace)


class CELU(_InplaceActivation):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        [self.alpha] = reals(self, alpha=alpha)

    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Threshold(_InplaceActivation):
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = reals(self, threshold=threshold, value=value)

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class Softsign(Module):
    def forward(self, x):
        return F.softsign(x)


class Tanhshrink(Module):
    def forward(self, x):
        return F.tanhshrink(x)


class LogSigmoid(Module):
    def forward(self, x):
        return F.logsigmoid(x)


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmin(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expects 3-D or 4-D input, got shape {tuple(x.shape)}")
        return ops.softmax(x, axis=-3)


class Softshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        [self.lambd] = reals(self, lambd=lambd)

    def forward(self, x):
        return F.softshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    def forward(self, x):
        return F.hardshrink(x, self.lambd)


class GLU(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """max(0, x) + weight * min(0, x) with a learned weight: one value, or one per channel
    (num_parameters), all starting at `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, dtype=None):
        super().__init__()
        self.num_parameters = integer(num_parameters, "PReLU: num_parameters")
        self.init = real(init, "PReLU: init")
        self.weight = Parameter(ops.full((self.num_parameters,), self.init, dtype=dtype))

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU (F.rrelu): a slope drawn uniformly from [lower, upper] for each
    negative element while training, the mean slope (lower + upper) / 2 in eval mode."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False, generator=None):
        super().__init__()
        self.lower, self.upper = reals(self, lower=lower, upper=upper)
        if self.lower > self.upper:
            raise AttrError(f"RReLU: lower bound {lower} must be at most the upper bound {upper}")
        self.inplace, self.generator = inplace, generator

    def forward(self, input):
        args = (self.lower, self.upper, self.training, self.inplace, self.generator)
        return F.rrelu(input, *args)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else ""
        )


__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU",
    "ReLU6",
    "SELU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]
