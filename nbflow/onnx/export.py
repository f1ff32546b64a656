"""nbflow.onnx.export: a Program, or a Module or function traced for inference, as an ONNX
model (ops from the table in ops.py, parameters and constants as initializers).

A Module or function is traced by nbflow.graph.trace in eval mode, without gradients. A
dynamic dim (`dynamic_axes`) is found in the traced Program's sizes by tracing again at other
sizes (shapes.py). A Program is exported as it is: its dims of -1 are dynamic.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import onnx
from onnx import helper

import nbflow
from nbflow import ProgramError, UnsupportedError
from nbflow.graph import Program, global_scope, needed_ops, trace

from ..core.errors import DomainError
from .builder import Builder, NotExported, onnx_dtype
from .ops import CONVERTERS, slice_
from .shapes import Dim, Mismatch, merge, subsets

DEFAULT_OPSET = 17
MIN_OPSET = 17


class UnmappedOpError(UnsupportedError):
    """An op of the exported program that has no ONNX mapping; `op` is its name."""

    def __init__(self, op: str, message: str):
        super().__init__(message)
        self.op = op


def supported_ops() -> list[str]:
    """The nbflow ops the exporter maps to ONNX."""
    return sorted(CONVERTERS)


def export(
    model,
    example_inputs=None,
    path=None,
    *,
    input_names=None,
    output_names=None,
    opset_version: int = DEFAULT_OPSET,
    dynamic_axes=None,
    scope=None,
    check: bool = True,
) -> onnx.ModelProto:
    """Export `model` to ONNX; returns the ModelProto and writes it to `path` (a file name or
    a binary file object) when given.

    model: an nn.Module or a function of tensors (traced on `example_inputs`, a tensor or a
    tuple of them, in eval mode; a @jit function is traced as its Python function), or a
    Program (example_inputs are not needed; its data vars are the inputs, `output_names`
    picks the vars to export, by default those no op reads; persistables it did not capture
    are read from `scope`, the global scope by default).

    input_names / output_names: the ONNX graph's names, as torch.onnx.export's. dynamic_axes:
    {name: {axis: dim name}} or {name: [axis, ...]} for inputs and outputs, as PyTorch's; an
    input's dynamic dim may then differ from the example's at run time (an output's follow).

    Raises UnmappedOpError naming the first op with no ONNX mapping."""
    if not MIN_OPSET <= opset_version <= onnx.defs.onnx_opset_version():
        raise DomainError(
            f"opset_version {opset_version} is outside {MIN_OPSET}.."
            f"{onnx.defs.onnx_opset_version()} (the onnx package's newest)"
        )
    dynamic_axes = _axes_spec(dynamic_axes or {})
    if isinstance(model, Program):
        plan = _program_plan(model, input_names, output_names, dynamic_axes, scope)
    else:
        plan = _traced_plan(model, example_inputs, input_names, output_names, dynamic_axes)
    proto = _build(plan, opset_version, dynamic_axes)
    if check:
        onnx.checker.check_model(proto, full_check=True)
    if path is not None:
        if isinstance(path, (str, os.PathLike)):
            onnx.save(proto, os.fspath(path))
        else:
            path.write(proto.SerializeToString())
    return proto


# ---------------------------------------------------------------- what to export


class Plan:
    """The ops to export and what the ONNX graph needs to know about them."""

    def __init__(self, nodes, inputs, outputs, attrs, shapes, sources, params):
        self.nodes = nodes  # Program ops, in order
        self.inputs = inputs  # [(var, onnx name)]
        self.outputs = outputs  # [(var, onnx name)]
        self.attrs = attrs  # id(node) -> attrs (ints that follow the dynamic dims as Dims)
        self.shapes = shapes  # id(var) -> dims
        self.sources = sources  # dynamic dim's symbol -> (input name, axis)
        self.params = params  # persistable var name -> numpy array
        self.param_names = {}  # persistable var name -> initializer name, where it differs


def _axes_spec(dynamic_axes) -> dict:
    """{name: {axis: dim name}}, PyTorch's list form given default dim names."""
    spec = {}
    for name, axes in dynamic_axes.items():
        if isinstance(axes, dict):
            spec[name] = {int(a): str(d) for a, d in axes.items()}
        else:
            spec[name] = {int(a): f"{name}_dim{int(a)}" for a in axes}
    return spec


def _names(given, count: int, default, what: str) -> list[str]:
    if given is None:
        return [default(i) for i in range(count)]
    given = list(given)
    if len(given) != count:
        raise ProgramError(f"{what}: {len(given)} names for {count} {what.split('_')[0]}s")
    return [str(n) for n in given]


@contextlib.contextmanager
def _inference(model):
    """The model in eval mode and no gradients, its modules' modes restored after."""
    modes = [(m, m.training) for m in model.modules()] if _is_module(model) else []
    if modes:
        model.eval()
    try:
        with nbflow.no_grad():
            yield
    finally:
        for m, mode in modes:  # (parents first: each train() resets its descendants)
            m.train(mode)


def _is_module(model) -> bool:
    return isinstance(model, nbflow.nn.Module)


def _arrays(example_inputs) -> list[np.ndarray]:
    if example_inputs is None:
        raise ProgramError("export: a module or function needs example_inputs to trace")
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    arrays = []
    for x in example_inputs:
        if not isinstance(x, (nbflow.Tensor, np.ndarray)):
            raise UnsupportedError(
                f"export: example inputs must be tensors (got {type(x).__name__}); bind other "
                "arguments with functools.partial or a lambda"
            )
        arrays.append(x.numpy() if isinstance(x, nbflow.Tensor) else x)
    return arrays


def _traced_plan(model, example_inputs, input_names, output_names, dynamic_axes) -> Plan:
    fn = getattr(model, "fn", model) if type(model).__name__ == "JitFunction" else model
    arrays = _arrays(example_inputs)
    names = _names(input_names, len(arrays), lambda i: f"input_{i}", "input_names")
    symbols, places = _symbols(names, [a.shape for a in arrays], dynamic_axes)
    with _inference(model):
        base = _trace(fn, arrays)
        traces = [base]
        keys = subsets(symbols)
        sizes = {}
        if symbols:
            for key in keys[1:]:
                traces.append(_trace(fn, _resized(arrays, places, symbols, set(key), 1)))
            check = _trace(fn, _resized(arrays, places, symbols, set(symbols), 2))
            sizes = {s: n + 2 for s, n in symbols.items()}
    program, ins, outs, nodes = base
    out_names = _names(output_names, len(outs), _output_name(len(outs)), "output_names")
    if not symbols:
        attrs = {id(n): n.attrs for n in nodes}
        shapes = {id(v): tuple(v.shape) for n in nodes for v in (*n.inputs, *n.outputs)}
        shapes.update({id(v): tuple(v.shape) for v in (*ins, *outs)})
    else:
        attrs, shapes = _merged(traces, check, keys, symbols, sizes)
    params = {name: t.numpy() for name, t in program.captured.items()}
    plan = Plan(
        nodes,
        list(zip(ins, names)),
        list(zip(outs, out_names)),
        attrs,
        shapes,
        {s: (names[i], axis) for s, ((i, axis), *_) in places.items()},
        params,
    )
    if _is_module(model):  # initializers named as the state_dict names them
        keys = {id(t): k for k, t in (*model.named_parameters(), *model.named_buffers())}
        for name, t in program.captured.items():
            plan.param_names[name] = keys.get(id(t), name)
    return plan


def _output_name(count: int):
    return (lambda i: "output") if count == 1 else (lambda i: f"output_{i}")


def _trace(fn, arrays):
    program, ins, outs = trace(fn, *arrays)
    return program, ins, outs, needed_ops(program.global_block(), outs)


def _symbols(names, shapes, dynamic_axes):
    """{symbol: example size} and {symbol: [(input index, axis), ...]} of the dynamic input
    dims."""
    symbols, places = {}, {}
    for i, (name, shape) in enumerate(zip(names, shapes)):
        for axis, symbol in dynamic_axes.get(name, {}).items():
            if not -len(shape) <= axis < len(shape):
                raise ProgramError(f"dynamic_axes: input '{name}' has no axis {axis}")
            axis %= len(shape)
            if symbols.setdefault(symbol, shape[axis]) != shape[axis]:
                raise ProgramError(
                    f"dynamic_axes: dim '{symbol}' is {symbols[symbol]} in one example input "
                    f"and {shape[axis]} in input '{name}'"
                )
            places.setdefault(symbol, []).append((i, axis))
    return symbols, places


def _resized(arrays, places, symbols, bumped: set, by: int):
    """The examples with the dims of the `bumped` symbols `by` larger (values repeated)."""
    shapes = [list(a.shape) for a in arrays]
    for symbol in bumped:
        for i, axis in places[symbol]:
            shapes[i][axis] = symbols[symbol] + by
    return [np.resize(a, s) for a, s in zip(arrays, shapes)]


def _merged(traces, check, keys, symbols, sizes):
    """The attrs and shapes of the example's trace, with the sizes that follow the dynamic
    dims as Dims, fitted over the traces and checked on `check`."""
    runs = [*traces, check]
    kinds = [[n.op.name for n in t[3]] for t in runs]
    if any(k != kinds[0] for k in kinds):
        raise Mismatch(
            "export: the model runs other ops when the dynamic dims change (Python code that "
            "branches on a size): it cannot be exported with these dynamic_axes"
        )
    base_sizes = dict(symbols)
    attrs, shapes = {}, {}

    def fit(values, what):
        return merge(values[:-1], list(keys), base_sizes, values[-1], sizes, what)

    def fit_vars(vars_by_run, what):
        for vs in zip(*vars_by_run):
            if id(vs[0]) not in shapes:
                shapes[id(vs[0])] = tuple(
                    fit([tuple(v.shape) for v in vs], f"{what} %{vs[0].name}")
                )

    fit_vars([t[1] for t in runs], "input")
    for nodes in zip(*(t[3] for t in runs)):
        node = nodes[0]
        attrs[id(node)] = {
            k: fit([n.attrs[k] for n in nodes], f"{node.op.name}: attr '{k}'") for k in node.attrs
        }
        fit_vars([n.inputs for n in nodes], node.op.name)
        fit_vars([n.outputs for n in nodes], node.op.name)
    fit_vars([t[2] for t in runs], "output")
    return attrs, shapes


def _program_plan(program, input_names, output_names, dynamic_axes, scope) -> Plan:
    block = program.global_block()
    if output_names is None:
        outs = _sinks(program)
    else:
        outs = [v if not isinstance(v, str) else _var(block, v) for v in output_names]
    nodes = needed_ops(block, outs)
    produced, ins = set(), {}  # the vars read before any op writes them are the inputs
    for node in nodes:
        for v in node.inputs:
            if id(v) not in produced and not v.persistable:
                ins.setdefault(id(v), v)
        produced.update(id(v) for v in node.outputs)
    for v in outs:
        if id(v) not in produced and not v.persistable:
            ins.setdefault(id(v), v)
    ins = list(ins.values())
    names = _names(input_names, len(ins), lambda i: ins[i].name, "input_names")
    out_names = [v.name for v in outs]
    shapes, sources = {}, {}
    for node in nodes:
        for v in (*node.inputs, *node.outputs):
            shapes[id(v)] = tuple(None if d == -1 else d for d in v.shape)
    for v in outs:
        shapes[id(v)] = tuple(None if d == -1 else d for d in v.shape)
    for v, name in zip(ins, names):
        given = dynamic_axes.get(name, {})
        dims = list(v.shape)
        for axis, d in enumerate(v.shape):
            if d == -1:
                symbol = given.get(axis, given.get(axis - len(dims), f"{name}_dim{axis}"))
                dims[axis] = Dim({(symbol,): 1})
                sources.setdefault(symbol, (name, axis))
        for axis in given:
            if v.shape[axis] != -1:
                raise ProgramError(
                    f"dynamic_axes: the program fixes dim {axis} of %{v.name} at "
                    f"{v.shape[axis]}; build it with -1 there (nb.static.data), or export the "
                    "module or function, which the exporter traces at several sizes"
                )
        shapes[id(v)] = tuple(dims)
    params = {}
    scope = global_scope() if scope is None else scope
    for node in nodes:
        for v in node.inputs:
            if v.persistable and v.name not in params:
                value = program.captured.get(v.name, scope.get(v.name))
                if value is None:
                    raise ProgramError(
                        f"export: persistable %{v.name} has no value in the scope (run the "
                        "startup program, or pass scope=)"
                    )
                params[v.name] = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    return Plan(
        nodes,
        list(zip(ins, names)),
        list(zip(outs, out_names)),
        {id(n): n.attrs for n in nodes},
        shapes,
        sources,
        params,
    )


def _var(block, name: str):
    try:
        return block.var(name)
    except KeyError:
        raise ProgramError(f"export: the program has no var named '{name}'") from None


def _sinks(program):
    """The vars the program's forward ops write and no op reads (not persistables)."""
    block = program.global_block()
    end = program.backward_start if program.backward_start is not None else len(block.ops)
    ops = block.ops[:end]
    read = {id(v) for node in ops for v in node.inputs}
    sinks = [v for node in ops for v in node.outputs if id(v) not in read and not v.persistable]
    if not sinks:
        raise ProgramError("export: the program computes nothing to export")
    return sinks


# ---------------------------------------------------------------- the ONNX graph


def _build(plan: Plan, opset: int, dynamic_axes: dict) -> onnx.ModelProto:
    b = Builder(opset, plan.shapes, plan.sources)
    env = {}
    b.taken.update(name for _, name in plan.inputs)
    b.taken.update(name for _, name in plan.outputs)
    for v, name in plan.inputs:
        env[id(v)] = name
    graph_inputs = [
        _value_info(name, v, plan.shapes[id(v)], dynamic_axes.get(name, {}))
        for v, name in plan.inputs
    ]
    for node in plan.nodes:
        for v in node.inputs:
            if id(v) not in env and v.persistable:
                name = plan.param_names.get(v.name, v.name)
                env[id(v)] = b.initializer(plan.params[v.name], name)
        _convert(b, node, plan.attrs[id(node)], env)
    graph_outputs = []
    for v, name in plan.outputs:
        source = env.get(id(v))
        if isinstance(source, NotExported):
            raise UnsupportedError(f"export: output '{name}' is the {source.what} of {source.op}")
        if source is None:  # a persistable returned as it is
            source = b.initializer(plan.params[v.name], plan.param_names.get(v.name, v.name))
        b.nodes.append(helper.make_node("Identity", [source], [name]))
        graph_outputs.append(_value_info(name, v, plan.shapes[id(v)], dynamic_axes.get(name, {})))
    return b.model(graph_inputs, graph_outputs, "nbflow")


def _convert(b: Builder, node, attrs: dict, env: dict):
    name = node.op.name
    where = f" (defined at {node.location})" if getattr(node, "location", None) else ""
    convert = CONVERTERS.get(name)
    if convert is None:
        raise UnmappedOpError(
            name,
            f"ONNX export: nbflow op '{name}'{where} has no ONNX mapping "
            "(nbflow.onnx.supported_ops() lists the ops that have one)",
        )
    if node.op.inplace or getattr(node, "write_back", False):
        raise UnmappedOpError(
            name, f"ONNX export: op '{name}'{where} writes in place, which ONNX cannot express"
        )
    ins = [env[id(v)] for v in node.inputs]
    for x in ins:
        if isinstance(x, NotExported) and convert is not slice_:
            raise UnsupportedError(f"ONNX export: op '{name}'{where} reads the {x.what} of {x.op}")
    b.hint = node.outputs[0].name if node.outputs else name
    try:
        result = convert(b, node, ins, **attrs)
    except UnsupportedError as e:
        raise type(e)(f"ONNX export: {e}{where}") from None
    outs = [result] if not isinstance(result, (list, tuple)) else list(result)
    for v, out in zip(node.outputs, outs):
        env[id(v)] = out


def _value_info(name: str, var, dims, named_axes: dict):
    shape = []
    for axis, d in enumerate(dims):
        if isinstance(d, Dim):
            shape.append(named_axes.get(axis, d.symbol))
        elif d is None:
            shape.append(named_axes.get(axis))
        else:
            if axis in named_axes:
                raise ProgramError(
                    f"dynamic_axes: dim {axis} of '{name}' is {d} whatever the dynamic input "
                    "dims are"
                )
            shape.append(int(d))
    return helper.make_tensor_value_info(name, onnx_dtype(var.dtype), shape)
