"""PyTorch's torch.utils.checkpoint (activation checkpointing): `checkpoint(function, *args)`
runs `function` without keeping what its backward would need, and runs it again in the
backward pass to differentiate it. Memory for time: a checkpointed segment's activations live
only while its own backward runs.

    h = checkpoint(block, x, use_reentrant=False)

The forward runs under no_grad, through a trace that notes every tensor requiring grad that
the function reads: its arguments, and what it closes over (a module's parameters). Those
tensors are the inputs of one autograd.Function node; its backward recomputes the function
with gradients on (from the forward's random state when preserve_rng_state) and takes the
gradients of the recomputed outputs with respect to them. So gradients reach the parameters
through the ordinary backward driver: `backward()`, `nbflow.grad` and double backward
(create_graph) all work, for both of PyTorch's variants. use_reentrant=True keeps that
variant's visible rules (no keyword arguments, no gradients unless an argument requires
grad); its other limit in PyTorch, no `torch.autograd.grad`, does not apply here.

Under @nbflow.jit (and in any traced program) the same node is one op of the program whose
gradient rule traces the function again: append_backward puts the recomputation and its
gradient ops in the backward part, so the memory pass frees the segment's activations after
the forward (a jitted step of two checkpointed 3-layer blocks: 0.6-0.7 of the peak bytes
without). A function that draws random numbers (dropout) is refused there: the recomputed
ops would draw new ones when the program runs. Such a program cannot be saved (its gradient
is Python code, as any autograd.Function's).
"""

from __future__ import annotations

import contextlib
import functools
import warnings

from ..autograd.backprop import backprop, grad, toposort
from ..autograd.function import Function
from ..core import (
    STATE,
    Trace,
    enable_grad,
    graph_mode,
    is_grad_enabled,
    modes_changed,
    no_grad,
)
from ..core.errors import DomainError, GradientError, UnsupportedError
from ..eager.tensor import Tensor
from ..func import tree_flatten, tree_unflatten
from ..graph.program import Var
from ..nn.modules.container import Sequential
from ..ops.creation import get_rng_state, set_rng_state

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential", "noop_context_fn"]

_DETERMINISM_MODES = ("default", "none")


class CheckpointError(GradientError):
    """The recomputation in backward did not match the forward (PyTorch's CheckpointError)."""


def noop_context_fn():
    """The default context_fn: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _reentrant(use_reentrant) -> bool:
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details "
            "on the differences between the two variants.",
            stacklevel=3,
        )
        return True
    return bool(use_reentrant)


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=noop_context_fn,
    determinism_check="default",
    debug=False,
    **kwargs,
):
    """function(*args, **kwargs), with its activations recomputed in backward instead of kept.

    preserve_rng_state (a keyword, default True): the recomputation draws what the forward
    drew from nbflow's default generator, which is put back afterwards; an explicit
    Generator the function uses is the caller's to rewind, as in PyTorch. determinism_check
    "default" checks that the recomputed outputs have the forward's shapes and dtypes
    (CheckpointError otherwise; debug=True adds the ops each run executed). context_fn
    returns two context managers, around the forward and around the recomputation."""
    preserve = kwargs.pop("preserve_rng_state", True)
    reentrant = _reentrant(use_reentrant)
    if reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise DomainError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        if kwargs:
            raise DomainError("Unexpected keyword arguments: " + ",".join(kwargs))
    if determinism_check not in _DETERMINISM_MODES:
        raise DomainError(
            f"determinism_check should be one of {list(_DETERMINISM_MODES)}, but got "
            f"{determinism_check}"
        )
    run = _Run(function, args, kwargs, preserve, context_fn, determinism_check, debug)
    outputs, found = run.forward()
    if reentrant and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )
        return outputs
    if not is_grad_enabled() or not found:
        return outputs
    leaves, structure = tree_flatten(outputs)
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, (Tensor, Var))]
    run.output_specs = [(leaves[i].shape, leaves[i].dtype) for i in slots]
    results = _Checkpoint.apply(run, [leaves[i] for i in slots], *found)
    results = results if isinstance(results, tuple) else (results,)
    for i, r in zip(slots, results):
        leaves[i] = r
    return tree_unflatten(structure, iter(leaves))


class _Run:
    """One checkpointed call: what it needs to run again, and what its forward did."""

    def __init__(self, function, args, kwargs, preserve, context_fn, determinism, debug):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.preserve, self.context_fn = preserve, context_fn
        self.determinism, self.debug = determinism, debug
        self.rng_state = None
        self.forward_ops: list = []
        self.recompute_context = None
        self.output_specs: list = []

    def forward(self):
        """Run without recording; returns (outputs, the tensors read that require grad)."""
        self.rng_state = get_rng_state() if self.preserve else None
        forward_context, self.recompute_context = self.context_fn()
        with no_grad(), _Noting() as noted, forward_context:
            for a in self.args:  # (read or not: a jitted function's reads bypass the trace)
                noted.note(a)
            outputs = self.function(*self.args, **self.kwargs)
        self.forward_ops = noted.ops
        if noted.random and graph_mode():
            raise UnsupportedError(
                "checkpoint under nbflow.jit: the function draws random numbers "
                f"({', '.join(sorted(set(noted.random)))}), and a program's recomputation "
                "would draw new ones at run time; checkpoint a function without them (keep "
                "dropout outside it) or checkpoint in eager mode"
            )
        return outputs, list(noted.found.values())

    def recompute(self):
        """The function again with gradients on (the forward's draws); its tensor outputs."""
        before = get_rng_state() if self.preserve else None
        try:
            if self.preserve:
                set_rng_state(self.rng_state)
            with enable_grad(), _Noting() as noted, self.recompute_context:
                outputs = self.function(*self.args, **self.kwargs)
        finally:
            if self.preserve:
                set_rng_state(before)
        tensors = [leaf for leaf in tree_flatten(outputs)[0] if isinstance(leaf, (Tensor, Var))]
        self._check(tensors, noted.ops)
        return tensors

    def _check(self, tensors, ops):
        if self.determinism == "none":
            return
        specs = [(t.shape, t.dtype) for t in tensors]
        if specs == self.output_specs:
            return
        message = (
            "torch.utils.checkpoint: the recomputation in backward gave outputs of (shape, "
            f"dtype) {specs}, but the forward gave {self.output_specs}; the checkpointed "
            "function must compute the same thing when run again"
        )
        if self.debug:
            message += f"\nops of the forward: {self.forward_ops}\nops recomputed: {ops}"
        raise CheckpointError(message)


class _Checkpoint(Function):
    """The node of a checkpointed call: its inputs are the tensors the function read that
    require grad, its outputs the function's tensor outputs (computed before apply)."""

    @staticmethod
    def forward(ctx, run, outputs, *inputs):
        ctx.run = run
        ctx.save_for_backward(*inputs)  # (checked against in-place writes in backward)
        return tuple(outputs) if len(outputs) != 1 else outputs[0]

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        on_tape = functools.partial(_tape_grads, ctx.run, inputs, grads)
        in_program = functools.partial(_program_grads, ctx.run, inputs, grads)
        return (None, None, *STATE.trace.custom_gradient(on_tape, in_program))


def _tape_grads(run, inputs, grads):
    """In eager mode, the function again with gradients on and its gradients for `inputs`."""
    create_graph = is_grad_enabled()  # (the driver turns grad mode on for create_graph)
    # without create_graph the inputs are leaves while the segment is differentiated: its
    # backward stops at them instead of walking the graph before the segment
    with _as_leaves(() if create_graph else inputs):
        outputs = run.recompute()
        if not create_graph:
            _check_reached(outputs, inputs)
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
        if not pairs:
            return (None,) * len(inputs)
        outs, seeds = zip(*pairs)
        with enable_grad():
            return grad(list(outs), list(inputs), list(seeds), None, create_graph, True)


def _program_grads(run, inputs, grads):
    """Under jit, the backward appends the function's ops again (the recomputation, in the
    backward part of the program, so the memory pass frees the forward's activations after
    the forward) and their gradient ops, by the driver append_backward uses; the segment is
    cut at its inputs, whose gradients the driver's caller takes on from there."""
    with _as_leaves(inputs):
        outputs = run.recompute()
        pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None and o.requires_grad]
        if not pairs:
            return (None,) * len(inputs)
        outs, seeds = zip(*pairs)
        leaves, _ = backprop(list(outs), list(seeds), create_graph=True)
    return tuple(leaves.get(id(x), (None, None))[1] for x in inputs)


def _check_reached(outputs, inputs):
    """The recomputed graph (cut at `inputs`) must reach no other tensor requiring grad:
    one the forward did not see (read by a path that bypasses the trace) would silently get
    no gradient."""
    known = {id(t) for t in inputs}
    edges = [(o._node, o._index) for o in outputs if o._node is not None]
    for node in toposort(edges):
        for e in node.edges:
            if isinstance(e, Tensor) and id(e) not in known:
                raise CheckpointError(
                    "torch.utils.checkpoint: the recomputation read a tensor requiring grad "
                    f"(shape {tuple(e.shape)}) that the forward did not see, so it would get "
                    "no gradient; pass it to checkpoint as an argument"
                )


@contextlib.contextmanager
def _as_leaves(tensors):
    """Tensors with a history read as leaves for a while (restored on leaving). Not with
    create_graph: the recorded gradients must reach that history, at the cost of the walk."""
    cut = [(t, t._node, t._index) for t in tensors if t._node is not None]
    for t, _, _ in cut:
        t._node = None
    try:
        yield
    finally:
        for t, node, index in cut:
            t._node, t._index = node, index


class _NotingTrace:
    """Mixed into the current trace's class: every op's inputs that carry gradients are
    noted (by identity: eager tensors that require grad, or under jit the graph values
    without stop_gradient, captured tensors as their vars), the op names for debug messages
    and those of random ops. Binary operators take the general path, so none bypasses
    apply."""

    binary = Trace.binary

    def apply(self, op, args, attrs, *rest):
        for a in args:
            self.note(a)
        self.ops.append(op.name)
        if "generator" in op.attrs:
            self.random.append(op.name)
        return super().apply(op, args, attrs, *rest)

    def note(self, a):
        if not self.records:
            if type(a) is Tensor and a.requires_grad:
                self.found.setdefault(id(a), a)
            return
        if isinstance(a, (Tensor, Var)):
            v = self.value(a)  # (a captured tensor: its var, the one the ops read)
            if isinstance(v, Var) and not v.stop_gradient:
                self.found.setdefault(id(v), v)


_NOTING: dict = {}  # eager trace class -> its noting subclass


@contextlib.contextmanager
def _Noting():
    base = type(STATE.trace)
    cls = _NOTING.get(base)
    if cls is None:
        cls = _NOTING[base] = type(f"Noting{base.__name__}", (_NotingTrace, base), {})
    trace = cls.__new__(cls)
    trace.__dict__.update(getattr(STATE.trace, "__dict__", {}))
    trace.found, trace.ops, trace.random = {}, [], []
    prev, STATE.trace = STATE.trace, trace
    modes_changed()
    try:
        yield trace
    finally:
        STATE.trace = prev
        modes_changed()


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """A sequential model (an nn.Sequential or a list of functions) run in `segments`
    chunks, each but the last checkpointed (PyTorch's checkpoint_sequential)."""
    reentrant = _reentrant(use_reentrant)
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise DomainError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(
            _chain(functions[start : end + 1]),
            input,
            use_reentrant=reentrant,
            preserve_rng_state=preserve,
        )
    return _chain(functions[end + 1 :])(input)


def _chain(functions):
    def forward(x):
        for f in functions:
            x = f(x)
        return x

    return forward
