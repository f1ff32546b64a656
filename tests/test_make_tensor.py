"""nbflow.testing.make_tensor (PyTorch's torch.testing.make_tensor): shapes, ranges per dtype,
the seed, non-contiguous layouts, exclude_zero, requires_grad and the checks."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.testing import make_tensor


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_values_lie_in_low_high(dtype):
    t = make_tensor(50, 40, dtype=dtype, low=-2, high=3)
    a = t.numpy()
    assert t.shape == (50, 40) and a.dtype == np.dtype(dtype)
    assert a.min() >= -2 and (a.max() < 3 if dtype != "float16" else a.max() <= 3)
    assert len(np.unique(a)) > (4 if a.dtype.kind == "i" else 100)  # spread over the range
    d = make_tensor((1000,), dtype=dtype).numpy()
    assert d.min() >= -9 and d.max() <= 9 and d.min() < -5 and d.max() > 5  # PyTorch's defaults


def test_bool_and_clipping_to_the_dtype():
    b = make_tensor(200, dtype="bool").numpy()
    assert b.dtype == np.bool_ and 0 < b.mean() < 1
    big = make_tensor(100, dtype="int32", low=-1e12, high=1e12).numpy()
    assert big.min() >= np.iinfo(np.int32).min and big.max() <= np.iinfo(np.int32).max
    assert (make_tensor(5, dtype="int64", low=4, high=4).numpy() == 4).all()


def test_the_default_generator_seeds_it():
    nb.manual_seed(11)
    a = make_tensor(6, dtype="float32").numpy()
    nb.manual_seed(11)
    np.testing.assert_array_equal(make_tensor(6, dtype="float32").numpy(), a)
    g = nb.Generator(2)
    b = make_tensor(6, dtype="float32", generator=g).numpy()
    np.testing.assert_array_equal(
        make_tensor(6, dtype="float32", generator=nb.Generator(2)).numpy(), b
    )


def test_layout_exclude_zero_and_requires_grad():
    t = make_tensor(3, 4, dtype="float64", noncontiguous=True, requires_grad=True)
    assert not t.numpy().flags.c_contiguous and t.requires_grad and t.is_leaf
    (t * 2).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.full((3, 4), 2.0))
    z = make_tensor(500, dtype="int32", low=-1, high=2, exclude_zero=True).numpy()
    assert not (z == 0).any() and set(np.unique(z)) <= {-1, 1}
    f = make_tensor(100, dtype="float32", low=0, high=0, exclude_zero=True).numpy()
    assert (f == np.finfo(np.float32).tiny).all()


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"low": 3, "high": 1}, ValueError),
        ({"low": float("nan")}, ValueError),
        ({"dtype": "uint16"}, nb.DTypeError),
    ],
)
def test_checks(kwargs, error):
    kwargs = {"dtype": "float32", **kwargs}
    with pytest.raises(error):
        make_tensor(2, **kwargs)
    with pytest.raises(ValueError, match="non-negative ints"):
        make_tensor(-1, dtype="float32")
