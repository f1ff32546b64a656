"""Neural-network ops: softmax, log_softmax, one_hot, the fused cross_entropy, and mse_loss.

Kernels see rows: the softmax (class) axis is moved last and the input viewed as a contiguous
(rows, classes) array, so each kernel compiles once per dtype whatever the rank. Sums are
accumulated in float64 and every exp is shifted by the row's max, so large logits stay finite.
Gradient rules are written with nbflow ops, so they work in graph mode and differentiate again.
"""

import math
import os
import sys
import warnings

import numpy as np
from numba import prange

from ..core import UNKNOWN, Attr, Op, Spec, broadcast_shapes, normalize_axis
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError, OutOfRangeError, ShapeError
from ..kernels.cpu import threads, vecmath
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT, axis_rows, sum64, write_axis_rows
from . import reduce as _reduce
from . import shape as _shape
from .elementwise import astype, exp

FLOATS, INTS = dt.FLOATS, dt.INTS
REDUCTIONS = ("mean", "sum", "none")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _softmax_exps(x, exps):
    """exps[i] = exp(x[i] - max(x[i])) for each row of the 2-D x (exps C-contiguous, x's
    shape); returns the row maxima. The exps run over the whole block in one loop: with rows
    as short as 10 classes, a vector loop per row would be mostly its scalar remainder."""
    rows, n = x.shape
    m = np.zeros(rows, x.dtype)
    if n == 0:
        return m
    for i in range(rows):
        mi = x[i, 0]
        for j in range(1, n):
            if x[i, j] > mi:
                mi = x[i, j]
        m[i] = mi
        for j in range(n):
            exps[i, j] = x[i, j] - mi
    flat = exps.reshape(-1)
    for k in range(flat.size):
        flat[k] = vecmath.exp(flat[k])
    return m


@njit(**dict(JIT, fastmath={"reassoc"}))
def _row_sum(a):
    """The float64 sum of a 1-D array, reassociated: LLVM keeps vector partial sums, where an
    ordered sum is a chain of dependent adds (a third of a softmax over rows of 64)."""
    total = 0.0
    for j in range(a.shape[0]):
        total += a[j]
    return total


@njit(**JIT)
def _softmax_rows(x, out, log):
    """Softmax (or log-softmax) of each row of the 2-D array x (out C-contiguous), max-shifted:
    the exps in x's dtype (_softmax_exps), each row's sum in float64 (_row_sum)."""
    m = _softmax_exps(x, out)
    n = x.shape[1]
    for i in range(x.shape[0]):
        s = _row_sum(out[i])
        if log:
            shift = m[i] + math.log(s)
            for j in range(n):
                out[i, j] = x[i, j] - shift
        else:
            inv = 1.0 / s
            for j in range(n):
                out[i, j] *= inv


@njit(parallel=True, **JIT)
def _softmax_rows_threads(x, out, log, parts):
    """_softmax_rows over the rows cut into parts, over numba's threads."""
    rows = x.shape[0]
    for p in prange(parts):
        first, last = rows * p // parts, rows * (p + 1) // parts
        _softmax_rows(x[first:last], out[first:last], log)


@njit(**JIT)
def _cross_entropy_rows(x, labels, ignore_index, smoothing, losses):
    """Per-row loss -log softmax(x)[label] (with label smoothing) into `losses`; ignored rows
    get 0. Returns (sum of losses, number of rows not ignored), summed in float64."""
    total = 0.0
    count = 0
    n_classes = x.shape[1]
    # the exps in x's dtype, each row summed after in float64
    exps = np.empty(x.shape, x.dtype)
    m = _softmax_exps(x, exps)
    for i in range(x.shape[0]):
        t = labels[i]
        if t == ignore_index:
            losses[i] = 0.0
            continue
        lse = float(m[i]) + math.log(sum64(exps[i]))
        loss = lse - x[i, t]
        if smoothing != 0.0:
            loss = (1.0 - smoothing) * loss + smoothing * (lse - sum64(x[i]) / n_classes)
        losses[i] = loss
        total += loss
        count += 1
    return total, count


@njit(**JIT)
def _first_bad_label(labels, n_classes, ignore_index, use_ignore):
    """Flat index of the first label outside [0, n_classes) that is not ignored, else -1."""
    for i in range(labels.size):
        t = labels[i]
        if (t < 0 or t >= n_classes) and not (use_ignore and t == ignore_index):
            return i
    return -1


@njit(**JIT)
def _count_kept(labels, ignore_index):
    """The number of labels other than ignore_index (cheaper than numpy's compare and count)."""
    count = 0
    for i in range(labels.size):
        count += labels[i] != ignore_index
    return count


@njit(**JIT)
def _one_hot_rows(labels, ignore_index, use_ignore, out):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 0
        t = labels[i]
        if use_ignore and t == ignore_index:
            continue
        out[i, t] = 1


@njit(**JIT)
def _squared_error(x, y, out):
    for i in range(out.size):
        d = x[i] - y[i]
        out[i] = d * d


@njit(**JIT)
def _squared_error_sum(x, y):
    acc = 0.0
    for i in range(x.size):
        d = float(x[i]) - float(y[i])
        acc += d * d
    return acc


def _check_labels(op_name, labels, n_classes, ignore_index):
    """OutOfRangeError for the first label outside [0, n_classes) (before any kernel runs)."""
    flat = np.ascontiguousarray(labels).reshape(-1)
    use_ignore = ignore_index is not None
    bad = _first_bad_label(flat, n_classes, 0 if ignore_index is None else ignore_index, use_ignore)
    if bad >= 0:
        where = tuple(int(i) for i in np.unravel_index(bad, labels.shape))
        ignored = f" and is not ignore_index={ignore_index}" if use_ignore else ""
        raise OutOfRangeError(
            f"{op_name}: label {int(flat[bad])} at position {where} is outside "
            f"[0, {n_classes}) for {n_classes} classes{ignored}"
        )
    return flat


def _float_dtype(what, d):
    if not dt.is_float(d):
        raise DTypeError(f"{what} must be a float tensor, got {d}")
    return d


def _softmax_axis(ndim: int, axis: int) -> int:
    """Normalised softmax axis; a 0-d input accepts 0 and -1, as in PyTorch."""
    if ndim == 0 and axis in (0, -1):
        return 0
    return normalize_axis(axis, ndim)


# ---------------------------------------------------------------- softmax, log_softmax


def _softmax_spec(x, axis):
    _float_dtype("the input", x.dtype)
    _softmax_axis(x.ndim, axis)
    return Spec(x.shape, x.dtype)


def _softmax_launcher(log):
    def launch(x, out, axis):
        if out.size == 0:
            return
        axis = _softmax_axis(x.ndim, axis)
        rows = axis_rows(x, axis)
        write_axis_rows(out, axis, lambda o: _by_rows(rows, o, log))

    return launch


def _by_rows(x, out, log):
    """_softmax_rows, on numba's threads where that measured faster."""
    threads.measured(
        ("softmax", x.shape, x.dtype, log),
        lambda: _softmax_rows(x, out, log),
        lambda: _softmax_rows_threads(x, out, log, threads.get_num_threads()),
        out.size,
    )


def _softmax_ref(x, axis=-1):
    if x.size == 0:
        return x.copy()
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def _log_softmax_ref(x, axis=-1):
    if x.size == 0:
        return x.copy()
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=axis, keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))).astype(x.dtype)


class _Softmax(Op):
    """softmax and log_softmax, which also take PyTorch's dtype=: x is cast to it first (an
    integer input gives a float result, and the gradient flows back through the cast)."""

    def __call__(self, *args, dtype=None, **attrs):
        if dtype is not None and args:
            args = (astype(args[0], dtype), *args[1:])
        return Op.__call__(self, *args, **attrs)


softmax = _Softmax(
    name="softmax",
    inputs=("x",),
    outputs=("out",),
    spec=_softmax_spec,
    kernels={"cpu": _softmax_launcher(False), "cuda": None},
    dtypes=FLOATS,
    ref=_softmax_ref,
    attrs={"axis": Attr("int", -1)},
    doc="exp(x) / sum(exp(x)) along `axis` (max-shifted, so large inputs stay finite).",
)


@softmax.defgrad
def _softmax_grad(g, out, x, axis):
    return (softmax_grad(g, out, axis=axis, log=False),)


log_softmax = _Softmax(
    name="log_softmax",
    inputs=("x",),
    outputs=("out",),
    spec=_softmax_spec,
    kernels={"cpu": _softmax_launcher(True), "cuda": None},
    dtypes=FLOATS,
    ref=_log_softmax_ref,
    attrs={"axis": Attr("int", -1)},
    doc="x - logsumexp(x) along `axis`: the log of softmax, computed stably.",
)


@log_softmax.defgrad
def _log_softmax_grad(g, out, x, axis):
    return (softmax_grad(g, out, axis=axis, log=True),)


# ---------------------------------------------------------------- softmax_grad


@njit(**dict(JIT, fastmath={"reassoc"}))
def _softmax_grad_rows(g, out, dx, log):
    """For each row: log False, dx = out (g - sum(g out)) (softmax's gradient, out its
    output); log True, dx = g - exp(out) sum(g) (log_softmax's). Sums in float64."""
    n = g.shape[1]
    for i in range(g.shape[0]):
        gi, oi, di = g[i], out[i], dx[i]
        total = 0.0
        if log:
            for j in range(n):
                total += gi[j]
            for j in range(n):
                di[j] = gi[j] - vecmath.exp(oi[j]) * total
        else:
            for j in range(n):
                total += gi[j] * oi[j]
            for j in range(n):
                di[j] = oi[j] * (gi[j] - total)


@njit(parallel=True, **JIT)
def _softmax_grad_rows_threads(g, out, dx, log, parts):
    """_softmax_grad_rows over the rows cut into parts, over numba's threads."""
    rows = g.shape[0]
    for p in prange(parts):
        first, last = rows * p // parts, rows * (p + 1) // parts
        _softmax_grad_rows(g[first:last], out[first:last], dx[first:last], log)


def _softmax_grad_spec(g, out, axis, log):
    if tuple(g.shape) != tuple(out.shape):
        raise ShapeError(f"g of shape {tuple(g.shape)} differs from out {tuple(out.shape)}")
    _softmax_axis(len(out.shape), axis)
    return Spec(out.shape, dt.promote([g.dtype, out.dtype]))


def _softmax_grad_cpu(g, out, dx, axis, log):
    if dx.size == 0:
        return
    axis = _softmax_axis(out.ndim, axis)
    g2, o2 = axis_rows(g, axis), axis_rows(out, axis)

    def fill(rows):
        threads.measured(
            ("softmax_grad", rows.shape, rows.dtype, log),
            lambda: _softmax_grad_rows(g2, o2, rows, log),
            lambda: _softmax_grad_rows_threads(g2, o2, rows, log, threads.get_num_threads()),
            rows.size,
        )

    write_axis_rows(dx, axis, fill)


def _softmax_grad_ref(g, out, axis=-1, log=False):
    g64, o64 = g.astype(np.float64), out.astype(np.float64)
    if log:
        dx = g64 - np.exp(o64) * g64.sum(axis=axis, keepdims=True)
    else:
        dx = o64 * (g64 - (g64 * o64).sum(axis=axis, keepdims=True))
    return dx.astype(dt.promote([g.dtype, out.dtype]))


softmax_grad = Op(
    name="softmax_grad",
    inputs=("g", "out"),
    outputs=("dx",),
    spec=_softmax_grad_spec,
    kernels={"cpu": _softmax_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_softmax_grad_ref,
    attrs={"axis": Attr("int", -1), "log": Attr("bool", False)},
    doc=(
        "The gradient of softmax (log=False: out * (g - sum(g * out))) or of log_softmax "
        "(log=True: g - exp(out) * sum(g)) along `axis`, from the output gradient g and the "
        "output `out`: one pass for the sum, one for the result, per row."
    ),
)


@softmax_grad.defgrad
def _softmax_grad_grad(h, dx, g, out, axis, log):
    # linear in g (and symmetric for softmax: the g-gradient is the op again); out enters
    # through out * (g - s), s = sum(g out), or through exp(out) * sum(g)
    if log:
        dg = h - _reduce.sum(exp(out) * h, axis=axis, keepdims=True)
        dout = -exp(out) * h * _reduce.sum(g, axis=axis, keepdims=True)
        return dg, dout
    s = _reduce.sum(g * out, axis=axis, keepdims=True)
    t = _reduce.sum(h * out, axis=axis, keepdims=True)
    return softmax_grad(h, out, axis=axis, log=False), h * (g - s) - g * t


# ---------------------------------------------------------------- one_hot


def _int_labels(what, d):
    if d not in INTS:
        raise DTypeError(
            f"{what} must be int32 or int64 class indices, got {d}"
            + (" (class probabilities are not supported)" if dt.is_float(d) else "")
        )


def _one_hot_spec(labels, num_classes, axis, dtype, ignore_index):
    _int_labels("labels", labels.dtype)
    if num_classes < 0:
        raise AttrError(f"num_classes must be >= 0, got {num_classes}")
    axis = normalize_axis(axis, labels.ndim + 1)
    shape = labels.shape[:axis] + (num_classes,) + labels.shape[axis:]
    return Spec(shape, dtype)


def _one_hot_cpu(labels, out, num_classes, axis, dtype, ignore_index):
    flat = _check_labels("one_hot", labels, num_classes, ignore_index)
    if out.size == 0:
        return
    axis = normalize_axis(axis, labels.ndim + 1)
    ignore = 0 if ignore_index is None else ignore_index
    write_axis_rows(out, axis, lambda o: _one_hot_rows(flat, ignore, ignore_index is not None, o))


def _one_hot_ref(labels, num_classes, axis=-1, dtype=dt.int64, ignore_index=None):
    valid = labels != ignore_index if ignore_index is not None else np.ones(labels.shape, bool)
    out = (labels[..., None] == np.arange(num_classes)) & valid[..., None]
    return np.moveaxis(out, -1, axis).astype(dtype)


one_hot = Op(
    name="one_hot",
    inputs=("labels",),
    outputs=("out",),
    spec=_one_hot_spec,
    kernels={"cpu": _one_hot_cpu, "cuda": None},
    dtypes=INTS,
    ref=_one_hot_ref,
    differentiable=False,
    attrs={
        "num_classes": Attr("int"),
        "axis": Attr("int", -1),
        "dtype": Attr("dtype", dt.int64),
        "ignore_index": Attr("int", None, optional=True),
    },
    promote=(0,),
    doc=(
        "1 at each label's class along a new `axis` of length num_classes, 0 elsewhere "
        "(int64 by default, as PyTorch); labels equal to ignore_index give all zeros."
    ),
)


# ---------------------------------------------------------------- cross_entropy


def _class_axis(ndim: int) -> int:
    """PyTorch's layout: logits (C,), (N, C) or (N, C, d1, ...); the class axis is 1 (0 for
    unbatched 1-D logits)."""
    return 1 if ndim >= 2 else 0


def _cross_entropy_spec(logits, labels, reduction, ignore_index, label_smoothing):
    _float_dtype("logits", logits.dtype)
    _int_labels("labels", labels.dtype)
    if logits.ndim == 0:
        raise ShapeError(
            f"logits of shape {logits.shape} have no class axis: expected (C,), (N, C) or "
            "(N, C, d1, ...)"
        )
    if not 0.0 <= label_smoothing <= 1.0:
        raise AttrError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    cls = _class_axis(logits.ndim)
    expected = logits.shape[:cls] + logits.shape[cls + 1 :]
    if len(labels.shape) != len(expected) or any(
        a != b and UNKNOWN not in (a, b) for a, b in zip(labels.shape, expected, strict=True)
    ):
        raise ShapeError(
            f"labels of shape {labels.shape} do not fit logits of shape {logits.shape}: "
            f"expected labels of shape {expected} (logits without class axis {cls})"
        )
    if reduction == "none":
        shape = tuple(b if a == UNKNOWN else a for a, b in zip(labels.shape, expected, strict=True))
        return Spec(shape, logits.dtype)
    return Spec((), logits.dtype)


def _cross_entropy_cpu(logits, labels, out, reduction, ignore_index, label_smoothing):
    cls = _class_axis(logits.ndim)
    n_classes = logits.shape[cls]
    flat = _check_labels("cross_entropy", labels, n_classes, ignore_index)
    rows = axis_rows(logits, cls)
    losses = np.empty(flat.size, np.float64)
    total, count = _cross_entropy_rows(rows, flat, ignore_index, label_smoothing, losses)
    if reduction == "none":
        out[...] = losses.reshape(out.shape)
    elif reduction == "sum":
        out[...] = total
    else:
        out[...] = total / count if count else math.nan  # all ignored: nan, as PyTorch


def _cross_entropy_ref(logits, labels, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    x = np.moveaxis(logits.astype(np.float64), _class_axis(logits.ndim), -1)
    m = x.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True)))[..., 0]
    valid = labels != ignore_index
    picked = np.take_along_axis(x, np.where(valid, labels, 0)[..., None], axis=-1)[..., 0]
    loss = (1 - label_smoothing) * (lse - picked) + label_smoothing * (lse - x.mean(axis=-1))
    loss = np.where(valid, loss, 0.0)
    if reduction == "none":
        return loss.astype(logits.dtype)
    total = loss.sum()
    if reduction == "sum":
        return np.asarray(total, logits.dtype)
    count = valid.sum()
    return np.asarray(total / count if count else np.nan, logits.dtype)


cross_entropy = Op(
    name="cross_entropy",
    inputs=("logits", "labels"),
    outputs=("out",),
    spec=_cross_entropy_spec,
    kernels={"cpu": _cross_entropy_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_cross_entropy_ref,
    attrs={
        "reduction": Attr("str", "mean", choices=REDUCTIONS),
        "ignore_index": Attr("int", -100),
        "label_smoothing": Attr("float", 0.0),
    },
    promote=(0,),
    doc=(
        "Fused log_softmax + negative log likelihood of integer class labels, as PyTorch's "
        "cross_entropy: logits (C,), (N, C) or (N, C, d1, ...) with the class axis 1, labels "
        "(N, d1, ...). Targets equal to ignore_index add nothing; 'mean' divides by the "
        "number of targets not ignored. label_smoothing mixes in the uniform distribution."
    ),
)


@njit(**JIT)
def _cross_entropy_grad_rows(x, labels, scale, ignore_index, smoothing, out):
    """out[i] = (softmax(x[i]) - target_i) * scale[i] for each row; 0 for ignored rows.
    target_i is the smoothed one-hot of labels[i]."""
    n = x.shape[1]
    _softmax_exps(x, out)
    for i in range(x.shape[0]):
        t = labels[i]
        if t == ignore_index or n == 0:
            for j in range(n):
                out[i, j] = 0
            continue
        inv = scale[i] / sum64(out[i])
        uniform = scale[i] * smoothing / n
        for j in range(n):
            out[i, j] = out[i, j] * inv - uniform
        out[i, t] -= scale[i] * (1.0 - smoothing)


def _cross_entropy_grad_spec(g, logits, labels, reduction, ignore_index, label_smoothing):
    _cross_entropy_spec(logits, labels, reduction, ignore_index, label_smoothing)
    return Spec(logits.shape, logits.dtype)


def _cross_entropy_grad_cpu(g, logits, labels, out, reduction, ignore_index, label_smoothing):
    cls = _class_axis(logits.ndim)
    flat = _check_labels("cross_entropy", labels, logits.shape[cls], ignore_index)
    if reduction == "none":
        scale = np.ascontiguousarray(np.broadcast_to(g, labels.shape), np.float64).reshape(-1)
    else:
        count = _count_kept(flat, ignore_index) if reduction == "mean" else 1
        scale = np.full(flat.size, float(g) / count if count else math.nan)
    rows = axis_rows(logits, cls)
    write_axis_rows(
        out,
        cls,
        lambda out_rows: _cross_entropy_grad_rows(
            rows, flat, scale, ignore_index, label_smoothing, out_rows
        ),
    )


def _targets(logits, labels, ignore_index, label_smoothing):
    """(the smoothed one-hot targets, 1 for rows not ignored else 0), both like logits."""
    cls = _class_axis(logits.ndim)
    n_classes = logits.shape[cls]
    target = one_hot(
        labels, num_classes=n_classes, axis=cls, dtype=logits.dtype, ignore_index=ignore_index
    )
    valid = _reduce.sum(target, axis=cls, keepdims=True)  # 1 for a row, 0 if it is ignored
    if label_smoothing:
        target = target * (1 - label_smoothing) + valid * (label_smoothing / n_classes)
    return target, valid


def _row_scale(g, valid, reduction, cls, ndim):
    """The factor each row's gradient gets: g per row ('none'), g / count ('mean'), g."""
    if reduction == "none":
        return _shape.unsqueeze(g, axis=cls) if ndim >= 2 else g
    if reduction == "mean":
        return g / _reduce.sum(valid)  # the number of targets not ignored
    return g


def _cross_entropy_grad_ref(g, logits, labels, reduction="mean", ignore_index=-100,
                            label_smoothing=0.0):  # fmt: skip
    cls = _class_axis(logits.ndim)
    x = np.moveaxis(logits.astype(np.float64), cls, -1)
    s = np.exp(x - x.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    valid = (labels != ignore_index)[..., None]
    n = x.shape[-1]
    target = np.eye(n)[np.where(valid[..., 0], labels, 0)] * valid
    target = target * (1 - label_smoothing) + valid * (label_smoothing / n)
    d = s * valid - target
    if reduction == "none":
        scaled = d * np.asarray(g, np.float64)[..., None]
    elif reduction == "mean":
        scaled = d * float(g) / valid.sum()
    else:
        scaled = d * float(g)
    return np.moveaxis(scaled, -1, cls).astype(logits.dtype)


cross_entropy_grad = Op(
    name="cross_entropy_grad",
    inputs=("g", "logits", "labels"),
    outputs=("out",),
    spec=_cross_entropy_grad_spec,
    kernels={"cpu": _cross_entropy_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_cross_entropy_grad_ref,
    attrs=cross_entropy.attrs,
    promote=(0, 1),
    doc=(
        "cross_entropy's gradient with respect to the logits in one pass: "
        "(softmax(logits) - target) * g, per row, 'mean' divided by the targets counted."
    ),
)


@cross_entropy.defgrad
def _cross_entropy_vjp(g, out, logits, labels, reduction, ignore_index, label_smoothing):
    attrs = {"reduction": reduction, "ignore_index": ignore_index}
    grad = cross_entropy_grad(g, logits, labels, label_smoothing=label_smoothing, **attrs)
    return grad, None


@cross_entropy_grad.defgrad
def _cross_entropy_grad_vjp(gg, out, g, logits, labels, reduction, ignore_index,
                            label_smoothing):  # fmt: skip
    # out = (softmax(logits) * valid - target) * scale: linear in g; through the softmax in
    # the logits
    cls = _class_axis(logits.ndim)
    target, valid = _targets(logits, labels, ignore_index, label_smoothing)
    s = softmax(logits, axis=cls)
    gd = gg * (s * valid - target)
    if reduction == "none":
        dg = _reduce.sum(gd, axis=cls) if logits.ndim >= 2 else _reduce.sum(gd)
    elif reduction == "mean":
        dg = _reduce.sum(gd) / _reduce.sum(valid)
    else:
        dg = _reduce.sum(gd)
    h = gg * _row_scale(g, valid, reduction, cls, logits.ndim) * valid
    dlogits = s * (h - _reduce.sum(h * s, axis=cls, keepdims=True))
    return dg, dlogits, None


# ---------------------------------------------------------------- mse_loss


def _user_stacklevel() -> int:
    """The warnings stacklevel of the first caller outside the nbflow package."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def pointwise_loss_spec(name: str, complex_ok: bool = False):
    """The shape rule of a loss comparing input and target elementwise (mse, l1): float
    inputs (complex ones too where `complex_ok`: a real loss, of their parts' dtype);
    differing shapes broadcast with a warning, as in PyTorch."""

    def spec(input, target, reduction):
        d = dt.promote([input.dtype, target.dtype])
        if not (dt.is_float(d) or (complex_ok and dt.is_complex(d))):
            raise DTypeError(f"{name} needs float inputs, got {input.dtype} and {target.dtype}")
        d = dt.to_real(d)
        shape = broadcast_shapes(input.shape, target.shape)
        if input.shape != target.shape and UNKNOWN not in input.shape + target.shape:
            warnings.warn(
                f"{name}: target shape {target.shape} differs from input shape {input.shape}; "
                "they are broadcast, which is likely a mistake",
                stacklevel=_user_stacklevel(),
            )
        return Spec(shape if reduction == "none" else (), d)

    return spec


def _mse_cpu(x, y, out, reduction):
    shape = np.broadcast_shapes(x.shape, y.shape)
    xs = np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1)
    ys = np.ascontiguousarray(np.broadcast_to(y, shape)).reshape(-1)
    if reduction == "none":
        if out.flags.c_contiguous:
            _squared_error(xs, ys, out.reshape(-1))
        else:
            tmp = np.empty(out.size, out.dtype)
            _squared_error(xs, ys, tmp)
            out[...] = tmp.reshape(out.shape)
        return
    total = _squared_error_sum(xs, ys)
    if reduction == "sum":
        out[...] = total
    else:
        out[...] = total / xs.size if xs.size else math.nan


def _mse_ref(input, target, reduction="mean"):
    d = dt.promote([input.dtype, target.dtype])
    sq = (input.astype(np.float64) - target.astype(np.float64)) ** 2
    if reduction == "none":
        return sq.astype(d)
    return np.asarray(sq.sum() if reduction == "sum" else sq.mean(), d)


mse_loss = Op(
    name="mse_loss",
    inputs=("input", "target"),
    outputs=("out",),
    spec=pointwise_loss_spec("mse_loss"),
    kernels={"cpu": _mse_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_mse_ref,
    attrs={"reduction": Attr("str", "mean", choices=REDUCTIONS)},
    doc="(input - target) ** 2, averaged ('mean'), summed ('sum') or not reduced ('none').",
)


@mse_loss.defgrad
def _mse_grad(g, out, input, target, reduction):
    d = input - target  # the broadcast shape; the driver sums back to each input's shape
    if reduction == "mean":
        gd = d * (g * 2.0 / _reduce.reduced_count(d))
    else:
        gd = d * (g * 2.0)
    return gd, -gd


__all__ = [
    "softmax",
    "log_softmax",
    "softmax_grad",
    "one_hot",
    "cross_entropy",
    "cross_entropy_grad",
    "mse_loss",
]
