"""Programs drawn as pictures (nbflow/graph/draw.py): the DOT text of small programs parsed
back by pydot, with the node and edge counts and attributes the programs call for, and the
typed error when Graphviz is missing."""

import shutil
import sys

import numpy as np
import pytest

import nbflow as nb
from nbflow.graph import GraphvizNotFoundError

pydot = pytest.importorskip("pydot")
# (pydot's parser calls pyparsing's old names)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pydot")


def _parse(program, target=None):
    (graph,) = pydot.graph_from_dot_data(program.to_dot(target))
    return graph


def _unquote(value):
    if value is None:
        return None
    return value[1:-1].replace("\\n", "\n").replace('\\"', '"') if value[:1] == '"' else value


def _nodes(graph, cluster=None) -> dict:
    """name -> attributes (unquoted) of the nodes in `graph` and its subgraphs (only in the
    subgraph named `cluster` when given)."""
    found = {}

    def walk(g, inside):
        for n in g.get_nodes():
            if n.get_name() not in ("node", "edge", "graph") and inside:
                found[n.get_name()] = {k: _unquote(v) for k, v in n.get_attributes().items()}
        for sub in g.get_subgraphs():
            walk(sub, inside or sub.get_name() == cluster)

    walk(graph, cluster is None)
    return found


def _edges(graph) -> list:
    return [
        (
            e.get_source(),
            e.get_destination(),
            {k: _unquote(v) for k, v in e.get_attributes().items()},
        )
        for e in graph.get_edges()
    ]


def _plain():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        w = nb.static.create_parameter("w", [4, 3])
        loss = nb.mean(nb.relu(x @ w))
    return main, loss


def test_plain_program():
    main, loss = _plain()
    graph = _parse(main)
    nodes, edges = _nodes(graph), _edges(graph)
    # 3 ops, the fed x, the parameter w, the value nothing reads (the mean)
    assert len(nodes) == 6 and len(edges) == 5
    ops = {n: a for n, a in nodes.items() if a["kind"] == "op"}
    assert sorted(a["op"] for a in ops.values()) == ["matmul", "mean", "relu"]
    assert all(a["shape"] == "box" for a in ops.values())
    (x,) = [a for a in nodes.values() if a["kind"] == "data"]
    (w,) = [a for a in nodes.values() if a["kind"] == "persistable"]
    assert x["shape"] == "ellipse" and x["label"].startswith("%x: f32[-1,4]")
    assert w["shape"] == "cylinder" and w["style"] == "filled"
    labels = sorted(a["label"] for _, _, a in edges)
    assert labels == sorted(
        [
            "%x: f32[-1,4]",
            "%w: f32[4,3]",
            "%t0: f32[-1,3]",
            "%t1: f32[-1,3]",
            f"%{loss.name}: f32[]",
        ]
    )
    # every op input is one edge into that op's box, labelled with the input's spec
    by_op = {a["op"]: n for n, a in ops.items()}
    into = {n: sorted(a["label"] for _, h, a in edges if h == n) for n in ops}
    for node in main.global_block().ops:
        assert into[by_op[node.op.name]] == sorted(f"%{v.name}: {_short(v)}" for v in node.inputs)
    assert not any("pruned" in a for a in list(nodes.values()) + [a for *_, a in edges])


def _short(v):
    return f"{nb.dtypes.SHORT[v.dtype]}[{','.join(map(str, v.shape))}]"


def test_backward_and_updates():
    """SGD's minimize: the backward part is a cluster holding exactly the ops from
    backward_start; each parameter's update writes in place back into its node."""
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [4, 8])
        w2 = nb.static.create_parameter("w2", [8, 3])
        loss = nb.cross_entropy(nb.relu(x @ w1) @ w2, y)
        nb.optim.SGD(lr=0.1).minimize(loss)
    ops = main.global_block().ops
    graph = _parse(main)
    nodes, edges = _nodes(graph), _edges(graph)
    backward = _nodes(graph, "cluster_backward")
    assert len(backward) == len(ops) - main.backward_start
    assert sorted(a["op"] for a in backward.values()) == sorted(
        n.op.name for n in ops[main.backward_start :]
    )
    forward = {n for n, a in nodes.items() if a["kind"] == "op"} - set(backward)
    assert len(forward) == main.backward_start
    updates = [n for n in ops if n.op.inplace and n.outputs[0].persistable]
    assert len(updates) == 2  # one per parameter
    params = {a["label"].split(":")[0]: n for n, a in nodes.items() if a["kind"] == "persistable"}
    assert set(params) == {"%w1", "%w2"}
    written = [(t, h, a) for t, h, a in edges if a.get("inplace") == "true"]
    # sgd_update_ writes the parameter (back into its node) and its gradient (read no more)
    assert sorted(h for _, h, _ in written if h in params.values()) == sorted(params.values())
    assert sorted(nodes[h]["kind"] for _, h, _ in written) == ["out", "out"] + ["persistable"] * 2
    for tail, _, attrs in written:
        assert nodes[tail]["inplace"] == "true"
        assert nodes[tail]["label"].startswith("sgd_update_!\n")
        assert attrs["color"] == "red3" and attrs["label"].split(":")[0].endswith("!")
    # all edges: one per op input, one per update's write, one into the out node of each
    # value not read again (the loss is read by the backward's seed: none is left but grads'
    # updates, which end in the parameters)
    outs = [n for n, a in nodes.items() if a["kind"] == "out"]
    assert len(edges) == sum(len(n.inputs) for n in ops) + len(updates) + len(outs)


def test_control_flow_sub_blocks_are_clusters():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        i = nb.static.data("i", [], "int64")
        y = nb.cond(nb.sum(x) > 0, lambda a: a * 2.0, lambda a: a - 1.0, [x])
        _, z = nb.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [i, y])
        out = nb.sum(z)
    graph = _parse(main, out)
    nodes, edges = _nodes(graph), _edges(graph)
    assert len(main.blocks) == 5
    clusters = {s.get_name() for s in graph.get_subgraphs()}
    assert clusters == {f"cluster_block{k}" for k in range(1, 5)}
    for block in main.blocks[1:]:
        inside = _nodes(graph, f"cluster_block{block.idx}")
        kinds = sorted(a["kind"] for a in inside.values())
        expected = ["entry", "return"] + ["op"] * len(block.ops) + ["param"] * len(block.inputs)
        assert kinds == sorted(expected), block.idx
        returned = [a for t, h, a in edges if h == f"return{block.idx}"]
        assert len(returned) == len(block.outputs)
    # each control flow op points to its sub-blocks' clusters, by the attr's name
    links = sorted((nodes[t]["op"], a["label"], a["lhead"]) for t, _, a in edges if a.get("lhead"))
    assert links == [
        ("cond", "false_block", "cluster_block2"),
        ("cond", "true_block", "cluster_block1"),
        ("while", "body_block", "cluster_block4"),
        ("while", "cond_block", "cluster_block3"),
    ]
    (target,) = [a for a in nodes.values() if a["kind"] == "target"]
    assert target["label"] == f"%{out.name}\nfetch" and target["shape"] == "doublecircle"
    n_ops = sum(len(b.ops) for b in main.blocks)
    assert sum(a["kind"] == "op" for a in nodes.values()) == n_ops
    assert not any(a.get("pruned") for a in nodes.values())  # the target needs every op


def test_pruned_ops_are_grey():
    """Fetching the loss prunes the side branch (exp and the cast's copy) and the branch of
    a cond it alone feeds: those ops, their sub-blocks and their edges are grey."""
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        w = nb.static.create_parameter("w", [4, 3])
        h = x @ w
        side = nb.exp(h)
        nb.cond(nb.sum(side) > 0, lambda a: a * 2.0, lambda a: a, [side])
        loss = nb.mean(nb.relu(h))
    graph = _parse(main, loss)
    nodes, edges = _nodes(graph), _edges(graph)
    grey = sorted(a["op"] for a in nodes.values() if a.get("pruned") == "true")
    assert grey == sorted(["exp", "sum", "full", "gt", "cond", "full", "mul"])
    kept = sorted(a["op"] for a in nodes.values() if a["kind"] == "op" and "pruned" not in a)
    assert kept == ["matmul", "mean", "relu"]
    assert kept == sorted(n.op.name for n in main.prune([loss]).global_block().ops)
    for tail, head, attrs in edges:
        touches = nodes[tail].get("pruned") or nodes[head].get("pruned")
        assert (attrs.get("pruned") == "true") == bool(touches), (tail, head)
        if touches:
            assert attrs["color"] == "gray60" and "dashed" in attrs["style"]
    # no target: nothing grey
    assert not any(a.get("pruned") for a in _nodes(_parse(main)).values())
    # a target by name works as the var
    assert _parse(main, loss.name).to_string() == graph.to_string()


def test_inplace_write_on_a_value():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [2, 3])
        h = nb.exp(x)
        h.add_(1.0)
        nb.sum(h)
    nodes, edges = _nodes(_parse(main)), _edges(_parse(main))
    (op,) = [n for n, a in nodes.items() if a.get("op") == "add_"]
    assert nodes[op]["inplace"] == "true" and nodes[op]["label"] == "add_!"
    (out,) = [a for t, _, a in edges if t == op]
    assert out["label"] == f"%{h.name}!: f32[2,3]" and out["inplace"] == "true"


def test_svg_needs_graphviz(monkeypatch):
    main, _ = _plain()
    if shutil.which("dot") is None:
        with pytest.raises(GraphvizNotFoundError, match="'dot' program"):
            main.to_svg()
        assert main._repr_svg_() is None  # Jupyter falls back to the text
    else:
        svg = main.to_svg()
        assert "<svg" in svg and "matmul" in svg
        assert main._repr_svg_() == svg
    monkeypatch.setitem(sys.modules, "graphviz", None)  # the package not installed
    with pytest.raises(GraphvizNotFoundError, match="'graphviz' Python package") as e:
        main.to_svg()
    assert isinstance(e.value, nb.NbflowError)
    assert main._repr_svg_() is None


def test_program_still_runs_after_drawing():
    main, loss = _plain()
    main.to_dot(loss)
    scope = nb.Scope()
    scope["w"] = nb.tensor(np.ones((4, 3), np.float32))
    (value,) = nb.Executor().run(main, {"x": np.ones((2, 4), np.float32)}, [loss], scope)
    assert value == pytest.approx(4.0)
