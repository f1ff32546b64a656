"""Reverse mode: one backward driver for the eager tape and for graphs (append_backward).

The driver, not the gradient rules, does the bookkeeping: it sums a gradient back to its input's
broadcast shape, casts it to the input's dtype, accumulates fan-out (`add` for two
contributions, which fuses with its neighbours; the variadic `add_n` for more), and skips None.
Rules are written with nbflow ops, so with `create_graph=True` the backward pass is itself
recorded and can be differentiated again.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..argcheck import shown
from ..core import STATE, Node, hooks, set_grad_enabled
from ..core.errors import ArgumentError, GradientError, ShapeError
from ..core.views import refresh_if_stale
from ..eager.tensor import Stale, Tensor, free_saved, grad_edge, tensor


def toposort(edges) -> list[Node]:
    """Nodes reachable from the root edges, each after every node that consumes its outputs."""
    order, seen = [], set()
    stack = [(e[0], False) for e in edges if type(e) is tuple]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for e in node.edges:
            if type(e) is tuple and id(e[0]) not in seen:
                stack.append((e[0], False))
    order.reverse()
    return order


def backprop(roots, seeds, create_graph: bool, skip=frozenset(), free=False) -> tuple[dict, dict]:
    """Propagate `seeds` from `roots` through the nodes that lead to them.

    Works for both modes: the current trace runs the gradient rules (eager: computes them;
    graph: appends them) and supplies each node's saved values. Contributions to one value
    are summed once (_total). `skip` holds edge keys (see edge_key) that get no
    gradient; `free` (eager tape nodes) frees each node's saved values once its rule ran.
    Returns (leaf id -> (leaf, grad), node id -> gradient per output)."""
    node_grads: dict[int, list] = {}
    leaf_grads: dict[int, tuple] = {}

    def accumulate(edge, g):
        if edge_key(edge) in skip:
            return
        if type(edge) is tuple:
            node, i = edge
            node_grads.setdefault(id(node), [[] for _ in node.outputs])[i].append(g)
        else:
            leaf_grads.setdefault(id(edge), (edge, []))[1].append(g)

    for r in roots:
        refresh_if_stale(r)  # a view whose base was written since
    root_edges = [grad_edge(r) for r in roots]
    hooked = hooks.any_hooks()  # tensor hooks (register_hook, retain_grad): rare
    with set_grad_enabled(create_graph):
        for e, s in zip(root_edges, seeds):
            accumulate(e, s)
        for node in toposort(root_edges):
            if id(node) not in node_grads:
                continue
            grads = node_grads[id(node)] = [_total(gs) for gs in node_grads[id(node)]]
            if hooked:
                hooks.run_node_hooks(node, grads, create_graph)
            in_grads = _apply_rule(node, grads)
            if free:
                free_saved(node)
            for t, edge, g in zip(node.inputs, node.edges, in_grads):
                if g is None or edge is None:
                    continue
                if isinstance(g, Stale):  # this gradient needed an overwritten or freed value
                    raise GradientError(g.message)
                accumulate(edge, fit_gradient(g, t))
        leaves = {k: (leaf, _total(gs)) for k, (leaf, gs) in leaf_grads.items()}
        if hooked:
            leaves = {
                k: (leaf, hooks.run_leaf_hooks(leaf, g, create_graph))
                for k, (leaf, g) in leaves.items()
            }
    return leaves, node_grads


def _apply_rule(node, grads):
    """The node's gradient rule on its saved values: one gradient (or None) per input."""
    outs, ins = STATE.trace.saved(node)
    # the ops the rule runs (or appends) belong to this node's gradient: errors and the
    # NaN/Inf check name it
    outer, STATE.differentiating = STATE.differentiating, node
    try:
        if len(outs) == 1:
            in_grads = node.op.grad(grads[0], outs[0], *ins, **node.attrs)
        else:  # outputs nobody used get zeros (unless the op or a Function takes None)
            wanted = getattr(node.op, "materialize_grads", True)  # (duck-typed ops: no field)
            if wanted and node.attrs.get("materialize_grads", True):
                grads = [
                    g if g is not None or isinstance(o, Stale) else ops.zeros_like(o)
                    for g, o in zip(grads, outs)
                ]
            in_grads = node.op.grad(tuple(grads), tuple(outs), *ins, **node.attrs)
    finally:
        STATE.differentiating = outer
    if len(in_grads) != len(ins):
        raise GradientError(
            f"{node.op.name}: gradient rule returned {len(in_grads)} values for {len(ins)} inputs"
        )
    return in_grads


def _total(contributions):
    """The sum of a value's gradient contributions (None when there are none)."""
    if not contributions:
        return None
    if len(contributions) == 1:
        return contributions[0]
    if len(contributions) == 2:  # an elementwise add, which the fusion pass can join
        return ops.add(*contributions)
    return ops.add_n(*contributions)


def edge_key(edge):
    """A hashable key for where a gradient goes: (node id, output index) or the leaf's id."""
    return (id(edge[0]), edge[1]) if type(edge) is tuple else id(edge)


def fit_gradient(g, t):
    """Sum a gradient back to its input's (broadcast) shape and cast it to its dtype (a real
    input of a complex result takes the real part, as in PyTorch)."""
    if g.shape != t.shape:
        g = ops.sum_to_like(g, t)
    if g.dtype != t.dtype:
        if g.dtype.kind == "c" and t.dtype.kind != "c":  # a real input's: the real part
            g = ops.real(g)
        g = g if g.dtype == t.dtype else ops.cast(g, dtype=t.dtype)
    return g


def _seeds(outputs, grad_outputs):
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if not isinstance(grad_outputs, (list, tuple)):  # (len() of a number: a TypeError)
        raise ArgumentError(
            "grad_outputs must be a tensor or a sequence of them, one per output, got "
            f"{shown(grad_outputs)}"
        )
    if len(grad_outputs) != len(outputs):
        raise ShapeError(f"{len(outputs)} outputs but {len(grad_outputs)} grad_outputs")
    seeds = []
    for o, g in zip(outputs, grad_outputs):
        if not isinstance(o, Tensor):
            raise ArgumentError(
                f"backward and grad need tensors, got {type(o).__name__}; for a graph value "
                "(a Var) use nbflow.append_backward(loss) in a static program, or "
                "loss.backward() under @jit"
            )
        if not o.requires_grad:
            raise GradientError("element 0 of the outputs does not require grad and has no grad_fn")
        if g is None:
            if o.size != 1:
                raise GradientError(
                    f"grad can be created implicitly only for one-element outputs, "
                    f"got shape {o.shape}; pass grad="
                )
            g = ops.ones_like(o)
        else:
            g = g if isinstance(g, Tensor) else tensor(g, dtype=o.dtype)
            if g.dtype != o.dtype:  # the seed takes the output's dtype
                g = ops.cast(g, dtype=o.dtype)
            if g.shape != o.shape:
                raise ShapeError(f"grad of shape {g.shape} for an output of shape {o.shape}")
        seeds.append(g)
    return seeds


def backward(outputs, grad_outputs=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of `outputs` into the .grad of every leaf that requires grad (of
    `inputs` only, when given: leaves or not, as PyTorch's). The graph's saved values are
    freed unless retain_graph (default: create_graph)."""
    leaf_grads, node_grads = _eager_backprop(outputs, grad_outputs, retain_graph, create_graph)
    if inputs is not None:
        targets = _values(inputs)
        grads = _gradients_of(targets, leaf_grads, node_grads, allow_unused=True)
        leaf_grads = {id(t): (t, g) for t, g in zip(targets, grads) if g is not None}
    hooked = hooks.any_hooks()
    try:
        for leaf, g in leaf_grads.values():
            _accumulate(leaf, g, create_graph)
            if hooked:
                hooks.run_post_accumulate_hooks(leaf)
    finally:  # (callbacks run even then: each may be a collective the other ranks wait in)
        if hooked:
            hooks.run_queued_callbacks()


def _eager_backprop(outputs, grad_outputs, retain_graph, create_graph):
    """backprop from eager outputs (one or several) and their seeds, freeing the graph's saved
    values unless retain_graph (default: create_graph): backward's and grad's common part."""
    outputs = _values(outputs)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    seeds = _seeds(outputs, grad_outputs)
    free = not (create_graph if retain_graph is None else retain_graph)
    return backprop(outputs, seeds, create_graph, free=free)


def _accumulate(leaf, g, create_graph):
    if not create_graph:
        g = plain_grad(g)
    leaf.grad = g if leaf.grad is None else _add_no_record(leaf.grad, g, create_graph)


def plain_grad(g):
    """A gradient as a plain, contiguous buffer (a gradient can be a transposed view):
    optimizers update parameters from it in place (reshaped: ascontiguousarray makes 0-d
    1-d). Eager backward and a jitted training step (graph/jit.py) bind .grad to it."""
    if type(g) is Tensor:
        return Tensor(np.ascontiguousarray(g._data).reshape(g._data.shape))
    return g.plain()


def _add_no_record(a, b, create_graph):
    with set_grad_enabled(create_graph):
        return a + b


def _values(x) -> list:
    """One value, or an iterable of them (a graph Var is one value: _seeds refuses it)."""
    return list(x) if hasattr(x, "__iter__") and not isinstance(x, Tensor) else [x]


def grad(
    outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False
):
    """d(outputs)/d(inputs) as a tuple, without touching .grad (PyTorch's autograd.grad). The
    graph's saved values are freed unless retain_graph (default: create_graph)."""
    inputs = _values(inputs)
    for x in inputs:  # (before backprop frees the graph)
        if not isinstance(x, Tensor):
            raise ArgumentError(
                f"grad: inputs must be tensors, got {shown(x)}; for graph values (Vars) use "
                "nbflow.append_backward(loss) in a static program"
            )
    leaf_grads, node_grads = _eager_backprop(outputs, grad_outputs, retain_graph, create_graph)
    result = _gradients_of(inputs, leaf_grads, node_grads, allow_unused)
    return tuple(g if g is None or create_graph else g.detach() for g in result)


def _gradients_of(inputs, leaf_grads, node_grads, allow_unused):
    """The gradient backprop found for each of `inputs` (a leaf or a computed tensor)."""
    result = []
    for x in inputs:
        if x._node is None:
            g = leaf_grads.get(id(x), (None, None))[1]
        else:
            slots = node_grads.get(id(x._node))
            g = None if slots is None else slots[x._index]
            g = g if not isinstance(g, list) else _total(g)  # a node backprop did not reach
        if g is None and not allow_unused:
            raise GradientError(
                "one of the inputs was not used to compute the outputs "
                "(pass allow_unused=True to get None for it)"
            )
        result.append(g)
    return result
