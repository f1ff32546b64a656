"""The real-model workloads of bench/real_models.py (bench/models.py), small: a few training
steps in eager mode and under @nbflow.jit give the same losses, and the losses fall."""

import sys
from pathlib import Path

import numpy as np
import pytest

import nbflow as nb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import models

SMALL = {
    "cnn": {"width": 8},
    "transformer": {"vocab": 1000, "d_model": 32, "heads": 4, "ff": 64},
    "lstm": {"hidden": 16},
    "mlp": {"sizes": (784, 32, 10)},
}


def losses(name, jit, steps=4):
    model = models.build(nb, name, **SMALL[name])
    optimizer = models.optimizer(nb, name, model)
    x, y = (nb.tensor(a) for a in models.batch(name, batch_size=4))

    def eager_step():
        optimizer.zero_grad()
        loss = nb.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    @nb.jit
    def graph_step(x, y):
        loss = nb.nn.functional.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    out = []
    for _ in range(steps):
        if jit:
            with nb.no_grad():
                out.append(graph_step(x, y).item())
        else:
            out.append(eager_step().item())
    return np.array(out)


@pytest.mark.parametrize("name", models.MODELS)
def test_eager_and_jit_train_alike(name):
    eager, graph = losses(name, jit=False), losses(name, jit=True)
    np.testing.assert_allclose(graph, eager, rtol=2e-4, atol=1e-5)
    assert eager[-1] < eager[0]  # it learns the batch


def test_same_weights_by_key():
    """init_weights fills by state_dict key: two builds agree, and norm scales are ones."""
    a, b = models.build(nb, "cnn", width=8), models.build(nb, "cnn", width=8)
    for (key, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=key)
    np.testing.assert_array_equal(a.bn.weight.numpy(), np.ones(8, np.float32))
