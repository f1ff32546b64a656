"""PyTorch's lazy modules: LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d, whose in-features are read from the first
input.

Until then their parameters (and a norm's running statistics) are UninitializedParameter /
UninitializedBuffer stand-ins (nn/parameter.py). The first call materialises them in place
(the same tensor objects get memory of the inferred shape) and initialises them with the
ordinary class's reset_parameters; then the module becomes that ordinary class
(`cls_to_become`: a LazyLinear is a Linear from then on, and calls cost nothing extra).

- Inside `@nbflow.jit` the first call is traced: materialisation runs in eager mode (as
  modules made inside traces run their `__init__`, module.py's _made_eagerly), so the
  program captures the materialised parameters as it does any module's. An in-features dim
  unknown in the trace (-1) raises UnsupportedError.
- load_state_dict before the first call materialises from the state's shapes (module.py
  asks each lazy module, `materialize_from`), initialises, then copies the state in; the
  module becomes the ordinary class at its first call, as PyTorch's.
- Optimizers: nbflow's keep the parameter objects and make their state at the first step, so
  an optimizer made before materialisation trains the materialised parameters (as PyTorch
  2.x's does: materialize() fills the same Parameter). A stand-in that reaches an op (an
  optimizer step on a parameter never materialised, `init.*_` on it, sum(p.numel() ...))
  raises a clear error; `Module.to(dtype)` before the first call replaces the stand-ins (as
  it replaces any module's tensors): make the optimizer after it.
"""

from __future__ import annotations

import numpy as np

from ...core import UNKNOWN, no_grad
from ...core.dtypes import as_dtype
from ...core.errors import DomainError, ShapeError, UnsupportedError
from ..parameter import UninitializedBuffer, UninitializedError, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, BatchNormBase, _NormBase
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .module import _EPOCH, Module, _made_eagerly
from .utils import flag


def _cpu(device, name):
    if device is not None and str(device) != "cpu":
        raise UnsupportedError(
            f"{name}: only device 'cpu'; call the module on a batch, then move it with .to(device)"
        )


class LazyModuleMixin:
    """PyTorch's LazyModuleMixin: put it before a Module class; `initialize_parameters(*args,
    **kwargs)` materialises the module's stand-ins at the first call, after which the module
    becomes `cls_to_become` (when set). nbflow's lazy layers say which attribute holds the
    in-size (`in_attr`), the shapes it gives (`_shapes`), how the first input tells it
    (`_in_size`) and how a state_dict entry does (`_size_from`)."""

    cls_to_become = None
    in_attr = ""

    def has_uninitialized_params(self) -> bool:
        tensors = (*self._parameters.values(), *self._buffers.values())
        return any(is_lazy(t) for t in tensors)

    def initialize_parameters(self, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self._materialize(self._in_size(*args, **kwargs))

    def reset_parameters(self, *args, **kwargs) -> None:
        # (the ordinary __init__ calls it before the stand-ins exist: nothing to initialise)
        if not self.has_uninitialized_params() and getattr(self, self.in_attr) != 0:
            super().reset_parameters(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        if "_lazy_done" not in self.__dict__:
            self._infer_parameters(args, kwargs)
        return Module.__call__(self, *args, **kwargs)

    @_made_eagerly  # (under a graph trace too: the parameters are eager tensors)
    def _infer_parameters(self, args, kwargs) -> None:
        with no_grad():
            self.initialize_parameters(*args, **kwargs)
        if self.has_uninitialized_params():
            raise UninitializedError(
                f"module {type(self).__name__} has not been fully initialized by its first call"
            )
        self.__dict__.pop("_lazy_generator", None)
        self.__dict__["_lazy_done"] = True  # (a user's lazy module, no cls_to_become, stays)
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become
            del self.__dict__["_lazy_done"]
        _EPOCH[0] += 1

    @_made_eagerly
    def _materialize(self, n: int) -> None:
        """Give every stand-in its shape for in-size n, then initialise as the ordinary class."""
        name = type(self).__name__
        if not isinstance(n, (int, np.integer)) or n == UNKNOWN or n < 0:
            raise UnsupportedError(
                f"{name}: the in-features dim of the first input is unknown ({n}); call the "
                "module once eagerly (or give the trace that dim)"
            )
        self.__dict__[self.in_attr] = int(n)
        with no_grad():
            for attr, shape in self._shapes(int(n)).items():
                t = getattr(self, attr)
                if is_lazy(t):
                    t.materialize(shape)
            generator = self.__dict__.get("_lazy_generator")
            self.reset_parameters(*(() if generator is None else (generator,)))

    def materialize_from(self, state, prefix: str) -> None:
        """load_state_dict's hook (module.py): materialise from the first entry of the state
        that tells the in-size (a stand-in in the state tells nothing)."""
        if not self.has_uninitialized_params():
            return
        for attr, t in (*self._parameters.items(), *self._buffers.items()):
            key = prefix + attr
            value = state[key] if is_lazy(t) and key in state else None
            if value is None or is_lazy(value):
                continue
            shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
            n = self._size_from(attr, shape)
            if n is not None:
                self._materialize(n)
                return


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is the last dim of its first input."""

    cls_to_become = Linear
    in_attr = "in_features"

    def __init__(self, out_features, bias=True, device=None, dtype=None, generator=None):
        _cpu(device, "LazyLinear")
        dtype = as_dtype(dtype)
        super().__init__(0, out_features, False, dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        if flag(self, "bias", bias):
            self.bias = UninitializedParameter(dtype=dtype)
        self._lazy_generator = generator

    def _shapes(self, n):
        return {"weight": (self.out_features, n), "bias": (self.out_features,)}

    def _in_size(self, input, *args, **kwargs):
        if input.ndim < 1:
            raise ShapeError(f"LazyLinear: expects an input of at least 1 dim, got {input.shape}")
        return input.shape[-1]

    def _size_from(self, attr, shape):
        return shape[1] if attr == "weight" and len(shape) == 2 else None


class _LazyConv(LazyModuleMixin):
    in_attr = "in_channels"
    transposed = False

    def _lazy_init(self, bias, dtype, generator):
        self.weight = UninitializedParameter(dtype=dtype)
        if flag(self, "bias", bias):
            self.bias = UninitializedParameter(dtype=dtype)
        self._lazy_generator = generator

    def _shapes(self, n):
        groups, out = self.groups, self.out_channels
        if self.transposed:
            weight = (n, out // groups, *self.kernel_size)
        else:
            weight = (out, n // groups, *self.kernel_size)
        return {"weight": weight, "bias": (out,)}

    def _in_size(self, input, *args, **kwargs):
        batched = self.dims + 2
        if input.ndim not in (batched - 1, batched):
            raise ShapeError(
                f"Expected {batched - 1}D (unbatched) or {batched}D (batched) input to "
                f"{type(self).__name__}, but got input of size: {tuple(input.shape)}"
            )
        n = input.shape[1 if input.ndim == batched else 0]
        if n != UNKNOWN and n % self.groups:
            raise DomainError(
                f"{type(self).__name__}: in_channels ({n}) must be divisible by groups "
                f"({self.groups})"
            )
        return n

    def _size_from(self, attr, shape):
        if attr != "weight" or len(shape) != self.dims + 2:
            return None
        return shape[0] if self.transposed else shape[1] * self.groups


def _conv(ordinary, dims):
    name = f"Lazy{ordinary.__name__}"

    def __init__(
        self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
        padding_mode="zeros", device=None, dtype=None, generator=None,
    ):  # fmt: skip
        _cpu(device, name)
        dtype = as_dtype(dtype)
        geometry = (stride, padding, dilation, groups, False, padding_mode, dtype)
        ordinary.__init__(self, 0, out_channels, kernel_size, *geometry)
        self._lazy_init(bias, dtype, generator)

    doc = f"A {ordinary.__name__} whose in_channels is the channel dim of its first input."
    attrs = {"__init__": __init__, "__doc__": doc, "cls_to_become": ordinary, "dims": dims}
    return type(name, (_LazyConv, ordinary), {**attrs, "__module__": __name__})


def _conv_transpose(ordinary, dims):
    name = f"Lazy{ordinary.__name__}"

    def __init__(
        self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
        bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None, generator=None,
    ):  # fmt: skip
        _cpu(device, name)
        dtype = as_dtype(dtype)
        geometry = (stride, padding, output_padding, groups, False, dilation, padding_mode, dtype)
        ordinary.__init__(self, 0, out_channels, kernel_size, *geometry)
        self._lazy_init(bias, dtype, generator)

    doc = f"A {ordinary.__name__} whose in_channels is the channel dim of its first input."
    attrs = {"__init__": __init__, "__doc__": doc, "cls_to_become": ordinary, "dims": dims}
    attrs["transposed"] = True
    return type(name, (_LazyConv, ordinary), {**attrs, "__module__": __name__})


LazyConv1d = _conv(Conv1d, 1)


LazyConv2d = _conv(Conv2d, 2)


LazyConv3d = _conv(Conv3d, 3)


LazyConvTranspose1d = _conv_transpose(ConvTranspose1d, 1)


LazyConvTranspose2d = _conv_transpose(ConvTranspose2d, 2)


LazyConvTranspose3d = _conv_transpose(ConvTranspose3d, 3)


class _LazyNorm(LazyModuleMixin):
    in_attr = "num_features"
    instance = False  # InstanceNorm: an unbatched input's channels are its dim 0

    def _lazy_init(self, dtype):
        if self.affine:
            self.weight = UninitializedParameter(dtype=dtype)
            self.bias = UninitializedParameter(dtype=dtype)
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)

    def reset_parameters(self) -> None:
        if self.has_uninitialized_params() or self.num_features == 0:
            return
        _NormBase.reset_parameters(self)

    def _shapes(self, n):
        return dict.fromkeys(("weight", "bias", "running_mean", "running_var"), (n,))

    def _in_size(self, input, *args, **kwargs):
        name = type(self).__name__
        if self.instance:
            if input.ndim not in (self.spatial + 1, self.spatial + 2):
                raise ShapeError(
                    f"{name}: expects a {self.spatial + 1}-D or {self.spatial + 2}-D input, got "
                    f"shape {tuple(input.shape)}"
                )
            return input.shape[0 if input.ndim == self.spatial + 1 else 1]
        if input.ndim < 2:
            raise ShapeError(f"{name}: expects an input of at least 2 dims, got {input.shape}")
        return input.shape[1]

    def _size_from(self, attr, shape):
        return shape[0] if len(shape) == 1 else None


def _norm(ordinary):
    name = f"Lazy{ordinary.__name__}"
    instance = not issubclass(ordinary, BatchNormBase)

    def __init__(
        self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
        dtype=None,
    ):  # fmt: skip
        _cpu(device, name)
        dtype = as_dtype(dtype)
        ordinary.__init__(self, 0, eps, momentum, affine, track_running_stats, dtype)
        self._lazy_init(dtype)

    doc = (
        f"A {ordinary.__name__} whose num_features is the channel dim of its first input "
        "(affine and track_running_stats on by default, as PyTorch's lazy norms)."
    )
    attrs = {"__init__": __init__, "__doc__": doc, "cls_to_become": ordinary}
    attrs["instance"] = instance
    return type(name, (_LazyNorm, ordinary), {**attrs, "__module__": __name__})


LazyBatchNorm1d = _norm(BatchNorm1d)


LazyBatchNorm2d = _norm(BatchNorm2d)


LazyBatchNorm3d = _norm(BatchNorm3d)


LazyInstanceNorm1d = _norm(InstanceNorm1d)


LazyInstanceNorm2d = _norm(InstanceNorm2d)


LazyInstanceNorm3d = _norm(InstanceNorm3d)


__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
]
