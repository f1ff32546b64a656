"""A Program drawn as a picture: Graphviz DOT text (`Program.to_dot`), and SVG through the
`graphviz` package and its `dot` program (`Program.to_svg`, `_repr_svg_` for Jupyter).

What the DOT text shows:

- each op is a box (`op<block>_<index>`), labelled with its name and attrs; an op writing in
  place is red and bold, its name marked `!` as the printer marks the write;
- each value is an edge from the op that wrote it last (or from the node of a value no op
  of the block makes) to every op reading it, labelled with its spec `%t0: f32[-1,3]` (-1: a
  dim known when the program runs); an in-place write's edge is red and bold and its var
  marked `!`;
- values no op of the block makes are nodes of their own: a fed data var an ellipse, a
  persistable (a parameter, optimizer state, a captured tensor) a filled cylinder, a block
  parameter of a sub-block a dashed ellipse; an update of a persistable draws its write as an
  edge back into the persistable's node;
- values made and never read again in block 0 end at an `out` node (a double ellipse for a
  fetch `target`), a sub-block's results at its `return` node;
- the backward part of block 0 (from `backward_start`) is `cluster_backward`; each sub-block
  of a control flow op is `cluster_block<k>` (nested in its parent's), which the op points to
  by a dashed edge labelled with the attr (`true_block`, `body_block`, ...);
- with a `target` (a var, a var's name, an op, or a list of them), the ops a run fetching it
  would prune (executor.needed_ops, with the updates of a fetched loss) and their edges are
  grey and dashed, their sub-blocks too.

Rendering needs the `graphviz` Python package and Graphviz's `dot` program
(`pip install "nbflow[draw]"`, and the OS's graphviz); without either, `to_svg` raises
GraphvizNotFoundError naming what is missing (`_repr_svg_` returns None, so Jupyter shows
the text form).
"""

from __future__ import annotations

from ..core import Node
from ..core.dtypes import SHORT
from ..core.errors import UnsupportedError
from .printer import format_attr

GREY = "gray60"
WRITE = "red3"


class GraphvizNotFoundError(UnsupportedError):
    """Drawing needs what is not installed: the `graphviz` Python package or Graphviz's `dot`
    program (the message names which)."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(**attrs) -> str:
    items = [f"{k}={_quote(str(v))}" for k, v in attrs.items() if v is not None]
    return f" [{', '.join(items)}]" if items else ""


def _spec(v, written: bool = False) -> str:
    dims = ",".join(map(str, v.shape))
    return f"%{v.name}{'!' if written else ''}: {SHORT.get(v.dtype, v.dtype)}[{dims}]"


def _targets(program, target) -> list:
    from .executor import own_target

    if target is None:
        return []
    targets = target if isinstance(target, (list, tuple)) else [target]
    block = program.global_block()
    return [own_target(block, t) for t in targets]


def _kept(program, targets) -> set | None:
    """The ids of the ops a run fetching `targets` runs, in every block (None: no target)."""
    from .executor import needed_ops, with_updates

    if not targets:
        return None
    block = program.global_block()
    kept = set()

    def keep(ops):
        for node in ops:
            kept.add(id(node))
            for name, attr in node.op.attrs.items():
                if attr.kind == "block":
                    sub = program.blocks[node.attrs[name]]
                    keep(needed_ops(sub, sub.outputs))

    keep(needed_ops(block, with_updates(block, targets)))
    return kept


class _Drawing:
    """Nodes go into the body of their block's cluster (block 0's, the backward part's, or a
    sub-block's), edges into the top graph: a node named in a cluster's edge would join it."""

    def __init__(self, program, target):
        self.program = program
        self.targets = _targets(program, target)
        self.kept = _kept(program, self.targets)
        self.bodies: dict = {0: []}  # block index (or "backward") -> its node lines
        self.edges: list[str] = []
        self.writer: dict[int, str] = {}  # id(var) -> the node that holds its value now
        self.sources: dict[int, str] = {}  # id(var) -> its own node (a value no op makes)
        self.greyed: set[str] = set()  # op nodes pruned for the target
        self.inplace: set = set()  # (op node, id(var)) of each in-place write

    def source(self, v) -> str:
        """The node of a value no op of its block makes (made on first use, in its block)."""
        name = self.sources.get(id(v))
        if name is not None:
            return name
        name = self.sources[id(v)] = f"var{v.block.idx}_{len(self.sources)}_{_ident(v.name)}"
        spec = _spec(v)
        if v.persistable:
            attrs = _attrs(
                label=f"{spec}\npersistable",
                shape="cylinder",
                style="filled",
                fillcolor="lightgoldenrod1",
                kind="persistable",
            )
        elif v.is_data:
            attrs = _attrs(label=f"{spec}\ndata", shape="ellipse", kind="data")
        elif in_block_inputs(v):
            attrs = _attrs(
                label=f"{spec}\nparameter", shape="ellipse", style="dashed", kind="param"
            )
        else:
            attrs = _attrs(label=spec, shape="ellipse", style="dotted", kind="input")
        self.bodies[v.block.idx].append(f"{name}{attrs};")
        return name

    def value_node(self, v) -> str:
        held = self.writer.get(id(v))
        return held if held is not None else self.source(v)

    def edge(self, tail: str, head: str, v):
        """The value v from the node holding it to one reading it (red and marked `!` out of
        the op that wrote it in place)."""
        pruned = tail in self.greyed or head in self.greyed
        written = (tail, id(v)) in self.inplace
        attrs = {"label": _spec(v, written)}
        if written:
            attrs.update(color=WRITE, fontcolor=WRITE, style="bold", inplace="true")
        if pruned:
            attrs.update(color=GREY, fontcolor=GREY, style="dashed", pruned="true")
        self.edges.append(f"{tail} -> {head}{_attrs(**attrs)};")

    def block(self, block, pruned: bool):
        """Draw a block's ops into its body (and block 0's backward part into its own)."""
        read_at: dict[int, int] = {}  # id(var) -> the last op index reading it
        for i, node in enumerate(block.ops):
            for v in node.inputs:
                read_at[id(v)] = i
        start = self.program.backward_start if block.idx == 0 else None
        for i, node in enumerate(block.ops):
            body = "backward" if start is not None and i >= start else block.idx
            self.op(block, i, node, self.bodies.setdefault(body, []), pruned, read_at)
        if block.idx == 0:
            self.ends(block, read_at)
        else:
            ret = f"return{block.idx}"
            self.bodies[block.idx].append(
                f"{ret}{_attrs(label='return', shape='plain', kind='return')};"
            )
            for v in block.outputs:
                self.edge(self.value_node(v), ret, v)

    def op(self, block, i, node: Node, body: list, pruned: bool, read_at):
        name = f"op{block.idx}_{i}"
        greyed = pruned or (self.kept is not None and id(node) not in self.kept)
        if greyed:
            self.greyed.add(name)
        writes = set(node.op.inplace)
        attrs_text = ", ".join(
            f"{k}={format_attr(v)}" for k, v in node.attrs.items() if v is not None
        )
        label = node.op.name + ("!" if writes else "") + (f"\n{attrs_text}" if attrs_text else "")
        attrs = {"label": label, "shape": "box", "kind": "op", "op": node.op.name}
        if writes:
            attrs.update(color=WRITE, style="bold", inplace="true")
        if getattr(node, "grad_of", None) is not None:
            attrs["grad"] = "true"
        if greyed:
            attrs.update(color=GREY, fontcolor=GREY, style="dashed", pruned="true")
        body.append(f"{name}{_attrs(**attrs)};")
        for v in node.inputs:
            self.edge(self.value_node(v), name, v)
        for attr_name, attr in node.op.attrs.items():
            if attr.kind == "block":
                self.sub_block(name, attr_name, node.attrs[attr_name], body, greyed)
        for k, v in enumerate(node.outputs):
            self.writer[id(v)] = name
            if k in writes:
                self.inplace.add((name, id(v)))
                if v.persistable and read_at.get(id(v), -1) <= i:
                    # an update of a parameter: the write goes back into its node
                    self.edge(name, self.source(v), v)

    def sub_block(self, op_name: str, attr_name: str, idx: int, body: list, pruned: bool):
        block = self.program.blocks[idx]
        inner = self.bodies[idx] = []
        entry = f"block{idx}"
        inner.append(f"{entry}{_attrs(label=f'block {idx}', shape='plain', kind='entry')};")
        for v in block.inputs:
            self.source(v)
        self.block(block, pruned)
        cluster = f"cluster_block{idx}"
        body.append(f"subgraph {cluster} {{")
        body.append(f'  label="block {idx}"; style="rounded"; color="steelblue";')
        body.extend("  " + line for line in inner)
        body.append("}")
        style = {"color": GREY, "fontcolor": GREY, "pruned": "true"} if pruned else {}
        self.edges.append(
            f"{op_name} -> {entry}"
            + _attrs(label=attr_name, style="dashed", lhead=cluster, kind="block", **style)
            + ";"
        )

    def ends(self, block, read_at):
        """An `out` node for each value of block 0 not read after its last write (a fetch
        target: a double ellipse, drawn whether read or not); updates of persistables end in
        the persistable's node instead."""
        targets = {id(t) for t in self.targets}
        last_write, vars_by_id = {}, {}
        for i, node in enumerate(block.ops):
            for v in node.outputs:
                last_write[id(v)], vars_by_id[id(v)] = i, v
        for key, i in last_write.items():
            v, fetched = vars_by_id[key], key in targets
            if not fetched and (v.persistable or read_at.get(key, -1) > i):
                continue
            node = f"out_{_ident(v.name)}"
            attrs = _attrs(
                label=f"%{v.name}" + ("\nfetch" if fetched else ""),
                shape="doublecircle" if fetched else "ellipse",
                kind="target" if fetched else "out",
            )
            self.bodies[0].append(f"{node}{attrs};")
            self.edge(self.writer[key], node, v)

    def text(self) -> str:
        self.block(self.program.global_block(), False)
        lines = [
            "digraph program {",
            "  compound=true;",
            '  node [fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        lines += ["  " + line for line in self.bodies[0]]
        if "backward" in self.bodies:
            lines.append("  subgraph cluster_backward {")
            lines.append('    label="backward"; style="rounded,dashed"; color="gray40";')
            lines += ["    " + line for line in self.bodies["backward"]]
            lines.append("  }")
        lines += ["  " + line for line in self.edges]
        lines.append("}")
        return "\n".join(lines) + "\n"


def in_block_inputs(v) -> bool:
    return v.block.idx != 0 and any(u is v for u in v.block.inputs)


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def to_dot(program, target=None) -> str:
    """The Program as Graphviz DOT text (module doc); `target`: a fetch target (var, name, op
    or a list) whose pruned ops are drawn grey."""
    return _Drawing(program, target).text()


def to_svg(program, target=None) -> str:
    """The Program drawn as SVG text by Graphviz's `dot` (through the `graphviz` package);
    GraphvizNotFoundError names the package or the program when one is missing."""
    try:
        import graphviz
    except ImportError:
        raise GraphvizNotFoundError(
            "drawing a Program needs the 'graphviz' Python package: pip install graphviz "
            '(or "nbflow[draw]"), and Graphviz\'s dot program; Program.to_dot() gives the '
            "DOT text without either"
        ) from None
    try:
        return graphviz.Source(to_dot(program, target)).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise GraphvizNotFoundError(
            "drawing a Program needs Graphviz's 'dot' program on the PATH (apt install "
            "graphviz, brew install graphviz or conda install graphviz); Program.to_dot() "
            "gives the DOT text without it"
        ) from None


def repr_svg(program) -> str | None:
    """For Jupyter: the SVG, or None when graphviz or dot is missing (the text form shows)."""
    try:
        return to_svg(program)
    except GraphvizNotFoundError:
        return None
