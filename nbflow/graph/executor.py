"""Running a Program: target-driven pruning, feed checks, a Scope for persistables, and an
execution plan cached per (program version, feed names, targets).

Each op runs through the eager trace (grad disabled) with arrays wrapped as Tensors: the same
plans, shape rules and kernels as eager mode, so there is no second implementation of any op.
The run-time output shape is checked against the compile-time var shape, which enforces that
the compile-time rule generalises what happens at run time.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import device as devices
from .. import dtypes as dt
from ..core import Node, no_grad, use_trace
from ..errors import DTypeError, ProgramError, ShapeError
from ..tensor import EagerTrace, Tensor
from .program import Program, Var


class Scope(dict):
    """Values of persistable vars (parameters, optimizer state) by name; survives runs."""

    def value(self, name: str) -> np.ndarray:
        return self[name].numpy()


_global_scope = Scope()


def global_scope() -> Scope:
    return _global_scope


def compatible(compile_shape, run_shape) -> bool:
    """Whether a run-time shape is an instance of a compile-time one (-1 matches any size)."""
    return len(compile_shape) == len(run_shape) and all(
        c == -1 or c == r for c, r in zip(compile_shape, run_shape)
    )


def needed_ops(block, targets) -> list[Node]:
    """The ops the targets (vars or ops) depend on, in program order.

    Walking backwards, an op is kept when it is a target or writes a var still needed; an
    in-place write after the last read of its var is dropped with that var."""
    wanted_vars = {id(t) for t in targets if isinstance(t, Var)}
    wanted_ops = {id(t) for t in targets if isinstance(t, Node)}
    kept = []
    for node in reversed(block.ops):
        if id(node) in wanted_ops or any(id(v) in wanted_vars for v in node.outputs):
            kept.append(node)
            wanted_vars.update(id(v) for v in node.inputs)
    kept.reverse()
    return kept


def prune(program: Program, targets) -> Program:
    """A new Program (sharing the vars) with only the ops the targets need."""
    pruned = Program()
    block = pruned.global_block()
    source = program.global_block()
    block.vars = dict(source.vars)
    block.ops = needed_ops(source, targets)
    pruned.captured = dict(program.captured)
    return pruned


class Executor:
    """Runs programs on a device: "cpu", or "cuda"/"cuda:N" (feeds are copied to the GPU once
    per run; persistables are moved there on first use and stay there, in the scope)."""

    def __init__(self, device: str = "cpu"):
        self.device = devices.parse(device)
        self.on_gpu = self.device != devices.CPU
        if self.on_gpu:
            devices.check_gpu(self.device)  # UnsupportedError, saying why, without a GPU
        self.eager = EagerTrace()
        self._uploaded: dict = {}  # captured tensor id -> (tensor, version, its GPU copy)
        self._plans = weakref.WeakKeyDictionary()  # program -> {(version, feeds, targets): ops}

    def run(self, program: Program, feed=None, fetch_list=None, scope=None, return_numpy=True):
        """Run the ops the fetch targets need; returns the fetched values in order."""
        scope = _global_scope if scope is None else scope
        feed = feed or {}
        fetch_list = list(fetch_list or [])
        block = program.global_block()
        targets = [self._target(block, t) for t in fetch_list]
        ops = self._plan(program, tuple(sorted(feed)), targets)
        scope.update(self._captured(program))  # the eager tensors the program was built around
        env = {name: self._feed(block, name, value) for name, value in feed.items()}
        with use_trace(self.eager), no_grad():
            for node in ops:
                self._run_op(node, env, scope)
        results = [self._lookup(t, env, scope) for t in targets if isinstance(t, Var)]
        return [r.numpy() for r in results] if return_numpy else results

    def _plan(self, program, feed_names, targets):
        """The ops to run, cached: no fetch targets means every op (a startup program)."""
        plans = self._plans.setdefault(program, {})
        key = (program.version, feed_names, tuple(id(t) for t in targets))  # targets: in program
        ops = plans.get(key)
        if ops is None:
            if len(plans) > 256:
                plans.clear()
            block = program.global_block()
            ops = plans[key] = needed_ops(block, targets) if targets else list(block.ops)
        return ops

    def _captured(self, program) -> dict:
        """The program's captured tensors, on this executor's device (a GPU copy is made again
        only when the tensor was written since)."""
        if not self.on_gpu:
            return program.captured
        values = {}
        for name, t in program.captured.items():
            if t.device == self.device:
                values[name] = t
                continue
            held = self._uploaded.get(id(t))
            if held is None or held[0] is not t or held[1] != t.version:
                held = self._uploaded[id(t)] = (t, t.version, t.detach().to(self.device))
            values[name] = held[2]
        return values

    def _target(self, block, t):
        if isinstance(t, (Var, Node)):
            return t
        try:
            return block.var(t)
        except KeyError:
            raise ProgramError(f"fetch: the program has no var named '{t}'") from None

    def _feed(self, block, name, value) -> Tensor:
        try:
            v = block.var(name)
        except KeyError:
            raise ProgramError(f"feed: the program has no var named '{name}'") from None
        if isinstance(value, Tensor) and value.device != devices.CPU:
            value = self._on_device(value)  # a GPU value is used as it is
            if value.dtype == v.dtype and compatible(v.shape, value.shape):
                return value
        array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        where = f" (declared at {v.location})" if v.location else ""
        if array.dtype != v.dtype:
            # float data into a float var (or int into int) converts; other kinds are an error
            if (
                dt.kind(dt.widen(array.dtype)) != dt.kind(v.dtype)
                if array.dtype.kind in "biuf"
                else True
            ):
                raise DTypeError(f"feed '{name}': dtype {array.dtype}, expected {v.dtype}{where}")
            array = array.astype(v.dtype)
        if not compatible(v.shape, array.shape):
            raise ShapeError(
                f"feed '{name}': shape {array.shape} does not fit {list(v.shape)}{where}"
            )
        t = Tensor(np.asarray(array, order="C"))  # (ascontiguousarray makes 0-d 1-d)
        return t.to(self.device) if self.on_gpu else t

    def _on_device(self, t: Tensor) -> Tensor:
        if t.device != self.device:
            raise devices.DeviceError(
                f"a value on {t.device} given to an Executor on {self.device}"
            )
        return t

    def _lookup(self, v: Var, env, scope) -> Tensor:
        t = scope.get(v.name) if v.persistable else env.get(v.name)
        if t is None:
            what = "feed" if v.is_data else "value (run the startup program first?)"
            where = f" declared at {v.location}" if v.location else ""
            raise ProgramError(f"missing {what} for %{v.name}{where}")
        if self.on_gpu and type(t) is Tensor:  # put in the scope by hand: moved once
            t = (scope if v.persistable else env)[v.name] = t.to(self.device)
        return t

    def _run_op(self, node: Node, env, scope):
        args = [self._lookup(v, env, scope) for v in node.inputs]
        try:
            result = self.eager.apply(node.op, args, node.attrs, checked=True)
        except (ShapeError, DTypeError) as e:
            e.args = (f"{e} (op created at {node.location})",)
            raise
        results = result if isinstance(result, tuple) else (result,)
        if self.on_gpu:  # an op with no tensor input (a creation op) ran on
            # the CPU: its result moves to the device once and stays there
            results = [t.to(self.device) if type(t) is Tensor else t for t in results]
        for v, t in zip(node.outputs, results):
            if v.shape != t.shape and not compatible(v.shape, t.shape):
                raise ShapeError(
                    f"{node.op.name} (created at {node.location}): run-time shape {t.shape} "
                    f"does not fit the compile-time shape {list(v.shape)} of %{v.name}"
                )
            (scope if v.persistable else env)[v.name] = t
