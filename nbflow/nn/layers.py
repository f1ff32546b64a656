"""Layers, written on nbflow's public ops only: they run eagerly, and unchanged under
@nbflow.jit (where their parameters become the Program's persistable vars).

Weights use PyTorch's layouts (Linear (out, in), Conv2d (out, in/groups, kh, kw), RNN cells
(gates*hidden, in)) and PyTorch's default initialisation, so PyTorch state dicts load as they
are. Every layer with parameters takes `generator=` (an nbflow.Generator) for reproducible init.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from .. import ops
from ..core import STATE, UNKNOWN, as_int, is_int, is_probability, no_grad
from ..core.errors import ArgumentError, AttrError, DomainError, ShapeError, UnsupportedError
from ..eager.operators import Operators
from ..eager.tensor import EagerTrace, Tensor, tensor
from . import functional as F
from . import init
from . import spatial as _spatial
from .module import Module, Parameter, insertion_index, renumber

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "GRUCell",
    "GroupNorm",
    "Hardtanh",
    "Identity",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MaxPool2d",
    "RNNCell",
    "ReLU",
    "ReLU6",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "Tanh",
    "Unflatten",
    "Upsample",
]


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


# ---------------------------------------------------------------- containers


class Sequential(Module):
    """Modules applied in order; built from modules (named "0", "1", ...) or an OrderedDict."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        modules = list(self._modules.values())
        fused = False
        for m, after in zip(modules, modules[1:] + [None]):
            if fused:  # this ReLU ran inside the Linear before it
                fused = False
                continue
            # a Linear followed by a ReLU is one op: the ReLU rides the bias's pass (unless a
            # hook wants to see either module run)
            fused = type(m) is Linear and type(after) is ReLU
            fused = fused and not (m._has_hooks() or after._has_hooks())
            x = ops.linear(x, m.weight, m.bias, activation="relu") if fused else m(x)
        return x

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules) -> Sequential:
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        modules = list(self._modules.values())
        modules.insert(insertion_index(self, index), module)
        renumber(self, modules)
        return self

    def pop(self, index=-1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __getitem__(self, i):
        items = list(self._modules.items())
        if isinstance(i, slice):
            return Sequential(OrderedDict(items[i]))
        return items[i][1]

    def __setitem__(self, i: int, module: Module) -> None:
        name = list(self._modules)[i]  # (the name keeps its place)
        self.add_module(name, module)

    def __delitem__(self, i) -> None:
        modules = list(self._modules.values())
        del modules[i]
        renumber(self, modules)  # (PyTorch numbers the rest again, names included)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Identity(Module):
    def forward(self, x):
        return x


# ---------------------------------------------------------------- activations and shape


class ReLU(Module):
    def __init__(self, inplace: bool = False):  # inplace is accepted and ignored
        super().__init__()

    def forward(self, x):
        return ops.relu(x)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = float(negative_slope)

    def forward(self, x):
        return ops.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class GELU(Module):
    """approximate: 'none' (the erf form) or 'tanh'."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise DomainError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

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
        return (
            F._legacy_softmax_dim(type(self).__name__, x.ndim, 5) if self.dim is None else self.dim
        )

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
        self.alpha = float(alpha)

    def forward(self, x):
        return F.elu(x, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x):
        return ops.softplus(x, beta=self.beta, threshold=self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val = float(min_val), float(max_val)

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0)


class Upsample(Module):
    """F.interpolate as a module (PyTorch's Upsample): size or scale_factor, mode 'nearest'
    (default), 'linear' or 'bilinear'."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class Unflatten(Module):
    """Split dim `dim` into `unflattened_size` (PyTorch's Unflatten; one size may be -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = int(dim), tuple(int(n) for n in unflattened_size)

    def forward(self, x):
        dim = self.dim % x.ndim
        return ops.reshape(x, x.shape[:dim] + self.unflattened_size + x.shape[dim + 1 :])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Flatten(Module):
    """Flatten dims start_dim..end_dim (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return ops.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


# ---------------------------------------------------------------- linear and convolution


class Linear(Module):
    """y = x @ weight.T + bias, weight (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, dtype=None, generator=None) -> None:
        super().__init__()
        self.in_features = as_int(in_features, "Linear: in_features")
        self.out_features = as_int(out_features, "Linear: out_features")
        self.weight = _empty(self.out_features, self.in_features, dtype=dtype)
        if bias:
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


PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    dims = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        dtype=None,
        generator=None,
    ):
        super().__init__()
        n = self.dims
        if padding_mode not in PADDING_MODES:
            raise DomainError(f"padding_mode must be one of {PADDING_MODES}, got {padding_mode!r}")
        self.padding_mode = padding_mode
        if in_channels % groups or out_channels % groups:
            raise DomainError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                f"divisible by groups ({groups})"
            )
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.groups = int(groups)
        shape = (self.out_channels, self.in_channels // groups, *self.kernel_size)
        self.weight = _empty(*shape, dtype=dtype)
        if bias:
            self.bias = _empty(self.out_channels, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        fan_in = self.in_channels // self.groups * math.prod(self.kernel_size)
        _default_init(self.weight, self.bias, fan_in, generator)

    def _args(self, padding):
        if self.dims == 1:  # conv1d takes ints
            padding = padding if isinstance(padding, (str, int)) else padding[0]
            return self.stride[0], padding, self.dilation[0], self.groups
        return self.stride, padding, self.dilation, self.groups

    def _padded(self, x):
        """(input, padding) of the convolution: a padding_mode other than zeros pads the input
        by F.pad, and the convolution then pads nothing (PyTorch's way)."""
        if self.padding_mode == "zeros":
            return x, self.padding
        pads = []  # (before, after) from the last dim backwards
        for i in reversed(range(self.dims)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                pads += [total // 2, total - total // 2]
            else:
                pads += [0, 0] if self.padding == "valid" else [self.padding[i]] * 2
        return F.pad(x, pads, mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self.dims:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) (cross-correlation, as in PyTorch)."""

    dims = 2

    def forward(self, x):
        x, padding = self._padded(x)
        return ops.conv2d(x, self.weight, self.bias, *self._args(padding))


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L)."""

    dims = 1

    def forward(self, x):
        x, padding = self._padded(x)
        return ops.conv1d(x, self.weight, self.bias, *self._args(padding))


# ---------------------------------------------------------------- pooling


class _Pool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 2)
        self.stride = self.kernel_size if stride is None else _tuple(stride, 2)
        self.padding = _tuple(padding, 2)
        self.ceil_mode = bool(ceil_mode)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Max over kernel_size windows (stride defaults to kernel_size; padding counts as -inf),
    PyTorch's options: dilation, return_indices, ceil_mode."""

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
        ceil_mode=False,
    ):  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation, self.return_indices = _tuple(dilation, 2), bool(return_indices)

    def forward(self, x):
        return F.max_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip


class AvgPool2d(_Pool2d):
    """Mean over kernel_size windows (stride defaults to kernel_size), PyTorch's options:
    ceil_mode, count_include_pad, divisor_override."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
        divisor_override=None,
    ):  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x):
        return F.avg_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        # (None keeps the input's size, as PyTorch's: F.adaptive_avg_pool2d reads it)
        self.output_size = (
            output_size if isinstance(output_size, (tuple, list)) else (_tuple(output_size, 2))
        )

    def forward(self, x):
        return ops.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


# ---------------------------------------------------------------- normalisation


class _BatchNorm(Module):
    expected_dims: tuple = ()

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        dtype=None,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(ops.ones(self.num_features, dtype=dtype))
            self.bias = Parameter(ops.zeros(self.num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", ops.zeros(self.num_features, dtype=dtype))
            self.register_buffer("running_var", ops.ones(self.num_features, dtype=dtype))
            # the training batches seen (PyTorch's buffer; momentum=None averages over them)
            self.register_buffer("num_batches_tracked", ops.zeros((), dtype="int64"))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    # a state_dict from before the counter (older nbflow) still loads: it starts at 0
    optional_state = ("num_batches_tracked",)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, x):
        if x.ndim not in self.expected_dims:
            raise ShapeError(
                f"{type(self).__name__} expects a {' or '.join(map(str, self.expected_dims))}-D "
                f"input, got shape {tuple(x.shape)}"
            )
        # batch statistics while training, and whenever there are no running statistics
        use_batch = self.training or self.running_mean is None
        return ops.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_batch,
            self.step_momentum(),
            self.eps,
        )

    def step_momentum(self):
        """The running statistics' factor for this forward, counting a training batch."""
        momentum = self.momentum
        if self.training and self.running_mean is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if momentum is None:  # PyTorch's cumulative average: 1 / the batches seen
                if not isinstance(STATE.trace, EagerTrace):
                    raise UnsupportedError(
                        f"{type(self).__name__}(momentum=None) under a graph trace: its factor "
                        "1 / num_batches_tracked would be baked in; give a momentum"
                    )
                momentum = 1.0 / self.num_batches_tracked.item()
        return momentum

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L); running statistics are buffers, updated
    in training mode (momentum: new = (1 - m) * old + m * batch, unbiased variance) and used
    in eval mode."""

    expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) (see BatchNorm1d)."""

    expected_dims = (4,)


class LayerNorm(Module):
    """Normalise over the last len(normalized_shape) dims, then scale and shift."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps, self.elementwise_affine = float(eps), elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ops.ones(self.normalized_shape, dtype=dtype))
            if bias:
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
        self.eps, self.affine = float(eps), affine
        if affine:
            self.weight = Parameter(ops.ones(self.num_channels, dtype=dtype))
            self.bias = Parameter(ops.zeros(self.num_channels, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return ops.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class Dropout(Module):
    """Zero each element with probability p while training, scaling the rest by 1/(1-p);
    the identity in eval mode. `generator` seeds the masks (default: the default generator)."""

    def __init__(self, p: float = 0.5, inplace: bool = False, generator=None):
        super().__init__()
        if not is_probability(p):
            raise DomainError(f"dropout probability must be in [0, 1], got {p}")
        self.p, self.generator = float(p), generator

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        return ops.dropout(x, self.p, True, self.generator)

    def extra_repr(self) -> str:
        return f"p={self.p}"


# ---------------------------------------------------------------- embedding


class Embedding(Module):
    """A lookup table: weight (num_embeddings, embedding_dim), initialised normal(0, 1);
    the row padding_idx, when given, starts at zero; max_norm renormalises the rows looked
    up (F.embedding)."""

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        dtype=None,
        generator=None,
    ):
        super().__init__()
        if scale_grad_by_freq or sparse:
            raise UnsupportedError(
                "Embedding: scale_grad_by_freq and sparse gradients are not supported"
            )
        self.max_norm, self.norm_type = max_norm, float(norm_type)
        self.num_embeddings = as_int(num_embeddings, "Embedding: num_embeddings")
        self.embedding_dim = as_int(embedding_dim, "Embedding: embedding_dim")
        if padding_idx is not None:
            if not -self.num_embeddings <= padding_idx < self.num_embeddings:
                raise DomainError(f"padding_idx {padding_idx} out of range")
            padding_idx = padding_idx % self.num_embeddings
        self.padding_idx = padding_idx
        self.weight = _empty(self.num_embeddings, self.embedding_dim, dtype=dtype)
        self.reset_parameters(generator)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None) -> Embedding:
        """An Embedding holding a copy of the 2-D `embeddings` (frozen unless freeze=False),
        as PyTorch's Embedding.from_pretrained."""
        if embeddings.ndim != 2:
            raise ShapeError(f"from_pretrained needs 2-D embeddings, got {embeddings.shape}")
        rows, dim = embeddings.shape
        module = cls(rows, dim, padding_idx, dtype=embeddings.dtype)
        module.weight = Parameter(tensor(embeddings, dtype=embeddings.dtype))
        module.weight.requires_grad_(not freeze)
        return module

    def reset_parameters(self, generator=None) -> None:
        init.normal_(self.weight, generator=generator)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, indices):  # (no gradient to the padding row)
        return F.embedding(indices, self.weight, self.padding_idx, self.max_norm, self.norm_type)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s if self.max_norm is None else s + f", max_norm={self.max_norm}"


# ---------------------------------------------------------------- recurrent cells


class _RNNCellBase(Module):
    gates = 1

    def __init__(self, input_size, hidden_size, bias=True, dtype=None, generator=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        rows = self.gates * self.hidden_size
        self.weight_ih = _empty(rows, self.input_size, dtype=dtype)
        self.weight_hh = _empty(rows, self.hidden_size, dtype=dtype)
        if bias:
            self.bias_ih = _empty(rows, dtype=dtype)
            self.bias_hh = _empty(rows, dtype=dtype)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        """PyTorch's: every weight and bias uniform(+-1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for p in self.parameters():
            init.uniform_(p, -bound, bound, generator)

    def _affine(self, x, weight, bias):
        y = ops.matmul(x, ops.matrix_transpose(weight))
        return y if bias is None else y + bias

    def _ih(self, x):
        return self._affine(x, self.weight_ih, self.bias_ih)

    def _hh(self, h):
        """The hidden-to-hidden term; with no state (h None, meaning zeros) just the bias."""
        if h is None:
            return self.bias_hh
        return self._affine(h, self.weight_hh, self.bias_hh)

    def _check(self, x, *states):
        """Whether x is unbatched; each state given must be a tensor of shape (batch,
        hidden_size), or (hidden_size,) for an unbatched x (PyTorch raises where
        broadcasting would hide the mistake)."""
        name = type(self).__name__
        if x.ndim not in (1, 2):
            raise ShapeError(
                f"{name}: input must be (batch, {self.input_size}) or "
                f"({self.input_size},), got shape {tuple(x.shape)}"
            )
        want = (x.shape[0], self.hidden_size) if x.ndim == 2 else (self.hidden_size,)
        for h in states:
            if h is None:
                continue
            if not isinstance(h, Operators):
                raise ArgumentError(f"{name}: a state must be a tensor, got {type(h).__name__}")
            if len(h.shape) != len(want) or not all(
                a == b or UNKNOWN in (a, b) for a, b in zip(h.shape, want)
            ):
                raise ShapeError(
                    f"{name}: state of shape {tuple(h.shape)} for input of shape "
                    f"{tuple(x.shape)}; expected {want}"
                )
        return x.ndim == 1

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s if self.bias else s + ", bias=False"


def lstm_gates(pre, c, hidden_size):
    """(h', c') of an LSTM step from its gate pre-activations (x W_ih + b_ih + h W_hh +
    b_hh, gates stacked as input, forget, cell, output); c None means zeros."""
    i, f, g, o = ops.split(pre, hidden_size, axis=-1)
    i, f, g, o = ops.sigmoid(i), ops.sigmoid(f), ops.tanh(g), ops.sigmoid(o)
    c_new = i * g if c is None else f * c + i * g
    return o * ops.tanh(c_new), c_new


def gru_gates(xg, hg, h, hidden_size):
    """h' of a GRU step from x W_ih + b_ih (xg) and h W_hh + b_hh (hg; gates stacked as
    reset, update, new): hg None means neither state nor hidden bias, h None a zeros state."""
    xr, xz, xn = ops.split(xg, hidden_size, axis=-1)
    if hg is None:
        r, z = ops.sigmoid(xr), ops.sigmoid(xz)
        n = ops.tanh(xn)
    else:
        hr, hz, hn = ops.split(hg, hidden_size, axis=-1)
        r, z = ops.sigmoid(xr + hr), ops.sigmoid(xz + hz)
        n = ops.tanh(xn + r * hn)
    return (1 - z) * n if h is None else (1 - z) * n + z * h


def _batched(t, unbatched):
    return None if t is None else (ops.unsqueeze(t, 0) if unbatched else t)


def _unbatched(t, unbatched):
    return ops.squeeze(t, 0) if unbatched else t


class RNNCell(_RNNCellBase):
    """h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh), act tanh or relu; h None means zeros."""

    gates = 1

    def __init__(
        self,
        input_size,
        hidden_size,
        bias=True,
        nonlinearity="tanh",
        dtype=None,
        generator=None,
    ):
        if nonlinearity not in ("tanh", "relu"):
            raise DomainError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, dtype, generator)
        self.nonlinearity = nonlinearity

    def forward(self, x, h=None):
        unbatched = self._check(x, h)
        x, h = _batched(x, unbatched), _batched(h, unbatched)
        pre = self._ih(x)
        hh = self._hh(h)
        if hh is not None:
            pre = pre + hh
        out = ops.tanh(pre) if self.nonlinearity == "tanh" else ops.relu(pre)
        return _unbatched(out, unbatched)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity!r}"


class LSTMCell(_RNNCellBase):
    """PyTorch's LSTM cell; gates stacked as (input, forget, cell, output):
    i, f, o = sigmoid(.), g = tanh(.), c' = f * c + i * g, h' = o * tanh(c').
    forward(x, (h, c)) -> (h', c'); state None means zeros."""

    gates = 4

    def forward(self, x, state=None):
        if state is not None and not (isinstance(state, (tuple, list)) and len(state) == 2):
            got = type(state).__name__ + (f" of {len(state)}" if isinstance(state, tuple) else "")
            raise ArgumentError(f"LSTMCell: the state must be a tuple (h, c), got a {got}")
        h, c = (None, None) if state is None else state
        unbatched = self._check(x, h, c)
        x, h, c = (_batched(t, unbatched) for t in (x, h, c))
        pre = self._ih(x)
        hh = self._hh(h)
        if hh is not None:
            pre = pre + hh
        h_new, c_new = lstm_gates(pre, c, self.hidden_size)
        return _unbatched(h_new, unbatched), _unbatched(c_new, unbatched)


class GRUCell(_RNNCellBase):
    """PyTorch's GRU cell; gates stacked as (reset, update, new):
    r = sigmoid(x W_ir + b_ir + h W_hr + b_hr), z likewise,
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1 - z) * n + z * h."""

    gates = 3

    def forward(self, x, h=None):
        unbatched = self._check(x, h)
        x, h = _batched(x, unbatched), _batched(h, unbatched)
        return _unbatched(gru_gates(self._ih(x), self._hh(h), h, self.hidden_size), unbatched)


# ---------------------------------------------------------------- spatial: transposed
# convolutions, 1-d and adaptive pools, shuffles, unfold / fold, padding modules and the
# upsampling aliases (nbflow/nn/spatial.py)


class _ConvTransposeNd(Module):
    """PyTorch's ConvTranspose layers: weight (in_channels, out_channels / groups, *kernel),
    initialised as PyTorch does (its fan_in is then out_channels / groups * kernel size)."""

    dims = 2

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        dtype=None,
        generator=None,
    ):
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise DomainError(f"{name}: only padding_mode='zeros' is supported (as in PyTorch)")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise DomainError(
                f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must "
                f"be divisible by groups ({groups})"
            )
        n = self.dims
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding, self.output_padding = _tuple(padding, n), _tuple(output_padding, n)
        self.dilation, self.groups = _tuple(dilation, n), int(groups)
        self.padding_mode = padding_mode
        shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        self.weight = _empty(*shape, dtype=dtype)
        if bias:
            self.bias = _empty(self.out_channels, dtype=dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters(generator)

    def reset_parameters(self, generator=None) -> None:
        fan_in = self.out_channels // self.groups * math.prod(self.kernel_size)
        _default_init(self.weight, self.bias, fan_in, generator)

    def _output_padding(self, x, output_size):
        if output_size is None:
            return self.output_padding
        return _spatial.transposed_output_padding(
            x.shape,
            output_size,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            type(self).__name__,
        )

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        for name, default in (("padding", 0), ("output_padding", 0), ("dilation", 1)):
            if getattr(self, name) != (default,) * self.dims:
                s += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution over (N, C, H, W); forward(x, output_size=None) picks the
    output_padding that gives output_size, as PyTorch's."""

    dims = 2

    def forward(self, x, output_size=None):
        output_padding = self._output_padding(x, output_size)
        args = (self.stride, self.padding, output_padding, self.groups, self.dilation)
        return F.conv_transpose2d(x, self.weight, self.bias, *args)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over (N, C, L)."""

    dims = 1

    def forward(self, x, output_size=None):
        (output_padding,) = self._output_padding(x, output_size)
        (stride,), (padding,), (dilation,) = self.stride, self.padding, self.dilation
        args = (stride, padding, output_padding, self.groups, dilation)
        return F.conv_transpose1d(x, self.weight, self.bias, *args)


class MaxPool1d(Module):
    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices=False,
        ceil_mode=False,
    ):
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)
        return F.max_pool1d(x, *args, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class AvgPool1d(Module):
    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size, self.padding = kernel_size, padding
        self.stride = kernel_size if stride is None else stride
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x):
        args = (self.kernel_size, self.stride, self.padding, self.ceil_mode)
        return F.avg_pool1d(x, *args, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Max over PyTorch's adaptive bins; return_indices also returns the argmax positions."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveMaxPool1d):
    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Unfold(Module):
    """im2col: (N, C, H, W) -> (N, C kH kW, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x):
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Unfold):
    """col2im, Unfold's adjoint: (N, C kH kW, L) -> (N, C, output_size), blocks summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, x):
        args = (self.kernel_size, self.dilation, self.padding, self.stride)
        return F.fold(x, self.output_size, *args)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, " + super().extra_repr()


class _PadNd(Module):
    """F.pad of the last `dims` dims; padding an int (every side) or 2 * dims ints (last dim
    first: left, right, top, bottom, front, back), as PyTorch's padding modules."""

    dims, mode = 1, "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = _tuple(padding, 2 * self.dims)
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, self.mode, self.value)

    def extra_repr(self) -> str:
        if self.value is None or type(self).__name__.startswith("Zero"):
            return f"{self.padding}"
        return f"padding={self.padding}, value={self.value}"


def _pad_module(name, dims, mode, doc):
    if mode == "constant":

        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, float(value))

    else:

        def __init__(self, padding):
            _PadNd.__init__(self, padding)

    return type(name, (_PadNd,), {"dims": dims, "mode": mode, "__init__": __init__, "__doc__": doc})


ConstantPad1d = _pad_module("ConstantPad1d", 1, "constant", "Pads the last dim with `value`.")
ConstantPad2d = _pad_module("ConstantPad2d", 2, "constant", "Pads the last 2 dims with `value`.")
ConstantPad3d = _pad_module("ConstantPad3d", 3, "constant", "Pads the last 3 dims with `value`.")
ReflectionPad1d = _pad_module("ReflectionPad1d", 1, "reflect", "Mirrors the last dim's edges.")
ReflectionPad2d = _pad_module("ReflectionPad2d", 2, "reflect", "Mirrors the last 2 dims' edges.")
ReflectionPad3d = _pad_module("ReflectionPad3d", 3, "reflect", "Mirrors the last 3 dims' edges.")
ReplicationPad1d = _pad_module("ReplicationPad1d", 1, "replicate", "Repeats the last dim's edge.")
ReplicationPad2d = _pad_module("ReplicationPad2d", 2, "replicate", "Repeats the last 2 dims'.")
ReplicationPad3d = _pad_module("ReplicationPad3d", 3, "replicate", "Repeats the last 3 dims'.")
CircularPad1d = _pad_module("CircularPad1d", 1, "circular", "Wraps the last dim around.")
CircularPad2d = _pad_module("CircularPad2d", 2, "circular", "Wraps the last 2 dims around.")
CircularPad3d = _pad_module("CircularPad3d", 3, "circular", "Wraps the last 3 dims around.")


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class UpsamplingNearest2d(Upsample):
    """Upsample with mode 'nearest' (PyTorch's alias)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample with mode 'bilinear' and align_corners=True (PyTorch's alias)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


__all__ += [
    "AdaptiveAvgPool1d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "ChannelShuffle",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "Fold",
    "MaxPool1d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "Unfold",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]


# ---------------------------------------------------------------- more activations, norms,
# dropouts and containers

__all__ += [
    "AlphaDropout",
    "Bilinear",
    "CELU",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "FeatureAlphaDropout",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "LocalResponseNorm",
    "LogSigmoid",
    "Mish",
    "PReLU",
    "ParameterDict",
    "ParameterList",
    "RMSNorm",
    "SELU",
    "Softmax2d",
    "Softmin",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
]


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
        self.alpha = float(alpha)

    def forward(self, x):
        return F.celu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Threshold(_InplaceActivation):
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(inplace)
        self.threshold, self.value = float(threshold), float(value)

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
        self.lambd = float(lambd)

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
        self.num_parameters, self.init = int(num_parameters), float(init)
        self.weight = Parameter(ops.full((self.num_parameters,), self.init, dtype=dtype))

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


# ---- normalisation


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times a weight;
    eps None is the machine epsilon of the input's dtype (PyTorch's default)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
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


class _InstanceNorm(Module):
    """Normalise each (sample, channel) over its spatial dims; affine and running statistics
    as PyTorch's InstanceNorm (both off by default; num_batches_tracked is kept for its
    state_dict keys and, as in PyTorch, never counts)."""

    spatial = 1

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        dtype=None,
    ):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(ops.ones(self.num_features, dtype=dtype))
            self.bias = Parameter(ops.zeros(self.num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", ops.zeros(self.num_features, dtype=dtype))
            self.register_buffer("running_var", ops.ones(self.num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", ops.zeros((), dtype="int64"))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def forward(self, x):
        if x.ndim not in (self.spatial + 1, self.spatial + 2):
            raise ShapeError(
                f"{type(self).__name__}: expects a {self.spatial + 1}-D or {self.spatial + 2}-D "
                f"input, got shape {tuple(x.shape)}"
            )
        unbatched = x.ndim == self.spatial + 1
        channels = x.shape[0 if unbatched else 1]
        if self.affine and channels != self.num_features:
            raise ShapeError(
                f"{type(self).__name__}: input shape {tuple(x.shape)} has {channels} channels, "
                f"num_features is {self.num_features}"
            )
        if unbatched:
            x = ops.unsqueeze(x, 0)
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return ops.squeeze(out, 0) if unbatched else out

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L)."""

    spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W)."""

    spatial = 2


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = int(size), float(alpha), float(beta), float(k)

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# ---- dropouts


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False, generator=None):
        super().__init__()
        if not is_probability(p):
            raise AttrError(f"{type(self).__name__}: probability must be in [0, 1], got {p}")
        self.p, self.inplace, self.generator = float(p), inplace, generator

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) input while training (the rest scaled by
    1 / (1 - p)); the identity in eval mode."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace, self.generator)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input while training (the rest scaled by
    1 / (1 - p)); the identity in eval mode."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace, self.generator)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input while training."""

    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, self.inplace, self.generator)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks (keeps zero mean and unit variance) while training; the
    identity in eval mode."""

    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training, self.inplace, self.generator)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout with one draw per channel."""

    def forward(self, x):
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace, self.generator)


# ---- bilinear and parameter containers


class Bilinear(Module):
    """y[o] = x1^T weight[o] x2 + bias[o]; weight (out, in1, in2), both initialised
    uniform(+-1/sqrt(in1_features)) as PyTorch's."""

    def __init__(
        self, in1_features, in2_features, out_features, bias=True, dtype=None, generator=None
    ):
        super().__init__()
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        self.weight = _empty(self.out_features, self.in1_features, self.in2_features, dtype=dtype)
        if bias:
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


def _as_parameter(value):
    """A Tensor that already is a parameter as it is; other data made into one (a Tensor's
    buffer shared, as torch.nn.Parameter does)."""
    if isinstance(value, Tensor) and value.requires_grad and value.is_leaf:
        return value
    return Parameter(value)


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... (so parameters(), named_parameters()
    and state_dict() see them); tensors given are made parameters."""

    def __init__(self, values=None):
        super().__init__()
        for value in values or ():
            self.append(value)

    def append(self, value) -> ParameterList:
        self.register_parameter(str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def _index(self, i: int) -> int:
        n = len(self._parameters)
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for ParameterList of length {n}")
        return i + n if i < 0 else i

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ParameterList(list(self._parameters.values())[i])
        return self._parameters[str(self._index(i))]

    def __setitem__(self, i: int, value) -> None:
        self.register_parameter(str(self._index(i)), _as_parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def forward(self, *args, **kwargs):
        raise UnsupportedError("ParameterList is a container: use its parameters in forward()")

    def extra_repr(self) -> str:
        return "\n".join(
            f"({i}): Parameter of shape {tuple(p.shape)} ({p.dtype})"
            for i, p in enumerate(self._parameters.values())
        )


class ParameterDict(Module):
    """A dict of parameters, registered under their keys; tensors given are made parameters."""

    def __init__(self, parameters=None):
        super().__init__()
        self.update(parameters or {})

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in items:
            self[key] = value

    def forward(self, *args, **kwargs):
        raise UnsupportedError("ParameterDict is a container: use its parameters in forward()")

    def extra_repr(self) -> str:
        return "\n".join(
            f"({k}): Parameter of shape {tuple(p.shape)} ({p.dtype})"
            for k, p in self._parameters.items()
        )
