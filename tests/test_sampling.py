"""PyTorch's sampling functions (nbflow/ops/sampling.py): frequencies against the exact
probabilities, bad weights raising when the draw runs, eager and graph mode."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.errors import AttrError, OutOfRangeError, UnsupportedError

P = np.array([0.1, 0.0, 0.6, 0.3])


def _near(freq, expected, n):
    """Within 5 standard deviations of a binomial frequency (a fluke: under 1e-6)."""
    sd = np.sqrt(np.asarray(expected) * (1 - np.asarray(expected)) / n)
    assert np.all(np.abs(freq - expected) <= 5 * sd + 1e-12), (freq, expected)


def test_like_draws_have_the_shape_dtype_and_distribution_asked_for():
    g = nb.Generator(0)
    x = nb.zeros(200, 50, dtype=nb.float64)
    u = nb.rand_like(x, generator=g).numpy()
    assert u.shape == (200, 50) and u.dtype == np.float64 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / u.size)
    z = nb.randn_like(x, dtype=nb.float32, generator=g).numpy()
    assert z.dtype == np.float32 and abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    ints = nb.randint_like(nb.zeros(1000, dtype=nb.int32), 2, 5, generator=g).numpy()
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {2, 3, 4}
    held = nb.randint_like(x, 3, generator=g).numpy()  # a float tensor holds the integers
    assert held.dtype == np.float64 and set(np.unique(held)) == {0.0, 1.0, 2.0}
    again = nb.rand_like(x, generator=nb.Generator(0)).numpy()
    np.testing.assert_array_equal(again, u)  # the generator's stream, reproducible


def test_bernoulli_draws_ones_with_probability_p():
    p = np.repeat([0.0, 0.25, 1.0], 20000)
    drawn = nb.bernoulli(nb.tensor(p), generator=nb.Generator(1)).numpy()
    assert drawn.dtype == np.float64 and set(np.unique(drawn)) <= {0.0, 1.0}
    means = drawn.reshape(3, -1).mean(axis=1)
    assert means[0] == 0 and means[2] == 1
    _near(means[1], 0.25, 20000)
    for bad in ([1.5], [-0.1], [np.nan]):
        with pytest.raises(OutOfRangeError, match="outside \\[0, 1\\]"):
            nb.bernoulli(nb.tensor(bad))
    with pytest.raises(AttrError):
        nb.bernoulli(nb.tensor([1, 0]))


def test_multinomial_with_replacement_follows_the_weights():
    n = 40000
    drawn = nb.multinomial(nb.tensor(P * 7), n, replacement=True, generator=nb.Generator(2))
    assert drawn.dtype == np.int64 and drawn.shape == (n,)
    counts = np.bincount(drawn.numpy(), minlength=4)
    assert counts[1] == 0  # a zero weight is never drawn
    _near(counts / n, P, n)
    rows = nb.multinomial(nb.tensor([[0.0, 1.0], [1.0, 0.0]]), 5, replacement=True)
    np.testing.assert_array_equal(rows.numpy(), [[1] * 5, [0] * 5])


def test_multinomial_without_replacement_draws_each_pair_as_often_as_it_should():
    n = 6000
    g = nb.Generator(3)
    pairs = np.array([nb.multinomial(nb.tensor(P), 2, generator=g).numpy() for _ in range(n)])
    assert (pairs[:, 0] != pairs[:, 1]).all() and 1 not in pairs
    for i, j in [(0, 2), (2, 0), (2, 3), (3, 0)]:  # first i, then j from what is left
        exact = P[i] * P[j] / (1 - P[i])
        _near(np.mean((pairs[:, 0] == i) & (pairs[:, 1] == j)), exact, n)
    every = nb.multinomial(nb.tensor([[1.0, 2.0, 3.0]] * 4), 3).numpy()
    assert (np.sort(every, axis=1) == [0, 1, 2]).all()


def test_multinomial_refuses_bad_weights_and_counts():
    for bad in ([0.5, -0.1], [np.nan, 1.0], [np.inf, 1.0], [0.0, 0.0]):
        with pytest.raises(OutOfRangeError, match="multinomial: a row's count"):
            nb.multinomial(nb.tensor(bad), 1, replacement=True)
    with pytest.raises(OutOfRangeError, match="positive weights must be in \\[2, 2\\]"):
        nb.multinomial(nb.tensor([1.0, 0.0]), 2)
    with pytest.raises(AttrError, match="at most the 2 categories"):
        nb.multinomial(nb.tensor([1.0, 1.0]), 3)
    for probs, k in [(nb.ones(2, 2, 2), 1), (nb.tensor([1, 2]), 1), (nb.ones(3), 0)]:
        with pytest.raises(AttrError):
            nb.multinomial(probs, k)


def test_sampling_runs_in_graph_mode_with_its_checks():
    @nb.jit
    def draw(p):
        return nb.multinomial(p, 2), nb.bernoulli(p / p.sum())

    picks, coins = draw(nb.tensor(P))
    assert picks.shape == (2,) and picks.numpy()[0] != picks.numpy()[1] and 1 not in picks.numpy()
    assert coins.numpy()[1] == 0  # its probability is 0
    with pytest.raises(OutOfRangeError, match="negative, infinite or NaN"):
        draw(nb.tensor([0.5, -0.1, 0.3, 0.3]))  # the program runs the checks
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 3])
        with pytest.raises(UnsupportedError, match="known shape"):
            nb.rand_like(x)


def test_rng_state_round_trips_through_a_checkpoint(tmp_path):
    nb.manual_seed(7)
    nb.rand(3)  # (a stream part-way through, an odd number of 32-bit draws too)
    nb.randint(0, 5, (3,), dtype=nb.int32)
    nb.save_state({"rng": nb.get_rng_state()}, tmp_path / "rng.ckpt")
    first = [nb.randn(5).numpy(), nb.multinomial(nb.ones(6), 3).numpy()]
    nb.set_rng_state(nb.load_state(tmp_path / "rng.ckpt")["rng"])
    again = [nb.randn(5).numpy(), nb.multinomial(nb.ones(6), 3).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert nb.initial_seed() == 7
    g = nb.Generator(1)
    state = nb.tensor(g.get_state())  # a Tensor of it works too
    drawn = nb.rand(4, generator=g).numpy()
    np.testing.assert_array_equal(nb.rand(4, generator=g.set_state(state)).numpy(), drawn)
    for bad in (np.zeros(8, np.int64), np.zeros(3, np.int64), np.zeros(8)):
        with pytest.raises(AttrError, match="set_state"):
            g.set_state(bad)


FILLS = [  # (method, kwargs, the scipy distribution the draws follow)
    ("uniform_", {"from_": -2.0, "to": 3.0}, ("uniform", (-2.0, 5.0))),
    ("normal_", {"mean": 1.5, "std": 0.5}, ("norm", (1.5, 0.5))),
    ("log_normal_", {"mean": 0.5, "std": 0.25}, ("lognorm", (0.25, 0.0, np.exp(0.5)))),
    ("exponential_", {"lambd": 4.0}, ("expon", (0.0, 0.25))),
    ("cauchy_", {"median": -1.0, "sigma": 2.0}, ("cauchy", (-1.0, 2.0))),
]


@pytest.mark.parametrize("name, kwargs, law", FILLS, ids=[f[0] for f in FILLS])
def test_an_inplace_fill_draws_from_its_distribution(name, kwargs, law):
    stats = pytest.importorskip("scipy.stats")
    x = nb.zeros(4000, dtype=nb.float64)
    version = x.version
    out = getattr(x, name)(**kwargs, generator=nb.Generator(3))
    assert out is x and x.version > version  # written in place, the version moved
    dist, args = law
    assert stats.kstest(x.numpy(), dist, args=args).pvalue > 1e-4
    again = getattr(nb.zeros(4000, dtype=nb.float64), name)(**kwargs, generator=nb.Generator(3))
    np.testing.assert_array_equal(again.numpy(), x.numpy())


def test_discrete_fills_draw_the_right_integers_as_often_as_they_should():
    g, n = nb.Generator(5), 40000
    geo = nb.zeros(n).geometric_(0.3, generator=g).numpy()
    for k in (1, 2, 3, 6):  # P(k) = (1 - p)^(k - 1) p
        _near((geo == k).mean(), 0.7 ** (k - 1) * 0.3, n)
    assert geo.min() >= 1 and np.all(geo == np.round(geo))
    ones = nb.zeros(n, dtype=nb.int32).bernoulli_(0.25, generator=g).numpy()
    assert set(np.unique(ones)) == {0, 1}
    _near(ones.mean(), 0.25, n)
    rows = nb.zeros(2, n // 2).bernoulli_(nb.tensor([[0.1], [0.9]]), generator=g).numpy()
    _near(rows.mean(axis=1), np.array([0.1, 0.9]), n // 2)
    ints = nb.zeros(n, dtype=nb.int64).random_(3, 7, generator=g).numpy()
    _near(np.bincount(ints, minlength=7)[3:] / n, np.full(4, 0.25), n)
    below = nb.zeros(n).random_(5, generator=g).numpy()  # random_(to): from 0
    assert set(np.unique(below)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    full = nb.zeros(n, dtype=nb.float32).random_(generator=g).numpy()  # [0, 2^24]
    assert full.max() <= 2**24 and full.max() > 2**23 and np.all(full == np.round(full))


def test_fills_refuse_bad_parameters_and_a_leaf_that_requires_grad():
    from nbflow.errors import DomainError, DTypeError, GradientError

    x = nb.zeros(3)
    for call in (
        lambda: x.normal_(0.0, -1.0),
        lambda: x.uniform_(2.0, 1.0),
        lambda: x.exponential_(0.0),
        lambda: x.geometric_(1.5),
        lambda: x.bernoulli_(2.0),
        lambda: x.random_(4, 4),
    ):
        with pytest.raises(DomainError):
            call()
    with pytest.raises(DTypeError):
        nb.zeros(3, dtype=nb.int64).normal_()
    w = nb.zeros(3, requires_grad=True)
    with pytest.raises(GradientError):
        w.normal_()
    with nb.no_grad():
        w.uniform_(1.0, 2.0)  # PyTorch's way to initialise a parameter in place
    assert np.all((w.numpy() >= 1) & (w.numpy() < 2))


def test_a_fill_inside_a_jit_function_draws_again_each_call():
    @nb.jit
    def noisy(x):
        noise = nb.zeros_like(x).normal_(0.0, 1.0)
        return x + noise

    x = nb.zeros(2000)
    a, b = noisy(x).numpy(), noisy(x).numpy()
    assert not np.array_equal(a, b)
    assert abs(a.mean()) < 0.15 and abs(a.std() - 1) < 0.1
