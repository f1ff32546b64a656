"""Replaying a plan: the kernel calls of a recorded run, made again on arrays.

Once the memory pass's Arena has placed a plan's buffers (graph/memory.py), a run of that plan
with the same feed signature computes the same intermediates into the same memory: every step
takes the same buffer and calls the same launcher. What each step still does around its
kernel (looking its inputs up as Tensors, checking their signature against its cache, taking
its buffer from the pool or the arena, the in-place checks, the view records, wrapping its
output) is Python that the run repeats for nothing: in the MLP training step of bench/ P4 it
was a tenth of the step, 0.14 ms in situ.

So a placed run is recorded, step by step (what it read, the launcher it called and the
buffer it wrote), and later runs call the launchers on the recorded arrays directly, the feeds'
arrays put in, as a CUDA graph is replayed. A replay holds only while what it assumed does:
the feeds' signature (the arena is per signature), the same parameter tensors in the scope
with the same arrays, the same attrs on every node (a learning rate a scheduler changed), the
same memory budget and the arena's buffer. Otherwise the run goes through the steps as
before, and the next placed run records again. Plans with steps a replay cannot make again
(an op run through the executor's generic path, a copy made for an in-place write, a
view written to the scope) are not replayed, nor are runs with NaN checks. In poison mode a
replay fills what each Release step releases, as the step does. Fetched outputs escape the
arena, and a replay makes them in fresh buffers, as a run does; a fetched view is made again
from what it views when that is new in each replay too (feeds and fresh outputs; not a
parameter, nor a value written in place).

A loop body's block (graph/control.py) runs the same steps every iteration on inputs of one
signature, with no arena: its first run is recorded, every output a Fresh buffer, and the
following iterations replay it while it holds. A body with an in-place write is not replayed
(its inputs, the last iteration's outputs, may overlap differently each time), nor one that
reads outer values directly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import STATE, overlaps_partly
from ..eager.tensor import Tensor, version_counter
from ..runtime import buffers
from .fusion import FusedGroup
from .memory import IntoBuffer, Release
from .program import Var

INTO, VIEW, INPLACE, GROUP, POISON = range(5)


class Call(NamedTuple):
    """One recorded step: `node` a Node (a FusedGroup, a Release for POISON), `names` its
    input names, `outs` its output names; `launcher` a FusedGroup's KernelCall (its kernel as
    the recorded run chose it)."""

    kind: int
    node: object
    launcher: object = None
    names: tuple = ()
    casts: tuple = ()
    outs: tuple = ()
    # INTO and GROUP: the output buffers (an arena's, or Fresh), one per output
    buffers: object = None
    # INPLACE: the version counters the write moves; GROUP: (name, stand-in) of the values
    # read outside for their shape only
    extra: tuple = ()


class Fresh(NamedTuple):
    """An output buffer outside the arena (one escaping the run: a fetched output), made
    afresh in each replay; the outputs that took one buffer in the recorded run (one the
    memory pass lent on to the next step) share a slot, and so one buffer, in each replay."""

    slot: int
    shape: tuple
    dtype: object


class Replay:
    """The recorded kernel calls of one placed run of a plan (see the module's doc)."""

    def __init__(self):
        self.calls: list[Call] = []
        self.persistent: dict = {}  # name -> (tensor, array): the scope values read
        self.attrs: list = []  # (a node's attrs, their values as recorded)
        self.fetched: list = []  # names of the fetch targets made by the calls
        self.budget = STATE.memory_budget
        self.space = None  # the arena's buffer the recorded run placed into (or None)
        self.slots: dict = {}  # id of a Fresh output buffer's owner -> its slot

    @classmethod
    def build(cls, steps, recorded, scope, targets, space):
        """The Replay of a run of `steps` whose steps appended `recorded` (memory.RECORD),
        or None where a step cannot be replayed; `space`: the buffer of the arena the run
        placed into, None for a sub-block's run (every output made afresh: control.py)."""
        self = cls()
        self.space = space
        made = set()  # the names the calls make
        entries = iter(recorded)
        for step in steps:
            if type(step) is Release:
                if step.poison:  # poison mode: what the step releases is filled as it does
                    self.calls.append(Call(POISON, step))
                continue
            entry = next(entries, None)
            if entry is None or entry[0] is not step:
                return None  # the step ran through the executor (or is a plain op)
            if type(step) is FusedGroup:
                self._add_group(step, entry, scope)
                made.update(v.name for v in step.outputs)
                continue
            if not self._add(step, entry, scope):
                return None
            made.update(v.name for v in step.node.outputs)
        # a write into a parameter, or into a view of one, moves its version counter (shared
        # by its views) as run_inplace does; the counters of values living in a run only do not
        # matter once it ends
        kept = {id(version_counter(t)) for t, _ in self.persistent.values()}
        for i, call in enumerate(self.calls):
            if call.kind == INPLACE:
                counters = tuple(c for c in call.extra if id(c) in kept)
                self.calls[i] = call._replace(extra=counters)
        # the values new in each replay: the feeds, Fresh outputs, and views of those alone (of
        # every input: the memory pass holds a view to all of them)
        read = {name for call in self.calls for name in call.names}
        fresh = read - made - self.persistent.keys()
        for call in self.calls:
            if call.kind == VIEW and all(name in fresh for name in call.names):
                fresh.update(call.outs)
            fresh.update(name for name, b in zip(call.outs, call.buffers or ()) if type(b) is Fresh)
        for t in targets:
            if type(t) is Var and not t.persistable and t.name in made:
                if t.name not in fresh:
                    return None  # an in-place output, or a view of the arena: not made afresh
                self.fetched.append(t.name)
        return self

    def _add_group(self, group, entry, scope):
        _, bufs, shape, kernel_call = entry
        self._read(group.inputs, scope)
        self.attrs.extend(group.baked)  # (a node's attrs edited: the group runs unfused)
        outs = [self._out(buf, buf.shape, buf.dtype) for buf in bufs]
        # the stand-ins of values read for their shape only hold no memory: kept as they are
        shaped = [(v.name, np.broadcast_to(np.zeros((), v.dtype), shape)) for v in group.shaped]
        names = tuple(v.name for v in group.inputs)
        outputs = tuple(v.name for v in group.outputs)
        call = Call(GROUP, group, kernel_call, names, outs=outputs, buffers=outs, extra=shaped)
        self.calls.append(call)

    def _read(self, inputs, scope):
        for v in inputs:
            if v.persistable:
                t = scope[v.name]
                self.persistent[v.name] = (t, t._data)

    def _out(self, buf, shape, dtype):
        """A buffer of the arena's, the same memory in every placed run, or a Fresh one."""
        if buf.base is not None and buf.base is self.space:
            return buf
        owner = id(buf if buf.base is None else buf.base)
        slot = self.slots.setdefault(owner, len(self.slots))
        return Fresh(slot, shape, dtype)

    def _add(self, step, entry, scope) -> bool:
        node = step.node
        names = tuple(name for name, _ in step.reads)
        self._read(node.inputs, scope)
        values = tuple(node.attrs.values())
        try:
            hash(values)
        except TypeError:  # an unhashable attr: the step works its plan out on each run
            return False
        self.attrs.append((node.attrs, values))
        outs = tuple(v.name for v in node.outputs)
        if type(step) is IntoBuffer:
            _, (launcher, casts, _), bufs = entry
            out = tuple(self._out(buf, buf.shape, buf.dtype) for buf in bufs)
            self.calls.append(Call(INTO, node, launcher, names, casts, outs, out))
            return True
        _, plan, args = entry
        if node.op.view:
            if any(v.persistable for v in node.outputs):
                return False
            self.calls.append(Call(VIEW, node, plan.launcher, names, outs=outs))
            return True
        targets = [args[j] for j in node.op.inplace.values()]
        for (_, dtype), target in zip(plan.allocs, targets):
            if target._data.dtype != dtype:
                return False  # written through a copy in the compute dtype (float16)
            for t in args:  # an input overlapping a target is read through a copy
                if t is not target and overlaps_partly(t._data, target._data):
                    return False
        params = [t for t, _ in self.persistent.values()]
        for v, target in zip(node.outputs, targets):
            if v.persistable and not any(target is t for t in params):
                return False  # the scope would get a value of this run only
        counters = tuple(version_counter(t) for t in targets)
        call = Call(INPLACE, node, plan.launcher, names, plan.casts, outs, extra=counters)
        self.calls.append(call)
        return True

    def holds(self, scope, space) -> bool:
        """Whether what the recording assumed still holds (the feeds' signature is the
        arena's key, the inputs' a sub-block's), `space` the arena's buffer now."""
        if STATE.memory_budget != self.budget or space is not self.space:
            return False
        for name, (t, array) in self.persistent.items():
            if scope.get(name) is not t or t._data is not array:
                return False
        return all(tuple(attrs.values()) == values for attrs, values in self.attrs)

    def run(self, executor, env, scope):
        """Make the recorded calls on the feeds in `env`; puts the fetched outputs into env.
        An error names the op and its line, as the step's own run does."""
        arrays = {name: t._data for name, t in env.items() if type(name) is str}
        for name, (_, array) in self.persistent.items():
            arrays[name] = array
        made = [None] * len(self.slots)  # the Fresh buffers of this run
        for kind, node, launcher, names, casts, outs, out, extra in self.calls:
            args = [arrays[n] for n in names]
            for i, d in casts:
                args[i] = args[i].astype(d)
            try:
                if kind == POISON:
                    node.poison_arrays(arrays)
                elif kind == GROUP:
                    bufs = [_buffer(b, made) for b in out]
                    if launcher is None or not launcher.again(args, bufs):
                        bufs = _group(executor, node, args, bufs, scope)
                    arrays.update(zip(outs, bufs))
                    arrays.update(extra)  # (the stand-ins of values read for their shape)
                elif kind == INTO:
                    bufs = [_buffer(b, made) for b in out]
                    launcher(*args, *bufs, **node.attrs)
                    arrays.update(zip(outs, bufs))
                elif kind == VIEW:
                    results = launcher(*args, **node.attrs)
                    results = results if type(results) is tuple else (results,)
                    arrays.update(zip(outs, results))
                else:
                    # the targets as they are (a cast input is a copy), as run_inplace writes
                    targets = [arrays[names[j]] for j in node.op.inplace.values()]
                    launcher(*args, *targets, **node.attrs)
                    arrays.update(zip(outs, targets))
                    for counter in extra:
                        counter[0] += 1
            except Exception:
                # the op again through the executor, on Tensors of the same arrays: the error
                # it raises names the op and its line, as a step's does (a fused group's, and
                # any other, is raised as it was)
                if kind != GROUP:
                    executor._run_op(node, {n: Tensor(arrays[n]) for n in names}, scope)
                raise
        for name in self.fetched:
            env[name] = Tensor(arrays[name])


def _buffer(out, made: list):
    """The array of a recorded output: an arena buffer as it is, a Fresh one made in this run
    (once per slot)."""
    if type(out) is not Fresh:
        return out
    buf = made[out.slot]
    if buf is None:
        buf = made[out.slot] = buffers.empty(out.shape, out.dtype)
    return buf.reshape(out.shape)


def _group(executor, group, args, bufs, scope):
    """A fused group's outputs, its kernel chosen again into the recorded buffers `bufs` (or
    its ops run one by one through the executor, where the kernel cannot run them now)."""
    outs = iter(bufs)
    if group.compute(args, lambda shape, dtype, size: next(outs)) is not None:
        return bufs
    env = {v.name: Tensor(a) for v, a in zip(group.inputs, args)}
    group._unfused(executor, env, scope)
    return [env[v.name]._data for v in group.outputs]
