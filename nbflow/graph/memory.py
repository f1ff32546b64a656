"""The memory reuse pass: release values after their last use and reuse their buffers.

Liveness runs over a plan's steps (ops and fused groups). Values are grouped into storages:
a view op's outputs share memory with its inputs, and an in-place op's output is its target
itself. A storage is released after the step that last reads any of its values, unless one of
them is fed, fetched, persistable (parameters, captured tensors, optimizer state) or not made
by this plan. Released buffers go to a per-run pool keyed by (bytes, dtype), from which later
outputs of the same size are taken instead of allocating (allocation costs page faults on
these machines); a buffer no later output can take is freed instead. Elementwise steps, whose
kernels read each element before writing it, take the buffer of an input that dies at that
very step: they run in place. Parameter updates
(in-place ops writing a persistable var) move up to just after the last step they depend on,
so each gradient dies as soon as it is applied instead of all of them living until the end of
the backward pass.

Across runs, an Arena (per plan and feed signature) learns from the first run where each
fresh buffer lives, from its first take to its last release, packs those spans into one
buffer by offset, and later runs place their buffers there: nothing is allocated after the
first run (no page faults), and a released buffer's bytes serve later outputs of any size.

`NBFLOW_POISON_FREED=1` (or `Executor(poison_freed=True)`) fills every buffer released after
its step with NaN (the largest value for integers, True for bools), so a liveness bug shows
up as NaN in a test instead of as a silently stale value.

A control flow op is one step: it reads its inputs and every value of the enclosing blocks
that its sub-blocks read (a hand-built block may read them directly), and its outputs may be
views of any of those (a branch may return a reshaped input), so they share their storage.
The sub-blocks run without the pool or the arena (graph/control.py: their elementwise ops
fused and their ops as NodeSteps, their outputs in new buffers).
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from ..core import STATE, Node
from ..eager.tensor import Tensor, signature
from ..runtime import buffers
from .program import compatible

POOL = object()  # the key of the run's buffer pool in the executor's env
ARENA = object()  # the key of the run's Arena (recording or placing) in the env
RECORD = object()  # the key of the list a run's steps append to for a Replay (replay.py)


def poison_default() -> bool:
    return os.environ.get("NBFLOW_POISON_FREED", "") not in ("", "0")


def take(env, shape, dtype: np.dtype, size: int) -> np.ndarray:
    """A C-contiguous buffer for an output of `size` elements: a released one of the same
    size, else new (from the run's arena when it has one)."""
    pool = env.get(POOL)
    arena = env.get(ARENA)
    if pool or arena is not None:
        nbytes = size * dtype.itemsize
        free = pool.get((nbytes, dtype)) if pool else None
        if free:
            buf = free.pop().reshape(shape)
            if arena is not None:
                arena.taken_again(buf)
            return buf
        if arena is not None:
            return arena.fresh(shape, dtype, nbytes)
    return buffers.empty(shape, dtype)


class ArenaSpace:
    """The memory an executor's arenas place buffers in: one buffer as large as the largest
    arena, shared by all of them, so that programs fed several shapes (a last short batch,
    sequences of several lengths) hold one arena's worth, not one per shape. The executor's
    runs take turns on it (a run in another thread meanwhile goes without), and nothing placed
    in it outlives its run."""

    def __init__(self):
        self.buffer: np.ndarray | None = None
        self.busy = False
        self.lock = threading.Lock()

    def acquire(self) -> bool:
        with self.lock:
            if self.busy:
                return False
            self.busy = True
            return True

    def release(self):
        self.busy = False

    def get(self, nbytes: int) -> np.ndarray:
        if self.buffer is None or self.buffer.nbytes < nbytes:
            self.buffer = np.empty(nbytes, np.uint8)
        return self.buffer


class Arena:
    """Static placement of one plan's fresh buffers, learned from a run: the first run with a
    given feed signature records each allocation that misses the pool (its size, and the span
    of Release steps from its first take to its last release), packs those spans by offset
    (two share bytes only if their spans are disjoint), and later runs take their allocations,
    in the same order, as views of the executor's ArenaSpace. So a step allocates nothing new
    after its first run (no page faults) and holds no more than its packed peak: a released
    buffer's bytes serve later outputs of any size, not only of its own. A buffer never
    released (a fetched output) is not placed: it escapes the run. If a later run allocates
    differently, it falls back to fresh buffers and the next run records again."""

    ALIGN = 64

    def __init__(self, space: ArenaSpace):
        self.space = space
        self.sizes: list[int] = []
        self.spans: list[list] = []  # [first take, last release or None while in use]
        self.live: dict[int, int] = {}  # id(owner array) -> allocation index (recording)
        self.offsets: list | None = None  # per allocation: its offset, or None (escapes)
        self.total = 0  # the packed size in bytes
        self.buffer: np.ndarray | None = None  # the space's buffer, during a run
        self.views: dict[int, np.ndarray] = {}  # allocation index -> its view of the buffer
        self.clock = 0
        self.next = 0
        self.failed = False
        # the Replay of a placed run (graph/replay.py; False: the plan cannot be replayed),
        # and how many times in a row a recorded one no longer held
        self.replay = None
        self.replay_misses = 0

    def begin(self):
        """The arena for this run, or None when another run holds the executor's space."""
        if not self.space.acquire():
            return None
        self.clock, self.next, self.failed = 0, 0, False
        if self.offsets is None:  # recording: start afresh
            self.sizes, self.spans, self.live, self.views = [], [], {}, {}
        elif self.total:
            self.buffer = self.space.get(self.total)
        return self

    def end(self, completed: bool):
        if self.offsets is None and completed and not self.failed:
            self._pack()
        elif self.failed or (self.offsets is not None and self.next != len(self.sizes)):
            self.offsets = None  # the run differed: record the next one
        self.live, self.buffer = {}, None
        self.space.release()

    def fresh(self, shape, dtype, nbytes: int) -> np.ndarray:
        if self.offsets is None:  # recording
            buf = buffers.empty(shape, dtype)
            self.live[id(_owner(buf))] = len(self.sizes)
            self.sizes.append(nbytes)
            self.spans.append([self.clock, None])
            return buf
        k = self.next
        self.next += 1
        if self.failed or k >= len(self.sizes) or self.sizes[k] != nbytes:
            self.failed = True
            return buffers.empty(shape, dtype)
        offset = self.offsets[k]
        if offset is None:
            return buffers.empty(shape, dtype)
        # the view of the last run, while the space holds the same buffer (three numpy calls
        # a take otherwise, on every output of every run)
        view = self.views.get(k)
        kept = view is not None and view.base is self.buffer
        if not (kept and view.shape == shape and view.dtype == dtype):
            view = self.views[k] = self.buffer[offset : offset + nbytes].view(dtype).reshape(shape)
        return view

    def taken_again(self, buf: np.ndarray):
        k = self.live.get(id(_owner(buf))) if self.offsets is None else None
        if k is not None:
            self.spans[k][1] = None  # in use again

    def released(self, array: np.ndarray, dropped: bool):
        owner = id(_owner(array))
        k = self.live.pop(owner, None) if dropped else self.live.get(owner)
        if k is not None:
            self.spans[k][1] = self.clock

    def tick(self):
        self.clock += 1

    def _pack(self):
        """Greedy placement, largest first, each at the lowest offset free over its span."""
        placed: list[tuple[int, int, int, int]] = []  # (offset, end offset, first, last)
        self.offsets = [None] * len(self.sizes)
        order = sorted(range(len(self.sizes)), key=lambda k: -self.sizes[k])
        for k in order:
            first, last = self.spans[k]
            if last is None:
                continue
            size = -(-self.sizes[k] // self.ALIGN) * self.ALIGN
            busy = sorted((lo, hi) for lo, hi, f, t in placed if f <= last and first <= t)
            offset = 0
            for lo, hi in busy:  # by start: the first gap that fits
                if lo >= offset + size:
                    break
                offset = max(offset, hi)
            placed.append((offset, offset + size, first, last))
            self.offsets[k] = offset
        self.total = max((hi for _, hi, _, _ in placed), default=0)


def _owner(array: np.ndarray) -> np.ndarray:
    return array if array.base is None else array.base


def wrap(array: np.ndarray) -> Tensor:
    return Tensor(array)


def _poolable(array: np.ndarray) -> bool:
    return array.flags.c_contiguous and array.flags.writeable and array.size > 0


def _give_back(env, array: np.ndarray, poison: bool):
    if not _poolable(array):
        return
    if poison:
        array.fill(_poison_value(array.dtype))
    pool = env.get(POOL)
    if pool is None:
        pool = env[POOL] = {}
    pool.setdefault((array.nbytes, array.dtype), []).append(array.reshape(-1))


def _poison_value(dtype):
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "b":
        return True
    return np.iinfo(dtype).max


class Release:
    """A plan step: drop dead values from the env (`pop`) and put buffers into the pool
    (`give`: the values owning a fresh buffer). Before an elementwise step, a Release with no
    `pop` lends the buffers of inputs dying there, so the step's outputs can take them."""

    def __init__(self, pop, give, poison: bool, owners=()):
        self.pop = [v.name for v in pop]
        self.give = [v.name for v in give]
        self.poison = poison
        # owners not pooled: freed (and poisoned too: a view still alive would show it)
        self.dropped = [v.name for v in owners if v.name not in self.give]
        self.poison_only = self.dropped if poison else []

    def run(self, executor, env, scope):
        arena = env.get(ARENA)
        if arena is not None and arena.offsets is None:
            self._record(arena, env)
        for name in self.give:
            t = env.get(name)
            if t is not None:
                _give_back(env, t._data, self.poison)
        for name in self.poison_only:
            t = env.get(name)
            if t is not None and t._data.flags.writeable:
                t._data.fill(_poison_value(t._data.dtype))
        for name in self.pop:
            env.pop(name, None)

    def poison_arrays(self, arrays: dict):
        """Fill what run() fills in poison mode, the values given as arrays by name (a
        Replay's, graph/replay.py)."""
        for name in self.give:
            a = arrays.get(name)
            if a is not None and _poolable(a):
                a.fill(_poison_value(a.dtype))
        for name in self.poison_only:
            a = arrays.get(name)
            if a is not None and a.flags.writeable:
                a.fill(_poison_value(a.dtype))

    def _record(self, arena, env):
        """The arena's record of what this step releases (before the pool takes anything)."""
        for name in self.give:
            t = env.get(name)
            if t is not None:
                arena.released(t._data, dropped=False)
        for name in self.dropped:
            t = env.get(name)
            if t is not None:
                arena.released(t._data, dropped=True)
        if self.pop:
            # a step boundary: outputs taken from here on may reuse what was released. A
            # lend (no pop) comes before the step that still reads what it lends.
            arena.tick()

    def __repr__(self) -> str:
        what = " ".join("%" + n for n in self.pop or self.give)
        return f"<{'release' if self.pop else 'lend'} {what}>"


class NodeStep:
    """A plan step running one op node, with what running it needs worked out once per input
    signature and attrs (`ready`, filled by the subclass's `_prepare`; None: through the
    executor); the subclass's `_run` runs it. An error is raised again by the executor's own
    path, which names the op and its line."""

    def __init__(self, node: Node):
        self.node = node
        self.reads = [(v.name, v.persistable) for v in node.inputs]
        self.ready: dict = {}

    def run(self, executor, env, scope):
        try:
            self._run(executor, env, scope)
        except Exception:
            executor._run_op(self.node, env, scope)
            raise

    def _inputs(self, executor, env, scope):
        """(the input tensors, what running the op on them needs)."""
        args = [scope[name] if persistable else env[name] for name, persistable in self.reads]
        sig = signature(args)
        # (the attrs join the key: a launcher may have fixed them, and a node's may change)
        key = (sig, tuple(self.node.attrs.values()))
        try:
            ready = self.ready.get(key, False)
        except TypeError:  # an unhashable attr: worked out on each run
            key, ready = None, False
        if ready is False:
            ready = self._prepare(executor, args, sig)
            if key is not None:
                if len(self.ready) >= 64:  # a batch size or learning rate that keeps changing
                    self.ready.clear()
                self.ready[key] = ready
        return args, ready


class IntoBuffer(NodeStep):
    """A plan step running one op with its outputs taken from the pool (see `take`)."""

    def __init__(self, node: Node):
        super().__init__(node)
        self.outs = [v.name for v in node.outputs]
        self.budget = STATE.memory_budget  # what the plans were checked against

    def _run(self, executor, env, scope):
        if self.budget != STATE.memory_budget:  # nbflow.set_memory_budget: check again
            self.ready.clear()
            self.budget = STATE.memory_budget
        args, ready = self._inputs(executor, env, scope)
        if ready is None:
            executor._run_op(self.node, env, scope)
            return
        launcher, casts, allocs = ready
        arrays = [t._data for t in args]
        for i, d in casts:
            arrays[i] = arrays[i].astype(d)
        bufs = [take(env, shape, dtype, size) for shape, dtype, size in allocs]
        launcher(*arrays, *bufs, **self.node.attrs)
        for name, buf in zip(self.outs, bufs):
            env[name] = Tensor(buf)
        record = env.get(RECORD)
        if record is not None:
            record.append((self, ready, bufs))

    def _prepare(self, executor, args, sig):
        """(launcher, casts, (shape, dtype, size) per output), or None where the op runs
        through the executor (a float16 result, scalars to convert, or a run-time shape the
        compile-time one does not fit, which the executor raises for)."""
        node = self.node
        plan = executor.eager.plan(node.op, sig, args, node.attrs)
        if plan.finals or plan.scalars:
            return None
        if not all(compatible(v.shape, s) for v, (s, _) in zip(node.outputs, plan.allocs)):
            return None
        allocs = tuple((s, np.dtype(d), math.prod(s)) for s, d in plan.allocs)
        return plan.launcher, plan.casts, allocs

    def __repr__(self) -> str:
        return f"<into-buffer {self.node.op.name}>"


class Planned(NodeStep):
    """A plan step running a view op or an in-place op (a parameter update) through the eager
    trace's view and in-place paths with the op's plan found once, not through the
    executor's generic dispatch on every run."""

    def __init__(self, node: Node):
        super().__init__(node)
        self.writes = [(v.name, v.persistable) for v in node.outputs]

    def _run(self, executor, env, scope):
        node = self.node
        args, plan = self._inputs(executor, env, scope)
        if plan is None:
            executor._run_op(node, env, scope)
            return
        if node.op.view:
            outs = executor.eager.run_view(node.op, plan, args, node.attrs)
        else:
            outs = executor.eager.run_inplace(node.op, plan, args, node.attrs, False)
        for (name, persistable), t in zip(self.writes, outs):
            (scope if persistable else env)[name] = t
        record = env.get(RECORD)
        if record is not None:
            record.append((self, plan, args))

    def _prepare(self, executor, args, sig):
        """The op's plan, or None where the executor runs it (a scalar input to convert, or
        a run-time shape the compile-time one does not fit, which the executor raises for)."""
        node = self.node
        plan = executor.eager.plan(node.op, sig, args, node.attrs)
        if plan.scalars or not all(
            compatible(v.shape, s.shape) for v, s in zip(node.outputs, plan.specs)
        ):
            return None
        return plan

    def __repr__(self) -> str:
        return f"<planned {self.node.op.name}>"


def _has_sub_blocks(node) -> bool:
    """Whether the op runs sub-blocks (a control flow op: its attrs of kind "block")."""
    return any(attr.kind == "block" for attr in node.op.attrs.values())


def reads(step):
    """The vars a step reads: its inputs and, for a control flow op, the vars of enclosing
    blocks its sub-blocks read (a hand-built block may read them directly)."""
    if isinstance(step, Node) and _has_sub_blocks(step):
        return [*step.inputs, *outer_reads(step)]
    return step.inputs


def outer_reads(node) -> list:
    """The vars outside a control flow op's sub-blocks (nested ones included) that their ops
    read."""
    program = next(v.block.program for v in (*node.outputs, *node.inputs))
    blocks, todo = {}, [node]
    while todo:
        n = todo.pop()
        for name, attr in n.op.attrs.items():
            if attr.kind == "block" and n.attrs[name] not in blocks:
                block = blocks[n.attrs[name]] = program.blocks[n.attrs[name]]
                todo.extend(block.ops)
    inside = {id(b) for b in blocks.values()}
    found = {}
    for block in blocks.values():
        for op in block.ops:
            for v in op.inputs:
                if id(v.block) not in inside:
                    found[id(v)] = v
    return list(found.values())


def _writes(step):
    return step.outputs


class Storages:
    """Union-find over id(var): a view op's outputs share memory with its inputs, an in-place
    op's output with its target (most often the target var itself; a rewrite's in-place op
    may give it a var of its own: graph/rewrite.py's sgd_matmul_relu_grad_)."""

    def __init__(self, steps):
        self.parent: dict[int, int] = {}
        for step in steps:
            if not isinstance(step, Node):
                continue
            if step.op.view or _has_sub_blocks(step):
                for out in step.outputs:
                    for v in reads(step):
                        self.union(id(out), id(v))
            for i, j in step.op.inplace.items():
                self.union(id(step.outputs[i]), id(step.inputs[j]))

    def find(self, i: int) -> int:
        while self.parent.get(i, i) != i:
            i = self.parent[i]
        return i

    def union(self, a: int, b: int):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


def hoist_updates(steps: list) -> list:
    """Move each parameter update (an in-place op whose first target is persistable) up to
    just after the last step it must follow: the producers of its inputs, and every step that
    reads or writes the memory it writes (views included) or writes the memory it reads.
    Its gradient then dies there, not at the end of the backward pass. View ops move up first
    (to just after whatever writes their memory), so that an update reading a transposed
    gradient is not held back by the view's place in the program."""
    storages = Storages(steps)
    out = list(steps)
    for step in steps:
        if isinstance(step, Node) and step.op.view:
            _hoist(out, step, storages, set())
    for step in steps:
        if not (isinstance(step, Node) and step.op.inplace):
            continue
        if step.inputs[step.op.inplace[0]].persistable:
            written = {storages.find(id(step.inputs[j])) for j in step.op.inplace.values()}
            _hoist(out, step, storages, written)
    return out


def _hoist(out: list, step, storages, written: set):
    read = {storages.find(id(v)) for v in step.inputs}
    pos = next(k for k, s in enumerate(out) if s is step)
    earliest = 0
    for k in range(pos - 1, -1, -1):
        other = out[k]
        made = {storages.find(id(v)) for v in other.outputs}
        touched = made | {storages.find(id(v)) for v in reads(other)}
        if touched & written or made & read:
            earliest = k + 1
            break
    if earliest < pos:
        out.insert(earliest, out.pop(pos))


def plan_memory(steps: list, feed_names, targets, poison: bool) -> list:
    """The steps with parameter updates hoisted, Release steps after each last use, and
    pooled outputs (module doc)."""
    steps = hoist_updates(steps)
    storages = Storages(steps)
    find = storages.find

    made, owner, by_id = set(), {}, {}
    for step in steps:
        for v in (*reads(step), *_writes(step)):
            by_id[id(v)] = v
        for v in _writes(step):
            made.add(id(v))
        if isinstance(step, Node) and (step.op.view or step.op.inplace or _has_sub_blocks(step)):
            pass  # no fresh buffer known: a view's, the target var itself, a sub-block's
        else:
            for v in _writes(step):
                owner[id(v)] = v  # a fresh buffer
    fetched = {id(t) for t in targets}
    pinned = set()
    for i, v in by_id.items():
        if v.persistable or v.is_data or v.name in feed_names or i in fetched or i not in made:
            pinned.add(find(i))
    last: dict[int, int] = {}
    for index, step in enumerate(steps):
        for v in (*reads(step), *_writes(step)):
            last[find(id(v))] = index
    members: dict[int, list] = {}
    for i, v in by_id.items():
        members.setdefault(find(i), []).append(v)
    dying: dict[int, list[int]] = {}
    for root, index in last.items():
        if root not in pinned:
            dying.setdefault(index, []).append(root)
    out = []
    for index, step in enumerate(steps):
        roots = dying.get(index, [])
        lendable = _overwritable(step)  # (ids: == on a Var builds an op)
        early, late = [], []
        for root in roots:
            vs = members[root]
            # in place: an input the step may overwrite that dies here and is its own storage
            if len(vs) == 1 and id(vs[0]) in owner and id(vs[0]) in lendable:
                early.append(vs[0])
            else:
                late.extend(vs)
        # a buffer goes to the pool only if a later output may take it; else it is freed
        lend = [v for v in early if _wanted(v, [step])]
        if lend:
            out.append(Release([], lend, poison=False))
        out.append(node_step(step))
        if early or late:
            owners = [v for v in late if id(v) in owner]
            give = [v for v in owners if _wanted(v, steps[index + 1 :])]
            out.append(Release(early + late, give, poison, owners))
    return out


def node_step(step):
    """The plan step running `step`: an op node whose outputs the pass places (IntoBuffer), a
    view or in-place op (Planned), or the step itself (a fused group, a control flow op)."""
    if isinstance(step, Node) and _pooled(step):
        return IntoBuffer(step)
    if isinstance(step, Node) and (step.op.view or step.op.inplace) and not _has_sub_blocks(step):
        return Planned(step)
    return step


def _overwritable(step) -> set[int]:
    """The ids of the inputs whose buffer the step's output may take: any input of an
    elementwise step (its kernels read each element before writing it)."""
    from .fusion import FusedGroup, fusable  # (fusion imports this module)

    if isinstance(step, FusedGroup) or (isinstance(step, Node) and fusable(step)):
        return {id(v) for v in reads(step)}
    return set()


def _wanted(v, later_steps) -> bool:
    """Whether one of the steps writes a new value that may have v's size and dtype."""
    for step in later_steps:
        if isinstance(step, Node) and (step.op.view or step.op.inplace or _has_sub_blocks(step)):
            continue
        for u in step.outputs:
            if u.dtype == v.dtype and _same_size(u.shape, v.shape):
                return True
    return False


def _same_size(a, b) -> bool:
    if -1 in a or -1 in b:
        return tuple(a) == tuple(b)  # unknown dims: only the very same shape
    return int(np.prod(a)) == int(np.prod(b))


def _pooled(node: Node) -> bool:
    op = node.op
    return (
        not op.view
        and not op.inplace
        and not _has_sub_blocks(node)  # its outputs come from its sub-blocks
        and not any(v.persistable for v in node.outputs)
    )
