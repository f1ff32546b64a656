"""PyTorch's torch.nn.utils.parametrize: a tensor of a module computed from others.

register_parametrization(module, "weight", p) moves the parameter to
module.parametrizations.weight.original (or original0, original1, ... when p.right_inverse
returns a tuple) and makes `module.weight` a property that calls p on them at each access,
so gradients reach the originals and the state dict has PyTorch's keys. As in PyTorch the
module's class is swapped for a subclass carrying the property (a property must live on the
class); caching (parametrize.cached) is not implemented.
"""

from __future__ import annotations

from ...core import no_grad
from ...core.errors import DomainError
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module, Parameter


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s)."""

    def __init__(self, modules, original):
        super().__init__(modules)
        inverse = getattr(modules[0], "right_inverse", None)
        with no_grad():
            new = inverse(original) if inverse is not None else original
        self.is_tensor = not isinstance(new, (tuple, list))
        if self.is_tensor:
            self.original = Parameter(new if new is not original else original)
        else:
            self.ntensors = len(new)
            for i, t in enumerate(new):
                setattr(self, f"original{i}", Parameter(t))

    def forward(self):
        """The parametrized tensor: the first parametrization on the originals, then the rest
        on its result."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_property(module: Module, name: str) -> None:
    cls = type(module)
    if not getattr(cls, "_is_parametrized_class", False):
        cls = type(f"Parametrized{cls.__name__}", (cls,), {"_is_parametrized_class": True})
        module.__class__ = cls

    def get(self):
        return self.parametrizations[name]()

    def set_(self, value):
        raise RuntimeError(f"{name!r} is parametrized: assign to its originals instead")

    setattr(cls, name, property(get, set_))


def register_parametrization(module: Module, tensor_name: str, parametrization, *, unsafe=False):
    """Make module.<tensor_name> the output of `parametrization` (a Module) on the original
    parameter; a second registration on the same name chains after the first."""
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    original = getattr(module, tensor_name)
    if not is_parametrized(module):
        module.parametrizations = ModuleDict()
    delattr(module, tensor_name)
    module.parametrizations[tensor_name] = ParametrizationList([parametrization], original)
    _inject_property(module, tensor_name)
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    plist = module.__dict__.get("_modules", {}).get("parametrizations")
    if plist is None:
        return False
    return tensor_name is None or tensor_name in plist._modules


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized=True):
    """Turn module.<tensor_name> back into a plain parameter: its current parametrized value
    (leave_parametrized) or the single original."""
    if not is_parametrized(module, tensor_name):
        raise DomainError(
            f"Module {type(module).__name__} does not have a parametrization on {tensor_name}"
        )
    plist = module.parametrizations[tensor_name]
    with no_grad():
        if leave_parametrized:
            value = getattr(module, tensor_name).detach()
        elif plist.is_tensor:
            value = plist.original.detach()
        else:
            raise DomainError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a "
                "tensor that is parametrized in terms of a sequence of tensors."
            )
    delattr(type(module), tensor_name)
    del module.parametrizations._modules[tensor_name]
    module.__dict__.pop(tensor_name, None)
    if not module.parametrizations._modules:
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    module.register_parameter(tensor_name, Parameter(value.clone()))
    return module


__all__ = [
    "ParametrizationList",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
]
