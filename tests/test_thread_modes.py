"""Modes are per thread, as in PyTorch (issue 42): grad mode, the active trace (eager, a
static program, @jit tracing), the NaN/Inf check, autocast and anomaly mode set in one thread
leave every other thread as it was, and a new thread starts with the defaults (gradients on,
eager, checks off, no autocast)."""

import sys
import threading

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn, optim


@pytest.fixture(autouse=True)
def _switch_often():
    """Threads switch every few bytecodes, not every 5 ms: interleavings a real workload meets
    over minutes happen in each test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def _in_threads(*targets, timeout=120):
    """Run each target in its own thread, started together; re-raise the first error any of
    them raised."""
    errors = []
    start = threading.Barrier(len(targets))

    def wrapped(fn):
        try:
            start.wait(30)
            fn()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(fn,)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    if errors:
        raise errors[0]


def _training(seed: int, steps: int):
    """A small MLP trained eagerly with its own data; returns (run, parameters)."""
    nb.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(seed)
    xs = [nb.tensor(rng.standard_normal((8, 6)).astype(np.float32)) for _ in range(steps)]
    ys = [nb.tensor(rng.integers(0, 3, 8)) for _ in range(steps)]

    def run():
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with nb.no_grad():  # an evaluation between steps, as a training loop has
                model(x).sum()

    return run, model


def test_two_threads_training_reach_the_parameters_of_sequential_training():
    steps = 200
    runs = [_training(seed, steps) for seed in (1, 2)]
    for run, _ in runs:
        run()
    expected = [[p.numpy().copy() for p in m.parameters()] for _, m in runs]
    runs = [_training(seed, steps) for seed in (1, 2)]
    _in_threads(*(run for run, _ in runs))
    for (_, model), want in zip(runs, expected):
        for p, w in zip(model.parameters(), want):
            np.testing.assert_array_equal(p.numpy(), w)


def test_no_grad_in_one_thread_leaves_the_other_threads_gradients_on():
    inside, release = threading.Event(), threading.Event()
    seen = {}

    def quiet():
        with nb.no_grad():
            inside.set()
            release.wait(30)
            seen["quiet"] = nb.is_grad_enabled()

    def training():
        inside.wait(30)
        try:
            seen["training"] = nb.is_grad_enabled()
            w = nb.tensor(np.ones(3, np.float32), requires_grad=True)
            (w * w).sum().backward()
            seen["grad"] = w.grad.numpy().tolist()
        finally:
            release.set()

    _in_threads(quiet, training)
    assert seen == {"quiet": False, "training": True, "grad": [2.0, 2.0, 2.0]}
    assert nb.is_grad_enabled()


def test_overlapping_no_grad_blocks_leave_gradients_on_afterwards():
    def worker():
        w = nb.tensor(np.ones(2, np.float32), requires_grad=True)
        for _ in range(300):
            with nb.no_grad():
                (w * 2.0).sum()
            assert nb.is_grad_enabled()
            (w * w).sum().backward()

    _in_threads(worker, worker, worker)
    assert nb.is_grad_enabled()


def test_every_grad_mode_name_is_per_thread():
    modes = {
        "no_grad": nb.no_grad,
        "set_grad_enabled": lambda: nb.set_grad_enabled(False),
        "inference_mode": nb.inference_mode,
    }
    for name, make in modes.items():
        seen = []
        with make():
            assert not nb.is_grad_enabled(), name
            _in_threads(lambda seen=seen: seen.append(nb.is_grad_enabled()))
        assert seen == [True], name
        assert nb.is_grad_enabled(), name
    with nb.no_grad():  # enable_grad in another thread does not turn this one on
        _in_threads(lambda: nb.enable_grad().__enter__())
        assert not nb.is_grad_enabled()


def test_a_thread_tracing_a_jit_function_records_only_its_own_ops():
    tracing, release = threading.Event(), threading.Event()

    @nb.jit
    def traced(x):
        y = x * 2.0
        tracing.set()
        release.wait(30)  # the other thread runs its eager ops now
        return y + 1.0

    eager = []

    def eager_ops():
        tracing.wait(30)
        try:
            a = nb.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
            for _ in range(50):
                b = nb.exp(a) - a * 3.0
                eager.append(b)
            b.sum().backward()
        finally:
            release.set()

    result = {}
    _in_threads(lambda: result.setdefault("y", traced(nb.ones(3))), eager_ops)
    assert all(type(b) is nb.Tensor for b in eager)
    want = np.exp(np.arange(3)) - np.arange(3) * 3.0
    np.testing.assert_allclose(eager[-1].numpy(), want, rtol=1e-6)
    assert result["y"].numpy().tolist() == [3.0, 3.0, 3.0]
    program = traced.program(nb.ones(3))
    ops = [n.op.name for n in program.global_block().ops if n.op.name != "full"]
    assert ops == ["mul", "add"]  # (full: a constant) and none of the other thread's


def test_a_static_program_guard_is_per_thread():
    main = nb.Program()
    inside, release = threading.Event(), threading.Event()
    other = {}

    def building():
        with nb.program_guard(main):
            x = nb.static.data("x", [-1, 2])
            inside.set()
            release.wait(30)
            nb.mean(x * 2.0)

    def eager():
        inside.wait(30)
        try:
            other["y"] = nb.ones(2) * 3.0
        finally:
            release.set()

    _in_threads(building, eager)
    assert type(other["y"]) is nb.Tensor and other["y"].numpy().tolist() == [3.0, 3.0]
    assert [n.op.name for n in main.global_block().ops if n.op.name != "full"] == ["mul", "mean"]


def test_check_nan_inf_in_one_thread_does_not_raise_in_the_other():
    inside, release = threading.Event(), threading.Event()
    seen = {}

    def checking():
        with nb.check_nan_inf():
            inside.set()
            release.wait(30)
            with pytest.raises(FloatingPointError):
                nb.log(nb.tensor([-1.0]))

    def unchecked():
        inside.wait(30)
        try:
            with np.errstate(invalid="ignore"):
                seen["log"] = nb.log(nb.tensor([-1.0], dtype=nb.float32)).numpy()
                seen["div"] = (nb.tensor([0.0]) / 0.0).numpy()
        finally:
            release.set()

    _in_threads(checking, unchecked)
    assert np.isnan(seen["log"]).all() and np.isnan(seen["div"]).all()


def test_autocast_and_anomaly_mode_are_per_thread():
    seen = {}
    with nb.autocast("cpu"), nb.autograd.detect_anomaly():
        assert nb.is_autocast_enabled() and nb.autograd.is_anomaly_enabled()

        def probe():
            seen["autocast"] = nb.is_autocast_enabled()
            seen["anomaly"] = nb.autograd.is_anomaly_enabled()
            a = nb.ones((2, 2))
            seen["dtype"] = (a @ a).dtype  # no cast to float16 here

        _in_threads(probe)
        assert nb.is_autocast_enabled() and nb.autograd.is_anomaly_enabled()
    assert seen == {"autocast": False, "anomaly": False, "dtype": nb.float32}


def test_a_new_thread_starts_with_the_defaults_whatever_the_creating_thread_set():
    seen = {}

    def probe():
        seen["grad"] = nb.is_grad_enabled()
        seen["check"] = nb.eager.checking.nan_inf_checking()
        seen["eager"] = type(nb.ones(1) + nb.ones(1)) is nb.Tensor

    with nb.no_grad(), nb.check_nan_inf(), nb.program_guard(nb.Program()):
        _in_threads(probe)
    assert seen == {"grad": True, "check": False, "eager": True}
