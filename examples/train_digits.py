"""Train a two-layer MLP on scikit-learn's bundled 8x8 digits, eagerly, with plain SGD.

Everything here is nbflow's public API: tensors, ops, backward(), and in-place updates under
no_grad(). (Layers, optimizers and data loaders arrive with the training stack.)
"""

import time

import numpy as np
from sklearn.datasets import load_digits

import nbflow as nb


def load(seed=0):
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    return (x[:split], y[:split]), (x[split:], y[split:])


def init(shape, gen):
    bound = 1.0 / np.sqrt(shape[0])  # PyTorch's default Linear initialisation range
    return nb.uniform(*shape, low=-bound, high=bound, generator=gen).requires_grad_()


def forward(params, x):
    w1, b1, w2, b2 = params
    return nb.relu(x @ w1 + b1) @ w2 + b2


def main(epochs=30, batch=64, lr=0.1, hidden=64, seed=0):
    (x_train, y_train), (x_test, y_test) = load(seed)
    gen = nb.Generator(seed)
    params = [
        init((64, hidden), gen),
        nb.zeros(hidden).requires_grad_(),
        init((hidden, 10), gen),
        nb.zeros(10).requires_grad_(),
    ]
    order_rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for epoch in range(epochs):
        order = order_rng.permutation(len(x_train))
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i : i + batch]
            loss = nb.cross_entropy(
                forward(params, nb.tensor(x_train[idx])), nb.tensor(y_train[idx])
            )
            for p in params:
                p.grad = None
            loss.backward()
            with nb.no_grad():
                for p in params:
                    p.sub_(p.grad * lr)
            total += loss.item() * len(idx)
        if epoch % 5 == 4 or epoch == epochs - 1:
            print(f"epoch {epoch + 1:3d}  loss {total / len(order):.4f}")
    with nb.no_grad():
        pred = nb.argmax(forward(params, nb.tensor(x_test)), axis=1).numpy()
    accuracy = float(np.mean(pred == y_test))
    print(f"test accuracy {accuracy:.3f} ({time.perf_counter() - start:.1f} s)")
    return accuracy


if __name__ == "__main__":
    main()
