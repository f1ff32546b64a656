"""Reliability: errors that name the op, its arguments' shapes and the user's line (eager and
graph alike), tracebacks without nbflow's frames, the NaN/Inf check mode, and the memory
budget."""

import os
import traceback

import numpy as np
import pytest
from test_all_ops import SAMPLES

import nbflow as nb
from nbflow import errors
from nbflow.core import REGISTRY, STATE, Spec, use_trace
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


class Recorder:
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
    "rmsprop_update_": lambda: nb.rmsprop_update_(_t(3), _t(3), _t(3), _t(3), _t(3), lr=0.1),
    "adam_update_": lambda: nb.adam_update_(
        _t(3), _t(3), _t(3), _t(3), _t(3), nb.zeros((), dtype="int64"), lr=0.1
    ),
    "batch_norm_update_stats_": lambda: nb.batch_norm_update_stats_(_t(2), _t(2), _t(3, 2, 2)),
}
for _name in sorted(BUILTIN):
    _op = REGISTRY[_name]
    if _name not in SAMPLES and hasattr(_op, "scalar_body") and len(_op.inputs) == 2:
        _d = "bool" if _name.startswith("logical") else "float64"
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


def test_shape_error_tests_cover_most_ops():
    constrained = [n for n in SHAPED if mismatched_call(n) is not None]
    assert len(constrained) >= 70, constrained


@pytest.mark.parametrize("name", SHAPED)
def test_shape_error_names_op_shapes_and_user_line_in_both_modes(name):
    found = mismatched_call(name)
    if found is None:
        pytest.skip("no shape change the rule refuses (no shape constraint)")
    args, attrs = found
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
    assert len(internal) <= 2 and all(f.endswith("core.py") for f in internal), files
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
