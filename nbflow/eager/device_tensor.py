"""Tensors on a GPU, and how eager mode runs an op on them.

A CudaTensor is a Tensor whose buffer is a numba device array. The eager trace hands every op
that has a GPU input to `apply` below (tensor.py's general path: CPU calls never come here).
It mirrors the CPU path: shape rule, kernel chosen by (op, "cuda", dtype), outputs allocated on
the device, the same tape node. On the GPU float16 is computed natively, so there are no
float16 round trips through float32 as on the CPU.
"""

from __future__ import annotations

import numpy as np

from ..core import STATE, Op, Spec
from ..core import dtypes as dt
from ..core.errors import ArgumentError, KernelNotFoundError, NbflowError, ShapeError
from ..core.views import RESHAPES, refresh_if_stale
from ..runtime import device as devices
from ..runtime.device import DeviceError
from .printing import tensor_repr
from .tensor import (
    DEVICE_TENSORS,
    Tensor,
    _in_op,
    check_recorded_writes,
    read_only,
    version_counter,
    view_outputs,
)


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


DEVICE_TENSORS.add(CudaTensor)


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


class DevicePlan:
    """What running an op on one GPU input signature needs (cached on the op like the CPU
    plans, under keys that start with the device name, so the two never mix)."""

    __slots__ = ("specs", "key", "launcher", "casts", "scalars")

    def __init__(self, op: Op, specs, attrs):
        self.specs = op.infer(specs, attrs)
        key = op.key_dtype(specs) if specs else None
        self.key = self.specs[0].dtype if key is None else key
        if any(s.dtype.kind == "c" for s in (*specs, *self.specs)):  # (issue 39: CPU first)
            real = tuple(str(d) for d in op.dtypes if d.kind != "c")
            raise KernelNotFoundError(op.name, "cuda", "complex (CPU only so far)", real)
        self.launcher = op.kernel("cuda", self.key)
        promoted = range(len(specs)) if op.promote is None else op.promote
        self.scalars = tuple(
            (i, self.key if i in promoted else s.dtype) for i, s in enumerate(specs) if s.weak
        )
        self.casts = tuple(
            (i, self.key) for i in promoted if not specs[i].weak and specs[i].dtype != self.key
        )


_SCALARS: dict = {}  # (value, dtype, device) -> a 0-d device array: weak scalars, uploaded once


def _device_scalar(value, dtype, device):
    key = (type(value), value, dtype, device)
    a = _SCALARS.get(key)
    if a is None:
        if len(_SCALARS) > 4096:
            _SCALARS.clear()
        a = _SCALARS[key] = devices.to_device(np.asarray(dt.scalar(value, dtype)), device)
    return a


# Ops whose inputs from this position on may come from another device (moved over), as in
# PyTorch: x[[0, 2]] indexes a GPU tensor (the index arrays are read on the host anyway), x[0] =
# a CPU value writes it, and copy_ copies across devices either way (load_state_dict of a GPU
# state into a CPU model, or of a CPU state into a GPU model). The op runs on the device of the
# inputs before that position (the tensor indexed or written).
HOST_INDEX_INPUTS = {"index": 1, "index_put": 1, "index_put_": 1, "copy_": 1}


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


def apply(trace, op: Op, args, attrs) -> Tensor | tuple:
    """Run `op` on arguments of which at least one is on a GPU (attrs already checked)."""
    device = _device_of_args(op, args)
    if op.name in HOST_INDEX_INPUTS:  # (a recorded move: the gradient goes back)
        args = [a.to(device) if isinstance(a, Tensor) else a for a in args]
        if device == devices.CPU:  # written or indexed on the CPU: the CPU path runs it
            return trace.apply(op, args, attrs, checked=True)
    specs = [
        Spec(tuple(v._data.shape), v._data.dtype)
        if isinstance(v, Tensor)
        else Spec((), dt.scalar_dtype(v), weak=True)
        for v in args
    ]
    sig = (device, tuple(specs), tuple(map(type, args)), tuple(attrs.values()))
    try:
        plan = op.cache.get(sig)
    except TypeError:  # an unhashable attr
        sig, plan = None, None
    if plan is None:
        plan = DevicePlan(op, specs, attrs)
        if sig is not None:
            op.cache[sig] = plan
    tensors = list(args)
    for i, d in plan.scalars:
        tensors[i] = CudaTensor(_device_scalar(args[i], d, device))
    record = False
    if STATE.grad_enabled and op.differentiable:
        for t in tensors:
            refresh_if_stale(t)  # a view whose base was written since (nbflow/core/views.py)
            record = record or t.requires_grad
    arrays = [t._data for t in tensors]
    if plan.casts:
        from ..kernels.cuda.loader import impl

        for i, d in plan.casts:
            arrays[i] = impl().contiguous(arrays[i], d)
    try:
        if op.view:
            outs = _run_view(op, plan, tensors, arrays, attrs)
        elif op.inplace:
            saved = _save_targets(op, tensors) if record and op.saves_target else None
            outs = _run_inplace(op, plan, tensors, arrays, attrs, record)
            tensors = saved or tensors
        else:
            bufs = [devices.empty(s.shape, s.dtype, device) for s in plan.specs]
            plan.launcher(*arrays, *bufs, **attrs)
            outs = [CudaTensor(b) for b in bufs]
    except NbflowError as e:
        raise _in_op(op, e) from None
    if record:
        trace.record(op, tensors, attrs, outs)
        if op.inplace:
            for t in outs:
                if t._view is not None:  # the base gets the write's history
                    trace.write_back(t)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _run_view(op, plan, tensors, arrays, attrs):
    results = plan.launcher(*arrays, **attrs)
    results = results if isinstance(results, tuple) else (results,)
    copied = op.name in RESHAPES and not devices.shares_memory(results[0], tensors[0]._data)
    return view_outputs(op, tensors[0], attrs, results, copied)


def _copy(a):
    """A fresh C-contiguous copy of GPU array a."""
    from ..kernels.cuda.loader import impl

    copy = devices.empty(a.shape, a.dtype, devices.device_of(a))
    impl().copy_into(a, copy)
    return copy


def _save_targets(op, tensors):
    saved = list(tensors)
    for j in op.inplace.values():
        t = tensors[j]
        saved[j] = CudaTensor(_copy(t._data), t.requires_grad, t._node, t._index)
    return saved


def _run_inplace(op, plan, tensors, arrays, attrs, record):
    for j in op.inplace.values():  # a broadcast view's threads would race on one element
        if devices.repeats_elements(tensors[j]._data):
            raise read_only(op)
    if record:
        check_recorded_writes(op, tensors)
    # an input overlapping a target other than as the target itself (x[1:] += x[:-1]) is
    # read as it was before the op, as on the CPU: the GPU's threads would race with the
    # writes. Only views of one buffer can overlap, and they share its version counter.
    shared = [(tensors[j], version_counter(tensors[j])) for j in op.inplace.values()]
    arrays = [
        _copy(a)
        if any(t._version is c and devices.overlaps_partly(a, b._data) for b, c in shared)
        else a
        for t, a in zip(tensors, arrays)
    ]
    # the GPU computes float16 natively: kernels write the targets themselves
    bufs = [tensors[op.inplace[i]]._data for i in range(len(plan.specs))]
    plan.launcher(*arrays, *bufs, **attrs)
    outs = []
    for i in range(len(bufs)):
        t = tensors[op.inplace[i]]
        version_counter(t)[0] += 1
        outs.append(t)
    return outs
