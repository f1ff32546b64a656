"""Tape semantics: accumulation, fan-out, broadcasting, no_grad, grad(), higher order, and the
version counter that guards saved tensors against in-place changes."""

import tracemalloc

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt


def total(x):
    return nb.sum_to_like(x, nb.tensor(0.0, dtype=x.dtype))


def test_gradients_accumulate_across_backward_calls():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    total(x * x).backward()
    total(x * 3).backward()
    nt.assert_close(x.grad, np.array([2 + 3, 4 + 3], np.float32))


def test_fan_out_and_broadcast_are_summed_back():
    x = nb.tensor([[1.0], [2.0]], requires_grad=True)  # (2, 1) broadcast against (3,)
    b = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * b + x  # x used twice
    total(y).backward()
    nt.assert_close(x.grad, np.array([[9.0], [9.0]], np.float32))  # sum(b) + 3
    nt.assert_close(b.grad, np.array([3.0, 3.0, 3.0], np.float32))


def test_no_grad_records_nothing():
    x = nb.tensor([1.0], requires_grad=True)
    with nb.no_grad():
        y = x * 2
    assert not y.requires_grad and y.is_leaf
    assert nb.is_grad_enabled()


def test_integer_results_do_not_require_grad():
    x = nb.tensor([1.0, -1.0], requires_grad=True)
    assert not (x > 0).requires_grad
    with pytest.raises(nb.DTypeError):
        nb.tensor([1, 2], requires_grad=True)


def test_grad_function_and_second_order():
    x = nb.tensor([0.5, 1.5], dtype="float64", requires_grad=True)
    y = x * x * x
    (g,) = nb.grad(y, [x], nb.ones_like(y), create_graph=True)
    nt.assert_close(g, 3 * x.numpy() ** 2)
    (gg,) = nb.grad(g, [x], nb.ones_like(g))
    nt.assert_close(gg, 6 * x.numpy())
    assert x.grad is None  # grad() leaves .grad alone


def test_third_order_through_tanh():
    x = nb.tensor([0.3], dtype="float64", requires_grad=True)
    (g1,) = nb.grad(nb.tanh(x), [x], create_graph=True)
    (g2,) = nb.grad(g1, [x], create_graph=True)
    (g3,) = nb.grad(g2, [x])
    t = np.tanh(0.3)
    nt.assert_close(g3, np.array([-2 * (1 - t * t) * (1 - 3 * t * t)]))


def test_grad_unused_input():
    x = nb.tensor([1.0], requires_grad=True)
    z = nb.tensor([1.0], requires_grad=True)
    y = x * 2
    with pytest.raises(nb.GradientError):
        nb.grad(y, [x, z])
    assert nb.grad(y, [x, z], allow_unused=True)[1] is None


def test_grad_wrt_intermediate():
    x = nb.tensor([2.0], requires_grad=True)
    h = x * 3
    y = h * h
    (gh,) = nb.grad(y, [h])
    nt.assert_close(gh, np.array([12.0], np.float32))


def test_backward_needs_grad_for_non_scalar():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(nb.GradientError, match="one-element"):
        (x * 2).backward()
    (x * 2).backward(nb.tensor([1.0, 1.0]))
    nt.assert_close(x.grad, np.array([2.0, 2.0], np.float32))


def test_backward_without_requires_grad_raises():
    with pytest.raises(nb.GradientError):
        nb.tensor(1.0).backward()


def test_detach_cuts_history():
    x = nb.tensor([1.0], requires_grad=True)
    y = (x * 2).detach()
    assert not y.requires_grad
    z = x * y
    total(z).backward()
    nt.assert_close(x.grad, np.array([2.0], np.float32))


def test_modified_saved_input_raises_on_backward():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = h * h  # saves h
    h.add_(1)
    with pytest.raises(nb.GradientError, match="modified in place"):
        total(y).backward()


def test_modified_saved_output_raises_on_backward():
    x = nb.tensor([1.0], requires_grad=True)
    y = nb.exp(x)  # its gradient uses its output
    y.mul_(2)
    with pytest.raises(nb.GradientError, match="output 0"):
        total(y).backward()


def test_saved_tensor_from_the_operator_fast_path_is_guarded_through_its_views():
    # `a + b` of two 1-D tensors without gradient makes a tensor whose version counter is
    # created only when first needed: saving it, viewing it and writing through the view
    # must still share one counter
    a, b = nb.tensor([1.0, 2.0]), nb.tensor([3.0, 4.0])
    w = nb.tensor([1.0, 1.0], requires_grad=True)
    h = a + b
    assert h.version == 0
    y = h * w  # saves h for w's gradient
    view = h.reshape(1, 2)
    view.add_(1)
    assert h.version == 1 and view.version == 1
    assert h.numpy().tolist() == [5.0, 7.0]
    with pytest.raises(nb.GradientError, match="modified in place"):
        total(y).backward()
    fresh = a + b
    fresh[0] = 0.0  # indexed assignment bumps the counter it makes
    assert fresh.version == 1 and (a + b).version == 0


def test_inplace_on_intermediate_is_differentiated():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.add_(x)  # y = 3x + x
    y.mul_(2)  # y = 8x; mul_ needs the old y only for the other input's gradient
    total(y).backward()
    nt.assert_close(x.grad, np.array([8.0, 8.0], np.float32))
    assert y.version == 2


def test_inplace_on_leaf_requiring_grad_raises():
    w = nb.tensor([1.0], requires_grad=True)
    with pytest.raises(nb.GradientError, match="leaf"):
        w.add_(1)
    with nb.no_grad():
        w.sub_(0.5)  # optimizer-style update
    assert w.version == 1 and w.numpy().tolist() == [0.5]


def test_operators_and_reflected_forms():
    x = nb.tensor([1.0, 2.0])
    nt.assert_close(2 - x, np.array([1.0, 0.0], np.float32))
    nt.assert_close(1 / x, np.array([1.0, 0.5], np.float32))
    nt.assert_close(2**x, np.array([2.0, 4.0], np.float32))
    nt.assert_close(-x, np.array([-1.0, -2.0], np.float32))
    nt.assert_close(np.float32(3) * x, np.array([3.0, 6.0], np.float32))
    assert (x == 1).dtype == np.bool_
    x += 1
    assert x.numpy().tolist() == [2.0, 3.0] and x.version == 1


def test_gradient_of_graph_nobody_references_is_freed():
    import gc
    import weakref

    x = nb.tensor([1.0], requires_grad=True)
    y = nb.exp(x * 2)
    ref = weakref.ref(y._node)
    gc.disable()
    try:
        del y
        assert ref() is None  # no reference cycle between tensors and nodes
    finally:
        gc.enable()


def test_rules_may_use_the_shape_of_an_overwritten_input():
    x = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[0] = y[1]  # setitem's gradient needs only y's shape; y[1] was read before the write
    total(y * 2).backward()
    nt.assert_close(x.grad, np.array([0.0, 4.0, 2.0], np.float32))


def test_inplace_on_read_only_memory_is_refused():
    view = nb.broadcast_to(nb.zeros(3), (2, 3))
    with pytest.raises(nb.UnsupportedError, match="read-only"):
        view.add_(1)


@pytest.mark.parametrize("op", ["mul", "div", "matmul"])
def test_rules_skip_the_gradient_of_an_input_that_needs_none(op):
    from nbflow.core import Trace, use_trace
    from nbflow.tensor import EagerTrace

    class Counting(EagerTrace):
        binary = Trace.binary  # every op through apply(), counted

        def __init__(self):
            self.names = []

        def apply(self, op, args, attrs, checked=False):
            self.names.append(op.name)
            return super().apply(op, args, attrs, checked)

    rng = np.random.default_rng(0)
    x = nb.tensor(rng.random((4, 4)) + 1)  # data: needs no gradient
    w = nb.tensor(rng.random((4, 4)) + 1, requires_grad=True)
    loss = getattr(nb, op)(x, w).sum()
    counting = Counting()
    with use_trace(counting):
        loss.backward()
    # x's gradient would be one more product (mul: g * w, matmul: g @ w.T; div: g / w)
    expected = {"mul": ["mul"], "div": ["neg", "mul", "div"], "matmul": ["matmul"]}[op]
    assert [n for n in counting.names if n in ("mul", "div", "neg", "matmul")] == expected
    reference = {
        "mul": x.numpy(),
        "div": -x.numpy() / w.numpy() ** 2,
        "matmul": x.numpy().T @ np.ones((4, 4)),
    }[op]
    np.testing.assert_allclose(w.grad.numpy(), reference, rtol=1e-12)


def test_a_0d_leaf_gets_a_0d_gradient_and_trains():
    p = nb.nn.Parameter(nb.tensor(2.0))
    (p * p).backward()
    assert p.grad.shape == ()  # (np.ascontiguousarray made it (1,))
    nb.optim.SGD([p], lr=0.1).step()
    assert p.shape == () and abs(p.item() - 1.6) < 1e-6


# ---------------------------------------------------------------- retain_graph


def test_a_second_backward_through_freed_values_raises_unless_retained():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    h = w * w  # mul saves both inputs
    loss = total(h * h)
    loss.backward()
    with pytest.raises(nb.GradientError, match="second time.*retain_graph=True"):
        loss.backward()  # PyTorch raises here too: no silent double accumulation
    nt.assert_close(w.grad, 4 * np.array([1.0, 8.0], np.float32))  # 4 w^3, once

    w.grad = None
    loss = total(w * w * w)
    loss.backward(retain_graph=True)
    loss.backward()  # the retained graph: a second pass adds 3 w^2 again
    nt.assert_close(w.grad, 2 * 3 * np.array([1.0, 4.0], np.float32))
    with pytest.raises(nb.GradientError, match="second time"):
        loss.backward()


def test_grad_frees_unless_retained_and_create_graph_retains():
    x = nb.tensor([3.0], requires_grad=True)
    y = x * x
    (g,) = nb.grad(y, x, retain_graph=True)
    (again,) = nb.grad(y, x)
    nt.assert_close(g, again.numpy())
    with pytest.raises(nb.GradientError, match="second time"):
        nb.grad(y, x)
    z = x * x * x
    (dz,) = nb.grad(z, x, create_graph=True)  # retain_graph defaults to create_graph
    nb.grad(z, x, retain_graph=True)  # so z's graph is still there
    (d2z,) = nb.grad(dz, x)  # (this pass goes through z's graph too, and frees it)
    nt.assert_close(d2z, np.array([18.0], np.float32))
    with pytest.raises(nb.GradientError, match="second time"):
        nb.grad(z, x)


def test_graphs_that_save_no_tensors_go_back_twice_as_in_pytorch():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = total(x * 2 + x.reshape(2) - 1.0)  # scalars, a view, add and sub: nothing to free
    y.backward()
    y.backward()
    nt.assert_close(x.grad, np.array([6.0, 6.0], np.float32))


def test_backward_inputs_accumulates_only_into_the_given_tensors():
    a = nb.tensor([1.0, 2.0], requires_grad=True)
    b = nb.tensor([3.0, 4.0], requires_grad=True)
    h = a * b
    loss = total(h * h)
    loss.backward(inputs=[b, h], retain_graph=True)
    assert a.grad is None
    nt.assert_close(b.grad, (2 * (a * b) * a).numpy())
    nt.assert_close(h.grad, (2 * h).detach().numpy())
    nb.backward([loss], inputs=a)
    nt.assert_close(a.grad, (2 * (a * b) * b).detach().numpy())


def test_backward_frees_the_saved_activations():
    x = nb.randn(256, 256)
    layers = [nb.randn(256, 256, requires_grad=True) for _ in range(6)]

    def peak(retain):
        h = x
        for w in layers:
            h = nb.tanh(h @ w)
        loss = total(h)
        tracemalloc.start()
        try:
            loss.backward(retain_graph=retain)
            del h
            return tracemalloc.get_traced_memory()[0]  # what the graph still holds
        finally:
            tracemalloc.stop()

    kept, freed = peak(True), peak(False)
    # six (256, 256) float32 tanh outputs and products are saved: 12 x 256 KB kept alive
    assert kept - freed > 6 * 256 * 256 * 4, (kept, freed)
