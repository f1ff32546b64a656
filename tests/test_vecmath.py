"""The vectorisable exp, expm1, tanh and sigmoid against numpy, over their whole range."""

import numpy as np
import pytest
from numba import njit

from nbflow.kernels import vecmath

REFERENCES = {
    "exp": np.exp,
    "expm1": np.expm1,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}
ULPS = 3  # measured worst case: about 2 ulps


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
    assert rel.max() <= ULPS * ulp, f"worst error {rel.max() / ulp:.1f} ulps"
    special = ~normal
    np.testing.assert_allclose(out[special], expected[special], atol=np.finfo(dtype).tiny)
