"""Reductions: sum, mean, prod, max, min, argmax, argmin, var, std, logsumexp, all, any.

Every reduction takes `axis` (None: all axes; an int or a tuple of ints, negative allowed; an
empty tuple reduces nothing, as in numpy) and `keepdims`. A 0-d tensor accepts axis 0 or -1, as
in PyTorch. The kernels reduce rows: `reduce_rows` views the input as (kept, reduced) with the
reduced axes last, so each row kernel compiles once per dtype whatever the rank and the axes.
Floats accumulate in float64, integers in int64.

Dtypes follow PyTorch:

| op                   | input            | output                                  |
|----------------------|------------------|-----------------------------------------|
| sum, prod            | bool, int32/64   | int64                                   |
| sum, prod, max, min  | float            | the input's dtype                       |
| max, min             | bool, int        | the input's dtype                       |
| mean, var, std       | float            | the input's dtype (ints: DTypeError)    |
| logsumexp            | any              | the input's float dtype; ints: float32  |
| argmax, argmin       | any              | int64                                   |
| all, any             | any              | bool                                    |

Two helper ops serve the gradient rules in both modes: `expand_reduced` broadcasts a reduced
value back to the input's shape, and `reduced_count` is the number of elements reduced into
each output (known only at run time in graph mode).
"""

import builtins
import math
import warnings
from collections import namedtuple

import numpy as np
from numba.extending import register_jitable

from ..argcheck import integer, integers, shown
from ..core import Attr, Op, Spec, normalize_axis
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DTypeError, ShapeError
from ..kernels.cpu import vecmath
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import (
    JIT,
    blocked_sum,
    reduce_launcher,
    reduce_rows,
    row_moments,
    sum_cols,
    sum_rows,
    zero_acc,
)
from . import elementwise as _ew
from .complex_math import conj
from .complex_parts import imag_part, real_part
from .elementwise import exp, logical_and, maximum, where
from .index import take_along_axis_op
from .shape import squeeze_op

AXIS = {"axis": Attr("ints", None, optional=True), "keepdims": Attr("bool", False)}
ONE_AXIS = {"axis": Attr("int", None, optional=True), "keepdims": Attr("bool", False)}

# ---------------------------------------------------------------- axes and shapes


def reduced_axes(axis, ndim: int) -> tuple[int, ...]:
    """The sorted non-negative axes that `axis` (None, an int or a tuple) names.

    Raises ShapeError for an axis out of range or named twice. A 0-d tensor accepts 0 and -1
    (PyTorch) and has nothing to reduce."""
    ndim = integer(ndim, "reduced_axes: ndim")
    if axis is None:
        return tuple(range(ndim))
    axis = integers(axis, "axis")
    if ndim == 0:
        for a in axis:
            if a not in (0, -1):
                raise ShapeError(f"axis {a} is out of range for a 0-d tensor")
        return ()
    axes = tuple(sorted(normalize_axis(a, ndim) for a in axis))
    if len(set(axes)) != len(axes):
        raise ShapeError(f"axis {tuple(axis)} names a dim twice")
    return axes


def reduced_shape(shape, axes, keepdims: bool) -> tuple[int, ...]:
    """`shape` after reducing `axes`: those dims become 1 (keepdims) or are dropped."""
    if type(shape) is not tuple or type(axes) is not tuple:  # (the specs pass tuples)
        shape, axes = integers(shape, "reduced_shape: shape"), integers(axes, "reduced_shape: axes")
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _check_nonempty(shape, axes):
    # max, min, argmax and argmin have no identity: an empty reduction has no answer.
    # Checked in the spec and again before the kernel, which does not bounds-check.
    for i in axes:
        if shape[i] == 0:
            raise ShapeError(f"cannot reduce axis {i} of size 0 (the reduction has no identity)")


def _count(shape, axes) -> int:
    return math.prod(shape[i] for i in axes)


# ---------------------------------------------------------------- output dtypes


def _same(d):
    return d


def _int64_for_ints(d):
    return d if dt.differentiable(d) else dt.int64


def _floats_only(d):  # (and complex: the kernel lookup refuses a complex input not opted in)
    if not dt.differentiable(d):
        raise DTypeError(f"needs a float input, got {d} (cast it first, as in PyTorch)")
    return d


def _float_result(d):
    """A float or complex input's own dtype; the default float for the others."""
    return d if dt.is_float(d) or d.kind == "c" else dt.default_float()


def _acc(d):
    """The numpy accumulator dtype of the references: (complex)128 for floats, else int64."""
    return np.complex128 if d.kind == "c" else np.float64 if dt.is_float(d) else np.int64


# ---------------------------------------------------------------- row kernels
# Each takes x as 2-D C-contiguous (kept, reduced) and writes one value per row into out.


@njit(**JIT)
def _mean_rows(x, out):
    n = x.shape[1]
    for i in range(x.shape[0]):
        # blocked_sum's four running sums: one long chain of float64 adds waits on itself
        out[i] = vecmath.divide(blocked_sum(x[i]), n)  # 0 / 0: NaN for an empty row (numpy)


@njit(**JIT)
def _prod_rows(x, out):
    for i in range(x.shape[0]):
        acc = zero_acc(x) + 1
        for j in range(x.shape[1]):
            acc *= x[i, j]
        out[i] = acc


@register_jitable
def _larger(v, m):
    return v if v > m or v != v else m  # NaN wins: once there, nothing replaces it


@register_jitable
def _smaller(v, m):
    return v if v < m or v != v else m


# Four running extrema per row, like sum64: one chain of compare-and-select waits on itself.
# max and min are written out twice: passing the comparison as a function argument stops
# numba caching the kernels.


@njit(**JIT)
def _max_rows(x, out):
    n = x.shape[1]
    k = n - n % 4
    for i in range(x.shape[0]):
        m0 = m1 = m2 = m3 = x[i, 0]
        for j in range(0, k, 4):
            m0 = _larger(x[i, j], m0)
            m1 = _larger(x[i, j + 1], m1)
            m2 = _larger(x[i, j + 2], m2)
            m3 = _larger(x[i, j + 3], m3)
        for j in range(k, n):
            m0 = _larger(x[i, j], m0)
        out[i] = _larger(_larger(m3, m2), _larger(m1, m0))


@njit(**JIT)
def _min_rows(x, out):
    n = x.shape[1]
    k = n - n % 4
    for i in range(x.shape[0]):
        m0 = m1 = m2 = m3 = x[i, 0]
        for j in range(0, k, 4):
            m0 = _smaller(x[i, j], m0)
            m1 = _smaller(x[i, j + 1], m1)
            m2 = _smaller(x[i, j + 2], m2)
            m3 = _smaller(x[i, j + 3], m3)
        for j in range(k, n):
            m0 = _smaller(x[i, j], m0)
        out[i] = _smaller(_smaller(m3, m2), _smaller(m1, m0))


# Column kernels, for axes that lead (a batch's mean, max or min): x is 2-D C-contiguous
# (reduced, kept); whole rows are combined as vectors, which vectorises, where the row kernels
# would need a transposed copy first.


@njit(**JIT)
def _mean_cols(x, out):
    acc = np.full(x.shape[1], zero_acc(x))
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            acc[j] += x[i, j]
    for j in range(x.shape[1]):
        out[j] = vecmath.divide(acc[j], x.shape[0])


@njit(**JIT)
def _max_cols(x, out):
    out[:] = x[0]
    for i in range(1, x.shape[0]):
        for j in range(x.shape[1]):
            out[j] = _larger(x[i, j], out[j])


@njit(**JIT)
def _min_cols(x, out):
    out[:] = x[0]
    for i in range(1, x.shape[0]):
        for j in range(x.shape[1]):
            out[j] = _smaller(x[i, j], out[j])


@njit(**JIT)
def _argmax_rows(x, out):
    for i in range(x.shape[0]):
        best, k = x[i, 0], 0
        for j in range(1, x.shape[1]):
            if best != best:  # the first NaN, as numpy
                break
            v = x[i, j]
            if v > best or v != v:
                best, k = v, j
        out[i] = k


@njit(**JIT)
def _argmin_rows(x, out):
    for i in range(x.shape[0]):
        best, k = x[i, 0], 0
        for j in range(1, x.shape[1]):
            if best != best:
                break
            v = x[i, j]
            if v < best or v != v:
                best, k = v, j
        out[i] = k


@njit(**JIT)
def _row_var(x, i, correction):
    """Variance of row i in float64 (two passes: see row_moments)."""
    n = x.shape[1]
    _, squares = row_moments(x, i)
    divisor = n - correction if n > correction else 0  # numpy's: inf or NaN when <= 0
    return squares / divisor


@njit(**JIT)
def _var_rows(x, out, correction):
    for i in range(x.shape[0]):
        out[i] = _row_var(x, i, correction)


@njit(**JIT)
def _std_rows(x, out, correction):
    for i in range(x.shape[0]):
        out[i] = math.sqrt(_row_var(x, i, correction))


@njit(**JIT)
def _logsumexp_rows(x, out):
    for i in range(x.shape[0]):
        m = -math.inf
        for j in range(x.shape[1]):
            v = x[i, j].real  # (a complex row: shifted by its largest real part)
            if v > m or v != v:
                m = v
            if m != m:
                break
        # shift by the max so exp cannot overflow; an infinite or NaN max shifts by 0
        shift = m if m - m == 0 else 0.0
        total = 0.0
        for j in range(x.shape[1]):
            total += vecmath.exp(x[i, j] - shift)
        out[i] = vecmath.log_of_sum(total) + shift


@njit(**JIT)
def _all_rows(x, out):
    for i in range(x.shape[0]):
        r = True
        for j in range(x.shape[1]):
            if x[i, j] == 0:
                r = False
                break
        out[i] = r


@njit(**JIT)
def _any_rows(x, out):
    for i in range(x.shape[0]):
        r = False
        for j in range(x.shape[1]):
            if x[i, j] != 0:
                r = True
                break
        out[i] = r


# ---------------------------------------------------------------- declaration


def _reduction(
    name,
    kernel,
    ref,
    *,
    dtypes,
    out_dtype,
    doc,
    attrs=AXIS,
    nonempty=False,
    differentiable=True,
    to_float=False,
    cols=None,
    cls=Op,
):
    """Declare a reduction of x over `axis` whose row kernel is `kernel(x2d, out1d, *params)`;
    attrs beyond axis and keepdims are passed to the kernel in declaration order. `cols` is
    the optional column kernel for leading axes (see reduce_rows); `cls` the Op class."""

    def spec(x, axis, keepdims, **params):
        axes = reduced_axes(axis, x.ndim)
        if nonempty:
            _check_nonempty(x.shape, axes)
        return Spec(reduced_shape(x.shape, axes, keepdims), out_dtype(x.dtype))

    def launch(x, out, axis, keepdims, **params):
        axes = reduced_axes(axis, x.ndim)
        if nonempty:
            _check_nonempty(x.shape, axes)
        reduce_rows(kernel, x, axes, out, *params.values(), cols=cols)

    def specialize(specs, attrs):
        # a plan's shape passed spec()'s checks: the geometry is fixed from here
        shape = specs[0].shape
        params = [v for k, v in attrs.items() if k not in ("axis", "keepdims")]
        return reduce_launcher(kernel, shape, reduced_axes(attrs["axis"], len(shape)), params, cols)

    launch.specialize = specialize

    return cls(
        name=name,
        inputs=("x",),
        outputs=("out",),
        spec=spec,
        kernels={"cpu": launch, "cuda": None},
        dtypes=tuple(dtypes),
        ref=ref,
        differentiable=differentiable,
        attrs=attrs,
        to_float=to_float,
        doc=doc,
    )


def _quiet(fn):
    """Run a numpy reference without its warnings for empty or degenerate reductions."""

    def ref(x, **attrs):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.asarray(fn(x, **attrs))

    return ref


# ---------------------------------------------------------------- helper ops for gradients


def _expand_reduced_spec(g, like, axis, keepdims):
    axes = reduced_axes(axis, like.ndim)
    want = reduced_shape(like.shape, axes, keepdims)
    if len(g.shape) != len(want) or builtins.any(
        a != b and -1 not in (a, b) for a, b in zip(g.shape, want, strict=True)
    ):
        raise ShapeError(f"g must have the reduced shape {want}")
    return Spec(like.shape, g.dtype)


def _expand_reduced_cpu(g, like, out, axis, keepdims):
    axes = reduced_axes(axis, like.ndim)
    np.copyto(out, g.reshape(reduced_shape(like.shape, axes, keepdims=True)))


def _expand_reduced_ref(g, like, axis=None, keepdims=False):
    axes = reduced_axes(axis, like.ndim)
    return np.broadcast_to(g.reshape(reduced_shape(like.shape, axes, True)), like.shape).copy()


expand_reduced = Op(
    name="expand_reduced",
    inputs=("g", "like"),
    outputs=("out",),
    spec=_expand_reduced_spec,
    kernels={"cpu": _expand_reduced_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=_expand_reduced_ref,
    attrs=AXIS,
    promote=(0,),
    doc="Broadcast g, the result of reducing `like` over `axis` (with `keepdims`), back to "
    "like's shape (a copy). The gradient of sum, and the adjoint of a reduction.",
    shape_only=("like",),
)


@expand_reduced.defgrad
def _expand_reduced_grad(g, out, x, like, axis, keepdims):
    return sum(g, axis=axis, keepdims=keepdims), None


def _reduced_count_spec(x, axis):
    reduced_axes(axis, x.ndim)  # checks the axes
    return Spec((), dt.int64)


def _reduced_count_cpu(x, out, axis):
    out[()] = _count(x.shape, reduced_axes(axis, x.ndim))


reduced_count = Op(
    name="reduced_count",
    inputs=("x",),
    outputs=("out",),
    spec=_reduced_count_spec,
    kernels={"cpu": _reduced_count_cpu, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, axis=None: np.asarray(_count(x.shape, reduced_axes(axis, x.ndim)), np.int64),
    differentiable=False,
    attrs={"axis": AXIS["axis"]},
    promote=(),  # x is read for its shape only: never cast
    doc="The number of elements of x that a reduction over `axis` combines into each output "
    "(a 0-d int64): the N of a mean or a variance.",
    shape_only=("x",),
)


def _expand(g, x, axis, keepdims):
    return expand_reduced(g, x, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------- sum, mean, prod


def _sum_ref(x, axis=None, keepdims=False):
    axes = reduced_axes(axis, x.ndim)
    out = np.sum(x, axis=axes, dtype=_acc(x.dtype), keepdims=keepdims)
    return out.astype(_int64_for_ints(x.dtype))


sum = _reduction(
    "sum",
    sum_rows,
    _quiet(_sum_ref),
    dtypes=dt.ALL + dt.COMPLEX,
    out_dtype=_int64_for_ints,
    cols=sum_cols,
    doc="Sum over `axis` (None: all). bool and integer inputs give int64, as in PyTorch.",
)

sum.defgrad(lambda g, out, x, axis, keepdims: (_expand(g, x, axis, keepdims),))


def _mean_ref(x, axis=None, keepdims=False):
    axes = reduced_axes(axis, x.ndim)
    return np.mean(x, axis=axes, dtype=_acc(x.dtype), keepdims=keepdims).astype(x.dtype)


mean = _reduction(
    "mean",
    _mean_rows,
    _quiet(_mean_ref),
    dtypes=dt.FLOATS + dt.COMPLEX,
    out_dtype=_floats_only,
    cols=_mean_cols,
    doc="Mean over `axis` (None: all); NaN for an empty reduction. Floats only: an integer "
    "input raises DTypeError, as in PyTorch (cast it first).",
)


@mean.defgrad
def _mean_grad(g, out, x, axis, keepdims):
    return (_expand(g / reduced_count(x, axis=axis), x, axis, keepdims),)


def _prod_ref(x, axis=None, keepdims=False):
    axes = reduced_axes(axis, x.ndim)
    out = np.prod(x, axis=axes, dtype=_acc(x.dtype), keepdims=keepdims)
    return out.astype(_int64_for_ints(x.dtype))


prod = _reduction(
    "prod",
    _prod_rows,
    _quiet(_prod_ref),
    dtypes=dt.ALL + dt.COMPLEX,
    out_dtype=_int64_for_ints,
    doc="Product over `axis` (None: all); 1 for an empty reduction. bool and integer inputs "
    "give int64, as in PyTorch.",
)


def prod_of_others_by_division(x, axis):
    """The product of the other elements of x's `axis` rows at each position, where some
    reduced dim is known only at run time (prod's gradient is in ops/scans.py). Dividing
    out / x_i fails at zeros, so: no zero in the row: p / x_i; one zero: p at the zero and 0
    elsewhere; more: 0, where p is the product of the row's nonzero elements. Exact, but
    its own derivative is not at zeros (the 0s are constants there)."""
    is_zero = x == 0
    nonzero = where(is_zero, 1, x)
    p = prod(nonzero, axis=axis, keepdims=True)
    zeros = sum(is_zero, axis=axis, keepdims=True)
    at_single_zero = where(logical_and(is_zero, zeros == 1), p, 0)
    return where(zeros == 0, p / nonzero, at_single_zero)


# ---------------------------------------------------------------- max, min, argmax, argmin


def _extremum_ref(fn):
    def ref(x, axis=None, keepdims=False):
        return fn(x, axis=_checked_axes(x, axis), keepdims=keepdims)

    return _quiet(ref)


def _checked_axes(x, axis):
    axes = reduced_axes(axis, x.ndim)
    _check_nonempty(x.shape, axes)
    return axes


class _Extremum(Op):
    """max and min, which also take PyTorch's binary overload max(input, other): a tensor
    where the axis would be (or `other=`) is compared with x elementwise, broadcast (the op in
    `binary`: maximum or minimum), as in PyTorch; a number there is still the axis."""

    binary = None

    def __call__(self, *args, **attrs):
        if "other" in attrs:
            other, rest = attrs.pop("other"), args[1:]
        elif len(args) > 1 and _is_tensor(args[1]):
            other, rest = args[1], args[2:]
        else:
            return Op.__call__(self, *args, **attrs)
        if rest or attrs or not args:
            raise ArgumentError(f"{self.name}(input, other) takes the two tensors only")
        return self.binary(args[0], other)


def _is_tensor(v):
    """A tensor or a graph value (not an array, a number or a tuple of axes)."""
    return hasattr(v, "shape") and not isinstance(v, np.ndarray | np.number)


max = _reduction(
    "max",
    _max_rows,
    _extremum_ref(np.max),
    dtypes=dt.ALL,
    out_dtype=_same,
    nonempty=True,
    cols=_max_cols,
    cls=_Extremum,
    doc="Largest value over `axis` (numpy's max, PyTorch's amax); NaN if any is NaN. An "
    "empty reduction raises ShapeError. The gradient is split equally between ties. "
    "max(x, other) with a tensor `other` is maximum(x, other), as in PyTorch.",
)
min = _reduction(
    "min",
    _min_rows,
    _extremum_ref(np.min),
    dtypes=dt.ALL,
    out_dtype=_same,
    nonempty=True,
    cols=_min_cols,
    cls=_Extremum,
    doc="Smallest value over `axis` (numpy's min, PyTorch's amin); NaN if any is NaN. An "
    "empty reduction raises ShapeError. The gradient is split equally between ties. "
    "min(x, other) with a tensor `other` is minimum(x, other), as in PyTorch.",
)
max.binary, min.binary = maximum, _ew.minimum


def _extremum_grad(g, out, x, axis, keepdims):
    # every element equal to the result gets an equal share of g (PyTorch's amax/amin)
    hit = x == _expand(out, x, axis, keepdims)
    count = sum(hit, axis=axis, keepdims=keepdims)
    return (where(hit, _expand(g / count, x, axis, keepdims), 0),)


max.defgrad(_extremum_grad)
min.defgrad(_extremum_grad)


def _arg_ref(fn):
    def ref(x, axis=None, keepdims=False):
        _checked_axes(x, axis)
        if x.ndim == 0:
            return np.zeros((), np.int64)
        return np.asarray(fn(x, axis=axis, keepdims=keepdims), np.int64)

    return ref


argmax = _reduction(
    "argmax",
    _argmax_rows,
    _arg_ref(np.argmax),
    dtypes=dt.ALL,
    out_dtype=lambda d: dt.int64,
    attrs=ONE_AXIS,
    nonempty=True,
    differentiable=False,
    doc="Index (int64) of the first largest value along `axis`, or into the flattened "
    "tensor when axis is None; a NaN counts as the largest. Empty: ShapeError.",
)
argmin = _reduction(
    "argmin",
    _argmin_rows,
    _arg_ref(np.argmin),
    dtypes=dt.ALL,
    out_dtype=lambda d: dt.int64,
    attrs=ONE_AXIS,
    nonempty=True,
    differentiable=False,
    doc="Index (int64) of the first smallest value along `axis`, or into the flattened "
    "tensor when axis is None; a NaN counts as the smallest. Empty: ShapeError.",
)

# PyTorch's max(x, dim=1) and min(x, dim=1): the values and their indices, the values taken
# at the indices (so the gradient goes to that element, as in PyTorch, not shared by ties)
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _values_and_indices(index_op):
    def call(x, axis, keepdims=False):
        indices = index_op(x, axis=axis, keepdims=True)
        values = take_along_axis_op(x, indices, axis=axis)
        if not keepdims:
            values, indices = squeeze_op(values, axis=axis), squeeze_op(indices, axis=axis)
        return ValuesIndices(values, indices)

    return call


max.on_dim = _values_and_indices(argmax)
min.on_dim = _values_and_indices(argmin)


def amax(x, axis=None, keepdims=False):
    """The largest values over `axis` (PyTorch's amax: values only, also with dim=)."""
    return max(x, axis=axis, keepdims=keepdims)


def amin(x, axis=None, keepdims=False):
    """The smallest values over `axis` (PyTorch's amin: values only, also with dim=)."""
    return min(x, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------- var, std, logsumexp

VAR_ATTRS = {**AXIS, "correction": Attr("int", 1)}


class _Variance(Op):
    """var and std, which also take PyTorch's unbiased= (True: correction=1, False: 0), also as
    the second positional argument (std(x, False)), as PyTorch's older overloads do."""

    def __call__(self, *args, **attrs):
        unbiased = attrs.pop("unbiased", None)
        if len(args) > 1 and isinstance(args[1], (bool, np.bool_)):
            if unbiased is not None:
                raise ArgumentError(f"{self.name}: unbiased given twice")
            unbiased, args = args[1], args[:1] + args[2:]
        if unbiased is not None:
            if not isinstance(unbiased, (bool, np.bool_)):
                raise AttrError(f"{self.name}: unbiased must be a bool, got {shown(unbiased)}")
            if "correction" in attrs:
                raise ArgumentError(f"{self.name}: give unbiased or correction, not both")
            attrs["correction"] = 1 if unbiased else 0
        x = args[0] if args else attrs.get("x")
        if dt.is_complex(getattr(x, "dtype", np.dtype(float))):
            # (PyTorch's: the variances of the real and imaginary parts add up)
            rest, attrs = args[1:], {k: v for k, v in attrs.items() if k != "x"}
            total = var(real_part(x), *rest, **attrs) + var(imag_part(x), *rest, **attrs)
            return total if self is var else _ew.sqrt(total)
        return Op.__call__(self, *args, **attrs)


def _var_ref(fn):
    def ref(x, axis=None, keepdims=False, correction=1):
        axes = reduced_axes(axis, x.ndim)
        out = fn(x.astype(np.float64), axis=axes, ddof=correction, keepdims=keepdims)
        return out.astype(_floats_only(x.dtype))

    return _quiet(ref)


var = _reduction(
    "var",
    _var_rows,
    _var_ref(np.var),
    dtypes=dt.FLOATS,
    out_dtype=_floats_only,
    attrs=VAR_ATTRS,
    cls=_Variance,
    doc="Variance over `axis`: sum((x - mean)**2) / (N - correction). correction=1 (the "
    "default, as PyTorch) is the unbiased estimate, 0 the population variance (numpy's "
    "default). N - correction <= 0 gives inf or NaN, as numpy. Floats only.",
)
std = _reduction(
    "std",
    _std_rows,
    _var_ref(np.std),
    dtypes=dt.FLOATS,
    out_dtype=_floats_only,
    attrs=VAR_ATTRS,
    cls=_Variance,
    doc="Standard deviation over `axis`: sqrt(var(x, axis, correction)); correction=1 by "
    "default (unbiased, as PyTorch). Floats only.",
)


def _var_backward(g, x, axis, keepdims, correction):
    # d var / d x = 2 (x - mean) / (N - correction)
    divisor = maximum(reduced_count(x, axis=axis) - correction, 0)
    centered = x - mean(x, axis=axis, keepdims=True)
    return _expand(g, x, axis, keepdims) * centered * 2 / divisor


var.defgrad(
    lambda g, out, x, axis, keepdims, correction: (_var_backward(g, x, axis, keepdims, correction),)
)
std.defgrad(
    lambda g, out, x, axis, keepdims, correction: (
        _var_backward(g / (out * 2), x, axis, keepdims, correction),
    )
)


def _logsumexp_ref(x, axis=None, keepdims=False):
    axes = reduced_axes(axis, x.ndim)
    x64 = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    m = np.max(x64.real, axis=axes, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x64 - shift), axis=axes, keepdims=True)) + shift
    return out.reshape(reduced_shape(x.shape, axes, keepdims)).astype(_float_result(x.dtype))


logsumexp = _reduction(
    "logsumexp",
    _logsumexp_rows,
    _quiet(_logsumexp_ref),
    dtypes=dt.FLOATS + dt.COMPLEX,
    out_dtype=_float_result,
    to_float=True,
    doc="log(sum(exp(x))) over `axis`, shifted by the max (of the real parts) so it cannot "
    "overflow; -inf for an empty reduction; the principal log for complex x. Integer inputs "
    "give float32.",
)

logsumexp.defgrad(
    lambda g, out, x, axis, keepdims: (
        _expand(g, x, axis, keepdims) * conj(exp(x - _expand(out, x, axis, keepdims))),
    )
)

# ---------------------------------------------------------------- all, any


def _logic_ref(fn):
    def ref(x, axis=None, keepdims=False):
        return np.asarray(fn(x, axis=reduced_axes(axis, x.ndim), keepdims=keepdims))

    return ref


all = _reduction(
    "all",
    _all_rows,
    _logic_ref(np.all),
    dtypes=dt.ALL + dt.COMPLEX,
    out_dtype=lambda d: dt.bool_,
    differentiable=False,
    doc="True where every element over `axis` is nonzero (True for an empty reduction).",
)
any = _reduction(
    "any",
    _any_rows,
    _logic_ref(np.any),
    dtypes=dt.ALL + dt.COMPLEX,
    out_dtype=lambda d: dt.bool_,
    differentiable=False,
    doc="True where some element over `axis` is nonzero (False for an empty reduction).",
)

__all__ = [
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "argmax",
    "argmin",
    "ValuesIndices",
    "amax",
    "amin",
    "var",
    "std",
    "logsumexp",
    "all",
    "any",
    "expand_reduced",
    "reduced_count",
    "reduced_axes",
    "reduced_shape",
]
