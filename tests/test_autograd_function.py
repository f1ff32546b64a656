"""nbflow.autograd.Function (PyTorch's custom autograd functions) and torch.autograd's other
names: gradients against float64 finite differences and against the same function written
with built-in ops, the ctx API (saved tensors and their in-place check, needs_input_grad,
mark_dirty, mark_non_differentiable, set_materialize_grads), errors, double backward,
once_differentiable, setup_context, @jit (eager against graph, append_backward), and
gradcheck / anomaly mode / grad mode / Variable; torch under importorskip."""

import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import nbflow as nb
from nbflow import autograd as ag
from nbflow.testing import check_modes
from nbflow.testing import gradcheck as projected_gradcheck

RNG = np.random.default_rng(0)


def leaf(*shape, low=-2.0, high=2.0):
    return nb.tensor(RNG.uniform(low, high, shape), dtype="float64", requires_grad=True)


def same(got, want, rtol=1e-10, atol=1e-12):
    got = got.numpy() if isinstance(got, nb.Tensor) else np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol, atol)


class Exp(ag.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)  # an output
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulAdd(ag.Function):
    """a * x + b with a Python float a: the non-tensor argument gets None."""

    @staticmethod
    def forward(ctx, x, a, b):
        ctx.save_for_backward(x, b)  # inputs
        ctx.a = a
        return x * a + b * x

    @staticmethod
    def backward(ctx, g):
        x, b = ctx.saved_tensors
        return g * (ctx.a + b), None, g * x


class SinCos(ag.Function):
    """Two outputs, and an intermediate saved."""

    @staticmethod
    def forward(ctx, x):
        s, c = x.sin(), x.cos()
        ctx.save_for_backward(s, c, x * 1.0)
        return s, c

    @staticmethod
    def backward(ctx, gs, gc):
        s, c, _ = ctx.saved_tensors
        return gs * c - gc * s


class Square(ag.Function):
    """New style: forward without ctx, setup_context."""

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize(
    "fn, builtin",
    [
        (Exp.apply, nb.exp),
        (lambda x: MulAdd.apply(x, 1.5, x * x), lambda x: x * 1.5 + x * x * x),
        (lambda x: SinCos.apply(x), lambda x: (nb.sin(x), nb.cos(x))),
        (Square.apply, lambda x: x * x),
    ],
    ids=["exp", "muladd", "sincos", "setup_context"],
)
def test_gradients_match_builtin_ops_and_finite_differences(fn, builtin):
    x = leaf(2, 3)
    outs, refs = fn(x), builtin(x)
    outs, refs = (outs, refs) if isinstance(outs, tuple) else ((outs,), (refs,))
    seeds = [nb.tensor(RNG.standard_normal(o.shape)) for o in outs]
    for o, r in zip(outs, refs):
        same(o, r.numpy())
    got = nb.grad(list(outs), x, seeds)[0]
    want = nb.grad(list(refs), x, seeds)[0]
    same(got, want.numpy())
    projected_gradcheck(fn, [x])
    assert ag.gradcheck(fn, (x,))
    assert ag.gradgradcheck(fn, (x,))


def test_backward_fills_grad_and_names_grad_fn():
    x = leaf(4)
    y = Exp.apply(x)
    assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
    (y * 2).sum().backward()
    same(x.grad, 2 * np.exp(x.numpy()))


def test_two_tensor_inputs_and_keyword_arguments():
    x, b = leaf(3), leaf(3)
    y = MulAdd.apply(x, b=b, a=3.0)  # keywords bound to forward's parameters, as PyTorch
    gx, gb = nb.grad(y.sum(), [x, b])
    same(gx, 3.0 + b.numpy())
    same(gb, x.numpy())


def test_double_backward_through_backward_written_with_ops():
    x = leaf(5)
    (g,) = nb.grad(Exp.apply(x).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = nb.grad((g * g).sum(), x)
    same(gg, 2 * np.exp(2 * x.numpy()))  # d/dx sum(exp(x)^2)


def test_the_graph_is_freed_by_reference_counting():
    x = leaf(3)
    y = SinCos.apply(x)[0]
    node = weakref.ref(y._node)
    del y
    assert node() is None  # no cycle through ctx and the saved output


def test_no_node_without_grad():
    x = nb.tensor(np.ones(3))
    y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    with nb.no_grad():
        z = Exp.apply(leaf(3))
    assert not z.requires_grad


# ---------------------------------------------------------------- ctx


def test_saved_tensor_modified_in_place_raises():
    x = leaf(3)
    y = Exp.apply(x)
    loss = y.sum()
    with nb.no_grad():
        y.mul_(2.0)
    with pytest.raises(nb.GradientError, match="modified in place"):
        loss.backward()


def test_saved_input_modified_in_place_raises_like_builtin_ops():
    x = leaf(3)
    h = x * 1.0
    loss = MulAdd.apply(h, 2.0, h).sum()
    h.add_(1.0)
    with pytest.raises(nb.GradientError, match="modified in place") as custom:
        loss.backward()
    h2 = x * 1.0
    loss2 = (h2 * h2).sum()  # the built-in op raises the same kind of error
    h2.add_(1.0)
    with pytest.raises(nb.GradientError, match="modified in place") as builtin:
        loss2.backward()
    assert type(custom.value) is type(builtin.value)


def test_unsaved_input_modified_in_place_is_fine():
    class Double(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf(3)
    h = x * 1.0
    loss = Double.apply(h).sum()
    h.add_(1.0)
    loss.backward()
    same(x.grad, np.full(3, 2.0))


def test_needs_input_grad():
    seen = []

    class Probe(ag.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen.append(ctx.needs_input_grad)
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g if ctx.needs_input_grad[0] else None, g, None

    x, y = leaf(2), nb.tensor(np.ones(2))
    Probe.apply(x, y, 3).sum().backward()
    Probe.apply(y, x, 3)
    assert seen == [(True, False, False), (False, True, False)]
    same(x.grad, np.ones(2))


class Argmax(ag.Function):
    """A value and its (integer) index, and a float mask marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        i = nb.argmax(x, axis=0)
        mask = (x == nb.max(x, axis=0)).astype(nb.float64)
        ctx.mark_non_differentiable(i, mask)
        ctx.save_for_backward(mask)
        return nb.max(x, axis=0), i, mask

    @staticmethod
    def backward(ctx, g, gi, gmask):
        (mask,) = ctx.saved_tensors
        assert gi is not None and gmask is not None  # zeros: materialized by default
        return g * mask + gmask


def test_mark_non_differentiable_outputs_get_no_gradient():
    x = leaf(4)
    v, i, mask = Argmax.apply(x)
    assert v.requires_grad and not i.requires_grad and not mask.requires_grad
    assert i.dtype == np.int64 and int(i.item()) == int(np.argmax(x.numpy()))
    with pytest.raises(nb.GradientError):
        nb.grad(mask.sum(), x)
    v.backward()
    same(x.grad, np.eye(4)[np.argmax(x.numpy())])


def test_materialize_grads_off_gives_none():
    got = []

    class Two(ag.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            got.append((g2, g3))
            g = 2 * g2 if g2 is not None else 0 * g3
            return g + (3 * g3 if g3 is not None else 0), None

    x = leaf(3)
    nb.grad(Two.apply(x, False)[0].sum(), x)
    nb.grad(Two.apply(x, True)[0].sum(), x)
    assert got[0][1] is None
    assert got[1][1] is not None and not got[1][1].numpy().any()


def test_mark_dirty_in_place_forward():
    class AddOne_(ag.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 1.0

    x = leaf(3)
    h = x * 2.0
    out = AddOne_.apply(h)
    assert out is h and h.grad_fn.name() == "AddOne_Backward"
    same(h, 2 * x.numpy() + 1)
    (h * h).sum().backward()
    same(x.grad, 4 * (2 * x.numpy() + 1))
    with pytest.raises(nb.GradientError, match="leaf"):
        AddOne_.apply(leaf(3))


def test_returning_an_input_unchanged_gives_an_alias():
    class Identity(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return 3 * g  # (not the identity's gradient: it shows the rule runs)

    x = leaf(3)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    y.sum().backward()
    same(x.grad, np.full(3, 3.0))


def test_arbitrary_attributes_and_non_tensor_outputs():
    class Scaled(ag.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            return x * scale, "label"

        @staticmethod
        def backward(ctx, g, g_label):
            assert g_label is None
            return g * ctx.scale, None

    x = leaf(2)
    y, label = Scaled.apply(x, 4.0)
    assert label == "label"
    y.sum().backward()
    same(x.grad, np.full(2, 4.0))


# ---------------------------------------------------------------- errors


def test_wrong_number_of_gradients_raises():
    class Short(ag.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(nb.GradientError, match="expected 2.*got 1"):
        Short.apply(leaf(2), leaf(2)).sum().backward()

    class Extra(Short):
        @staticmethod
        def backward(ctx, g):
            return g, g, g  # (trailing Nones are allowed, a tensor is not)

    with pytest.raises(nb.GradientError, match="incorrect number"):
        Extra.apply(leaf(2), leaf(2)).sum().backward()

    class Padded(Short):
        @staticmethod
        def backward(ctx, g):
            return g, g, None

    x = leaf(2)
    Padded.apply(x, x).sum().backward()
    same(x.grad, np.full(2, 2.0))


def test_gradient_for_a_non_tensor_argument_raises():
    class Bad(ag.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(nb.GradientError, match="not a tensor"):
        Bad.apply(leaf(2), 2.0).sum().backward()


def test_gradient_of_wrong_shape_raises():
    class Bad(ag.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return nb.ones(5, dtype=nb.float64)

    with pytest.raises(nb.ShapeError, match=r"shape \(5,\).*\(2, 3\)"):
        Bad.apply(leaf(2, 3)).sum().backward()


def test_save_for_backward_takes_tensors_only_and_instances_are_not_called():
    class Bad(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x

    with pytest.raises(TypeError, match="argument 1 is of type int"):
        Bad.apply(leaf(2))
    with pytest.raises(nb.UnsupportedError, match=r"Exp.apply"):
        Exp()(leaf(2))


# ---------------------------------------------------------------- once_differentiable


class NumpyExp(ag.Function):
    """forward and backward written with numpy: first order only."""

    @staticmethod
    def forward(ctx, x):
        y = nb.tensor(np.exp(x.numpy()))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @ag.once_differentiable
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return nb.tensor(g.numpy() * y.numpy())


def test_once_differentiable():
    x = leaf(3)
    projected_gradcheck(NumpyExp.apply, [x])
    seed = nb.tensor(np.ones(3), requires_grad=True)
    (g,) = nb.grad(NumpyExp.apply(x), x, seed, create_graph=True)
    same(g, np.exp(x.numpy()))
    with pytest.raises(nb.GradientError, match="once_differentiable"):
        nb.grad(g.sum(), seed)


# ---------------------------------------------------------------- jit


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: Exp.apply(x * 2).sum(),
        lambda x: MulAdd.apply(x, 0.5, x.sin()),
        lambda x: SinCos.apply(x)[0] * SinCos.apply(x)[1],
        lambda x: Square.apply(x).mean(),
        lambda x: Argmax.apply(x)[0],
    ],
    ids=["exp", "muladd", "sincos", "setup_context", "non_differentiable"],
)
def test_jit_matches_eager(fn):
    counts = check_modes(fn, leaf(3))
    assert counts["gradients"] == 1


def test_jit_traces_forward_into_the_program_and_backward_with_append_backward():
    w = leaf(3)

    @nb.jit
    def f(x):
        return Exp.apply(x * w).sum()

    x = nb.tensor(RNG.standard_normal(3))
    out = f(x)
    out.backward()
    same(out, np.exp(x.numpy() * w.numpy()).sum())
    same(w.grad, x.numpy() * np.exp(x.numpy() * w.numpy()))
    text = str(f.program(x))
    assert "= exp(" in text and "= Exp(" in text


def test_static_program_with_append_backward_and_dynamic_batch():
    x0 = RNG.standard_normal((2, 3))
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 3], "float64")
        x.stop_gradient = False
        y, z = SinCos.apply(x)
        loss = nb.sum(y * z)
        ((_, g),) = nb.append_backward(loss, parameter_list=[x])
    got_loss, got = nb.Executor().run(main, {"x": x0}, [loss, g], nb.Scope())
    same(got_loss, (np.sin(x0) * np.cos(x0)).sum())
    same(got, np.cos(2 * x0))  # d/dx sin x cos x


def test_jit_double_backward_replays_the_function():
    @nb.jit
    def f(x):
        return Exp.apply(x).sum()

    x = leaf(4)
    (g,) = nb.grad(f(x), x, create_graph=True)
    (gg,) = nb.grad((g * g).sum(), x)
    same(gg, 2 * np.exp(2 * x.numpy()))


def test_jit_saved_output_modified_in_place_raises():
    @nb.jit
    def f(x):
        y = Exp.apply(x)
        y.mul_(2.0)
        return y.sum()

    with pytest.raises(nb.GradientError, match="modified in place"):
        f(leaf(3))


def test_jit_forward_in_numpy_raises_naming_the_alternative():
    with pytest.raises(nb.UnsupportedError, match=r"NumpyExp.forward under jit.*nbflow.Op"):
        nb.jit(NumpyExp.apply)(leaf(3))


def test_program_with_a_function_cannot_be_saved(tmp_path):
    @nb.jit
    def f(x):
        return Exp.apply(x)

    x = nb.tensor(np.ones(2))
    same(f(x), np.exp(np.ones(2)))
    with pytest.raises(nb.ProgramError, match="ctx"):
        nb.graph.serialize.save(f.program(x), tmp_path / "p")


def test_jit_mark_dirty_on_an_intermediate():
    class Scale_(ag.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(3.0)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3.0

    def f(x):
        h = x * 1.0
        Scale_.apply(h)
        return h * x  # h took the Function's history: 3 x * x

    counts = check_modes(f, leaf(3))
    assert counts["gradients"] == 1
    x = leaf(3)
    (g,) = nb.grad(nb.jit(f)(x).sum(), x)
    same(g, 6 * x.numpy())


def test_jit_multiple_outputs_materialize_off():
    class Two(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            assert g3 is None
            return 2 * g2

    check_modes(lambda x: Two.apply(x)[0], leaf(3))


# ---------------------------------------------------------------- torch.autograd's other names


def test_gradcheck_full_jacobian_catches_a_wrong_gradient():
    class Wrong(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 g x

    x = leaf(3)
    with pytest.raises(ag.GradcheckError, match="Jacobian mismatch for output 0"):
        ag.gradcheck(Wrong.apply, x)
    assert ag.gradcheck(Wrong.apply, x, raise_exception=False) is False
    assert ag.gradcheck(Wrong.apply, x, fast_mode=True, raise_exception=False) is False
    assert isinstance(ag.GradcheckError("x"), RuntimeError)
    with pytest.raises(ValueError, match="at least one input"):
        ag.gradcheck(Exp.apply, nb.tensor(np.ones(2)))
    with pytest.raises(nb.UnsupportedError):
        ag.gradcheck(Exp.apply, x, check_forward_ad=True)


def test_gradgradcheck_catches_a_wrong_second_derivative():
    class WrongTwice(ag.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() * x  # right value, half the second derivative

    x = leaf(3, low=0.5, high=1.5)
    assert ag.gradcheck(WrongTwice.apply, x)
    assert not ag.gradgradcheck(WrongTwice.apply, x, raise_exception=False)
    assert ag.gradgradcheck(lambda x: x * x * x, x)


def test_grad_mode_names():
    x = leaf(2)
    assert ag.is_grad_enabled()
    with ag.no_grad():
        assert not (x * 2).requires_grad
        with ag.enable_grad():
            assert (x * 2).requires_grad
    with ag.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ag.is_grad_enabled()
    assert ag.set_grad_enabled is nb.set_grad_enabled  # one definition (core's)
    nb.set_grad_enabled(False)  # as a function: until changed again
    try:
        assert not ag.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        nb.set_grad_enabled(True)
    with ag.inference_mode():
        assert not (x * 2).requires_grad
    with ag.inference_mode(False):
        assert (x * 2).requires_grad

    @ag.inference_mode()
    def predict(v):
        return v * 2

    assert not predict(x).requires_grad


def test_variable_is_the_legacy_tensor_constructor():
    x = nb.tensor(np.arange(3.0))
    v = ag.Variable(x, requires_grad=True)
    assert isinstance(v, nb.Tensor) and isinstance(x, ag.Variable)
    assert v.requires_grad and v.is_leaf and not x.requires_grad
    assert np.shares_memory(v.numpy(), x.numpy())
    (v * v).sum().backward()
    same(v.grad, 2 * np.arange(3.0))
    assert not ag.Variable(leaf(2)).requires_grad
    with pytest.raises(TypeError, match="has to be a tensor"):
        ag.Variable([1.0, 2.0])
    same(nb.jit(lambda t: ag.Variable(t) * 2)(x), 2 * np.arange(3.0))


class NanGrad(ag.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_detect_anomaly_checks_backward_not_forward():
    x = leaf(3)
    with ag.detect_anomaly():
        assert ag.is_anomaly_enabled()
        y = nb.log(x * 0.0)  # -inf in forward: no error, as in PyTorch
        assert np.isinf(y.numpy()).all()
        with pytest.raises(
            nb.NumericalError,
            match=r"mul produced 3 NaN.*in the gradient of NanGradBackward defined at",
        ):
            NanGrad.apply(x).sum().backward()
        with pytest.raises(nb.NumericalError, match="in the gradient of log"):
            (x - x).log().sum().backward()
    assert not ag.is_anomaly_enabled()
    NanGrad.apply(x).sum().backward()  # off again: no check
    ag.set_detect_anomaly(True)
    try:
        assert ag.is_anomaly_enabled() and ag.is_anomaly_check_nan_enabled()
        with pytest.raises(nb.NumericalError):
            NanGrad.apply(x).sum().backward()
    finally:
        ag.set_detect_anomaly(False)
    assert not ag.is_anomaly_enabled()
    with ag.set_detect_anomaly(True, check_nan=False):
        assert ag.is_anomaly_enabled() and not ag.is_anomaly_check_nan_enabled()
        NanGrad.apply(x).sum().backward()
    assert not ag.is_anomaly_enabled()


_SIMULATED = """
import numpy as np, nbflow as nb
from nbflow import autograd as ag

class Exp(ag.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

x0 = np.array([0.1, 0.5, -1.0])
x = nb.tensor(x0, dtype="float32", device="cuda", requires_grad=True)
Exp.apply(x).sum().backward()
np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(x0), rtol=1e-6)
x.grad = None
nb.jit(lambda v: Exp.apply(v * 2).sum())(x).backward()
np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp(2 * x0), rtol=1e-6)
print(type(x.grad).__name__)
"""


def test_on_the_gpu_under_the_cuda_simulator():
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _SIMULATED], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "CudaTensor"


# ---------------------------------------------------------------- against torch


def test_against_torch():
    torch = pytest.importorskip("torch")

    def define(base, lib):
        class LogSumExp(base):
            @staticmethod
            def forward(ctx, x, scale):
                m = x.max()
                y = m + (x - m).exp().sum().log()
                ctx.save_for_backward(x, y)
                ctx.scale = scale
                return y * scale, (x * 0).sum()

            @staticmethod
            def backward(ctx, g, g_zero):
                x, y = ctx.saved_tensors
                return g * ctx.scale * (x - y).exp(), None

        return LogSumExp

    x0 = RNG.standard_normal(5)
    ours = define(ag.Function, nb)
    theirs = define(torch.autograd.Function, torch)
    x = nb.tensor(x0, requires_grad=True)
    t = torch.tensor(x0, requires_grad=True)
    y, _ = ours.apply(x, 2.0)
    ty, _ = theirs.apply(t, 2.0)
    same(y, ty.detach().numpy())
    (g,) = nb.grad(y, x, create_graph=True)
    (tg,) = torch.autograd.grad(ty, t, create_graph=True)
    same(g, tg.detach().numpy())
    (gg,) = nb.grad((g * g).sum(), x)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), t)
    same(gg, tgg.numpy(), rtol=1e-8)
    assert ag.gradcheck(lambda v: ours.apply(v, 2.0)[0], x)
    assert torch.autograd.gradcheck(lambda v: theirs.apply(v, 2.0)[0], t)
