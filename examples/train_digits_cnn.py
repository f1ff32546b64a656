"""The main job: a small CNN trained on scikit-learn's 8x8 digits in graph mode.

The model is an ordinary nbflow.nn Module. The whole training step (forward, backward and the
Adam updates) is traced once by @nbflow.jit into a Program and then run by the executor on
every batch; the parameters stay eager tensors the program updates in place. Evaluation
traces a second, forward-only Program.

    pip install -e ".[examples]" && python examples/train_digits_cnn.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from tqdm import tqdm

import nbflow as nb
from nbflow import nn
from nbflow.data import DataLoader, load_digits


def make_model(generator) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, generator=generator),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10, generator=generator),
    )


def train(epochs=15, batch=64, lr=0.01, seed=0, progress=True):
    nb.manual_seed(seed)
    train_set = load_digits("train", seed=seed, image=True)
    test_set = load_digits("test", seed=seed, image=True)
    model = make_model(nb.Generator(seed))
    optimizer = nb.optim.Adam(model.parameters(), lr=lr)

    @nb.jit
    def train_step(x, y):
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)  # backward and the in-place updates, in the same Program
        return loss

    @nb.jit
    def predict(x):
        return nb.argmax(model(x), axis=1)

    loader = DataLoader(train_set, batch_size=batch, shuffle=True, drop_last=True, seed=seed)
    start = time.perf_counter()
    with nb.no_grad():  # the program computes its own gradients; no eager tape needed
        for epoch in range(epochs):
            bar = tqdm(loader, desc=f"epoch {epoch + 1:2d}/{epochs}", disable=not progress)
            for x, y in bar:
                loss = train_step(x, y)
                bar.set_postfix(loss=f"{loss.item():.4f}")
        x_test, y_test = test_set.tensors
        predicted = predict(x_test).numpy()
    accuracy = float(np.mean(predicted == y_test.numpy()))
    seconds = time.perf_counter() - start
    print(f"test accuracy {accuracy:.3f} ({len(y_test)} digits, trained in {seconds:.1f} s)")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    train(epochs=args.epochs, progress=not args.no_progress)
