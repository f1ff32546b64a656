"""DLPack: tensors shared with numpy, PyTorch, JAX or CuPy without a copy.

`Tensor.__dlpack__` / `__dlpack_device__` export (a CPU tensor through numpy's own exporter,
which writes the capsule and keeps the buffer alive as long as the consumer holds it; a GPU
tensor through a capsule written here, make_capsule, as numba has no exporter), and
`nbflow.from_dlpack(obj)` imports anything that implements the protocol. A CPU import goes
through `np.from_dlpack`; a GPU import becomes a numba device array over the producer's memory
(by its `__cuda_array_interface__`, or by cuda.core's DLPack reader), so it never visits the host.

What cannot be shared raises DLPackError (a BufferError, as the standard asks) or, for a dtype
nbflow does not hold (uint8, int16, complex, bfloat16, ...), DLPackDTypeError (also a
DTypeError). Writes through either side of a shared buffer bypass nbflow's version counter, as
writes through `Tensor.numpy()` do.
"""

from __future__ import annotations

import numpy as np

from .core import dtypes as dt
from .core.errors import DTypeError, NbflowError

# DLDeviceType codes (dlpack.h)
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
_HOST_READABLE = (CPU, CUDA_HOST, CUDA_MANAGED)


class DLPackError(NbflowError, BufferError):
    """A buffer that cannot be exchanged through DLPack as asked (a device or copy request
    that cannot be met, a read-only buffer for a consumer that cannot be told so)."""


class DLPackDTypeError(DLPackError, DTypeError):
    """A DLPack buffer whose dtype nbflow does not hold."""


def dlpack_device(device) -> tuple[int, int]:
    """A DLPack (device_type, device_id) for an nbflow device name."""
    from .runtime import device as devices

    name = devices.parse(device)
    if name == devices.CPU:
        return (CPU, 0)
    return (CUDA, int(name.split(":")[1]))


def export(t, stream=None, max_version=None, dl_device=None, copy=None):
    """The capsule of a CPU tensor (Tensor.__dlpack__)."""
    a = t._data
    if dl_device is not None and tuple(dl_device) != (CPU, 0):
        raise DLPackError(
            f"__dlpack__: a CPU tensor cannot be exported to device {tuple(dl_device)} "
            "(DLPack does not move data between devices; move it with .to() first)"
        )
    if stream is not None and stream != -1:
        raise DLPackError(f"__dlpack__: stream must be None for a CPU tensor, got {stream!r}")
    if not a.flags.writeable and not copy and (max_version is None or max_version[0] < 1):
        raise DLPackError(
            "__dlpack__: this tensor's buffer is read-only, and a consumer asking for DLPack "
            f"{'0.x' if max_version is None else max_version} cannot be told so; pass "
            "copy=True, export a clone(), or use a consumer of DLPack >= 1.0"
        )
    try:
        if max_version is None:  # a pre-1.0 consumer: the legacy capsule
            return (a.copy() if copy else a).__dlpack__()
        return a.__dlpack__(max_version=tuple(max_version), copy=copy)
    except BufferError as e:
        raise DLPackError(f"__dlpack__: {e}") from e


def _checked_dtype(dtype, where: str):
    try:
        return dt.as_dtype(dtype)
    except (DTypeError, TypeError) as e:
        held = ", ".join(str(d) for d in dt.ALL + dt.COMPLEX)
        raise DLPackDTypeError(
            f"{where}: dtype {dtype} is not one nbflow holds ({held}); convert it on the "
            "producer's side first"
        ) from e


def from_dlpack(x, *, device=None, copy=None):
    """A tensor over the memory of `x`, any object with `__dlpack__` (numpy, PyTorch, JAX,
    CuPy arrays, nbflow tensors): no copy, so a write on one side is seen on the other.

    device: where the result lives (default: where `x` is); asking for another device needs
    a copy, which copy=False refuses (DLPackError) and copy=None or True makes. copy=True
    always copies. A read-only producer (a JAX array) gives a read-only tensor: in-place ops
    on it raise UnsupportedError, clone() it to write."""
    from .eager.tensor import Tensor
    from .runtime import device as devices

    if not hasattr(x, "__dlpack__"):
        if isinstance(x, np.ndarray | np.generic):  # numpy without DLPack: not reached on >= 1.22
            x = np.asarray(x)
        else:
            raise DLPackError(
                f"from_dlpack: {type(x).__name__} does not implement __dlpack__ (use "
                "nbflow.tensor() or nbflow.asarray() to copy it)"
            )
    if hasattr(x, "__dlpack_device__"):
        kind, index = (int(v) for v in x.__dlpack_device__())
    else:
        kind, index = CPU, 0
    if kind in _HOST_READABLE:
        here = devices.CPU
    elif kind == CUDA:
        here = f"cuda:{index}"
    else:
        raise DLPackError(f"from_dlpack: DLPack device type {kind} is not one nbflow can use")
    target = here if device is None else devices.parse(device)
    if target == here:
        return Tensor(_host_import(x, copy)) if here == devices.CPU else _device_import(x, copy)
    if copy is False:
        raise DLPackError(
            f"from_dlpack: the buffer is on {here} and {target} was asked for with copy=False; "
            "moving it needs a copy"
        )
    return from_dlpack(x).to(target)  # (to() copies)


def _host_import(x, copy) -> np.ndarray:
    try:
        a = np.from_dlpack(x, copy=copy)
    except BufferError as e:
        raise DLPackError(f"from_dlpack: {e}") from e
    except (RuntimeError, TypeError) as e:  # numpy: "Unsupported dtype in DLTensor"
        if "dtype" in str(e):
            raise DLPackDTypeError(
                f"from_dlpack: the buffer's dtype is not one nbflow holds ({e})"
            ) from e
        raise DLPackError(f"from_dlpack: {e}") from e
    _checked_dtype(a.dtype, "from_dlpack")
    return a.view(np.ndarray)


def _device_import(x, copy):
    """A numba device array over a GPU producer's memory (no host round trip)."""
    from .eager.device_tensor import CudaTensor
    from .runtime import device as devices

    cuda = devices.cuda()
    if hasattr(x, "__cuda_array_interface__"):
        desc = x.__cuda_array_interface__
        _checked_dtype(np.dtype(desc["typestr"]), "from_dlpack")
        if devices.simulator():
            arr = _simulated(desc, x)
        else:
            arr = cuda.from_cuda_array_interface(desc, owner=x, sync=True)
    else:
        from numba.cuda.cudadrv.devicearray import _make_strided_memory_view

        smv = _make_strided_memory_view(x, stream_ptr=-1)
        dtype = _checked_dtype(np.dtype(smv.dtype), "from_dlpack")
        itemsize = dtype.itemsize
        strides = smv.strides
        desc = {
            "shape": tuple(smv.shape),
            "strides": None if strides is None else tuple(s * itemsize for s in strides),
            "typestr": dtype.str,
            "data": (int(smv.ptr), bool(getattr(smv, "readonly", False))),
            "version": 3,
        }
        arr = cuda.from_cuda_array_interface(desc, owner=smv, sync=False)
    t = CudaTensor(arr)
    return t.clone() if copy else t


def export_device(t, stream=None, max_version=None, dl_device=None, copy=None):
    """A GPU tensor's __dlpack__: a capsule written here (make_capsule) over the device
    array's memory, after the device has finished the work queued on it; dl_device=(1, 0)
    gives a host copy (refused under copy=False)."""
    from .runtime import device as devices

    here = dlpack_device(t.device)
    if dl_device is not None and tuple(dl_device) == (CPU, 0):
        if copy is False:
            raise DLPackError(
                "__dlpack__: a GPU tensor exported to the CPU needs a copy; copy=False refuses it"
            )
        return export(t.cpu(), stream=None, max_version=max_version, copy=None)
    if dl_device is not None and tuple(dl_device) != here:
        raise DLPackError(f"__dlpack__: a tensor on {here} cannot be exported to {dl_device}")
    if copy:
        t = t.clone()
    if not devices.simulator():
        devices.cuda().synchronize()  # the consumer's stream then sees the finished values
    desc = cuda_array_interface(t._data)
    ptr, read_only = desc["data"]
    return make_capsule(
        ptr, desc["shape"], desc.get("strides"), np.dtype(desc["typestr"]), here, t._data,
        max_version, read_only,
    )  # fmt: skip


def cuda_array_interface(a) -> dict:
    """`__cuda_array_interface__` (version 3) of a numba device array or, under the
    simulator, of its stand-in: the wrapped host array's address."""
    from .runtime import device as devices

    if not devices.simulator():
        return a.__cuda_array_interface__
    host = a._ary
    desc = dict(host.__array_interface__)
    return {
        "shape": tuple(host.shape),
        "strides": None if host.flags.c_contiguous else tuple(host.strides),
        "typestr": host.dtype.str,
        "data": desc["data"],
        "version": 3,
        "stream": None,
    }


class _Interface:
    """A host array interface over a simulated device pointer, keeping its owner alive."""

    def __init__(self, desc, owner):
        self.__array_interface__ = {
            "shape": desc["shape"],
            "strides": desc.get("strides"),
            "typestr": desc["typestr"],
            "data": desc["data"],
            "version": 3,
        }
        self.owner = owner


def _simulated(desc, owner):
    """The simulator's stand-in over the memory `desc` points at (no copy)."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    return FakeCUDAArray(np.asarray(_Interface(desc, owner)))


# ------------------------------------------------------------------ a capsule written here
# numba's device arrays have no DLPack exporter, so a GPU tensor's capsule is written by hand
# (dlpack.h's structs through ctypes); tests/test_dlpack.py checks the writer on host memory,
# which numpy reads back, and bench/gpu_check.py on a GPU with PyTorch.

_LIVE: dict[int, tuple] = {}  # the address of a managed tensor -> what it keeps alive


def _structs():
    import ctypes as c

    class DLDevice(c.Structure):
        _fields_ = [("device_type", c.c_int32), ("device_id", c.c_int32)]

    class DLDataType(c.Structure):
        _fields_ = [("code", c.c_uint8), ("bits", c.c_uint8), ("lanes", c.c_uint16)]

    class DLTensor(c.Structure):
        _fields_ = [
            ("data", c.c_void_p),
            ("device", DLDevice),
            ("ndim", c.c_int32),
            ("dtype", DLDataType),
            ("shape", c.POINTER(c.c_int64)),
            ("strides", c.POINTER(c.c_int64)),
            ("byte_offset", c.c_uint64),
        ]

    deleter_type = c.CFUNCTYPE(None, c.c_void_p)

    class DLManagedTensor(c.Structure):
        _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c.c_void_p), ("deleter", deleter_type)]

    class DLPackVersion(c.Structure):
        _fields_ = [("major", c.c_uint32), ("minor", c.c_uint32)]

    class DLManagedTensorVersioned(c.Structure):
        _fields_ = [
            ("version", DLPackVersion),
            ("manager_ctx", c.c_void_p),
            ("deleter", deleter_type),
            ("flags", c.c_uint64),
            ("dl_tensor", DLTensor),
        ]

    @deleter_type
    def deleter(address):
        _LIVE.pop(address, None)

    destructor_type = c.CFUNCTYPE(None, c.c_void_p)
    api = c.pythonapi
    api.PyCapsule_New.restype = c.py_object
    api.PyCapsule_New.argtypes = [c.c_void_p, c.c_char_p, destructor_type]
    api.PyCapsule_IsValid.restype = c.c_int
    api.PyCapsule_IsValid.argtypes = [c.c_void_p, c.c_char_p]
    api.PyCapsule_GetPointer.restype = c.c_void_p
    api.PyCapsule_GetPointer.argtypes = [c.c_void_p, c.c_char_p]
    names = {False: b"dltensor", True: b"dltensor_versioned"}

    def destructor_for(versioned):
        @destructor_type
        def destructor(capsule):
            name = names[versioned]
            if api.PyCapsule_IsValid(capsule, name):  # never consumed: free it here
                _LIVE.pop(api.PyCapsule_GetPointer(capsule, name), None)

        return destructor

    destructors = {v: destructor_for(v) for v in (False, True)}
    return {
        "c": c,
        "DLDevice": DLDevice,
        "DLDataType": DLDataType,
        "DLTensor": DLTensor,
        "managed": {False: DLManagedTensor, True: DLManagedTensorVersioned},
        "deleter": deleter,
        "destructors": destructors,
        "names": names,
        "api": api,
    }


_STRUCTS: dict = {}
_CODES = {"b": 6, "i": 0, "u": 1, "f": 2}  # kDLBool, kDLInt, kDLUInt, kDLFloat


def make_capsule(ptr, shape, strides, dtype, device, owner, max_version=None, read_only=False):
    """A DLPack capsule over `ptr` (strides in bytes, or None for C order) that keeps `owner`
    alive until the consumer's deleter runs (or the capsule dies unconsumed)."""
    if not _STRUCTS:
        _STRUCTS.update(_structs())
    s = _STRUCTS
    c = s["c"]
    dtype = np.dtype(dtype)
    versioned = max_version is not None and max_version[0] >= 1
    ndim = len(shape)
    shape_arr = (c.c_int64 * max(ndim, 1))(*shape)
    if strides is None:  # C order, written out (DLPack >= 1.2 deprecates NULL strides)
        strides = [dtype.itemsize] * ndim
        for i in range(ndim - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
    strides_arr = (c.c_int64 * max(ndim, 1))(*(b // dtype.itemsize for b in strides))
    managed = s["managed"][versioned]()
    t = managed.dl_tensor
    t.data = ptr
    t.device = s["DLDevice"](*device)
    t.ndim = ndim
    t.dtype = s["DLDataType"](_CODES[dtype.kind], dtype.itemsize * 8, 1)
    t.shape = c.cast(shape_arr, c.POINTER(c.c_int64))
    t.strides = c.cast(strides_arr, c.POINTER(c.c_int64))
    t.byte_offset = 0
    managed.deleter = s["deleter"]
    if versioned:
        managed.version.major, managed.version.minor = 1, 0
        managed.flags = 1 if read_only else 0  # DLPACK_FLAG_BITMASK_READ_ONLY
    address = c.addressof(managed)
    _LIVE[address] = (managed, shape_arr, strides_arr, owner)
    return s["api"].PyCapsule_New(address, s["names"][versioned], s["destructors"][versioned])
