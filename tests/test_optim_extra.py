"""LBFGS (Rosenbrock and a digits logistic regression to scipy's optimum, PyTorch's iterates
step by step, state round trips), Adafactor (a numpy reference of its update, eager against
static programs and @jit, PyTorch) and swa_utils (running averages by hand, SWALR's schedule,
update_bn's statistics, PyTorch)."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

import nbflow as nb
from nbflow import optim
from nbflow.optim import swa_utils

RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- LBFGS


def _rosen(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _lbfgs_run(x0, steps, **options):
    x = nb.tensor(x0, dtype=nb.float64, requires_grad=True)
    opt = optim.LBFGS([x], **options)

    def closure():
        opt.zero_grad()
        loss = _rosen(x)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return x, opt, losses


def test_lbfgs_strong_wolfe_minimises_rosenbrock_to_scipys_optimum():
    x0 = np.array([-1.2, 1.0])
    want = minimize(rosen, x0, jac=rosen_der, method="BFGS", options={"gtol": 1e-12})
    x, opt, losses = _lbfgs_run(
        x0, 3, line_search_fn="strong_wolfe", max_iter=100, tolerance_change=1e-15
    )
    np.testing.assert_allclose(x.numpy(), want.x, atol=1e-7)
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0], atol=1e-7)
    assert losses[0] == pytest.approx(24.2) and losses[-1] < 1e-12
    assert opt.state[0]["n_iter"] > 10  # (iterations, not one lucky step)


def test_lbfgs_fixed_step_converges_on_a_quadratic_and_stops_at_the_optimum():
    a = RNG.standard_normal((5, 5))
    a = a @ a.T + 5 * np.eye(5)
    b = RNG.standard_normal(5)
    x = nb.tensor(np.zeros(5), dtype=nb.float64, requires_grad=True)
    opt = optim.LBFGS([x], max_iter=60, history_size=3, tolerance_grad=1e-10, tolerance_change=0)
    am, bm = nb.tensor(a), nb.tensor(b)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x * (am @ x)).sum() - (bm * x).sum()
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), atol=1e-8)
    assert len(opt.state[0]["old_dirs"]) == 3  # the history kept at history_size
    evals = opt.state[0]["func_evals"]
    opt.step(closure)  # at the optimum: one evaluation, then tolerance_grad stops it
    assert opt.state[0]["func_evals"] == evals + 1


def _digits_problem():
    sklearn = pytest.importorskip("sklearn.datasets")
    digits = sklearn.load_digits()
    x = digits.data[:200] / 16.0
    y = digits.target[:200]
    return x, y, 1e-2


def _logistic_numpy(theta, x, y, lam):
    """Mean multinomial cross-entropy + lam/2 ||W||^2 and its gradient (numpy)."""
    n, d = x.shape
    w, b = theta[: d * 10].reshape(10, d), theta[d * 10 :]
    z = x @ w.T + b
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), y]).mean() + 0.5 * lam * (w * w).sum()
    p[np.arange(n), y] -= 1
    gw, gb = p.T @ x / n + lam * w, p.mean(axis=0)
    return loss, np.concatenate([gw.ravel(), gb])


def test_lbfgs_fits_a_digits_logistic_regression_to_scipys_optimum():
    x, y, lam = _digits_problem()
    d = x.shape[1]
    want = minimize(
        _logistic_numpy,
        np.zeros(d * 10 + 10),
        args=(x, y, lam),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 2000},
    )
    w = nb.tensor(np.zeros((10, d)), dtype=nb.float64, requires_grad=True)
    b = nb.tensor(np.zeros(10), dtype=nb.float64, requires_grad=True)
    opt = optim.LBFGS([w, b], line_search_fn="strong_wolfe", max_iter=300, tolerance_grad=1e-10)
    xt, yt = nb.tensor(x), nb.tensor(y)

    def closure():
        opt.zero_grad()
        logits = xt @ w.T + b
        loss = nb.nn.functional.cross_entropy(logits, yt) + 0.5 * lam * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    final = closure().item()
    assert final == pytest.approx(want.fun, abs=1e-9)
    theta = np.concatenate([w.numpy().ravel(), b.numpy()])
    np.testing.assert_allclose(theta, want.x, atol=2e-4)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_iterates_match_pytorch_step_by_step(line_search_fn):
    torch = pytest.importorskip("torch")
    x0 = np.array([-1.5, 2.0, 0.5, -0.3])
    options = {"lr": 1 if line_search_fn else 0.1, "max_iter": 7, "history_size": 3}
    options["line_search_fn"] = line_search_fn
    x = nb.tensor(x0, dtype=nb.float64, requires_grad=True)
    opt = optim.LBFGS([x], **options)
    tx = torch.tensor(x0, requires_grad=True)
    topt = torch.optim.LBFGS([tx], **options)

    def closure():
        opt.zero_grad()
        loss = _rosen(x)
        loss.backward()
        return loss

    def torch_closure():
        topt.zero_grad()
        loss = _rosen(tx)
        loss.backward()
        return loss

    for _ in range(6):
        loss, want = opt.step(closure).item(), topt.step(torch_closure).item()
        assert loss == pytest.approx(want, rel=1e-9)
        np.testing.assert_allclose(x.numpy(), tx.detach().numpy(), rtol=1e-8, atol=1e-10)
        ours, theirs = opt.state[0], topt.state[tx]
        assert ours["func_evals"] == theirs["func_evals"]
        assert ours["n_iter"] == theirs["n_iter"]
        assert float(ours["t"]) == pytest.approx(float(theirs["t"]), rel=1e-8)


def test_lbfgs_state_dict_round_trip_resumes_exactly():
    x0 = np.array([-1.2, 1.0, 0.3])
    options = {"line_search_fn": "strong_wolfe", "max_iter": 4, "history_size": 2}
    whole, _, _ = _lbfgs_run(x0, 4, **options)
    x, opt, _ = _lbfgs_run(x0, 2, **options)
    saved = opt.state_dict()
    assert saved["param_groups"][0]["params"] == [0]
    assert saved["param_groups"][0]["line_search_fn"] == "strong_wolfe"
    assert saved["state"][0]["d"] is not opt.state[0]["d"]  # copies
    y = nb.tensor(x.numpy(), dtype=nb.float64, requires_grad=True)
    resumed = optim.LBFGS([y], **options)
    resumed.load_state_dict(saved)

    def closure():
        resumed.zero_grad()
        loss = _rosen(y)
        loss.backward()
        return loss

    for _ in range(2):
        resumed.step(closure)
    np.testing.assert_allclose(y.numpy(), whole.numpy(), rtol=1e-12)
    saved["state"][0]["d"] = nb.zeros(5, dtype=nb.float64)
    with pytest.raises(ValueError, match="flat tensors of 3"):
        resumed.load_state_dict(saved)


def test_lbfgs_refusals():
    a = nb.tensor([1.0], requires_grad=True)
    b = nb.tensor([2.0], requires_grad=True)
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="learning rate"):
        optim.LBFGS([a], lr=-1)
    opt = optim.LBFGS([a], line_search_fn="armijo")
    with pytest.raises(TypeError):
        opt.step()  # the closure is required, as in PyTorch

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="strong_wolfe"):
        opt.step(closure)
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        w = nb.static.create_parameter("w", [2], nb.float64)
        with pytest.raises(nb.UnsupportedError, match="eager only"):
            optim.LBFGS([a]).minimize((w * w).sum())


# ---------------------------------------------------------------- Adafactor

W0 = RNG.standard_normal((3, 4))
B0 = RNG.standard_normal(3)
X = RNG.standard_normal((5, 4))
Y = RNG.standard_normal((5, 3))
STEPS = 6


def _grads(w, b):
    r = 2 * (X @ w.T + b - Y) / Y.size
    return r.T @ X, r.sum(axis=0)


def _adafactor(p, g, s, t, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0):
    """PyTorch's Adafactor step in numpy (float64), the state in s."""
    eps1 = np.finfo(p.dtype).eps if eps[0] is None else eps[0]
    beta = t**beta2_decay
    alpha = max(eps[1], np.sqrt((p * p).mean())) * min(lr, 1 / math.sqrt(t))
    p = p * (1 - lr * weight_decay)
    if p.ndim > 1:
        s["r"] = s.get("r", 0) + beta * ((g * g).mean(axis=-1, keepdims=True) - s.get("r", 0))
        s["c"] = s.get("c", 0) + beta * ((g * g).mean(axis=-2, keepdims=True) - s.get("c", 0))
        var = s["r"] @ s["c"] / np.maximum(s["r"].mean(axis=-2, keepdims=True), eps1)
    else:
        s["v"] = s.get("v", 0) + beta * (g * g - s.get("v", 0))
        var = s["v"]
    update = g / np.sqrt(np.maximum(var, eps1 * eps1))
    denom = max(1.0, np.sqrt((update * update).mean()) / d)
    return p - alpha / denom * update


ADAFACTOR_CASES = [
    {},
    {"lr": 0.05, "weight_decay": 0.1, "d": 1.5, "eps": (1e-20, 1e-3)},
    {"lr": 0.3, "beta2_decay": -0.5, "eps": (None, 1e-2)},
]


def _train_adafactor(options, steps=STEPS, jit=False):
    w = nb.tensor(W0, dtype=nb.float64, requires_grad=True)
    b = nb.tensor(B0, dtype=nb.float64, requires_grad=True)
    opt = optim.Adafactor([w, b], **options)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)

    @nb.jit
    def train(x, y):
        loss = ((x @ w.T + b - y) ** 2).mean()
        opt.minimize(loss)
        return loss

    for _ in range(steps):
        if jit:
            with nb.no_grad():
                train(x, y)
        else:
            opt.zero_grad()
            ((x @ w.T + b - y) ** 2).mean().backward()
            opt.step()
    return opt, w.numpy(), b.numpy()


@pytest.mark.parametrize("options", ADAFACTOR_CASES)
def test_adafactor_matches_the_numpy_reference(options):
    _, w, b = _train_adafactor(options)
    p, q, sp, sq = W0.copy(), B0.copy(), {}, {}
    for t in range(1, STEPS + 1):
        gw, gb = _grads(p, q)
        p, q = _adafactor(p, gw, sp, t, **options), _adafactor(q, gb, sq, t, **options)
    np.testing.assert_allclose(w, p, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b, q, rtol=1e-12, atol=1e-14)
    assert np.abs(w - W0).max() > 1e-3


def test_adafactor_maximize_ascends():
    _, w, _ = _train_adafactor({"maximize": True, "lr": 0.1})
    loss = lambda w: ((X @ w.T + B0 - Y) ** 2).mean()
    assert loss(w) > loss(W0) + 0.1


@pytest.mark.parametrize("options", ADAFACTOR_CASES[1:] + [{"maximize": True}])
def test_adafactor_under_jit_trains_as_eager_mode_and_shares_its_state(options):
    opt, w, b = _train_adafactor(options, jit=True)
    eager, want_w, want_b = _train_adafactor(options)
    np.testing.assert_allclose(w, want_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b, want_b, rtol=1e-12, atol=1e-14)
    assert set(opt.state[0]) == {"step", "row_var", "col_var"}
    assert set(opt.state[1]) == {"step", "variance"}
    for i in (0, 1):
        for k, v in eager.state[i].items():
            np.testing.assert_allclose(opt.state[i][k].numpy(), v.numpy(), rtol=1e-12, err_msg=k)


def test_adafactor_in_a_static_program_trains_as_eager_mode():
    options = ADAFACTOR_CASES[1]
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4], nb.float64)
        y = nb.static.data("y", [-1, 3], nb.float64)
        w = nb.static.create_parameter("w", [3, 4], nb.float64)
        b = nb.static.create_parameter("b", [3], nb.float64)
        loss = ((x @ w.T + b - y) ** 2).mean()
        optim.Adafactor(**options).minimize(loss)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["w"], scope["b"] = nb.tensor(W0), nb.tensor(B0)
    for _ in range(STEPS):
        exe.run(main, {"x": X, "y": Y}, [loss.name, "w", "b"], scope)
    _, want_w, want_b = _train_adafactor(options)
    np.testing.assert_allclose(scope["w"].numpy(), want_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(scope["b"].numpy(), want_b, rtol=1e-12, atol=1e-14)
    assert scope["w@ROW_VAR"].shape == (3, 1) and scope["w@COL_VAR"].shape == (1, 4)


def test_adafactor_an_lr_set_between_steps_reaches_the_jitted_program():
    def run(jit):
        w = nb.tensor(W0, dtype=nb.float64, requires_grad=True)
        opt = optim.Adafactor([w], lr=0.5)
        x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)

        @nb.jit
        def train(x, y):
            loss = ((x @ w.T - y) ** 2).mean()
            opt.minimize(loss)
            return loss

        for i in range(4):
            if i == 2:
                opt.param_groups[0]["lr"] = 0.01  # below 1/sqrt(t): the lr now decides
            if jit:
                with nb.no_grad():
                    train(x, y)
            else:
                opt.zero_grad()
                ((x @ w.T - y) ** 2).mean().backward()
                opt.step()
        return w.numpy()

    np.testing.assert_allclose(run(True), run(False), rtol=1e-12)


@pytest.mark.parametrize("options", ADAFACTOR_CASES + [{"maximize": True, "lr": 0.2}])
def test_adafactor_matches_pytorch(options):
    torch = pytest.importorskip("torch")
    if not hasattr(torch.optim, "Adafactor"):
        pytest.skip("PyTorch before 2.5 has no Adafactor")
    _, w, b = _train_adafactor(options)
    tw, tb = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    opt = torch.optim.Adafactor([tw, tb], **options)
    for _ in range(STEPS):
        opt.zero_grad()
        ((torch.tensor(X) @ tw.T + tb - torch.tensor(Y)) ** 2).mean().backward()
        opt.step()
    np.testing.assert_allclose(w, tw.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b, tb.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_adafactor_float32_matches_pytorch():
    torch = pytest.importorskip("torch")
    if not hasattr(torch.optim, "Adafactor"):
        pytest.skip("PyTorch before 2.5 has no Adafactor")
    w = nb.tensor(W0, dtype=nb.float32, requires_grad=True)
    opt = optim.Adafactor([w], lr=0.1)
    tw = torch.tensor(W0, dtype=torch.float32, requires_grad=True)
    topt = torch.optim.Adafactor([tw], lr=0.1)
    x, tx = nb.tensor(X, dtype=nb.float32), torch.tensor(X, dtype=torch.float32)
    for _ in range(STEPS):
        opt.zero_grad()
        topt.zero_grad()
        (x @ w.T).pow(2).mean().backward()
        (tx @ tw.T).pow(2).mean().backward()
        opt.step()
        topt.step()
    assert w.dtype == nb.float32 and opt.state[0]["row_var"].dtype == nb.float32
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=2e-5, atol=1e-6)


def test_adafactor_state_dict_round_trip_resumes_exactly():
    options = ADAFACTOR_CASES[1]
    whole = _train_adafactor(options, steps=6)[1]
    opt, _, _ = _train_adafactor(options, steps=3)
    saved = opt.state_dict()
    assert saved["param_groups"][0]["eps"] == (1e-20, 1e-3)
    w = nb.tensor(opt.params[0].numpy(), dtype=nb.float64, requires_grad=True)
    b = nb.tensor(opt.params[1].numpy(), dtype=nb.float64, requires_grad=True)
    resumed = optim.Adafactor([w, b], **options)
    resumed.load_state_dict(saved)
    x, y = nb.tensor(X, dtype=nb.float64), nb.tensor(Y, dtype=nb.float64)
    for _ in range(3):
        resumed.zero_grad()
        ((x @ w.T + b - y) ** 2).mean().backward()
        resumed.step()
    np.testing.assert_allclose(w.numpy(), whole, rtol=1e-12)
    saved["state"][0]["row_var"] = nb.zeros((3, 4), dtype=nb.float64)
    with pytest.raises(ValueError, match="row_var"):
        resumed.load_state_dict(saved)


@pytest.mark.parametrize(
    "options",
    [{"lr": -1.0}, {"beta2_decay": 0.5}, {"eps": (-1.0, 1e-3)}, {"eps": (None, -1)}, {"d": 0.5}],
)
def test_adafactor_bad_options_raise_value_error(options):
    with pytest.raises(ValueError):
        optim.Adafactor([nb.tensor([1.0], requires_grad=True)], **options)


# ---------------------------------------------------------------- swa_utils


def _model():
    return nb.nn.Sequential(
        nb.nn.Linear(3, 2, dtype=nb.float64), nb.nn.BatchNorm1d(2, dtype=nb.float64)
    )


def _set_weights(model, k):
    """Distinct weights per k (and a running mean), as if training moved them."""
    with nb.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(nb.tensor(np.full(p.shape, float(k * 10 + i)), dtype=p.dtype))
        model[1].running_mean.copy_(nb.tensor([k, -k], dtype=nb.float64))


def _weights(model):
    return [p.numpy().copy() for p in model.parameters()]


def test_averaged_model_swa_is_the_mean_of_the_models_seen():
    model = _model()
    swa = swa_utils.AveragedModel(model)
    seen = []
    for k in (1, 2, 6):
        _set_weights(model, k)
        swa.update_parameters(model)
        seen.append(_weights(model))
    for got, *each in zip(_weights(swa.module), *seen):
        np.testing.assert_allclose(got, np.mean(each, axis=0), rtol=1e-14)
    assert swa.n_averaged.item() == 3
    # buffers not averaged: copied from the model
    np.testing.assert_allclose(swa.module[1].running_mean.numpy(), [6, -6])
    assert swa.module[0].weight is not model[0].weight


@pytest.mark.parametrize("style", ["multi_avg_fn", "avg_fn"])
def test_averaged_model_ema_with_buffers(style):
    model = _model()
    decay = 0.75
    fn = (
        {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(decay)}
        if style == "multi_avg_fn"
        else {"avg_fn": swa_utils.get_ema_avg_fn(decay)}
    )
    ema = swa_utils.AveragedModel(model, use_buffers=True, **fn)
    want = None
    for k in (1, 3, 4):
        _set_weights(model, k)
        ema.update_parameters(model)
        now = np.array([k, -k], dtype=np.float64)
        want = now if want is None else decay * want + (1 - decay) * now
    np.testing.assert_allclose(ema.module[1].running_mean.numpy(), want, rtol=1e-14)
    w = [10.0, 30.0, 40.0]
    np.testing.assert_allclose(
        ema.module[0].weight.numpy(),
        (decay**2 * w[0] + decay * (1 - decay) * w[1] + (1 - decay) * w[2]),
    )


def test_averaged_model_runs_under_jit_and_refuses_averaging_there():
    model = _model().eval()
    swa = swa_utils.AveragedModel(model)
    swa.update_parameters(model)
    x = nb.tensor(RNG.standard_normal((4, 3)))
    np.testing.assert_allclose(nb.jit(lambda x: swa(x))(x).numpy(), swa(x).numpy(), rtol=1e-12)

    @nb.jit
    def average(x):
        swa.update_parameters(model)
        return x * 2

    with pytest.raises(nb.UnsupportedError, match="eager"):
        average(x)


def test_averaged_model_and_decay_refusals():
    with pytest.raises(ValueError, match="Only one"):
        swa_utils.AveragedModel(
            _model(),
            avg_fn=swa_utils.get_swa_avg_fn(),
            multi_avg_fn=swa_utils.get_swa_multi_avg_fn(),
        )
    for make in (swa_utils.get_ema_avg_fn, swa_utils.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match="decay"):
            make(1.5)


def test_averaged_model_matches_pytorch():
    torch = pytest.importorskip("torch")
    model = _model()
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)).double()
    swa = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    tswa = torch.optim.swa_utils.AveragedModel(
        tmodel, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)
    )
    for k in range(4):
        _set_weights(model, k)
        with torch.no_grad():
            for p, q in zip(tmodel.parameters(), model.parameters()):
                p.copy_(torch.tensor(q.numpy()))
        swa.update_parameters(model)
        tswa.update_parameters(tmodel)
    for p, q in zip(swa.parameters(), tswa.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-14)


def _swalr_lrs(strategy, anneal_epochs, steps, lrs=(1.0, 0.5), swa_lr=(0.1, 0.2)):
    a, b = nb.tensor([1.0], requires_grad=True), nb.tensor([2.0], requires_grad=True)
    opt = optim.SGD([{"params": [a], "lr": lrs[0]}, {"params": [b], "lr": lrs[1]}], lr=lrs[0])
    sched = swa_utils.SWALR(
        opt, swa_lr=list(swa_lr), anneal_epochs=anneal_epochs, anneal_strategy=strategy
    )
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out), opt, sched


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_anneals_each_group_to_its_swa_lr(strategy, anneal_epochs):
    got, opt, _ = _swalr_lrs(strategy, anneal_epochs, 7)
    f = (lambda t: (1 - math.cos(math.pi * t)) / 2) if strategy == "cos" else (lambda t: t)
    for step, row in enumerate(got):
        s = max(1, step) if anneal_epochs == 0 else step
        alpha = f(min(1, s / max(1, anneal_epochs)))
        want = [0.1 * alpha + 1.0 * (1 - alpha), 0.2 * alpha + 0.5 * (1 - alpha)]
        np.testing.assert_allclose(row, want, rtol=1e-12, err_msg=f"step {step}")
    assert [g["swa_lr"] for g in opt.param_groups] == [0.1, 0.2]


def test_swalr_state_round_trips_and_the_optimizer_keeps_swa_lr():
    _, opt, sched = _swalr_lrs("linear", 4, 2)
    saved, opt_saved = sched.state_dict(), opt.state_dict()
    assert "anneal_func" not in saved and saved["_step_count"] == 3
    assert opt_saved["param_groups"][1]["swa_lr"] == 0.2
    whole, _, _ = _swalr_lrs("linear", 4, 5)
    b, c = nb.tensor([1.0], requires_grad=True), nb.tensor([2.0], requires_grad=True)
    opt2 = optim.SGD([{"params": [b], "lr": 1.0}, {"params": [c], "lr": 0.5}], lr=1.0)
    sched2 = swa_utils.SWALR(opt2, swa_lr=0.7, anneal_strategy="cos")  # (then the states)
    opt2.load_state_dict(opt_saved)
    sched2.load_state_dict(saved)
    np.testing.assert_allclose(sched2.get_last_lr(), whole[2])  # load leaves the lr alone
    for _ in range(3):
        sched2.step()
    np.testing.assert_allclose(sched2.get_last_lr(), whole[5], rtol=1e-12)


def test_swalr_refusals():
    opt = optim.SGD([nb.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(opt, swa_lr=0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs"):
        swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr"):
        swa_utils.SWALR(opt, swa_lr=[0.1, 0.2])


@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swalr_matches_pytorch(strategy):
    torch = pytest.importorskip("torch")
    got, _, _ = _swalr_lrs(strategy, 3, 6)
    a, b = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([{"params": [a], "lr": 1.0}, {"params": [b], "lr": 0.5}], lr=1.0)
    sched = torch.optim.swa_utils.SWALR(
        opt, swa_lr=[0.1, 0.2], anneal_epochs=3, anneal_strategy=strategy
    )
    want = [sched.get_last_lr()]
    for _ in range(6):
        opt.step()
        sched.step()
        want.append(sched.get_last_lr())
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_update_bn_recomputes_the_statistics_as_a_cumulative_average():
    model = nb.nn.Sequential(
        nb.nn.Linear(3, 2, dtype=nb.float64), nb.nn.BatchNorm1d(2, momentum=0.3, dtype=nb.float64)
    )
    model.eval()
    data = RNG.standard_normal((12, 3))
    loader = nb.data.DataLoader(nb.data.TensorDataset(data, np.zeros(12)), batch_size=4)
    swa_utils.update_bn(loader, model)
    w, b = model[0].weight.numpy(), model[0].bias.numpy()
    h = (data @ w.T + b).reshape(3, 4, 2)
    np.testing.assert_allclose(
        model[1].running_mean.numpy(), h.mean(axis=1).mean(axis=0), rtol=1e-12
    )
    np.testing.assert_allclose(
        model[1].running_var.numpy(), h.var(axis=1, ddof=1).mean(axis=0), rtol=1e-12
    )
    assert model[1].momentum == 0.3 and not model.training
    assert model[1].num_batches_tracked.item() == 3
    swa_utils.update_bn([nb.tensor(data)], nb.nn.Linear(3, 2))  # no BatchNorm: nothing to do
