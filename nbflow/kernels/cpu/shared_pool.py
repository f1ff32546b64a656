"""One pool of threads for numba's kernels and OpenBLAS: OpenBLAS's parallel jobs run on GNU
OpenMP's threads, the ones numba's omp threading layer runs its prange kernels on.

OpenBLAS's own idle workers spin for ~2^28 cycles after each threaded call, and on two cores
that spin takes a core from the numba kernels that run next (a numba-threaded LSTM forward ran
2.6 ms alone and 5.9 ms after one threaded GEMM). OpenBLAS 0.3.27 and later let a program run
its jobs itself (openblas_set_threads_callback_function): `install` hands it a function
(`_compile`, from LLVM IR) that runs them on an OpenMP team, whose idle workers nbflow keeps
to a short spin (threads.cooperative_wait).

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

import llvmlite.binding as llvm
from llvmlite import ir

from .blas import symbol

_LOCK = threading.Lock()
# "set": OpenBLAS's callback setter; "jobs": the compiled callback's address (None: not tried,
# False: not possible here); "on": whether it is OpenBLAS's callback now; "keep": its mutex
# and the engine holding its code, kept alive as long as it may run
_STATE = {"set": None, "jobs": None, "on": False, "keep": ()}


def _function(lib, name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, list(argtypes)
    return fn


def _openmp():
    """numba's GNU OpenMP library, or None where a team might get fewer threads than it asks
    for: numba's threading layer is another (TBB runs tasks without a thread each), or
    OpenMP's dynamic teams or a thread limit are set. Two jobs on one thread would wait for
    each other forever."""
    import numba
    from numba.np.ufunc import parallel

    parallel._launch_threads()  # (numba's own first parallel call does this; it picks the layer)
    if numba.threading_layer() != "omp":
        return None
    from numba.np.ufunc import omppool

    lib = ctypes.CDLL(omppool.__file__)  # its symbols resolve in the libgomp it links
    if not all(hasattr(lib, name) for name in ("GOMP_parallel", "omp_get_thread_limit")):
        return None
    dynamic = _function(lib, "omp_get_dynamic", ctypes.c_int)
    limit = _function(lib, "omp_get_thread_limit", ctypes.c_int)
    return lib if dynamic() == 0 and limit() >= 1024 else None


I32, I64, VOID = ir.IntType(32), ir.IntType(64), ir.VoidType()
POINTER = ir.IntType(8).as_pointer()
JOB = ir.FunctionType(VOID, [I32, POINTER, I32])  # OpenBLAS's job: (number, its data, extra)
# run_jobs' arguments, what the team's members read: job, jobs, job size, jobs' data, extra
CALL = ir.LiteralStructType([JOB.as_pointer(), I32, I64, POINTER, I32])


def _compile(lib):
    """The callback OpenBLAS calls, run_jobs(sync, job, jobs, size, data, extra), compiled
    for this process straight from LLVM IR (it calls OpenMP's functions and its mutex by
    address): a few milliseconds, where a numba cfunc first sets up numba's whole compiler
    (~0.3 s). Holding the mutex, it has OpenMP run run_member on a team of `jobs` threads."""
    module = ir.Module("nbflow_shared_pool")
    mutex = ctypes.create_string_buffer(64)  # a pthread_mutex_t, zeroed: unlocked
    member = _member(module, _external(lib, "omp_get_thread_num", I32))
    _run_jobs(module, member, lib, ctypes.addressof(mutex))
    compiled = llvm.parse_assembly(str(module))
    compiled.verify()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(compiled, machine)
    engine.finalize_object()
    _STATE["keep"] = (mutex, engine)
    return engine.get_function_address("run_jobs")


def _external(library, name, result, *args):
    """A function calling the C function `name` of `library` by its address: (builder,
    *values) -> the call."""
    kind = ir.FunctionType(result, args).as_pointer()
    address = ir.Constant(I64, ctypes.cast(getattr(library, name), ctypes.c_void_p).value)
    return lambda b, *values: b.call(b.inttoptr(address, kind), values)


def _member(module, thread_number):
    """run_member(call): team member i runs the job numbered i of the CALL record."""
    member = ir.Function(module, ir.FunctionType(VOID, [POINTER]), "run_member")
    b = ir.IRBuilder(member.append_basic_block())
    call = b.bitcast(member.args[0], CALL.as_pointer())
    job, jobs, size, data, extra = (b.load(b.gep(call, [I32(0), I32(k)])) for k in range(5))
    i = thread_number(b)
    with b.if_then(b.icmp_signed("<", i, jobs)):
        b.call(job, [i, b.gep(data, [b.mul(b.sext(i, I64), size)]), extra])
    b.ret_void()
    return member


def _run_jobs(module, member, lib, mutex):
    """run_jobs(sync, job, jobs, size, data, extra): its arguments in a CALL record on its
    stack, the mutex held, run_member(record) on a team of `jobs` threads; inside a team (a
    numba kernel's BLAS call) the nesting limit goes one level deeper for the call."""
    kind = ir.FunctionType(VOID, [I32, JOB.as_pointer(), I32, I64, POINTER, I32])
    run = ir.Function(module, kind, "run_jobs")
    b = ir.IRBuilder(run.append_basic_block())
    call = b.alloca(CALL)
    for k, value in enumerate(run.args[1:]):
        b.store(value, b.gep(call, [I32(0), I32(k)]))
    libc = ctypes.CDLL(None)
    held = b.inttoptr(I64(mutex), POINTER)
    _external(libc, "pthread_mutex_lock", I32, POINTER)(b, held)
    depth = _external(lib, "omp_get_active_level", I32)(b)
    limit = _external(lib, "omp_get_max_active_levels", I32)(b)
    set_limit = _external(lib, "omp_set_max_active_levels", VOID, I32)
    with b.if_then(b.icmp_signed(">", depth, I32(0))):
        set_limit(b, b.add(depth, I32(1)))
    team = _external(lib, "GOMP_parallel", VOID, POINTER, POINTER, I32, I32)
    team(b, b.bitcast(member, POINTER), b.bitcast(call, POINTER), run.args[2], I32(0))
    with b.if_then(b.icmp_signed(">", depth, I32(0))):
        set_limit(b, limit)
    _external(libc, "pthread_mutex_unlock", I32, POINTER)(b, held)
    b.ret_void()


def install(dll) -> bool:
    """Run the OpenBLAS library `dll`'s parallel jobs on numba's OpenMP threads from now on;
    whether they do. Nothing changes where the library has no callback setter (OpenBLAS before
    0.3.27), numba's threads are not GNU OpenMP's, or NBFLOW_BLAS_POOL=openblas."""
    with _LOCK:
        if _STATE["jobs"] is None:
            _STATE["jobs"] = False
            setter = symbol(dll, "openblas_set_threads_callback_function")[0]
            if setter is not None and os.environ.get("NBFLOW_BLAS_POOL", "") != "openblas":
                try:
                    lib = _openmp()
                    if lib is not None:
                        setter.argtypes, setter.restype = [ctypes.c_void_p], None
                        _STATE["set"], _STATE["jobs"] = setter, _compile(lib)
                except Exception:  # (numba's threads or LLVM unavailable: OpenBLAS's own)
                    _STATE["jobs"] = False
        if _STATE["jobs"]:
            _STATE["set"](_STATE["jobs"])
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
