"""BLAS thread choice (kernels/cpu/threads.py): a matmul on one thread or on OpenBLAS's threads
gives numpy's result, and the thread count is put back after every call, also on errors."""

import time

import numpy as np
import pytest

import nbflow as nb
from nbflow.kernels.cpu import threads
from nbflow.ops import linalg

LIB = threads._openblas()
needs_openblas = pytest.mark.skipif(
    not LIB,
    reason="no BLAS thread choice here (one thread, no threadpoolctl or NBFLOW_BLAS_THREADS=fixed)",
)


@needs_openblas
def test_both_choices_give_numpys_product_and_restore_the_threads():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((128, 300)), rng.standard_normal((300, 64))
    before = LIB.num_threads
    key = ("test", a.shape)
    chosen = []
    for _ in range(2 * threads.Chooser.TRIALS):  # the trials alternate threads and one
        chosen.append(threads._CHOOSERS.get(key, threads.Chooser()).parallel())
        out = np.empty((128, 64))
        threads.blas_call(key, np.matmul, a, b, out=out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-12)
        assert LIB.num_threads == before
    assert set(chosen) == {True, False}


@needs_openblas
def test_threads_are_restored_when_the_call_raises():
    before = LIB.num_threads
    key = ("raises",)
    threads._CHOOSERS[key] = chooser = threads.Chooser()
    chooser.calls = 1  # the second trial: one thread
    with pytest.raises(ValueError):
        threads.blas_call(key, np.matmul, np.ones((2, 3)), np.ones((2, 3)))
    assert LIB.num_threads == before


def test_large_matmul_goes_through_the_choice_and_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 784)).astype(np.float32)
    w = rng.standard_normal((256, 784)).astype(np.float32)
    assert linalg.THREAD_CHOICE_MIN_WORK <= 128 * 256 * 784
    for _ in range(8):
        out = nb.matmul(nb.tensor(a), nb.matrix_transpose(nb.tensor(w)))
        np.testing.assert_allclose(out.numpy(), a @ w.T, rtol=1e-4, atol=1e-4)
    if LIB:
        assert any(k[:2] == ((128, 784), (784, 256)) for k in threads._CHOOSERS)


@pytest.mark.parametrize(
    "env, want",
    [
        ({}, threads.SPIN_COUNT),
        ({"OMP_WAIT_POLICY": "active"}, None),
        ({"GOMP_SPINCOUNT": "7"}, "7"),
    ],
)
def test_openmp_workers_spin_briefly_unless_the_user_chose(env, want):
    """Importing nbflow shortens GNU OpenMP's idle spin before numba's pool can start, and
    leaves a wait policy the user set alone."""
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    code = "import os, nbflow; print(os.environ.get('GOMP_SPINCOUNT'))"
    out = subprocess.run(
        [sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True
    )
    assert out.stdout.split()[-1] == str(want)


def test_split_range_covers_the_range_once_and_keeps_order():
    seen = []
    parts = threads.split_range(lambda a, b: seen.append((a, b)) or (a, b), 7)
    assert parts == sorted(parts) and parts[0][0] == 0 and parts[-1][1] == 7
    assert all(p[1] == q[0] for p, q in zip(parts, parts[1:]))
    assert sorted(seen) == parts


def test_split_range_waits_for_every_part_when_one_raises():
    done = []

    def part(a, b):
        if a == 0:
            raise ValueError("first part")
        time.sleep(0.05)
        done.append(a)

    with pytest.raises(ValueError, match="first part"):
        threads.split_range(part, 4)
    # the other part (when there are threads for one) finished before the error came back
    assert done == ([2] if threads.get_num_threads() > 1 else [])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_split_range_works_in_a_forked_child():
    """A child forked after the worker threads started gets its own (PyTorch resets its pool
    at fork too): the parent's threads do not exist there, and work queued for them would
    never run."""
    import os

    threads.split_range(lambda a, b: b - a, 4)  # the parent's workers exist now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answers, or is killed by the alarm (a hang fails the test)
        __import__("signal").alarm(20)
        try:
            parts = threads.split_range(lambda a, b: b - a, 4)
            os.write(write, str(sum(parts)).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 16) == b"4" and status == 0


def test_numba_threaded_kernels_from_python_threads_at_once_give_one_threads_values():
    """Python threads running the row, channel and stacked-product kernels at once, each call
    on numba's threads or one as its chooser's trials alternate, get the values of the
    same calls made alone."""
    import threading

    rng = np.random.default_rng(2)
    x = nb.tensor(rng.standard_normal((8, 4, 64, 64)).astype(np.float32))
    w, b = nb.ones(4), nb.zeros(4)
    q = nb.tensor(rng.standard_normal((8, 64, 4, 32)).astype(np.float32)).permute(0, 2, 1, 3)

    def work():
        return [
            nb.softmax(x, -1).numpy(),
            nb.layer_norm(x, (64,), nb.ones(64), nb.zeros(64)).numpy(),
            nb.nn.functional.batch_norm(x, None, None, w, b, True).numpy(),
            nb.matmul(q, q.transpose(-1, -2)).numpy(),
        ]

    alone = work()
    results, errors = [], []

    def loop():
        try:
            for _ in range(4):
                results.append(work())
        except Exception as e:
            errors.append(e)

    pool = [threading.Thread(target=loop) for _ in range(3)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(300)
    assert not errors and len(results) == 12
    for got in results:
        for a, e in zip(got, alone, strict=True):
            np.testing.assert_array_equal(a, e)
