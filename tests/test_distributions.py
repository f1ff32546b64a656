"""nbflow.distributions against scipy.stats (float64 reference) and torch.distributions.

Densities, moments and CDFs are compared exactly; samplers by moments of 20,000 draws under
a fixed seed; rsample by the analytic gradient of E[x^2] under a Normal.
"""

import math

import numpy as np
import pytest
from scipy import stats

import nbflow as nb
import nbflow.distributions as D

F64 = nb.float64
Q = np.linspace(0.05, 0.95, 7)[:, None]  # quantiles at which values are placed


def t64(x, requires_grad=False):
    return nb.tensor(np.asarray(x, dtype=np.float64), requires_grad=requires_grad)


def close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    np.testing.assert_allclose(a, np.broadcast_to(b, np.shape(a)), rtol=rtol, atol=atol)


# (name, nbflow distribution, scipy frozen distribution, torch constructor args, has cdf)
CONTINUOUS = {
    "normal": (
        lambda: D.Normal(t64([0.0, 1.5]), t64([1.0, 2.0])),
        stats.norm([0.0, 1.5], [1.0, 2.0]),
        ("Normal", [[0.0, 1.5], [1.0, 2.0]]),
        True,
    ),
    "laplace": (
        lambda: D.Laplace(t64([0.0, -1.0]), t64([0.5, 2.0])),
        stats.laplace([0.0, -1.0], [0.5, 2.0]),
        ("Laplace", [[0.0, -1.0], [0.5, 2.0]]),
        True,
    ),
    "uniform": (
        lambda: D.Uniform(t64([-1.0, 0.0]), t64([2.0, 0.5])),
        stats.uniform([-1.0, 0.0], [3.0, 0.5]),
        ("Uniform", [[-1.0, 0.0], [2.0, 0.5]]),
        True,
    ),
    "exponential": (
        lambda: D.Exponential(t64([0.5, 3.0])),
        stats.expon(scale=[2.0, 1 / 3.0]),
        ("Exponential", [[0.5, 3.0]]),
        True,
    ),
    "gamma": (
        lambda: D.Gamma(t64([0.7, 3.0]), t64([2.0, 0.5])),
        stats.gamma([0.7, 3.0], scale=[0.5, 2.0]),
        ("Gamma", [[0.7, 3.0], [2.0, 0.5]]),
        False,
    ),
    "beta": (
        lambda: D.Beta(t64([0.7, 3.0]), t64([2.0, 1.5])),
        stats.beta([0.7, 3.0], [2.0, 1.5]),
        ("Beta", [[0.7, 3.0], [2.0, 1.5]]),
        False,
    ),
}


@pytest.mark.parametrize("name", CONTINUOUS)
def test_continuous_against_scipy(name):
    make, ref, _, has_cdf = CONTINUOUS[name]
    d, x = make(), ref.ppf(Q)
    assert d.batch_shape == (2,) and d.event_shape == ()
    close(d.log_prob(t64(x)), ref.logpdf(x))
    close(d.entropy(), ref.entropy())
    close(d.mean, ref.mean())
    close(d.variance, ref.var())
    close(d.stddev, ref.std())
    if has_cdf:
        close(d.cdf(t64(x)), ref.cdf(x))
        close(d.icdf(t64(Q)), x)


@pytest.mark.parametrize("name", CONTINUOUS)
def test_continuous_against_torch(name):
    torch = pytest.importorskip("torch")
    make, ref, (cls, args), has_cdf = CONTINUOUS[name]
    d, x = make(), ref.ppf(Q)
    td = getattr(torch.distributions, cls)(*(torch.tensor(a, dtype=torch.float64) for a in args))
    tx = torch.tensor(x)
    close(d.log_prob(t64(x)), td.log_prob(tx).numpy())
    close(d.entropy(), td.entropy().numpy())
    close(d.mean, td.mean.numpy())
    close(d.variance, td.variance.numpy())
    mode, tmode = d.mode.numpy(), td.mode.numpy()
    np.testing.assert_allclose(mode, tmode, rtol=1e-7, equal_nan=True)
    if has_cdf:
        close(d.cdf(t64(x)), td.cdf(tx).numpy())


def test_log_prob_gradients_against_torch():
    torch = pytest.importorskip("torch")
    x = np.array([0.2, 0.6, 0.9])
    a, b = t64([0.7, 3.0, 2.0], True), t64([2.0, 1.5, 4.0], True)
    D.Beta(a, b).log_prob(t64(x)).sum().backward()
    ta = torch.tensor([0.7, 3.0, 2.0], dtype=torch.float64, requires_grad=True)
    tb = torch.tensor([2.0, 1.5, 4.0], dtype=torch.float64, requires_grad=True)
    torch.distributions.Beta(ta, tb).log_prob(torch.tensor(x)).sum().backward()
    close(a.grad, ta.grad.numpy(), rtol=1e-6)
    close(b.grad, tb.grad.numpy(), rtol=1e-6)
    loc, scale = t64([0.3, -1.0], True), t64([1.2, 0.4], True)
    D.Normal(loc, scale).log_prob(t64([0.5, 0.1])).sum().backward()
    tl = torch.tensor([0.3, -1.0], dtype=torch.float64, requires_grad=True)
    ts = torch.tensor([1.2, 0.4], dtype=torch.float64, requires_grad=True)
    torch.distributions.Normal(tl, ts).log_prob(torch.tensor([0.5, 0.1])).sum().backward()
    close(loc.grad, tl.grad.numpy())
    close(scale.grad, ts.grad.numpy())


def test_broadcast_batch_shape_and_numbers():
    d = D.Normal(nb.zeros((3, 1)), nb.ones(2))
    assert d.batch_shape == (3, 2) and d.sample((4,)).shape == (4, 3, 2)
    assert D.Normal(0.0, 1.0).sample().shape == ()
    assert D.Normal(0.0, 1.0).loc.dtype == nb.float32
    assert D.Normal(t64(0.0), 1.0).scale.dtype == nb.float64


# ---------------------------------------------------------------- discrete and multivariate


def test_bernoulli_probs_and_logits():
    p = np.array([0.1, 0.5, 0.8])
    x = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    for d in (D.Bernoulli(t64(p)), D.Bernoulli(logits=t64(np.log(p / (1 - p))))):
        close(d.log_prob(t64(x)), stats.bernoulli(p).logpmf(x))
        close(d.entropy(), stats.bernoulli(p).entropy())
        close(d.mean, p)
        close(d.variance, p * (1 - p))
        close(d.probs, p)
    mode = D.Bernoulli(t64(p)).mode.numpy()
    assert mode[0] == 0 and np.isnan(mode[1]) and mode[2] == 1


def test_categorical_against_scipy_and_torch():
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    value = np.array([[2, 0], [1, 1], [0, 2]])
    expected = np.log(probs[np.arange(2), value])
    for d in (D.Categorical(t64(probs * 4)), D.Categorical(logits=t64(np.log(probs) + 1.0))):
        assert d.batch_shape == (2,) and d.event_shape == ()
        close(d.log_prob(nb.tensor(value)), expected)
        close(d.entropy(), stats.entropy(probs, axis=-1))
        close(d.probs, probs)
        assert d.mode.numpy().tolist() == [2, 0]
        assert np.isnan(d.mean.numpy()).all()
    torch = pytest.importorskip("torch")
    td = torch.distributions.Categorical(probs=torch.tensor(probs))
    close(D.Categorical(t64(probs)).log_prob(nb.tensor(value)), td.log_prob(torch.tensor(value)))
    close(D.Categorical(t64(probs)).entropy(), td.entropy().numpy())


def test_one_hot_categorical():
    probs = np.array([0.2, 0.3, 0.5])
    d = D.OneHotCategorical(t64(probs))
    assert d.batch_shape == () and d.event_shape == (3,)
    close(d.log_prob(t64(np.eye(3))), np.log(probs))
    close(d.entropy(), stats.entropy(probs))
    close(d.variance, probs * (1 - probs))
    s = d.sample((20000,), generator=nb.Generator(3)).numpy()
    assert s.shape == (20000, 3) and (s.sum(-1) == 1).all()
    np.testing.assert_allclose(s.mean(0), probs, atol=0.015)


def _mvn_params():
    loc = np.array([[0.5, -1.0, 0.0], [1.0, 2.0, -0.5]])
    A = np.array([[1.0, 0.3, 0.0], [0.2, 1.5, 0.1], [-0.4, 0.2, 0.8]])
    return loc, A @ A.T + 0.1 * np.eye(3)


def test_multivariate_normal_against_scipy_and_torch():
    loc, cov = _mvn_params()
    x = np.array([[0.1, 0.2, 0.3], [-1.0, 1.0, 2.0]])
    L = np.linalg.cholesky(cov)
    for d in (
        D.MultivariateNormal(t64(loc), covariance_matrix=t64(cov)),
        D.MultivariateNormal(t64(loc), scale_tril=t64(L)),
        D.MultivariateNormal(t64(loc), precision_matrix=t64(np.linalg.inv(cov))),
    ):
        assert d.batch_shape == (2,) and d.event_shape == (3,)
        ref = [stats.multivariate_normal(m, cov) for m in loc]
        close(d.log_prob(t64(x)), [r.logpdf(xi) for r, xi in zip(ref, x)], rtol=1e-6)
        close(d.entropy(), [r.entropy() for r in ref], rtol=1e-6)
        close(d.variance, np.diag(cov), rtol=1e-6)
        close(d.covariance_matrix, cov, rtol=1e-6)
    torch = pytest.importorskip("torch")
    td = torch.distributions.MultivariateNormal(torch.tensor(loc), torch.tensor(cov))
    d = D.MultivariateNormal(t64(loc), covariance_matrix=t64(cov))
    close(d.log_prob(t64(x)), td.log_prob(torch.tensor(x)).numpy(), rtol=1e-6)
    close(d.scale_tril, td.scale_tril.numpy(), rtol=1e-6)


def test_independent_and_expand():
    loc, scale = np.array([[0.0, 1.0, 2.0]]), np.array([[1.0, 0.5, 2.0]])
    d = D.Independent(D.Normal(t64(loc), t64(scale)), 1)
    assert d.batch_shape == (1,) and d.event_shape == (3,)
    x = np.array([[0.3, 0.4, -1.0]])
    close(d.log_prob(t64(x)), stats.norm(loc, scale).logpdf(x).sum(-1))
    close(d.entropy(), stats.norm(loc, scale).entropy().sum(-1))
    e = d.expand((4,))
    assert e.batch_shape == (4,) and e.sample().shape == (4, 3)
    n = D.Normal(t64(0.0), t64(1.0)).expand((2, 3))
    assert n.batch_shape == (2, 3) and n.log_prob(t64(0.0)).shape == (2, 3)
    c = D.Categorical(t64([0.2, 0.8])).expand((5,))
    assert c.batch_shape == (5,) and c.sample().shape == (5,)
    m = D.MultivariateNormal(t64([0.0, 0.0]), scale_tril=t64(np.eye(2))).expand((3,))
    assert m.batch_shape == (3,) and m.sample((2,)).shape == (2, 3, 2)
    with pytest.raises(ValueError):
        D.Independent(D.Normal(0.0, 1.0), 1)


# ---------------------------------------------------------------- sampling


SAMPLED = {
    "normal": (lambda: D.Normal(t64(1.5), t64(2.0)), stats.norm(1.5, 2.0)),
    "laplace": (lambda: D.Laplace(t64(-1.0), t64(0.5)), stats.laplace(-1.0, 0.5)),
    "uniform": (lambda: D.Uniform(t64(-1.0), t64(2.0)), stats.uniform(-1.0, 3.0)),
    "exponential": (lambda: D.Exponential(t64(3.0)), stats.expon(scale=1 / 3.0)),
    "gamma": (lambda: D.Gamma(t64(0.7), t64(2.0)), stats.gamma(0.7, scale=0.5)),
    "beta": (lambda: D.Beta(t64(3.0), t64(1.5)), stats.beta(3.0, 1.5)),
    "bernoulli": (lambda: D.Bernoulli(t64(0.3)), stats.bernoulli(0.3)),
}


@pytest.mark.parametrize("name", SAMPLED)
def test_sample_moments_and_reproducibility(name):
    make, ref = SAMPLED[name]
    n = 20000
    s = make().sample((n,), generator=nb.Generator(1234)).numpy()
    assert s.shape == (n,)
    mean, sd = ref.mean(), ref.std()
    assert abs(s.mean() - mean) < 5 * sd / math.sqrt(n)
    assert abs(s.var() / ref.var() - 1) < 0.08
    again = make().sample((n,), generator=nb.Generator(1234)).numpy()
    np.testing.assert_array_equal(s, again)
    other = make().sample((n,), generator=nb.Generator(99)).numpy()
    assert not np.array_equal(s, other)


def test_default_generator_follows_manual_seed():
    d = D.Gamma(2.0, 1.0)
    nb.manual_seed(7)
    a = (D.Normal(0.0, 1.0).sample((5,)).numpy(), d.sample((5,)).numpy())
    nb.manual_seed(7)
    b = (D.Normal(0.0, 1.0).sample((5,)).numpy(), d.sample((5,)).numpy())
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_categorical_and_mvn_sample_moments():
    probs = np.array([0.1, 0.6, 0.3])
    s = D.Categorical(t64(probs)).sample((20000,), generator=nb.Generator(5)).numpy()
    assert s.dtype == np.int64
    np.testing.assert_allclose(np.bincount(s, minlength=3) / 20000, probs, atol=0.015)
    loc, cov = _mvn_params()
    d = D.MultivariateNormal(t64(loc[0]), covariance_matrix=t64(cov))
    x = d.sample((20000,), generator=nb.Generator(6)).numpy()
    np.testing.assert_allclose(x.mean(0), loc[0], atol=0.06)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.1)


def test_rsample_gradient_of_normal_second_moment():
    """E[x^2] = mu^2 + sigma^2 under N(mu, sigma^2): d/dmu = 2 mu, d/dsigma = 2 sigma."""
    mu, sigma = t64(0.7, True), t64(1.3, True)
    x = D.Normal(mu, sigma).rsample((20000,), generator=nb.Generator(0))
    x.square().mean().backward()
    assert abs(mu.grad.item() - 2 * 0.7) < 0.1
    assert abs(sigma.grad.item() - 2 * 1.3) < 0.15
    assert D.Normal(mu, sigma).sample((3,)).requires_grad is False


def test_rsample_gradients_of_other_families():
    """E[x] for Uniform is (low + high) / 2, for Exponential 1 / rate, for Laplace loc."""
    low, high = t64(-1.0, True), t64(2.0, True)
    D.Uniform(low, high).rsample((20000,), generator=nb.Generator(1)).mean().backward()
    assert abs(low.grad.item() - 0.5) < 0.02 and abs(high.grad.item() - 0.5) < 0.02
    rate = t64(2.0, True)
    D.Exponential(rate).rsample((20000,), generator=nb.Generator(2)).mean().backward()
    assert abs(rate.grad.item() + 0.25) < 0.02
    loc = t64(0.3, True)
    D.Laplace(loc, 1.0).rsample((100,), generator=nb.Generator(3)).mean().backward()
    assert abs(loc.grad.item() - 1.0) < 1e-12
    with pytest.raises(NotImplementedError):  # (a count has no reparameterized sample)
        D.Poisson(2.0).rsample()


# ---------------------------------------------------------------- KL divergence


def test_kl_closed_forms():
    p, q = D.Normal(t64([0.0, 1.0]), t64([1.0, 2.0])), D.Normal(t64([0.5, 0.0]), t64([1.5, 1.0]))
    m1, s1, m2, s2 = np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([0.5, 0.0]), [1.5, 1.0]
    close(
        D.kl_divergence(p, q),
        np.log(np.divide(s2, s1)) + (s1**2 + (m1 - m2) ** 2) / (2 * np.square(s2)) - 0.5,
    )
    close(D.kl_divergence(D.Exponential(t64(2.0)), D.Exponential(t64(0.5))), np.log(4) + 0.25 - 1)
    close(D.kl_divergence(D.Uniform(t64(0.0), t64(1.0)), D.Uniform(t64(-1.0), t64(3.0))), np.log(4))
    assert D.kl_divergence(
        D.Uniform(t64(-1.0), t64(3.0)), D.Uniform(t64(0.0), t64(1.0))
    ).item() == (math.inf)
    a, b = np.array([0.2, 0.5, 0.3]), np.array([0.4, 0.4, 0.2])
    close(D.kl_divergence(D.Categorical(t64(a)), D.Categorical(t64(b))), stats.entropy(a, b))
    pb, qb = np.array([0.2, 0.0, 0.7]), np.array([0.5, 0.3, 0.4])
    expected = np.array([0.2 * np.log(0.4) + 0.8 * np.log(0.8 / 0.5), -np.log(0.7), 0.0])
    expected[2] = 0.7 * np.log(0.7 / 0.4) + 0.3 * np.log(0.3 / 0.6)
    close(D.kl_divergence(D.Bernoulli(t64(pb)), D.Bernoulli(t64(qb))), expected, rtol=1e-6)
    ind = D.kl_divergence(D.Independent(p, 1), D.Independent(q, 1))
    close(ind, D.kl_divergence(p, q).numpy().sum())
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Gamma(1.0, 1.0))


def test_kl_against_torch():
    torch = pytest.importorskip("torch")
    td = torch.distributions

    def T(x):
        return torch.tensor(x, dtype=torch.float64)

    loc, cov = _mvn_params()
    cov2 = np.diag([1.0, 2.0, 0.5])
    kl = D.kl_divergence(
        D.MultivariateNormal(t64(loc), covariance_matrix=t64(cov)),
        D.MultivariateNormal(t64([0.0, 0.1, 0.2]), covariance_matrix=t64(cov2)),
    )
    ref = td.kl_divergence(
        td.MultivariateNormal(T(loc), T(cov)), td.MultivariateNormal(T([0.0, 0.1, 0.2]), T(cov2))
    )
    close(kl, ref.numpy(), rtol=1e-6)
    pb, qb = [0.2, 0.0, 1.0, 0.6], [0.5, 0.3, 0.4, 0.0]
    close(
        D.kl_divergence(D.Bernoulli(t64(pb)), D.Bernoulli(t64(qb))),
        td.kl_divergence(td.Bernoulli(T(pb)), td.Bernoulli(T(qb))).numpy(),
    )
    pc, qc = [[0.2, 0.8, 0.0], [0.1, 0.1, 0.8]], [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    close(
        D.kl_divergence(D.Categorical(t64(pc)), D.Categorical(t64(qc))),
        td.kl_divergence(td.Categorical(T(pc)), td.Categorical(T(qc))).numpy(),
    )
    close(
        D.kl_divergence(D.Normal(t64(0.3), t64(0.5)), D.Normal(t64(-1.0), t64(2.0))),
        td.kl_divergence(td.Normal(T(0.3), T(0.5)), td.Normal(T(-1.0), T(2.0))).numpy(),
    )


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "make",
    [
        lambda: D.Normal(0.0, -1.0),
        lambda: D.Laplace(0.0, 0.0),
        lambda: D.Uniform(1.0, 1.0),
        lambda: D.Exponential(-2.0),
        lambda: D.Gamma(0.0, 1.0),
        lambda: D.Beta(1.0, -1.0),
        lambda: D.Bernoulli(1.5),
        lambda: D.Bernoulli(),
        lambda: D.Bernoulli(0.5, logits=0.0),
        lambda: D.Categorical(t64([0.5, -0.1, 0.6])),
        lambda: D.Categorical(),
        lambda: D.MultivariateNormal(t64([0.0, 0.0]), covariance_matrix=t64([[1, 2], [2, 1]])),
        lambda: D.MultivariateNormal(t64([0.0, 0.0]), scale_tril=t64([[1, 1], [0, 1]])),
    ],
)
def test_invalid_parameters_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_values_outside_the_support_raise_value_error():
    cases = [
        (D.Exponential(1.0), -1.0),
        (D.Gamma(2.0, 1.0), -0.5),
        (D.Beta(2.0, 2.0), 1.5),
        (D.Uniform(0.0, 1.0), 1.0),
        (D.Bernoulli(0.3), 0.5),
        (D.Categorical(t64([0.5, 0.5])), nb.tensor(2)),
        (D.OneHotCategorical(t64([0.5, 0.5])), t64([1.0, 1.0])),
        (D.Normal(nb.zeros(3), 1.0), nb.zeros(2)),
    ]
    for d, value in cases:
        with pytest.raises(ValueError):
            d.log_prob(value)
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    assert D.Exponential(1.0, validate_args=False).log_prob(-1.0).item() == pytest.approx(1.0)


def test_float32_parameters_and_enumerate_support():
    d = D.Normal(nb.tensor([0.0, 1.0]), 2.0)
    lp = d.log_prob(0.5)
    assert lp.dtype == nb.float32 and d.sample((3,)).dtype == nb.float32
    close(lp, stats.norm([0.0, 1.0], 2.0).logpdf(0.5), rtol=1e-6)
    assert D.Bernoulli(nb.tensor([0.2, 0.9])).enumerate_support().shape == (2, 2)
    support = D.Categorical(nb.tensor([[0.2, 0.8]] * 3)).enumerate_support(expand=False)
    assert support.numpy().ravel().tolist() == [0, 1]
