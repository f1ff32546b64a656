"""PyTorch's torch.nn.utils.prune: masks that zero parts of a module's parameter.

Pruning `module.weight` moves the parameter to `weight_orig`, adds the buffer `weight_mask`
(1 keeps an entry, 0 prunes it) and makes `weight` a plain attribute, weight_orig * mask,
recomputed by a forward pre-hook before each forward (the gradient reaches weight_orig through
the mask, so pruned entries get none). The names are PyTorch's, so its state_dicts of pruned
modules load as they are. Pruning the same parameter again combines the masks in a
PruningContainer: the new method prunes among the entries (or, structured, the channels) left.
`remove` makes the pruned weight the parameter again; `is_pruned` tells whether any
submodule is pruned. Masks are computed on the host in numpy (they are not differentiated),
then put on the parameter's device; the random methods draw from nbflow's default generator.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...core import no_grad
from ...core.errors import ArgumentError, DomainError, ShapeError
from ...eager.tensor import Tensor, tensor
from ...ops import creation
from ..modules.module import Module, Parameter
from .legacy import _WeightHook

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


# ---------------------------------------------------------------- amounts


def _check_amount(amount):
    """PyTorch's checks: an int count >= 0 or a float fraction in [0, 1]."""
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise ArgumentError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise DomainError(
            f"amount={amount} should either be a float in the range [0, 1] or a "
            "non-negative integer"
        )


def _count(amount, size: int) -> int:
    """How many of `size` entries (or channels) the amount prunes."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise DomainError(
                f"amount={amount} should be smaller than the number of parameters to prune={size}"
            )
        return int(amount)
    return round(float(amount) * size)


def _host(t) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy() if isinstance(t, Tensor) else t)


# ---------------------------------------------------------------- methods


class BasePruningMethod(_WeightHook):
    """A pruning method: compute_mask(t, default_mask) gives the new mask (numpy arrays in,
    a numpy array out); as a forward pre-hook it sets module.<name> = <name>_orig * mask."""

    PRUNING_TYPE = "unstructured"  # or "structured" (whole channels along self.dim), "global"
    name: str

    def compute_mask(self, t: np.ndarray, default_mask: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute_weight(self, module, training=True):
        return self.apply_mask(module)

    def apply_mask(self, module):
        """The pruned tensor: the original times the mask."""
        return getattr(module, self.name + "_orig") * getattr(module, self.name + "_mask")

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores=None, **kwargs):
        """Prune module.<name> with cls(*args, **kwargs), combining with earlier pruning."""
        method = cls(*args, **kwargs)
        method.name = name
        earlier = _find_pruning(module, name)
        if earlier is not None:
            earlier.unregister()
            method = _combined(earlier, method)
            method.name = name
        pruned = name + "_orig" in module._parameters
        if not pruned and name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter {name!r} to prune")
        orig = module._parameters[name + "_orig" if pruned else name]
        scores = orig if importance_scores is None else importance_scores
        if _host(scores).shape != tuple(orig.shape):
            raise ShapeError(
                "importance_scores should have the same shape as parameter "
                f"{name} of {type(module).__name__}"
            )
        default = _host(getattr(module, name + "_mask")) if pruned else np.ones(orig.shape)
        mask = method.compute_mask(_host(scores), default_mask=default)
        mask_tensor = tensor(mask.astype(_host(orig).dtype), device=orig.device)
        if not pruned:
            del module._parameters[name]
            module.register_parameter(name + "_orig", orig)
            module.register_buffer(name + "_mask", mask_tensor)
        else:
            setattr(module, name + "_mask", mask_tensor)
        setattr(module, name, method.apply_mask(module))
        method.register(module)
        return method

    def prune(self, t):
        """t pruned by this method's mask of it (t unchanged)."""
        return t * tensor(self.compute_mask(_host(t), np.ones(t.shape)), dtype=t.dtype)

    def remove(self, module: Module):
        """Make the pruned tensor the parameter again, without the mask (the pruning stays)."""
        if not hasattr(self, "handles"):
            raise DomainError(f"Parameter '{self.name}' of module {module} has to be pruned")
        with no_grad():
            weight = self.apply_mask(module)
        self.unregister()
        delattr(module, self.name)
        del module._parameters[self.name + "_orig"]
        del module._buffers[self.name + "_mask"]
        module.register_parameter(self.name, Parameter(weight.detach()))


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each method prunes among what the earlier left."""

    def __init__(self, *methods):
        self._pruning_methods = tuple(methods)
        self.PRUNING_TYPE = methods[-1].PRUNING_TYPE

    def add_pruning_method(self, method):
        self._pruning_methods += (method,)
        self.PRUNING_TYPE = method.PRUNING_TYPE

    def compute_mask(self, t, default_mask):
        """The last method's mask over what default_mask keeps: among the entries left
        (unstructured), the channels along its dim with any entry left (structured), or over
        the whole tensor (global: the method multiplies by default_mask itself)."""
        method = self._pruning_methods[-1]
        if method.PRUNING_TYPE == "global":
            return method.compute_mask(t, default_mask)
        mask = default_mask.copy()
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            mask[keep] = method.compute_mask(t[keep], default_mask=default_mask[keep])
            return mask
        dim = method.dim % t.ndim
        others = tuple(a for a in range(t.ndim) if a != dim)
        channels = np.flatnonzero(default_mask.sum(axis=others) != 0)
        part = method.compute_mask(np.take(t, channels, dim), np.take(default_mask, channels, dim))
        index = [slice(None)] * t.ndim
        index[dim] = channels
        mask[tuple(index)] = part
        return mask * default_mask


def _combined(earlier: BasePruningMethod, method: BasePruningMethod) -> PruningContainer:
    if isinstance(earlier, PruningContainer):
        earlier.add_pruning_method(method)
        return earlier
    return PruningContainer(earlier, method)


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    def compute_mask(self, t, default_mask):
        return default_mask.copy()


class _Unstructured(BasePruningMethod):
    """Prunes the `amount` entries of lowest score."""

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def scores(self, t: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        n = _count(self.amount, t.size)
        mask = default_mask.copy()
        if n:
            mask.reshape(-1)[np.argsort(self.scores(t).reshape(-1), kind="stable")[:n]] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes `amount` entries chosen at random."""

    def scores(self, t):
        return creation.default_generator.numpy.random(t.size)


class L1Unstructured(_Unstructured):
    """Prunes the `amount` entries of smallest absolute value."""

    def scores(self, t):
        return np.abs(t)


class _Structured(BasePruningMethod):
    """Prunes the `amount` channels along `self.dim` of lowest score."""

    PRUNING_TYPE = "structured"
    amount: int | float
    dim: int

    def scores(self, t: np.ndarray, dim: int) -> np.ndarray:
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        dim = self.dim % t.ndim
        pruned = np.argsort(self.scores(t, dim), kind="stable")[: _count(self.amount, t.shape[dim])]
        mask = default_mask.copy()
        index = [slice(None)] * t.ndim
        index[dim] = pruned
        mask[tuple(index)] = 0
        return mask


class RandomStructured(_Structured):
    """Prunes `amount` channels along `dim`, chosen at random."""

    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def scores(self, t, dim):
        return creation.default_generator.numpy.random(t.shape[dim])


class LnStructured(_Structured):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm (n a number, inf,
    -inf or "fro", which is 2; each channel's entries taken as one vector)."""

    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        if n != "fro" and (isinstance(n, bool) or not isinstance(n, numbers.Real)):
            raise DomainError(f"ln_structured: n must be a number, inf, -inf or 'fro', got {n!r}")
        self.amount, self.n, self.dim = amount, n, dim

    def scores(self, t, dim):
        channels = np.moveaxis(t, dim, 0).reshape(t.shape[dim], -1)
        return np.linalg.norm(channels, ord=2 if self.n == "fro" else self.n, axis=1)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given mask is 0 (over the whole tensor: PyTorch's "global" type)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = _host(mask)

    def compute_mask(self, t, default_mask):
        if self.mask.shape != default_mask.shape:
            raise ShapeError(
                f"custom_from_mask: mask of shape {self.mask.shape} for a tensor "
                f"of shape {default_mask.shape}"
            )
        return default_mask * self.mask


# ---------------------------------------------------------------- functions


def _find_pruning(module: Module, name: str):
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, BasePruningMethod) and hook.name == name:
            return hook
    return None


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs together: the method's mask computed over all of their
    entries as one vector (the amount counts over them all), each pair getting its part."""
    parameters = list(parameters)
    scores = importance_scores or {}
    pieces, defaults = [], []
    for module, name in parameters:
        pruned = name + "_orig" in module._parameters
        orig = getattr(module, name + "_orig" if pruned else name)
        pieces.append(_host(scores.get((module, name), orig)).reshape(-1))
        mask = getattr(module, name + "_mask") if pruned else None
        defaults.append(np.ones(orig.numel()) if mask is None else _host(mask).reshape(-1))
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise ArgumentError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    mask = PruningContainer(method).compute_mask(np.concatenate(pieces), np.concatenate(defaults))
    start = 0
    for (module, name), piece in zip(parameters, pieces):
        part = mask[start : start + piece.size]
        start += piece.size
        shape = getattr(module, name).shape
        custom_from_mask(module, name, part.reshape(shape))


def remove(module, name):
    """Make module.<name> a parameter again holding the pruned values (PyTorch's remove)."""
    method = _find_pruning(module, name)
    if method is None:
        raise DomainError(
            f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
        )
    method.remove(module)
    return module


def is_pruned(module) -> bool:
    """Whether any of module's submodules (itself included) has a pruned parameter."""
    return any(
        isinstance(hook, BasePruningMethod)
        for m in module.modules()
        for hook in m._forward_pre_hooks.values()
    )
