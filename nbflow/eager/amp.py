"""PyTorch's automatic mixed precision: autocast and GradScaler.

    with nbflow.autocast("cpu"):             # (or nbflow.amp.autocast)
        loss = loss_fn(model(x), y)          # matmuls and convolutions in float16
    scaler.scale(loss).backward()            # a scaled loss: small float16 gradients survive
    scaler.step(optimizer)                   # unscaled gradients; skipped on inf/NaN
    scaler.update()                          # the scale backs off or grows

Inside autocast, bind() (the one dispatch point) hands each op's arguments to the policy
first: the ops of LOWER take their float32 tensors in the autocast dtype, those of FLOAT32 take
their float16 tensors in float32 (reductions, exponentials, losses, solvers: where float16
loses too much), and the rest promote as always. The casts are ordinary cast ops, so the tape
differentiates through them and a Program traced inside autocast holds them (@nbflow.jit keys
its traces on the autocast state). Gradient rules run in the dtypes of their forward ops, as
PyTorch's backward does; float64 and integer tensors are never cast. Casts of a parameter
are made once per autocast region (cache_enabled), as in PyTorch.

nbflow has no bfloat16 (numpy has none), so the autocast dtype is float16 on every device.
On the CPU float16 kernels compute in float32 and round, so autocast there gives float16's
numerics, not speed.
"""

from __future__ import annotations

import math
import weakref
from contextlib import ContextDecorator

import numpy as np

from .. import ops
from ..core import STATE, Trace, modes_changed, no_grad
from ..core import dtypes as dt
from ..core.errors import DomainError, DTypeError, UnsupportedError
from ..ops import elementwise
from .tensor import EagerTrace, Tensor, version_counter

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype"]

# PyTorch's lists, by nbflow's op names (composed functions reach these ops)
LOWER = frozenset({"matmul", "linear", "addmm", "addmm_", "conv2d", "conv3d"})
FLOAT32 = frozenset(
    {
        "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "softplus", "sum", "prod",
        "cumsum", "logsumexp", "softmax", "log_softmax", "layer_norm", "batch_norm_train",
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits",
        "binary_cross_entropy_pointwise", "ctc_loss", "solve", "inv", "cholesky", "cholesky_ex",
        "lu_factor_ex", "lu_solve", "slogdet", "matrix_exp",
    }
)  # fmt: skip
DEVICES = ("cpu", "cuda")


class _Policy:
    """The casts of one autocast region (STATE.autocast while it is active)."""

    def __init__(self, dtype, cache: bool):
        self.dtype, self.cache = dtype, cache
        self.key = dtype.name  # what @nbflow.jit's trace cache keys on
        self.casts: dict[int, tuple] = {}  # id(parameter) -> (weakref, version, grad, cast)

    def __call__(self, op, args):
        if STATE.differentiating is not None:  # gradient rules keep their forward's dtypes
            return args
        if op.name in LOWER:
            source, target = dt.float32, self.dtype
        elif op.name in FLOAT32:
            source, target = dt.float16, dt.float32
        else:
            return args
        keep = set(op.inplace.values())  # an in-place op's target keeps its dtype
        out = list(args)
        for i, a in enumerate(args):
            if getattr(a, "dtype", None) == source and i not in keep and not op.reads_only_shape(i):
                out[i] = self.cast(a, target)
        return out

    def cast(self, a, target):
        if not (self.cache and isinstance(a, Tensor) and a.requires_grad and a._node is None):
            return elementwise.cast(a, dtype=target)
        # a parameter: cast once per region (while unchanged and under the same grad mode)
        version, grad = a.version, STATE.grad_enabled
        found = self.casts.get(id(a))
        if found is not None and found[0]() is a and found[1:3] == (version, grad):
            return found[3]
        made = elementwise.cast(a, dtype=target)
        self.casts[id(a)] = (weakref.ref(a), version, grad, made)
        return made


class autocast(ContextDecorator):
    """PyTorch's torch.autocast (a context manager or decorator): ops inside run in mixed
    precision; enabled=False turns an outer autocast off for the block."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if device_type not in DEVICES:
            raise DomainError(f"autocast: device_type should be one of {DEVICES}: {device_type!r}")
        if dtype is not None and str(dtype) in ("bfloat16", "torch.bfloat16"):
            raise DTypeError("autocast: nbflow has no bfloat16; use dtype=nbflow.float16")
        dtype = dt.float16 if dtype is None else dt.as_dtype(dtype)
        if dtype != dt.float16:
            raise DTypeError(f"autocast: the lower-precision dtype is float16, not {dtype}")
        self.device_type, self.fast_dtype = device_type, dtype
        self.enabled = bool(enabled)
        self.cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._prev = []

    def _recreate_cm(self):  # as a decorator: one per call (calls may be in several threads)
        return autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled)

    def __enter__(self):
        self._prev.append((STATE.autocast, STATE.trace))
        STATE.autocast = _Policy(self.fast_dtype, self.cache_enabled) if self.enabled else None
        if type(STATE.trace) is EagerTrace:
            STATE.trace = _AutocastTrace()  # the operators' shortcut skips bind(): not here
        modes_changed()
        return self

    def __exit__(self, *exc):
        autocast, trace = self._prev.pop()
        STATE.autocast = autocast
        if type(STATE.trace) is _AutocastTrace:
            STATE.trace = trace
        modes_changed()
        return False


class _AutocastTrace(EagerTrace):
    """The eager trace inside autocast: `a @ b` and the other operators go through bind()
    (where the casts are made) instead of their shortcut to the kernel."""

    binary = Trace.binary


def is_autocast_enabled(device_type=None) -> bool:
    return STATE.autocast is not None


def get_autocast_dtype(device_type="cpu"):
    """The dtype autocast casts to (float16: nbflow's only lower-precision dtype)."""
    return dt.float16


# ---------------------------------------------------------------- GradScaler


def _traced_grads():
    """The .grad of the @jit trace running now (graph/jit.py's Grads), None in eager mode;
    a static program (program_guard) has no .grad for the scaler to read: refused."""
    trace = STATE.trace
    if not trace.records:
        return None
    grads = trace.block.program.grads
    if grads is None:
        raise UnsupportedError(
            "GradScaler in a static program: it scales a loss that backward() differentiates "
            "and steps an optimizer; use it eagerly or under @jit"
        )
    return grads


class GradScaler:
    """PyTorch's GradScaler: scale(loss) multiplies the loss by the scale so that small
    float16 gradients do not flush to zero; step(optimizer) unscales the gradients (unless
    unscale_ already did) and skips the step when any is inf or NaN; update() multiplies the
    scale by backoff_factor after a skipped step, by growth_factor after growth_interval
    steps in a row without one.

    The scale and the growth count are 0-d tensors, as PyTorch's, so the whole step traces
    under @jit: there a skipped step is the step's updates undone by where(found_inf, ...)
    for the parameters and optimizer states it wrote, and update() is where() of the
    counts; call update() inside the jitted function too."""

    def __init__(
        self, device="cpu", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
        growth_interval=2000, enabled=True,
    ):  # fmt: skip
        if not growth_factor > 1.0:
            raise DomainError("The growth factor must be > 1.0.")
        if not 0.0 < backoff_factor < 1.0:
            raise DomainError("The backoff factor must be < 1.0.")
        if int(growth_interval) <= 0:
            raise DomainError("growth_interval must be a positive integer")
        self.device, self._enabled = device, bool(enabled)
        self._init_scale = float(init_scale)
        self._scale = Tensor(np.array(init_scale, dt.float32))
        self._growth_tracker = Tensor(np.array(0, dt.int64))
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._per_optimizer: dict[int, dict] = {}  # id(optimizer) -> {"unscaled", "found_inf"}
        self._traced = False  # a jitted function unscaled or stepped

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        return float(self._scale._data) if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval) -> None:
        self._growth_interval = int(new_interval)

    def scale(self, outputs):
        """outputs (a tensor, or tensors nested in lists and tuples) times the scale (a
        float32 one: a float16 loss times 65536 would overflow float16)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": 0})

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale in place (to clip them, say), and
        note whether any is inf or NaN. Once per optimizer between update() calls."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        grads = _traced_grads()
        if grads is not None:
            found = self._unscale_traced(optimizer, grads)
        else:
            found = self._unscale_eager(optimizer)
        state.update(unscaled=True, found_inf=found)

    def _unscale_eager(self, optimizer) -> int:
        inverse, found = 1.0 / self.get_scale(), 0
        for p in _params(optimizer):
            if p.grad is None:
                continue
            g = p.grad._data
            if g.dtype == dt.float16:
                raise DomainError("Attempting to unscale FP16 gradients.")
            with np.errstate(over="ignore", invalid="ignore"):
                np.multiply(g, inverse, out=g, casting="unsafe")
            version_counter(p.grad)[0] += 1
            found |= not np.isfinite(g).all()
        return int(found)

    def _unscale_traced(self, optimizer, grads):
        """The traced gradients, unscaled (each .grad rebound to g / scale), and whether any
        is inf or NaN, as a program value."""
        self._traced = True
        found = None
        with no_grad():
            inverse = ops.reciprocal(self._scale)
            for p in _params(optimizer):
                g = grads.get(p)
                if g is None:
                    continue
                if g.dtype == dt.float16:
                    raise DomainError("Attempting to unscale FP16 gradients.")
                g = g * ops.cast(inverse, dtype=g.dtype)
                grads.set(p, g)
                bad = ops.logical_not(ops.all(ops.isfinite(g)))
                found = bad if found is None else ops.logical_or(found, bad)
        return ops.full((), False, dtype="bool") if found is None else found

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(*args, **kwargs) on unscaled gradients, unless one is inf or NaN
        (then the step is skipped and None returned; under @jit, its updates are undone)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if not state["unscaled"]:
            self.unscale_(optimizer)
        if _traced_grads() is not None:
            return optimizer.step_unless(state["found_inf"])
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Adjust the scale for the next iteration (or set it to new_scale)."""
        if not self._enabled:
            return
        with no_grad():
            found = [s["found_inf"] for s in self._per_optimizer.values()]
            if new_scale is not None:
                value = new_scale.item() if hasattr(new_scale, "item") else new_scale
                ops.fill_(self._scale, float(value))
            elif not found:
                self._nothing_recorded()
            elif _traced_grads() is not None:
                self._update_traced(found)
            elif any(not isinstance(f, int) for f in found):
                self._nothing_recorded()  # program values of a jitted unscale_
            else:
                self._update_eager(any(found))
        self._per_optimizer.clear()

    def _nothing_recorded(self):
        if self._traced:
            raise UnsupportedError(
                "GradScaler.update() after a jitted step: its inf checks are program values; "
                "call scaler.update() inside the jitted function, after scaler.step()"
            )
        raise RuntimeError("No inf checks were recorded prior to update.")

    def _update_eager(self, found: bool):
        scale, tracker = self.get_scale(), int(self._growth_tracker._data)
        if found:
            scale, tracker = scale * self._backoff_factor, 0
        else:
            tracker += 1
            if tracker == self._growth_interval:
                grown = scale * self._growth_factor
                scale = grown if math.isfinite(grown) else scale
                tracker = 0
        ops.fill_(self._scale, scale)
        ops.fill_(self._growth_tracker, tracker)

    def _update_traced(self, found_infs):
        found = found_infs[0]
        for f in found_infs[1:]:
            found = ops.logical_or(found, f)
        scale, tracker = self._scale, self._growth_tracker
        counted = ops.where(found, ops.zeros_like(tracker), tracker + 1)
        grow = counted == self._growth_interval
        grown = scale * self._growth_factor
        grown = ops.where(ops.isfinite(grown), grown, scale)
        backed = scale * self._backoff_factor
        ops.copy_(scale, ops.where(found, backed, ops.where(grow, grown, scale)))
        ops.copy_(tracker, ops.where(grow, ops.zeros_like(tracker), counted))

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": int(self._growth_tracker._data),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a "
                "disabled instance of GradScaler."
            )
        with no_grad():
            ops.fill_(self._scale, float(state_dict["scale"]))
            ops.fill_(self._growth_tracker, int(state_dict["_growth_tracker"]))
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])


def _params(optimizer):
    return [p for group in optimizer.param_groups for p in group["params"]]
