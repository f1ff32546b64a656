"""Process-wide settings as PyTorch has them: set_default_dtype, set_num_threads and
broadcast_shapes, each checked against what it must change (dtypes of new tensors, modules
and jitted results; numba's and OpenBLAS's thread counts) or against numpy."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn


@pytest.fixture
def default_float64():
    nb.set_default_dtype(nb.float64)
    try:
        yield
    finally:
        nb.set_default_dtype(nb.float32)


def _float_results():
    """The dtype of every way of making a float tensor without naming a dtype."""
    return {
        "tensor": nb.tensor([1.5]).dtype,
        "as_tensor": nb.as_tensor([0.5]).dtype,
        "zeros": nb.zeros(2).dtype,
        "ones": nb.ones(2, 2).dtype,
        "empty": nb.empty(3).dtype,
        "rand": nb.rand(2).dtype,
        "randn": nb.randn(2).dtype,
        "eye": nb.eye(2).dtype,
        "linspace": nb.linspace(0, 1, 3).dtype,
        "arange": nb.arange(0.0, 1.0, 0.5).dtype,
        "full": nb.full((2,), 1.5).dtype,
        "int + float": (nb.tensor([1]) + 1.5).dtype,
        "sqrt(int)": nb.sqrt(nb.tensor([4])).dtype,
        "hann_window": nb.hann_window(4).dtype,
        "Linear": nn.Linear(2, 3).weight.dtype,
        "Conv2d": nn.Conv2d(1, 2, 3).weight.dtype,
        "LSTM": nn.LSTM(2, 3).weight_ih_l0.dtype,
        "BatchNorm1d": nn.BatchNorm1d(3).running_mean.dtype,
        "LayerNorm": nn.LayerNorm(3).weight.dtype,
        "Embedding": nn.Embedding(4, 2).weight.dtype,
        "MultiheadAttention": nn.MultiheadAttention(4, 2).in_proj_weight.dtype,
        "LazyLinear": nn.LazyLinear(3)(nb.ones(2, 2)).dtype,
    }


def test_float32_is_the_default():
    assert nb.get_default_dtype() == nb.float32
    wrong = {k: d for k, d in _float_results().items() if d != nb.float32}
    assert wrong == {}


def test_set_default_dtype_float64_reaches_every_constructor(default_float64):
    assert nb.get_default_dtype() == nb.float64
    wrong = {k: d for k, d in _float_results().items() if d != nb.float64}
    assert wrong == {}
    # a tensor of a named dtype keeps it, and a Python float does not widen it (weak scalars)
    assert (nb.tensor([1.0], dtype=nb.float32) + 1.5).dtype == nb.float32
    assert nb.finfo().bits == 64


def test_values_follow_the_default(default_float64):
    # float64 holds what float32 cannot: 1 + 1e-10 is not 1
    x = nb.tensor([1.0]) + 1e-10
    assert x.numpy()[0] == np.float64(1.0) + np.float64(1e-10)
    assert x.numpy()[0] != 1.0


def test_plans_made_under_the_old_default_are_not_reused():
    n = nb.tensor([4, 9])
    assert nb.sqrt(n).dtype == nb.float32  # the op's plan for an int64 input is now cached
    nb.set_default_dtype(nb.float64)
    try:
        r = nb.sqrt(n)
        assert r.dtype == nb.float64
        np.testing.assert_array_equal(r.numpy(), [2.0, 3.0])
    finally:
        nb.set_default_dtype(nb.float32)
    assert nb.sqrt(n).dtype == nb.float32


def test_jit_traces_again_under_a_new_default():
    @nb.jit
    def f(x):
        return x + nb.zeros(2)

    assert f(nb.tensor([1, 2])).dtype == nb.float32
    nb.set_default_dtype(nb.float64)
    try:
        assert f(nb.tensor([1, 2])).dtype == nb.float64
    finally:
        nb.set_default_dtype(nb.float32)
    assert f(nb.tensor([1, 2])).dtype == nb.float32


def test_training_under_float64(default_float64):
    rng = np.random.default_rng(0)
    x, y = nb.tensor(rng.standard_normal((16, 3))), nb.tensor(rng.integers(0, 2, 16))
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = nb.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        loss = nb.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype == nb.float64 for p in model.parameters())
    assert all(p.grad.dtype == nb.float64 for p in model.parameters())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("bad", [nb.float16, nb.int32, "bool"])
def test_set_default_dtype_refuses_what_is_not_float32_or_float64(bad):
    with pytest.raises(nb.DTypeError, match="float32 or float64"):
        nb.set_default_dtype(bad)
    assert nb.get_default_dtype() == nb.float32


def test_set_num_threads():
    import numba
    import threadpoolctl

    before = nb.get_num_threads()
    try:
        nb.set_num_threads(1)
        assert nb.get_num_threads() == 1 == numba.get_num_threads()
        blas = [
            c["num_threads"]
            for c in threadpoolctl.threadpool_info()
            if c["internal_api"] == "openblas" and "numpy" in c["filepath"]
        ]
        assert blas in ([], [1])  # (none: numpy without OpenBLAS)
        # kernels still give the right answers with the new count (a parallel-size fused
        # loop and a BLAS product)
        a = np.arange(1 << 17, dtype=np.float32)
        np.testing.assert_allclose((nb.tensor(a) * 2 + 1).numpy(), a * 2 + 1)
        m = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
        np.testing.assert_allclose((nb.tensor(m) @ nb.tensor(m)).numpy(), m @ m, rtol=1e-4)
        nb.set_num_threads(10_000)  # more than the machine has: numba's pool size
        assert nb.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    finally:
        nb.set_num_threads(before)
    assert nb.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_refuses_bad_counts(bad):
    before = nb.get_num_threads()
    with pytest.raises(nb.ArgumentError):
        nb.set_num_threads(bad)
    assert nb.get_num_threads() == before


@pytest.mark.parametrize(
    "shapes",
    [[(2, 1), (3,)], [(1,), (4, 1, 5), (3, 1)], [3, (2, 3)], [()], [(0,), (1,)], [(2, 0), (1, 0)]],
)
def test_broadcast_shapes_matches_numpy(shapes):
    assert nb.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)


@pytest.mark.parametrize("shapes", [[(2,), (3,)], [(2, 3), (3, 2)], [(-1,), (2,)]])
def test_broadcast_shapes_refuses_what_numpy_refuses(shapes):
    with pytest.raises(nb.ShapeError):
        nb.broadcast_shapes(*shapes)
