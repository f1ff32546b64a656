"""Control flow costs: a while loop's per-iteration overhead in the executor, and a dynamic LSTM
step (forward + backward over variable-length sequences) eager, in graph mode, and in PyTorch.

    python bench/control_flow.py [--quick]

Rows (float32):
- while_loop, 1000 iterations of `h = h * 0.5 + 1` on 16 floats: eager Python loop vs graph
  (@nbflow.jit, one `while` op): the time per iteration;
- dynamic LSTM, time 32, batch 32, 32 -> 64, lengths spread over 1..32, forward + backward:
  nbflow eager (a Python loop with masks), nbflow graph (one while op and its while_grad), and
  PyTorch eager running the same masked LSTMCell loop.
Each row is the minimum over repeats of the mean time. Read the ratios: absolute times drift.
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

T, B, F, H = 32, 32, 32, 64


def best(fn, repeats: int, number: int) -> float:
    fn()  # warm up (compiles, traces)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def loop_rows(repeats: int):
    n = 1000

    def body(h):
        return h * 0.5 + 1.0

    def count(h):
        return nb.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, body(h)), [0, h])[1]

    x = nb.tensor(np.zeros(16, np.float32))
    jitted = nb.jit(count)
    eager = best(lambda: count(x), repeats, 1) / n
    graph = best(lambda: jitted(x), repeats, 1) / n
    name = "while_loop per iteration"
    print(f"{name:<40} eager {eager * 1e6:7.1f} us   graph {graph * 1e6:7.1f} us")


def lstm_rows(repeats: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, B, F)).astype(np.float32)
    lengths = np.sort(rng.integers(1, T + 1, size=B))[::-1].copy()
    cell = nn.LSTMCell(F, H, generator=nb.Generator(0))

    def step(x, lengths):
        outputs, (h, _) = nn.dynamic_rnn(cell, x, lengths)
        return nb.sum(outputs) + nb.sum(h)

    jitted = nb.jit(step)
    xt, lt = nb.tensor(x), nb.tensor(lengths)

    def run(fn):
        def once():
            for p in cell.parameters():
                p.grad = None
            fn(xt, lt).backward()

        return once

    eager = best(run(step), repeats, 3)
    graph = best(run(jitted), repeats, 3)
    line = f"{'dynamic LSTM fwd+bwd (T32 B32 32->64)':<40} eager {eager * 1e3:7.2f} ms   graph "
    line += f"{graph * 1e3:7.2f} ms"
    if torch is not None:
        torch.set_num_threads(os.cpu_count() or 1)
        tcell = torch.nn.LSTMCell(F, H)
        tx, tl = torch.from_numpy(x), torch.from_numpy(lengths)

        def torch_step():
            tcell.zero_grad()
            h = c = torch.zeros(B, H)
            outs = []
            for t in range(int(tl.max())):
                h2, c2 = tcell(tx[t], (h, c))
                alive = (tl > t)[:, None]
                h, c = torch.where(alive, h2, h), torch.where(alive, c2, c)
                outs.append(torch.where(alive, h2, torch.zeros_like(h2)))
            (torch.stack(outs).sum() + h.sum()).backward()

        ref = best(torch_step, repeats, 3)
        line += f"   torch {ref * 1e3:7.2f} ms   graph/torch {graph / ref:5.2f}x"
    print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    repeats = 2 if parser.parse_args().quick else 5
    loop_rows(repeats)
    lstm_rows(repeats)


if __name__ == "__main__":
    main()
