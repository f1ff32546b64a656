"""Large output buffers, recycled across calls once nothing references them.

A fresh buffer costs page faults when it is first written, and on these virtual machines a
page fault is sometimes very dear: a 16 MiB output took 2-4 ms of faults on top of a 1.6 ms
kernel, and in some minutes 20-30 ms (measured: the same kernel into a reused buffer stayed at
1.6 ms). numpy leaves this to malloc, which returns such buffers to the system when they are
freed (from 128 KiB up: see MIN_BYTES). So outputs of at least MIN_BYTES come from `empty`,
which keeps each buffer it made and hands it out again once no array or Tensor refers to it
any more (CPython's reference count says so exactly: whoever still holds a view holds the
buffer). A kept buffer that nobody uses
is memory nbflow holds on to, at most `NBFLOW_BUFFER_CACHE_BYTES` (default 1 GiB) in all;
`nbflow.empty_cache()` lets go of it, as `torch.cuda.empty_cache()` does on the GPU.
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np

# glibc's malloc maps allocations from 128 KiB (its default threshold) freshly from the system
# and unmaps them on free, so each one faults again: a 784x256 float32 weight gradient (784 KiB)
# cost 115 faults and 0.6 ms in each eager MLP step (2.0 ms against 1.4 ms when recycled)
MIN_BYTES = 1 << 17


def _cache_bytes() -> int:
    text = os.environ.get("NBFLOW_BUFFER_CACHE_BYTES", "")
    return int(text) if text.isdigit() else 1 << 30


CACHE_BYTES = _cache_bytes()
_kept: list[np.ndarray] = []  # the raw byte buffers made here, oldest first
_kept_bytes = 0
_lock = threading.Lock()


def _unused(i: int) -> bool:
    """Whether nothing but this module refers to the kept buffer i. Its references: the
    _kept list and getrefcount's argument (so no local name may hold it when asking)."""
    return sys.getrefcount(_kept[i]) <= 2


def empty(shape, dtype) -> np.ndarray:
    """np.empty(shape, dtype), from a recycled buffer when one of the size is unused."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES or dtype.hasobject:
        return np.empty(shape, dtype)
    with _lock:  # two threads must not both find one buffer unused
        for i in range(len(_kept)):
            if _kept[i].nbytes == nbytes and _unused(i):
                return _kept[i].view(dtype).reshape(shape)
        return _keep(np.empty(nbytes, np.uint8)).view(dtype).reshape(shape)


def _keep(raw: np.ndarray) -> np.ndarray:
    """Track a new buffer, dropping the oldest tracked ones (in use or not) past the limit."""
    global _kept_bytes
    while _kept and _kept_bytes + raw.nbytes > CACHE_BYTES:
        _kept_bytes -= _kept.pop(0).nbytes  # still in use: its holders keep it alive
    if raw.nbytes <= CACHE_BYTES:
        _kept.append(raw)
        _kept_bytes += raw.nbytes
    return raw


def empty_cache() -> int:
    """Let go of the kept buffers nothing uses (they are freed); returns the bytes released."""
    global _kept_bytes
    with _lock:
        unused = {i for i in range(len(_kept)) if _unused(i)}
        released = sum(_kept[i].nbytes for i in unused)
        _kept[:] = [_kept[i] for i in range(len(_kept)) if i not in unused]
        _kept_bytes -= released
    return released
