"""The core types: Spec, Attr, Op, Node, and bind(), the one dispatch point.

This module imports nothing else of nbflow except errors and dtypes. Ops are declared with
these types in nbflow/ops; eager mode (nbflow/eager/tensor.py) and graph mode (nbflow/graph) each
provide a trace whose `apply(op, args, attrs)` bind() calls. Nothing else branches on the mode.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import operator
import threading
from collections.abc import Callable, Mapping
from contextlib import ContextDecorator, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes as dt
from .errors import (
    ArgumentError,
    AttrError,
    GradientError,
    KernelNotFoundError,
    NbflowError,
    ShapeError,
    filter_traceback,
    locate,
    user_location,
)

UNKNOWN = -1  # a dim known only at run time (graph mode)


def known(*dims) -> bool:
    """Whether every one of the dims is known (none is UNKNOWN): a check on sizes that only
    graph mode's run time may know is left to then."""
    return UNKNOWN not in dims


@dataclass(frozen=True, slots=True)
class Spec:
    """What is known about a value before it exists: shape (-1 = unknown dim) and dtype.

    `weak` marks a Python scalar, whose dtype yields to the tensors' (see nbflow.dtypes)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    weak: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{dt.SHORT.get(self.dtype, self.dtype)}[{','.join(map(str, self.shape))}]"


REQUIRED = object()


@dataclass(frozen=True)
class Attr:
    """A typed op attribute: kind is one of KINDS; `choices` bounds a str attr."""

    kind: str
    default: Any = REQUIRED
    optional: bool = False  # None is allowed
    choices: tuple = ()


def is_int(v) -> bool:
    """Whether v is a Python or numpy integer (a bool is not)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def as_int(value, what: str) -> int:
    """value as an int: an int, a numpy integer or a 0-d integer tensor (`__index__`), as
    PyTorch takes a size, an offset or a shift; a float (1.5, even 2.0), a bool or anything
    else raises AttrError naming `what` (int() would truncate 1.5 to 1)."""
    if not isinstance(value, (bool, np.bool_, float, np.floating)):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise AttrError(f"{what} must be an int, got {type(value).__name__} {value!r}")


def is_probability(p) -> bool:
    """Whether p is a real number in [0, 1] (a bool, a string or a NaN is not)."""
    real = isinstance(p, (int, float, np.integer, np.floating))
    return real and not isinstance(p, (bool, np.bool_)) and 0.0 <= p <= 1.0


def _to_int(v):
    if not is_int(v):
        raise TypeError
    return int(v)


def _to_float(v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError
    return float(v)


def _to_bool(v):
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError
    return bool(v)


def _to_str(v):
    if not isinstance(v, str):
        raise TypeError
    return v


def _to_ints(v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (str, bytes)):  # iterable, but no ints ('' was an empty tuple)
        raise TypeError
    if getattr(v, "ndim", None) == 0:  # a 0-d integer tensor is its value, as in PyTorch
        return (operator.index(v),)
    return tuple(_to_int(x) for x in v)


def _to_value(v):
    if isinstance(v, (complex, np.complexfloating)):
        return complex(v)
    return _to_int(v) if isinstance(v, (int, np.integer)) else _to_float(v)


# How each attr kind is checked and normalised. "value" is a Python/numpy scalar (int, float or
# complex: a fill); "any" is for structured attrs an op checks itself (such as an index key).
KINDS: dict[str, Callable[[Any], Any]] = {
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "str": _to_str,
    "ints": _to_ints,
    "dtype": dt.as_dtype,
    "block": _to_int,  # a sub-block of the Program, by index (control flow ops)
    "value": _to_value,
    "any": lambda v: v,
}


# PyTorch's spellings of nbflow's (numpy's) argument names, accepted wherever the callee takes
# the nbflow one: sum(x, dim=1, keepdim=True) is sum(x, axis=1, keepdims=True)
PYTORCH_NAMES = {
    "dim": ("axis",),
    "keepdim": ("keepdims",),
    "dims": ("axes", "axis"),
    "dim0": ("axis0",),
    "dim1": ("axis1",),
    "start_dim": ("start_axis",),
    "end_dim": ("end_axis",),
}


def nbflow_names(callee: str, names, kwargs: dict) -> dict:
    """kwargs with PyTorch's names replaced by nbflow's, for a callee taking `names`; and
    the other way round for a callee written with PyTorch's (`narrow(x, dim, ...)` also
    takes `axis=`)."""
    out = dict(kwargs)
    for alias in PYTORCH_NAMES.keys() & kwargs.keys():
        target = next((n for n in PYTORCH_NAMES[alias] if n in names), None)
        if alias in names or target is None:
            continue  # the callee's own name, or one it does not take: its own error says so
        if target in out:
            raise TypeError(f"{callee}() got '{alias}' and '{target}': one argument, two names")
        out[target] = out.pop(alias)
    for alias in PYTORCH_NAMES.keys() & set(names):
        given = [n for n in PYTORCH_NAMES[alias] if n in kwargs and n not in names]
        if given:
            if alias in out or len(given) > 1:
                raise TypeError(
                    f"{callee}() got '{alias}' and '{given[-1]}': one argument, two names"
                )
            out[alias] = out.pop(given[0])
    return out


AXIS_NAMES = {name for names in PYTORCH_NAMES.values() for name in names}
_ALL_NAMES = AXIS_NAMES | PYTORCH_NAMES.keys()
_MISSING = object()


def public(fn):
    """fn as users call it (the ops' families, nn.functional, linalg export it so): taking
    PyTorch's names for axis-like arguments (`concat(xs, dim=1)`) and numpy's for one written
    with PyTorch's (`narrow(x, axis=0, ...)`), and raising ArgumentError, naming fn and the
    argument, where a non-tensor came for a tensor: a composite reads `x.ndim` or `x.shape`
    before anything converts its inputs, and Python's AttributeError would not say which."""
    if isinstance(fn, Op) or not inspect.isfunction(fn):
        return fn
    signature = inspect.signature(fn)
    names = signature.parameters
    renames = not (AXIS_NAMES.isdisjoint(names) and PYTORCH_NAMES.keys().isdisjoint(names))

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if renames and kwargs and not _ALL_NAMES.isdisjoint(kwargs):
            kwargs = nbflow_names(fn.__name__, names, kwargs)
        try:
            return fn(*args, **kwargs)
        except NbflowError as e:  # raised by the function itself (bind() locates the ops')
            if e.location is None:
                locate(e, user_location())
            raise
        except AttributeError as e:
            error = argument_error(fn.__name__, signature, args, kwargs, e)
            if error is None:
                raise  # an attribute missing from something else: a bug, shown as it is
            raise error from None

    return call


def argument_error(name: str, signature, args, kwargs, e: AttributeError):
    """The located ArgumentError naming `name` and the argument when `e` is an attribute
    (`ndim`, `shape`) missing from an argument itself, not from an nbflow value; else None.
    public() and Module.__call__ (whose forward reads x.ndim first) raise it."""
    value = getattr(e, "obj", _MISSING)
    param = _argument_of(signature, args, kwargs, value)
    if param is None:
        return None
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    error = ArgumentError(
        f"{name}: argument '{param}' must be a tensor, got {type(value).__name__} {text}"
    )
    return locate(error, user_location())


class Value:
    """The base of a tensor and a graph var (their operators, nbflow/eager/operators.py)."""

    __slots__ = ()


def is_value(x) -> bool:
    """A tensor or a graph var: a missing attribute is a bug."""
    return isinstance(x, Value)


def _argument_of(signature, args, kwargs, value):
    """The name of the argument that is `value` itself (not an nbflow value), or None."""
    if value is _MISSING or is_value(value):
        return None
    try:
        bound = signature.bind(*args, **kwargs).arguments
    except TypeError:
        return None
    for name, given in bound.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            given = tuple(given.values())
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            given = (given,)
        if any(item is value for item in given):
            return name
    return None


@dataclass(eq=False)
class Op:
    """One op, declared once: schema, shape/dtype rule, kernels, gradient, reference, in-place map.

    - `inputs`: input names; a name starting with '*' takes any number of tensors (last only).
    - `spec(*input_specs, **attrs)` returns the output Spec (or a tuple for several outputs);
      it must work on -1 dims and raise ShapeError/DTypeError with the reason.
    - `kernels[device]` is a launcher `(*input_arrays, *output_arrays, **attrs)` writing into
      preallocated outputs, or, for a `view` op, `(*input_arrays, **attrs) -> array(s)`.
      The slot "cuda" is filled by the GPU work; None means no kernel.
    - `dtypes`: the dtypes the kernels take, after promotion (float16 is computed in float32 on
      the CPU).
    - `grad(g, out, *inputs, **attrs)` returns one gradient (or None) per input, written with
      nbflow ops; for several outputs `g` and `out` are tuples. `differentiable=False` says
      explicitly that the op has no gradient (its output is a constant: argmax, isnan).
      `no_derivative` says why the op's derivative is not implemented although its value
      depends on its float inputs (a Bessel function, ctc_loss's gradient): outputs are
      recorded and differentiating them raises GradientError with that reason, as PyTorch's
      "derivative not implemented", never a gradient silently missing a term.
    - `ref(*arrays, **attrs)`: the numpy reference.
    - `inplace`: {output index: input index} the output overwrites.
    - `promote`: the inputs whose dtypes promote together into the kernel key dtype and are
      cast to it before the kernel runs (None: all); `to_float` makes an integer key float32
      (exp of an int tensor is float, as in PyTorch).
    - `shape_only`: inputs whose values are never read, only their shape and dtype (the target
      of zeros_like or sum_to_like); a gradient rule may pass them even after they were
      overwritten in place.
    - `saves_target`: for an in-place op whose gradient reads the target's old value (mul_,
      clip_): when recording, eager mode keeps a copy of it, as PyTorch does.
    - `materialize_grads`: False gives the gradient rule of a multi-output op None for each
      output nobody used, instead of zeros (autograd.Function's set_materialize_grads), for a
      rule that skips those terms rather than reading zeros.
    - `on_dim`: called instead of the op when the caller spells the axis `dim=` and PyTorch's
      result differs from nbflow's (max and min: values and indices); other ops take `dim=`
      and PyTorch's other names (PYTORCH_NAMES) as their own.
    """

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    spec: Callable[..., Spec | tuple[Spec, ...]]
    kernels: dict[str, Callable | None]
    dtypes: tuple[np.dtype, ...]
    ref: Callable | None = None
    grad: Callable | None = None
    differentiable: bool = True
    attrs: Mapping[str, Attr] = field(default_factory=dict)
    inplace: Mapping[int, int] = field(default_factory=dict)
    view: bool = False
    promote: tuple[int, ...] | None = None
    to_float: bool = False
    shape_only: tuple[str, ...] = ()
    saves_target: bool = False
    on_dim: Callable | None = None
    materialize_grads: bool = True
    no_derivative: str = ""
    doc: str = ""

    def __post_init__(self):
        if self.name in REGISTRY:
            raise NbflowError(f"op '{self.name}' is declared twice")
        REGISTRY[self.name] = self
        if self.no_derivative:
            self.differentiable, self.grad = True, self._underived
        self.variadic = bool(self.inputs) and self.inputs[-1].startswith("*")
        self.cache: dict = {}  # (input specs, attrs) -> (output specs, launcher); see tensor.py
        self.checked_attrs: dict = {}  # attrs as given -> normalised (check_attrs)

    def __call__(self, *args, **attrs):
        """Call the op: tensors first; further positional arguments fill the attrs in
        declaration order, so `softmax(x, 1)` is `softmax(x, axis=1)`."""
        if not self.variadic and len(args) > len(self.inputs):
            extra = args[len(self.inputs) :]
            names = list(self.attrs)
            if len(extra) > len(names):
                raise TypeError(f"{self.name}() got {len(args)} positional arguments")
            for name, value in zip(names, extra):
                if name in attrs:
                    raise TypeError(f"{self.name}() got two values for '{name}'")
                attrs[name] = value
            args = args[: len(self.inputs)]
        if attrs and not PYTORCH_NAMES.keys().isdisjoint(attrs):
            if "dim" in attrs and self.on_dim is not None:
                return self.on_dim(*args, **nbflow_names(self.name, self.attrs, attrs))
            attrs = nbflow_names(self.name, self.attrs, attrs)
        return bind(self, *args, **attrs)

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __copy__(self) -> Op:
        return self

    def __deepcopy__(self, memo) -> Op:
        """The op itself, as for a function: a declaration is shared, and a module holding
        one (a Transformer layer's activation=F.gelu) deep-copies after its kernels are
        compiled (their dispatchers cannot be copied)."""
        return self

    def _underived(self, g, out, *inputs, **attrs):
        """The gradient rule of an op with `no_derivative`."""
        raise GradientError(f"{self.name}: no derivative: {self.no_derivative}")

    def defgrad(self, rule: Callable) -> Callable:
        """Attach the gradient rule (usable as a decorator right below the op)."""
        self.grad = rule
        return rule

    def check_attrs(self, attrs: dict) -> dict:
        """Fill defaults, check types and choices; returns normalised attrs (lists as tuples),
        a new dict each time (graph nodes may change theirs, as a learning-rate schedule
        does). Answers for hashable attrs are remembered: an optimizer step or a reduction
        passes the same ones on every call. The key holds each value's type: True == 1."""
        try:
            key = tuple((name, type(v), v) for name, v in attrs.items())
            known = self.checked_attrs.get(key)
        except TypeError:  # an unhashable value (a list): checked every time
            return self._check_attrs(attrs)
        if known is None:
            known = self._check_attrs(attrs)
            if len(self.checked_attrs) >= 256:
                self.checked_attrs.clear()
            self.checked_attrs[key] = known
        return dict(known)

    def _check_attrs(self, attrs: dict) -> dict:
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            raise AttrError(f"{self.name}: unknown attribute(s) {sorted(unknown)}")
        out = {}
        for name, a in self.attrs.items():
            v = attrs.get(name, a.default)
            if v is REQUIRED:
                raise AttrError(f"{self.name}: attribute '{name}' is required")
            if v is None and (a.optional or a.default is None):
                out[name] = None
                continue
            try:
                v = KINDS[a.kind](v)
            except (TypeError, ValueError) as e:
                raise AttrError(
                    f"{self.name}: attribute '{name}' must be {a.kind}, got {v!r}"
                ) from e
            if a.choices and v not in a.choices:
                raise AttrError(f"{self.name}: attribute '{name}' must be one of {a.choices}")
            out[name] = v
        return out

    def reads_only_shape(self, i: int) -> bool:
        """Whether input i is one of the `shape_only` inputs."""
        name = self.inputs[min(i, len(self.inputs) - 1)]
        return name.lstrip("*") in self.shape_only

    def input_names(self, n: int) -> list[str]:
        """Argument names for n inputs (a variadic slot expands to name0, name1, ...)."""
        if not self.variadic:
            return list(self.inputs)
        fixed = list(self.inputs[:-1])
        base = self.inputs[-1][1:]
        return fixed + [f"{base}{i}" for i in range(n - len(fixed))]

    def infer(self, specs: list[Spec], attrs: dict) -> tuple[Spec, ...]:
        """Run the shape/dtype rule; errors gain the op name and every argument's spec."""
        n_fixed = len(self.inputs) - self.variadic
        if len(specs) < n_fixed or (not self.variadic and len(specs) != n_fixed):
            raise TypeError(
                f"{self.name}() takes inputs ({', '.join(self.inputs)}), got {len(specs)}"
            )
        try:
            out = self.spec(*specs, **attrs)
        except NbflowError as e:
            args = ", ".join(f"{n}: {s}" for n, s in zip(self.input_names(len(specs)), specs))
            e.args = (f"{self.name}({args}): {e}",)  # keeps the type and its attributes
            raise
        return out if isinstance(out, tuple) else (out,)

    def key_dtype(self, specs) -> np.dtype | None:
        """The dtype that picks the kernel: the promoted dtype of the `promote` inputs."""
        chosen = specs if self.promote is None else [specs[i] for i in self.promote]
        d = dt.promote([s.dtype for s in chosen if not s.weak], [s.dtype for s in chosen if s.weak])
        if d is not None and self.to_float and d.kind in "biu":
            d = dt.default_float()
        return d

    def kernel(self, device: str, dtype: np.dtype) -> Callable:
        """The kernel for (op, device, dtype): the one place a kernel is chosen."""
        k = self.kernels.get(device)
        if k is None or dtype not in self.dtypes:
            raise KernelNotFoundError(
                self.name, device, str(dtype), tuple(str(d) for d in self.dtypes)
            )
        return k


REGISTRY: dict[str, Op] = {}


class Node:
    """One recorded op application: the same record for the eager tape and a graph.

    `inputs` are values (Tensors or graph Vars), `outputs` the produced values, `versions`
    the inputs' version counters at record time (eager mode). `edges` say where each input's
    gradient goes, fixed at record time: `(node, output index)` for a computed value, the leaf
    itself, or None (no gradient). They are snapshots because an in-place op later gives the
    same tensor object a new history, while this node must still reach the old one."""

    __slots__ = (
        "op",
        "inputs",
        "attrs",
        "outputs",
        "versions",
        "edges",
        "location",
        "rule_inputs",
        "grad_of",
        "write_back",
        "freed",
        "__weakref__",
    )

    def __init__(self, op: Op, inputs, attrs: dict, outputs, versions=None, edges=None):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.outputs = outputs
        self.versions = versions
        self.edges = edges
        # the optional fields (location, ...) stay unset until given (see __getattr__): every
        # recorded eager op makes a Node, and the stores are measurable there

    def __getattr__(self, name):
        # called only for a slot not yet set: the optional fields read as None
        if name in _NODE_OPTIONAL:
            return None
        raise AttributeError(f"'Node' object has no attribute '{name}'")


# "file.py:LINE" of the user code that made the node (graph mode, and eager under the NaN
# check); what the gradient rule sees when not `inputs` (graph mode); for an op of a gradient
# rule, the forward node it differentiates; whether it is a write-back (graph mode,
# nbflow/core/views.py); whether a backward without retain_graph freed its saved values (eager)
_NODE_OPTIONAL = frozenset(("location", "rule_inputs", "grad_of", "write_back", "freed"))


# ---------------------------------------------------------------- modes


class _State(threading.local):
    """The state read on every op, per thread as in PyTorch: the current trace, the grad
    mode, the gradient rule running, autocast's policy and the NaN/Inf and anomaly checks.

    A thread sees its own values once it sets them, and the class attributes (the defaults)
    before: a new thread starts eager, with gradients on, no autocast and the checks off
    (unless NBFLOW_CHECK_NAN_INF asks for them: nbflow/eager/checking.py sets the default). The
    memory budget is process-wide: a property over `_PROCESS`.

    Whoever sets `trace`, `grad_enabled` or `autocast` calls modes_changed() after: the hot
    paths (bind(), the operators) skip reading this state while no thread has left those
    defaults (`ODD` is empty), since a threading.local's read costs ~20 ns more than a plain
    object's, a measurable part of a 1-element add."""

    trace: Any = None  # the default set by nbflow.tensor to the eager trace
    grad_enabled: bool = True
    differentiating: Node | None = None  # the node whose gradient rule runs (autograd)
    autocast: Any = None  # nbflow.autocast's policy: casts an op's arguments (nbflow/eager/amp.py)
    nan_inf_check: bool = False  # nbflow.check_nan_inf (nbflow/eager/checking.py)
    anomaly: tuple = (False, False)  # anomaly mode: (enabled, check_nan) (autograd/function.py)
    odd: _Odd | None = None  # this thread's token in ODD, made when it first leaves them

    @property
    def memory_budget(self) -> int:
        """Bytes one op may allocate (nbflow.set_memory_budget): one for the process."""
        return _PROCESS.memory_budget

    @memory_budget.setter
    def memory_budget(self, nbytes: int):
        _PROCESS.memory_budget = nbytes


class _Process:
    memory_budget: int = 1 << 62
    eager_type: type | None = None  # the default trace's type (the plain eager trace)


_PROCESS = _Process()
STATE = _State()

# the threads not in the default modes (eager trace, gradients on, no autocast), by the id of
# a token their state holds: dropped when it leaves them or when the thread ends (its state is
# freed). Empty: every thread is in the defaults. (A dict: adding and popping are atomic.)
ODD: dict[int, bool] = {}


class _Odd:
    """A thread's token in ODD (made on its first need, freed with the thread's state)."""

    __slots__ = ()

    def __del__(self):
        ODD.pop(id(self), None)


def modes_changed() -> None:
    """Note this thread's trace, grad mode and autocast after one of them was set."""
    state = STATE
    if state.grad_enabled and state.autocast is None and type(state.trace) is _PROCESS.eager_type:
        if ODD:
            ODD.pop(id(state.odd), None)
        return
    token = state.odd
    if token is None:
        token = state.odd = _Odd()
    ODD[id(token)] = True


def set_thread_default(name: str, value) -> None:
    """The value of STATE.<name> in every thread that has not set its own: what a new thread
    starts with (nbflow's import sets them: the first default trace is the eager one, and any
    other marks every thread as out of the default modes for good)."""
    if name not in ("trace", "nan_inf_check"):
        raise ValueError(f"no thread default for {name!r}")
    setattr(_State, name, value)
    if name == "trace":
        if _PROCESS.eager_type is None:
            _PROCESS.eager_type = type(value)
        elif type(value) is not _PROCESS.eager_type:
            ODD[0] = True


class Trace:
    """What bind() hands ops to: the eager trace runs them, a graph trace records them into
    a program. Code above the core asks the current trace what it does (`records`) and hands
    it control flow (`cond`, `while_loop`) and custom gradients, rather than testing its type."""

    records = False  # True: ops go into a program that runs later, so no value exists now

    def apply(self, op: Op, args, attrs):
        raise NotImplementedError

    def binary(self, op: Op, a, b):
        """`a + b` and the other binary operators (a trace may shortcut its common case)."""
        return bind(op, a, b)

    def cond(self, pred, true_fn, false_fn, operands: list):
        """nbflow.cond: true_fn(*operands) if pred else false_fn(*operands)."""
        raise NotImplementedError

    def while_loop(self, cond_fn, body_fn, values: list, max_iterations, stacked: int = 0):
        """nbflow.while_loop: the final loop vars as a list. stacked > 0: body_fn returns
        the next loop vars and then `stacked` values per iteration, which come after the
        final loop vars stacked over the iterations (JAX's scan)."""
        raise NotImplementedError

    def custom_gradient(self, on_tape, in_program):
        """The step of a gradient written in Python that differs by mode (autograd.Function
        giving its outputs their backward, checkpoint recomputing its segment): the eager
        trace calls on_tape(), a graph trace in_program(); returns what that returns."""
        raise NotImplementedError


def graph_mode() -> bool:
    """Whether this thread's ops are recorded into a program (a program guard, @nbflow.jit's
    trace) rather than run now (eager mode, where tensors hold values)."""
    return STATE.trace.records


def bind(op: Op, *args, **attrs):
    """The single entry point from ops into execution: eager runs, graph records.

    An nbflow error leaving it says where the user called the op (`defined at file:LINE`)
    and drops nbflow's own frames from its traceback; both happen only on the error path
    (a try block costs nothing when nothing is raised)."""
    try:
        if not ODD:  # every thread in the default modes: the eager trace
            return _State.trace.apply(op, args, attrs)
        if STATE.autocast is not None:  # nbflow.autocast: the casts come first
            args = STATE.autocast(op, args)
        return STATE.trace.apply(op, args, attrs)
    except NbflowError as e:
        forward = STATE.differentiating
        if forward is not None and getattr(e, "location", None) is None:
            e.args = (f"{e} [in the gradient of {forward.op.name}]", *e.args[1:])
        locate(e, user_location())
        raise e.with_traceback(filter_traceback(e.__traceback__)) from e.__cause__


@contextmanager
def use_trace(trace):
    """Make `trace` current (graph mode pushes a graph trace); restores the previous one."""
    prev, STATE.trace = STATE.trace, trace
    modes_changed()
    try:
        yield trace
    finally:
        STATE.trace = prev
        modes_changed()


class set_grad_enabled(ContextDecorator):
    """Gradient recording on or off (PyTorch's set_grad_enabled): called alone it switches
    until switched again; as a context manager (or decorator) for its block only."""

    def __init__(self, mode: bool):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = bool(mode)
        modes_changed()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        modes_changed()
        return False


@contextmanager
def _grad_mode(enabled: bool):
    """Gradient recording set for a block, from the block's start (no_grad, enable_grad)."""
    prev, STATE.grad_enabled = STATE.grad_enabled, enabled
    modes_changed()
    try:
        yield
    finally:
        STATE.grad_enabled = prev
        modes_changed()


def no_grad():
    """Context manager (or decorator): ops record no gradient history inside it."""
    return _grad_mode(False)


def enable_grad():
    return _grad_mode(True)


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


def needs_grad(x) -> bool:
    """Whether a gradient rule should compute x's gradient: False only for a value known to
    need none, an eager tensor that does not require grad (a batch of data), whose gradient
    would be computed and dropped. Graph values answer True (the executor prunes what no
    fetch target needs), and so does a saved value overwritten in place (the rule poisons
    what it computes from it; backward raises only where that is needed)."""
    return getattr(type(x), "requires_grad", None) is None or x.requires_grad


# ---------------------------------------------------------------- shape helpers used by rules


def overlaps_partly(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a and b share memory other than as one and the same view."""
    if a is b or not np.may_share_memory(a, b):
        return False
    return not (a.shape == b.shape and a.strides == b.strides and a.ctypes.data == b.ctypes.data)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy broadcasting that also accepts -1 (unknown) dims."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        dims = {s[i] for s in shapes if len(s) >= -i}
        known = dims - {1, UNKNOWN}
        if len(known) > 1:
            raise ShapeError(f"shapes {' and '.join(map(str, shapes))} do not broadcast")
        if known:
            out.append(known.pop())
        else:
            out.append(UNKNOWN if UNKNOWN in dims else 1)
    return tuple(out)


class Deferred:
    """The functions of a module imported at their first call, not at nbflow's import:
    scipy.linalg and scipy.special are ~0.18 s of `import nbflow` for the few ops (and
    references) that call them. `Deferred("scipy.special").k0(x)` is scipy.special.k0(x)."""

    def __init__(self, module: str):
        self._module = module

    def __getattr__(self, name):
        def call(*args, **kwargs):
            return getattr(importlib.import_module(self._module), name)(*args, **kwargs)

        call.__name__ = name
        return call


def rebuilt(kind, items):
    """A sequence of type `kind` (a tuple, a list or a namedtuple) holding `items`."""
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def normalize_axis(axis: int, ndim: int) -> int:
    """axis in [0, ndim); a 0-d tensor takes axis 0 or -1, as in PyTorch."""
    if type(axis) is not int and not is_int(axis):  # (the common case checked first)
        raise AttrError(f"an axis must be an int, got {type(axis).__name__} {axis!r}"[:120])
    size = max(ndim, 1)
    if not -size <= axis < size:
        raise ShapeError(f"axis {axis} is out of range for {ndim} dims")
    return axis % size if ndim else 0
