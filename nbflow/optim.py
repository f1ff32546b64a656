"""Optimizers. An update is one in-place op per parameter: `step()` runs it eagerly (under
no_grad), `minimize(loss)` appends backward plus the update ops to the loss's Program."""

from __future__ import annotations

from . import ops
from .core import no_grad
from .errors import ProgramError
from .graph import Var, append_backward
from .graph.static import _startup
from .tensor import Tensor


class SGD:
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
    weight decay (PyTorch's semantics)."""

    def __init__(
        self, params=None, lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False
    ):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening 0")
        self.params = list(params) if params is not None else None
        self.hyper = {
            "lr": float(lr),
            "momentum": float(momentum),
            "dampening": float(dampening),
            "weight_decay": float(weight_decay),
            "nesterov": bool(nesterov),
        }
        self.velocity: dict[int, Tensor] = {}

    def zero_grad(self):
        for p in self.params or ():
            p.grad = None

    def step(self):
        """Eager mode: update every parameter that has a gradient, in place."""
        with no_grad():
            for p in self.params or ():
                if p.grad is None:
                    continue
                ops.sgd_update_(p, p.grad, self._velocity(p), **self.hyper)

    def _velocity(self, p: Tensor) -> Tensor:
        if not self.hyper["momentum"]:
            return p.grad  # unused without momentum: no state to keep
        v = self.velocity.get(id(p))
        if v is None:
            v = self.velocity[id(p)] = ops.zeros_like(p)
        return v

    def minimize(self, loss: Var, parameter_list=None, no_grad_set=None):
        """Graph mode: append backward and one in-place update op per parameter to the
        loss's program; velocities are persistable vars zero-initialised in the startup
        program of the current program_guard. Returns the (param, grad) pairs."""
        if not isinstance(loss, Var):
            raise ProgramError(
                "minimize needs a graph var; in eager mode call backward() and step()"
            )
        pairs = append_backward(loss, parameter_list or self.params, no_grad_set)
        for p, g in pairs:
            ops.sgd_update_(p, g, self._velocity_var(p, g), **self.hyper)
        return pairs

    def _velocity_var(self, p: Var, grad: Var) -> Var:
        if not self.hyper["momentum"]:
            return grad  # unused without momentum: no state to keep
        block = p.block
        name = f"{p.name}@VELOCITY"
        if name in block.vars:
            return block.vars[name]
        v = block.create_var(name, p.shape, p.dtype, persistable=True, stop_gradient=True)
        startup = _startup[0]
        if startup is None:
            raise ProgramError(
                f"minimize: %{name} needs a startup program: use program_guard(main, startup)"
            )
        target = startup.global_block().create_var(name, p.shape, p.dtype, persistable=True)
        full = ops.REGISTRY["full"]
        attrs = full.check_attrs({"shape": p.shape, "value": 0.0, "dtype": p.dtype})
        startup.global_block().append(full, [], attrs, [target])
        return v
