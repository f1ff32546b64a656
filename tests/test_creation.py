"""Creation ops vs numpy, and seeded random streams through an explicit Generator."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY


@pytest.mark.parametrize("d", dt.ALL)
@given(shape=nt.shapes(), value=st.integers(-3, 3))
def test_full_zeros_ones(d, shape, value):
    value = abs(value) if d.kind == "u" else value  # (-1 into uint8: a DTypeError)
    nt.assert_close(nb.full(shape, value, dtype=d), np.full(shape, value, d))
    nt.assert_close(nb.zeros(shape, dtype=d), np.zeros(shape, d))
    nt.assert_close(nb.ones(*shape, dtype=d), np.ones(shape, d))
    x = nb.zeros(shape, dtype=d)
    nt.assert_close(nb.full_like(x, 1), np.full(shape, 1, d))
    nt.assert_close(nb.ones_like(x, dtype="float64"), np.ones(shape, np.float64))


@given(start=st.integers(-5, 5), stop=st.integers(-5, 10), step=st.sampled_from([1, 2, -1, 3]))
def test_arange(start, stop, step):
    nt.assert_close(nb.arange(start, stop, step), np.arange(start, stop, step, dtype=np.int64))
    nt.assert_close(
        nb.arange(start * 0.5, stop, step), np.arange(start * 0.5, stop, step, dtype=np.float32)
    )


@pytest.mark.parametrize("d", dt.FLOATS)
@given(num=st.integers(0, 7), start=st.floats(-3, 3), stop=st.floats(-3, 3))
def test_linspace(d, num, start, stop):
    nt.assert_close(nb.linspace(start, stop, num, dtype=d), np.linspace(start, stop, num, dtype=d))


@given(n=st.integers(0, 4), m=st.one_of(st.none(), st.integers(0, 4)))
def test_eye(n, m):
    nt.assert_close(nb.eye(n, m), np.eye(n, m, dtype=np.float32))


@pytest.mark.parametrize("name", ["uniform", "normal", "randint"])
@pytest.mark.parametrize("seed", [0, 7])
def test_random_streams_match_numpy_generators(name, seed):
    op = REGISTRY[name]
    for d in op.dtypes:
        attrs = {"shape": (3, 4), "dtype": d}
        if name == "randint":
            attrs.update(low=0 if d.kind == "u" else -2, high=5)
        out = op(generator=nb.Generator(seed), **attrs)
        expected = op.ref(**op.check_attrs({**attrs, "generator": nb.Generator(seed)}))
        assert out.shape == (3, 4) and out.dtype == d
        nt.assert_close(out, expected)


def test_generator_is_explicit_and_reproducible():
    g = nb.Generator(3)
    a, b = nb.uniform(5, generator=g), nb.uniform(5, generator=g)
    assert not np.array_equal(a.numpy(), b.numpy())  # the stream advances
    c = nb.uniform(5, generator=nb.Generator(3))
    nt.assert_close(a, c.numpy())
    x = nb.randn(20000, generator=nb.Generator(1), dtype="float64").numpy()
    assert abs(x.mean()) < 0.05 and abs(x.std() - 1) < 0.05


def test_inplace_fill_zero_copy():
    x = nb.ones(2, 3)
    x.fill_(2.5)
    assert x.numpy().tolist() == [[2.5] * 3] * 2 and x.version == 1
    x.zero_()
    assert x.numpy().sum() == 0 and x.version == 2
    x.copy_(nb.tensor([1, 2, 3]))
    nt.assert_close(x, np.array([[1, 2, 3]] * 2, np.float32))
    h = nb.zeros(2, dtype="float16")
    h.copy_(nb.tensor([0.5, 1.5], dtype="float64"))
    assert h.dtype == np.float16 and h.numpy().tolist() == [0.5, 1.5]


def test_bad_creation_arguments():
    with pytest.raises(nb.AttrError):
        nb.arange(0, 5, 0)
    with pytest.raises(nb.AttrError):
        nb.uniform(3, generator=np.random.default_rng(0))
    with pytest.raises(nb.KernelNotFoundError):
        nb.uniform(3, dtype="int32")


@pytest.mark.parametrize(
    "name, attrs, message",
    [
        ("randint", {"low": 5, "high": 5}, "high must be greater than low"),
        ("randint", {"low": 100, "high": -5}, "high must be greater than low"),
        ("randint", {"low": 0, "high": 2**40, "dtype": "int32"}, r"does not fit int32"),
        ("uniform", {"low": 1.0, "high": 0.0}, "low <= high"),
        ("uniform", {"low": float("nan")}, "low <= high"),
        ("normal", {"std": -1.0}, "std >= 0"),
    ],
)
def test_random_parameters_a_draw_cannot_take_raise_domain_error(name, attrs, message):
    with pytest.raises(nb.DomainError, match=message):
        REGISTRY[name](shape=(2,), **attrs)
