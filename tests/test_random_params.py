"""standard_gamma, poisson and binomial (nbflow/ops/random_params.py) and the distributions
sampling through them.

Draws are checked against numpy drawing the same stream (same seed) and against the exact
laws (scipy.stats); standard_gamma's gradient against the implicit function theorem on scipy's
gammainc, and statistically (E[dx/da] = dE[x]/da); the Gamma, Beta and Dirichlet rsample
gradients by the chain rule on those references; sampling under nbflow.jit against eager; bad
parameters by the typed error, in eager and in a program."""

import math

import numpy as np
import pytest
from scipy import special as sc
from scipy import stats

import nbflow as nb
from nbflow import distributions as D
from nbflow.errors import DomainError, GradientError
from nbflow.ops.random_params import binomial, poisson, standard_gamma, standard_gamma_grad

ALPHAS = np.array([0.02, 0.3, 1.0, 2.5, 10.0, 150.0, 3000.0])


def t(a, dtype="float64", requires_grad=False):
    return nb.tensor(np.asarray(a, dtype), dtype=dtype, requires_grad=requires_grad)


def implicit_grad(a, x):
    """dx/da = -(dP/da) / (dP/dx) with P = scipy's gammainc, by a central difference in a
    (of Q = gammaincc where P is above 1/2, so its leading digits do not cancel)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    h = 1e-6 * np.minimum(a, np.sqrt(a))
    upper = sc.gammainc(a, x) > 0.5
    dp = (sc.gammainc(a + h, x) - sc.gammainc(a - h, x)) / (2 * h)
    dq = (sc.gammaincc(a - h, x) - sc.gammaincc(a + h, x)) / (2 * h)
    density = np.exp(sc.xlogy(a - 1, x) - x - sc.gammaln(a))
    return -np.where(upper, dq, dp) / density


# ---------------------------------------------------------------- draws


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_draws_are_numpy_drawing_the_same_stream(dtype):
    a = np.tile(ALPHAS, 3).reshape(3, -1).astype(dtype)  # (float32 parameters, drawn in f64)
    got = standard_gamma(t(a, dtype), generator=nb.Generator(7)).numpy()
    ref = nb.Generator(7).numpy.standard_gamma(a.astype(np.float64))
    assert got.dtype == dtype and got.shape == a.shape
    np.testing.assert_array_equal(got, np.maximum(ref, np.finfo(dtype).tiny).astype(dtype))
    rate = np.array([[0.0, 0.4, 3.0], [25.0, 1e3, 1e7]])
    got = poisson(t(rate, dtype), generator=nb.Generator(8)).numpy()
    np.testing.assert_array_equal(got, nb.Generator(8).numpy.poisson(rate).astype(dtype))
    n, p = np.array([[0.0], [1.0], [40.0], [1e4]]), np.array([0.0, 0.3, 0.97, 1.0])
    got = binomial(t(n), t(p, dtype), generator=nb.Generator(9)).numpy()  # (n broadcast)
    ref = nb.Generator(9).numpy.binomial(np.broadcast_to(n, (4, 4)).astype(np.int64), p)
    assert got.dtype == dtype and got.shape == (4, 4)
    np.testing.assert_array_equal(got, ref.astype(dtype))


def test_draws_follow_the_exact_laws():
    """KS tests (a true law fails one below 1e-6) and the moments within 6 standard errors."""
    gen, n = nb.Generator(1), 4000
    for a in (0.1, 1.0, 4.5):
        x = standard_gamma(t(np.full(n, a)), generator=gen).numpy()
        assert stats.kstest(x, stats.gamma(a).cdf).pvalue > 1e-6
    for rate in (0.7, 30.0):
        k = poisson(t(np.full(n, rate)), generator=gen).numpy()
        assert abs(k.mean() - rate) < 6 * math.sqrt(rate / n)
        assert abs(k.var() / rate - 1) < 6 * math.sqrt(2 / n) + 6 / math.sqrt(n * rate)
    k = binomial(t(np.full(n, 12.0)), t(np.full(n, 0.35)), generator=gen).numpy()
    assert np.all(k == np.round(k)) and k.min() >= 0 and k.max() <= 12
    assert abs(k.mean() - 12 * 0.35) < 6 * math.sqrt(12 * 0.35 * 0.65 / n)


def test_tiny_concentrations_are_clamped_away_from_zero():
    x = standard_gamma(t(np.full(200, 1e-3), "float32"), generator=nb.Generator(2)).numpy()
    assert x.min() >= np.finfo(np.float32).tiny  # (most float64 draws round to 0 in float32)
    x = D.Gamma(t(np.full(200, 1e-3)), 1e30).sample(generator=nb.Generator(2)).numpy()
    assert x.min() >= np.finfo(np.float64).tiny


# ---------------------------------------------------------------- gradients


def test_gamma_gradient_is_the_implicit_function_theorem_on_scipy():
    a = t(np.tile(ALPHAS, 40), requires_grad=True)
    x = standard_gamma(a, generator=nb.Generator(3))
    x.sum().backward()
    expected = implicit_grad(a.detach().numpy(), x.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=2e-6, atol=1e-12)


def test_gamma_gradient_in_the_tails_and_in_float32():
    a = np.repeat(ALPHAS, 5)
    levels = np.tile([1e-8, 1e-3, 0.5, 0.999, 1 - 1e-8], len(ALPHAS))
    x = sc.gammaincinv(a, levels)
    a, x = a[x > 1e-300], x[x > 1e-300]  # (small levels at a = 0.02 underflow even float64)
    got = standard_gamma_grad(t(a), t(x)).numpy()
    np.testing.assert_allclose(got, implicit_grad(a, x), rtol=2e-6)
    normal32 = x > np.finfo(np.float32).tiny
    a32, x32 = a[normal32].astype(np.float32), x[normal32].astype(np.float32)
    got32 = standard_gamma_grad(t(a32, "float32"), t(x32, "float32")).numpy()
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, implicit_grad(a32, x32), rtol=1e-5)


@pytest.mark.parametrize("a", [0.4, 3.0])
def test_mean_gradient_of_gamma_draws_is_one(a):
    """E[x] = a for Gamma(a, 1), so E[dx/da] = 1 (the reparameterization is unbiased)."""
    n = 20000
    alpha = t(np.full(n, a), requires_grad=True)
    standard_gamma(alpha, generator=nb.Generator(4)).sum().backward()
    g = alpha.grad.numpy()
    assert abs(g.mean() - 1.0) < 6 * g.std() / math.sqrt(n)


def test_gamma_rsample_gradients():
    a, rate = t([0.7, 4.0], requires_grad=True), t([2.0, 0.5], requires_grad=True)
    x = D.Gamma(a, rate).rsample((500,), generator=nb.Generator(5))
    x.sum().backward()
    g = nb.Generator(5).numpy.standard_gamma(np.broadcast_to([0.7, 4.0], (500, 2)))
    expected_a = (implicit_grad([0.7, 4.0], g) / [2.0, 0.5]).sum(0)
    np.testing.assert_allclose(a.grad.numpy(), expected_a, rtol=1e-6)
    np.testing.assert_allclose(rate.grad.numpy(), -(g / np.square([2.0, 0.5])).sum(0), rtol=1e-9)


def test_beta_rsample_gradients():
    """Beta = X / (X + Y): the chain rule on the reference's draws, and d E[B] / da, db."""
    a_np, b_np, n = np.array([0.6, 3.0]), np.array([1.5, 0.8]), 20000
    a, b = t(a_np, requires_grad=True), t(b_np, requires_grad=True)
    weights = np.linspace(0.5, 1.5, 2 * n).reshape(n, 2)
    (D.Beta(a, b).rsample((n,), generator=nb.Generator(6)) * t(weights)).sum().backward()
    gen = nb.Generator(6).numpy
    x = gen.standard_gamma(np.broadcast_to(a_np, (n, 2)))
    y = gen.standard_gamma(np.broadcast_to(b_np, (n, 2)))
    s2 = np.square(x + y)
    da = weights * y / s2 * implicit_grad(a_np, x)
    db = -weights * x / s2 * implicit_grad(b_np, y)
    np.testing.assert_allclose(a.grad.numpy(), da.sum(0), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), db.sum(0), rtol=1e-6)
    # E[B] = a / (a + b): dE/da = b / (a + b)^2, dE/db = -a / (a + b)^2
    a.grad, b.grad = None, None
    D.Beta(a, b).rsample((n,), generator=nb.Generator(7)).mean(0).sum().backward()
    total = np.square(a_np + b_np)
    se = 6 * np.maximum(np.abs(da).std(0), np.abs(db).std(0)) / math.sqrt(n) + 1e-3
    assert np.all(np.abs(a.grad.numpy() - b_np / total) < se)
    assert np.all(np.abs(b.grad.numpy() + a_np / total) < se)


def test_dirichlet_rsample_gradients():
    """Normalized gammas: the chain rule per draw, and d E[X_i] / d a_j statistically."""
    c_np, n = np.array([0.5, 1.2, 3.0]), 20000
    c = t(c_np, requires_grad=True)
    w = np.array([1.0, -2.0, 0.5])
    (D.Dirichlet(c).rsample((n,), generator=nb.Generator(8)) * t(w)).sum().backward()
    g = nb.Generator(8).numpy.standard_gamma(np.broadcast_to(c_np, (n, 3)))
    s = g.sum(-1, keepdims=True)
    per_draw = implicit_grad(c_np, g) * (w / s - (w * g).sum(-1, keepdims=True) / s**2)
    np.testing.assert_allclose(c.grad.numpy(), per_draw.sum(0), rtol=1e-6)
    # E[X] = c / sum(c), so d E[w . X] / dc_j = (w_j - w . E[X]) / sum(c)
    expected = (w - w @ (c_np / c_np.sum())) / c_np.sum()
    se = 6 * per_draw.std(0) / math.sqrt(n)
    assert np.all(np.abs(c.grad.numpy() / n - expected) < se)


def test_second_derivative_refuses():
    a = t([1.5], requires_grad=True)
    (g,) = nb.autograd.grad(standard_gamma(a).sum(), [a], create_graph=True)
    with pytest.raises(GradientError, match="no derivative"):
        g.sum().backward()


# ---------------------------------------------------------------- graph mode, errors


def _draws(a, p, gen):
    return (
        D.Gamma(a, 2.0).rsample((3,), generator=gen),
        D.Beta(a, a + 1).sample((2,), generator=gen),
        D.Dirichlet(a).sample(generator=gen),
        D.Chi2(a).sample(generator=gen),
        D.StudentT(a).rsample(generator=gen),
        D.FisherSnedecor(a, a + 2).sample(generator=gen),
        D.InverseGamma(a, 1.0).rsample(generator=gen),
        D.Poisson(a).sample((2,), generator=gen),
        D.Binomial(5, p).sample(generator=gen),
        D.NegativeBinomial(a, p).sample(generator=gen),
    )


def test_sampling_under_jit_equals_eager():
    a, p = t([0.5, 2.0, 7.0]), t([0.1, 0.5, 0.9])
    eager = _draws(a, p, nb.Generator(11))
    gen = nb.Generator(11)
    traced = nb.jit(lambda a, p: _draws(a, p, gen))(a, p)
    assert len(traced) == len(eager)
    for e, j in zip(eager, traced):
        np.testing.assert_array_equal(j.numpy(), e.numpy())


def test_rsample_gradient_under_jit_equals_eager():
    def loss(a, gen):
        x = D.Gamma(a, 1.5).rsample((50,), generator=gen)
        return (x + D.Beta(a, 2.0).rsample(generator=gen)).sum()

    a = t([0.8, 3.0], requires_grad=True)
    loss(a, nb.Generator(12)).backward()
    eager = a.grad.numpy().copy()
    a.grad = None
    gen = nb.Generator(12)
    nb.jit(lambda a: loss(a, gen))(a).backward()
    np.testing.assert_allclose(a.grad.numpy(), eager, rtol=1e-12)


BAD = {
    "negative concentration": lambda: standard_gamma(t([1.0, -0.5])),
    "zero concentration": lambda: standard_gamma(t([0.0])),
    "nan concentration": lambda: standard_gamma(t([np.nan])),
    "negative rate": lambda: poisson(t([2.0, -1.0])),
    "prob above 1": lambda: binomial(t([3.0]), t([1.5])),
    "nan prob": lambda: binomial(t([3.0]), t([np.nan])),
    "fractional count": lambda: binomial(t([2.5]), t([0.5])),
    "negative count": lambda: binomial(t([-1.0]), t([0.5])),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_parameters_raise_domain_error(case):
    with pytest.raises(DomainError, match="standard_gamma|poisson|binomial"):
        BAD[case]()


def test_bad_parameters_raise_domain_error_in_a_program():
    draw = nb.jit(lambda a, n, p: (standard_gamma(a), poisson(a), binomial(n, p)))
    good = [t([1.0, 2.0]), t([3.0, 4.0]), t([0.2, 0.7])]
    assert all(np.all(np.isfinite(v.numpy())) for v in draw(*good))
    for i, bad in enumerate([t([1.0, -2.0]), t([3.0, 0.5]), t([0.2, 1.7])]):
        args = list(good)
        args[i] = bad
        with pytest.raises(DomainError):
            draw(*args)  # (the same program: checked when it runs)
    with pytest.raises(nb.errors.AttrError, match="Generator"):
        standard_gamma(t([1.0]), generator=np.random.default_rng(0))
