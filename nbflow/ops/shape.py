"""Shape ops: reshape, transpose/permute, broadcast_to, squeeze/unsqueeze, flatten, concat,
stack, split, pad, flip (tile and repeat: tiling.py); each gradient rule right below its op.

Ops that only re-describe memory (reshape, permute, flip, ...) are view ops: the launcher
returns a numpy view (a reshape no view expresses copies into a recycled buffer) sharing the
input's version counter; the others write the preallocated output. `<name>_op` is the op; the
public `<name>` takes PyTorch/numpy-style arguments (`x.reshape(2, 3)`, `concat([a, b], 1)`).

Gradient rules that need a shape take it from a tensor (`reshape_like`, `split_like`,
`sum_to_like`) rather than from an attr, so that they also work in graph mode, where a dim may
be unknown (-1) until run time.
"""

import math

import numpy as np

from ..argcheck import integers, shown
from ..core import UNKNOWN, Attr, Op, Spec, as_int, normalize_axis, rebuilt
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DomainError, ShapeError
from ..runtime import buffers
from .broadcast import sum_to_like

# ---------------------------------------------------------------- helpers


def _declare(name, inputs, spec, launch, ref, doc, attrs=None, **kw):
    return Op(
        name=name,
        inputs=inputs,
        outputs=kw.pop("outputs", ("out",)),
        spec=spec,
        kernels={"cpu": launch, "cuda": None},
        dtypes=kw.pop("dtypes", dt.ALL + dt.COMPLEX),
        ref=ref,
        attrs=attrs or {},
        doc=doc,
        **kw,
    )


def size_of(shape) -> int:
    """Number of elements, or -1 when a dim is unknown."""
    if UNKNOWN in shape:
        return UNKNOWN
    return math.prod(shape)


def dims(args) -> tuple:
    """`f(x, 2, 3)`, `f(x, (2, 3))` and `f(x, [2, 3])` all mean the dims (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def axis_of(axis: int, ndim: int) -> int:
    """The axis in [0, ndim); a 0-d tensor takes 0 and -1, as in PyTorch."""
    return normalize_axis(axis, max(ndim, 1))


def as_vector(t):
    """t, a 0-d tensor as a one-element vector: PyTorch's indexing, selection and order
    functions take a 0-d tensor as one element along dim 0 (or -1)."""
    return reshape_op(t, shape=(1,)) if getattr(t, "ndim", None) == 0 else t


def as_scalar(out):
    """out (a tensor, or a tuple of them) reshaped to 0-d: the result for a 0-d input that was
    computed on it as a one-element vector (as_vector)."""
    if isinstance(out, tuple):
        return rebuilt(type(out), [as_scalar(o) for o in out])
    return reshape_op(out, shape=())


def axes_of(axis, ndim: int) -> tuple[int, ...]:
    """Normalised, distinct axes (an int or a sequence of ints)."""
    axes = integers(axis, "axis")
    out = tuple(axis_of(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ShapeError(f"repeated axis in {axes}")
    return out


def as_tuple(x) -> tuple:
    """An op with a data-dependent number of outputs returns a bare tensor for one output."""
    return x if isinstance(x, tuple) else (x,)


# ---------------------------------------------------------------- reshape


def resolve_shape(src, shape) -> tuple[int, ...]:
    """`shape` with its one -1 inferred from the size of `src` (kept -1 while src is unknown)."""
    if any(n < UNKNOWN for n in shape):
        raise ShapeError(f"negative dim in shape {shape}")
    if shape.count(UNKNOWN) > 1:
        raise ShapeError(f"shape {shape} has more than one -1")
    size, known = size_of(src), size_of(tuple(n for n in shape if n != UNKNOWN))
    if size == UNKNOWN:
        return tuple(shape)
    if UNKNOWN not in shape:
        if known != size:
            raise ShapeError(f"cannot reshape {size} elements into shape {shape}")
        return tuple(shape)
    if known == 0 or size % known:
        raise ShapeError(f"cannot reshape {size} elements into shape {shape}")
    return tuple(size // known if n == UNKNOWN else n for n in shape)


reshape_op = _declare(
    "reshape",
    ("x",),
    lambda x, shape: Spec(resolve_shape(x.shape, shape), x.dtype),
    buffers.reshaped,
    lambda x, shape: np.reshape(x, shape),
    "x with a new shape holding the same elements in order; one dim may be -1 (inferred). "
    "A view when the memory layout allows it, else a copy (as numpy and PyTorch).",
    {"shape": Attr("ints")},
    view=True,
)


def reshape(x, *shape):
    """reshape(x, 2, 3) or reshape(x, (2, 3)); one dim may be -1."""
    return reshape_op(x, shape=dims(shape))


def _reshape_like_spec(x, like):
    a, b = size_of(x.shape), size_of(like.shape)
    if UNKNOWN not in (a, b) and a != b:
        raise ShapeError(f"{a} elements do not fit the shape {like.shape}")
    return Spec(like.shape, x.dtype)


reshape_like = _declare(
    "reshape_like",
    ("x", "like"),
    _reshape_like_spec,
    lambda x, like: buffers.reshaped(x, like.shape),
    lambda x, like: np.reshape(x, like.shape),
    "x reshaped to the shape of `like` (same number of elements).",
    view=True,
    promote=(0,),
)

reshape_like.shape_only = ("like",)
reshape_op.defgrad(lambda g, out, x, shape: (reshape_like(g, x),))
reshape_like.defgrad(lambda g, out, x, like: (reshape_like(g, x), None))

# ---------------------------------------------------------------- transpose, permute


def _transpose_spec(x, axis0, axis1):
    a, b = axis_of(axis0, x.ndim), axis_of(axis1, x.ndim)
    shape = list(x.shape)
    if x.ndim:
        shape[a], shape[b] = shape[b], shape[a]
    return Spec(tuple(shape), x.dtype)


def _transpose_cpu(x, axis0, axis1):
    return np.swapaxes(x, axis0, axis1) if x.ndim else x[...]


transpose_op = _declare(
    "transpose",
    ("x",),
    _transpose_spec,
    _transpose_cpu,
    _transpose_cpu,
    "x with two axes swapped (PyTorch's transpose); a view.",
    {"axis0": Attr("int"), "axis1": Attr("int")},
    view=True,
)
transpose_op.defgrad(lambda g, out, x, axis0, axis1: (transpose_op(g, axis0=axis0, axis1=axis1),))


def transpose(x, axis0, axis1):
    """Swap two axes: transpose(x, 0, 1)."""
    return transpose_op(x, axis0=axis0, axis1=axis1)


swapaxes = transpose  # numpy's and PyTorch's other name


def movedim(x, source, destination):
    """x with the axes `source` (an int or a sequence) moved to `destination`, the others
    keeping their order (numpy's moveaxis, PyTorch's movedim)."""
    src, dst = axes_of(source, x.ndim), axes_of(destination, x.ndim)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: {len(src)} source axes and {len(dst)} destinations")
    rest = iter(a for a in range(x.ndim) if a not in src)
    placed = dict(zip(dst, src))
    order = tuple(placed[i] if i in placed else next(rest) for i in range(x.ndim))
    return permute_op(x, axes=order)


def _permutation(axes, ndim) -> tuple[int, ...]:
    if len(axes) != ndim:
        raise ShapeError(f"permute needs {ndim} axes, got {axes}")
    return axes_of(axes, ndim)


def _permute_spec(x, axes):
    return Spec(tuple(x.shape[a] for a in _permutation(axes, x.ndim)), x.dtype)


permute_op = _declare(
    "permute",
    ("x",),
    _permute_spec,
    lambda x, axes: np.transpose(x, axes),
    lambda x, axes: np.transpose(x, axes),
    "x with its axes reordered: output axis i is input axis axes[i] (numpy's transpose); a view.",
    {"axes": Attr("ints")},
    view=True,
)


def _permute_grad(g, out, x, axes):
    inverse = np.argsort(_permutation(axes, x.ndim))
    return (permute_op(g, axes=tuple(int(a) for a in inverse)),)


permute_op.defgrad(_permute_grad)


def permute(x, *axes):
    """permute(x, 2, 0, 1) or permute(x, (2, 0, 1))."""
    return permute_op(x, axes=dims(axes))


# ---------------------------------------------------------------- broadcast_to


def broadcast_target(shape, target) -> tuple[int, ...]:
    """numpy's broadcast_to rule; -1 in `target` keeps the input's dim (PyTorch's expand)."""
    lead = len(target) - len(shape)
    if lead < 0:
        raise ShapeError(f"cannot broadcast to {target}: it has fewer dims than the input")
    out = list(target[:lead])
    if UNKNOWN in out or any(n < UNKNOWN for n in target):
        raise ShapeError(f"invalid target shape {target}")
    for n, t in zip(shape, target[lead:], strict=True):
        if t in (UNKNOWN, n):
            out.append(n)
        elif n in (1, UNKNOWN):
            out.append(t)  # an unknown input dim must be 1 or t: checked at run time
        else:
            raise ShapeError(f"cannot broadcast a dim of size {n} to {t}")
    return tuple(out)


broadcast_to_op = _declare(
    "broadcast_to",
    ("x",),
    lambda x, shape: Spec(broadcast_target(x.shape, shape), x.dtype),
    lambda x, shape: np.broadcast_to(x, broadcast_target(x.shape, shape)),
    lambda x, shape: np.broadcast_to(x, broadcast_target(x.shape, shape)),
    "x broadcast to `shape` (numpy rules; -1 keeps a dim). A read-only view, as numpy's.",
    {"shape": Attr("ints")},
    view=True,
)
broadcast_to_op.defgrad(lambda g, out, x, shape: (sum_to_like(g, x),))


def broadcast_to(x, *shape):
    """broadcast_to(x, 2, 3) or broadcast_to(x, (2, 3))."""
    return broadcast_to_op(x, shape=dims(shape))


# ---------------------------------------------------------------- squeeze, unsqueeze, flatten


def _squeezed(shape, axis) -> tuple[int, ...]:
    if not shape:
        if axis is not None:
            axes_of(axis, 0)  # only 0 or -1 are valid for a 0-d tensor
        return ()
    if axis is None:
        if UNKNOWN in shape:
            raise ShapeError("squeeze() with unknown dims is ambiguous; pass axis")
        return tuple(n for n in shape if n != 1)
    axes = axes_of(axis, len(shape))
    for a in axes:
        if shape[a] not in (1, UNKNOWN):
            raise ShapeError(f"cannot squeeze axis {a} of size {shape[a]}")
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _squeeze_cpu(x, axis=None):
    return np.reshape(x, _squeezed(x.shape, axis))


squeeze_op = _declare(
    "squeeze",
    ("x",),
    lambda x, axis: Spec(_squeezed(x.shape, axis), x.dtype),
    _squeeze_cpu,
    _squeeze_cpu,
    "x without the given size-1 axes (all size-1 axes when axis is None). A named axis that "
    "is not of size 1 is an error (numpy's rule), so the result's rank never depends on data.",
    {"axis": Attr("ints", None, optional=True)},
    view=True,
)
squeeze_op.defgrad(lambda g, out, x, axis: (reshape_like(g, x),))


def squeeze(x, axis=None):
    """x without the given size-1 axes (all of them when axis is None). As PyTorch, a named
    axis of a known size other than 1 is left in place (squeeze_op itself refuses it)."""
    if axis is not None and x.ndim > 0:
        axes = axes_of(axis, x.ndim)
        keep = tuple(a for a in axes if x.shape[a] in (1, UNKNOWN))
        if not keep:
            return squeeze_op(x, axis=())
        axis = keep
    return squeeze_op(x, axis=axis)


def _unsqueezed(shape, axis) -> tuple[int, ...]:
    ndim = len(shape) + len(axis)
    axes = axes_of(axis, ndim)
    rest = iter(shape)
    return tuple(1 if i in axes else next(rest) for i in range(ndim))


unsqueeze_op = _declare(
    "unsqueeze",
    ("x",),
    lambda x, axis: Spec(_unsqueezed(x.shape, axis), x.dtype),
    lambda x, axis: np.reshape(x, _unsqueezed(x.shape, axis)),
    lambda x, axis: np.expand_dims(x, axis),
    "x with new size-1 axes at the given positions of the result (numpy's expand_dims).",
    {"axis": Attr("ints")},
    view=True,
)
unsqueeze_op.defgrad(lambda g, out, x, axis: (reshape_like(g, x),))


def unsqueeze(x, axis):
    return unsqueeze_op(x, axis=axis)


def _flattened(shape, start_axis, end_axis) -> tuple[int, ...]:
    if not shape:
        axis_of(start_axis, 0), axis_of(end_axis, 0)
        return (1,)
    s, e = normalize_axis(start_axis, len(shape)), normalize_axis(end_axis, len(shape))
    if s > e:
        raise ShapeError(f"start_axis {start_axis} comes after end_axis {end_axis}")
    return shape[:s] + (size_of(shape[s : e + 1]),) + shape[e + 1 :]


def _flatten_cpu(x, start_axis=0, end_axis=-1):
    return buffers.reshaped(x, _flattened(x.shape, start_axis, end_axis))


flatten_op = _declare(
    "flatten",
    ("x",),
    lambda x, start_axis, end_axis: Spec(_flattened(x.shape, start_axis, end_axis), x.dtype),
    _flatten_cpu,
    _flatten_cpu,
    "x with axes start_axis..end_axis (inclusive) merged into one; a 0-d x gives shape (1,).",
    {"start_axis": Attr("int", 0), "end_axis": Attr("int", -1)},
    view=True,
)
flatten_op.defgrad(lambda g, out, x, start_axis, end_axis: (reshape_like(g, x),))


def flatten(x, start_axis=0, end_axis=-1):
    return flatten_op(x, start_axis=start_axis, end_axis=end_axis)


# ---------------------------------------------------------------- concat, stack, split


def _same_dims(specs, skip=None) -> list[int]:
    """The common shape of `specs` (dims other than `skip` must agree where known)."""
    first = specs[0]
    shape = list(first.shape)
    for i, s in enumerate(specs[1:], 1):
        if s.ndim != first.ndim:
            raise ShapeError(f"xs{i} has {s.ndim} dims but xs0 has {first.ndim}")
        for d, n in enumerate(s.shape):
            if d == skip or n == UNKNOWN:
                continue
            if shape[d] == UNKNOWN:
                shape[d] = n
            elif shape[d] != n:
                where = f" other than axis {skip}" if skip is not None else ""
                raise ShapeError(
                    f"xs{i} has shape {s.shape} but xs0 has {first.shape}: dims{where} must match"
                )
    return shape


def _concat_spec(*xs, axis):
    if not xs:
        raise ShapeError("needs at least one tensor")
    if xs[0].ndim == 0:
        raise ShapeError("cannot concatenate 0-d tensors; use stack")
    a = normalize_axis(axis, xs[0].ndim)
    shape = _same_dims(xs, skip=a)
    sizes = [s.shape[a] for s in xs]
    shape[a] = UNKNOWN if UNKNOWN in sizes else sum(sizes)
    return Spec(tuple(shape), dt.promote([s.dtype for s in xs]))


def _concat_cpu(*arrays, axis):
    *xs, out = arrays
    np.concatenate(xs, axis=axis, out=out)


concat_op = _declare(
    "concat",
    ("*xs",),
    _concat_spec,
    _concat_cpu,
    lambda *xs, axis=0: np.concatenate(xs, axis=axis),
    "The tensors joined along an existing axis; dtypes promote together.",
    {"axis": Attr("int", 0)},
)


def _split_like_spec(x, *likes, axis):
    if x.ndim == 0:
        raise ShapeError("split_like: cannot split a 0-d tensor")
    a = normalize_axis(axis, x.ndim)
    for i, s in enumerate(likes):
        if s.ndim != x.ndim:
            raise ShapeError(f"likes{i} has {s.ndim} dims but x has {x.ndim}")
    sizes = [s.shape[a] for s in likes]
    if UNKNOWN not in sizes and x.shape[a] != UNKNOWN and sum(sizes) != x.shape[a]:
        raise ShapeError(f"sizes {sizes} along axis {a} do not sum to {x.shape[a]}")
    return tuple(Spec(x.shape[:a] + (n,) + x.shape[a + 1 :], x.dtype) for n in sizes)


def _pieces(x, lengths, axis: int) -> tuple:
    """Views of x cut along `axis` (>= 0) into `lengths`, sliced directly: np.split costs
    several times more for a few pieces (an LSTM's gates)."""
    lead = (slice(None),) * axis
    views, start = [], 0
    for n in lengths:
        views.append(x[(*lead, slice(start, start + n))])
        start += n
    return tuple(views)


def _split_like_cpu(x, *likes, axis=0):
    axis = normalize_axis(axis, x.ndim)  # (GPU array shapes take no negative index)
    return _pieces(x, [k.shape[axis] for k in likes], axis)


split_like = _declare(
    "split_like",
    ("x", "*likes"),
    _split_like_spec,
    _split_like_cpu,
    _split_like_cpu,
    "x split along `axis` into pieces as long as each `like` is along that axis (views).",
    {"axis": Attr("int", 0)},
    outputs=("*outs",),
    view=True,
    promote=(0,),
)

split_like.shape_only = ("likes",)
concat_op.defgrad(lambda g, out, *xs, axis: as_tuple(split_like(g, *xs, axis=axis)))
split_like.defgrad(
    lambda g, out, x, *likes, axis: (concat_op(*as_tuple(g), axis=axis),) + (None,) * len(likes)
)


def _tensors(xs) -> tuple:
    """concat(a, b) and concat([a, b]) both mean the tensors a and b."""
    if len(xs) == 1 and isinstance(xs[0], (list, tuple)):
        return tuple(xs[0])
    return xs


def concat(*xs, axis=0):
    """Join tensors along an existing axis: concat(a, b, axis=1) or concat([a, b], axis=1)."""
    return concat_op(*_tensors(xs), axis=axis)


def cat(tensors, axis=0):
    """PyTorch's cat: cat([a, b], 1) (a sequence of tensors, then the axis)."""
    if not isinstance(tensors, (list, tuple)):  # (a tensor would be unpacked into its rows)
        raise ArgumentError(
            f"cat: tensors must be a list or tuple of tensors, got {shown(tensors)}"
        )
    return concat_op(*tensors, axis=axis)


def _stack_spec(*xs, axis):
    if not xs:
        raise ShapeError("needs at least one tensor")
    shape = _same_dims(xs)
    a = normalize_axis(axis, len(shape) + 1)
    shape.insert(a, len(xs))
    return Spec(tuple(shape), dt.promote([s.dtype for s in xs]))


def _stack_cpu(*arrays, axis):
    *xs, out = arrays
    np.stack(xs, axis=axis, out=out)


stack_op = _declare(
    "stack",
    ("*xs",),
    _stack_spec,
    _stack_cpu,
    lambda *xs, axis=0: np.stack(xs, axis=axis),
    "Tensors of one shape joined along a new axis; dtypes promote together.",
    {"axis": Attr("int", 0)},
)


def _stack_grad(g, out, *xs, axis):
    pieces = as_tuple(split_op(g, sizes=(1,) * len(xs), axis=axis))
    return tuple(squeeze_op(p, axis=axis) for p in pieces)


stack_op.defgrad(_stack_grad)


def stack(*xs, axis=0):
    """Join tensors of one shape along a new axis: stack(a, b), stack([a, b], axis=1) or, as
    PyTorch, stack([a, b], 1)."""
    if len(xs) == 2 and isinstance(xs[0], (list, tuple)) and isinstance(xs[1], (int, np.integer)):
        xs, axis = (xs[0],), int(xs[1])
    return stack_op(*_tensors(xs), axis=axis)


def split_sizes(n: int, split_size, sizes) -> tuple[int, ...]:
    """Piece lengths along an axis of length n (torch.split's rule)."""
    if (split_size is None) == (sizes is None):
        raise AttrError("split needs exactly one of split_size and sizes")
    if sizes is not None:
        if any(s < 0 for s in sizes):
            raise ShapeError(f"negative size in {sizes}")
        if n != UNKNOWN and sum(sizes) != n:
            raise ShapeError(f"sizes {sizes} do not sum to the axis length {n}")
        return tuple(sizes)
    if split_size <= 0:
        raise AttrError(f"split_size must be positive, got {split_size}")
    if n == UNKNOWN:
        raise ShapeError("splitting an unknown (-1) dim needs explicit sizes")
    full, rest = divmod(n, split_size)
    return (split_size,) * full + ((rest,) if rest or not full else ())


def _split_spec(x, split_size, sizes, axis):
    if x.ndim == 0:
        raise ShapeError("cannot split a 0-d tensor")
    a = normalize_axis(axis, x.ndim)
    pieces = split_sizes(x.shape[a], split_size, sizes)
    return tuple(Spec(x.shape[:a] + (n,) + x.shape[a + 1 :], x.dtype) for n in pieces)


def _split_cpu(x, split_size=None, sizes=None, axis=0):
    axis = normalize_axis(axis, x.ndim)
    return _pieces(x, split_sizes(x.shape[axis], split_size, sizes), axis)


split_op = _declare(
    "split",
    ("x",),
    _split_spec,
    _split_cpu,
    _split_cpu,
    "x cut along `axis` into views (torch.split): pieces of `split_size` (the last may be "
    "shorter; an empty axis gives one empty piece) or of the given `sizes`.",
    {
        "split_size": Attr("int", None, optional=True),
        "sizes": Attr("ints", None, optional=True),
        "axis": Attr("int", 0),
    },
    outputs=("*outs",),
    view=True,
)
split_op.defgrad(lambda g, out, x, split_size, sizes, axis: (concat_op(*as_tuple(g), axis=axis),))


def roll(x, shifts, axis=None):
    """x with elements shifted by `shifts` along `axis` (None: the flattened tensor, reshaped
    back), wrapping around; several shifts pair with several axes (PyTorch's roll)."""
    if axis is None:
        return reshape_op(roll(reshape_op(x, shape=(-1,)), shifts, 0), shape=tuple(x.shape))
    shifts = shifts if isinstance(shifts, (tuple, list)) else (shifts,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) != len(axes):
        raise ShapeError(f"roll: {len(shifts)} shifts for {len(axes)} axes")
    for shift, a in zip(shifts, axes):
        n = x.shape[axis_of(a, x.ndim)]
        k = as_int(shift, "roll: a shift") % n if n > 0 else 0
        if k:
            tail, head = split_op(x, sizes=(n - k, k), axis=a)
            x = concat_op(head, tail, axis=a)
    return x


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-D tensors (a 0-d tensor counts as one element, as in PyTorch):
    output i varies along axis i ("ij", PyTorch's default) or with the first two axes swapped
    ("xy", numpy's default)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if not isinstance(indexing, str) or indexing not in ("ij", "xy"):
        raise DomainError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    tensors = tuple(as_vector(t) for t in tensors)
    if any(t.ndim != 1 for t in tensors):
        raise ShapeError(f"meshgrid needs 1-D tensors, got {[tuple(t.shape) for t in tensors]}")
    sizes = [t.shape[0] for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[order.index(i)] = sizes[i]
        grids.append(broadcast_to_op(reshape_op(t, shape=tuple(view)), shape=shape))
    return tuple(grids)


def chunk(x, chunks: int, axis=0) -> tuple:
    """PyTorch's chunk: x cut along `axis` into `chunks` pieces of ceil(n / chunks) (the last
    may be shorter, and there are fewer pieces when n does not fill them all)."""
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise AttrError(f"chunk: chunks must be a positive int, got {chunks!r}")
    if x.ndim == 0:
        raise ShapeError("chunk: cannot cut a 0-d tensor")
    n = x.shape[normalize_axis(axis, x.ndim)]
    if n == UNKNOWN:
        raise ShapeError("chunk: the axis has an unknown (-1) length: use split with sizes")
    return split(x, max(-(-n // int(chunks)), 1), axis=axis)


def split(x, split_size_or_sizes, axis=0) -> tuple:
    """torch.split: an int cuts pieces of that length (the last may be shorter); a sequence
    gives each piece's length (they must sum to the axis length). Always returns a tuple."""
    if isinstance(split_size_or_sizes, (int, np.integer)):
        out = split_op(x, split_size=split_size_or_sizes, axis=axis)
    else:
        sizes = integers(split_size_or_sizes, "split: split_size_or_sections")
        out = split_op(x, sizes=sizes, axis=axis)
    return as_tuple(out)


# ---------------------------------------------------------------- pad


def _pad_pairs(pad_width, ndim) -> list[tuple[int, int]]:
    if len(pad_width) != 2 * ndim:
        raise ShapeError(f"pad_width needs 2 values per axis ({2 * ndim}), got {len(pad_width)}")
    if any(p < 0 for p in pad_width):
        raise ShapeError(f"negative padding in {pad_width}")
    return list(zip(pad_width[::2], pad_width[1::2], strict=True))


def _pad_spec(x, pad_width, value, mode):
    pairs = _pad_pairs(pad_width, x.ndim)
    shape = tuple(
        n if n == UNKNOWN else n + b + a for n, (b, a) in zip(x.shape, pairs, strict=True)
    )
    return Spec(shape, x.dtype)


def _pad_cpu(x, out, pad_width, value, mode):
    out[...] = value
    pairs = _pad_pairs(pad_width, x.ndim)
    out[tuple(slice(b, b + n) for (b, _), n in zip(pairs, x.shape, strict=True))] = x


def _pad_ref(x, pad_width, value=0, mode="constant"):
    pairs = _pad_pairs(pad_width, x.ndim)
    if not pairs:  # np.pad refuses a 0-d array
        return x.copy()
    return np.pad(x, pairs, mode="constant", constant_values=np.asarray(value).astype(x.dtype))


pad_op = _declare(
    "pad",
    ("x",),
    _pad_spec,
    _pad_cpu,
    _pad_ref,
    "x padded with `value`: pad_width holds (before, after) for axis 0, then axis 1, ... "
    "(numpy's order, flattened; PyTorch's F.pad lists the last axis first).",
    {
        "pad_width": Attr("ints"),
        "value": Attr("value", 0),
        "mode": Attr("str", "constant", choices=("constant",)),
    },
)


def _pad_grad(g, out, x, pad_width, value, mode):
    from .index import slice_op  # index.py imports this module

    key = tuple(("slice", b, -a if a else None, None) for b, a in _pad_pairs(pad_width, x.ndim))
    return (slice_op(g, key=key),)


pad_op.defgrad(_pad_grad)


def pad(x, pad_width, value=0, mode="constant"):
    """pad(x, ((1, 1), (0, 2))) or pad(x, (1, 1, 0, 2)): (before, after) per axis, axis 0
    first; constant mode only."""
    if isinstance(pad_width, np.ndarray):
        pad_width = pad_width.tolist()
    elif not isinstance(pad_width, (tuple, list)):
        pad_width = integers(pad_width, "pad: pad_width")
    flat = sum((integers(p, "pad: pad_width") for p in pad_width), ())
    return pad_op(x, pad_width=flat, value=value, mode=mode)


# ---------------------------------------------------------------- flip


def _flip_axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else axes_of(axis, ndim)


def _flip_spec(x, axis):
    if x.ndim:
        _flip_axes(axis, x.ndim)
    return Spec(x.shape, x.dtype)


def _flip_cpu(x, axis=None):
    return np.flip(x, _flip_axes(axis, x.ndim)) if x.ndim else x[...]


flip_op = _declare(
    "flip",
    ("x",),
    _flip_spec,
    _flip_cpu,
    _flip_cpu,
    "x reversed along the given axes (all when axis is None); a view with negative strides.",
    {"axis": Attr("ints", None, optional=True)},
    view=True,
)
flip_op.defgrad(lambda g, out, x, axis: (flip_op(g, axis=axis),))


def flip(x, axis=None):
    return flip_op(x, axis=axis)


__all__ = [
    "reshape",
    "reshape_like",
    "transpose",
    "permute",
    "broadcast_to",
    "squeeze",
    "unsqueeze",
    "flatten",
    "concat",
    "cat",
    "stack",
    "split",
    "chunk",
    "meshgrid",
    "roll",
    "movedim",
    "swapaxes",
    "split_like",
    "pad",
    "flip",
]
