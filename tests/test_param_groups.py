"""Parameter groups (PyTorch's `[{"params": [...], "lr": ...}, ...]`): each group's
hyperparameters in eager and graph mode, add_param_group, state_dict round trips, and the
schedules per group; against numpy references of the updates and against PyTorch."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import optim

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((3, 4))
B0 = RNG.standard_normal(3)
X = RNG.standard_normal((5, 4))
Y = RNG.standard_normal((5, 3))


def _grads(w, b):
    """d/d(w, b) of mean((X w^T + b - Y)^2), in numpy."""
    r = 2 * (X @ w.T + b - Y) / Y.size
    return r.T @ X, r.sum(axis=0)


def _loss(w, b):
    d = nb.tensor(X) @ w.T + b - nb.tensor(Y)
    return nb.mean(d * d)


def _sgd_groups(w, b):
    # the weight: the defaults (momentum 0.9, weight decay); the bias: its own lr, no decay
    return optim.SGD(
        [{"params": [w]}, {"params": [b], "lr": 0.3, "weight_decay": 0.0}],
        lr=0.1,
        momentum=0.9,
        weight_decay=0.01,
    )


def _sgd_reference(steps):
    """SGD with momentum in numpy, each parameter with its group's lr and weight decay."""
    w, b = W0.copy(), B0.copy()
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    for _ in range(steps):
        gw, gb = _grads(w, b)
        gw = gw + 0.01 * w
        vw, vb = 0.9 * vw + gw, 0.9 * vb + gb
        w, b = w - 0.1 * vw, b - 0.3 * vb
    return w, b


def test_each_group_steps_with_its_own_hyperparameters():
    w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
    opt = _sgd_groups(w, b)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.3]
    assert opt.param_groups[1]["momentum"] == 0.9  # from the defaults
    for _ in range(4):
        opt.zero_grad()
        _loss(w, b).backward()
        opt.step()
    ew, eb = _sgd_reference(4)
    np.testing.assert_allclose(w.numpy(), ew, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.numpy(), eb, rtol=1e-12, atol=1e-12)
    assert opt.hyper is opt.param_groups[0]  # the first group again after step()


def test_graph_mode_steps_each_group_as_eager_mode_does():
    w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
    opt = _sgd_groups(w, b)

    @nb.jit
    def train(x, y):
        d = x @ w.T + b - y
        loss = nb.mean(d * d)
        opt.minimize(loss)
        return loss

    for _ in range(4):
        with nb.no_grad():
            train(nb.tensor(X), nb.tensor(Y))
    ew, eb = _sgd_reference(4)
    np.testing.assert_allclose(w.numpy(), ew, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.numpy(), eb, rtol=1e-12, atol=1e-12)


def test_a_schedule_sets_each_groups_lr_in_the_traced_update_ops_too():
    results = []
    for mode in ("eager", "graph"):
        w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
        opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.4}], lr=0.2)
        schedule = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        @nb.jit
        def train(x, y, w=w, b=b, opt=opt):
            d = x @ w.T + b - y
            loss = nb.mean(d * d)
            opt.minimize(loss)
            return loss

        for _ in range(5):
            if mode == "eager":
                opt.zero_grad()
                _loss(w, b).backward()
                opt.step()
            else:
                with nb.no_grad():
                    train(nb.tensor(X), nb.tensor(Y))
            schedule.step()
        assert schedule.get_last_lr() == [0.2 * 0.5**2, 0.4 * 0.5**2]
        results.append((w.numpy(), b.numpy()))
    w, b = W0.copy(), B0.copy()
    for step in range(5):  # numpy: plain SGD, each group's lr halved every 2 steps
        gw, gb = _grads(w, b)
        scale = 0.5 ** (step // 2)
        w, b = w - 0.2 * scale * gw, b - 0.4 * scale * gb
    for got in results:
        np.testing.assert_allclose(got[0], w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got[1], b, rtol=1e-12, atol=1e-12)


def test_add_param_group_and_bad_groups():
    w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
    opt = optim.Adam([w], lr=1e-2)
    opt.add_param_group({"params": b, "weight_decay": 0.5})  # one tensor is a group too
    assert opt.params == [w, b] and opt.param_groups[1]["lr"] == 1e-2
    assert opt.param_groups[1]["weight_decay"] == 0.5
    with pytest.raises(ValueError, match="more than one group"):
        opt.add_param_group({"params": [w]})
    with pytest.raises(ValueError, match="unknown hyperparameters"):
        opt.add_param_group({"params": [nb.tensor([1.0])], "momentum": 0.9})
    with pytest.raises(ValueError, match="lr must be >= 0"):
        optim.SGD([{"params": [nb.tensor([1.0])], "lr": -1.0}])
    with pytest.raises(TypeError, match="'params' entry"):
        opt.add_param_group({"lr": 0.1})


def test_state_dict_round_trips_groups_and_refuses_another_layout():
    w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
    opt = _sgd_groups(w, b)
    for _ in range(2):
        opt.zero_grad()
        _loss(w, b).backward()
        opt.step()
    saved = opt.state_dict()
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1]]
    assert [g["lr"] for g in saved["param_groups"]] == [0.1, 0.3]
    w2, b2 = nb.tensor(w.numpy(), requires_grad=True), nb.tensor(b.numpy(), requires_grad=True)
    fresh = optim.SGD([{"params": [w2]}, {"params": [b2]}], lr=1.0, momentum=0.9)
    fresh.load_state_dict(saved)
    assert [g["lr"] for g in fresh.param_groups] == [0.1, 0.3]
    assert fresh.param_groups[0]["weight_decay"] == 0.01
    for o, (ww, bb) in ((opt, (w, b)), (fresh, (w2, b2))):
        o.zero_grad()
        _loss(ww, bb).backward()
        o.step()
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    np.testing.assert_array_equal(b2.numpy(), b.numpy())
    one_group = optim.SGD([w2, b2], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="groups of"):
        one_group.load_state_dict(saved)


def test_reduce_on_plateau_lowers_each_group_to_its_own_floor():
    w, b = nb.tensor(W0), nb.tensor(B0)
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.02}], lr=0.1)
    plateau = optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, min_lr=[0, 0.015])
    for _ in range(3):
        plateau.step(1.0)
    assert plateau.get_last_lr() == [0.1 * 0.5**2, 0.015]


def test_groups_match_pytorch():
    torch = pytest.importorskip("torch")
    for name, options, group, rtol in (
        ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}, {"lr": 0.3}, 1e-10),
        ("Adam", {"lr": 0.01, "weight_decay": 0.1}, {"weight_decay": 0.0, "lr": 0.05}, 1e-10),
        ("NAdam", {"lr": 0.01}, {"lr": 0.03}, 1e-7),  # PyTorch's mu_product is float32
    ):
        w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
        tw, tb = (torch.tensor(a, requires_grad=True) for a in (W0, B0))
        ours = getattr(optim, name)([{"params": [w]}, {"params": [b], **group}], **options)
        theirs = getattr(torch.optim, name)(
            [{"params": [tw]}, {"params": [tb], **group}], **options
        )
        ours_schedule = optim.lr_scheduler.CosineAnnealingLR(ours, T_max=6, eta_min=1e-3)
        their_schedule = torch.optim.lr_scheduler.CosineAnnealingLR(theirs, T_max=6, eta_min=1e-3)
        for _ in range(6):
            ours.zero_grad()
            _loss(w, b).backward()
            ours.step()
            ours_schedule.step()
            theirs.zero_grad()
            d = torch.tensor(X) @ tw.T + tb - torch.tensor(Y)
            (d * d).mean().backward()
            theirs.step()
            their_schedule.step()
            np.testing.assert_allclose(
                ours_schedule.get_last_lr(), their_schedule.get_last_lr(), rtol=1e-12
            )
        np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=rtol, atol=1e-12)
        np.testing.assert_allclose(b.numpy(), tb.detach().numpy(), rtol=rtol, atol=1e-12)


def test_writing_a_groups_lr_reaches_the_traced_update_ops():
    # PyTorch's idiom `for g in opt.param_groups: g["lr"] = ...` in graph mode
    w, b = nb.tensor(W0, requires_grad=True), nb.tensor(B0, requires_grad=True)
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.4}], lr=0.2)

    @nb.jit
    def train(x, y):
        d = x @ w.T + b - y
        loss = nb.mean(d * d)
        opt.minimize(loss)
        return loss

    ew, eb = W0.copy(), B0.copy()
    for step in range(3):
        if step == 1:
            opt.param_groups[1]["lr"] = 0.0  # the bias stops; the weight goes on
        with nb.no_grad():
            train(nb.tensor(X), nb.tensor(Y))
        gw, gb = _grads(ew, eb)
        ew, eb = ew - 0.2 * gw, eb - (0.4 if step == 0 else 0.0) * gb
    np.testing.assert_allclose(w.numpy(), ew, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.numpy(), eb, rtol=1e-12, atol=1e-12)


def test_a_write_needing_a_state_the_program_lacks_is_refused():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        b = nb.static.create_parameter("b", [2])
        opt = nb.optim.SGD(lr=0.1)
        opt.minimize(nb.sum(b * b))
    with pytest.raises(nb.UnsupportedError, match="momentum_buffer"):
        opt.param_groups[0]["momentum"] = 0.9  # (the program has no velocity: it would ignore it)
    assert opt.param_groups[0]["momentum"] == 0.0  # nothing written
    opt.param_groups[0]["lr"] = 0.2  # a write the program follows
    rms = nb.optim.RMSprop([nb.tensor([1.0], requires_grad=True)], lr=0.1)
    rms.param_groups[0]["centered"] = True  # eager mode makes the state when it needs it


def test_pytorchs_pair_hyperparameters_read_and_write_as_pairs():
    w, v = (nb.tensor([x], dtype=nb.float64, requires_grad=True) for x in (1.0, 2.0))
    opt = nb.optim.Adam([{"params": [w], "betas": (0.5, 0.9)}, {"params": [v]}], lr=0.1)
    first, second = opt.param_groups
    assert first["betas"] == (0.5, 0.9) and first["beta1"] == 0.5 and "betas" in first
    assert second["betas"] == (0.9, 0.999)
    second["betas"] = (0.8, 0.95)  # what a momentum-cycling schedule writes
    assert (second["beta1"], second["beta2"]) == (0.8, 0.95)
    rprop = nb.optim.Rprop([{"params": [w], "etas": (0.4, 1.3), "step_sizes": (1e-5, 10)}])
    assert rprop.param_groups[0]["etas"] == (0.4, 1.3)
    assert rprop.param_groups[0]["step_sizes"] == (1e-5, 10.0)
    assert "betas" not in nb.optim.SGD([w], lr=0.1).param_groups[0]
