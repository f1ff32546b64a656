"""Start-up: `import nbflow` compiles nothing, a long first compile prints one line, and
`python -m nbflow.precompile` warms the kernels it lists."""

import json
import os
import subprocess
import sys

import numpy as np

from nbflow import precompile
from nbflow.core import REGISTRY, REQUIRED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a child script's first lines: `compiles` lists the kernels numba compiles (not loads)
_COUNT_COMPILES = """
from numba.core import event

compiles = []

class Count(event.Listener):
    def on_start(self, ev):
        compiles.append(ev.data["dispatcher"])

    def on_end(self, ev):
        pass

event.register("numba:compile", Count())
"""

_IMPORT_SCRIPT = (
    _COUNT_COMPILES
    + """
import gc
from numba.core.dispatcher import Dispatcher

import nbflow
loaded = [d for d in gc.get_objects() if isinstance(d, Dispatcher) and d.overloads]
print(len(compiles), len(loaded), sum(isinstance(d, Dispatcher) for d in gc.get_objects()))
"""
)


def _run(script, tmp_path, **env):
    env = dict(os.environ, PYTHONPATH=ROOT, NBFLOW_CACHE_DIR=str(tmp_path), **env)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result


def test_import_compiles_and_loads_no_kernel(tmp_path):
    out = _run(_IMPORT_SCRIPT, tmp_path).stdout.split()
    compiled, loaded, dispatchers = map(int, out)
    assert dispatchers > 50  # the kernels exist (lazily) ...
    assert compiled == 0 and loaded == 0  # ... and none was compiled or read from the cache


def test_import_leaves_scipys_heavy_modules_until_an_op_calls_them(tmp_path):
    script = (
        "import sys, nbflow as nb\n"
        "late = ['scipy.linalg', 'scipy.special']\n"
        "print(*[m in sys.modules for m in late])\n"
        "nb.special.ndtr(nb.tensor([0.0]))  # (its kernel does not need scipy; its ref would)\n"
        "lu = nb.linalg.lu_factor(nb.tensor([[2.0, 1.0], [1.0, 3.0]]))\n"
        "print(*[m in sys.modules for m in late], lu.pivots.numpy().tolist())\n"
    )
    before, after = _run(script, tmp_path).stdout.strip().splitlines()
    assert before == "False False"  # ~0.18 s of the import (core.Deferred)
    assert after == "True False [1, 2]"  # the LU's LAPACK call imported scipy.linalg


_WARM_SCRIPT = (
    _COUNT_COMPILES
    + """
import json, sys
import numpy as np
import nbflow as nb

rng = np.random.default_rng(0)
a = rng.standard_normal((3, 4)).astype(np.float32)
x = nb.tensor(a, requires_grad=True)
loss = nb.cross_entropy(nb.softmax(nb.tanh(x), axis=1) @ nb.tensor(a.T), nb.tensor([0, 2, 1]))
loss.backward()
img = nb.tensor(rng.standard_normal((2, 1, 5, 5)))
big = nb.tensor(rng.standard_normal(1 << 18).astype(np.float32))
fused = nb.jit(lambda t: nb.tanh(t * 0.5 + 1.0) * t)(big)  # a parallel fused kernel
b = big.numpy().astype(np.float64)
try:
    nb.linalg.inv(nb.tensor(np.ones((2, 2))))  # LAPACK, raising inside the kernel
    singular = "no error"
except nb.errors.LinAlgError as e:
    singular = type(e).__name__
spd = a[:, :3].T @ a[:, :3] + 3 * np.eye(3, dtype=np.float32)
print(json.dumps({
    "loss": loss.item(), "grad": x.grad.numpy().tolist(),
    "conv": nb.nn.functional.conv2d(img, nb.ones(1, 1, 3, 3, dtype="float64")).numpy().tolist(),
    "fused": [float(fused.numpy().sum()), float(np.sum(np.tanh(b * 0.5 + 1) * b))],
    "chol": [nb.linalg.cholesky(nb.tensor(spd)).numpy().tolist(), np.linalg.cholesky(spd).tolist()],
    "sort": nb.sort(nb.tensor(a), axis=1)[0].numpy().tolist(),
    "singular": singular, "compiles": len(compiles),
    "registries": "numba.np.arraymath" in sys.modules,
}))
"""
)


def test_a_warm_process_loads_its_kernels_without_numbas_compile_set_up(tmp_path):
    """The second process loads every kernel from the disk cache without refreshing numba's
    target (kernels/cpu/jit.py): no compile, numba's lowering registries never imported, and the
    same answers, including a parallel kernel, LAPACK and an error raised inside a kernel."""
    cold, warm = (json.loads(_run(_WARM_SCRIPT, tmp_path).stdout) for _ in range(2))
    assert cold["compiles"] > 0 and cold["registries"]
    assert warm["compiles"] == 0 and not warm["registries"]
    assert warm == dict(cold, compiles=0, registries=False)
    assert warm["singular"] == "LinAlgError"
    np.testing.assert_allclose(*warm["fused"], rtol=1e-5)
    np.testing.assert_allclose(*warm["chol"], rtol=1e-5)


def test_a_long_first_compile_prints_one_line(tmp_path):
    script = "import nbflow as nb\nnb.tanh(nb.ones(3)) + nb.exp(nb.ones(2, 3))\n"
    cold = _run(script, tmp_path, NBFLOW_COMPILE_NOTICE="0.001").stderr
    assert cold.count("nbflow: compiling kernels") == 1, cold
    warm = _run(script, tmp_path, NBFLOW_COMPILE_NOTICE="0.001").stderr
    assert "compiling" not in warm  # loads from the disk cache are not compiles
    off = _run(script, tmp_path / "other", NBFLOW_COMPILE_NOTICE="0").stderr
    assert "compiling" not in off


def test_precompile_lists_every_elementwise_op_and_runs(capsys):
    labels = [label for label, _ in precompile.tasks([np.dtype("float32")])]
    for name, op in REGISTRY.items():
        if hasattr(op, "scalar_body") and np.dtype("float32") in op.dtypes:
            assert f"{name} float32" in labels
    assert "mlp training step, jit, float32" in labels
    for op in REGISTRY.values():  # each op's required attrs get a value (nan_to_num's posinf)
        if hasattr(op, "scalar_body"):
            given = precompile._required_attrs(op, np.dtype("float32"))
            assert all(a.default is not REQUIRED or n in given for n, a in op.attrs.items())
    assert precompile.main(["--dtypes", "float32", "--only", "tanh"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] tanh float32" in out and "done in" in out


_UNREGISTERED_OP = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("my_ops_unregistered", sys.argv[1])
module = importlib.util.module_from_spec(spec)  # not put in sys.modules
spec.loader.exec_module(module)
import nbflow as nb
x = nb.ones(4)
fused = nb.jit(lambda t: module.twice_plus_one(t) * 2)  # a fused kernel calling the body
print(float(nb.sum(module.twice_plus_one(x))), float(fused(x).sum()))
"""

_OP_FILE = """
import numpy as np
import nbflow as nb

@nb.elementwise(dtypes=["float32", "float64"], ref=lambda x: 2 * x + 1)
def twice_plus_one(x):
    return 2 * x + 1
"""


def test_an_op_from_an_unregistered_module_runs_again_in_a_new_process(tmp_path):
    op_file = tmp_path / "ops_file.py"
    op_file.write_text(_OP_FILE)
    env = dict(os.environ, PYTHONPATH=ROOT, NBFLOW_CACHE_DIR=str(tmp_path / "cache"))
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    for _ in range(2):  # the second process must not try to load what it cannot find
        result = subprocess.run(
            [sys.executable, "-c", _UNREGISTERED_OP, str(op_file)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["12.0", "24.0"]
