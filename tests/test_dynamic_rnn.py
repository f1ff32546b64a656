"""nbflow.nn.dynamic_rnn: cells over variable-length sequences, eager and graph (while_loop),
against each sequence run alone, finite differences and the eager mode."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt

LENGTHS = [5, 3, 1]


def _cell(kind, dtype=nb.float64):
    nb.manual_seed(0)
    return {"lstm": nb.nn.LSTMCell, "gru": nb.nn.GRUCell, "rnn": nb.nn.RNNCell}[kind](
        4, 5, dtype=dtype
    )


def _alone(cell, x, b, length):
    """Sequence b run by itself for its own length: (outputs, final state)."""
    state, outs = None, []
    for t in range(length):
        state = cell(nb.tensor(x[t, b : b + 1]), state)
        outs.append((state[0] if isinstance(state, tuple) else state).numpy()[0])
    return np.array(outs), state


def _check_against_alone(cell, x, outputs, final):
    for b, length in enumerate(LENGTHS):
        outs, state = _alone(cell, x, b, length)
        nt.assert_close(outputs[:length, b], outs)
        assert not np.any(outputs[length:, b]), "outputs past a sequence's length are zero"
        states = state if isinstance(state, tuple) else (state,)
        for got, want in zip(final, states):
            nt.assert_close(got[b], want.numpy()[0])


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_each_sequence_matches_running_it_alone(kind, mode):
    cell = _cell(kind)
    x = np.random.default_rng(1).standard_normal((6, 3, 4))  # one step of padding past 5

    def run(x, lengths):
        return nb.nn.dynamic_rnn(cell, x, lengths)

    fn = nb.jit(run) if mode == "jit" else run
    outputs, final = fn(nb.tensor(x), nb.tensor(LENGTHS))
    final = final if isinstance(final, tuple) else (final,)
    _check_against_alone(cell, x, outputs.numpy(), [s.numpy() for s in final])


@pytest.mark.parametrize("time", [5, -1])
def test_static_program_with_unknown_batch_or_time_matches_eager(time):
    cell = _cell("lstm", nb.float32)
    x = np.random.default_rng(2).standard_normal((5, 3, 4)).astype(np.float32)
    main = nb.Program()
    with nb.program_guard(main):
        xs = nb.static.data("x", [time, -1, 4])
        lengths = nb.static.data("lengths", [-1], dtype="int64")
        outputs, (h, _) = nb.nn.dynamic_rnn(cell, xs, lengths)
    assert outputs.shape == (time, -1, 5) and h.shape == (-1, 5)
    nb.graph.verify(main)
    feed = {"x": x, "lengths": np.array(LENGTHS)}
    got = nb.Executor().run(main, feed, [outputs, h])
    eager_out, (eager_h, _) = nb.nn.dynamic_rnn(cell, nb.tensor(x), LENGTHS)
    nt.assert_close(got[0], eager_out.numpy())
    nt.assert_close(got[1], eager_h.numpy())
    # the program, saved and loaded (the cell's weights travel as captured tensors)
    loaded = nb.graph.serialize.loads(nb.graph.serialize.dumps(main))
    loaded.captured.update(main.captured)
    again = nb.Executor().run(loaded, feed, [outputs.name, h.name])
    nt.assert_close(again[0], got[0])
    nt.assert_close(again[1], got[1])


def _function_cell(x, w, u, h0, lengths):
    """A user function (x_t, state) -> (out_t, new_state) whose weights are inputs."""

    def cell(x_t, h):
        h = nb.tanh(x_t @ w + h @ u)
        return h * 2.0, h

    return nb.nn.dynamic_rnn(cell, x, lengths, initial_state=h0)


def _function_inputs():
    rng = np.random.default_rng(3)
    return [
        rng.standard_normal((5, 3, 4)),
        rng.standard_normal((4, 5)) * 0.5,
        rng.standard_normal((5, 5)) * 0.5,
        rng.standard_normal((3, 5)),
    ]


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_gradients_through_time_match_finite_differences(mode):
    def fn(x, w, u, h0):
        outputs, state = _function_cell(x, w, u, h0, LENGTHS)
        return outputs, state

    fn = nb.jit(fn) if mode == "jit" else fn
    nt.gradcheck(fn, [nb.tensor(a, requires_grad=True) for a in _function_inputs()])


def test_graph_gradients_match_eager_for_a_function_cell_and_an_lstm():
    counts = nt.check_modes(lambda *a: _function_cell(*a, LENGTHS), *_function_inputs())
    assert counts == {"outputs": 2, "gradients": 4}
    cell = _cell("lstm")
    x = np.random.default_rng(4).standard_normal((5, 3, 4))
    counts = nt.check_modes(lambda x: nb.nn.dynamic_rnn(cell, x, LENGTHS)[0], x)
    assert counts == {"outputs": 1, "gradients": 1}


def test_a_finished_sequence_gets_no_gradient_from_later_steps():
    x, w, u, h0 = (nb.tensor(a, requires_grad=True) for a in _function_inputs())
    outputs, _ = nb.jit(lambda *a: _function_cell(*a, LENGTHS))(x, w, u, h0)
    (gx,) = nb.grad(nb.sum(outputs), [x])
    gx = gx.numpy()
    for b, length in enumerate(LENGTHS):
        assert np.all(gx[length:, b] == 0) and np.all(np.abs(gx[:length, b]).sum(-1) > 0)


def test_batch_first_and_lod_offsets_give_the_same_result():
    cell = _cell("gru")
    x = np.random.default_rng(5).standard_normal((5, 3, 4))
    outputs, h = nb.nn.dynamic_rnn(cell, nb.tensor(x), LENGTHS)
    first, h_first = nb.nn.dynamic_rnn(
        cell, nb.tensor(x.transpose(1, 0, 2)), LENGTHS, batch_first=True
    )
    nt.assert_close(first.numpy(), outputs.numpy().transpose(1, 0, 2))
    nt.assert_close(h_first.numpy(), h.numpy())
    packed = np.concatenate([x[:length, b] for b, length in enumerate(LENGTHS)])
    lod, h_lod = nb.nn.dynamic_rnn(cell, nb.tensor(packed), offsets=[0, 5, 8, 9])
    nt.assert_close(lod.numpy(), outputs.numpy())
    nt.assert_close(h_lod.numpy(), h.numpy())


def test_bad_lengths_and_cells_are_typed_errors():
    cell = _cell("rnn")
    x = nb.tensor(np.zeros((5, 3, 4)))
    with pytest.raises(nb.ShapeError, match=r"lengths must be in \[0, 5\]"):
        nb.nn.dynamic_rnn(cell, x, [6, 1, 1])
    with pytest.raises(nb.ShapeError, match="2 lengths for a batch of 3"):
        nb.nn.dynamic_rnn(cell, x, [1, 1])
    with pytest.raises(nb.ShapeError, match="offsets end at 4"):
        nb.nn.dynamic_rnn(cell, nb.tensor(np.zeros((5, 4))), offsets=[0, 2, 4])
    with pytest.raises(ValueError, match="needs an initial_state"):
        nb.nn.dynamic_rnn(lambda x, h: (x, h), x, [1, 1, 1])


@pytest.mark.parametrize("bad", [[-1, 2, 1], [6, 2, 1]])
def test_lengths_given_to_a_program_are_checked_when_it_runs(bad):
    # under @jit the lengths are a graph value: checked_range raises when the program runs
    # (before, -1 acted as 0 and 6 hit the loop's limit)
    cell = _cell("rnn")
    f = nb.jit(lambda x, n: nb.nn.dynamic_rnn(cell, x, n)[0])
    x = nb.tensor(np.ones((5, 3, 4)))
    good = f(x, nb.tensor([5, 2, 1])).numpy()
    np.testing.assert_array_equal(good[2:, 1], 0)  # past its length: zeros
    with pytest.raises(nb.OutOfRangeError, match=r"dynamic_rnn: lengths must be in \[0, 5\]"):
        f(x, nb.tensor(bad))


def test_checked_range_in_a_static_program():
    main = nb.Program()
    with nb.program_guard(main, nb.Program()):
        i = nb.static.data("i", [-1], "int64")
        out = nb.checked_range(i, low=0, high=9, what="an index") * 2
    exe = nb.Executor()
    (got,) = exe.run(main, {"i": np.array([0, 9, 4])}, [out])
    np.testing.assert_array_equal(got, [0, 18, 8])
    with pytest.raises(nb.OutOfRangeError, match=r"an index must be in \[0, 9\], got 10"):
        exe.run(main, {"i": np.array([1, 10])}, [out])
    with pytest.raises(nb.DTypeError, match="int32 or int64"):
        nb.checked_range(nb.tensor([1.0]), low=0, high=1, what="x")


def test_the_graph_loop_keeps_memory_linear_in_time():
    """The outputs are stacked by the while op, not carried through it: what the gradient
    keeps per iteration is the state (batch, hidden), never a (time, batch, hidden) buffer."""
    cell = _cell("gru")
    x = nb.tensor(np.random.default_rng(6).standard_normal((5, 3, 4)), requires_grad=True)
    f = nb.jit(lambda x: nb.nn.dynamic_rnn(cell, x, LENGTHS)[0])
    nb.sum(f(x)).backward()
    (traced,) = f.cache.values()
    (loop,) = [n for n in traced.program.global_block().ops if n.op.name == "while"]
    assert loop.attrs["stacked"] == 1 and loop.attrs["history"]
    assert max(v.ndim for v in loop.outputs) == 3  # (time, batch, hidden) outputs; histories
    assert x.grad is not None and x.grad.shape == x.shape


def test_lod_offsets_in_a_static_program_with_unknown_total_steps():
    cell = _cell("gru", nb.float32)
    packed = np.random.default_rng(7).standard_normal((9, 4)).astype(np.float32)
    main = nb.Program()
    with nb.program_guard(main):
        p = nb.static.data("p", [-1, 4])
        outputs, h = nb.nn.dynamic_rnn(cell, p, offsets=[0, 5, 8, 9])
    got = nb.Executor().run(main, {"p": packed}, [outputs, h])
    eager, eager_h = nb.nn.dynamic_rnn(cell, nb.tensor(packed), offsets=[0, 5, 8, 9])
    nt.assert_close(got[0], eager.numpy())
    nt.assert_close(got[1], eager_h.numpy())


def _elements_written(monkeypatch, time: int) -> int:
    """Elements of every op output the executor writes for a jitted dynamic RNN's forward
    and backward over `time` steps (the ops inside the loops counted once per iteration)."""
    from nbflow.graph.executor import Executor

    written = [0]
    run_op = Executor._run_op

    def counting(self, node, env, scope):
        results = run_op(self, node, env, scope)
        if not hasattr(node.op, "run_blocks"):  # a loop's own outputs are counted inside it
            written[0] += sum(t.size for t in results)
        return results

    monkeypatch.setattr(Executor, "_run_op", counting)
    rng = np.random.default_rng(9)
    w, u = (nb.tensor(rng.standard_normal((3, 3)) * 0.3, requires_grad=True) for _ in "wu")
    x = nb.tensor(rng.standard_normal((time, 2, 3)), requires_grad=True)
    h0 = nb.tensor(np.zeros((2, 3)))

    def cell(x_t, h):
        h = nb.tanh(x_t @ w + h @ u)
        return h, h

    f = nb.jit(lambda x: nb.nn.dynamic_rnn(cell, x, [time, time - 1], initial_state=h0)[0])
    f.executors["cpu"] = Executor(fuse=False)  # every op through _run_op, none fused
    nb.sum(f(x)).backward()
    assert x.grad is not None and np.abs(x.grad.numpy()[: time - 1]).min() > 0
    monkeypatch.undo()
    return written[0]


def test_the_input_gradient_costs_time_linear_in_the_steps(monkeypatch):
    """The gradient to the inputs is each step's row gradient, scattered once after the
    backward loop, not a (time, batch, features) sum per step: 4x the steps, ~4x the work
    (a per-step full-size sum would be ~16x)."""
    short, long = _elements_written(monkeypatch, 64), _elements_written(monkeypatch, 256)
    assert 3.5 < long / short < 4.5, (short, long)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_no_time_steps_give_no_outputs_and_the_initial_state(mode):
    cell = nb.nn.LSTMCell(2, 3, generator=nb.Generator(0))
    h0, c0 = nb.ones(2, 3), nb.full((2, 3), 2.0)

    def run(x):
        return nb.nn.dynamic_rnn(cell, x, [0, 0], (h0, c0))

    outputs, (h, c) = (run if mode == "eager" else nb.jit(run))(nb.zeros(0, 2, 2))
    assert outputs.shape == (0, 2, 3)
    nt.assert_close(h, h0.numpy())
    nt.assert_close(c, c0.numpy())
