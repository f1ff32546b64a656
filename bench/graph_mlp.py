"""Graph-mode overhead: one SGD step of a 784-256-256-10 MLP, batch 128, float32.

Times the step with nbflow's Executor, then times it again with every kernel launcher replaced
by a no-op: what remains is the executor's own per-op work (lookups, plan cache, output
allocation, Tensor wrapping, shape checks). The kernels' share is the difference. Prints the
ratio step / kernels (issue 3's target: at most 1.10) and the overhead per op in microseconds.

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

    # the same step with no-op kernels (view ops keep theirs: their results are needed)
    plans = {id(p): p for node in ops if not node.op.view for p in node.op.cache.values()}
    real = {k: p.launcher for k, p in plans.items()}
    for p in plans.values():
        p.launcher = _noop
    groups = _forget_launchers(exe)
    kernels = {id(g): dict(g.kernels) for g in groups}
    for g in groups:  # fused groups: every generated kernel a no-op
        g.kernels = {mask: _NoopModule() for mask in g.kernels}
    overhead = min(_timeit(step, args.steps) for _ in range(5))
    for k, p in plans.items():
        p.launcher = real[k]
    for g in groups:
        g.kernels = kernels[id(g)]
    _forget_launchers(exe)
    kernel = best - overhead

    print(f"graph-mode MLP step 784-256-256-10, batch 128, f32, SGD: {len(ops)} ops")
    print(f"  executor step          {best * 1e3:8.3f} ms")
    print(f"  inside kernels         {kernel * 1e3:8.3f} ms")
    print(f"  ratio step / kernels   {best / kernel:8.3f}   (target <= 1.10)")
    print(f"  overhead per op        {(best - kernel) / len(ops) * 1e6:8.2f} us")


def _noop(*args, **kwargs):
    return None


class _NoopModule:
    serial = parallel = staticmethod(_noop)


def _forget_launchers(exe) -> list:
    """Clear what the executor's plan steps remember of each op's plan (graph/memory.py's
    IntoBuffer keeps the launcher), so that a swapped launcher is the one that runs; returns
    the plans' fused groups."""
    groups = []
    for plans in exe._plans.values():
        for steps in plans.values():
            for step in steps:
                if hasattr(step, "ready"):
                    step.ready.clear()
                if hasattr(step, "kernels"):
                    groups.append(step)
    return groups


def _timeit(fn, n) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


if __name__ == "__main__":
    main()
