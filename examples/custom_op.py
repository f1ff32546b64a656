"""Your own op: a new activation written as a scalar body plus a gradient, property-tested with
nbflow.testing, then used to train a small MLP on the 8x8 digits in graph mode.

swish_beta(x, beta) = x * sigmoid(beta * x). The body is plain Python on one scalar; nbflow
compiles it with numba into broadcasting loops for every declared dtype, exactly as it does
for its own ops (nbflow/ops/elementwise.py).

    pip install -e ".[examples]" && python examples/custom_op.py
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt
from nbflow.data import DataLoader, load_digits


def swish_beta_ref(x, beta=1.0):
    """The numpy reference the property tests compare against (computed in float64)."""
    x64 = x.astype(np.float64)
    return (x64 / (1.0 + np.exp(-beta * x64))).astype(x.dtype)


@nb.elementwise(dtypes=nb.dtypes.FLOATS, ref=swish_beta_ref, attrs={"beta": nb.Attr("float", 1.0)})
def swish_beta(x, beta):
    """x * sigmoid(beta * x) (SiLU for beta = 1)."""
    if beta * x < -30.0:  # exp would overflow; the result is ~0 (keeps float32 NaN-free)
        return x * math.exp(beta * x)
    return x / (1.0 + math.exp(-beta * x))


@swish_beta.defgrad
def _swish_beta_grad(g, out, x, beta):
    # d/dx x s(bx) = s + b x s (1 - s), written with nbflow ops (so it also runs in graph mode
    # and can be differentiated again)
    s = nb.sigmoid(x * beta)
    return (g * (s + beta * x * s * (1 - s)),)


# nbflow.testing generates the standard property tests: forward vs the reference for every
# dtype (hypothesis: 0-d, size-0, broadcast and strided inputs), a float64 gradient check and
# eager vs @jit; in a test file `test_swish_beta = nt.op_property_test(...)` is all it takes
test_swish_beta = nt.op_property_test(swish_beta, attrs=[{}, {"beta": 1.7}], max_examples=10)


class SwishBeta(nn.Module):
    def __init__(self, beta=1.0):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        return swish_beta(x, beta=self.beta)


def train(epochs=5, batch=64, lr=0.01, seed=0, beta=1.5):
    nb.manual_seed(seed)
    train_set = load_digits("train", seed=seed)
    test_set = load_digits("test", seed=seed)
    g = nb.Generator(seed)
    model = nn.Sequential(
        nn.Linear(64, 64, generator=g), SwishBeta(beta), nn.Linear(64, 10, generator=g)
    )
    optimizer = nb.optim.Adam(model.parameters(), lr=lr)

    @nb.jit
    def train_step(x, y):  # traced once into a Program holding swish_beta and its gradient
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    @nb.jit
    def predict(x):
        return nb.argmax(model(x), axis=1)

    loader = DataLoader(train_set, batch_size=batch, shuffle=True, drop_last=True, seed=seed)
    start = time.perf_counter()
    with nb.no_grad():
        for epoch in range(epochs):
            losses = [train_step(x, y).item() for x, y in loader]
            print(f"epoch {epoch + 1}/{epochs}: mean loss {np.mean(losses):.4f}")
        x_test, y_test = test_set.tensors
        accuracy = float(np.mean(predict(x_test).numpy() == y_test.numpy()))
    ops = {node.op.name for node in predict.program(x_test).global_block().ops}
    assert "swish_beta" in ops  # the user op is in the traced Program, like any other
    seconds = time.perf_counter() - start
    print(f"test accuracy {accuracy:.3f} with swish_beta (trained in {seconds:.1f} s)")
    return accuracy


def main(epochs=5):
    start = time.perf_counter()
    result = test_swish_beta()  # run every generated check here, outside pytest
    print(f"property tests passed in {time.perf_counter() - start:.1f} s (devices: {result})")
    return train(epochs=epochs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    main(epochs=parser.parse_args().epochs)
