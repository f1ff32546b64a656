"""nn.init's structured initialisers: orthogonality, bounds and moments (loose statistical
tolerances), exact patterns, determinism under a Generator, and PyTorch's errors."""

import math

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow.nn import init


def _empty(*shape, dtype=nb.float64):
    return nb.zeros(*shape, dtype=dtype)


@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (8, 2), (4, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    t = init.orthogonal_(_empty(*shape), gain=2.0, generator=nb.Generator(0))
    m = t.numpy().reshape(shape[0], -1) / 2.0
    small = min(m.shape)
    gram = m @ m.T if m.shape[0] == small else m.T @ m
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)


def test_orthogonal_is_uniform_enough():
    # over many draws the entries of a random orthogonal 4x4 have mean 0 and variance 1/4
    gen = nb.Generator(1)
    draws = np.stack([init.orthogonal_(_empty(4, 4), generator=gen).numpy() for _ in range(400)])
    assert abs(draws.mean()) < 0.03
    assert draws.var() == pytest.approx(0.25, rel=0.05)


def test_trunc_normal_bounds_and_moments():
    t = init.trunc_normal_(_empty(200, 100), mean=1.0, std=2.0, a=0.0, b=3.0)
    x = t.numpy()
    assert x.min() >= 0.0 and x.max() <= 3.0
    # normal(1, 2) truncated to [0, 3]: mean = mu + sigma (phi(alpha) - phi(beta)) / Z
    alpha, beta = -0.5, 1.0
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2
    z = cdf(beta) - cdf(alpha)
    mean = 1.0 + 2.0 * (phi(alpha) - phi(beta)) / z
    var = 4.0 * (
        1 + (alpha * phi(alpha) - beta * phi(beta)) / z - ((phi(alpha) - phi(beta)) / z) ** 2
    )
    assert x.mean() == pytest.approx(mean, abs=0.02)
    assert x.var() == pytest.approx(var, rel=0.03)


def test_trunc_normal_default_and_float32():
    t = init.trunc_normal_(_empty(1000, dtype=nb.float32), generator=nb.Generator(3))
    assert t.dtype == nb.float32
    assert t.numpy().min() >= -2.0 and t.numpy().max() <= 2.0
    assert abs(t.numpy().mean()) < 0.1


def test_eye_and_dirac_are_exact():
    np.testing.assert_array_equal(init.eye_(_empty(3, 5)).numpy(), np.eye(3, 5))
    w = init.dirac_(_empty(4, 2, 3, 3), groups=2)
    expected = np.zeros((4, 2, 3, 3))
    for out, inp in [(0, 0), (1, 1), (2, 0), (3, 1)]:
        expected[out, inp, 1, 1] = 1.0
    np.testing.assert_array_equal(w.numpy(), expected)
    # a Dirac conv keeps its input (as many channels as it has outputs)
    conv = nn.Conv2d(3, 3, 3, padding=1, bias=False).double()
    init.dirac_(conv.weight)
    x = nb.tensor(np.random.default_rng(0).standard_normal((1, 3, 5, 5)), dtype=nb.float64)
    np.testing.assert_allclose(conv(x).numpy(), x.numpy(), atol=1e-12)


def test_dirac_3d_and_5d():
    w = init.dirac_(_empty(2, 3, 5)).numpy()
    assert w[0, 0, 2] == 1 and w[1, 1, 2] == 1 and w.sum() == 2
    w = init.dirac_(_empty(3, 2, 1, 3, 3)).numpy()
    assert w[0, 0, 0, 1, 1] == 1 and w[1, 1, 0, 1, 1] == 1 and w.sum() == 2


def test_sparse_zeros_per_column_and_std():
    t = init.sparse_(_empty(40, 300), sparsity=0.3, std=0.5, generator=nb.Generator(2))
    x = t.numpy()
    zeros = (x == 0).sum(axis=0)
    assert (zeros == math.ceil(0.3 * 40)).all()
    nonzero = x[x != 0]
    assert nonzero.std() == pytest.approx(0.5, rel=0.05)
    assert abs(nonzero.mean()) < 0.03


def test_generator_makes_them_repeatable():
    for fn in (
        lambda t, g: init.orthogonal_(t, generator=g),
        lambda t, g: init.trunc_normal_(t, generator=g),
        lambda t, g: init.sparse_(t, 0.5, generator=g),
    ):
        a = fn(_empty(6, 4), nb.Generator(7)).numpy()
        b = fn(_empty(6, 4), nb.Generator(7)).numpy()
        c = fn(_empty(6, 4), nb.Generator(8)).numpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_fills_a_parameter_in_place():
    lin = nn.Linear(4, 3).double()
    weight = lin.weight
    init.orthogonal_(lin.weight)
    assert lin.weight is weight and weight.requires_grad and weight.is_leaf


@pytest.mark.parametrize(
    "call",
    [
        lambda: init.orthogonal_(_empty(3)),
        lambda: init.eye_(_empty(2, 2, 2)),
        lambda: init.dirac_(_empty(2, 2)),
        lambda: init.dirac_(_empty(3, 2, 3), groups=2),
        lambda: init.sparse_(_empty(3), 0.1),
        lambda: init.sparse_(_empty(3, 3), 1.5),
        lambda: init.trunc_normal_(_empty(3), a=1.0, b=0.0),
        lambda: init.trunc_normal_(_empty(3), mean=50.0, a=-1.0, b=1.0),
    ],
)
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_errors_match_pytorch():
    torch = pytest.importorskip("torch")
    for ours, theirs in [
        (lambda: init.orthogonal_(_empty(3)), lambda: torch.nn.init.orthogonal_(torch.zeros(3))),
        (lambda: init.eye_(_empty(3)), lambda: torch.nn.init.eye_(torch.zeros(3))),
        (lambda: init.dirac_(_empty(3, 3)), lambda: torch.nn.init.dirac_(torch.zeros(3, 3))),
    ]:
        with pytest.raises(ValueError) as mine:
            ours()
        with pytest.raises(ValueError) as reference:
            theirs()
        assert str(mine.value) == str(reference.value)


def test_fan_based_initialisers_leave_empty_tensors_alone_with_a_warning():
    # PyTorch's rule: its fan may be 0 (nn.Linear(0, 3) is a valid layer)
    fns = (init.kaiming_uniform_, init.kaiming_normal_, init.xavier_uniform_, init.xavier_normal_)
    for shape in ((0, 3), (3, 0), (0, 0)):
        for fn in fns:
            with pytest.warns(UserWarning, match="zero-element"):
                assert fn(nb.zeros(*shape)).shape == shape
    with pytest.warns(UserWarning):
        layer = nb.nn.Linear(0, 3)
    np.testing.assert_array_equal(
        layer(nb.zeros(2, 0)).numpy(), np.broadcast_to(layer.bias.numpy(), (2, 3))
    )
