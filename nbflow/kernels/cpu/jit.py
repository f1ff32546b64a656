"""numba's `@njit` for nbflow's CPU kernels, loading them from the disk cache with less set-up.

Before numba loads a cached kernel it refreshes its CPU target: it imports and installs every
lowering registry (all of numba.np and numba.cpython, scipy.linalg through numba's BLAS check,
third-party extensions), 0.3-0.45 s of a fresh process here that only compiling needs. A
kernel loaded from the cache needs numba's runtime (NRT) alone, so nbflow's kernels load with
that: a warm start of the first MLP step goes 1.4 -> 0.9 s. Compiling is untouched: numba's
compiler refreshes the target itself before every compile, so a cache miss, or any other
numba function, sees the whole target as before.
"""

from __future__ import annotations

import functools
import types

import numba
from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys

# the private parts of numba's Cache this relies on (numba 0.60-0.68); without them numba's
# own load runs
_PRIVATE = ("_load_overload", "_guard_against_spurious_io_errors")
_QUICK = all(hasattr(FunctionCache, name) for name in _PRIVATE)


class QuickLoadCache(FunctionCache):
    """numba's function cache, loading without the target refresh (module doc)."""

    def load_overload(self, sig, target_context):
        if not _QUICK:
            return super().load_overload(sig, target_context)
        rtsys.initialize(target_context)  # what the refresh did that a loaded kernel needs
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        # (None when the guard swallowed an I/O error: numba compiles instead)


class FirstUseCache:
    """A kernel's QuickLoadCache, made when the dispatcher first asks for it: locating a
    function's cache directory stats and tries several paths, ~0.3 ms for each of ~90
    kernels at import."""

    def __init__(self, fn):
        self._fn = fn
        self._cache = None

    def __getattr__(self, name):  # load_overload, save_overload, flush, cache_path
        if self._cache is None:
            self._cache = QuickLoadCache(self._fn)
        return getattr(self._cache, name)


def njit(**options):
    """`numba.njit(**options)` as a decorator; with `cache=True` the kernel's cache is a
    QuickLoadCache (made on first use)."""
    cache = options.pop("cache", False)

    def decorate(fn):
        dispatcher = numba.njit(**options)(fn)
        if cache:
            dispatcher._cache = FirstUseCache(fn)  # where enable_caching() puts numba's
        return dispatcher

    return decorate


@functools.cache
def threaded(kernel):
    """A twin of the cached numba kernel `kernel` compiled with parallel=True: its prange
    loops (plain loops in `kernel`) run over numba's threads. numba's disk cache keys a
    kernel by its qualified name and line, not by its flags, so the twin takes a name of its
    own ("<name>_threaded") or the two would load each other's code."""
    fn = kernel.py_func
    name = fn.__name__ + "_threaded"
    twin = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__ = fn.__qualname__ + "_threaded", fn.__module__
    options = {k: v for k, v in kernel.targetoptions.items() if k != "nopython"}
    return njit(cache=True, parallel=True, **options)(twin)
