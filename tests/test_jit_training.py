"""PyTorch's training step, unchanged, under @nb.jit (issue 38, 1): zero_grad(); loss =
...; loss.backward(); step() traces into one Program whose runs give the eager step's losses,
gradients and parameters; idioms that cannot trace raise nbflow's errors saying what to write."""

import numpy as np
import pytest
import test_optim_more as _more

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn

STEPS = 4


def _data(shape, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = nb.tensor(rng.standard_normal(shape).astype(np.float32))
    return x, nb.tensor(rng.integers(0, classes, shape[0]).astype(np.int64))


def _mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def _cnn():
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 3),
    )


class _LSTMHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.out(h[:, -1])


class _EncoderHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return self.out(self.layer(x).mean(1))


MODELS = {
    "mlp": (_mlp, (8, 6)),
    "cnn": (_cnn, (8, 1, 8, 8)),
    "lstm": (_LSTMHead, (4, 5, 6)),
    "transformer": (_EncoderHead, (4, 5, 8)),
}
OPTIMIZERS = {
    "sgd": lambda ps: nb.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adam": lambda ps: nb.optim.Adam(ps, lr=0.01),
    "nadam": lambda ps: nb.optim.NAdam(ps, lr=0.01),  # a composed update
}


def _step(model, opt, x, y, set_to_none=True):
    opt.zero_grad(set_to_none=set_to_none)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _pair(make, optimizer):
    models = []
    for _ in range(2):
        nb.manual_seed(0)
        model = make()
        models.append((model, OPTIMIZERS[optimizer](model.parameters())))
    return models


def _assert_same(eager, jitted):
    for (name, p), q in zip(eager.named_parameters(), jitted.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(
            q.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name
        )


@pytest.mark.parametrize(
    "model,optimizer",
    [("mlp", "sgd"), ("mlp", "adam"), ("mlp", "nadam"), ("cnn", "adam"), ("lstm", "adam")]
    + [("transformer", "adam")],
)
def test_the_jitted_step_gives_the_eager_steps_losses_and_parameters(model, optimizer):
    make, shape = MODELS[model]
    x, y = _data(shape)
    (eager, eager_opt), (traced, traced_opt) = _pair(make, optimizer)
    step = nb.jit(lambda x, y: _step(traced, traced_opt, x, y))
    for _ in range(STEPS):
        want = _step(eager, eager_opt, x, y).item()
        assert step(x, y).item() == pytest.approx(want, rel=1e-4, abs=1e-5)
    _assert_same(eager, traced)
    assert len(step.cache) == 1  # one trace serves every step


def test_zero_grad_set_to_none_false_traces_too():
    x, y = _data((8, 6))
    (eager, eager_opt), (traced, traced_opt) = _pair(_mlp, "sgd")
    step = nb.jit(lambda x, y: _step(traced, traced_opt, x, y, set_to_none=False))
    for _ in range(STEPS):
        want = _step(eager, eager_opt, x, y, set_to_none=False).item()
        assert step(x, y).item() == pytest.approx(want, rel=1e-4)
    _assert_same(eager, traced)


def test_gradients_accumulate_over_jitted_calls_as_in_eager_mode():
    x, y = _data((8, 6))
    (eager, eager_opt), (traced, traced_opt) = _pair(_mlp, "adam")

    def forward_backward(model, x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # onto whatever .grad holds: accumulation
        return loss

    accumulate = nb.jit(lambda x, y: forward_backward(traced, x, y))
    for _ in range(2):
        for k in range(3):  # three micro-batches, then one step
            part = slice(k * 2, k * 2 + 4)
            forward_backward(eager, x[part], y[part])
            accumulate(x[part], y[part])
        eager_opt.step()
        traced_opt.step()
        _assert_same(eager, traced)
        eager_opt.zero_grad()
        traced_opt.zero_grad()
    assert len(accumulate.cache) == 2  # .grad None (first micro-batch) or not: two traces


def test_a_scheduler_stepped_outside_and_clipping_inside_follow_eager_mode():
    x, y = _data((8, 6))
    (eager, eager_opt), (traced, traced_opt) = _pair(_mlp, "sgd")
    schedules = [nb.optim.lr_scheduler.StepLR(o, 1, gamma=0.5) for o in (eager_opt, traced_opt)]

    def clipped(model, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        return loss

    step = nb.jit(lambda x, y: clipped(traced, traced_opt, x, y))
    for _ in range(STEPS):
        want = clipped(eager, eager_opt, x, y).item()
        assert step(x, y).item() == pytest.approx(want, rel=1e-4)
        for schedule in schedules:
            schedule.step()
    _assert_same(eager, traced)


def _traced_error(fn, *args):
    with pytest.raises(nb.NbflowError) as info:
        nb.jit(fn)(*args)
    return info


@pytest.mark.parametrize(
    "read,name",
    [
        (lambda v: v.sum().item(), "item()"),
        (lambda v: v.tolist(), "tolist()"),
        (lambda v: float(v.sum()), "float()"),
        (lambda v: int(v.sum()), "int()"),
        (lambda v: v.numpy(), "numpy()"),
        (lambda v: complex(v.sum()), "complex()"),
    ],
)
def test_reading_a_traced_value_says_where_and_what_to_write(read, name):
    info = _traced_error(read, nb.ones(3))
    assert isinstance(info.value, nb.TracedValueError)
    message = str(info.value)
    assert name in message and "test_jit_training.py" in message and "return it" in message


def test_backward_of_a_non_scalar_needs_a_gradient():
    w = nb.ones(3, requires_grad=True)
    info = _traced_error(lambda x: (x * w).backward(), nb.ones(3))
    assert isinstance(info.value, nb.GradientError) and "gradient=" in str(info.value)
    assert "test_jit_training.py" in str(info.value)  # the user's line

    @nb.jit
    def seeded(x):
        (x * w).backward(gradient=nb.tensor([1.0, 2.0, 3.0]))

    w.grad = None
    seeded(nb.ones(3))
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0, 3.0])


def test_static_var_backward_and_grad_point_to_append_backward():
    with nb.program_guard(nb.Program()):
        x = nb.static.data("x", [3])
        w = nb.static.create_parameter("w", [3])
        loss = nb.sum(x * w)
        with pytest.raises(nb.ProgramError, match="append_backward.*test_jit_training.py"):
            loss.backward()
        with pytest.raises(nb.NbflowError, match="append_backward"):
            nb.grad(loss, [w])
        with pytest.raises(nb.TracedValueError, match="no attribute 'grad_fn_of'") as info:
            loss.grad_fn_of  # noqa: B018
        assert isinstance(info.value, AttributeError)
        assert not hasattr(loss, "register_something")


def test_nb_compile_and_parameter_groups_take_the_same_path():
    x, y = _data((8, 6))
    models = []
    for _ in range(2):
        nb.manual_seed(0)
        model = _mlp()
        groups = [
            {"params": model[0].parameters(), "lr": 0.05},
            {"params": model[2].parameters(), "momentum": 0.5},
        ]
        models.append((model, nb.optim.SGD(groups, lr=0.1)))
    (eager, eager_opt), (traced, traced_opt) = models
    step = nb.compile(lambda x, y: _step(traced, traced_opt, x, y))
    for _ in range(STEPS):
        want = _step(eager, eager_opt, x, y).item()
        assert step(x, y).item() == pytest.approx(want, rel=1e-4)
    _assert_same(eager, traced)


def test_backward_inputs_fills_only_those_grads():
    w, b = nb.ones(3, requires_grad=True), nb.ones(3, requires_grad=True)

    @nb.jit
    def partial(x):
        ((x * w + b) ** 2).sum().backward(inputs=[w])

    partial(nb.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 12.0, 24.0])
    assert b.grad is None


# every optimizer minimize() serves, through step() under @jit, to float64 exactness
EVERY_OPTIMIZER = [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("AdamW", {"lr": 0.05}),
    ("Adagrad", {"lr": 0.05}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    *[(name, options) for name, options in _more.GRAPH_CASES],
]


@pytest.mark.parametrize("name,options", EVERY_OPTIMIZER)
def test_every_optimizer_steps_under_jit_as_in_eager_mode(name, options):
    _, want_w, want_b = _more._train_nbflow(name, options)
    w = nb.tensor(_more.W0, dtype=nb.float64, requires_grad=True)
    b = nb.tensor(_more.B0, dtype=nb.float64, requires_grad=True)
    opt = getattr(nb.optim, name)([w, b], **options)
    x, y = nb.tensor(_more.X, dtype=nb.float64), nb.tensor(_more.Y, dtype=nb.float64)

    @nb.jit
    def step(x, y):
        opt.zero_grad()
        ((x @ w.T + b - y) ** 2).mean().backward()
        opt.step()

    for _ in range(_more.STEPS):
        step(x, y)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.numpy(), want_b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "nadam"])
def test_grad_scaler_steps_trace_and_skip_as_eagerly(optimizer):
    # the third batch has an inf input: its gradients are not finite, the step is skipped
    # (parameters and optimizer states kept) and the scale backs off; growth_interval=2 lets
    # the scale grow on the other steps
    x, y = _data((8, 6))
    batches = [x, x * 0.5, x * float("inf"), x * 2.0, x]
    (eager, eager_opt), (traced, traced_opt) = _pair(_mlp, optimizer)
    scalers = [nb.amp.GradScaler(init_scale=2.0**10, growth_interval=2) for _ in range(2)]

    def step(model, opt, scaler, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    jitted = nb.jit(lambda x, y: step(traced, traced_opt, scalers[1], x, y))
    scales = []
    for xb in batches:
        step(eager, eager_opt, scalers[0], xb, y)
        jitted(xb, y)
        scales.append((scalers[0].get_scale(), scalers[1].get_scale()))
        for p, q in zip(eager.parameters(), traced.parameters()):
            np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-5)
    assert [s for s, _ in scales] == [t for _, t in scales]
    assert scales[2][0] == scales[1][0] / 2  # backed off after the inf
    assert scales[1][0] == 2 * scales[0][0]  # grown after two finite steps
    for i, s in eager_opt.state.items():  # the skipped step left the states as eager's
        for name, t in s.items():
            np.testing.assert_allclose(traced_opt.state[i][name].numpy(), t.numpy(), rtol=1e-4)
    assert len(jitted.cache) == 1


def test_grad_scaler_update_outside_the_jitted_step_is_refused_clearly():
    model = nn.Linear(3, 1)
    opt, scaler = nb.optim.SGD(model.parameters(), lr=0.1), nb.amp.GradScaler()

    @nb.jit
    def step(x):
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.step(opt)

    step(nb.ones(2, 3))
    with pytest.raises(nb.UnsupportedError, match="update.*inside the jitted function"):
        scaler.update()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_module_zero_grad_traces_as_the_optimizers_does(set_to_none):
    x, y = _data((8, 6))
    (eager, eager_opt), (traced, traced_opt) = _pair(_mlp, "adam")

    def step(model, opt, x, y):
        model.zero_grad(set_to_none=set_to_none)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    jitted = nb.jit(lambda x, y: step(traced, traced_opt, x, y))
    for _ in range(STEPS):
        want = step(eager, eager_opt, x, y).item()
        assert jitted(x, y).item() == pytest.approx(want, rel=1e-4)
    _assert_same(eager, traced)
    assert len(jitted.cache) <= 2  # (set_to_none=False reads the .grad a call starts with)


def test_minimize_under_jit_with_grad_mode_on_trains_and_its_program_trains_when_saved(tmp_path):
    w = nb.ones(3, requires_grad=True)
    opt = nb.optim.SGD([w], lr=0.01)

    @nb.jit
    def train(x):
        loss = ((x * w).sum() - 1.0) ** 2
        opt.minimize(loss)
        return loss

    x = nb.tensor([1.0, 2.0, 3.0])
    losses = [train(x).item() for _ in range(3)]  # (grad mode on: no tape node, values)
    assert losses[2] < losses[1] < losses[0]
    (traced,) = train.cache.values()
    nb.graph.save(traced.program, tmp_path / "train.json")
    scope = nb.Scope()
    loaded = nb.graph.load(tmp_path / "train.json", scope)
    exe, name = nb.Executor(), traced.outputs[0].name
    again = [float(exe.run(loaded, {"x": x}, [name], scope)[0]) for _ in range(2)]
    assert again[1] < again[0] < losses[2]  # fetching the loss runs its updates
