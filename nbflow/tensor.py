"""Eager mode: the Tensor and the eager trace that runs ops as they are called.

A Tensor holds a numpy buffer, `requires_grad`, `grad`, a version counter shared with its
views, and the tape node that produced it (`_node`, `_index`). Nodes hang off their outputs,
so a graph nobody references is freed by reference counting.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import dtypes as dt
from .core import STATE, Node, Op, Spec
from .errors import DTypeError, GradientError, UnsupportedError


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "_node", "_index", "_version", "_base", "__weakref__")
    __array_priority__ = 1000  # numpy defers `ndarray + Tensor` to Tensor.__radd__
    __hash__ = object.__hash__  # == is elementwise, identity stays the hash

    def __init__(self, data, requires_grad=False, _node=None, _index=0, _version=None, _base=None):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._node = _node
        self._index = _index
        self._version = [0] if _version is None else _version  # shared by a buffer's views
        self._base = _base

    # -------------------------------------------------------------- properties

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def version(self) -> int:
        return self._version[0]

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def spec(self) -> Spec:
        return Spec(self.data.shape, self.data.dtype)

    @property
    def T(self) -> Tensor:  # noqa: N802  (numpy/PyTorch name)
        return self.permute(tuple(range(self.ndim - 1, -1, -1)))

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    # -------------------------------------------------------------- conversion

    def numpy(self) -> np.ndarray:
        """The buffer itself (no copy); writing to it bypasses version checks."""
        return self.data

    def __array__(self, dtype=None, copy=None):
        a = self.data
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self.data.reshape(()).item()

    def tolist(self):
        return self.data.tolist()

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise ValueError(
                f"the truth value of a tensor with shape {self.shape} is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.data.reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.data.size != 1:
            raise TypeError("only integer tensors with one element can be used as an index")
        return int(self.item())

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", prefix="tensor(")
        extra = f", dtype={self.dtype}" if self.dtype != dt.float32 else ""
        if self._node is not None:
            extra += f", grad_fn={self._node.op.name}"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # -------------------------------------------------------------- autograd

    def detach(self) -> Tensor:
        """The same buffer, cut from the graph (shares the version counter)."""
        return Tensor(self.data, _version=self._version, _base=self._base or self)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if flag and not dt.is_float(self.dtype):
            raise DTypeError(f"only float tensors can require grad, got {self.dtype}")
        if self._node is not None and not flag:
            raise GradientError("requires_grad can only be cleared on a leaf; use detach()")
        self.requires_grad = flag
        return self

    def backward(self, grad=None, create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's .grad (grad: the seed, default 1)."""
        from .autograd import backward

        backward([self], None if grad is None else [grad], create_graph=create_graph)

    def retain_grad(self):
        raise UnsupportedError("retain_grad: use nbflow.grad(out, [intermediate]) instead")


class _Stale:
    """Stands for a saved tensor that was modified in place after it was saved.

    A gradient rule that uses it raises; a rule that does not need it never notices."""

    __slots__ = ("message",)

    def __init__(self, message: str):
        self.message = message

    def __getattr__(self, name):
        raise GradientError(self.message)


def as_tensor_value(x):
    """What bind() accepts as an input: a Tensor, a weak Python scalar, or array data."""
    if type(x) is Tensor:
        return x
    if isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)) and not isinstance(
        x, np.ndarray
    ):
        return x
    if isinstance(x, _Stale):
        raise GradientError(x.message)
    if isinstance(x, Tensor):
        return x
    return tensor(x)


class EagerTrace:
    """Runs each op at once; records a tape node when a gradient may be needed."""

    def apply(self, op: Op, args, attrs):
        if attrs or op.attrs:
            attrs = op.check_attrs(attrs)
        values = [a if type(a) is Tensor else as_tensor_value(a) for a in args]
        out_specs, key, launcher, compute = self.plan(op, values, attrs)
        tensors = [v if type(v) is Tensor else _scalar_tensor(v, key, op, i)
                   for i, v in enumerate(values)]
        if op.view:
            results = launcher(*[t.data for t in tensors], **attrs)
            results = results if isinstance(results, tuple) else (results,)
            base = tensors[0]._base or tensors[0]
            outs = [Tensor(r, _version=tensors[0]._version, _base=base) for r in results]
        else:
            outs = self.run(op, tensors, out_specs, compute, launcher, attrs)
        record = STATE.grad_enabled and op.differentiable and any(
            t.requires_grad for t in tensors
        )
        if op.inplace:
            return self.finish_inplace(op, tensors, outs, attrs, record)
        if record:
            node = Node(op, tensors, attrs, None, [t._version[0] for t in tensors])
            refs = []
            for i, o in enumerate(outs):
                if dt.is_float(o.data.dtype):
                    o.requires_grad, o._node, o._index = True, node, i
                refs.append(weakref.ref(o))
            node.outputs = [(r, o.data, o._version, o._version[0]) for r, o in zip(refs, outs)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def plan(self, op, values, attrs):
        """(output specs, key dtype, launcher, compute dtype), cached per input signature."""
        sig = tuple(
            (v.data.shape, v.data.dtype) if type(v) is Tensor else dt.scalar_dtype(v)
            for v in values
        )
        ck = (sig, tuple(attrs.values())) if attrs else sig
        try:
            hit = op.cache.get(ck)
        except TypeError:  # an unhashable attr (rare): no caching
            ck, hit = None, None
        if hit is None:
            specs = [
                Spec(v.data.shape, v.data.dtype)
                if type(v) is Tensor
                else Spec((), dt.scalar_dtype(v), weak=True)
                for v in values
            ]
            out_specs = op.infer(specs, attrs)
            key = op.key_dtype(specs) if specs else None
            if key is None:
                key = out_specs[0].dtype
            launcher = op.kernel("cpu", key)
            hit = (out_specs, key, launcher, dt.CPU_COMPUTE.get(key, key))
            if ck is not None:
                op.cache[ck] = hit
        return hit

    def run(self, op, tensors, out_specs, compute, launcher, attrs):
        """Cast the promoted inputs to the compute dtype, allocate outputs, run the kernel."""
        cast = range(len(tensors)) if op.promote is None else op.promote
        arrays = [t.data for t in tensors]
        for i in cast:
            if arrays[i].dtype != compute:
                arrays[i] = arrays[i].astype(compute)
        bufs = []
        for i, s in enumerate(out_specs):
            j = op.inplace.get(i)
            target = tensors[j].data if j is not None else None
            if target is not None and target.dtype == dt.CPU_COMPUTE.get(s.dtype, s.dtype):
                bufs.append(target)
            else:
                bufs.append(np.empty(s.shape, dt.CPU_COMPUTE.get(s.dtype, s.dtype)))
        launcher(*arrays, *bufs, **attrs)
        outs = []
        for i, (b, s) in enumerate(zip(bufs, out_specs)):
            j = op.inplace.get(i)
            if j is not None:
                if b is not tensors[j].data:
                    np.copyto(tensors[j].data, b, casting="unsafe")
                outs.append(tensors[j])
            else:
                outs.append(Tensor(b if b.dtype == s.dtype else b.astype(s.dtype)))
        return outs

    def finish_inplace(self, op, tensors, outs, attrs, record):
        """Bump versions; move the written tensor's history onto the in-place node."""
        for i, j in op.inplace.items():
            t = tensors[j]
            if record and t.requires_grad and t._node is None:
                raise GradientError(
                    f"{op.name}: a leaf tensor that requires grad is used in an in-place op; "
                    "wrap it in nbflow.no_grad() or use the out-of-place op"
                )
            if record and t._base is not None:
                raise UnsupportedError(
                    f"{op.name}: in-place ops on views are not recorded for autograd yet"
                )
            t._version[0] += 1
        if record:
            # the node's inputs are the values *before* the write: old history, old version
            ins = list(tensors)
            versions = [x._version[0] for x in tensors]
            for i, j in op.inplace.items():
                t = tensors[j]
                ins[j] = Tensor(t.data, t.requires_grad, t._node, t._index, t._version)
                versions[j] -= 1
            node = Node(op, ins, attrs, None, versions)
            node.outputs = []
            for i, o in enumerate(outs):
                o.requires_grad, o._node, o._index = True, node, i
                node.outputs.append((weakref.ref(o), o.data, o._version, o._version[0]))
        return outs[0] if len(outs) == 1 else tuple(outs)


def _scalar_tensor(value, key, op, i) -> Tensor:
    """A weak Python scalar as a 0-d tensor of the dtype promotion gave it."""
    promoted = op.promote is None or i in op.promote
    return Tensor(np.asarray(value, dtype=key if promoted else dt.scalar_dtype(value)))


STATE.trace = EagerTrace()


# ---------------------------------------------------------------- constructors


def _infer_dtype(data) -> np.dtype:
    a = np.asarray(data)
    if a.dtype.kind == "f" and not isinstance(data, np.ndarray):
        return dt.DEFAULT_FLOAT  # Python floats default to float32, as in PyTorch
    if a.dtype.kind in "iu" and not isinstance(data, np.ndarray):
        return dt.DEFAULT_INT
    if a.dtype.kind not in "biuf":
        raise DTypeError(f"cannot make a tensor from data of dtype {a.dtype}")
    return dt.widen(a.dtype)


def tensor(data, dtype=None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (a Tensor, array, nested list or scalar)."""
    if isinstance(data, Tensor):
        data = data.data
    d = dt.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    t = Tensor(np.array(data, dtype=d, copy=True, order="C"))
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor sharing `array`'s memory (no copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy array, got {type(array).__name__}")
    dt.as_dtype(array.dtype)  # raises DTypeError for dtypes nbflow does not hold
    t = Tensor(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ---------------------------------------------------------------- operators and methods

from . import ops  # noqa: E402  (ops must exist before their methods are attached)


def _binary(op, reflected=False):
    if reflected:
        return lambda self, other: op(other, self)
    return lambda self, other: op(self, other)


_OPERATORS = {
    "add": ops.add,
    "sub": ops.sub,
    "mul": ops.mul,
    "truediv": ops.div,
    "floordiv": ops.floor_div,
    "mod": ops.mod,
    "pow": ops.pow,
    "and": ops.logical_and,
    "or": ops.logical_or,
    "xor": ops.logical_xor,
}
for _name, _op in _OPERATORS.items():
    setattr(Tensor, f"__{_name}__", _binary(_op))
    setattr(Tensor, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in {"eq": ops.eq, "ne": ops.ne, "lt": ops.lt, "le": ops.le, "gt": ops.gt,
                   "ge": ops.ge}.items():
    setattr(Tensor, f"__{_name}__", _binary(_op))
Tensor.__neg__ = lambda self: ops.neg(self)
Tensor.__abs__ = lambda self: ops.abs(self)
Tensor.__invert__ = lambda self: ops.logical_not(self)
Tensor.__pos__ = lambda self: self


def _iop(inplace):
    def method(self, other):
        inplace(self, other)
        return self

    return method


Tensor.__iadd__ = _iop(ops.add_)
Tensor.__isub__ = _iop(ops.sub_)
Tensor.__imul__ = _iop(ops.mul_)
Tensor.__itruediv__ = _iop(ops.div_)

# methods that mirror ops: x.exp() is ops.exp(x); x.sum(axis=1) is ops.sum(x, axis=1)
METHODS = (
    "add sub mul div floor_div mod pow neg abs sign exp log log1p expm1 sqrt rsqrt sin cos "
    "tanh erf sigmoid relu leaky_relu gelu softplus maximum minimum clip cast "
    "eq ne lt le gt ge logical_and logical_or logical_xor logical_not isnan isinf isfinite "
    "add_ sub_ mul_ div_ clip_ zeros_like ones_like full_like"
).split()
# added by the families as they land (tested for completeness in tests/test_registry.py)
LATER_METHODS = (
    "sum mean prod max min argmax argmin var std logsumexp all any matmul reshape transpose "
    "permute broadcast_to squeeze unsqueeze flatten split gather take_along_axis index_select "
    "scatter_add pad flip tile repeat softmax log_softmax zero_ fill_ copy_ clamp_ clamp "
    "astype"
).split()


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__ if hasattr(fn, "__name__") else str(fn)
    method.__doc__ = getattr(fn, "doc", None) or getattr(fn, "__doc__", None)
    return method


for _name in METHODS + LATER_METHODS:
    if hasattr(ops, _name):
        setattr(Tensor, _name, _method(getattr(ops, _name)))
