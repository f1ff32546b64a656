"""The graph IR: Program, Block, Var, and the graph trace that records ops into a block.

A Program holds blocks (block 0 is global; control flow will add sub-blocks with a parent).
A block holds vars and ops; an op is a core.Node (the same record the eager tape uses) whose
inputs and outputs are Vars. Calling any op on Vars goes through bind() to GraphTrace.apply,
which runs the op's shape rule at build time (a bad shape fails at the user's line) and
appends a node. An in-place op's output is its target Var itself: the printout marks the write.
"""

from __future__ import annotations

import linecache
import os
import sys

import numpy as np

from .. import ops
from ..core import REGISTRY, STATE, Node, Op, Spec, Trace, no_grad
from ..core import dtypes as dt
from ..core.errors import (
    NbflowError,
    ProgramError,
    TracedValueError,
    UnsupportedError,
    locate,
    user_frame,
    user_location,
)
from ..core.views import (
    RESHAPES,
    UNCERTAIN_WRITE,
    ViewOf,
    check_write,
    poison,
    refresh_if_stale,
    restamp,
    write_back,
    written_view,
)
from ..eager.operators import Operators, Size
from ..eager.tensor import Stale, Tensor, stale_message, tensor


def _user_line() -> tuple[str, str]:
    """("file.py:LINE", the line's source) of the user code running now."""
    frame = user_frame(sys._getframe(2))
    if frame is None:
        return "?", ""
    where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    return where, linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()


def truth_message(v) -> str:
    """Why `if v:` / `while v:` fails on a graph value, naming the user's line and what to
    write instead."""
    where, source = _user_line()
    quoted = f" `{source}`" if source else ""
    if source.startswith("while"):
        use = "nbflow.while_loop(cond_fn, body_fn, loop_vars) for a loop the program runs"
    elif source.startswith(("if", "elif")) or " if " in source:
        use = "nbflow.cond(pred, true_fn, false_fn, operands) for a branch the program takes"
    else:
        use = "nbflow.cond (a branch) or nbflow.while_loop (a loop), which the program runs"
    return (
        f"{where}:{quoted} needs the truth value of %{v.name}, which is known only when the "
        f"program runs; use {use}, or decide on a Python value instead"
    )


class Var(Operators):
    """A value in a Program: name, shape (-1 = known only at run time), dtype, and flags."""

    __slots__ = (
        "name",
        "shape",
        "dtype",
        "persistable",
        "stop_gradient",
        "is_data",
        "block",
        "location",
        "_node",
        "_index",
        "_version",
        "_view",
    )
    __hash__ = object.__hash__  # == builds an eq op; identity stays the hash

    def __init__(self, block, name, shape, dtype, persistable=False, stop_gradient=None):
        self.block = block
        self.name = name
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.persistable = persistable
        # only float and complex values carry gradients
        self.stop_gradient = (
            (not dt.differentiable(self.dtype))
            if stop_gradient is None
            else (stop_gradient or not dt.differentiable(self.dtype))
        )
        self.is_data = False
        self.location = None
        self._node = None
        self._index = 0
        self._version = [0]  # bumped by each in-place write recorded into the program
        self._view = None  # how a view var was taken (nbflow/core/views.py)

    def _adopt_history(self, other: Var):
        """Take other's history (a view re-taken from its base: nbflow/core/views.py)."""
        self._node, self._index, self.stop_gradient = other._node, other._index, other.stop_gradient

    @property
    def requires_grad(self) -> bool:
        return not self.stop_gradient

    def detach(self) -> Var:
        """The value without its gradient (eager detach(), under jit too): a copy here,
        where an eager detach() shares memory (the program writes neither in place)."""
        with no_grad():
            return ops.clone(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Size:
        """The element count (-1 when a dim is unknown); size() and size(axis) as PyTorch's."""
        return Size(self.shape)

    @property
    def spec(self) -> Spec:
        return Spec(self.shape, self.dtype)

    @property
    def program(self) -> Program:
        return self.block.program

    def __repr__(self) -> str:
        return f"%{self.name}: {self.spec}"

    def __bool__(self):
        raise TracedValueError(truth_message(self))

    def __len__(self):
        if not self.shape or self.shape[0] < 0:
            raise TracedValueError(f"len() of %{self.name} with shape {self.shape}")
        return self.shape[0]

    def _no_value(self, what: str):
        """A value read (item(), float(), ...) that a graph value cannot answer: names the
        user's line and what to write instead."""
        where, source = _user_line()
        quoted = f" `{source}`" if source else ""
        raise TracedValueError(
            f"{where}:{quoted} calls {what} on %{self.name}, a graph value known only when "
            "the program runs; return it from the @jit function (or fetch it with "
            f"Executor.run) and call {what} on the result, or keep to tensor ops here"
        )

    def numpy(self, *args, **kwargs):
        self._no_value("numpy()")

    def __array__(self, *args, **kwargs):
        self._no_value("numpy.asarray()")

    def item(self, *args):
        self._no_value("item()")

    def tolist(self):
        self._no_value("tolist()")

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def __complex__(self):
        self._no_value("complex()")

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Under @jit: append this loss's backward to the traced program and bind each
        captured tensor's .grad to its gradient (accumulating as eager mode does: jit.Grads).
        A static program (program_guard) has no .grad to fill: ProgramError."""
        grads = self.program.grads
        if grads is None:
            error = ProgramError(
                f"%{self.name}.backward() in a static program: use "
                "nbflow.append_backward(loss) for the gradient vars, or "
                "optimizer.minimize(loss) for backward and updates"
            )
            raise locate(error, user_location())
        try:
            grads.backward(self, gradient, create_graph, inputs)
        except NbflowError as e:  # (the user's backward() line)
            raise locate(e, user_location()) from None

    def __getattr__(self, name):
        # only for a name that is not there: a typed error (still an AttributeError, so
        # hasattr() and getattr(v, name, default) work)
        if name.startswith("__"):
            raise AttributeError(name)
        raise TracedAttributeError(
            f"%{self.name} is a graph value (a Var), which has no attribute '{name}'; it "
            "takes nbflow's tensor ops and methods: call the function without @jit to use "
            f"'{name}', or return the value and use it on the result"
        )


class TracedAttributeError(TracedValueError, AttributeError):
    """An attribute a graph value does not have (nbflow's type, and an AttributeError)."""


class Block:
    """Vars by name and ops in order; `parent` is the enclosing block's index (-1 for none)."""

    def __init__(self, program: Program, idx: int, parent: int = -1):
        self.program = program
        self.idx = idx
        self.parent = parent
        self.vars: dict[str, Var] = {}
        self.ops: list[Node] = []
        self.constants: dict[tuple, Var] = {}  # (type, value, dtype) -> var (GraphTrace)
        # a sub-block is a function: the op that holds it binds `inputs` (local vars) to its
        # own input values and takes `outputs` as its results (see graph/control.py)
        self.inputs: list[Var] = []
        self.outputs: list[Var] = []

    def var(self, name: str) -> Var:
        """The var `name`, looked up here and then in the enclosing blocks."""
        block = self
        while block is not None:
            if name in block.vars:
                return block.vars[name]
            block = self.program.blocks[block.parent] if block.parent >= 0 else None
        raise KeyError(name)

    def create_var(self, name=None, shape=(), dtype=dt.float32, **flags) -> Var:
        name = name or self.program.unique_name("t")
        if name in self.vars:
            raise UnsupportedError(f"a var named '{name}' already exists in block {self.idx}")
        v = self.vars[name] = Var(self, name, shape, dtype, **flags)
        self.program.version += 1
        return v

    def append(self, op: Op, inputs, attrs, outputs, location=None, write_back=False) -> Node:
        """Append a node (no shape inference: GraphTrace.apply does that).

        Versions work as in eager mode: an in-place write bumps its target's version, and
        the node keeps the versions its gradient rule would read (inputs before the write,
        outputs after), so backward can tell a value that was overwritten since. A
        `write_back` (the base's history after a write through one of its views,
        nbflow/core/views.py) changes no value: the memory holds the write already, so it is no
        new version and what the write's own node saved stays current."""
        edges = [_edge(v) for v in inputs]
        if op.view:  # a view shares its base's version counter, as in eager mode
            for v in outputs:
                v._version = inputs[0]._version
        in_versions = [v._version[0] for v in inputs]
        if not write_back:
            for j in op.inplace.values():
                inputs[j]._version[0] += 1
        node = Node(op, list(inputs), attrs, list(outputs), None, edges)
        node.versions = (in_versions, [v._version[0] for v in outputs])
        if write_back:
            node.write_back = True
        node.location = location or user_location()
        node.grad_of = STATE.differentiating  # set while append_backward runs a rule
        for i, v in enumerate(outputs):
            v._node, v._index = node, i
        if op.view:  # (a reshape copies where the layout needs it: an uncertain view here)
            for i, v in enumerate(outputs):
                v._view = ViewOf(op, inputs[0], attrs, i, certain=op.name not in RESHAPES)
        if write_back and inputs[0]._view is None:  # the chain reached the base
            restamp(written_view(op, inputs))  # the written views are current again
        self.ops.append(node)
        self.program.version += 1
        return node


def _edge(v: Var):
    """Where v's gradient goes (as tensor.grad_edge does for Tensors)."""
    if v._node is not None and not v.stop_gradient:
        return (v._node, v._index)
    return v if v.requires_grad else None


class Program:
    """Blocks of vars and ops. `version` changes with every edit (executor plans key on it)."""

    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.version = 0
        self.captured: dict[str, Tensor] = {}  # eager tensors the program reads (by var name)
        self.backward_start: int | None = None  # index in block 0 where backward ops begin
        self.grads = None  # while @jit traces it: the .grad bindings of its tensors (jit.Grads)
        self._names = 0

    def global_block(self) -> Block:
        return self.blocks[0]

    def create_block(self, parent: int = 0) -> Block:
        block = Block(self, len(self.blocks), parent)
        self.blocks.append(block)
        return block

    def unique_name(self, prefix: str) -> str:
        while True:
            name = f"{prefix}{self._names}"
            self._names += 1
            if all(name not in b.vars for b in self.blocks):
                return name

    def __str__(self) -> str:
        from .printer import format_program

        return format_program(self)

    def to_dot(self, target=None) -> str:
        """The program as Graphviz DOT text; `target`: a fetch target whose pruned ops are
        drawn grey (graph/draw.py)."""
        from .draw import to_dot

        return to_dot(self, target)

    def to_svg(self, target=None) -> str:
        """The program drawn as SVG by Graphviz (the `graphviz` package and its `dot` program:
        GraphvizNotFoundError without them; graph/draw.py)."""
        from .draw import to_svg

        return to_svg(self, target)

    def _repr_svg_(self):
        from .draw import repr_svg

        return repr_svg(self)  # (None without graphviz: Jupyter shows the text)

    def ops(self) -> list[Node]:
        return list(self.global_block().ops)

    def prune(self, targets) -> Program:
        """A Program of its own with only the ops the targets (vars or ops) need: no update
        runs unless it is a target (its vars are copies, fetched by name or by this
        program's vars)."""
        from .executor import needed_ops

        block = self.global_block()
        targets = [block.var(t) if isinstance(t, str) else t for t in targets]
        return self.copy(needed_ops(block, targets))

    def clone(self, for_test: bool = False) -> Program:
        """A copy of this Program; for_test=True keeps the forward ops alone (PaddlePaddle's
        clone for evaluation: no backward, no update, so fetching the loss leaves the
        parameters as they are). A module's train/eval mode is baked in when it is traced:
        build the test program after model.eval() for dropout and batch norm in eval mode."""
        ops = self.global_block().ops
        if for_test and self.backward_start is not None:
            return self.copy(ops[: self.backward_start])
        clone = self.copy(ops)
        clone.backward_start = self.backward_start  # fetching a loss still runs its updates
        return clone

    def copy(self, ops) -> Program:
        """A Program holding copies of `ops` (block 0's, in order) and of the vars they use,
        so that it prints, runs and takes new ops on its own; sub-blocks are shared (the
        control flow ops refer to them by index)."""
        copy = Program()
        copy.blocks += self.blocks[1:]
        copy._names = self._names
        source, block = self.global_block(), copy.global_block()
        new_vars, new_nodes, counters = {}, {}, {}

        def var(v: Var) -> Var:
            if v.block is not source:
                return v
            new = new_vars.get(id(v))
            if new is None:
                new = new_vars[id(v)] = block.create_var(
                    v.name,
                    v.shape,
                    v.dtype,
                    persistable=v.persistable,
                    stop_gradient=v.stop_gradient,
                )
                new.is_data, new.location = v.is_data, v.location
                new._version = counters.setdefault(id(v._version), [v._version[0]])
            return new

        def edge(e):
            if type(e) is tuple:
                node = new_nodes.get(id(e[0]))
                return None if node is None else (node, e[1])
            return None if e is None else var(e)

        for node in ops:
            inputs, outputs = [var(v) for v in node.inputs], [var(v) for v in node.outputs]
            edges = [edge(e) for e in node.edges]
            new = Node(node.op, inputs, dict(node.attrs), outputs, node.versions, edges)
            for name in ("location", "grad_of", "write_back"):
                setattr(new, name, getattr(node, name))
            if node.rule_inputs is not None:
                new.rule_inputs = [var(v) for v in node.rule_inputs]
            for i, v in enumerate(outputs):  # (as Block.append: the last writer's history)
                v._node, v._index = new, i
            new_nodes[id(node)] = new
            block.ops.append(new)
        copy.captured = {k: t for k, t in self.captured.items() if k in block.vars}
        copy.version += 1
        return copy


def unique(values) -> list:
    """The values in order, each object once (vars compare by identity: == builds an op)."""
    seen, out = set(), []
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def _checked(node, v: Var, version: int, what: str):
    if v._version[0] == version:
        return v
    return Stale(stale_message(node, what, version, v._version[0]), v)


def _number(value):
    """A Python int or float for a `value` attr (bools as 0/1)."""
    return (
        int(value)
        if isinstance(value, (bool, np.bool_))
        else value.item()
        if isinstance(value, np.generic)
        else value
    )


class GraphTrace(Trace):
    """Records ops into a block instead of running them (bind() calls apply)."""

    records = True

    def __init__(self, block: Block):
        self.block = block

    def cond(self, pred, true_fn, false_fn, operands):
        from .control import graph_cond  # (control flow's ops are built on this module)

        return graph_cond(pred, true_fn, false_fn, operands)

    def while_loop(self, cond_fn, body_fn, values, max_iterations, stacked=0):
        from .control import graph_while

        return graph_while(cond_fn, body_fn, values, max_iterations, stacked=stacked)

    def custom_gradient(self, on_tape, in_program):
        return in_program()

    def apply(self, op: Op, args, attrs):
        attrs = op.check_attrs(attrs)
        values = []
        for i, a in enumerate(args):
            if isinstance(a, Stale):  # inside a gradient rule (see tensor.Stale)
                if not op.reads_only_shape(i):
                    return a if len(op.outputs) == 1 else (a,) * len(op.outputs)
                a = a.placeholder()
            values.append(self.value(a))
        for v in values:
            if isinstance(v, Var):
                refresh_if_stale(v)  # its base was written since: re-take it (nbflow/core/views.py)
        specs = [
            v.spec if isinstance(v, Var) else Spec((), dt.scalar_dtype(v), weak=True)
            for v in values
        ]
        out_specs = op.infer(specs, attrs)  # raises at the user's line for a bad shape
        key = op.key_dtype(specs) if specs else None
        key = out_specs[0].dtype if key is None else key
        op.kernel("cpu", key)  # an unsupported dtype fails now, not when the program runs
        promoted = range(len(values)) if op.promote is None else op.promote
        inputs = [
            v if isinstance(v, Var) else self.constant(v, key if i in promoted else specs[i].dtype)
            for i, v in enumerate(values)
        ]
        # as in eager mode: an output carries gradients when the op is differentiable, some
        # input does and gradients are on (a no_grad() block in a traced function)
        stop = not (op.differentiable and STATE.grad_enabled) or all(
            v.stop_gradient for v in inputs
        )
        written_views = [] if stop else [inputs[j] for j in op.inplace.values() if inputs[j]._view]
        for v in written_views:
            check_write(op, v)
        outputs = []
        for i, s in enumerate(out_specs):
            j = op.inplace.get(i)
            if j is not None:
                outputs.append(inputs[j])  # the write target itself
            else:
                outputs.append(
                    self.block.create_var(shape=s.shape, dtype=s.dtype, stop_gradient=stop)
                )
        rule_inputs = self.save_targets(op, inputs)
        node = self.block.append(op, inputs, attrs, outputs)
        node.rule_inputs = rule_inputs
        for j in op.inplace.values():  # after the write, the target carries what it holds
            inputs[j].stop_gradient = inputs[j].stop_gradient and stop
        for v in written_views:  # the base gets the write's history (nbflow/core/views.py)
            if v._view.certain:
                self.write_back(v)
            else:
                poison(v._view.base, UNCERTAIN_WRITE)
                restamp(v)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def write_back(self, view: Var):
        """Append the write-back of a write through `view` into its parent, and on up to the
        base (nbflow/core/views.py; no new version, see Block.append)."""
        op, inputs, attrs = write_back(view)
        parent = inputs[0]
        self.block.append(op, inputs, attrs, [parent], write_back=True)
        parent.stop_gradient = all(v.stop_gradient for v in inputs)
        if parent._view is not None:
            self.write_back(parent)

    def save_targets(self, op: Op, inputs):
        """For an in-place op whose gradient reads the target's old value (mul_): a copy of
        the target made just before the write, for the rule (as eager mode does)."""
        if not op.saves_target or all(inputs[j].stop_gradient for j in op.inplace.values()):
            return None
        rule_inputs = list(inputs)
        for j in op.inplace.values():
            rule_inputs[j] = self.apply(REGISTRY["cast"], (inputs[j],), {"dtype": inputs[j].dtype})
        return rule_inputs

    def value(self, a):
        """A Var, a weak Python scalar, or a captured eager tensor (as a persistable var)."""
        if isinstance(a, Var):
            return a if a.block is self.block else self.outer(a)
        if isinstance(a, (bool, int, float, complex, np.bool_, np.number)):
            return a
        v = self.capture(a if isinstance(a, Tensor) else tensor(a))  # a var of block 0
        return v if v.block is self.block else self.outer(v)

    def outer(self, v: Var) -> Var:
        """A var of another block read here: fine from an enclosing block (a sub-block's
        trace, graph/control.py, turns it into a block input); a var made inside a control
        flow function that escaped it has no value here."""
        block = self.block
        while block is not None and block is not v.block:
            block = block.program.blocks[block.parent] if block.parent >= 0 else None
        if block is None:
            raise ProgramError(
                f"%{v.name} was computed inside another cond/while_loop function (or another "
                "program): return it from that function to use it outside"
            )
        return v

    def capture(self, t: Tensor) -> Var:
        """An eager tensor used by the program: a persistable var bound to it, named as its
        module names it ("linear_0.weight", as PaddlePaddle's layers name their parameters),
        else "captured<n>"."""
        program = self.block.program
        for name, held in program.captured.items():
            if held is t:
                return program.global_block().vars[name]
        name = getattr(t, "_name", None)
        if name is None or any(name in b.vars for b in program.blocks):
            name = program.unique_name("captured" if name is None else f"{name}_")
        v = program.global_block().create_var(
            name,
            t.shape,
            t.dtype,
            persistable=True,
            stop_gradient=not t.requires_grad,
        )
        program.captured[v.name] = t
        return v

    def constant(self, value, dtype) -> Var:
        """A 0-d var holding a Python scalar, made by a `full` op (once per block and value:
        nothing writes constants, so ops share them)."""
        key = (type(value), value, np.dtype(dtype))
        cached = self.block.constants.get(key)
        if cached is not None:
            return cached
        if isinstance(value, (complex, np.complexfloating)):  # (no complex attrs: a tensor)
            out = self.block.constants[key] = self.capture(tensor(value, dtype=dtype))
            return out
        out = self.block.constants[key] = self.block.create_var(
            shape=(), dtype=dtype, stop_gradient=True
        )
        full = REGISTRY["full"]
        attrs = full.check_attrs({"shape": (), "value": _number(value), "dtype": dtype})
        self.block.append(full, [], attrs, [out])
        return out

    def saved(self, node: Node):
        """(outputs, inputs) for the node's gradient rule: the Vars, or a Stale placeholder
        for one overwritten in place after the node (its value at run time would be wrong).
        A target copied for the rule (save_targets) stands in for the target."""
        in_versions, out_versions = node.versions
        if getattr(node.op, "view", False):  # its rule reads only shapes, kept by writes
            return list(node.outputs), list(node.inputs)
        outs = [
            _checked(node, v, n, f"output {i}")
            for i, (v, n) in enumerate(zip(node.outputs, out_versions))
        ]
        ins = [
            r if r is not v else _checked(node, v, n, "an input")
            for r, v, n in zip(node.rule_inputs or node.inputs, node.inputs, in_versions)
        ]
        return outs, ins


def compatible(compile_shape, run_shape) -> bool:
    """Whether a run-time shape is an instance of a compile-time one (-1 matches any size)."""
    if compile_shape == run_shape:  # the common case, without the generator
        return True
    return len(compile_shape) == len(run_shape) and all(
        c == -1 or c == r for c, r in zip(compile_shape, run_shape)
    )
