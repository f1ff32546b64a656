"""Tracing: @jit runs a traced Program cached per signature, and equals eager mode."""

import re

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt
from nbflow.graph.jit import jit, trace


def _close(actual, expected):
    nt.assert_close(actual, np.asarray(expected, dtype=np.float32))


def _mlp_params(seed=0):
    rng = np.random.default_rng(seed)
    w1 = nb.tensor(rng.standard_normal((4, 8)).astype(np.float32))
    b1 = nb.tensor(rng.standard_normal(8).astype(np.float32))
    w2 = nb.tensor(rng.standard_normal((8, 3)).astype(np.float32))
    return w1, b1, w2


def _batch(n=6, seed=1):
    rng = np.random.default_rng(seed)
    x = nb.tensor(rng.standard_normal((n, 4)).astype(np.float32))
    y = nb.tensor(rng.integers(0, 3, n))
    return x, y


def _counting(fn):
    """fn jitted, with the number of times its Python body ran (once per trace)."""
    calls = []

    def body(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    return jit(body), calls


def test_mlp_forward_and_loss_equal_eager():
    w1, b1, w2 = _mlp_params()

    def forward(x):
        return nb.relu(x @ w1 + b1) @ w2

    def loss(x, y):
        return nb.cross_entropy(forward(x), y)

    x, y = _batch()
    nt.assert_close(jit(forward)(x).numpy(), forward(x).numpy())
    nt.assert_close(jit(loss)(x, y).numpy(), loss(x, y).numpy())


def test_same_signature_reuses_the_trace_and_a_new_shape_retraces():
    w1, b1, w2 = _mlp_params()
    f, calls = _counting(lambda x: nb.relu(x @ w1 + b1) @ w2)
    x, _ = _batch(6)
    for _ in range(3):
        f(x)
    f(_batch(6, seed=2)[0])  # new values, same signature
    assert len(calls) == 1
    x9, _ = _batch(9)
    nt.assert_close(f(x9).numpy(), (nb.relu(x9 @ w1 + b1) @ w2).numpy())
    assert len(calls) == 2
    f(nb.tensor(x.numpy(), dtype="float64"))
    assert len(calls) == 3 and len(f.cache) == 3  # a new dtype retraces too


def test_captured_tensors_are_bound_not_copied():
    w = nb.ones(4, 2)
    f = jit(lambda x: x @ w)
    x = nb.ones(3, 4)
    _close(f(x).numpy(), np.full((3, 2), 4.0))
    (traced,) = f.cache.values()
    (name,) = traced.program.captured
    assert traced.program.captured[name] is w and traced.scope[name] is w
    assert traced.program.global_block().vars[name].persistable
    with nb.no_grad():
        w.sub_(0.5)  # an in-place update between calls
    _close(f(x).numpy(), np.full((3, 2), 2.0))
    assert len(f.cache) == 1


def test_python_scalars_are_baked_in_per_value():
    f, calls = _counting(lambda x, scale, power=1: (x * scale) ** power)
    x = nb.tensor([1.0, 2.0, 3.0])
    _close(f(x, 2.0).numpy(), [2.0, 4.0, 6.0])
    _close(f(x, 3.0).numpy(), [3.0, 6.0, 9.0])
    _close(f(x, 3.0, power=2).numpy(), [9.0, 36.0, 81.0])
    f(x, 3.0)
    assert len(calls) == 3
    f(x, 3)  # an int is another signature than the float 3.0
    assert len(calls) == 4
    _close(f(x, nb.tensor(2.0)).numpy(), [2.0, 4.0, 6.0])  # a 0-d tensor is an input
    assert len(calls) == 5
    assert "value=3.0" in str(f.program(x, 3.0)) and "value=3]" in str(f.program(x, 3))


def test_multiple_outputs_and_nested_inputs():
    w1, b1, w2 = _mlp_params()

    @jit
    def f(params, x):
        a, b = params
        h = x @ a + b
        return h, [nb.relu(h), h.sum()]

    x, _ = _batch()
    h, (r, s) = f([w1, b1], x)
    nt.assert_close(h.numpy(), (x @ w1 + b1).numpy())
    nt.assert_close(r.numpy(), nb.relu(x @ w1 + b1).numpy())
    nt.assert_close(s.numpy(), (x @ w1 + b1).sum().numpy())
    assert all(type(t) is nb.Tensor for t in (h, r, s))
    program, inputs, outputs = trace(f.fn, [w1, b1], x)
    assert [v.name for v in inputs] == ["params_0", "params_1", "x"]  # named after parameters
    assert [v.shape for v in inputs] == [(4, 8), (8,), (6, 4)] and len(outputs) == 3
    assert program.captured == {}  # passed in, not captured


def _normalised(program) -> str:
    """The printout with vars renamed in order of appearance (%v0, %v1, ...)."""
    names: dict[str, str] = {}
    return re.sub(r"%([\w@]+)", lambda m: "%v" + names.setdefault(m[1], str(len(names))), program)


def test_static_api_and_jit_give_the_same_program():
    w1, b1, w2 = _mlp_params()
    x, y = _batch(5)

    def loss(x, y):
        return nb.cross_entropy(nb.relu(x @ w1 + b1) @ w2, y)

    traced, _, _ = trace(loss, x, y)
    static = nb.Program()
    with nb.program_guard(static, nb.Program()):
        xv = nb.static.data("x", [5, 4])
        yv = nb.static.data("y", [5], dtype="int64")
        p1 = nb.static.create_parameter("w1", [4, 8])
        q1 = nb.static.create_parameter("b1", [8])
        p2 = nb.static.create_parameter("w2", [8, 3])
        nb.cross_entropy(nb.relu(xv @ p1 + q1) @ p2, yv)
    assert _normalised(str(traced)) == _normalised(str(static))
    ops = [n.op.name for n in traced.global_block().ops]
    assert ops == ["matmul", "add", "relu", "matmul", "cross_entropy"]


def test_python_if_on_a_traced_value_raises_a_clear_error():
    @jit
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(nb.UnsupportedError) as info:
        f(nb.ones(3))
    message = str(info.value)
    assert "truth value" in message and "while tracing" in message and "f (test_jit.py" in message
    assert "Python argument" in message  # says what to do instead
    assert f.cache == {}  # a failed trace caches nothing


def _trainable_mlp():
    params = _mlp_params()
    for p in params:
        p.requires_grad_()
    return params


def test_gradients_through_jit_equal_eager_gradients():
    w1, b1, w2 = _trainable_mlp()

    def loss(x, y):
        return nb.cross_entropy(nb.relu(x @ w1 + b1) @ w2, y)

    f, calls = _counting(loss)
    x, y = _batch()
    x.requires_grad_()
    value = f(x, y)
    assert value.requires_grad and "grad_fn=jit(body)" in repr(value)
    value.backward()
    jit_grads = [t.grad.numpy().copy() for t in (x, w1, b1, w2)]
    for t in (x, w1, b1, w2):
        t.grad = None
    loss(x, y).backward()
    for g, t in zip(jit_grads, (x, w1, b1, w2)):
        nt.assert_close(g, t.grad.numpy())
    assert len(calls) == 1  # traced once; neither the call nor backward reran the body
    assert "-- backward --" in str(f.program(x, y))


def test_sgd_steps_through_jit_follow_eager_training():
    x, y = _batch(16)

    def train(step_fn, params, steps=5):
        losses = []
        for _ in range(steps):
            loss = step_fn(params, x, y)
            for p in params:
                p.grad = None
            loss.backward()
            with nb.no_grad():
                for p in params:
                    p.sub_(p.grad * 0.5)
            losses.append(loss.item())
        return losses

    def step(params, x, y):
        w1, b1, w2 = params
        return nb.cross_entropy(nb.relu(x @ w1 + b1) @ w2, y)

    jitted = train(jit(step), _trainable_mlp())  # parameters passed in, not captured
    eager = train(step, _trainable_mlp())
    nt.assert_close(np.array(jitted), np.array(eager), rtol=1e-5, atol=1e-6)
    assert jitted[-1] < jitted[0]


def test_gradients_of_several_outputs_and_unneeded_inputs():
    w = nb.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    f = jit(lambda x: (x @ w, nb.relu(x @ w).sum()))
    x = nb.tensor([[1.0, 2.0]])  # needs no gradient: its gradient ops are pruned
    h, s = f(x)
    (h * 3).sum().backward()  # only one output used: the other's gradient is zero
    expected = nb.grad([(x @ w * 3).sum()], [w])[0]
    nt.assert_close(w.grad.numpy(), expected.numpy())
    w.grad = None
    h, s = f(x)
    (h.sum() + s).backward()
    nt.assert_close(w.grad.numpy(), nb.grad([(x @ w).sum() + nb.relu(x @ w).sum()], [w])[0].numpy())
    assert x.grad is None


def test_a_parameter_changed_before_backward_is_caught():
    w1, b1, w2 = _trainable_mlp()
    f = jit(lambda x: (nb.relu(x @ w1 + b1) @ w2).sum())
    loss = f(_batch()[0])
    with nb.no_grad():
        w2.sub_(1.0)  # backward needs the old w2 (for the gradient of w1 and b1)
    with pytest.raises(nb.GradientError, match="modified in place"):
        loss.backward()


def _critic_and_penalty():
    rng = np.random.default_rng(3)
    w1 = nb.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    w2 = nb.tensor(rng.standard_normal((5, 1)), requires_grad=True)
    x = nb.tensor(rng.standard_normal((4, 3)), requires_grad=True)

    def critic(x, generator=None):
        h = nb.tanh(x @ w1)
        if generator is not None:
            h = nb.dropout(h, 0.3, generator=generator)
        return nb.sum(nb.softplus(h @ w2))

    def penalty(f, generator=None):  # WGAN-GP's: the input gradient's norm, trained
        (gx,) = nb.grad(f(x, generator), [x], create_graph=True)
        return nb.sum((nb.sqrt(nb.sum(gx * gx, axis=1)) - 1.0) ** 2)

    return critic, penalty, (w1, w2, x)


@pytest.mark.parametrize("dropout", [False, True])
def test_create_graph_through_jit_differentiates_again_as_eager_mode(dropout):
    critic, penalty, leaves = _critic_and_penalty()
    # (the jitted forward and the eager one draw the same dropout mask from equal generators)
    want = nb.grad(penalty(critic, nb.Generator(5) if dropout else None), leaves)
    got = nb.grad(penalty(jit(critic), nb.Generator(5) if dropout else None), leaves)
    for a, b in zip(got, want):
        nt.assert_close(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_create_graph_through_jit_to_third_order():
    x = nb.tensor([0.3, -0.5, 1.2], dtype=nb.float64, requires_grad=True)
    f = jit(lambda x: nb.sum(nb.tanh(x) ** 2))
    (g,) = nb.grad(f(x), [x], create_graph=True)
    (gg,) = nb.grad(nb.sum(g), [x], create_graph=True)
    (ggg,) = nb.grad(nb.sum(gg), [x])
    t = np.tanh(x.numpy())
    nt.assert_close(g.numpy(), 2 * t * (1 - t * t), rtol=1e-12)
    nt.assert_close(gg.numpy(), (2 - 6 * t * t) * (1 - t * t), rtol=1e-12)
    nt.assert_close(
        ggg.numpy(), (-12 * t) * (1 - t * t) ** 2 - (2 - 6 * t * t) * 2 * t * (1 - t * t)
    )


def test_create_graph_through_jit_refuses_what_a_replay_would_change():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    count = nb.zeros(2)

    @jit
    def counted(x):
        count.add_(x * w)  # a write into a captured tensor, which the gradient reads
        return (count * w).sum()

    @jit
    def branched(x):
        return nb.cond(nb.sum(x) > 0, lambda a: a * w * w, lambda a: a * w, [x]).sum()

    for f, why in ((counted, "captured tensor"), (branched, "control flow")):
        out = f(nb.ones(2))
        with pytest.raises(nb.UnsupportedError, match=f"create_graph.*{why}"):
            nb.grad([out], [w], create_graph=True)
        assert nb.grad([f(nb.ones(2))], [w])[0].shape == (2,)  # first order still works


def test_in_place_writes_to_captured_tensors_run_every_call():
    count = nb.zeros(())
    w = nb.tensor([2.0], requires_grad=True)

    @jit
    def f(x):
        count.add_(1.0)  # a side effect: nothing returned depends on it
        return (x * w).sum()

    x = nb.ones(1)
    f(x)
    f(x).backward()  # backward runs the gradient ops only: no third increment
    with nb.no_grad():
        f(x)
    _close(count.numpy(), 3.0)
    _close(w.grad.numpy(), [1.0])


def test_an_output_changed_before_backward_is_caught():
    w = nb.tensor([0.5, 1.0], requires_grad=True)
    y = jit(lambda x: (x * w).exp())(nb.ones(2))  # exp's gradient reads its output
    y.add_(1.0)
    with pytest.raises(nb.GradientError, match="modified in place"):
        y.sum().backward()


def test_a_parameter_that_starts_requiring_grad_retraces():
    w = nb.tensor([3.0])
    f, calls = _counting(lambda x: (x * w).sum())
    f(nb.ones(1))
    w.requires_grad_()
    f(nb.tensor([2.0])).backward()
    _close(w.grad.numpy(), [2.0])
    assert len(calls) == 2


def test_methods_bind_their_instance():
    class Scale:
        def __init__(self, factor):
            self.factor = nb.tensor([factor])

        @jit
        def __call__(self, x):
            return x * self.factor

    x = nb.ones(1)
    _close(Scale(2.0)(x).numpy(), [2.0])
    _close(Scale(3.0)(x).numpy(), [3.0])  # another instance: another signature


def test_in_place_writes_to_inputs_are_refused():
    def f(x):
        x.add_(1.0)
        return x * 2

    with pytest.raises(nb.UnsupportedError, match="writes the input %x in place"):
        jit(f)(nb.ones(2))


def test_jit_inside_a_program_records_inline():
    f = jit(lambda x: nb.relu(x) * 2)
    main = nb.Program()
    with nb.program_guard(main):
        out = f(nb.static.data("x", [-1, 3]))
    assert [n.op.name for n in main.global_block().ops] == ["relu", "full", "mul"]
    (value,) = nb.Executor().run(main, {"x": -np.ones((2, 3), np.float32)}, [out], nb.Scope())
    _close(value, np.zeros((2, 3)))


def test_train_and_eval_modes_get_their_own_traces():
    from nbflow import nn

    model = nn.Sequential(nn.Linear(4, 4, generator=nb.Generator(0)), nn.Dropout(0.5))

    @nb.jit
    def forward(x):
        return model(x)

    x = nb.ones(8, 4)
    with nb.no_grad():
        model.eval()
        first = forward(x).numpy()
        model.train()
        dropped = forward(x).numpy()
        model.eval()
        again = forward(x).numpy()
    assert np.array_equal(first, again)  # eval: deterministic, no dropout
    assert (dropped == 0).any() and not (first == 0).any()


def test_a_mode_flag_set_directly_or_a_new_submodule_selects_another_trace():
    # the flags are cached per module until any module attribute changes: a flag assigned
    # by hand on a submodule, or a submodule added, must not reuse the old trace
    from nbflow import nn

    model = nn.Sequential(nn.Linear(4, 4, generator=nb.Generator(0)))

    @nb.jit
    def forward(x):
        return model(x)

    x = nb.ones(8, 4)
    with nb.no_grad():
        model.eval()
        plain = forward(x).numpy()
        model.append(nn.Dropout(0.5))  # a new module starts in training mode
        dropped = forward(x).numpy()
        model[1].training = False  # by hand, not through eval()
        again = forward(x).numpy()
    assert (dropped == 0).any() and not (plain == 0).any()
    assert np.array_equal(plain, again)
    assert len(forward.cache) == 3


def test_assigning_an_executor_makes_later_calls_run_on_it():
    runs = []

    class Counting(nb.Executor):
        def run(self, *args, **kwargs):
            runs.append(1)
            return super().run(*args, **kwargs)

    @nb.jit
    def f(x):
        return x * 2.0

    x = nb.tensor(np.ones(3, np.float32))
    f(x)  # traced with the default executor
    exe = Counting(fuse=False)
    f.executor = exe
    assert f.executor is exe and f.executors["cpu"] is exe
    np.testing.assert_array_equal(f(x).numpy(), [2, 2, 2])
    assert runs == [1]


def test_detach_under_jit_stops_the_gradient_as_in_eager_mode():
    def f(a):
        return nb.sum(a * a.detach())

    x = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (want,) = nb.grad(f(x), [x])
    (got,) = nb.grad(jit(f)(x), [x])
    nt.assert_close(got.numpy(), want.numpy())  # x, not 2 x
    nt.assert_close(got.numpy(), x.numpy())


def test_a_jitted_function_returns_a_namedtuple_as_it_was_built():
    from collections import namedtuple

    Pair = namedtuple("Pair", "doubled shifted")

    @nb.jit
    def pair(x):
        return Pair(x * 2, [x + 1, {"y": x - 1}])

    x = nb.tensor(np.arange(3.0, dtype=np.float32), requires_grad=True)
    out = pair(x)
    assert type(out) is Pair and isinstance(out.shifted, list)
    np.testing.assert_array_equal(out.doubled.numpy(), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(out.shifted[1]["y"].numpy(), [-1.0, 0.0, 1.0])
    (out.doubled.sum() + out.shifted[0].sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])
