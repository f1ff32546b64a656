"""Losses beside nn.py's cross_entropy and mse_loss: binary_cross_entropy_with_logits,
nll_loss and l1_loss, with PyTorch's semantics and reductions ('mean', 'sum', 'none'), and
binary_cross_entropy's per-element loss (an elementwise op; F.binary_cross_entropy weighs and
reduces it).

Each is one fused op: a numba loop computes the per-element losses and their float64 sum in
one pass. Optional tensor arguments (BCE's weight and pos_weight, nll_loss's class weight)
are inputs that default to the Python scalar 1.0, which broadcasts, so each op has one
signature in both modes. Gradient rules are written with nbflow ops.
"""

import math

import numpy as np

from ..core import UNKNOWN, Attr, Op, Spec, broadcast_shapes, known, needs_grad
from ..core import dtypes as dt
from ..core.errors import DomainError, DTypeError, NbflowError, OutOfRangeError, ShapeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from . import reduce as _reduce
from . import shape as _shape
from ._define import elementwise
from .activations import softplus
from .complex_parts import sgn
from .elementwise import log, log1p, maximum, sigmoid, where
from .nn import one_hot, pointwise_loss_spec

FLOATS = dt.FLOATS
REDUCTIONS = ("mean", "sum", "none")

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _bce_loop(x, y, w, pw, n, losses, store):
    """Per-element BCE with logits (stable: softplus(-x) = log1p(exp(-|x|)) + max(-x, 0));
    a length-1 operand broadcasts. Returns the float64 sum."""
    sx = 1 if x.size > 1 else 0
    sy = 1 if y.size > 1 else 0
    sw = 1 if w.size > 1 else 0
    sp_ = 1 if pw.size > 1 else 0
    total = 0.0
    for i in range(n):
        xi = float(x[i * sx])
        yi = float(y[i * sy])
        softplus_neg = math.log1p(math.exp(-abs(xi))) + max(-xi, 0.0)
        loss = float(w[i * sw]) * (
            (1.0 - yi) * xi + (1.0 + (float(pw[i * sp_]) - 1.0) * yi) * softplus_neg
        )
        if store:
            losses[i] = loss
        total += loss
    return total


@njit(**JIT)
def _first_bad_label(labels, n_classes, ignore_index):
    for i in range(labels.size):
        t = labels[i]
        if (t < 0 or t >= n_classes) and t != ignore_index:
            return i
    return -1


@njit(**JIT)
def _nll_rows(x, labels, w, ignore_index, losses, store):
    """-w[t] x[i, t] per row (0 for ignored rows); returns (sum, sum of the weights used)."""
    total = 0.0
    weight_sum = 0.0
    sw = 1 if w.size > 1 else 0
    for i in range(x.shape[0]):
        t = labels[i]
        if t == ignore_index:
            if store:
                losses[i] = 0.0
            continue
        wi = float(w[t * sw])
        loss = -wi * float(x[i, t])
        if store:
            losses[i] = loss
        total += loss
        weight_sum += wi
    return total, weight_sum


@njit(**JIT)
def _abs_error(x, y, losses, store):
    total = 0.0
    for i in range(x.size):
        # (* 1.0 widens each value: float32 to float64, complex64 to complex128; the abs of a
        # complex difference is the real distance)
        d = abs(x[i] * 1.0 - y[i] * 1.0)
        if store:
            losses[i] = d
        total += d
    return total


# ---------------------------------------------------------------- helpers


def _flat(a, shape):
    """A length-1 array stays length 1 (the kernels broadcast it); others are broadcast to
    `shape` and flattened (contiguous)."""
    if a.size == 1:
        return np.ascontiguousarray(a).reshape(1)
    return np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1)


def _finish(out, losses, total, count, reduction):
    """Write the 'none' losses, the sum, or the mean (NaN for nothing to average)."""
    if reduction == "none":
        out[...] = losses.reshape(out.shape)
    elif reduction == "sum":
        out[...] = total
    else:
        out[...] = total / count if count else math.nan


def _reduced(values, reduction, count=None):
    if reduction == "none":
        return values
    total = values.sum()
    if reduction == "sum":
        return total
    count = values.size if count is None else count
    return total / count if count else np.nan


def _scale(g, like, reduction):
    """g for each element: a mean divides by the number of elements of `like`."""
    if reduction == "mean":
        return g / _reduce.reduced_count(like)
    return g


def _wants_grad(t) -> bool:
    try:
        return bool(t.requires_grad)
    except NbflowError:  # a value overwritten in place: let the rule poison the gradient
        return True


def _float_result(name, *specs):
    d = dt.promote([s.dtype for s in specs if not s.weak], [s.dtype for s in specs if s.weak])
    if not dt.is_float(d):
        raise DTypeError(f"{name} needs float inputs, got {', '.join(str(s.dtype) for s in specs)}")
    return d


# ---------------------------------------------------------------- BCE with logits


def _bce_spec(input, target, weight, pos_weight, reduction):
    if not dt.is_float(input.dtype):
        raise DTypeError(f"input must be float logits, got {input.dtype}")
    d = _float_result("binary_cross_entropy_with_logits", input, target, weight, pos_weight)
    if len(input.shape) != len(target.shape) or any(
        a != b and known(a, b) for a, b in zip(input.shape, target.shape, strict=True)
    ):
        raise ShapeError(
            f"target of shape {tuple(target.shape)} must have the input's shape "
            f"{tuple(input.shape)}"
        )
    for what, s in (("weight", weight), ("pos_weight", pos_weight)):
        if broadcast_shapes(s.shape, input.shape) != tuple(input.shape) and known(*input.shape):
            raise ShapeError(
                f"{what} of shape {tuple(s.shape)} does not broadcast to the input's shape "
                f"{tuple(input.shape)}"
            )
    return Spec(tuple(input.shape) if reduction == "none" else (), d)


def _bce_cpu(x, y, w, pw, out, reduction):
    shape = x.shape
    n = x.size
    ops = [_flat(a, shape) for a in (x, y, w, pw)]
    store = reduction == "none"
    losses = np.empty(n if store else 0, out.dtype)
    total = _bce_loop(*ops, n, losses, store)
    _finish(out, losses, total, n, reduction)


def _bce_ref(input, target, weight=1.0, pos_weight=1.0, reduction="mean"):
    d = dt.promote(
        [np.asarray(a).dtype for a in (input, target, weight, pos_weight) if np.ndim(a)]
        or [input.dtype]
    )
    x, y = input.astype(np.float64), target.astype(np.float64)
    w, pw = np.asarray(weight, np.float64), np.asarray(pos_weight, np.float64)
    log_sig = -np.logaddexp(0, -x)  # log sigmoid(x)
    log_one_minus = -np.logaddexp(0, x)  # log(1 - sigmoid(x))
    loss = -w * (pw * y * log_sig + (1 - y) * log_one_minus)
    return np.asarray(_reduced(loss, reduction), d)


binary_cross_entropy_with_logits_op = Op(
    name="binary_cross_entropy_with_logits",
    inputs=("input", "target", "weight", "pos_weight"),
    outputs=("out",),
    spec=_bce_spec,
    kernels={"cpu": _bce_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_bce_ref,
    attrs={"reduction": Attr("str", "mean", choices=REDUCTIONS)},
    doc=(
        "-weight (pos_weight y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))), computed "
        "stably from the logits x, as PyTorch's binary_cross_entropy_with_logits; target y "
        "has x's shape (probabilities in [0, 1]); weight and pos_weight broadcast to it "
        "(pos_weight along the last, class, dim); 1.0 when not given."
    ),
)


@binary_cross_entropy_with_logits_op.defgrad
def _bce_grad(g, out, x, y, w, pw, reduction):
    g = _scale(g, x, reduction)
    coef = (pw - 1) * y + 1
    softplus_neg = softplus(-x)  # -log sigmoid(x)
    dx = w * (coef * sigmoid(x) - pw * y) * g
    dy = w * ((pw - 1) * softplus_neg - x) * g if _wants_grad(y) else None
    dw = ((1 - y) * x + coef * softplus_neg) * g if _wants_grad(w) else None
    dpw = w * y * softplus_neg * g if _wants_grad(pw) else None
    return dx, dy, dw, dpw


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """PyTorch's F.binary_cross_entropy_with_logits(input, target, weight, reduction=...,
    pos_weight=...)."""
    return binary_cross_entropy_with_logits_op(
        input,
        target,
        1.0 if weight is None else weight,
        1.0 if pos_weight is None else pos_weight,
        reduction=reduction,
    )


# ---------------------------------------------------------------- nll_loss


def _class_axis(ndim: int) -> int:
    return 1 if ndim >= 2 else 0


def _nll_spec(input, target, weight, reduction, ignore_index):
    if not dt.is_float(input.dtype):
        raise DTypeError(f"input must be float log-probabilities, got {input.dtype}")
    if target.dtype not in dt.INTS:
        raise DTypeError(f"target must be int32 or int64 class indices, got {target.dtype}")
    if input.ndim == 0:
        raise ShapeError(
            f"input of shape {tuple(input.shape)} has no class axis: expected (C,), (N, C) "
            "or (N, C, d1, ...)"
        )
    cls = _class_axis(input.ndim)
    n_classes = input.shape[cls]
    expected = tuple(input.shape[:cls]) + tuple(input.shape[cls + 1 :])
    if len(target.shape) != len(expected) or any(
        a != b and known(a, b) for a, b in zip(target.shape, expected, strict=True)
    ):
        raise ShapeError(
            f"target of shape {tuple(target.shape)} does not fit input of shape "
            f"{tuple(input.shape)}: expected {expected} (the input without class axis {cls})"
        )
    if weight.ndim not in (0, 1) or (
        weight.ndim == 1 and weight.shape[0] != n_classes and known(weight.shape[0], n_classes)
    ):
        raise ShapeError(
            f"weight of shape {tuple(weight.shape)} should be ({n_classes},), one per class"
        )
    d = dt.promote([input.dtype] + ([] if weight.weak else [weight.dtype]))
    if reduction == "none":
        shape = tuple(b if a == UNKNOWN else a for a, b in zip(target.shape, expected))
        return Spec(shape, d)
    return Spec((), d)


def _nll_rows_of(x):
    cls = _class_axis(x.ndim)
    moved = np.moveaxis(x, cls, -1)
    return np.ascontiguousarray(moved).reshape(-1, x.shape[cls])


def _nll_cpu(x, t, w, out, reduction, ignore_index):
    n_classes = x.shape[_class_axis(x.ndim)]
    labels = np.ascontiguousarray(t).reshape(-1)
    bad = _first_bad_label(labels, n_classes, ignore_index)
    if bad >= 0:
        where = tuple(int(i) for i in np.unravel_index(bad, t.shape))
        raise OutOfRangeError(
            f"nll_loss: target {int(labels[bad])} at position {where} is outside "
            f"[0, {n_classes}) and is not ignore_index={ignore_index}"
        )
    store = reduction == "none"
    losses = np.empty(labels.size if store else 0, out.dtype)
    total, weight_sum = _nll_rows(
        _nll_rows_of(x), labels, np.ascontiguousarray(w).reshape(-1), ignore_index, losses, store
    )
    _finish(out, losses, total, weight_sum, reduction)


def _nll_ref(input, target, weight=1.0, reduction="mean", ignore_index=-100):
    d = dt.promote([input.dtype] + ([np.asarray(weight).dtype] if np.ndim(weight) else []))
    cls = _class_axis(input.ndim)
    x = np.moveaxis(input.astype(np.float64), cls, -1)
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    w = np.broadcast_to(np.asarray(weight, np.float64), (x.shape[-1],))[safe]
    w = np.where(valid, w, 0.0)
    picked = np.take_along_axis(x, safe[..., None], axis=-1)[..., 0]
    loss = -w * picked
    if reduction == "none":
        return loss.astype(d)
    if reduction == "sum":
        return np.asarray(loss.sum(), d)
    total = w.sum()
    return np.asarray(loss.sum() / total if total else np.nan, d)


nll_loss_op = Op(
    name="nll_loss",
    inputs=("input", "target", "weight"),
    outputs=("out",),
    spec=_nll_spec,
    kernels={"cpu": _nll_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_nll_ref,
    attrs={
        "reduction": Attr("str", "mean", choices=REDUCTIONS),
        "ignore_index": Attr("int", -100),
    },
    promote=(0, 2),
    doc=(
        "Negative log likelihood, PyTorch's nll_loss: input log-probabilities (C,), (N, C) "
        "or (N, C, d1, ...) with the class axis 1, int target (N, d1, ...); loss = "
        "-weight[t] input[t]. Targets equal to ignore_index add nothing; 'mean' divides by "
        "the sum of the weights of the targets not ignored. weight: (C,) or 1.0. A target "
        "outside [0, C) raises OutOfRangeError. Differentiable in input and weight."
    ),
)


@nll_loss_op.defgrad
def _nll_grad(g, out, x, t, w, reduction, ignore_index):
    cls = _class_axis(x.ndim)
    n_classes = x.shape[cls]
    picked = one_hot(t, num_classes=n_classes, axis=cls, dtype=x.dtype, ignore_index=ignore_index)
    wb = w
    if w.ndim == 1:
        for _ in range(x.ndim - cls - 1):
            wb = _shape.unsqueeze(wb, -1)
    weighted = picked * wb  # weight[t] at the target's position, 0 elsewhere
    if reduction == "none":
        g = _shape.unsqueeze(g, axis=cls) if x.ndim >= 2 else g
    elif reduction == "mean":  # (no weight at all, every target ignored: a zero gradient)
        total = _reduce.sum(weighted)
        empty = total == 0
        g = g / where(empty, 1, total)
        out = where(empty, 0, out)  # (the loss is 0 / 0 there)
    dw = None
    if _wants_grad(w):
        # sum and none: d loss / d w[c] = -x[t] where t == c; mean: (-x[t] - loss) / sum(w[t])
        per_element = picked * (-x - out) if reduction == "mean" else picked * -x
        others = tuple(a for a in range(x.ndim) if a != cls) if w.ndim == 1 else None
        dw = _reduce.sum(per_element * g, axis=others)
    return -weighted * g, None, dw


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """PyTorch's F.nll_loss(input, target, weight=None, ignore_index=-100, reduction='mean')."""
    return nll_loss_op(
        input,
        target,
        1.0 if weight is None else weight,
        reduction=reduction,
        ignore_index=ignore_index,
    )


# ---------------------------------------------------------------- l1_loss


def _l1_cpu(x, y, out, reduction):
    shape = np.broadcast_shapes(x.shape, y.shape)
    xs = np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1)
    ys = np.ascontiguousarray(np.broadcast_to(y, shape)).reshape(-1)
    store = reduction == "none"
    losses = np.empty(xs.size if store else 0, out.dtype)
    total = _abs_error(xs, ys, losses, store)
    _finish(out, losses, total, xs.size, reduction)


def _l1_ref(input, target, reduction="mean"):
    d = dt.promote([input.dtype, target.dtype])
    wide = np.complex128 if dt.is_complex(d) else np.float64
    err = np.abs(input.astype(wide) - target.astype(wide))
    return np.asarray(_reduced(err, reduction), dt.to_real(d))


l1_loss = Op(
    name="l1_loss",
    inputs=("input", "target"),
    outputs=("out",),
    spec=pointwise_loss_spec("l1_loss", complex_ok=True),
    kernels={"cpu": _l1_cpu, "cuda": None},
    dtypes=FLOATS + dt.COMPLEX,
    ref=_l1_ref,
    attrs={"reduction": Attr("str", "mean", choices=REDUCTIONS)},
    doc=(
        "|input - target|, averaged ('mean'), summed ('sum') or not reduced ('none'); complex "
        "inputs give the real loss of their distance, as PyTorch's."
    ),
)


@l1_loss.defgrad
def _l1_grad(g, out, input, target, reduction):
    d = input - target  # the broadcast shape; the driver sums back to each input's shape
    # sgn: d / |d| for a complex d (PyTorch's gradient of abs), sign for a real one
    gd = sgn(d) * _scale(g, d, reduction)
    return gd, -gd


# ---------------------------------------------------------------- binary_cross_entropy


def _check_probabilities(x, y):
    if not np.all((x >= 0) & (x <= 1)):  # (NaN too)
        raise DomainError("every input must be a probability in [0, 1] (as PyTorch)")


def _bce_ref(x, y):
    with np.errstate(divide="ignore"):
        return -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log1p(-x), -100))


@elementwise(dtypes=FLOATS, ref=_bce_ref, check=_check_probabilities)
def binary_cross_entropy_pointwise(x, y):
    """-(y log x + (1 - y) log(1 - x)) for probabilities x, each log clamped at -100
    (PyTorch's binary_cross_entropy before its weight and reduction)."""
    log_x = max(math.log(x), -100.0) if x > 0 else -100.0
    log_not_x = max(math.log1p(-x), -100.0) if x < 1 else -100.0
    return -(y * log_x + (1 - y) * log_not_x)


@binary_cross_entropy_pointwise.defgrad
def _bce_grad(g, out, x, y):
    # PyTorch's rules: (x - y) / x(1 - x) with the denominator at least 1e-12, so a clamped
    # log still passes its huge gradient; the target's, log(1 - x) - log(x), unclamped
    gx = g * (x - y) / maximum((1 - x) * x, 1e-12) if needs_grad(x) else None
    gy = g * (log1p(-x) - log(x)) if needs_grad(y) else None
    return gx, gy


# ---------------------------------------------------------------- gaussian_nll_variance


def _check_variances(var):
    if np.any(var < 0):  # (NaN passes, as in PyTorch)
        raise DomainError(
            "var has negative entry/entries (gaussian_nll_loss refuses them, as PyTorch)"
        )


def _gaussian_variance_ref(var, eps=1e-6):
    return np.where(var < eps, eps, var).astype(var.dtype)


@elementwise(
    dtypes=FLOATS,
    ref=_gaussian_variance_ref,
    attrs={"eps": Attr("value", 1e-6)},
    check=_check_variances,
)
def gaussian_nll_variance(var, eps):
    """gaussian_nll_loss's variance: var clamped below at eps (NaN stays NaN), checked when the
    op runs to have no negative entry (a DomainError, in eager and graph mode alike); its
    gradient passes as if unclamped (PyTorch clamps in place without recording it)."""
    return eps if var < eps else var


gaussian_nll_variance.defgrad(lambda g, out, var, eps: (g,))


__all__ = [
    "binary_cross_entropy_pointwise",
    "gaussian_nll_variance",
    "binary_cross_entropy_with_logits",
    "nll_loss",
    "l1_loss",
    "binary_cross_entropy_with_logits_op",
    "nll_loss_op",
]
