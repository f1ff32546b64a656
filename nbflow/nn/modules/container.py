"""Containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""

from __future__ import annotations

from collections import OrderedDict

from ... import ops
from ...argcheck import shown
from ...core.errors import ArgumentError, OutOfRangeError, UnsupportedError
from ...eager.tensor import Tensor
from .activation import ReLU
from .linear import Linear
from .module import Module, Parameter


def renumber(container: Module, modules) -> None:
    """Make `modules` the container's children, named "0", "1", ... in order (PyTorch's
    numbering after an insertion or a deletion); a non-Module among them changes nothing."""
    for m in modules:
        if not isinstance(m, Module):
            raise ArgumentError(f"{type(container).__name__}: {type(m).__name__} is not a Module")
    for name in list(container._modules):
        delattr(container, name)
    for i, m in enumerate(modules):
        container.add_module(str(i), m)


def insertion_index(container: Module, index: int) -> int:
    n = len(container._modules)
    if not -n <= index <= n:
        raise OutOfRangeError(f"index {index} out of range for inserting into {n} modules")
    return index + n if index < 0 else index


class ModuleList(Module):
    """A list of modules, registered as children "0", "1", ..."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def _index(self, i: int) -> int:
        n = len(self._modules)
        if not -n <= i < n:
            raise OutOfRangeError(f"index {i} out of range for {type(self).__name__} of length {n}")
        return i + n if i < 0 else i

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(list(self._modules.values())[i])
        return self._modules[str(self._index(i))]

    def __setitem__(self, i: int, module: Module) -> None:
        self.add_module(str(self._index(i)), module)

    def __delitem__(self, i) -> None:
        modules = list(self._modules.values())
        del modules[i if isinstance(i, slice) else self._index(i)]
        renumber(self, modules)

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(insertion_index(self, index), module)
        renumber(self, modules)

    def pop(self, index: int = -1) -> Module:
        module = self[index]
        del self[index]
        return module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def forward(self, *args, **kwargs):
        raise UnsupportedError(
            f"{type(self).__name__} is a container: iterate over it in the parent's forward()"
        )


class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        for name, m in dict(modules or {}).items():
            self[name] = m

    def __getitem__(self, name: str) -> Module:
        return self._modules[name]

    def __setitem__(self, name: str, module: Module) -> None:
        self._check_name(name, "module")
        self.add_module(name, module)

    def __contains__(self, name) -> bool:
        return name in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()


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
        if values is not None and not hasattr(values, "__iter__"):
            raise ArgumentError(f"ParameterList: values must be iterable, got {shown(values)}")
        for value in () if values is None else values:
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
            raise OutOfRangeError(f"index {i} out of range for ParameterList of length {n}")
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
        self.update({} if parameters is None else parameters)

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
        pairs = list(items) if hasattr(items, "__iter__") else [None]
        if not all(isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in pairs):
            what = "a mapping or (key, value) pairs"
            raise ArgumentError(f"ParameterDict: expected {what}, got {shown(parameters)}")
        for key, value in pairs:
            self[key] = value

    def forward(self, *args, **kwargs):
        raise UnsupportedError("ParameterDict is a container: use its parameters in forward()")

    def extra_repr(self) -> str:
        return "\n".join(
            f"({k}): Parameter of shape {tuple(p.shape)} ({p.dtype})"
            for k, p in self._parameters.items()
        )


__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
