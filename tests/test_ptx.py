"""The PTX compile matrix: every CUDA kernel of nbflow, for every dtype it takes, compiled by
numba-cuda's real compiler (no GPU needed; it needs the NVVM of `numba-cuda[cu13]`). Run in a
subprocess (tests/cuda_ptx_matrix.py) because it stands in for the driver's device query."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nbflow.core import REGISTRY
from nbflow.ops import BUILTIN

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def matrix():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "cuda_ptx_matrix.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    return result


def test_every_cuda_kernel_compiles_to_ptx(matrix):
    assert not matrix["failures"], "\n".join(matrix["failures"])


def test_the_matrix_covers_every_elementwise_dtype(matrix):
    # two kernels (flat, strided) per op and dtype; cast once per target dtype
    expected = 0
    for name in BUILTIN:
        op = REGISTRY[name]
        if hasattr(op, "scalar_body"):
            expected += 2 * len(op.dtypes) * (6 if name == "cast" else 1)
    assert matrix["compiled"] >= expected


def test_the_matrix_can_fail(matrix):
    assert matrix["canary_rejected"], "a float16 atomic add compiled: the matrix proves nothing"
