"""PaddlePaddle's training loop (issue 38): fetching a loss that an optimizer minimized runs
that optimizer's updates; the forward alone is explicit (clone(for_test=True), prune)."""

import subprocess
import sys
import textwrap

import numpy as np

import nbflow as nb


def _batch(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def _program(optimizer=None):
    """PaddlePaddle's style: data, layers, minimize, all inside program_guard."""
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [4, 16])
        b1 = nb.static.create_parameter("b1", [16], initializer=("constant", 0.0))
        w2 = nb.static.create_parameter("w2", [16, 2])
        hidden = nb.relu(x @ w1 + b1)
        logits = hidden @ w2
        loss = nb.cross_entropy(logits, y)
        (optimizer or nb.optim.SGD(lr=0.5)).minimize(loss)
    return main, startup, loss, hidden


def _train(main, loss, scope, steps=20, exe=None):
    x, y = _batch()
    exe = exe or nb.Executor()
    return [float(exe.run(main, {"x": x, "y": y}, [loss], scope)[0]) for _ in range(steps)]


def test_fetching_the_loss_runs_the_updates_so_the_paddle_loop_trains():
    main, startup, loss, _ = _program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    losses = _train(main, loss, scope, exe=exe)
    assert losses[-1] < 0.5 * losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:5]))


def test_adam_state_trains_through_the_fetched_loss_too():
    main, startup, loss, _ = _program(nb.optim.Adam(lr=0.05))
    scope = nb.Scope()
    nb.Executor().run(startup, scope=scope)
    losses = _train(main, loss, scope)
    assert losses[-1] < 0.5 * losses[0]
    assert scope["w1@STEP"].item() == 20


def test_fetching_a_forward_activation_leaves_the_parameters_unchanged():
    main, startup, loss, hidden = _program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    before = {k: scope[k].numpy().copy() for k in ("w1", "b1", "w2")}
    x, _ = _batch()
    for _ in range(3):
        exe.run(main, {"x": x}, [hidden], scope)
    for k, v in before.items():
        np.testing.assert_array_equal(scope[k].numpy(), v)


def test_the_forward_alone_is_explicit_clone_for_test_and_prune():
    main, startup, loss, _ = _program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    before = scope["w1"].numpy().copy()
    x, y = _batch()
    test = main.clone(for_test=True)
    first = exe.run(test, {"x": x, "y": y}, [loss], scope)[0]
    assert exe.run(test, {"x": x, "y": y}, [loss], scope)[0] == first
    assert exe.run(main.prune([loss]), {"x": x, "y": y}, [loss], scope)[0] == first
    np.testing.assert_array_equal(scope["w1"].numpy(), before)
    assert not any(n.op.inplace for n in test.global_block().ops)
    assert _train(main.clone(), loss, scope, steps=3)[-1] < first  # a plain clone trains


def test_explain_says_why_each_update_runs():
    main, _, loss, hidden = _program()
    lines = nb.graph.explain(main, [loss]).splitlines()
    updates = [line for line in lines if "sgd_update_" in line]
    assert len(updates) == 3
    assert all(line.startswith(f"runs (update of %{loss.name})") for line in updates)
    assert any(line.startswith(f"runs (for update of %{loss.name})") for line in lines)
    assert not any(line.startswith("pruned") for line in lines)
    lines = nb.graph.explain(main, [hidden]).splitlines()
    assert all(line.startswith("pruned") for line in lines if "sgd_update_" in line)


def test_two_losses_each_run_only_their_own_optimizers_updates():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        a = nb.static.create_parameter("a", [4])
        b = nb.static.create_parameter("b", [4])
        loss_a, loss_b = nb.mean((x * a) ** 2), nb.mean((x * b) ** 2)
        nb.optim.SGD([a], lr=0.1).minimize(loss_a, parameter_list=[a])
        nb.optim.SGD([b], lr=0.1).minimize(loss_b, parameter_list=[b])
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    a0, b0 = scope["a"].numpy().copy(), scope["b"].numpy().copy()
    exe.run(main, {"x": _batch()[0]}, [loss_a], scope)
    assert not np.array_equal(scope["a"].numpy(), a0)
    np.testing.assert_array_equal(scope["b"].numpy(), b0)


def test_a_saved_and_reloaded_program_trains_the_same_way(tmp_path):
    main, startup, loss, _ = _program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    path = tmp_path / "train.json"
    nb.graph.save(main, path, scope)
    want = _train(main, loss, scope, steps=5)
    loaded_scope = nb.Scope()
    loaded = nb.graph.load(path, loaded_scope)
    got = _train(loaded, loss.name, loaded_scope, steps=5)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert got[-1] < got[0]


def test_a_saved_program_trains_in_a_fresh_process(tmp_path):
    main, startup, loss, _ = _program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    path = tmp_path / "train.json"
    nb.graph.save(main, path, scope)
    x, y = _batch()
    np.savez(tmp_path / "batch.npz", x=x, y=y)
    want = _train(main, loss, scope, steps=5)
    script = f"""
        import numpy as np, nbflow as nb
        scope = nb.Scope()
        program = nb.graph.load({str(path)!r}, scope)
        batch = np.load({str(tmp_path / "batch.npz")!r})
        exe = nb.Executor()
        for _ in range(5):
            print(float(exe.run(program, {{"x": batch["x"], "y": batch["y"]}}, [{loss.name!r}],
                                scope)[0]))
        """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, check=True
    )
    got = [float(line) for line in out.stdout.split()]
    np.testing.assert_allclose(got, want, rtol=1e-5)
