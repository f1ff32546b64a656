"""The Optimizer base, its parameter groups, and the base of the optimizers whose update is
a composition of tensor ops (PyTorch's torch.optim.Optimizer; the algorithms are in
algorithms.py, adafactor.py and lbfgs.py).

An update is one in-place op per parameter (`sgd_update_`, `adam_update_`, `rmsprop_update_`),
or for Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD a composition of tensor ops (see
ComposedOptimizer below): `step()` runs it eagerly (under no_grad); `minimize(loss)` appends
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

import math

import numpy as np

from .. import ops
from ..argcheck import flag
from ..core import STATE, enable_grad, no_grad
from ..core import dtypes as dt
from ..core.errors import ArgumentError, DomainError, ProgramError, UnsupportedError
from ..eager.tensor import Tensor
from ..graph import GraphTrace, Var, append_backward
from ..graph.jit import traced_grads, zero_grads
from ..graph.static import STARTUP
from ..nn.utils.clip_grad import clip_grads_by_norm_

__all__ = ["ComposedOptimizer", "Optimizer", "ParamGroup"]


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
            raise ArgumentError("params must be an iterable of tensors, not a tensor")
        self.defaults = hyper
        self.param_groups: list[dict] = []
        self.params = None  # all groups' parameters in order (None: a program's, minimize)
        if params is not None:
            params = list(params)
            groups = params if params and isinstance(params[0], dict) else [{"params": params}]
            self.params = []
            for group in groups:
                self.add_param_group(group)
        else:  # (graph mode: the program's parameters, minimize(); checked as a group is)
            self._check_group(hyper)
            self.param_groups.append(ParamGroup(self, {"params": [], **hyper}))
        if not self.param_groups:
            raise DomainError(f"{type(self).__name__}: no parameter groups given")
        self.hyper = self.param_groups[0]
        self.state: dict[int, dict[str, Tensor]] = {}
        self._graph_nodes: list = []  # (update op, its group) that minimize() appended

    def add_param_group(self, group: dict):
        """Add a group of parameters with its own hyperparameters (the others: defaults)."""
        name = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise ArgumentError(f"{name}: a parameter group is a dict with a 'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        group = _split_pairs(group, self.defaults)
        unknown = set(group) - set(self.defaults) - {"params", *SCHEDULE_KEYS}
        if unknown:
            raise DomainError(f"{name}: unknown hyperparameters {sorted(unknown)} in a group")
        seen = {id(p) for p in self.params or ()}
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
            raise DomainError(f"{name}: some parameters appear in more than one group")
        full = {**self.defaults, **{k: v for k, v in group.items() if k != "params"}}
        self._check_group(full)
        if self.params is None:
            self.params = []
        self.params += params
        self.param_groups.append(ParamGroup(self, {"params": params, **full}))

    def _check_group(self, hyper: dict):
        """Refuse a group's hyperparameters the constructor would refuse (lr >= 0 here)."""
        if not float(hyper["lr"]) >= 0:
            raise DomainError(f"lr must be >= 0, got {hyper['lr']}")

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
            raise DomainError(f"lr must be >= 0, got {value}")
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
        """Forget the gradients (set_to_none=False zeroes them in place instead); under @jit
        as the traced step's .grad (graph/jit.py's Grads)."""
        zero_grads(self.params or (), set_to_none)

    def step(self, closure=None):
        """Eager mode: update every parameter that has a gradient, in place. `closure`, if
        given, is called first with gradients on (it recomputes the loss and its gradients)
        and its loss returned, as in PyTorch. Under @jit: the updates appended (_traced_step)."""
        loss = _evaluate(closure)
        if traced_grads() is not None:
            return self._traced_step(loss)
        with no_grad():
            for group, indices in self._groups():
                attrs = self.attrs()  # once per group, not per parameter
                for i, p in zip(indices, group["params"]):
                    if p.grad is not None:
                        state = self._eager_state(i, p)
                        _as_reals(self._run_op, p, p.grad, state, attrs)
        return loss

    def _run_op(self, p, g, states: dict, attrs: dict):
        self.op(*self.inputs(p, g, states), **attrs)

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
        self._append_updates(trace, pairs, tensors)
        return pairs

    def step_unless(self, skip):
        """step() under @jit with its updates undone where `skip`, a program's bool, holds
        (GradScaler.step after an inf or NaN gradient): each parameter and optimizer state
        the step writes takes back its value from before the step."""
        self._check_traceable()
        return self._traced_step(None, skip)

    def _check_traceable(self):
        """Refuse options a program's update cannot follow (SGD's dampened first step)."""

    def _traced_step(self, loss, skip=None):
        """step() under @jit: the updates minimize() appends, reading each parameter's .grad
        as the traced function has it (loss.backward() made it: graph/jit.py's Grads)."""
        grads, trace = traced_grads(), STATE.trace
        pairs, tensors = [], {}
        for group, indices in self._groups():
            for i, p in zip(indices, group["params"]):
                g = grads.get(p)
                if g is not None:
                    v = trace.capture(p)
                    tensors[id(v)] = (i, p, group)
                    pairs.append((v, g))
        with no_grad():
            kept = [] if skip is None else self._snapshot(trace, pairs, tensors)
            self._append_updates(trace, pairs, tensors)
            for value, before in kept:
                ops.copy_(value, ops.where(skip, before, value))
        return loss

    def _snapshot(self, trace: GraphTrace, pairs, tensors: dict) -> list:
        """(value, its copy) for each parameter in `pairs` and each state of its update."""
        values = []
        for p, _ in pairs:
            i, tensor, self.hyper = tensors[id(p)]
            state = self._eager_state(i, tensor)
            values += [p] + [trace.capture(state[name]) for name in self.states_for(p)]
        self.hyper = self.param_groups[0]
        return [(v, ops.clone(v)) for v in values]

    def _append_updates(self, trace: GraphTrace, pairs, tensors: dict):
        """An update per (param var, grad var) pair, its state the optimizer's own tensors
        for an eager parameter (`tensors`: id(var) -> (index, tensor, group)), else state
        vars initialised by the startup program."""
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

    def _append_update(self, trace: GraphTrace, p: Var, g: Var, states: dict):
        """Append p's update op (minimize), its attrs the current group's hyperparameters."""
        updated = _as_reals(self._run_op, p, g, states, self.attrs())
        self._graph_nodes.append((updated._node, self.hyper))  # the update's output 0

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
        startup = STARTUP[0]
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
            raise DomainError(f"{name}.load_state_dict: needs 'state' and 'param_groups'") from None
        params = self.params or []
        own = [list(indices) for _, indices in self._groups()]
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise DomainError(f"{name}.load_state_dict: 'param_groups' must be a list of dicts")
        if [g.get("params") for g in groups] != own:
            sizes = [_count(g.get("params")) for g in groups]
            raise DomainError(
                f"{name}.load_state_dict: the saved state is for groups of {sizes} parameters, "
                f"this optimizer has {[len(indices) for indices in own]}"
            )
        options = []
        for group in groups:
            group = {k: v for k, v in group.items() if k != "params"}
            for key in self.newer_options:  # (a state saved before the option existed)
                group.setdefault(key, self.defaults[key])
            if set(group) - SCHEDULE_KEYS != set(self.defaults):
                raise DomainError(
                    f"{name}.load_state_dict: hyperparameters {sorted(group)} do not match "
                    f"{sorted(self.defaults)} (state of another optimizer type?)"
                )
            for key, value in group.items():
                if key in self.defaults and type(value) is not type(self.defaults[key]):
                    raise DomainError(f"{name}.load_state_dict: hyperparameter {key}={value!r}")
            options.append(group)
        if not isinstance(saved, dict):
            raise DomainError(f"{name}.load_state_dict: 'state' must be a dict")
        state = {}
        for i, entries in saved.items():
            if not isinstance(i, int) or not 0 <= i < len(params) or not isinstance(entries, dict):
                raise DomainError(f"{name}.load_state_dict: bad state entry {i!r}")
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
            raise DomainError(f"{where} is not a state of {type(self).__name__}")
        a = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        shape, dtype, _ = self.state_spec(name, p)
        if a.shape != tuple(shape) or a.dtype.kind not in ("iu" if dtype in dt.INTS else "f"):
            raise DomainError(f"{where} has shape {a.shape} and dtype {a.dtype}, expected {shape}")
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
    from .. import distributed

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


def _is_real(v) -> bool:
    """A real number, a 0-d array or a 0-d tensor (not a bool, a string, a complex)."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (int, float, np.integer, np.floating)):
        return True
    return (
        getattr(v, "ndim", None) == 0
        and getattr(v, "dtype", None) is not None
        and (np.dtype(v.dtype).kind in "iuf")
    )


def _check(**values):
    for name, v in values.items():
        if not _is_real(v) or not float(v) >= 0:  # (float() of a list raised TypeError)
            raise DomainError(f"{name} must be a number >= 0, got {v!r}")


def _flags(owner, **values) -> dict[str, bool]:
    """values' truths (argcheck.flag): one with none (an array of several elements) is an
    AttrError naming owner's class and the argument, not bool()'s ValueError."""
    return {name: flag(v, f"{type(owner).__name__}: {name}") for name, v in values.items()}


# ---------------------------------------------------------------- composed updates
#
# The optimizers built on ComposedOptimizer (algorithms.py's Adamax, NAdam, RAdam, Adadelta,
# Rprop and ASGD; Adafactor) have no update op of their own: each step is written with
# nbflow's tensor ops and in-place ops (mul_, add_, copy_), so it runs eagerly on the CPU and,
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


def _as_reals(update, p, g, states: dict, *args):
    """update(p, g, states, *args), an in-place update of parameter p; for a complex p, on
    real copies of p, g and its complex states (a last dim of 2: real and imaginary parts),
    written back after, as PyTorch's optimizers update a complex parameter as pairs of reals
    (view_as_real, which copies in nbflow). Returns the tensor the update wrote."""
    if not dt.is_complex(p.dtype):
        update(p, g, states, *args)
        return p
    pairs = {k: ops.view_as_real(v) for k, v in states.items() if dt.is_complex(v.dtype)}
    real_p = ops.view_as_real(p)
    update(real_p, ops.view_as_real(g), {**states, **pairs}, *args)
    for target, value in [(p, real_p), *((states[k], v) for k, v in pairs.items())]:
        ops.copy_(target, ops.view_as_complex(value))
    return real_p


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
        Optimizer.step); under @jit, the updates appended."""
        loss = _evaluate(closure)
        if traced_grads() is not None:
            return self._traced_step(loss)
        with no_grad():
            for group, indices in self._groups():
                for i, p in zip(indices, group["params"]):
                    if p.grad is not None:
                        _as_reals(self.update, p, p.grad, self._eager_state(i, p), group)
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
        _as_reals(self.update, p, g, states, h)
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
    pair = isinstance(betas, (tuple, list)) and len(betas) == 2
    if not pair or not all(_is_real(b) for b in betas):  # (unpacking raised ValueError)
        raise DomainError(f"betas must be two numbers in [0, 1), got {betas!r}")
    beta1, beta2 = betas
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise DomainError(f"betas must be in [0, 1), got {betas}")
    return float(beta1), float(beta2)


def _average(avg: Tensor, value: Tensor, beta) -> None:
    """avg = beta * avg + (1 - beta) * value, in place."""
    ops.mul_(avg, _coef(beta, avg))
    ops.add_(avg, value * _coef(1 - beta, avg))
