"""PyTorch's questions about tensors and dtypes (is_tensor, is_floating_point, finfo,
promote_types, numel, ...), as_tensor, asarray and scalar_tensor, and the constants torch exports
(e, pi, inf, nan, newaxis)."""

import math

import numpy as np

from ..argcheck import integers, number
from ..core import REGISTRY, UNKNOWN, Value
from ..core import broadcast_shapes as broadcast_shapes_of
from ..core import dtypes as dt
from ..core.errors import (
    AttrError,
    DTypeError,
    ShapeError,
    UnsupportedError,
)
from .creation import manual_seed, on_device
from .elementwise import (
    astype,
    clone,
)
from .shape import (
    reshape,
)

# ---------------------------------------------------------------- tensors and dtypes


def is_tensor(obj):
    """Whether obj is an nbflow tensor (a graph value counts, so a function traced by
    nbflow.jit decides as it does in eager mode)."""
    return isinstance(obj, Value)


def as_tensor(data, dtype=None, device=None):
    """data as a tensor: a tensor of that dtype (and device) itself, no copy; another one
    converted (recorded, so gradients flow back); other data copied as nbflow.tensor does
    (nbflow.from_numpy shares a numpy array's memory)."""
    want = None if dtype is None else dt.as_dtype(dtype)
    if not is_tensor(data):
        try:
            array = np.asarray(data)
        except ValueError as e:  # ragged nested lists
            raise ShapeError(f"as_tensor: cannot make a tensor from this data: {e}") from None
        if want is None:
            want = _data_dtype(data, array)
        data = astype(array, want)
    elif want is not None and want != data.dtype:
        data = astype(data, want)
    return on_device(data, device)


def _data_dtype(data, array):
    """nbflow.tensor's inferred dtype: Python floats and ints as the default float dtype and
    int64."""
    kind = array.dtype.kind
    if kind not in "biuf":
        raise DTypeError(f"as_tensor: cannot make a tensor from data of dtype {array.dtype}")
    if not isinstance(data, np.ndarray) and kind in "fiu":
        return dt.default_float() if kind == "f" else dt.DEFAULT_INT
    return dt.widen(array.dtype.newbyteorder("="))


def get_default_dtype():
    """The dtype of float tensors made from Python floats (float32 unless set_default_dtype
    changed it)."""
    return dt.default_float()


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (PyTorch's broadcast_shapes; an int is a 1-D
    shape); ShapeError when they do not broadcast."""
    as_tuples = [integers(s, "broadcast_shapes: a shape") for s in shapes]
    if any(n < 0 for s in as_tuples for n in s):
        raise ShapeError(f"broadcast_shapes: dims must be ints >= 0, got {as_tuples}")
    return tuple(broadcast_shapes_of(*as_tuples))


def set_default_dtype(d):
    """PyTorch's set_default_dtype: float32 or float64 becomes the dtype of tensors made from
    Python floats, of float creation ops without a dtype, of integer inputs to float ops
    (sqrt of an int tensor) and of new modules' parameters. Existing tensors keep theirs; the
    ops' cached plans and checked attrs, made for the old default, are dropped, and @jit
    traces again (its cache key holds the default)."""
    dt.set_default_float(d)
    for op in REGISTRY.values():
        op.cache.clear()
        op.checked_attrs.clear()


# ---------------------------------------------------------------- constants and dtypes

e, pi, inf, nan = math.e, math.pi, math.inf, math.nan
newaxis = None  # x[nbflow.newaxis] adds a dim, as numpy's


def is_floating_point(input):
    """Whether input's dtype is a float dtype."""
    return dt.is_float(input.dtype)


def is_complex(input):
    """Whether input's dtype is complex64 or complex128."""
    return np.dtype(input.dtype).kind == "c"


def is_signed(input):
    """Whether input's dtype is signed (every nbflow dtype but bool)."""
    return np.dtype(input.dtype).kind in "ifc"


def is_same_size(input, other):
    """Whether the two tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    """Whether a tensor of exactly one element is nonzero (eager tensors: a graph value has
    no value until its program runs)."""
    if numel(input) != 1:
        raise ShapeError(f"is_nonzero: input must have one element, got shape {input.shape}")
    return bool(reshape(input, ()))


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ to to: never to a lower kind (float to
    int, int or float to bool)."""
    return dt.kind(dt.as_dtype(to)) >= dt.kind(dt.as_dtype(from_))


def promote_types(type1, type2):
    """The dtype the two dtypes promote to (nbflow/core/dtypes.py's table, PyTorch's)."""
    return dt.promote_pair(dt.as_dtype(type1), dt.as_dtype(type2))


def result_type(tensor1, tensor2):
    """The dtype an elementwise op on the two (tensors or numbers) gives. nbflow's rule: a
    number is weak (counts only when of a higher kind), a 0-d tensor is not (PyTorch also
    makes 0-d tensors weak against dimensioned ones)."""
    both = (tensor1, tensor2)
    strong = [x.dtype for x in both if _is_value(x)]
    return dt.promote(strong, [dt.scalar_dtype(x) for x in both if not _is_value(x)])


def finfo(type=None):
    """numpy's finfo of a float dtype (float32 when None): eps, max, min, tiny, bits..."""
    dtype = dt.as_dtype(type)
    if not dt.is_float(dtype):
        raise DTypeError(f"finfo takes a float dtype, got {dtype}")
    return np.finfo(dtype)


def iinfo(type):
    """numpy's iinfo of an integer dtype: min, max, bits."""
    dtype = dt.as_dtype(type)
    if dtype not in dt.INTS:
        raise DTypeError(f"iinfo takes an integer dtype, got {dtype}")
    return np.iinfo(dtype)


def seed():
    """Seed the default generator from the system's entropy; returns the seed (an int)."""
    value = int(np.random.SeedSequence().entropy % 2**63)
    manual_seed(value)
    return value


def get_device(input):
    """-1 on the CPU, else the GPU's index (PyTorch's answer)."""
    return input.get_device()


# ---------------------------------------------------------------- values, numel, tensors


def _is_value(x) -> bool:
    """A tensor, a graph value or an array (what the ops take as a tensor argument)."""
    return all(hasattr(x, a) for a in ("shape", "ndim", "dtype"))


def eager_values_or_none(t):
    """t's values in eager mode; None for a graph value (it has none until the program runs)."""
    try:
        return np.asarray(t.numpy())
    except (AttributeError, UnsupportedError):
        return None


def numel(input):
    """The number of elements (an int)."""
    if UNKNOWN in tuple(input.shape):
        raise UnsupportedError(f"numel of a value of shape {input.shape}: a dim is unknown")
    return math.prod(input.shape)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """The number s as a 0-d tensor, in the default float dtype unless given."""
    if not isinstance(s, (bool, np.bool_)):
        number("scalar_tensor", "s", s)
    dtype = dt.as_dtype(dtype)
    return on_device(astype(np.asarray(dt.scalar(s, dtype)), dtype), device, requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """obj as a tensor: a tensor of that dtype is itself (a copy with copy=True); other data
    are copied as as_tensor does (PyTorch would share a numpy array's memory, which
    nbflow.from_numpy does: here copy=False raises where a copy is made). requires_grad:
    None keeps a tensor's, False detaches, True asks for it."""
    want = None if dtype is None else dt.as_dtype(dtype)
    same = is_tensor(obj) and (want is None or want == obj.dtype)
    if copy is False and not same:
        raise AttrError(
            f"asarray: copy=False, but {type(obj).__name__} needs a copy here "
            "(nbflow.from_numpy shares a numpy array's memory)"
        )
    if not is_tensor(obj):
        out = as_tensor(obj, dtype=want)
    else:
        out = obj if same else astype(obj, want)
        out = clone(out) if copy and out is obj else out
    if requires_grad is False and out.requires_grad:
        out = out.detach()
    out = on_device(out, device)
    if requires_grad and not out.requires_grad:
        out = on_device(out.detach() if out is obj else out, None, True)
    return out


__all__ = [
    "is_tensor",
    "as_tensor",
    "get_default_dtype",
    "set_default_dtype",
    "broadcast_shapes",
    "is_floating_point",
    "is_complex",
    "is_signed",
    "is_same_size",
    "is_nonzero",
    "can_cast",
    "promote_types",
    "result_type",
    "finfo",
    "iinfo",
    "get_device",
    "newaxis",
    "seed",
    "e",
    "pi",
    "inf",
    "nan",
    "numel",
    "scalar_tensor",
    "asarray",
]
