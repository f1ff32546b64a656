"""What the reliability features cost: the NaN/Inf check off and on, in eager and graph mode.

    python bench/reliability_overhead.py [--repeats N]

Rows (minimum over repeats, interleaved so a noisy moment hits both columns alike):
- eager `a + b` on 1-element tensors (the dispatch hot path): check off vs on;
- an eager SGD step of a 784-256-256-10 MLP, batch 128 (forward, backward, update);
- the same step as a Program run by an Executor with check_nan_inf False vs True.
"Off" is the default path: with the check off nothing of it runs, so that column is also
what nbflow costs without the feature (compare with `python bench/run.py`'s add row).
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from graph_mlp import build  # noqa: E402

import nbflow as nb  # noqa: E402


def eager_step(params, x, y, lr=0.01):
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i < len(params) - 2:
            h = nb.relu(h)
    loss = nb.cross_entropy(h, y)
    loss.backward()
    with nb.no_grad():
        for p in params:
            p.sub_(p.grad * lr)
            p.grad = None


def cases():
    rng = np.random.default_rng(0)
    a, b = nb.ones(1), nb.ones(1)
    x = nb.tensor(rng.standard_normal((128, 784)).astype(np.float32))
    y = nb.tensor(rng.integers(0, 10, 128))
    sizes = (784, 256, 256, 10)
    params = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        params.append(nb.tensor(rng.standard_normal((n_in, n_out)) * 0.05, dtype="float32"))
        params.append(nb.zeros(n_out))
    for p in params:
        p.requires_grad_()
    prog, startup, loss = build()
    scope = nb.Scope()
    nb.manual_seed(0)
    nb.Executor().run(startup, scope=scope)
    feed = {"x": x.numpy(), "y": y.numpy()}
    fetch = [loss] + [f"{k}{i}" for i in range(3) for k in "wb"]
    plain, checked = nb.Executor(check_nan_inf=False), nb.Executor(check_nan_inf=True)
    return [
        ("eager a + b (1 element)", lambda: a + b, lambda: a + b, 20000),
        ("eager MLP SGD step", lambda: eager_step(params, x, y), None, 20),
        (
            "Executor MLP SGD step",
            lambda: plain.run(prog, feed, fetch, scope),
            lambda: checked.run(prog, feed, fetch, scope),
            20,
        ),
    ]


def timed(fn, number, check: bool) -> float:
    if check:
        with nb.check_nan_inf():
            return timeit.timeit(fn, number=number) / number
    return timeit.timeit(fn, number=number) / number


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"{'case':28s} {'check off':>12s} {'check on':>12s} {'on / off':>9s}")
    for name, off, on, number in cases():
        on = on or off  # eager: the same call, inside nbflow.check_nan_inf()
        timed(off, number, False), timed(on, number, True)  # warm up (compile)
        best_off = best_on = float("inf")
        for _ in range(args.repeats):
            best_off = min(best_off, timed(off, number, False))
            best_on = min(best_on, timed(on, number, name.startswith("eager")))
        unit, scale = ("us", 1e6) if best_off < 1e-3 else ("ms", 1e3)
        print(
            f"{name:28s} {best_off * scale:9.2f} {unit} {best_on * scale:9.2f} {unit} "
            f"{best_on / best_off:8.2f}x"
        )


if __name__ == "__main__":
    main()
