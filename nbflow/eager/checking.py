"""Debugging and safety switches: the NaN/Inf check mode and the memory budget.

    with nbflow.check_nan_inf():         # or NBFLOW_CHECK_NAN_INF=1 in the environment
        loss = model(x); loss.backward()  # the first op making a NaN or Inf raises

    nbflow.Executor(check_nan_inf=True)   # the same after each op of a Program
    nbflow.set_memory_budget(1 << 30)     # or NBFLOW_MAX_ALLOC_BYTES: bigger outputs raise

The check runs after each op on its float outputs and raises NumericalError (a
FloatingPointError) naming the op, the output, the NaN and Inf counts and the line that
defined the op; an op of a gradient rule also names the forward op it differentiates. An
in-place op (an optimizer's update, add_) that the check refuses leaves its targets as they
were before it (eager mode keeps a copy of them while the check is on), so a bad step loses
no parameter. When
the check is off nothing of it runs: eager mode swaps in a checking trace only while it is on,
and the Executor decides once per run.

The memory budget bounds what one op may allocate for its outputs; a bigger request raises
ResourceExhaustedError (a MemoryError) before anything is allocated. The default is the
machine's physical memory: on Linux a larger allocation would "succeed" lazily and the process
be killed later, without a Python exception. Loaders bound what they read by it too.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from ..core import REGISTRY, STATE, Node, Trace, modes_changed, set_thread_default
from ..core.errors import DomainError, NumericalError, user_location
from .tensor import EagerTrace, Tensor

__all__ = ["check_nan_inf", "get_memory_budget", "nan_inf_checking", "set_memory_budget"]


# ---------------------------------------------------------------- NaN/Inf check


_FROM_ENVIRONMENT = os.environ.get("NBFLOW_CHECK_NAN_INF", "0") not in ("", "0")


def nan_inf_checking() -> bool:
    """Whether the NaN/Inf check is on in this thread (the environment variable, the default
    of every thread, or check_nan_inf())."""
    return STATE.nan_inf_check


class CheckingTrace(EagerTrace):
    """The eager trace, checking every op's float outputs after it runs."""

    binary = Trace.binary  # no shortcut: every op goes through apply() and its check

    def apply(self, op, args, attrs, checked=False):
        kept = _targets(op, args) if op.inplace else ()
        out = super().apply(op, args, attrs, checked)
        try:
            for i, t in enumerate(out if isinstance(out, tuple) else (out,)):
                if type(t) is Tensor:
                    check_finite(t._data, op.name, op.outputs[min(i, len(op.outputs) - 1)], None)
        except NumericalError:
            for t, old in kept:  # an in-place op (an optimizer's step): nothing is lost
                t._data[...] = old
            raise
        return out

    def record(self, op, inputs, attrs, outs):
        super().record(op, inputs, attrs, outs)
        # the tape keeps where each op was called, so a NaN in its gradient can say so
        for o in outs:
            if o._node is not None and o._node.location is None:
                o._node.location = user_location()


def _targets(op, args) -> list:
    """The tensors an in-place op overwrites, each with a copy of its values (restored
    when the check refuses what the op wrote into them)."""
    kept = []
    for i in set(op.inplace.values()):
        t = args[i] if i < len(args) else None
        if type(t) is Tensor:
            kept.append((t, t._data.copy()))
    return kept


@contextmanager
def check_nan_inf(enabled: bool = True):
    """Check every op's float outputs for NaN and Inf inside the block (eager mode, and
    Executors made without an explicit check_nan_inf), in this thread only."""
    before_flag, before_trace = STATE.nan_inf_check, STATE.trace
    STATE.nan_inf_check = enabled
    if isinstance(STATE.trace, EagerTrace):  # (autocast's eager trace too)
        STATE.trace = CheckingTrace() if enabled else EagerTrace()
        modes_changed()
    try:
        yield
    finally:
        STATE.nan_inf_check = before_flag
        if STATE.trace is not before_trace and isinstance(STATE.trace, EagerTrace):
            STATE.trace = before_trace
            modes_changed()


def is_finite(array: np.ndarray) -> bool:
    """Whether an array holds no NaN or Inf (integer arrays always do). The sum, a reduction
    that allocates nothing, is finite exactly when every value is unless it overflows; only
    then are the values tested one by one."""
    if array.dtype.kind != "f":
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        total = array.sum()
    return bool(np.isfinite(total)) or bool(np.isfinite(array).all())


def check_finite(array: np.ndarray, op_name: str, output: str, location: str | None):
    """Raise NumericalError when a float array holds a NaN or an infinity."""
    if is_finite(array):
        return
    nan = int(np.isnan(array).sum())
    inf = int(np.isinf(array).sum())
    forward = STATE.differentiating
    where = location or user_location()
    message = (
        f"{op_name} produced {nan} NaN and {inf} Inf in output {output} "
        f"({array.size} values, shape {array.shape})"
    )
    message += _finite_range(array)
    if forward is not None:
        message += f"; in the gradient of {_describe(forward)}"
    error = NumericalError(f"{message} (defined at {where})")
    error.op, error.output, error.nan_count, error.inf_count = op_name, output, nan, inf
    error.location = where
    error.grad_of = forward.op.name if forward is not None else None
    raise error


def check_node(node: Node, values) -> None:
    """The Executor's check of a Program op's outputs (`values` its results, in order)."""
    forward = node.grad_of
    for v, t in zip(node.outputs, values):
        a = t._data
        if is_finite(a):
            continue
        outer, STATE.differentiating = STATE.differentiating, forward
        try:
            check_finite(a, node.op.name, f"%{v.name}", node.location or "?")
        finally:
            STATE.differentiating = outer


def run_checked(executor, node: Node, env, scope):
    """The Executor's checked run of one op: an in-place op (an optimizer's update) whose
    outputs the check refuses leaves its targets as they were before it."""
    kept = []
    for i in set(node.op.inplace.values()):
        t = executor._lookup(node.inputs[i], env, scope) if i < len(node.inputs) else None
        if type(t) is Tensor:
            kept.append((t, t._data.copy()))
    values = executor._run_op(node, env, scope)
    try:
        check_node(node, values)
    except NumericalError:
        for t, old in kept:
            t._data[...] = old
        raise
    return values


def _finite_range(array: np.ndarray) -> str:
    finite = array[np.isfinite(array)]
    if finite.size == 0:
        return ", no finite values"
    return f", finite values in [{finite.min():.6g}, {finite.max():.6g}]"


def _describe(node: Node) -> str:
    where = f" defined at {node.location}" if node.location else ""
    return f"{node.op.name}{where}"


# ---------------------------------------------------------------- memory budget


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not on every platform
        return 1 << 62


def set_memory_budget(nbytes: int | None) -> None:
    """Bytes one op may allocate for its outputs (None: the physical memory, the default).
    Applies to eager ops, Executors and the default budgets of the loaders."""
    if nbytes is None:
        nbytes = _physical_memory()
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise DomainError(f"set_memory_budget: a number of bytes >= 0, got {nbytes!r}")
    STATE.memory_budget = nbytes
    for op in REGISTRY.values():
        op.cache.clear()  # plans checked the old budget when they were made


def get_memory_budget() -> int:
    return STATE.memory_budget


def _budget_from_environment() -> int | None:
    text = os.environ.get("NBFLOW_MAX_ALLOC_BYTES")
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        message = f"NBFLOW_MAX_ALLOC_BYTES must be a number of bytes, got {text!r}"
        raise DomainError(message) from None


set_memory_budget(_budget_from_environment())
if _FROM_ENVIRONMENT:  # every thread starts checking
    set_thread_default("nan_inf_check", True)
    set_thread_default("trace", CheckingTrace())
