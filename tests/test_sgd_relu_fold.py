"""sgd_matmul_relu_grad_: a ReLU layer's input gradient written over the ReLU's output, with
the SGD step of the next layer's weight, against numpy; and graph/rewrite.py's fold into it,
against the plain executor (no rewrites, no memory pass)."""

import tracemalloc

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt
from nbflow.core import REGISTRY
from nbflow.graph import rewrite
from nbflow.graph.memory import NodeStep

SIZES = (48, 64, 64, 10)
HYPER = {"lr": 0.1, "weight_decay": 0.01}


def _layer(m, n, dtype, layout, seed=0, j=5):
    """(weight, out, grad): out (m, n) a ReLU's output (zeros where it cut), grad (m, j) the
    gradient reaching the next layer's output, weight that layer's, (j, n) or (n, j)."""
    rng = np.random.default_rng(seed)
    out = np.maximum(rng.standard_normal((m, n)), 0).astype(dtype)
    grad = rng.standard_normal((m, j)).astype(dtype)
    w = rng.standard_normal((j, n) if layout == "out_in" else (n, j)).astype(dtype)
    return w, out, grad


def _expected(w, out, grad, layout):
    w64, out64, grad64 = (v.astype(np.float64) for v in (w, out, grad))
    wt = w64 if layout == "out_in" else w64.T
    input_grad = np.where(out64 > 0, grad64 @ wt, 0.0)
    step = grad64.T @ out64 if layout == "out_in" else out64.T @ grad64
    return w64 - HYPER["lr"] * (step + HYPER["weight_decay"] * w64), input_grad


TOL = {
    "float16": {"rtol": 2e-2, "atol": 2e-2},
    "float32": {"rtol": 1e-5, "atol": 1e-5},
    "float64": {"rtol": 1e-12, "atol": 1e-12},
}


@pytest.mark.parametrize("layout", ["out_in", "in_out"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("m", [0, 1, 7, 64])
@pytest.mark.parametrize("n", [1, 6, 7, 13])  # out's width: blocks of a quarter of its columns
def test_both_writes_equal_numpy(dtype, m, n, layout):
    w, out, grad = _layer(m, n, dtype, layout)
    want_w, want_g = _expected(w, out, grad, layout)
    tw, tout = nb.tensor(w.copy()), nb.tensor(out.copy())
    new_w, new_g = nb.sgd_matmul_relu_grad_(
        tw, tout, nb.tensor(grad), weight_layout=layout, **HYPER
    )
    assert new_w is tw and new_g is tout  # in place, both
    nt.assert_close(tw.numpy(), want_w.astype(dtype), **TOL[dtype])
    nt.assert_close(tout.numpy(), want_g.astype(dtype), **TOL[dtype])
    ref_w, ref_g = REGISTRY["sgd_matmul_relu_grad_"].ref(
        w, out, grad, weight_layout=layout, **HYPER
    )
    nt.assert_close(ref_w, want_w.astype(dtype), **TOL[dtype])
    nt.assert_close(ref_g, want_g.astype(dtype), **TOL[dtype])


@pytest.mark.parametrize("layout", ["out_in", "in_out"])
def test_every_thread_choice_and_a_separate_output_give_the_same_result(layout):
    # the first calls of a shape try each way of running the blocks (kernels/cpu/threads.py:
    # in turn on one BLAS thread, on OpenBLAS's threads, over numba's threads)
    w, out, grad = _layer(96, 40, "float32", layout, seed=3, j=24)
    want_w, want_g = _expected(w, out, grad, layout)
    kernel = REGISTRY["sgd_matmul_relu_grad_"].kernels["cpu"]
    attrs = dict(HYPER, momentum=0.0, dampening=0.0, nesterov=False, weight_layout=layout)
    for _ in range(10):
        w1, out1 = w.copy(), out.copy()
        kernel(w1, out1, grad, w1, out1, **attrs)
        nt.assert_close(w1, want_w.astype(np.float32), **TOL["float32"])
        nt.assert_close(out1, want_g.astype(np.float32), **TOL["float32"])
    w1, separate = w.copy(), np.full_like(out, np.nan)  # not over out: out is left as it was
    kernel(w1, out, grad, w1, separate, **attrs)
    nt.assert_close(separate, want_g.astype(np.float32), **TOL["float32"])
    nt.assert_close(w1, want_w.astype(np.float32), **TOL["float32"])
    np.testing.assert_array_equal(out, _layer(96, 40, "float32", layout, seed=3, j=24)[1])


def test_momentum_is_refused_and_nothing_is_written():
    w, out, grad = (nb.tensor(v) for v in _layer(4, 6, "float32", "out_in"))
    before = [w.numpy().copy(), out.numpy().copy()]
    with pytest.raises(nb.UnsupportedError, match="momentum"):
        nb.sgd_matmul_relu_grad_(w, out, grad, lr=0.1, momentum=0.9)
    for t, b in zip((w, out), before, strict=True):
        np.testing.assert_array_equal(t.numpy(), b)


@pytest.mark.parametrize(
    "args, error",
    [
        (((3, 4), (2, 5), (2, 3)), nb.ShapeError),  # out's width is not the weight's input
        (((3, 4), (2, 4), (3, 3)), nb.ShapeError),  # grad's rows are not out's
        (((3, 4), (2, 4), (2, 4)), nb.ShapeError),  # grad's width is not the weight's output
    ],
)
def test_shapes_that_do_not_chain_are_refused(args, error):
    with pytest.raises(error):
        nb.sgd_matmul_relu_grad_(*(nb.ones(*s) for s in args), lr=0.1)
    with pytest.raises(nb.DTypeError):
        nb.sgd_matmul_relu_grad_(
            nb.ones(3, 4), nb.ones(2, 4, dtype="float64"), nb.ones(2, 3), lr=0.1
        )


def _model():
    g = nb.Generator(0)
    layers = []
    for i, (n_in, n_out) in enumerate(zip(SIZES, SIZES[1:])):
        layers.append(nn.Linear(n_in, n_out, generator=g))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _batch(batch):
    rng = np.random.default_rng(0)
    x = nb.tensor(rng.standard_normal((batch, SIZES[0])).astype(np.float32))
    return x, nb.tensor(rng.integers(0, 10, batch))


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
    x, y = _batch(batch)
    losses = []
    with nb.no_grad():
        for i in range(steps):
            if i == steps // 2:
                optimizer.param_groups[0]["lr"] = 0.05
                optimizer.param_groups[1]["lr"] = 0.3
            losses.append(step(x, y).numpy().copy())
    return step, losses + [p.numpy().copy() for p in model.parameters()]


def _names(exe, program=None):
    """The op names of the one plan `exe` made (of `program`'s, when it ran others)."""
    (plans,) = [exe._plans[program]] if program else [p for p in exe._plans.values() if p]
    (steps,) = plans.values()
    return [s.node.op.name if isinstance(s, NodeStep) else type(s).__name__ for s in steps]


def test_the_fold_trains_as_the_plain_executor_and_follows_the_learning_rates():
    _, expected = _train(nb.Executor(fuse=False, reuse_memory=False))
    exe = nb.Executor(reuse_memory=True, poison_freed=True)
    _, actual = _train(exe)
    for a, e in zip(actual, expected, strict=True):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    names = _names(exe)
    # the two layers after a ReLU; the first layer's weight step reads x, which is fed
    assert names.count("sgd_matmul_relu_grad_") == 2 and "matmul_relu_grad" not in names
    assert names.count("sgd_matmul_update_") == 1
    kept = nb.Executor(reuse_memory=False)  # every value kept: none written over
    _, actual = _train(kept)
    for a, e in zip(actual, expected, strict=True):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    assert "sgd_matmul_relu_grad_" not in _names(kept)


def test_with_momentum_nothing_folds():
    _, expected = _train(nb.Executor(fuse=False, reuse_memory=False), momentum=0.9)
    exe = nb.Executor(reuse_memory=True, poison_freed=True)
    _, actual = _train(exe, momentum=0.9)
    for a, e in zip(actual, expected, strict=True):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    names = _names(exe)
    assert names.count("sgd_update_") == 6 and "sgd_matmul_relu_grad_" not in names


def _peak(exe, batch=128):
    """Peak bytes numpy allocates in the second training step (the first to place its buffers
    in the arena the first one planned: the arena is allocated in it), once another executor
    has loaded the kernels every thread choice tries (loading one is not the step's memory)."""
    _train(nb.Executor(reuse_memory=exe.reuse_memory), steps=12, batch=batch)
    step, _ = _train(exe, steps=1, batch=batch)
    x, y = _batch(batch)
    with nb.no_grad():
        nb.empty_cache()
        tracemalloc.start()
        try:
            step(x, y)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def test_the_fold_lowers_the_peak_by_a_hidden_activation(monkeypatch):
    off = _peak(nb.Executor(reuse_memory=False))
    folded = _peak(nb.Executor(reuse_memory=True))
    monkeypatch.setattr(rewrite, "fold_sgd_relu_grads", lambda ops, targets=(): ops)
    unfolded = _peak(nb.Executor(reuse_memory=True))
    hidden = 128 * SIZES[1] * 4  # one hidden activation of the batch
    assert folded <= unfolded - hidden // 3, (folded, unfolded)
    assert folded <= 0.7 * off, (folded, off)


def _static(layout, fetch_h=False):
    # nn.Linear's layout (linear(h, w2), w2 (3, 12)) and the static API's h @ w2 (w2 (12, 3))
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [4, 8])
        y = nb.static.data("y", [4], dtype="int64")
        w1 = nb.static.create_parameter("w1", [12, 8])
        b1 = nb.static.create_parameter("b1", [12], initializer=("constant", 0.1))
        w2 = nb.static.create_parameter("w2", [3, 12] if layout == "out_in" else [12, 3])
        # (a ReLU the linear layer takes as its activation, whose gradient reads its output)
        h = nb.relu(nb.linear(x, w1, b1))
        logits = nb.linear(h, w2) if layout == "out_in" else h @ w2
        loss = nb.cross_entropy(logits, y)
        nb.optim.SGD(lr=0.1, weight_decay=0.01).minimize(loss)
    # (the updates run for the parameters fetched after them)
    return main, startup, [loss, "w1", "w2", h] if fetch_h else [loss, "w1", "w2"]


@pytest.mark.parametrize("fetch_h", [False, True])
@pytest.mark.parametrize("layout", ["out_in", "in_out"])
def test_a_static_program_folds_and_explain_says_so(layout, fetch_h):
    main, startup, fetch = _static(layout, fetch_h)
    text = nb.graph.explain(main, fetch)
    update = next(line for line in text.splitlines() if "= sgd_update_(%w2," in line)
    # a fetched ReLU output is not written over: the fold does not apply
    assert update.endswith("folded into sgd_matmul_relu_grad_") != fetch_h, text
    assert ("sgd_matmul_relu_grad_" in nb.graph.explain(main, fetch, reuse_memory=False)) is False
    feed = {
        "x": np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32),
        "y": np.arange(4) % 3,
    }
    results = []
    for exe in (nb.Executor(fuse=False, reuse_memory=False), nb.Executor(poison_freed=True)):
        scope = nb.Scope()
        nb.manual_seed(0)
        exe.run(startup, scope=scope)
        results.append([exe.run(main, feed, fetch, scope) for _ in range(3)])
    assert (_names(exe, main).count("sgd_matmul_relu_grad_") == 1) != fetch_h
    for got, want in zip(results[1], results[0], strict=True):
        for a, e in zip(got, want, strict=True):
            nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
