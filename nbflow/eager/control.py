"""The eager half of nbflow.cond and nbflow.while_loop, the eager trace's `cond` and
`while_loop` (nbflow/control.py is the front door, nbflow/graph/control.py the graph half).

Python runs the chosen branch, or the body while the condition holds. The tape records the
ops that ran, so gradients need nothing more.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..core.errors import ArgumentError, DTypeError, LoopLimitError, ShapeError, user_location
from .operators import Operators

# predicates known when the call is made, in both modes (an int as JAX takes it)
PYTHON_PREDICATES = (bool, int, np.bool_, np.integer)


class EagerControlFlow:
    """The eager trace's control flow (the branch or the loop runs now) and custom gradients
    (their nodes go on the tape)."""

    def custom_gradient(self, on_tape, in_program):
        return on_tape()

    def cond(self, pred, true_fn, false_fn, operands):
        return true_fn(*operands) if truth(pred, "cond") else false_fn(*operands)

    def while_loop(self, cond_fn, body_fn, values, max_iterations, stacked=0):
        iterations, rows = 0, []
        while truth(cond_fn(*values), "while_loop condition"):
            if max_iterations is not None and iterations >= max_iterations:
                raise LoopLimitError(
                    f"while_loop (called at {user_location()}) still runs after "
                    f"max_iterations={max_iterations} iterations"
                )
            new = body_fn(*values)
            new = list(new) if isinstance(new, (tuple, list)) else [new]
            if len(new) != len(values) + stacked:
                raise ShapeError(
                    f"while_loop body returned {len(new)} values for {len(values)} loop vars"
                    + (f" and {stacked} stacked values" if stacked else "")
                )
            if stacked:
                rows.append(new[len(values) :])
            values = new[: len(values)]
            iterations += 1
        if not stacked:
            return values
        if not rows:  # (a program knows the stacked values' types from its trace)
            raise ShapeError("while_loop ran no iteration: its stacked values have no shape")
        return values + [ops.stack(*column) for column in zip(*rows)]


def truth(pred, what: str) -> bool:
    """A predicate's value: a one-element bool tensor, or a Python or numpy truth value."""
    if isinstance(pred, Operators):
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
