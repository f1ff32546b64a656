"""Tracing: turn an eager Python function into a Program, cached per input signature.

    @nbflow.jit
    def predict(x):
        return nbflow.relu(x @ w1 + b1) @ w2      # w1, b1, w2: eager tensors in scope

    predict(x)    # first call: traces a Program for x's shape and dtype, then runs it
    predict(x)    # same signature: runs the cached Program through an Executor

Tracing calls the function once with graph Vars in place of its tensor arguments (data vars of
the example's exact shape and dtype, named after the parameters), under a GraphTrace, so every
op it calls is recorded with the same declarations and shape rules as eager mode. Python
values that are not tensors (ints, floats, strings, ...) are part of the cache key and are
baked into the Program as constants. Eager tensors the function reads (parameters from an
enclosing scope) become persistable vars bound to those very Tensor objects
(`program.captured`), so in-place updates to them between calls are seen.

Training steps: PyTorch's step traces as it is written (`opt.zero_grad(); loss = ...;
loss.backward(); opt.step()`): loss.backward() appends the loss's backward by the driver
append_backward uses and binds each captured parameter's .grad to its gradient var, step()
appends the updates minimize() appends, and each run binds the .grad the function set
(Grads, below). Such a call records nothing on the tape: its outputs are values.

Gradients: when grad mode is on and an input or a captured tensor requires grad, the
Program runs too, and the call records one node on the eager tape for the whole function.
Its gradient rule runs the gradient ops that the same driver as append_backward appended to
the Program (once, on first need), seeded with the output gradients it is given. The forward
run fetches the intermediate values those ops read (as the eager tape keeps them), so
backward() does not recompute the forward pass nor repeat its side effects. The rule runs
Programs, which record nothing on the tape; under create_graph=True it runs the forward ops it
needs and the gradient ops again as eager ops, recorded (with the forward run's random draws),
so that the gradients differentiate again (not through control flow or in-place writes through
views or into captured tensors: UnsupportedError).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
from dataclasses import dataclass, field
from functools import update_wrapper
from types import BuiltinFunctionType, FunctionType, MethodType, ModuleType

import numpy as np

from .. import ops
from ..autograd.backprop import backprop, plain_grad
from ..core import STATE, Node, is_grad_enabled, no_grad, rebuilt, set_grad_enabled, use_trace
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    GradientError,
    ShapeError,
    TracedValueError,
    UnsupportedError,
)
from ..core.views import refresh_if_stale
from ..eager.tensor import Stale, Tensor, tensor
from ..runtime.device import DeviceError
from .backward import _rename, gradients
from .executor import Executor, Scope, needed_ops
from .program import GraphTrace, Program, Var, unique

__all__ = ["JitFunction", "jit", "trace"]


# ---------------------------------------------------------------- argument trees
# Arguments may nest tensors in tuples, lists and dicts (e.g. a list of parameters); the
# tensors are the program's inputs, everything else is a constant of the signature.


def _is_tensor(x) -> bool:
    return isinstance(x, (Tensor, np.ndarray))


def _tensors(value, name: str, out: list):
    """Append (name, tensor) for each tensor in `value`, in a fixed order."""
    if _is_tensor(value):
        out.append((name, value if isinstance(value, Tensor) else tensor(value)))
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            _tensors(item, f"{name}_{i}", out)
    elif isinstance(value, dict):
        for k, item in value.items():
            _tensors(item, f"{name}_{k}", out)
    return out


def _key(value):
    """A hashable description of `value`: specs for tensors, the values of the rest."""
    if type(value) is Tensor:  # the common case, written out
        return ("tensor", value._data.shape, value._data.dtype, "cpu")
    if _is_tensor(value):
        device = value.device if isinstance(value, Tensor) else "cpu"  # a trace per device
        return ("tensor", tuple(value.shape), np.dtype(value.dtype), device)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_key(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(item)) for k, item in value.items()))
    try:
        hash(value)
    except TypeError:
        raise ArgumentError(
            f"jit: argument {value!r} is neither a tensor nor hashable, so it cannot be part "
            "of the cache key"
        ) from None
    return ("const", type(value).__name__, value)  # the type keeps 1 and 1.0 and True apart


def _modes(fn, arguments) -> tuple:
    """The train/eval flags of the modules the function reaches (through its arguments, its
    closure, or the globals it names): a Python branch on `self.training` (Dropout,
    BatchNorm) is baked into a trace, so model.eval() must select another trace."""
    candidates = [fn, *arguments.values()]  # fn itself: jit(model)
    for cell in getattr(fn, "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell
            candidates.append(cell.cell_contents)
    code = getattr(fn, "__code__", None)
    if code is not None:
        candidates += [fn.__globals__[n] for n in code.co_names if n in fn.__globals__]
    flags = []
    for obj in candidates:
        if isinstance(obj, _NOT_MODULES):  # (a module's __getattr__ misses slowly)
            continue
        mode_flags = getattr(obj, "mode_flags", None)  # an nbflow.nn.Module
        if mode_flags is not None and hasattr(obj, "training"):
            flags.append(mode_flags())
    return tuple(flags)


# what a function names that is never an nn.Module: Python modules, functions, classes
_NOT_MODULES = (ModuleType, FunctionType, BuiltinFunctionType, type)


def _replace(value, leaves):
    """`value` with each tensor (in _tensors order) replaced by next(leaves)."""
    if _is_tensor(value):
        return next(leaves)
    if isinstance(value, (tuple, list)):
        return rebuilt(type(value), [_replace(item, leaves) for item in value])
    if isinstance(value, dict):
        return {k: _replace(item, leaves) for k, item in value.items()}
    return value


def _outputs(value, out: list):
    """Collect the Vars a traced function returned (its program's outputs)."""
    if isinstance(value, Var):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _outputs(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _outputs(item, out)
    return out


def _signature(fn) -> inspect.Signature:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without one: it takes anything
        p = inspect.Parameter
        return inspect.Signature([p("args", p.VAR_POSITIONAL), p("kwargs", p.VAR_KEYWORD)])


def _bind(signature: inspect.Signature, args, kwargs) -> dict:
    """Arguments by parameter name (*args as one tuple, **kwargs as one dict)."""
    return dict(signature.bind(*args, **kwargs).arguments)


def _plain_names(signature: inspect.Signature) -> tuple | None:
    """The parameter names when every parameter is a plain one without a default, so that a
    call with exactly that many positional arguments binds by zip (Signature.bind takes
    ~2 us); None otherwise."""
    plain = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = signature.parameters.values()
    if all(p.kind is plain and p.default is inspect.Parameter.empty for p in params):
        return tuple(signature.parameters)
    return None


def _call(fn, signature: inspect.Signature, arguments: dict):
    bound = inspect.BoundArguments(signature, arguments)
    return fn(*bound.args, **bound.kwargs)


# ---------------------------------------------------------------- .grad under tracing


class Grads:
    """The .grad of eager tensors as a traced function leaves them: PyTorch's training step
    (zero_grad(); loss.backward(); step()) traced into one Program.

    While tracing, a tensor's .grad holds the graph value it has at that point of the
    function (None, or a Var), so that the step's code reads it as eager code does. A .grad
    the call starts with and the function reads (to accumulate onto, or to step with) is an
    input of the program (`reads`: fed on each call; whether it is None is part of the
    trace); a .grad the function sets is fetched after each run and bound (`writes`). The
    tensors' .grad are restored when tracing ends: the runs bind them."""

    def __init__(self, block):
        self.block = block
        self.before: dict[int, tuple] = {}  # id(t) -> (t, t.grad when tracing began)
        self.reads: list[tuple] = []  # (t, the data var its .grad is fed to, or None)
        self.ran_backward = False

    def get(self, t: Tensor):
        """t.grad at this point of the traced function (a call's own: an input)."""
        if id(t) in self.before:
            return t.grad
        g = t.grad
        v = None
        if g is not None:
            name = _free_name(self.block, f"{getattr(t, '_name', None) or 'tensor'}@GRAD_IN")
            v = self.block.create_var(name, g.shape, g.dtype, stop_gradient=True)
            v.is_data = True
        self.reads.append((t, v))
        self.set(t, v)
        return v

    def set(self, t: Tensor, value):
        self.before.setdefault(id(t), (t, t.grad))
        t.grad = value

    def zero(self, t: Tensor, set_to_none: bool):
        """Optimizer.zero_grad under tracing."""
        if set_to_none:
            self.set(t, None)
        elif self.get(t) is not None:
            with no_grad():
                self.set(t, ops.zeros_like(t.grad))

    def backward(self, loss: Var, gradient, create_graph: bool, inputs):
        """loss.backward() under tracing: the backward appended by append_backward's driver
        (backward.gradients), each captured leaf tensor's gradient added to its .grad."""
        if create_graph:
            raise UnsupportedError(
                "loss.backward(create_graph=True) under @jit: call it in eager mode, or use "
                "nbflow.grad(..., create_graph=True) outside the jitted function"
            )
        leaves = gradients(loss, self._seed(loss, gradient))
        self.ran_backward = True
        program = self.block.program
        wanted = None if inputs is None else {id(t) for t in _as_list(inputs)}
        with no_grad():
            for name, t in program.captured.items():
                if t._node is not None or (wanted is not None and id(t) not in wanted):
                    continue  # eager mode accumulates into leaves only
                v = program.global_block().vars[name]
                g = leaves.get(id(v), (None, None))[1]
                if g is not None:
                    _rename(self.block, g, f"{name}@GRAD")
                    held = self.get(t)
                    self.set(t, g if held is None else held + g)

    def _seed(self, loss: Var, gradient):
        """None (ones_like(loss), made by the driver) or the gradient given, as a Var."""
        if gradient is None:
            if int(np.prod(loss.shape)) != 1:
                raise GradientError(
                    f"%{loss.name}.backward(): a gradient can be made implicitly only for a "
                    f"one-element loss, this one has shape {loss.shape}; reduce it first "
                    "(loss.sum() or loss.mean()), or pass gradient= of that shape"
                )
            return None
        with no_grad():
            seed = ops.cast(gradient, dtype=loss.dtype)
        if seed.shape != loss.shape:
            raise ShapeError(f"gradient of shape {seed.shape} for %{loss.name} of {loss.shape}")
        return seed

    def finish(self) -> list[tuple]:
        """Restore the tensors' .grad; (tensor, the value each call binds to its .grad)."""
        writes = []
        for t, before in self.before.values():
            value = t.grad
            t.grad = before
            if not (isinstance(value, Var) and value.is_data):  # (a .grad read, not set)
                writes.append((t, value))
        return writes


def zero_grads(params, set_to_none: bool = True):
    """Forget each parameter's .grad, or zero it in place (set_to_none=False, as PyTorch: a
    reference to the old .grad sees the zeros): Optimizer.zero_grad and Module.zero_grad,
    eagerly or, under @jit, as the traced step's .grad (Grads)."""
    grads = traced_grads()
    for p in params:
        if grads is not None:
            grads.zero(p, set_to_none)
        elif p.grad is not None and set_to_none:
            p.grad = None
        elif p.grad is not None:
            with no_grad():
                ops.zero_(p.grad)


def _as_list(values) -> list:
    return [values] if isinstance(values, Tensor) else list(values)


def traced_grads() -> Grads | None:
    """The Grads of the @jit trace running now (None in eager mode or a static program)."""
    trace = STATE.trace
    return trace.block.program.grads if trace.records else None


def _grad_spec(t: Tensor):
    g = t.grad
    return None if g is None else (tuple(g.shape), np.dtype(g.dtype))


def _var_spec(v: Var | None):
    return None if v is None else (v.shape, v.dtype)


def _grads_hold(traced: Traced) -> bool:
    """Whether the .grad the trace read are as it found them (None or not, shape, dtype)."""
    return all(_grad_spec(t) == _var_spec(v) for t, v in traced.reads)


# ---------------------------------------------------------------- tracing


@dataclass
class Traced:
    """One traced signature: the Program, its input and output vars, the returned structure
    (Vars where outputs go), the in-place writes to captured tensors (side effects, always
    run), the scope holding the captured tensors, and the gradient half once built."""

    program: Program
    inputs: list[Var]
    outputs: list[Var]
    result: object
    effects: list[Node]
    scope: Scope = field(default_factory=Scope)
    grad_flags: tuple = ()  # requires_grad, shape, dtype of the captured tensors when traced
    reads: list = field(default_factory=list)  # (tensor, var): the .grad a call feeds (Grads)
    writes: list = field(default_factory=list)  # (tensor, var or None): .grad a call binds
    # the function trained (loss.backward(), or a backward and updates: minimize): a call
    # records no tape node, its outputs are values (the updates overwrote what they read)
    trains: bool = False
    backward: Backward | None = None
    executor: Executor | None = None  # on the device of the tensor arguments

    def __post_init__(self):
        self.grad_flags = _grad_flags(self.program)


def _grad_flags(program: Program) -> tuple:
    """What a trace assumed of its captured tensors: whether each requires grad (else other
    gradient ops), its shape and dtype (a tensor resized since: the program's var has the
    old ones), so that a change traces again."""
    return tuple((t.requires_grad, t.shape, t.dtype) for t in program.captured.values())


def _trace(fn, signature: inspect.Signature, arguments: dict) -> Traced:
    program = Program()
    block = program.global_block()
    inputs = []
    for name, value in arguments.items():
        for leaf, t in _tensors(value, name, []):
            # differentiable, so the gradient ops can reach it; unused when nobody asks
            v = block.create_var(_var_name(block, leaf), t.shape, t.dtype, stop_gradient=False)
            v.is_data = True
            inputs.append(v)
    leaves = iter(inputs)  # consumed in _tensors order across the arguments
    symbolic = {name: _replace(value, leaves) for name, value in arguments.items()}
    graph = GraphTrace(block)
    grads = program.grads = Grads(block)
    # traced with gradients on whatever the caller's mode: the Program serves every call
    with use_trace(graph), set_grad_enabled(True):
        try:
            result = _call(fn, signature, symbolic)
        except UnsupportedError as e:
            hint = _HINT if isinstance(e, TracedValueError) else ""
            e.args = (f"while tracing {_describe(fn)}: {e}{hint}",)
            raise
        finally:
            writes, program.grads = grads.finish(), None
        # returned eager tensors (captured, or made inside) become program values too
        result = _capture_tensors(result, graph)
    traced = Traced(program, inputs, _outputs(result, []), result, _effects(fn, block))
    traced.reads, traced.writes = grads.reads, writes
    backward = program.backward_start is not None  # (appended while tracing)
    traced.trains = grads.ran_backward or (backward and bool(traced.effects))
    return traced


_HINT = (
    ". Under jit, Python control flow sees the traced values, which have no value yet: "
    "write run-time control flow with nbflow.cond / nbflow.while_loop, branch on a Python "
    "argument instead (it is baked into the cached Program), or call the function without jit."
)


def _effects(fn, block) -> list[Node]:
    """The in-place writes to captured tensors. They are run targets: nothing fetched may
    depend on them, and pruning would drop them. Writes to inputs are refused: the fed value
    is the executor's own tensor, so the caller's would silently keep its old value."""
    effects = []
    for node in block.ops:
        for j in node.op.inplace.values():
            target = node.inputs[j]
            if target.is_data:
                raise UnsupportedError(
                    f"while tracing {_describe(fn)}: {node.op.name} at {node.location} writes "
                    f"the input %{target.name} in place, which jit does not support; write to "
                    "a copy (x = x.clone()) or call the function without jit"
                )
            if target.persistable:
                effects.append(node)
    return effects


def _capture_tensors(value, graph: GraphTrace):
    if isinstance(value, Tensor):
        return graph.capture(value)
    if isinstance(value, (tuple, list)):
        return rebuilt(type(value), [_capture_tensors(item, graph) for item in value])
    if isinstance(value, dict):
        return {k: _capture_tensors(item, graph) for k, item in value.items()}
    return value


def _var_name(block, name: str) -> str:
    """A parameter name as a var name (a dict key may hold any characters)."""
    name = re.sub(r"\W", "_", name)
    return name if name not in block.vars else block.program.unique_name(name + "_")


def _describe(fn) -> str:
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code else ""
    return f"{getattr(fn, '__qualname__', fn)!s}{where}"


def trace(fn, *example_inputs, **kwargs) -> tuple[Program, list[Var], list[Var]]:
    """Trace fn on example inputs: (program, input vars, output vars).

    The input vars are data vars named after fn's parameters with the examples' exact shapes
    and dtypes; the outputs are the Vars fn returned (a tensor, or tensors in a tuple/list)."""
    signature = _signature(fn)
    traced = _trace(fn, signature, _bind(signature, example_inputs, kwargs))
    return traced.program, traced.inputs, traced.outputs


# ---------------------------------------------------------------- gradients


class Backward:
    """The gradient half of a traced Program, and the op of the tape node a jitted call
    records (duck-typed: the backward driver needs only `name`, `inplace` and `grad`).

    The gradient ops are appended to the traced Program by the backward driver under a graph
    trace (as append_backward does), seeded by one data var per differentiable output, and run
    alone as `self.program`: the forward values they read (`saved`) are fetched by the forward
    run and fed back, so nothing is recomputed."""

    inplace: dict = {}

    def __init__(self, traced: Traced, executor: Executor, name: str):
        self.name = f"jit({name})"
        self.traced, self.executor = traced, executor
        program, block = traced.program, traced.program.global_block()
        # outputs made by ops: an input or captured tensor returned as is keeps its own history
        self.outputs = unique(
            v
            for v in traced.outputs
            if v._node is not None and v.requires_grad and not (v.is_data or v.persistable)
        )
        start, before = len(block.ops), program.backward_start
        if before is None:  # (a minimize() traced in keeps its own: executor.updates)
            program.backward_start = start
        self.seeds = [
            block.create_var(_free_name(block, f"{v.name}@GRAD"), v.shape, v.dtype)
            for v in self.outputs
        ]
        for s in self.seeds:
            s.is_data = True
        try:
            with use_trace(GraphTrace(block)):
                leaves, _ = backprop(self.outputs, self.seeds, create_graph=True)
        except Exception:  # e.g. a gradient needing a value overwritten in place
            del block.ops[start:]  # the forward Program stays usable
            program.backward_start, program.version = before, program.version + 1
            raise
        self.wrt = traced.inputs + [block.vars[name] for name in program.captured]
        self.grads = [leaves.get(id(v), (None, None))[1] for v in self.wrt]
        for v, g in zip(self.wrt, self.grads):
            if g is not None:
                _rename(block, g, f"{v.name}@GRAD")
        self.program = Program()  # the gradient ops alone, sharing the vars
        self.program.global_block().vars = block.vars
        self.program.global_block().ops = block.ops[start:]
        self.program.captured = program.captured
        ops = needed_ops(self.program.global_block(), [g for g in self.grads if g is not None])
        produced = {id(v) for node in ops for v in node.outputs}
        self.reads = {id(v) for node in ops for v in node.inputs if id(v) not in produced}
        # the forward values the gradient ops read, inputs and parameters aside
        self.saved = [
            v
            for v in unique(v for node in ops for v in node.inputs)
            if id(v) in self.reads and not v.is_data and not v.persistable
        ]
        # create_graph=True replays the forward and gradient ops on the tape: the forward
        # run's random draws are kept for it (a replay drawing again would differentiate
        # another function)
        self.replay = needed_ops(block, [g for g in self.grads if g is not None])
        self.drawn = [v for n in self.replay if "generator" in n.op.attrs for v in n.outputs]
        self.saved = unique(self.saved + self.drawn)

    def grad(self, g, out, *ins, saved):
        """The tape's gradient rule: run the gradient ops for the inputs that want one."""
        outs = out if isinstance(out, tuple) else (out,)
        for v, t in zip(self.wrt + self.outputs, (*ins, *outs)):
            # written in place since the call: an error only if the gradient ops read it
            if isinstance(t, Stale) and id(v) in self.reads:
                raise GradientError(t.message)
        fresh = [t.original if isinstance(t, Stale) else t for t in ins]
        if is_grad_enabled():  # create_graph=True
            return self.replayed(g if isinstance(g, tuple) else (g,), fresh, saved)
        feed = dict(saved)
        feed.update((v.name, t) for v, t in zip(self.traced.inputs, fresh))
        feed.update((s.name, t) for s, t in zip(self.seeds, g if isinstance(g, tuple) else (g,)))
        wanted = [g for g, t in zip(self.grads, fresh) if g is not None and t.requires_grad]
        if not wanted:  # every gradient is zero (the outputs were overwritten, as by fill_)
            return [None] * len(self.grads)
        values = self.executor.run(self.program, feed, wanted, self.traced.scope, False)
        by_var = dict(zip(map(id, wanted), values))
        return [by_var.get(id(g)) if g is not None else None for g in self.grads]

    def replayed(self, seeds, ins, saved):
        """The gradients as eager ops recorded on the tape, so that they differentiate again:
        the forward ops they need and the gradient ops run again one by one (an executor's
        run records nothing), with the forward run's random draws."""
        effects = {id(n) for n in self.traced.effects}
        for node in self.replay:
            why = _not_replayable(node, effects)
            if why:
                raise UnsupportedError(
                    f"{self.name}: create_graph=True through a jitted call that {why} is not "
                    "supported; differentiate the undecorated function (.fn) instead"
                )
        env = {id(v): t for v, t in zip(self.wrt, ins)}
        env.update((id(s), t) for s, t in zip(self.seeds, seeds))
        env.update((id(v), saved[v.name]) for v in self.drawn)
        scope = self.traced.scope
        for node in self.replay:
            if node.outputs and all(id(v) in env for v in node.outputs):
                continue  # a draw of the forward run
            args = [env[id(v)] if id(v) in env else scope[v.name] for v in node.inputs]
            result = STATE.trace.apply(node.op, args, node.attrs, checked=True)
            results = self.executor.placed(result if isinstance(result, tuple) else (result,))
            env.update(zip(map(id, node.outputs), results))
        return [env[id(g)] if g is not None else None for g in self.grads]


def _not_replayable(node, effects) -> str | None:
    """Why an op of a jitted call cannot run again on the tape (create_graph=True)."""
    if getattr(node.op, "block_attrs", None):
        return "has control flow (cond, while_loop)"
    if node.write_back:
        return "writes in place through a view"
    if id(node) in effects:  # running it again would write twice
        return "writes a captured tensor in place"
    return None


def _free_name(block, name: str) -> str:
    return name if name not in block.vars else block.program.unique_name(name)


# ---------------------------------------------------------------- the jitted function


class JitFunction:
    """A function that runs as a cached traced Program (see the module docstring).

    `cache` maps each signature to its Traced; `program(*args)` returns the Program the call
    with these arguments runs (tracing it if needed). Calls may come from several threads: a
    signature is traced (and its gradient half built) once, under the function's lock, and
    published when complete."""

    def __init__(self, fn):
        self.fn = fn
        self.signature = _signature(fn)  # bound on every call: computed once
        self.names = _plain_names(self.signature)
        self.cache: dict = {}
        self.grads_read: dict = {}  # key -> the tensors whose .grad a trace read (Grads)
        self.executors: dict = {}  # device -> Executor
        self.lock = threading.RLock()  # held while tracing or building a gradient half
        update_wrapper(self, fn)

    @property
    def executor(self) -> Executor | None:
        """The CPU executor (`executors["cpu"]`); assigning one makes CPU calls run on it."""
        return self.executors.get("cpu")

    @executor.setter
    def executor(self, executor: Executor):
        self.executors["cpu"] = executor
        self.cache.clear()  # traced programs hold their executor: trace them again

    def __call__(self, *args, **kwargs):
        if STATE.trace.records:
            return self.fn(*args, **kwargs)  # inside another trace: record the ops inline
        if kwargs or self.names is None or len(args) != len(self.names):
            arguments = _bind(self.signature, args, kwargs)
        else:
            arguments = dict(zip(self.names, args))
        inputs = [t for name, v in arguments.items() for _, t in _tensors(v, name, [])]
        traced = self.lookup(arguments)
        if is_grad_enabled() and not traced.trains:
            captured = list(traced.program.captured.values())
            for t in inputs + captured:
                refresh_if_stale(t)  # a view whose base was written since
            if any(t.requires_grad for t in inputs + captured):
                return self.run_with_grad(traced, inputs, captured)
        values = self.run(traced, inputs, traced.outputs)
        return _unflatten(traced, inputs, values)

    def lookup(self, arguments: dict) -> Traced:
        key = tuple((name, _key(v)) for name, v in arguments.items())
        # (a trace made under another default float dtype holds constants of that dtype)
        # (and one made inside nbflow.autocast holds its casts)
        autocast = STATE.autocast
        key = (key, _modes(self.fn, arguments), dt.default_float(), autocast and autocast.key)
        # the .grad a training step reads: None on a first step, then the last step's (a
        # trace each, so that accumulating steps do not trace again and again)
        base, read = key, self.grads_read.get(key)
        key = key if read is None else (key, tuple(_grad_spec(t) for t in read))
        traced = self.cache.get(key)
        # a captured tensor that started or stopped requiring grad, or changed shape: again
        if traced is None or not _holds(traced):
            with self.lock:  # (another thread may have traced it meanwhile)
                traced = self.cache.get(key)
                if traced is None or not _holds(traced):
                    traced = _trace(self.fn, self.signature, arguments)
                    captured = traced.program.captured.values()
                    traced.executor = self.executor_for(arguments, captured)
                    if traced.reads:
                        self.grads_read[base] = [t for t, _ in traced.reads]
                        key = (base, tuple(_var_spec(v) for _, v in traced.reads))
                    self.cache[key] = traced
        return traced

    def executor_for(self, arguments: dict, captured=()) -> Executor:
        """The Executor on the device of the tensor arguments, else on that of the captured
        tensors (a function of no arguments training a GPU model), else the CPU. Arguments
        on several devices, or GPU tensors read by a CPU call, raise DeviceError as an eager
        op on them does (captured CPU tensors, such as an optimizer's scalar states, are
        uploaded to a GPU)."""
        tensors = [t for name, v in arguments.items() for _, t in _tensors(v, name, [])]
        on = sorted({t.device for t in tensors})
        gpu_captured = sorted({t.device for t in captured if t.device != "cpu"})
        device = on[0] if on else (gpu_captured or ["cpu"])[0]
        if len(on) > 1 or (device == "cpu" and gpu_captured):
            where = (
                " and ".join(on) if len(on) > 1 else f"cpu, reading tensors on {gpu_captured[0]}"
            )
            raise DeviceError(
                f"jit({getattr(self.fn, '__name__', 'fn')}): the tensor arguments are on "
                f"{where}; move them to one device"
            )
        with self.lock:
            if device not in self.executors:
                self.executors[device] = Executor(device)
            return self.executors[device]

    def run(self, traced: Traced, inputs: list[Tensor], fetch: list[Var]) -> list[Tensor]:
        """Run the program for `fetch`, its side effects, and the .grad the function reads
        and sets (Grads)."""
        feed = {v.name: t for v, t in zip(traced.inputs, inputs)}
        feed.update((v.name, t.grad) for t, v in traced.reads if v is not None)
        grads = [v for _, v in traced.writes if isinstance(v, Var)]
        targets = fetch + grads + traced.effects
        values = traced.executor.run(traced.program, feed, targets, traced.scope, False)
        if traced.writes:
            _bind_grads(traced.writes, values[len(fetch) : len(fetch) + len(grads)])
        return values[: len(fetch)]

    def run_with_grad(self, traced: Traced, inputs, captured):
        """Run forward, keep what the gradient ops read, and record one tape node."""
        if traced.backward is None:
            with self.lock:  # built once: it appends the gradient ops to the Program
                if traced.backward is None:
                    name = getattr(self.fn, "__name__", "fn")
                    traced.backward = Backward(traced, traced.executor, name)
        backward = traced.backward
        values = self.run(traced, inputs, traced.outputs + backward.saved)
        outputs, saved = values[: len(traced.outputs)], values[len(traced.outputs) :]
        result = _unflatten(traced, inputs, outputs)
        # (as in eager mode, an output made from inputs that require grad requires grad,
        # even where every gradient is zero, as through zero_)
        if backward.outputs:
            by_var = dict(zip(map(id, traced.outputs), outputs))
            recorded = [by_var[id(v)] for v in backward.outputs]
            attrs = {"saved": {v.name: t for v, t in zip(backward.saved, saved)}}
            STATE.trace.record(backward, inputs + captured, attrs, recorded)
        return result

    def program(self, *args, **kwargs) -> Program:
        return self.lookup(_bind(self.signature, args, kwargs)).program

    def __get__(self, obj, owner=None):
        """As a method: the instance is the first argument (a constant of the signature)."""
        return self if obj is None else MethodType(self, obj)


def _holds(traced: Traced) -> bool:
    """Whether a traced program fits this call: the captured tensors are as they were
    (_grad_flags), and so are the .grad it reads (Grads)."""
    return traced.grad_flags == _grad_flags(traced.program) and _grads_hold(traced)


def _bind_grads(writes: list, values: list):
    """Each .grad a run set (in order, the fetched ones from `values`), as eager backward
    leaves it: a plain buffer the optimizers update from."""
    fetched = iter(values)
    for t, v in writes:
        t.grad = plain_grad(next(fetched)) if isinstance(v, Var) else v


def _unflatten(traced: Traced, inputs: list[Tensor], values: list[Tensor]):
    """The returned structure with eager tensors for its Vars (an input returned as is is the
    caller's tensor itself, as in eager mode)."""
    by_var = {id(v): t for v, t in zip(traced.outputs, values)}
    by_var.update((id(v), t) for v, t in zip(traced.inputs, inputs))
    return _build(traced.result, by_var)


def _build(value, by_var: dict):
    # a module-level function, not a recursive closure: a closure that calls itself is a
    # reference cycle, which would keep the returned tensors' buffers alive until the next
    # garbage collection (and out of reach of nbflow/buffers.py's recycling)
    if isinstance(value, Var):
        return by_var[id(value)]
    if isinstance(value, (tuple, list)):
        return rebuilt(type(value), [_build(item, by_var) for item in value])
    if isinstance(value, dict):
        return {k: _build(item, by_var) for k, item in value.items()}
    return value


def jit(fn):
    """Decorator: run fn as a Program traced once per input signature (module docstring)."""
    return JitFunction(fn)
