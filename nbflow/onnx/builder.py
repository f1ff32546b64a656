"""The ONNX graph under construction: nodes, initializers, names, and the helpers the op
converters share (constants, casts, shape tensors computed from the dynamic input dims)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from nbflow import UnsupportedError

from .shapes import Dim, is_static

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def onnx_dtype(dtype) -> int:
    """The TensorProto element type of a numpy dtype."""
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class NotExported:
    """Stands for an op output that has no ONNX value of its own (an LSTM's per-step cell
    states, of which ONNX gives the last); a converter that can use it looks at `note`."""

    def __init__(self, op: str, what: str, note=None):
        self.op, self.what, self.note = op, what, note


class Builder:
    """Collects the ONNX nodes and initializers of one export.

    `shapes` maps id(var) to the var's dims (int, Dim or None for unknown); `sources` maps each
    dynamic dim's symbol to (input name, axis) where the exported graph can read its size."""

    def __init__(self, opset: int, shapes: dict, sources: dict):
        self.opset = opset
        self.shapes = shapes
        self.sources = sources
        self.nodes: list = []
        self.initializers: list = []
        self.taken: set[str] = set()
        self.hint = "v"
        self._consts: dict = {}
        self._dims: dict = {}

    # ---------------------------------------------------------------- names and nodes

    def fresh(self, hint: str | None = None) -> str:
        base = hint or self.hint
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def op(self, op_type: str, inputs, outputs: int = 1, **attrs):
        """Append a node; its output name (or names, for outputs > 1). An input may be ""
        (an optional input left out)."""
        names = [self.fresh() for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def initializer(self, array, name: str | None = None) -> str:
        name = self.fresh(name or f"{self.hint}_const")
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def const(self, value, dtype) -> str:
        """A constant tensor (an initializer, shared by equal constants)."""
        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            self._consts[key] = self.initializer(array, f"const_{len(self._consts)}")
        return self._consts[key]

    def ints(self, values) -> str:
        """A 1-D int64 constant (axes, shapes, perms)."""
        return self.const(list(values), np.int64)

    # ---------------------------------------------------------------- types

    def shape(self, var) -> list:
        """The var's dims: ints, Dims (sizes that follow the dynamic dims), None (unknown)."""
        return list(self.shapes[id(var)])

    def cast(self, name: str, from_dtype, to_dtype) -> str:
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self.op("Cast", [name], to=onnx_dtype(to_dtype))

    def cast_inputs(self, node, names, dtype=None) -> list[str]:
        """The inputs cast to `dtype` (the op's output dtype by default), as nbflow's kernels
        take them after type promotion (ONNX's arithmetic takes one type)."""
        dtype = node.outputs[0].dtype if dtype is None else dtype
        return [self.cast(n, v.dtype, dtype) for n, v in zip(names, node.inputs)]

    # ---------------------------------------------------------------- sizes

    def axes_input(self, axes) -> str:
        return self.ints(axes)

    def dim(self, dim: Dim) -> str:
        """A 1-element int64 tensor holding a dynamic size, computed from the inputs' shapes."""
        key = tuple(sorted(dim.terms.items()))
        if key in self._dims:
            return self._dims[key]
        total = None
        for mono, coef in sorted(dim.terms.items()):
            term = self.ints([coef]) if not mono or coef != 1 else None
            for symbol in mono:
                size = self.size_of(symbol)
                term = size if term is None else self.op("Mul", [term, size])
            total = term if total is None else self.op("Add", [total, term])
        self._dims[key] = total
        return total

    def size_of(self, symbol: str) -> str:
        """The size of a dynamic dim, read from the shape of an input that has it."""
        key = ("symbol", symbol)
        if key not in self._dims:
            name, axis = self.sources[symbol]
            self._dims[key] = self.op("Shape", [name], start=axis, end=axis + 1)
        return self._dims[key]

    def dims(self, values, what: str) -> str:
        """A 1-D int64 tensor of sizes: ints and Dims (None, an unknown size, raises)."""
        if all(is_static(v) for v in values):
            return self.ints([int(v) for v in values])
        pieces, run = [], []
        for v in values:
            if v is None:
                raise UnsupportedError(f"{what}: a size unknown until the program runs")
            if isinstance(v, Dim):
                if run:
                    pieces.append(self.ints(run))
                    run = []
                pieces.append(self.dim(v))
            else:
                run.append(int(v))
        if run:
            pieces.append(self.ints(run))
        return self.op("Concat", pieces, axis=0)

    def reshape(self, x: str, dims, what: str, copy_leading: int = 0) -> str:
        """Reshape x to `dims` (ints, -1 for one inferred size, Dims, None for unknown). The
        first `copy_leading` dims are the input's (ONNX's 0) where not static; a single size
        that is not static becomes -1; more than one are computed."""
        dims = list(dims)
        for i in range(min(copy_leading, len(dims))):
            if not is_static(dims[i]):
                dims[i] = 0
        open_ = [i for i, d in enumerate(dims) if not is_static(d) or d == -1]
        copying = any(d == 0 for d in dims[:copy_leading])
        if len(open_) <= 1:
            for i in open_:
                dims[i] = -1
            shape = self.ints(dims)
        else:
            shape = self.dims(dims, what)
        allow_zero = 0 if copying or not any(is_static(d) and d == 0 for d in dims) else 1
        return self.op("Reshape", [x, shape], allowzero=allow_zero)

    # ---------------------------------------------------------------- opset-dependent ops

    def reduce(self, kind: str, x: str, axes, keepdims: bool) -> str:
        """Reduce{kind} over `axes` (None: all); axes are an input from opset 18 on (13 for
        ReduceSum)."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.op(f"Reduce{kind}", [x], keepdims=keep)
        axes = [int(a) for a in axes]
        if kind == "Sum" or self.opset >= 18:
            return self.op(f"Reduce{kind}", [x, self.ints(axes)], keepdims=keep)
        return self.op(f"Reduce{kind}", [x], axes=axes, keepdims=keep)

    def model(self, inputs, outputs, name: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        # the IR version of the opset, not the onnx package's newest: older runtimes read it
        return helper.make_model_gen_version(
            graph,
            opset_imports=[helper.make_opsetid("", self.opset)],
            producer_name="nbflow",
        )
