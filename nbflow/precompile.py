"""Warm numba's disk cache for the common dtypes, so first steps start fast.

    python -m nbflow.precompile                      # float32 and float64
    python -m nbflow.precompile --dtypes float32     # only float32
    python -m nbflow.precompile --only mlp           # only the tasks named so (first words)

Runs every elementwise op on contiguous, broadcast and scalar operands (the three loops its
template generates), the reductions, and small MLP and CNN training steps in eager mode and
through @nbflow.jit (which also compiles their fused kernels). Each compiled kernel lands in
numba's cache next to the generated modules in NBFLOW_CACHE_DIR (or NUMBA_CACHE_DIR for the
kernels defined in nbflow's own files), where every later process finds it. One line of
progress per task.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import nbflow as nb
from nbflow import nn
from nbflow.core import REGISTRY, REQUIRED
from nbflow.core.errors import NbflowError
from nbflow.kernels import codegen


def _elementwise_task(op, dtype):
    def run():
        n = len(op.inputs)
        flat = [nb.tensor(np.full(6, 0.5, dtype)) for _ in range(n)]
        rows = [nb.tensor(np.full((2, 3), 0.5, dtype))] + [
            nb.tensor(np.full(3, 0.5, dtype)) for _ in range(n - 1)
        ]
        attrs = _required_attrs(op, dtype)
        with nb.no_grad():
            op(*flat, **attrs)  # the flat loop
            op(*rows, **attrs)  # the broadcasting (strided) loop
            if n == 2:
                op(flat[0], nb.tensor(np.asarray(0.5, dtype)), **attrs)  # a scalar operand

    return run


def _required_attrs(op, dtype) -> dict:
    """A value for each attr the op requires (cast's dtype, nan_to_num's posinf and neginf)."""
    samples = {"dtype": dtype, "float": 1.0, "int": 1, "bool": False}
    return {
        name: samples[attr.kind]
        for name, attr in op.attrs.items()
        if attr.default is REQUIRED and attr.kind in samples
    }


def _reductions_task(dtype):
    def run():
        x = nb.tensor(np.ones((4, 5), dtype), requires_grad=True)
        for fn in (nb.sum, nb.mean, nb.max, nb.min):
            fn(x).backward()
            fn(x, axis=0)
            fn(x, axis=1)

    return run


def _model_task(kind, mode, dtype):
    def run():
        g = nb.Generator(0)
        if kind == "mlp":
            model = nn.Sequential(
                nn.Linear(8, 16, dtype=dtype, generator=g),
                nn.ReLU(),
                nn.Linear(16, 4, dtype=dtype, generator=g),
            )
            x = nb.tensor(np.ones((5, 8), dtype))
        else:
            model = nn.Sequential(
                nn.Conv2d(1, 4, 3, padding=1, dtype=dtype, generator=g),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(4 * 6 * 6, 4, dtype=dtype, generator=g),
            )
            x = nb.tensor(np.ones((5, 1, 6, 6), dtype))
        y = nb.tensor(np.arange(5) % 4)
        optimizer = nb.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step(x, y):
            loss = nb.cross_entropy(model(x), y)
            optimizer.minimize(loss)
            return loss

        if mode == "eager":
            for _ in range(2):
                loss = nb.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        else:
            jitted = nb.jit(step)
            with nb.no_grad():
                for _ in range(2):
                    jitted(x, y)

    return run


def tasks(dtypes) -> list[tuple[str, object]]:
    out = []
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if not hasattr(op, "scalar_body"):
            continue
        for d in dtypes:
            if d in op.dtypes:
                out.append((f"{name} {d.name}", _elementwise_task(op, d)))
    for d in dtypes:
        out.append((f"reductions {d.name}", _reductions_task(d)))
    for d in dtypes:
        for kind in ("mlp", "cnn"):
            for mode in ("eager", "jit"):
                out.append((f"{kind} training step, {mode}, {d.name}", _model_task(kind, mode, d)))
    return out


def _named(label: str, words: str) -> bool:
    """Whether the label starts with these whole words ("tanh" is not "atanh float32")."""
    return not words or label == words or label.startswith(words + " ")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nbflow.precompile", description=__doc__)
    parser.add_argument("--dtypes", default="float32,float64", help="comma-separated dtypes")
    parser.add_argument(
        "--only", default="", help="only the tasks whose label starts with these words (tanh, mlp)"
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    args = parser.parse_args(argv)
    dtypes = [np.dtype(d.strip()) for d in args.dtypes.split(",") if d.strip()]
    todo = [(label, run) for label, run in tasks(dtypes) if _named(label, args.only)]
    print(f"nbflow precompile: {len(todo)} tasks, cache in {codegen.cache_dir()}", flush=True)
    start, failed = time.perf_counter(), []
    for k, (label, run) in enumerate(todo, 1):
        t0 = time.perf_counter()
        try:
            run()
        except NbflowError as e:  # a dtype an op does not take: nothing to compile
            failed.append(f"{label}: {type(e).__name__}: {e}")
        if not args.quiet:
            print(f"[{k}/{len(todo)}] {label:<44} {time.perf_counter() - t0:6.2f} s", flush=True)
    print(f"done in {time.perf_counter() - start:.1f} s", flush=True)
    for line in failed:
        print(f"  skipped {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
