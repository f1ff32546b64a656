"""Reliability: errors that name the op, its arguments' shapes and the user's line (eager and
graph alike), tracebacks without nbflow's frames, the NaN/Inf check mode, and the memory
budget."""

import functools
import json
import os
import traceback

import numpy as np
import pytest
from test_all_ops import SAMPLES

import nbflow as nb
from nbflow.core import REGISTRY, STATE, Spec, Trace, errors, use_trace
from nbflow.ops import BUILTIN

HERE = os.path.basename(__file__)


def _call(op, args, attrs):
    return op(*args, **attrs)  # every op called by the error tests is called from this line


CALL_LINE = _call.__code__.co_firstlineno + 1


def line_of(marker: str) -> int:
    """The line of this file that holds `marker` in a comment."""
    with open(__file__) as f:
        lines = [i for i, text in enumerate(f, 1) if text.rstrip().endswith("# " + marker)]
    assert len(lines) == 1, marker
    return lines[0]


# ---------------------------------------------------------------- shape errors, every op


class Recorder(Trace):
    """A trace that runs ops as the current one does and keeps the first call of one op."""

    def __init__(self, inner, name):
        self.inner, self.name, self.call = inner, name, None

    def apply(self, op, args, attrs, **kw):
        if op.name == self.name and self.call is None:
            self.call = (list(args), dict(attrs))
        return self.inner.apply(op, args, attrs, **kw)


def _t(*shape, dtype="float64"):
    return nb.ones(*shape, dtype=dtype)


# ops without a gradient sample: a valid call for each (the shape tests mutate it)
EXTRA = {
    "sgd_update_": lambda: nb.sgd_update_(_t(3), _t(3), _t(3), lr=0.1),
    "sgd_matmul_update_": lambda: nb.sgd_matmul_update_(_t(2, 3), _t(2, 4), _t(4, 3), lr=0.1),
    "sgd_matmul_relu_grad_": lambda: nb.sgd_matmul_relu_grad_(_t(3, 4), _t(2, 4), _t(2, 3), lr=0.1),
    "rmsprop_update_": lambda: nb.rmsprop_update_(_t(3), _t(3), _t(3), _t(3), _t(3), lr=0.1),
    "adagrad_update_": lambda: nb.adagrad_update_(
        _t(3), _t(3), _t(3), nb.zeros((), dtype="int64"), lr=0.1
    ),
    "adam_update_": lambda: nb.adam_update_(
        _t(3), _t(3), _t(3), _t(3), _t(3), nb.zeros((), dtype="int64"), lr=0.1
    ),
    "batch_norm_update_stats_": lambda: nb.batch_norm_update_stats_(_t(2), _t(2), _t(3, 2, 2)),
}
for _name in sorted(BUILTIN):
    _op = REGISTRY[_name]
    if _name not in SAMPLES and hasattr(_op, "scalar_body") and len(_op.inputs) == 2:
        _d = "bool" if _name.startswith("logical") else "float64"
        if np.dtype(_d) not in _op.dtypes:  # (an integer op: gcd, lcm)
            _d = "int64"
        EXTRA[_name] = lambda op=_op, d=_d: op(_t(2, 3, dtype=d), _t(3, dtype=d))


def recorded_call(name):
    """(args, attrs) of the op `name` as its sample calls it."""
    if name in EXTRA:
        run = EXTRA[name]
    else:
        fn, inputs, attrs = SAMPLES[name]
        run = lambda: fn(*inputs(), **attrs)
    recorder = Recorder(STATE.trace, name)
    with nb.no_grad(), use_trace(recorder):
        run()
    assert recorder.call is not None, f"the sample of {name} does not call it"
    return recorder.call


def _mutations(shape):
    """Shapes near `shape` that a shape rule with a constraint should refuse."""
    out = []
    if shape:
        out.append(shape[:-1] + (shape[-1] + 3,))
        out.append((shape[0] + 3,) + shape[1:])
        out.append(shape[:-1])
    out.append(shape + (7,))
    return out


@functools.cache
def mismatched_call(name):
    """The sample call with one tensor's shape changed so that the shape rule refuses it, or
    None when no such change exists (the op has no shape constraint)."""
    op = REGISTRY[name]
    args, attrs = recorded_call(name)
    checked = op.check_attrs(dict(attrs))
    specs = [a.spec if isinstance(a, nb.Tensor) else None for a in args]
    for i, spec in enumerate(specs):
        if spec is None:
            continue
        for shape in _mutations(spec.shape):
            trial = list(specs)
            trial[i] = Spec(shape, spec.dtype)
            if any(s is None for s in trial):
                break  # scalars among the inputs: keep to the sample
            try:
                op.infer(trial, checked)
            except nb.ShapeError:
                bad = list(args)
                bad[i] = nb.zeros(*shape, dtype=spec.dtype)
                return bad, attrs
            except nb.NbflowError:
                continue
    return None


SHAPED = sorted(set(SAMPLES) | set(EXTRA))
# the ops whose shape rule refuses some shape (unary elementwise ops and the like have none)
CONSTRAINED = [n for n in SHAPED if mismatched_call(n) is not None]


def test_shape_error_tests_cover_most_ops():
    assert len(CONSTRAINED) >= 70, CONSTRAINED


@pytest.mark.parametrize("name", CONSTRAINED)
def test_shape_error_names_op_shapes_and_user_line_in_both_modes(name):
    args, attrs = mismatched_call(name)
    op = REGISTRY[name]
    with pytest.raises(nb.NbflowError) as eager:
        _call(op, args, attrs)
    message = str(eager.value)
    assert isinstance(eager.value, nb.ShapeError), message
    assert f"{name}(" in message
    for a in args:
        if isinstance(a, nb.Tensor):
            assert str(a.spec) in message  # both shapes, the good one and the bad one
    assert f"defined at {HERE}:{CALL_LINE}" in message
    assert eager.value.location == f"{HERE}:{CALL_LINE}"

    main = nb.Program()
    with nb.program_guard(main):
        graph_args = [
            nb.static.data(f"in{i}", a.shape, a.dtype) if isinstance(a, nb.Tensor) else a
            for i, a in enumerate(args)
        ]
        with pytest.raises(nb.NbflowError) as graph:
            _call(op, graph_args, attrs)
    assert type(graph.value) is type(eager.value)
    assert f"{name}(" in str(graph.value)
    assert f"defined at {HERE}:{CALL_LINE}" in str(graph.value)


def test_traceback_leaves_out_nbflow_frames(monkeypatch):
    def frames(exc):
        return [f.filename for f in traceback.extract_tb(exc.__traceback__)]

    with pytest.raises(nb.ShapeError) as e:
        nb.matmul(nb.zeros(2, 3), nb.zeros(4, 5))
    files = frames(e.value)
    internal = [f for f in files if errors.is_internal(f)]
    # only the public entry points stay (Op.__call__ and bind); the shape rule's frames go
    assert len(internal) <= 2 and all(f.endswith("op.py") for f in internal), files
    monkeypatch.setattr(errors, "FULL_TRACEBACK", True)
    with pytest.raises(nb.ShapeError) as e:
        nb.matmul(nb.zeros(2, 3), nb.zeros(4, 5))
    assert any(f.endswith(os.path.join("ops", "linalg.py")) for f in frames(e.value))


def test_kernel_key_is_named_when_no_kernel_fits():
    b = nb.tensor([True, False])
    with pytest.raises(nb.KernelNotFoundError) as e:
        nb.sub(b, b)
    assert e.value.key == ("sub", "cpu", "bool")
    assert "sub: no kernel for device 'cpu' and dtype bool" in str(e.value)
    assert f"defined at {HERE}:" in str(e.value)


def test_run_time_error_names_compile_time_and_run_time_shapes():
    main = nb.Program()
    with nb.program_guard(main):
        a = nb.static.data("a", (-1, 3))
        b = nb.static.data("b", (-1, 3))
        out = a + b  # MARK: run-time error
    feed = {"a": np.zeros((2, 3), "f4"), "b": np.zeros((4, 3), "f4")}
    with pytest.raises(nb.ShapeError) as e:
        nb.Executor().run(main, feed=feed, fetch_list=[out])
    message = str(e.value)
    assert "add(x: f32[2,3], y: f32[4,3])" in message  # run time
    assert "compile-time: x: f32[-1,3], y: f32[-1,3]" in message
    assert f"defined at {HERE}:{line_of('MARK: run-time error')}" in message


def test_errors_keep_their_builtin_classes():
    assert issubclass(nb.NumericalError, FloatingPointError)
    assert issubclass(nb.ResourceExhaustedError, MemoryError)
    assert issubclass(nb.OutOfRangeError, IndexError)
    for cls in (nb.NumericalError, nb.ResourceExhaustedError, nb.ShapeError, nb.ProgramError):
        assert issubclass(cls, nb.NbflowError)


def test_out_of_range_index_is_typed_in_eager_and_graph():
    x = nb.arange(4.0)
    with pytest.raises(nb.OutOfRangeError, match=f"index 7 is out of range.*defined at {HERE}"):
        nb.index_select(x, 0, nb.tensor([1, 7]))
    main = nb.Program()
    with nb.program_guard(main):
        v = nb.static.data("x", (4,))
        i = nb.static.data("i", (2,), "int64")
        out = nb.index_select(v, 0, i)
    for bad in (7, 4, -5, 2**62):
        with pytest.raises(nb.OutOfRangeError, match="out of range"):
            nb.Executor().run(main, {"x": np.zeros(4, "f4"), "i": np.array([0, bad])}, [out])


# ---------------------------------------------------------------- NaN/Inf check

# one op of each family: a NaN in its first input must be reported at that op, not at the
# ops its output flows into
FAMILIES = {
    "elementwise": "mul",
    "reduce": "sum",
    "linalg": "matmul",
    "shape": "transpose",
    "index": "index_select",
    "nn": "softmax",
    "conv": "conv2d",
    "pool": "max_pool2d",
    "norm": "layer_norm",
    "losses": "mse_loss",
}


def _poisoned_sample(name):
    fn, inputs, attrs = SAMPLES[name]
    args = [a.detach() for a in inputs()]
    bad = args[0].numpy().copy()
    bad.flat[0] = np.nan
    args[0] = nb.tensor(bad)  # made by tensor(), not by an op: the op under test is first
    return fn, args, attrs


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_nan_is_localised_to_the_op_that_made_it_in_eager_mode(family):
    name = FAMILIES[family]
    fn, args, attrs = _poisoned_sample(name)
    with nb.check_nan_inf(), pytest.raises(nb.NumericalError) as e:
        out = fn(*args, **attrs)
        nb.sum(out * 2.0)  # downstream ops see the NaN too, but come later
    assert e.value.op == name and e.value.nan_count >= 1 and e.value.inf_count == 0
    assert f"{name} produced" in str(e.value) and "defined at test_" in str(e.value)
    assert e.value.grad_of is None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_nan_is_localised_to_the_op_that_made_it_in_graph_mode(family):
    name = FAMILIES[family]
    fn, args, attrs = _poisoned_sample(name)
    main = nb.Program()
    with nb.program_guard(main):
        xs = [nb.static.data(f"in{i}", a.shape, a.dtype) for i, a in enumerate(args)]
        out = nb.sum(fn(*xs, **attrs) * 2.0)
    feed = {f"in{i}": a.numpy() for i, a in enumerate(args)}
    assert np.isnan(nb.Executor().run(main, feed, [out])[0])  # the check is off by default
    with pytest.raises(nb.NumericalError) as e:
        nb.Executor(check_nan_inf=True).run(main, feed, [out])
    producer = main.global_block().var(e.value.output[1:])._node
    assert e.value.op == name and producer.op.name == name
    assert f"output %{producer.outputs[0].name}" in str(e.value)
    assert e.value.location == producer.location and producer.location.startswith("test_")


def test_inf_in_a_gradient_names_the_forward_op_in_eager_mode():
    x = nb.tensor([4.0, 0.0, 1.0], requires_grad=True)
    with nb.check_nan_inf():
        loss = nb.sum(nb.sqrt(x))  # MARK: eager sqrt
        with pytest.raises(nb.NumericalError) as e:
            loss.backward()  # d sqrt(x) = 1 / (2 sqrt(x)) is inf at 0
    assert e.value.grad_of == "sqrt" and e.value.inf_count == 1
    assert f"in the gradient of sqrt defined at {HERE}:{line_of('MARK: eager sqrt')}" in str(
        e.value
    )


def test_inf_in_a_gradient_names_the_forward_op_in_graph_mode():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (3,))
        x.stop_gradient = False
        loss = nb.sum(nb.sqrt(x))  # MARK: graph sqrt
        nb.append_backward(loss, parameter_list=[x])
    grad = main.global_block().var("x@GRAD")
    assert grad._node.grad_of is not None
    feed = {"x": np.array([4.0, 0.0, 1.0], "f4")}
    with pytest.raises(nb.NumericalError) as e:
        nb.Executor(check_nan_inf=True).run(main, feed, [grad])
    assert e.value.grad_of == "sqrt"
    assert f"in the gradient of sqrt defined at {HERE}:{line_of('MARK: graph sqrt')}" in str(
        e.value
    )


def test_a_loaded_program_names_the_forward_op_of_a_gradient_op():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (3,))
        x.stop_gradient = False
        loss = nb.sum(nb.sqrt(x))  # MARK: saved sqrt
        nb.append_backward(loss, parameter_list=[x])
    doc = json.loads(nb.graph.serialize.dumps(main))
    saved = [op["grad_of"] for op in doc["blocks"][0]["ops"] if "grad_of" in op]
    where = f"{HERE}:{line_of('MARK: saved sqrt')}"
    assert {"type": "sqrt", "location": where} in saved
    assert all("grad_of" not in op for op in doc["blocks"][0]["ops"][:2])  # forward ops
    loaded = nb.graph.serialize.loads(json.dumps(doc))
    feed = {"x": np.array([4.0, 0.0, 1.0], "f4")}
    with pytest.raises(nb.NumericalError) as e:
        nb.Executor(check_nan_inf=True).run(loaded, feed, ["x@GRAD"])
    assert e.value.grad_of == "sqrt"
    assert f"in the gradient of sqrt defined at {where}" in str(e.value)


def test_the_check_is_off_by_default_and_the_context_restores_the_trace():
    plain = STATE.trace
    assert type(plain).__name__ == "EagerTrace"
    y = nb.log(nb.tensor([-1.0]))  # no check: NaN as numpy gives it
    assert np.isnan(y.numpy()[0])
    with nb.check_nan_inf():
        assert STATE.trace is not plain
        with pytest.raises(nb.NumericalError, match="log produced 1 NaN and 0 Inf"):
            nb.log(nb.tensor([-1.0, 2.0]))
        assert nb.log(nb.tensor([2.0])).numpy()[0] > 0  # finite results pass
        assert nb.argmax(nb.tensor([1.0, 3.0])).item() == 1  # integer outputs are not checked
        big = nb.full((100,), 60000.0, dtype="float16") * 1.0  # finite; its sum overflows
        assert np.isfinite(big.numpy()).all() and float(np.finfo("float16").max) < 100 * 60000.0
    assert STATE.trace is plain


def test_inf_counts_and_environment_switches(tmp_path):
    import subprocess
    import sys

    script = (
        "import nbflow as nb\n"
        "print(nb.get_memory_budget())\n"
        "try:\n"
        "    nb.div(nb.tensor([1.0, -1.0, 0.0]), nb.tensor([0.0, 0.0, 0.0]))\n"
        "except nb.NumericalError as e:\n"
        "    print(e.nan_count, e.inf_count)\n"
        "try:\n"
        "    nb.zeros(1000)\n"
        "except nb.ResourceExhaustedError as e:\n"
        "    print('budget')\n"
    )
    env = dict(os.environ, NBFLOW_CHECK_NAN_INF="1", NBFLOW_MAX_ALLOC_BYTES="1000")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert run.stdout.split("\n")[:3] == ["1000", "1 2", "budget"], run.stderr


@pytest.mark.parametrize(
    "make",
    [
        lambda ps: nb.optim.SGD(ps, lr=1e30),
        lambda ps: nb.optim.SGD(ps, lr=1e30, momentum=0.9),
        lambda ps: nb.optim.Adam(ps, lr=1e30),
    ],
    ids=["sgd", "momentum", "adam"],
)
def test_a_step_refused_by_the_nan_inf_check_loses_no_parameter(make):
    p = nb.nn.Parameter(nb.tensor([1.0, 2.0]))
    p.grad = nb.tensor([1e30, 1.0])  # lr * g overflows float32
    opt = make([p])
    with nb.check_nan_inf(), pytest.raises(nb.NumericalError, match="update_ produced"):
        opt.step()
    np.testing.assert_array_equal(p.numpy(), [1.0, 2.0])  # was overwritten with inf or NaN
    for v in opt.state[0].values():  # the state as it started (Adam's step count included)
        assert not v.numpy().any()
    x = nb.ones(3)
    with nb.check_nan_inf(), pytest.raises(nb.NumericalError):
        x.div_(nb.tensor([1.0, 0.0, 1.0]))  # any in-place op
    np.testing.assert_array_equal(x.numpy(), [1.0, 1.0, 1.0])
    p.grad = nb.tensor([1.0, 1.0])
    opt = nb.optim.SGD([p], lr=0.5)
    with nb.check_nan_inf():
        opt.step()  # a finite step goes through
    np.testing.assert_array_equal(p.numpy(), [0.5, 1.5])


def test_a_graph_mode_step_refused_by_the_check_loses_no_parameter():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [2])
        w = nb.static.create_parameter("w", [2])
        loss = nb.sum(w * x)
        nb.optim.SGD(lr=1e30).minimize(loss)
    scope = nb.Scope({"w": nb.tensor(np.array([1.0, 2.0], np.float32))})
    exe = nb.Executor(check_nan_inf=True)
    with pytest.raises(nb.NumericalError, match="sgd_update_ produced 0 NaN and 1 Inf in output"):
        exe.run(main, {"x": np.array([1e30, 1.0], np.float32)}, [loss], scope)
    np.testing.assert_array_equal(scope["w"].numpy(), [1.0, 2.0])  # was [-inf, 2.0]
    exe.run(main, {"x": np.array([1e-30, 1.0], np.float32)}, [loss], scope)  # a finite step
    w = scope["w"].numpy()
    assert np.isfinite(w).all() and abs(w[0]) < 1e-6 and w[1] < -1e29


# ---------------------------------------------------------------- memory budget


@pytest.fixture
def budget():
    before = nb.get_memory_budget()
    yield nb.set_memory_budget
    nb.set_memory_budget(before)


def test_allocation_over_the_budget_raises_before_allocating(budget):
    a = nb.ones(100)
    b = a + a  # a plan for this signature is cached now
    budget(256)
    assert (nb.ones(64) + 1).shape == (64,)  # 256 bytes: at the budget
    with pytest.raises(nb.ResourceExhaustedError) as e:
        a + a  # MARK: over budget
    message = str(e.value)
    assert "add(x: f32[100], y: f32[100])" in message and "400 bytes" in message
    assert "budget of 256 bytes" in message
    assert f"defined at {HERE}:{line_of('MARK: over budget')}" in message
    with pytest.raises(MemoryError):
        nb.zeros(65)
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (-1,))
        y = x * 2.0
    with pytest.raises(nb.ResourceExhaustedError):
        nb.Executor().run(main, {"x": np.zeros(100, "f4")}, [y])
    budget(None)
    assert (a + a).shape == b.shape
    # a plan step that ran under a larger budget checks again under the new one
    with nb.program_guard(main):
        s = nb.sum(nb.static.data("m", (-1, 100)), axis=1)
    exe, feed = nb.Executor(), {"m": np.zeros((5, 100), "f4")}
    assert exe.run(main, feed, [s])[0].shape == (5,)
    budget(16)
    with pytest.raises(nb.ResourceExhaustedError):
        exe.run(main, feed, [s])
    budget(None)
    assert exe.run(main, feed, [s])[0].shape == (5,)


def test_huge_and_overflowing_sizes_raise_resource_exhausted():
    with pytest.raises(nb.ResourceExhaustedError, match="need 4835703278458516698824704 bytes"):
        nb.zeros(2**40, 2**40)
    n = 1 << 20
    with pytest.raises(nb.ResourceExhaustedError):
        nb.zeros(n, 1, dtype="float64") + nb.zeros(1, n, dtype="float64")  # 8 TiB broadcast
    with pytest.raises(nb.ShapeError):
        nb.zeros(-1, 2)


def test_budget_bounds_fused_graph_mode_groups(budget):
    f = nb.jit(lambda a, b: (a + b) * 2.0)  # add and mul fuse into one kernel
    small = f(nb.ones(3, 1), nb.ones(1, 4))
    np.testing.assert_array_equal(small, np.full((3, 4), 4.0, "f4"))
    budget(1 << 30)
    with pytest.raises(nb.ResourceExhaustedError, match=r"fused add\+mul.*over the memory budget"):
        f(nb.ones(30000, 1), nb.ones(1, 30000))  # 3.35 GiB of output
    g = nb.jit(lambda a, b: nb.sum((a + b) * 2.0, axis=1))  # a fused reduction
    np.testing.assert_array_equal(g(nb.ones(3, 1), nb.ones(1, 4)), np.full(3, 16.0, "f4"))
    with pytest.raises(nb.ResourceExhaustedError, match="over the memory budget"):
        g(nb.ones(30000, 1), nb.ones(1, 30000))  # its broadcast input would be copied out
    budget(48)  # the outputs of the small call: 48 bytes, at the budget
    np.testing.assert_array_equal(f(nb.ones(3, 4), nb.ones(3, 4)), np.full((3, 4), 4.0, "f4"))
    with pytest.raises(nb.ResourceExhaustedError):
        f(nb.ones(3, 5), nb.ones(3, 5))


def test_budget_bounds_what_loaders_read(budget, tmp_path):
    path = tmp_path / "state.ckpt"
    nb.save_state({"w": nb.ones(1000)}, path)
    budget(1000)
    with pytest.raises(nb.errors.CheckpointError, match="budget"):
        nb.load_state(path)
    budget(None)
    assert nb.load_state(path)["w"].shape == (1000,)
    with pytest.raises(ValueError):
        budget(-1)


# ---------------------------------------------------------------- indices from data

# ops that index with integers taken from a tensor: each must refuse an index outside its axis
# before the (unchecked) kernel runs
INDEXING = {
    "getitem": lambda i: nb.arange(4.0)[nb.tensor([0, i])],
    "index_select": lambda i: nb.index_select(nb.ones(2, 4), 1, nb.tensor([0, i])),
    "take_along_axis": lambda i: nb.take_along_axis(nb.ones(2, 4), nb.tensor([[0], [i]]), axis=1),
    "scatter_add": lambda i: nb.scatter_add(nb.ones(2, 4), 1, nb.tensor([[0], [i]]), nb.ones(2, 1)),
    "index_put": lambda i: nb.index_put(nb.ones(4), (nb.tensor([0, i]),), nb.ones(2)),
    "embedding": lambda i: nb.embedding(nb.tensor([0, i]), nb.ones(4, 3)),
    "one_hot": lambda i: nb.one_hot(nb.tensor([0, i]), num_classes=4),
    "cross_entropy": lambda i: nb.cross_entropy(nb.ones(2, 4), nb.tensor([0, i])),
    "nll_loss": lambda i: nb.nll_loss(nb.ones(2, 4), nb.tensor([0, i])),
}
BAD_INDICES = [4, -5, 100_000, -100_000, 2**62, 2**63 - 1]


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indices_out_of_range_raise_before_the_kernel(name):
    make = INDEXING[name]
    assert make(3) is not None  # the last valid index works
    for i in BAD_INDICES:
        with pytest.raises(nb.OutOfRangeError) as e:
            make(i)
        assert isinstance(e.value, IndexError) and f"defined at {HERE}:" in str(e.value)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_scatter_reduce_refuses_out_of_range_and_negative_indices_in_every_mode(jit):
    def f(x, i, s):
        return nb.scatter_reduce(x, 0, i, s, "sum")

    run = nb.jit(f) if jit else f
    x, src = nb.zeros(4), nb.ones(2)
    np.testing.assert_array_equal(run(x, nb.tensor([0, 3]), src), [1, 0, 0, 1])
    for bad in (4, -1, -4, 2**62):  # PyTorch's scatter takes no negative index either
        with pytest.raises(nb.OutOfRangeError, match=f"must be in \\[0, 3\\], got {bad}"):
            run(x, nb.tensor([0, bad]), src)
    with pytest.raises(nb.OutOfRangeError, match="got -1"):  # index_reduce goes through it
        nb.index_reduce(nb.zeros(4, 2), 0, nb.tensor([-1]), nb.ones(1, 2), "amax")


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_put_counts_a_negative_index_from_the_end_once(jit):
    def f(x, i):
        return nb.put(x, i, nb.ones(1))

    run = nb.jit(f) if jit else f
    x = nb.zeros(3, 4)
    for i, want in ((-1, 11), (-12, 0), (11, 11)):
        assert np.flatnonzero(run(x, nb.tensor([i])).numpy()).tolist() == [want]
    for bad in (-13, -24, 12):  # -13 wrapped twice was -13 + 12 + 12 = 11
        with pytest.raises(nb.OutOfRangeError, match=f"index {bad} is out of range"):
            run(x, nb.tensor([bad]))


# ---------------------------------------------------------------- eager and graph agree

BAD_CALLS = {
    "no kernel for the dtype": (lambda a, b: nb.sub(a, b), [(3,), (3,)], "bool"),
    "attr of the wrong type": (lambda a: nb.leaky_relu(a, negative_slope="big"), [(3,)], "float32"),
    "axis out of range": (lambda a: nb.softmax(a, axis=5), [(2, 3)], "float32"),
    "float index": (lambda a, i: nb.index_select(a, 0, i), [(3,), (2,)], "float32"),
    "int requires float": (lambda a: nb.cross_entropy(a, a), [(2, 3)], "int64"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_eager_and_graph_raise_the_same_class(case):
    fn, shapes, dtype = BAD_CALLS[case]
    with pytest.raises(nb.NbflowError) as eager:
        fn(*[nb.zeros(*s, dtype=dtype) for s in shapes])
    main = nb.Program()
    with nb.program_guard(main), pytest.raises(nb.NbflowError) as graph:
        fn(*[nb.static.data(f"in{i}", s, dtype) for i, s in enumerate(shapes)])
    assert type(graph.value) is type(eager.value)
    assert eager.value.location == graph.value.location  # the same lambda line
    assert eager.value.location.startswith(HERE)


def test_nan_inside_a_control_flow_branch_is_localised():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3], "float64")
        flag = nb.static.data("flag", [], "bool")
        out = nb.cond(flag, lambda x: nb.log(x) * 2.0, lambda x: x * 2.0, [x])  # MARK: cond
    feed = {"x": np.array([1.0, -1.0, 2.0]), "flag": np.array(True)}
    assert np.isnan(nb.Executor().run(main, feed, [out])[0]).sum() == 1
    with pytest.raises(nb.NumericalError) as e:
        nb.Executor(check_nan_inf=True).run(main, feed, [out])
    assert e.value.op == "log" and e.value.nan_count == 1
    assert e.value.location == f"{HERE}:{line_of('MARK: cond')}"
    feed["flag"] = np.array(False)  # the other branch makes no NaN
    assert np.isfinite(nb.Executor(check_nan_inf=True).run(main, feed, [out])[0]).all()
