"""torch.gradient, the top-level in-place functions (torch.exp_(x)) and the methods of
torch.special's functions, each against numpy or scipy, in eager mode and under jit."""

import numpy as np
import pytest
import scipy.special as sp

import nbflow as nb
import nbflow.nn.functional as F

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("shape", [(7,), (5, 4), (3, 4, 6)])
def test_gradient_matches_numpy(shape, edge_order):
    f = RNG.standard_normal(shape)
    got = nb.gradient(nb.tensor(f, dtype=nb.float64), edge_order=edge_order)
    want = np.gradient(f, edge_order=edge_order)
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_with_spacings_and_coordinates(edge_order):
    f = RNG.standard_normal((6, 5))
    x = np.cumsum(RNG.uniform(0.1, 1.0, 6))
    got = nb.gradient(
        nb.tensor(f, dtype=nb.float64), spacing=[nb.tensor(x), 0.5], edge_order=edge_order
    )
    want = np.gradient(f, x, 0.5, edge_order=edge_order)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-12)
    (g1,) = nb.gradient(nb.tensor(f, dtype=nb.float64), spacing=2.0, dim=1)
    np.testing.assert_allclose(g1.numpy(), np.gradient(f, 2.0, axis=1), rtol=1e-12)


def test_gradient_differentiates_and_jits():
    f = RNG.standard_normal((4, 5))
    w = RNG.standard_normal((4, 5))

    def loss(t):
        gx, gy = nb.gradient(t, edge_order=2)
        return (gx * nb.tensor(w)).sum() + (gy * gy).sum()

    t = nb.tensor(f, dtype=nb.float64, requires_grad=True)
    loss(t).backward()
    eps, numeric = 1e-6, np.zeros_like(f)
    for i in np.ndindex(f.shape):
        up, down = f.copy(), f.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (loss(nb.tensor(up)).item() - loss(nb.tensor(down)).item()) / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), numeric, rtol=1e-6, atol=1e-6)
    jitted = nb.jit(lambda t: nb.gradient(t)[1])
    x = nb.tensor(f.astype(np.float32))
    np.testing.assert_allclose(jitted(x).numpy(), nb.gradient(x)[1].numpy(), rtol=1e-6)


def test_gradient_refuses_bad_arguments():
    x = nb.tensor([1.0, 2.0])
    with pytest.raises(nb.ShapeError, match="at least"):
        nb.gradient(x, edge_order=2)  # 2 samples cannot take a second-order edge
    with pytest.raises(nb.AttrError, match="edge_order"):
        nb.gradient(nb.ones(5), edge_order=3)
    with pytest.raises(nb.ArgumentError, match="spacings"):
        nb.gradient(nb.ones(3, 3), spacing=[1.0])
    with pytest.raises(nb.ShapeError, match="coordinates"):
        nb.gradient(nb.ones(4), spacing=[nb.tensor([0.0, 1.0])])


@pytest.mark.parametrize(
    "name, reference",
    [("exp_", np.exp), ("sqrt_", np.sqrt), ("tanh_", np.tanh), ("sigmoid_", sp.expit),
     ("log1p_", np.log1p), ("rsqrt_", lambda v: 1 / np.sqrt(v)), ("relu_", lambda v: v)],
)  # fmt: skip
def test_top_level_in_place_functions(name, reference):
    a = RNG.uniform(0.5, 2.0, 6).astype(np.float32)
    x = nb.tensor(a)
    version = x.version
    out = getattr(nb, name)(x)
    assert out is x and x.version > version
    np.testing.assert_allclose(x.numpy(), reference(a), rtol=1e-6)


def test_top_level_in_place_activations():
    a = np.array([-2.0, -0.5, 0.5, 2.0], np.float32)
    x = nb.tensor(a)
    nb.celu_(x, alpha=1.0)
    np.testing.assert_allclose(x.numpy(), np.where(a > 0, a, np.expm1(a)), rtol=1e-6)
    y = nb.tensor(a)
    nb.threshold_(y, 0.0, -1.0)
    np.testing.assert_array_equal(y.numpy(), np.where(a > 0, a, -1.0))


def test_special_functions_as_methods():
    x = RNG.uniform(0.5, 3.0, 5)
    a = RNG.uniform(0.5, 3.0, 5)
    t, at = nb.tensor(x, dtype=nb.float64), nb.tensor(a, dtype=nb.float64)
    np.testing.assert_allclose(t.polygamma(1).numpy(), sp.polygamma(1, x), rtol=1e-10)
    np.testing.assert_allclose(t.igamma(at).numpy(), sp.gammainc(x, a), rtol=1e-10)
    np.testing.assert_allclose(t.igammac(at).numpy(), sp.gammaincc(x, a), rtol=1e-10)
    np.testing.assert_allclose(nb.igamma(t, at).numpy(), sp.gammainc(x, a), rtol=1e-10)
    big = nb.tensor(x + 2.0, dtype=nb.float64)
    want = [sp.multigammaln(v, 3) for v in x + 2.0]
    np.testing.assert_allclose(big.mvlgamma(3).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(nb.mvlgamma(big, 3).numpy(), want, rtol=1e-10)
    u = t.clone()
    u.polygamma_(2)
    np.testing.assert_allclose(u.numpy(), sp.polygamma(2, x), rtol=1e-10)


def test_hardshrink_and_prelu_methods():
    a = np.array([-1.0, -0.2, 0.3, 2.0], np.float32)
    x = nb.tensor(a)
    np.testing.assert_array_equal(x.hardshrink(0.5).numpy(), np.where(np.abs(a) > 0.5, a, 0))
    w = nb.tensor([0.25])
    np.testing.assert_allclose(x.prelu(w).numpy(), F.prelu(x, w).numpy())
    np.testing.assert_allclose(x.prelu(w).numpy(), np.where(a > 0, a, 0.25 * a))
