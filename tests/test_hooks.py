"""Autograd hooks on tensors and hooks on modules: hand-computed effects, PyTorch's values when
torch imports, handles, jit, and the lookups by dotted name."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn

X = np.array([1.0, -2.0, 3.0])


def _leaf(values=X):
    return nb.tensor(values, dtype=nb.float64, requires_grad=True)


# ---------------------------------------------------------------- tensor hooks


def test_register_hook_sees_and_replaces_the_gradient():
    x = _leaf()
    y = x * 3.0
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.register_hook(lambda g: g * 2.0)  # chained in registration order
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], 2 * 3 * X)  # d(y^2)/dy before the replacement
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * 3 * X) * 3)


def test_hook_sees_the_total_of_every_use():
    x = _leaf()
    y = x * 1.0
    seen = []
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    (y * 2.0 + y * y).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 + 2 * X)


def test_leaf_hook_and_handle_remove():
    x = _leaf()
    handle = x.register_hook(lambda g: g * 10.0)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 20 * X)
    handle.remove()
    handle.remove()  # twice: nothing
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)


def test_handle_as_context_manager():
    x = _leaf()
    with x.register_hook(lambda g: g * 0.0):
        (g,) = nb.grad((x * x).sum(), x)
        assert not g.numpy().any()
    (g,) = nb.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), 2 * X)


def test_hooks_apply_in_nbflow_grad():
    x = _leaf()
    x.register_hook(lambda g: g * 10.0)
    (g,) = nb.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), 20 * X)
    y = x * 1.0
    y.register_hook(lambda g: g + 1.0)
    (gy,) = nb.grad((y * y).sum(), y)
    np.testing.assert_allclose(gy.numpy(), 2 * X + 1)


def test_retain_grad_fills_and_accumulates_after_the_hooks():
    x = _leaf()
    y = x * 3.0
    assert not y.retains_grad and not x.retains_grad
    y.retain_grad()
    y.register_hook(lambda g: g * 2.0)  # registered after retain_grad, still runs first
    assert y.retains_grad
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * (2 * 3 * X))
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 4 * (2 * 3 * X))
    x.retain_grad()  # a leaf: nothing to do
    assert not x.retains_grad


def test_is_leaf_and_grad_fn():
    x = _leaf()
    c = nb.tensor([1.0, 2.0])
    y = x * 2.0
    assert x.is_leaf and c.is_leaf and not y.is_leaf
    assert x.grad_fn is None and c.grad_fn is None
    assert y.grad_fn.name() == "mul" and y.grad_fn == y.grad_fn
    assert "mul" in repr(y.grad_fn)


def test_post_accumulate_grad_hook_runs_after_backward_only():
    x = _leaf()
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * x).sum().backward()
    nb.grad((x * x).sum(), x)  # does not accumulate: no call
    (x * 2.0).sum().backward()
    assert len(seen) == 2
    np.testing.assert_allclose(seen[0], 2 * X)
    np.testing.assert_allclose(seen[1], 2 * X + 2)


def test_hook_errors():
    x = _leaf()
    c = nb.tensor([1.0])
    with pytest.raises(nb.GradientError, match="doesn't require gradient"):
        c.register_hook(lambda g: g)
    with pytest.raises(nb.GradientError, match="non-leaf"):
        (x * 2.0).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(nb.GradientError, match="requires_grad=False"):
        c.retain_grad()
    with pytest.raises(TypeError):
        x.register_hook(3)
    x.register_hook(lambda g: g[:1])
    with pytest.raises(nb.ShapeError, match="shape"):
        (x * x).sum().backward()


def test_hooks_with_create_graph():
    x = _leaf()
    y = x * x
    y.register_hook(lambda g: g * 3.0)  # recorded: part of the second-order graph
    (g,) = nb.grad(y.sum(), x, create_graph=True)  # 3 * 2x
    np.testing.assert_allclose(g.numpy(), 6 * X)
    (gg,) = nb.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.full(3, 6.0))


def test_tensor_hooks_match_pytorch():
    torch = pytest.importorskip("torch")

    def run(lib, t):
        x = t(X, requires_grad=True)
        y = x * 3.0
        y.retain_grad()
        y.register_hook(lambda g: g * 2.0)
        z = (y * y).sum()
        x.register_hook(lambda g: g + 1.0)
        z.backward()
        return x.grad.numpy().copy(), y.grad.numpy().copy()

    ours = run(nb, lambda v, **k: nb.tensor(v, dtype=nb.float64, **k))
    theirs = run(torch, lambda v, **k: torch.tensor(v, dtype=torch.float64, **k))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ---------------------------------------------------------------- module hooks


def _linear(n_in=3, n_out=2, seed=0):
    return nn.Linear(n_in, n_out, generator=nb.Generator(seed)).double()


def test_forward_pre_hook_and_forward_hook_replace_input_and_output():
    m = _linear()
    x = nb.tensor(np.ones((4, 3)), dtype=nb.float64)
    plain = m(x).numpy()
    calls = []
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2.0,))
    post = m.register_forward_hook(lambda mod, args, out: calls.append(args) or out + 1.0)
    out = m(x).numpy()
    w, b = m.weight.numpy(), m.bias.numpy()
    np.testing.assert_allclose(out, 2 * np.ones((4, 3)) @ w.T + b + 1)
    np.testing.assert_allclose(calls[0][0].numpy(), 2 * np.ones((4, 3)))  # the new args
    pre.remove()
    post.remove()
    np.testing.assert_allclose(m(x).numpy(), plain)


def test_forward_pre_hook_may_return_one_value():
    m = _linear()
    x = nb.tensor(np.ones((1, 3)), dtype=nb.float64)
    m.register_forward_pre_hook(lambda mod, args: args[0] * 0.0)
    np.testing.assert_allclose(m(x).numpy(), m.bias.numpy()[None])


def test_full_backward_hook_gets_grad_input_and_grad_output():
    m = _linear()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((mod, gi, go)))
    x = nb.tensor(np.arange(6.0).reshape(2, 3), dtype=nb.float64, requires_grad=True)
    (m(x) * nb.tensor([[1.0, 2.0]], dtype=nb.float64)).sum().backward()
    (mod, grad_input, grad_output) = seen[0]
    assert mod is m and len(seen) == 1
    g_out = np.array([[1.0, 2.0], [1.0, 2.0]])
    np.testing.assert_allclose(grad_output[0].numpy(), g_out)
    np.testing.assert_allclose(grad_input[0].numpy(), g_out @ m.weight.numpy())
    np.testing.assert_allclose(x.grad.numpy(), g_out @ m.weight.numpy())


def test_full_backward_hook_replaces_grad_input():
    m = _linear()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.0,))
    x = nb.tensor(np.ones((2, 3)), dtype=nb.float64, requires_grad=True)
    m(x).sum().backward()
    assert not x.grad.numpy().any()
    assert m.weight.grad.numpy().any()  # the parameters' gradients are not grad_input


class _TwoInputs(nn.Module):
    def forward(self, a, b, scale):
        return a * b * scale, a + b


def test_full_backward_hook_with_several_inputs_and_outputs():
    m = _TwoInputs()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    a = nb.tensor([1.0, 2.0], dtype=nb.float64, requires_grad=True)
    b = nb.tensor([3.0, 4.0], dtype=nb.float64)  # needs no gradient
    p, s = m(a, b, 2.0)
    (p.sum() + 3.0 * s.sum()).backward()
    grad_input, grad_output = seen[0]
    assert grad_input[2] is None  # not a tensor
    np.testing.assert_allclose(grad_input[1].numpy(), [0.0, 0.0])  # as PyTorch gives
    np.testing.assert_allclose(grad_input[0].numpy(), 2 * np.array([3.0, 4.0]) + 3)
    np.testing.assert_allclose(grad_output[0].numpy(), [1.0, 1.0])
    np.testing.assert_allclose(grad_output[1].numpy(), [3.0, 3.0])


def test_full_backward_hook_without_input_gradients():
    m = _linear()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    m(nb.tensor(np.ones((2, 3)), dtype=nb.float64)).sum().backward()
    grad_input, grad_output = seen[0]
    assert grad_input == (None,)
    np.testing.assert_allclose(grad_output[0].numpy(), np.ones((2, 2)))


def test_module_hooks_match_pytorch():
    torch = pytest.importorskip("torch")
    w = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
    x = np.arange(6.0).reshape(2, 3)

    def run(lin, t):
        seen = []
        lin.register_forward_pre_hook(lambda m, a: (a[0] * 2.0,))
        lin.register_forward_hook(lambda m, a, o: o * o)
        lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)) or (gi[0] + 1,))
        xs = t(x, requires_grad=True)
        lin(xs).sum().backward()
        gi, go = seen[0]
        return xs.grad.numpy().copy(), gi[0].numpy().copy(), go[0].numpy().copy()

    def tt(v, **k):
        return torch.tensor(v, dtype=torch.float64, **k)

    def nt(v, **k):
        return nb.tensor(v, dtype=nb.float64, **k)

    ours_lin = nn.Linear(3, 2, bias=False).double()
    with nb.no_grad():
        ours_lin.weight.copy_(nt(w))
    theirs_lin = torch.nn.Linear(3, 2, bias=False).double()
    with torch.no_grad():
        theirs_lin.weight.copy_(tt(w))
    ours = run(ours_lin, nt)
    theirs = run(theirs_lin, tt)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_hooks_in_a_jitted_module_apply_at_trace_time_and_select_traces():
    m = _linear()
    x = nb.tensor(np.ones((2, 3)), dtype=nb.float64)

    @nb.jit
    def f(x):
        return m(x)

    plain = f(x).numpy()
    handle = m.register_forward_hook(lambda mod, args, out: out * 2.0)
    np.testing.assert_allclose(f(x).numpy(), 2 * plain)  # a new trace, with the hook
    handle.remove()
    np.testing.assert_allclose(f(x).numpy(), plain)  # the trace without it again
    m.register_full_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(nb.UnsupportedError, match="eager mode only"):
        f(x)


def test_hooks_on_a_module_jitted_itself():
    m = _linear()
    f = nb.jit(m)
    x = nb.tensor(np.ones((2, 3)), dtype=nb.float64)
    plain = f(x).numpy()
    with m.register_forward_pre_hook(lambda mod, args: (args[0] * 0.0,)):
        np.testing.assert_allclose(f(x).numpy(), np.broadcast_to(m.bias.numpy(), (2, 2)))
    np.testing.assert_allclose(f(x).numpy(), plain)


def test_backward_hooks_leave_no_table_entries():
    from nbflow.core.hooks import NODE_HOOKS

    before = len(NODE_HOOKS)
    m = _linear()
    m.register_full_backward_hook(lambda *args: None)
    for _ in range(3):
        x = nb.tensor(np.ones((2, 3)), dtype=nb.float64, requires_grad=True)
        m(x).sum().backward()
    del x
    assert len(NODE_HOOKS) == before  # freed by reference counting, no cycle


# ---------------------------------------------------------------- lookups by name


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(_linear(3, 4), nn.ReLU())
        self.head = _linear(4, 1)
        self.register_buffer("steps", nb.zeros(1))


def test_get_submodule_parameter_buffer():
    net = _Net()
    assert net.get_submodule("") is net
    assert net.get_submodule("body.0") is net.body[0]
    assert net.get_parameter("head.weight") is net.head.weight
    assert net.get_parameter("body.0.bias") is net.body[0].bias
    assert net.get_buffer("steps") is net.steps
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("body.nope")
    with pytest.raises(AttributeError, match="not an nn.Module"):
        net.get_submodule("head.weight.x")
    with pytest.raises(AttributeError, match="not an nn.Parameter"):
        net.get_parameter("steps")
    with pytest.raises(AttributeError, match="not a buffer"):
        net.get_buffer("head.weight")


def test_set_submodule():
    net = _Net()
    new = _linear(4, 1, seed=1)
    net.set_submodule("head", new)
    assert net.head is new and net.get_parameter("head.weight") is new.weight
    extra = nn.ReLU()
    net.set_submodule("body.act", extra)  # a new child of an existing parent
    assert net.body.act is extra
    with pytest.raises(AttributeError):
        net.set_submodule("body.other", nn.ReLU(), strict=True)
    with pytest.raises(ValueError):
        net.set_submodule("", nn.ReLU())
    with pytest.raises(ValueError):
        net.set_submodule("head", 3)
    with pytest.raises(AttributeError, match="not an nn.Module"):
        net.set_submodule("steps", nn.ReLU())
