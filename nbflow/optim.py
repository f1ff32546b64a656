"""Optimizers, gradient clipping and learning-rate schedules (PyTorch's semantics and defaults).

An update is one in-place op per parameter (`sgd_update_`, `adam_update_`, `rmsprop_update_`),
or for Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD a composition of tensor ops (see
"composed updates" below): `step()` runs it eagerly (under no_grad); `minimize(loss)` appends
backward plus the updates to the loss's Program, with the optimizer state as persistable vars
(`w@EXP_AVG`, `w@STEP`, ...) initialised by the startup program of the current program_guard.
The step counter of Adam is an int64 0-d tensor (a persistable var in graph mode) that the
update op increments in place, so bias correction stays right across runs and after a
checkpoint is restored.

Parameter groups are PyTorch's: `SGD([{"params": [w]}, {"params": [b], "lr": 0.1}], lr=0.01)`
gives each group its own hyperparameters (the constructor's where a group sets none);
`add_param_group` adds one. Learning rate: `optimizer.param_groups[i]["lr"]` is read by the
next `step()`; `optimizer.lr` is the first group's (setting it sets every group's). In graph
mode the lr is an attribute of the update ops: writing a group's hyperparameter (a
`ParamGroup`, a dict) rewrites that attribute in the ops this optimizer appended with
`minimize` for the group's parameters (a composed update reads the group's 0-d hyperparameter
tensors, which the write fills), so a scheduler, or a loop over param_groups, works the same
way in both modes (a Program saved afterwards records the current lr).

Optimizer state: eager `state_dict()` / `load_state_dict()` (state tensors by parameter index,
hyperparameters, step counters), storable with `nbflow.save_state`. In graph mode the state
lives in the Scope (`w@EXP_AVG`, ...): `save_state(dict(scope), path)` and
`scope.update(load_state(path))` save and restore parameters and optimizer state together.
"""

from __future__ import annotations

import bisect
import math
import sys
import types

import numpy as np

from . import dtypes as dt
from . import ops
from .core import enable_grad, no_grad
from .errors import ProgramError, UnsupportedError
from .graph import GraphTrace, Var, append_backward
from .graph.static import _startup
from .tensor import Tensor

__all__ = [
    "ASGD",
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "RAdam",
    "Rprop",
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
    """Base class. `param_groups` are PyTorch's: one dict per group of parameters, its
    "params" and its hyperparameters (the constructor's, `defaults`, unless the group sets
    its own). `hyper` is the group whose parameters are being updated (the first group
    outside step() and minimize()): subclasses read their options there. `state` holds the
    state tensors by parameter index (over all groups, in order). Subclasses declare `op`,
    `state_names` and which states their options use, and how the op's inputs are formed."""

    op = None
    state_names: tuple[str, ...] = ()
    host_states: tuple[str, ...] = ()  # states that stay on the CPU (read as Python numbers)
    var_suffix: dict[str, str] = {}  # graph var name suffix per state (default: NAME.upper())

    def __init__(self, params, hyper: dict):
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of tensors, not a tensor")
        self.defaults = hyper
        self.param_groups: list[dict] = []
        self.params = None  # all groups' parameters in order (None: a program's, minimize)
        if params is not None:
            params = list(params)
            groups = params if params and isinstance(params[0], dict) else [{"params": params}]
            self.params = []
            for group in groups:
                self.add_param_group(group)
        else:  # (graph mode: the program's parameters, minimize())
            self.param_groups.append(ParamGroup(self, {"params": [], **hyper}))
        if not self.param_groups:
            raise ValueError(f"{type(self).__name__}: no parameter groups given")
        self.hyper = self.param_groups[0]
        self.state: dict[int, dict[str, Tensor]] = {}
        self._graph_nodes: list = []  # (update op, its group) that minimize() appended

    def add_param_group(self, group: dict):
        """Add a group of parameters with its own hyperparameters (the others: defaults)."""
        name = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{name}: a parameter group is a dict with a 'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        group = _split_pairs(group, self.defaults)
        unknown = set(group) - set(self.defaults) - {"params", *SCHEDULE_KEYS}
        if unknown:
            raise ValueError(f"{name}: unknown hyperparameters {sorted(unknown)} in a group")
        seen = {id(p) for p in self.params or ()}
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
            raise ValueError(f"{name}: some parameters appear in more than one group")
        full = {**self.defaults, **{k: v for k, v in group.items() if k != "params"}}
        self._check_group(full)
        if self.params is None:
            self.params = []
        self.params += params
        self.param_groups.append(ParamGroup(self, {"params": params, **full}))

    def _check_group(self, hyper: dict):
        """Refuse a group's hyperparameters the constructor would refuse (lr >= 0 here)."""
        if not float(hyper["lr"]) >= 0:
            raise ValueError(f"lr must be >= 0, got {hyper['lr']}")

    # -------------------------------------------------------------- hyperparameters

    @property
    def lr(self) -> float:
        """The first group's lr; setting it sets every group's."""
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value: float):
        for group in self.param_groups:
            self.set_hyper(group, "lr", value)

    def set_hyper(self, group: dict, name: str, value: float):
        """A group's hyperparameter for the next step(), and in the update ops minimize()
        appended for its parameters (graph mode: their attributes)."""
        value = float(value)
        if name == "lr" and not value >= 0:
            raise ValueError(f"lr must be >= 0, got {value}")
        group[name] = value  # (ParamGroup: also into the graph ops)

    def attrs(self) -> dict:
        """The update op's attributes: the hyperparameters of the group being updated."""
        return {k: self.hyper[k] for k in self.defaults}

    def _groups(self):
        """(group, its parameters' indices) for each group, each made the current `hyper`
        while the caller works on it (the first group again after)."""
        start = 0
        try:
            for group in self.param_groups:
                self.hyper = group
                yield group, range(start, start + len(group["params"]))
                start += len(group["params"])
        finally:
            self.hyper = self.param_groups[0]

    fixed_by_minimize: tuple[str, ...] = ()  # hyperparameters minimize() builds in
    newer_options: tuple[str, ...] = ()  # hyperparameters a saved state may lack

    def used_states(self) -> tuple[str, ...]:
        """The states the current options need (others are passed as stand-ins)."""
        return self.state_names

    def states_for(self, p) -> tuple[str, ...]:
        """The states parameter p needs: used_states() (Adafactor's depend on p's rank)."""
        return self.used_states()

    def _check_states_kept(self, group: dict, key: str, value):
        """Refuse a hyperparameter write that needs a state the updates minimize() appended
        for this group were built without (momentum turned on: the program has no velocity
        to keep, and would go on without momentum)."""
        current = self.hyper
        try:
            self.hyper = group
            before = set(self.used_states())
            self.hyper = {**group, key: value}
            missing = set(self.used_states()) - before
        finally:
            self.hyper = current
        if missing:
            raise UnsupportedError(
                f"{type(self).__name__}: {key}={value!r} needs the state {sorted(missing)}, "
                "which the program minimize() appended was built without; give the option "
                "its non-zero value when minimize() is called"
            )

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

    def step(self, closure=None):
        """Eager mode: update every parameter that has a gradient, in place. `closure`, if
        given, is called first with gradients on (it recomputes the loss and its gradients)
        and its loss returned, as in PyTorch."""
        loss = _evaluate(closure)
        with no_grad():
            for group, indices in self._groups():
                attrs = self.attrs()  # once per group (made per parameter: ~2 us each)
                for i, p in zip(indices, group["params"]):
                    if p.grad is not None:
                        state = self._eager_state(i, p)
                        self.op(*self.inputs(p, p.grad, state), **attrs)
        return loss

    def _eager_state(self, i: int, p: Tensor) -> dict:
        state = self.state.setdefault(i, {})
        for name in self.states_for(p):
            if name not in state:
                shape, dtype, value = self.state_spec(name, p)
                state[name] = Tensor(np.full(shape, value, dtype))  # (no op: minimize traces)
                if p.device != "cpu" and name not in self.host_states:
                    state[name] = state[name].to(p.device)  # state lives with its parameter
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
        tensors = {}  # id(captured var) -> (index, tensor, group)
        if params is not None:
            group_of = {}
            for group, indices in self._groups():
                group_of.update((id(p), (i, group)) for i, p in zip(indices, group["params"]))
            for i, p in enumerate(params):
                if isinstance(p, Tensor):
                    j, group = group_of.get(id(p), (i, self.param_groups[0]))
                    tensors[id(trace.capture(p))] = (j, p, group)
            params = [trace.capture(p) if isinstance(p, Tensor) else p for p in params]
        pairs = append_backward(loss, params, no_grad_set)
        pairs = _average_over_ranks(pairs, tensors)
        if max_grad_norm is not None:
            clip_grads_by_norm_([g for _, g in pairs], max_grad_norm)
        try:
            for p, g in pairs:
                if id(p) in tensors:  # (a program's own parameters: the first group's options)
                    i, tensor, self.hyper = tensors[id(p)]
                    state = self._eager_state(i, tensor)
                    states = {name: trace.capture(state[name]) for name in self.states_for(p)}
                else:
                    states = {name: self._state_var(p, name) for name in self.states_for(p)}
                self._append_update(trace, p, g, states)
                self.hyper = self.param_groups[0]
        finally:
            self.hyper = self.param_groups[0]
        return pairs

    def _append_update(self, trace: GraphTrace, p: Var, g: Var, states: dict):
        """Append p's update op (minimize), its attrs the current group's hyperparameters."""
        self.op(*self.inputs(p, g, states), **self.attrs())
        self._graph_nodes.append((p._node, self.hyper))  # p: the update's output 0

    def state_spec(self, name: str, p) -> tuple:
        """(shape, dtype, initial value) of state `name` for parameter p."""
        return ((), dt.int64, 0) if name == "step" else (p.shape, p.dtype, 0.0)

    def _state_var(self, p: Var, state: str) -> Var:
        block = p.block
        name = f"{p.name}@{self.var_suffix.get(state, state.upper())}"
        if name in block.vars:
            return block.vars[name]
        shape, dtype, value = self.state_spec(state, p)
        v = block.create_var(name, shape, dtype, persistable=True, stop_gradient=True)
        startup = _startup[0]
        if startup is None:
            raise ProgramError(
                f"minimize: %{name} needs a startup program: use program_guard(main, startup)"
            )
        target = startup.global_block().create_var(name, shape, dtype, persistable=True)
        full = ops.REGISTRY["full"]
        attrs = full.check_attrs({"shape": shape, "value": value, "dtype": dtype})
        startup.global_block().append(full, [], attrs, [target])
        return v

    # -------------------------------------------------------------- state

    def state_dict(self) -> dict:
        """{"state": {param index: {name: tensor}}, "param_groups": [{hyperparameters...,
        "params": [indices]}]} (PyTorch's layout); the tensors are copies."""
        state = {
            i: {name: ops.clone(t) for name, t in s.items()} for i, s in sorted(self.state.items())
        }
        groups = [
            {**{k: v for k, v in group.items() if k != "params"}, "params": list(indices)}
            for group, indices in self._groups()
        ]
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict):
        """Restore what state_dict() returned (hyperparameters, state tensors, step
        counters); checked against this optimizer's parameters before anything changes."""
        name = type(self).__name__
        try:
            groups, saved = state_dict["param_groups"], state_dict["state"]
        except (KeyError, TypeError):
            raise ValueError(f"{name}.load_state_dict: needs 'state' and 'param_groups'") from None
        params = self.params or []
        own = [list(indices) for _, indices in self._groups()]
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise ValueError(f"{name}.load_state_dict: 'param_groups' must be a list of dicts")
        if [g.get("params") for g in groups] != own:
            sizes = [_count(g.get("params")) for g in groups]
            raise ValueError(
                f"{name}.load_state_dict: the saved state is for groups of {sizes} parameters, "
                f"this optimizer has {[len(indices) for indices in own]}"
            )
        options = []
        for group in groups:
            group = {k: v for k, v in group.items() if k != "params"}
            for key in self.newer_options:  # (a state saved before the option existed)
                group.setdefault(key, self.defaults[key])
            if set(group) - SCHEDULE_KEYS != set(self.defaults):
                raise ValueError(
                    f"{name}.load_state_dict: hyperparameters {sorted(group)} do not match "
                    f"{sorted(self.defaults)} (state of another optimizer type?)"
                )
            for key, value in group.items():
                if key in self.defaults and type(value) is not type(self.defaults[key]):
                    raise ValueError(f"{name}.load_state_dict: hyperparameter {key}={value!r}")
            options.append(group)
        if not isinstance(saved, dict):
            raise ValueError(f"{name}.load_state_dict: 'state' must be a dict")
        state = {}
        for i, entries in saved.items():
            if not isinstance(i, int) or not 0 <= i < len(params) or not isinstance(entries, dict):
                raise ValueError(f"{name}.load_state_dict: bad state entry {i!r}")
            state[i] = {k: self._restored(i, params[i], k, v) for k, v in entries.items()}
        for group, saved_options in zip(self.param_groups, options):
            for key, value in saved_options.items():
                if type(value) is float:
                    self.set_hyper(group, key, value)  # (also in the graph ops)
                else:
                    group[key] = value
        self.state = state

    def _restored(self, i: int, p: Tensor, name: str, value) -> Tensor:
        where = f"{type(self).__name__}.load_state_dict: state '{name}' of parameter {i}"
        if name not in self.state_names:
            raise ValueError(f"{where} is not a state of {type(self).__name__}")
        a = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        shape, dtype, _ = self.state_spec(name, p)
        if a.shape != tuple(shape) or a.dtype.kind not in ("iu" if dtype in dt.INTS else "f"):
            raise ValueError(f"{where} has shape {a.shape} and dtype {a.dtype}, expected {shape}")
        restored = Tensor(np.array(a, dtype=dtype, order="C"))  # a copy the updates may write
        if p.device != "cpu" and name not in self.host_states:
            restored = restored.to(p.device)  # state lives with its parameter (_eager_state)
        return restored

    def __repr__(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyper.items() if k in self.defaults)
        groups = f", {len(self.param_groups)} groups" if len(self.param_groups) > 1 else ""
        return f"{type(self).__name__}({hyper}{groups})"


# group entries the schedules add (LRScheduler's initial_lr, SWALR's swa_lr), saved and
# restored with the group's hyperparameters
SCHEDULE_KEYS = {"initial_lr", "swa_lr"}


def _average_over_ranks(pairs, tensors: dict) -> list:
    """Graph mode's DistributedDataParallel: the gradient of each parameter a DDP module
    reduces, averaged over its ranks by an allreduce op ahead of the update."""
    if not tensors:
        return pairs
    from . import distributed

    out = []
    for p, g in pairs:
        ring = distributed.data_parallel_ring(tensors[id(p)][1]) if id(p) in tensors else None
        if ring is not None:
            g = ops.collective.allreduce(g, reduce_op="avg", ring_id=ring)
        out.append((p, g))
    return out


def _evaluate(closure):
    """A step's closure called with gradients on (PyTorch's step(closure)); its loss."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


# PyTorch's pair-valued hyperparameters, which nbflow keeps as two numbers each
PAIRS = {
    "betas": ("beta1", "beta2"),
    "etas": ("etaminus", "etaplus"),
    "step_sizes": ("step_size_min", "step_size_max"),
}


def _split_pairs(group: dict, defaults: dict) -> dict:
    """A group dict with PyTorch's pairs ({"betas": (0.5, 0.9)}) as nbflow's two entries."""
    out = dict(group)
    for key, (a, b) in PAIRS.items():
        if key in out and a in defaults:
            out[a], out[b] = (float(v) for v in out.pop(key))
    return out


class ParamGroup(dict):
    """A parameter group: a dict, as PyTorch's, whose hyperparameter writes
    (`group["lr"] = 0.01`) also reach the programs minimize() appended updates to (the
    attribute of an update op, or the 0-d tensor a composed update reads), so graph mode
    follows them as eager mode does."""

    def __init__(self, optimizer: Optimizer, entries: dict):
        super().__init__(entries)
        self.optimizer = optimizer
        self.tensors: dict[str, Tensor] = {}  # hyperparameter -> its 0-d tensor (composed)

    def __getitem__(self, key):
        pair = PAIRS.get(key)
        if pair is not None and pair[0] in self:  # PyTorch's name for two entries
            return (super().__getitem__(pair[0]), super().__getitem__(pair[1]))
        return super().__getitem__(key)

    def __contains__(self, key):
        pair = PAIRS.get(key)
        return super().__contains__(pair[0] if pair is not None else key)

    def __setitem__(self, key, value):
        pair = PAIRS.get(key)
        if pair is not None and pair[0] in self:
            first, second = value
            self[pair[0]], self[pair[1]] = float(first), float(second)
            return
        nodes = [n for n, group in self.optimizer._graph_nodes if group is self]
        if nodes and key in self.optimizer.fixed_by_minimize and value != self.get(key):
            raise UnsupportedError(
                f"{type(self.optimizer).__name__}: {key} is built into the updates minimize() "
                "appended; give it its value when minimize() is called"
            )
        nodes = [n for n in nodes if key in n.attrs]
        if nodes:
            self.optimizer._check_states_kept(self, key, value)
        super().__setitem__(key, value)
        for node in nodes:
            node.attrs[key] = value
        if key in self.tensors:
            with no_grad():
                ops.fill_(self.tensors[key], value)

    def tensor(self, key: str) -> Tensor:
        """Hyperparameter `key` as a 0-d float64 tensor that writes to it keep current."""
        if key not in self.tensors:
            self.tensors[key] = Tensor(np.array(self[key], np.float64))
        return self.tensors[key]


def _count(indices) -> str:
    return str(len(indices)) if isinstance(indices, list) else "an unknown number of"


def _check(**values):
    for name, v in values.items():
        if isinstance(v, bool) or not float(v) >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {v!r}")


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, dampening, Nesterov momentum,
    weight decay and maximize (PyTorch's semantics)."""

    op = ops.sgd_update_
    state_names = ("momentum_buffer",)
    var_suffix = {"momentum_buffer": "VELOCITY"}
    fixed_by_minimize = newer_options = ("maximize",)  # (it negates the update's input)

    def __init__(
        self,
        params=None,
        lr=0.01,
        momentum=0.0,
        dampening=0.0,
        weight_decay=0.0,
        nesterov=False,
        *,
        maximize=False,
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
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def used_states(self):
        return self.state_names if self.hyper["momentum"] else ()

    def attrs(self) -> dict:
        attrs = super().attrs()
        del attrs["maximize"]  # (inputs() negates the gradient instead)
        return attrs

    def inputs(self, p, g, states):
        g = -g if self.hyper["maximize"] else g  # PyTorch's maximize: ascend the gradient
        return [p, g, states.get("momentum_buffer", g)]  # the gradient stands in without momentum

    def step(self, closure=None):
        # PyTorch's first momentum step takes the buffer as d = g + weight_decay p itself, not
        # dampened: a new buffer starts where one dampened step gives d (dampening d / momentum)
        loss = _evaluate(closure)
        with no_grad():
            for group, indices in self._groups():
                momentum, dampening = group["momentum"], group["dampening"]
                if not (momentum and dampening):
                    continue
                for i, p in zip(indices, group["params"]):
                    if p.grad is not None and "momentum_buffer" not in self.state.get(i, {}):
                        g = -p.grad if group["maximize"] else p.grad
                        d = g + p * group["weight_decay"]
                        buffer = self._eager_state(i, p)["momentum_buffer"]
                        ops.copy_(buffer, d * (dampening / momentum))
        super().step()
        return loss

    def minimize(self, loss, *args, **kwargs):
        if any(group["momentum"] and group["dampening"] for group in self.param_groups):
            raise UnsupportedError(  # (before anything is appended)
                "SGD with momentum and dampening under minimize: its first step takes the "
                "gradient itself as the buffer (PyTorch's), which the program's update cannot "
                "tell from a later one; use dampening=0, or step() in eager mode"
            )
        return super().minimize(loss, *args, **kwargs)


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


# ---------------------------------------------------------------- composed updates
#
# The optimizers below have no update op of their own: each step is written with nbflow's
# tensor ops and in-place ops (mul_, add_, copy_), so it runs eagerly on the CPU and,
# unchanged, on the GPU, and minimize() appends the same ops to a program. The coefficients
# come from the step count, 0-d states (NAdam's mu_product, ASGD's eta and mu) and the
# hyperparameters: in eager mode Python numbers (each 0-d state read once, as PyTorch's
# non-capturable optimizers do), in a program 0-d float64 values (the states persistable vars,
# the float hyperparameters captured tensors that writes to the group fill). The helpers
# below take either; what shapes the update (maximize, weight decay on or off) is read from
# the group as it is when the update is built.


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.number))


def _number(state):
    """A 0-d state as a coefficient: its Python value in eager mode, else (a program's var)
    the value as float64."""
    if isinstance(state, Tensor):
        return state.item()
    return state if state.dtype == dt.float64 else ops.cast(state, dtype=dt.float64)


def _coef(c, like):
    """Coefficient c for an op with the tensor `like`: a number as it is (weak), a program's
    0-d value cast to like's dtype (a float64 one would promote the update)."""
    return c if _is_number(c) else ops.cast(c, dtype=like.dtype)


def _full(like, c):
    """c as a tensor of like's dtype, for where(): a Python number would make it float32."""
    return ops.full_like(like, c) if _is_number(c) else ops.cast(c, dtype=like.dtype)


def _select(cond, if_true, if_false):
    """if_true() where cond holds, else if_false(): a Python branch on a number, where() of
    both in a program."""
    if isinstance(cond, (bool, np.bool_)):
        return if_true() if cond else if_false()
    return ops.where(cond, if_true(), if_false())


def _maximum(a, b):
    return max(a, b) if _is_number(a) and _is_number(b) else ops.maximum(a, b)


def _sqrt(c):
    return math.sqrt(c) if _is_number(c) else ops.sqrt(c)


def _fill_(state, value):
    """state = value, for a 0-d state: fill_ with a number, copy_ of a program's value."""
    if _is_number(value):
        ops.fill_(state, value)
    else:
        ops.copy_(state, ops.cast(value, dtype=state.dtype))


class ComposedOptimizer(Optimizer):
    """Base of the optimizers whose update is a composition of tensor ops (see above).
    `scalar_states` maps a state to its (dtype, initial value) as a 0-d tensor; the other
    states are tensors shaped like the parameter, filled with `initial(name)` (zero by
    default). `update(p, g, s, h)` takes the hyperparameters' values as `h`."""

    scalar_states: dict = {"step": (dt.int64, 0)}

    def update(self, p: Tensor, g: Tensor, state: dict, h: dict) -> None:
        raise NotImplementedError

    def initial(self, name: str) -> float:
        return 0.0

    def step(self, closure=None):
        """Eager mode: update every parameter that has a gradient, in place (`closure` as in
        Optimizer.step)."""
        loss = _evaluate(closure)
        with no_grad():
            for group, indices in self._groups():
                for i, p in zip(indices, group["params"]):
                    if p.grad is not None:
                        self.update(p, p.grad, self._eager_state(i, p), group)
        return loss

    @property
    def host_states(self) -> tuple[str, ...]:
        return tuple(self.scalar_states)

    def state_spec(self, name: str, p) -> tuple:
        if name in self.scalar_states:
            dtype, value = self.scalar_states[name]
            return (), dtype, self.hyper["lr"] if value is None else value
        return p.shape, p.dtype, self.initial(name)

    def _append_update(self, trace: GraphTrace, p: Var, g: Var, states: dict):
        """The update's ops appended to the program, the float hyperparameters read from the
        group's 0-d tensors (captured: a schedule's writes reach the program)."""
        group = self.hyper
        h = {k: trace.capture(group.tensor(k)) if type(v) is float else v for k, v in group.items()}
        self.update(p, g, states, h)
        # a run that updates p updates the states (the next step reads them), fetched or not
        ops.depend_(p, *states.values())

    def grad_of(self, p: Tensor, g: Tensor, h: dict) -> Tensor:
        """The gradient as the update uses it: negated to maximize, with L2 weight decay."""
        if self.hyper.get("maximize"):
            g = -g
        if self.hyper.get("weight_decay") and not self.hyper.get("decoupled_weight_decay"):
            g = g + p * _coef(h["weight_decay"], p)
        return g

    def decay(self, p: Tensor, h: dict) -> None:
        """Decoupled weight decay (AdamW's): p *= 1 - lr * weight_decay."""
        if self.hyper.get("decoupled_weight_decay") and self.hyper["weight_decay"]:
            ops.mul_(p, _coef(1 - h["lr"] * h["weight_decay"], p))


def _count_step(state: dict):
    """Count this step; its number (a Python int, or a program's float64 value)."""
    ops.add_(state["step"], 1)
    return _number(state["step"])


def _betas(betas) -> tuple[float, float]:
    beta1, beta2 = betas
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise ValueError(f"betas must be in [0, 1), got {betas}")
    return float(beta1), float(beta2)


def _average(avg: Tensor, value: Tensor, beta) -> None:
    """avg = beta * avg + (1 - beta) * value, in place."""
    ops.mul_(avg, _coef(beta, avg))
    ops.add_(avg, value * _coef(1 - beta, avg))


class Adamax(ComposedOptimizer):
    """Adamax, Adam with the infinity norm (PyTorch's defaults: lr=2e-3, betas=(0.9, 0.999),
    eps=1e-8, weight_decay=0, maximize=False)."""

    state_names = ("exp_avg", "exp_inf", "step")

    def __init__(
        self,
        params=None,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        *,
        maximize=False,
    ):
        _check(lr=lr, eps=eps, weight_decay=weight_decay)
        beta1, beta2 = _betas(betas)
        hyper = {
            "lr": float(lr),
            "beta1": beta1,
            "beta2": beta2,
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def update(self, p, g, s, h):
        t = _count_step(s)
        g = self.grad_of(p, g, h)
        _average(s["exp_avg"], g, h["beta1"])
        inf = ops.maximum(s["exp_inf"] * _coef(h["beta2"], p), ops.abs(g) + _coef(h["eps"], p))
        ops.copy_(s["exp_inf"], inf)
        clr = h["lr"] / (1 - h["beta1"] ** t)
        ops.sub_(p, s["exp_avg"] / s["exp_inf"] * _coef(clr, p))


class NAdam(ComposedOptimizer):
    """NAdam, Adam with Nesterov momentum (PyTorch's defaults: lr=2e-3, betas=(0.9, 0.999),
    eps=1e-8, weight_decay=0, momentum_decay=4e-3, decoupled_weight_decay=False,
    maximize=False)."""

    state_names = ("exp_avg", "exp_avg_sq", "mu_product", "step")
    scalar_states = {"step": (dt.int64, 0), "mu_product": (dt.float64, 1.0)}

    def __init__(
        self,
        params=None,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        maximize=False,
    ):
        _check(lr=lr, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay)
        beta1, beta2 = _betas(betas)
        hyper = {
            "lr": float(lr),
            "beta1": beta1,
            "beta2": beta2,
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            "momentum_decay": float(momentum_decay),
            "decoupled_weight_decay": bool(decoupled_weight_decay),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def update(self, p, g, s, h):
        lr, beta1, beta2 = h["lr"], h["beta1"], h["beta2"]
        t = _count_step(s)
        g = self.grad_of(p, g, h)
        self.decay(p, h)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * h["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * h["momentum_decay"]))
        ops.mul_(s["mu_product"], mu)
        mu_product = _number(s["mu_product"])
        _average(s["exp_avg"], g, beta1)
        _average(s["exp_avg_sq"], g * g, beta2)
        denom = ops.sqrt(s["exp_avg_sq"] / _coef(1 - beta2**t, p)) + _coef(h["eps"], p)
        ops.add_(p, g / denom * _coef(-lr * (1.0 - mu) / (1.0 - mu_product), p))
        step = -lr * mu_next / (1.0 - mu_product * mu_next)
        ops.add_(p, s["exp_avg"] / denom * _coef(step, p))


class RAdam(ComposedOptimizer):
    """RAdam, Adam with a rectified adaptive lr (PyTorch's defaults: lr=1e-3,
    betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
    maximize=False)."""

    state_names = ("exp_avg", "exp_avg_sq", "step")

    def __init__(
        self,
        params=None,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        decoupled_weight_decay=False,
        *,
        maximize=False,
    ):
        _check(lr=lr, eps=eps, weight_decay=weight_decay)
        beta1, beta2 = _betas(betas)
        hyper = {
            "lr": float(lr),
            "beta1": beta1,
            "beta2": beta2,
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            "decoupled_weight_decay": bool(decoupled_weight_decay),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def update(self, p, g, s, h):
        lr, beta1, beta2 = h["lr"], h["beta1"], h["beta2"]
        t = _count_step(s)
        g = self.grad_of(p, g, h)
        self.decay(p, h)
        _average(s["exp_avg"], g, beta1)
        _average(s["exp_avg_sq"], g * g, beta2)
        bias_correction2 = 1 - beta2**t
        step = s["exp_avg"] * _coef(lr / (1 - beta1**t), p)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * beta2**t / bias_correction2

        def rectified():  # the variance is tractable: rectify the adaptive lr
            # (at most 0 before the square root: a program computes both branches)
            rect = _sqrt(
                _maximum(
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t),
                    0.0,
                )
            )
            denom = ops.sqrt(s["exp_avg_sq"]) + _coef(h["eps"], p)
            return step * (_coef(_sqrt(bias_correction2), p) / denom) * _coef(rect, p)

        ops.sub_(p, _select(rho_t > 5.0, rectified, lambda: step))


class Adadelta(ComposedOptimizer):
    """Adadelta (PyTorch's defaults: lr=1.0, rho=0.9, eps=1e-6, weight_decay=0,
    maximize=False)."""

    state_names = ("square_avg", "acc_delta", "step")

    def __init__(self, params=None, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, *, maximize=False):
        _check(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"rho must be in [0, 1], got {rho}")
        hyper = {
            "lr": float(lr),
            "rho": float(rho),
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def update(self, p, g, s, h):
        _count_step(s)
        g = self.grad_of(p, g, h)
        eps = _coef(h["eps"], p)
        _average(s["square_avg"], g * g, h["rho"])
        std = ops.sqrt(s["square_avg"] + eps)
        delta = ops.sqrt(s["acc_delta"] + eps) / std * g
        _average(s["acc_delta"], delta * delta, h["rho"])
        ops.sub_(p, delta * _coef(h["lr"], p))


class Rprop(ComposedOptimizer):
    """Resilient backpropagation (PyTorch's defaults: lr=1e-2, etas=(0.5, 1.2),
    step_sizes=(1e-6, 50), maximize=False): each weight's step size grows by etaplus while
    its gradient keeps its sign and shrinks by etaminus when it flips (that step is skipped)."""

    state_names = ("prev", "step_size", "step")

    def __init__(
        self, params=None, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, maximize=False
    ):
        _check(lr=lr)
        etaminus, etaplus = etas
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"etas must satisfy 0 < etaminus < 1 < etaplus, got {etas}")
        hyper = {
            "lr": float(lr),
            "etaminus": float(etaminus),
            "etaplus": float(etaplus),
            "step_size_min": float(step_sizes[0]),
            "step_size_max": float(step_sizes[1]),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    @property
    def etas(self) -> tuple[float, float]:
        return self.hyper["etaminus"], self.hyper["etaplus"]

    def initial(self, name):
        return self.hyper["lr"] if name == "step_size" else 0.0

    def update(self, p, g, s, h):
        _count_step(s)
        g = -g if self.hyper["maximize"] else g
        sign = ops.sign(g * s["prev"])
        factor = ops.where(
            sign > 0,
            _full(g, h["etaplus"]),
            ops.where(sign < 0, _full(g, h["etaminus"]), ops.full_like(g, 1.0)),
        )
        ops.mul_(s["step_size"], factor)
        size = ops.maximum(s["step_size"], _full(g, h["step_size_min"]))
        ops.copy_(s["step_size"], ops.minimum(size, _full(g, h["step_size_max"])))
        g = ops.where(sign < 0, ops.zeros_like(g), g)  # a flipped sign: no step this time
        ops.sub_(p, ops.sign(g) * s["step_size"])
        ops.copy_(s["prev"], g)


class ASGD(ComposedOptimizer):
    """Averaged SGD (PyTorch's defaults: lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6,
    weight_decay=0, maximize=False); `ax` holds the running average of the parameter."""

    state_names = ("eta", "mu", "ax", "step")
    scalar_states = {"step": (dt.int64, 0), "eta": (dt.float64, None), "mu": (dt.float64, 1.0)}

    def __init__(
        self,
        params=None,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0.0,
        *,
        maximize=False,
    ):
        _check(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay)
        hyper = {
            "lr": float(lr),
            "lambd": float(lambd),
            "alpha": float(alpha),
            "t0": float(t0),
            "weight_decay": float(weight_decay),
            "maximize": bool(maximize),
        }
        super().__init__(params, hyper)

    def update(self, p, g, s, h):
        t = _count_step(s)
        g = self.grad_of(p, g, h)
        eta, mu = _number(s["eta"]), _number(s["mu"])
        ops.mul_(p, _coef(1 - h["lambd"] * eta, p))
        ops.sub_(p, g * _coef(eta, p))
        average = _select(mu != 1, lambda: s["ax"] + (p - s["ax"]) * _coef(mu, p), lambda: p)
        ops.copy_(s["ax"], average)
        _fill_(s["eta"], h["lr"] / (1 + h["lambd"] * h["lr"] * t) ** h["alpha"])
        _fill_(s["mu"], 1 / _maximum(t - h["t0"], 1))


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
    """Sets each parameter group's lr from the epoch count: call step() once per epoch,
    after the optimizer's steps (PyTorch's convention; constructing it sets the lr for epoch
    0). The lr is a closed-form function of the epoch and the group's lr before any schedule
    (`lr_at(epoch, base_lr)`), so resuming only needs last_epoch (state_dict).

    Where PyTorch's schedule is chainable (`chainable`: Step, MultiStep, Exponential, Cosine,
    Linear, Constant, Polynomial, Multiplicative) and the lr is not this schedule's closed
    form of the last epoch (another schedule stepped on the same optimizer, a write to the
    lr, ReduceLROnPlateau moved it), a step goes on from the lr as it is: it applies this
    epoch's change of the closed form (its ratio; for cosine, relative to eta_min), as
    PyTorch's recursive formulas do, so schedules stepped together compose. Otherwise the
    closed form itself is set (no rounding drift over the epochs)."""

    chainable = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        # each group's lr before any schedule (PyTorch's group["initial_lr"]): a second
        # schedule on the same optimizer (SequentialLR, ChainedScheduler) starts from it too
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self._restarted = last_epoch != -1  # (a resumed schedule starts at its closed form)
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, epoch, base_lr: float, group: int = 0) -> float:
        """The lr of parameter group number `group`, whose base lr is base_lr, at `epoch`."""
        raise NotImplementedError

    def get_lr(self) -> list[float]:
        return [self.lr_at(self.last_epoch, base, i) for i, base in enumerate(self.base_lrs)]

    def step(self):
        self.last_epoch += 1
        self._apply(self._next_lrs())

    def _next_lrs(self) -> list[float]:
        """The closed form, or for a chainable schedule whose lr is not its closed form of
        the last epoch, the lr as it is, carried on by this epoch's change (the class
        docstring)."""
        if not self.chainable or self._restarted:
            self._restarted = False
            return self.get_lr()
        lrs, epoch = [], self.last_epoch
        for i, (group, base) in enumerate(zip(self.optimizer.param_groups, self.base_lrs)):
            before = self.lr_at(epoch - 1, base, i) if epoch > 0 else base
            now = self.lr_at(epoch, base, i)
            lrs.append(now if group["lr"] == before else self.chained(group["lr"], before, now))
        return lrs

    def chained(self, lr: float, before: float, now: float) -> float:
        """lr carried on from the last epoch, where the closed form was `before`, to this one,
        where it is `now`: times their ratio (after a closed form of 0: the closed form)."""
        return lr * (now / before) if before else now

    def _restart(self):
        """Make the next step set the closed form (SequentialLR at a milestone, as PyTorch's
        step(0) there)."""
        self._restarted = True

    def _apply(self, lrs):
        for group, lr in zip(self.optimizer.param_groups, lrs):
            self.optimizer.set_hyper(group, "lr", lr)

    def get_last_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        # (functions, as LambdaLR's lr_lambdas and CyclicLR's scale_fn, are code: not saved,
        # as in PyTorch)
        return {
            k: v
            for k, v in vars(self).items()
            if k not in ("optimizer", "lr_lambdas", "_restarted") and not callable(v)
        }

    def load_state_dict(self, state_dict: dict):
        own = self.state_dict()
        if set(state_dict) != set(own):
            raise ValueError(f"{type(self).__name__}.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)
        self._apply(self.get_lr())


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    chainable = True

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if int(step_size) < 1:
            raise ValueError(f"step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (the number of milestones <= epoch)."""

    chainable = True

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * self.gamma ** sum(1 for m in self.milestones if m <= epoch)


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    chainable = True

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * self.gamma**epoch


def _lambdas(lr_lambda, optimizer) -> list:
    """One lr_lambda per parameter group: the function for every group, or their list."""
    fns = _per_group(lr_lambda, optimizer.param_groups, "lr_lambda")
    for f in fns:
        if not callable(f):
            raise TypeError(f"lr_lambda must be callable, got {type(f).__name__}")
    return fns


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch); lr_lambda is one function or a list of one per
    parameter group (functions are not part of state_dict)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * float(self.lr_lambdas[group](epoch))


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2: PyTorch's
    CosineAnnealingLR in its closed form (the same values, periodic past T_max)."""

    chainable = True

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        if int(T_max) < 1:
            raise ValueError(f"T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        cos = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cos

    def chained(self, lr, before, now):
        # PyTorch's recursion: the cosine's ratio relative to eta_min, and where the last
        # epoch was at eta_min (past T_max the cosine climbs back), its rise added
        epoch, t = self.last_epoch, self.T_max
        if epoch == 0:
            return lr
        if (epoch - 1 - t) % (2 * t) == 0:
            return lr + (now - before)
        ratio = (1 + math.cos(math.pi * epoch / t)) / (1 + math.cos(math.pi * (epoch - 1) / t))
        return ratio * (lr - self.eta_min) + self.eta_min


class LinearLR(LRScheduler):
    """lr = base_lr * factor, the factor going linearly from start_factor to end_factor over
    total_iters epochs, then staying."""

    chainable = True

    def __init__(
        self,
        optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError(
                f"start_factor must be in (0, 1] and end_factor in [0, 1], got "
                f"{start_factor} and {end_factor}"
            )
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        done = min(epoch, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first total_iters epochs, base_lr after."""

    chainable = True

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch=-1):
        if not 0 <= factor <= 1:
            raise ValueError(f"factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    chainable = True

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0, last_epoch=-1):
        if int(total_iters) < 1:
            raise ValueError(f"total_iters must be >= 1, got {total_iters}")
        self.total_iters, self.power = int(total_iters), float(power)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * (1 - min(epoch, self.total_iters) / self.total_iters) ** self.power


class MultiplicativeLR(LRScheduler):
    """lr = the previous epoch's lr * lr_lambda(epoch) (from epoch 1 on); lr_lambda is one
    function or a list of one per parameter group."""

    chainable = True

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer)
        self._products = {}  # group -> (epoch, the factors' product up to it)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        # the product of the factors up to epoch, kept as the epochs go (one lr_lambda call
        # per step); an epoch before the one kept (a resume) recomputes it from 1
        done, product = self._products.get(group, (0, 1.0))
        if epoch < done:
            done, product = 0, 1.0
        for k in range(done + 1, epoch + 1):
            product *= float(self.lr_lambdas[group](k))
        self._products[group] = (epoch, product)
        return base_lr * product

    def state_dict(self) -> dict:
        state = super().state_dict()
        del state["_products"]  # (a cache: a resume recomputes it, and older states lack it)
        return state

    def load_state_dict(self, state_dict: dict):
        self._products = {}
        super().load_state_dict(state_dict)


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from base_lr to eta_min over T_0 epochs, restarting, each period
    T_mult times the previous (SGDR). step(epoch) may jump to a (fractional) epoch."""

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch=-1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, float(eta_min)
        # what step(epoch) was given beyond last_epoch = floor(epoch): later step()s go on
        # from there, as PyTorch's T_cur does (step(0.5), step() is at 1.5)
        self.fraction = 0.0
        super().__init__(optimizer, last_epoch)

    def _position(self, epoch):
        """(epochs into the current period, the period's length)."""
        if isinstance(epoch, int):  # exact integer arithmetic, as PyTorch's step() counts
            t, period = epoch, self.T_0
            while t >= period:
                t, period = t - period, period * self.T_mult
            return t, period
        if epoch < self.T_0:
            return epoch, self.T_0
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_0
        n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
        return (
            epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1),
            self.T_0 * self.T_mult**n,
        )

    def lr_at(self, epoch, base_lr, group=0):
        t, period = self._position(epoch)
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * t / period)) / 2

    def step(self, epoch=None):
        if epoch is not None and epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch is None:
            self.last_epoch += 1
        else:
            self.last_epoch = math.floor(epoch)
            self.fraction = epoch - self.last_epoch
        self._apply(self.get_lr())

    def get_lr(self) -> list[float]:
        epoch = self.last_epoch + self.fraction if self.fraction else self.last_epoch
        return [self.lr_at(epoch, base, i) for i, base in enumerate(self.base_lrs)]

    def load_state_dict(self, state_dict: dict):
        super().load_state_dict({"fraction": 0.0, **state_dict})  # (saved before it existed)


# ---------------------------------------------------------------- cyclic schedules
# OneCycleLR and CyclicLR also cycle the momentum (SGD's and RMSprop's momentum, beta1 of the
# Adam family) inversely to the lr, as PyTorch's do.


def _momentum_name(optimizer) -> str:
    for name in ("momentum", "beta1"):
        if name in optimizer.hyper:
            return name
    raise ValueError(
        "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
    )


class OneCycleLR(LRScheduler):
    """The 1cycle policy, stepped once per batch: the lr rises from max_lr / div_factor to
    max_lr over pct_start of total_steps and anneals to initial_lr / final_div_factor
    ('cos' or 'linear'); three_phase returns to the initial lr before the final anneal. The
    momentum moves inversely, between max_momentum and base_momentum."""

    def __init__(
        self,
        optimizer,
        max_lr: float,
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float = 0.85,
        max_momentum: float = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not 0 <= pct_start <= 1 or isinstance(pct_start, bool):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.anneal_strategy = anneal_strategy
        groups = optimizer.param_groups  # (each value: one for all groups, or one per group)
        self.max_lr = _floats(max_lr, groups, "max_lr")
        self.initial = [m / div_factor for m in self.max_lr]
        self.min_lr = [i / final_div_factor for i in self.initial]
        self.cycle_momentum = bool(cycle_momentum)
        self.base_momentum = _floats(base_momentum, groups, "base_momentum")
        self.max_momentum = _floats(max_momentum, groups, "max_momentum")
        self.phases = _one_cycle_phases(self.total_steps, float(pct_start), three_phase)
        self.momentum_name = _momentum_name(optimizer) if cycle_momentum else None
        if last_epoch == -1:
            for i, group in enumerate(groups):
                group["initial_lr"] = self.initial[i]
                if cycle_momentum:
                    optimizer.set_hyper(group, self.momentum_name, self.max_momentum[i])
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _values(self, step: int, group: int) -> tuple[float, float]:
        """(lr, momentum) of parameter group number `group` at `step`."""
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        values = {"initial": self.initial, "max": self.max_lr, "min": self.min_lr}
        momenta = {"max": self.max_momentum, "base": self.base_momentum}
        start_step = 0
        for i, (end_step, lrs, moms) in enumerate(self.phases):
            if step <= end_step or i == len(self.phases) - 1:
                pct = (step - start_step) / (end_step - start_step)
                lr = self._anneal(values[lrs[0]][group], values[lrs[1]][group], pct)
                return lr, self._anneal(momenta[moms[0]][group], momenta[moms[1]][group], pct)
            start_step = end_step
        raise AssertionError("unreachable")

    def lr_at(self, epoch, base_lr, group=0):
        return self._values(epoch, group)[0]

    def step(self):
        self.last_epoch += 1
        for i, group in enumerate(self.optimizer.param_groups):
            lr, momentum = self._values(self.last_epoch, i)
            # the allowed step past the end (step total_steps) overshoots a linear anneal
            # below zero: PyTorch sets that negative lr, nbflow's optimizers refuse one
            self.optimizer.set_hyper(group, "lr", max(lr, 0.0))
            if self.cycle_momentum:
                self.optimizer.set_hyper(group, self.momentum_name, momentum)

    def load_state_dict(self, state_dict: dict):
        super().load_state_dict(_as_lists(state_dict, self, _ONE_CYCLE_LISTS))


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if not isinstance(epochs, int) or epochs <= 0:
        raise ValueError(f"Expected positive integer epochs, but got {epochs}")
    if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
        raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch


def _floats(value, groups, name: str) -> list[float]:
    return [float(v) for v in _per_group(value, groups, name)]


_ONE_CYCLE_LISTS = ("max_lr", "initial", "min_lr", "base_momentum", "max_momentum")
_CYCLIC_LISTS = ("min_lr", "max_lr", "base_momentum", "max_momentum")


def _as_lists(state: dict, scheduler, names) -> dict:
    """A cyclic schedule's state, its per-group values lists (a state saved when they were
    one number for every group loads too)."""
    n = len(scheduler.optimizer.param_groups)
    return {k: [v] * n if k in names and not isinstance(v, list) else v for k, v in state.items()}


def _one_cycle_phases(total: int, pct_start: float, three_phase: bool) -> list:
    """(end step, (start lr, end lr), (start momentum, end momentum)) per phase."""
    if three_phase:
        return [
            (float(pct_start * total) - 1, ("initial", "max"), ("max", "base")),
            (float(2 * pct_start * total) - 2, ("max", "initial"), ("base", "max")),
            (total - 1, ("initial", "min"), ("max", "max")),
        ]
    return [
        (float(pct_start * total) - 1, ("initial", "max"), ("max", "base")),
        (total - 1, ("max", "min"), ("base", "max")),
    ]


class CyclicLR(LRScheduler):
    """The lr cycles between base_lr and max_lr (step_size_up steps up, step_size_down down),
    stepped once per batch. mode: 'triangular' (constant amplitude), 'triangular2' (halved
    each cycle), 'exp_range' (times gamma ** iteration), or scale_fn with scale_mode. The
    momentum cycles inversely between max_momentum and base_momentum."""

    def __init__(
        self,
        optimizer,
        base_lr: float,
        max_lr: float,
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn=None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ):
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size, self.step_ratio = up + down, up / (up + down)
        groups = optimizer.param_groups  # (each value: one for all groups, or one per group)
        self.min_lr, self.max_lr = (
            _floats(base_lr, groups, "base_lr"),
            _floats(max_lr, groups, "max_lr"),
        )
        self.mode, self.gamma = mode, float(gamma)
        self.scale_fn, self.scale_mode = scale_fn, scale_mode
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.cycle_momentum = bool(cycle_momentum)
        self.base_momentum = _floats(base_momentum, groups, "base_momentum")
        self.max_momentum = _floats(max_momentum, groups, "max_momentum")
        self.momentum_name = _momentum_name(optimizer) if cycle_momentum else None
        if last_epoch == -1:
            for i, group in enumerate(groups):
                optimizer.set_hyper(group, "lr", self.min_lr[i])
                if cycle_momentum:
                    optimizer.set_hyper(group, self.momentum_name, self.max_momentum[i])
        super().__init__(optimizer, last_epoch)

    def _scale(self, x: float) -> float:
        if self.scale_fn is not None:
            return float(self.scale_fn(x))
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def _values(self, epoch: int, group: int) -> tuple[float, float]:
        """(lr, momentum) of parameter group number `group` at `epoch`."""
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        if x <= self.step_ratio:
            factor = x / self.step_ratio
        else:
            factor = (x - 1) / (self.step_ratio - 1)
        scale = self._scale(cycle if self.scale_mode == "cycle" else epoch)
        low, high = self.min_lr[group], self.max_lr[group]
        lr = low + (high - low) * factor * scale
        top, bottom = self.max_momentum[group], self.base_momentum[group]
        return lr, top - (top - bottom) * factor * scale

    def lr_at(self, epoch, base_lr, group=0):
        return self._values(epoch, group)[0]

    def step(self):
        self.last_epoch += 1
        for i, group in enumerate(self.optimizer.param_groups):
            lr, momentum = self._values(self.last_epoch, i)
            self.optimizer.set_hyper(group, "lr", lr)
            if self.cycle_momentum:
                self.optimizer.set_hyper(group, self.momentum_name, momentum)

    def load_state_dict(self, state_dict: dict):
        super().load_state_dict(_as_lists(state_dict, self, _CYCLIC_LISTS))


# ---------------------------------------------------------------- schedules of schedules


class SequentialLR(LRScheduler):
    """schedulers[i] from milestones[i - 1] on, each counting its epochs from its
    milestone (from 0 for the first)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler) or s.optimizer is not optimizer:
                raise ValueError(
                    f"SequentialLR expects all schedulers to belong to the same optimizer, "
                    f"but got scheduler at index {i} to be different"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers, self._milestones = schedulers, [int(m) for m in milestones]
        for group in optimizer.param_groups:  # undo what the schedulers' constructors set
            optimizer.set_hyper(group, "lr", group["initial_lr"])
        super().__init__(optimizer, last_epoch)

    def _current(self, epoch: int) -> tuple[LRScheduler, int]:
        i = bisect.bisect_right(self._milestones, epoch)
        return self._schedulers[i], epoch - (self._milestones[i - 1] if i else 0)

    def lr_at(self, epoch, base_lr, group=0):
        scheduler, local = self._current(epoch)
        return scheduler.lr_at(local, base_lr, group)

    def step(self):
        self.last_epoch += 1
        scheduler, local = self._current(self.last_epoch)
        scheduler.last_epoch = local - 1
        if local == 0:  # its first epoch: its closed form, not carried on from the last one's
            scheduler._restart()
        scheduler.step()  # (its side effects too: the momentum of a cyclic schedule)

    def state_dict(self) -> dict:
        own = {k: v for k, v in vars(self).items() if k not in ("optimizer", "_schedulers")}
        own["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return own

    def load_state_dict(self, state_dict: dict):
        state = dict(state_dict)
        for s, saved in zip(self._schedulers, state.pop("_schedulers")):
            s.load_state_dict(saved)
        self.__dict__.update(state)
        self._apply(self.get_lr())


class ChainedScheduler(LRScheduler):
    """Every scheduler steps at each step(), in order, each carrying on the lr the others
    left (LRScheduler's chaining, PyTorch's). A state loaded back sets the lr to the initial
    lr times the product of each scheduler's lr / its base lr (the chained lr of
    multiplicative schedules)."""

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(
                    f"ChainedScheduler expects all schedulers to belong to the same optimizer, "
                    f"but got scheduler at index {i} to be different"
                )
        self._schedulers = schedulers
        self.optimizer = optimizer
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = schedulers[0].last_epoch  # (their constructors set epoch 0's lr)

    def get_lr(self):
        lrs = []
        for i, lr in enumerate(self.base_lrs):
            for s in self._schedulers:
                if s.base_lrs[i]:  # (a group at lr 0, frozen, stays there)
                    lr *= s.lr_at(s.last_epoch, s.base_lrs[i], i) / s.base_lrs[i]
            lrs.append(lr)
        return lrs

    def step(self):
        self.last_epoch += 1
        for s in self._schedulers:
            s.step()

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict


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
        self.cooldown, self.eps = int(cooldown), float(eps)
        groups = optimizer.param_groups
        self.min_lrs = [float(v) for v in _per_group(min_lr, groups, "min_lr")]  # PyTorch's
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
            groups = self.optimizer.param_groups
            for group, min_lr in zip(groups, self.min_lrs):
                new = max(group["lr"] * self.factor, min_lr)
                if group["lr"] - new > self.eps:
                    self.optimizer.set_hyper(group, "lr", new)
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0

    def get_last_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict):
        own = self.state_dict()
        if set(state_dict) != set(own):
            raise ValueError(f"ReduceLROnPlateau.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)


def _per_group(value, groups, name: str) -> list:
    """One value per parameter group: a list or tuple of them, or one for every group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise ValueError(f"expected {len(groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(groups)


# PyTorch's torch.optim.lr_scheduler: the schedules under that name too (a module, so that
# `from nbflow.optim.lr_scheduler import StepLR` works as well)
lr_scheduler = types.ModuleType(f"{__name__}.lr_scheduler", "nbflow's learning-rate schedules.")
_SCHEDULES = (
    LRScheduler,
    StepLR,
    MultiStepLR,
    ExponentialLR,
    LambdaLR,
    CosineAnnealingLR,
    LinearLR,
    ConstantLR,
    PolynomialLR,
    MultiplicativeLR,
    CosineAnnealingWarmRestarts,
    OneCycleLR,
    CyclicLR,
    SequentialLR,
    ChainedScheduler,
)
for _schedule in (*_SCHEDULES, ReduceLROnPlateau):
    setattr(lr_scheduler, _schedule.__name__, _schedule)
sys.modules[lr_scheduler.__name__] = lr_scheduler

# L-BFGS, Adafactor and the SWA utilities live in their own modules (they build on the above)
from . import swa_utils  # noqa: E402
from .optim_adafactor import Adafactor  # noqa: E402
from .optim_lbfgs import LBFGS  # noqa: E402

sys.modules[f"{__name__}.swa_utils"] = swa_utils
__all__ += ["Adafactor", "LBFGS", "swa_utils"]
