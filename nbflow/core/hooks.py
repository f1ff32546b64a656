"""Autograd hooks on tensors (PyTorch's register_hook, retain_grad,
register_post_accumulate_grad_hook) and the handle every hook registration returns.

Hooks live here, not on the Tensor: a computed tensor's gradient is routed by its tape node
and output index (backward rebuilds Tensors around saved buffers), so a computed tensor's
hooks are kept per (node, index), in a table that forgets a node when the node is freed. A
leaf's hooks are kept by the leaf's id, forgotten when the leaf is freed. The backward
driver (nbflow/autograd/backprop.py) looks here only while some hook is registered.
"""

from __future__ import annotations

import itertools
import threading
import weakref

from .errors import ArgumentError, GradientError, ShapeError
from .op import set_grad_enabled

_ids = itertools.count()


class RemovableHandle:
    """What a register_*hook call returns: `remove()` unregisters the hook (again: nothing);
    also a context manager that removes it on exit (PyTorch's RemovableHandle)."""

    def __init__(self, table: dict):
        self.id = next(_ids)
        self._table = weakref.ref(table)  # a handle does not keep its hooks alive

    def remove(self) -> None:
        table = self._table()
        if table is not None:
            table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class HookDict(dict):
    """handle id -> hook function (a dict subclass, so handles can refer to it weakly)."""


class TensorHooks:
    """The hooks of one value: gradient hooks (in registration order), whether .grad is
    retained (a weak reference to the tensor that keeps it), and post-accumulate hooks."""

    __slots__ = ("grad_hooks", "retain", "post_hooks", "__weakref__")

    def __init__(self):
        self.grad_hooks = HookDict()
        self.retain = None
        self.post_hooks = HookDict()

    def empty(self) -> bool:
        return not self.grad_hooks and self.retain is None and not self.post_hooks


# node -> {output index: TensorHooks}; leaf id -> TensorHooks
NODE_HOOKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
LEAF_HOOKS: dict[int, TensorHooks] = {}


def hooks_of(t, create: bool = False) -> TensorHooks | None:
    """The hooks of tensor t (made, and registered, when create is set)."""
    if t._node is None:
        hooks = LEAF_HOOKS.get(id(t))
        if hooks is None and create:
            hooks = LEAF_HOOKS[id(t)] = TensorHooks()
            weakref.finalize(t, LEAF_HOOKS.pop, id(t), None)
        return hooks
    per_node = NODE_HOOKS.get(t._node)
    if per_node is None:
        if not create:
            return None
        per_node = NODE_HOOKS[t._node] = {}
    hooks = per_node.get(t._index)
    if hooks is None and create:
        hooks = per_node[t._index] = TensorHooks()
    return hooks


def any_hooks() -> bool:
    """Whether backward needs to look for hooks at all (the common case: no)."""
    return bool(NODE_HOOKS) or bool(LEAF_HOOKS)


def register_hook(t, hook):
    """Tensor.register_hook: hook(grad) -> None or a replacement gradient."""
    if not callable(hook):
        raise ArgumentError(f"register_hook expects a callable, got {type(hook).__name__}")
    if not t.requires_grad:
        raise GradientError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = hooks_of(t, create=True)
    handle = RemovableHandle(hooks.grad_hooks)
    hooks.grad_hooks[handle.id] = hook
    return handle


def retain_grad(t) -> None:
    """Tensor.retain_grad: a computed tensor's .grad is filled by backward (a leaf's always
    is; a tensor that does not require grad cannot)."""
    if not t.requires_grad:
        raise GradientError("can't retain_grad on a tensor that has requires_grad=False")
    if t._node is not None:
        hooks_of(t, create=True).retain = weakref.ref(t)


def retains_grad(t) -> bool:
    if t._node is None:
        return False
    hooks = hooks_of(t)
    return hooks is not None and hooks.retain is not None and hooks.retain() is t


def register_post_accumulate_grad_hook(t, hook):
    """hook(tensor) after backward() accumulated a leaf's .grad (not run by nbflow.grad)."""
    if not callable(hook):
        raise ArgumentError(f"register_post_accumulate_grad_hook expects a callable, got {hook!r}")
    if t._node is not None:
        raise GradientError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not t.requires_grad:
        raise GradientError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = hooks_of(t, create=True)
    handle = RemovableHandle(hooks.post_hooks)
    hooks.post_hooks[handle.id] = hook
    return handle


def run_grad_hooks(hooks: TensorHooks, g, create_graph: bool):
    """The gradient after each hook in turn (a hook returning None keeps it), then retained
    in .grad when asked (after the hooks, as in PyTorch)."""
    for hook in list(hooks.grad_hooks.values()):
        new = hook(g)
        if new is not None:
            if tuple(new.shape) != tuple(g.shape):
                raise ShapeError(
                    f"a gradient hook returned a gradient of shape {tuple(new.shape)} for a "
                    f"tensor whose gradient has shape {tuple(g.shape)}"
                )
            g = new
    target = hooks.retain() if hooks.retain is not None else None
    if target is not None:
        kept = g if create_graph else g.detach().clone()
        if target.grad is None:
            target.grad = kept
        else:
            with set_grad_enabled(create_graph):
                target.grad = target.grad + kept
    return g


def add_node_hook(t, hook) -> None:
    """hook(grads) with the gradients of all outputs of t's node at once (a list, None
    where an output got none; the hook may replace entries): for module backward hooks."""
    per_node = NODE_HOOKS.get(t._node)
    if per_node is None:
        per_node = NODE_HOOKS[t._node] = {}
    per_node.setdefault(None, []).append(hook)


def run_node_hooks(node, grads: list, create_graph: bool) -> None:
    """Apply the hooks of a node's outputs to their gradients (in the list, in place)."""
    per_node = NODE_HOOKS.get(node)
    if not per_node:
        return
    for i, hooks in list(per_node.items()):
        if i is not None and grads[i] is not None:
            grads[i] = run_grad_hooks(hooks, grads[i], create_graph)
    for hook in per_node.get(None, ()):
        hook(grads)


def run_leaf_hooks(leaf, g, create_graph: bool):
    hooks = LEAF_HOOKS.get(id(leaf))
    if hooks is None or not hooks.grad_hooks or g is None:
        return g
    return run_grad_hooks(hooks, g, create_graph)


class _Queued(threading.local):
    """The callbacks queued during this thread's backward(), run once it has accumulated
    every leaf's .grad (another thread's backward() runs its own)."""

    def __init__(self):
        self.callbacks: list = []


_queued = _Queued()


def queue_callback(callback) -> None:
    """Run callback() at the end of the backward() now running, after every leaf's .grad
    and post-accumulate hook (PyTorch's Variable._execution_engine.queue_callback, what
    DistributedDataParallel reduces its gradients from)."""
    if not callable(callback):
        raise ArgumentError(f"queue_callback expects a callable, got {type(callback).__name__}")
    _queued.callbacks.append(callback)


def run_queued_callbacks() -> None:
    """Run and forget the queued callbacks (each once, even if an earlier one raised)."""
    callbacks, _queued.callbacks = _queued.callbacks, []
    error = None
    for callback in callbacks:
        try:
            callback()
        except Exception as e:  # the others still run: each may hold a collective's turn
            error = error or e
    if error is not None:
        raise error


def run_post_accumulate_hooks(leaf) -> None:
    hooks = LEAF_HOOKS.get(id(leaf))
    if hooks is not None:
        for hook in list(hooks.post_hooks.values()):
            hook(leaf)


class GradFn:
    """What Tensor.grad_fn returns for a computed tensor: the op that made it (`name()`)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def name(self) -> str:
        return self.node.op.name

    def __eq__(self, other):
        return isinstance(other, GradFn) and other.node is self.node

    def __hash__(self):
        return id(self.node)

    def __repr__(self) -> str:
        return f"<GradFn {self.name()}>"
