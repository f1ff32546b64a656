"""The elementwise fusion pass: fused programs give the unfused values and gradients (with the
memory pass on and freed buffers poisoned), groups form and close where they must, and a fused
kernel compiled in one process is loaded from numba's disk cache in the next."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_all_ops import SAMPLES

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt
from nbflow.core import REGISTRY
from nbflow.errors import KernelCompileError
from nbflow.graph.fusion import CHUNK, FusedGroup, fuse
from nbflow.graph.memory import NodeStep
from nbflow.kernels.cpu.templates import SUM_BLOCK

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _exe(on: bool):
    if on:
        return nb.Executor(fuse=True, reuse_memory=True, poison_freed=True)
    return nb.Executor(fuse=False, reuse_memory=False)


def _steps(exe, program):
    (steps,) = exe._plans[program].values()
    return steps


def _op_names(exe, program):
    """The op name of each plan step that runs one op (None for groups and releases)."""
    steps = _steps(exe, program)
    return [
        s.node.op.name if isinstance(s, NodeStep) else getattr(s, "op", None) and s.op.name
        for s in steps
    ]


def _groups(exe, program):
    return [s for s in _steps(exe, program) if isinstance(s, FusedGroup)]


def _sample_program(name):
    """The graph-parity program of tests/test_graph.py: the op, a cotangent-weighted sum and
    its backward; returns (program, feed, fetch list)."""
    fn, make_inputs, attrs = SAMPLES[name]
    inputs = make_inputs()
    rng = np.random.default_rng(1)
    main = nb.Program()
    with nb.program_guard(main):
        xs = []
        for i, t in enumerate(inputs):
            v = nb.static.data(f"in{i}", t.shape, t.dtype)
            v.stop_gradient = False
            xs.append(v)
        outs = fn(*xs, **attrs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        cots = [nb.tensor(rng.standard_normal(o.shape)) for o in outs]
        terms = [nb.sum(o * c) for o, c in zip(outs, cots) if not o.stop_gradient]
        loss = terms[0] if len(terms) == 1 else nb.add_n(*terms)
        pairs = nb.append_backward(loss, parameter_list=xs)
    feed = {f"in{i}": t.numpy() for i, t in enumerate(inputs)}
    return main, feed, list(outs) + [g for _, g in pairs]


ELEMENTWISE = sorted(n for n in SAMPLES if hasattr(nb.REGISTRY[n], "scalar_body"))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_fused_equals_unfused_on_every_sample(name):
    main, feed, fetch = _sample_program(name)
    expected = _exe(False).run(main, feed, fetch, scope=nb.Scope())
    exe = _exe(True)
    actual = exe.run(main, feed, fetch, scope=nb.Scope())
    for a, e in zip(actual, expected):
        nt.assert_close(a, e, msg=name)
    if name in ELEMENTWISE:  # the op and its cotangent product make one kernel at least
        assert _groups(exe, main), f"{name}: nothing fused"


def _mlp(lr=0.1):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 6])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [6, 16])
        b1 = nb.static.create_parameter("b1", [16], initializer=("constant", 0.1))
        w2 = nb.static.create_parameter("w2", [16, 3])
        hidden = nb.tanh(x @ w1 + b1) * 0.5 + nb.relu(x @ w1)
        loss = nb.cross_entropy(hidden @ w2, y)
        for p, g in nb.append_backward(loss):
            nb.sub_(p, g * lr)
    return main, startup, loss


def _train(exe, steps=4):
    main, startup, loss = _mlp()
    scope = nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 6)).astype(np.float32)
    y = rng.integers(0, 3, 20)
    fetch = [loss, "w1", "b1", "w2"]  # fetching the parameters keeps their update ops
    losses = [exe.run(main, {"x": x, "y": y}, fetch, scope)[0] for _ in range(steps)]
    return main, losses, [scope.value(n).copy() for n in ("w1", "b1", "w2")]


def test_mlp_training_fused_equals_unfused():
    _, expected_losses, expected_params = _train(_exe(False))
    exe = _exe(True)
    main, losses, params = _train(exe)
    for a, e in zip(losses + params, expected_losses + expected_params):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    fused_ops = [g.op_names for g in _groups(exe, main)]
    assert ["tanh", "mul", "relu", "add"] in fused_ops  # forward (b1's add: in a linear op)
    assert ["mul", "mul", "sub", "mul"] in fused_ops  # tanh's gradient, one kernel


def _cnn_step(exe):
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, generator=nb.Generator(0)),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 5 * 5, 3, generator=nb.Generator(1)),
    )
    optimizer = nb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @nb.jit
    def step(x, y):
        loss = nb.cross_entropy(nb.sigmoid(model(x)) * 2 - 1, y)
        optimizer.minimize(loss)
        return loss

    step.executors["cpu"] = exe  # the executor @jit runs CPU programs with
    rng = np.random.default_rng(0)
    x = nb.tensor(rng.standard_normal((8, 1, 5, 5)).astype(np.float32))
    y = nb.tensor(rng.integers(0, 3, 8))
    with nb.no_grad():
        losses = [step(x, y).numpy().copy() for _ in range(3)]
    return losses + [p.numpy().copy() for p in model.parameters()]


def test_cnn_training_through_jit_fused_equals_unfused():
    expected = _cnn_step(_exe(False))
    exe = _exe(True)
    for a, e in zip(_cnn_step(exe), expected):
        nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    programs = list(exe._plans.keys())
    assert any(_groups(exe, p) for p in programs)


def _run_both(build, feed, fetch_names=None):
    main = nb.Program()
    with nb.program_guard(main):
        outs = build()
    outs = outs if isinstance(outs, tuple) else (outs,)
    expected = _exe(False).run(main, feed, list(outs), scope=nb.Scope())
    exe = _exe(True)
    actual = exe.run(main, feed, list(outs), scope=nb.Scope())
    for a, e in zip(actual, expected):
        nt.assert_close(a, e)
    return exe, main, actual


def test_mixed_dtypes_comparisons_where_and_casts():
    def build():
        i = nb.static.data("i", [4, 5], dtype="int32")
        f = nb.static.data("f", [4, 5], dtype="float64")
        mask = (i > 2).astype("float32")  # bool then a cast
        mixed = i * 3 + f  # int32 promoted to float64
        chosen = nb.where(i > 1, mixed, nb.exp(mask))  # f32 promoted into f64
        return nb.clip(chosen, min=-1.5, max=7.25) + nb.abs(i - 4), mask

    rng = np.random.default_rng(0)
    feed = {"i": rng.integers(-5, 5, (4, 5)).astype(np.int32), "f": rng.standard_normal((4, 5))}
    exe, main, (out, mask) = _run_both(build, feed)
    assert out.dtype == np.float64 and mask.dtype == np.float32
    ref = np.where(feed["i"] > 1, feed["i"] * 3 + feed["f"], np.exp((feed["i"] > 2) * 1.0))
    nt.assert_close(out, np.clip(ref, -1.5, 7.25) + np.abs(feed["i"] - 4))
    assert len(_groups(exe, main)) == 1


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (4,), ()), ((2, 3, 4), (3, 4), (1, 1, 4)), ((3, 4), (3, 1), (1,)), ((5,), (5,), ())],
    ids=["bias-row", "rows-3d", "column", "flat"],
)
def test_broadcasts_scalars_rows_and_columns(shapes):
    rng = np.random.default_rng(0)
    feed = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip("abc", shapes)}

    def build():
        a, b, c = (nb.static.data(n, s) for n, s in zip("abc", shapes))
        return nb.sigmoid(a * b - c) * 0.25 + a

    _, _, (out,) = _run_both(build, feed)
    a, b, c = (feed[n].astype(np.float64) for n in "abc")
    nt.assert_close(out, (0.25 / (1 + np.exp(-(a * b - c))) + a).astype(np.float32))


def test_unknown_dims_that_broadcast_at_run_time_fall_back_to_single_ops():
    def build():
        a = nb.static.data("a", [-1, 4])
        b = nb.static.data("b", [-1, 4])
        return nb.exp(b) * 2 + 1, nb.exp(b) * 2 + a  # the first never sees a's rows

    rng = np.random.default_rng(0)
    feed = {"a": rng.standard_normal((3, 4)), "b": rng.standard_normal((1, 4))}
    feed = {k: v.astype(np.float32) for k, v in feed.items()}
    _, _, (first, second) = _run_both(build, feed)
    assert first.shape == (1, 4) and second.shape == (3, 4)


def test_an_attr_edited_after_the_kernel_was_made_is_followed():
    # the kernel has the slope and the clip bounds as constants: an edit of the nodes' attrs
    # (as an optimizer's hyperparameters are edited) must not leave it computing the old ones
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [4, 8])
        y = nb.clip(nb.leaky_relu(x * 2.0 - 1.0, 0.1), -0.5, 0.5) + 1.0
    exe = nb.Executor()
    feed = {"x": np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)}
    nodes = {n.op.name: n for n in main.global_block().ops}
    for slope, low in ((0.1, -0.5), (0.3, -0.5), (0.3, -2.0)):
        nodes["leaky_relu"].attrs["negative_slope"] = slope
        nodes["clip"].attrs["min"] = low
        v = feed["x"] * 2 - 1
        want = np.clip(np.where(v > 0, v, slope * v), low, 0.5) + 1
        for _ in range(3):  # (the later runs replay the first)
            nt.assert_close(exe.run(main, feed, [y])[0], want, rtol=1e-6)
    (plan,) = exe._plans[main].values()
    assert any(isinstance(step, FusedGroup) for step in plan)


def test_a_value_a_hand_built_sub_block_reads_directly_is_made_by_its_group():
    # x * 0.5 and exp fuse; the branches read x * 0.5 itself, not through a block input
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [1000])
        h = x * 0.5
        t = nb.exp(h)
        y = nb.cond(nb.sum(x) > 0, lambda a: a * 2.0, lambda a: a - 1.0, [t])
        out = y + t
    (node,) = [n for n in main.global_block().ops if n.op.name == "cond"]
    for idx in (node.attrs["true_block"], node.attrs["false_block"]):
        sub = main.blocks[idx]
        (proxy,) = sub.inputs
        for op in sub.ops:
            op.inputs = [h if v is proxy else v for v in op.inputs]
        sub.inputs = []
    node.inputs = node.inputs[:1]
    main.version += 1
    for sign in (1, -1):  # each branch
        x = np.linspace(-1, 2, 1000).astype(np.float32) * np.float32(sign)
        half = x * np.float32(0.5)
        want = (half * 2 if x.sum() > 0 else half - 1) + np.exp(half)
        for options in ({}, {"reuse_memory": False}):
            (got,) = nb.Executor(**options).run(main, {"x": x}, [out], scope=nb.Scope())
            nt.assert_close(got, want, rtol=1e-6)


def test_a_loop_body_and_its_gradient_fuse_and_equal_the_unfused_loop():
    def build():
        x = nb.static.data("x", [4, 8])
        w = nb.static.data("w", [8, 8])
        w.stop_gradient = False
        body = lambda i, h: (i + 1, nb.tanh(h @ w * 0.9 + x) * 0.5 - h * 0.1)
        _, h = nb.while_loop(lambda i, h: i < 5, body, [0, x], max_iterations=10)
        ((_, gw),) = nb.append_backward(nb.sum(h * h), parameter_list=[w])
        return h, gw

    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    w = np.full((8, 8), 0.05, np.float32) + np.eye(8, dtype=np.float32) * 0.3
    exe, main, _ = _run_both(build, {"x": x, "w": w})
    plans = exe._block_plans.values()
    assert sum(isinstance(s, FusedGroup) for plan in plans for s in plan.steps) >= 2


def test_large_inputs_take_the_parallel_kernel():
    n = 1 << 18
    rng = np.random.default_rng(0)
    feed = {k: rng.standard_normal(n).astype(np.float32) for k in "xwb"}

    def build():
        x, w, b = (nb.static.data(k, [n]) for k in "xwb")
        return nb.tanh(x * w + b) * 0.5 + x

    exe, main, (out,) = _run_both(build, feed)
    x, w, b = (feed[k].astype(np.float64) for k in "xwb")
    nt.assert_close(out, (np.tanh(x * w + b) * 0.5 + x).astype(np.float32))
    (group,) = _groups(exe, main)
    assert group.op_names == ["mul", "add", "tanh", "mul", "add"]
    assert any(mod.parallel.signatures for mod in group.kernels.values())


def test_groups_close_before_an_inplace_write_and_a_foreign_read():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [4])
        t = x * 1  # an intermediate the in-place op may write
        y = nb.exp(t) + 1
        nb.mul_(t, 3.0)  # after this, y's group must not move past the write
        z = y * 2 + t
        s = nb.sum(z)  # a foreign read of z's group
        w = z * s
    ops = nb.graph.needed_ops(main.global_block(), [w])
    steps = fuse(ops, [w])
    groups = [s for s in steps if isinstance(s, FusedGroup)]
    assert [g.op_names for g in groups] == [["mul", "exp", "add"], ["mul", "add"]]
    feed = {"x": np.arange(4, dtype=np.float32)}
    expected = _exe(False).run(main, feed, [w, y], scope=nb.Scope())
    actual = _exe(True).run(main, feed, [w, y], scope=nb.Scope())
    for a, e in zip(actual, expected):
        nt.assert_close(a, e)


def test_siblings_reading_one_value_fuse_unless_a_foreign_read_comes_between():
    main = nb.Program()
    with nb.program_guard(main):
        m = nb.static.data("m", [4, 3], "bool")
        g = nb.static.data("g", [4, 3])
        a = nb.where(m, g, 0.0)  # a gradient masked both ways, as a dynamic RNN's is
        b = nb.where(m, 0.0, g)
        late = nb.cumsum(g, 0)  # made after the group's first member, read by a sibling
        c = nb.where(m, late, 1.0)
        joined = nb.concat([a, b, c])  # the foreign read: the group runs before it
        d = nb.where(m, g, 2.0)  # a sibling after the group closed starts its own
        e = d * joined[:4]
    ops = nb.graph.needed_ops(main.global_block(), [e])
    groups = [s for s in fuse(ops, [e]) if isinstance(s, FusedGroup)]
    assert [g.op_names for g in groups] == [["where", "where", "where"], ["where", "mul"]]
    rng = np.random.default_rng(0)
    feed = {"m": rng.random((4, 3)) > 0.5, "g": rng.standard_normal((4, 3)).astype(np.float32)}
    (expected,) = _exe(False).run(main, feed, [e], scope=nb.Scope())
    (actual,) = _exe(True).run(main, feed, [e], scope=nb.Scope())
    mm, gg = feed["m"], feed["g"]
    ref = np.concatenate([np.where(mm, gg, 0), np.where(mm, 0, gg), np.where(mm, gg.cumsum(0), 1)])
    nt.assert_close(expected, np.where(mm, gg, 2) * ref[:4])
    nt.assert_close(actual, expected)


def test_explain_shows_which_ops_fused():
    main, _, loss = _mlp()
    text = nb.graph.explain(main, [loss])
    fused = [line for line in text.splitlines() if "fused #" in line]
    assert len(fused) >= 4 and all(line.startswith("runs") for line in fused)
    assert "tanh" in "".join(fused)
    unfused = nb.graph.explain(main, [loss], fuse=False)
    assert "fused #" not in unfused


_CACHE_SCRIPT = """
import json, numpy as np, nbflow as nb
from nbflow.graph.fusion import FusedGroup
main = nb.Program()
with nb.program_guard(main):
    x = nb.static.data("x", [5])
    y = nb.tanh(x * 3.5 + 1.25) * x
exe = nb.Executor(fuse=True)
(out,) = exe.run(main, {"x": np.arange(5, dtype=np.float32)}, [y], scope=nb.Scope())
(group,) = [s for s in list(exe._plans[main].values())[0] if isinstance(s, FusedGroup)]
(mod,) = group.kernels.values()
print(json.dumps({"file": mod.__file__, "hits": sum(mod.serial.stats.cache_hits.values()),
                  "misses": sum(mod.serial.stats.cache_misses.values()), "out": out.tolist()}))
"""


def test_a_fused_kernel_compiled_in_one_process_is_a_cache_hit_in_the_next(tmp_path):
    env = dict(os.environ, NBFLOW_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    env.pop("NUMBA_CACHE_DIR", None)
    runs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_CACHE_SCRIPT)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["file"].startswith(str(tmp_path)) and first["file"] == second["file"]
    assert first["misses"] == 1 and first["hits"] == 0
    assert second["hits"] == 1 and second["misses"] == 0
    x = np.arange(5, dtype=np.float64)
    np.testing.assert_allclose(second["out"], np.tanh(x * 3.5 + 1.25) * x, rtol=1e-6)
    assert list(tmp_path.glob("__pycache__/nbflow_fused_*.nbi"))  # numba's index file


def test_an_inplace_write_through_a_view_closes_the_group_reading_its_base():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [2, 3])
        t = x @ nb.tensor(np.eye(3, dtype=np.float32))  # made by an op that does not fuse
        a = t * 2  # a group starts, reading t
        view = nb.reshape(t, 3, 2)
        nb.add_(view, 1.0)  # writes t's memory through the view
        b = a + 1  # must still see t from before the write
    feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    expected, _ = _exe(False).run(main, feed, [b, view], scope=nb.Scope())  # (the write runs)
    actual, _ = _exe(True).run(main, feed, [b, view], scope=nb.Scope())
    nt.assert_close(expected, feed["x"] * 2 + 1)
    nt.assert_close(actual, expected)


def test_a_transposed_product_is_computed_in_its_own_layout():
    from nbflow.graph.rewrite import fold_transposes

    main = nb.Program()
    with nb.program_guard(main):
        a = nb.static.data("a", [5, 3])
        b = nb.static.data("b", [3, 4])
        kept = a @ b  # fetched: its transpose must not replace it
        folded = nb.matrix_transpose(a @ b) * 2
        also = nb.matrix_transpose(kept)
    ops = nb.graph.needed_ops(main.global_block(), [folded, kept, also])
    steps = fold_transposes(ops, [folded, kept, also])
    names = [n.op.name for n in steps]
    assert names.count("matmul") == 2 and names.count("matrix_transpose") == 3
    rng = np.random.default_rng(0)
    feed = {"a": rng.standard_normal((5, 3)), "b": rng.standard_normal((3, 4))}
    feed = {k: v.astype(np.float32) for k, v in feed.items()}
    expected = _exe(False).run(main, feed, [folded, kept, also], scope=nb.Scope())
    exe = _exe(True)
    actual = exe.run(main, feed, [folded, kept, also], scope=nb.Scope())
    for x, e in zip(actual, expected):
        nt.assert_close(x, e)
    nt.assert_close(actual[0], (feed["a"] @ feed["b"]).T * 2)


def _sgd_program(fetch_grad=False, **hyper):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 6])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [6, 8])
        b1 = nb.static.create_parameter("b1", [8], initializer=("constant", 0.1))
        w2 = nb.static.create_parameter("w2", [3, 8])  # used transposed, as nn.Linear does
        loss = nb.cross_entropy(nb.linear(nb.relu(x @ w1 + b1), w2), y)
        optimizer = nb.optim.SGD(**hyper)
        pairs = optimizer.minimize(loss)
    fetch = [loss, "w1", "b1", "w2"] + ([pairs[0][1]] if fetch_grad else [])
    return main, startup, fetch, optimizer


def _sgd_training(exe, steps=4, **options):
    main, startup, fetch, optimizer = _sgd_program(**options)
    scope = nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((10, 6)).astype(np.float32), "y": rng.integers(0, 3, 10)}
    results = []
    for i in range(steps):
        if i == 2:
            optimizer.lr = 0.05  # a schedule rewrites the update ops' attrs
        results.append([np.array(v) for v in exe.run(main, feed, fetch, scope)])  # copies
    return main, results


@pytest.mark.parametrize(
    "options, folds, relu_folds, bias_folds",
    [
        ({"lr": 0.3}, 1, 1, 1),
        ({"lr": 0.3, "weight_decay": 0.1}, 1, 1, 1),
        ({"lr": 0.3, "momentum": 0.9}, 0, 0, 0),  # the velocity needs the gradient itself
        ({"lr": 0.3, "fetch_grad": True}, 0, 1, 1),  # w1's gradient is fetched: kept
    ],
)
def test_sgd_steps_fold_into_their_gradient_products_and_sums(
    options, folds, relu_folds, bias_folds
):
    _, expected = _sgd_training(_exe(False), **options)
    exe = _exe(True)
    main, actual = _sgd_training(exe, **options)
    names = _op_names(exe, main)
    assert names.count("sgd_matmul_update_") == folds  # w1's
    # w2's, with the ReLU's mask on its input gradient: relu(x @ w1 + b1) became one linear op
    assert names.count("sgd_matmul_relu_grad_") == relu_folds
    assert names.count("matmul_relu_grad") == 1 - relu_folds
    assert names.count("sgd_sum_update_") == bias_folds  # b1's gradient: a sum of rows
    assert names.count("sgd_update_") == 3 - folds - relu_folds - bias_folds
    assert names.count("linear") == 2 and "add" not in names
    for a_run, e_run in zip(actual, expected):
        for a, e in zip(a_run, e_run):
            nt.assert_close(a, e, rtol=1e-5, atol=1e-6)
    assert not np.allclose(actual[3][2], actual[1][2])  # the bias did move
    program, _, fetch, _ = _sgd_program(**options)  # explain() says so: gradient and update
    explained = nb.graph.explain(program, fetch)
    assert explained.count("folded into sgd_matmul_update_") == 2 * folds
    # w2's update, its gradient product, the transpose it reads, r's gradient and its product
    assert explained.count("folded into sgd_matmul_relu_grad_") == 5 * relu_folds
    assert explained.count("folded into sgd_sum_update_") == 2 * bias_folds
    assert explained.count("folded into matmul_relu_grad") == 2 * (1 - relu_folds)
    assert explained.count("folded into linear") == 3  # x @ w1, + b1 and the ReLU
    assert "folded" not in nb.graph.explain(program, fetch, fuse=False)
    on_gpu = nb.graph.explain(program, fetch, device="cuda")  # a GPU executor runs it plain
    assert "folded" not in on_gpu and "fused" not in on_gpu and "(sgd_update_, cuda" in on_gpu


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_folded_bias_step_equals_the_sum_and_update_it_replaces(dtype):
    # the folded kernel sums as the sum op does and steps as sgd_update_ does: bit for bit
    rng = np.random.default_rng(5)
    d = rng.standard_normal((37, 3, 5)).astype(dtype)
    b = rng.standard_normal((3, 5)).astype(dtype)
    expected = nb.tensor(b.copy())
    g = nb.sum(nb.tensor(d), axis=(0,))
    nb.sgd_update_(expected, g, g, lr=0.1, weight_decay=0.01)
    actual = nb.tensor(b.copy())
    nb.sgd_sum_update_(actual, nb.tensor(d), lr=0.1, weight_decay=0.01)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    ref = REGISTRY["sgd_sum_update_"].ref(b, d, lr=0.1, weight_decay=0.01)
    nt.assert_close(actual.numpy(), ref, rtol=1e-6, atol=1e-6)
    for p_shape, rows_shape in (((0,), (3, 0)), ((2,), (0, 2))):  # no parameter, no rows
        p = nb.ones(p_shape, dtype=dtype)
        nb.sgd_sum_update_(p, nb.zeros(rows_shape, dtype=dtype), lr=0.1, weight_decay=0.5)
        np.testing.assert_array_equal(p.numpy(), np.full(p_shape, 0.95, dtype))
    with pytest.raises(nb.ShapeError, match="leading axes"):
        nb.sgd_sum_update_(nb.ones((3,)), nb.ones((2, 4)), lr=0.1)


def test_matmul_relu_grad_equals_the_product_then_relu_grad():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((4, 6))
    b[0, 0] = np.inf  # an infinite product under the mask gives 0, as relu_grad does
    r = rng.standard_normal((5, 6))
    r[1, 2] = np.nan
    ta, tb, tr = (nb.tensor(v.astype(np.float32)) for v in (a, b, r))
    expected = nb.relu_grad(tr, nb.matmul(ta, tb)).numpy()
    np.testing.assert_array_equal(nb.matmul_relu_grad(tr, ta, tb).numpy(), expected)
    ref = REGISTRY["matmul_relu_grad"].ref(tr.numpy(), ta.numpy(), tb.numpy())
    nt.assert_close(expected, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(nb.ShapeError, match="product's shape"):
        nb.matmul_relu_grad(tr[:, :5], ta, tb)


@pytest.mark.parametrize("fetch_product", [False, True])
def test_a_relu_grad_folds_into_its_product_unless_the_product_is_read(fetch_product):
    main = nb.Program()
    with nb.program_guard(main):
        r, a, b = (nb.static.data(n, s) for n, s in (("r", [3, 5]), ("a", [3, 4]), ("b", [4, 5])))
        m = nb.matmul(a, b)
        g = nb.relu_grad(r, m)
    rng = np.random.default_rng(4)
    feed = {
        n: rng.standard_normal(s).astype(np.float32)
        for n, s in (("r", (3, 5)), ("a", (3, 4)), ("b", (4, 5)))
    }
    fetch = [g, m] if fetch_product else [g]
    results = [exe.run(main, feed, fetch, scope=nb.Scope()) for exe in (_exe(False), _exe(True))]
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, expected)
    nt.assert_close(results[0][0], np.where(feed["r"] > 0, feed["a"] @ feed["b"], 0), atol=1e-5)
    exe = _exe(True)
    exe.run(main, feed, fetch, scope=nb.Scope())
    assert ("matmul_relu_grad" in _op_names(exe, main)) is not fetch_product


@pytest.mark.parametrize(
    "axis, keepdims, folds",
    [((0,), False, True), ((0, 1), False, True), ((1,), False, False), ((0,), True, False)],
)
def test_only_a_sum_over_leading_axes_folds_into_the_bias_step(axis, keepdims, folds):
    shape = np.sum(np.zeros((6, 4, 4)), axis=axis, keepdims=keepdims).shape
    main = nb.Program()
    with nb.program_guard(main):
        d = nb.static.data("d", [6, 4, 4])
        b = nb.static.create_parameter("b", list(shape))
        g = nb.sum(d, axis=axis, keepdims=keepdims)
        nb.sgd_update_(b, g, g, lr=0.5)
    feed = {"d": np.random.default_rng(2).standard_normal((6, 4, 4)).astype(np.float32)}
    results = []
    for exe in (_exe(False), _exe(True)):
        scope = nb.Scope()
        scope["b"] = nb.ones(shape)
        results.append(np.array(exe.run(main, feed, ["b"], scope)[0]))
    expected = 1 - 0.5 * feed["d"].sum(axis=axis, keepdims=keepdims, dtype=np.float64)
    nt.assert_close(results[0], expected.astype(np.float32), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(results[1], results[0])
    assert ("sgd_sum_update_" in _op_names(exe, main)) is folds


@pytest.mark.parametrize("written_between", [False, True])
def test_an_sgd_step_is_not_folded_past_a_write_to_its_operands(written_between):
    # folded, the product's operands are read where the update was: a write to one of them
    # in between (here through the view the product reads) keeps the step as it was
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [4, 3])
        v = nb.static.data("v", [4, 2])
        w = nb.static.create_parameter("w", [3, 2], initializer=("constant", 0.5))
        u = x * 1.0
        g = nb.matmul(nb.matrix_transpose(u), v)
        if written_between:
            nb.add_(u, 1.0)
        nb.sgd_update_(w, g, g, lr=0.1)
    rng = np.random.default_rng(3)
    feed = {"x": rng.standard_normal((4, 3)), "v": rng.standard_normal((4, 2))}
    feed = {k: a.astype(np.float32) for k, a in feed.items()}
    results = []
    for exe in (_exe(False), _exe(True)):
        scope = nb.Scope()
        scope["w"] = nb.full((3, 2), 0.5)
        results.append(np.array(exe.run(main, feed, ["w", u], scope)[0]))  # (u keeps add_)
    nt.assert_close(results[0], 0.5 - 0.1 * feed["x"].T @ feed["v"], atol=1e-6)
    nt.assert_close(results[1], results[0], atol=1e-6)
    names = _op_names(exe, main)
    assert ("sgd_matmul_update_" in names) is not written_between


def _relu_layer_program(case):
    """A linear layer, its ReLU and an SGD step, built with the static API; `case` adds what
    keeps the ReLU out of the layer (fold: nothing)."""
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 6])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [8, 6])
        b1 = nb.static.create_parameter("b1", [8], initializer=("constant", 0.1))
        w2 = nb.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8))  # a constant
        pre = nb.linear(x, w1, b1)
        h = nb.relu(pre)
        if case == "pre read again":
            h = h + pre * 0.5
        logits = nb.linear(h, w2)
        if case == "relu output written":  # (no gradient reads h: w2 is a constant) the
            nb.add_(h, 1.0)  # ReLU gradient would see this write if it read h
        loss = nb.cross_entropy(logits, y)
        nb.optim.SGD(lr=0.3).minimize(loss)
    fetch = [loss, "w1", "b1"]
    fetch += [pre] if case == "pre fetched" else [h] if case == "relu output written" else []
    return main, startup, fetch


def _linear_activations(exe, program):
    return [
        s.node.attrs["activation"]
        for s in _steps(exe, program)
        if isinstance(s, NodeStep) and s.node.op.name == "linear"
    ]


@pytest.mark.parametrize("case", ["fold", "pre fetched", "pre read again", "relu output written"])
def test_a_relu_after_a_linear_layer_rides_its_bias_pass(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 6)).astype(np.float32)
    x[0, 0] = np.nan  # a NaN row: its ReLU gradient is 0 both ways
    feed = {"x": x, "y": rng.integers(0, 3, 10)}
    results, executors = [], []
    for on in (False, True):
        main, startup, fetch = _relu_layer_program(case)
        exe, scope = _exe(on), nb.Scope()
        nb.manual_seed(0)
        exe.run(startup, scope=scope)
        results.append([[np.array(v) for v in exe.run(main, feed, fetch, scope)] for _ in range(3)])
        executors.append((exe, main, fetch))
    for a_run, e_run in zip(results[1], results[0]):
        for a, e in zip(a_run, e_run):
            np.testing.assert_array_equal(a, e)  # the same kernels and sums: bitwise equal
    assert not np.allclose(results[1][2][1], results[1][0][1])  # the weights did move
    exe, main, fetch = executors[1]
    folded = case == "fold"
    assert _linear_activations(exe, main).count("relu") == int(folded)
    note = nb.graph.explain(main, fetch)
    assert ("folded into linear" in note) is folded
    if folded:  # the ReLU gradient (in its product's step: matmul_relu_grad) reads h, not pre
        nodes = [s.node for s in _steps(exe, main) if isinstance(s, NodeStep)]
        (layer,) = [n for n in nodes if n.op.name == "linear" and n.attrs["activation"] == "relu"]
        (mask,) = [n for n in nodes if n.op.name in ("relu_grad", "matmul_relu_grad")]
        assert mask.inputs[0] is layer.outputs[0]


def _affine_program(case, dtype):
    """`x @ w + b` and its ReLU in a static program, x (batch, 5, 4): `case` says how the
    bias is added, or what keeps the sum out of a linear op."""
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 5, 4], dtype=dtype)
        w = nb.static.create_parameter("w", [4, 3], dtype=dtype)
        b = nb.static.create_parameter("b", [1, 3] if case == "2-D bias" else [3], dtype=dtype)
        product = x @ w
        total = b + product if case == "bias first" else product + b
        out = nb.relu(total) * 2
        if case == "product read again":
            out = out + product
    fetch = [out] + ([product] if case == "product fetched" else [])
    return main, startup, fetch


@pytest.mark.parametrize(
    "case", ["fold", "bias first", "2-D bias", "product fetched", "product read again"]
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_product_plus_a_bias_runs_as_a_linear_layer(case, dtype):
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((2, 5, 4)).astype(dtype)}
    w = rng.standard_normal((4, 3)).astype(dtype)
    b = rng.standard_normal((1, 3) if case == "2-D bias" else 3).astype(dtype)
    results = []
    for on in (False, True):
        main, startup, fetch = _affine_program(case, dtype)
        exe, scope = _exe(on), nb.Scope()
        scope["w"], scope["b"] = nb.tensor(w), nb.tensor(b)
        results.append(exe.run(main, feed, fetch, scope))
    product = feed["x"] @ w
    expected = 2 * np.maximum(product + b, 0) + (product if case == "product read again" else 0)
    np.testing.assert_allclose(results[0][0], expected, rtol=1e-6, atol=1e-6)
    for actual, unfolded in zip(results[1], results[0]):
        np.testing.assert_array_equal(actual, unfolded)  # the same GEMM and bias pass
    folded = case in ("fold", "bias first")
    assert ("linear" in _op_names(exe, main)) is folded
    assert _linear_activations(exe, main) == (["relu"] if folded else [])
    assert nb.graph.explain(main, fetch).count("folded into linear") == 3 * folded


def test_a_model_calling_relu_on_its_layer_runs_them_as_one_op():
    from nbflow import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            g = nb.Generator(0)
            self.fc1, self.fc2 = nn.Linear(6, 8, generator=g), nn.Linear(8, 3, generator=g)

        def forward(self, x):
            return self.fc2(nb.relu(self.fc1(x)))

    model = Net()
    x = nb.tensor(np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32))
    step = nb.jit(lambda x: model(x))
    exe = nb.Executor(fuse=True)
    step.executor = exe
    with nb.no_grad():
        eager = model(x).numpy()
        graph = step(x).numpy()
    np.testing.assert_array_equal(graph, eager)
    (program,) = [t.program for t in step.cache.values()]
    assert _linear_activations(exe, program) == ["relu", "none"]


def test_threads_are_kept_only_while_they_are_faster():
    from nbflow.graph.fusion import _Chooser

    chooser = _Chooser()
    picks = []
    for _ in range(2 * _Chooser.TRIALS + 4):
        parallel = chooser.parallel()
        picks.append(parallel)
        chooser.record(parallel, 0.008 if parallel else 0.002)  # threads losing (busy cores)
    assert picks[: 2 * _Chooser.TRIALS] == [True, False] * _Chooser.TRIALS
    assert not any(picks[2 * _Chooser.TRIALS :])
    while chooser.calls % _Chooser.RETRY:  # until the next trials
        chooser.record(chooser.parallel(), 0.002)
    for _ in range(2 * _Chooser.TRIALS):  # the cores are free again: threads win
        parallel = chooser.parallel()
        chooser.record(parallel, 0.001 if parallel else 0.002)
    assert chooser.parallel()


def test_of_three_kernels_the_fastest_is_kept():
    from nbflow.graph.fusion import _Chooser

    chooser, seconds = _Chooser(3), [0.004, 0.001, 0.003]  # (serial, parallel, filled)
    picks = []
    for _ in range(3 * _Chooser.TRIALS + 5):
        choice = chooser.pick()
        picks.append(choice)
        chooser.record(choice, seconds[choice])
    assert picks[: 3 * _Chooser.TRIALS] == [2, 1, 0] * _Chooser.TRIALS  # each tried in turn
    assert set(picks[3 * _Chooser.TRIALS :]) == {1}
    while chooser.calls % _Chooser.RETRY:
        chooser.record(chooser.pick(), 0.001)
    seconds = [0.004, 0.003, 0.001]  # timed again: now the buffered threads win
    for _ in range(3 * _Chooser.TRIALS):
        choice = chooser.pick()
        chooser.record(choice, seconds[choice])
    assert chooser.pick() == 2


def test_a_body_numba_cannot_compile_still_raises_the_typed_error_when_fused():
    @nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=None)
    def user_bad_fused_body(x, y):
        return x.no_such_attribute + y

    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3])
        out = user_bad_fused_body(x * 2, x) + 1  # fuses with its neighbours
    feed = {"x": np.ones(3, np.float32)}
    exe = _exe(True)
    for _ in range(2):  # the second run goes straight to the single ops
        with pytest.raises(KernelCompileError, match=r"user_bad_fused_body.*float32"):
            exe.run(main, feed, [out], scope=nb.Scope())
    assert _groups(exe, main)[0].broken


@pytest.mark.parametrize("n", [1000, 1 << 18])  # serial, and past the parallel threshold
def test_a_fused_group_writing_into_a_dying_input_matches_numpy(n):
    # h dies at the group, so the memory pass lends its buffer to the group's output: the
    # kernel that runs is the loop reading and writing h through one name (`serial_in{i}`)
    main = nb.Program()
    with nb.program_guard(main):
        m = nb.static.data("m", (-1, 2))
        w = nb.static.data("w", (-1,))
        h = nb.sum(m, axis=1)
        y = nb.tanh(h * w + 0.25) * 0.5 + h
    exe = nb.Executor(poison_freed=True)
    plan = [str(s) for s in exe._plan(main, ("m", "w"), [y])]
    group = next(i for i, s in enumerate(plan) if s.startswith("<fused"))
    assert plan[group - 1].startswith("<lend")  # h's buffer goes to the group's output
    rng = np.random.default_rng(3)
    feed = {"m": rng.standard_normal((n, 2)).astype("f4"), "w": rng.standard_normal(n).astype("f4")}
    hv = feed["m"].sum(axis=1)
    for _ in range(3):  # (the first runs time the serial and parallel kernels against each other)
        (got,) = exe.run(main, feed, [y])
        nt.assert_close(got, np.tanh(hv * feed["w"] + 0.25) * 0.5 + hv, rtol=1e-5, atol=1e-6)
    # the loops reading h through the output ran (past the threshold the parallel one too)
    (fused,) = _groups(exe, main)
    (mod,) = fused.kernels.values()
    h_index = next(i for i, v in enumerate(fused.inputs) if v is h)
    loops = ("serial", "parallel")
    ran = [name for name in dir(mod) if name.startswith(loops) and getattr(mod, name).signatures]
    assert sorted(ran) == sorted(f"{loop}_in{h_index}" for loop in loops[: 1 + (n > 1000)])


# ---------------------------------------------------------------- trailing reductions


def _reduced_program(red, axis, keepdims):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 5, 7])
        b = nb.static.data("b", [7])
        d = nb.tanh(x * 2.0 + b)  # a bias row: materialised for the reduction's kernel
        r = getattr(nb, red)(d * d - x, axis=axis, keepdims=keepdims)
    return main, d, r


@pytest.mark.parametrize("red", ["sum", "mean"])
@pytest.mark.parametrize(
    "axis, keepdims",
    [(None, False), (-1, False), ((1, 2), True), (0, False), ((0, 1), False), ((0, 1, 2), True)],
)
def test_a_trailing_sum_or_mean_fuses_and_equals_the_unfused_op_bit_for_bit(red, axis, keepdims):
    main, d, r = _reduced_program(red, axis, keepdims)
    rng = np.random.default_rng(3)
    exe = _exe(True)
    for batch, fetch in ((6, [r]), (6, [r, d]), (1, [r, d]), (0, [r])):  # (0: empty)
        feed = {"x": rng.standard_normal((batch, 5, 7)), "b": rng.standard_normal(7)}
        feed = {k: v.astype(np.float32) for k, v in feed.items()}
        expected = _exe(False).run(main, feed, fetch, scope=nb.Scope())
        actual = exe.run(main, feed, fetch, scope=nb.Scope())
        for a, e in zip(actual, expected):
            np.testing.assert_array_equal(a, e)  # the sum kernels' own order of adds
        if batch:
            x = feed["x"].astype(np.float64)
            ref = getattr(np, red)(
                np.tanh(x * 2 + feed["b"]) ** 2 - x, axis=axis, keepdims=keepdims
            )
            nt.assert_close(actual[0], ref.astype(np.float32), rtol=1e-5, atol=1e-5)
    groups = [g for p in exe._plans[main].values() for g in p if isinstance(g, FusedGroup)]
    assert groups and all(g.op_names[-1] == red and g.reduction is not None for g in groups)
    assert f"+{red})" in nb.graph.explain(main, [r])


@pytest.mark.parametrize("case", ["middle axis", "value fetched", "value read again", "int"])
def test_a_reduction_stays_its_own_op_where_it_cannot_fuse(case):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [4, 5, 6])
        v = nb.exp(x) * 0.5
        if case == "int":
            v = nb.cast(v > 1.0, "int32") * 3
        r = nb.sum(v, axis=1 if case == "middle axis" else -1)
        fetch = {"value fetched": [r, v], "value read again": [r, v + 1.0]}.get(case, [r])
    feed = {"x": np.random.default_rng(4).standard_normal((4, 5, 6)).astype(np.float32)}
    expected = _exe(False).run(main, feed, fetch, scope=nb.Scope())
    exe = _exe(True)
    actual = exe.run(main, feed, fetch, scope=nb.Scope())
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)
    assert _groups(exe, main) and all(g.reduction is None for g in _groups(exe, main))
    assert "sum" in _op_names(exe, main)


@pytest.mark.parametrize("axis, shape", [(-1, (3, 2 * SUM_BLOCK + 3)), (0, (5, 2 * CHUNK + 3))])
def test_the_serial_and_parallel_reductions_agree_bit_for_bit(axis, shape):
    # large reductions run on threads or not, whichever is faster: both must give the sum
    # op's result (long rows in several blocks and a tail; columns in several slices)
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", list(shape))
        r = nb.sum(nb.tanh(x) * x, axis=axis)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    exe = _exe(True)
    exe.run(main, {"x": x}, [r], scope=nb.Scope())
    (group,) = _groups(exe, main)
    ((mask, mod),) = group.kernels.items()
    assert mask == "a"
    expected = nb.sum(nb.tanh(nb.tensor(x)) * nb.tensor(x), axis=axis).numpy()  # eager
    rows, cols = shape  # (rows: reduced along, or reduced over for columns)
    kernels = [mod.serial, mod.parallel] + ([mod.parallel_filled] if axis == -1 else [])
    for kernel in kernels:
        out = np.empty(expected.size, np.float32)
        kernel(x.reshape(-1), out, rows, cols)
        np.testing.assert_array_equal(out, expected)
    x64 = x.astype(np.float64)
    ref = np.sum(np.tanh(x64) * x64, axis=axis).astype(np.float32)
    nt.assert_close(expected, ref, rtol=1e-5, atol=1e-4)


def _mse_training(exe, steps=3):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        y = nb.static.data("y", [-1, 1])
        w = nb.static.create_parameter("w", [4, 1])
        b = nb.static.create_parameter("b", [1], initializer=("constant", 0.5))
        error = x @ w + b - y
        loss = nb.mean(error * error)  # the difference is read again by the gradient
        for p, g in nb.append_backward(loss):
            nb.sub_(p, g * 0.1)
    scope = nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(6)
    feed = {"x": rng.standard_normal((16, 4)), "y": rng.standard_normal((16, 1))}
    feed = {k: v.astype(np.float32) for k, v in feed.items()}
    losses = [exe.run(main, feed, [loss, "w", "b"], scope)[0] for _ in range(steps)]
    return main, losses + [scope.value("w").copy(), scope.value("b").copy()]


def test_an_mse_training_step_fuses_its_loss_and_equals_unfused():
    _, expected = _mse_training(_exe(False))
    exe = _exe(True)
    main, actual = _mse_training(exe)
    for a, e in zip(actual, expected):
        nt.assert_close(a, e, rtol=1e-6, atol=1e-7)
    assert actual[2] < actual[0]  # it trains
    assert any(g.op_names[-1] == "mean" for g in _groups(exe, main))


def test_a_value_read_outside_for_its_shape_alone_is_not_stored():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3, 4])
        v = nb.exp(x) * 2.0  # read after the group by zeros_like alone: for its shape
        total = nb.sum(v)
        out = nb.zeros_like(v) + total
    feed = {"x": np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)}
    expected = _exe(False).run(main, feed, [out], scope=nb.Scope())
    exe = _exe(True)
    actual = exe.run(main, feed, [out], scope=nb.Scope())
    np.testing.assert_array_equal(actual[0], expected[0])
    (group,) = [g for g in _groups(exe, main) if g.reduction is not None]
    assert [v.name for v in group.shaped] == [v.name] and len(group.outputs) == 1


_CHAIN_OPS = {
    "mul": lambda a, b: a * b,
    "sub": lambda a, b: a - b,
    "tanh": lambda a, b: nb.tanh(a) + b,
    "exp": lambda a, b: nb.exp(a * 0.25) * b,
    "where": lambda a, b: nb.where(a > b, a, b * 0.5),
}


@given(
    shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
    chain=st.lists(st.sampled_from(sorted(_CHAIN_OPS)), min_size=1, max_size=3),
    red=st.sampled_from(["sum", "mean"]),
    axis_pick=st.integers(0, 7),
    keepdims=st.booleans(),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_a_random_chain_and_reduction_fused_equals_unfused_bit_for_bit(
    shape, chain, red, axis_pick, keepdims, dtype, seed
):
    # the reduction over any axes (leading, trailing, all or middle ones: fused or not), the
    # chain's value also fetched or not; fused and unfused agree exactly
    ndim = len(shape)
    axes = [a for a in range(ndim) if axis_pick >> a & 1]
    axis = None if axis_pick == 7 else tuple(axes)
    main = nb.Program()
    with nb.program_guard(main):
        a = nb.static.data("a", shape, dtype)
        b = nb.static.data("b", shape, dtype)
        v = a
        for name in chain:
            v = _CHAIN_OPS[name](v, b)
        r = getattr(nb, red)(v, axis=axis, keepdims=keepdims)
    rng = np.random.default_rng(seed)
    feed = {n: rng.standard_normal(shape).astype(dtype) for n in "ab"}
    for fetch in ([r], [r, v]):
        expected = _exe(False).run(main, feed, fetch, scope=nb.Scope())
        actual = _exe(True).run(main, feed, fetch, scope=nb.Scope())
        for got, want in zip(actual, expected):
            np.testing.assert_array_equal(got, want)


def test_batch_norm_with_a_relu_is_one_op_and_matches_the_two():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 5, 5))
    w, b = rng.standard_normal(4), rng.standard_normal(4)
    g = rng.standard_normal(x.shape)
    leaves = [nb.tensor(a, requires_grad=True) for a in (x, w, b)]
    fused = nb.batch_norm_train_affine(*leaves, activation="relu")
    two = nb.relu(nb.batch_norm_train_affine(*leaves))
    nt.assert_close(fused, nb.batch_norm_train_affine.ref(x, w, b, activation="relu"))
    np.testing.assert_array_equal(fused.numpy(), two.numpy())
    assert (fused.numpy() == 0).any() and (fused.numpy() > 0).any()
    grads = [nb.autograd.grad(y, leaves, nb.tensor(g)) for y in (fused, two)]
    for a, e in zip(*grads):  # (the masked sums may run in another order)
        nt.assert_close(a, e.numpy(), rtol=1e-12, atol=1e-12)
    # the masked gradient op against its reference, and its own gradient (second order)
    mask = fused.numpy()
    dx, dw, db = nb.batch_norm_train_affine_grad(nb.tensor(g), *leaves[:2], nb.tensor(mask))
    ref = nb.batch_norm_train_affine_grad.ref(g, x, w, mask)
    for a, e in zip((dx, dw, db), ref):
        nt.assert_close(a, e)
    nt.gradcheck(
        lambda g, x, w: nb.batch_norm_train_affine_grad(g, x, w, nb.tensor(mask))[0],
        [nb.tensor(g, requires_grad=True), *leaves[:2]],
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_an_eval_batch_norm_with_a_relu_is_one_op_and_matches_the_two(dtype):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 3, 3)).astype(dtype)
    x[0, 1, 0, 0] = np.nan  # NaN stays NaN through the ReLU, as relu's body keeps it
    stats = [rng.standard_normal(4).astype(dtype), rng.uniform(0.5, 2, 4).astype(dtype)]
    leaves = [nb.tensor(a, requires_grad=True) for a in (x, *rng.standard_normal((2, 4)))]
    x_, w, b = leaves
    args = (x_, *map(nb.tensor, stats), nb.astype(w, dtype), nb.astype(b, dtype))
    fused = nb.batch_norm_eval(*args, activation="relu")
    two = nb.relu(nb.batch_norm_eval(*args))
    nt.assert_close(fused, nb.batch_norm_eval.ref(x, *stats, *args[3:], activation="relu"))
    np.testing.assert_array_equal(fused.numpy(), two.numpy())  # the same arithmetic
    assert (fused.numpy() == 0).any() and (fused.numpy() > 0).any()
    g = nb.tensor(rng.standard_normal(x.shape).astype(dtype))
    live = [t for t in leaves if t is not x_] + [x_]
    grads = [nb.autograd.grad(y, live, g) for y in (fused, two)]
    for a, e in zip(*grads):
        nt.assert_close(a, e.numpy(), rtol=1e-6, atol=1e-6)
    # graph mode folds an eval-mode model's ReLU into its batch norm, the outputs the eager ones
    from nbflow import nn

    net = nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, generator=nb.Generator(0)))
    net.append(nn.BatchNorm2d(4)).append(nn.ReLU()).eval()
    net[1].running_var.copy_(nb.tensor(stats[1].astype(np.float32)))
    clean = nb.tensor(np.nan_to_num(x).astype(np.float32))
    step, exe = nb.jit(lambda x: net(x)), nb.Executor(fuse=True)
    step.executor = exe
    with nb.no_grad():
        np.testing.assert_array_equal(step(clean).numpy(), net(clean).numpy())
    (program,) = [t.program for t in step.cache.values()]
    nodes = [s.node for s in _steps(exe, program) if isinstance(s, NodeStep)]
    assert [n.attrs["activation"] for n in nodes if n.op.name == "batch_norm_eval"] == ["relu"]
    assert "relu" not in [n.op.name for n in nodes]


def _conv_bn_relu_step(executor):
    """A conv, training batch norm, ReLU and linear model and its @jit SGD step on `executor`."""
    from nbflow import nn

    gen = nb.Generator(0)
    net = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1, generator=gen),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 5 * 5, 3, generator=gen),
    )
    optimizer = nb.optim.SGD(net.parameters(), lr=0.1)

    @nb.jit
    def train(x, y):
        loss = nb.cross_entropy(net(x), y)
        optimizer.minimize(loss)
        return loss

    train.executors["cpu"] = executor
    return net, train


def test_a_relu_after_training_batch_norm_rides_its_pass():
    rng = np.random.default_rng(5)
    x = nb.tensor(rng.standard_normal((6, 2, 5, 5)).astype(np.float32))
    y = nb.tensor(rng.integers(0, 3, 6))
    losses, weights, executors = [], [], []
    for on in (False, True):
        exe = _exe(on)
        net, train = _conv_bn_relu_step(exe)
        with nb.no_grad():
            losses.append([float(train(x, y)) for _ in range(3)])
        weights.append(net[0].weight.numpy())
        (program,) = [t.program for t in train.cache.values()]
        executors.append((exe, program))
    # the same arithmetic, but for the order of the masked gradient's sums
    nt.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-6)
    nt.assert_close(weights[1], weights[0], rtol=1e-5, atol=1e-6)
    assert losses[1][2] < losses[1][0]
    exe, program = executors[1]
    assert "relu" not in _op_names(exe, program)
    (norm,) = [
        s.node
        for s in _steps(exe, program)
        if isinstance(s, NodeStep) and s.node.op.name == "batch_norm_train_affine"
    ]
    assert norm.attrs["activation"] == "relu"
    # and the ReLU's gradient is applied in the batch norm gradient's own pass
    assert "relu_grad" not in _op_names(exe, program)
    (grad,) = [
        s.node
        for s in _steps(exe, program)
        if isinstance(s, NodeStep) and s.node.op.name == "batch_norm_train_affine_grad"
    ]
    assert grad.inputs[3] is norm.outputs[0]
