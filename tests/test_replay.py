"""Replaying a recorded run (graph/replay.py): the same values, errors and parameter versions
as running the plan's steps, over the op samples and over training loops fed a new batch each
step; a replay that stops holding (a changed attr, parameter or memory budget) gives way to
the steps, and runs it cannot make again are never replayed."""

import numpy as np
import pytest
from test_all_ops import SAMPLES
from test_fusion import _sample_program
from test_memory import _feed, _main_arena, _mlp

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt
from nbflow.graph import executor, replay
from nbflow.graph.fusion import FusedGroup


@pytest.fixture
def replays(monkeypatch):
    """The number of replayed runs so far (a list of one int)."""
    count = [0]
    run = replay.Replay.run

    def counted(self, *args):
        count[0] += 1
        return run(self, *args)

    monkeypatch.setattr(replay.Replay, "run", counted)
    return count


def _outcome(exe, program, feed, fetch, scope):
    """The fetched values, or the error's type and message."""
    try:
        return exe.run(program, feed, fetch, scope)
    except nb.NbflowError as e:
        return type(e), str(e)


def _same(got, expected, msg=""):
    if isinstance(expected, tuple):  # an error
        assert got == expected, msg
        return
    for g, e in zip(got, expected, strict=True):
        nt.assert_close(g, e, rtol=0, atol=0, msg=msg)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_replays_to_the_values_and_errors_of_its_steps(name):
    main, feed, fetch = _sample_program(name)
    runs = {}
    for on in (False, True):
        exe, scope = nb.Executor(fuse=False, replay=on), nb.Scope()
        runs[on] = []
        for k in range(4):
            # new arrays every run, the floats scaled on odd runs (a positive factor keeps
            # signs, order and definiteness; 0.999 keeps values in [0, 1] inside it)
            fed = {
                n: v * v.dtype.type(0.999**k) if v.dtype.kind == "f" else v.copy()
                for n, v in feed.items()
            }
            nb.manual_seed(k)  # random ops draw the same in both
            runs[on].append(_outcome(exe, main, fed, fetch, scope))
    for k, (got, expected) in enumerate(zip(runs[True], runs[False], strict=True)):
        _same(got, expected, msg=f"{name} run {k}")
    if not isinstance(runs[True][-1], tuple):  # (exe: the replaying one) ran without error
        assert any(isinstance(arena.replay, replay.Replay) for _, arena in exe._arenas.values())


def _trained(exe, steps=6, batch=32):
    main, startup, fetch = _mlp()
    scope = nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    losses = []
    for k in range(steps):
        feed = _feed(batch)
        feed["x"] = feed["x"] * np.float32(1 + 0.1 * k)  # a new batch every step
        losses.append(exe.run(main, feed, fetch, scope)[0])
    return exe, scope, losses, fetch, main


def test_a_training_loop_fed_new_batches_replays_to_the_same_parameters(replays):
    _, ref_scope, ref_losses, fetch, _ = _trained(nb.Executor(replay=False))
    assert replays[0] == 0
    exe, scope, losses, _, _ = _trained(nb.Executor())
    assert replays[0] >= 3  # every run after the arena placed its buffers
    np.testing.assert_array_equal(losses, ref_losses)
    assert len({float(v) for v in losses}) == len(losses)  # (each step's loss its own)
    for name in fetch[1:]:
        np.testing.assert_array_equal(scope.value(name), ref_scope.value(name))


def _mlp_model(g):
    return nn.Sequential(nn.Linear(20, 32, generator=g), nn.ReLU(), nn.Linear(32, 5, generator=g))


def _cnn_model(g):
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, generator=g),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 5, generator=g),
    )


def _jit_training(exe, steps=6, model=_mlp_model, optimizer=nb.optim.SGD, x_shape=(16, 20)):
    model = model(nb.Generator(0))
    optimizer = optimizer(model.parameters(), lr=0.1)

    @nb.jit
    def train(x, y):
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    train.executors["cpu"] = exe
    rng = np.random.default_rng(0)
    losses = []
    with nb.no_grad():
        for _ in range(steps):
            x = rng.standard_normal(x_shape).astype(np.float32)
            y = rng.integers(0, 5, x_shape[0])
            losses.append(train(nb.tensor(x), nb.tensor(y)).item())
    return model, losses


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_jit_training_replays_to_the_same_parameters_and_versions(replays, kind):
    # the CNN's max_pool2d makes two outputs (its values and the indices its gradient reads):
    # both placed by the memory pass (IntoBuffer) and made again by the replay
    options = {"model": _cnn_model, "optimizer": nb.optim.Adam, "x_shape": (8, 1, 6, 6)}
    options = options if kind == "cnn" else {}
    ref_model, ref_losses = _jit_training(nb.Executor(replay=False), **options)
    exe = nb.Executor()
    model, losses = _jit_training(exe, **options)
    assert replays[0] >= 3
    assert losses == ref_losses
    for p, q in zip(model.parameters(), ref_model.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
        assert p.version == q.version  # a replayed update moves the counter too
    (plan,) = [steps for plans in exe._plans.values() for steps in plans.values() if steps]
    pools = [s for s in plan if getattr(s, "node", None) and s.node.op.name == "max_pool2d"]
    assert [(type(s).__name__, len(s.outs)) for s in pools] == [("IntoBuffer", 2)] * len(pools)
    assert len(pools) == (kind == "cnn")


def test_fetched_outputs_of_replays_are_fresh(replays):
    main, startup, _ = _mlp()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    hidden = [n for n in main.global_block().ops if n.op.name == "relu"][0].outputs[0]
    firsts, copies = [], []
    for k in range(5):
        feed = _feed()
        feed["x"] = feed["x"] + np.float32(k)
        (h,) = exe.run(main, feed, [hidden], scope)
        firsts.append(h)
        copies.append(h.copy())
    assert replays[0] >= 2
    for h, c in zip(firsts, copies, strict=True):
        np.testing.assert_array_equal(h, c)  # not written by a later replay
    assert not np.array_equal(firsts[-1], firsts[-2])


def test_fetched_views_of_feeds_and_fresh_outputs_replay_and_stay_fresh(replays):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (4, 6))
        doubled = nb.reshape(x * 2.0, (6, 4))  # a view of an output made afresh
        flipped = nb.matrix_transpose(x)  # a view of the feed
        total = nb.sum(doubled)
    exe = nb.Executor()
    fetched = []
    for k in range(5):
        feed = np.arange(24, dtype=np.float32).reshape(4, 6) + np.float32(k)
        got = exe.run(main, {"x": feed}, [doubled, flipped, total])
        fetched.append((feed, got, [g.copy() for g in got]))
    assert replays[0] >= 3
    for feed, got, copies in fetched:
        np.testing.assert_array_equal(got[0], (feed * 2).reshape(6, 4))
        np.testing.assert_array_equal(got[1], feed.T)
        for g, c in zip(got, copies, strict=True):
            np.testing.assert_array_equal(g, c)  # not written by a later replay


def test_a_loop_body_replays_its_iterations_to_the_values_of_its_steps(replays):
    # the top-level plan holds the loop and its gradient loop, which are not replayed; their
    # blocks run the same steps every iteration, and after the first one replay them
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [4, 8])
        w = nb.static.data("w", [8, 8])
        w.stop_gradient = False
        body = lambda i, h: (i + 1, nb.tanh(h @ w * 0.9 + x) * 0.5 - h * 0.1)
        _, h = nb.while_loop(lambda i, h: i < 6, body, [0, x], max_iterations=10)
        ((_, gw),) = nb.append_backward(nb.sum(h * h), parameter_list=[w])
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((8, 8)) * 0.3).astype(np.float32)
    feeds = [{"x": rng.standard_normal((4, 8)).astype(np.float32), "w": w} for _ in range(3)]
    runs = {}
    for on in (False, True):
        exe = nb.Executor(replay=on)
        runs[on] = [exe.run(main, feed, [h, gw]) for feed in feeds]
    assert replays[0] >= 3 * 10  # each run: 5 of 6 forward and 5 of 6 gradient iterations
    for got, expected in zip(runs[True], runs[False], strict=True):
        _same(got, expected)


def _var_program():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (-1, 6))
        v = nb.var(x, axis=1, correction=1)
    return main, x, v


def test_a_changed_attr_stops_the_replay_and_a_new_one_is_recorded(replays):
    main, _, v = _var_program()
    node = next(n for n in main.global_block().ops if n.op.name == "var")
    feed = {"x": np.random.default_rng(0).standard_normal((4, 6)).astype("f4")}
    exe = nb.Executor()
    for _ in range(3):
        (before,) = exe.run(main, feed, [v])
    assert replays[0] == 1
    nt.assert_close(before, feed["x"].var(axis=1, ddof=1), rtol=1e-5)
    node.attrs["correction"] = 0
    for _ in range(3):
        (after,) = exe.run(main, feed, [v])
        nt.assert_close(after, feed["x"].var(axis=1, ddof=0), rtol=1e-5)
    assert replays[0] == 3  # the run after the change ran the steps and recorded again


def test_a_parameter_replaced_in_the_scope_is_read(replays):
    exe, scope, _, fetch, main = _trained(nb.Executor(), steps=4)
    ref, ref_scope, _, _, _ = _trained(nb.Executor(replay=False), steps=4)
    before = replays[0]
    for s in (scope, ref_scope):
        s["w1"] = nb.tensor(np.full(s.value("w1").shape, 0.01, np.float32))
    for _ in range(3):
        got = exe.run(main, _feed(), fetch, scope)
        expected = ref.run(main, _feed(), fetch, ref_scope)
        _same(got, expected)
    assert replays[0] == before + 2  # the first run ran the steps and recorded again


def test_a_lower_memory_budget_is_checked_on_the_next_run(replays):
    main, _, v = _var_program()
    feed = {"x": np.ones((4, 6), np.float32)}
    exe = nb.Executor()
    for _ in range(3):
        exe.run(main, feed, [v])
    assert replays[0] == 1
    budget = nb.get_memory_budget()
    try:
        nb.set_memory_budget(8)  # the output takes 16 bytes: a replay must not skip the check
        with pytest.raises(nb.ResourceExhaustedError):
            exe.run(main, feed, [v])
    finally:
        nb.set_memory_budget(budget)
    for _ in range(3):
        exe.run(main, feed, [v])
    assert replays[0] == 2  # recorded again under the old budget, then replayed


def test_an_error_in_a_replayed_run_is_the_steps_error():
    outcomes, scopes = {}, {}
    for on in (False, True):
        exe, scope, _, fetch, main = _trained(nb.Executor(replay=on), steps=3)
        bad = _feed()
        bad["y"] = bad["y"] + 100  # labels out of range: cross_entropy raises mid-run
        outcomes[on] = _outcome(exe, main, bad, fetch, scope)
        scopes[on] = scope
        if on:
            assert isinstance(_main_arena(exe).replay, replay.Replay)
    assert outcomes[True][0] is nb.OutOfRangeError and outcomes[True] == outcomes[False]
    for name in ("w0", "b0", "w2"):
        np.testing.assert_array_equal(scopes[True].value(name), scopes[False].value(name))


def test_attrs_changing_on_every_run_stop_the_recording(replays):
    main, _, v = _var_program()
    node = next(n for n in main.global_block().ops if n.op.name == "var")
    feed = {"x": np.random.default_rng(1).standard_normal((4, 6)).astype("f4")}
    exe = nb.Executor()
    for k in range(12):
        node.attrs["correction"] = k % 2
        (got,) = exe.run(main, feed, [v])
        nt.assert_close(got, feed["x"].var(axis=1, ddof=k % 2), rtol=1e-5)
    arena = _main_arena(exe)
    assert arena.replay is None and arena.replay_misses == executor.REPLAY_MISSES
    assert replays[0] == 0


def test_nan_checks_and_a_busy_arena_run_the_steps(replays):
    assert not nb.Executor(replay=False).replay
    exe, scope, _, fetch, main = _trained(nb.Executor())
    count = replays[0]
    with nb.check_nan_inf():
        exe.run(main, _feed(), fetch, scope)
    assert exe._arena_space.acquire()  # as if another thread's run held it
    try:
        got = exe.run(main, _feed(), fetch, scope)
    finally:
        exe._arena_space.release()
    assert replays[0] == count and np.isfinite(got[0])
    exe.run(main, _feed(), fetch, scope)
    assert replays[0] == count + 1


@pytest.mark.parametrize("poison", [False, True])
def test_a_replay_in_poison_mode_poisons_what_the_steps_release(replays, poison):
    exe, scope, losses, fetch, main = _trained(nb.Executor(poison_freed=poison))
    assert replays[0] >= 3 and np.all(np.isfinite(losses))
    exe._arena_space.buffer[:] = 0  # (the padding between buffers stays 0)
    count = replays[0]
    test = main.clone(for_test=True)  # (fetching the training program's loss trains)
    (loss,) = exe.run(test, _feed(), fetch[:1], scope)
    # (the forward alone is another plan: its own arena, recorded, then replayed)
    for _ in range(2):
        assert exe.run(test, _feed(), fetch[:1], scope)[0] == loss
    assert replays[0] == count + 1
    arena = exe._arena_space.buffer.view(np.float32)  # the intermediates, released
    assert np.isnan(arena).any() == poison


def test_a_plan_with_fused_groups_replays_them_on_new_feeds(replays):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (-1, 8))
        y = nb.tanh(x * 2.0 + 1.0) * 0.5
        total = nb.sum(nb.exp(y) - x)  # a group ending in a reduction
    exe = nb.Executor()
    for k in range(5):
        x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8) * np.float32(k)
        got, s = exe.run(main, {"x": x}, [y, total])
        want = np.tanh(x * 2 + 1) * 0.5
        nt.assert_close(got, want, rtol=1e-5, atol=1e-6)
        nt.assert_close(s, np.sum(np.exp(want) - x, dtype=np.float64).astype("f4"), rtol=1e-5)
    plan = next(iter(exe._plans[main].values()))
    assert any(type(step).__name__ == "FusedGroup" for step in plan)
    assert replays[0] >= 2


def test_replayed_groups_make_the_kernel_call_chosen_when_recorded(replays, monkeypatch):
    """A replay calls each fused group's kernel as its recorded run chose it (the inputs'
    layout, the variant, the aliasing, a broadcast input copied out), choosing nothing again;
    the recorded call refuses an input laid out otherwise, writing nothing."""
    chosen = []
    compute = FusedGroup.compute

    def counted(self, *args):
        chosen[-1] += 1
        return compute(self, *args)

    monkeypatch.setattr(FusedGroup, "compute", counted)
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (-1, 8))
        b = nb.static.data("b", (8,))
        y = nb.tanh(x * 2.0 + b) * 0.5
        total = nb.sum(nb.exp(y) - x)  # b broadcast into a reduction's group: copied out
    exe = nb.Executor()
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal((6, 8)).astype(np.float32)
        b = rng.standard_normal(8).astype(np.float32)
        chosen.append(0)
        got, s = exe.run(main, {"x": x, "b": b}, [y, total])
        want = np.tanh(x * 2 + b) * 0.5
        nt.assert_close(got, want, rtol=1e-5, atol=1e-6)
        nt.assert_close(s, np.sum(np.exp(want) - x, dtype=np.float64).astype("f4"), rtol=1e-5)
    assert replays[0] >= 2 and chosen[0] == 1 and chosen[-1] == chosen[-2] == 0

    (group,) = [s for s in list(exe._plans[main].values())[0] if isinstance(s, FusedGroup)]
    x = rng.standard_normal((6, 8)).astype(np.float32)
    arrays = [x, np.float32(2), b, np.float32(0.5)]  # (group.inputs: x, 2.0, b, 0.5)
    outs, _, call = group.compute(arrays, lambda shape, dtype, size: np.zeros(shape, dtype))
    for out in outs:
        out[...] = -1
    assert not call.again([np.asfortranarray(x), *arrays[1:]], outs)
    assert (outs[0] == -1).all() and outs[1] == -1
    assert call.again(arrays, outs)
    nt.assert_close(outs[0], np.tanh(x * 2 + b) * 0.5, rtol=1e-5, atol=1e-6)
