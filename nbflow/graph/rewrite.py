"""Algebraic rewrites of a plan's op list (graph mode, run with the fusion pass).

`fold_transposes`: `matrix_transpose(matmul(a, b))`, where nothing else reads the product, is
computed as `matmul(matrix_transpose(b), matrix_transpose(a))` into the transpose's own var.
The weight gradient of a linear layer (`x @ w.T`) has this form: the product is made
contiguous in the parameter's layout (BLAS takes the transposed operands as they are), so the
optimizer update that reads it runs over contiguous memory instead of a strided view (4x
slower on this machine for a 256x784 weight).

`fold_sgd_products`: an SGD step without momentum, `sgd_update_(p, g, ...)`, whose gradient
`g = matmul(a, b)` nothing else reads, becomes `sgd_matmul_update_(p, a, b)`: one GEMM adds the
product into the parameter (BLAS's beta), so the gradient is neither stored nor read again by a
second pass (the step of a 256x784 weight: 285 -> 262 us alone, more in a training step,
where the product's halves sit in the other core's cache). A bias gradient, `g` summed over
the leading axes of `x`, makes the step `sgd_sum_update_(p, x)`: one step instead of two (the
same two kernels). The new op shares the update's attrs dict, so a learning-rate schedule that
rewrites them is followed.
"""

from __future__ import annotations

from ..core import REGISTRY, Node
from .memory import Storages
from .program import Var


def rewrite(ops: list[Node], targets=()) -> list[Node]:
    """The op list with every rewrite of this module applied."""
    return fold_sgd_products(fold_transposes(ops, targets), targets)


def fold_transposes(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable transpose-of-a-matmul rewritten (module docstring)."""
    readers: dict[int, int] = {}
    written = set()
    for node in ops:
        for v in node.inputs:
            readers[id(v)] = readers.get(id(v), 0) + 1
        for j in node.op.inplace.values():
            written.add(id(node.inputs[j]))
    kept = {id(t) for t in targets}
    producer = {id(node.outputs[0]): node for node in ops if node.op.name == "matmul"}
    folds = {}  # id(matmul node) -> the transpose node that reads it
    for node in ops:
        if node.op.name != "matrix_transpose":
            continue
        (m,) = node.inputs
        product = producer.get(id(m))
        if (
            product is None
            or readers.get(id(m)) != 1
            or id(m) in kept
            or id(m) in written
            or m.persistable
            or any(v.ndim != 2 for v in product.inputs)
        ):
            continue
        folds[id(product)] = node
    if not folds:
        return list(ops)
    out = []
    transposes = {id(t) for t in folds.values()}
    for node in ops:
        if id(node) in transposes:
            continue  # now computed by the rewritten matmul
        t = folds.get(id(node))
        if t is None:
            out.append(node)
            continue
        a, b = node.inputs
        bt, at = _transpose(b, node), _transpose(a, node)
        out += [bt, at, _node(node.op, [bt.outputs[0], at.outputs[0]], t.outputs[0], node)]
    return out


# the gradient producers an SGD step without momentum folds into, and the op it becomes
_FOLDED = {
    "matmul": "sgd_matmul_update_",
    "sum": "sgd_sum_update_",
    "sum_to_like": "sgd_sum_update_",
}


def fold_sgd_products(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable SGD step rewritten (module docstring), in its place."""
    readers: dict[int, set] = {}
    for node in ops:
        for v in node.inputs:
            readers.setdefault(id(v), set()).add(id(node))
    kept = {id(t) for t in targets}
    producer = {id(node.outputs[0]): k for k, node in enumerate(ops) if node.op.name in _FOLDED}
    storage = Storages(ops).find
    replaced, dropped = {}, set()
    for k, node in enumerate(ops):
        # (an update that is a target, as @jit makes its updates, is still run: folded)
        if node.op.name != "sgd_update_" or node.attrs["momentum"]:
            continue
        p, g = node.inputs[:2]
        j = producer.get(id(g))
        if j is None or readers[id(g)] != {id(node)} or id(g) in kept or g.persistable:
            continue
        made = ops[j]
        operands = _operands(made, p)
        if operands is None or _may_write(ops[j + 1 : k], operands, storage):
            continue
        folded = REGISTRY[_FOLDED[made.op.name]]
        new = Node(folded, [p, *operands], node.attrs, [node.outputs[0]], None, None)
        new.location = node.location
        replaced[id(node)] = new
        dropped.add(id(made))
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


def _operands(made: Node, p: Var):
    """What the folded update reads besides the parameter p, given the op that made its
    gradient: a product's two 2-D operands, or the tensor a sum over its leading axes
    reduces to p's shape; None when the gradient is made otherwise (or in another dtype)."""
    if made.outputs[0].dtype != p.dtype or any(v.dtype != p.dtype for v in made.inputs):
        return None
    x = made.inputs[0]
    if made.op.name == "matmul":
        return made.inputs if all(v.ndim == 2 for v in made.inputs) else None
    lead = x.ndim - p.ndim
    if lead < 1 or tuple(x.shape[lead:]) != tuple(p.shape) or -1 in p.shape:
        return None  # (summing other axes too, or shapes not known to match)
    if made.op.name == "sum" and (
        made.attrs["keepdims"] or made.attrs["axis"] != tuple(range(lead))
    ):
        return None
    return [x]


def _may_write(steps: list[Node], values, storage) -> bool:
    """Whether one of the steps may write the memory of one of the values (`storage`: a var
    id's storage, views joined to their base): the folded step reads its operands where the
    update was, not where their product was."""
    read = {storage(id(v)) for v in values}
    for node in steps:
        if any(attr.kind == "block" for attr in node.op.attrs.values()):
            return True  # a control flow op's sub-blocks may write outer values
        if any(storage(id(node.inputs[j])) in read for j in node.op.inplace.values()):
            return True
    return False


def _transpose(v: Var, near: Node) -> Node:
    block = v.block
    name = block.program.unique_name("@fold")  # not in the block: a plan-only value
    out = Var(block, name, (v.shape[1], v.shape[0]), v.dtype, stop_gradient=True)
    return _node(REGISTRY["matrix_transpose"], [v], out, near)


def _node(op, inputs, out: Var, near: Node) -> Node:
    node = Node(op, inputs, op.check_attrs({}), [out], None, None)
    node.location = near.location  # errors point at the user's line of the original op
    return node
