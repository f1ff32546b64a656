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
where the product's halves sit in the other core's cache). Likewise a bias's step, whose
gradient is the sum of a batch's rows (`sum(d, axis=0)`, `sum_to_like(d, b)`), becomes
`sgd_sum_update_(b, d)`: one pass over the rows instead of a sum, its output and an update (two
steps and their executor overhead, about 10 us a layer). The new op shares the update's attrs
dict, so a learning-rate schedule that rewrites them is followed.

`fold_biases`: `matmul(x, w) + b`, b a bias of the product's columns and nothing else reading
the product, becomes `linear(x, matrix_transpose(w), b)` into the sum's var (linear reads w
through the transpose's view as it is): the bias rides the product's step instead of a pass of
its own, and a static program's `relu(x @ w + b)` then folds its ReLU as an nn.Linear's does
(and with it the folds below that need a ReLU in its layer).

`fold_activations`: `relu(linear(x, w, b))`, where only the ReLU (and ReLU gradients) read the
linear layer's output, becomes `linear(x, w, b, activation="relu")` into the ReLU's own var: the
ReLU rides the bias's pass, and the pre-activation is never stored. The ReLU gradients read the
ReLU's output instead (`relu(v) > 0` exactly where `v > 0`, NaN included), so training
programs fold too. nn.Sequential already emits the fused op (in eager mode as well); this
catches a model that calls `relu(self.fc(x))` in its own forward, and static-API programs.
Batch norm (`batch_norm_train_affine` in training, `batch_norm_eval` in evaluation: a ResNet's
`bn(conv(x)).relu()`) folds the same way: the ReLU rides its normalising pass.

`fold_relu_masks`: the gradient reaching such a batch norm through its ReLU,
`batch_norm_train_affine_grad(relu_grad(r, g), x, w)`, where nothing else reads the masked
gradient, becomes `batch_norm_train_affine_grad(g, x, w, r)`: the mask is applied as the
gradient is read, and the masked gradient is never stored.

`fold_relu_grads`: the gradient reaching a ReLU layer's output from the next layer, `relu_grad(r,
matmul(g, w))`, where nothing else reads the product, becomes `matmul_relu_grad(r, g, w)`: the
mask is applied in the product's own step, while the product is in the cache (a separate step
after a GEMM ran about twice as slow as the same step again: the GEMM had evicted its data and
the interpreter's), and the product needs no buffer of its own.

`fold_sgd_relu_grads`: a layer after a ReLU whose weight takes a plain SGD step, where the
ReLU's output r is read by nothing after the layer's backward, `matmul_relu_grad(r, g, w)` and
`sgd_matmul_update_(w, matrix_transpose(g), r)` (x @ w's layout: `(r, g, matrix_transpose(w))`
and `(w, matrix_transpose(r), g)`), become `sgd_matmul_relu_grad_(w, r, g)`: r's gradient is
written over r itself, a quarter of its columns at a time, each block's product made before the
weight's part it reads takes its step, which reads the block of r before the gradient is
written over it. Unfolded, r, g and r's gradient were all live at once, as the step had to
wait for the product reading the old weight; folded, a training step holds one activation
fewer (an MLP 784-256-256-10 at batch 128: peak 0.62 of no memory pass against 0.76) in the
same time (the blocks run on two threads with one BLAS thread each, or in turn, measured).
It writes over a value that dies, so it runs with the memory pass only (`reuse_memory`):
without it every value is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core import REGISTRY, UNKNOWN, Node
from ..core import dtypes as dt
from ..ops.reduce import reduced_axes
from .memory import Storages, reads
from .program import Var


def rewrite(ops: list[Node], targets=(), reuse_memory: bool = True) -> list[Node]:
    """The op list with every rewrite of this module applied; those that write a value over
    one that dies (fold_sgd_relu_grads) with `reuse_memory` only, the executor's option that
    lets dead values' buffers be reused (without it every value is kept)."""
    ops = fold_activations(fold_biases(fold_transposes(ops, targets), targets), targets)
    ops = fold_relu_masks(ops, targets)
    ops = fold_sgd_products(fold_relu_grads(ops, targets), targets)
    return fold_sgd_relu_grads(ops, targets) if reuse_memory else ops


def fold_transposes(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable transpose-of-a-matmul rewritten (module docstring)."""
    readers: dict[int, int] = {}
    written = set()
    for node in ops:
        for v in reads(node):
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
    """The op list with each foldable SGD step rewritten (module docstring), in its place:
    a weight's into sgd_matmul_update_, a bias's into sgd_sum_update_."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    producer = {id(node.outputs[0]): k for k, node in enumerate(ops) if node.op.name in _SGD_FOLDS}
    storage = Storages(ops).find
    replaced, dropped = {}, set()
    for k, node in enumerate(ops):
        # (an update that is a target, as @jit makes its updates, is still run: folded)
        if node.op.name != "sgd_update_" or node.attrs["momentum"]:
            continue
        p, g = node.inputs[:2]
        j = producer.get(id(g))
        grad = None if j is None else ops[j]
        if (
            grad is None
            or any(n is not node for n in readers[id(g)])  # (it reads g twice: velocity)
            or id(g) in kept
            or g.persistable
            or g.dtype != p.dtype
        ):
            continue
        folded, operands = _SGD_FOLDS[grad.op.name](grad, p)
        if folded is None or _may_write(ops[j + 1 : k], operands, storage):
            continue
        new = Node(REGISTRY[folded], [p, *operands], node.attrs, [node.outputs[0]], None, None)
        new.location = node.location
        replaced[id(node)] = new
        dropped.add(id(grad))
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


def _product_fold(grad: Node, p: Var):
    """(sgd_matmul_update_, its operands) for a 2-D product in p's dtype, else (None, ())."""
    if any(v.ndim != 2 or v.dtype != p.dtype for v in grad.inputs):
        return None, ()
    return "sgd_matmul_update_", grad.inputs


def _sum_fold(grad: Node, p: Var):
    """(sgd_sum_update_, (the rows,)) for a sum over leading axes only, to p's known shape
    (sum(d, axis=0) or sum_to_like(d, b): a bias gradient), else (None, ()). float16 stays
    unfolded: its sum rounds to float16 before the step, the folded kernel would not."""
    d = grad.inputs[0]
    lead = d.ndim - p.ndim
    if (
        lead < 1
        or p.dtype == dt.float16
        or d.dtype != p.dtype
        or tuple(d.shape[lead:]) != tuple(p.shape)
        or UNKNOWN in p.shape
    ):
        return None, ()
    if grad.op.name == "sum":
        attrs = grad.attrs
        if attrs["keepdims"] or reduced_axes(attrs["axis"], d.ndim) != tuple(range(lead)):
            return None, ()
    return "sgd_sum_update_", (d,)


_SGD_FOLDS = {"matmul": _product_fold, "sum": _sum_fold, "sum_to_like": _sum_fold}


def fold_biases(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each `add(matmul(x, w), b)` (or `add(b, matmul(x, w))`), b a bias of
    the product's columns, where nothing else reads the product, rewritten as `linear(x,
    matrix_transpose(w), b)` in the sum's place (module docstring)."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    where = {id(node.outputs[0]): k for k, node in enumerate(ops) if node.op.name == "matmul"}
    storage = Storages(ops).find
    linear = REGISTRY["linear"]
    replaced, dropped = {}, set()
    for k, node in enumerate(ops):
        if node.op.name != "add":
            continue
        for m, b in (node.inputs, node.inputs[::-1]):
            j = where.get(id(m))
            if j is not None and _is_bias(b, m, ops[j], node.outputs[0]):
                break
        else:
            continue
        product = ops[j]
        if (
            len(readers[id(m)]) != 1
            or id(m) in kept
            or m.persistable
            or id(product) in dropped  # (m + m)
            or _may_write(ops[j + 1 : k], product.inputs, storage)  # read at the sum's place
        ):
            continue
        x, w = product.inputs
        transpose = _transpose(w, node)
        inputs, attrs = [x, transpose.outputs[0], b], linear.check_attrs({})
        layer = _rebuilt(node, inputs, attrs, node.outputs[0], linear)
        replaced[id(node)] = (transpose, layer)
        dropped.add(id(product))
    out = []
    for node in ops:
        if id(node) not in dropped:
            out.extend(replaced.get(id(node), (node,)))
    return out


def _is_bias(b: Var, m: Var, product: Node, total: Var) -> bool:
    """Whether `m + b` is a float product `x @ w` (w 2-D) plus a bias b of its columns: b
    1-D of w's known width, every dtype one float dtype, the sum of m's shape."""
    w = product.inputs[1]
    return (
        w.ndim == 2
        and b.ndim == 1
        and b.shape[0] == w.shape[1] != UNKNOWN
        and m.dtype in (dt.float32, dt.float64)
        and all(v.dtype == m.dtype for v in (*product.inputs, b, total))
        and tuple(total.shape) == tuple(m.shape)
    )


def fold_activations(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each foldable ReLU of a layer that takes an activation (linear,
    batch_norm_train_affine) rewritten (module docstring)."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    storage = Storages(ops).find
    written = {storage(id(n.inputs[j])) for n in ops for j in n.op.inplace.values()}
    producer = {id(node.outputs[0]): node for node in ops if "activation" in node.op.attrs}
    fused = {}  # id(layer node) -> its replacement
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


def fold_relu_masks(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each `batch_norm_train_affine_grad(relu_grad(r, g), x, w)`, where
    nothing else reads the masked gradient, rewritten as `batch_norm_train_affine_grad(g, x,
    w, r)` (module docstring), in its place."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    producer = {id(n.outputs[0]): k for k, n in enumerate(ops) if n.op.name == "relu_grad"}
    storage = Storages(ops).find
    replaced, dropped = {}, set()
    for k, node in enumerate(ops):
        if node.op.name != "batch_norm_train_affine_grad" or len(node.inputs) != 3:
            continue
        m = node.inputs[0]
        j = producer.get(id(m))
        if (
            j is None
            or len(readers[id(m)]) != 1
            or id(m) in kept
            or m.persistable
            or m.dtype != ops[j].inputs[1].dtype  # (the mask's dtype widened g's)
            or _may_write(ops[j + 1 : k], ops[j].inputs, storage)
        ):
            continue
        r, g = ops[j].inputs
        new = Node(node.op, [g, *node.inputs[1:], r], node.attrs, node.outputs, None, None)
        new.location = node.location
        replaced[id(node)] = new
        dropped.add(id(ops[j]))
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


def fold_relu_grads(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each `relu_grad(r, matmul(a, b))`, where nothing else reads the
    product, rewritten as `matmul_relu_grad(r, a, b)` (module docstring), in its place."""
    readers = _readers(ops)
    kept = {id(t) for t in targets}
    producer = {id(node.outputs[0]): k for k, node in enumerate(ops) if node.op.name == "matmul"}
    storage = Storages(ops).find
    folded = REGISTRY["matmul_relu_grad"]
    replaced, dropped = {}, set()
    for k, node in enumerate(ops):
        if node.op.name != "relu_grad":
            continue
        r, m = node.inputs
        j = producer.get(id(m))
        product = None if j is None else ops[j]
        if (
            product is None
            or r is m
            or len(readers[id(m)]) != 1
            or id(m) in kept
            or m.persistable
            or r.ndim != 2
            or r.dtype != m.dtype
            or m.dtype not in (dt.float32, dt.float64)  # (float16 rounds the product first)
            or any(v.ndim != 2 or v.dtype != m.dtype for v in product.inputs)
            or _may_write(ops[j + 1 : k], product.inputs, storage)
        ):
            continue
        replaced[id(node)] = _rebuilt(node, [r, *product.inputs], {}, node.outputs[0], folded)
        dropped.add(id(product))
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


def fold_sgd_relu_grads(ops: list[Node], targets=()) -> list[Node]:
    """The op list with each `matmul_relu_grad(r, g, w)` (or `(r, g, matrix_transpose(w))`)
    whose weight w takes an SGD step `sgd_matmul_update_(w, matrix_transpose(g), r)` (or
    `(w, matrix_transpose(r), g)`) rewritten as one `sgd_matmul_relu_grad_(w, r, g)` in the
    product's place (module docstring)."""
    readers = _readers(ops)
    where = {id(node): k for k, node in enumerate(ops)}
    transpose_of = {id(n.outputs[0]): n for n in ops if n.op.name == "matrix_transpose"}
    storage = Storages(ops).find
    kept = {id(t) for t in targets}
    # memory the gradient may not be written over: what outlives the step
    pinned = {
        storage(id(v))
        for n in ops
        for v in (*reads(n), *n.outputs)
        if v.persistable or v.is_data or id(v) in kept
    }
    folded = REGISTRY["sgd_matmul_relu_grad_"]
    replaced, dropped = {}, set()
    for j, node in enumerate(ops):
        found = _weight_step(node, readers, transpose_of)
        if found is None:
            continue
        step, layout, views = found
        w, (r, g) = step.inputs[0], node.inputs[:2]
        folds = {id(step), *map(id, views)}
        between = [n for n in ops[j + 1 : where[id(step)]] if id(n) not in folds]
        weight, values = storage(id(w)), storage(id(r))
        if (
            where[id(step)] < j
            or w.dtype != r.dtype
            or values in pinned
            or weight in {values, storage(id(g))}
            or _may_write(between, [r, g], storage)
            # the step now comes first: nothing between may read or write the weight
            or any(weight in _touched(n, storage) for n in between)
            # r's memory takes the gradient: nothing after may read it
            or any(values in _touched(n, storage) for n in ops[j + 1 :] if id(n) not in folds)
        ):
            continue
        outs = [step.outputs[0], node.outputs[0]]
        new = Node(folded, [w, r, g], _WithLayout(step.attrs, layout), outs, None, None)
        new.location = node.location
        replaced[id(node)] = new
        dropped |= folds
    return [replaced.get(id(node), node) for node in ops if id(node) not in dropped]


def _touched(node: Node, storage) -> set:
    """The storages a node reads or writes."""
    return {storage(id(v)) for v in (*reads(node), *node.outputs)}


def _weight_step(node: Node, readers, transpose_of):
    """(the weight's step, its layout, the transposes folded away) for a matmul_relu_grad
    node whose weight takes sgd_matmul_update_ from the product that is its gradient
    (fold_sgd_relu_grads); else None."""
    if node.op.name != "matmul_relu_grad":
        return None
    r, g, b = node.inputs
    wt = transpose_of.get(id(b))
    # nn.Linear's layout: g @ w, w's step g.T @ r; x @ w's: g @ w.T, w's step r.T @ g
    w, layout, (first, second) = (
        (b, "out_in", (g, r)) if wt is None else (wt.inputs[0], "in_out", (r, g))
    )
    for step in readers.get(id(w), []):
        if step.op.name != "sgd_matmul_update_" or step.inputs[0] is not w:
            continue
        t = transpose_of.get(id(step.inputs[1]))
        if t is None or t.inputs[0] is not first or step.inputs[2] is not second:
            continue
        views = [v for v in (t, wt) if v is not None and len(readers[id(v.outputs[0])]) == 1]
        return step, layout, views
    return None


class _WithLayout(Mapping):
    """sgd_matmul_relu_grad_'s attrs: the weight step's, read when it runs (a learning-rate
    schedule writes them), and the weight's layout."""

    def __init__(self, attrs: dict, layout: str):
        self.attrs, self.layout = attrs, layout

    def __getitem__(self, key):
        return self.layout if key == "weight_layout" else self.attrs[key]

    def __iter__(self):
        yield from self.attrs
        yield "weight_layout"

    def __len__(self) -> int:
        return len(self.attrs) + 1


def _readers(ops: list[Node]) -> dict[int, list]:
    """id(var) -> the nodes that read it, in order (once per input; a control flow op's
    sub-blocks may read a var directly: memory.reads)."""
    readers: dict[int, list] = {}
    for node in ops:
        for v in reads(node):
            readers.setdefault(id(v), []).append(node)
    return readers


def _relu_grad_of(node: Node, v: Var) -> bool:
    """Whether node is relu_grad(v, g) for a gradient g other than v itself."""
    return node.op.name == "relu_grad" and node.inputs[0] is v and node.inputs[1] is not v


def _rebuilt(node: Node, inputs, attrs, out: Var, op=None) -> Node:
    new = Node(op or node.op, list(inputs), attrs, [out], None, None)
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
