"""Executor(save_memory=True): the rewrites that lower a training step's peak at some cost in
time (graph/rewrite.py), against the plain executor, and their ops against numpy."""

import tracemalloc

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt
from nbflow.core import REGISTRY
from nbflow.graph.memory import NodeStep, Release

SIZES = (48, 64, 64, 10)


def _layer_inputs(m, dtype, layout="out_in", seed=0, n=6):
    rng = np.random.default_rng(seed)
    k, j = 5, 7

    def a(*shape):
        return rng.standard_normal(shape).astype(dtype)

    # out: a ReLU's output (zeros where it cut), grad @ next_w: the gradient reaching it
    out = np.maximum(a(m, n), 0)
    w = a(n, k) if layout == "out_in" else a(k, n)
    return w, a(n), a(m, k), out, a(m, j), a(j, n)


@pytest.mark.parametrize("layout", ["out_in", "in_out"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [0, 1, 7, 64])
@pytest.mark.parametrize("n", [1, 6, 7])  # the layer's width: g made in halves of its columns
def test_relu_layer_update_equals_the_three_steps_in_numpy(dtype, m, n, layout):
    w, b, x, out, grad, next_w = _layer_inputs(m, dtype, layout, n=n)
    g = np.where(out > 0, grad.astype(np.float64) @ next_w, 0.0)
    step = g.T @ x if layout == "out_in" else x.T @ g  # weight (n, k) or (k, n)
    want_w = w - 0.1 * (step + 0.01 * w)
    want_b = b - 0.3 * (g.sum(axis=0) + 0.2 * b)
    tw, tb = nb.tensor(w.copy()), nb.tensor(b.copy())
    hyper = {"lr": 0.1, "weight_decay": 0.01, "bias_lr": 0.3, "bias_weight_decay": 0.2}
    hyper["weight_layout"] = layout
    args = [nb.tensor(v) for v in (x, out, grad, next_w)]
    nb.sgd_relu_layer_update_(tw, tb, *args, **hyper)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12}
    nt.assert_close(tw.numpy(), want_w.astype(dtype), **tol)
    nt.assert_close(tb.numpy(), want_b.astype(dtype), **tol)
    ref_w, ref_b = REGISTRY["sgd_relu_layer_update_"].ref(w, b, x, out, grad, next_w, **hyper)
    nt.assert_close(ref_w, want_w.astype(dtype), **tol)
    nt.assert_close(ref_b, want_b.astype(dtype), **tol)


def test_relu_layer_update_refuses_momentum():
    w, b, x, out, grad, next_w = (nb.tensor(v) for v in _layer_inputs(4, "float32"))
    before = w.numpy().copy()
    with pytest.raises(nb.UnsupportedError, match="momentum"):
        nb.sgd_relu_layer_update_(w, b, x, out, grad, next_w, lr=0.1, bias_lr=0.1, momentum=0.9)
    np.testing.assert_array_equal(w.numpy(), before)  # nothing written


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_relu_grad_written_over_its_out_input(dtype):
    # the memory pass may hand the kernel `out`'s own buffer as its output (`overwrites`):
    # it is made in blocks of rows (three here) and masked into place
    rng = np.random.default_rng(1)
    r = np.maximum(rng.standard_normal((200, 96)), 0).astype(dtype)
    a, b = rng.standard_normal((200, 9)).astype(dtype), rng.standard_normal((9, 96)).astype(dtype)
    op = REGISTRY["matmul_relu_grad"]
    want = op.ref(r, a, b)
    buf = r.copy()
    op.kernels["cpu"](buf, a, b, buf)
    nt.assert_close(buf, want, rtol=1e-5 if dtype == "float32" else 1e-12)
    assert op.overwrites == (0,)
    base = np.zeros(r.size + 96, dtype)  # an output overlapping r one row further on
    shifted, out = base[96:].reshape(r.shape), base[:-96].reshape(r.shape)
    shifted[...] = r
    op.kernels["cpu"](shifted, a, b, out)
    nt.assert_close(out, want, rtol=1e-5 if dtype == "float32" else 1e-12)


def _model():
    g = nb.Generator(0)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:])):
        layers.append(nn.Linear(n_in, n_out, generator=g))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _train(exe, steps=4, momentum=0.0, batch=32):
    """Losses and final parameters of a @jit training loop run by `exe`: biases in their own
    parameter group (another lr, no weight decay), both learning rates changed half way."""
    model = _model()
    weights = [p for name, p in model.named_parameters() if name.endswith("weight")]
    biases = [p for name, p in model.named_parameters() if name.endswith("bias")]
    groups = [{"params": weights, "weight_decay": 0.01}, {"params": biases, "lr": 0.2}]
    optimizer = nb.optim.SGD(groups, lr=0.1, momentum=momentum)

    @nb.jit
    def step(x, y):
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    step.executors["cpu"] = exe
    rng = np.random.default_rng(0)
    x = nb.tensor(rng.standard_normal((batch, SIZES[0])).astype(np.float32))
    y = nb.tensor(rng.integers(0, 10, batch))
    losses = []
    with nb.no_grad():
        for i in range(steps):
            if i == steps // 2:
                optimizer.param_groups[0]["lr"] = 0.05
                optimizer.param_groups[1]["lr"] = 0.3
            losses.append(step(x, y).numpy().copy())
    return step, losses + [p.numpy().copy() for p in model.parameters()]


def _saving(**options):
    return nb.Executor(reuse_memory=True, save_memory=True, poison_freed=True, **options)


def _plan(exe):
    (plans,) = [p for p in exe._plans.values() if p]
    (steps,) = plans.values()
    return steps


def _names(steps):
    return [s.node.op.name if isinstance(s, NodeStep) else type(s).__name__ for s in steps]


def test_save_memory_trains_as_the_plain_executor_and_follows_both_learning_rates():
    _, expected = _train(nb.Executor(fuse=False, reuse_memory=False))
    exe = _saving()
    _, actual = _train(exe)
    for a, e in zip(actual, expected, strict=True):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    steps = _plan(exe)
    names = _names(steps)
    assert names.count("sgd_relu_layer_update_") == 1  # the first layer's two steps
    assert names.count("matmul_relu_grad") == 1  # the second layer's output gradient...
    assert _lent_to(steps, "matmul_relu_grad") == 1  # ...over the ReLU output that dies there
    assert names.count("sgd_update_") == 1  # the 10-wide last layer's gradient is kept


def test_without_save_memory_the_folds_are_those_of_the_default_plan():
    exe = nb.Executor(reuse_memory=True)
    _train(exe, steps=1)
    names = _names(_plan(exe))
    assert "sgd_relu_layer_update_" not in names and "sgd_update_" not in names
    assert names.count("sgd_matmul_update_") == 3 and "Release" in names


def _lent_to(steps, name):
    """How many `name` steps write over an input lent to them just before."""
    names = _names(steps)
    lends = [isinstance(s, Release) and not s.pop for s in steps]  # (a lend pops nothing)
    return sum(1 for k, n in enumerate(names) if n == name and k and lends[k - 1])


def test_save_memory_with_momentum_keeps_every_gradient():
    _, expected = _train(nb.Executor(fuse=False, reuse_memory=False), momentum=0.9)
    exe = _saving()
    _, actual = _train(exe, momentum=0.9)
    for a, e in zip(actual, expected, strict=True):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    steps = _plan(exe)
    names = _names(steps)
    assert names.count("sgd_update_") == 6 and "sgd_relu_layer_update_" not in names
    # each weight gradient is made before the ReLU mask: both masks write over their input
    assert _lent_to(steps, "matmul_relu_grad") == 2
    default = nb.Executor(reuse_memory=True)  # (slower that way: not without save_memory)
    _train(default, steps=1, momentum=0.9)
    assert _lent_to(_plan(default), "matmul_relu_grad") == 0


def _peak(exe, batch=128):
    """Peak bytes numpy allocates in the second training step (the first to place its buffers
    in the arena the first one planned: the arena is allocated in it)."""
    step, _ = _train(exe, steps=1, batch=batch)
    rng = np.random.default_rng(0)
    x = nb.tensor(rng.standard_normal((batch, SIZES[0])).astype(np.float32))
    y = nb.tensor(rng.integers(0, 10, batch))
    with nb.no_grad():
        nb.empty_cache()
        tracemalloc.start()
        try:
            step(x, y)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_save_memory_lowers_the_peak_below_the_default_pass():
    off = _peak(nb.Executor(reuse_memory=False))
    default = _peak(nb.Executor(reuse_memory=True))
    saving = _peak(nb.Executor(reuse_memory=True, save_memory=True))
    hidden = 128 * SIZES[1] * 4  # one hidden activation of the batch
    assert saving <= default - hidden // 3, (saving, default)
    assert saving <= 0.7 * off, (saving, off)


@pytest.mark.parametrize("layout", ["out_in", "in_out"])
def test_a_static_program_folds_and_explain_says_so(layout):
    # nn.Linear's layout (linear(x, w1, b1), w1 (12, 8)) and the static API's x @ w1 + b1
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [4, 8])
        y = nb.static.data("y", [4], dtype="int64")
        w1 = nb.static.create_parameter("w1", [12, 8] if layout == "out_in" else [8, 12])
        b1 = nb.static.create_parameter("b1", [12], initializer=("constant", 0.1))
        w2 = nb.static.create_parameter("w2", [3, 12])
        h = nb.linear(x, w1, b1) if layout == "out_in" else x @ w1 + b1
        loss = nb.cross_entropy(nb.linear(nb.relu(h), w2), y)
        nb.optim.SGD(lr=0.1, weight_decay=0.01).minimize(loss)
    fetch = [loss, "w1", "b1"]  # (the updates run for the parameters fetched after them)
    saved = nb.graph.explain(main, fetch, save_memory=True)
    steps = ("= sgd_update_(%w1,", "= sgd_update_(%b1,")
    updates = [line for line in saved.splitlines() if any(s in line for s in steps)]
    assert len(updates) == 2
    assert all(line.endswith("folded into sgd_relu_layer_update_") for line in updates), saved
    assert "sgd_relu_layer_update_" not in nb.graph.explain(main, fetch)
    feed = {
        "x": np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32),
        "y": np.arange(4) % 3,
    }
    results = []
    for exe in (nb.Executor(fuse=False, reuse_memory=False), _saving()):
        scope = nb.Scope()
        nb.manual_seed(0)
        exe.run(startup, scope=scope)
        results.append([exe.run(main, feed, fetch, scope) for _ in range(3)])
    (steps,) = exe._plans[main].values()
    names = _names(steps)
    assert names.count("sgd_relu_layer_update_") == 1 and "matmul_relu_grad" not in names
    for got, want in zip(results[1], results[0], strict=True):
        for a, e in zip(got, want, strict=True):
            nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
