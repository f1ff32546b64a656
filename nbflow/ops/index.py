"""Indexing: x[key], x[key] = value, take_along_axis (gather), index_select, scatter_add.

A key is held as a hashable attr, one item per entry of the Python key:
    ("int", i)  ("slice", start, stop, step)  ("none",)  ("ellipsis",)  ("array", k)
where ("array", k) stands for the k-th index tensor, passed as the k-th extra input of the op.
Keys of ints, slices, None and Ellipsis are a view op (`slice`); keys with index arrays are a
gather op (`index`) with numpy's advanced-indexing rules: the index arrays broadcast together,
and their dims replace the indexed axes in place when the advanced indices (arrays, and ints
next to them) are adjacent in the key, else they go first. Boolean masks are turned into index
arrays (their nonzero positions) in eager mode.

Bounds are checked before any kernel runs (numba does not bounds-check): ints in the shape
rule, index arrays in the launcher, raising OutOfRangeError (an IndexError).
"""

import operator
from functools import lru_cache

import numpy as np

from ..core import UNKNOWN, Attr, Op, Spec, broadcast_shapes
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError, OutOfRangeError, ShapeError, UnsupportedError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..runtime import device as devices
from ._define import inplace_variant
from .broadcast import broadcast_to_like
from .creation import zeros_like
from .shape import axis_of, broadcast_to_op, pad_op, reshape_op, size_of, unsqueeze_op

ALL_SLICE = ("slice", None, None, None)
INDEX_DTYPES = (dt.int32, dt.int64)

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _linear_index(idx, dims, lin):
    """lin[b] = the row-major offset of (idx[0, b], idx[1, b], ...) in an array of `dims`,
    negative indices counting from the end. Returns the flat position in idx of the first
    index out of range, or -1 (then lin is complete)."""
    k, nb = idx.shape
    for b in range(nb):
        acc = 0
        for j in range(k):
            i = idx[j, b]
            n = dims[j]
            if i < -n or i >= n:
                return j * nb + b
            if i < 0:
                i += n
            acc = acc * n + i
        lin[b] = acc
    return -1


@njit(**JIT)
def _gather_rows(src, lin, out):
    """out[o, b, i] = src[o, lin[b], i]."""
    for o in range(out.shape[0]):
        for b in range(lin.size):
            j = lin[b]
            for i in range(out.shape[2]):
                out[o, b, i] = src[o, j, i]


@njit(**JIT)
def _put_rows(dst, lin, src):
    """dst[o, lin[b], i] = src[o, b, i] (the last write wins for repeated rows)."""
    for o in range(dst.shape[0]):
        for b in range(lin.size):
            j = lin[b]
            for i in range(dst.shape[2]):
                dst[o, j, i] = src[o, b, i]


@njit(**JIT)
def _add_rows(dst, lin, src):
    """dst[o, lin[b], i] += src[o, b, i] (repeated rows accumulate)."""
    for o in range(dst.shape[0]):
        for b in range(lin.size):
            j = lin[b]
            for i in range(dst.shape[2]):
                dst[o, j, i] += src[o, b, i]


@njit(**JIT)
def _gather_axis(src, idx, out):
    """out[o, j, i] = src[o, idx[o, j, i], i] (indices already checked)."""
    n = src.shape[1]
    for o in range(out.shape[0]):
        for j in range(out.shape[1]):
            for i in range(out.shape[2]):
                k = idx[o, j, i]
                out[o, j, i] = src[o, k + n if k < 0 else k, i]


@njit(**JIT)
def _scatter_add_axis(dst, idx, src):
    """dst[o, idx[o, j, i], i] += src[o, j, i] (indices already checked)."""
    n = dst.shape[1]
    for o in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            for i in range(idx.shape[2]):
                k = idx[o, j, i]
                dst[o, k + n if k < 0 else k, i] += src[o, j, i]


@njit(**JIT)
def _first_out_of_range(idx, n):
    for p in range(idx.size):
        if idx[p] < -n or idx[p] >= n:
            return p
    return -1


# ---------------------------------------------------------------- layout helpers


def _three(shape, start, stop) -> tuple[int, int, int]:
    """shape viewed as (before start, start..stop, from stop on)."""
    return (size_of(shape[:start]), size_of(shape[start:stop]), size_of(shape[stop:]))


def _writable3(a, shape3):
    """(a as shape3 sharing its memory, None), or (a reshaped copy, a) to copy back."""
    view = np.reshape(a, shape3)  # a copy when a's strides do not allow the view
    return (view, None) if np.may_share_memory(view, a) else (view, a)


def _check_range(idx, n, axis):
    """Raise OutOfRangeError naming the axis, index and size when an index is outside n (the
    eager trace puts the op's name in front)."""
    flat = np.ravel(idx)
    if flat.size == 0:
        return
    p = _first_out_of_range(flat, n)
    if p >= 0:
        raise OutOfRangeError(f"index {int(flat[p])} is out of range for axis {axis} with size {n}")


def _check_index_dtype(spec, name):
    if spec.dtype not in INDEX_DTYPES:
        raise DTypeError(f"{name} must be int32 or int64, got {spec.dtype}")


# ---------------------------------------------------------------- keys


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_ITEM_CHECKS = {
    "int": lambda it: len(it) == 2 and _is_int(it[1]),
    "slice": lambda it: len(it) == 4 and all(v is None or _is_int(v) for v in it[1:]),
    "none": lambda it: len(it) == 1,
    "ellipsis": lambda it: len(it) == 1,
    "array": lambda it: len(it) == 2 and _is_int(it[1]),
}


def _check_key(key, n_arrays: int):
    """Reject malformed keys (keys may come from a loaded program, not only from Python)."""
    if not isinstance(key, tuple):
        raise AttrError(f"an index key must be a tuple of items, got {key!r}")
    seen = []
    for item in key:
        kind = item[0] if isinstance(item, tuple) and item else None
        ok = _ITEM_CHECKS.get(kind)
        if ok is None or not ok(item):
            raise AttrError(f"bad index item {item!r}")
        if kind == "slice" and item[3] == 0:
            raise AttrError("slice step cannot be zero")
        if kind == "array":
            seen.append(item[1])
    if sorted(seen) != list(range(n_arrays)):
        raise AttrError(f"the key uses index arrays {seen} but {n_arrays} were given")
    if sum(item[0] == "ellipsis" for item in key) > 1:
        raise AttrError("an index can only have a single ellipsis")


def _expand(key, ndim: int) -> list:
    """The key with its ellipsis replaced by full slices and full slices appended, so that
    each item but ("none",) takes one axis."""
    used = sum(item[0] in ("int", "slice", "array") for item in key)
    if used > ndim:
        raise OutOfRangeError(f"too many indices: {used} for a tensor with {ndim} dims")
    fill = [ALL_SLICE] * (ndim - used)
    if ("ellipsis",) in key:
        i = key.index(("ellipsis",))
        return list(key[:i]) + fill + list(key[i + 1 :])
    return list(key) + fill


def _advanced_first(key) -> bool:
    """numpy's rule: the broadcast index dims go first unless the advanced indices (index
    arrays, and ints when there is an array) are adjacent in the key as written."""
    pos = [i for i, item in enumerate(key) if item[0] in ("array", "int")]
    return bool(pos) and pos[-1] - pos[0] + 1 != len(pos)


def _slice_len(n, start, stop, step) -> int:
    if n == UNKNOWN:
        return UNKNOWN
    return len(range(*slice(start, stop, step).indices(n)))


def _key_shape(x_shape, key, index_shapes) -> tuple[int, ...]:
    """The shape of x[key] (ints checked against known dims)."""
    arrays = any(item[0] == "array" for item in key)
    bshape = broadcast_shapes(*index_shapes) if arrays else ()
    out, axis, at = [], 0, None
    for item in _expand(key, len(x_shape)):
        kind = item[0]
        if kind == "none":
            out.append(1)
            continue
        n = x_shape[axis]
        if kind == "int" and n != UNKNOWN and not -n <= item[1] < n:
            raise OutOfRangeError(f"index {item[1]} is out of range for axis {axis} with size {n}")
        if kind == "slice":
            out.append(_slice_len(n, *item[1:]))
        elif at is None and (kind == "array" or (kind == "int" and arrays)):
            at = len(out)
        axis += 1
    if arrays:
        at = 0 if _advanced_first(key) else at
        out[at:at] = bshape
    return tuple(out)


@lru_cache(maxsize=4096)
def _plan(key, ndim: int):
    """How to run x[key]: (basic numpy key, axes of the basic view that the arrays index,
    axes of x that they index, advanced dims first?)."""
    basic, view_axes, x_axes = [], [], []
    axis = d = 0
    for item in _expand(key, ndim):
        kind = item[0]
        if kind == "none":
            basic.append(None)
            d += 1
            continue
        if kind == "int":
            basic.append(item[1])
        elif kind == "slice":
            basic.append(slice(*item[1:]))
            d += 1
        else:
            basic.append(slice(None))
            view_axes.append(d)
            x_axes.append(axis)
            d += 1
        axis += 1
    basic.append(Ellipsis)  # keeps an all-int key a 0-d view instead of a numpy scalar
    return tuple(basic), tuple(view_axes), tuple(x_axes), _advanced_first(key)


def _rows(v, idx, view_axes, x_axes, front):
    """The advanced part of x[key] on the basic view v: the permutation that puts v's indexed
    axes first (None when they stay in place), v's (outer, indexed, inner) shape, the
    result's (outer, rows, inner) shape, each row's offset among the indexed positions, and
    the broadcast index shape. Raises OutOfRangeError before anything is written."""
    if len(idx) == 1:  # the common case, without broadcasting's copies
        bshape = idx[0].shape
        stacked = idx[0].astype(np.int64, copy=False).reshape(1, -1)
    else:
        arrays = np.broadcast_arrays(*idx)
        bshape = arrays[0].shape
        stacked = np.stack([a.reshape(-1) for a in arrays]).astype(np.int64, copy=False)
    sizes = np.array([v.shape[a] for a in view_axes], np.int64)
    lin = np.empty(stacked.shape[1], np.int64)
    bad = _linear_index(stacked, sizes, lin)
    if bad >= 0:
        j, b = divmod(bad, stacked.shape[1])
        raise OutOfRangeError(
            f"index {int(stacked[j, b])} is out of range for axis {x_axes[j]} with size {sizes[j]}"
        )
    rest = [a for a in range(v.ndim) if a not in view_axes]
    if front:
        perm = tuple(view_axes) + tuple(rest)
        src3 = (1, size_of(sizes), size_of([v.shape[a] for a in rest]))
        res3 = (1, lin.size, src3[2])
    else:
        perm = None
        src3 = _three(v.shape, view_axes[0], view_axes[-1] + 1)
        res3 = (src3[0], lin.size, src3[2])
    return perm, src3, res3, lin, bshape


def _index_items(key, x_shape):
    """Split a Python key into (items, index values); bool masks become nonzero arrays."""
    key = key if isinstance(key, tuple) else (key,)
    raw = [_item(k) for k in key]
    if not any(kind == "mask" for kind, _ in raw):
        return _number(raw)
    # a mask of m dims covers m axes; find them (from the end after an ellipsis)
    used = sum(m.ndim if kind == "mask" else kind in ("int", "slice", "array") for kind, m in raw)
    out, axis = [], 0
    for kind, v in raw:
        if kind == "ellipsis":
            axis += len(x_shape) - used
        elif kind == "mask":
            if v.ndim == 0:  # (numpy's and PyTorch's new axis of length 1 or 0)
                raise UnsupportedError(
                    "a 0-d boolean index (x[True]) is not supported: use x[None] for True, "
                    "x[None][:0] for False"
                )
            covered = tuple(x_shape[axis : axis + v.ndim])
            if covered != v.shape:
                raise OutOfRangeError(
                    f"a boolean mask of shape {v.shape} does not match the "
                    f"indexed dims {covered} (from axis {axis})"
                )
            out.extend(("array", i) for i in np.nonzero(v))
            axis += v.ndim
            continue
        elif kind != "none":
            axis += 1
        out.append((kind, v))
    return _number(out)


def _number(raw):
    items, arrays = [], []
    for kind, v in raw:
        if kind == "array":
            items.append(("array", len(arrays)))
            arrays.append(v)
        else:
            items.append((kind, *v) if isinstance(v, tuple) else (kind,))
    return tuple(items), arrays


def _item(k):
    """One entry of a Python key as (kind, value); array values are given to the op as
    they are (bind turns numpy arrays and lists into tensors)."""
    if k is None:
        return "none", None
    if k is Ellipsis:
        return "ellipsis", None
    if isinstance(k, slice):
        parts = (k.start, k.stop, k.step)
        return "slice", tuple(None if v is None else operator.index(v) for v in parts)
    if isinstance(k, (bool, np.bool_)):
        raise UnsupportedError("indexing with a Python bool is not supported")
    if isinstance(k, (int, np.integer)):
        return "int", (int(k),)
    if hasattr(k, "shape") and hasattr(k, "dtype") and not isinstance(k, np.ndarray):
        if k.dtype != dt.bool_:
            return "array", k  # a tensor (or a graph value)
        data = getattr(k, "_data", None)  # an eager tensor's buffer
        if devices.is_device_array(data):  # a GPU mask: its true positions are found on
            return "mask", devices.to_host(data)  # the host, as a numpy mask's are
        if not isinstance(data, np.ndarray):  # a graph value: its true positions come later
            raise UnsupportedError("boolean mask indexing needs eager mode")
        return "mask", data
    a = np.asarray(k)
    if a.dtype == np.bool_:
        return "mask", a
    if a.size == 0:
        a = a.astype(np.int64)  # x[[]] selects nothing (numpy)
    return "array", a


# ---------------------------------------------------------------- slice: basic keys, a view


def _slice_spec(x, key):
    _check_key(key, 0)
    return Spec(_key_shape(x.shape, key, []), x.dtype)


def _slice_cpu(x, key):
    return x[_plan(key, x.ndim)[0]]


slice_op = Op(
    name="slice",
    inputs=("x",),
    outputs=("out",),
    spec=_slice_spec,
    kernels={"cpu": _slice_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, key: x[_plan(key, x.ndim)[0]],
    attrs={"key": Attr("any")},
    view=True,
    doc="x[key] for a key of ints, slices, None and Ellipsis: a view.",
)


# ---------------------------------------------------------------- index: keys with arrays


def _index_spec(x, *idx, key):
    _check_key(key, len(idx))
    for i, s in enumerate(idx):
        _check_index_dtype(s, f"index array {i}")
    return Spec(_key_shape(x.shape, key, [s.shape for s in idx]), x.dtype)


def _index_cpu(x, *rest, key):
    *idx, out = rest
    basic, view_axes, x_axes, front = _plan(key, x.ndim)
    v = x[basic]
    perm, src3, res3, lin, _ = _rows(v, idx, view_axes, x_axes, front)
    if out.size == 0:
        return
    src = v if perm is None else v.transpose(perm)
    _gather_rows(src.reshape(src3), lin, out.reshape(res3))


def numpy_key(key, indices=()) -> tuple:
    """The numpy key for a key attr, with indices[k] for ("array", k)."""
    as_numpy = {
        "int": lambda it: it[1],
        "slice": lambda it: slice(*it[1:]),
        "none": lambda it: None,
        "ellipsis": lambda it: Ellipsis,
        "array": lambda it: indices[it[1]],
    }
    return tuple(as_numpy[item[0]](item) for item in key)


def _index_ref(x, *idx, key):
    return x[numpy_key(key, idx)]


index_op = Op(
    name="index",
    inputs=("x", "*indices"),
    outputs=("out",),
    spec=_index_spec,
    kernels={"cpu": _index_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=_index_ref,
    attrs={"key": Attr("any")},
    promote=(0,),
    doc="x[key] for a key with integer index arrays (numpy's advanced indexing): a gather.",
)


def _take(x, key, indices):
    """x[key] for a key (items) whose ("array", k) entries are indices[k]."""
    if indices:
        return index_op(x, *indices, key=key)
    return slice_op(x, key=key)


# ---------------------------------------------------------------- index_put: x[key] = value


def _index_put_spec(x, value, *idx, key, accumulate):
    _check_key(key, len(idx))
    for i, s in enumerate(idx):
        _check_index_dtype(s, f"index array {i}")
    target = _key_shape(x.shape, key, [s.shape for s in idx])
    vshape = value.shape
    while len(vshape) > len(target) and vshape[0] == 1:
        vshape = vshape[1:]  # numpy drops leading 1s of the value
    try:
        shape = broadcast_shapes(vshape, target) if len(vshape) <= len(target) else None
    except ShapeError:
        shape = None
    if shape is None or any(a != b and b != UNKNOWN for a, b in zip(shape, target, strict=True)):
        raise ShapeError(f"a value of shape {value.shape} does not fit x[key] of shape {target}")
    return Spec(x.shape, x.dtype)


def _index_put_cpu(x, value, *rest, key, accumulate):
    *idx, out = rest
    basic, view_axes, x_axes, front = _plan(key, x.ndim)
    value = value.astype(out.dtype, copy=False)
    if np.may_share_memory(value, out):  # x[1:] = x[:-1] must read before writing
        value = value.copy()
    if not idx:
        if out is not x:
            np.copyto(out, x)
        target = out[basic]
        value = value.reshape(value.shape[max(0, value.ndim - target.ndim) :])
        if accumulate:
            np.add(target, value, out=target)
        else:
            np.copyto(target, value)
        return
    v = x[basic]
    perm, src3, res3, lin, bshape = _rows(v, idx, view_axes, x_axes, front)
    if out is not x:
        np.copyto(out, x)
    if lin.size == 0 or size_of(src3) == 0:
        return
    target = out[basic]
    if perm is not None:
        target = target.transpose(perm)
    dst, back = _writable3(target, src3)
    result = _result_shape(v.shape, view_axes, bshape, front)
    value = value.reshape(value.shape[max(0, value.ndim - len(result)) :])
    src = np.broadcast_to(value, result).reshape(res3)
    (_add_rows if accumulate else _put_rows)(dst, lin, src)
    if back is not None:
        back[...] = dst.reshape(back.shape)


def _result_shape(vshape, view_axes, bshape, front):
    rest = tuple(n for a, n in enumerate(vshape) if a not in view_axes)
    if front:
        return tuple(bshape) + rest
    i = view_axes[0]
    return vshape[:i] + tuple(bshape) + vshape[view_axes[-1] + 1 :]


def _index_put_ref(x, value, *idx, key, accumulate=False):
    out = x.copy()
    region = _index_ref(np.arange(x.size).reshape(x.shape), *idx, key=key)
    value = np.asarray(value).astype(x.dtype)
    value = value.reshape(value.shape[max(0, value.ndim - np.ndim(region)) :])  # leading 1s
    value = np.broadcast_to(value, np.shape(region)).ravel()
    flat = out.reshape(-1)
    for pos, v in zip(np.ravel(region), value, strict=True):
        flat[pos] = flat[pos] + v if accumulate else v
    return out


index_put_op = Op(
    name="index_put",
    inputs=("x", "value", "*indices"),
    outputs=("out",),
    spec=_index_put_spec,
    kernels={"cpu": _index_put_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=_index_put_ref,
    attrs={"key": Attr("any"), "accumulate": Attr("bool", False)},
    promote=(0,),
    doc="A copy of x with x[key] = value (value broadcast and cast to x's dtype); with "
    "accumulate, x[key] += value where repeated indices add up (PyTorch's index_put).",
)


def _index_put_grad(g, out, x, value, *idx, key, accumulate):
    gx = g if accumulate else index_put_op(g, 0, *idx, key=key)  # the overwritten part: zero
    gv = _take(g, key, idx)
    if value.ndim > gv.ndim:  # the value had leading 1s
        gv = unsqueeze_op(gv, axis=tuple(range(value.ndim - gv.ndim)))
    return (gx, gv) + (None,) * len(idx)


index_put_op.defgrad(_index_put_grad)
index_put_inplace_op = inplace_variant(index_put_op, "index_put_")

slice_op.defgrad(lambda g, out, x, key: (index_put_op(zeros_like(x), g, key=key),))
index_op.defgrad(
    lambda g, out, x, *idx, key: (
        (index_put_op(zeros_like(x), g, *idx, key=key, accumulate=True),) + (None,) * len(idx)
    )
)


def getitem(x, key):
    """x[key] with numpy's rules: ints, slices (any step), None, Ellipsis, integer index
    arrays (lists, numpy arrays, int tensors) and, in eager mode, boolean masks."""
    items, arrays = _index_items(key, tuple(x.shape))
    return _take(x, items, arrays)


def setitem(x, key, value):
    """x[key] = value in place (value broadcast and cast to x's dtype); returns x."""
    items, arrays = _index_items(key, tuple(x.shape))
    index_put_inplace_op(x, value, *arrays, key=items)
    return x


def index_put(x, indices, values, accumulate=False):
    """PyTorch's index_put, out of place: a copy of x with x[indices] = values, or, with
    accumulate, x[indices] += values where repeated indices add up. `indices` is any key
    getitem takes (a tuple of index tensors, or ints, slices, ...)."""
    items, arrays = _index_items(indices, tuple(x.shape))
    return index_put_op(x, values, *arrays, key=items, accumulate=accumulate)


def index_put_(x, indices, values, accumulate=False):
    """index_put in place; returns x."""
    items, arrays = _index_items(indices, tuple(x.shape))
    index_put_inplace_op(x, values, *arrays, key=items, accumulate=accumulate)
    return x


# ---------------------------------------------------------------- take_along_axis (gather)


def _along_spec(x, idx, axis):
    if x.ndim == 0 or x.ndim != idx.ndim:
        raise ShapeError("x and indices need the same number of dims (>= 1)")
    _check_index_dtype(idx, "indices")
    a = axis_of(axis, x.ndim)
    shape = []
    for d, (n, m) in enumerate(zip(x.shape, idx.shape, strict=True)):
        shape.append(m if d == a else broadcast_shapes((n,), (m,))[0])
    return Spec(tuple(shape), x.dtype)


def _along_cpu(x, idx, out, axis):
    a = axis % x.ndim
    n = x.shape[a]
    _check_range(idx, n, a)
    if out.size == 0:
        return
    xb = np.broadcast_to(x, out.shape[:a] + (n,) + out.shape[a + 1 :])
    ib = np.broadcast_to(idx.astype(np.int64, copy=False), out.shape)
    _gather_axis(
        xb.reshape(_three(xb.shape, a, a + 1)),
        ib.reshape(_three(ib.shape, a, a + 1)),
        out.reshape(_three(out.shape, a, a + 1)),
    )


take_along_axis_op = Op(
    name="take_along_axis",
    inputs=("x", "indices"),
    outputs=("out",),
    spec=_along_spec,
    kernels={"cpu": _along_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, idx, axis: np.take_along_axis(x, idx, axis),
    attrs={"axis": Attr("int")},
    promote=(0,),
    doc="out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis` (numpy's "
    "take_along_axis; PyTorch's gather, but x and indices broadcast in the other dims).",
)


def _along_grad(g, out, x, idx, axis):
    a = axis % x.ndim
    target = x
    if any(
        d != a and n == 1 and m != 1
        for d, (n, m) in enumerate(zip(x.shape, out.shape, strict=True))
    ):
        # x was broadcast against indices: scatter into the broadcast shape, the driver sums
        target = broadcast_to_op(
            x, shape=tuple(-1 if d == a else m for d, m in enumerate(out.shape))
        )
    if UNKNOWN in idx.shape or tuple(idx.shape) != tuple(g.shape):
        idx = broadcast_to_like(idx, g)
    return (scatter_add_op(zeros_like(target), idx, g, axis=a), None)


take_along_axis_op.defgrad(_along_grad)


def take_along_axis(x, indices, axis):
    """numpy.take_along_axis(x, indices, axis)."""
    return take_along_axis_op(x, indices, axis=axis)


def gather(x, axis, index):
    """PyTorch's argument order for take_along_axis: x.gather(axis, index); a 0-d x and index
    are one element (PyTorch's)."""
    if x.ndim == 0 and getattr(index, "ndim", None) == 0:
        vectors = (reshape_op(x, shape=(1,)), reshape_op(index, shape=(1,)))
        return reshape_op(take_along_axis_op(*vectors, axis=axis_of(axis, 0)), shape=())
    return take_along_axis_op(x, index, axis=axis)


# ---------------------------------------------------------------- index_select


def _select_spec(x, idx, axis):
    if x.ndim == 0:
        raise ShapeError("cannot index_select a 0-d tensor")
    _check_index_dtype(idx, "index")
    a = axis_of(axis, x.ndim)
    return Spec(x.shape[:a] + tuple(idx.shape) + x.shape[a + 1 :], x.dtype)


def _select_cpu(x, idx, out, axis):
    a = axis % x.ndim
    o, n, i = _three(x.shape, a, a + 1)
    if idx.size == 1:  # a loop's step picking its slice: cheaper than through the kernels
        k = int(idx.reshape(-1)[0])
        if not -n <= k < n:
            raise OutOfRangeError(f"index {k} is out of range for axis {a} with size {n}")
        k %= n
        np.copyto(out.reshape(o, 1, i), x.reshape(o, n, i)[:, k : k + 1])
        return
    lin = np.empty(idx.size, np.int64)
    flat = np.ravel(idx).astype(np.int64, copy=False).reshape(1, -1)
    bad = _linear_index(flat, np.array([x.shape[a]], np.int64), lin)
    if bad >= 0:
        raise OutOfRangeError(
            f"index {int(flat[0, bad])} is out of range for axis {a} with size {x.shape[a]}"
        )
    if out.size == 0:
        return
    _gather_rows(x.reshape(o, n, i), lin, out.reshape(o, lin.size, i))


index_select_op = Op(
    name="index_select",
    inputs=("x", "index"),
    outputs=("out",),
    spec=_select_spec,
    kernels={"cpu": _select_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, idx, axis: np.take(x, idx, axis=axis),
    attrs={"axis": Attr("int")},
    promote=(0,),
    doc="The entries of x at `index` along `axis`: x[:, ..., index] (numpy's take with an "
    "axis; the index may have any shape, PyTorch's is 1-D).",
)


def _select_grad(g, out, x, idx, axis):
    key = (ALL_SLICE,) * (axis % x.ndim) + (("array", 0),)
    return (index_put_op(zeros_like(x), g, idx, key=key, accumulate=True), None)


index_select_op.defgrad(_select_grad)


def index_select(x, axis, index):
    """PyTorch's index_select(x, axis, index); a 0-d x is one element along axis 0 (PyTorch's),
    so the index picks it and the result is 0-d."""
    if x.ndim == 0 and getattr(index, "ndim", None) == 1:
        picked = index_select_op(reshape_op(x, shape=(1,)), index, axis=axis_of(axis, 0))
        return reshape_op(picked, shape=())
    return index_select_op(x, index, axis=axis)


# ---------------------------------------------------------------- checked_range


def _checked_range_spec(x, low, high, what):
    if x.dtype not in dt.INTS:
        raise DTypeError(f"{what} must be int32 or int64, got {x.dtype}")
    return Spec(x.shape, x.dtype)


def check_in_range(x: np.ndarray, low: int, high: int, what: str):
    """OutOfRangeError naming `what`, the first value outside [low, high] and its position."""
    bad = np.flatnonzero((x < low) | (x > high))
    if bad.size:
        where = tuple(int(i) for i in np.unravel_index(bad[0], x.shape))
        raise OutOfRangeError(
            f"{what} must be in [{low}, {high}], got {int(x.flat[bad[0]])} at position {where}"
        )


def _checked_range_cpu(x, out, low, high, what):
    check_in_range(x, low, high, what)
    out[...] = x


checked_range = Op(
    name="checked_range",
    inputs=("x",),
    outputs=("out",),
    spec=_checked_range_spec,
    kernels={"cpu": _checked_range_cpu, "cuda": None},
    dtypes=dt.INTS,
    ref=lambda x, low, high, what: x.copy(),
    differentiable=False,
    attrs={"low": Attr("int"), "high": Attr("int"), "what": Attr("str")},
    doc="x itself, checked when the op runs to lie in [low, high] (an OutOfRangeError naming "
    "`what` otherwise): a program's check of integers known only at run time, such as the "
    "lengths of dynamic_rnn. The check runs because the op's output is used.",
)


# ---------------------------------------------------------------- scatter_add


def _scatter_add_spec(x, idx, src, axis):
    if not x.ndim == idx.ndim == src.ndim or x.ndim == 0:
        raise ShapeError("x, index and src need the same number of dims (>= 1)")
    _check_index_dtype(idx, "index")
    a = axis_of(axis, x.ndim)
    for d, (n, i, s) in enumerate(zip(x.shape, idx.shape, src.shape, strict=True)):
        if UNKNOWN in (i, s) or (d != a and n == UNKNOWN):
            continue
        if i > s or (d != a and i > n):
            raise ShapeError(
                f"index dim {d} ({i}) is larger than src's ({s})"
                + ("" if d == a else f" or x's ({n})")
            )
    return Spec(x.shape, x.dtype)


def _scatter_add_cpu(x, idx, src, out, axis):
    a = axis % x.ndim
    _check_range(idx, x.shape[a], a)
    np.copyto(out, x)
    if idx.size == 0:
        return
    region = tuple(slice(0, n) for n in idx.shape)
    src = src.astype(out.dtype, copy=False)[region]
    target = out[region[:a] + (slice(None),) + region[a + 1 :]]
    dst, back = _writable3(target, _three(target.shape, a, a + 1))
    i3 = idx.astype(np.int64, copy=False).reshape(_three(idx.shape, a, a + 1))
    _scatter_add_axis(dst, i3, src.reshape(_three(src.shape, a, a + 1)))
    if back is not None:
        back[...] = dst.reshape(back.shape)


def _scatter_add_ref(x, idx, src, axis):
    out = x.copy()
    a = axis % x.ndim
    for pos in np.ndindex(*idx.shape):
        to = list(pos)
        to[a] = idx[pos]
        out[tuple(to)] += src[pos]
    return out


scatter_add_op = Op(
    name="scatter_add",
    inputs=("x", "index", "src"),
    outputs=("out",),
    spec=_scatter_add_spec,
    kernels={"cpu": _scatter_add_cpu, "cuda": None},
    dtypes=dt.NUMERIC + dt.COMPLEX,
    ref=_scatter_add_ref,
    attrs={"axis": Attr("int")},
    promote=(0,),
    doc="A copy of x with out[..., index[p], ...] += src[p] along `axis` for every position p "
    "of index (PyTorch's scatter_add; src is cast to x's dtype).",
)


def _scatter_add_grad(g, out, x, idx, src, axis):
    a = axis % x.ndim
    part = g
    if any(d != a and i != n for d, (i, n) in enumerate(zip(idx.shape, g.shape, strict=True))):
        key = tuple(ALL_SLICE if d == a else ("slice", 0, i, None) for d, i in enumerate(idx.shape))
        part = slice_op(g, key=key)
    gsrc = take_along_axis_op(part, idx, axis=a)
    if tuple(src.shape) != tuple(idx.shape):  # src entries past index's shape get nothing
        widths = tuple(v for s, i in zip(src.shape, idx.shape, strict=True) for v in (0, s - i))
        gsrc = pad_op(gsrc, pad_width=widths)
    return (g, None, gsrc)


scatter_add_op.defgrad(_scatter_add_grad)


def scatter_add(x, axis, index, src):
    """PyTorch's scatter_add(x, axis, index, src), out of place; a 0-d x, index and src are
    one element (PyTorch's)."""
    if x.ndim == 0 and getattr(index, "ndim", None) == 0:
        vectors = (reshape_op(t, shape=(1,)) for t in (x, index, src))
        return reshape_op(scatter_add_op(*vectors, axis=axis_of(axis, 0)), shape=())
    return scatter_add_op(x, index, src, axis=axis)


__all__ = [
    "getitem",
    "setitem",
    "index_put",
    "index_put_",
    "take_along_axis",
    "gather",
    "index_select",
    "scatter_add",
    "checked_range",
]
