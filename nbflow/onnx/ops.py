"""nbflow op -> ONNX nodes, one small converter per op (or one table entry per elementwise op).

A converter is `convert(b, node, ins, **attrs)`: `b` the Builder, `node` the Program's op (its
`inputs` and `outputs` vars give ranks and dtypes), `ins` the ONNX names of its inputs, attrs
the op's attrs (ints that follow a dynamic dim are `Dim`s). It returns the ONNX name of each
output (a name for a one-output op; None for an output with no ONNX value). Every converter
writes standard ONNX (domain ai.onnx) valid from opset 17 on.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import numpy_helper

from nbflow import UnsupportedError

from .builder import INT64_MAX, INT64_MIN, NotExported, onnx_dtype
from .shapes import is_static

CONVERTERS: dict = {}


def converts(*names):
    def register(fn):
        for name in names:
            CONVERTERS[name] = fn
        return fn

    return register


def _rank(var) -> int:
    return len(var.shape)


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _static(value, what: str, node):
    """An attr that must not depend on the dynamic dims."""
    if not is_static(value) and not (isinstance(value, (tuple, list)) and _all_static(value)):
        raise UnsupportedError(
            f"{node.op.name}: {what} changes with the dynamic dims ({value}); ONNX takes it as "
            "a fixed attribute"
        )
    return value


def _all_static(values) -> bool:
    return all(_all_static(v) if isinstance(v, (tuple, list)) else is_static(v) for v in values)


# ---------------------------------------------------------------- elementwise

UNARY = {
    "neg": "Neg",
    "abs": "Abs",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "tanh": "Tanh",
    "sigmoid": "Sigmoid",
    "relu": "Relu",
    "erf": "Erf",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",  # (half to even, as numpy's)
    "reciprocal": "Reciprocal",
    "sin": "Sin",
    "cos": "Cos",
    "logical_not": "Not",
}

BINARY = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "pow": "Pow",
    "maximum": "Max",
    "minimum": "Min",
}

COMPARE = {
    "eq": "Equal",
    "gt": "Greater",
    "lt": "Less",
    "ge": "GreaterOrEqual",
    "le": "LessOrEqual",
    "logical_and": "And",
}


def _unary(onnx_type):
    def convert(b, node, ins):
        (x,) = b.cast_inputs(node, ins)
        return b.op(onnx_type, [x])

    return convert


def _binary(onnx_type):
    def convert(b, node, ins):
        return b.op(onnx_type, b.cast_inputs(node, ins))

    return convert


def _compare(onnx_type):
    def convert(b, node, ins):
        common = np.result_type(*(v.dtype for v in node.inputs))
        if onnx_type == "And":
            common = np.dtype(bool)
        return b.op(onnx_type, b.cast_inputs(node, ins, common))

    return convert


for _name, _type in UNARY.items():
    CONVERTERS[_name] = _unary(_type)
for _name, _type in BINARY.items():
    CONVERTERS[_name] = _binary(_type)
for _name, _type in COMPARE.items():
    CONVERTERS[_name] = _compare(_type)


@converts("ne")
def ne(b, node, ins):
    return b.op("Not", [_compare("Equal")(b, node, ins)])


@converts("rsqrt")
def rsqrt(b, node, ins):
    (x,) = b.cast_inputs(node, ins)
    return b.op("Reciprocal", [b.op("Sqrt", [x])])


@converts("square")
def square(b, node, ins):
    (x,) = b.cast_inputs(node, ins)
    return b.op("Mul", [x, x])


@converts("gelu")
def gelu(b, node, ins, approximate=False):
    (x,) = b.cast_inputs(node, ins)
    if b.opset >= 20:
        return b.op("Gelu", [x], approximate="tanh" if approximate else "none")
    d = node.outputs[0].dtype
    half_x = b.op("Mul", [x, b.const(0.5, d)])
    if approximate:  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Add", [x, b.op("Mul", [cube, b.const(0.044715, d)])])
        t = b.op("Tanh", [b.op("Mul", [inner, b.const(math.sqrt(2 / math.pi), d)])])
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        t = b.op("Erf", [b.op("Mul", [x, b.const(1 / math.sqrt(2), d)])])
    return b.op("Mul", [half_x, b.op("Add", [t, b.const(1.0, d)])])


@converts("leaky_relu")
def leaky_relu(b, node, ins, negative_slope=0.01):
    return b.op("LeakyRelu", ins, alpha=float(negative_slope))


@converts("softplus")
def softplus(b, node, ins, beta=1.0, threshold=20.0):
    # ONNX's Softplus has no threshold: past it, log(1 + exp(x)) and x agree in float32
    (x,) = ins
    if beta == 1.0:
        return b.op("Softplus", [x])
    beta_c = b.const(beta, node.outputs[0].dtype)
    return b.op("Div", [b.op("Softplus", [b.op("Mul", [x, beta_c])]), beta_c])


def _clip(b, node, x, low, high):
    d = node.outputs[0].dtype
    bounds = ["" if v is None else b.const(v, d) for v in (low, high)]
    while bounds and bounds[-1] == "":
        bounds.pop()
    return b.op("Clip", [b.cast(x, node.inputs[0].dtype, d), *bounds])


@converts("clip")
def clip(b, node, ins, min=None, max=None):
    return _clip(b, node, ins[0], min, max)


@converts("hardtanh")
def hardtanh(b, node, ins, min_val=-1.0, max_val=1.0):
    return _clip(b, node, ins[0], min_val, max_val)


@converts("where")
def where(b, node, ins):
    cond = b.cast(ins[0], node.inputs[0].dtype, bool)
    d = node.outputs[0].dtype
    x, y = (b.cast(n, v.dtype, d) for n, v in zip(ins[1:], node.inputs[1:]))
    return b.op("Where", [cond, x, y])


@converts("cast")
def cast(b, node, ins, dtype):
    return b.op("Cast", ins, to=onnx_dtype(dtype))


# ---------------------------------------------------------------- constants


@converts("full")
def full(b, node, ins, shape, value, dtype):
    if _all_static(shape):
        return b.initializer(np.full(shape, value, dtype), node.outputs[0].name)
    fill = numpy_helper.from_array(np.full((1,), value, dtype))
    return b.op("ConstantOfShape", [b.dims(shape, "full: shape")], value=fill)


# ---------------------------------------------------------------- products and layers


@converts("matmul")
def matmul(b, node, ins):
    return b.op("MatMul", b.cast_inputs(node, ins))


@converts("linear")
def linear(b, node, ins, activation="none"):
    """x @ weight.T + bias: Gemm for a matrix x, MatMul and Add otherwise."""
    ins = b.cast_inputs(node, ins)
    x, w, bias = ins[0], ins[1], ins[2] if len(ins) > 2 else None
    if _rank(node.inputs[0]) == 2:
        out = b.op("Gemm", [x, w] + ([bias] if bias else []), transB=1)
    else:
        out = b.op("MatMul", [x, b.op("Transpose", [w], perm=[1, 0])])
        if bias:
            out = b.op("Add", [out, bias])
    return b.op("Relu", [out]) if activation == "relu" else out


@converts("self_attention")
def self_attention(b, node, ins, heads, scale):
    """softmax(q k^T * scale) v for each head of qkv (B, L, 3E): its layout ops, MatMul and
    Softmax."""
    batch, length, width = b.shape(node.inputs[0])
    e = _static(width, "qkv's last dim", node) // 3
    qkv = b.reshape(ins[0], [batch, length, 3, heads, e // heads], "self_attention", 2)
    qkv = b.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])  # (3, B, heads, L, d)
    q, k, v = (b.op("Gather", [qkv, b.const(i, np.int64)], axis=0) for i in range(3))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Mul", [scores, b.const(scale, node.inputs[0].dtype)])
    out = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    out = b.op("Transpose", [out], perm=[0, 2, 1, 3])  # (B, L, heads, d)
    return b.reshape(out, [batch, length, e], "self_attention", 2)


@converts("embedding")
def embedding(b, node, ins, padding_idx=None):
    indices, weight = ins
    return b.op("Gather", [weight, indices], axis=0)


@converts("conv2d", "conv3d")
def conv(b, node, ins, stride=1, padding=0, dilation=1, groups=1):
    n = _rank(node.inputs[0]) - 2
    pads = list(_ints(padding, n, node))
    return b.op(
        "Conv",
        b.cast_inputs(node, ins),
        strides=list(_ints(stride, n, node)),
        pads=pads + pads,
        dilations=list(_ints(dilation, n, node)),
        group=int(groups),
        kernel_shape=[int(k) for k in node.inputs[1].shape[2:]],
    )


def _ints(value, n: int, node) -> tuple:
    value = _static(value, "a window attr", node)
    if isinstance(value, (tuple, list)):
        value = tuple(int(v) for v in value)
        return value * n if len(value) == 1 else value  # (one size for every spatial dim)
    return (int(value),) * n


@converts("max_pool2d")
def max_pool2d(b, node, ins, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    kernel = _ints(kernel_size, 2, node)
    pads = list(_ints(padding, 2, node))
    out = b.op(
        "MaxPool",
        ins,
        kernel_shape=list(kernel),
        strides=list(kernel if stride is None else _ints(stride, 2, node)),
        pads=pads + pads,
        dilations=list(_ints(dilation, 2, node)),
        ceil_mode=int(ceil_mode),
    )
    return [out, NotExported("max_pool2d", "indices (ONNX's MaxPool numbers them otherwise)")]


@converts("avg_pool2d")
def avg_pool2d(
    b,
    node,
    ins,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    if divisor_override is not None:
        raise UnsupportedError("avg_pool2d: divisor_override has no ONNX equivalent")
    kernel = _ints(kernel_size, 2, node)
    pads = list(_ints(padding, 2, node))
    return b.op(
        "AveragePool",
        ins,
        kernel_shape=list(kernel),
        strides=list(kernel if stride is None else _ints(stride, 2, node)),
        pads=pads + pads,
        ceil_mode=int(ceil_mode),
        count_include_pad=int(count_include_pad),
    )


@converts("adaptive_avg_pool2d")
def adaptive_avg_pool2d(b, node, ins, output_size):
    size = b.shape(node.inputs[0])[-2:]
    out = [s if o is None else o for s, o in zip(size, _ints(output_size, 2, node))]
    if out == [1, 1]:
        return b.op("GlobalAveragePool", ins)
    if not all(is_static(s) and s % o == 0 for s, o in zip(size, out)):
        raise UnsupportedError(
            f"adaptive_avg_pool2d: input size {tuple(size)} to {tuple(out)} is not an even "
            "pooling (ONNX has no adaptive pooling)"
        )
    kernel = [int(s) // o for s, o in zip(size, out)]
    return b.op("AveragePool", ins, kernel_shape=kernel, strides=kernel)


@converts("channel_affine")
def channel_affine(b, node, ins):
    """y * weight[c] + bias[c] over the channel axis 1 (batch norm in eval mode)."""
    y, w, bias = b.cast_inputs(node, ins)
    trailing = b.ints(range(1, _rank(node.inputs[0]) - 1))
    w, bias = (b.op("Unsqueeze", [t, trailing]) for t in (w, bias))
    return b.op("Add", [b.op("Mul", [y, w]), bias])


@converts("batch_norm_eval")
def batch_norm_eval(b, node, ins, eps=1e-5, activation="none"):
    """Batch norm by its running statistics: ONNX's BatchNormalization in inference mode."""
    x, mean, var, w, bias = b.cast_inputs(node, ins)
    out = b.op("BatchNormalization", [x, w, bias, mean, var], epsilon=float(eps))
    return b.op("Relu", [out]) if activation == "relu" else out


@converts("layer_norm")
def layer_norm(b, node, ins, normalized_shape, eps=1e-5):
    shape = [int(s) for s in _static(normalized_shape, "normalized_shape", node)]
    d = node.outputs[0].dtype
    scale, shift = b.const(np.ones(shape, d), d), b.const(np.zeros(shape, d), d)
    return b.op("LayerNormalization", [ins[0], scale, shift], axis=-len(shape), epsilon=float(eps))


@converts("layer_norm_affine")
def layer_norm_affine(b, node, ins, normalized_shape, eps=1e-5):
    shape = _static(normalized_shape, "normalized_shape", node)
    x, w, bias = b.cast_inputs(node, ins)
    return b.op("LayerNormalization", [x, w, bias], axis=-len(shape), epsilon=float(eps))


@converts("softmax")
def softmax(b, node, ins, axis=-1):
    return b.op("Softmax", ins, axis=int(axis))


@converts("log_softmax")
def log_softmax(b, node, ins, axis=-1):
    return b.op("LogSoftmax", ins, axis=int(axis))


# ---------------------------------------------------------------- reductions


def _reduction(kind):
    def convert(b, node, ins, axis=None, keepdims=False):
        x = b.cast(ins[0], node.inputs[0].dtype, node.outputs[0].dtype)
        if axis is not None and not isinstance(axis, (tuple, list)):
            axis = (axis,)
        return b.reduce(kind, x, axis, keepdims)

    return convert


REDUCTIONS = {"sum": "Sum", "mean": "Mean", "max": "Max", "min": "Min", "prod": "Prod"}
for _name, _kind in REDUCTIONS.items():
    CONVERTERS[_name] = _reduction(_kind)


@converts("argmax", "argmin")
def argmax(b, node, ins, axis=None, keepdims=False):
    kind = "ArgMax" if node.op.name == "argmax" else "ArgMin"
    x, rank = ins[0], _rank(node.inputs[0])
    if axis is None:  # over the flattened tensor
        flat = b.op(kind, [b.reshape(x, [-1], "argmax")], axis=0, keepdims=0)
        out = b.reshape(flat, [1] * rank, "argmax") if keepdims else flat
    else:
        out = b.op(kind, [x], axis=int(axis), keepdims=int(bool(keepdims)))
    return b.cast(out, np.int64, node.outputs[0].dtype)


# ---------------------------------------------------------------- shapes and views


@converts("reshape")
def reshape(b, node, ins, shape):
    return b.reshape(ins[0], shape, "reshape: shape")


@converts("flatten")
def flatten(b, node, ins, start_axis=0, end_axis=-1):
    dims, rank = b.shape(node.inputs[0]), _rank(node.inputs[0])
    if rank == 0:
        return b.reshape(ins[0], [1], "flatten")
    start, end = _axis(start_axis, rank), _axis(end_axis, rank)
    return b.reshape(ins[0], dims[:start] + [-1] + dims[end + 1 :], "flatten", start)


@converts("permute")
def permute(b, node, ins, axes):
    rank = _rank(node.inputs[0])
    return b.op("Transpose", ins, perm=[_axis(int(a), rank) for a in axes])


@converts("transpose")
def transpose(b, node, ins, axis0, axis1):
    rank = _rank(node.inputs[0])
    perm = list(range(rank))
    i, j = _axis(int(axis0), rank), _axis(int(axis1), rank)
    perm[i], perm[j] = perm[j], perm[i]
    return b.op("Transpose", ins, perm=perm)


@converts("matrix_transpose")
def matrix_transpose(b, node, ins):
    rank = _rank(node.inputs[0])
    return b.op("Transpose", ins, perm=[*range(rank - 2), rank - 1, rank - 2])


@converts("squeeze")
def squeeze(b, node, ins, axis=None):
    rank = _rank(node.inputs[0])
    if axis is None:  # the dims of size 1 at trace time (a dynamic dim is never squeezed)
        axis = [i for i, s in enumerate(b.shape(node.inputs[0])) if is_static(s) and s == 1]
    elif not isinstance(axis, (tuple, list)):
        axis = [axis]
    return b.op("Squeeze", [ins[0], b.ints(sorted(_axis(int(a), rank) for a in axis))])


@converts("unsqueeze")
def unsqueeze(b, node, ins, axis):
    rank = _rank(node.outputs[0])
    axis = axis if isinstance(axis, (tuple, list)) else [axis]
    return b.op("Unsqueeze", [ins[0], b.ints(sorted(_axis(int(a), rank) for a in axis))])


@converts("concat")
def concat(b, node, ins, axis=0):
    return b.op("Concat", b.cast_inputs(node, ins), axis=int(axis))


@converts("stack")
def stack(b, node, ins, axis=0):
    axis = _axis(int(axis), _rank(node.outputs[0]))
    parts = [b.op("Unsqueeze", [x, b.ints([axis])]) for x in b.cast_inputs(node, ins)]
    return b.op("Concat", parts, axis=axis) if len(parts) > 1 else parts[0]


@converts("split")
def split(b, node, ins, split_size=None, sizes=None, axis=0):
    axis = _axis(int(axis), _rank(node.inputs[0]))
    parts = [b.shape(v)[axis] for v in node.outputs]
    outs = b.op("Split", [ins[0], b.dims(parts, "split")], outputs=len(parts), axis=axis)
    return [outs] if len(parts) == 1 else outs


@converts("broadcast_to")
def broadcast_to(b, node, ins, shape):
    return b.op("Expand", [ins[0], b.dims(shape, "broadcast_to: shape")])


@converts("tile")
def tile(b, node, ins, reps):
    x, rank = ins[0], _rank(node.inputs[0])
    reps = list(reps)
    if len(reps) > rank:  # numpy's tile: the input gains leading dims
        x = b.op("Unsqueeze", [x, b.ints(range(len(reps) - rank))])
    reps = [1] * (rank - len(reps)) + reps
    return b.op("Tile", [x, b.dims(reps, "tile: reps")])


@converts("index_select")
def index_select(b, node, ins, axis):
    return b.op("Gather", ins, axis=int(axis))


@converts("slice")
def slice_(b, node, ins, key):
    """x[key] for ints, slices, None and Ellipsis: one Slice, then Squeeze for the ints and
    Unsqueeze for the Nones."""
    x = ins[0]
    if isinstance(x, NotExported):
        return _last_step(b, node, x, key)
    rank = _rank(node.inputs[0])
    taken = sum(item[0] in ("int", "slice") for item in key)
    items = []
    for item in key:
        if item[0] == "ellipsis":
            items += [("slice", None, None, None)] * (rank - taken)
        elif item[0] in ("int", "slice", "none"):
            items.append(item)
        else:
            raise UnsupportedError(f"slice: key item {item!r} has no ONNX mapping")
    starts, ends, axes, steps, squeezed, inserted = [], [], [], [], [], []
    axis = out_axis = 0
    for item in items:
        if item[0] == "none":
            inserted.append(out_axis)
            out_axis += 1
            continue
        if item[0] == "int":
            i = item[1]
            starts.append(i)
            ends.append(INT64_MAX if is_static(i) and i == -1 else i + 1)
            steps.append(1)
            axes.append(axis)
            squeezed.append(axis)
        else:
            _, start, stop, step = item
            step = 1 if step is None else step
            if start is not None or stop is not None or step != 1:
                forward = step > 0
                starts.append(start if start is not None else 0 if forward else INT64_MAX)
                ends.append(stop if stop is not None else INT64_MAX if forward else INT64_MIN)
                steps.append(step)
                axes.append(axis)
            out_axis += 1
        axis += 1
    if axes:
        inputs = [x, b.dims(starts, "slice"), b.dims(ends, "slice"), b.ints(axes)]
        x = b.op("Slice", [*inputs, b.ints(steps)])
    if squeezed:
        x = b.op("Squeeze", [x, b.ints(squeezed)])
    if inserted:
        x = b.op("Unsqueeze", [x, b.ints(inserted)])
    if not (axes or squeezed or inserted):
        x = b.op("Identity", [x])
    return x


def _last_step(b, node, x: NotExported, key):
    """x[-1] of an LSTM's per-step cell states: ONNX's LSTM gives the last step's alone."""
    last_name, steps, reverse = x.note
    wanted = (0,) if reverse else (-1, steps - 1) if is_static(steps) else (-1,)
    if len(key) == 1 and key[0][0] == "int" and key[0][1] in wanted:
        return b.op("Squeeze", [last_name, b.ints([0])])
    raise UnsupportedError(
        f"{x.op}: its {x.what} are read by slice {key!r}; ONNX gives the final one only"
    )


# ---------------------------------------------------------------- recurrent


@converts("lstm_sequence")
def lstm_sequence(b, node, ins, reverse=False):
    """One LSTM layer and direction as ONNX's LSTM. nbflow's op takes the input projections
    xw = x W_ih^T + b_ih (T, B, 4H) with gates in PyTorch's order (input, forget, cell,
    output); ONNX's stacks them input, output, forget, cell and projects its input itself, so
    the ONNX input is xw with W a permutation matrix (its product reorders the gates), R and B
    the recurrent weight and bias with their rows reordered the same way."""
    xw, w_hh, b_hh, h0, c0 = b.cast_inputs(node, ins)
    steps, _, gates = node.inputs[0].shape
    hidden = gates // 4
    order = np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in (0, 3, 1, 2)])
    d = node.outputs[0].dtype
    perm = np.zeros((1, gates, gates), d)
    perm[0, np.arange(gates), order] = 1
    first = b.ints([0])
    r = b.op("Unsqueeze", [b.op("Gather", [w_hh, b.ints(order)], axis=0), first])
    b_hh = b.op("Gather", [b_hh, b.ints(order)])
    bias = b.op("Concat", [b.const(np.zeros(gates), d), b_hh], axis=0)
    bias = b.op("Unsqueeze", [bias, first])
    h0, c0 = (b.op("Unsqueeze", [s, first]) for s in (h0, c0))
    y, _, y_c = b.op(
        "LSTM",
        [xw, b.const(perm, d), r, bias, "", h0, c0],
        outputs=3,
        hidden_size=int(hidden),
        direction="reverse" if reverse else "forward",
    )
    hs = b.op("Squeeze", [y, b.ints([1])])
    cs = NotExported("lstm_sequence", "per-step cell states", (y_c, steps, reverse))
    return [hs, cs, NotExported("lstm_sequence", "per-step gates")]
