"""Adamax, NAdam, RAdam, Adadelta, Rprop and ASGD: several steps on a small least-squares model
against numpy references of their update rules and against PyTorch (float64, 1e-10); the same
updates appended to programs by minimize() (static and under @jit, with the state shared with
eager mode and an lr set between steps) against eager mode; state round trips, bad options."""

import math

import numpy as np
import pytest

import nbflow as nb
from nbflow import optim

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((3, 4))
B0 = RNG.standard_normal(3)
X = RNG.standard_normal((5, 4))
Y = RNG.standard_normal((5, 3))
STEPS = 12  # RAdam rectifies from step 6 on: both of its branches run


def _grads(w, b):
    """d/d(w, b) of mean((X w^T + b - Y)^2), in numpy."""
    r = 2 * (X @ w.T + b - Y) / Y.size
    return r.T @ X, r.sum(axis=0)


# ---------------------------------------------------------------- numpy references


def _adamax(p, g, s, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    g = g + weight_decay * p
    s["m"] = betas[0] * s.get("m", 0) + (1 - betas[0]) * g
    s["u"] = np.maximum(betas[1] * s.get("u", 0), np.abs(g) + eps)
    return p - lr / (1 - betas[0] ** t) * s["m"] / s["u"]


def _nadam(p, g, s, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, momentum_decay=4e-3):
    b1, b2 = betas
    mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    s["prod"] = s.get("prod", 1.0) * mu
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    denom = np.sqrt(s["v"] / (1 - b2**t)) + eps
    p = p - lr * (1 - mu) / (1 - s["prod"]) * g / denom
    return p - lr * mu_next / (1 - s["prod"] * mu_next) * s["m"] / denom


def _radam(p, g, s, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    m_hat = s["m"] / (1 - b1**t)
    rho_inf = 2 / (1 - b2) - 1
    rho = rho_inf - 2 * t * b2**t / (1 - b2**t)
    if rho <= 5:
        return p - lr * m_hat
    r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
    v_hat = np.sqrt(s["v"]) / math.sqrt(1 - b2**t)
    return p - lr * m_hat * r / (v_hat + eps / math.sqrt(1 - b2**t))


def _adadelta(p, g, s, t, lr=1.0, rho=0.9, eps=1e-6):
    s["sq"] = rho * s.get("sq", 0) + (1 - rho) * g * g
    delta = np.sqrt(s.get("acc", 0) + eps) / np.sqrt(s["sq"] + eps) * g
    s["acc"] = rho * s.get("acc", 0) + (1 - rho) * delta * delta
    return p - lr * delta


def _rprop(p, g, s, t, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)):
    sign = np.sign(g * s.get("prev", 0))
    size = s.get("size", np.full_like(p, lr))
    size = np.clip(size * np.where(sign > 0, etas[1], np.where(sign < 0, etas[0], 1)), *step_sizes)
    g = np.where(sign < 0, 0, g)
    s["size"], s["prev"] = size, g
    return p - np.sign(g) * size


def _asgd(p, g, s, t, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6):
    eta, mu = s.get("eta", lr), s.get("mu", 1.0)
    p = p * (1 - lambd * eta) - eta * g
    s["ax"] = s.get("ax", 0) + (p - s.get("ax", 0)) * mu if mu != 1 else p.copy()
    s["eta"] = lr / (1 + lambd * lr * t) ** alpha
    s["mu"] = 1 / max(1, t - t0)
    return p


REFERENCES = {
    "Adamax": (_adamax, {"lr": 0.01, "weight_decay": 0.1}),
    "NAdam": (_nadam, {"lr": 0.01}),
    "RAdam": (_radam, {"lr": 0.01}),
    "Adadelta": (_adadelta, {"lr": 0.5}),
    "Rprop": (_rprop, {"lr": 0.05}),
    "ASGD": (_asgd, {"lr": 0.05, "t0": 3}),
}


def _train_nbflow(name, options, steps=STEPS):
    w = nb.tensor(W0, dtype=nb.float64, requires_grad=True)
    b = nb.tensor(B0, dtype=nb.float64, requires_grad=True)
    opt = getattr(optim, name)([w, b], **options)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w.T + b - y) ** 2).mean().backward()
        opt.step()
    return opt, w.numpy(), b.numpy()


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_matches_the_numpy_reference(name):
    rule, options = REFERENCES[name]
    _, w, b = _train_nbflow(name, options)
    p, q, sp, sq = W0.copy(), B0.copy(), {}, {}
    for t in range(1, STEPS + 1):
        gw, gb = _grads(p, q)
        p, q = rule(p, gw, sp, t, **options), rule(q, gb, sq, t, **options)
    np.testing.assert_allclose(w, p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, q, rtol=1e-10, atol=1e-12)
    assert np.abs(w - W0).max() > 1e-3  # the steps did move the weights


TORCH_CASES = [
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"weight_decay": 0.1}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.01}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.8, 0.9)}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.1, "t0": 2, "lambd": 1e-2, "alpha": 0.5, "weight_decay": 0.01}),
]


@pytest.mark.parametrize("name,options", TORCH_CASES)
def test_matches_pytorch(name, options):
    torch = pytest.importorskip("torch")
    _, w, b = _train_nbflow(name, options)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # PyTorch's scalar state (mu_product, eta) too
    try:
        tw = torch.tensor(W0, requires_grad=True)
        tb = torch.tensor(B0, requires_grad=True)
        opt = getattr(torch.optim, name)([tw, tb], **options)
        for _ in range(STEPS):
            opt.zero_grad()
            ((torch.tensor(X) @ tw.T + tb - torch.tensor(Y)) ** 2).mean().backward()
            opt.step()
    finally:
        torch.set_default_dtype(default)
    np.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, tb.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_state_dict_round_trip_resumes_exactly(name):
    _, options = REFERENCES[name]
    whole = _train_nbflow(name, options, steps=6)[1]
    opt, _, _ = _train_nbflow(name, options, steps=3)
    saved = opt.state_dict()
    w = nb.tensor(opt.params[0].numpy(), dtype=nb.float64, requires_grad=True)
    b = nb.tensor(opt.params[1].numpy(), dtype=nb.float64, requires_grad=True)
    resumed = getattr(optim, name)([w, b], **options)
    resumed.load_state_dict(saved)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)
    for _ in range(3):
        resumed.zero_grad()
        ((x @ w.T + b - y) ** 2).mean().backward()
        resumed.step()
    np.testing.assert_allclose(w.numpy(), whole, rtol=1e-12)
    assert int(resumed.state[0]["step"].item()) == 6


def test_load_state_dict_refuses_a_bad_scalar_state():
    opt, _, _ = _train_nbflow("NAdam", {}, steps=1)
    saved = opt.state_dict()
    saved["state"][0]["mu_product"] = nb.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="mu_product"):
        opt.load_state_dict(saved)


GRAPH_CASES = [(name, options) for name, options in TORCH_CASES if options] + [
    ("Rprop", {"lr": 0.05, "maximize": True}),
]


@pytest.mark.parametrize("name,options", GRAPH_CASES)
def test_minimize_in_a_static_program_trains_as_eager_mode(name, options):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4], nb.float64)
        y = nb.static.data("y", [-1, 3], nb.float64)
        w = nb.static.create_parameter("w", [3, 4], nb.float64)
        b = nb.static.create_parameter("b", [3], nb.float64)
        loss = ((x @ w.T + b - y) ** 2).mean()
        getattr(optim, name)(**options).minimize(loss)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["w"], scope["b"] = nb.tensor(W0), nb.tensor(B0)
    for _ in range(STEPS):
        exe.run(main, {"x": X, "y": Y}, [loss.name, "w", "b"], scope)  # (updates kept)
    _, want_w, want_b = _train_nbflow(name, options)
    np.testing.assert_allclose(scope["w"].numpy(), want_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(scope["b"].numpy(), want_b, rtol=1e-10, atol=1e-12)
    assert scope["w@STEP"].item() == STEPS


def _train_jit(name, options, steps=STEPS, lr_at=None):
    w = nb.tensor(W0, dtype=nb.float64, requires_grad=True)
    b = nb.tensor(B0, dtype=nb.float64, requires_grad=True)
    opt = getattr(optim, name)([w, b], **options)

    @nb.jit
    def train(x, y):
        loss = ((x @ w.T + b - y) ** 2).mean()
        opt.minimize(loss)
        return loss

    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)
    with nb.no_grad():  # the program computes its own gradients
        for i in range(steps):
            if lr_at is not None and i == lr_at[0]:
                opt.param_groups[0]["lr"] = lr_at[1]
            train(x, y)
    return opt, w.numpy(), b.numpy()


@pytest.mark.parametrize("name,options", GRAPH_CASES)
def test_minimize_under_jit_trains_as_eager_mode_and_shares_its_state(name, options):
    opt, w, b = _train_jit(name, options, steps=STEPS // 2)
    eager, want_w, want_b = _train_nbflow(name, options, steps=STEPS // 2)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, want_b, rtol=1e-10, atol=1e-12)
    for i in (0, 1):  # the program's updates wrote the optimizer's own state tensors
        for k, v in eager.state[i].items():
            np.testing.assert_allclose(opt.state[i][k].numpy(), v.numpy(), rtol=1e-10, err_msg=k)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)
    for _ in range(STEPS - STEPS // 2):  # eager steps go on from the program's
        opt.zero_grad()
        ((x @ opt.params[0].T + opt.params[1] - y) ** 2).mean().backward()
        opt.step()
    _, want_w, _ = _train_nbflow(name, options)
    np.testing.assert_allclose(opt.params[0].numpy(), want_w, rtol=1e-10, atol=1e-12)


# the fused updates under minimize, where the gradient of x @ w.T is a transposed view (an
# unused state's stand-in is the gradient: RMSprop refused it as not contiguous)
FUSED_CASES = [
    ("SGD", {"lr": 0.05}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "amsgrad": True}),
    ("Adagrad", {"lr": 0.05}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
]


@pytest.mark.parametrize("name,options", FUSED_CASES)
def test_fused_updates_under_jit_train_as_eager_mode(name, options):
    _, w, b = _train_jit(name, options)
    _, want_w, want_b = _train_nbflow(name, options)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, want_b, rtol=1e-10, atol=1e-12)


def _train_eager_lr_at(name, options, lr_at):
    w = nb.tensor(W0, dtype=nb.float64, requires_grad=True)
    b = nb.tensor(B0, dtype=nb.float64, requires_grad=True)
    opt = getattr(optim, name)([w, b], **options)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)
    for i in range(STEPS):
        if i == lr_at[0]:
            opt.param_groups[0]["lr"] = lr_at[1]
        opt.zero_grad()
        ((x @ w.T + b - y) ** 2).mean().backward()
        opt.step()
    return w.numpy()


# (Rprop reads its lr only for the first step sizes, as PyTorch's)
@pytest.mark.parametrize("name", sorted(set(REFERENCES) - {"Rprop"}))
def test_an_lr_set_between_steps_reaches_the_jitted_program(name):
    _, options = REFERENCES[name]
    lr_at = (4, options["lr"] * 3)
    _, w, _ = _train_jit(name, options, lr_at=lr_at)
    want = _train_eager_lr_at(name, options, lr_at)
    np.testing.assert_allclose(w, want, rtol=1e-10, atol=1e-12)
    assert np.abs(want - _train_nbflow(name, options)[1]).max() > 1e-6  # the lr mattered


@pytest.mark.parametrize(
    "make",
    [
        lambda p: optim.Adamax(p, lr=-1.0),
        lambda p: optim.NAdam(p, betas=(1.0, 0.9)),
        lambda p: optim.RAdam(p, eps=-1.0),
        lambda p: optim.Adadelta(p, rho=1.5),
        lambda p: optim.Rprop(p, etas=(1.5, 1.2)),
        lambda p: optim.ASGD(p, weight_decay=-0.1),
    ],
)
def test_bad_options_raise_value_error(make):
    with pytest.raises(ValueError):
        make([nb.tensor([1.0], requires_grad=True)])


def test_skips_parameters_without_gradient_and_keeps_the_lr_setter():
    a = nb.tensor([1.0, 2.0], dtype=nb.float64, requires_grad=True)
    b = nb.tensor([3.0], dtype=nb.float64, requires_grad=True)
    opt = optim.Adamax([a, b], lr=0.1)
    (a * a).sum().backward()
    opt.step()
    assert b.numpy().tolist() == [3.0] and 1 not in opt.state
    opt.lr = 0.5
    assert opt.param_groups[0]["lr"] == 0.5


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adamax", "Rprop"])
def test_step_takes_a_closure_as_pytorch(name):
    w = nb.tensor(W0, dtype=nb.float64, requires_grad=True)
    b = nb.tensor(B0, dtype=nb.float64, requires_grad=True)
    opt = getattr(optim, name)([w, b], lr=0.05)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)

    def closure():
        opt.zero_grad()
        loss = ((x @ w.T + b - y) ** 2).mean()
        loss.backward()
        return loss

    losses = []
    with nb.no_grad():  # the closure runs with gradients on all the same
        for _ in range(STEPS):
            losses.append(opt.step(closure).item())
    _, want_w, _ = _train_nbflow(name, {"lr": 0.05})
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-12)
    assert losses[-1] < losses[0]
    assert opt.step() is None  # without a closure
