"""Devices: "cpu", "cuda" and "cuda:N"; moving arrays between the host and a GPU.

A GPU array is a numba device array (it exposes `__cuda_array_interface__`; the CUDA
simulator's stand-in wraps a numpy array). numba-cuda is optional (the `cuda` extra) and is
imported only when a device other than the CPU is asked for, so the CPU path never pays for it.
Set NUMBA_ENABLE_CUDASIM=1 before numba is first imported to run the GPU path without a GPU.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ..core import overlaps_partly as host_overlaps_partly
from ..core.errors import NbflowError, UnsupportedError

CPU = "cpu"
_NAME = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


class DeviceError(NbflowError, ValueError):
    """A device name nbflow does not know, or values on two devices used together."""


def parse(device) -> str:
    """The canonical name of a device: "cpu" or "cuda:N" ("cuda" is "cuda:0")."""
    if device is None:
        return CPU
    name = str(device)
    m = _NAME.match(name)
    if m is None:
        raise DeviceError(f"unknown device {device!r} (use 'cpu', 'cuda' or 'cuda:N')")
    kind, index = m.groups()
    if kind == CPU:
        if index is not None:
            raise DeviceError(f"unknown device {device!r}: the CPU has no index")
        return CPU
    return f"cuda:{int(index or 0)}"


def kind(device: str) -> str:
    """The kernel slot of a device: "cpu" or "cuda" (an op's kernels are keyed by it)."""
    return device.split(":", 1)[0]


@functools.cache
def cuda():
    """numba's CUDA module, or UnsupportedError saying what is missing."""
    try:
        from numba import cuda as numba_cuda
    except ImportError as e:  # pragma: no cover - numba ships a cuda module
        raise UnsupportedError(f"CUDA needs numba-cuda (pip install 'nbflow[cuda]'): {e}") from e
    if not (simulator() or numba_cuda.is_available()):
        raise UnsupportedError(
            "no CUDA device is available (install numba-cuda with pip install 'nbflow[cuda]', "
            "check the NVIDIA driver, or set NUMBA_ENABLE_CUDASIM=1 before importing numba to "
            "use the simulator)"
        )
    return numba_cuda


def simulator() -> bool:
    """Whether numba runs CUDA kernels in its Python simulator (NUMBA_ENABLE_CUDASIM=1)."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


def check_gpu(device: str):
    """Check that `device` is the one GPU nbflow uses: cuda:0 (kernels run on numba's current
    device, so tensors on two GPUs would need a device switch at every launch)."""
    cuda()
    if device != "cuda:0":
        raise UnsupportedError(
            f"{device}: one GPU per process is supported yet, cuda:0 (choose another GPU with "
            "CUDA_VISIBLE_DEVICES)"
        )


def is_device_array(a) -> bool:
    """A GPU array (numba's device array or the simulator's stand-in), not a numpy array."""
    return type(a) is not np.ndarray and (
        hasattr(a, "__cuda_array_interface__") or hasattr(a, "__cuda_ndarray__")
    )


def device_of(a) -> str:
    """The device holding array `a`."""
    return CPU if type(a) is np.ndarray else "cuda:0"


def to_device(array: np.ndarray, device: str):
    """A contiguous copy of host `array` on GPU `device`."""
    check_gpu(device)
    return cuda().to_device(np.asarray(array, order="C"))  # ascontiguousarray makes 0-d 1-d


def to_host(a) -> np.ndarray:
    """A host copy of a GPU array (numpy arrays are returned as they are)."""
    if type(a) is np.ndarray:
        return a
    if simulator():
        return np.array(a._ary)  # copy_to_host of a strided stand-in keeps its strides
    if not (a.is_c_contiguous() or a.is_f_contiguous()):
        from ..kernels.cuda import skeletons as cuda_impl

        a = cuda_impl.contiguous(a)
    return a.copy_to_host()


def empty(shape, dtype, device: str = "cuda:0"):
    """An uninitialised GPU array."""
    return cuda().device_array(tuple(shape), np.dtype(dtype))


def as_strided(a, shape, strides, offset: int = 0):
    """A view of GPU array `a` with element `offset` (in bytes, >= 0), `shape` and byte
    `strides` (>= 0), sharing its memory: how views and broadcasts are made on the GPU."""
    if simulator():  # the stand-in wraps a numpy array (view_like never needs an offset here)
        assert offset == 0, "offset views in the simulator go through view_like"
        return type(a)(np.lib.stride_tricks.as_strided(a._ary, shape, strides))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    nbytes = _extent(shape, strides, a.dtype.itemsize)
    data = a.gpu_data.view(offset, offset + nbytes) if nbytes else a.gpu_data
    return DeviceNDArray(shape, strides, a.dtype, gpu_data=data)


def _extent(shape, strides, itemsize) -> int:
    if 0 in shape:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def _span(a) -> tuple[int, int]:
    start = a.device_ctypes_pointer.value
    return start, start + _extent(a.shape, a.strides, a.dtype.itemsize)


def repeats_elements(a) -> bool:
    """Whether GPU array a is a broadcast view (a zero stride over more than one element)."""
    return any(s == 0 and n > 1 for n, s in zip(a.shape, a.strides))


def shares_memory(a, b) -> bool:
    """Whether GPU arrays a and b may share memory (their byte ranges meet), as
    np.may_share_memory."""
    if a.size == 0 or b.size == 0:
        return False
    if simulator():
        return np.may_share_memory(a._ary, b._ary)
    (start_a, end_a), (start_b, end_b) = _span(a), _span(b)
    return start_a < end_b and start_b < end_a


def overlaps_partly(a, b) -> bool:
    """Whether GPU arrays a and b share memory other than as one and the same view (their
    byte ranges meet: interleaved views count as overlapping, which only costs a copy)."""
    if a is b or not shares_memory(a, b):
        return False
    if simulator():
        return host_overlaps_partly(a._ary, b._ary)
    return not (a.shape == b.shape and a.strides == b.strides and _span(a) == _span(b))


def view_like(view_fn, a, *args, **kwargs):
    """Apply a numpy view function (reshape, transpose, slicing...) to GPU array `a`.

    The function runs on a host stand-in with `a`'s shape and strides; the view it returns
    (shape, strides, offset) is then made on the GPU. A result that is not a view (numpy
    copied, or has negative strides) comes back as None, and the caller copies instead."""
    if simulator():  # the same answers as on a GPU, negative strides refused too
        result = view_fn(a._ary, *args, **kwargs)
        results = result if isinstance(result, (tuple, list)) else (result,)
        if any(s < 0 for r in results for s in r.strides):
            return None
        if isinstance(result, (tuple, list)):
            return tuple(type(a)(r) for r in result)
        return type(a)(result)
    itemsize = a.dtype.itemsize
    if any(s < 0 for s in a.strides):
        return None
    span = max(_extent(a.shape, a.strides, itemsize), itemsize)
    buffer = np.empty(span, np.uint8)  # never read: numpy views only look at the layout
    stand_in = np.ndarray(a.shape, a.dtype, buffer=buffer, strides=a.strides)
    result = view_fn(stand_in, *args, **kwargs)
    results = result if isinstance(result, (tuple, list)) else (result,)
    start = buffer.__array_interface__["data"][0]
    views = []
    for r in results:
        if r.size and not np.shares_memory(r, buffer):
            return None
        if any(s < 0 for s in r.strides):
            return None
        offset = r.__array_interface__["data"][0] - start if r.size else 0
        views.append(as_strided(a, r.shape, r.strides, offset))
    return tuple(views) if isinstance(result, (tuple, list)) else views[0]


def broadcast(a, shape):
    """GPU array `a` broadcast to `shape` (a view with zero strides)."""
    return view_like(np.broadcast_to, a, tuple(shape))
