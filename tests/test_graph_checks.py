"""Graph-mode defects found by trying nbflow as a new user would (issue 38, 4): each check
refuses with nbflow's error naming the var, where a value was silently changed before."""

import numpy as np
import pytest

import nbflow as nb


def _program(dtype):
    main = nb.Program()
    with nb.program_guard(main):
        v = nb.static.data("v", [-1], dtype=dtype)
        out = v + v
    return main, out


@pytest.mark.parametrize(
    "dtype,value",
    [("int32", np.array([2**40], np.int64)), ("float32", np.array([1e39], np.float64))],
)
def test_a_narrowing_feed_that_does_not_fit_is_refused(dtype, value):
    main, out = _program(dtype)
    with pytest.raises(nb.DTypeError, match="feed 'v'.*do not fit"):
        nb.Executor().run(main, {"v": value}, [out])
    fits = value.astype(np.float64) * 0 + 3  # in range: converted as before
    (got,) = nb.Executor().run(main, {"v": fits.astype(value.dtype)}, [out])
    assert got.dtype == np.dtype(dtype) and got.tolist() == [6]


def test_optimizer_arguments_are_checked_for_minimize_too():
    with pytest.raises(nb.NbflowError, match="lr") as info:
        nb.optim.SGD(lr=float("nan"))  # (minimize's optimizer: no parameters given)
    assert isinstance(info.value, ValueError)
    with pytest.raises(nb.NbflowError):
        nb.optim.Adam(lr=-1.0)
    with pytest.raises(nb.NbflowError):
        nb.optim.SGD(nb.ones(2))  # a tensor, not an iterable of them


@pytest.mark.parametrize("shape", [[2.5, 3], [True, 3], ["2"]])
def test_non_integer_dims_are_refused(shape):
    with nb.program_guard(nb.Program()):
        with pytest.raises(nb.ShapeError, match="integers"):
            nb.static.data("v", shape)
        with pytest.raises(nb.ShapeError, match="integers"):
            nb.static.create_parameter("w", shape)


def test_verify_finds_a_read_of_a_var_no_op_defines():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3])
        ghost = main.global_block().create_var("ghost", (3,))
        y = x + ghost
    with pytest.raises(nb.ProgramError, match="reads %ghost, which no op before it computes"):
        nb.graph.verify(main)
    with pytest.raises(nb.ProgramError, match="no op the run ran computes it") as info:
        nb.Executor().run(main, {"x": np.ones(3, np.float32)}, [y])
    assert "startup" not in str(info.value)


def test_jit_traces_again_when_a_captured_tensor_changes_shape():
    w = nb.ones(3)

    @nb.jit
    def scaled(x):
        return (x * w).sum()

    assert scaled(nb.ones(3)).item() == 3.0
    w.data = np.full(1, 2.0, np.float32)  # the argument's signature is the same
    assert scaled(nb.ones(3)).item() == 6.0
    w.data = np.ones(3, np.float64)
    assert scaled(nb.ones(3)).item() == 3.0


@pytest.mark.parametrize(
    "value,error",
    [
        (np.ones(3, np.float64), nb.DTypeError),  # (was: float64 results)
        (np.ones(3, np.int64), nb.DTypeError),  # (was: numpy's TypeError inside sgd)
        (np.ones(4, np.float32), nb.ShapeError),
    ],
)
def test_a_scope_value_unlike_its_declaration_is_refused_naming_the_var(value, error):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [3])
        w = nb.static.create_parameter("w", [3])
        loss = nb.sum(x * w)
        nb.optim.SGD(lr=0.1).minimize(loss)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["w"] = nb.tensor(value)
    with pytest.raises(error, match="%w"):
        exe.run(main, {"x": np.ones(3, np.float32)}, [loss], scope)


def test_a_pruned_program_stands_on_its_own():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 3])
        w = nb.static.create_parameter("w", [3, 2])
        hidden = nb.relu(x @ w)
        loss = nb.mean(hidden)
        nb.optim.SGD(lr=0.1).minimize(loss)
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    pruned = main.prune([hidden])
    text = str(pruned)
    assert text.startswith("program(%x: f32[-1,3], %w: f32[3,2] persistable)")
    assert set(pruned.global_block().vars) < set(main.global_block().vars)  # only its own
    with nb.program_guard(pruned):
        doubled = pruned.global_block().var(hidden.name) * 2  # new ops on the copy
    feed = {"x": np.ones((2, 3), np.float32)}
    got, twice = exe.run(pruned, feed, [hidden, doubled], scope)  # (main's var: by name)
    np.testing.assert_allclose(twice, 2 * got)
    np.testing.assert_array_equal(got, exe.run(main, feed, [hidden], scope)[0])
    assert "sgd_update_" not in str(main.clone(for_test=True))


def test_dynamic_rnn_checks_lengths_against_the_run_time_time_dim():
    cell = nb.nn.LSTMCell(4, 5)
    main = nb.Program()
    with nb.program_guard(main):
        xs = nb.static.data("x", [-1, -1, 4])  # the time dim known only when run
        lengths = nb.static.data("lengths", [-1], dtype="int64")
        _, (h, _) = nb.nn.dynamic_rnn(cell, xs, lengths)
    x, exe = np.ones((4, 2, 4), np.float32), nb.Executor()
    assert exe.run(main, {"x": x, "lengths": np.array([4, 0])}, [h])[0].shape == (2, 5)
    for bad in ([5, 2], [-1, 2]):
        with pytest.raises(nb.OutOfRangeError, match="lengths outside .0, the time dim") as info:
            exe.run(main, {"x": x, "lengths": np.array(bad)}, [h])
        assert str(2**63 - 1) not in str(info.value)
