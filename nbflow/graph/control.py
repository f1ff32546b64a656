"""Control flow in a Program: the `cond`, `while` and `while_grad` ops and their sub-blocks.

A sub-block is a function. Tracing a Python function into one (BlockTrace) turns every value
of an enclosing block that its ops read into a block input: a local var of the same name and
type standing for it. So a traced sub-block reads nothing but its inputs, the op that holds it
passes the values, and backprop over a sub-block stops at its inputs. `block.outputs` are its
results. (The executor also lets a hand-built sub-block read enclosing vars; none writes them.)

    cond:  inputs (pred, *xs); true_block and false_block both take xs; outputs = a branch's
    while: inputs (*init, *xs); cond_block and body_block take (*loop vars, *xs); cond_block
           returns the predicate, body_block the next loop vars and then `stacked` values
           per iteration; outputs = the final loop vars, then the stacked values (iterations
           first), then the history once differentiated (below)

Gradients reuse the ops themselves. A sub-block can be replayed (`call_block`: its ops issued
again through bind() on new inputs), and backprop over a replay gives the branch's gradient:
- cond's gradient is a cond whose branches replay each forward branch and backprop through it;
- while's gradient is a `while_grad` loop running backwards over the iterations: it replays
  the body on that iteration's loop vars and backprops through it. The forward keeps each
  iteration's loop vars for that: the first time a while op is differentiated it gains
  history outputs (the iteration count and the loop vars stacked per iteration), so a loop
  nobody differentiates keeps nothing. The body's forward is recomputed once per iteration
  in the backward loop (checkpointing at iteration boundaries).
Nested control flow needs nothing more: replaying a block replays its control ops, and their
own gradient rules run inside the gradient blocks. Second order too: the gradient ops are
ordinary cond / while_grad ops, and the history is differentiable (its gradient seeds the
backward loop at each iteration).
"""

from __future__ import annotations

import weakref
from collections import ChainMap
from contextlib import contextmanager

import numpy as np

from .. import ops
from ..autograd.backprop import backprop
from ..core import STATE, Attr, Node, Op, bind, use_trace
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    DTypeError,
    GradientError,
    LoopLimitError,
    ProgramError,
    ShapeError,
    UnsupportedError,
)
from ..eager.checking import run_checked
from ..eager.control import PYTHON_PREDICATES
from ..eager.tensor import Stale, Tensor
from ..ops.index import index_select_op
from . import memory
from .executor import REPLAY_MISSES, compatible, needed_ops
from .fusion import fuse
from .program import Block, GraphTrace, Var
from .replay import INPLACE, Replay

__all__ = ["COND", "WHILE", "WHILE_GRAD", "ControlOp", "call_block", "graph_cond", "graph_while"]

# ---------------------------------------------------------------- tracing into sub-blocks


class BlockTrace(GraphTrace):
    """Records ops into a sub-block; values of enclosing blocks become block inputs."""

    def __init__(self, block: Block):
        super().__init__(block)
        self.sources: list[Var] = []  # the enclosing-block vars the inputs stand for, in order
        self.proxies: dict[int, Var] = {}

    def outer(self, v: Var) -> Var:
        return self.proxy(v)

    def proxy(self, v: Var) -> Var:
        """The block input standing for v, a var of an enclosing block."""
        p = self.proxies.get(id(v))
        if p is not None:
            return p
        super().outer(v)  # raises unless v's block encloses this one
        p = self.block.create_var(
            _free_name(self.block, v.name), v.shape, v.dtype, stop_gradient=v.stop_gradient
        )
        self.block.inputs.append(p)
        self.sources.append(v)
        self.proxies[id(v)] = p
        return p

    def apply(self, op, args, attrs):
        for j in op.inplace.values():
            target = self.value(args[j]) if j < len(args) else None
            if isinstance(target, Var) and any(target is p for p in self.block.inputs):
                raise UnsupportedError(
                    f"{op.name}: inside a cond/while_loop function, %{target.name} (an input of "
                    "the function) cannot be written in place; use the out-of-place op"
                )
        return super().apply(op, args, attrs)


def _free_name(block: Block, name: str) -> str:
    return name if name not in block.vars else block.program.unique_name(name + "_")


def _flat(value) -> tuple[list, bool]:
    """A function's result as a list, and whether it was a single value."""
    if isinstance(value, (tuple, list)):
        return list(value), False
    return [value], True


def _result(trace: GraphTrace, r) -> Var:
    """A returned value as a var of the trace's block."""
    if isinstance(r, (bool, int, float, np.bool_, np.integer, np.floating)):
        return trace.constant(r, dt.scalar_dtype(r))
    if not isinstance(r, (Var, Tensor, np.ndarray)):
        raise ArgumentError(f"a cond/while_loop function returned {type(r).__name__}, not a tensor")
    return trace.value(r)


def _trace_into(block: Block, fn, args) -> tuple[BlockTrace, list[Var], bool]:
    """Trace fn(*args) into block: (its trace, its results as vars, single result?)."""
    trace = BlockTrace(block)
    with use_trace(trace):
        local = [trace.value(a) if isinstance(a, (Var, Tensor)) else a for a in args]
        results, single = _flat(fn(*local))
        results = [_result(trace, r) for r in results]
    block.ops = needed_ops(block, results)  # a sub-block is a pure function: drop dead ops
    return trace, results, single


def _union(*lists) -> list[Var]:
    seen, out = set(), []
    for vs in lists:
        for v in vs:
            if id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    return out


def _check_pred(pred, what: str):
    if not isinstance(pred, Var):
        raise ArgumentError(
            f"{what}: the predicate must be a bool tensor or a Python bool, got "
            f"{type(pred).__name__}"
        )
    if pred.dtype != dt.bool_:
        raise DTypeError(f"{what}: the predicate must be a bool tensor, got {pred.dtype}")
    if any(n not in (1, -1) for n in pred.shape):
        raise ShapeError(f"{what}: the predicate must have one element, got shape {pred.shape}")


# ---------------------------------------------------------------- cond


def graph_cond(pred, true_fn, false_fn, operands):
    """nbflow.cond under a graph trace (see nbflow/control.py)."""
    if isinstance(pred, PYTHON_PREDICATES):  # known while building: no op needed
        return (true_fn if pred else false_fn)(*operands)
    outputs, single = _cond(pred, true_fn, false_fn, operands)
    return outputs[0] if single else tuple(outputs)


def _cond(pred, true_fn, false_fn, operands) -> tuple[list[Var], bool]:
    trace = STATE.trace
    parent = trace.block
    pred = trace.value(pred)
    _check_pred(pred, "cond")
    operands = [trace.value(o) if isinstance(o, (Var, Tensor)) else o for o in operands]
    branches = []
    for fn in (true_fn, false_fn):
        block = parent.program.create_block(parent.idx)
        branches.append((block, *_trace_into(block, fn, operands)))
    (tb, tt, tr, single), (fb, ft, fr, _) = branches
    if len(tr) != len(fr):
        raise ShapeError(f"cond: true_fn returns {len(tr)} values, false_fn {len(fr)}")
    outer = _union(tt.sources, ft.sources)
    for block, t, results, _ in branches:
        block.inputs = [t.proxy(v) for v in outer]
        block.outputs = results
    outputs = []
    for k, (a, b) in enumerate(zip(tr, fr)):
        if a.dtype != b.dtype:
            raise DTypeError(f"cond: result {k} is {a.dtype} in true_fn, {b.dtype} in false_fn")
        if a.ndim != b.ndim:
            raise ShapeError(
                f"cond: result {k} has shape {list(a.shape)} in true_fn, {list(b.shape)} in "
                "false_fn (the ranks must agree)"
            )
        shape = [p if p == q else -1 for p, q in zip(a.shape, b.shape)]
        stop = a.stop_gradient and b.stop_gradient
        outputs.append(parent.create_var(shape=shape, dtype=a.dtype, stop_gradient=stop))
    attrs = COND.check_attrs({"true_block": tb.idx, "false_block": fb.idx})
    parent.append(COND, [pred] + [trace.value(v) for v in outer], attrs, outputs)
    return outputs, single


# ---------------------------------------------------------------- while


def graph_while(cond_fn, body_fn, values, max_iterations, op=None, stacked=0):
    """nbflow.while_loop under a graph trace: the final loop vars as a list.

    stacked > 0: body_fn returns the next loop vars and then `stacked` values per iteration,
    which the op outputs stacked over the iterations (after the final loop vars), as JAX's
    scan does: a dynamic RNN's outputs, without carrying a growing buffer through the loop."""
    op = op or WHILE
    trace = STATE.trace
    parent = trace.block
    program = parent.program
    init = [_loop_init(trace, v) for v in values]
    weak = [not hasattr(v, "dtype") for v in values]  # Python numbers (JAX's weak types)
    specs = [(v.shape, v.dtype) for v in init]
    stops = [v.stop_gradient for v in init]
    while True:  # retrace until the loop vars' types are a fixed point (only ever relaxed)
        mark = len(program.blocks)
        cb, ct, cond_args, preds = _loop_block(program, parent, cond_fn, specs, stops)
        bb, bt, body_args, results = _loop_block(program, parent, body_fn, specs, stops)
        if len(preds) != 1:
            raise ShapeError(f"while_loop: the condition returned {len(preds)} values, not one")
        pred = preds[0]
        _check_pred(pred, "while_loop condition")
        if len(results) != len(init) + stacked:
            raise ShapeError(
                f"while_loop body returned {len(results)} values for {len(init)} loop vars"
                + (f" and {stacked} stacked values" if stacked else "")
            )
        new_specs, new_stops = [], []
        for k, (r, (shape, dtype), stop) in enumerate(zip(results, specs, stops)):
            if r.dtype != dtype and weak[k] and np.can_cast(dtype, r.dtype):
                dtype = r.dtype  # a Python number starts the loop var in the body's dtype
                init[k] = trace.constant(values[k], dtype)
            if r.dtype != dtype:
                raise DTypeError(f"while_loop: loop var {k} is {dtype}, the body returns {r.dtype}")
            if r.ndim != len(shape):
                raise ShapeError(
                    f"while_loop: loop var {k} has shape {list(shape)}, the body returns "
                    f"{list(r.shape)} (loop vars keep their rank)"
                )
            new_specs.append((tuple(p if p == q else -1 for p, q in zip(shape, r.shape)), dtype))
            new_stops.append(stop and r.stop_gradient)
        if new_specs == specs and new_stops == stops:
            break
        specs, stops = new_specs, new_stops
        del program.blocks[mark:]
    outer = _union(ct.sources, bt.sources)
    cb.inputs = cond_args + [ct.proxy(v) for v in outer]
    cb.outputs = [pred]
    bb.inputs = body_args + [bt.proxy(v) for v in outer]
    bb.outputs = results
    outputs = [
        parent.create_var(shape=shape, dtype=dtype, stop_gradient=stop)
        for (shape, dtype), stop in zip(specs, stops)
    ]
    outputs += [
        parent.create_var(shape=(-1, *y.shape), dtype=y.dtype, stop_gradient=y.stop_gradient)
        for y in results[len(init) :]
    ]
    attrs = op.check_attrs(
        {
            "cond_block": cb.idx,
            "body_block": bb.idx,
            "max_iterations": max_iterations,
            "stacked": stacked,
        }
    )
    parent.append(op, init + [trace.value(v) for v in outer], attrs, outputs)
    return outputs


def _loop_init(trace, v) -> Var:
    if isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)):
        return trace.constant(v, dt.scalar_dtype(v))
    return trace.value(v)


def _loop_block(program, parent, fn, specs, stops):
    """Trace fn over fresh loop-var inputs into a new sub-block."""
    block = program.create_block(parent.idx)
    args = [
        block.create_var(program.unique_name("loop"), shape, dtype, stop_gradient=stop)
        for (shape, dtype), stop in zip(specs, stops)
    ]
    block.inputs = list(args)
    trace, results, _ = _trace_into(block, fn, args)
    return block, trace, args, results


# ---------------------------------------------------------------- replay


def call_block(block: Block, args, env=None, cut=()) -> list:
    """Issue the block's ops again, through bind(), on `args` for its inputs: under a graph
    trace this appends a copy of the block's computation (the source of its gradient).
    env, if given, receives every replayed value by id of the block's var. The replayed
    values of the ops in `cut` are leaves: backprop over the replay stops at them."""
    env = {} if env is None else env
    env.update({id(p): a for p, a in zip(block.inputs, args)})
    for node in needed_ops(block, block.outputs):
        if "generator" in node.op.attrs:  # a replay would draw other numbers than the forward
            raise UnsupportedError(
                f"{node.op.name} (defined at {node.location}) draws random numbers inside a "
                "control flow block, whose gradient replays the block; draw them outside and "
                "pass them in as an operand"
            )
        ins = [env.get(id(v), v) for v in node.inputs]  # (or a var the block reads directly)
        if isinstance(node.op, ControlOp):
            outs = node.op.replay(node, ins)
        else:
            outs = bind(node.op, *ins, **node.attrs)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        if any(node is c for c in cut):
            for o in outs:  # before any consumer records its edge to o
                o._node, o.stop_gradient = None, False
        for v, o in zip(node.outputs, outs):
            env[id(v)] = o
    return [env[id(v)] for v in block.outputs]


def _requires_grad(v) -> bool:
    """Whether v (a Var, or a Stale placeholder for one overwritten in place) wants a
    gradient."""
    v = v.original if isinstance(v, Stale) else v
    return isinstance(v, Var) and not v.stop_gradient


def _vjp(results, live, seeds, wrt) -> list[Var]:
    """Gradients of sum(results[j] * seed) with respect to the leaf vars `wrt` (zeros for
    those the results do not reach)."""
    pairs = [(results[j], s) for j, s in zip(live, seeds) if _requires_grad(results[j])]
    leaves = {}
    if pairs:
        leaves, _ = backprop([r for r, _ in pairs], [s for _, s in pairs], create_graph=True)
    return [leaves[id(w)][1] if id(w) in leaves else ops.zeros_like(w) for w in wrt]


@contextmanager
def _as_leaves(vs):
    """Make computed vars leaves for a moment, so that backprop over ops recorded meanwhile
    stops at them and reports their gradients (the loop vars of one iteration, taken from
    the history, in the backward loop)."""
    saved = [(v._node, v.stop_gradient) for v in vs]
    for v in vs:
        v._node, v.stop_gradient = None, False
    try:
        yield
    finally:
        for v, (node, stop) in zip(vs, saved):
            v._node, v.stop_gradient = node, stop


def _fresh(t: Tensor, args) -> Tensor:
    """A result that is one of the op's inputs gets its own buffer (a later in-place write
    to one must not change the other)."""
    return ops.clone(t) if any(t is a for a in args) else t  # (on t's device)


def _truth(t: Tensor, where: str) -> bool:
    if t.dtype.kind != "b" or t.size != 1:
        raise ShapeError(f"{where}: the predicate is {t.dtype}{list(t.shape)}, not one bool")
    return bool(t.numpy().reshape(()))  # (a host copy of a GPU predicate)


def _no_spec(*specs, **attrs):
    raise UnsupportedError("a control flow op's outputs come from its sub-blocks")


def _no_kernel(*arrays, **attrs):
    raise UnsupportedError("a control flow op runs its sub-blocks: run it with an Executor")


# ---------------------------------------------------------------- the ops


class ControlOp(Op):
    """An op holding sub-blocks: the executor calls `run_blocks` instead of a kernel, verify
    and the loader call `check`, call_block calls `replay`."""

    block_attrs: tuple[str, ...] = ()

    def sub_blocks(self, program, attrs) -> list[Block]:
        return [program.blocks[attrs[name]] for name in self.block_attrs]

    def check(self, block: Block, inputs, outputs, attrs) -> None:
        """Raise ProgramError unless the sub-blocks are children of `block` whose inputs and
        outputs fit the op's."""
        program = block.program
        for name in self.block_attrs:
            idx = attrs[name]
            if not 0 < idx < len(program.blocks):
                raise ProgramError(f"{name} {idx} is not a sub-block of the program")
            if program.blocks[idx].parent != block.idx:
                raise ProgramError(f"{name} {idx} is not a child of block {block.idx}")
        self.check_types(program, inputs, outputs, attrs)


def _fits(what: str, v: Var, like: Var):
    """v takes values of `like`: same dtype and rank, and v's shape generalises like's."""
    if v.dtype != like.dtype or not compatible(v.shape, like.shape):
        raise ProgramError(f"{what} %{v.name} is {v.spec}, it takes %{like.name}: {like.spec}")


class CondOp(ControlOp):
    block_attrs = ("true_block", "false_block")

    def check_types(self, program, inputs, outputs, attrs):
        if not inputs or inputs[0].dtype != dt.bool_:
            raise ProgramError("the first input (the predicate) must be a bool var")
        for block in self.sub_blocks(program, attrs):
            if len(block.inputs) != len(inputs) - 1 or len(block.outputs) != len(outputs):
                raise ProgramError(
                    f"block {block.idx} takes {len(block.inputs)} inputs and returns "
                    f"{len(block.outputs)} values; the op has {len(inputs) - 1} and "
                    f"{len(outputs)}"
                )
            for p, v in zip(block.inputs, inputs[1:]):
                _fits(f"input of block {block.idx}", p, v)
            for v, r in zip(outputs, block.outputs):
                _fits("output", v, r)

    def run_blocks(self, executor, node, args, scope, env):
        pred = _truth(args[0], f"cond (created at {node.location})")
        program = node.outputs[0].block.program
        block = program.blocks[node.attrs["true_block" if pred else "false_block"]]
        return tuple(_fresh(t, args) for t in run_block(executor, block, args[1:], scope, env))

    def replay(self, node, ins):
        tb, fb = self.sub_blocks(node.outputs[0].block.program, node.attrs)
        outs, _ = _cond(ins[0], lambda *a: call_block(tb, a), lambda *a: call_block(fb, a), ins[1:])
        return outs


class WhileOp(ControlOp):
    block_attrs = ("cond_block", "body_block")

    def check_types(self, program, inputs, outputs, attrs):
        cb, bb = self.sub_blocks(program, attrs)
        if attrs["max_iterations"] is not None and attrs["max_iterations"] < 0:
            raise ProgramError(f"max_iterations is {attrs['max_iterations']}, not >= 0")
        stacked = attrs["stacked"]
        n = len(bb.outputs) - stacked
        expected = n + stacked + (n + 1 if attrs["history"] else 0)
        if len(outputs) != expected or n <= 0 or stacked < 0 or len(inputs) < n:
            raise ProgramError(
                f"{len(inputs)} inputs and {len(outputs)} outputs for a body returning "
                f"{len(bb.outputs)} values (stacked={stacked}, history={attrs['history']})"
            )
        for block in (cb, bb):
            if len(block.inputs) != len(inputs):
                raise ProgramError(
                    f"block {block.idx} takes {len(block.inputs)} inputs, the op has {len(inputs)}"
                )
            for p, v in zip(block.inputs, inputs):
                _fits(f"input of block {block.idx}", p, v)
        if len(cb.outputs) != 1 or cb.outputs[0].dtype != dt.bool_:
            raise ProgramError(f"block {cb.idx} (the condition) must return one bool var")
        for k, (p, r, v) in enumerate(zip(bb.inputs, bb.outputs[:n], outputs)):
            _fits(f"loop var {k}", p, r)
            _fits("output", v, p)
        for v, y in zip(outputs[n : n + stacked], bb.outputs[n:]):
            if v.dtype != y.dtype or v.ndim != y.ndim + 1 or not compatible(v.shape[1:], y.shape):
                raise ProgramError(f"stacked output %{v.name} does not stack %{y.name}: {y.spec}")
        if attrs["history"]:
            count, hists = outputs[n + stacked], outputs[n + stacked + 1 :]
            if count.dtype != dt.int64 or count.shape != ():
                raise ProgramError(f"%{count.name} (the iteration count) must be i64[]")
            for h, v in zip(hists, outputs[:n]):
                if h.dtype != v.dtype or h.shape[1:] != v.shape or h.ndim != v.ndim + 1:
                    raise ProgramError(f"history %{h.name} does not stack %{v.name}")

    def run_blocks(self, executor, node, args, scope, env):
        program = node.outputs[0].block.program
        cb, bb = self.sub_blocks(program, node.attrs)
        stacked = node.attrs["stacked"]
        n = len(bb.outputs) - stacked
        values, outer = list(args[:n]), list(args[n:])
        limit, history = node.attrs["max_iterations"], node.attrs["history"]
        bound = getattr(executor, "max_loop_iterations", None)  # Executor(max_loop_iterations=)
        if bound is not None and (limit is None or bound < limit):
            limit = bound
        where = f"{self.name} (created at {node.location})"
        kept = [[] for _ in range(n)] if history else None
        ys = [[] for _ in range(stacked)]
        count = 0
        while _truth(run_block(executor, cb, values + outer, scope, env)[0], where):
            if limit is not None and count >= limit:
                raise LoopLimitError(f"{where} still runs after max_iterations={limit}")
            if history:
                for k, t in enumerate(values):
                    kept[k].append(t._data)
            new = run_block(executor, bb, values + outer, scope, env)
            values = new[:n]
            for k, y in enumerate(new[n:]):
                ys[k].append(y._data)
            count += 1
        results = [_fresh(t, args) for t in values]
        for k, y in enumerate(bb.outputs[n:]):
            empty = np.empty([max(d, 0) for d in y.shape], y.dtype)  # for zero iterations
            results.append(_stack(ys[k], empty, where, f"stacked value {k}"))
        if history:
            results.append(Tensor(np.array(count, np.int64)))
            results += [_stack(kept[k], args[k]._data, where, f"loop var {k}") for k in range(n)]
        return tuple(results)

    def replay(self, node, ins):
        cb, bb = self.sub_blocks(node.outputs[0].block.program, node.attrs)
        stacked = node.attrs["stacked"]
        n = len(bb.outputs) - stacked
        init, outer = ins[:n], ins[n:]
        outs = graph_while(
            lambda *a: call_block(cb, [*a, *outer])[0],
            lambda *a: call_block(bb, [*a, *outer]),
            init,
            node.attrs["max_iterations"],
            self,
            stacked,
        )
        if not node.attrs["history"]:
            return outs
        # the loop was differentiated: the replayed gradient ops read the replayed loop's
        # history (a while inside a while, differentiated twice)
        count, hists = _keep_history(outs[0]._node, n, stacked)
        return [*outs, count, *hists]


# ---------------------------------------------------------------- running sub-blocks


class _BlockPlan:
    """What running a sub-block needs, worked out once per program version: the ops its
    outputs need, the values of its constants (GraphTrace.constant vars: nothing writes them,
    so a loop body need not rebuild them every iteration), and whether its ops read vars of
    enclosing blocks (only hand-built blocks do: traced ones take them as inputs)."""

    def __init__(self, executor, block: Block, scope):
        self.version = block.program.version
        ops = needed_ops(block, block.outputs)
        constants = {id(v) for v in block.constants.values()}
        hoisted = [n for n in ops if not n.inputs and all(id(v) in constants for v in n.outputs)]
        self.constants = {}
        for node in hoisted:
            executor._run_op(node, self.constants, scope)
        self.ops = [n for n in ops if not any(n is h for h in hoisted)]
        local = {id(v) for v in block.vars.values()}
        self.reads_outer = any(id(v) not in local for n in self.ops for v in n.inputs)
        # the steps run when values are not checked, as the main block's plan has them on the
        # CPU: fused groups, and steps that keep what their op needs per input signature
        # (their outputs in new buffers: a block's run has no pool or arena)
        self.steps = self.ops
        if executor.fuse:
            self.steps = [memory.node_step(s) for s in fuse(self.ops, block.outputs)]
        # a loop body runs its steps on inputs of one signature every iteration: after one
        # run is recorded, the next replay its kernel calls (graph/replay.py), while the
        # signature and what the replay assumed hold. Not a block reading outer values
        # directly: their signature is not the key.
        self.replayable = executor.fuse and executor.replay and not self.reads_outer
        self.replay, self.signature, self.misses = None, None, 0
        # the inputs its ops read or it returns: a while loop's condition gets every loop
        # var and reads one or two (run_block puts and checks only these, 10 -> 2 in an LSTM)
        read = {id(v) for n in self.ops for v in memory.reads(n)}
        read.update(id(v) for v in block.outputs)
        self.used = [i for i, v in enumerate(block.inputs) if id(v) in read]
        self.checked = None  # the used inputs' last signature that passed the checks


# a block's run takes no buffer from the enclosing run's pool or arena and is not recorded
# with the enclosing run
_UNPLANNED = {memory.POOL: None, memory.ARENA: None, memory.RECORD: None}


def run_block(executor, block: Block, values, scope, outer_env) -> list[Tensor]:
    """Run a sub-block on values for its inputs; returns its outputs."""
    plans = executor.__dict__.setdefault("_block_plans", weakref.WeakKeyDictionary())
    plan = plans.get(block)
    if plan is None or plan.version != block.program.version:
        plan = plans[block] = _BlockPlan(executor, block, scope)
    env = dict(plan.constants)
    env.update(_UNPLANNED)  # (shadowing the enclosing run's, in a ChainMap)
    used = [values[i] for i in plan.used]
    signature = tuple([(t.shape, t.dtype) for t in used])
    if signature != plan.checked:
        for i, t in zip(plan.used, used):
            v = block.inputs[i]
            if t.dtype != v.dtype or not compatible(v.shape, t.shape):
                raise ShapeError(
                    f"block {block.idx}: input %{v.name} is {v.spec}, got {t.dtype}{list(t.shape)}"
                )
        plan.checked = signature
    for i, t in zip(plan.used, used):
        env[block.inputs[i].name] = t
    if plan.reads_outer:  # its own vars shadow those of the enclosing blocks
        env = ChainMap(env, outer_env)
    if executor.checking:
        for node in plan.ops:
            run_checked(executor, node, env, scope)
    elif not plan.replayable:
        _run_steps(executor, plan.steps, env, scope)
    else:
        _run_or_replay(executor, plan, block, signature, env, scope)
    results = [executor._lookup(v, env, scope) for v in block.outputs]
    # a constant returned as is gets its own buffer: the op's output may be written in place
    kept = plan.constants.values()
    return [ops.clone(t) if any(t is c for c in kept) else t for t in results]


def _run_steps(executor, steps, env, scope):
    for step in steps:
        if type(step) is Node:
            executor._run_op(step, env, scope)
        else:
            step.run(executor, env, scope)


def _run_or_replay(executor, plan: _BlockPlan, block: Block, signature, env, scope):
    """The block's steps, or the replay of a recorded run of them on inputs of the same
    signature (recorded again when it no longer holds, up to REPLAY_MISSES times in a row)."""
    if signature != plan.signature:  # (a recording is for one signature)
        plan.replay, plan.signature = None, signature
    replay = plan.replay
    if replay:
        if replay.holds(scope, None):
            replay.run(executor, env, scope)
            plan.misses = 0
            return
        plan.replay, plan.misses = None, plan.misses + 1
    if plan.replay is False or plan.misses >= REPLAY_MISSES:
        _run_steps(executor, plan.steps, env, scope)
        return
    record = env[memory.RECORD] = []
    _run_steps(executor, plan.steps, env, scope)
    replay = Replay.build(plan.steps, record, scope, block.outputs, None)
    if replay is not None and any(call.kind == INPLACE for call in replay.calls):
        # an in-place write is checked against its inputs' overlaps when it runs, and a
        # loop's inputs (the last iteration's outputs) may overlap differently each time
        replay = None
    plan.replay = replay or False


def _stack(arrays, first: np.ndarray, where: str, what: str) -> Tensor:
    if not arrays:
        return Tensor(np.empty((0,) + first.shape, first.dtype))
    bad = next((k for k, a in enumerate(arrays) if a.shape != arrays[0].shape), None)
    if bad is not None:
        fix = (
            "keep its shape fixed (pad it to the largest size and mask the unused part, as "
            "nn.dynamic_rnn does), or run the loop eagerly (a Python loop: the tape handles "
            "changing shapes); without a gradient the loop var may change shape"
            if what.startswith("loop var")
            else "return values of one shape every iteration"
        )
        raise UnsupportedError(
            f"{where}: {what} changed shape between iterations ({list(arrays[0].shape)} at "
            f"iteration 0, {list(arrays[bad].shape)} at iteration {bad}), which stacking "
            f"(to keep each iteration for the gradient, or to output it) does not support: {fix}"
        )
    return Tensor(np.stack(arrays))


def _cond_grad(g, out, pred, *xs, true_block, false_block):
    gs, outs = _tuple(g), _tuple(out)
    wanted = [k for k, x in enumerate(xs) if _requires_grad(x)]
    live = [j for j, o in enumerate(outs) if _requires_grad(o)]
    result = [None] * (1 + len(xs))
    if not wanted or not live:
        return tuple(result)
    _refuse_stale((pred, *xs))  # the branch gradients replay the branch on these values
    program = STATE.trace.block.program
    seeds = [gs[j] for j in live]

    def branch(idx):
        block = program.blocks[idx]

        def gradient(*args):
            local_xs, local_seeds = args[: len(xs)], args[len(xs) :]
            results = call_block(block, local_xs)
            return _vjp(results, live, local_seeds, [local_xs[k] for k in wanted])

        return gradient

    grads, _ = _cond(pred, branch(true_block), branch(false_block), [*xs, *seeds])
    for k, gk in zip(wanted, grads):
        result[1 + k] = gk
    return tuple(result)


def _while_grad(g, out, *ins, cond_block, body_block, max_iterations, history, stacked):
    gs, outs = _tuple(g), _tuple(out)
    outs = tuple(o.original if isinstance(o, Stale) else o for o in outs)  # flags only
    # the op itself (it gains history outputs): the one running this body block
    node = next(n for n in outs[0].block.ops if n.attrs.get("body_block") == body_block)
    program = node.outputs[0].block.program
    body = program.blocks[body_block]
    n = len(body.outputs) - stacked
    finals, init, outer = outs[:n], ins[:n], ins[n:]
    diff = [k for k in range(n) if _requires_grad(finals[k])]
    live_ys = [k for k in range(stacked) if _requires_grad(outs[n + k])]
    want_outer = [j for j, x in enumerate(outer) if _requires_grad(x)]
    result = [None] * len(ins)
    if not diff and not live_ys:
        return tuple(result)
    _refuse_stale(ins)  # the backward loop replays the body on these values
    # seeds read per iteration: for the stacked values and, when this is a second
    # differentiation, for the history (whose entries are the loop vars entering the body)
    had_history = len(outs) > n + stacked
    count, hists = _keep_history(node, n, stacked)
    g_ys = [gs[n + k] for k in live_ys]
    g_hists = [gs[n + stacked + 1 + k] for k in diff] if had_history else []
    nd = len(diff)
    # an outer input the body reads only as rows x[index] (a dynamic RNN's inputs): its
    # gradient is each iteration's row gradients, stacked with their indices and scattered
    # once after the loop, not a full-size gradient summed every iteration (O(T^2))
    sliced = _row_reads(body, n, want_outer)
    summed = [j for j in want_outer if j not in sliced]
    row_nodes = [node for j in want_outer if j in sliced for node in sliced[j]]

    def going(i, *carry):
        return i >= 0

    def step_back(i, *carry):
        trace = STATE.trace
        g_vals, acc = carry[:nd], carry[nd:]
        xs = [ops.index_select(h, 0, i) for h in hists]  # this iteration's loop vars
        y_seeds = [ops.index_select(g, 0, i) for g in g_ys]
        local_outer = [trace.value(v) for v in outer]
        replayed = {}
        with _as_leaves([xs[k] for k in diff]):
            results = call_block(body, [*xs, *local_outer], replayed, cut=row_nodes)
            rows = [replayed[id(r.outputs[0])] for r in row_nodes]
            wrt = [xs[k] for k in diff] + [local_outer[j] for j in summed] + rows
            live = diff + [n + k for k in live_ys]
            grads = _vjp(results, live, [*g_vals, *y_seeds], wrt)
        g_xs = grads[:nd]
        if g_hists:  # the loop vars of this iteration were also read through the history
            g_xs = [g + ops.index_select(h, 0, i) for g, h in zip(g_xs, g_hists)]
        sums = [a + b for a, b in zip(acc, grads[nd : nd + len(summed)])]
        indices = [replayed.get(id(r.inputs[1]), r.inputs[1]) for r in row_nodes]  # (or outer)
        return [i - 1, *g_xs, *sums, *grads[nd + len(summed) :], *indices]

    start = [count - 1, *(gs[k] for k in diff), *(ops.zeros_like(outer[j]) for j in summed)]
    finals = graph_while(
        going, step_back, start, max_iterations, WHILE_GRAD, stacked=2 * len(row_nodes)
    )
    for idx, k in enumerate(diff):
        if _requires_grad(init[k]):
            result[k] = finals[1 + idx]
    for idx, j in enumerate(summed):
        result[n + j] = finals[1 + nd + idx]
    stacked_rows = finals[1 + nd + len(summed) :]
    row_grads, row_indices = stacked_rows[: len(row_nodes)], stacked_rows[len(row_nodes) :]
    pos = 0
    for j in want_outer:
        if j in sliced:
            uses = range(pos, pos + len(sliced[j]))
            pos += len(sliced[j])
            parts = [_rows_grad(outer[j], row_indices[u], row_grads[u]) for u in uses]
            result[n + j] = parts[0] if len(parts) == 1 else ops.add_n(*parts)
    return tuple(result)


def _row_reads(body: Block, n: int, want: list[int]) -> dict[int, list]:
    """{j: the index_select nodes} for each outer input j (block input n + j) that the body
    reads only through index_select along axis 0 (and does not return)."""
    nodes = needed_ops(body, body.outputs)
    found = {}
    for j in want:
        p = body.inputs[n + j]
        if any(r is p for r in body.outputs):
            continue
        users = [node for node in nodes if any(v is p for v in node.inputs)]
        if users and all(
            node.op is index_select_op
            and node.inputs[0] is p
            and node.inputs[1] is not p
            and node.attrs["axis"] % p.ndim == 0
            for node in users
        ):
            found[j] = users
    return found


def _rows_grad(x, indices, grads):
    """The gradient of x from rows x[indices[k]] whose gradients are grads[k]: index_select's
    own rule, applied once to all iterations' rows (iterations first in both)."""
    return index_select_op.grad(grads, None, x, indices, axis=0)[0]


def _keep_history(node, n: int, stacked: int):
    """The while node's history outputs (iteration count, loop vars stacked per iteration),
    added to it the first time it is differentiated."""
    base = n + stacked  # the outputs before the history: final loop vars, stacked values
    if not node.attrs["history"]:
        block = node.outputs[0].block
        count = block.create_var(shape=(), dtype=dt.int64)
        hists = [  # differentiable (second order): the loop vars are functions of the inputs
            block.create_var(
                _free_name(block, f"{v.name}_history"),
                (-1, *v.shape),
                v.dtype,
                stop_gradient=v.stop_gradient,
            )
            for v in node.outputs[:n]
        ]
        node.outputs += [count, *hists]
        for i, v in enumerate(node.outputs[base:], base):
            v._node, v._index = node, i
        node.attrs = dict(node.attrs, history=True)
        node.versions = (node.versions[0], node.versions[1] + [0] * (n + 1))
        block.program.version += 1
    return node.outputs[base], node.outputs[base + 1 :]


def _refuse_stale(values):
    """A gradient that replays a sub-block needs its inputs' values from when the op ran; one
    overwritten in place since (a Stale placeholder) would give a wrong gradient."""
    stale = next((v for v in values if isinstance(v, Stale)), None)
    if stale is not None:
        raise GradientError(stale.message)


def _tuple(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


_DOC_COND = (
    "Run true_block or false_block on the inputs after the predicate (a bool with one "
    "element); the outputs are the chosen block's results (nbflow.cond)."
)
_DOC_WHILE = (
    "Run body_block on the loop vars while cond_block returns true (nbflow.while_loop). The "
    "body's last `stacked` results are per-iteration values, output stacked; with history, "
    "also output the iteration count and the loop vars of every iteration (for gradients)."
)

COND = CondOp(
    name="cond",
    inputs=("pred", "*inputs"),
    outputs=("*out",),
    spec=_no_spec,
    kernels={"cpu": _no_kernel, "cuda": None},
    dtypes=dt.ALL,
    grad=_cond_grad,
    attrs={"true_block": Attr("block"), "false_block": Attr("block")},
    doc=_DOC_COND,
)

_WHILE_ATTRS = {
    "cond_block": Attr("block"),
    "body_block": Attr("block"),
    "max_iterations": Attr("int", None),
    "history": Attr("bool", False),
    "stacked": Attr("int", 0),
}
WHILE = WhileOp(
    name="while",
    inputs=("*inputs",),
    outputs=("*out",),
    spec=_no_spec,
    kernels={"cpu": _no_kernel, "cuda": None},
    dtypes=dt.ALL,
    grad=_while_grad,
    attrs=_WHILE_ATTRS,
    doc=_DOC_WHILE,
)
WHILE_GRAD = WhileOp(
    name="while_grad",
    inputs=("*inputs",),
    outputs=("*out",),
    spec=_no_spec,
    kernels={"cpu": _no_kernel, "cuda": None},
    dtypes=dt.ALL,
    grad=_while_grad,
    attrs=_WHILE_ATTRS,
    doc="The backward loop of a while op: the same semantics as `while`, named apart so a "
    "printout shows which loop is the gradient.",
)
