"""nbflow.testing.check_devices under the CUDA simulator (run by tests/test_cuda_sim.py in a
subprocess with NUMBA_ENABLE_CUDASIM=1): it compares, and it catches a disagreement."""

import numpy as np

import nbflow as nb
import nbflow.testing as nt


def mlp(x, w):
    return nb.sum(nb.tanh(nb.matmul(x, w)) * 0.5, axis=1)


def main():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    result = nt.check_devices(mlp, x.astype(np.float32), w.astype(np.float32))
    assert result == {"status": "compared", "outputs": 1, "gradients": 2}, result

    def differs(x):  # the GPU run sees another constant: check_devices must say so
        return x * (2.0 if x.device == "cpu" else 3.0)

    try:
        nt.check_devices(differs, x)
    except AssertionError as e:
        assert "CPU and CUDA disagree" in str(e), e
    else:
        raise AssertionError("check_devices missed a disagreement")
    nt.op_property_test(nb.ops.exp, max_examples=2)("devices")
    print("compared", result)


if __name__ == "__main__":
    main()
