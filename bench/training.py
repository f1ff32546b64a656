"""Training steps side by side with PyTorch (issue 4's performance targets).

    python bench/training.py [--quick]

Rows (float32, the machine's threads):
- MLP 784-256-256-10, batch 128, SGD step: nbflow eager (Module, backward, step) and nbflow
  graph mode (the whole step traced by @nbflow.jit), against PyTorch eager;
  targets: graph <= 0.8x torch, eager <= 1.0x torch;
- CNN conv3x3(16)-ReLU-flatten-Linear(10) on 64x1x8x8, SGD step: nbflow graph mode against
  PyTorch eager; target <= 1.0x.
Each row is the minimum over repeats of the mean step time; the peers' repeats are interleaved
so that a noisy minute slows them alike. Read the ratios: absolute times drift on shared VMs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import nbflow as nb
from nbflow import nn

try:
    import torch
except ImportError:  # the torch column is then skipped
    torch = None


def nbflow_mlp(x, y, lr=0.01):
    model = nn.Sequential(
        nn.Linear(784, 256, generator=nb.Generator(0)),
        nn.ReLU(),
        nn.Linear(256, 256, generator=nb.Generator(1)),
        nn.ReLU(),
        nn.Linear(256, 10, generator=nb.Generator(2)),
    )
    return model, nb.tensor(x), nb.tensor(y)


def nbflow_cnn(x, y):
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, generator=nb.Generator(0)),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 8 * 8, 10, generator=nb.Generator(1)),
    )
    return model, nb.tensor(x), nb.tensor(y)


def eager_step(model, x, y, lr=0.01):
    optimizer = nb.optim.SGD(model.parameters(), lr=lr)

    def step():
        loss = nb.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def graph_step(model, x, y, lr=0.01):
    optimizer = nb.optim.SGD(model.parameters(), lr=lr)

    @nb.jit
    def train(x, y):
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    def step():
        with nb.no_grad():
            train(x, y)

    return step


def torch_step(kind, x, y, lr=0.01):
    torch.manual_seed(0)
    if kind == "mlp":
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 10),
        )
    else:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(16 * 8 * 8, 10),
        )
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        loss = torch.nn.functional.cross_entropy(model(tx), ty)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def measure(steps: dict, n: int, repeats: int) -> dict:
    """Minimum over interleaved repeats of the mean time of n calls, per step function."""
    for fn in steps.values():
        for _ in range(3):
            fn()  # warm up: compile kernels, trace programs
    best = {name: float("inf") for name in steps}
    for _ in range(repeats):
        for name, fn in steps.items():
            start = time.perf_counter()
            for _ in range(n):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / n)
    return best


def row(label, value, peer, target):
    if peer is None:
        print(f"{label:<44} {value * 1e3:8.3f} ms   torch n/a")
        return
    ratio = value / peer
    verdict = "PASS" if ratio <= target else "MISS"
    print(
        f"{label:<44} {value * 1e3:8.3f} ms   torch {peer * 1e3:8.3f} ms   "
        f"ratio {ratio:5.2f}  target <= {target}  {verdict}"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, repeats = (10, 3) if args.quick else (30, 7)
    rng = np.random.default_rng(0)
    x_mlp = rng.standard_normal((128, 784)).astype(np.float32)
    y_mlp = rng.integers(0, 10, 128).astype(np.int64)
    x_cnn = rng.standard_normal((64, 1, 8, 8)).astype(np.float32)
    y_cnn = rng.integers(0, 10, 64).astype(np.int64)

    steps = {
        "mlp eager": eager_step(*nbflow_mlp(x_mlp, y_mlp)),
        "mlp graph": graph_step(*nbflow_mlp(x_mlp, y_mlp)),
        "cnn graph": graph_step(*nbflow_cnn(x_cnn, y_cnn)),
    }
    if torch is not None:
        steps["mlp torch"] = torch_step("mlp", x_mlp, y_mlp)
        steps["cnn torch"] = torch_step("cnn", x_cnn, y_cnn)
    best = measure(steps, n, repeats)
    threads = f", torch {torch.__version__} with {torch.get_num_threads()} threads" if torch else ""
    print(f"nbflow {nb.__version__}, numpy {np.__version__}{threads}")
    row("MLP 784-256-256-10 b128 SGD step, graph", best["mlp graph"], best.get("mlp torch"), 0.8)
    row("MLP 784-256-256-10 b128 SGD step, eager", best["mlp eager"], best.get("mlp torch"), 1.0)
    row("CNN conv3x3(16) 64x1x8x8 SGD step, graph", best["cnn graph"], best.get("cnn torch"), 1.0)


if __name__ == "__main__":
    main()
