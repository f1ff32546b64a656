"""Module: the base class of layers and models, with parameters registered on assignment.

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(64, 32)       # a submodule
            self.scale = nn.Parameter([1.0])      # a parameter (a Tensor with requires_grad)
            self.register_buffer("seen", nbflow.zeros(1))   # a buffer: state, not trained

        def forward(self, x):
            return self.hidden(x).relu() * self.scale

Assigning an attribute registers it by what it is: a Module as a child, a leaf Tensor that
requires grad as a parameter, a Tensor assigned to a registered buffer's name as that buffer.
Other values (plain tensors included, as in PyTorch) are ordinary attributes. Registered values
also live in the instance `__dict__`, so reading `self.weight` in `forward` costs a plain
attribute lookup.

`state_dict()` maps dotted names ("hidden.weight") to detached Tensors sharing the parameters'
memory (PyTorch's semantics: copy them, or save them, to keep a snapshot); `load_state_dict`
takes Tensors or numpy arrays and copies them into the existing tensors in place, so optimizers
and jitted functions holding those tensors keep working.

A module is made eagerly wherever it is made: inside `program_guard` or a traced function too,
its `__init__` runs in eager mode, so its parameters are tensors, initialised at once, that a
program captures where it uses them (as it does a module made outside), not ops recorded into
the program.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter, OrderedDict
from typing import NamedTuple

import numpy as np

from ... import ops
from ...core import argument_error, graph_mode, no_grad, use_trace
from ...core import dtypes as dt
from ...core.errors import (
    ArgumentError,
    DomainError,
    DTypeError,
    NbflowError,
    ShapeError,
    UnsupportedError,
)
from ...core.hooks import HookDict, RemovableHandle, add_node_hook
from ...eager.tensor import EagerTrace, Tensor, from_numpy, tensor
from ...graph.jit import zero_grads
from ..parameter import assign_buffer, buffer_persistence, is_lazy


class StateDictError(NbflowError, KeyError):
    """load_state_dict(strict=True): keys missing from the state, or not in the module."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


def Parameter(data, dtype=None) -> Tensor:  # a function named like PyTorch's class
    """A trainable tensor: a float leaf Tensor with requires_grad=True.

    A Tensor's buffer is shared (no copy, like torch.nn.Parameter); array data and nested lists
    are copied (float32 by default for Python floats). Integer data raises DTypeError."""
    if isinstance(data, Tensor) and (dtype is None or dt.as_dtype(dtype) == data.dtype):
        t = type(data)(data._data)  # (a GPU tensor stays one)
    else:
        t = tensor(data, dtype=dtype)
    return t.requires_grad_(True)


def _is_parameter(value) -> bool:
    return isinstance(value, Tensor) and value.requires_grad and value.is_leaf


# modules made so far, by kind: the prefix of their parameters' names in programs
_MADE: Counter = Counter()


def _name_state(module, name: str, t) -> None:
    """Name a parameter or buffer for the programs that capture it: "<kind>_<k>.<attr>", k
    counting the modules of that kind (PaddlePaddle's "linear_0.w_0", with PyTorch's attribute
    names). A tensor keeps its first name (one shared by two modules, a tied weight)."""
    if not isinstance(t, Tensor) or getattr(t, "_name", None) is not None:
        return
    prefix = module.__dict__.get("_prefix")
    if prefix is None:
        kind = type(module).__name__.lower()
        prefix = module.__dict__["_prefix"] = f"{kind}_{_MADE[kind]}"
        _MADE[kind] += 1
    t._name = f"{prefix}.{name}"


# bumped by every attribute change of any module (a train/eval flag, a submodule): the
# cached mode_flags() of every module are then worked out again
_EPOCH = [0]


def _made_eagerly(init):
    """A module's `__init__` that runs in eager mode under a graph trace (see the module's doc):
    recorded into a program, `nn.Linear(3, 2)`'s parameters would be vars with no value."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        if not graph_mode():
            return init(self, *args, **kwargs)
        with use_trace(_EAGER):
            return init(self, *args, **kwargs)

    return __init__


_EAGER = EagerTrace()


class Module:
    """Base class of every layer and model: subclasses set attributes in `__init__` (after
    `super().__init__()`) and define `forward`; calling the module calls `forward`."""

    training: bool

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _made_eagerly(cls.__init__)

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = HookDict()
        d["_forward_hooks"] = HookDict()
        d["_backward_hooks"] = HookDict()

    # -------------------------------------------------------------- registration

    def __setattr__(self, name: str, value) -> None:
        _EPOCH[0] += 1
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() is called "
                f"(call super().__init__() first in {type(self).__name__}.__init__)"
            )
        params, buffers, modules = d["_parameters"], d["_buffers"], d["_modules"]
        if isinstance(value, Module):
            self._forget(name, "_modules")
            modules[name] = value
        elif buffer_persistence(value) is not None:  # nn.Buffer(t) (nn/parameter.py)
            return assign_buffer(self, name, value)
        elif name in params and (value is None or isinstance(value, Tensor)):
            params[name] = value  # stays a parameter (also when frozen: requires_grad False)
            _name_state(self, name, value)
        elif name in buffers and (value is None or isinstance(value, Tensor)):
            buffers[name] = value
            _name_state(self, name, value)
        elif _is_parameter(value):
            self._forget(name, "_parameters")
            params[name] = value
            _name_state(self, name, value)
        else:
            self._forget(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        _EPOCH[0] += 1
        self._forget(name)
        object.__delattr__(self, name)

    def _forget(self, name: str, keep: str | None = None) -> None:
        """Drop `name` from the registries other than `keep`: one assigned again in its own
        registry keeps its place there (the order of children and of state_dict, as PyTorch)."""
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry != keep:
                d[registry].pop(name, None)
        d["_non_persistent"].discard(name)

    def _check_name(self, name: str, kind: str) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"{kind} name must be a non-empty string without '.', got {name!r}")
        if hasattr(type(self), name):
            raise KeyError(f"{kind} name {name!r} clashes with an attribute of the class")

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Register `param` (a float Tensor, made to require grad; or None) as a parameter."""
        self._check_name(name, "parameter")
        if param is not None:
            if not isinstance(param, Tensor) or not param.is_leaf:
                raise ArgumentError(f"parameter {name!r} must be a leaf Tensor or None")
            param.requires_grad_(True)
        self._forget(name, "_parameters")
        self.__dict__["_parameters"][name] = param
        _name_state(self, name, param)
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, value: Tensor | None, persistent: bool = True) -> None:
        """Register `value` as a buffer: module state that is not trained (running statistics).
        Non-persistent buffers are left out of state_dict()."""
        self._check_name(name, "buffer")
        if value is not None and not isinstance(value, Tensor):
            raise ArgumentError(f"buffer {name!r} must be a Tensor or None")
        self._forget(name, "_buffers")
        self.__dict__["_buffers"][name] = value
        _name_state(self, name, value)
        if not persistent:
            self.__dict__["_non_persistent"].add(name)
        object.__setattr__(self, name, value)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise ArgumentError(f"{name!r}: {type(module).__name__} is not a Module")
        _EPOCH[0] += 1
        self._forget(name, "_modules")
        self.__dict__["_modules"][name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    # -------------------------------------------------------------- devices

    def to(self, device=None, dtype=None) -> Module:
        """Move every parameter and buffer to `device` ("cpu", "cuda", "cuda:N") and cast
        the floating-point ones to `dtype` (`to(nbflow.float64)` casts only), in place;
        returns self. Create optimizers after moving, as in PyTorch: they hold the tensors."""
        if dtype is None and device is not None and not isinstance(device, str):
            device, dtype = None, device

        done = {}  # id(tensor) -> its moved tensor: tied weights stay one tensor

        def moved(t):
            if id(t) not in done:
                cast = dtype if dtype is not None and dt.is_float(t.dtype) else None
                new = t.detach().to(device, cast)
                if new._data is t._data:  # nothing to move or cast: the tensor itself stays
                    new = t
                elif t.requires_grad:  # a parameter: its gradient goes along, as PyTorch's
                    new.requires_grad_(True)
                    new.grad = None if t.grad is None else t.grad.to(device, cast)
                done[id(t)] = new
            return done[id(t)]

        for module in dict(self.named_modules()).values():
            for registry in (module._parameters, module._buffers):
                for name, value in list(registry.items()):
                    if value is not None:
                        setattr(module, name, moved(value))
        return self

    def float(self) -> Module:
        return self.to(dtype=dt.float32)

    def double(self) -> Module:
        return self.to(dtype=dt.float64)

    def half(self) -> Module:
        return self.to(dtype=dt.float16)

    def cuda(self, index: int = 0) -> Module:
        return self.to(f"cuda:{index}")

    def cpu(self) -> Module:
        return self.to("cpu")

    # -------------------------------------------------------------- traversal

    def named_modules(self, prefix: str = "", memo: set | None = None):
        """(dotted name, module) for this module and every descendant, each module once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named(self, registry: str, prefix: str, recurse: bool):
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, t in getattr(module, registry).items():
                if t is None or id(t) in seen:  # a shared tensor is listed once
                    continue
                seen.add(id(t))
                yield (f"{module_prefix}.{name}" if module_prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """(dotted name, parameter) pairs, in registration order; shared ones once."""
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> Module:
        """Call fn on every submodule (children first) and on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -------------------------------------------------------------- modes and gradients

    def train(self, mode: bool = True) -> Module:
        """Set the `training` flag of this module and every descendant."""
        if not isinstance(mode, bool):
            raise ArgumentError(f"train(mode): mode must be a bool, got {type(mode).__name__}")
        _EPOCH[0] += 1
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def mode_flags(self) -> tuple:
        """The `training` flags of this module and its descendants (@nbflow.jit keys its
        traces on them), cached until a module attribute changes anywhere."""
        cached = self.__dict__.get("_mode_flags")
        if cached is not None and cached[0] == _EPOCH[0]:
            return cached[1]
        # a module with hooks adds their ids: a trace made before a hook was registered
        # (or after it was removed) is not the one to run
        flags = tuple(
            (m.training, m._hook_ids()) if m._has_hooks() else m.training
            for _, m in self.named_modules()
        )
        self.__dict__["_mode_flags"] = (_EPOCH[0], flags)
        return flags

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Freeze (False) or unfreeze every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (set_to_none=False: fill it with zeros in
        place); under @jit, the traced step's (graph/jit.py's zero_grads)."""
        zero_grads(self.parameters(), set_to_none)

    # -------------------------------------------------------------- state

    def state_dict(self, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name, as Tensors.

        Each value is detached and shares memory with the module's tensor (keep_vars=True:
        the tensors themselves), as in PyTorch: later training changes the values. Use
        `{k: v.numpy().copy() for k, v in sd.items()}` (or save it) for a snapshot."""
        out = OrderedDict()
        self._save_to(out, prefix, keep_vars)
        return out

    # entries a state_dict from an older nbflow may lack (they keep their value when loading)
    optional_state: tuple[str, ...] = ()

    def _optional_keys(self, prefix: str = "") -> set[str]:
        keys = {prefix + name for name in self.optional_state}
        for name, child in self._modules.items():
            if child is not None:
                keys |= child._optional_keys(f"{prefix}{name}.")
        return keys

    def _save_to(self, out: OrderedDict, prefix: str, keep_vars: bool) -> None:
        """Into `out`, under `prefix` as given (PyTorch's): this module's entries, then each
        child's, a child registered under two names under both (PyTorch's keys)."""
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child._save_to(out, f"{prefix}{name}.", keep_vars)

    def load_state_dict(self, state, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy `state` (name -> Tensor or numpy array) into the parameters and buffers, in
        place and under no_grad, so optimizers and jitted functions holding them keep working.
        assign=True (PyTorch's) makes the state's tensors the module's instead, sharing their
        memory (a parameter keeps the module's requires_grad); create optimizers after it.

        Every value is checked before anything is written (a failed load changes nothing):
        a shape mismatch raises ShapeError and a dtype mismatch DTypeError, naming the key
        (Python lists and scalars are converted to the target's dtype). With strict=True,
        missing or unexpected keys raise StateDictError (a KeyError); with strict=False they
        are skipped. Returns (missing_keys, unexpected_keys)."""
        if not hasattr(state, "keys"):
            raise ArgumentError(f"load_state_dict expects a mapping, got {type(state).__name__}")
        targets = self.state_dict(keep_vars=True)
        optional = self._optional_keys()
        missing = [k for k in targets if k not in state and k not in optional]
        unexpected = [k for k in state if k not in targets]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys: {', '.join(missing)}")
            if unexpected:
                parts.append(f"unexpected keys: {', '.join(map(str, unexpected))}")
            raise StateDictError(
                f"load_state_dict into {type(self).__name__}: {'; '.join(parts)} "
                "(strict=False loads the keys that match)"
            )
        for path, module in self.named_modules():  # lazy modules take their shapes from it
            if hasattr(module, "materialize_from"):
                module.materialize_from(state, f"{path}." if path else "")
        sources = []
        for key, target in targets.items():
            if key in state and not is_lazy(target):  # (a lazy entry in the state, too)
                sources.append((key, target, _source(key, state[key], target)))
        with no_grad():
            for key, target, source in sources:
                if assign:
                    self._assign(key, target, source)
                else:
                    target.copy_(source)
        return IncompatibleKeys(missing, unexpected)

    def _assign(self, key: str, target: Tensor, source: Tensor) -> None:
        """load_state_dict(assign=True) of one entry: a new leaf on the source's memory."""
        path, _, name = key.rpartition(".")
        new = type(source)(source._data)
        if target.requires_grad:
            new.requires_grad_(True)
        setattr(self.get_submodule(path), name, new)  # (a parameter or buffer stays one)

    # -------------------------------------------------------------- calling and printing

    def forward(self, *args, **kwargs):
        raise UnsupportedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        try:
            if not self._has_hooks():
                return self.forward(*args, **kwargs)
            return self._call_with_hooks(args, kwargs)
        except AttributeError as e:  # forward read x.ndim of a non-tensor x: name the argument
            error = argument_error(
                f"{type(self).__name__}.forward", inspect.signature(self.forward), args, kwargs, e
            )
            if error is None:
                raise
            raise error from None

    # -------------------------------------------------------------- hooks

    def _has_hooks(self) -> bool:
        d = self.__dict__
        return bool(
            d.get("_forward_pre_hooks") or d.get("_forward_hooks") or d.get("_backward_hooks")
        )

    def _hook_ids(self) -> tuple:
        d = self.__dict__
        return tuple(tuple(d[k]) for k in _HOOK_TABLES)

    def _add_hook(self, table: str, hook) -> RemovableHandle:
        if not callable(hook):
            raise ArgumentError(f"a module hook must be callable, got {type(hook).__name__}")
        hooks = self.__dict__.setdefault(table, HookDict())
        handle = _ModuleHookHandle(hooks)
        hooks[handle.id] = hook
        _EPOCH[0] += 1  # jit traces keyed on mode_flags() see the new hook
        return handle

    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """hook(module, args) before forward: it may return new args (a tuple, or one value
        that becomes a 1-tuple). Under @nbflow.jit hooks run once, when the call is traced."""
        return self._add_hook("_forward_pre_hooks", hook)

    def register_forward_hook(self, hook) -> RemovableHandle:
        """hook(module, args, output) after forward: a value it returns replaces the output."""
        return self._add_hook("_forward_hooks", hook)

    def register_full_backward_hook(self, hook) -> RemovableHandle:
        """hook(module, grad_input, grad_output) once the gradients with respect to the
        module's positional tensor inputs are computed: tuples with None where an input (or
        output) has no gradient. It may return a tuple of replacement grad_input. Eager
        mode only: calling the module under @nbflow.jit raises UnsupportedError."""
        return self._add_hook("_backward_hooks", hook)

    def _call_with_hooks(self, args, kwargs):
        d = self.__dict__
        for hook in list(d.get("_forward_pre_hooks", {}).values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        backward_hooks = list(d.get("_backward_hooks", {}).values())
        state = None
        if backward_hooks:
            args, state = _watch_inputs(self, args, backward_hooks)
        output = self.forward(*args, **kwargs)
        for hook in list(d.get("_forward_hooks", {}).values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        if state is not None:
            output = _watch_outputs(output, state)
        return output

    # -------------------------------------------------------------- lookups by name

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ("" is this module); AttributeError if absent."""
        if target == "":
            return self
        module = self
        for name in target.split("."):
            if not hasattr(module, name):
                raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
            module = getattr(module, name)
            if not isinstance(module, Module):
                raise AttributeError(f"`{name}` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put `module` at a dotted path whose parent exists (strict=True: only replace an
        existing submodule)."""
        if target == "":
            raise DomainError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise DomainError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def _get_registered(self, target: str, registry: str, what: str):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if name not in getattr(module, registry):
            raise AttributeError(f"`{name}` is not {what}")
        return getattr(module, name)

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at a dotted path ("layer.weight"); AttributeError if absent."""
        return self._get_registered(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path ("bn.running_mean"); AttributeError if absent."""
        return self._get_registered(target, "_buffers", "a buffer")

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in repr() (its settings)."""
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, child in self._modules.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        if not self._modules:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks")


class _ModuleHookHandle(RemovableHandle):
    def remove(self) -> None:
        _EPOCH[0] += 1  # jit traces keyed on mode_flags() stop using the hook
        super().remove()


class _BackwardState:
    def __init__(self, module, hooks, n_args):
        self.module, self.hooks = module, hooks
        self.n_args = n_args
        self.input_slots: list[int] = []  # which args pass through the inputs' node
        self.inputs: list[Tensor] = []  # those args (for their shapes)
        self.grad_output = None


def _watch_inputs(module, args, hooks):
    if graph_mode():
        raise UnsupportedError(
            f"{type(module).__name__}: full backward hooks run in eager mode only; remove them "
            "(handle.remove()) before calling the module under @nbflow.jit"
        )
    state = _BackwardState(module, hooks, len(args))
    slots = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not slots:
        return args, state
    state.input_slots, state.inputs = slots, [args[i] for i in slots]
    state.args = list(enumerate(args))
    state.constants = {i for i, a in state.args if isinstance(a, Tensor) and i not in slots}
    watched = _through_one_node(
        [args[i] for i in slots], lambda grads: _on_grad_input(state, grads)
    )
    args = list(args)
    for i, t in zip(slots, watched):
        args[i] = t
    return tuple(args), state


def _watch_outputs(output, state: _BackwardState):
    single = isinstance(output, Tensor)
    outputs = [output] if single else list(output) if isinstance(output, (tuple, list)) else []
    slots = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
    if not slots:
        return output
    # the hook must not hold the outputs: they lead to the node it is kept under
    shapes = [outputs[i].shape for i in slots]
    n = len(outputs)
    watched = _through_one_node(
        [outputs[i] for i in slots], lambda grads: _on_grad_output(state, slots, shapes, n, grads)
    )
    for i, t in zip(slots, watched):
        outputs[i] = t
    return outputs[0] if single else type(output)(outputs)


def _through_one_node(tensors, on_grads):
    """The tensors again, computed by one split node whose gradients go to on_grads(list)."""
    if len({(t.dtype, t.device) for t in tensors}) > 1:
        raise UnsupportedError(
            "full backward hooks need the module's tensor inputs (and outputs) that require "
            "grad to share one dtype and device"
        )
    flat = ops.concat(*[t.reshape(-1) for t in tensors]) if len(tensors) > 1 else tensors[0]
    pieces = ops.split(flat.reshape(-1), [t.size for t in tensors])
    add_node_hook(pieces[0], on_grads)
    return [p.reshape(*t.shape) for p, t in zip(pieces, tensors)]


def _shaped(grads, shapes):
    return [None if g is None else g.reshape(*shape) for g, shape in zip(grads, shapes)]


def _on_grad_output(state, slots, shapes, n_outputs, grads):
    grad_output = [None] * n_outputs
    for i, g in zip(slots, _shaped(grads, shapes)):
        grad_output[i] = g
    state.grad_output = tuple(grad_output)
    if not state.input_slots:  # no input needs a gradient: PyTorch calls the hooks now
        _call_backward_hooks(state, (None,) * state.n_args)


def _on_grad_input(state, grads):
    # tensor arguments that need no gradient get zeros, as from PyTorch's hook function
    grad_input = [ops.zeros_like(a) if i in state.constants else None for i, a in state.args]
    for i, g in zip(state.input_slots, _shaped(grads, [t.shape for t in state.inputs])):
        grad_input[i] = g
    new = _call_backward_hooks(state, tuple(grad_input))
    if new is not None:
        for k, i in enumerate(state.input_slots):
            g = new[i]
            grads[k] = None if g is None else g.reshape(-1)


def _call_backward_hooks(state, grad_input):
    grad_output = state.grad_output or ()
    replaced = None
    for hook in state.hooks:
        result = hook(state.module, grad_input, grad_output)
        if result is not None:
            result = tuple(result)
            if len(result) != len(grad_input):
                raise DomainError(
                    f"backward hook returned {len(result)} gradients for {len(grad_input)} inputs"
                )
            grad_input = replaced = result
    return replaced


def _source(key: str, value, target: Tensor) -> Tensor:
    """`value` as a Tensor ready to copy into `target`, or a typed error naming the key."""
    if isinstance(value, Tensor):
        array = value._data
    elif isinstance(value, np.ndarray):
        array = value
    else:
        try:
            array = np.asarray(value, dtype=target.dtype)
        except (TypeError, ValueError) as e:
            message = f"load_state_dict: {key!r}: cannot convert to {target.dtype}: {e}"
            raise DTypeError(message) from None
    if array.shape != target.shape:
        raise ShapeError(
            f"load_state_dict: {key!r} has shape {tuple(array.shape)} in the state but "
            f"{tuple(target.shape)} in the module"
        )
    if array.dtype != target.dtype:
        raise DTypeError(
            f"load_state_dict: {key!r} has dtype {array.dtype} in the state but "
            f"{target.dtype} in the module; cast it first (e.g. .astype({str(target.dtype)!r}))"
        )
    if isinstance(value, Tensor):
        return value
    # (ascontiguousarray makes a 0-D array 1-D: reshape it back)
    return from_numpy(np.ascontiguousarray(array).reshape(array.shape))


__all__ = ["Module", "Parameter", "StateDictError"]
