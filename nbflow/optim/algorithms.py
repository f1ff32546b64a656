"""The optimization algorithms (PyTorch's semantics and defaults): SGD, Adam, AdamW, RMSprop
and Adagrad, whose update is one in-place op per parameter (`sgd_update_`, `adam_update_`,
`rmsprop_update_`, `adagrad_update_`), and Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD, whose
update is a composition of tensor ops (optimizer.ComposedOptimizer)."""

from __future__ import annotations

from .. import ops
from ..core import dtypes as dt
from ..core import no_grad
from ..core.errors import DomainError, UnsupportedError
from ..graph.jit import traced_grads
from .optimizer import (
    ComposedOptimizer,
    Optimizer,
    _average,
    _betas,
    _check,
    _coef,
    _count_step,
    _evaluate,
    _fill_,
    _flags,
    _full,
    _maximum,
    _number,
    _select,
    _sqrt,
)

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
    "RMSProp",
    "RMSprop",
    "Rprop",
]


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
        _check(lr=lr, momentum=momentum, weight_decay=weight_decay)  # (NaN, a string too)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise DomainError("Nesterov momentum needs momentum > 0 and dampening 0")
        hyper = {
            "lr": float(lr),
            "momentum": float(momentum),
            "dampening": float(dampening),
            "weight_decay": float(weight_decay),
            **_flags(self, nesterov=nesterov, maximize=maximize),
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
        if traced_grads() is not None:  # under @jit: minimize's updates (as minimize refuses)
            self._check_traceable()
            return super().step(closure)
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
        self._check_traceable()
        return super().minimize(loss, *args, **kwargs)

    def _check_traceable(self):
        if any(group["momentum"] and group["dampening"] for group in self.param_groups):
            raise UnsupportedError(  # (before anything is appended)
                "SGD with momentum and dampening in a program (minimize, or step() under "
                "@jit): its first step takes the gradient itself as the buffer (PyTorch's), "
                "which the program's update cannot tell from a later one; use dampening=0, or "
                "step() in eager mode"
            )


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
        _check(lr=lr, eps=eps, weight_decay=weight_decay)
        beta1, beta2 = _betas(betas)  # two numbers in [0, 1)
        hyper = {
            "lr": float(lr),
            "beta1": float(beta1),
            "beta2": float(beta2),
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            **_flags(
                self,
                decoupled_weight_decay=decoupled_weight_decay,
                amsgrad=amsgrad,
                maximize=maximize,
            ),
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
            **_flags(self, centered=centered, maximize=maximize),
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
            **_flags(self, maximize=maximize),
        }
        super().__init__(params, hyper)

    def inputs(self, p, g, s):
        return [p, g, s["state_sum"], s["step"]]


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
            **_flags(self, maximize=maximize),
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
            **_flags(self, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize),
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
            **_flags(self, decoupled_weight_decay=decoupled_weight_decay, maximize=maximize),
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
        _check(lr=lr, eps=eps, weight_decay=weight_decay, rho=rho)
        if not 0.0 <= rho <= 1.0:
            raise DomainError(f"rho must be in [0, 1], got {rho}")
        hyper = {
            "lr": float(lr),
            "rho": float(rho),
            "eps": float(eps),
            "weight_decay": float(weight_decay),
            **_flags(self, maximize=maximize),
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
        for name, pair in (("etas", etas), ("step_sizes", step_sizes)):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise DomainError(f"Rprop: {name} must be two numbers, got {pair!r}")
            _check(**{f"{name}[{i}]": v for i, v in enumerate(pair)})
        etaminus, etaplus = etas
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise DomainError(f"etas must satisfy 0 < etaminus < 1 < etaplus, got {etas}")
        hyper = {
            "lr": float(lr),
            "etaminus": float(etaminus),
            "etaplus": float(etaplus),
            "step_size_min": float(step_sizes[0]),
            "step_size_max": float(step_sizes[1]),
            **_flags(self, maximize=maximize),
        }
        super().__init__(params, hyper)

    @property
    def etas(self) -> tuple[float, float]:
        return self.hyper["etaminus"], self.hyper["etaplus"]

    def initial(self, name):
        return self.hyper["lr"] if name == "step_size" else 0.0

    def state_spec(self, name, p):
        shape, dtype, value = super().state_spec(name, p)
        if name == "step_size" and dt.is_complex(dtype):
            value = complex(value, value)  # PyTorch's: a step size for each part
        return shape, dtype, value

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
            **_flags(self, maximize=maximize),
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
