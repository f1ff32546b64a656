"""append_backward: gradient ops appended to a Program by the same driver and the same
gradient rules as eager backward (nbflow.autograd.backprop under a graph trace)."""

from __future__ import annotations

from .. import ops
from ..autograd.backprop import backprop, edge_key
from ..core import use_trace
from ..core.errors import ProgramError
from .program import GraphTrace, Var, _edge


def append_backward(loss: Var, parameter_list=None, no_grad_set=None) -> list[tuple[Var, Var]]:
    """Append the ops computing d(loss)/d(parameters); returns (param, grad) pairs.

    parameter_list: Vars or names (default: every trainable persistable var the loss reaches).
    no_grad_set: Vars or names that get no gradient (nor does anything only they lead to);
    vars with stop_gradient=True never do."""
    if not isinstance(loss, Var):
        raise ProgramError(f"append_backward needs a graph var, got {type(loss).__name__}")
    if loss.stop_gradient:
        raise ProgramError(f"%{loss.name} does not depend on anything trainable")
    block = loss.block
    skip = {edge_key(_edge(_var(block, v))) for v in (no_grad_set or ())}
    skip.discard(edge_key(None))
    leaves = gradients(loss, skip=skip)
    if parameter_list is None:
        params = [v for v in block.vars.values() if v.persistable and v.requires_grad]
    else:
        params = [_var(block, p) for p in parameter_list]
    pairs = []
    for p in params:
        grad = leaves.get(id(p), (None, None))[1]
        if grad is not None:
            _rename(block, grad, f"{p.name}@GRAD")
            pairs.append((p, grad))
    return pairs


def gradients(loss: Var, seed: Var | None = None, skip=frozenset()) -> dict:
    """Append the backward of `loss` to its block, seeded by ones_like(loss) (the seed that
    marks a loss whose updates follow: executor.updates) or by `seed`; returns the eager
    driver's leaves (id -> (leaf var, gradient var)). append_backward and, under @jit,
    loss.backward() (jit.Grads) both append through here."""
    block = loss.block
    program = block.program
    if program.backward_start is None:
        program.backward_start = len(block.ops)
    with use_trace(GraphTrace(block)):
        seed = ops.ones_like(loss) if seed is None else seed
        leaves, _ = backprop([loss], [seed], create_graph=True, skip=skip)
    return leaves


def _var(block, v) -> Var:
    if isinstance(v, Var):
        return v
    try:
        return block.var(v)
    except KeyError:
        raise ProgramError(f"the program has no var named '{v}'") from None


def _rename(block, v: Var, name: str):
    """Give a gradient var a readable name (param@GRAD), when that name is free."""
    if name in block.vars or block.vars.get(v.name) is not v:
        return
    del block.vars[v.name]
    v.name = name
    block.vars[name] = v
