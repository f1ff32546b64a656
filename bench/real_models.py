"""Training steps and inference latency of real models (bench/models.py), each framework in
its own fresh process.

    python bench/real_models.py                  # every model, 3 rounds
    python bench/real_models.py --models cnn --rounds 5
    python bench/real_models.py --compile        # also torch.compile (slow to compile)

Every (model, peer) pair runs in a fresh process: numba's OpenMP workers, OpenBLAS's threads
and PyTorch's OpenMP threads spin after their parallel regions and slow whoever shares the
2 cores with them, so timing two frameworks in one process compares inflated numbers. The
peers alternate round by round; each process warms up, then times single steps; the table
shows the median over rounds of each process's median step. The interference rows measure
the effect itself: PyTorch's MLP step alone, then in a process where nbflow's ran first.

Fresh processes of one program differ too: the same @jit step runs at ~40 ms in some
Transformer processes and ~52 ms in others, with the same thread choices made. So "jit / eager
(one process)" compares nbflow's two modes where they can be compared fairly: both steps in one
process, alternating in blocks of three.

Batch-1 latency on two threads is bimodal for every framework here: in some minutes two
threads doing independent L1-resident GEMMs each run at half speed, as if the machine's two
cores shared one physical core, and PyTorch's batch-1 CNN moves between ~1.0 and ~1.5 ms just
as nbflow's does. The one-thread rows (every framework's pools at one thread) are the stable
comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import models  # noqa: E402
from machine import openblas  # noqa: E402

TRAIN_PEERS = ("torch", "torch.compile", "nbflow eager", "nbflow jit", "nbflow jit step")
INFER_PEERS = ("torch", "nbflow eager", "nbflow jit")
ONE_THREAD_PEERS = ("torch", "nbflow jit")
# every thread pool at one thread, read when each library loads
ONE_THREAD = dict.fromkeys(
    ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"), "1"
)


# ---------------------------------------------------------------- in the child process


def framework(peer):
    if peer.startswith("torch"):
        import torch

        return torch
    import nbflow

    return nbflow


def training_step(name, peer):
    """A function running one training step of model `name` in `peer`'s framework, written
    as a PyTorch user writes it: "nbflow jit" traces the step with optimizer.minimize,
    "nbflow jit step" PyTorch's own (zero_grad, backward, step) under @jit."""
    lib = framework(peer)
    model = models.build(lib, name)
    optimizer = models.optimizer(lib, name, model)
    x, y = (lib.tensor(a) for a in models.batch(name))
    cross_entropy = lib.nn.functional.cross_entropy

    def step():
        optimizer.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    if peer == "torch.compile":
        compiled = lib.compile(model)

        def step():
            optimizer.zero_grad()
            loss = cross_entropy(compiled(x), y)
            loss.backward()
            optimizer.step()

    elif peer == "nbflow jit":

        @lib.jit
        def train(x, y):
            loss = cross_entropy(model(x), y)
            optimizer.minimize(loss)
            return loss

        def step():
            with lib.no_grad():
                train(x, y)

    elif peer == "nbflow jit step":

        @lib.jit
        def train(x, y):
            optimizer.zero_grad()
            loss = cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        def step():
            train(x, y)

    return step


def inference(name, peer):
    """A function running model `name` on one example, gradients off."""
    lib = framework(peer)
    model = models.build(lib, name)
    model.eval()
    x = lib.tensor(models.batch(name, batch_size=1)[0])
    if peer == "nbflow jit":
        forward = lib.jit(model)
    else:
        forward = model

    def run():
        with lib.no_grad():
            forward(x)

    return run


def time_steps(fn, seconds=0.6):
    """The median ms of single calls of fn over about `seconds`, after a warm-up."""
    for _ in range(3):
        fn()
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def alternate(steps, seconds=0.6):
    """The median ms of each of `steps`, run in turn in blocks of three in this process (the
    order reversed every other round), so that all meet the machine in the same states."""
    for step in steps:
        for _ in range(3):
            step()
    times, end = [[] for _ in steps], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times[0]) < 5:
        order = list(enumerate(steps))
        for i, step in order if len(times[0]) % 2 else order[::-1]:
            step()
            start = time.perf_counter()
            for _ in range(3):
                step()
            times[i].append((time.perf_counter() - start) / 3)
    return [float(np.median(t) * 1e3) for t in times]


def child(kind, name, peer, seconds):
    if kind == "modes":  # nbflow's eager and @jit steps alternating in one process
        steps = [training_step(name, p) for p in ("nbflow eager", "nbflow jit")]
        print(json.dumps(alternate(steps, seconds)))
        return
    if kind == "interference":  # PyTorch's MLP step alone, then after nbflow's CNN steps
        torch_step = training_step("mlp", "torch")
        alone = time_steps(torch_step, seconds)
        time_steps(training_step("cnn", "nbflow eager"), seconds)
        after = time_steps(torch_step, seconds)
        print(json.dumps([alone, after]))
        return
    make = training_step if kind == "train" else inference
    print(json.dumps(time_steps(make(name, peer), seconds)))


# ---------------------------------------------------------------- the parent


def run_child(kind, name, peer, seconds):
    env = ONE_THREAD if kind == "infer1" else {}
    call = f"child({kind!r}, {name!r}, {peer!r}, {seconds})"
    return in_fresh_process("real_models", call, env)


def in_fresh_process(module, call, env=None):
    """The JSON that `module.call` (a bench/ script's child function) prints, run in a fresh
    Python process (its environment updated by `env`), so that no other framework's thread
    pools share it."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import {module}; {module}.{call}"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if p.returncode:
        lines = p.stderr.strip().splitlines()
        raise RuntimeError(lines[-1][:160] if lines else "failed")
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(jobs, rounds, seconds):
    """{job: median over rounds} for jobs (kind, model, peer), alternating round by round."""
    results, errors = {}, {}
    for _ in range(rounds):
        for job in jobs:
            if job in errors:
                continue
            try:
                got = run_child(*job, seconds)
            except RuntimeError as e:
                errors[job] = str(e)
                results.pop(job, None)
                continue
            results.setdefault(job, []).append(got)
    return {job: np.median(v, axis=0) for job, v in results.items()}, errors


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def report(names, peers, times, args, gemm):
    """The tables; `gemm`: the GFLOP/s of a large GEMM, the training rows' ceiling."""
    lines = [
        "| training step (ms) | " + " | ".join(peers) + " | eager / torch | jit / torch "
        "| jit / eager | jit / eager (one process) | jit step / torch | jit GFLOP/s (% of GEMM) |",
        "|---" * (len(peers) + 7) + "|",
    ]
    for name in names:
        got = {p: times.get(("train", name, p)) for p in peers}
        cells = [f"{got[p]:.2f}" if got[p] is not None else "n/a" for p in peers]
        torch_ms, eager, jit = got.get("torch"), got.get("nbflow eager"), got.get("nbflow jit")
        jit_step = got.get("nbflow jit step")
        modes = times.get(("modes", name, "nbflow"))
        same = ratio(modes[1], modes[0]) if modes is not None else "n/a"
        rate = models.flops(name) / jit / 1e6 if jit else None
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {ratio(eager, torch_ms)} | {ratio(jit, torch_ms)} | {ratio(jit, eager)} | "
            + f"{same} | "
            + f"{ratio(jit_step, torch_ms)} | "
            + (f"{rate:.0f} ({100 * rate / gemm:.0f}%) |" if rate else "n/a |")
        )
    one = [f"one thread: {p}" for p in ONE_THREAD_PEERS]
    lines += [
        "",
        "| inference, batch 1 (ms) | "
        + " | ".join((*INFER_PEERS, "jit / torch", *one, "one thread: jit / torch"))
        + " |",
        "|---" * (len(INFER_PEERS) + len(one) + 3) + "|",
    ]
    for name in args.infer:
        got = {p: times.get(("infer", name, p)) for p in INFER_PEERS}
        alone = {p: times.get(("infer1", name, p)) for p in ONE_THREAD_PEERS}
        cells = [f"{t:.2f}" if t is not None else "n/a" for t in (*got.values(), *alone.values())]
        cells.insert(len(got), ratio(got["nbflow jit"], got["torch"]))
        cells.append(ratio(alone["nbflow jit"], alone["torch"]))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(models.MODELS))
    parser.add_argument("--infer", nargs="*", default=["cnn", "transformer"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="timed per process")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile")
    args = parser.parse_args()
    peers = [p for p in TRAIN_PEERS if args.compile or p != "torch.compile"]
    jobs = [("train", name, peer) for name in args.models for peer in peers]
    jobs += [("modes", name, "nbflow") for name in args.models]
    jobs += [("infer", name, peer) for name in args.infer for peer in INFER_PEERS]
    jobs += [("infer1", name, peer) for name in args.infer for peer in ONE_THREAD_PEERS]
    jobs.append(("interference", "mlp", "torch"))
    print(f"load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
    print(openblas())
    gemm = in_fresh_process("machine", "child()")
    print(f"a 2048^3 float32 GEMM (numpy, all threads): {gemm:.0f} GFLOP/s\n", flush=True)
    times, errors = measure(jobs, args.rounds, args.seconds)
    interference = times.pop(("interference", "mlp", "torch"), None)
    print(report(args.models, peers, times, args, gemm))
    if interference is not None:
        alone, after = interference
        print(
            f"\ninterference: PyTorch's MLP step {alone:.2f} ms alone, {after:.2f} ms in the "
            f"same process after nbflow's CNN steps ({after / alone:.2f}x)"
        )
    for job, error in errors.items():
        print(f"{' '.join(job)}: {error}")


if __name__ == "__main__":
    main()
