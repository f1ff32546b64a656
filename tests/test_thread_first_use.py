"""Kernels, plans and traces are made safely when threads use them first at once (issue 42):
generated kernel modules are handed out only once they have run (kernels/codegen.py), an op's module
is made by one thread (kernels/cpu/templates.py), and the Executor's plans and @jit's traces are
made once and published whole. Each run is a fresh process, where every op is used for the first
time; the first run also starts from an empty kernel cache directory."""

import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = """
import json, sys, threading
import numpy as np
import nbflow as nb
from nbflow import nn

sys.setswitchinterval(1e-6)
N = 6
start = threading.Barrier(N)
errors, results, traced = [], [None] * N, []

@nb.jit
def fused(a, b):
    traced.append(1)  # runs once per trace
    return nb.tanh(a * b + 0.5) * 2.0 - nb.exp(-a) / 3.0


def work(i):
    try:
        start.wait(60)
        rng = np.random.default_rng(0)
        x = nb.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
        w = nb.tensor(rng.standard_normal((4, 5)).astype(np.float32), requires_grad=True)
        y = (nb.sigmoid(x) * 2.0 + nb.exp(x) - x / 3.0 + nb.abs(x) ** 2).sum()
        h = nb.relu(x @ w + 1.0)
        loss = nn.functional.cross_entropy(h, nb.tensor([0, 2, 4])) + y + h.mean(axis=0).max()
        loss.backward()
        z = fused(x.detach(), nb.ones((3, 4)))
        fused(x.detach(), nb.ones((3, 4)))  # the cached trace
        results[i] = [loss.item(), x.grad.numpy().tolist(), w.grad.numpy().tolist(),
                      z.numpy().tolist()]
    except BaseException as e:
        errors.append(f"{type(e).__name__}: {e}"[:300])


threads = [threading.Thread(target=work, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join(600)
print(json.dumps({"errors": errors, "same": all(r == results[0] for r in results),
                  "traces": len(traced)}))
"""


def test_threads_using_ops_for_the_first_time_in_fresh_processes(tmp_path):
    env = dict(os.environ, NBFLOW_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    env.pop("NUMBA_CACHE_DIR", None)
    for run in range(4):  # the first with an empty kernel cache, then loading from it
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_SCRIPT)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        report = json.loads(result.stdout.strip().splitlines()[-1])
        assert report == {"errors": [], "same": True, "traces": 1}, (run, report)
