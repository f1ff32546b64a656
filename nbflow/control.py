"""Control flow: nbflow.cond and nbflow.while_loop, one API for both modes.

    y = nbflow.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, [x])
    i, acc = nbflow.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc * w), [0, x])

This module is the front door: it checks the arguments and hands the call to the current
trace. Eager mode runs Python directly (nbflow/eager/control.py): the chosen branch, or the
body while the condition holds, and the tape records the ops actually executed. Under a graph
trace (a program guard, or @nbflow.jit) each function is traced into a sub-block of the
Program and one `cond` or `while` op refers to the sub-blocks (nbflow/graph/control.py).
"""

from __future__ import annotations

from .core import STATE, is_int
from .core.errors import ArgumentError, DomainError, ShapeError

__all__ = ["cond", "while_loop"]


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands).

    pred: a bool tensor with one element (or a Python bool). Both functions return a tensor
    or a flat tuple/list of tensors; in graph mode the two results must agree in number,
    dtype and rank (a dim on which they differ is -1 in the output and known at run time)."""
    return STATE.trace.cond(pred, true_fn, false_fn, _as_list(operands, "operands"))


def while_loop(cond_fn, body_fn, loop_vars, max_iterations=None):
    """Run `loop_vars = body_fn(*loop_vars)` while `cond_fn(*loop_vars)` holds; returns the
    final loop vars (a single value if loop_vars was one tensor, else a list).

    cond_fn returns a bool tensor with one element; body_fn returns as many values as there
    are loop vars, each keeping its dtype and rank. max_iterations bounds the loop:
    LoopLimitError when the condition still holds after that many iterations. Gradients
    flow through the loop in both modes (graph mode keeps each iteration's loop vars)."""
    single = not isinstance(loop_vars, (tuple, list))
    values = [loop_vars] if single else list(loop_vars)
    if not values:
        raise ShapeError("while_loop needs at least one loop var")
    if max_iterations is not None and (not is_int(max_iterations) or max_iterations < 0):
        raise DomainError(f"max_iterations must be an int >= 0 or None, got {max_iterations!r}")
    max_iterations = None if max_iterations is None else int(max_iterations)
    finals = STATE.trace.while_loop(cond_fn, body_fn, values, max_iterations)
    return finals[0] if single else finals


def _as_list(values, what: str) -> list:
    if isinstance(values, (tuple, list)):
        return list(values)
    raise ArgumentError(f"{what} must be a tuple or list, got {type(values).__name__}")
