"""Threads or not, decided by measurement: on a shared 2-core machine the right answer
changes with the load. With both cores free, two threads run a 128x784x256 float32 GEMM in
0.28 ms against 0.53 ms on one; with one core taken by another job, the two threads took 2.9 ms
(a thread waits for its descheduled partner), and PyTorch's took 9.6 ms.

`Chooser` times both variants and keeps the faster (fused kernels: numba's prange or not;
BLAS calls: numpy's OpenBLAS on its threads or on one). `blas_call` runs a numpy BLAS call
that way, switching OpenBLAS's thread count with threadpoolctl (when it is installed, and
unless NBFLOW_BLAS_THREADS=fixed); the count is put back after each call.
"""

from __future__ import annotations

import os
import time

from .blas import numpy_openblas


class Chooser:
    """Threads or not, measured: whether the parallel kernel beats the serial one depends on
    whether the cores are free (on a shared 2-core machine with one core busy, the threads
    were 4x slower than one). The first calls time each variant in turn; the faster one runs
    after that, and both are timed again every RETRY calls, as the machine's load changes."""

    TRIALS, RETRY = 3, 256

    def __init__(self):
        self.calls = 0
        self.best = {True: float("inf"), False: float("inf")}

    def parallel(self) -> bool:
        phase = self.calls % self.RETRY
        if phase < 2 * self.TRIALS:
            return phase % 2 == 0  # trials: parallel, serial, parallel, ...
        return self.best[True] <= self.best[False]

    def record(self, parallel: bool, seconds: float):
        if self.calls % self.RETRY == 0:
            self.best = {True: float("inf"), False: float("inf")}
        if self.calls % self.RETRY < 2 * self.TRIALS:
            self.best[parallel] = min(self.best[parallel], seconds)
        self.calls += 1


_OPENBLAS = None  # threadpoolctl's controller for numpy's OpenBLAS; False: none to switch
_CHOOSERS: dict = {}  # call key (shapes, dtype) -> Chooser


def _openblas():
    global _OPENBLAS
    if _OPENBLAS is None:
        lib = None if os.environ.get("NBFLOW_BLAS_THREADS", "") == "fixed" else numpy_openblas()
        _OPENBLAS = lib if lib is not None and lib.num_threads > 1 else False
    return _OPENBLAS


def blas_call(key, fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, a call that runs on numpy's OpenBLAS, on OpenBLAS's threads or on
    one thread, whichever the chooser for `key` has measured faster."""
    lib = _openblas()
    if not lib:
        return fn(*args, **kwargs)
    chooser = _CHOOSERS.get(key)
    if chooser is None:
        if len(_CHOOSERS) > 1024:  # many shapes (a varying batch size): start again
            _CHOOSERS.clear()
        chooser = _CHOOSERS[key] = Chooser()
    threaded = chooser.parallel()
    start = time.perf_counter()
    if threaded:
        result = fn(*args, **kwargs)
    else:
        threads = lib.num_threads
        lib.set_num_threads(1)
        try:
            result = fn(*args, **kwargs)
        finally:
            lib.set_num_threads(threads)
    chooser.record(threaded, time.perf_counter() - start)
    return result
