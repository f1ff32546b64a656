"""The text form of a Program: one op per line with var types, the form reviewers read.

program(%x: f32[-1,4], %w: f32[4,3] persistable) {
  %t0: f32[-1,3] = matmul(%x, %w)
  %t1: f32[] = mean(%t0) [axis=None, keepdims=False]
  -- backward --
  ...
  %w!: f32[4,3] = sub_(%w, %t7)        (! marks an in-place write)
}
"""

from ..core import Node
from ..core.dtypes import SHORT


def format_var(v) -> str:
    return f"%{v.name}: {SHORT.get(v.dtype, v.dtype)}[{','.join(map(str, v.shape))}]"


def format_attr(value) -> str:
    if hasattr(value, "name") and hasattr(value, "kind"):  # a numpy dtype
        return SHORT.get(value, str(value))
    return repr(value)


def format_op(node: Node) -> str:
    inplace_outputs = set(node.op.inplace)
    outs = ", ".join(
        format_var(v).replace(":", "!:", 1) if i in inplace_outputs else format_var(v)
        for i, v in enumerate(node.outputs)
    )
    args = ", ".join(f"%{v.name}" for v in node.inputs)
    attrs = ", ".join(f"{k}={format_attr(v)}" for k, v in node.attrs.items() if v is not None)
    return f"{outs} = {node.op.name}({args})" + (f" [{attrs}]" if attrs else "")


def inputs_of(block) -> list:
    """The vars a block reads without producing them (data, parameters, captured)."""
    produced = {id(v) for node in block.ops if not node.op.inplace for v in node.outputs}
    seen, result = set(), []
    for node in block.ops:
        for v in node.inputs:
            if id(v) not in produced and id(v) not in seen and v.block is block:
                seen.add(id(v))
                result.append(v)
    return result


def format_program(program) -> str:
    lines = []
    for block in program.blocks:
        inputs = inputs_of(block) if block.idx == 0 else block.inputs  # a sub-block's params
        header = ", ".join(
            format_var(v) + (" persistable" if v.persistable else "") for v in inputs
        )
        name = "program" if block.idx == 0 else f"block {block.idx} (parent {block.parent})"
        lines.append(f"{name}({header}) {{")
        for i, node in enumerate(block.ops):
            if block.idx == 0 and i == program.backward_start:
                lines.append("  -- backward --")
            lines.append("  " + format_op(node))
        if block.idx > 0:
            lines.append("  return " + ", ".join(f"%{v.name}" for v in block.outputs))
        lines.append("}")
    return "\n".join(lines)
