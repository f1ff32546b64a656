"""Where a real model's step spends its time in nbflow: the wall time of each op's kernel
(launcher), summed over steps, largest first.

    python bench/op_profile.py cnn                  # eager training step
    python bench/op_profile.py transformer --jit    # the @jit step
    python bench/op_profile.py lstm --infer         # batch-1 inference

Every registered op's CPU launcher is wrapped by a timer before the model is built, so eager
steps and `@jit` plans (which launch the same launchers) are both seen. A fused graph-mode
group is timed as one kernel of its own; a launcher that runs another op's launcher (an
in-place op's out-of-place kernel) is counted once, under the outer name. cProfile sees only
the calling thread and hides numpy's BLAS calls inside whichever Python function made them;
this sees every kernel whole.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nbflow.core import REGISTRY

SECONDS = defaultdict(float)
CALLS = Counter()
TIMING = [False]
DEPTH = [0]  # launchers running: only the outermost is timed


def layouts(args):
    """The arrays' shapes, each marked with its layout: C (row-major), F (column-major) or s
    (strided)."""
    arrays = [a for a in args if hasattr(a, "strides")]
    marks = ["C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "s" for a in arrays]
    return " ".join(f"{tuple(a.shape)}{m}" for a, m in zip(arrays, marks))


def timed(name, kernel, by_shape=False):
    def launch(*args, **kwargs):
        if not TIMING[0] or DEPTH[0]:
            return kernel(*args, **kwargs)
        DEPTH[0] += 1
        start = time.perf_counter()
        try:
            return kernel(*args, **kwargs)
        finally:
            key = f"{name} {layouts(args)}" if by_shape else name
            SECONDS[key] += time.perf_counter() - start
            CALLS[key] += 1
            DEPTH[0] -= 1

    return launch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["cnn", "transformer", "lstm", "mlp"])
    parser.add_argument("--jit", action="store_true", help="the @jit step (default: eager)")
    parser.add_argument(
        "--jit-step", action="store_true", help="PyTorch's own step (backward, step) under @jit"
    )
    parser.add_argument("--infer", action="store_true", help="batch-1 inference")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument(
        "--by-shape", nargs="*", default=[], metavar="OP", help="these ops' time by operand layouts"
    )
    args = parser.parse_args()
    for name, op in REGISTRY.items():
        if op.kernels.get("cpu") is not None:
            op.kernels["cpu"] = timed(name, op.kernels["cpu"], name in args.by_shape)
    import real_models  # after the wrapping: the model's plans capture the wrapped launchers

    peer = "nbflow jit step" if args.jit_step else "nbflow jit" if args.jit else "nbflow eager"
    make = real_models.inference if args.infer else real_models.training_step
    step = make(args.model, peer)
    for _ in range(5):
        step()
    TIMING[0] = True
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    total = (time.perf_counter() - start) / args.steps * 1e3
    TIMING[0] = False
    kernels = sum(SECONDS.values()) / args.steps * 1e3
    print(f"{peer} {args.model}: {total:.2f} ms a step, {kernels:.2f} ms in kernels\n")
    print("| op | ms a step | calls a step |\n|---|---|---|")
    for name, seconds in sorted(SECONDS.items(), key=lambda kv: -kv[1])[: args.top]:
        calls = CALLS[name] / args.steps
        print(f"| {name} | {seconds / args.steps * 1e3:.3f} | {calls:.3g} |")


if __name__ == "__main__":
    main()
