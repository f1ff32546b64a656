"""The one shape rule per op, at compile time (-1 dims) and at run time: the compile-time
result must generalise the run-time result (every known dim agrees, rank and dtype equal)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY, Spec
from nbflow.errors import NbflowError
from nbflow.graph import compatible

# op, attrs, and how many inputs; inputs are broadcast-compatible float32 shapes
CASES = [
    ("add", {}, 2),
    ("mul", {}, 2),
    ("where", {}, 3),
    ("exp", {}, 1),
    ("sum", {"axis": (0,), "keepdims": False}, 1),
    ("sum", {"axis": None, "keepdims": True}, 1),
    ("mean", {"axis": (-1,), "keepdims": True}, 1),
    ("max", {"axis": (0,), "keepdims": False}, 1),
    ("softmax", {"axis": -1}, 1),
    ("log_softmax", {"axis": 0}, 1),
    ("cast", {"dtype": dt.float64}, 1),
    ("sum_to_like", {}, 2),
]


def _hide(shape, mask):
    """The compile-time view of a shape: the dims where mask is True are unknown (-1)."""
    return tuple(-1 if m else n for n, m in zip(shape, mask))


@pytest.mark.parametrize("name,attrs,n", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@given(data=st.data())
def test_compile_time_generalises_run_time(name, attrs, n, data):
    op = REGISTRY[name]
    shapes = data.draw(nt.broadcastable_shapes(n, min_dims=1))
    if name == "sum_to_like":  # the target must be what the input broadcasts from
        shapes = (np.broadcast_shapes(*shapes), shapes[1])
    dtypes = [dt.bool_ if name == "where" and i == 0 else dt.float32 for i in range(n)]
    run = [Spec(s, d) for s, d in zip(shapes, dtypes)]
    try:
        expected = op.infer(run, op.check_attrs(attrs))
    except NbflowError:
        return  # an invalid run-time case (e.g. max over an empty axis) has nothing to check
    masks = [data.draw(st.lists(st.booleans(), min_size=len(s), max_size=len(s))) for s in shapes]
    compile_time = [Spec(_hide(s.shape, m), s.dtype) for s, m in zip(run, masks)]
    for c, r in zip(op.infer(compile_time, op.check_attrs(attrs)), expected):
        assert c.dtype == r.dtype
        assert compatible(c.shape, r.shape), f"{name}: compile {c.shape} vs run {r.shape}"


@pytest.mark.parametrize("shape,target", [((4, 6), (2, -1)), ((2, 3, 4), (-1, 4)), ((5,), (5,))])
def test_reshape_with_unknown_dims(shape, target):
    op = REGISTRY["reshape"]
    attrs = op.check_attrs({"shape": target})
    run = op.infer([Spec(shape, dt.float32)], attrs)[0]
    for mask in np.ndindex(*([2] * len(shape))):
        compiled = op.infer([Spec(_hide(shape, mask), dt.float32)], attrs)[0]
        assert compatible(compiled.shape, run.shape)
