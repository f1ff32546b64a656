"""PyTorch's older torch.nn.utils reparametrizations, by forward pre-hooks: weight_norm /
remove_weight_norm (parameters `weight_g` and `weight_v`) and spectral_norm /
remove_spectral_norm (parameter `weight_orig`, buffers `weight_u` and `weight_v`), with
`module.weight` a plain attribute recomputed before each forward, and `skip_init`.

They are not built on nbflow's parametrizations because what a user sees differs: the
attribute and state_dict names above (a PyTorch state_dict of these modules loads as it is),
and the weight computed once per forward, not at each access. PyTorch deprecates
weight_norm here (a FutureWarning) for nn.utils.parametrizations.weight_norm.

Under @nbflow.jit the pre-hook runs when the call is traced, so the program computes the
weight from the captured weight_g / weight_v (gradients reach them); afterwards the module's
`weight` attribute is an eager tensor again.
"""

from __future__ import annotations

import inspect
import warnings

from ... import ops
from ...core import graph_mode, no_grad, use_trace
from ...core.errors import DomainError
from ...eager.tensor import EagerTrace
from .. import functional as F
from ..modules.module import Module, Parameter
from .parametrizations import _norm_except_dim

__all__ = [
    "remove_spectral_norm",
    "remove_weight_norm",
    "skip_init",
    "spectral_norm",
    "weight_norm",
]


class _WeightHook:
    """A forward pre-hook that sets module.<name> from other tensors before each forward.
    Under a graph trace it also sets it back to an eager tensor after the forward (a traced
    value must not stay on the module)."""

    name: str

    def compute_weight(self, module, training: bool):
        raise NotImplementedError

    def register(self, module: Module) -> None:
        self.handles = [
            module.register_forward_pre_hook(self),
            module.register_forward_hook(self.restore),
        ]

    def unregister(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    def restore(self, module, inputs, output):
        if graph_mode():
            with use_trace(EagerTrace()):
                setattr(module, self.name, self.compute_weight(module, False))


def _find(module: Module, kind, name: str):
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, kind) and hook.name == name:
            return hook
    return None


class WeightNorm(_WeightHook):
    """weight = weight_g * weight_v / ||weight_v|| (the norm over every dim but `dim`; dim -1
    or None: over all of weight_v)."""

    def __init__(self, name: str, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module, training=True):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        dim = None if self.dim == -1 else self.dim % v.ndim
        return v * (g / _norm_except_dim(v, dim))

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        delattr(module, self.name + "_g")
        delattr(module, self.name + "_v")
        module.register_parameter(self.name, Parameter(weight.detach()))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Replace parameter module.<name> by <name>_g (its norm over every dim but `dim`, kept
    as size-1 dims; dim None: one number) and <name>_v (its direction); a forward pre-hook
    recomputes module.<name> = g * v / ||v|| before each forward. Returns the module."""
    warnings.warn(
        "`torch.nn.utils.weight_norm` is deprecated in favor of "
        "`torch.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    if _find(module, WeightNorm, name) is not None:
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    dim = None if fn.dim == -1 else fn.dim % weight.ndim
    with no_grad():
        g = _norm_except_dim(weight.detach(), dim)
    delattr(module, name)
    module.register_parameter(name + "_g", Parameter(g))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    fn.register(module)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Turn module.<name> back into one parameter (its current value)."""
    fn = _find(module, WeightNorm, name)
    if fn is None:
        raise DomainError(f"weight_norm of '{name}' not found in {module}")
    fn.remove(module)
    fn.unregister()
    return module


class SpectralNorm(_WeightHook):
    """weight = weight_orig / sigma, sigma the largest singular value of weight_orig (as a
    matrix with `dim` first) estimated by power iteration on the buffers weight_u, weight_v,
    n_power_iterations steps per training forward (PyTorch's order: v, then u)."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise DomainError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = int(n_power_iterations), eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            rest = [d for d in range(weight.ndim) if d != self.dim]
            weight = ops.permute(weight, self.dim, *rest)
        return ops.reshape(weight, (weight.shape[0], -1))

    def _normalize(self, x):
        return F.normalize(x, dim=0, eps=self.eps)

    def compute_weight(self, module, training: bool):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if training:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(self._normalize(ops.mv(ops.matrix_transpose(mat.detach()), u)))
                    u.copy_(self._normalize(ops.mv(mat.detach(), v)))
            u, v = ops.clone(u), ops.clone(v)  # (later iterations write the buffers in place)
        sigma = ops.sum(u * ops.mv(mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps=1e-12, dim=None
) -> Module:
    """Keep parameter module.<name> as <name>_orig and divide it by its spectral norm before
    each forward (buffers <name>_u, <name>_v hold the power iteration's vectors; dim: 1 for the
    transposed convolutions, else 0). Returns the module."""
    if dim is None:
        dim = 1 if "ConvTranspose" in type(module).__name__ else 0
    if _find(module, SpectralNorm, name) is not None:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters.get(name)
    if weight is None:
        raise DomainError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
    with no_grad():
        h, w = fn.reshape_weight_to_matrix(weight).shape
        u = fn._normalize(ops.randn(h, dtype=weight.dtype, device=weight.device))
        v = fn._normalize(ops.randn(w, dtype=weight.dtype, device=weight.device))
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    fn.register(module)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Turn module.<name> back into one parameter (weight_orig / sigma with the current u, v)."""
    fn = _find(module, SpectralNorm, name)
    if fn is None:
        raise DomainError(f"spectral_norm of '{name}' not found in {module}")
    fn.remove(module)
    fn.unregister()
    return module


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) without its parameter initialisation: the values are
    whatever the constructor allocated (zeros in nbflow) and are to be set by the caller.

    PyTorch builds the module on the meta device; nbflow has none, so the initialisation is
    skipped by making the class's `reset_parameters` do nothing during construction (the
    layers initialise there, as PyTorch's do). A `device` argument moves the module there
    afterwards (nbflow's layers take none). A class with neither `reset_parameters` nor a
    `device` argument is refused, as PyTorch refuses one without `device`."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    takes_device = "device" in inspect.signature(module_cls).parameters
    if not takes_device and not hasattr(module_cls, "reset_parameters"):
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    device = None if takes_device else kwargs.pop("device", None)
    uninitialised = type(module_cls.__name__, (module_cls,), {"reset_parameters": _skip})
    module = uninitialised(*args, **kwargs)
    module.__class__ = module_cls
    return module.to(device) if device is not None else module


def _skip(self, *args, **kwargs) -> None:
    """reset_parameters during skip_init: no initialisation."""
