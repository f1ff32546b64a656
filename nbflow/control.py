"""Control flow: nbflow.cond and nbflow.while_loop, one API for both modes.

    y = nbflow.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, [x])
    i, acc = nbflow.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc * w), [0, x])

Eager mode runs Python directly: the chosen branch, or the body while the condition holds.
The tape records the ops actually executed, so gradients need nothing more. Under a graph
trace (a program guard, or @nbflow.jit) each function is traced into a sub-block of the
Program and one `cond` or `while` op refers to the sub-blocks (nbflow/graph/control.py).

This module is the front door and the eager half; the graph half is nbflow/graph/control.py.
"""

from __future__ import annotations

from .core import STATE, is_int
from .core.errors import ArgumentError, DTypeError, LoopLimitError, ShapeError, user_location
from .eager.tensor import EagerTrace, Tensor
from .graph.control import PYTHON_PREDICATES, graph_cond, graph_while

__all__ = ["cond", "while_loop"]


def _graph_mode() -> bool:
    return not isinstance(STATE.trace, EagerTrace)


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands).

    pred: a bool tensor with one element (or a Python bool). Both functions return a tensor
    or a flat tuple/list of tensors; in graph mode the two results must agree in number,
    dtype and rank (a dim on which they differ is -1 in the output and known at run time)."""
    operands = _as_list(operands, "operands")
    if _graph_mode():
        return graph_cond(pred, true_fn, false_fn, operands)
    return true_fn(*operands) if _truth(pred, "cond") else false_fn(*operands)


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
        raise ValueError(f"max_iterations must be an int >= 0 or None, got {max_iterations!r}")
    max_iterations = None if max_iterations is None else int(max_iterations)
    if _graph_mode():
        finals = graph_while(cond_fn, body_fn, values, max_iterations)
    else:
        finals = _eager_while(cond_fn, body_fn, values, max_iterations)
    return finals[0] if single else finals


def _eager_while(cond_fn, body_fn, values, max_iterations):
    iterations = 0
    while _truth(cond_fn(*values), "while_loop condition"):
        if max_iterations is not None and iterations >= max_iterations:
            raise LoopLimitError(
                f"while_loop (called at {user_location()}) still runs after max_iterations="
                f"{max_iterations} iterations"
            )
        new = body_fn(*values)
        new = list(new) if isinstance(new, (tuple, list)) else [new]
        if len(new) != len(values):
            raise ShapeError(
                f"while_loop body returned {len(new)} values for {len(values)} loop vars"
            )
        values = new
        iterations += 1
    return values


def _truth(pred, what: str) -> bool:
    if isinstance(pred, Tensor):
        if pred.dtype.kind != "b":
            raise DTypeError(f"{what}: the predicate must be a bool tensor, got {pred.dtype}")
        if pred.size != 1:
            raise ShapeError(f"{what}: the predicate must have one element, got shape {pred.shape}")
        return bool(pred.numpy().reshape(()))  # (a host copy of a GPU predicate)
    if not isinstance(pred, PYTHON_PREDICATES):
        raise ArgumentError(
            f"{what}: the predicate must be a bool tensor or a Python bool, got "
            f"{type(pred).__name__}"
        )
    return bool(pred)


def _as_list(values, what: str) -> list:
    if isinstance(values, (tuple, list)):
        return list(values)
    raise TypeError(f"{what} must be a tuple or list, got {type(values).__name__}")
