"""Data-parallel overhead on MPI ranks: nbflow.distributed against raw mpi4py and PyTorch's
gloo backend, measured in the same run on the same ranks.

    mpiexec -n 2 python bench/distributed.py [--quick]

Rows (rank 0 prints them; times are per call, the minimum over repeats of a loop mean, every
rank starting each loop together after a barrier):
- all_reduce of 1 float32 and of 4M float32 (16 MB): nbflow's dist.all_reduce on a Tensor vs
  mpi4py's Allreduce on a numpy array (the transport itself: what nbflow adds is dispatch and
  its signature check) vs torch.distributed.all_reduce over gloo;
- one DDP training step of the 784-256-256-10 MLP (issue 5's P4 workload), batch 128 per
  rank, SGD: nbflow eager (backward reduces in buckets), nbflow graph (@jit with minimize:
  one allreduce op per gradient), PyTorch eager DDP over gloo; and each framework's step in one
  process without DDP, so the table shows what data parallelism costs each of them.

Each rank runs with one thread (2 ranks on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from mpi4py import MPI

import nbflow as nb
import nbflow.distributed as dist
from nbflow import nn
from nbflow.nn.parallel import DistributedDataParallel as DDP

WORLD = MPI.COMM_WORLD


def timed(fn, repeats: int, loops: int) -> float:
    """Seconds per call: the minimum over repeats of the mean of `loops` calls (the ranks
    start each loop together; the slowest rank's time counts)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        WORLD.Barrier()
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        elapsed = WORLD.allreduce((time.perf_counter() - start) / loops, op=MPI.MAX)
        best = min(best, elapsed)
    return best


def torch_group():
    try:
        import torch
        import torch.distributed as tdist
    except ImportError:
        return None
    torch.set_num_threads(1)
    tdist.init_process_group(
        "gloo", init_method="tcp://127.0.0.1:29517", rank=WORLD.rank, world_size=WORLD.size
    )
    return torch


def allreduce_rows(n: int, torch, repeats: int, loops: int) -> dict:
    x = np.ones(n, np.float32)
    t = nb.tensor(x)
    rows = {
        "nbflow": timed(lambda: dist.all_reduce(t), repeats, loops),
        "mpi4py": timed(lambda: WORLD.Allreduce(MPI.IN_PLACE, x), repeats, loops),
    }
    if torch is not None:
        tt = torch.ones(n)
        rows["torch"] = timed(lambda: torch.distributed.all_reduce(tt), repeats, loops)
    return rows


def mlp_batch(rank: int, batch=128):
    rng = np.random.default_rng(rank)
    return rng.standard_normal((batch, 784)).astype(np.float32), rng.integers(0, 10, batch)


def nbflow_mlp():
    g = nb.Generator(0)
    return nn.Sequential(
        nn.Linear(784, 256, generator=g), nn.ReLU(), nn.Linear(256, 256, generator=g),
        nn.ReLU(), nn.Linear(256, 10, generator=g),
    )  # fmt: skip


def nbflow_steps(x, y, data_parallel: bool) -> dict:
    x, y = nb.tensor(x), nb.tensor(y)
    model = DDP(nbflow_mlp()) if data_parallel else nbflow_mlp()
    eager_opt = nb.optim.SGD(model.parameters(), lr=0.01)

    def eager():
        eager_opt.zero_grad()
        nb.cross_entropy(model(x), y).backward()
        eager_opt.step()

    graph_opt = nb.optim.SGD(model.parameters(), lr=0.01)

    @nb.jit
    def traced(x, y):
        graph_opt.minimize(nb.cross_entropy(model(x), y))

    def graph():
        with nb.no_grad():
            traced(x, y)

    return {"eager": eager, "graph": graph}


def torch_step(torch, x, y, data_parallel: bool):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
        torch.nn.ReLU(), torch.nn.Linear(256, 10),
    )  # fmt: skip
    if data_parallel:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats, loops = (3, 20) if args.quick else (7, 50)
    dist.init_process_group("mpi")
    torch = torch_group()
    rows = []
    for label, n in (("all_reduce 1 float32", 1), ("all_reduce 4M float32", 1 << 22)):
        small = n == 1
        rows.append((label, allreduce_rows(n, torch, repeats, loops * 20 if small else 5)))
    x, y = mlp_batch(dist.get_rank())
    for parallel in (False, True):
        steps = nbflow_steps(x, y, parallel)
        row = {f"nbflow {k}": timed(fn, repeats, loops // 5) for k, fn in steps.items()}
        if torch is not None:
            row["torch eager"] = timed(torch_step(torch, x, y, parallel), repeats, loops // 5)
        rows.append((f"MLP step, {'DDP' if parallel else 'no DDP'}", row))
    if dist.get_rank() == 0:
        report(rows, torch)
    dist.destroy_process_group()


def report(rows, torch) -> None:
    print(f"{dist.get_world_size()} ranks, one thread each; {MPI.Get_library_version()[:14]}")
    print(f"torch {torch.__version__ if torch else 'not installed'}")
    for label, row in rows:
        base = next(iter(row.values()))
        cells = "  ".join(f"{k} {v * 1e6:9.1f} us ({v / base:4.2f}x)" for k, v in row.items())
        print(f"{label:24s} {cells}")


if __name__ == "__main__":
    main()
