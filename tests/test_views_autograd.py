"""In-place writes and views under autograd (nbflow/core/views.py), in eager mode and through
`@jit` alike: a write through a view reaches its base's gradient, a view taken before its base
was written is re-taken when read, and what autograd cannot follow raises before anything is
written. Gradients are checked against the closed forms and against PyTorch's rules."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt

A = np.random.default_rng(0).standard_normal((3, 4))
MODES = ["eager", "jit"]


def _grad(fn, mode, value=A):
    a = nb.tensor(value, requires_grad=True)
    run = fn if mode == "eager" else nb.jit(fn)
    (g,) = nb.grad(run(a), [a])
    return g.numpy()


def _rows(scale_row1):
    s = np.ones_like(A)
    s[1] = scale_row1
    return s


@pytest.mark.parametrize("mode", MODES)
def test_a_view_taken_before_its_base_is_written_sees_the_write(mode):
    def f(a):
        h = a * 1.0
        row = h[1]  # taken before the write, read after it
        h.mul_(3.0)
        return (row * row).sum()

    expected = np.zeros_like(A)
    expected[1] = 18 * A[1]
    nt.assert_close(_grad(f, mode), expected)


@pytest.mark.parametrize("mode", MODES)
def test_a_write_through_a_slice_reaches_the_base(mode):
    def f(a):
        h = a * 1.0
        h[1].mul_(3.0)
        return (h * h).sum()

    nt.assert_close(_grad(f, mode), 2 * A * _rows(3.0) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_a_write_through_a_view_of_a_view_reaches_the_base(mode):
    def f(a):
        h = a * 1.0
        h.T[1:].tanh_()  # columns 1.. of h, through a transpose and a slice
        return (h * h).sum()

    t = np.tanh(A)
    expected = 2 * A
    expected[:, 1:] = 2 * t[:, 1:] * (1 - t[:, 1:] ** 2)
    nt.assert_close(_grad(f, mode), expected)


@pytest.mark.parametrize("mode", MODES)
def test_a_sibling_view_read_after_a_write_through_another_view(mode):
    def f(a):
        h = a * 1.0
        left, right = h[:, :2], h[:, 1:]  # they overlap in column 1
        right.mul_(2.0)
        return (left * left).sum()

    expected = np.zeros_like(A)
    expected[:, 0] = 2 * A[:, 0]
    expected[:, 1] = 8 * A[:, 1]
    nt.assert_close(_grad(f, mode), expected)


@pytest.mark.parametrize("mode", MODES)
def test_copying_into_a_view_of_a_buffer_gives_the_buffer_a_history(mode):
    def f(a):
        buf = nb.zeros((2, 3, 4), dtype="float64")  # requires no grad until the copy
        row = buf[1]
        row.copy_(a)
        return (buf * buf).sum() + buf[1, 0].sum()

    expected = 2 * A
    expected[0] += 1
    nt.assert_close(_grad(f, mode), expected)


def test_an_eager_reshape_view_writes_back_and_a_copying_reshape_does_not():
    a = nb.tensor(A, requires_grad=True)
    h = a * 1.0
    h.reshape(12)[:4].mul_(3.0)  # h is contiguous: the reshape is a view
    (g,) = nb.grad((h * h).sum(), [a])
    scale = np.where(np.arange(12) < 4, 3.0, 1.0).reshape(3, 4)
    nt.assert_close(g.numpy(), 2 * A * scale**2)
    a = nb.tensor(A, requires_grad=True)
    h = a * 1.0
    flat = h.T.reshape(12)  # a transpose is not contiguous: this reshape copies
    flat.mul_(3.0)
    assert np.array_equal(h.numpy(), A)
    (g,) = nb.grad((h * h).sum() + flat.sum(), [a])
    nt.assert_close(g.numpy(), 2 * A + 3)


def test_a_gradient_through_a_write_through_a_reshape_in_a_program_raises():
    def f(a):
        h = a * 1.0
        h.reshape(12).mul_(3.0)  # a program cannot tell whether the reshape copied
        return (h * h).sum()

    nt.assert_close(nb.jit(f)(nb.tensor(A)).numpy(), (A * A).sum() * 9)  # the values run
    # a call that records a gradient builds the gradient ops, which would go through it
    with pytest.raises(nb.UnsupportedError, match="through a reshape in a program"):
        nb.jit(f)(nb.tensor(A, requires_grad=True))


def test_a_reshape_in_a_program_read_after_its_input_was_written_raises_in_backward():
    def f(a):
        h = a * 1.0
        flat = h.reshape(12)
        h.mul_(3.0)
        return (flat * flat).sum()

    nt.assert_close(nb.jit(f)(nb.tensor(A)).numpy(), (A * A).sum() * 9)
    a = nb.tensor(A, requires_grad=True)
    with pytest.raises(nb.UnsupportedError, match="cannot tell whether the reshape copied"):
        nb.jit(f)(a)
    (g,) = nb.grad(f(a), [a])  # eager mode knows the memory: it is a view here
    nt.assert_close(g.numpy(), 18 * A)


@pytest.mark.parametrize("mode", MODES)
def test_a_write_through_a_view_of_a_leaf_that_requires_grad_is_refused(mode):
    w = nb.tensor(A, requires_grad=True)

    def f(a):
        w[0].mul_(2.0)
        return (a * w).sum()

    with pytest.raises(nb.GradientError, match="a view of a leaf tensor that requires grad"):
        (f if mode == "eager" else nb.jit(f))(nb.tensor(A))
    nt.assert_close(w.numpy(), A)  # refused before anything was written


def test_a_write_through_a_broadcast_view_is_refused_before_writing():
    h = nb.tensor(A[0], requires_grad=True) * 1.0
    with pytest.raises(nb.UnsupportedError, match="read-only"):
        nb.broadcast_to(h, (2, 4)).add_(1.0)
    nt.assert_close(h.numpy(), A[0])


def test_second_order_through_a_write_through_a_view():
    a = nb.tensor(A, requires_grad=True)
    h = a * 1.0
    h[1].mul_(a[1])  # row 1 becomes a[1]**2
    (g,) = nb.grad((h * h).sum(), [a], create_graph=True)
    (gg,) = nb.grad(g.sum(), [a])
    expected = np.full_like(A, 2.0)
    expected[1] = 12 * A[1] ** 2  # d/da of 4 a^3
    nt.assert_close(gg.numpy(), expected)


def test_without_gradients_views_cost_no_history():
    h = nb.tensor(A) * 1.0
    row = h[1]
    h.mul_(3.0)
    out = row * 2.0
    assert not out.requires_grad and out._node is None
    nt.assert_close(out.numpy(), 6 * A[1])


def test_jit_errors_say_the_control_flow_hint_only_for_python_control_flow():
    def branch(a):
        return a * 2 if (a > 0).any() else a

    with pytest.raises(nb.TracedValueError, match="nbflow.cond"):
        nb.jit(branch)(nb.tensor(A))

    w = nb.tensor(A, requires_grad=True)

    def leaf_view(a):
        w[0].mul_(2.0)
        return a

    with pytest.raises(nb.GradientError) as info:
        nb.jit(leaf_view)(nb.tensor(A))
    assert "nbflow.cond" not in str(info.value)


@pytest.mark.parametrize("mode", MODES)
def test_a_view_saved_for_a_gradient_and_overwritten_through_its_base_raises(mode):
    def f(a):
        h = a * 1.0
        row = h[1]
        y = row * row  # saves the view
        h.mul_(3.0)  # overwrites what it saved: one version counter for a buffer and its views
        return y.sum()

    with pytest.raises(nb.GradientError, match="modified in place"):
        _grad(f, mode)


def test_a_program_with_writes_through_views_verifies_and_round_trips(tmp_path):
    def f(a):
        h = a * 1.0
        h.T[1:].tanh_()
        row = h[0]
        h.mul_(2.0)
        return (row * h).sum()

    jitted = nb.jit(f)
    a = nb.tensor(A, requires_grad=True)
    (g,) = nb.grad(jitted(a), [a])
    nt.assert_close(g.numpy(), nb.grad(f(a), [a])[0].numpy())
    program = jitted.program(a)
    nb.graph.verify(program)
    nb.save(program, tmp_path / "p.json")
    loaded = nb.load(tmp_path / "p.json")
    nb.graph.verify(loaded)
