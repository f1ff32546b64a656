"""The P4 graph-mode MLP step (or P5's CNN step) with graph/rewrite.py's folds on and with some
of them off, or with and without another executor option, timed in one process with the two
steps interleaved round by round.

Separate runs on a shared 2-core machine move 10-30% with the load, which hides a fold worth a
few percent; pairs timed back to back see the same load. Prints each side's min and median
and in how many rounds the step with the folds was the faster.

    python bench/rewrites_ab.py                 # every fold off on the other side
    python bench/rewrites_ab.py --off sums relu # only these
    python bench/rewrites_ab.py --no-replay     # the other side: Executor(replay=False)
    python bench/rewrites_ab.py --no-replay --workload cnn
    python bench/rewrites_ab.py --off biases --workload matmul_mlp  # x @ w + b, not nn.Linear
"""

from __future__ import annotations

import argparse
import importlib
import os
import timeit
from contextlib import contextmanager

import numpy as np

os.environ.setdefault("NBFLOW_BENCH_ONLY", "")  # run.py: import no peer (their thread pools)
import run as B

rewrite = importlib.import_module("nbflow.graph.rewrite")

# the folds that are functions of their own, and those that are entries of fold_sgd_products'
# table of gradient producers
FUNCTIONS = {
    "transposes": "fold_transposes",
    "biases": "fold_biases",
    "activations": "fold_activations",
    "relu": "fold_relu_grads",
    "sgd_relu": "fold_sgd_relu_grads",
}
SGD_ENTRIES = {"products": ("matmul",), "sums": ("sum", "sum_to_like")}
FOLDS = sorted({**FUNCTIONS, **SGD_ENTRIES})


def _unchanged(ops, targets=()):
    return list(ops)


@contextmanager
def folds_off(names):
    """graph/rewrite.py with the named folds doing nothing, while plans are built."""
    saved = {attr: getattr(rewrite, attr) for attr in [*FUNCTIONS.values(), "_SGD_FOLDS"]}
    table = dict(rewrite._SGD_FOLDS)
    try:
        for name in names:
            if name in FUNCTIONS:
                setattr(rewrite, FUNCTIONS[name], _unchanged)
            for key in SGD_ENTRIES.get(name, ()):
                del table[key]
        rewrite._SGD_FOLDS = table
        yield
    finally:
        for attr, value in saved.items():
            setattr(rewrite, attr, value)


def matmul_mlp_step(x, y, lr=0.01, executor=None):
    """The P4 MLP written as `relu(x @ w + b)` (a static program's or JAX's way) under @jit."""
    nb, rng = B.nbflow, np.random.default_rng(0)
    params = []
    for n_in, n_out in zip(B.MLP_SIZES, B.MLP_SIZES[1:]):
        w = (rng.uniform(-1, 1, (n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params += [nb.tensor(w, requires_grad=True), nb.zeros(n_out, requires_grad=True)]
    optimizer = nb.optim.SGD(params, lr=lr)
    x, y = nb.tensor(x), nb.tensor(y)

    @nb.jit
    def train(x, y):
        h = x
        for k in range(0, len(params), 2):
            h = h @ params[k] + params[k + 1]
            h = nb.relu(h) if k + 2 < len(params) else h
        loss = nb.cross_entropy(h, y)
        optimizer.minimize(loss)
        return loss

    if executor is not None:
        train.executors["cpu"] = executor

    def step():
        with nb.no_grad():
            train(x, y)

    return step


def make_step(kind, x, y, executor=None):
    if kind == "matmul_mlp":
        return matmul_mlp_step(x, y, executor=executor)
    return B.nbflow_graph_step(kind, x, y, executor=executor)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--off", nargs="+", choices=FOLDS, default=FOLDS)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--workload", choices=["mlp", "cnn", "matmul_mlp"], default="mlp")
    ap.add_argument(
        "--no-replay", action="store_true", help="the other side without replays, folds on"
    )
    args = ap.parse_args(argv)
    kind = args.workload
    x, y = B.cnn_data() if kind == "cnn" else B.mlp_data()
    folded = make_step(kind, x, y)
    folded()  # the plan is built on the first call
    if args.no_replay:
        names = ("default", "no replay")
        other = make_step(kind, x, y, B.nbflow.Executor(replay=False))
    else:
        names = ("folds on", "folds off")
        with folds_off(args.off):
            other = make_step(kind, x, y)
    other()
    times = {name: [] for name in names}
    for _ in range(args.rounds):
        for side, step in zip(names, (folded, other)):
            times[side].append(min(timeit.repeat(step, number=20, repeat=3)) / 20 * 1e3)
    wins = sum(a < b for a, b in zip(*times.values()))
    for side, ms in times.items():
        ms = sorted(ms)
        print(f"{side:11s}: min {ms[0]:.3f} ms, median {ms[len(ms) // 2]:.3f} ms")
    what = names[1] if names[0] == "default" else f"off: {' '.join(args.off)}"
    print(f"{what}; the {names[0]} step faster in {wins} of {args.rounds} rounds")


if __name__ == "__main__":
    main()
