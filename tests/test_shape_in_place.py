"""In-place view ops (squeeze_, unsqueeze_, t_, transpose_, swapdims_, swapaxes_, resize_,
resize_as_) against numpy, their refusals where autograd cannot follow them, and the
augmented assignments beyond + - * / (x **= 2 writes into x)."""

import numpy as np
import pytest

import nbflow as nb

CASES = [
    ("squeeze_", (), lambda a: a.squeeze()),
    ("squeeze_", (0,), lambda a: a.squeeze(0)),
    ("unsqueeze_", (1,), lambda a: np.expand_dims(a, 1)),
    ("unsqueeze_", (-1,), lambda a: np.expand_dims(a, -1)),
    ("transpose_", (0, 2), lambda a: a.swapaxes(0, 2)),
    ("swapdims_", (1, 2), lambda a: a.swapaxes(1, 2)),
    ("swapaxes_", (0, 1), lambda a: a.swapaxes(0, 1)),
]


@pytest.mark.parametrize("name, args, ref", CASES)
def test_view_ops_in_place_change_the_shape_not_the_memory(name, args, ref):
    a = np.arange(6.0, dtype=np.float32).reshape(1, 2, 3)
    x = nb.tensor(a)
    before, version = x.numpy(), x.version
    assert getattr(x, name)(*args) is x
    want = ref(a)
    assert x.shape == want.shape
    np.testing.assert_array_equal(x.numpy(), want)
    assert np.shares_memory(x.numpy(), before) and x.version == version + 1
    x.add_(1)  # still the same memory
    np.testing.assert_array_equal(before, a + 1)


def test_t_in_place_and_a_view_of_a_base():
    x = nb.tensor(np.arange(6.0).reshape(2, 3))
    x.t_()
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3).T)
    base = nb.zeros((4, 3))
    row = base[1]
    row.unsqueeze_(0).fill_(5.0)  # written through the reshaped view into its base
    assert row.shape == (1, 3)
    want = np.zeros((4, 3))
    want[1] = 5
    np.testing.assert_array_equal(base.numpy(), want)


def test_resize_keeps_the_elements_in_c_order():
    x = nb.tensor(np.arange(6.0))
    x.resize_(2, 3)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))
    x.resize_((8,))
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2, 3, 4, 5, 0, 0])
    x.resize_(1, 2)
    np.testing.assert_array_equal(x.numpy(), [[0, 1]])
    x.resize_as_(nb.ones((2, 2)))
    assert x.shape == (2, 2)
    with pytest.raises(nb.DomainError, match="sizes must be non-negative"):
        x.resize_(-1, 2)
    assert x.shape == (2, 2)


def test_a_tensor_in_autograd_is_refused_and_unchanged():
    w = nb.ones((1, 3), requires_grad=True)
    with pytest.raises(nb.UnsupportedError, match="requires grad"):
        w.squeeze_()
    view = (w * 2)[0]
    for t in (w, view):
        shape = t.shape
        for name, args in (("unsqueeze_", (0,)), ("resize_", (3,))):
            with pytest.raises(nb.UnsupportedError, match="requires grad"):
                getattr(t, name)(*args)
            assert t.shape == shape


def test_a_gradient_saved_with_the_old_shape_refuses():
    w = nb.tensor([1.0, 2.0], requires_grad=True)
    x = nb.tensor([3.0, 4.0])
    z = w * x  # saves x for w's gradient
    x.unsqueeze_(0)
    with pytest.raises(nb.GradientError, match="modified in place"):
        z.sum().backward()


def test_a_view_taken_before_the_shape_changed_refuses_gradients():
    x = nb.zeros((2, 3))
    row = x[0]
    x.unsqueeze_(0)
    x.copy_(nb.ones((1, 2, 3), requires_grad=True) * 2)  # x now has a history
    with pytest.raises(nb.GradientError, match="changed shape in place"):
        row * 1


def test_under_jit_the_shape_change_is_refused():
    @nb.jit
    def f(a):
        return a.unsqueeze_(0)

    with pytest.raises(nb.UnsupportedError, match="a var's shape is fixed"):
        f(nb.ones(2))


def test_augmented_assignments_write_into_the_tensor():
    a = np.array([1.0, 2.0, 5.0])
    x = nb.tensor(a)
    alias = x[:]
    x **= 2
    x //= 3
    x %= 2
    np.testing.assert_array_equal(alias.numpy(), ((a**2) // 3) % 2)
    m = nb.tensor([True, False, True])
    m_alias = m[:]
    m &= nb.tensor([True, True, False])
    m |= nb.tensor([False, True, False])
    m ^= nb.tensor([True, True, True])
    np.testing.assert_array_equal(m_alias.numpy(), [False, False, True])


def test_augmented_power_is_differentiable():
    w = nb.tensor([1.5, -2.0], requires_grad=True)
    y = w * 1.0
    y **= 3
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 3 * np.array([1.5, -2.0]) ** 2, rtol=1e-6)
