"""PyTorch's torch.optim.swa_utils: stochastic weight averaging (SWA) and exponential moving
averages (EMA) of a model's weights (`AveragedModel`), the SWA learning-rate schedule
(`SWALR`) and `update_bn`, which recomputes BatchNorm statistics for averaged weights.

Averaging is eager (it reads the average count and writes the averaged copy in place, between
training steps); the averaged model itself runs eagerly and under @nbflow.jit like any module.
"""

from __future__ import annotations

import copy
import itertools
import math

from .. import ops
from ..core import dtypes as dt
from ..core import graph_mode, no_grad
from ..core.errors import DomainError, UnsupportedError
from ..eager.tensor import Tensor, tensor
from ..nn.modules.batchnorm import BatchNormBase
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _per_group

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _count(n) -> int:
    return int(n.item()) if isinstance(n, Tensor) else int(n)


def _assign(target: Tensor, value: Tensor) -> None:
    """target = value in place, cast to target's dtype (an integer buffer truncates, as
    PyTorch's copy_)."""
    ops.copy_(target, value if value.dtype == target.dtype else ops.cast(value, dtype=target.dtype))


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise DomainError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay=0.999):
    """ema_update(averaged list, current list, num_averaged): each averaged tensor moves to
    decay * itself + (1 - decay) * current, in place."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if dt.is_float(p_ema.dtype):
                    _assign(p_ema, ops.lerp(p_ema, p_model, 1 - decay))
                else:
                    _assign(p_ema, p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """swa_update(averaged list, current list, num_averaged): the equal-weight running mean,
    averaged += (current - averaged) / (num_averaged + 1), in place."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        weight = 1 / (_count(num_averaged) + 1)
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if dt.is_float(p_avg.dtype):
                    _assign(p_avg, ops.lerp(p_avg, p_model, weight))
                else:
                    _assign(p_avg, p_avg + (p_model - p_avg) * weight)

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """ema_update(averaged, current, num_averaged) -> decay * averaged + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """swa_update(averaged, current, num_averaged) -> the running mean with one more model."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _check_eager(what: str) -> None:
    if graph_mode():
        raise UnsupportedError(
            f"{what} is eager: it reads the average count and writes the averaged copy in "
            "place; call it between training steps, outside @nbflow.jit"
        )


class AveragedModel(Module):
    """A copy of `model` (on `device` if given) whose parameters are a running average of
    `model`'s, one `update_parameters(model)` call at a time: the first copies them, the
    later ones apply `avg_fn(averaged, current, num_averaged)` (a tensor returned per
    parameter) or `multi_avg_fn(averaged list, current list, num_averaged)` (in place), by
    default the equal-weight SWA mean. use_buffers=True averages the buffers too; otherwise
    they are copied from `model` at each update. `n_averaged` (a buffer) counts the models
    averaged. Calling it calls the averaged copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise DomainError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype="int64", device=device or "cpu"))
        self.avg_fn, self.multi_avg_fn = avg_fn, multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _pairs(self, model) -> list:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        return [(a.detach(), b.detach().to(a.device)) for a, b in zip(mine, theirs)]

    def update_parameters(self, model) -> None:
        """Average `model`'s current parameters (and buffers, use_buffers) into this copy."""
        _check_eager("AveragedModel.update_parameters")
        pairs = self._pairs(model)
        n = _count(self.n_averaged)
        with no_grad():
            if n == 0:
                for mine, theirs in pairs:
                    _assign(mine, theirs)
            elif self.avg_fn is not None:
                for mine, theirs in pairs:
                    _assign(mine, self.avg_fn(mine, theirs, self.n_averaged.to(mine.device)))
            elif pairs:
                averaged, current = zip(*pairs)
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(list(averaged), list(current), self.n_averaged)
                else:  # (PyTorch's per-tensor SWA mean on the CPU)
                    average = get_swa_avg_fn()
                    for mine, theirs in pairs:
                        _assign(mine, average(mine, theirs, n))
            if not self.use_buffers:  # the buffers follow the model's
                for mine, theirs in zip(self.module.buffers(), model.buffers()):
                    _assign(mine, theirs.detach().to(mine.device))
            ops.add_(self.n_averaged, 1)


def update_bn(loader, model, device=None) -> None:
    """Recompute the running statistics of every BatchNorm layer of `model` by one pass over
    `loader` (batches, or tuples whose first element is the input), as a cumulative average
    (momentum None for the pass); the layers' momenta and the model's mode are restored."""
    _check_eager("update_bn")
    momenta = {}
    for module in model.modules():
        if isinstance(module, BatchNormBase):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        with no_grad():
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = batch[0]
                if device is not None:
                    batch = batch.to(device)
                model(batch)
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to its swa_lr (one value, or one per group, kept as
    group["swa_lr"]) over anneal_epochs steps, by a cosine ('cos') or a straight line
    ('linear'), then holds it. PyTorch's recursive rule: each step recovers the lr the anneal
    started from out of the current lr, so another schedule's change carries on."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _per_group(swa_lr, optimizer.param_groups, "swa_lr")
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = float(value)
        if anneal_strategy not in ("cos", "linear"):
            raise DomainError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise DomainError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        self._step_count = 0  # steps since made, PyTorch's counter (not last_epoch)
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def _alpha(self, step: int) -> float:
        return self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))

    def get_lr(self) -> list[float]:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha, alpha = self._alpha(step - 1), self._alpha(step)
        groups = self.optimizer.param_groups
        starts = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, starts)]

    def lr_at(self, epoch, base_lr, group=0):
        """The closed form (for SequentialLR and ChainedScheduler): from base_lr at epoch 0."""
        step = max(1, epoch) if self.anneal_epochs == 0 else epoch
        alpha = self._alpha(step)
        return self.optimizer.param_groups[group]["swa_lr"] * alpha + base_lr * (1 - alpha)

    def step(self):
        self._step_count += 1
        self.last_epoch += 1
        self._apply(self.get_lr())

    def load_state_dict(self, state_dict: dict):
        """PyTorch's: the counters and settings back, the lr left as it is."""
        own = self.state_dict()
        if set(state_dict) != set(own):
            raise DomainError(f"SWALR.load_state_dict: keys {sorted(own)} expected")
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
