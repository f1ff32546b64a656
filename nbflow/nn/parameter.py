"""PyTorch's tensor markers of torch/nn/parameter.py: Buffer, UninitializedParameter and
UninitializedBuffer.

- `nn.Buffer(t, persistent=True)` is PyTorch 2.5's buffer marker: assigned to a module
  attribute (`self.seen = nn.Buffer(nbflow.zeros(1))`) it registers a buffer, as
  register_buffer does. It is a plain Tensor sharing t's memory (t detached, as PyTorch's);
  the mark lives beside it (nbflow's Tensor has fixed slots), so `isinstance(b, nn.Buffer)`
  holds for it and it works in every op.
- UninitializedParameter / UninitializedBuffer stand for a lazy module's (modules/lazy.py)
  tensors until their shape is known. They hold no data: reading their shape, or using them in
  an op, raises UninitializedError. `materialize(shape)` gives one its memory in place, the same
  object becoming a plain Tensor (PyTorch's cls_to_become), so whatever holds it (a module, an
  optimizer) holds the materialised tensor.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..core import dtypes as dt
from ..core.errors import ArgumentError, NbflowError, UnsupportedError
from ..eager.tensor import Tensor

__all__ = ["Buffer", "UninitializedBuffer", "UninitializedParameter"]


class UninitializedError(NbflowError, RuntimeError, ValueError):
    """An uninitialised (lazy) parameter or buffer used before it has a shape (PyTorch raises
    ValueError for its use and RuntimeError for its shape: this is both)."""


# ---------------------------------------------------------------- nn.Buffer

_MARKS: dict[int, tuple] = {}  # id(tensor) -> (weak reference, persistent)


class _BufferMeta(type):
    def __instancecheck__(cls, value) -> bool:  # a marked plain Tensor is an nn.Buffer
        return buffer_persistence(value) is not None


class Buffer(metaclass=_BufferMeta):
    """A tensor that, assigned to a module attribute, becomes that module's buffer (in its
    state_dict unless persistent=False). Returns a plain Tensor: `data` detached (sharing
    its memory, keeping its requires_grad), or an empty float32 tensor for None."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = Tensor(np.empty((0,), dt.float32))
        if not isinstance(data, Tensor):
            raise ArgumentError(f"nn.Buffer takes a Tensor, got {type(data).__name__}")
        t = data.detach()
        t.requires_grad = data.requires_grad
        key = id(t)
        _MARKS[key] = (weakref.ref(t, lambda _, key=key: _MARKS.pop(key, None)), bool(persistent))
        return t


def buffer_persistence(value):
    """True or False (its `persistent`) for a tensor made by nn.Buffer, None for any other."""
    mark = _MARKS.get(id(value))
    if mark is None or mark[0]() is not value:
        return None
    return mark[1]


def assign_buffer(module, name: str, value) -> None:
    """Module.__setattr__ of an nn.Buffer: register it (PyTorch's TypeError where the name
    holds a parameter or a submodule)."""
    for registry, kind in (("_parameters", "parameter"), ("_modules", "child module")):
        if name in module.__dict__[registry]:
            raise ArgumentError(
                f"cannot assign an nn.Buffer as {kind} {name!r} (delete the attribute first)"
            )
    module.register_buffer(name, value, buffer_persistence(value))


# ---------------------------------------------------------------- uninitialised tensors


def _message(cls, what: str) -> str:
    return (
        f"{what} of an uninitialized parameter or buffer ({cls.__name__}). A lazy module "
        "(nn.LazyLinear, ...) gives its parameters their shapes at its first call: call it on "
        "a batch (or load a state_dict into it) first"
    )


class _Uninitialized(Tensor):
    """A dataless stand-in: an empty array of the dtype it will have."""

    __slots__ = ()  # (the layout of Tensor: materialize() turns it into one in place)
    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None):
        if device is not None and str(device) != "cpu":
            raise UnsupportedError(
                f"{type(self).__name__}: only device 'cpu'; materialise the lazy module (call "
                "it on a batch), then move it with .to(device)"
            )
        dtype = dt.as_dtype(dtype)
        super().__init__(np.empty((0,), dtype))
        if requires_grad:
            self.requires_grad_(True)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give this tensor memory of `shape` (uninitialised values, as torch.empty; the lazy
        modules initialise it next), in place: it becomes a plain Tensor."""
        if device is not None and str(device) != "cpu":
            raise UnsupportedError(f"{type(self).__name__}.materialize: only device 'cpu'")
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
        dtype = self._data.dtype if dtype is None else dt.as_dtype(dtype)
        self._data, self._sig = np.empty(shape, dtype), None
        self.__class__ = self.cls_to_become

    # PyTorch lets these through; the rest of a tensor's use needs its shape
    @property
    def shape(self):
        raise UninitializedError(_message(type(self), "Can't access the shape"))

    ndim = size = shape

    def numel(self):
        raise UninitializedError(_message(type(self), "Can't count the elements"))

    def numpy(self):
        raise UninitializedError(_message(type(self), "Can't read the data"))

    data = property(numpy)

    def detach(self):
        return self  # (it has neither data nor history: state_dict() keeps it, as PyTorch's)

    def to(self, device=None, dtype=None):
        """A stand-in of the new dtype (PyTorch's); a device other than the CPU raises."""
        if dtype is None and device is not None and not isinstance(device, str):
            device, dtype = None, device
        same = dtype is None or dt.as_dtype(dtype) == self._data.dtype
        if same and (device is None or str(device) == "cpu"):
            return self
        return type(self)(self.requires_grad, device, dtype or self._data.dtype)

    def copy_(self, source, non_blocking=False):
        if is_lazy(source):  # (PyTorch's load of one uninitialised state into another)
            return self
        raise UninitializedError(_message(type(self), "Can't copy into the memory"))

    def __repr__(self) -> str:
        # ops that meet one say "not a number: <this>": the text says what to do
        return f"<{_message(type(self), 'use')}>"


class UninitializedParameter(_Uninitialized):
    """A parameter whose shape is not known yet (a lazy module's): requires grad, and
    materialize(shape) makes it the parameter."""

    __slots__ = ()

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(requires_grad, device, dtype)


class UninitializedBuffer(_Uninitialized):
    """A buffer whose shape is not known yet (a lazy norm's running statistics). `persistent`
    is PyTorch's argument; register_buffer's own persistent flag decides."""

    __slots__ = ()

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        super().__init__(requires_grad, device, dtype)


def is_lazy(value) -> bool:
    """Whether `value` is an uninitialised parameter or buffer (PyTorch's is_lazy)."""
    return isinstance(value, _Uninitialized)
