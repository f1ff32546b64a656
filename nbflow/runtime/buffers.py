"""Large output buffers, recycled across calls once nothing references them.

A fresh buffer costs page faults when it is first written, and on these virtual machines a
page fault is sometimes very dear: a 16 MiB output took 2-4 ms of faults on top of a 1.6 ms
kernel, and in some minutes 20-30 ms (measured: the same kernel into a reused buffer stayed at
1.6 ms). numpy leaves this to malloc, which returns such buffers to the system when they are
freed (from 128 KiB up: see MIN_BYTES). So outputs of at least MIN_BYTES come from `empty`,
which keeps each buffer it made and hands it out again once no array or Tensor refers to it
any more (CPython's reference count says so exactly: whoever still holds a view holds the
buffer). A kept buffer that nobody uses is memory nbflow holds on to, at most
`NBFLOW_BUFFER_CACHE_BYTES` (default 1 GiB) in all; `nbflow.empty_cache()` lets go of it, as
`torch.cuda.empty_cache()` does on the GPU. Buffers are matched by exact size only.
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np

from ..core.errors import ResourceExhaustedError

# glibc's malloc maps allocations from 128 KiB (its default threshold) freshly from the system
# and unmaps them on free, so each one faults again (an eager MLP step's weight gradients did,
# in every step)
MIN_BYTES = 1 << 17


def _cache_bytes() -> int:
    text = os.environ.get("NBFLOW_BUFFER_CACHE_BYTES", "")
    return int(text) if text.isdigit() else 1 << 30


CACHE_BYTES = _cache_bytes()
_kept: dict[int, list[np.ndarray]] = {}  # byte size -> the raw buffers of that size made here
_kept_bytes = 0
_lock = threading.Lock()


def _unused(same_size: list, i: int) -> bool:
    """Whether nothing but this module refers to buffer i of a size class. Its references:
    the list and getrefcount's argument (so no local name may hold it when asking)."""
    return sys.getrefcount(same_size[i]) <= 2


def empty(shape, dtype) -> np.ndarray:
    """np.empty(shape, dtype), from a recycled buffer when one of the size is unused."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES or dtype.hasobject:
        return np.empty(shape, dtype)
    with _lock:  # two threads must not both find one buffer unused
        same_size = _kept.get(nbytes, ())
        for i in range(len(same_size)):
            if _unused(same_size, i):
                return same_size[i].view(dtype).reshape(shape)
        raw = _fresh(nbytes, shape, dtype)
        if _make_room(nbytes):
            _keep(raw)
        return raw.view(dtype).reshape(shape)


def _fresh(nbytes: int, shape, dtype) -> np.ndarray:
    """A new raw buffer of nbytes; the system's refusal (past the memory there is, or a
    process limit) as nbflow's ResourceExhaustedError, a MemoryError naming the size, where
    the memory budget (nbflow.set_memory_budget, unlimited by default) let it through."""
    try:
        return np.empty(nbytes, np.uint8)
    except MemoryError:
        raise ResourceExhaustedError(
            f"cannot allocate {nbytes} bytes for an output of shape {tuple(shape)} {dtype} "
            "(nbflow.set_memory_budget refuses such outputs before they are tried)"
        ) from None


def _keep(raw: np.ndarray):
    global _kept_bytes
    _kept.setdefault(raw.nbytes, []).append(raw)
    _kept_bytes += raw.nbytes


def _make_room(nbytes: int) -> bool:
    """Whether a new buffer of nbytes may be kept: past the limit, the unused buffers are
    freed first, then the oldest size classes' buffers stop being tracked (their holders keep
    them alive)."""
    global _kept_bytes
    if nbytes > CACHE_BYTES:
        return False
    if _kept_bytes + nbytes > CACHE_BYTES:
        _release_unused()
    while _kept_bytes + nbytes > CACHE_BYTES:
        size, same_size = next(iter(_kept.items()))  # the oldest size class
        same_size.pop(0)
        _kept_bytes -= size
        if not same_size:
            del _kept[size]
    return True


def _release_unused() -> int:
    global _kept_bytes
    released = 0
    for size, same_size in list(_kept.items()):
        used = [same_size[i] for i in range(len(same_size)) if not _unused(same_size, i)]
        released += size * (len(same_size) - len(used))
        if used:
            same_size[:] = used
        else:
            del _kept[size]
    _kept_bytes -= released
    return released


def empty_cache() -> int:
    """Let go of the kept buffers nothing uses (they are freed); returns the bytes released."""
    with _lock:
        return _release_unused()


def zeros(shape, dtype) -> np.ndarray:
    """np.zeros(shape, dtype) in a recycled buffer (scratch zeroed on each call)."""
    out = empty(shape, dtype)
    out.fill(0)
    return out


def contiguous(a: np.ndarray) -> np.ndarray:
    """`a` in C order: itself when it is, else a copy into a recycled buffer (a strided view
    made contiguous in every step, an attention layer's heads, would fault fresh pages)."""
    if a.flags.c_contiguous:
        return a
    out = empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def reshaped(a: np.ndarray, shape) -> np.ndarray:
    """np.reshape(a, shape): a view where the layout allows it, else a copy into a recycled
    buffer (numpy >= 2.1: reshape's copy=False refuses to copy)."""
    try:
        return np.reshape(a, shape, copy=False)
    except ValueError:  # the layout needs a copy
        return contiguous(a).reshape(shape)
