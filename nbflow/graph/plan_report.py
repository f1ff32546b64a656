"""What explain() reports beside what runs and why (graph/passes.py): the memory plan and the
kernels' compile status, as records a tool can read.

The memory plan replays, without running anything, what the memory-reuse pass (memory.py)
plans for the executor: the plan's steps with their Release steps; each output taken from the
pool (a released buffer of the same bytes and dtype) or fresh, in the order the run takes them;
each fresh buffer's span from its first take to its last release; and the Arena's packing of
those spans by offset (Arena._pack itself). Sizes come from the vars' shapes, a -1 dim from
`feed_shapes` (propagated by the ops' shape rules) or taken as 1 where none is given. Peak
bytes without the pass: every value the plan makes lives to the end of the run (what the
executor keeps without `reuse_memory`); with it: the arena's packed size plus the buffers that
escape it (fetched values, control flow results).

A kernel's compile status is numba's own record of the dispatchers the kernel calls (found in
the kernel object, its closure and the globals its code names): signatures for the kernel's
dtype compiled in this process ("compiled"), loaded from numba's disk cache ("loaded from
disk cache": the dispatcher's cache hits), listed in the disk cache's index but not loaded
yet ("on disk cache"), or none ("to compile"); a generated elementwise kernel not made yet is
"to compile" too (its module is written and compiled, or loaded, at first use).
"""

from __future__ import annotations

import math
import types
from dataclasses import dataclass, field

import numpy as np

from ..core import Node, Spec
from ..core.errors import NbflowError
from .memory import Arena, ArenaSpace, IntoBuffer, Release, _has_sub_blocks, plan_memory


@dataclass
class VarMemory:
    """Where one value the plan makes lives: `buffer` (an index into MemoryPlan.buffers, None
    for a value with no buffer of its own: a view or an in-place write shares `shares`'s),
    `freed_after` (the op after which its storage is released or given to the pool; None:
    kept to the end of the run), and why it is kept."""

    name: str
    nbytes: int
    buffer: int | None
    shares: str | None = None
    freed_after: str | None = None
    kept: str | None = None


@dataclass
class Buffer:
    """A fresh buffer: its bytes, its span in Release steps [first, last] (last None: never
    released), its offset in the arena (None: outside it) and the values it holds in turn."""

    nbytes: int
    first: int
    last: int | None
    offset: int | None = None
    values: list = field(default_factory=list)


@dataclass
class MemoryPlan:
    values: list[VarMemory]
    buffers: list[Buffer]
    arena_bytes: int
    peak_bytes: int  # with the pass: the arena plus the buffers outside it
    peak_bytes_without: int  # every value made kept to the end of the run
    assumed_dims: bool  # a -1 dim was taken as 1 (no feed_shapes for it)

    def value(self, name: str) -> VarMemory:
        return next(v for v in self.values if v.name == name)

    def lines(self) -> list[str]:
        assumed = " [-1 dims taken as 1: feed_shapes= gives real sizes]"
        out = [
            f"memory: peak {self.peak_bytes} bytes with memory reuse, "
            f"{self.peak_bytes_without} without (arena {self.arena_bytes} bytes, "
            f"{len(self.buffers)} buffers)" + (assumed if self.assumed_dims else "")
        ]
        for v in self.values:
            if v.buffer is not None:
                b = self.buffers[v.buffer]
                where = f"buffer #{v.buffer}" + (
                    f" @ arena offset {b.offset}" if b.offset is not None else " (outside arena)"
                )
            else:
                where = f"shares %{v.shares}" if v.shares else "own buffer (outside the pool)"
            end = f"freed after {v.freed_after}" if v.freed_after else f"kept ({v.kept})"
            out.append(f"  %{v.name:<14} {v.nbytes:>10} B  {where}; {end}")
        return out


@dataclass
class KernelStatus:
    """The compile status of one op's kernel for a dtype: `status` (module doc), the numba
    functions it calls with theirs, and the disk cache folder (None: not cached)."""

    op: str
    device: str
    dtype: str
    status: str
    functions: dict = field(default_factory=dict)  # numba function name -> its status
    cache_path: str | None = None

    def line(self) -> str:
        where = f"  cache: {self.cache_path}" if self.cache_path else ""
        parts = ", ".join(f"{k}: {v}" for k, v in self.functions.items())
        detail = f" [{parts}]" if parts else ""
        return f"  ({self.op}, {self.device}, {self.dtype}): {self.status}{detail}{where}"


# ---------------------------------------------------------------- the memory plan


def _nbytes(shape, dtype) -> int:
    return int(math.prod(max(int(n), 0) for n in shape)) * np.dtype(dtype).itemsize


def _shapes(nodes, feed_shapes: dict | None):
    """id(var) -> a concrete shape, and whether some -1 dim had to be taken as 1."""
    shapes, assumed = {}, [False]

    def shape_of(v):
        s = shapes.get(id(v))
        if s is None:
            if v.is_data and feed_shapes and v.name in feed_shapes:
                s = tuple(int(n) for n in feed_shapes[v.name])
            else:
                if -1 in v.shape:
                    assumed[0] = True
                s = tuple(1 if n == -1 else n for n in v.shape)
            shapes[id(v)] = s
        return s

    for node in nodes:
        ins = [shape_of(v) for v in node.inputs]
        out_specs = None
        if not _has_sub_blocks(node) and any(-1 in v.shape for v in node.outputs):
            try:
                specs = [Spec(s, v.dtype) for s, v in zip(ins, node.inputs)]
                out_specs = node.op.infer(specs, dict(node.attrs))
            except (NbflowError, TypeError, ValueError):
                out_specs = None
        for k, v in enumerate(node.outputs):
            if id(v) in shapes and node.op.inplace.get(k) is not None:
                continue
            if out_specs is not None and k < len(out_specs) and -1 not in out_specs[k].shape:
                shapes[id(v)] = tuple(out_specs[k].shape)
            else:
                shape_of(v)
    return shapes, assumed[0]


def _step_nodes(step) -> list:
    return list(step.nodes) if hasattr(step, "nodes") else [step]


def _label(step) -> str:
    if isinstance(step, Node):
        return step.op.name
    names = getattr(step, "op_names", None)
    return f"fused({'+'.join(names)})" if names else type(step).__name__


def memory_plan(steps, feed_names, targets, feed_shapes=None) -> MemoryPlan:
    """Replay the memory-reuse pass's plan of `steps` (the fused, rewritten ops) (module doc)."""
    nodes = [n for s in steps for n in _step_nodes(s)]
    shapes, assumed = _shapes(nodes, feed_shapes)
    by_name = {v.name: v for n in nodes for v in (*n.inputs, *n.outputs)}
    nbytes = {name: _nbytes(shapes.get(id(v), v.shape), v.dtype) for name, v in by_name.items()}

    planned = plan_memory(list(steps), set(feed_names), targets, False)
    fetched = {id(t) for t in targets}
    buffers: list[Buffer] = []
    holder: dict[str, int] = {}  # name -> its buffer while it holds one
    pool: dict[tuple, list[int]] = {}
    values: dict[str, VarMemory] = {}
    clock, last_label = 0, None
    made_without = 0

    def value(v, buffer=None, shares=None):
        if v.name not in values:
            values[v.name] = VarMemory(v.name, nbytes[v.name], buffer, shares)
        return values[v.name]

    for step in planned:
        if isinstance(step, Release):
            for name in step.give:
                k = holder.get(name)
                if k is not None:
                    buffers[k].last = clock
                    pool.setdefault((buffers[k].nbytes, by_name[name].dtype), []).append(k)
            for name in step.dropped:
                k = holder.pop(name, None)
                if k is not None:
                    buffers[k].last = clock
            for name in step.pop:
                if name in values and values[name].freed_after is None:
                    values[name].freed_after = last_label
                holder.pop(name, None)
            if step.pop:
                clock += 1
            continue
        inner = step.node if hasattr(step, "node") else step
        last_label = _label(inner)
        if isinstance(step, IntoBuffer) or hasattr(step, "nodes"):  # outputs from the pool
            for v in inner.outputs:
                size = nbytes[v.name]
                made_without += size
                free = pool.get((size, v.dtype))
                if free:
                    k = free.pop()
                    buffers[k].last = None
                else:
                    k = len(buffers)
                    buffers.append(Buffer(size, clock, None))
                buffers[k].values.append(v.name)
                holder[v.name] = k
                value(v, k)
        else:
            node = inner
            for k, v in enumerate(node.outputs):
                if isinstance(node, Node) and node.op.inplace.get(k) is not None:
                    value(v, None, node.inputs[node.op.inplace[k]].name)
                elif isinstance(node, Node) and node.op.view:
                    value(v, None, node.inputs[0].name)
                elif not v.persistable:
                    made_without += nbytes[v.name]
                    value(v)  # a control flow op's result: a buffer of its own
    for name, vm in values.items():
        v = by_name[name]
        if vm.freed_after is None:
            vm.kept = (
                "fetched"
                if id(v) in fetched
                else "persistable"
                if v.persistable
                else "fed"
                if v.is_data or name in feed_names
                else "shares a kept value"
                if vm.shares
                else "to the end of the run"
            )
    arena = Arena(ArenaSpace())
    arena.sizes = [b.nbytes for b in buffers]
    arena.spans = [[b.first, b.last] for b in buffers]
    arena._pack()
    for b, offset in zip(buffers, arena.offsets):
        b.offset = offset
    outside = sum(b.nbytes for b in buffers if b.offset is None)
    own = sum(vm.nbytes for vm in values.values() if vm.buffer is None and vm.shares is None)
    return MemoryPlan(
        values=list(values.values()),
        buffers=buffers,
        arena_bytes=arena.total,
        peak_bytes=arena.total + outside + own,
        peak_bytes_without=made_without,
        assumed_dims=assumed,
    )


# ---------------------------------------------------------------- kernels' compile status


def _dispatchers(kernel, depth: int = 0, seen=None) -> list:
    """The numba dispatchers a kernel calls: itself, an elementwise kernel's generated ones,
    those in its closure or named by its code (and by the nbflow functions it calls)."""
    from numba.core.dispatcher import Dispatcher

    from ..kernels.cpu.templates import Elementwise

    seen = set() if seen is None else seen
    if id(kernel) in seen:
        return []
    seen.add(id(kernel))
    if isinstance(kernel, Dispatcher):
        return [kernel]
    if isinstance(kernel, Elementwise):
        if kernel.mod is None:
            return []
        return [d for d in vars(kernel.mod).values() if isinstance(d, Dispatcher)]
    fn = getattr(kernel, "__func__", kernel)
    if not isinstance(fn, types.FunctionType) or depth > 2:
        return []
    found = []
    refs = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
    refs += [fn.__globals__[n] for n in fn.__code__.co_names if n in fn.__globals__]
    for ref in refs:
        ours = isinstance(ref, types.FunctionType) and ref.__module__.startswith("nbflow")
        if ours or isinstance(ref, (Dispatcher, Elementwise)):
            found += _dispatchers(ref, depth + 1, seen)
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _mentions(sig, dtype: np.dtype) -> bool:
    return dtype.name in str(sig)


def _function_status(d, dtype: np.dtype) -> tuple[str, str | None]:
    sigs = [s for s in d.signatures if _mentions(s, dtype)]
    hits = {s for s in d._cache_hits if _mentions(s, dtype)}
    cache = getattr(d, "_cache", None)
    path = getattr(cache, "cache_path", None) if type(cache).__name__ != "NullCache" else None
    if sigs:
        return ("loaded from disk cache" if set(sigs) <= hits else "compiled"), path
    if path is not None:
        try:
            index = cache._cache_file._load_index()
        except Exception:  # (numba's private index: unreadable means unknown, not listed)
            index = {}
        if any(_mentions(key[0], dtype) for key in index):
            return "on disk cache", path
    return "to compile", path


RANK = ["compiled", "loaded from disk cache", "on disk cache", "to compile"]


def kernel_status(node, device: str, dtype) -> KernelStatus:
    """The compile status of `node`'s kernel on `device` for `dtype` (module doc)."""
    dtype = np.dtype(dtype)
    name = node.op.name
    short = str(dtype)
    if device != "cpu":
        return KernelStatus(name, device, short, "compiled by the device's launcher at first run")
    try:
        kernel = node.op.kernel("cpu", dtype)
    except NbflowError:
        return KernelStatus(name, device, short, "no kernel for this dtype")
    dispatchers = _dispatchers(kernel)
    if not dispatchers:
        return KernelStatus(name, device, short, "to compile")  # an elementwise module unmade
    functions, paths = {}, []
    for d in dispatchers:
        status, path = _function_status(d, dtype)
        functions[d.py_func.__name__] = status
        if path:
            paths.append(path)
    used = [s for s in functions.values() if s in RANK[:2]]
    status = min(used or functions.values(), key=RANK.index)
    return KernelStatus(name, device, short, status, functions, paths[0] if paths else None)


@dataclass
class Explanation:
    """explain()'s structured result: `ops` (one dict per op of block 0: op, status "runs" or
    "pruned", why, kernel (op, device, dtype), note), `memory` (MemoryPlan, None where the
    executor plans no memory reuse: the GPU, or reuse_memory=False), `kernels` (a
    KernelStatus per kernel the plan runs, and one line per fused kernel) and `text`."""

    ops: list
    memory: MemoryPlan | None
    kernels: list
    fused: list
    text: str

    def __str__(self) -> str:
        return self.text
