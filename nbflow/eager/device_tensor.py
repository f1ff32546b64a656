"""Tensors on a GPU, and how eager mode runs an op on them.

A CudaTensor is a Tensor whose buffer is a numba device array. An op with a GPU input runs
through the CPU's sequence (tensor.py's EagerTrace.apply): the same shape rule, plan cache,
weak scalars, casts and tape node, with what differs on the device in DevicePlan below (the
kernel, where outputs are allocated, how scalars and casts are made, which views are read-only).
"""

from __future__ import annotations

import functools

import numpy as np

from ..core import STATE, Op
from ..core import dtypes as dt
from ..core.errors import ArgumentError, KernelNotFoundError, ShapeError
from ..runtime import device as devices
from ..runtime.device import DeviceError
from .printing import tensor_repr
from .tensor import DEVICE_TENSORS, Plan, Tensor, signature


class CudaTensor(Tensor):
    """A tensor on a GPU: `data` is a numba device array (`__cuda_array_interface__`)."""

    __slots__ = ()

    @property
    def data(self):
        """The numba device array itself (GPU tensors take no cached signature)."""
        return self._data

    @data.setter
    def data(self, array):
        if not devices.is_device_array(array):
            raise ArgumentError(
                f"a GPU tensor's data is a device array, got {type(array).__name__}"
            )
        self._data = array

    @property
    def device(self) -> str:
        return devices.device_of(self._data)

    def numpy(self) -> np.ndarray:
        """A host copy (the GPU buffer cannot be shared with numpy)."""
        return devices.to_host(self._data)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The device array's interface: CuPy, PyTorch and numba read the buffer in place.
        (Under numba's simulator, whose stand-in wraps a host array, the "device" pointer is
        that array's host address, so the import side can be tested without a GPU.)"""
        from ..dlpack import cuda_array_interface

        return cuda_array_interface(self._data)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from ..dlpack import export_device

        return export_device(self, stream, max_version, dl_device, copy)

    def item(self):
        if self._data.size != 1:
            raise ShapeError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ShapeError(
                f"the truth value of a tensor with shape {self.shape} is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.numpy().reshape(()))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    def plain(self) -> CudaTensor:
        """A leaf with a C-contiguous buffer (this buffer when it is one already)."""
        from ..kernels.cuda.loader import impl

        return CudaTensor(impl().contiguous(self._data))

    def __repr__(self) -> str:
        return tensor_repr(self, self.numpy(), self.device)


def wrap(data, *args, **kwargs) -> Tensor:
    """A Tensor or CudaTensor around `data`, by where it lives."""
    cls = Tensor if type(data) is np.ndarray else CudaTensor
    return cls(data, *args, **kwargs)


def move(t: Tensor, device) -> Tensor:
    """`t` on `device` (t itself when it is there already). A leaf keeps requires_grad (the
    copy is a leaf too: `nb.tensor(x, requires_grad=True).cuda()` is a parameter on the GPU);
    a computed tensor's move is recorded, so its gradient moves back (as PyTorch's `to`)."""
    target = devices.parse(device)
    if t.device == target:
        return t
    if target == devices.CPU:
        out = Tensor(np.array(devices.to_host(t._data)))
    else:
        host = t._data if type(t._data) is np.ndarray else devices.to_host(t._data)
        out = CudaTensor(devices.to_device(host, target))
    if t._node is None:
        out.requires_grad = t.requires_grad
    elif STATE.grad_enabled:
        STATE.trace.record(_Move(t.device), [t], {}, [out])
    return out


class _Move:
    """The op of a recorded device move (duck-typed, like a jit call's: the backward driver
    needs `name`, `inplace` and `grad`): the gradient is the output's, moved back."""

    inplace: dict = {}

    def __init__(self, source: str):
        self.name, self.source = f"to({source})", source

    def grad(self, g, out, x):
        return (move(g, self.source),)


# ---------------------------------------------------------------- running ops

_SCALARS: dict = {}  # (value, dtype, device) -> a 0-d device array: weak scalars, uploaded once

# Ops whose inputs from this position on may come from another device (moved over), as in
# PyTorch: x[[0, 2]] indexes a GPU tensor (the index arrays are read on the host anyway), x[0] =
# a CPU value writes it, and copy_ copies across devices either way (load_state_dict of a GPU
# state into a CPU model, or of a CPU state into a GPU model). The op runs on the device of the
# inputs before that position (the tensor indexed or written).
HOST_INDEX_INPUTS = {"index": 1, "index_put": 1, "index_put_": 1, "copy_": 1}


class DevicePlan(Plan):
    """A Plan on a GPU, run by the CPU's sequence (tensor.py's EagerTrace.apply): the kernel
    chosen by (op, "cuda", dtype), outputs allocated on the device, float16 computed natively
    (no float32 round trips as on the CPU), and no memory budget nor CPU shortcuts. Cached on
    the op under keys that start with the device's name (signature): the two never mix."""

    __slots__ = ("device",)
    tensor_type = CudaTensor
    computed_in: dict = {}  # every dtype computed in itself, float16 too
    shares_memory = staticmethod(devices.shares_memory)
    overlaps_partly = staticmethod(devices.overlaps_partly)

    def __init__(self, op: Op, values, attrs):
        self.device = next(v.device for v in values if type(v) is CudaTensor)
        super().__init__(op, values, attrs)

    def prepare(self, op: Op, specs, attrs):
        """The op's CUDA kernel (complex is refused: the CPU first, issue 39)."""
        if any(s.dtype.kind == "c" for s in (*specs, *self.specs)):
            real = tuple(str(d) for d in op.dtypes if d.kind != "c")
            raise KernelNotFoundError(op.name, "cuda", "complex (CPU only so far)", real)
        self.launcher = op.kernel("cuda", self.key)
        self.single, self.fast, self.scalar_loop = False, None, None
        self.alloc = functools.partial(devices.empty, device=self.device)

    def scalar(self, value, dtype) -> CudaTensor:
        key = (type(value), value, dtype, self.device)
        a = _SCALARS.get(key)
        if a is None:
            if len(_SCALARS) > 4096:
                _SCALARS.clear()
            a = _SCALARS[key] = devices.to_device(np.asarray(dt.scalar(value, dtype)), self.device)
        return CudaTensor(a)

    def cast(self, array, dtype):
        from ..kernels.cuda.loader import impl

        return impl().contiguous(array, dtype)

    def copy(self, array):
        """A fresh C-contiguous copy of GPU array `array`."""
        from ..kernels.cuda.loader import impl

        copy = devices.empty(array.shape, array.dtype, self.device)
        impl().copy_into(array, copy)
        return copy

    def writable(self, array) -> bool:
        return not devices.repeats_elements(array)  # a broadcast view's threads would race

    @staticmethod
    def signature(op: Op, args):
        """(args, the plan cache key) of an op with a GPU tensor among `args`: the device's
        name, then each tensor's shape and dtype and each scalar's type. The inputs of
        HOST_INDEX_INPUTS are moved to the device first (a recorded move: the gradient goes
        back); written or indexed on the CPU, they key a CPU plan."""
        device = _device_of_args(op, args)
        if op.name in HOST_INDEX_INPUTS:
            args = [a.to(device) if isinstance(a, Tensor) else a for a in args]
            if device == devices.CPU:
                return args, signature(args)
        specs = (
            (tuple(v._data.shape), v._data.dtype) if isinstance(v, Tensor) else type(v)
            for v in args
        )
        return args, (device, *specs)


DEVICE_TENSORS[CudaTensor] = DevicePlan


def _device_of_args(op, args) -> str:
    device = None
    for v in args[: HOST_INDEX_INPUTS.get(op.name, len(args))]:
        if isinstance(v, Tensor):
            d = v.device
            if device is None:
                device = d
            elif d != device:
                raise DeviceError(
                    f"{op.name}: expected all tensors on one device, got {device} and {d} "
                    "(move them with .to(device))"
                )
    return device
