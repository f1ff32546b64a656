"""The vectorisable exp, expm1, tanh and sigmoid against numpy, over their whole range."""

import numpy as np
import pytest
from numba import njit

from nbflow.kernels.cpu import vecmath

REFERENCES = {
    "exp": np.exp,
    "expm1": np.expm1,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}
ULPS = 3  # measured worst case: about 2 ulps
# float32 tanh is a rational interpolant (Eigen's and XLA's): 3.3 measured
ULPS_OF = {("tanh", np.float32): 3.5}


def _kernel(fn):
    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    return run


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy(name, dtype):
    x = np.concatenate(
        [
            np.linspace(-120, 100, 100_001),
            np.linspace(-1, 1, 100_001),
            np.geomspace(1e-30, 1, 1001),
            -np.geomspace(1e-30, 1, 1001),
            [0.0, -0.0, np.inf, -np.inf, np.nan, 709.7, 710, -745, -746, 88.7, 89, -103, -104],
        ]
    ).astype(dtype)
    out = np.empty_like(x)
    _kernel(getattr(vecmath, name))(x, out)
    with np.errstate(all="ignore"):
        exact = REFERENCES[name](x.astype(np.float64))
        expected = exact.astype(dtype)
    normal = np.isfinite(expected) & (np.abs(expected) >= np.finfo(dtype).tiny)
    ulp = np.finfo(dtype).eps
    rel = np.abs(out[normal] - exact[normal]) / np.abs(exact[normal])
    assert rel.max() <= ULPS_OF.get((name, dtype), ULPS) * ulp, f"worst {rel.max() / ulp:.1f} ulps"
    special = ~normal
    np.testing.assert_allclose(out[special], expected[special], atol=np.finfo(dtype).tiny)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_is_odd_and_bounded(dtype):
    x = np.concatenate([np.linspace(0, 25, 200_001), np.geomspace(1e-30, 1, 1001)]).astype(dtype)
    pos, neg = np.empty_like(x), np.empty_like(x)
    run = _kernel(vecmath.tanh)
    run(x, pos)
    run(-x, neg)
    np.testing.assert_array_equal(neg, -pos)
    assert np.all(np.abs(pos) <= 1) and pos[200_000] == 1  # x = 25: saturated
