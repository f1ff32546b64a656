"""Threads or not, decided by measurement: on a shared 2-core machine the right answer
changes with the load. With both cores free, two threads run a 128x784x256 float32 GEMM in
0.28 ms against 0.53 ms on one; with one core taken by another job, the two threads took 2.9 ms
(a thread waits for its descheduled partner), and PyTorch's took 9.6 ms.

`Chooser` times both variants and keeps the faster (fused kernels: numba's prange or not;
BLAS calls: numpy's OpenBLAS on its threads or on one). `blas_call` runs a numpy BLAS call
that way, switching OpenBLAS's thread count with threadpoolctl (when it is installed, and
unless NBFLOW_BLAS_THREADS=fixed); the count is put back after each call. OpenBLAS's threads
are numba's OpenMP threads where shared_pool could install its callback.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait

from . import blas
from .blas import numpy_openblas


class Chooser:
    """Threads or not, measured: whether the parallel kernel beats the serial one depends on
    whether the cores are free (on a shared 2-core machine with one core busy, the threads
    were 4x slower than one). The first calls time each variant in turn; the faster one runs
    after that, and all are timed again every RETRY calls, as the machine's load changes.
    Variants are numbered 0 to n - 1 (`pick`, `record`); with two, `parallel()` says whether
    variant 1, the parallel one, runs (record takes the same bool)."""

    TRIALS, RETRY = 3, 256

    def __init__(self, n: int = 2):
        self.n = n
        self.calls = 0
        self.best = [float("inf")] * n

    def pick(self) -> int:
        phase = self.calls % self.RETRY
        if phase < self.n * self.TRIALS:
            return self.n - 1 - phase % self.n  # trials: the last variant first, in turn
        return min(range(self.n - 1, -1, -1), key=self.best.__getitem__)  # (ties: the later)

    def parallel(self) -> bool:
        return self.pick() == 1

    def record(self, choice: int, seconds: float):
        if self.calls % self.RETRY == 0:
            self.best = [float("inf")] * self.n
        if self.calls % self.RETRY < self.n * self.TRIALS:
            self.best[choice] = min(self.best[choice], seconds)
        self.calls += 1


# spins of an idle OpenMP worker before it sleeps (GNU OpenMP's default: 300,000)
SPIN_COUNT = "20000"


def cooperative_wait() -> None:
    """Shorten the spin of GNU OpenMP's idle workers, unless the user chose a wait policy.

    numba's prange kernels (graph mode's fused kernels) run on libgomp, whose workers spin for
    300,000 rounds after each parallel region by default. On 2 cores they then take the CPU
    from whatever runs next, OpenBLAS or the batch threads of split_range: the bench CNN's
    @jit step ran 117-123 ms with the default spin, 91-98 with 20,000 or with no spin
    (OMP_WAIT_POLICY=passive), the same as with fusion off. 20,000 spins keep back-to-back
    fused kernels waking fast. libgomp reads the variable when it loads, so this must run
    before numba's first parallel kernel; another OpenMP runtime loaded later in the process
    (PyTorch's own libgomp) reads it too."""
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT


cooperative_wait()  # at import: nbflow launches no parallel kernel before it is imported


_OPENBLAS = None  # threadpoolctl's controller for numpy's OpenBLAS; False: none to switch
_CHOOSERS: dict = {}  # call key (shapes, dtype) -> Chooser


def _openblas():
    global _OPENBLAS
    if _OPENBLAS is None:
        lib = None if os.environ.get("NBFLOW_BLAS_THREADS", "") == "fixed" else numpy_openblas()
        _OPENBLAS = lib if lib is not None and lib.num_threads > 1 else False
    return _OPENBLAS


def _chooser(key, n: int = 2) -> Chooser:
    chooser = _CHOOSERS.get(key)
    if chooser is None:
        if len(_CHOOSERS) > 1024:  # many shapes (a varying batch size): start again
            _CHOOSERS.clear()
        chooser = _CHOOSERS[key] = Chooser(n)
    return chooser


def blas_call(key, fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, a call that runs on numpy's OpenBLAS, on OpenBLAS's threads or on
    one thread, whichever the chooser for `key` has measured faster."""
    lib = _openblas()
    if not lib:
        return fn(*args, **kwargs)
    chooser = _chooser(key)
    threaded = chooser.parallel()
    start = time.perf_counter()
    if threaded:
        result = fn(*args, **kwargs)
    else:
        with one_blas_thread():
            result = fn(*args, **kwargs)
    chooser.record(threaded, time.perf_counter() - start)
    return result


# elements from which a memory-bound pass (a channel's or a row's kernel) may run on threads
THREADED_ELEMENTS = 1 << 16


def measured(key, serial, threaded, elements: int):
    """serial() or threaded() (the same work over numba's threads: a prange kernel), whichever
    the chooser for `key` has measured faster; serial() below THREADED_ELEMENTS elements.
    numba's workers wait spinning, so a threaded call costs a few microseconds where
    split_range's hand-off to a Python thread costs tens."""
    if elements < THREADED_ELEMENTS or get_num_threads() == 1:
        return serial()
    chooser = _chooser(key)
    choice = chooser.parallel()
    start = time.perf_counter()
    result = threaded() if choice else serial()
    chooser.record(choice, time.perf_counter() - start)
    return result


def stacked_call(key, run) -> None:
    """A stack of independent BLAS calls (attention's products), `run(threads)` making them
    in turn or over numba's threads: in turn on one BLAS thread, in turn on OpenBLAS's
    threads, or over numba's threads each on one BLAS thread, whichever the chooser for `key`
    has measured fastest. Which wins depends on the sizes and on what else keeps the cores
    busy, so it is measured where it runs."""
    lib = _openblas()
    if not lib:
        run(get_num_threads() > 1)
        return
    chooser = _chooser(key, 3)
    choice = chooser.pick()
    start = time.perf_counter()
    if choice == 1:
        run(False)
    else:
        with one_blas_thread():
            run(choice == 2)
    chooser.record(choice, time.perf_counter() - start)


def set_num_threads(n: int) -> None:
    """PyTorch's set_num_threads: the threads that nbflow's parallel kernels (numba's prange)
    and numpy's OpenBLAS may use, at most the cores numba found (its thread pool's size). The
    thread choices measured so far are dropped: they were made for the old count."""
    import numba

    from ...core.errors import ArgumentError

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ArgumentError(f"set_num_threads: needs an int >= 1, got {n!r}")
    n = min(n, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(n)
    lib = numpy_openblas()
    if lib is not None:
        lib.set_num_threads(n)
    global _OPENBLAS
    _OPENBLAS = None  # (found again: with one thread there is nothing to switch)
    _CHOOSERS.clear()


def get_num_threads() -> int:
    """The threads nbflow's parallel kernels may use (set_num_threads)."""
    import numba

    return numba.get_num_threads()


_WORKERS = None  # a ThreadPoolExecutor for split_range, made on first use
_WORKERS_LOCK = threading.Lock()


def _forget_workers():
    """In a forked child: the parent's worker threads do not exist there, and an executor
    that believes they do would queue work for nobody (a deadlock), so start afresh."""
    global _WORKERS, _WORKERS_LOCK
    _WORKERS, _WORKERS_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def _workers(n: int):
    global _WORKERS
    with _WORKERS_LOCK:
        if _WORKERS is None or _WORKERS._max_workers < n:
            _WORKERS = ThreadPoolExecutor(n, thread_name_prefix="nbflow-batch")
        return _WORKERS


def split_range(fn, n: int):
    """fn(start, stop) over [0, n) cut into one range per thread (get_num_threads(), at most
    n), the first on this thread and the others on worker threads, with numpy's OpenBLAS on one
    thread meanwhile; returns the results in range order.

    For loops over independent items (a batch's images, a tensor's channels) whose steps are
    numba kernels (which must release the GIL: nogil) and BLAS calls: one level of
    parallelism over the items instead of OpenBLAS's threads inside each small call, whose
    pool and numba's spin against each other when they alternate on 2 cores. With one thread
    it runs fn(0, n) here."""
    parts = min(get_num_threads(), n)
    if parts <= 1:
        return [fn(0, n)]
    bounds = [n * i // parts for i in range(parts + 1)]
    with one_blas_thread():
        pending = [_workers(parts - 1).submit(fn, a, b) for a, b in zip(bounds[1:-1], bounds[2:])]
        try:
            first = fn(bounds[0], bounds[1])
        finally:
            wait(pending)  # (BLAS gets its threads back only when no part runs)
        return [first] + [p.result() for p in pending]


_COUNT = None  # numpy's OpenBLAS's (get, set) thread count functions; False: none to switch


def _count():
    """(openblas_get_num_threads, openblas_set_num_threads) as ctypes functions, or None."""
    global _COUNT
    if _COUNT is None:
        lib = numpy_openblas()
        get = blas.symbol(lib.dynlib, "openblas_get_num_threads")[0] if lib else None
        put = blas.symbol(lib.dynlib, "openblas_set_num_threads")[0] if lib else None
        _COUNT = (get, put) if get is not None and put is not None else False
    return _COUNT or None


class one_blas_thread:  # (lower case: it reads as the function it replaced)
    """numpy's OpenBLAS on one thread while the block runs: for threads of nbflow's own
    (split_range's, a numba kernel's) that each make BLAS calls, whose pool would otherwise
    spin against them, and for a BLAS call measured on one thread. Calls OpenBLAS's thread
    count functions directly, as it runs per call (threadpoolctl's methods cost more)."""

    __slots__ = ("threads",)

    def __enter__(self):
        count = _count()
        self.threads = count[0]() if count else 1
        if self.threads > 1:
            count[1](1)
        return self

    def __exit__(self, *exc):
        if self.threads > 1:
            _count()[1](self.threads)
