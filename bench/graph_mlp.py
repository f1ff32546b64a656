"""Graph-mode overhead: one SGD step of a 784-256-256-10 MLP, batch 128, float32.

Runs the step with nbflow's Executor, then measures how much of that time is spent inside the
kernels themselves (each kernel launcher wrapped with a timer; the timer's own cost is
measured and subtracted). Prints the step time, the kernel time, their ratio (issue 3's
target: at most 1.10) and the executor's overhead per op in microseconds.

    python bench/graph_mlp.py [--steps N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import nbflow as nb


def build(batch=128, sizes=(784, 256, 256, 10), lr=0.01):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        h = nb.static.data("x", [-1, sizes[0]])
        y = nb.static.data("y", [-1], dtype="int64")
        for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            w = nb.static.create_parameter(f"w{i}", [n_in, n_out])
            b = nb.static.create_parameter(f"b{i}", [n_out], initializer=("constant", 0.0))
            h = h @ w + b
            if i < len(sizes) - 2:
                h = nb.relu(h)
        loss = nb.cross_entropy(h, y)
        for p, g in nb.append_backward(loss):
            nb.sub_(p, g * lr)
    return main, startup, loss


class Timed:
    """A launcher wrapper adding the time spent inside it to a shared counter."""

    total = 0.0

    def __init__(self, launcher):
        self.launcher = launcher

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        result = self.launcher(*args, **kwargs)
        Timed.total += time.perf_counter() - start
        return result


def timer_cost(n=20000) -> float:
    """Seconds one Timed call adds around a no-op."""
    noop = Timed(lambda *a: None)
    start = time.perf_counter()
    for _ in range(n):
        noop(1)
    return (time.perf_counter() - start) / n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    prog, startup, loss = build()
    exe, scope = nb.Executor(), nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    feed = {
        "x": rng.standard_normal((128, 784)).astype(np.float32),
        "y": rng.integers(0, 10, 128).astype(np.int64),
    }
    targets = [loss] + [f"{k}{i}" for i in range(3) for k in "wb"]
    ops = nb.graph.needed_ops(
        prog.global_block(),
        [prog.global_block().var(t) if isinstance(t, str) else t for t in targets],
    )

    def step():
        exe.run(prog, feed, targets, scope)

    for _ in range(5):
        step()
    best = min(_timeit(step, args.steps) for _ in range(5))

    # time inside the kernels: wrap the launchers of the plans this program uses
    plans = list({id(p): p for node in ops for p in node.op.cache.values()}.values())
    for p in plans:
        p.launcher = Timed(p.launcher)
    kernel = float("inf")
    for _ in range(5):
        Timed.total = 0.0
        _timeit(step, args.steps)
        kernel = min(kernel, Timed.total / args.steps - len(ops) * timer_cost())
    for p in plans:
        p.launcher = p.launcher.launcher

    print(f"graph-mode MLP step 784-256-256-10, batch 128, f32, SGD: {len(ops)} ops")
    print(f"  executor step          {best * 1e3:8.3f} ms")
    print(f"  inside kernels         {kernel * 1e3:8.3f} ms")
    print(f"  ratio step / kernels   {best / kernel:8.3f}   (target <= 1.10)")
    print(f"  overhead per op        {(best - kernel) / len(ops) * 1e6:8.2f} us")


def _timeit(fn, n) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    main()
