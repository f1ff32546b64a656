"""OpenBLAS's parallel jobs on numba's OpenMP threads (kernels/cpu/shared_pool.py): threaded
products give numpy's float64 answers from the main thread, from several Python threads at
once, from inside a numba parallel kernel and in a forked child. Each case runs in a child
process with a time limit, as the failure these guard against is a hang."""

import os
import subprocess
import sys
import textwrap

import pytest

from nbflow.kernels.cpu import blas, shared_pool

blas.numpy_openblas()
needs_pool = pytest.mark.skipif(
    not shared_pool.active(),
    reason="OpenBLAS has no thread callback here, or numba's threads are not GNU OpenMP's",
)

SETUP = """
import numpy as np
from nbflow.kernels.cpu import blas, shared_pool, threads
blas.numpy_openblas()
assert shared_pool.active()
threads.set_num_threads(2)
rng = np.random.default_rng(0)

def check(a, b, got):
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max(), "wrong product"
"""


def run(code: str, seconds: int = 120):
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    env.pop("NBFLOW_BLAS_POOL", None)
    result = subprocess.run(
        [sys.executable, "-c", SETUP + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=seconds,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@needs_pool
def test_threaded_products_match_float64():
    run("""
    for m, k, n in [(1024, 512, 768), (2048, 384, 128), (300, 1000, 200)]:
        for dtype in (np.float32, np.float64):
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            check(a, b, a @ b)
            check(a, b[:, :1].copy(), a @ b[:, :1])  # a matrix-vector product (level 2)
    """)


@needs_pool
def test_products_from_python_threads_at_once():
    # the jobs of concurrent calls share OpenBLAS's per-thread buffers unless they take turns
    run("""
    import threading
    pairs = [(rng.standard_normal((600, 900)), rng.standard_normal((900, 300))) for _ in range(4)]
    errors = []

    def work(a, b):
        try:
            for _ in range(60):
                check(a, b, a @ b)
                check(a, b[:, 0], a @ b[:, 0])
        except AssertionError as e:
            errors.append(e)

    workers = [threading.Thread(target=work, args=pair) for pair in pairs]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    """)


@needs_pool
def test_a_threaded_product_inside_a_numba_parallel_kernel():
    # OpenMP gives a region inside a region one thread unless its nesting limit is raised,
    # and OpenBLAS's jobs then wait for each other forever
    run("""
    from numba import njit, prange
    gemm = blas.cblas_gemm(np.float32)

    @njit(parallel=True, nogil=True)
    def products(a, b, c):
        for p in prange(c.shape[0]):
            blas.cblas_product(gemm, a[p], b, c[p], 111, 111, np.float32(1), np.float32(0))

    a = rng.standard_normal((2, 512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    c = np.zeros((2, 512, 512), np.float32)

    def call():  # from a Python thread: OpenMP's nesting limit there is its default
        products(a, b, c)

    import threading
    worker = threading.Thread(target=call)
    worker.start()
    worker.join()
    for p in range(2):
        check(a[p], b, c[p])
    """)


@needs_pool
def test_a_forked_child_uses_openblas_threads():
    run("""
    import multiprocessing as mp
    a, b = rng.standard_normal((800, 800)), rng.standard_normal((800, 800))
    check(a, b, a @ b)  # the parent's OpenMP threads have run

    def child(queue):
        queue.put((shared_pool.active(), float(np.abs(a @ b - a.astype(np.float64) @ b).max())))

    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=child, args=(queue,))
    p.start()
    try:
        active, err = queue.get(timeout=60)
        p.join(60)
    finally:
        if p.is_alive():  # (a hung child would outlive this process's time limit)
            p.kill()
    assert p.exitcode == 0 and not active and err < 1e-9, (p.exitcode, active, err)
    assert shared_pool.active()
    """)


def test_openblas_threads_stay_when_asked():
    env = dict(os.environ, NBFLOW_BLAS_POOL="openblas")
    code = (
        "from nbflow.kernels.cpu import blas, shared_pool; blas.numpy_openblas(); "
        "print(shared_pool.active())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr[-2000:]
