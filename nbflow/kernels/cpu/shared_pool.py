"""One pool of threads for numba's kernels and OpenBLAS: OpenBLAS's parallel jobs run on GNU
OpenMP's threads, the ones numba's omp threading layer runs its prange kernels on.

OpenBLAS's own idle workers spin for ~2^28 cycles after each threaded call, and on two cores
that spin takes a core from the numba kernels that run next (a numba-threaded LSTM forward ran
2.6 ms alone and 5.9 ms after one threaded GEMM). OpenBLAS 0.3.27 and later let a program run
its jobs itself (openblas_set_threads_callback_function): `install` hands it `_run_jobs`, which
runs them on an OpenMP team, whose idle workers nbflow keeps to a short spin
(threads.cooperative_wait).

The jobs of one call wait for each other, so each needs a thread of its own: the team has one
thread per job, and a call made inside a parallel region (a numba kernel's BLAS call) raises
the nesting limit first, or OpenMP would give its team one thread and the jobs would wait
forever. Jobs index OpenBLAS's per-thread buffers by their number, so calls from several
threads take turns (a mutex). A forked child goes back to OpenBLAS's own threads: GNU
OpenMP's do not survive a fork.

NBFLOW_BLAS_POOL=openblas keeps OpenBLAS's own threads.
"""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, types
from numba.extending import intrinsic

from .blas import symbol

_LOCK = threading.Lock()
# OpenBLAS's callback setter; the compiled callback (None: not tried, False: not possible);
# whether it is OpenBLAS's callback now
_STATE = {"set": None, "jobs": None, "on": False}


@intrinsic
def _call_job(typingctx, fn, index, data, extra):
    """OpenBLAS's job function at address `fn`: fn(index, data, extra), as
    void (*)(int, void *, int)."""
    sig = types.void(types.int64, types.int32, types.int64, types.int32)

    def codegen(context, builder, signature, args):
        i32, byte_ptr = ir.IntType(32), ir.IntType(8).as_pointer()
        kind = ir.FunctionType(ir.VoidType(), [i32, byte_ptr, i32])
        job = builder.inttoptr(args[0], kind.as_pointer())
        builder.call(job, [args[1], builder.inttoptr(args[2], byte_ptr), args[3]])
        return context.get_dummy_value()

    return sig, codegen


def _function(lib, name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


def _openmp():
    """numba's GNU OpenMP library, or None where numba's threading layer is another (TBB runs
    tasks without a thread each, and two jobs sharing one would wait for each other forever)."""
    import numba
    from numba.np.ufunc import parallel

    parallel._launch_threads()
    if numba.threading_layer() != "omp":
        return None
    from numba.np.ufunc import omppool

    lib = ctypes.CDLL(omppool.__file__)  # its symbols resolve in the libgomp it links
    if not all(hasattr(lib, name) for name in ("GOMP_parallel", "omp_get_dynamic")):
        return None
    dynamic = _function(lib, "omp_get_dynamic", ctypes.c_int)
    return lib if dynamic() == 0 else None  # (dynamic teams may have fewer threads)


def _compile(lib):
    """The callback OpenBLAS calls, compiled for this process: it calls OpenMP's functions
    and the mutex by address, so it cannot be cached."""
    size, c_int = ctypes.c_size_t, ctypes.c_int
    parallel = _function(lib, "GOMP_parallel", None, size, size, ctypes.c_uint, ctypes.c_uint)
    member = _function(lib, "omp_get_thread_num", c_int)
    team = _function(lib, "omp_get_num_threads", c_int)
    level = _function(lib, "omp_get_active_level", c_int)
    nesting = _function(lib, "omp_set_max_active_levels", None, c_int)
    libc = ctypes.CDLL(None)
    lock = _function(libc, "pthread_mutex_lock", c_int, size)
    unlock = _function(libc, "pthread_mutex_unlock", c_int, size)
    mutex = ctypes.create_string_buffer(64)  # a pthread_mutex_t, zeroed: unlocked
    _STATE["mutex"] = mutex
    mutex_address = ctypes.addressof(mutex)

    @cfunc(types.void(types.CPointer(types.int64)), nopython=True)
    def run_member(call):
        """One thread's share of the jobs: (job function, jobs, job size, jobs' address,
        extra) at `call`; with a thread per job, the job of its number."""
        job, jobs, stride, data, extra = carray(call, 5)
        i, n = member(), team()
        while i < jobs:
            _call_job(job, np.int32(i), data + i * stride, np.int32(extra))
            i += n

    member_address = run_member.address
    i32, i64 = types.int32, types.int64

    @cfunc(types.void(i32, i64, i32, i64, i64, i32), nopython=True)
    def run_jobs(sync, job, jobs, stride, data, extra):
        call = np.empty(5, np.int64)
        call[0], call[1], call[2], call[3], call[4] = job, jobs, stride, data, extra
        lock(mutex_address)
        depth = level()
        if depth > 0:
            nesting(depth + 1)
        parallel(member_address, call.ctypes.data, jobs, 0)
        unlock(mutex_address)

    _STATE["member"] = run_member
    return run_jobs


def install(dll) -> bool:
    """Run the OpenBLAS library `dll`'s parallel jobs on numba's OpenMP threads from now on;
    whether they do. Nothing changes where the library has no callback setter (OpenBLAS before
    0.3.27), numba's threads are not GNU OpenMP's, or NBFLOW_BLAS_POOL=openblas."""
    with _LOCK:
        if _STATE["jobs"] is None:
            _STATE["jobs"] = False
            setter = symbol(dll, "openblas_set_threads_callback_function")[0]
            lib = None
            if setter is not None and os.environ.get("NBFLOW_BLAS_POOL", "") != "openblas":
                lib = _openmp()
            if lib is not None:
                setter.argtypes, setter.restype = [ctypes.c_void_p], None
                _STATE["set"], _STATE["jobs"] = setter, _compile(lib)
        if _STATE["jobs"]:
            _STATE["set"](_STATE["jobs"].address)
            _STATE["on"] = True
        return _STATE["on"]


def active() -> bool:
    """Whether OpenBLAS's parallel jobs run on numba's OpenMP threads (install)."""
    return _STATE["on"]


def _forget_in_child():
    """In a forked child: OpenBLAS's own threads again (GNU OpenMP's do not survive a fork,
    and a child that starts a team after its parent did is killed)."""
    if _STATE["on"]:
        _STATE["set"](None)
        _STATE["on"] = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
