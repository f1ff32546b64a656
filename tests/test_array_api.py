"""nbflow.array_api, the Array API standard (2024.12) over nbflow tensors: a few direct checks
(autograd through the namespace, the protocol methods), and a bounded run of the standard's own
test suite (data-apis/array-api-tests, a snapshot in ../shared/third_party/array-api-tests)
against it, with the commented xfail list tests/array_api_xfails.txt. The full run is the
command in docs/interop.md ("The Python Array API standard")."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbflow as nb
import nbflow.array_api as xp

ROOT = Path(__file__).resolve().parent.parent
SUITE = Path(
    os.environ.get("ARRAY_API_TESTS_DIR", ROOT.parent / "shared/third_party/array-api-tests")
)
XFAILS = ROOT / "tests" / "array_api_xfails.txt"

# The bounded CI run: every file of the suite but test_special_cases.py (the IEEE special values
# of each elementwise function, 1000+ cases) and test_fft.py (nbflow has no fft), with a few
# hypothesis examples each; the whole suite is the command in docs/interop.md.
CI_FILES = [
    "test_constants.py",
    "test_creation_functions.py",
    "test_data_type_functions.py",
    "test_manipulation_functions.py",
    "test_searching_functions.py",
    "test_set_functions.py",
    "test_sorting_functions.py",
    "test_statistical_functions.py",
    "test_utility_functions.py",
    "test_indexing_functions.py",
    "test_has_names.py",
    "test_array_object.py",
    "test_operators_and_elementwise_functions.py",
    "test_linalg.py",
    "test_signatures.py",
    "test_inspection_functions.py",
    "test_dlpack.py",
]


def test_namespace_and_protocol():
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(x, nb.Tensor) and x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="1999.01")
    assert xp.__array_api_version__ == "2024.12"
    assert x.to_device("cpu") is x and x.device == "cpu"
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["integral"] == xp.int64
    assert set(info.dtypes(kind="real floating").values()) == {xp.float32, xp.float64}
    assert xp.isdtype(xp.int32, ("integral", "real floating")) and not xp.isdtype(
        xp.bool, "numeric"
    )
    assert xp.result_type(xp.int32, xp.int64) == xp.int64
    assert xp.result_type(x, 1) == x.dtype
    np.testing.assert_allclose(xp.std(x, correction=1).item(), np.std(x.numpy(), ddof=1), 1e-6)
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int32)).dtype == xp.int64
    v = xp.unique_all(xp.asarray([3, 1, 3, 2]))
    assert v.values.tolist() == [1, 2, 3] and v.counts.tolist() == [1, 1, 2]
    assert xp.sort(xp.asarray([2, 3, 1]), descending=True).tolist() == [3, 2, 1]


def test_autograd_through_the_namespace():
    w = nb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = xp.sum(xp.exp(w) * xp.mean(w, axis=0, keepdims=True))
    y = y + xp.linalg.vector_norm(w) + xp.sum(xp.permute_dims(w, (1, 0))[0])
    y.backward()
    ref = w.detach().requires_grad_()
    z = nb.sum(nb.exp(ref) * nb.mean(ref, axis=0, keepdims=True))
    z = z + nb.linalg.vector_norm(ref) + nb.sum(ref.T[0])
    z.backward()
    np.testing.assert_allclose(w.grad.numpy(), ref.grad.numpy(), rtol=1e-6)
    assert w.grad.numpy()[0, 0] != 0


def _suite_copy(tmp_path) -> Path:
    """The snapshot copied (pytest writes its caches beside it) with one fix: the suite takes
    the widest complex dtype with max() of an empty list when the namespace has none."""
    dst = tmp_path / "array-api-tests"
    shutil.copytree(SUITE, dst, ignore=shutil.ignore_patterns("array-api", ".git", "meta_tests"))
    (dst / "array-api").symlink_to(SUITE / "array-api")  # the spec it reads signatures from
    helpers = dst / "array_api_tests" / "dtype_helpers.py"
    text = helpers.read_text()
    old = "key=lambda x: x[1]\n)[0]\n\n\n# float64"
    assert old in text, "the suite's dtype_helpers changed: check the complex-dtype fix"
    helpers.write_text(
        text.replace(old, "key=lambda x: x[1], default=(None, 0)\n)[0]\n\n\n# float64")
    )
    return dst


def suite_env() -> dict:
    return dict(
        os.environ,
        ARRAY_API_TESTS_MODULE="nbflow.array_api",
        ARRAY_API_TESTS_SKIP_DTYPES="complex64,complex128",  # nbflow has no complex dtypes
        PYTHONPATH=str(ROOT),
    )


@pytest.mark.skipif(not SUITE.is_dir(), reason=f"no array-api-tests snapshot at {SUITE}")
def test_the_standards_test_suite(tmp_path):
    pytest.importorskip("ndindex")
    pytest.importorskip("pytest_jsonreport")
    dst = _suite_copy(tmp_path)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"]
    args += ["--rootdir", str(dst), "-c", str(dst / "pytest.ini")]
    args += ["--max-examples", "3", "--disable-deadline", "--hypothesis-derandomize"]
    args += ["--xfails-file", str(XFAILS)]
    args += [f"array_api_tests/{f}" for f in CI_FILES]
    proc = subprocess.run(
        args, cwd=dst, env=suite_env(), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


SKLEARN_SCRIPT = """
import numpy as np, sklearn
import nbflow as nb
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 5))
y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(np.int64)
ref_z = PCA(n_components=2, svd_solver="full").fit(X).transform(X)
ref_y = LinearDiscriminantAnalysis().fit(X, y).predict(X)
sklearn.set_config(array_api_dispatch=True)
z = PCA(n_components=2, svd_solver="full").fit(nb.tensor(X)).transform(nb.tensor(X))
assert isinstance(z, nb.Tensor), type(z)
np.testing.assert_allclose(np.abs(z.numpy()), np.abs(ref_z), rtol=1e-6, atol=1e-9)
p = LinearDiscriminantAnalysis().fit(nb.tensor(X), nb.tensor(y)).predict(nb.tensor(X))
assert isinstance(p, nb.Tensor), type(p)
np.testing.assert_array_equal(p.numpy(), ref_y)

from scipy.special import logsumexp  # SciPy functions that take Array API inputs
import scipy.stats
r = logsumexp(nb.tensor(X), axis=0)
assert isinstance(r, nb.Tensor)
np.testing.assert_allclose(r.numpy(), logsumexp(X, axis=0))
m = scipy.stats.moment(nb.tensor(X), order=2, axis=0)
assert isinstance(m, nb.Tensor)
np.testing.assert_allclose(m.numpy(), scipy.stats.moment(X, order=2, axis=0))
print("ok")
"""


def test_scikit_learn_and_scipy_take_nbflow_tensors():
    """scikit-learn's Array API support runs PCA and LDA on nbflow tensors (through
    array-api-compat, which finds nbflow.array_api by __array_namespace__), and SciPy's
    Array API functions (logsumexp, stats.moment) return nbflow tensors."""
    pytest.importorskip("sklearn")
    pytest.importorskip("array_api_compat")
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=str(ROOT))  # before scipy's import
    proc = subprocess.run(
        [sys.executable, "-c", SKLEARN_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")
