"""Optimizers, gradient clipping and learning-rate schedules (PyTorch's semantics and defaults).

An update is one in-place op per parameter (`sgd_update_`, `adam_update_`, `rmsprop_update_`):
`step()` runs it eagerly (under no_grad); `minimize(loss)` appends backward plus the update ops
to the loss's Program, with the optimizer state as persistable vars (`w@EXP_AVG`, `w@STEP`,
...) zero-initialised by the startup program of the current program_guard. The step counter of
Adam is an int64 0-d tensor (a persistable var in graph mode) that the update op increments in
place, so bias correction stays right across runs and after a checkpoint is restored.

Learning rate: `optimizer.lr` (also `optimizer.param_groups[0]["lr"]`) is read by the next
`step()`. In graph mode the lr is an attribute of the update ops: setting `optimizer.lr`
rewrites that attribute in the ops this optimizer appended with `minimize`, so a scheduler
works the same way in both modes (a Program saved afterwards records the current lr).

Optimizer state: eager `state_dict()` / `load_state_dict()` (state tensors by parameter index,
hyperparameters, step counters), storable with `nbflow.save_state`. In graph mode the state
lives in the Scope (`w@EXP_AVG`, ...): `save_state(dict(scope), path)` and
`scope.update(load_state(path))` save and restore parameters and optimizer state together.
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np

from . import dtypes as dt
from . import ops
from .core import no_grad
from .errors import ProgramError, UnsupportedError
from .graph import GraphTrace, Var, append_backward
from .graph.static import _startup
from .tensor import Tensor

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "LRScheduler",
    "Optimizer",
    "RMSProp",
    "RMSprop",
    "StepLR",
    "clip_grad_norm_",
    "clip_grads_by_norm_",
]


class Optimizer:
    """Base class: `hyper` holds the hyperparameters (the update op's attributes), `state`
    the state tensors by parameter index. Subclasses declare `op`, `state_names` and which
    states their options use, and how the op's inputs are formed."""

    op = None
    state_names: tuple[str, ...] = ()
    var_suffix: dict[str, str] = {}  # graph var name suffix per state (default: NAME.upper())

    def __init__(self, params, hyper: dict):
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of tensors, not a tensor")
        self.params = list(params) if params is not None else None
        self.hyper = hyper
        self.param_groups = [hyper]  # PyTorch's spelling: param_groups[0]["lr"]
        self.state: dict[int, dict[str, Tensor]] = {}
        self._graph_nodes: list = []  # the update ops minimize() appended (for lr changes)

    # -------------------------------------------------------------- hyperparameters

    @property
    def lr(self) -> float:
        return self.hyper["lr"]

    @lr.setter
    def lr(self, value: float):
        value = float(value)
        if not value >= 0:
            raise ValueError(f"lr must be >= 0, got {value}")
        self.hyper["lr"] = value
        for node in self._graph_nodes:  # graph mode: the attribute of the appended ops
            node.attrs["lr"] = value

    def attrs(self) -> dict:
        """The update op's attributes (the current hyperparameters)."""
        return dict(self.hyper)

    def used_states(self) -> tuple[str, ...]:
        """The states the current options need (others are passed as stand-ins)."""
        return self.state_names

    def inputs(self, p, g, states: dict) -> list:
        """The update op's inputs for one parameter."""
        raise NotImplementedError

    # -------------------------------------------------------------- eager mode

    def zero_grad(self, set_to_none: bool = True):
        """Forget the gradients (set_to_none=False zeroes them in place instead)."""
        for p in self.params or ():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                with no_grad():
                    ops.zero_(p.grad)

    def step(self):
        """Eager mode: update every parameter that has a gradient, in place."""
        with no_grad():
            for i, p in enumerate(self.params or ()):
                if p.grad is not None:
                    self.op(*self.inputs(p, p.grad, self._eager_state(i, p)), **self.attrs())

    def _eager_state(self, i: int, p: Tensor) -> dict:
        state = self.state.setdefault(i, {})
        for name in self.used_states():
            if name not in state:
                state[name] = _zeros(name, p.shape, p.dtype)
                if p.device != "cpu":  # state lives with its parameter
                    state[name] = state[name].to(p.device)
        return state

    # -------------------------------------------------------------- graph mode

    def minimize(self, loss: Var, parameter_list=None, no_grad_set=None, max_grad_norm=None):
        """Graph mode: append backward and one in-place update op per parameter to the
        loss's program; the state vars are persistable, zero-initialised in the startup
        program of the current program_guard. max_grad_norm: clip the gradients by their
        total 2-norm first (clip_grads_by_norm_). Returns the (param, grad) pairs."""
        if not isinstance(loss, Var):
            raise ProgramError(
                "minimize needs a graph var; in eager mode call backward() and step()"
            )
        params = parameter_list or self.params
        # eager parameters (a Module's, inside @jit): their captured vars, and the optimizer's
        # own eager state tensors captured too, so eager step() and the program share state
        trace = GraphTrace(loss.block)
        tensors = {}
        if params is not None:
            for i, p in enumerate(params):
                if isinstance(p, Tensor):
                    tensors[id(trace.capture(p))] = (i, p)
            params = [trace.capture(p) if isinstance(p, Tensor) else p for p in params]
        pairs = append_backward(loss, params, no_grad_set)
        if max_grad_norm is not None:
            clip_grads_by_norm_([g for _, g in pairs], max_grad_norm)
        for p, g in pairs:
            if id(p) in tensors:
                state = self._eager_state(*tensors[id(p)])
                states = {name: trace.capture(state[name]) for name in self.used_states()}
            else:
                states = {name: self._state_var(p, name) for name in self.used_states()}
            self.op(*self.inputs(p, g, states), **self.attrs())
            self._graph_nodes.append(p._node)  # p is the update's output 0
        return pairs

    def _state_var(self, p: Var, state: str) -> Var:
        block = p.block
        name = f"{p.name}@{self.var_suffix.get(state, state.upper())}"
        if name in block.vars:
            return block.vars[name]
        shape, dtype = ((), dt.int64) if state == "step" else (p.shape, p.dtype)
        v = block.create_var(name, shape, dtype, persistable=True, stop_gradient=True)
        startup = _startup[0]
        if startup is None:
            raise ProgramError(
                f"minimize: %{name} needs a startup program: use program_guard(main, startup)"
            )
        target = startup.global_block().create_var(name, shape, dtype, persistable=True)
        full = ops.REGISTRY["full"]
        attrs = full.check_attrs({"shape": shape, "value": 0, "dtype": dtype})
        startup.global_block().append(full, [], attrs, [target])
        return v

    # -------------------------------------------------------------- state

    def state_dict(self) -> dict:
        """{"state": {param index: {name: tensor}}, "param_groups": [{hyperparameters...,
        "params": [indices]}]} (PyTorch's layout); the tensors are copies."""
        state = {
            i: {name: ops.clone(t) for name, t in s.items()} for i, s in sorted(self.state.items())
        }
        group = {**self.hyper, "params": list(range(len(self.params or ())))}
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict):
        """Restore what state_dict() returned (hyperparameters, state tensors, step
        counters); checked against this optimizer's parameters before anything changes."""
        name = type(self).__name__
        try:
            groups, saved = state_dict["param_groups"], state_dict["state"]
        except (KeyError, TypeError):
            raise ValueError(f"{name}.load_state_dict: needs 'state' and 'param_groups'") from None
        params = self.params or []
        if not isinstance(groups, list) or len(groups) != 1 or not isinstance(groups[0], dict):
            raise ValueError(f"{name}.load_state_dict: expected one parameter group")
        group = dict(groups[0])
        indices = group.pop("params", None)
        if indices != list(range(len(params))):
            raise ValueError(
                f"{name}.load_state_dict: the saved state is for {_count(indices)} parameters, "
                f"this optimizer has {len(params)}"
            )
        if set(group) != set(self.hyper):
            raise ValueError(
                f"{name}.load_state_dict: hyperparameters {sorted(group)} do not match "
                f"{sorted(self.hyper)} (state of another optimizer type?)"
            )
        for key, value in group.items():
            if type(value) is not type(self.hyper[key]):
                raise ValueError(f"{name}.load_state_dict: hyperparameter {key}={value!r}")
        if not isinstance(saved, dict):
            raise ValueError(f"{name}.load_state_dict: 'state' must be a dict")
        state = {}
        for i, entries in saved.items():
            if not isinstance(i, int) or not 0 <= i < len(params) or not isinstance(entries, dict):
                raise ValueError(f"{name}.load_state_dict: bad state entry {i!r}")
            state[i] = {k: self._restored(i, params[i], k, v) for k, v in entries.items()}
        self.hyper.clear()
        self.hyper.update(group)
        self.lr = group["lr"]  # also in the graph ops
        self.state = state

    def _restored(self, i: int, p: Tensor, name: str, value) -> Tensor:
        where = f"{type(self).__name__}.load_state_dict: state '{name}' of parameter {i}"
        if name not in self.state_names:
            raise ValueError(f"{where} is not a state of {type(self).__name__}")
        a = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        shape, dtype = ((), dt.int64) if name == "step" else (p.shape, p.dtype)
        if a.shape != tuple(shape) or a.dtype.kind not in ("iu" if name == "step" else "f"):
            raise ValueError(f"{where} has shape {a.shape} and dtype {a.dtype}, expected {shape}")
        return Tensor(np.array(a, dtype=dtype, order="C"))  # a copy the updates may write

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyper.items())
        return f"{type(self).__name__}({hyper})"


def _zeros(name: str, shape, dtype) -> Tensor:
    if name == "step":
        return Tensor(np.zeros((), dt.int64))
    return Tensor(np.zeros(shape, dtype))


def _count(indices) -> str:
    return str(len(indices)) if isinstance(indices, list) else "an unknown number of"


def _check(**values):
    for name, v in values.items():
        if isinstance(v, bool) or not float(v) >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and
    weight decay (PyTorch's semantics)."""

    op = ops.sgd_update_
    state_names = ("momentum_buffer",)
    var_suffix = {"momentum_buffer": "VELOCITY"}

    def __init__(
        self, params=None, lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False
    ):
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError("lr, momentum and weight_decay must be >= 0")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening 0")
        hyper = {
            "lr": float(lr),
            "momentum": float(momentum),
            "dampening": float(dampening),
            "weight_decay": float(weight_decay),
            "nesterov": bool(nesterov),
        }
        super().__init__(params, hyper)

    def used_states(self):
        return self.state_names if self.hyper["momentum"] else ()

    def inputs(self, p, g, states):
        return [p, g, states.get("momentum_buffer", g)]  # the gradient stands in without momentum


class Adam(Optimizer):
    """Adam (PyTorch's defaults: lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0), with
    bias correction from a per-parameter step counter, optional amsgrad and maximize, and
    decoupled_weight_decay=True for AdamW's decoupled weight decay."""

    op = ops.adam_update_
    state_names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step")

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        amsgrad=False,
        *,
        maximize=False,
        decoupled_weight_decay=False,
    ):
        beta1, beta2 = betas
        _check(lr=lr, eps=eps, weight_decay=weight_decay)
        if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        hyper = {
            "lr": float(lr),
            "beta1": float(beta1),
            "beta2": float(beta2),
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            "decoupled_weight_decay": bool(decoupled_weight_decay),
            "amsgrad": bool(amsgrad),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    @property
    def betas(self) -> tuple[float, float]:
        return self.hyper["beta1"], self.hyper["beta2"]

    def used_states(self):
        if self.hyper["amsgrad"]:
            return self.state_names
        return ("exp_avg", "exp_avg_sq", "step")

    def inputs(self, p, g, s):
        vmax = s.get("max_exp_avg_sq", s["exp_avg_sq"])  # exp_avg_sq stands in (not read)
        return [p, g, s["exp_avg"], s["exp_avg_sq"], vmax, s["step"]]


class AdamW(Adam):
    """Adam with decoupled weight decay (p *= 1 - lr * weight_decay before the Adam step);
    PyTorch's defaults, weight_decay=1e-2."""

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            maximize=maximize,
            decoupled_weight_decay=True,
        )


class RMSProp(Optimizer):
    """RMSProp (PyTorch's RMSprop: lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
    centered=False, maximize=False)."""

    op = ops.rmsprop_update_
    state_names = ("square_avg", "grad_avg", "momentum_buffer")

    def __init__(
        self,
        params=None,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0.0,
        momentum=0.0,
        centered=False,
        *,
        maximize=False,
    ):
        _check(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum)
        hyper = {
            "lr": float(lr),
            "alpha": float(alpha),
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            "momentum": float(momentum),
            "centered": bool(centered),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def used_states(self):
        used = ["square_avg"]
        if self.hyper["centered"]:
            used.append("grad_avg")
        if self.hyper["momentum"] > 0:
            used.append("momentum_buffer")
        return tuple(used)

    def inputs(self, p, g, s):
        # unused states: the gradient stands in (the kernel leaves it unchanged)
        return [p, g, s["square_avg"], s.get("grad_avg", g), s.get("momentum_buffer", g)]


RMSprop = RMSProp  # PyTorch's spelling


class Adagrad(Optimizer):
    """Adagrad (PyTorch's defaults: lr=1e-2, lr_decay=0, weight_decay=0,
    initial_accumulator_value=0, eps=1e-10, maximize=False); the state_sum state holds the
    squared gradients' sum (initial_accumulator_value is added where the kernel reads it)."""

    op = ops.adagrad_update_
    state_names = ("state_sum", "step")

    def __init__(
        self,
        params=None,
        lr=1e-2,
        lr_decay=0.0,
        weight_decay=0.0,
        initial_accumulator_value=0.0,
        eps=1e-10,
        *,
        maximize=False,
    ):
        _check(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps)
        _check(initial_accumulator_value=initial_accumulator_value)
        hyper = {
            "lr": float(lr),
            "lr_decay": float(lr_decay),
            "weight_decay": float(weight_decay),
            "eps": float(eps),
            "initial_accumulator_value": float(initial_accumulator_value),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def inputs(self, p, g, s):
        return [p, g, s["state_sum"], s["step"]]


# ---------------------------------------------------------------- gradient clipping


def clip_grads_by_norm_(grads, max_norm: float, norm_type: float = 2.0):
    """Scale the gradients in place so that their total norm is at most max_norm; returns the
    total norm before clipping (a 0-d float32 value). Written with ops only, so it works on
    eager tensors and on graph vars (minimize(max_grad_norm=...) uses it): as in PyTorch, the
    gradients are multiplied by min(1, max_norm / (total + 1e-6))."""
    grads = [g for g in grads if g is not None]
    norm_type = float(norm_type)
    if not norm_type > 0:
        raise ValueError(f"norm_type must be > 0 (or inf), got {norm_type}")
    if not grads:
        return ops.zeros()
    with no_grad():
        wide = [g if g.dtype != dt.float16 else ops.cast(g, dtype=dt.float32) for g in grads]
        if math.isinf(norm_type):
            total = ops.max(ops.stack(*[ops.max(ops.abs(g)) for g in wide]))
        elif norm_type == 2.0:
            total = ops.sqrt(ops.add_n(*[ops.sum(g * g) for g in wide]))
        else:
            powers = [ops.sum(ops.abs(g) ** norm_type) for g in wide]
            total = ops.add_n(*powers) ** (1.0 / norm_type)
        coef = ops.clip(float(max_norm) / (total + 1e-6), max=1.0)
        for g in grads:
            ops.mul_(g, coef if g.dtype == coef.dtype else ops.cast(coef, dtype=g.dtype))
    return total


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0):
    """Eager mode (PyTorch's torch.nn.utils.clip_grad_norm_): clip the .grad of `parameters`
    (a tensor or an iterable of them) in place; returns the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    params = list(parameters)
    if any(isinstance(p, Var) for p in params):
        raise UnsupportedError(
            "clip_grad_norm_ is eager; in graph mode use minimize(loss, max_grad_norm=...) or "
            "clip_grads_by_norm_ on the gradient vars"
        )
    return clip_grads_by_norm_([p.grad for p in params], max_norm, norm_type)


# ---------------------------------------------------------------- learning-rate schedules


class LRScheduler:
    """Sets optimizer.lr from the epoch count: call step() once per epoch, after the
    optimizer's steps (PyTorch's convention; constructing it sets the lr for epoch 0). The lr
    is a closed-form function of the epoch, so resuming only needs last_epoch (state_dict)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        self.base_lr = optimizer.lr
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, epoch: int) -> float:
        raise NotImplementedError

    def get_lr(self) -> float:
        return self.lr_at(self.last_epoch)

    def step(self):
        self.last_epoch += 1
        self.optimizer.lr = self.get_lr()

    def get_last_lr(self) -> list[float]:
        return [self.optimizer.lr]

    def state_dict(self) -> dict:
        # (a function, as LambdaLR's lr_lambda, is code: not saved, as in PyTorch)
        return {k: v for k, v in vars(self).items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state_dict: dict):
        own = self.state_dict()
        if set(state_dict) != set(own):
            raise ValueError(f"{type(self).__name__}.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)
        self.optimizer.lr = self.get_lr()


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if int(step_size) < 1:
            raise ValueError(f"step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return self.base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (the number of milestones <= epoch)."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return self.base_lr * self.gamma ** sum(1 for m in self.milestones if m <= epoch)


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return self.base_lr * self.gamma**epoch


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch) (the function is not part of state_dict)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        if not callable(lr_lambda):
            raise TypeError(f"lr_lambda must be callable, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        return self.base_lr * float(self.lr_lambda(epoch))


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2: PyTorch's
    CosineAnnealingLR in its closed form (the same values, periodic past T_max)."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if int(T_max) < 1:
            raise ValueError(f"T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch):
        cos = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (self.base_lr - self.eta_min) * cos


class ReduceLROnPlateau:
    """Multiply the lr by `factor` when a metric (step(metric), once per epoch) has not
    improved for `patience` epochs, then wait `cooldown` epochs; never below min_lr.
    PyTorch's rules: 'min' mode improves below best * (1 - threshold) ('rel') or best -
    threshold ('abs'); 'max' mode above."""

    def __init__(
        self,
        optimizer: Optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0.0,
        eps=1e-8,
    ):
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(f"mode {mode!r} / threshold_mode {threshold_mode!r} unknown")
        if not 0.0 <= factor < 1.0:
            raise ValueError(f"factor must be in [0, 1), got {factor}")
        self.optimizer = optimizer
        self.mode, self.factor, self.patience = mode, float(factor), int(patience)
        self.threshold, self.threshold_mode = float(threshold), threshold_mode
        self.cooldown, self.min_lr, self.eps = int(cooldown), float(min_lr), float(eps)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = self.cooldown_counter = 0
        self.last_epoch = 0

    def _better(self, value: float) -> bool:
        lower = self.mode == "min"
        if self.threshold_mode == "rel":
            limit = self.best * (1 - self.threshold if lower else 1 + self.threshold)
        else:
            limit = self.best - self.threshold if lower else self.best + self.threshold
        return value < limit if lower else value > limit

    def step(self, metrics):
        value = float(metrics.item() if hasattr(metrics, "item") else metrics)
        self.last_epoch += 1
        if self._better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            new = max(self.optimizer.lr * self.factor, self.min_lr)
            if self.optimizer.lr - new > self.eps:
                self.optimizer.lr = new
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0

    def get_last_lr(self) -> list[float]:
        return [self.optimizer.lr]

    def state_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict):
        own = self.state_dict()
        if set(state_dict) != set(own):
            raise ValueError(f"ReduceLROnPlateau.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)


# PyTorch's torch.optim.lr_scheduler: the schedules under that name too (a module, so that
# `from nbflow.optim.lr_scheduler import StepLR` works as well)
lr_scheduler = types.ModuleType(f"{__name__}.lr_scheduler", "nbflow's learning-rate schedules.")
_SCHEDULES = (LRScheduler, StepLR, MultiStepLR, ExponentialLR, LambdaLR, CosineAnnealingLR)
for _schedule in (*_SCHEDULES, ReduceLROnPlateau):
    setattr(lr_scheduler, _schedule.__name__, _schedule)
sys.modules[lr_scheduler.__name__] = lr_scheduler
