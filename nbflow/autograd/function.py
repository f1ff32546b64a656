"""PyTorch's torch.autograd.Function (a custom gradient written in Python) and the other names
PyTorch users look for in torch.autograd.

    class Exp(nbflow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    y = Exp.apply(x)

`apply` runs `forward` without recording, then gives the outputs one node whose gradient rule
calls `backward`; the backward driver treats it as any op's rule (nbflow.autograd.backprop), so
`create_graph=True` records a backward written with nbflow ops and double backward works.

Eager mode records that node on the tape directly (no copy of the outputs). Under @nbflow.jit
the forward's ops are traced into the Program, and one op declared per Function class (its
kernel copies the forward's results) carries the gradient rule; append_backward and a jitted
call's backward append the ops `backward` calls, so it must be written with nbflow ops there,
as must `forward`. Such a Program runs, but cannot be saved: its gradient is Python code.

Saved tensors that are inputs or outputs of the Function come back through the node's saved
values, checked against in-place writes as a built-in op's are; other saved tensors are node
inputs too (without a gradient), so the same check covers them.
"""

from __future__ import annotations

import functools
import inspect
import warnings
import weakref
from contextlib import ContextDecorator, nullcontext

import numpy as np

from ..core import (
    REGISTRY,
    STATE,
    Attr,
    Op,
    bind,
    enable_grad,
    is_grad_enabled,
    modes_changed,
    no_grad,
    set_grad_enabled,
)
from ..core import dtypes as dt
from ..core.errors import (
    GradientError,
    ShapeError,
    TracedValueError,
    UnsupportedError,
)
from ..eager.checking import CheckingTrace, check_finite, nan_inf_checking
from ..eager.operators import Operators
from ..eager.tensor import EagerTrace, Stale, Tensor, tensor
from . import projection
from .backprop import grad

__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Variable",
    "detect_anomaly",
    "enable_grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]


def _is_tensor(x) -> bool:
    """An eager tensor or a graph value (what a Function's inputs and outputs may be)."""
    return isinstance(x, Operators)


# ---------------------------------------------------------------- the context


class FunctionCtx:
    """The `ctx` a Function's forward (or setup_context) and backward share. Any attribute
    may be set on it; the methods below are PyTorch's."""

    def __init__(self, function: type, args: tuple):
        self._function = function
        grad_on = is_grad_enabled()
        self.needs_input_grad = tuple(
            grad_on and _is_tensor(a) and bool(a.requires_grad) for a in args
        )
        self.materialize_grads = True
        self._to_save: tuple = ()
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self._where: list = []  # per saved tensor: ("input" | "output" | "extra", index) or None
        self._values = None  # in backward: (outputs, inputs) of the node, to resolve _where
        self._n_inputs = 0  # tensor inputs of the node
        self._extra_at = 0  # where the node's inputs for "extra" saved tensors start
        self._n_outputs = 0  # tensor outputs
        self._output_slots: list = []  # per forward output: its tensor output index, or None
        self._tensor_args: tuple = ()  # per forward argument: whether it is a tensor

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (or None) for backward, where `saved_tensors` returns them."""
        for i, t in enumerate(tensors):
            if t is not None and not _is_tensor(t):
                raise TypeError(
                    f"save_for_backward can only save tensors, but argument {i} is of type "
                    f"{type(t).__name__}"
                )
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors; in backward, an error if one was modified in place since."""
        if self._values is None:
            return tuple(self._to_save)
        outs, ins = self._values
        result = []
        for where in self._where:
            if where is None:
                result.append(None)
                continue
            kind, i = where
            t = outs[i] if kind == "output" else ins[i]
            if isinstance(t, Stale):
                raise GradientError(t.message)
            result.append(t)
        return tuple(result)

    def mark_dirty(self, *tensors) -> None:
        """Say forward modified these inputs in place (and returns them)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Say these outputs get no gradient (integer indices, masks): they do not require
        grad, and backward receives zeros (or None) for them."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """False: backward gets None, not zeros, for outputs no gradient reached."""
        self.materialize_grads = bool(value)

    def __repr__(self) -> str:
        return f"<ctx of {self._function.__name__}>"


def _index_of(t, values):
    return next((i for i, v in enumerate(values) if v is t), None)


# ---------------------------------------------------------------- Function


class Function:
    """Base class of a custom autograd function (PyTorch's torch.autograd.Function): define
    the static methods `forward(ctx, *args)` and `backward(ctx, *grad_outputs)`, or
    `forward(*args)` and `setup_context(ctx, inputs, output)`, and call `apply(*args)`.

    backward returns one gradient (or None) per forward argument, a tensor with the shape of
    (or broadcasting to) its input; non-tensor arguments take None."""

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not defined for this Function")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward to be differentiated")

    def __call__(self, *args, **kwargs):
        name = type(self).__name__
        raise UnsupportedError(f"{name}: call {name}.apply(...), not an instance of the Function")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward without recording and attach backward as the outputs' gradient."""
        new_style = cls.setup_context is not Function.setup_context
        args = _bind(cls, new_style, args, kwargs)
        ctx = FunctionCtx(cls, args)
        # (in graph mode an in-place write in forward gives its target the write's history,
        # which a dirty input's gradient must bypass, as in eager mode)
        histories = [_history(a) for a in args]
        with no_grad():
            try:
                if new_style:
                    output = cls.forward(*args)
                    cls.setup_context(ctx, args, output)
                else:
                    output = cls.forward(ctx, *args)
            except TracedValueError as e:
                raise _traced(e, cls, "forward") from None
        outputs = output if isinstance(output, tuple) else (output,)
        if not any(ctx.needs_input_grad) or not any(map(_is_tensor, outputs)):
            return output  # nothing to differentiate: no node, as in PyTorch
        outputs = STATE.trace.custom_gradient(
            functools.partial(_record, cls, ctx, args, outputs),
            functools.partial(_append, cls, ctx, args, outputs, histories),
        )
        # the node holds what backward needs: no cycle through the outputs (a graph nobody
        # references is freed by reference counting)
        ctx._to_save = ctx._dirty = ctx._non_differentiable = ()
        return outputs if isinstance(output, tuple) else outputs[0]


def _history(a):
    """A graph value's history (what its gradient edge is made from), else None."""
    if not _is_tensor(a) or isinstance(a, Tensor):
        return None
    return a._node, a._index, a.stop_gradient


def _bind(cls, new_style: bool, args, kwargs) -> tuple:
    """The arguments as a tuple in forward's order (keywords and defaults bound, as PyTorch's
    apply does)."""
    if not kwargs:
        return args
    try:
        signature = inspect.signature(cls.forward)
        ctx = () if new_style else (None,)
        bound = signature.bind(*ctx, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}.apply: {e}") from None
    bound.apply_defaults()
    return tuple(bound.args if new_style else bound.args[1:])


def _traced(error: TracedValueError, cls, method: str) -> TracedValueError:
    error.args = (
        f"{cls.__name__}.{method} under jit: {error}. Under jit a Function's forward and "
        "backward are traced, so they must be written with nbflow ops; for a kernel of your "
        "own declare an nbflow.Op with defgrad instead",
    )
    return error


def _layout(ctx, inputs, outputs) -> list:
    """Where each saved tensor comes back from in backward; returns the saved tensors that are
    neither inputs nor outputs (extra node inputs)."""
    extras = []
    ctx._where = []
    for t in ctx._to_save:
        if t is None:
            ctx._where.append(None)
        elif (j := _index_of(t, inputs)) is not None:
            ctx._where.append(("input", j))
        elif (i := _index_of(t, outputs)) is not None:
            ctx._where.append(("output", i))
        else:
            ctx._where.append(("extra", ctx._extra_at + len(extras)))
            extras.append(t)
    return extras


def _split(ctx, args, outputs):
    """The tensor inputs, the tensor outputs, and each forward output's tensor index."""
    inputs = [a for a in args if _is_tensor(a)]
    tensors = [o for o in outputs if _is_tensor(o)]
    slots, k = [], 0
    for o in outputs:
        slots.append(k if _is_tensor(o) else None)
        k += _is_tensor(o)
    ctx._n_inputs, ctx._n_outputs, ctx._output_slots = len(inputs), len(tensors), slots
    ctx._tensor_args = tuple(_is_tensor(a) for a in args)
    for t in ctx._dirty:
        if _index_of(t, inputs) is None or _index_of(t, tensors) is None:
            raise UnsupportedError(
                f"{ctx._function.__name__}: mark_dirty takes inputs that forward modified in "
                "place and returns"
            )
    return inputs, tensors


def _record(cls, ctx, args, outputs) -> tuple:
    """Eager mode: one tape node for the outputs, whose rule calls backward."""
    inputs, tensors = _split(ctx, args, outputs)
    for t in ctx._dirty:
        if t.requires_grad and t._node is None:
            raise GradientError(
                f"{cls.__name__}: a leaf tensor that requires grad was modified in place by "
                "forward (mark_dirty); clone() it before the call"
            )
        if t._view is not None or t._base is not None:
            raise UnsupportedError(
                f"{cls.__name__}: mark_dirty on a view or a detach()ed tensor is not recorded "
                "for autograd; clone() it before the call"
            )
    fresh = []  # an input or a tensor with history given back as is: an alias gets the node
    for o in tensors:
        reused = o._node is not None or o.requires_grad or _index_of(o, inputs) is not None
        if _index_of(o, fresh) is not None or (reused and _index_of(o, ctx._dirty) is None):
            o = o.detach()
        fresh.append(o)
    ctx._extra_at = len(inputs)
    extras = _layout(ctx, inputs, tensors)
    attrs = {"ctx": ctx, "materialize_grads": ctx.materialize_grads}
    STATE.trace.record(_tape_op(cls), inputs + extras, attrs, fresh)
    for t in ctx._non_differentiable:
        i = _index_of(t, tensors)
        if i is not None:
            fresh[i].requires_grad, fresh[i]._node = False, None
    it = iter(fresh)
    return tuple(next(it) if _is_tensor(o) else o for o in outputs)


def _append(cls, ctx, args, outputs, histories) -> tuple:
    """Graph mode: the forward's ops are in the Program; one op of this Function copies its
    results, and its gradient rule calls backward."""
    inputs, tensors = _split(ctx, args, outputs)
    for a, history in zip(args, histories):
        if history is not None and _index_of(a, ctx._dirty) is not None:
            a._node, a._index, a.stop_gradient = history
    ctx._extra_at = len(inputs) + len(tensors)
    extras = _layout(ctx, inputs, tensors)
    attrs = {"ctx": ctx, "materialize_grads": ctx.materialize_grads}
    result = bind(_graph_op(cls), *inputs, *tensors, *extras, **attrs)
    result = result if isinstance(result, tuple) else (result,)
    for t in ctx._non_differentiable:
        i = _index_of(t, tensors)
        if i is not None:
            result[i].stop_gradient = True
    for t in ctx._dirty:  # the input holds the result now: it takes its history
        t._adopt_history(result[_index_of(t, tensors)])
    it = iter(result)
    return tuple(next(it) if _is_tensor(o) else o for o in outputs)


# ---------------------------------------------------------------- the gradient rule


def _gradient(g, out, *ins, ctx, materialize_grads):
    """The node's rule (both modes): backward on the output gradients, one gradient per node
    input (None for the saved extras and, in graph mode, the forward's results)."""
    cls = ctx._function
    grads = g if ctx._n_outputs > 1 else (g,)
    outs = out if ctx._n_outputs > 1 else (out,)
    per_output = [None if k is None else grads[k] for k in ctx._output_slots]
    ctx._values = (outs, ins)
    try:
        result = cls.backward(ctx, *per_output)
    except TracedValueError as e:
        raise _traced(e, cls, "backward") from None
    finally:
        ctx._values = None
    result = result if isinstance(result, tuple) else (result,)
    inputs = _forward_inputs(ctx, ins)
    n = len(ctx.needs_input_grad)
    if len(result) < n or any(r is not None for r in result[n:]):
        raise GradientError(
            f"{cls.__name__}.backward returned an incorrect number of gradients (expected {n}, "
            f"one per forward argument, got {len(result)})"
        )
    in_grads = [_checked_grad(cls, p, r, x) for p, (r, x) in enumerate(zip(result, inputs))]
    in_grads = [r for r, x in zip(in_grads, inputs) if x is not None]
    return tuple(in_grads) + (None,) * (len(ins) - len(in_grads))


def _forward_inputs(ctx, ins) -> list:
    """Per forward argument: its node input (a tensor), or None for a non-tensor."""
    tensors = iter(ins[: ctx._n_inputs])
    return [next(tensors) if tensor_arg else None for tensor_arg in ctx._tensor_args]


def _checked_grad(cls, p: int, g, x):
    """Backward's gradient for argument p, checked: None for a non-tensor argument, a tensor
    whose shape broadcasts to the input's."""
    if g is None:
        return None
    if x is None:
        raise GradientError(
            f"{cls.__name__}.backward returned a gradient different from None at position {p}, "
            "but the corresponding forward argument is not a tensor"
        )
    if not _is_tensor(g):
        raise GradientError(
            f"{cls.__name__}.backward returned a {type(g).__name__} at position {p}; gradients "
            "are tensors (or None)"
        )
    shape = getattr(x, "shape", ())
    if -1 not in shape and -1 not in g.shape and not _sums_to(g.shape, shape):
        raise ShapeError(
            f"{cls.__name__}.backward returned a gradient of shape {tuple(g.shape)} at position "
            f"{p}, for an input of shape {tuple(shape)}"
        )
    # PyTorch's anomaly mode checks what backward returns
    if (nan_inf_checking() or STATE.anomaly[1]) and type(g) is Tensor:
        check_finite(np.asarray(g._data), f"{cls.__name__}Backward", f"grad {p}", None)
    return g


def _sums_to(shape, target) -> bool:
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(shape)
    except ValueError:
        return False


class _TapeOp:
    """The op of a Function's eager tape node (duck-typed, as a jitted call's: the driver
    reads `name`, `inplace` and `grad`)."""

    inplace: dict = {}

    def __init__(self, cls):
        self.name = f"{cls.__name__}Backward"  # PyTorch's grad_fn name

    grad = staticmethod(_gradient)


_TAPE_OPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Function class -> op
_GRAPH_OPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _tape_op(cls) -> _TapeOp:
    op = _TAPE_OPS.get(cls)
    if op is None:
        op = _TAPE_OPS[cls] = _TapeOp(cls)
    return op


def _graph_op(cls) -> Op:
    """The op a Program records for cls: inputs (tensor arguments, the forward's tensor
    results, extra saved tensors), outputs copies of the results; declared on first use."""
    op = _GRAPH_OPS.get(cls)
    if op is not None:
        return op
    name, n = cls.__name__, 1
    while name in REGISTRY:
        name, n = f"{cls.__name__}_{n}", n + 1
    op = _GRAPH_OPS[cls] = Op(
        name=name,
        inputs=("*values",),
        outputs=("out",),
        spec=_results_spec,
        kernels={"cpu": _copy_results, "cuda": _copy_results},
        dtypes=dt.ALL,
        ref=_results_ref,
        grad=_gradient,
        attrs={"ctx": Attr("any"), "materialize_grads": Attr("bool", True)},
        promote=(),
        doc=f"The autograd.Function {cls.__qualname__}: its forward's results, whose gradient "
        "is its backward.",
    )
    return op


def _results(ctx, values):
    return values[ctx._n_inputs : ctx._n_inputs + ctx._n_outputs]


def _results_spec(*specs, ctx, materialize_grads):
    out = tuple(_results(ctx, specs))
    return out if len(out) > 1 else out[0]


def _copy_results(*arrays, ctx, materialize_grads):
    """The kernel, on any device (numpy and numba device arrays both take `[...] =`)."""
    for src, dst in zip(_results(ctx, arrays), arrays[-ctx._n_outputs :]):
        dst[...] = src


def _results_ref(*arrays, ctx, materialize_grads):
    out = tuple(a.copy() for a in _results(ctx, arrays))
    return out if len(out) > 1 else out[0]


# ---------------------------------------------------------------- once_differentiable


class _DelayedError:
    """The op of the node once_differentiable puts on gradients computed under create_graph:
    differentiating them again raises."""

    name = "DelayedError"
    inplace: dict = {}

    @staticmethod
    def grad(g, out, *ins):
        raise GradientError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def _delayed_error(result, wants):
    """result with its float tensors detached and given a node that raises when reached."""
    single = not isinstance(result, tuple)
    results = list((result,) if single else result)
    marked = [i for i, r in enumerate(results) if isinstance(r, Tensor) and dt.is_float(r.dtype)]
    outs = [results[i].detach() for i in marked]
    if outs:
        STATE.trace.record(_DelayedError, wants, {}, outs)
    for i, o in zip(marked, outs):
        results[i] = o
    return results[0] if single else tuple(results)


def once_differentiable(backward):
    """Decorator for a Function's backward that is not itself differentiable (written with
    numpy, say): it runs without recording, and differentiating its result again raises."""

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with no_grad():
            result = backward(ctx, *grad_outputs)
        wants = [g for g in grad_outputs if isinstance(g, Tensor) and g.requires_grad]
        if not (is_grad_enabled() and wants):
            return result
        # (a program's backward is not differentiated again by the tape)
        return STATE.trace.custom_gradient(lambda: _delayed_error(result, wants), lambda: result)

    return wrapper


# ---------------------------------------------------------------- grad mode names


class inference_mode(ContextDecorator):
    """PyTorch's inference_mode: no gradient recording inside (nbflow has no separate
    inference tensors); inference_mode(False) changes nothing."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _recreate_cm(self):  # as a decorator: one per call (calls may be in several threads)
        return type(self)(self.mode)

    def __enter__(self):
        self.scope = no_grad() if self.mode else nullcontext()
        self.scope.__enter__()

    def __exit__(self, *exc):
        return self.scope.__exit__(*exc)


# ---------------------------------------------------------------- anomaly detection


class AnomalyTrace(CheckingTrace):
    """The eager trace in anomaly mode: the ops of gradient rules are checked for NaN and Inf
    (PyTorch checks backward, not forward) and the tape keeps each op's line, so an error
    names the forward op and where it was called."""

    def apply(self, op, args, attrs, checked=False):
        if STATE.differentiating is None and not nan_inf_checking():
            return EagerTrace.apply(self, op, args, attrs, checked)
        return super().apply(op, args, attrs, checked)


def _set_anomaly(enabled: bool, check_nan: bool) -> None:
    """Anomaly mode in this thread (per thread, as nbflow's other modes; PyTorch keeps it
    process-wide)."""
    STATE.anomaly = (enabled, enabled and check_nan)
    if type(STATE.trace) in (EagerTrace, AnomalyTrace):  # (not inside a jit trace)
        STATE.trace = AnomalyTrace() if STATE.anomaly[1] else EagerTrace()
        modes_changed()


class set_detect_anomaly(ContextDecorator):
    """Anomaly mode on or off: as a function until changed again, or as a context manager.
    Under it a NaN or Inf made by backward raises nbflow's NumericalError naming the op and
    the forward op it differentiates, with its line (nbflow.check_nan_inf checks forward ops
    too). Eager mode only: a jitted function's Executor checks with check_nan_inf."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = STATE.anomaly
        _set_anomaly(bool(mode), bool(check_nan))

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set_anomaly(*self.prev)
        return False


class detect_anomaly(ContextDecorator):
    """Context manager (and decorator) for anomaly mode in its block (see set_detect_anomaly)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)

    def _recreate_cm(self):  # as a decorator: one per call (calls may be in several threads)
        return type(self)(self.check_nan)

    def __enter__(self):
        self.prev = STATE.anomaly
        _set_anomaly(True, self.check_nan)

    def __exit__(self, *exc):
        _set_anomaly(*self.prev)
        return False


def is_anomaly_enabled() -> bool:
    return STATE.anomaly[0]


def is_anomaly_check_nan_enabled() -> bool:
    return STATE.anomaly[1]


# ---------------------------------------------------------------- Variable


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """PyTorch's legacy Variable: `Variable(t, requires_grad=False)` is a tensor sharing t's
    memory, cut from its history, requiring grad as asked; every tensor is a Variable."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with nbflow.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = tensor(np.zeros((0,), np.float32))
        if not _is_tensor(data):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if not isinstance(data, Tensor):  # a graph value
            if requires_grad:
                raise UnsupportedError(
                    "Variable(..., requires_grad=True) makes a new leaf, which a traced "
                    "function cannot have: make the tensor outside the @jit function"
                )
            return data.detach()
        return data.detach().requires_grad_(bool(requires_grad))


# ---------------------------------------------------------------- gradcheck


class GradcheckError(GradientError):
    """A gradient that does not match finite differences (PyTorch's GradcheckError is a
    RuntimeError, as GradientError is)."""


def _as_inputs(inputs) -> tuple:
    return (inputs,) if _is_tensor(inputs) else tuple(inputs)


def _float_outputs(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, Tensor) and dt.is_float(o.dtype)]


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked=None,
) -> bool:
    """PyTorch's gradcheck: the gradients of func at the inputs (a tensor or a tuple) against
    central finite differences, for every input that requires grad (float64 advised). The
    full Jacobian, or with fast_mode a random projection (nbflow.testing.gradcheck). Returns
    True, or raises GradcheckError (False with raise_exception=False)."""
    if check_batched_grad or check_batched_forward_grad or check_forward_ad:
        raise UnsupportedError("gradcheck: nbflow has no forward-mode or batched gradients")
    inputs = _as_inputs(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for i in diff:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {i} requires grad and is not float64; the check may fail "
                "from rounding alone",
                UserWarning,
                stacklevel=2,
            )
    if not check_backward_ad:
        return True
    try:
        if fast_mode:
            try:
                projection.gradcheck(func, inputs, eps=eps, rtol=rtol, atol=atol)
            except projection.GradcheckError as e:
                raise GradcheckError(f"gradcheck (fast mode): {e}") from None
        else:
            _check_jacobians(func, inputs, diff, eps, atol, rtol, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _check_jacobians(func, inputs, diff, eps, atol, rtol, check_grad_dtypes):
    outs = _float_outputs(func(*inputs))
    numeric = {i: _numeric(func, inputs, i, eps) for i in diff}
    for k, o in enumerate(outs):
        analytic = _analytic(o, [inputs[i] for i in diff], check_grad_dtypes)
        for i, a in zip(diff, analytic):
            n = numeric[i][k]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {k} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}"
                )


def _analytic(out, xs, check_dtypes) -> list[np.ndarray]:
    """d out / d x for each x, as (out.size, x.size) arrays: one vjp per output element."""
    rows = [np.zeros((out.size, x.size)) for x in xs]
    if not out.requires_grad:
        return rows
    for j in range(out.size):
        seed = np.zeros(out.size, out.dtype)
        seed[j] = 1
        gs = grad(out, xs, tensor(seed.reshape(out.shape)), retain_graph=True, allow_unused=True)
        for row, x, g in zip(rows, xs, gs):
            if g is None:
                continue
            if check_dtypes and g.dtype != x.dtype:
                raise GradcheckError(f"gradient dtype {g.dtype} != input dtype {x.dtype}")
            row[j] = np.asarray(g._data, np.float64).reshape(-1)
    return rows


def _numeric(func, inputs, i, eps) -> list[np.ndarray]:
    """d output / d input i by central differences, per float output: (out.size, x.size)."""
    x = np.asarray(inputs[i]._data)
    columns = []
    for e in range(x.size):
        sides = []
        for sign in (1, -1):
            moved = list(inputs)
            shifted = x.astype(np.float64).reshape(-1)
            shifted[e] += sign * eps
            # (requiring grad, with grad on: func may take gradients itself, as gradgradcheck's)
            moved[i] = tensor(shifted.reshape(x.shape), x.dtype, requires_grad=True)
            sides.append([np.asarray(o._data, np.float64) for o in _float_outputs(func(*moved))])
        columns.append([((p - m) / (2 * eps)).reshape(-1) for p, m in zip(*sides)])
    if not columns:  # an empty input
        return [np.zeros((o.size, 0)) for o in _float_outputs(func(*inputs))]
    return [np.stack(per_output, axis=1) for per_output in zip(*columns)]


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """PyTorch's gradgradcheck: gradcheck of the vector-Jacobian product of func, as a function
    of the inputs and the output gradients (random ones by default), so second derivatives."""
    if check_fwd_over_rev:
        raise UnsupportedError("gradgradcheck: nbflow has no forward-mode gradients")
    inputs = _as_inputs(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    with no_grad():
        outs = _float_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            tensor(rng.standard_normal(o.shape), o.dtype, requires_grad=True) for o in outs
        )
    grad_outputs = _as_inputs(grad_outputs)
    if len(grad_outputs) != len(outs):
        raise ShapeError(f"gradgradcheck: {len(outs)} outputs but {len(grad_outputs)} grad_outputs")
    n = len(inputs)

    def vjp(*values):
        xs, seeds = values[:n], values[n:]
        res = _float_outputs(func(*xs))
        live = [(o, s) for o, s in zip(res, seeds) if o.requires_grad]
        if not live:
            return ()
        gs = grad(
            [o for o, _ in live],
            [xs[i] for i in diff],
            [s for _, s in live],
            create_graph=True,
            allow_unused=True,
        )
        return tuple(g for g in gs if g is not None)

    return gradcheck(
        vjp,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        check_grad_dtypes=check_grad_dtypes,
        fast_mode=fast_mode,
    )
