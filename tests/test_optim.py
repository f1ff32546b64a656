"""SGD: the update op against its numpy reference, and eager step() == graph minimize()."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt
from nbflow.core import REGISTRY

SETTINGS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    {"lr": 0.1, "momentum": 0.5, "dampening": 0.3},
]


@pytest.mark.parametrize("hyper", SETTINGS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sgd_update_matches_reference(hyper, dtype):
    rng = np.random.default_rng(0)
    p, g, v = (rng.standard_normal((3, 4)).astype(dtype) for _ in range(3))
    expected = REGISTRY["sgd_update_"].ref(p, g, v, **hyper)
    tp, tv = nb.tensor(p), nb.tensor(v)
    out = nb.sgd_update_(tp, nb.tensor(g), tv, **hyper)
    assert out[0] is tp and out[1] is tv and tp.version == 1  # written in place
    nt.assert_close(tp, expected[0].astype(dtype))
    if hyper.get("momentum"):
        nt.assert_close(tv, expected[1].astype(dtype))


@pytest.mark.parametrize("hyper", SETTINGS)
def test_eager_step_equals_graph_minimize(hyper):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    w0 = (0.1 * rng.standard_normal((4, 2))).astype(np.float32)

    w = nb.tensor(w0, requires_grad=True)
    opt = nb.optim.SGD([w], **hyper)
    eager = []
    for _ in range(4):
        loss = nb.cross_entropy(nb.tensor(x) @ w, nb.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        eager.append(loss.item())

    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        xv = nb.static.data("x", [-1, 4])
        yv = nb.static.data("y", [-1], "int64")
        wv = nb.static.create_parameter("w", [4, 2])
        lv = nb.cross_entropy(xv @ wv, yv)
        nb.optim.SGD(**hyper).minimize(lv)
    assert "%w!: f32[4,2]" in str(main)  # the update is an in-place op in the IR
    exe, scope = nb.Executor(), nb.Scope()
    exe.run(startup, scope=scope)
    scope["w"] = nb.tensor(w0)
    graph = [float(exe.run(main, {"x": x, "y": y}, [lv, "w"], scope)[0]) for _ in range(4)]
    np.testing.assert_allclose(graph, eager, rtol=1e-5)
    nt.assert_close(scope["w"], w.numpy())


def test_bad_hyperparameters():
    with pytest.raises(ValueError):
        nb.optim.SGD([], lr=-1)
    with pytest.raises(ValueError):
        nb.optim.SGD([], lr=0.1, nesterov=True)
    with pytest.raises(nb.ShapeError):
        nb.sgd_update_(nb.zeros(3), nb.zeros(2), nb.zeros(3), lr=0.1)
