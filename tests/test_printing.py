"""set_printoptions: what a tensor's repr prints (numpy's own options untouched), profiles,
sci_mode and the checks; and PyTorch's typename, dtype, anomaly switch and nbflow.testing."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.eager import printing


@pytest.fixture(autouse=True)
def _restore_options():
    saved = dict(printing._OPTIONS)
    yield
    printing._OPTIONS.clear()
    printing._OPTIONS.update(saved)


def test_precision_threshold_edgeitems_linewidth():
    x = nb.tensor([1.23456789, 2.5, 3.0])
    nb.set_printoptions(precision=2)
    assert repr(x) == "tensor([1.23, 2.5 , 3.  ])"
    assert str(np.array([1.23456789])) == "[1.23456789]"  # numpy's options as they were
    nb.set_printoptions(threshold=5, edgeitems=1)
    assert repr(nb.arange(10)) == "tensor([0, ..., 9], dtype=int64)"
    nb.set_printoptions(linewidth=30, threshold=1000)
    lines = repr(nb.arange(20)).splitlines()
    assert len(lines) > 1 and all(len(line) <= 30 for line in lines[:-1])  # (then the dtype)
    assert nb.get_printoptions() == {"precision": 2, "threshold": 1000, "edgeitems": 1,
                                     "linewidth": 30}  # fmt: skip


def test_profiles_and_sci_mode():
    nb.set_printoptions(profile="short")
    assert repr(nb.tensor([1.23456, 2.0])) == "tensor([1.23, 2.  ])"
    nb.set_printoptions(profile="full")
    assert "..." not in repr(nb.arange(5000))
    nb.set_printoptions(profile="default", sci_mode=True)
    assert repr(nb.tensor([1.5, 250.0])) == "tensor([1.5000e+00, 2.5000e+02])"
    nb.set_printoptions(sci_mode=False)
    assert repr(nb.tensor([1e-8, 1.0])) == "tensor([0.0000, 1.0000])"
    assert "requires_grad=True" in repr(nb.ones(1, requires_grad=True))


@pytest.mark.parametrize(
    "kwargs",
    [{"precision": -1}, {"threshold": "many"}, {"linewidth": True}, {"profile": "long"},
     {"sci_mode": 1}],
)  # fmt: skip
def test_bad_options_are_refused_and_change_nothing(kwargs):
    before = nb.get_printoptions()
    with pytest.raises(nb.ArgumentError):
        nb.set_printoptions(**kwargs)
    assert nb.get_printoptions() == before


def test_typename_dtype_anomaly_and_testing():
    assert nb.typename(nb.ones(2)) == "nbflow.FloatTensor"
    assert nb.typename(nb.ones(2, dtype="int64")) == "nbflow.LongTensor"
    assert nb.typename(3) == "int"
    assert nb.typename(nb.nn.Linear(1, 1)) == "nbflow.nn.modules.linear.Linear"
    assert isinstance(nb.ones(1).dtype, nb.dtype) and not isinstance("float32", nb.dtype)
    try:
        nb.set_anomaly_enabled(True)
        assert nb.is_anomaly_enabled()
    finally:
        nb.set_anomaly_enabled(False)
    assert not nb.is_anomaly_enabled()
    nb.testing.assert_close(nb.ones(2), nb.ones(2))
    with pytest.raises(AssertionError):
        nb.testing.assert_close(nb.ones(2), nb.zeros(2))
