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
where the product's halves sit in the other core's cache). Likewise a gradient
`g = sum(rows, leading axes)` (a bias gradient) becomes `sgd_sum_update_(p, rows)`: one plan
step where there were two, and no gradient buffer to lend and release. The new ops share the
update's attrs dict, so a learning-rate schedule that rewrites them is followed.

`fold_activations`: `relu(linear(x, w, b))`, where only the ReLU (and ReLU gradients) read the
linear layer's output, becomes `linear(x, w, b, activation="relu")` into the ReLU's own var: the
ReLU rides the bias's pass, and the pre-activation is never stored. The ReLU gradients read the
ReLU's output instead (`relu(v) > 0` exactly where `v > 0`, NaN included), so training
programs fold too. nn.Sequential already emits the fused op (in eager mode as well); this
catches a model that calls `relu(self.fc(x))` in its own forward, and static-API programs.

`fold_loss_gradients`: `cross_entropy(x, y)`, `ones_like` of it and `cross_entropy_grad(ones,
x, y)`, the start of every classifier's backward pass, become one `cross_entropy_with_grad(x,
y)` computing the loss and the logits' gradient: one plan step where there were three (the
same kernels, so the same values). Not when the seed is fetched or read elsewhere, or when x
or y is written in between.
"""

from __future__ import annotations

from ..core import REGISTRY, Node
from .memory import Storages
from .program import Var


def rewrite(ops: list[Node], targets=()) -> list[Node]:
    """The op list with every rewrite of this module applied."""
    ops = fold_activations(fold_transposes(ops, targets), targets)
    return fold_sgd_products(fold_loss_gradients(ops, targets), targets)


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


def fold_sgd_products(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable SGD step rewritten (module docstring), in its place."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    producer = {
        id(node.outputs[0]): k
        for k, node in enumerate(ops)
        if node.op.name in FOLDED_INTO_SGD and node.outputs
    }
    storage = Storages(ops).find
    replaced, dropped = {}, set()
    for k, node in enumerate(ops):
        # (an update that is a target, as @jit makes its updates, is still run: folded)
        if node.op.name != "sgd_update_" or node.attrs["momentum"]:
            continue
        p, g = node.inputs[:2]
        j = producer.get(id(g))
        product = None if j is None else ops[j]
        if (
            product is None
            or any(n is not node for n in readers[id(g)])  # (it reads g twice: velocity)
            or id(g) in kept
            or g.persistable
            or g.dtype != p.dtype
            or any(v.dtype != p.dtype for v in product.inputs)
            or not _foldable(product, p)
            or _may_write(ops[j + 1 : k], product.inputs, storage)
        ):
            continue
        folded = REGISTRY[FOLDED_INTO_SGD[product.op.name]]
        operands = product.inputs[:1] if folded.name == "sgd_sum_update_" else product.inputs
        new = Node(folded, [p, *operands], node.attrs, [node.outputs[0]], None, None)
        new.location = node.location
        replaced[id(node)] = new
        dropped.add(id(product))
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


# the gradient's producer -> the update that computes it in place of sgd_update_
FOLDED_INTO_SGD = {
    "matmul": "sgd_matmul_update_",
    "sum": "sgd_sum_update_",
    "sum_to_like": "sgd_sum_update_",  # (the gradient of a broadcast add: `x @ w + b`)
}


def _foldable(product: Node, p: Var) -> bool:
    """Whether the folded update computes this product: a 2-D matmul, or a sum (sum_to_like)
    over the leading axes of rows that end with the parameter's shape (a bias gradient)."""
    if product.op.name == "matmul":
        return all(v.ndim == 2 for v in product.inputs)
    rows = product.inputs[0]
    lead = rows.ndim - p.ndim
    if lead < 0 or tuple(rows.shape[lead:]) != tuple(p.shape):
        return False
    if product.op.name == "sum_to_like":  # sums the leading axes when the rest match
        return True
    axis = product.attrs["axis"]
    axes = range(rows.ndim) if axis is None else sorted(a % max(rows.ndim, 1) for a in axis)
    return not product.attrs["keepdims"] and tuple(axes) == tuple(range(lead))


def fold_activations(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable ReLU of a linear layer rewritten (module docstring)."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    storage = Storages(ops).find
    written = {storage(id(n.inputs[j])) for n in ops for j in n.op.inplace.values()}
    producer = {id(node.outputs[0]): node for node in ops if node.op.name == "linear"}
    fused = {}  # id(linear node) -> its replacement
    replaced = {}  # id(relu or relu_grad node) -> its replacement (None: dropped)
    for node in ops:
        if node.op.name != "relu":
            continue
        (v,), (r,) = node.inputs, node.outputs
        layer = producer.get(id(v))
        if (
            layer is None
            or layer.attrs["activation"] != "none"
            or id(v) in kept
            or v.persistable
            or storage(id(v)) in written
            or storage(id(r)) in written  # the ReLU gradients will read r: it must not change
            or any(n is not node and not _relu_grad_of(n, v) for n in readers[id(v)])
        ):
            continue
        attrs = dict(layer.attrs, activation="relu")
        fused[id(layer)] = _rebuilt(layer, layer.inputs, attrs, r)
        replaced[id(node)] = None
        for n in readers[id(v)]:
            if n is not node:  # relu_grad(v, g) -> relu_grad(r, g)
                replaced[id(n)] = _rebuilt(n, [r, *n.inputs[1:]], n.attrs, n.outputs[0])
    out = []
    for node in ops:
        new = fused.get(id(node)) or replaced.get(id(node), node)
        if new is not None:
            out.append(new)
    return out


def fold_loss_gradients(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable cross_entropy gradient rewritten (module docstring)."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    storage = Storages(ops).find
    position = {id(node): k for k, node in enumerate(ops)}
    by_output = {id(node.outputs[0]): node for node in ops if len(node.outputs) == 1}
    folded = REGISTRY["cross_entropy_with_grad"]
    replaced, dropped = {}, set()
    for grad in ops:
        if grad.op.name != "cross_entropy_grad":
            continue
        seed, logits, labels = grad.inputs
        ones = by_output.get(id(seed))
        loss = ones and by_output.get(id(ones.inputs[0]))
        if (
            loss is None
            or ones.op.name != "full_like"
            or ones.attrs["value"] != 1
            or ones.attrs["dtype"] not in (None, seed.dtype)
            or loss.op.name != "cross_entropy"
            or not _same_vars(loss.inputs, [logits, labels])
            or loss.attrs != grad.attrs
            or id(loss) in replaced
            or any(n is not grad for n in readers[id(seed)])
            or id(seed) in kept
            or _may_write(ops[position[id(loss)] + 1 : position[id(grad)]], grad.inputs, storage)
        ):
            continue
        new = Node(folded, [logits, labels], loss.attrs, [*loss.outputs, *grad.outputs], None, None)
        new.location = grad.location
        replaced[id(loss)] = new
        dropped.update((id(ones), id(grad)))
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


def _readers(ops: list[Node]) -> dict[int, list]:
    """id(var) -> the nodes that read it, in order (once per input)."""
    readers: dict[int, list] = {}
    for node in ops:
        for v in node.inputs:
            readers.setdefault(id(v), []).append(node)
    return readers


def _same_vars(a: list, b: list) -> bool:
    """Whether two lists hold the same objects (== on Vars would build an op)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _relu_grad_of(node: Node, v: Var) -> bool:
    """Whether node is relu_grad(v, g) for a gradient g other than v itself."""
    return node.op.name == "relu_grad" and node.inputs[0] is v and node.inputs[1] is not v


def _rebuilt(node: Node, inputs, attrs, out: Var) -> Node:
    new = Node(node.op, list(inputs), attrs, [out], None, None)
    new.location = node.location
    return new


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
