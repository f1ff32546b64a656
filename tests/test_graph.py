"""Graph mode: the same ops recorded into a Program, appended backward, pruning executor.

The parity test runs every differentiable op's sample (tests/test_all_ops.py) eagerly and as
a Program, and compares outputs and gradients: one declaration, two modes."""

import numpy as np
import pytest
from test_all_ops import SAMPLES

import nbflow as nb
from nbflow import testing as nt


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_eager_and_graph_agree_on_values_and_gradients(name):
    fn, make_inputs, attrs = SAMPLES[name]
    inputs = make_inputs()
    outs = _as_tuple(fn(*inputs, **attrs))
    rng = np.random.default_rng(1)
    cots = [rng.standard_normal(o.shape) for o in outs]
    live = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
    eager_grads = nb.grad(
        [o for o, _ in live], inputs, [nb.tensor(c) for _, c in live], allow_unused=True
    )

    main = nb.Program()
    with nb.program_guard(main):
        xs = []
        for i, t in enumerate(inputs):
            v = nb.static.data(f"in{i}", t.shape, t.dtype)
            v.stop_gradient = False  # differentiate with respect to the fed inputs
            xs.append(v)
        gouts = _as_tuple(fn(*xs, **attrs))
        terms = [nb.sum(o * nb.tensor(c)) for o, c in zip(gouts, cots) if not o.stop_gradient]
        loss = terms[0] if len(terms) == 1 else nb.add_n(*terms)
        pairs = {id(p): g for p, g in nb.append_backward(loss, parameter_list=xs)}
    fetch = list(gouts) + [pairs[id(x)] for x in xs if id(x) in pairs]
    feed = {f"in{i}": t.numpy() for i, t in enumerate(inputs)}
    results = nb.Executor().run(main, feed=feed, fetch_list=fetch, scope=nb.Scope())
    for o, r in zip(outs, results):
        nt.assert_close(r, o.numpy(), msg=f"{name} forward")
    graph_grads = iter(results[len(gouts) :])
    for x, g in zip(xs, eager_grads):
        if id(x) in pairs:
            nt.assert_close(next(graph_grads), g.numpy(), msg=f"{name} gradient")
        else:
            assert g is None or not np.any(g.numpy()), f"{name}: graph lost a gradient"


def _scaled_by_its_sum(a):
    with nb.no_grad():  # a constant factor: its gradient is not taken
        s = nb.sum(a)
    return a * s


def test_no_grad_in_a_program_stops_gradients_as_in_eager_mode():
    x0 = np.array([1.0, 2.0, 3.0])
    eager = nb.tensor(x0, requires_grad=True)
    (want,) = nb.grad(nb.sum(_scaled_by_its_sum(eager)), [eager])
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3], "float64")
        x.stop_gradient = False
        loss = nb.sum(_scaled_by_its_sum(x))
        ((_, g),) = nb.append_backward(loss, parameter_list=[x])
    (got,) = nb.Executor().run(main, {"x": x0}, [g], nb.Scope())
    nt.assert_close(got, want.numpy())  # 6 each, not 12
    jitted = nb.jit(_scaled_by_its_sum)
    with nb.no_grad():  # traced under no_grad, the program still serves calls with gradients
        jitted(nb.tensor(x0))
    (got,) = nb.grad(nb.sum(jitted(eager)), [eager])
    nt.assert_close(got, want.numpy())


def _mlp_program():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [4, 8])
        b1 = nb.static.create_parameter("b1", [8], initializer=("constant", 0.0))
        w2 = nb.static.create_parameter("w2", [8, 3])
        hidden = nb.relu(x @ w1 + b1)
        logits = hidden @ w2
        loss = nb.cross_entropy(logits, y)
        grads = nb.append_backward(loss)
        for p, g in grads:
            nb.sub_(p, g * 0.5)
    return main, startup, loss, logits, grads


def test_static_training_reduces_the_loss():
    main, startup, loss, _, grads = _mlp_program()
    assert [p.name for p, _ in grads] == ["w1", "b1", "w2"]
    exe, scope = nb.Executor(), nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    params = ["w1", "b1", "w2"]
    losses = [exe.run(main, {"x": x, "y": y}, [loss] + params, scope)[0] for _ in range(40)]
    assert losses[-1] < 0.5 * losses[0]


def test_pruning_runs_only_what_the_target_needs():
    main, _, loss, logits, _ = _mlp_program()
    block = main.global_block()
    forward = nb.graph.needed_ops(block, [logits])
    assert [n.op.name for n in forward] == ["matmul", "add", "relu", "matmul"]
    assert len(nb.graph.needed_ops(block, [loss])) == 5  # forward + cross_entropy
    pruned = nb.graph.prune(main, [logits])
    assert len(pruned.global_block().ops) == 4 < len(block.ops)


def test_a_program_writing_a_data_var_in_place_leaves_the_fed_value_alone():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [2, 3])
        nb.mul_(nb.reshape(x, -1)[1:], 2.0)  # through a view of it, too
        y = x + 0.0
    want = np.array([[1, 2, 2], [2, 2, 2]], np.float32)
    for fed in (np.ones((2, 3), np.float32), nb.ones(2, 3)):
        (got,) = nb.Executor().run(main, {"x": fed}, [y], nb.Scope())
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(fed), np.ones((2, 3)))  # the caller's value


@pytest.mark.parametrize("tied", [False, True])
def test_depend_keeps_a_write_that_nothing_reads_in_this_run(tied):
    # a composed optimizer's state: written by this step, read by the next one
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3])
        block = main.global_block()
        count = block.create_var("count", [], "int64", persistable=True, stop_gradient=True)
        nb.ops.add_(count, 1)
        y = x * 2.0
        if tied:
            nb.ops.depend_(y, count)
    scope = nb.Scope({"count": nb.tensor(np.array(0))})
    exe = nb.Executor()
    for _ in range(3):
        (got,) = exe.run(main, {"x": np.ones(3, np.float32)}, [y], scope)
        np.testing.assert_array_equal(got, [2.0, 2.0, 2.0])  # depend_ changes nothing
    assert scope["count"].item() == (3 if tied else 0)


def test_depend_changes_nothing_in_any_dtype():
    # (a float16 target is computed through a float32 copy on the CPU: the copy is filled)
    for dtype in ("float16", "float32", "int64", "bool"):
        x = nb.tensor(np.array([1.5, -2.0, 0.0]).astype(dtype))
        before = x.numpy().copy()
        out = nb.ops.depend_(x, nb.ones(2))
        assert out is x
        np.testing.assert_array_equal(x.numpy(), before)


@pytest.mark.parametrize("on", [False, True])
def test_an_in_place_write_through_a_view_is_kept_for_its_base(on):
    # mul_ writes u through a reshape: fetching u (or reading it after) needs the write, as in
    # eager mode; a write after the last read of its memory is still pruned
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [2, 3])
        u = x * 2.0
        nb.mul_(nb.reshape(u, -1), 3.0)
        v = u + 1.0
        w = x * 5.0
        nb.add_(nb.reshape(w, -1), 1.0)  # dead: nothing reads w after it
    feed = {"x": np.ones((2, 3), np.float32)}
    exe = nb.Executor(fuse=on, reuse_memory=on)
    got_u, got_v = exe.run(main, feed, [u, v], scope=nb.Scope())
    eager = nb.tensor(feed["x"]) * 2.0
    nb.mul_(nb.reshape(eager, -1), 3.0)
    np.testing.assert_array_equal(got_u, eager.numpy())
    np.testing.assert_array_equal(got_v, eager.numpy() + 1.0)
    names = [n.op.name for n in nb.graph.needed_ops(main.global_block(), [u, v])]
    assert names.count("mul_") == 1 and "add_" not in names


def test_printer_shows_types_backward_and_inplace_writes():
    main, *_ = _mlp_program()
    text = str(main)
    assert text.splitlines()[0].startswith("program(%x: f32[-1,4], %w1: f32[4,8] persistable")
    assert "  %t0: f32[-1,8] = matmul(%x, %w1)" in text
    assert "  -- backward --" in text
    assert "  %w1!: f32[4,8] = sub_(%w1, " in text  # an in-place parameter update


def test_feed_and_fetch_errors_are_typed_and_name_the_var():
    main, startup, loss, logits, _ = _mlp_program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    x = np.zeros((2, 4), np.float32)
    declared = f"defined at {main.global_block().var('x').location})"  # the data var's line
    assert declared.startswith("defined at test_graph.py:")
    with pytest.raises(nb.ShapeError, match="feed 'x'") as e:
        exe.run(main, {"x": np.zeros((2, 5), np.float32)}, [logits], scope)
    assert str(e.value).endswith(declared)
    with pytest.raises(nb.DTypeError, match="feed 'x'") as e:
        exe.run(main, {"x": np.zeros((2, 4), np.int64)}, [logits], scope)
    assert str(e.value).endswith(declared)
    with pytest.raises(nb.ShapeError, match="feed 'x': cannot make an array") as e:
        exe.run(main, {"x": [[1.0, 2.0], [3.0]]}, [logits], scope)
    assert str(e.value).endswith(declared)
    with pytest.raises(nb.ProgramError, match="missing feed for %y"):
        exe.run(main, {"x": x}, [loss], scope)
    for feed, fetch in (({"x": x}, ["nope"]), ({"nope": x}, [logits])):
        with pytest.raises(nb.ProgramError, match="no var named 'nope'") as e:
            exe.run(main, feed, fetch, scope)  # named at this run call
        assert str(e.value).endswith(f"(defined at test_graph.py:{e.tb.tb_lineno})")
    with pytest.raises(nb.ProgramError, match="startup"):
        exe.run(main, {"x": x}, [logits], nb.Scope())


def test_bad_ops_fail_where_they_are_built():
    with nb.program_guard(nb.Program()):
        a = nb.static.data("a", [-1, 3])
        with pytest.raises(nb.ShapeError, match=r"matmul\(a: f32\[-1,3\], b: f32\[4,2\]\)"):
            a @ nb.static.data("b", [4, 2])
        with pytest.raises(nb.KernelNotFoundError):
            nb.sub(nb.static.data("c", [2], "bool"), True)
        with pytest.raises(nb.UnsupportedError, match="truth value"):
            bool(a > 0)


def test_unknown_dims_follow_the_data():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 3])
        y = nb.softmax(x * 2, axis=-1).sum(axis=0)
    assert y.shape == (3,)
    for n in (1, 5):
        data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        (out,) = nb.Executor().run(main, {"x": data}, [y], nb.Scope())
        nt.assert_close(out, nb.softmax(nb.tensor(data) * 2, axis=-1).sum(axis=0).numpy())


def test_verify_accepts_built_programs_and_rejects_reordered_reads():
    main, *_ = _mlp_program()
    nb.graph.verify(main)
    block = main.global_block()
    update = next(i for i, n in enumerate(block.ops) if n.op.name == "sub_")
    # move the first parameter update before the forward pass: the forward would then read
    # the updated parameter, not the value it was built for
    block.ops.insert(0, block.ops.pop(update))
    with pytest.raises(nb.ProgramError, match="after an in-place write"):
        nb.graph.verify(main)


def test_verify_rejects_a_wrong_declared_shape():
    main = nb.Program()
    with nb.program_guard(main):
        y = nb.static.data("x", [-1, 3]) * 2
    y.shape = (5, 5)
    with pytest.raises(nb.ProgramError, match=r"mul .*declared f32\[5,5\]"):
        nb.graph.verify(main)


def test_explain_names_targets_and_kernels():
    main, _, loss, logits, _ = _mlp_program()
    text = nb.graph.explain(main, [logits], memory=False, kernels=False)  # the ops alone
    lines = text.splitlines()
    assert lines[0].startswith("runs (for %t") and "kernel=(matmul, cpu, f32)" in lines[0]
    assert sum(line.startswith("runs") for line in lines) == 4
    assert "pruned" in lines[-1] and "sub_" in lines[-1]


GOLDEN_MLP = """\
program(%x: f32[-1,4], %w1: f32[4,8] persistable, %b1: f32[8] persistable, %w2: f32[8,3] persistable, %y: i64[-1]) {
  %t0: f32[-1,8] = matmul(%x, %w1)
  %t1: f32[-1,8] = add(%t0, %b1)
  %t2: f32[-1,8] = relu(%t1)
  %t3: f32[-1,3] = matmul(%t2, %w2)
  %t4: f32[] = cross_entropy(%t3, %y) [reduction='mean', ignore_index=-100, label_smoothing=0.0]
  -- backward --
  %t5: f32[] = full_like(%t4) [value=1]
  %t6: f32[-1,3] = cross_entropy_grad(%t5, %t3, %y) [reduction='mean', ignore_index=-100, label_smoothing=0.0]
  %t7: f32[3,8] = matrix_transpose(%w2)
  %t8: f32[-1,8] = matmul(%t6, %t7)
  %t9: f32[8,-1] = matrix_transpose(%t2)
  %w2@GRAD: f32[8,3] = matmul(%t9, %t6)
  %t11: f32[-1,8] = relu_grad(%t1, %t8)
  %b1@GRAD: f32[8] = sum_to_like(%t11, %b1)
  %t13: f32[4,-1] = matrix_transpose(%x)
  %w1@GRAD: f32[4,8] = matmul(%t13, %t11)
  %w1!: f32[4,8], %w1@GRAD!: f32[4,8] = sgd_update_(%w1, %w1@GRAD, %w1@GRAD) [lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False]
  %b1!: f32[8], %b1@GRAD!: f32[8] = sgd_update_(%b1, %b1@GRAD, %b1@GRAD) [lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False]
  %w2!: f32[8,3], %w2@GRAD!: f32[8,3] = sgd_update_(%w2, %w2@GRAD, %w2@GRAD) [lr=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False]
}
"""


def test_printer_golden_mlp_forward_backward_and_updates():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [4, 8])
        b1 = nb.static.create_parameter("b1", [8], initializer=("constant", 0.0))
        w2 = nb.static.create_parameter("w2", [8, 3])
        loss = nb.cross_entropy(nb.relu(x @ w1 + b1) @ w2, y)
        nb.optim.SGD(lr=0.1).minimize(loss)
    assert str(main) + "\n" == GOLDEN_MLP


def test_zero_d_feed_and_non_differentiable_ops_in_backward():
    main = nb.Program()
    with nb.program_guard(main):
        s = nb.static.data("s", [])
        w = nb.static.create_parameter("w", [3])
        loss = nb.sum(w * s + nb.sign(w) + nb.floor_div(w, 2.0))  # sign, floor_div: no grad
        (pair,) = nb.append_backward(loss)
    scope = nb.Scope()
    scope["w"] = nb.tensor([1.0, -2.0, 3.0])
    (g,) = nb.Executor().run(main, {"s": np.float32(3)}, [pair[1]], scope)
    nt.assert_close(g, np.full(3, 3.0, np.float32))


def test_programs_sharing_a_scope_keep_their_own_captured_tensors():
    a, b = nb.tensor([1.0]), nb.tensor([5.0])
    progs = []
    for t in (a, b):
        p = nb.Program()
        with nb.program_guard(p):
            out = nb.static.data("x", [1]) * t
        progs.append((p, out))
    scope, exe = nb.Scope(), nb.Executor()
    results = [exe.run(p, {"x": np.ones(1, np.float32)}, [o], scope)[0] for p, o in progs]
    assert [r.tolist() for r in results] == [[1.0], [5.0]]


def test_no_grad_set_and_stop_gradient_get_no_gradient_ops():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        w1 = nb.static.create_parameter("w1", [4, 8])
        w2 = nb.static.create_parameter("w2", [8, 3])
        frozen = nb.static.create_parameter("frozen", [3], trainable=False)
        loss = nb.mean(nb.relu(x @ w1) @ w2 + frozen)
        before = len(main.global_block().ops)
        pairs = nb.append_backward(loss, no_grad_set=["w1"])
    assert [p.name for p, _ in pairs] == ["w2"]
    assert not any("w1@GRAD" in v for v in main.global_block().vars)
    with nb.program_guard(nb.Program()):
        y = nb.static.data("y", [3])
        v = nb.static.create_parameter("v", [3])
        assert len(nb.append_backward(nb.sum(y * v), parameter_list=[v])) == 1
    assert len(main.global_block().ops) > before


class _Scaled(nb.nn.Module):
    """A user module making its own parameter from a creation op."""

    def __init__(self, n):
        super().__init__()
        self.fc = nb.nn.Linear(n, 2)
        self.scale = nb.nn.Parameter(nb.ones(2) * 0.5)

    def forward(self, x):
        return self.fc(x) * self.scale


def _two_class_batch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def test_modules_made_inside_program_guard_train_as_in_eager_mode():
    x, y = _two_class_batch()
    nb.manual_seed(3)
    eager = _Scaled(4)
    opt = nb.optim.SGD(eager.parameters(), lr=0.5)
    for _ in range(3):
        loss = nb.cross_entropy(eager(nb.tensor(x)), nb.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()

    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        nb.manual_seed(3)
        model = _Scaled(4)  # (made eagerly: its parameters are tensors, not vars)
        xv = nb.static.data("x", [-1, 4])
        yv = nb.static.data("y", [-1], dtype="int64")
        loss = nb.cross_entropy(model(xv), yv)
        nb.optim.SGD(model.parameters(), lr=0.5).minimize(loss)
    ops = main.global_block().ops
    assert not any(n.op.name in ("uniform", "normal") for n in ops)  # init ran eagerly
    updates = [n for n in ops if n.op.inplace]
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    for _ in range(3):
        exe.run(main, {"x": x, "y": y}, [loss, *updates], scope)
    for got, want in zip(model.parameters(), eager.parameters()):
        nt.assert_close(got, want.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(model.scale.numpy(), 0.5)  # the program trained the module's own


def test_an_eval_program_traced_after_model_eval_shares_the_trained_parameters():
    x, y = _two_class_batch()
    nb.manual_seed(0)
    model = nb.nn.Sequential(
        nb.nn.Linear(4, 16),
        nb.nn.BatchNorm1d(16),
        nb.nn.ReLU(),
        nb.nn.Dropout(0.5),
        nb.nn.Linear(16, 2),
    )
    train, startup = nb.Program(), nb.Program()
    with nb.program_guard(train, startup):
        loss = nb.cross_entropy(
            model(nb.static.data("x", [-1, 4])), nb.static.data("y", [-1], "int64")
        )
        nb.optim.SGD(model.parameters(), lr=0.1).minimize(loss)
    test = nb.Program()  # PaddlePaddle's clone(for_test=True): the forward traced in eval mode
    model.eval()
    with nb.program_guard(test):
        logits = model(nb.static.data("x", [-1, 4]))
    model.train()
    updates = [n for n in train.global_block().ops if n.op.inplace]
    exe = nb.Executor()
    for _ in range(5):
        exe.run(train, {"x": x, "y": y}, [loss, *updates])
    first = exe.run(test, {"x": x}, [logits])[0]
    np.testing.assert_array_equal(exe.run(test, {"x": x}, [logits])[0], first)  # no dropout
    model.eval()
    nt.assert_close(first, model(nb.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)  # trained, eval


def test_a_program_names_module_state_as_paddle_layers_do():
    first, second, norm = nb.nn.Linear(4, 3), nb.nn.Linear(3, 3), nb.nn.BatchNorm1d(3)
    second.weight = second.weight.detach().clone().requires_grad_()  # a new tensor
    tied = nb.nn.Linear(4, 3)
    tied.weight = first.weight  # a shared tensor keeps the name it got first
    k = int(first.weight._name.split(".")[0].split("_")[1])  # (earlier tests made Linears)
    assert (second.weight._name, tied.weight._name, tied.bias._name) == (
        f"linear_{k + 1}.weight",
        f"linear_{k}.weight",
        f"linear_{k + 2}.bias",
    )
    loose = nb.tensor(np.ones(3, np.float32))
    main = nb.Program()
    with nb.program_guard(main):
        taken = nb.static.data(f"linear_{k}.bias", [-1, 4])  # a feed holding a module's name
        out = (norm(second(first(taken))) + tied(taken)) * loose
    names = [v.name for v in main.global_block().vars.values() if v.persistable]
    assert names[0] == f"linear_{k}.weight" and names[1].startswith(f"linear_{k}.bias_")
    assert set(names) >= {f"linear_{k + 1}.weight", f"linear_{k + 2}.bias"}
    assert set(names) >= {norm.weight._name, norm.running_mean._name}
    assert norm.running_mean._name.startswith("batchnorm1d_")
    assert any(n.startswith("captured") for n in names)  # a tensor no module holds
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    (got,) = nb.Executor().run(main, {taken.name: x}, [out], nb.Scope())
    want = (norm(second(first(nb.tensor(x)))) + tied(nb.tensor(x))) * loose
    nt.assert_close(got, want.detach().numpy(), rtol=1e-5, atol=1e-6)
