"""Eager mode: the Tensor and the eager trace that runs ops as they are called.

A Tensor holds a numpy buffer, `requires_grad`, `grad`, a version counter shared with its
views, and the tape node that produced it (`_node`, `_index`). Nodes hang off their outputs,
so a graph nobody references is freed by reference counting.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from .. import ops
from ..argcheck import choice
from ..core import (
    ODD,
    STATE,
    Node,
    Op,
    Spec,
    Trace,
    bind,
    hooks,
    normalize_axis,
    overlaps_partly,
    set_thread_default,
)
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    AttrError,
    DTypeError,
    GradientError,
    NbflowError,
    ResourceExhaustedError,
    ShapeError,
    UnsupportedError,
    locate,
    user_location,
)
from ..core.views import RESHAPES, ViewOf, check_writes, refresh_if_stale, restamp, write_back
from ..runtime import buffers
from .control import EagerControlFlow
from .operators import COMPARISONS, REFLECTED, Operators, Size
from .printing import tensor_repr


class Tensor(Operators):
    """An eager tensor: a numpy array and its autograd history. `Tensor(array)` adopts the
    array as it is (nbflow.tensor() copies, from_numpy() shares the memory); what a tensor
    hands out (`data`, numpy()) are views, as the plan caches key a tensor by a signature of
    its shape and dtype made once (Sig)."""

    __slots__ = (
        "_data",
        "_sig",
        "requires_grad",
        "grad",
        "_node",
        "_index",
        "_version",
        "_base",
        "_view",
        "_name",  # what a program capturing it names it (nn.Module: "linear_0.weight"); unset
        "__weakref__",
    )
    __array_priority__ = 1000  # numpy defers `ndarray + Tensor` to Tensor.__radd__
    __hash__ = object.__hash__  # == is elementwise, identity stays the hash

    # (_plain() below sets the same fields for the operators' hot path)
    def __init__(self, data, requires_grad=False, _node=None, _index=0, _version=None, _base=None):
        self._data = data  # the array, its own: what it hands out are views (see `data`)
        self._sig = None  # its Sig, made on first need (signature_of)
        self.requires_grad = requires_grad
        self.grad = None
        self._node = _node
        self._index = _index
        self._version = _version  # shared by a buffer's views; see version_counter()
        self._base = _base
        self._view = None  # how a view was taken (nbflow/core/views.py); None for other tensors

    # -------------------------------------------------------------- properties

    @property
    def data(self) -> np.ndarray:
        """The tensor's memory as a numpy array (a view: no copy). Its shape or dtype set in
        place would change only that view, as the tensor's cached signature requires."""
        return self._data.view()

    @data.setter
    def data(self, array):
        """PyTorch's `x.data = y`: x holds y's memory from then on (y a tensor or array)."""
        if isinstance(array, Tensor) and array.device == "cpu":
            array = array._data
        if not isinstance(array, np.ndarray):
            raise TypeError(f"Tensor.data takes a numpy array, got {type(array).__name__}")
        dt.as_dtype(array.dtype)  # raises DTypeError for dtypes nbflow does not hold
        self._data = array.view(np.ndarray)  # (the caller's array may be reshaped)
        self._sig = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> Size:
        """The element count, an int; `size()` and `size(axis)` give PyTorch's answers."""
        return Size(self._data.shape)

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def version(self) -> int:
        v = self._version
        return 0 if v is None else v[0]

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def spec(self) -> Spec:
        return Spec(self._data.shape, self._data.dtype)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    # -------------------------------------------------------------- conversion

    def numpy(self) -> np.ndarray:
        """A view of the buffer (no copy, as PyTorch's numpy()); writing to it bypasses
        version checks."""
        return self._data.view()

    def __array__(self, dtype=None, copy=None):
        a = self._data
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a.view()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack capsule of this tensor's memory (no copy unless copy=True): what
        np.from_dlpack, torch.from_dlpack and nbflow.from_dlpack read (nbflow/dlpack.py)."""
        from ..dlpack import export

        return export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        from ..dlpack import dlpack_device

        return dlpack_device(self.device)

    def __array_namespace__(self, *, api_version=None):
        """The Array API standard's namespace for nbflow tensors (nbflow.array_api)."""
        from .. import array_api

        return array_api.namespace(api_version)

    def to_device(self, device, /, *, stream=None) -> Tensor:
        """The Array API standard's to(device): itself when already there."""
        return self.to(device)

    def __complex__(self) -> complex:
        return complex(self.item())

    # the shifts of the Array API standard's operators (nbflow.bitwise_*_shift)
    def __lshift__(self, other):
        return ops.bitwise_left_shift(self, other)

    def __rshift__(self, other):
        return ops.bitwise_right_shift(self, other)

    def __rlshift__(self, other):
        return ops.bitwise_left_shift(tensor(other, self.dtype), self)

    def __rrshift__(self, other):
        return ops.bitwise_right_shift(tensor(other, self.dtype), self)

    def __ilshift__(self, other):
        return self.copy_(self << other)

    def __irshift__(self, other):
        return self.copy_(self >> other)

    def item(self):
        if self._data.size != 1:
            raise ShapeError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ShapeError(
                f"the truth value of a tensor with shape {self.shape} is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self._data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self._data.size != 1:
            raise ArgumentError("only integer tensors with one element can be used as an index")
        return int(self.item())

    def __repr__(self) -> str:
        return tensor_repr(self, self._data)

    # -------------------------------------------------------------- autograd

    def detach(self) -> Tensor:
        """The same buffer, cut from the graph (shares the version counter)."""
        base = self if self._base is None else self._base
        return type(self)(self._data, _version=version_counter(self), _base=base)

    def detach_(self) -> Tensor:
        """Cut from the graph in place: a leaf that requires no grad (PyTorch's detach_)."""
        if self._view is not None and self._base is not None and self._base.requires_grad:
            raise GradientError(
                "detach_: this tensor is a view of one that requires grad; use detach()"
            )
        self._node, self._index, self.requires_grad = None, 0, False
        return self

    def _adopt_history(self, other: Tensor):
        """Take other's history (a view re-taken from its base: nbflow/core/views.py)."""
        self._node, self._index, self.requires_grad = other._node, other._index, other.requires_grad

    def requires_grad_(self, flag: bool = True) -> Tensor:
        flag = choice(flag, (False, True), "requires_grad_: requires_grad", AttrError)
        if flag and not dt.differentiable(self.dtype):
            raise DTypeError(f"only float and complex tensors can require grad, not {self.dtype}")
        if self._node is not None and not flag:
            raise GradientError("requires_grad can only be cleared on a leaf; use detach()")
        self.requires_grad = flag
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's .grad (gradient: the seed, default 1;
        inputs: only these tensors' .grad). The graph's saved values are freed unless
        retain_graph (default: create_graph), as PyTorch's."""
        from ..autograd.backprop import backward

        seeds = None if gradient is None else [gradient]
        backward([self], seeds, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """Call hook(grad) when this tensor's gradient is computed (by backward() or
        nbflow.grad); a returned tensor replaces the gradient. Returns a handle whose
        remove() unregisters the hook."""
        return hooks.register_hook(self, hook)

    def retain_grad(self) -> None:
        """Fill this computed tensor's .grad on backward, as a leaf's is."""
        hooks.retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        return hooks.retains_grad(self)

    def register_post_accumulate_grad_hook(self, hook):
        """Call hook(self) after backward() has accumulated this leaf's .grad."""
        return hooks.register_post_accumulate_grad_hook(self, hook)

    @property
    def grad_fn(self):
        """None for a leaf; for a computed tensor, an object whose name() is the op's."""
        return None if self._node is None else hooks.GradFn(self._node)

    # -------------------------------------------------------------- memory layout

    def stride(self, dim=None):
        """The strides in elements (PyTorch's stride()), or one dim's."""
        size = np.dtype(self.dtype).itemsize
        strides = tuple(s // size for s in self._data.strides)
        return strides if dim is None else strides[normalize_axis(dim, self.ndim)]

    def storage_offset(self) -> int:
        """Where this tensor's first element sits in its base's buffer, in elements."""
        root = self._data
        if not isinstance(root, np.ndarray):
            raise UnsupportedError("storage_offset() of a GPU tensor: move it to the CPU first")
        while isinstance(root.base, np.ndarray):
            root = root.base
        return (_address(self._data) - _address(root)) // np.dtype(self.dtype).itemsize

    def data_ptr(self) -> int:
        """The address of the first element (a device address for a GPU tensor)."""
        return _address(self._data)

    # -------------------------------------------------------------- devices

    def to(
        self, device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=None
    ) -> Tensor:
        """This tensor on `device` ("cpu", "cuda", "cuda:N") and in `dtype`; itself when
        already so, unless copy=True. As in PyTorch, a dtype may come first (`t.to(float64)`,
        `t.to(float64, non_blocking, copy)`), or another tensor, whose device and dtype are
        taken. non_blocking changes nothing (copies are synchronous); memory_format is checked
        (creation.check_memory_format)."""
        from .device_tensor import move

        ops.creation.check_memory_format("to", memory_format)
        if isinstance(device, Tensor):  # t.to(other)
            device, dtype = device.device, device.dtype if dtype is None else dtype
        elif device is not None and not isinstance(device, str):
            # t.to(dtype, non_blocking, copy): the arguments sit one place to the left
            if dtype is not None and not isinstance(dtype, (bool, np.bool_)):
                raise AttrError(f"to: give one dtype, got {device!r} and {dtype!r}")
            copy = non_blocking if dtype is not None else copy
            device, dtype = None, device
        t = self if device is None else move(self, device)
        t = t if dtype is None or t.dtype == dt.as_dtype(dtype) else t.astype(dtype)
        return t.clone() if copy and t is self else t

    def new_tensor(self, data, dtype=None, requires_grad=False) -> Tensor:
        """A new tensor of `data`, in this one's dtype by default."""
        return tensor(data, self.dtype if dtype is None else dtype, requires_grad)

    def contiguous(self) -> Tensor:
        """Itself, or a copy when its buffer is strided (a transposed view)."""
        data = self._data
        if isinstance(data, np.ndarray) and not data.flags.c_contiguous:
            return self.clone()
        return self

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, index: int = 0) -> Tensor:
        return self.to(f"cuda:{index}")


def _address(a) -> int:
    """The address of an array's first element, host or device."""
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.device_ctypes_pointer.value or 0  # (numba's device array)


class Stale:
    """Stands for a saved tensor that was modified in place after it was saved.

    Ops on it give it back (it poisons what is computed from it), and the backward driver
    raises only when a poisoned gradient reaches an input that requires grad. So `y.mul_(2)`
    works on an intermediate y although mul's rule also computes g * y for the constant 2."""

    __slots__ = ("message", "original")

    def __init__(self, message: str, original):
        self.message, self.original = message, original  # original: the overwritten value

    def _poison(self, *args):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _poison
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _poison
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __getitem__ = _poison

    def placeholder(self):
        """For an input an op reads only the shape of: the overwritten value will do, since
        in-place writes keep the shape."""
        return self.original

    # what in-place writes keep, a rule may read (index_put_'s reads value.ndim)
    shape = property(lambda self: self.original.shape)
    ndim = property(lambda self: self.original.ndim)
    dtype = property(lambda self: self.original.dtype)

    def __getattr__(self, name):
        raise GradientError(self.message)


# Tensor subclasses whose data live on a GPU, with the Plan class that runs ops on them
# (nbflow/eager/device_tensor.py adds CudaTensor's). Empty until a GPU tensor is first made.
DEVICE_TENSORS: dict = {}


def _wrap(data, *args):
    """A Tensor around a saved buffer, of the class for where the buffer lives."""
    if type(data) is np.ndarray:
        return Tensor(data, *args)
    from .device_tensor import wrap

    return wrap(data, *args)


def as_tensor_value(x):
    """What bind() accepts as an input: a Tensor, a weak Python scalar, or array data."""
    if type(x) is Tensor:
        return x
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)) and not isinstance(
        x, np.ndarray
    ):
        return x
    if isinstance(x, (Tensor, Stale)):
        return x
    return tensor(x)


PLAN_CACHE_SIZE = 4096  # plans kept per op
_PY_SCALARS = (float, int, bool)
_NO_ATTRS = MappingProxyType({})  # the attrs of recorded binary ops: shared, so read-only


class Sig:
    """A CPU tensor's shape and dtype, interned (one object per pair): the plan caches' keys
    for tensors hash and compare it by identity. Reading shape and dtype from the arrays and
    building, hashing and comparing tuples of them on every op was a fifth of a 1-element
    add's instructions (bench/, P1)."""

    __slots__ = ("shape", "dtype")

    def __reduce__(self):  # a copied or unpickled tensor keys the same plans
        return interned, (self.shape, self.dtype)

    def __copy__(self) -> Sig:
        return self

    def __deepcopy__(self, memo) -> Sig:
        return self


_SIGS: dict = {}  # (shape, dtype) -> its Sig
SIG_CACHE_SIZE = 1 << 16


def signature_of(t: Tensor) -> Sig:
    """t's Sig, kept on t (`t.data = ...` clears it; the array itself is never handed out,
    so its shape cannot change under the tensor)."""
    a = t._data
    sig = t._sig = _SIGS.get((a.shape, a.dtype)) or interned(a.shape, a.dtype)  # (a hit: one get)
    return sig


def interned(shape, dtype) -> Sig:
    """The one Sig of (shape, dtype)."""
    key = (tuple(shape), np.dtype(dtype))
    sig = _SIGS.get(key)
    if sig is None:
        if len(_SIGS) >= SIG_CACHE_SIZE:  # ever new shapes: start afresh (the plans keyed by
            _SIGS.clear()  # the old Sigs stay right, only no longer shared with new tensors)
        sig = _SIGS[key] = Sig()
        sig.shape, sig.dtype = key
    return sig


class Plan:
    """What running an op on one input signature needs, worked out once and cached on the op:
    output specs, the kernel, which inputs to cast, what to allocate. A GPU's (DevicePlan,
    device_tensor.py) overrides what differs by device: prepare() and the methods at the end."""

    __slots__ = (
        "specs",
        "out_shapes",
        "out_shape",
        "key",
        "launcher",
        "casts",
        "allocs",
        "finals",
        "scalars",
        "single",
        "fast",
        "float_out",
        "out_dtype",
        "alloc",
        "scalar_loop",
        "out_sig",
    )
    tensor_type = Tensor  # the class of the tensors it takes and makes
    computed_in = dt.CPU_COMPUTE  # dtypes computed in another (numba's CPU has no float16)

    def __init__(self, op: Op, values, attrs):
        specs = [
            Spec(tuple(v._data.shape), v._data.dtype)
            if type(v) is self.tensor_type
            else Spec((), dt.scalar_dtype(v), weak=True)
            for v in values
        ]
        self.specs = op.infer(specs, attrs)
        self.out_shapes = [s.shape for s in self.specs]
        self.out_shape = self.out_shapes[0] if self.out_shapes else None
        key = op.key_dtype(specs) if specs else None
        self.key = self.specs[0].dtype if key is None else key
        compute = self.computed_in.get(self.key, self.key)
        promoted = range(len(specs)) if op.promote is None else op.promote
        # weak scalars become 0-d arrays of the promoted dtype (their own when not promoted)
        self.scalars = tuple(
            (i, compute if i in promoted else s.dtype) for i, s in enumerate(specs) if s.weak
        )
        # (an input left out of promotion in a dtype computed in another, float16 on the CPU:
        # in that one too, such as where's condition)
        self.casts = tuple(
            (i, compute if i in promoted else self.computed_in[s.dtype])
            for i, s in enumerate(specs)
            if not s.weak and (s.dtype != compute if i in promoted else s.dtype in self.computed_in)
        )
        # outputs are allocated in the compute dtype and cast back (float16 on the CPU)
        self.allocs = tuple((s.shape, self.computed_in.get(s.dtype, s.dtype)) for s in self.specs)
        self.finals = tuple(
            None if a[1] == s.dtype else s.dtype for a, s in zip(self.allocs, self.specs)
        )
        if not any(self.finals):
            self.finals = None
        self.out_dtype = self.allocs[0][1] if self.allocs else None
        self.prepare(op, specs, attrs)

    def prepare(self, op: Op, specs, attrs):
        """The CPU kernel (outputs within the memory budget), and the hot paths' shortcuts."""
        if not op.view and not op.inplace:
            _check_budget(op, specs, self.allocs)
        self.single = len(self.specs) == 1 and not op.view and not op.inplace
        kernel = self.launcher = op.kernel("cpu", self.key)
        if hasattr(kernel, "specialize"):  # e.g. elementwise without broadcasting
            self.launcher = kernel.specialize(self.launch_specs(specs), attrs)
        # a tensor and a Python scalar with nothing else to convert (x * 0.5): the loop that
        # takes the scalar as it is, for the operators
        self.scalar_loop = None
        if (
            hasattr(kernel, "scalar_loop")
            and len(specs) == 2
            and len(self.scalars) == 1
            and not self.casts
            and self.finals is None
            and self.single
            and not op.attrs
            and specs[1 - self.scalars[0][0]].shape == self.out_shapes[0]
        ):
            self.scalar_loop = kernel.scalar_loop(self.scalars[0][0])
        # large outputs come from recycled buffers (nbflow/runtime/buffers.py: fresh ones fault)
        nbytes = [math.prod(shape) * np.dtype(d).itemsize for shape, d in self.allocs]
        self.alloc = buffers.empty if max(nbytes, default=0) >= buffers.MIN_BYTES else np.empty
        self.float_out = self.out_dtype is not None and np.dtype(self.out_dtype).kind in "fc"
        # the one output's Sig, given to it as it is made (the next op's key costs nothing)
        self.out_sig = None
        if self.single and self.finals is None:
            self.out_sig = interned(self.out_shape, self.out_dtype)
        # nothing to cast, convert or check: what the operators' shortest path unpacks
        self.fast = None
        if (
            self.single
            and not op.attrs
            and op.differentiable
            and not self.scalars
            and not self.casts
            and self.finals is None
        ):
            self.fast = (
                self.alloc,
                self.out_shape,
                self.out_dtype,
                self.launcher,
                self.float_out,
                self.out_sig,
            )

    def launch_specs(self, specs) -> list[Spec]:
        """What the launcher receives: the inputs as cast (and scalars as made into arrays),
        then the outputs as allocated."""
        converted = dict(self.scalars + self.casts)
        ins = [Spec(s.shape, converted.get(i, s.dtype)) for i, s in enumerate(specs)]
        return ins + [Spec(shape, d) for shape, d in self.allocs]

    # what differs by device in running a plan (EagerTrace.apply and its run_ methods)
    shares_memory = staticmethod(np.may_share_memory)  # (a reshape that copied does not)
    overlaps_partly = staticmethod(overlaps_partly)
    cast = staticmethod(np.ndarray.astype)
    copy = staticmethod(np.ndarray.copy)

    def scalar(self, value, dtype) -> Tensor:
        """A weak scalar as the 0-d tensor of `dtype` the kernel takes."""
        return Tensor(np.asarray(dt.scalar(value, dtype)))

    def writable(self, array) -> bool:
        return array.flags.writeable


def _check_budget(op: Op, specs, allocs):
    """Refuse outputs over the memory budget before anything is allocated (once per plan:
    the budget's setter clears the plan caches). Sizes are Python ints: no overflow."""
    nbytes = sum(math.prod(shape) * np.dtype(d).itemsize for shape, d in allocs)
    if nbytes > STATE.memory_budget:
        args = ", ".join(f"{n}: {s}" for n, s in zip(op.input_names(len(specs)), specs))
        shapes = ", ".join(f"{list(shape)} {np.dtype(d)}" for shape, d in allocs)
        raise ResourceExhaustedError(
            f"{op.name}({args}): the outputs ({shapes}) need {nbytes} bytes, over the memory "
            f"budget of {STATE.memory_budget} bytes (nbflow.set_memory_budget)"
        )


def new_plan(op: Op, values, attrs) -> Plan:
    """The plan of `values`: a GPU tensor's Plan class (DEVICE_TENSORS) when one is among them."""
    for v in values:
        if type(v) in DEVICE_TENSORS:
            return DEVICE_TENSORS[type(v)](op, values, attrs)
    return Plan(op, values, attrs)


class EagerTrace(EagerControlFlow, Trace):
    """Runs each op at once; records a tape node when a gradient may be needed."""

    def apply(self, op: Op, args, attrs, checked=False):
        """Run `op` (checked=True: attrs are already normalised, as in an executor's plan)."""
        if (attrs or op.attrs) and not checked:
            attrs = op.check_attrs(attrs)
        # the plan cache key; written out for one and two tensors, the hot path
        n = len(args)
        if n == 2 and type(args[0]) is Tensor and type(args[1]) is Tensor:
            a, b = args
            arrays = (a._data, b._data)
            sig = (a._sig or signature_of(a), b._sig or signature_of(b))
        elif n == 1 and type(args[0]) is Tensor:
            a = args[0]
            arrays = (a._data,)
            sig = a._sig or signature_of(a)
        else:
            arrays = None
            args = [as_tensor_value(a) for a in args]
            device_plan = None  # a GPU tensor's Plan class (DEVICE_TENSORS)
            for i, v in enumerate(args):
                if type(v) is not Stale:
                    device_plan = DEVICE_TENSORS.get(type(v), device_plan)
                    continue
                if op.reads_only_shape(i):
                    args[i] = v.placeholder()
                else:  # inside a gradient rule: poison the result
                    return v if len(op.outputs) == 1 else (v,) * len(op.outputs)
            if device_plan is None:
                sig = signature(args)
            else:  # keyed with the device (nbflow/eager/device_tensor.py)
                args, sig = device_plan.signature(op, args)
        plan = None if attrs else op.cache.get(sig)
        if plan is None:
            plan = self.plan(op, sig, args, attrs)
        tensors = args
        if plan.scalars:
            tensors = list(args)
            for i, d in plan.scalars:
                try:
                    tensors[i] = plan.scalar(args[i], d)
                except DTypeError as e:
                    raise _in_op(op, e) from None
        record = False
        # (ODD empty: every thread, this one too, records gradients)
        if op.differentiable and (not ODD or STATE.grad_enabled):
            for t in tensors:
                if t._view is not None:  # (checked here first: this loop is hot)
                    refresh_if_stale(t)  # a view whose base was written since
                if t.requires_grad:
                    record = True
        if op.view:
            outs = self.run_view(op, plan, tensors, attrs)
        elif op.inplace:
            saved = self.save_targets(op, plan, tensors) if record and op.saves_target else None
            outs = self.run_inplace(op, plan, tensors, attrs, record)
            tensors = saved or tensors
        else:
            if arrays is None or plan.scalars or plan.casts:
                arrays = [t._data for t in tensors]
                for i, d in plan.casts:
                    arrays[i] = plan.cast(arrays[i], d)
            if plan.single:  # the hot path, written out: no lists, no extra frame
                shape, dtype = plan.allocs[0]
                buf = plan.alloc(shape, dtype)
                try:
                    plan.launcher(*arrays, buf, **attrs)
                except NbflowError as e:
                    raise _in_op(op, e) from None
                out = Tensor(buf if plan.finals is None else _narrowed(buf, plan.finals[0]))
                out._sig = plan.out_sig
                if record:
                    self.record(op, tensors, attrs, (out,))
                return out
            outs = self.run(op, plan, arrays, attrs)
        if record:
            self.record(op, tensors, attrs, outs)
            if op.inplace:  # a write through a view: its base gets the write's history
                for t in outs:
                    if t._view is not None:
                        self.write_back(t)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run(self, op, plan, arrays, attrs):
        """Allocate the outputs (in the compute dtype), run the kernel, wrap the results."""
        bufs = [plan.alloc(shape, d) for shape, d in plan.allocs]
        try:
            plan.launcher(*arrays, *bufs, **attrs)
        except NbflowError as e:
            raise _in_op(op, e) from None
        if plan.finals:
            bufs = [b if d is None else _narrowed(b, d) for b, d in zip(bufs, plan.finals)]
        return [plan.tensor_type(b) for b in bufs]

    def plan(self, op, sig, values, attrs) -> Plan:
        """The cached plan for this input signature (shapes, dtypes, attrs; a GPU's: device)."""
        if attrs:
            sig = (sig, tuple(attrs.values()))
        try:
            plan = op.cache.get(sig)
        except TypeError:  # an unhashable attr (rare): no caching
            return new_plan(op, values, attrs)
        if plan is None:
            if len(op.cache) >= PLAN_CACHE_SIZE:  # e.g. x[i] in a loop: one key per i
                op.cache.clear()
            plan = op.cache[sig] = new_plan(op, values, attrs)
        return plan

    def saved(self, node):
        """(outputs, inputs) of a tape node for its gradient rule: a value overwritten in place
        since it was saved comes as a Stale placeholder (never for a view op, whose rule reads
        only shapes: a write through the view into its base keeps them)."""
        if node.freed:
            return freed_values(node)
        view = getattr(node.op, "view", False)  # (a jit function's node has no op declaration)
        outs = []
        for i, (data, version, v) in enumerate(node.outputs):
            if version[0] != v and not view:
                message = stale_message(node, f"output {i}", v, version[0])
                outs.append(Stale(message, _wrap(data, True, node, i, version)))
            else:  # a new Tensor around the saved buffer (routing goes by node and index)
                outs.append(_wrap(data, True, node, i, version))
        ins = []
        for t, v in zip(node.inputs, node.versions):
            now = t.version
            if now != v and not view:
                message = stale_message(node, "an input", v, now)
                ins.append(Stale(message, t))
            else:
                ins.append(t)
        return outs, ins

    def record(self, op, inputs, attrs, outs):
        """Attach a tape node to the float outputs."""
        # one plain loop: this runs for every recorded op (see bench/, eager overhead)
        versions, edges = [], []
        for t in inputs:
            v = t._version  # (Tensor.version written out: this runs for every recorded op)
            versions.append(0 if v is None else v[0])
            if t._node is not None:
                edges.append((t._node, t._index))
            else:
                edges.append(t if t.requires_grad else None)
        node = Node(op, inputs, attrs, [], versions, edges)
        if op.inplace:
            for i, j in op.inplace.items():
                if inputs[j] is outs[i]:  # the rule needs the value from before the write
                    versions[j] -= 1
        for i, o in enumerate(outs):
            if o._data.dtype.kind in "fc":
                o.requires_grad, o._node, o._index = True, node, i
            # the buffer, not the Tensor: no cycle, and backward rebuilds an equivalent Tensor
            version = version_counter(o)
            node.outputs.append((o._data, version, version[0]))

    def save_targets(self, op, plan, tensors):
        """Inputs with each in-place target replaced by a copy of its current value (same
        history), for gradient rules that read it."""
        saved = list(tensors)
        for j in op.inplace.values():
            t = tensors[j]
            saved[j] = type(t)(plan.copy(t._data), t.requires_grad, t._node, t._index)
        return saved

    def run_inplace(self, op, plan, tensors, attrs, record):
        """Write into the targets' buffers (through compute-dtype copies for float16 on the
        CPU), once writes into read-only memory and writes autograd cannot follow are refused."""
        for j in op.inplace.values():
            if not plan.writable(tensors[j]._data):
                raise read_only(op)
        if record:
            check_writes(op, tensors)
        targets = [tensors[op.inplace[i]] for i in range(len(plan.allocs))]  # output order
        # an input overlapping a target other than as the target itself (x[1:] += x[:-1]) is
        # read as it was before the op, as numpy does: the kernel would see its own writes.
        # Only views of one buffer can overlap, and they share its version counter (a pointer
        # comparison, so the common case pays no memory-overlap test); a target without a
        # counter has had no view made of it.
        arrays = [t._data for t in tensors]
        shared = [b for b in targets if b._version is not None]
        if shared:
            for i, t in enumerate(tensors):
                for b in shared:
                    if t._version is b._version and plan.overlaps_partly(arrays[i], b._data):
                        arrays[i] = plan.copy(arrays[i])
                        break
        for i, d in plan.casts:
            arrays[i] = plan.cast(arrays[i], d)
        bufs = [
            t._data if t._data.dtype == d else np.empty(shape, d)
            for t, (shape, d) in zip(targets, plan.allocs)
        ]
        try:
            plan.launcher(*arrays, *bufs, **attrs)
        except NbflowError as e:
            raise _in_op(op, e) from None
        for t, b in zip(targets, bufs):
            if b is not t._data:
                np.copyto(t._data, b, casting="unsafe")
            version_counter(t)[0] += 1
        return targets

    def run_view(self, op, plan, tensors, attrs):
        """A view op: the outputs share the input's buffer and version counter."""
        try:
            results = plan.launcher(*[t._data for t in tensors], **attrs)
        except NbflowError as e:
            raise _in_op(op, e) from None
        results = results if isinstance(results, tuple) else (results,)
        copied = op.name in RESHAPES and not plan.shares_memory(results[0], tensors[0]._data)
        return view_outputs(op, tensors[0], attrs, results, copied)

    def write_back(self, view: Tensor):
        """Record the history of a write through `view` into its parent, and on up to the
        base (nbflow/core/views.py). The memory already holds it: only the tape node is made."""
        op, (parent, source), attrs = write_back(view)
        # the write-back's rule reads no values, only shapes: aliases with their own version
        # counters, so that later writes into the memory do not make them stale
        old = type(parent)(parent._data, parent.requires_grad, parent._node, parent._index)
        new = type(source)(source._data, source.requires_grad, source._node, source._index)
        self.record(op, [old, new], attrs, [parent])
        if parent._view is not None:
            self.write_back(parent)
        restamp(view)


def view_outputs(op, parent, attrs, results, copied: bool) -> list:
    """The tensors (of parent's class) of view op's `results`: views sharing parent's buffer
    and version counter, or fresh tensors where a reshape had to copy."""
    cls = type(parent)
    if copied:
        return [cls(r) for r in results]
    base = parent if parent._base is None else parent._base
    outs = [cls(r, _version=version_counter(parent), _base=base) for r in results]
    if parent._base is None or parent._view is not None:  # (not a view of a detach())
        for i, t in enumerate(outs):
            t._view = ViewOf(op, parent, attrs, i)
    return outs


def read_only(op) -> UnsupportedError:
    return UnsupportedError(
        f"{op.name}: the target is read-only (a broadcast view or read-only array); clone() it "
        "first"
    )


def _narrowed(buf, dtype):
    """A float32 result rounded to its float16 output: beyond float16's range is inf, as the
    op's result is (numpy would also warn)."""
    with np.errstate(over="ignore"):
        return buf.astype(dtype)


def version_counter(t) -> list:
    """The version counter of t's buffer, shared with its views: made on first need (an
    in-place write, a view, a tape record), since most tensors never need one and making a
    list for each is a visible part of a 1-element add. None reads as version 0."""
    v = t._version
    if v is None:
        v = t._version = [0]
    return v


FREED = (
    "{}: trying to backward through the graph a second time (or to read saved values after "
    "they were freed). A backward frees the graph's saved values; pass retain_graph=True to "
    "the first backward() or grad() to go through the graph again"
)


_STAND_INS: dict = {}  # (shape, dtype, wrapped) -> a memoryless stand-in, shared


def _shape_only(t):
    """A stand-in with t's shape and dtype but no memory (for a CPU tensor or array), for a
    rule that reads only shapes; t itself otherwise."""
    wrapped = isinstance(t, Tensor)
    data = t._data if wrapped else t
    if type(data) is not np.ndarray or (wrapped and type(t) is not Tensor):
        return t
    key = (data.shape, data.dtype, wrapped)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        if len(_STAND_INS) > 4096:  # (many shapes: start again)
            _STAND_INS.clear()
        stand_in = np.broadcast_to(np.empty((), data.dtype), data.shape)
        stand_in = _STAND_INS[key] = Tensor(stand_in) if wrapped else stand_in
    return stand_in


def free_saved(node):
    """Drop what a tape node saved for its gradient rule (a backward without retain_graph):
    the values become memoryless stand-ins, and a later rule reading one raises (FREED). A
    view op saves nothing but its input, which its view needs: it is kept; so is a number
    (a 0-d constant), which PyTorch saves as a scalar, not as a tensor to free."""
    if getattr(node.op, "view", False) or node.freed:
        return
    freed = [not (t._node is None and not t.requires_grad and t.ndim == 0) for t in node.inputs]
    node.freed = freed
    node.outputs = [(_shape_only(data), version, v) for data, version, v in node.outputs]
    node.inputs = [_shape_only(t) if f else t for t, f in zip(node.inputs, freed)]


def freed_values(node):
    """(outputs, inputs) of a freed node: placeholders that poison what is computed from them
    (as Stale's do), so only a gradient that needed a freed value raises."""
    message = FREED.format(getattr(node.op, "name", "a traced function"))
    outs = [
        Stale(message, _wrap(data, True, node, i, version))
        for i, (data, version, _) in enumerate(node.outputs)
    ]
    ins = [Stale(message, t) if f else t for t, f in zip(node.inputs, node.freed)]
    return outs, ins


def stale_message(node, what, saved, now):
    return (
        f"{node.op.name}: {what} saved for the gradient was modified in place "
        f"(version {saved} when saved, {now} now); backward needs its old value. "
        "Use an out-of-place op or .clone() before modifying it."
    )


def grad_edge(t: Tensor):
    """Where t's gradient goes: (node, output index), the leaf itself, or None."""
    if t._node is not None:
        return (t._node, t._index)
    return t if t.requires_grad else None


def signature(values) -> tuple:
    """The plan cache key of any inputs: each tensor's Sig, each Python scalar's type."""
    return tuple((v._sig or signature_of(v)) if type(v) is Tensor else type(v) for v in values)


def _in_op(op: Op, error: NbflowError) -> NbflowError:
    """A kernel-time error (such as a bounds check) with the op's name in front."""
    message = str(error)
    if not message.startswith((f"{op.name}:", f"{op.name}(")):
        error.args = (f"{op.name}: {message}",)
    return error


set_thread_default("trace", EagerTrace())  # every thread starts eager


# ---------------------------------------------------------------- operators


def _operator(op: Op, reflected=False):
    """Tensor's `a + b` (and the other binary operators): the hottest path of eager mode.
    Two tensors whose cached plan needs nothing converted or checked run here, in the
    operator's own call, and so does a tensor with a Python scalar; anything else, and any
    trace but the plain eager one, goes through the trace (bind()). Every frame and attribute
    load between `a + b` and its kernel is a measurable part of a 1-element add."""
    cached = op.cache.get  # (the cache is cleared in place, never replaced)

    def forward(a, b):
        # (ODD empty: every thread, this one too, is eager with gradients on; core/op.py)
        if ODD and type(STATE.trace) is not EagerTrace:
            return STATE.trace.binary(op, a, b)
        if type(a) is Tensor:
            if type(b) is Tensor:
                plan = cached((a._sig or signature_of(a), b._sig or signature_of(b)))
                fast = plan is not None and plan.fast is not None
                # (a view goes through bind(): it may need its history re-taken)
                if fast and a._view is None and b._view is None:
                    alloc, shape, dtype, launch, float_out, sig = plan.fast
                    buf = alloc(shape, dtype)
                    try:
                        launch(a._data, b._data, buf)
                    except NbflowError:  # a value check (x ** -1 on integers): run it again
                        return bind(op, a, b)  # through bind(), which says where the call was
                    if (
                        (a.requires_grad or b.requires_grad)
                        and float_out
                        and (not ODD or STATE.grad_enabled)
                    ):
                        return _recorded(op, a, b, buf, sig)
                    t = _new(Tensor)  # _plain(buf) written out: a call costs a small op much
                    t._data = buf
                    t._sig = sig
                    t.requires_grad = False
                    t.grad = t._node = t._version = t._base = t._view = None
                    t._index = 0
                    return t
            elif type(b) in _PY_SCALARS:  # x * 0.5
                return _with_scalar(op, a, b, a, b, 1)
        elif type(b) is Tensor and type(a) in _PY_SCALARS:  # 1 - x
            return _with_scalar(op, a, b, b, a, 0)
        return bind(op, a, b)

    if reflected:  # only a left operand that is not a Tensor (2 * x, array + x) gets here
        return lambda self, other: forward(other, self)
    return forward


def _plain(buf, requires_grad=False, node=None, version=None, sig=None) -> Tensor:
    """`Tensor(buf, ...)` without the type call's trip through `__init__` and its defaults (a
    visible part of a 1-element add): the same fields as `Tensor.__init__` sets."""
    t = _new(Tensor)
    t._data = buf
    t._sig = sig
    t.requires_grad = requires_grad
    t._node = node
    t._version = version
    t.grad = t._base = t._view = None
    t._index = 0
    return t


_new = object.__new__


def _recorded(op: Op, a: Tensor, b: Tensor, buf, sig) -> Tensor:
    """The output of `a op b` with its tape node: EagerTrace.record() written out for two
    inputs and one output."""
    version = [0]
    edges = (
        (a._node, a._index) if a._node is not None else (a if a.requires_grad else None),
        (b._node, b._index) if b._node is not None else (b if b.requires_grad else None),
    )
    va, vb = a._version, b._version  # (Tensor.version written out: a property call costs here)
    versions = (0 if va is None else va[0], 0 if vb is None else vb[0])
    node = Node(op, (a, b), _NO_ATTRS, ((buf, version, 0),), versions, edges)
    return _plain(buf, True, node, version, sig)


def _with_scalar(op, a, b, t, value, i):
    """`a op b` where input i is a Python scalar and the other the tensor t: a cached plan
    with a scalar loop runs it (no 0-d array, no broadcasting logic); else bind()."""
    x = t._data
    key = t._sig or signature_of(t)
    plan = op.cache.get((key, type(value)) if i else (type(value), key))  # (signature()'s key)
    if plan is None or plan.scalar_loop is None or not x.flags.c_contiguous or t._view is not None:
        return bind(op, a, b)
    try:
        s = dt.scalar(value, plan.scalars[0][1])
        buf = plan.alloc(plan.out_shape, plan.out_dtype)
        if i:
            plan.scalar_loop(x.reshape(-1), s, buf.reshape(-1))
        else:
            plan.scalar_loop(s, x.reshape(-1), buf.reshape(-1))
    except NbflowError:  # a scalar the dtype cannot hold: bind() says where the call was
        return bind(op, a, b)
    out = _plain(buf, sig=plan.out_sig)
    if t.requires_grad and plan.float_out and (not ODD or STATE.grad_enabled):
        inputs = [t, Tensor(np.asarray(s))]
        STATE.trace.record(op, inputs if i else inputs[::-1], {}, (out,))
    return out


for _name, _op in REFLECTED.items():
    setattr(Tensor, f"__{_name}__", _operator(_op))
    setattr(Tensor, f"__r{_name}__", _operator(_op, reflected=True))
for _name, _op in COMPARISONS.items():
    setattr(Tensor, f"__{_name}__", _operator(_op))


# ---------------------------------------------------------------- constructors


def _infer_dtype(data) -> np.dtype:
    a = np.asarray(data)
    if a.dtype.kind not in "biufc":
        raise DTypeError(f"cannot make a tensor from data of dtype {a.dtype}")
    if a.dtype.kind == "b" or isinstance(data, (np.ndarray, np.generic)):  # numpy's dtype kept
        return dt.widen(a.dtype.newbyteorder("="))  # (a big-endian array's values, held natively)
    if a.dtype.kind == "c":  # Python numbers take the defaults (floats: float32)
        return dt.to_complex(dt.default_float())
    return dt.default_float() if a.dtype.kind == "f" else dt.DEFAULT_INT


def tensor(data, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A new tensor holding a copy of `data` (a Tensor, array, nested list or scalar), on
    `device` ("cpu" by default, "cuda" or "cuda:N")."""
    if device is not None and device != "cpu":
        t = tensor(data.numpy() if isinstance(data, Tensor) else data, dtype).to(device)
        return t.requires_grad_(True) if requires_grad else t
    if isinstance(data, Tensor):
        data = data.numpy()
    try:
        d = dt.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
        t = Tensor(np.array(data, dtype=d, copy=True, order="C"))
    except NbflowError as e:  # an unsupported dtype: named at the user's call
        raise locate(e, user_location()) from None
    except ValueError as e:  # ragged nested lists, unparsable strings
        error = ShapeError(f"cannot make a tensor from this data: {e}")
        raise locate(error, user_location()) from None
    except (OverflowError, TypeError) as e:  # [2**40] as int32, ... as float32: PyTorch refuses too
        error = DTypeError(f"cannot make a {np.dtype(d).name} tensor from this data: {e}")
        raise locate(error, user_location()) from None
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor sharing `array`'s memory (no copy)."""
    if not isinstance(array, np.ndarray):
        raise ArgumentError(f"from_numpy expects a numpy array, got {type(array).__name__}")
    if not array.dtype.isnative:
        raise DTypeError(
            f"from_numpy: dtype {array.dtype} is not in this machine's byte order, so its "
            "memory cannot be shared; nbflow.tensor(array) copies it"
        )
    dt.as_dtype(array.dtype)  # raises DTypeError for dtypes nbflow does not hold
    t = Tensor(array.view(np.ndarray))  # (a view: the caller's array may be reshaped)
    if requires_grad:
        t.requires_grad_(True)
    return t
