"""Learning-rate schedules (PyTorch's torch.optim.lr_scheduler): each sets the parameter groups'
lr from the epoch count (LRScheduler), from a metric (ReduceLROnPlateau), or from other
schedules (SequentialLR, ChainedScheduler)."""

from __future__ import annotations

import bisect
import math

from ..argcheck import choice, finite, flag, integer, integers, real, shown
from ..core.errors import ArgumentError, DomainError
from .optimizer import Optimizer

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


def _optimizer(optimizer, owner: str) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise ArgumentError(
            f"{owner}: optimizer must be an nbflow Optimizer, got {shown(optimizer)}"
        )
    return optimizer


def _power(base: float, exponent: float) -> float:
    """base ** exponent, infinite where a float overflows (Python raises OverflowError)."""
    try:
        return base**exponent
    except OverflowError:
        return math.inf


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
        name = type(self).__name__
        self.optimizer = _optimizer(optimizer, name)
        last_epoch = integer(last_epoch, f"{name}: last_epoch", -1)
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
            raise DomainError(f"{type(self).__name__}.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)
        self._apply(self.get_lr())


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    chainable = True

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = integer(step_size, "StepLR: step_size", 1)
        self.gamma = finite(gamma, "StepLR: gamma")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * _power(self.gamma, epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (the number of milestones <= epoch)."""

    chainable = True

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = sorted(integers(milestones, "MultiStepLR: milestones"))
        self.gamma = finite(gamma, "MultiStepLR: gamma")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * _power(self.gamma, sum(1 for m in self.milestones if m <= epoch))


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch."""

    chainable = True

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = finite(gamma, "ExponentialLR: gamma")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * _power(self.gamma, epoch)


def _lambdas(lr_lambda, optimizer) -> list:
    """One lr_lambda per parameter group: the function for every group, or their list."""
    fns = _per_group(
        lr_lambda, _optimizer(optimizer, "lr_lambda's scheduler").param_groups, "lr_lambda"
    )
    for f in fns:
        if not callable(f):
            raise ArgumentError(f"lr_lambda must be callable, got {type(f).__name__}")
    return fns


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch); lr_lambda is one function or a list of one per
    parameter group (functions are not part of state_dict)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * real(self.lr_lambdas[group](epoch), "LambdaLR: lr_lambda(epoch)")


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2: PyTorch's
    CosineAnnealingLR in its closed form (the same values, periodic past T_max)."""

    chainable = True

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = integer(T_max, "CosineAnnealingLR: T_max", 1)
        self.eta_min = finite(eta_min, "CosineAnnealingLR: eta_min")
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
        start_factor = real(start_factor, "LinearLR: start_factor")
        end_factor = real(end_factor, "LinearLR: end_factor")
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise DomainError(
                f"start_factor must be in (0, 1] and end_factor in [0, 1], got "
                f"{start_factor} and {end_factor}"
            )
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = integer(total_iters, "LinearLR: total_iters", 0)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        done = min(epoch, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first total_iters epochs, base_lr after."""

    chainable = True

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch=-1):
        factor = real(factor, "ConstantLR: factor")
        if not 0 <= factor <= 1:
            raise DomainError(f"factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, integer(total_iters, "ConstantLR: total_iters", 0)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    chainable = True

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0, last_epoch=-1):
        self.total_iters = integer(total_iters, "PolynomialLR: total_iters", 1)
        self.power = finite(power, "PolynomialLR: power")
        if self.power < 0:  # (the last epoch's 0 ** power would divide by zero)
            raise DomainError(f"PolynomialLR: power must be >= 0, got {self.power}")
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
            product *= real(self.lr_lambdas[group](k), "MultiplicativeLR: lr_lambda(epoch)")
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
        self.T_0 = integer(T_0, "CosineAnnealingWarmRestarts: T_0", 1)
        self.T_mult = integer(T_mult, "CosineAnnealingWarmRestarts: T_mult", 1)
        self.eta_min = finite(eta_min, "CosineAnnealingWarmRestarts: eta_min")
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
        if epoch is not None:
            epoch = epoch if isinstance(epoch, int) else finite(epoch, "step: epoch")
        if epoch is not None and epoch < 0:
            raise DomainError(f"Expected non-negative epoch, but got {epoch}")
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
    raise DomainError(
        "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
    )


class _MomentumCycles(LRScheduler):
    """A schedule stepped once per batch whose momentum moves inversely to the lr (OneCycleLR,
    CyclicLR): `_values(step, group)` gives both; `lists` names its per-group values."""

    lists: tuple = ()
    lowest_lr = -math.inf  # (the optimizers refuse a negative lr)

    def _start(self, optimizer, owner, cycle_momentum, base, top, last_epoch):
        """The momenta's settings, then the base class's start."""
        groups = optimizer.param_groups
        self.cycle_momentum = flag(cycle_momentum, f"{owner}: cycle_momentum")
        self.base_momentum = _floats(base, groups, "base_momentum")
        self.max_momentum = _floats(top, groups, "max_momentum")
        self.momentum_name = _momentum_name(optimizer) if self.cycle_momentum else None
        if last_epoch == -1 and self.cycle_momentum:
            for group, momentum in zip(groups, self.max_momentum):
                optimizer.set_hyper(group, self.momentum_name, momentum)
        LRScheduler.__init__(self, optimizer, last_epoch)

    def lr_at(self, epoch, base_lr, group=0):
        return self._values(epoch, group)[0]

    def step(self):
        self.last_epoch += 1
        for i, group in enumerate(self.optimizer.param_groups):
            lr, momentum = self._values(self.last_epoch, i)
            self.optimizer.set_hyper(group, "lr", max(lr, self.lowest_lr))
            if self.cycle_momentum:
                self.optimizer.set_hyper(group, self.momentum_name, momentum)

    def load_state_dict(self, state_dict: dict):
        """(a state saved when the per-group values were one number loads too)"""
        n = len(self.optimizer.param_groups)
        lists = self.lists
        state = {
            k: [v] * n if k in lists and not isinstance(v, list) else v
            for k, v in state_dict.items()
        }
        super().load_state_dict(state)


class OneCycleLR(_MomentumCycles):
    """The 1cycle policy, stepped once per batch: the lr rises from max_lr / div_factor to
    max_lr over pct_start of total_steps and anneals to initial_lr / final_div_factor
    ('cos' or 'linear'); three_phase returns to the initial lr before the final anneal. The
    momentum moves inversely, between max_momentum and base_momentum."""

    lists = ("max_lr", "initial", "min_lr", "base_momentum", "max_momentum")
    # the allowed step past the end (step total_steps) overshoots a linear anneal below
    # zero: PyTorch sets that negative lr, nbflow's optimizers refuse one
    lowest_lr = 0.0

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
        pct_start = real(pct_start, "OneCycleLR: pct_start")
        if not 0 <= pct_start <= 1:
            raise DomainError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        options = ("cos", "linear")
        self.anneal_strategy = choice(anneal_strategy, options, "OneCycleLR: anneal_strategy")
        groups = _optimizer(optimizer, "OneCycleLR").param_groups  # (values: one, or per group)
        self.max_lr = _floats(max_lr, groups, "max_lr")
        divisors = [
            finite(d, f"OneCycleLR: {name}")
            for name, d in (("div_factor", div_factor), ("final_div_factor", final_div_factor))
        ]
        if not min(divisors) > 0:
            raise DomainError(
                f"OneCycleLR: div_factor and final_div_factor must be > 0, got {divisors}"
            )
        self.initial = [m / divisors[0] for m in self.max_lr]
        self.min_lr = [i / divisors[1] for i in self.initial]
        three_phase = flag(three_phase, "OneCycleLR: three_phase")
        self.phases = _one_cycle_phases(self.total_steps, pct_start, three_phase)
        last_epoch = integer(last_epoch, "OneCycleLR: last_epoch", -1)  # (read before the base)
        if last_epoch == -1:
            for group, lr in zip(groups, self.initial):
                group["initial_lr"] = lr
        self._start(
            optimizer, "OneCycleLR", cycle_momentum, base_momentum, max_momentum, last_epoch
        )

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _values(self, step: int, group: int) -> tuple[float, float]:
        """(lr, momentum) of parameter group number `group` at `step`."""
        if step > self.total_steps:
            raise DomainError(
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


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise DomainError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise DomainError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if not isinstance(epochs, int) or epochs <= 0:
        raise DomainError(f"Expected positive integer epochs, but got {epochs}")
    if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
        raise DomainError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch


def _floats(value, groups, name: str) -> list[float]:
    return [finite(v, name) for v in _per_group(value, groups, name)]


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


class CyclicLR(_MomentumCycles):
    """The lr cycles between base_lr and max_lr (step_size_up steps up, step_size_down down),
    stepped once per batch. mode: 'triangular' (constant amplitude), 'triangular2' (halved
    each cycle), 'exp_range' (times gamma ** iteration), or scale_fn with scale_mode. The
    momentum cycles inversely between max_momentum and base_momentum."""

    lists = ("min_lr", "max_lr", "base_momentum", "max_momentum")

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
        if scale_fn is None:
            mode = choice(mode, ("triangular", "triangular2", "exp_range"), "CyclicLR: mode")
        elif not callable(scale_fn):
            raise ArgumentError(f"CyclicLR: scale_fn must be callable, got {shown(scale_fn)}")
        scale_mode = choice(scale_mode, ("cycle", "iterations"), "CyclicLR: scale_mode")
        up = finite(step_size_up, "CyclicLR: step_size_up")
        down = up if step_size_down is None else finite(step_size_down, "CyclicLR: step_size_down")
        if not (up > 0 and down >= 0):
            raise DomainError(
                f"CyclicLR: step_size_up must be > 0 and step_size_down >= 0, got {up}, {down}"
            )
        self.total_size, self.step_ratio = up + down, up / (up + down)
        groups = _optimizer(optimizer, "CyclicLR").param_groups  # (values: one, or per group)
        self.min_lr, self.max_lr = (
            _floats(base_lr, groups, "base_lr"),
            _floats(max_lr, groups, "max_lr"),
        )
        self.mode, self.gamma = mode, finite(gamma, "CyclicLR: gamma")
        self.scale_fn, self.scale_mode = scale_fn, scale_mode
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        last_epoch = integer(last_epoch, "CyclicLR: last_epoch", -1)  # (read before the base)
        if last_epoch == -1:
            for group, lr in zip(groups, self.min_lr):
                optimizer.set_hyper(group, "lr", lr)
        self._start(optimizer, "CyclicLR", cycle_momentum, base_momentum, max_momentum, last_epoch)

    def _scale(self, x: float) -> float:
        if self.scale_fn is not None:
            return real(self.scale_fn(x), "CyclicLR: scale_fn(x)")
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / _power(2.0, x - 1)
        return _power(self.gamma, x)

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


# ---------------------------------------------------------------- schedules of schedules


class SequentialLR(LRScheduler):
    """schedulers[i] from milestones[i - 1] on, each counting its epochs from its
    milestone (from 0 for the first)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        schedulers = _schedulers(schedulers, "SequentialLR")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler) or s.optimizer is not optimizer:
                raise DomainError(
                    f"SequentialLR expects all schedulers to belong to the same optimizer, "
                    f"but got scheduler at index {i} to be different"
                )
        milestones = integers(milestones, "SequentialLR: milestones")
        if len(milestones) != len(schedulers) - 1:
            raise DomainError(
                f"Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers, self._milestones = schedulers, list(milestones)
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
        schedulers = _schedulers(schedulers, "ChainedScheduler")
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise DomainError(
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
        name = "ReduceLROnPlateau"
        self.mode = choice(mode, ("min", "max"), f"{name}: mode")
        self.threshold_mode = choice(threshold_mode, ("rel", "abs"), f"{name}: threshold_mode")
        self.factor = real(factor, f"{name}: factor")
        if not 0.0 <= self.factor < 1.0:
            raise DomainError(f"factor must be in [0, 1), got {factor}")
        self.optimizer = _optimizer(optimizer, name)
        self.patience = integer(patience, f"{name}: patience", 0)
        self.cooldown = integer(cooldown, f"{name}: cooldown", 0)
        self.threshold, self.eps = (
            finite(threshold, f"{name}: threshold"),
            finite(eps, f"{name}: eps"),
        )
        groups = optimizer.param_groups
        self.min_lrs = _floats(min_lr, groups, "min_lr")  # (PyTorch's name)
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
        value = real(metrics, "ReduceLROnPlateau.step: metrics")
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
            raise DomainError(f"ReduceLROnPlateau.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)


def _schedulers(value, owner: str) -> list:
    """The schedules a schedule of schedules combines: a non-empty sequence of LRSchedulers."""
    try:
        items = list(value)
    except TypeError:  # (not iterable)
        items = None
    if not items or not all(isinstance(s, LRScheduler) for s in items):
        raise ArgumentError(
            f"{owner}: schedulers must be a non-empty list of LRSchedulers, got {shown(value)}"
        )
    return items


def _per_group(value, groups, name: str) -> list:
    """One value per parameter group: a list or tuple of them, or one for every group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise DomainError(f"expected {len(groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(groups)
