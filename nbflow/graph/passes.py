"""Program checks and reports: verify() and explain() (prune lives with the executor)."""

from __future__ import annotations

from ..core import Spec
from ..core.dtypes import SHORT
from ..core.errors import NbflowError, ProgramError
from ..runtime import device as devices
from . import fusion, plan_report
from .executor import compatible, needed_ops, own_target, updates, with_updates
from .printer import format_attr, format_op
from .program import Program, Var
from .rewrite import rewrite


def verify(program: Program) -> None:
    """Re-run every op's shape rule on its input vars and check the output vars agree; check
    that every var an op reads is defined by then (_check_defined), and that no op reads a
    var that an in-place write overwrote after the op was built (the op would see the new
    value instead of the one it was built for). Raises ProgramError."""
    for block in program.blocks:
        # by version counter: a view shares its base's; an in-place write's node says the
        # version it leaves (a write-back through a view leaves the one the write made)
        versions: dict[int, int] = {}
        for node in block.ops:
            where = f"{node.op.name} (created at {node.location})"
            _check_local(block, node, where)
            _check_shapes(block, node, where)
            in_versions = node.versions[0] if node.versions else [0] * len(node.inputs)
            for v, built_for in zip(node.inputs, in_versions):
                now = versions.get(id(v._version), 0)
                if now != built_for:
                    raise ProgramError(
                        f"{where} reads %{v.name} after an in-place write overwrote the value "
                        f"it was built for (version {built_for}, now {now})"
                    )
            for i, j in node.op.inplace.items():
                key = id(node.inputs[j]._version)
                versions[key] = node.versions[1][i] if node.versions else versions.get(key, 0) + 1
        _check_defined(block)


def _check_local(block, node, where: str):
    """A sub-block's ops write only its own vars: running it cannot change another block's
    values (they may read enclosing vars; control flow passes them as block inputs)."""
    if block.idx == 0:
        return
    for v in node.outputs:
        if v.block is not block:
            raise ProgramError(
                f"{where} in block {block.idx} uses %{v.name} of block {v.block.idx}"
            )


def _check_defined(block):
    """Every var an op reads has a value by then: fed (data), kept in the scope
    (persistable), an enclosing block's, a block input, or written by an op before it."""
    defined = {id(v) for v in block.inputs}
    for node in block.ops:
        for v in node.inputs:
            if not (id(v) in defined or v.is_data or v.persistable or v.block is not block):
                raise ProgramError(
                    f"{node.op.name} (created at {node.location}) reads %{v.name}, which no "
                    "op before it computes (and which is neither fed nor persistable)"
                )
        defined.update(id(v) for v in node.outputs)


def _check_shapes(block, node, where: str):
    check = getattr(node.op, "check", None)  # a control flow op: its sub-blocks must fit
    if check is not None:
        try:
            check(block, node.inputs, node.outputs, node.attrs)
        except NbflowError as e:
            raise ProgramError(f"{where}: {e}") from None
        return
    specs = [Spec(v.shape, v.dtype) for v in node.inputs]
    try:
        out_specs = node.op.infer(specs, dict(node.attrs))
    except NbflowError as e:
        raise ProgramError(f"{where}: {e}") from None
    if len(out_specs) != len(node.outputs):
        raise ProgramError(f"{where}: {len(node.outputs)} outputs, the op makes {len(out_specs)}")
    for v, s in zip(node.outputs, out_specs):
        if (
            v.dtype != s.dtype
            or not compatible(s.shape, v.shape)
            and not compatible(v.shape, s.shape)
        ):
            raise ProgramError(f"{where}: %{v.name} is declared {v.spec}, the shape rule says {s}")


def explain(
    program: Program,
    fetch_list,
    device: str = "cpu",
    fuse: bool = True,
    reuse_memory: bool = True,
    feed_shapes: dict | None = None,
    memory: bool = True,
    kernels: bool = True,
    structured: bool = False,
):
    """For each op: whether it survives pruning for `fetch_list`, and why: the first target
    that needs it, or for an optimizer's update the fetched loss it updates for ("update of
    %loss", executor.updates), the kernel key (op, device, dtype) it will run with, and, with
    `fuse` on the CPU, the fused kernel it runs in (`fused #k`, as the Executor's fusion pass
    groups them) or the op a rewrite folded it into (`folded into sgd_matmul_update_`:
    graph/rewrite.py).

    Then (graph/plan_report.py) with `memory`, the memory plan of the memory-reuse pass
    (`reuse_memory`, on the CPU): each value's buffer and arena offset or the value it
    shares, the op after which it is freed, and the peak bytes with and without the pass
    (-1 dims from `feed_shapes`, {data var name: shape}, else taken as 1); with `kernels`,
    each kernel's compile status (compiled in this process, loaded from numba's disk cache,
    on the disk cache, or to compile) with its cache folder. Returns the text, or with
    `structured` a plan_report.Explanation (its fields as records, `.text` the text)."""
    block = program.global_block()
    targets = [own_target(block, t) for t in fetch_list]
    needed_by = {}  # id(op) -> why it runs
    for t in targets:
        name = f"%{t.name}" if isinstance(t, Var) else t.op.name
        for node in needed_ops(block, [t]):
            needed_by.setdefault(id(node), f"for {name}")
    for t in targets:  # a fetched loss's updates (the Executor runs them: executor.updates)
        for update in updates(block, t) if isinstance(t, Var) else ():
            why = f"update of %{t.name}"
            needed_by.setdefault(id(update), why)
            for node in needed_ops(block, [update]):
                needed_by.setdefault(id(node), f"for {why}")
    targets = with_updates(block, targets)
    group_of = {}
    on_cpu = devices.parse(device) == devices.CPU
    needed = needed_ops(block, targets)
    steps = needed
    if fuse and on_cpu:  # as the Executor plans (on the CPU only: a GPU executor runs the
        # plain plan): the rewrites, then fusion
        rewritten = rewrite(needed, targets, reuse_memory)
        group_of = _folds(needed, rewritten)
        steps = fusion.fuse(rewritten, targets)
        groups = [s for s in steps if isinstance(s, fusion.FusedGroup)]
        for k, group in enumerate(groups):
            for node in group.nodes:
                group_of[id(node)] = f"   fused #{k} ({'+'.join(group.op_names)})"
    lines, records = [], []
    for node in block.ops:
        why = needed_by.get(id(node))
        status = "pruned" if why is None else f"runs ({why})"
        note = group_of.get(id(node), "")
        lines.append(f"{status:<24} {_explain_op(node, device)}{note}")
        records.append(
            {
                "op": node.op.name,
                "outputs": [v.name for v in node.outputs],
                "status": "pruned" if why is None else "runs",
                "why": why,
                "kernel": None
                if hasattr(node.op, "run_blocks")
                else (node.op.name, device, _kernel_dtype(node)),
                "note": note.strip() or None,
            }
        )
        if why is not None:
            lines += _explain_blocks(program, node, device, "  ")
    plan = None
    if memory and on_cpu and reuse_memory:
        feeds = [v.name for v in block.vars.values() if v.is_data]
        plan = plan_report.memory_plan(steps, feeds, targets, feed_shapes)
        lines += plan.lines()
    statuses, fused = [], []
    if kernels:
        seen = set()
        for step in steps:
            if isinstance(step, fusion.FusedGroup):
                fused.append("+".join(step.op_names))
                continue
            if hasattr(step.op, "run_blocks"):
                continue
            key = (step.op.name, _kernel_dtype(step))
            if key not in seen:
                seen.add(key)
                statuses.append(plan_report.kernel_status(step, device, _key_dtype(step)))
        lines.append("kernels:")
        lines += [k.line() for k in statuses]
        lines += [f"  fused({f}): generated for the plan at its first run" for f in fused]
    text = "\n".join(lines)
    if structured:
        return plan_report.Explanation(records, plan, statuses, fused, text)
    return text


def _folds(ops, rewritten) -> dict:
    """id(op) -> a note for each op the rewrites (rewrite.py) replaced: the new op that
    computes its output, or else the one that computes what its output went into (the
    first reader's output, followed until a new op computes it)."""
    before, kept = {id(n) for n in ops}, {id(n) for n in rewritten}
    made_by = {id(v): n for n in rewritten if id(n) not in before for v in n.outputs}
    first_reader = {}
    for node in ops:
        for v in node.inputs:
            first_reader.setdefault(id(v), node)
    notes = {}
    for node in ops:
        if id(node) in kept:
            continue
        by, step = None, node
        for _ in range(len(ops)):  # (a chain of dropped ops ends: the plan is acyclic)
            by = next((made_by[id(v)] for v in step.outputs if id(v) in made_by), None)
            step = next((first_reader[id(v)] for v in step.outputs if id(v) in first_reader), None)
            if by is not None or step is None or id(step) in kept:
                break
        notes[id(node)] = _fold_note(node, by)
    return notes


def _fold_note(node, by) -> str:
    if by is None:
        return "   folded away (rewrite.py)"
    if by.op is not node.op:
        return f"   folded into {by.op.name}"
    ins = {id(v) for v in node.inputs}
    changed = [v for v in by.inputs if id(v) not in ins]
    if changed:  # the same op, reading another value
        return f"   rewritten: reads %{changed[0].name}"
    attrs = [f"{k}={format_attr(v)}" for k, v in by.attrs.items() if node.attrs.get(k) != v]
    return f"   rewritten: computes %{by.outputs[0].name} [{', '.join(attrs)}]"


def _explain_op(node, device: str) -> str:
    if hasattr(node.op, "run_blocks"):  # control flow: the executor runs its sub-blocks
        return f"{format_op(node)}   runs sub-blocks"
    return f"{format_op(node)}   kernel=({node.op.name}, {device}, {_kernel_dtype(node)})"


def _explain_blocks(program, node, device: str, indent: str) -> list[str]:
    """The ops of a control flow op's sub-blocks that run (those its results need)."""
    lines = []
    for name in (n for n, attr in node.op.attrs.items() if attr.kind == "block"):
        block = program.blocks[node.attrs[name]]
        lines.append(f"{indent}{name} {block.idx}:")
        for inner in needed_ops(block, block.outputs):
            lines.append(f"{indent}  {_explain_op(inner, device)}")
            lines += _explain_blocks(program, inner, device, indent + "    ")
    return lines


def _key_dtype(node):
    specs = [Spec(v.shape, v.dtype) for v in node.inputs]
    key = node.op.key_dtype(specs) if specs else None
    return node.outputs[0].dtype if key is None else key


def _kernel_dtype(node) -> str:
    key = _key_dtype(node)
    return SHORT.get(key, str(key))
