"""SGD: the update op against its numpy reference, and eager step() == graph minimize()."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt
from nbflow.core import REGISTRY

SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    {"lr": 0.1, "momentum": 0.5, "dampening": 0.3},
]


@pytest.mark.parametrize("hyper", SETTINGS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sgd_update_matches_reference(hyper, dtype):
    rng = np.random.default_rng(0)
    p, g, v = (rng.standard_normal((3, 4)).astype(dtype) for _ in range(3))
    expected = REGISTRY["sgd_update_"].ref(p, g, v, **hyper)
    tp, tv = nb.tensor(p), nb.tensor(v)
    out = nb.sgd_update_(tp, nb.tensor(g), tv, **hyper)
    assert out[0] is tp and out[1] is tv and tp.version == 1  # written in place
    nt.assert_close(tp, expected[0].astype(dtype))
    if hyper.get("momentum"):
        nt.assert_close(tv, expected[1].astype(dtype))


@pytest.mark.parametrize("hyper", SETTINGS)
@pytest.mark.parametrize("case", ["large", "transposed_grad", "grad_is_param_transposed"])
def test_sgd_update_in_place_layouts(hyper, case):
    # the in-place kernels: a size past the vector loop's remainder, a strided gradient (a
    # transposed weight gradient) and a gradient reading the parameter's memory transposed
    rng = np.random.default_rng(2)
    p, v = (rng.standard_normal((37, 37)).astype(np.float32) for _ in range(2))
    g = {
        "large": rng.standard_normal((37, 37)).astype(np.float32),
        "transposed_grad": rng.standard_normal((37, 37)).astype(np.float32).T,
        "grad_is_param_transposed": p.T,
    }[case]
    expected = REGISTRY["sgd_update_"].ref(p.copy(), g.copy(), v.copy(), **hyper)
    tp, tv = nb.tensor(p), nb.tensor(v)
    tg = {"large": nb.tensor(g), "transposed_grad": nb.tensor(g.T).T}.get(case, tp.T)
    assert case != "transposed_grad" or not tg.numpy().flags.c_contiguous
    nb.sgd_update_(tp, tg, tv, **hyper)
    nt.assert_close(tp, expected[0], rtol=1e-6, atol=1e-6)
    if hyper.get("momentum"):
        nt.assert_close(tv, expected[1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_sgd_matmul_update_matches_reference(dtype, weight_decay):
    # the SGD step graph mode folds into a weight gradient's product: p -= lr (a @ b + wd p)
    rng = np.random.default_rng(3)
    p = rng.standard_normal((5, 3)).astype(dtype)
    a = np.asfortranarray(rng.standard_normal((5, 4)).astype(dtype))  # a transposed operand
    b = rng.standard_normal((4, 3)).astype(dtype)
    expected = p - 0.1 * (a.astype(np.float64) @ b + weight_decay * p.astype(np.float64))
    tp = nb.tensor(p)
    out = nb.sgd_matmul_update_(tp, nb.tensor(a), nb.tensor(b), lr=0.1, weight_decay=weight_decay)
    assert out is tp and tp.version == 1
    nt.assert_close(tp, expected.astype(dtype), atol=1e-2 if dtype == "float16" else 1e-6)
    with pytest.raises(nb.errors.UnsupportedError, match="momentum"):
        nb.sgd_matmul_update_(tp, nb.tensor(a), nb.tensor(b), lr=0.1, momentum=0.9)
    assert tp.version == 1  # refused before anything was written


def test_sgd_dampening_starts_the_buffer_at_the_gradient_as_pytorch():
    # PyTorch: buf = d on the first step, then buf = m buf + (1 - dampening) d; d = g + wd w
    rng = np.random.default_rng(4)
    w0, m, damp, wd, lr = rng.standard_normal(5), 0.9, 0.4, 0.1, 0.05
    w = nb.tensor(w0, requires_grad=True)
    opt = nb.optim.SGD([w], lr=lr, momentum=m, dampening=damp, weight_decay=wd)
    want, buf = w0.copy(), None
    for _ in range(5):
        opt.zero_grad()
        nb.sum(w * w * w).backward()
        opt.step()
        d = 3 * want**2 + wd * want
        buf = d if buf is None else m * buf + (1 - damp) * d
        want = want - lr * buf
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-10)
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        v = nb.static.create_parameter("v", [3])
        loss = nb.sum(v * v)
        ops = len(main.global_block().ops)
        with pytest.raises(nb.UnsupportedError, match="dampening"):  # (it cannot tell)
            nb.optim.SGD(lr=0.1, momentum=0.9, dampening=0.5).minimize(loss)
        assert len(main.global_block().ops) == ops  # refused before anything was appended


@pytest.mark.parametrize("hyper", [h for h in SETTINGS if not h.get("dampening")])
def test_eager_step_equals_graph_minimize(hyper):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    w0 = (0.1 * rng.standard_normal((4, 2))).astype(np.float32)

    w = nb.tensor(w0, requires_grad=True)
    opt = nb.optim.SGD([w], **hyper)
    eager = []
    for _ in range(4):
        loss = nb.cross_entropy(nb.tensor(x) @ w, nb.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        eager.append(loss.item())

    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        xv = nb.static.data("x", [-1, 4])
        yv = nb.static.data("y", [-1], "int64")
        wv = nb.static.create_parameter("w", [4, 2])
        lv = nb.cross_entropy(xv @ wv, yv)
        nb.optim.SGD(**hyper).minimize(lv)
    assert "%w!: f32[4,2]" in str(main)  # the update is an in-place op in the IR
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["w"] = nb.tensor(w0)
    graph = [float(exe.run(main, {"x": x, "y": y}, [lv, "w"], scope)[0]) for _ in range(4)]
    np.testing.assert_allclose(graph, eager, rtol=1e-5)
    nt.assert_close(scope["w"], w.numpy())


def test_bad_hyperparameters():
    with pytest.raises(ValueError):
        nb.optim.SGD([], lr=-1)
    with pytest.raises(ValueError):
        nb.optim.SGD([], lr=0.1, nesterov=True)
    with pytest.raises(nb.ShapeError):
        nb.sgd_update_(nb.zeros(3), nb.zeros(2), nb.zeros(3), lr=0.1)


# ---------------------------------------------------------------- Adam, AdamW, RMSProp


def _adam_numpy(w, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                amsgrad=False, maximize=False, decoupled=False):  # fmt: skip
    """Textbook Adam / AdamW (Kingma & Ba; Loshchilov & Hutter), as PyTorch writes it."""
    b1, b2 = betas
    m, v, vmax = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    out = []
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if decoupled:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        m_hat = m / (1 - b1**t)
        v_hat = (vmax if amsgrad else v) / (1 - b2**t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(w)
    return out


def _rmsprop_numpy(w, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                   centered=False, maximize=False):  # fmt: skip
    sq, ga, buf = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    out = []
    for g in grads:
        g = (-g if maximize else g) + weight_decay * w
        sq = alpha * sq + (1 - alpha) * g**2
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(sq - ga**2) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            w = w - lr * buf
        else:
            w = w - lr * g / avg
        out.append(w)
    return out


def _adagrad_numpy(w, grads, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                   initial_accumulator_value=0.0, eps=1e-10, maximize=False):  # fmt: skip
    # PyTorch's documented algorithm, with its state_sum starting at the initial value
    state = np.full_like(w, initial_accumulator_value)
    out = []
    for t, g in enumerate(grads, 1):
        g = (-g if maximize else g) + weight_decay * w
        clr = lr / (1 + (t - 1) * lr_decay)
        state = state + g * g
        w = w - clr * g / (np.sqrt(state) + eps)
        out.append(w)
    return out


OPTIMIZERS = [
    ("Adam", {}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True}),
    ("RMSProp", {}),
    ("RMSProp", {"lr": 0.01, "alpha": 0.9, "weight_decay": 0.1, "momentum": 0.9}),
    ("RMSProp", {"lr": 0.01, "centered": True, "maximize": True}),
    ("RMSProp", {"lr": 0.01, "centered": True, "momentum": 0.5, "eps": 1e-3}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-3}),
]


def _textbook(name, w0, grads, hyper):
    if name == "RMSProp":
        return _rmsprop_numpy(w0, grads, **hyper)
    if name == "Adagrad":
        return _adagrad_numpy(w0, grads, **hyper)
    hyper = dict(hyper)
    if name == "AdamW":
        hyper.setdefault("weight_decay", 1e-2)
        hyper["decoupled"] = True
    return _adam_numpy(w0, grads, **hyper)


@pytest.mark.parametrize("name, hyper", OPTIMIZERS)
def test_updates_match_textbook_formulas(name, hyper):
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((3, 5))
    grads = [rng.standard_normal((3, 5)) for _ in range(6)]
    expected = _textbook(name, w0, grads, hyper)
    w = nb.tensor(w0, requires_grad=True)  # float64: the kernels match to rounding
    opt = getattr(nb.optim, name)([w], **hyper)
    for g, e in zip(grads, expected):
        w.grad = nb.tensor(g)
        opt.step()
        np.testing.assert_allclose(w.numpy(), e, rtol=1e-12, atol=1e-12)
    if name != "RMSProp":
        assert opt.state[0]["step"].item() == len(grads)  # the op counted the steps


def test_optimizer_defaults_are_pytorchs():
    adam = nb.optim.Adam([])
    assert (adam.lr, adam.betas, adam.hyper["eps"], adam.hyper["weight_decay"]) == (
        1e-3,
        (0.9, 0.999),
        1e-8,
        0.0,
    )
    assert nb.optim.AdamW([]).hyper["weight_decay"] == 1e-2
    assert nb.optim.AdamW([]).hyper["decoupled_weight_decay"]
    rms = nb.optim.RMSprop([])
    assert (rms.lr, rms.hyper["alpha"], rms.hyper["eps"], rms.hyper["momentum"]) == (
        1e-2,
        0.99,
        1e-8,
        0.0,
    )
    with pytest.raises(ValueError):
        nb.optim.Adam([], betas=(1.0, 0.9))
    with pytest.raises(ValueError):
        nb.optim.RMSProp([], alpha=-1)


@pytest.mark.parametrize(
    "name, hyper",
    [
        ("Adam", {}),
        ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
        ("RMSProp", {}),
        ("RMSProp", {"centered": True, "momentum": 0.5}),
        ("Adagrad", {"weight_decay": 0.1}),
    ],
)
def test_in_place_kernels_past_their_vector_loop(name, hyper):
    # 37x37 elements: the vectorised loop and its remainder (the small tests above may run
    # only the remainder), with the gradient tensor kept unchanged
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((37, 37))
    grads = [rng.standard_normal((37, 37)) for _ in range(3)]
    expected = _textbook(name, w0, grads, {"lr": 0.05, **hyper})
    w = nb.tensor(w0, requires_grad=True)
    opt = getattr(nb.optim, name)([w], lr=0.05, **hyper)
    for g, e in zip(grads, expected):
        w.grad = nb.tensor(g)
        opt.step()
        np.testing.assert_allclose(w.numpy(), e, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(w.grad.numpy(), g)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_float16_and_float32_parameters_and_unused_states_unchanged(dtype):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal(7).astype(dtype)
    g = rng.standard_normal(7).astype(dtype)
    for opt_cls in (nb.optim.Adam, nb.optim.RMSProp, nb.optim.Adagrad, nb.optim.SGD):
        w = nb.tensor(w0, requires_grad=True)
        w.grad = nb.tensor(g)
        opt_cls([w], lr=0.01).step()
        # the gradient, a stand-in for unused states, keeps its values (also via float16)
        np.testing.assert_array_equal(w.grad.numpy(), g)
        assert w.dtype == dtype and np.all(np.isfinite(w.numpy()))
        expected = {
            nb.optim.Adam: _adam_numpy,
            nb.optim.RMSProp: _rmsprop_numpy,
            nb.optim.Adagrad: _adagrad_numpy,
            nb.optim.SGD: lambda w, gs, lr: [w - lr * gs[0]],
        }[opt_cls](w0.astype(np.float64), [g.astype(np.float64)], lr=0.01)[-1]
        tol = 1e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(w.numpy(), expected, rtol=tol, atol=tol)


def _graph_training(opt_factory, x, y, w0, steps, max_grad_norm=None, lrs=None):
    main, startup = nb.Program(), nb.Program()
    opt = opt_factory(None)
    with nb.program_guard(main, startup):
        xv = nb.static.data("x", [-1, 4])
        yv = nb.static.data("y", [-1], "int64")
        wv = nb.static.create_parameter("w", [4, 2])
        lv = nb.cross_entropy(xv @ wv, yv)
        opt.minimize(lv, max_grad_norm=max_grad_norm)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["w"] = nb.tensor(w0)
    losses = []
    for i in range(steps):
        if lrs is not None:
            opt.lr = lrs[i]
        losses.append(float(exe.run(main, {"x": x, "y": y}, [lv, "w"], scope)[0]))
    return losses, scope, main


def _eager_training(opt_factory, x, y, w0, steps, max_grad_norm=None, lrs=None):
    w = nb.tensor(w0, requires_grad=True)
    opt = opt_factory([w])
    losses = []
    for i in range(steps):
        if lrs is not None:
            opt.lr = lrs[i]
        loss = nb.cross_entropy(nb.tensor(x) @ w, nb.tensor(y))
        opt.zero_grad()
        loss.backward()
        if max_grad_norm is not None:
            nb.optim.clip_grad_norm_([w], max_grad_norm)
        opt.step()
        losses.append(loss.item())
    return losses, w, opt


def _problem(seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    w0 = (0.1 * rng.standard_normal((4, 2))).astype(np.float32)
    return x, y, w0


@pytest.mark.parametrize("name, hyper", OPTIMIZERS)
def test_eager_step_equals_graph_minimize_for_each_optimizer(name, hyper):
    x, y, w0 = _problem()
    factory = lambda params: getattr(nb.optim, name)(params, **hyper)
    eager, w, _ = _eager_training(factory, x, y, w0, 5)
    graph, scope, main = _graph_training(factory, x, y, w0, 5)
    np.testing.assert_allclose(graph, eager, rtol=1e-5)
    nt.assert_close(scope["w"], w.numpy(), rtol=1e-5, atol=1e-6)
    assert "%w!: f32[4,2]" in str(main)  # one in-place update op
    if name != "RMSProp":
        assert scope["w@STEP"].item() == 5  # a persistable counter, right across runs


def test_graph_step_counter_survives_a_checkpoint(tmp_path):
    x, y, w0 = _problem()
    factory = lambda params: nb.optim.Adam(params, lr=0.05)
    _, scope, main = _graph_training(factory, x, y, w0, 3)
    nb.save_state(dict(scope), tmp_path / "ckpt")
    exe, restored = nb.Executor(), nb.Scope()
    restored.update(nb.load_state(tmp_path / "ckpt"))
    assert restored["w@STEP"].item() == 3
    for _ in range(2):
        exe.run(main, {"x": x, "y": y}, ["w"], scope)
        exe.run(main, {"x": x, "y": y}, ["w"], restored)
    nt.assert_close(restored["w"], scope["w"].numpy())
    assert restored["w@STEP"].item() == 5


def test_clip_grad_norm_matches_numpy():
    rng = np.random.default_rng(4)
    gs = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    ps = [nb.tensor(np.zeros_like(g), requires_grad=True) for g in gs]
    for p, g in zip(ps, gs):
        p.grad = nb.tensor(g)
    total = np.sqrt(sum((g**2).sum() for g in gs))
    norm = nb.optim.clip_grad_norm_(ps, max_norm=1.0)
    np.testing.assert_allclose(norm.item(), total, rtol=1e-12)
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), g * (1.0 / (total + 1e-6)), rtol=1e-12)
    # below the threshold nothing changes; inf and p norms
    for p, g in zip(ps, gs):
        p.grad = nb.tensor(g)
    norm = nb.optim.clip_grad_norm_(ps, max_norm=100.0, norm_type="inf")
    np.testing.assert_allclose(norm.item(), max(np.abs(g).max() for g in gs))
    np.testing.assert_array_equal(ps[0].grad.numpy(), gs[0])
    norm = nb.optim.clip_grad_norm_(ps, max_norm=100.0, norm_type=3)
    expected = sum((np.abs(g) ** 3).sum() for g in gs) ** (1 / 3)
    np.testing.assert_allclose(norm.item(), expected, rtol=1e-12)
    assert nb.optim.clip_grad_norm_([nb.zeros(2).requires_grad_()], 1.0).item() == 0.0


def test_graph_gradient_clipping_equals_eager():
    x, y, w0 = _problem()
    factory = lambda params: nb.optim.SGD(params, lr=0.5, momentum=0.9)
    eager, w, _ = _eager_training(factory, x, y, w0, 4, max_grad_norm=0.05)
    graph, scope, _ = _graph_training(factory, x, y, w0, 4, max_grad_norm=0.05)
    np.testing.assert_allclose(graph, eager, rtol=1e-5)
    nt.assert_close(scope["w"], w.numpy(), rtol=1e-5, atol=1e-6)
    unclipped, _, _ = _eager_training(factory, x, y, w0, 4)
    assert unclipped[-1] != pytest.approx(eager[-1])  # the clipping did something


def test_step_lr_and_cosine_sequences():
    opt = nb.optim.SGD([], lr=0.1)
    sched = nb.optim.StepLR(opt, step_size=3, gamma=0.5)
    lrs = []
    for _ in range(8):
        lrs.append(opt.lr)
        sched.step()
    np.testing.assert_allclose(lrs, [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])
    assert sched.get_last_lr() == [opt.lr] and opt.param_groups[0]["lr"] == opt.lr

    opt = nb.optim.Adam([], lr=1.0)
    sched = nb.optim.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
    lrs = []
    for _ in range(9):
        lrs.append(opt.lr)
        sched.step()
    expected = [0.1 + 0.9 * (1 + np.cos(np.pi * e / 4)) / 2 for e in range(9)]
    np.testing.assert_allclose(lrs, expected, atol=1e-15)
    np.testing.assert_allclose(lrs[:5], [1.0, 0.86819805, 0.55, 0.23180195, 0.1], rtol=1e-7)
    # resuming from a state dict continues the sequence
    again = nb.optim.CosineAnnealingLR(nb.optim.Adam([], lr=1.0), T_max=4, eta_min=0.1)
    again.load_state_dict(sched.state_dict())
    assert again.optimizer.lr == opt.lr


def test_scheduler_changes_the_next_step_in_both_modes():
    x, y, w0 = _problem()
    lrs = [0.5, 0.5, 0.05, 0.05, 0.005]
    factory = lambda params: nb.optim.Adam(params, lr=0.5)
    eager, w, _ = _eager_training(factory, x, y, w0, 5, lrs=lrs)
    graph, scope, main = _graph_training(factory, x, y, w0, 5, lrs=lrs)
    np.testing.assert_allclose(graph, eager, rtol=1e-5)
    nt.assert_close(scope["w"], w.numpy(), rtol=1e-5, atol=1e-6)
    assert "lr=0.005" in str(main)  # the update ops carry the current lr
    constant, _, _ = _eager_training(factory, x, y, w0, 5)
    assert constant[-1] != pytest.approx(eager[-1])


def test_zero_grad():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    opt = nb.optim.Adam([w])
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None
    opt.step()  # no gradient: nothing changes, no state is made
    assert opt.state == {} and w.numpy().tolist() == [1.0, 2.0]


def test_optimizer_state_dict_round_trip_resumes_identically():
    x, y, w0 = _problem()
    factory = lambda params: nb.optim.Adam(params, lr=0.05, amsgrad=True)
    _, w, opt = _eager_training(factory, x, y, w0, 3)
    state = opt.state_dict()
    w2 = nb.tensor(w.numpy(), requires_grad=True)
    opt2 = nb.optim.Adam([w2], lr=0.9)
    opt2.load_state_dict(state)
    assert opt2.lr == 0.05 and opt2.state[0]["step"].item() == 3
    for p, o in ((w, opt), (w2, opt2)):
        for _ in range(3):
            loss = nb.cross_entropy(nb.tensor(x) @ p, nb.tensor(y))
            o.zero_grad()
            loss.backward()
            o.step()
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    with pytest.raises(ValueError):
        nb.optim.RMSProp([w2]).load_state_dict(state)  # another optimizer's state
    with pytest.raises(ValueError):
        nb.optim.Adam([w2, nb.zeros(2)]).load_state_dict(state)  # another parameter count
    bad = {**state, "state": {0: {**state["state"][0], "exp_avg": nb.zeros(3)}}}
    with pytest.raises(ValueError):
        nb.optim.Adam([w2]).load_state_dict(bad)  # a state of the wrong shape


def test_update_ops_check_shapes():
    z = nb.zeros(3)
    step = nb.tensor(np.array(0, np.int64))
    with pytest.raises(nb.ShapeError):
        nb.adam_update_(z, nb.zeros(2), z, z, z, step, lr=0.1)
    with pytest.raises(nb.ShapeError):
        nb.adam_update_(z, z, nb.zeros(3), nb.zeros(3), nb.zeros(3), nb.zeros(()), lr=0.1)
    with pytest.raises(nb.ShapeError):
        nb.rmsprop_update_(z, z, nb.zeros(4), z, z, lr=0.1)


def test_sgd_maximize_ascends_as_pytorch_in_both_modes():
    # PyTorch: d = -g + wd w (maximize), buf = m buf + d, d = g' + m buf (nesterov)
    rng = np.random.default_rng(5)
    w0, m, wd, lr = rng.standard_normal(4), 0.9, 0.1, 0.05
    hyper = {"lr": lr, "momentum": m, "weight_decay": wd, "nesterov": True, "maximize": True}
    w = nb.tensor(w0, requires_grad=True)
    opt = nb.optim.SGD([w], **hyper)
    want, buf = w0.copy(), None
    for _ in range(4):
        opt.zero_grad()
        nb.sum(nb.sin(w)).backward()
        opt.step()
        d = -np.cos(want) + wd * want
        buf = d if buf is None else m * buf + d
        want = want - lr * (d + m * buf)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-10)

    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        v = nb.static.create_parameter("v", [4], "float64")
        graph_opt = nb.optim.SGD(**hyper)
        graph_opt.minimize(nb.sum(nb.sin(v)))
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["v"] = nb.tensor(w0)
    for _ in range(4):
        exe.run(main, scope=scope)
    nt.assert_close(scope["v"], want, rtol=1e-10)
    with pytest.raises(nb.UnsupportedError, match="maximize"):
        graph_opt.param_groups[0]["maximize"] = False  # the program negates the gradient
    graph_opt.param_groups[0]["maximize"] = True  # (the same value: nothing to follow)


def test_an_sgd_state_saved_before_maximize_loads():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    opt = nb.optim.SGD([w], lr=0.1, momentum=0.9)
    saved = opt.state_dict()
    del saved["param_groups"][0]["maximize"]
    fresh = nb.optim.SGD([w], lr=0.5)
    fresh.load_state_dict(saved)
    assert fresh.param_groups[0]["lr"] == 0.1 and fresh.param_groups[0]["maximize"] is False
