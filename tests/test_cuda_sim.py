"""The GPU path without a GPU: the registry's CUDA completeness, and CPU == CUDA under numba's
CUDA simulator (run in a subprocess: NUMBA_ENABLE_CUDASIM must be set before numba is
imported, and this process has imported numba already)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbflow.core import REGISTRY
from nbflow.ops import BUILTIN

ROOT = Path(__file__).resolve().parent.parent

# Ops with no CUDA kernel yet, and why. The registry test fails when an op is missing from
# here without a kernel, and when an op listed here has one (so the list stays true).
NOT_WRITTEN = "not written yet"
_NOT_WRITTEN_OPS = """
"""  # every op has a CUDA kernel or says why not (the creation ops)
NO_CUDA_KERNEL = dict.fromkeys(_NOT_WRITTEN_OPS.split(), NOT_WRITTEN)


def _has_cuda_kernel(op) -> bool:
    k = op.kernels.get("cuda")
    return k is not None and not getattr(k, "cuda_unsupported", None)


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_every_op_has_a_cuda_kernel_or_says_why(name):
    op = REGISTRY[name]
    k = op.kernels.get("cuda")
    if k is not None and getattr(k, "cuda_unsupported", None) is not None:
        assert k.cuda_unsupported.strip(), f"{name}: declared unsupported on CUDA without a reason"
        return
    if name in NO_CUDA_KERNEL:
        assert k is None, f"{name} has a CUDA kernel now: remove it from NO_CUDA_KERNEL"
        return
    assert k is not None, f"{name} has no CUDA kernel and is not listed in NO_CUDA_KERNEL"


def test_listed_ops_exist():
    assert set(NO_CUDA_KERNEL) <= set(REGISTRY)


def _run_simulator(script: str, *args, timeout=600) -> str:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def simulator_results():
    pytest.importorskip("numba.cuda")
    lines = _run_simulator("cuda_sim_cases.py").strip().splitlines()
    return json.loads(lines[-1])


def test_cpu_equals_cuda_in_the_simulator(simulator_results):
    bad = [r for r in simulator_results["results"] if not r["ok"]]
    assert not bad, "\n".join(f"{r['op']} [{r['case']}]: {r['detail']}" for r in bad)


def test_every_op_with_a_cuda_kernel_is_compared(simulator_results):
    covered = set(simulator_results["covered"])
    missing = sorted(n for n in BUILTIN if _has_cuda_kernel(REGISTRY[n]) and n not in covered)
    assert not missing, f"ops with a CUDA kernel but no CPU == CUDA case: {missing}"


def test_device_semantics(simulator_results):
    checks = [r for r in simulator_results["results"] if r["op"] == "device"]
    assert len(checks) >= 15
    assert all(r["ok"] for r in checks), checks


def test_check_devices_runs_in_the_simulator():
    out = _run_simulator("cuda_sim_check_devices.py", timeout=300)
    assert "compared" in out, out


def test_the_cpu_path_never_imports_numba_cuda():
    # numba-cuda is an optional extra: CPU users neither need it nor pay for importing it
    code = (
        "import sys, numpy as np, nbflow as nb\n"
        "x = nb.tensor(np.ones((3, 4), np.float32), requires_grad=True)\n"
        "nb.sum(nb.softmax(x @ x.T, axis=1)).backward()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('numba.cuda', 'numba_cuda'))))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", proc.stdout
