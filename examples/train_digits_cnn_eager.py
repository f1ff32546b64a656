"""The main job's CNN, trained eagerly: loss.backward(), optimizer.step(), a DataLoader.

The same model (make_model from train_digits_cnn.py), seed and hyperparameters as the
graph-mode example; here every op runs as it is called and backward() walks the tape. With
seed 0 the two runs end with bit-identical parameters (checked after 1 and after 15 epochs),
so they report the same test accuracy.

    python examples/train_digits_cnn_eager.py
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
from tqdm import tqdm

import nbflow as nb
from nbflow.data import DataLoader, load_digits

EXAMPLES = str(pathlib.Path(__file__).resolve().parent)
if EXAMPLES not in sys.path:  # examples/ is not a package: import its sibling by path
    sys.path.insert(0, EXAMPLES)
from train_digits_cnn import make_model  # noqa: E402


def evaluate(model, dataset) -> float:
    model.eval()
    x, y = dataset.tensors
    with nb.no_grad():
        predicted = nb.argmax(model(x), axis=1).numpy()
    model.train()
    return float(np.mean(predicted == y.numpy()))


def train(epochs=15, batch=64, lr=0.01, seed=0, progress=True):
    nb.manual_seed(seed)
    train_set = load_digits("train", seed=seed, image=True)
    test_set = load_digits("test", seed=seed, image=True)
    model = make_model(nb.Generator(seed))
    optimizer = nb.optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(train_set, batch_size=batch, shuffle=True, drop_last=True, seed=seed)
    start = time.perf_counter()
    for epoch in range(epochs):
        bar = tqdm(loader, desc=f"epoch {epoch + 1:2d}/{epochs}", disable=not progress)
        total = 0.0
        for x, y in bar:
            loss = nb.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            bar.set_postfix(loss=f"{loss.item():.4f}")
        if not progress:
            print(f"epoch {epoch + 1:2d}/{epochs}  mean loss {total / len(loader):.4f}")
    accuracy = evaluate(model, test_set)
    seconds = time.perf_counter() - start
    print(f"test accuracy {accuracy:.3f} ({len(test_set)} digits, trained in {seconds:.1f} s)")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    train(epochs=args.epochs, progress=not args.no_progress)
