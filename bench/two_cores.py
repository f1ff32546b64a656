"""Whether this machine's two cores compute at once: each second, the time of a fixed amount
of GEMM work (64x64 products on operands that stay in L1) done by one numba thread, against
twice that work done by two threads, each on its own operands. With two real cores the ratio
is ~1.0; where the two share one physical core it is ~2.0, and every framework's threaded
step runs slower in those minutes (bench/real_models.py's batch-1 rows).

    python bench/two_cores.py [--seconds 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit, prange, set_num_threads

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbflow.kernels.cpu import blas, threads

REPEATS = 20  # products per thread per call


@njit(parallel=True, nogil=True)
def _products(gemm, a, b, c, one, zero):
    for s in prange(a.shape[0]):  # each thread its own operands
        for _ in range(REPEATS):
            blas.cblas_product(gemm, a[s], b[s], c[s], blas.NO_TRANS, blas.NO_TRANS, one, zero)


def median_us(fn, calls=50):
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e6)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((2, 64, 64)).astype(np.float32) for _ in range(2))
    c = np.zeros_like(a)
    gemm, one, zero = blas.cblas_gemm(a.dtype), np.float32(1), np.float32(0)
    end = time.perf_counter() + args.seconds
    with threads.one_blas_thread():
        _products(gemm, a, b, c, one, zero)
        while time.perf_counter() < end:
            set_num_threads(1)
            alone = median_us(lambda: _products(gemm, a[:1], b[:1], c[:1], one, zero))
            set_num_threads(2)
            both = median_us(lambda: _products(gemm, a, b, c, one, zero))
            print(
                f"one thread {alone:6.0f} us, two threads (twice the work) {both:6.0f} us: "
                f"{both / alone:.2f}",
                flush=True,
            )
            time.sleep(max(0.0, 1 - 0.05 * (alone + both) / 1e3))


if __name__ == "__main__":
    main()
