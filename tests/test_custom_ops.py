"""User-defined ops, declared with the public API the built-in ops use: an elementwise op from a
scalar body and a structured op from an @njit kernel and a shape rule, through eager mode,
gradients, @jit, append_backward with an Executor, save/load, and nbflow.testing's kit (which
must also catch a wrong gradient and a wrong kernel)."""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from numba import njit

import nbflow as nb
from nbflow import testing as nt
from nbflow.core import Spec
from nbflow.errors import KernelCompileError


def _swish_ref(x, beta=1.0):
    x64 = x.astype(np.float64)
    return (x64 / (1 + np.exp(-beta * x64))).astype(x.dtype)


@nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=_swish_ref, attrs={"beta": nb.Attr("float", 1.0)})
def user_swish(x, beta):
    """x * sigmoid(beta * x)."""
    return x / (1 + math.exp(-beta * x))


@user_swish.defgrad
def _user_swish_grad(g, out, x, beta):
    s = nb.sigmoid(x * beta)
    return (g * (s + beta * x * s * (1 - s)),)


# a structured op: the row-wise sum of squares of a matrix


@njit(cache=True)
def _sumsq_rows(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j] * x[i, j]
        out[i] = acc


def _sumsq_spec(x: Spec) -> Spec:
    if x.ndim != 2:
        raise nb.ShapeError(f"expects a matrix, got {x.ndim} dims")
    return Spec((x.shape[0],), x.dtype)


user_sumsq_rows = nb.Op(
    name="user_sumsq_rows",
    inputs=("x",),
    outputs=("out",),
    spec=_sumsq_spec,
    kernels={"cpu": _sumsq_rows, "cuda": None},
    dtypes=(nb.float32, nb.float64),
    ref=lambda x: (x.astype(np.float64) ** 2).sum(axis=1).astype(x.dtype),
)
user_sumsq_rows.defgrad(lambda g, out, x: (nb.unsqueeze(g, axis=-1) * 2 * x,))

RNG = np.random.default_rng(0)


def _x(*shape):
    return nb.tensor(RNG.uniform(-2, 2, shape), dtype="float64", requires_grad=True)


# ---------------------------------------------------------------- the kit on the user ops

test_user_swish_properties = nt.op_property_test(
    user_swish, attrs=[{}, {"beta": 2.0}], max_examples=6
)
test_user_sumsq_rows_properties = nt.op_property_test(
    user_sumsq_rows, shapes=nt.shapes(min_dims=2, max_dims=2).map(lambda s: (s,)), max_examples=6
)


# ---------------------------------------------------------------- eager, gradients, jit


def test_user_elementwise_op_eager_broadcasts_and_keeps_dtype():
    a = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    out = user_swish(nb.from_numpy(a), beta=2.0)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    nt.assert_close(out, _swish_ref(a, 2.0))
    assert user_swish(nb.tensor([1.0], dtype="float16")).dtype == np.float16
    with pytest.raises(nb.KernelNotFoundError, match="user_swish"):
        user_swish(nb.tensor([1, 2]))


def test_user_ops_gradients():
    nt.gradcheck(lambda x: user_swish(x, beta=1.5), [_x(2, 3)])
    nt.gradcheck(user_sumsq_rows, [_x(3, 4)])
    nt.gradgradcheck(user_swish, [_x(4)])


def test_user_structured_op_shape_rule_errors_name_the_op():
    with pytest.raises(nb.ShapeError, match=r"user_sumsq_rows\(x: f32\[3\]\)"):
        user_sumsq_rows(nb.tensor([1.0, 2.0, 3.0]))


def test_user_ops_under_jit():
    def f(x):
        return user_sumsq_rows(user_swish(x, beta=0.5)).sum()

    x = _x(3, 4)
    jitted = nb.jit(f)
    nt.assert_close(jitted(x), f(x))
    assert {n.op.name for n in jitted.program(x).global_block().ops} >= {
        "user_swish",
        "user_sumsq_rows",
    }
    assert nt.check_modes(f, x) == {"outputs": 1, "gradients": 1}


def _program():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 3], dtype="float64")
        w = nb.static.create_parameter("w", [3, 3], dtype="float64")
        loss = user_sumsq_rows(user_swish(x @ w, beta=2.0)).sum()
        (pair,) = nb.append_backward(loss, [w])
    return main, startup, loss, pair[1]


def test_user_ops_in_append_backward_and_executor():
    main, startup, loss, gw = _program()
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    xs = RNG.standard_normal((5, 3))
    loss_v, gw_v = exe.run(main, feed={"x": xs}, fetch_list=[loss, gw], scope=scope)
    w = nb.tensor(scope.value("w"), requires_grad=True)
    eager = user_sumsq_rows(user_swish(nb.tensor(xs) @ w, beta=2.0)).sum()
    eager.backward()
    nt.assert_close(loss_v, eager, rtol=1e-9, atol=1e-12)
    nt.assert_close(gw_v, w.grad, rtol=1e-9, atol=1e-12)


def test_program_with_user_ops_saves_and_loads(tmp_path):
    main, _, _, _ = _program()
    nb.save(main, tmp_path / "p.json")
    loaded = nb.load(tmp_path / "p.json")
    types = [n.op.name for n in loaded.global_block().ops]
    assert "user_swish" in types and "user_sumsq_rows" in types
    # in a process where the ops are not declared, loading names the op (and runs no code)
    code = textwrap.dedent(
        f"""
        import nbflow as nb
        try:
            nb.load({str(tmp_path / "p.json")!r})
        except nb.ProgramError as e:
            print("ProgramError:", e)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "ProgramError:" in run.stdout and "not registered" in run.stdout
    assert "'user_swish'" in run.stdout or "'user_sumsq_rows'" in run.stdout


# ---------------------------------------------------------------- bad declarations


def test_duplicate_name_raises_and_leaves_the_existing_op_alone():
    with pytest.raises(nb.NbflowError, match="'exp' is declared twice"):

        @nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=np.exp)
        def exp(x):
            return x

    nt.assert_close(nb.exp(nb.tensor([1.0], dtype="float64")), np.exp([1.0]))
    with pytest.raises(nb.NbflowError, match="'user_sumsq_rows' is declared twice"):
        nb.Op(
            name="user_sumsq_rows",
            inputs=("x",),
            outputs=("out",),
            spec=_sumsq_spec,
            kernels={"cpu": _sumsq_rows},
            dtypes=(nb.float64,),
        )


def test_unsupported_dtype_in_declaration_names_the_op():
    with pytest.raises(nb.DTypeError, match="user_longdouble_op"):

        @nb.elementwise(dtypes=[np.longdouble], ref=None)
        def user_longdouble_op(x):
            return x


def test_body_numba_cannot_compile_raises_a_typed_error_naming_op_device_and_dtype():
    @nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=None)
    def user_bad_body(x, y):
        return x.no_such_attribute + y

    for args in (
        (nb.tensor([1.0, 2.0]), nb.tensor([1.0, 2.0])),  # the specialised 1-D path
        (nb.tensor([[1.0, 2.0]]), nb.tensor([1.0])),  # the broadcasting path
    ):
        with pytest.raises(KernelCompileError, match=r"user_bad_body.*float32.*no_such_attr") as e:
            user_bad_body(*args)
        assert "device 'cpu'" in str(e.value)
        assert e.value.key == ("user_bad_body", "cpu", ("float32", "float32"))
    assert issubclass(KernelCompileError, nb.UnsupportedError)
    assert issubclass(KernelCompileError, nb.DTypeError)


def test_gradient_rule_with_the_wrong_arity_raises_gradient_error():
    @nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=np.multiply)
    def user_bad_arity(x, y):
        return x * y

    user_bad_arity.defgrad(lambda g, out, x, y: (g * y,))  # one value for two inputs
    x, y = _x(3), _x(3)
    with pytest.raises(nb.GradientError, match="user_bad_arity.*1 values for 2 inputs"):
        user_bad_arity(x, y).sum().backward()
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        a = nb.static.data("a", [-1, 3], dtype="float64")
        w = nb.static.create_parameter("w", [3], dtype="float64")
        with pytest.raises(nb.GradientError, match="user_bad_arity"):
            nb.append_backward(user_bad_arity(a, w).sum(), [w])


# ---------------------------------------------------------------- the kit can fail


@nb.elementwise(dtypes=(nb.float32, nb.float64), ref=np.sin)
def user_sin_wrong_grad(x):
    return math.sin(x)


user_sin_wrong_grad.defgrad(lambda g, out, x: (g * nb.sin(x),))  # should be cos


@nb.elementwise(dtypes=(nb.float32, nb.float64), ref=np.sin)
def user_sin_wrong_kernel(x):
    return math.sin(x) + (1e-3 if x > 0.5 else 0.0)  # wrong for part of the domain


user_sin_wrong_kernel.defgrad(lambda g, out, x: (g * nb.cos(x),))


def test_kit_catches_a_wrong_gradient():
    test = nt.op_property_test(user_sin_wrong_grad, max_examples=5)
    test("forward")  # the kernel is right
    with pytest.raises(nt.GradcheckError, match="gradient mismatch"):
        test("gradients")
    with pytest.raises(nt.GradcheckError):
        nt.gradcheck(user_sin_wrong_grad, [_x(3)])


def test_kit_catches_a_wrong_kernel():
    test = nt.op_property_test(user_sin_wrong_kernel, max_examples=20)
    with pytest.raises(AssertionError, match="user_sin_wrong_kernel"):
        test("forward")


def test_check_modes_reports_a_disagreement():
    calls = []

    def f(x):
        calls.append(1)  # the eager call and the trace see different constants
        return x * float(len(calls))

    with pytest.raises(AssertionError, match="eager and jit disagree"):
        nt.check_modes(f, np.ones(3))


def test_check_devices_skips_clearly():
    result = nt.check_devices(user_swish, nb.tensor([1.0]), skip=False)
    assert result["status"] == "skipped" and "no CUDA" in result["reason"]
    with pytest.raises(pytest.skip.Exception, match="no CUDA"):
        nt.check_devices(user_swish, nb.tensor([1.0]))


def test_example_custom_op_property_tests_and_trains():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "custom_op.py"
    spec = importlib.util.spec_from_file_location("custom_op_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # declares swish_beta (once per process: names are global)
    assert module.main(epochs=3) >= 0.9


def test_user_elementwise_op_fuses_with_builtin_ops():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 6], "float64")
        out = nb.tanh(user_swish(x * 2.0 + 1.0, beta=1.5)) - x
    feed = {"x": RNG.standard_normal((4, 6))}
    fused = nb.Executor(fuse=True).run(main, feed, [out])[0]
    plain = nb.Executor(fuse=False).run(main, feed, [out])[0]
    np.testing.assert_allclose(fused, plain, rtol=1e-12)
    xs = feed["x"]
    np.testing.assert_allclose(fused, np.tanh(_swish_ref(xs * 2 + 1, 1.5)) - xs, rtol=1e-12)
    text = nb.graph.explain(main, [out])
    fused_lines = [line for line in text.splitlines() if "fused #0" in line]
    assert any("user_swish(" in line for line in fused_lines), text
    assert "user_swish" in fused_lines[0].split("fused #0")[1], text


def test_gradcheck_counts_every_float_output():
    x = nb.tensor(np.array([0.5, -1.0]), requires_grad=True)
    nt.gradgradcheck(lambda a: a * 2.0, [x])  # a constant first gradient: zero second
    with pytest.raises(nt.GradcheckError, match="mismatch"):  # an output that lost its graph
        nt.gradcheck(lambda a: (a * 2.0, nb.tensor(a.numpy() ** 2)), [x])
    nt.gradcheck(lambda a: (a * 2.0, nb.argmax(a)), [x])  # an integer output has no gradient


@settings(max_examples=60, deadline=None)
@given(
    v16=nt.elements("float16", 0.1, 0.3),
    v32=nt.elements("float32", 0.1, 0.3),
    vector=nt.arrays("float32", (5,), noncontiguous=True),
)
def test_strategies_keep_their_bounds_and_layouts(v16, v32, vector):
    assert 0.1 <= v16 <= 0.3 and 0.1 <= v32 <= 0.3  # (rounding to the dtype left them)
    assert not vector.flags.c_contiguous  # (a vector's "transposed" layout was contiguous)
