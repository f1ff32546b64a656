"""Control flow: nbflow.cond and nbflow.while_loop in eager and graph mode, their gradients
(against finite differences and against the eager mode, a Python loop), nested control flow,
printing, verify, pruning and explain over sub-blocks."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import testing as nt

RNG = np.random.default_rng(0)


def _branchy(x, w):
    """A cond whose branches differ in ops and in the values they read."""
    return nb.cond(
        nb.sum(x) > 0,
        lambda a: nb.tanh(a @ w),
        lambda a: a * w[0] - 1.0,
        [x],
    )


def _loop(x, w):
    """h <- tanh(h @ w) + x, four times: a while_loop whose body reads outer values."""

    def body(i, h):
        return i + 1, nb.tanh(h @ w) + x

    _, h = nb.while_loop(lambda i, h: i < 4, body, [0, x], max_iterations=10)
    return h


def _nested(x, w):
    """A cond inside a while (each branch taken at least once, whatever the sign of x)."""

    def body(i, h):
        pred = nb.logical_xor(nb.sum(h) > 0, i == 2)
        h2 = nb.cond(pred, lambda a: nb.tanh(a @ w), lambda a: a * 0.5 - 0.1, [h])
        return i + 1, h2 + x

    _, h = nb.while_loop(lambda i, h: i < 5, body, [0, x], max_iterations=10)
    return h


def _inputs(sign=1.0):
    x = sign * np.abs(RNG.standard_normal((2, 3)))
    w = RNG.standard_normal((3, 3)) * 0.5
    return x, w


def _leaves(*arrays):
    return [nb.tensor(a, requires_grad=True) for a in arrays]


# ---------------------------------------------------------------- eager mode


def test_eager_cond_runs_the_chosen_branch_and_records_only_it():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = nb.cond(nb.sum(x) > 0, lambda a: a * 3.0, lambda a: a * 5.0, [x])
    nb.sum(y).backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert nb.cond(False, lambda: 1, lambda: 2) == 2  # a Python bool picks directly


def test_eager_while_loop_is_a_python_loop():
    i, s = nb.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), [nb.tensor(0), 0])
    assert int(i) == 5 and int(s) == 10
    single = nb.while_loop(lambda v: v < 100, lambda v: v * 3, nb.tensor(1))
    assert int(single) == 243


def test_max_iterations_raises_a_typed_error_in_both_modes():
    def f(x):
        return nb.while_loop(lambda v: nb.sum(v) > -1, lambda v: v + 1.0, x, max_iterations=3)

    x = np.zeros(2, np.float32)
    with pytest.raises(nb.LoopLimitError, match="max_iterations=3"):
        f(nb.tensor(x))
    with pytest.raises(nb.LoopLimitError, match=r"while \(created at test_control_flow.py:\d+"):
        nb.jit(f)(x)
    # exactly max_iterations iterations are allowed
    out = nb.jit(lambda x: nb.while_loop(lambda v: v < 3, lambda v: v + 1, x, max_iterations=3))
    assert int(out(np.int64(0))) == 3


def test_predicates_must_be_one_bool():
    x = nb.tensor([1.0, 2.0])
    with pytest.raises(nb.DTypeError, match="bool"):
        nb.cond(nb.sum(x), lambda: x, lambda: x)
    with pytest.raises(nb.ShapeError, match="one element"):
        nb.cond(x > 0, lambda: x, lambda: x)
    with pytest.raises(nb.ShapeError, match="one element"):
        nb.jit(lambda x: nb.cond(x > 0, lambda: x, lambda: x))(x)


# ---------------------------------------------------------------- graph mode: forward


def _program(fn, *example):
    main = nb.Program()
    with nb.program_guard(main):
        xs = [nb.static.data(f"in{i}", a.shape, a.dtype) for i, a in enumerate(example)]
        out = fn(*xs)
    return main, xs, out


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_graph_cond_matches_eager_for_either_branch(sign):
    x, w = _inputs(sign)
    main, _, out = _program(_branchy, x, w)
    (got,) = nb.Executor().run(main, {"in0": x, "in1": w}, [out])
    expected = np.tanh(x @ w) if x.sum() > 0 else x * w[0] - 1.0
    nt.assert_close(got, expected)


def test_branches_of_different_shapes_give_unknown_dims_resized_at_run_time():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [4, 3])
        flag = nb.static.data("flag", [], dtype="bool")
        y = nb.cond(flag, lambda a: a[:2], lambda a: a * 2.0, [x])
    assert y.shape == (-1, 3)
    exe, xv = nb.Executor(), RNG.standard_normal((4, 3)).astype(np.float32)
    (short,) = exe.run(main, {"x": xv, "flag": np.bool_(True)}, [y])
    (full,) = exe.run(main, {"x": xv, "flag": np.bool_(False)}, [y])
    nt.assert_close(short, xv[:2])
    nt.assert_close(full, xv * 2)


def test_branches_must_agree_in_number_dtype_and_rank():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(nb.ShapeError, match="true_fn returns 2 values, false_fn 1"):
        _program(lambda a: nb.cond(nb.sum(a) > 0, lambda: (a, a), lambda: a), x)
    with pytest.raises(nb.DTypeError, match="result 0 is float32 in true_fn, float64"):
        _program(lambda a: nb.cond(nb.sum(a) > 0, lambda: a, lambda: nb.cast(a, "float64")), x)
    with pytest.raises(nb.ShapeError, match="ranks must agree"):
        _program(lambda a: nb.cond(nb.sum(a) > 0, lambda: a, lambda: nb.sum(a, axis=0)), x)
    with pytest.raises(nb.DTypeError, match="loop var 0 is int64, the body returns float32"):
        _program(lambda a: nb.while_loop(lambda i: i < 3, lambda i: i * 0.5, 0), x)


def test_graph_while_matches_eager_for_zero_one_and_many_iterations():
    def f(x, w, n):
        def body(i, h):
            return i + 1, nb.tanh(h @ w) + x

        return nb.while_loop(lambda i, h: i < n, body, [0, x])[1]

    x, w = _inputs()
    main, _, out = _program(f, x, w, np.int64(0))
    exe = nb.Executor()
    for n in (0, 1, 6):
        (got,) = exe.run(main, {"in0": x, "in1": w, "in2": np.int64(n)}, [out])
        h = x
        for _ in range(n):
            h = np.tanh(h @ w) + x
        nt.assert_close(got, h)


def test_loop_vars_that_change_shape_get_unknown_dims():
    def grow(x):
        return nb.while_loop(
            lambda v: nb.sum(v) < 20.0, lambda v: nb.concat(v, v, axis=0), x, max_iterations=8
        )

    main, _, out = _program(grow, np.ones((1, 2), np.float32))
    assert out.shape == (-1, 2)
    (got,) = nb.Executor().run(main, {"in0": np.ones((1, 2), np.float32)}, [out])
    assert got.shape == (16, 2)


def test_printer_shows_sub_blocks_with_their_inputs_and_results():
    x, w = _inputs()
    main, _, out = _program(_nested, x, w)
    text = str(main)
    assert "= while(" in text and "cond_block=1, body_block=2, max_iterations=10" in text
    assert "block 2 (parent 0)(%loop" in text
    assert "block 3 (parent 2)(" in text  # the cond nested in the body
    assert "  return %" in text
    nb.graph.verify(main)


def test_prune_and_explain_keep_the_sub_blocks():
    x, w = _inputs()
    main, _, out = _program(_nested, x, w)
    with nb.program_guard(main):
        unused = nb.exp(main.global_block().var("in0"))
    pruned = nb.graph.prune(main, [out])
    assert [n.op.name for n in pruned.global_block().ops] == ["full", "while"]
    (got,) = nb.Executor().run(pruned, {"in0": x, "in1": w}, [out])
    nt.assert_close(got, nb.jit(_nested)(x, w).numpy())
    text = nb.graph.explain(main, [out])
    assert "body_block 2:" in text and "true_block 3:" in text
    assert f"pruned                   %{unused.name}" in text


def test_verify_rejects_a_sub_block_that_does_not_fit_its_op():
    x, w = _inputs()
    main, _, out = _program(_branchy, x, w)
    block = main.blocks[1]
    block.outputs = block.outputs * 2
    with pytest.raises(nb.ProgramError, match="cond .*block 1 takes 2 inputs and returns 2"):
        nb.graph.verify(main)


def test_values_made_inside_a_branch_cannot_leak_out():
    leaked = []

    def f(x):
        def branch(a):
            leaked.append(a * 2.0)
            return a

        y = nb.cond(nb.sum(x) > 0, branch, lambda a: a, [x])
        return y + leaked[0]

    with pytest.raises(nb.ProgramError, match="computed inside another cond/while_loop"):
        nb.jit(f)(np.ones(2, np.float32))


def test_in_place_writes_to_function_inputs_are_refused():
    def f(x):
        return nb.cond(nb.sum(x) > 0, lambda a: nb.add_(a, 1.0), lambda a: a, [x])

    with pytest.raises(nb.UnsupportedError, match="cannot be written in place"):
        _program(f, np.ones(2, np.float32))


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("fn", [_branchy, _loop, _nested], ids=["cond", "while", "nested"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_graph_gradients_match_finite_differences(fn, sign):
    x, w = _inputs(sign)
    nt.gradcheck(nb.jit(fn), _leaves(x, w))


@pytest.mark.parametrize("fn", [_branchy, _loop, _nested], ids=["cond", "while", "nested"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_graph_gradients_match_the_eager_python_control_flow(fn, sign):
    x, w = _inputs(sign)
    counts = nt.check_modes(fn, x.astype(np.float32), w.astype(np.float32))
    assert counts == {"outputs": 1, "gradients": 2}


def test_append_backward_through_a_while_trains_a_parameter():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 3])
        w = nb.static.create_parameter("w", [3, 3], initializer=("constant", 0.1))
        n = nb.static.data("n", [], dtype="int64")

        def body(i, h):
            return i + 1, nb.tanh(h @ w)

        _, h = nb.while_loop(lambda i, h: i < n, body, [0, x], max_iterations=50)
        loss = nb.mean((h - 0.5) ** 2)
        ((_, g),) = nb.append_backward(loss)
        nb.sub_(w, g * 2.0)
    nb.graph.verify(main)
    assert "= while_grad(" in str(main)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    xv = RNG.standard_normal((8, 3)).astype(np.float32)
    losses = [exe.run(main, {"x": xv, "n": np.int64(3)}, [loss, w], scope)[0] for _ in range(30)]
    assert losses[-1] < 0.8 * losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))  # a small step: every step helps


def test_gradient_of_a_loop_that_ran_zero_times_passes_the_seed_through():
    def f(x, n):
        return nb.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, h * 3.0), [0, x])[1]

    x = nb.tensor(np.ones(3), requires_grad=True)
    (g,) = nb.grad(nb.sum(nb.jit(f)(x, nb.tensor(0))), [x])
    nt.assert_close(g.numpy(), np.ones(3))
    (g,) = nb.grad(nb.sum(nb.jit(f)(x, nb.tensor(2))), [x])
    nt.assert_close(g.numpy(), np.full(3, 9.0))


def test_gradient_through_a_loop_var_that_changes_shape_is_refused_clearly():
    def grow(x):
        return nb.while_loop(lambda v: nb.sum(v) < 20.0, lambda v: nb.concat(v, v, axis=0), x)

    x = nb.tensor(np.ones((1, 2)), requires_grad=True)
    with pytest.raises(nb.UnsupportedError, match="changed shape between iterations") as e:
        nb.jit(grow)(x)
    message = str(e.value)
    assert "loop var 0" in message and "[1, 2] at iteration 0, [2, 2] at iteration 1" in message
    assert "pad it to the largest size" in message and "run the loop eagerly" in message
    assert "while (created at test_control_flow.py:" in message  # the while_loop's line
    eager = grow(x)  # what the message suggests: the eager loop's tape handles it
    nb.sum(eager).backward()
    nt.assert_close(x.grad.numpy(), np.full((1, 2), 16.0))  # 16 copies of x
    (value,) = nb.jit(grow)(x.detach()).numpy()[:1]  # without a gradient: allowed
    nt.assert_close(value, np.ones(2))


# ---------------------------------------------------------------- serialization


def _training_program():
    """A program with a cond nested in a while, its gradient, and a parameter update."""
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 3])
        w = nb.static.create_parameter("w", [3, 3], initializer=("constant", 0.2))
        h = _nested(x, w)
        loss = nb.mean(h * h)
        ((_, g),) = nb.append_backward(loss)
        nb.sub_(w, g * 0.1)
    return main, startup, loss


def test_a_saved_program_with_control_flow_trains_the_same_in_a_fresh_process(tmp_path):
    main, startup, loss = _training_program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    path = str(tmp_path / "loop.json")
    nb.save(main, path, scope)
    loaded = nb.load(path, require_loop_bounds=True)
    assert str(loaded) == str(main)
    nb.graph.verify(loaded)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = (
        "import json, sys\n"
        "import numpy as np\n"
        "import nbflow as nb\n"
        "path, data, loss = sys.argv[1:]\n"
        "scope = nb.Scope()\n"
        "program = nb.load(path, scope)\n"
        "x = np.load(data)\n"
        "exe = nb.Executor()\n"
        "print(json.dumps([float(exe.run(program, {'x': x}, [loss, 'w'], scope)[0])\n"
        "                  for _ in range(4)]))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(nb.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    args = [sys.executable, "-c", code, path, str(tmp_path / "x.npy"), loss.name]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    fresh = json.loads(result.stdout.splitlines()[-1])
    original = [float(exe.run(main, {"x": x}, [loss, "w"], scope)[0]) for _ in range(4)]
    assert fresh == original
    assert original[-1] < original[0]


def _doc(fn=_nested):
    x, w = _inputs()
    main, _, _ = _program(fn, x, w)
    return json.loads(nb.graph.serialize.dumps(main))


def _control_op(doc, block, op_type):
    return next(op for op in doc["blocks"][block]["ops"] if op["type"] == op_type)


@pytest.mark.parametrize(
    "block, op_type, attr, target, message",
    [
        (2, "cond", "true_block", 2, "true_block 2 is the op's own block or encloses it"),
        (2, "cond", "false_block", 0, "false_block 0 is the op's own block or encloses it"),
        (0, "while", "body_block", 3, "body_block 3 is not a child of block 0"),
        (0, "while", "cond_block", 9, "cond_block 9 is not a sub-block"),
    ],
)
def test_the_loader_rejects_bad_block_references(block, op_type, attr, target, message):
    doc = _doc()
    _control_op(doc, block, op_type)["attrs"][attr] = target
    with pytest.raises(nb.ProgramError, match=message):
        nb.graph.serialize.loads(json.dumps(doc))


def test_the_loader_rejects_a_sub_block_run_by_two_ops():
    doc = _doc(lambda x, w: _branchy(x, w) + _branchy(x, w))
    second = [op for op in doc["blocks"][0]["ops"] if op["type"] == "cond"][1]
    second["attrs"]["true_block"] = 1  # the first cond's true branch, a perfect type match
    with pytest.raises(nb.ProgramError, match=r"true_block 1 is already run by block 0, op \d"):
        nb.graph.serialize.loads(json.dumps(doc))


def test_the_loader_rejects_sub_blocks_that_write_outer_vars_or_misstate_outputs():
    doc = _doc()
    body = doc["blocks"][2]
    outer = doc["blocks"][0]["ops"][0]["outputs"][0]  # a var of block 0 only
    body["ops"][-1]["outputs"][0] = outer
    with pytest.raises(nb.ProgramError, match=f"output %{outer} is not a var of sub-block 2"):
        nb.graph.serialize.loads(json.dumps(doc))
    doc = _doc()
    doc["blocks"][1]["outputs"] = doc["blocks"][1]["inputs"][:1]  # an i64, not a bool
    with pytest.raises(nb.ProgramError, match="the condition. must return one bool var"):
        nb.graph.serialize.loads(json.dumps(doc))


def test_the_loader_can_require_loop_bounds():
    def unbounded(x, w):
        return nb.while_loop(lambda h: nb.sum(h) < 10.0, lambda h: h + 1.0, x)

    text = json.dumps(_doc(unbounded))
    nb.graph.serialize.loads(text)  # fine unless asked
    with pytest.raises(nb.ProgramError, match=r"block 0, op 0 \(while\): a loop without max_"):
        nb.graph.serialize.loads(text, require_loop_bounds=True)


# ---------------------------------------------------------------- tracing errors


def test_python_if_on_a_traced_value_names_the_line_and_suggests_cond():
    @nb.jit
    def f(x):
        if nb.sum(x) > 0:
            return x * 2.0
        return x

    with pytest.raises(nb.UnsupportedError) as e:
        f(np.ones(2, np.float32))
    message = str(e.value)
    line = f.fn.__code__.co_firstlineno + 2  # the `if` line
    assert f"test_control_flow.py:{line}: `if nb.sum(x) > 0:`" in message
    assert "nbflow.cond(pred, true_fn, false_fn, operands)" in message
    assert "while tracing" in message  # jit says which function it was tracing


def test_python_while_on_a_traced_value_suggests_while_loop():
    @nb.jit
    def f(x):
        while nb.sum(x) < 10:
            x = x * 2.0
        return x

    with pytest.raises(nb.UnsupportedError, match=r"`while nb.sum\(x\) < 10:`.*while_loop"):
        f(np.ones(2, np.float32))
    # the same function written with while_loop traces and runs
    g = nb.jit(lambda x: nb.while_loop(lambda v: nb.sum(v) < 10, lambda v: v * 2.0, x))
    nt.assert_close(g(np.ones(2, np.float32)).numpy(), np.full(2, 8.0, np.float32))


def _second_order_program(fn):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3], "float64")
        x.stop_gradient = False
        ((_, g),) = nb.append_backward(nb.sum(fn(x)), parameter_list=[x])
        ((_, gg),) = nb.append_backward(nb.sum(g * g), parameter_list=[x])
    nb.graph.verify(main)
    return main, g, gg


def _rows(x):
    """A loop reading rows x[i] and x[2 - i] of an outer value (their gradients are stacked
    per iteration and scattered once after the backward loop) and carrying x too."""

    def body(i, h):
        a, b = nb.index_select(x, 0, i), nb.index_select(x, 0, 2 - i)
        return i + 1, nb.tanh(h * a) + b * b

    return nb.while_loop(lambda i, h: i < 3, body, [0, x], max_iterations=5)[1]


def test_gradients_of_rows_read_in_a_loop_match_eager_and_finite_differences():
    x = RNG.standard_normal((3, 2))
    nt.gradcheck(nb.jit(_rows), _leaves(x))
    assert nt.check_modes(_rows, x) == {"outputs": 1, "gradients": 1}


def _nested_while(x):
    def inner(h):
        return nb.while_loop(lambda j, g: j < 2, lambda j, g: (j + 1, nb.tanh(g) * g), [0, h])[1]

    def body(i, h):
        return i + 1, inner(h) * 1.5

    return nb.while_loop(lambda i, h: i < 2, body, [0, x], max_iterations=4)[1]


@pytest.mark.parametrize("fn", ["cond", "while", "rows", "nested while"])
def test_second_order_gradients_through_control_flow(fn):
    def body(i, h):
        pred = nb.logical_xor(nb.sum(h) > 0, i == 1)
        h2 = nb.cond(pred, lambda a: nb.tanh(a) * 1.5, lambda a: a * a, [h])
        return i + 1, h2

    def f(x):
        if fn == "cond":
            return body(0, x)[1]
        if fn == "rows":
            return _rows(x)
        if fn == "nested while":  # (the replayed inner loop keeps its history)
            return _nested_while(x)
        return nb.while_loop(lambda i, h: i < 3, body, [0, x], max_iterations=5)[1]

    main, g, gg = _second_order_program(f)
    exe, x = nb.Executor(), np.array([0.3, -0.2, 0.5])
    got_g, got_gg = exe.run(main, {"x": x}, [g, gg])
    xt = nb.tensor(x, requires_grad=True)  # eager: the tape, differentiated twice
    (eager_g,) = nb.grad(nb.sum(f(xt)), [xt], create_graph=True)
    (eager_gg,) = nb.grad(nb.sum(eager_g * eager_g), [xt])
    nt.assert_close(got_g, eager_g.numpy())
    nt.assert_close(got_gg, eager_gg.numpy())
    # and against central differences of the graph's own first gradient
    v, eps = np.array([0.7, -0.4, 0.2]), 1e-6
    up, down = (exe.run(main, {"x": x + s * eps * v}, [g])[0] for s in (1, -1))
    numeric = (np.sum(up * up) - np.sum(down * down)) / (2 * eps)
    np.testing.assert_allclose(np.dot(got_gg, v), numeric, rtol=1e-5, atol=1e-7)


def test_a_gradient_needing_a_value_overwritten_in_place_is_refused():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3])
        w = nb.static.create_parameter("w", [3])
        h = nb.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h * w), [0, x])[1]
        y = nb.cond(nb.sum(x) > 0, lambda a: a * w, lambda a: a, [x])
        nb.mul_(w, 2.0)  # w changes after both ops read it
        with pytest.raises(nb.GradientError, match="modified in place"):
            nb.append_backward(nb.sum(h), parameter_list=[w])
        with pytest.raises(nb.GradientError, match="modified in place"):
            nb.append_backward(nb.sum(y), parameter_list=[w])


def test_a_returned_constant_is_not_shared_between_runs():
    # the executor computes a sub-block's constants once; writing the op's output in place
    # must not change what the next run returns
    def f(x):
        y = nb.cond(nb.sum(x) > 0, lambda: 3.0, lambda: nb.sum(x))  # 3.0: a block constant
        return nb.add_(y, 1.0)

    main, _, out = _program(f, np.ones(2, np.float32))
    exe = nb.Executor()
    for _ in range(3):
        (got,) = exe.run(main, {"in0": np.ones(2, np.float32)}, [out])
        assert got == 4.0


# ---------------------------------------------------------------- a property


_JITTED_LOOP = {}


def _data_dependent_loop(x, w, limit):
    """Iterate until the state's norm passes `limit` (a data-dependent trip count), with a
    branch that depends on the state too."""

    def body(i, h):
        h = nb.cond(nb.sum(h) > 0, lambda a: a @ w + 0.5, lambda a: nb.tanh(a) * 2.0 - a, [h])
        return i + 1, h

    return nb.while_loop(lambda i, h: nb.logical_and(nb.sum(h * h) < limit, i < 6), body, [0, x])[1]


@given(
    x=nt.arrays(np.float64, (3,), low=-1.0, high=1.0),
    limit=st.floats(0.5, 40.0),
)
def test_graph_loops_agree_with_eager_on_values_and_gradients(x, limit):
    w = np.array([[0.9, -0.3, 0.2], [0.1, 1.1, -0.4], [0.3, 0.2, 0.8]])
    graph = _JITTED_LOOP.setdefault("f", nb.jit(_data_dependent_loop))  # traced once
    results = []
    for fn in (_data_dependent_loop, graph):
        xt, wt = nb.tensor(x, requires_grad=True), nb.tensor(w, requires_grad=True)
        out = fn(xt, wt, limit)
        grads = nb.grad(nb.sum(out * out), [xt, wt], allow_unused=True)
        # eager: None for w when no iteration took the branch reading it; graph: zeros
        grads = [np.zeros(t.shape) if g is None else g.numpy() for g, t in zip(grads, [xt, wt])]
        results.append([out.numpy(), *grads])
    for eager, jitted in zip(*results):
        nt.assert_close(jitted, eager)


def test_gradient_through_a_branch_that_draws_random_numbers_is_refused():
    # the gradient replays the branch, which would draw a different dropout mask
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.create_parameter("x", [4], "float64")
        flag = nb.static.data("flag", [], "bool")
        out = nb.cond(flag, lambda x: nb.dropout(x, 0.5, True), lambda x: x * 2.0, [x])
        with pytest.raises(nb.UnsupportedError, match="draws random numbers"):
            nb.append_backward(nb.sum(out))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_python_predicates_and_numpy_bounds_work_in_both_modes(mode):
    def f(x):
        y = nb.cond(1, lambda a: a * 2.0, lambda a: a, [x])  # known when called: no op
        bound = np.int64(5)
        return nb.while_loop(lambda i, h: i < 2, lambda i, h: (i + 1, h + 1.0), [0, y], bound)[1]

    run = f if mode == "eager" else nb.jit(f)
    nt.assert_close(run(nb.ones(2)), np.full(2, 4.0, np.float32))

    def floating(x):
        return nb.cond(0.5, lambda a: a, lambda a: a, [x])

    with pytest.raises(nb.ArgumentError, match="predicate"):
        (floating if mode == "eager" else nb.jit(floating))(nb.ones(2))


def test_a_python_number_loop_var_takes_the_bodys_dtype_under_jit_as_eagerly():
    def f(x):  # 0.0 would be float32, and the body adds a float64 sum
        return nb.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, h + nb.sum(x)), [0, 0.0])[1]

    x = nb.ones(2, dtype=nb.float64)
    eager, jitted = f(x), nb.jit(f)(x)
    assert eager.dtype == jitted.dtype == nb.float64
    nt.assert_close(jitted, eager.numpy())
    with pytest.raises(nb.DTypeError, match="loop var 0"):  # a tensor keeps its dtype
        nb.jit(lambda x: nb.while_loop(lambda h: nb.sum(h) < 5, lambda h: h + x, nb.ones(2)))(x)
