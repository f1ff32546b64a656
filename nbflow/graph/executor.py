"""Running a Program: target-driven pruning, feed checks, a Scope for persistables, and an
execution plan cached per (program version, feed names, targets).

Each op runs through the eager trace (grad disabled) with arrays wrapped as Tensors: the same
plans, shape rules and kernels as eager mode, so there is no second implementation of any op.
The run-time output shape is checked against the compile-time var shape, which enforces that
the compile-time rule generalises what happens at run time.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from .. import ops
from ..core import STATE, Node, modes_changed, no_grad
from ..core import dtypes as dt
from ..core.errors import (
    DTypeError,
    NbflowError,
    ProgramError,
    ShapeError,
    filter_traceback,
    locate,
    user_location,
)
from ..eager.checking import nan_inf_checking, run_checked
from ..eager.tensor import EagerTrace, Tensor
from ..runtime import device as devices
from .fusion import fuse
from .memory import (
    ARENA,
    RECORD,
    Arena,
    ArenaSpace,
    Storages,
    outer_reads,
    plan_memory,
    poison_default,
)
from .program import Program, Var, compatible, unique
from .replay import Replay
from .rewrite import rewrite

# recorded runs that stopped holding in a row (an attr changed on every run, say) after which a
# plan's arena records no more (graph/replay.py)
REPLAY_MISSES = 4


class Scope(dict):
    """Values of persistable vars (parameters, optimizer state) by name; survives runs."""

    def value(self, name: str) -> np.ndarray:
        return self[name].numpy()


_global_scope = Scope()


def global_scope() -> Scope:
    return _global_scope


def needed_ops(block, targets) -> list[Node]:
    """The ops the targets (vars or ops) depend on, in program order.

    Walking backwards, an op is kept when it is a target, writes a var still needed, or
    writes in place the memory of one (through a view: `mul_(reshape(u))` before `u` is
    read or fetched); an in-place write after the last read of its memory is dropped."""
    storage = Storages(block.ops).find
    wanted_vars, wanted_memory = set(), set()

    def want(vs):
        for v in vs:
            wanted_vars.add(id(v))
            wanted_memory.add(storage(id(v)))

    want(t for t in targets if isinstance(t, Var))
    wanted_ops = {id(t) for t in targets if isinstance(t, Node)}
    kept = []
    for node in reversed(block.ops):
        if (
            id(node) in wanted_ops
            or any(id(v) in wanted_vars for v in node.outputs)
            or any(storage(id(node.inputs[j])) in wanted_memory for j in node.op.inplace.values())
        ):
            kept.append(node)
            want(node.inputs)
            if getattr(node.op, "block_attrs", None):  # a hand-built block may read outer vars
                want(outer_reads(node))
    kept.reverse()
    return kept


def is_seed(node: Node) -> bool:
    """Whether the node seeds a backward appended for a loss: ones_like(loss), which
    append_backward makes outside any gradient rule (what a saved program keeps of it)."""
    return node.grad_of is None and node.op.name == "full_like" and node.attrs["value"] == 1


def updates(block, loss: Var) -> list[Node]:
    """The updates of `loss` (PaddlePaddle's optimizer ops): the in-place writes to
    persistable vars that follow a backward appended for the loss, up to the next backward's
    seed, where minimize() (or the user, after append_backward) appends them. Fetching the
    loss runs them: a training program trains when its loss is fetched."""
    start = block.program.backward_start
    if start is None or block.idx != 0:
        return []
    found, mine = [], False
    for node in block.ops[start:]:
        if is_seed(node):
            mine = node.inputs[0] is loss
        elif mine and any(node.inputs[j].persistable for j in node.op.inplace.values()):
            found.append(node)
    return found


def with_updates(block, targets) -> list:
    """The targets and the updates of the losses among them (implicit targets)."""
    implied = [u for t in targets if isinstance(t, Var) for u in updates(block, t)]
    return unique(targets + implied) if implied else targets


def prune(program: Program, targets) -> Program:
    """A new Program with only the ops the targets need (Program.prune)."""
    return program.prune(targets)


def own_target(block, t):
    """A fetch target as a var or op of `block`'s program: a var given by name, or a var of
    the program it was pruned or cloned from, is found by its name."""
    if isinstance(t, str) or (isinstance(t, Var) and t.program is not block.program):
        return block.var(t if isinstance(t, str) else t.name)
    return t


class Plan(list):
    """The steps of a run, and the persistable vars they read from the scope (`stored`)."""

    def __init__(self, steps, stored):
        super().__init__(steps)
        self.stored = stored


def _check_stored(stored: list[Var], scope):
    """The scope's values of the persistable vars a run reads, as the program declares them
    (a float64 value in a float32 program would make float64 results; an int64 one would fail
    inside a kernel): DTypeError or ShapeError naming the var."""
    for v in stored:
        t = scope.get(v.name)
        if t is None or (t.dtype == v.dtype and compatible(v.shape, t.shape)):
            continue
        what = f"dtype {t.dtype}" if t.dtype != v.dtype else f"shape {tuple(t.shape)}"
        error = (DTypeError if t.dtype != v.dtype else ShapeError)(
            f"the scope's value of %{v.name} has {what}, the program declares {v.spec}; "
            "put a value of that dtype and shape in the scope (or build the program for it)"
        )
        raise locate(error, v.location) if v.location else error


def _flag(name: str, value) -> bool:
    """An explicit flag, else the environment variable `name` (on unless it is 0)."""
    return os.environ.get(name, "1") != "0" if value is None else bool(value)


class Executor:
    """Runs programs on a device: "cpu", or "cuda"/"cuda:N" (feeds are copied to the GPU once
    per run; persistables are moved there on first use and stay there, in the scope).

    On the CPU the passes run once per plan: `fuse` (elementwise fusion, graph/fusion.py;
    default from NBFLOW_FUSION) and `reuse_memory` (release and reuse dead buffers,
    graph/memory.py; NBFLOW_MEMORY_REUSE); `poison_freed` fills released buffers with NaN
    (NBFLOW_POISON_FREED). `check_nan_inf` checks every op's float outputs for NaN and Inf
    (None: when NBFLOW_CHECK_NAN_INF is set or inside nbflow.check_nan_inf()); a checked run
    skips the passes, so that each op's own outputs are there to check. `max_loop_iterations`
    (off by default) bounds every while loop a run makes, whatever its own max_iterations:
    a loaded program's loop that never ends raises LoopLimitError instead of running forever."""

    def __init__(
        self,
        device: str = "cpu",
        fuse=None,
        reuse_memory=None,
        poison_freed=None,
        check_nan_inf: bool | None = None,
        replay=None,
        max_loop_iterations: int | None = None,
    ):
        self.max_loop_iterations = max_loop_iterations
        self.device = devices.parse(device)
        self.on_gpu = self.device != devices.CPU
        if self.on_gpu:
            devices.check_gpu(self.device)  # UnsupportedError, saying why, without a GPU
        self.check_nan_inf = check_nan_inf
        self.checking = False
        self.eager = EagerTrace()
        # captured tensor id -> (tensor, its version, its GPU copy, the copy's version)
        self._uploaded: dict = {}
        # the passes generate CPU kernels and manage host buffers: the GPU runs the plain plan
        self.fuse = _flag("NBFLOW_FUSION", fuse) and not self.on_gpu
        self.reuse_memory = _flag("NBFLOW_MEMORY_REUSE", reuse_memory) and not self.on_gpu
        self.poison_freed = poison_default() if poison_freed is None else bool(poison_freed)
        self.replay = self.reuse_memory and _flag("NBFLOW_REPLAY", replay)
        self._plans = weakref.WeakKeyDictionary()  # program -> {(version, feeds, targets): ops}
        self._written = weakref.WeakKeyDictionary()  # program -> (version, written data vars)
        self._arenas: dict = {}  # (id(plan), feed signature) -> (plan, its Arena)
        self._arena_space = ArenaSpace()  # the one buffer the arenas place into
        self._plan_lock = threading.RLock()  # a plan is made by one thread, then published

    def run(self, program: Program, feed=None, fetch_list=None, scope=None, return_numpy=True):
        """Run the ops the fetch targets need, and the updates of a fetched loss that an
        optimizer minimized (as PaddlePaddle's executor does: see `updates`; to run the
        forward alone, fetch from `program.clone(for_test=True)`); returns the fetched
        values in order."""
        scope = _global_scope if scope is None else scope
        feed = feed or {}
        fetch_list = list(fetch_list or [])
        block = program.global_block()
        targets = [self._target(block, t) for t in fetch_list]
        scope.update(self._captured(program))  # the eager tensors the program was built around
        written = self._written_feeds(program)
        env = {
            name: self._feed(block, name, value, name in written) for name, value in feed.items()
        }
        check = nan_inf_checking() if self.check_nan_inf is None else self.check_nan_inf
        self.checking = check  # read by control flow ops running their sub-blocks
        ops = self._plan(program, tuple(sorted(feed)), targets, check)
        _check_stored(ops.stored, scope)
        held = None if check or not self.reuse_memory else self._arena(ops, env)
        # the eager trace without gradients, as use_trace() and no_grad() make them, written
        # out: the two context managers cost more than the rest of a small run's set-up
        trace, grad_enabled = STATE.trace, STATE.grad_enabled
        STATE.trace, STATE.grad_enabled = self.eager, False
        modes_changed()
        try:
            if held is None or not held.replay or not self._replayed(held, env, scope):
                self._steps(ops, env, scope, check, held, targets)
        except NbflowError as e:  # the public boundary: nbflow's frames are left out
            raise e.with_traceback(filter_traceback(e.__traceback__)) from e.__cause__
        finally:
            STATE.trace, STATE.grad_enabled = trace, grad_enabled
            modes_changed()
            if self.on_gpu:
                self._download(program)
        results = [self._lookup(t, env, scope) for t in targets if isinstance(t, Var)]
        return [r.numpy() for r in results] if return_numpy else results

    def _steps(self, ops, env, scope, check, held, targets):
        """Run the plan's steps (in its Arena, `held`, when it has one), recording them for a
        Replay where the arena places the run and the plan has none yet."""
        arena = None if held is None else held.begin()
        record = None
        if arena is not None:
            env[ARENA] = arena
            unrecorded = held.replay is None and held.replay_misses < REPLAY_MISSES
            if self.replay and unrecorded and arena.offsets is not None:  # a placed run
                record = env[RECORD] = []
        completed = False
        try:
            if check:  # decided once per run: the plain loop stays as it was
                for node in ops:
                    run_checked(self, node, env, scope)
            else:
                for step in ops:
                    if type(step) is Node:
                        self._run_op(step, env, scope)
                    else:  # a fused group or a memory step (graph/fusion.py, memory.py)
                        step.run(self, env, scope)
            completed = True
        finally:
            if arena is not None:
                arena.end(completed)
                if record is not None and completed and arena.offsets is not None:
                    replay = Replay.build(ops, record, scope, targets, arena.space.buffer)
                    held.replay = replay or False

    def _replayed(self, held: Arena, env, scope) -> bool:
        """Whether the run was made by replaying the plan's recorded run (graph/replay.py);
        False where it no longer holds (the next placed run records again) or another run
        holds the arena's memory."""
        space = held.space
        if not space.acquire():
            return False
        try:
            if not held.replay.holds(scope, space.buffer):
                held.replay = None
                held.replay_misses += 1
                return False
            held.replay.run(self, env, scope)
            held.replay_misses = 0
            return True
        finally:
            space.release()

    def _plan(self, program, feed_names, targets, plain=False):
        """The steps to run, cached: the ops the targets need (no fetch targets means every
        op: a startup program), then the passes (unless `plain`). A missing plan is made
        under the executor's lock (once, when threads run the program at once) and published
        whole."""
        plans = self._plans.get(program)  # (setdefault would make a weakref on every run)
        key = (program.version, feed_names, tuple([id(t) for t in targets]), plain)
        ops = None if plans is None else plans.get(key)
        if ops is None:
            with self._plan_lock:
                plans = self._plans.get(program)
                if plans is None:
                    plans = self._plans[program] = {}
                ops = plans.get(key)
                if ops is None:
                    if len(plans) > 256:
                        plans.clear()
                    ops = plans[key] = self._make_plan(program, feed_names, targets, plain)
        return ops

    def _make_plan(self, program, feed_names, targets, plain):
        block = program.global_block()
        targets = with_updates(block, targets)
        ops = needed_ops(block, targets) if targets else list(block.ops)
        stored = unique(v for node in ops for v in node.inputs if v.persistable)
        if self.fuse and not plain:
            ops = fuse(rewrite(ops, targets, self.reuse_memory), targets)
        if self.reuse_memory and not plain:
            feeds = set(feed_names)
            ops = plan_memory(ops, feeds, targets, self.poison_freed)
        return Plan(ops, stored)

    def _arena(self, ops, env) -> Arena:
        """The Arena of this plan and feed signature (graph/memory.py)."""
        key = (id(ops), tuple([(name, t.shape, t.dtype) for name, t in env.items()]))
        held = self._arenas.get(key)
        if held is None or held[0] is not ops:  # (an id reused by a newer plan)
            if len(self._arenas) >= 64:  # e.g. a batch size that keeps changing
                self._arenas.clear()
            held = self._arenas[key] = (ops, Arena(self._arena_space))
        return held[1]

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
                copy = t.detach().to(self.device)
                held = self._uploaded[id(t)] = (t, t.version, copy, copy.version)
            values[name] = held[2]
        return values

    def _download(self, program):
        """Writes the run made into GPU copies of captured CPU tensors go back to them, as a
        CPU run writes them: an optimizer's scalar states (Adamax's step, ASGD's eta) stay
        on the CPU, where eager steps read them as numbers, and a CPU model's parameters
        trained by a GPU run are the model's."""
        for t in program.captured.values():
            held = self._uploaded.get(id(t))
            if held is None or held[0] is not t or held[2].version == held[3]:
                continue
            with no_grad():
                ops.copy_(t, held[2].cpu())
            self._uploaded[id(t)] = (t, t.version, held[2], held[2].version)

    def _target(self, block, t):
        if type(t) is Var and t.block is block:  # the common case, written out
            return t
        try:
            return own_target(block, t)
        except KeyError:
            error = ProgramError(f"fetch: the program has no var named '{t}'")
            raise locate(error, user_location()) from None  # the run call

    def _written_feeds(self, program) -> frozenset:
        """The data vars the program writes in place (through views too): their feeds are
        copied, so that a run never writes into the caller's array or tensor."""
        held = self._written.get(program)
        if held is None or held[0] != program.version:
            block = program.global_block()
            storage = Storages(block.ops).find
            written = {storage(id(n.inputs[j])) for n in block.ops for j in n.op.inplace.values()}
            names = frozenset(
                name for name, v in block.vars.items() if v.is_data and storage(id(v)) in written
            )
            held = self._written[program] = (program.version, names)
        return held[1]

    def _feed(self, block, name, value, written=False) -> Tensor:
        t = self._feed_value(block, name, value)
        if written:
            with no_grad():
                t = ops.clone(t)
        return t

    def _feed_value(self, block, name, value) -> Tensor:
        try:
            v = block.var(name)
        except KeyError:
            error = ProgramError(f"feed: the program has no var named '{name}'")
            raise locate(error, user_location()) from None  # the run call
        if type(value) is Tensor and not self.on_gpu:  # the common case, written out
            a = value._data
            if a.dtype == v.dtype and a.flags.c_contiguous and compatible(v.shape, a.shape):
                return Tensor(a)
        if isinstance(value, Tensor) and value.device != devices.CPU:
            value = self._on_device(value)  # a GPU value is used as it is
            if value.dtype == v.dtype and compatible(v.shape, value.shape):
                return value
        try:
            array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        except ValueError as e:  # ragged nested lists
            error = ShapeError(f"feed '{name}': cannot make an array of this value: {e}")
            raise locate(error, v.location) from None
        if array.dtype != v.dtype:
            # float data into a float var (or int into int) converts; other kinds are an error
            if (
                dt.kind(dt.widen(array.dtype)) != dt.kind(v.dtype)
                if array.dtype.kind in "biuf"
                else True
            ):
                error = DTypeError(f"feed '{name}': dtype {array.dtype}, expected {v.dtype}")
                raise locate(error, v.location)  # the data var's declaration
            array = _narrowed(name, array, v)
        if not compatible(v.shape, array.shape):
            error = ShapeError(f"feed '{name}': shape {array.shape} does not fit {list(v.shape)}")
            raise locate(error, v.location)
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
            what = (
                "feed"
                if v.is_data
                else "value (run the startup program first?)"
                if v.persistable
                else "value: no op the run ran computes it (nbflow.graph.verify finds reads "
                "of a var no op before them defines)"
            )
            where = f" declared at {v.location}" if v.location else ""
            raise ProgramError(f"missing {what} for %{v.name}{where}")
        if self.on_gpu and type(t) is Tensor:  # put in the scope by hand: moved once
            t = (scope if v.persistable else env)[v.name] = t.to(self.device)
        return t

    def _run_op(self, node: Node, env, scope):
        args = [self._lookup(v, env, scope) for v in node.inputs]
        run_blocks = getattr(node.op, "run_blocks", None)  # a control flow op (control.py)
        try:
            if run_blocks is not None:
                result = run_blocks(self, node, args, scope, env)
            else:
                result = self.eager.apply(node.op, args, node.attrs, checked=True)
        except NbflowError as e:
            raise _explain(e, node, args) from e.__cause__
        results = result if isinstance(result, tuple) else (result,)
        if self.on_gpu:  # (the CPU's per-op loop stays without the call)
            results = self.placed(results)
        for v, t in zip(node.outputs, results):
            if v.shape != t.shape and not compatible(v.shape, t.shape):
                raise ShapeError(
                    f"{node.op.name} (defined at {node.location}): run-time shape {t.shape} "
                    f"does not fit the compile-time shape {list(v.shape)} of %{v.name}"
                )
            (scope if v.persistable else env)[v.name] = t
        return results

    def placed(self, results):
        """An op's results on this executor's device: an op with no tensor input (a creation
        op) ran on the CPU, and its result moves to the device once and stays there."""
        if not self.on_gpu:
            return results
        return [t.to(self.device) if type(t) is Tensor else t for t in results]


def _narrowed(name: str, array: np.ndarray, v: Var) -> np.ndarray:
    """A feed as its var's dtype of the same kind, refusing values that do not fit (an int
    out of range wraps, a finite float out of range becomes inf): DTypeError naming the var."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = array.astype(v.dtype)
    if array.dtype.kind in "iu" and v.dtype.kind in "iu":
        lost = array.size and not np.array_equal(out, array)
    elif array.dtype.kind == "f" and v.dtype.kind == "f":
        lost = bool(np.any(np.isinf(out) & np.isfinite(array)))
    else:
        lost = False
    if lost:
        error = DTypeError(
            f"feed '{name}': values of dtype {array.dtype} do not fit the var's {v.dtype} "
            f"(they lie outside its range); feed values in range, or declare %{v.name} wider"
        )
        raise locate(error, v.location)
    return out


def _explain(error: NbflowError, node: Node, args) -> NbflowError:
    """A run-time op error with the compile-time specs of the inputs, when they differ from
    the run-time ones, and the line that defined the op."""
    names = node.op.input_names(len(node.inputs))
    declared = [f"{n}: {v.spec}" for n, v, t in zip(names, node.inputs, args) if v.shape != t.shape]
    if declared:
        error.args = (f"{error} [compile-time: {', '.join(declared)}]", *error.args[1:])
    return locate(error, node.location)
