"""Batch normalisation (layernorm.py holds layer and group norm, dropouts.py dropout).

- `batch_norm` normalises with one fused op (`batch_norm_train`: mean and variance accumulated
  in float64 over each channel, in cache while it is normalised), in training with its affine
  parameters in the same op (`batch_norm_train_affine`, whose gradient reads g and x only,
  the normalised x recomputed). Their second derivatives recompute the inverse standard
  deviation with ops, so they differentiate again. layernorm.py shares these kernels, a row
  of its input taken as a channel.
- In training mode batch_norm updates the running statistics in place with
  `batch_norm_update_stats_` (PyTorch's rule, the running variance unbiased). The running
  statistics are also inputs of `batch_norm_train`, read for nothing but their place in the
  program: graph pruning keeps an in-place write only when a later op reads its target, so
  this keeps the update wherever the normalised output is used.
"""

import math

import numpy as np
from numba import prange

from ..core import UNKNOWN, Attr, Op, Spec, known, needs_grad
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError, ShapeError
from ..kernels.cpu import threads
from ..kernels.cpu.jit import njit, threaded
from ..kernels.cpu.templates import BODIES, JIT
from ..kernels.cuda.loader import not_supported
from . import reduce as _reduce
from . import shape as _shape
from .activations import ACTIVATION, relu_grad
from .creation import ones_like, zeros_like
from .elementwise import rsqrt

FLOATS = dt.FLOATS

# ---------------------------------------------------------------- kernels


# the per-channel sums may reassociate: LLVM then keeps several float64 partial sums in
# vector registers, where one sum in order is a chain of dependent adds a cycle apart each
CHANNEL_JIT = dict(JIT, fastmath={"reassoc"})


@njit(**CHANNEL_JIT)
def _channel_stats(x, c):
    """(mean, sum of squared deviations) of channel c of x (N, C, S), in float64, in one pass:
    the sums of the deviations from the channel's first element, which keeps the squares'
    cancellation small (that element lies a few standard deviations from the mean, as a
    rule)."""
    count = x.shape[0] * x.shape[2]
    shift = np.float64(x[0, c, 0])
    total = squares = 0.0
    for n in range(x.shape[0]):
        row = x[n, c]
        for s in range(x.shape[2]):
            d = np.float64(row[s]) - shift
            total += d
            squares += d * d
    mean = total / count
    return shift + mean, max(squares - mean * total, 0.0)


@njit(**CHANNEL_JIT)
def _normalize_channels(x, w, b, out, eps, relu):
    """Batch normalisation of each channel of x (N, C, S) by its batch mean and biased
    variance, then scaled by w[c] and shifted by b[c] (and, with `relu`, a ReLU), in one pass
    after the statistics."""
    count = x.shape[0] * x.shape[2]
    for c in prange(x.shape[1]):
        mean, squares = _channel_stats(x, c)
        scale = w[c] / math.sqrt(squares / count + eps)
        shift = b[c] - mean * scale
        for n in range(x.shape[0]):
            _affine_row(x[n, c], out[n, c], scale, shift, relu)


_relu_body = BODIES["relu"]


@njit(**JIT)
def _affine_row(src, dst, scale, shift, relu):
    """dst = src scale + shift, and with `relu` a ReLU by relu's own scalar body."""
    if relu:
        for s in range(src.shape[0]):
            dst[s] = _relu_body(src[s] * scale + shift)
    else:
        for s in range(src.shape[0]):
            dst[s] = src[s] * scale + shift


@njit(**CHANNEL_JIT)
def _normalize_channels_grad(g, y, x, w, dx, dw, db, eps, recompute, mask, masked):
    """The gradients of _normalize_channels for each channel: dx = w rstd (g -
    mean(g) - y mean(g y)), dw = sum(g y), db = sum(g), rstd from x's biased variance; y is
    the normalised x, or with `recompute` x itself, normalised here as it is read. With
    `masked`, g is 0 where mask <= 0 (relu_grad(mask, g): the gradient through a ReLU whose
    output is mask)."""
    count = x.shape[0] * x.shape[2]
    for c in prange(x.shape[1]):
        mean, squares = _channel_stats(x, c)
        rstd = 1.0 / math.sqrt(squares / count + eps)
        shift, scale = (mean, rstd) if recompute else (0.0, 1.0)  # y = (y - shift) scale
        total = 0.0
        dot = 0.0
        for n in range(x.shape[0]):
            gr, yr, mr = g[n, c], y[n, c], mask[n, c]
            for s in range(x.shape[2]):
                gs = 0 if masked and mr[s] <= 0 else gr[s]
                total += gs
                dot += gs * (yr[s] - shift) * scale
        mean_g, mean_gy = total / count, dot / count
        for n in range(x.shape[0]):
            gr, yr, mr, dst = g[n, c], y[n, c], mask[n, c], dx[n, c]
            for s in range(x.shape[2]):
                gs = 0 if masked and mr[s] <= 0 else gr[s]
                dst[s] = (gs - mean_g - (yr[s] - shift) * scale * mean_gy) * w[c] * rstd
        dw[c] = dot
        db[c] = total


@njit(**CHANNEL_JIT)
def _update_stats(mean_in, var_in, x, mean_out, var_out, momentum):
    """running = (1 - momentum) running + momentum batch, with the unbiased batch variance,
    per channel (mean_out and var_out may be mean_in and var_in)."""
    count = x.shape[0] * x.shape[2]
    for c in prange(x.shape[1]):
        mean, squares = _channel_stats(x, c)
        var = squares / (count - 1) if count > 1 else math.nan
        mean_out[c] = (1.0 - momentum) * mean_in[c] + momentum * mean
        var_out[c] = (1.0 - momentum) * var_in[c] + momentum * var


@njit(**JIT)
def _affine_channels(y, w, b, out, relu):
    """out = y w[c] + b[c] for each channel c of y (N, C, S) (and, with `relu`, a ReLU)."""
    for c in prange(y.shape[1]):
        scale, shift = w[c], b[c]
        for n in range(y.shape[0]):
            _affine_row(y[n, c], out[n, c], scale, shift, relu)


@njit(**CHANNEL_JIT)
def _affine_channels_grad(g, y, w, dy, dw, db):
    """The gradients of y w[c] + b[c] for each channel c, in one pass: dy = g w[c],
    dw[c] = sum(g y), db[c] = sum(g) (float64 sums)."""
    for c in prange(y.shape[1]):
        scale = w[c]
        total = 0.0
        dot = 0.0
        for n in range(y.shape[0]):
            gr, yr, dst = g[n, c], y[n, c], dy[n, c]
            for s in range(y.shape[2]):
                total += gr[s]
                dot += gr[s] * yr[s]
                dst[s] = gr[s] * scale
        dw[c] = dot
        db[c] = total


def _by_channels(kernel, x3, *args):
    """kernel(*args) over the channels of x3 (N, C, S), or its twin over numba's threads
    where that measured faster."""
    key = (kernel, x3.shape, x3.dtype)
    threads.measured(key, lambda: kernel(*args), lambda: threaded(kernel)(*args), x3.size)


# ---------------------------------------------------------------- helpers


def _float(what, d):
    if not dt.is_float(d):
        raise DTypeError(f"{what} must be a float tensor, got {d}")


def _channels_last3(a):
    """A contiguous (N, C, ...) array as (N, C, S), S the product of the spatial dims."""
    a = np.ascontiguousarray(a)
    return a.reshape(a.shape[0], a.shape[1], -1) if a.ndim > 2 else a.reshape(*a.shape, 1)


# ---------------------------------------------------------------- batch_norm


def _check_affine(t, shape, what, name):
    if t is not None and tuple(t.shape) != tuple(shape):
        raise ShapeError(f"{name}: {what} of shape {tuple(t.shape)} should be {tuple(shape)}")


def _bn_axes(ndim) -> tuple[int, ...]:
    return (0,) + tuple(range(2, ndim))


def _check_bn_input(x):
    _float("the input", x.dtype)
    if x.ndim < 2:
        raise ShapeError(f"input of shape {tuple(x.shape)} must be (N, C) or (N, C, ...)")


def _check_stats(x, stats):
    for s in stats:
        if len(s.shape) != 1 or not (s.shape[0] == x.shape[1] or not known(s.shape[0], x.shape[1])):
            raise ShapeError(
                f"running statistics of shape {tuple(s.shape)} do not fit input of shape "
                f"{tuple(x.shape)}: expected ({x.shape[1]},)"
            )


def _batch_count(shape) -> int:
    dims = [shape[0]] + list(shape[2:])
    return UNKNOWN if UNKNOWN in dims else math.prod(dims)


def _batch_norm_train_spec(x, *stats, eps):
    _check_bn_input(x)
    _check_stats(x, stats)
    if len(stats) not in (0, 2):
        raise ShapeError(f"takes 0 or 2 running statistics, got {len(stats)}")
    if _batch_count(x.shape) == 1:
        raise ShapeError(
            f"input of shape {tuple(x.shape)} has 1 value per channel: training needs more"
        )
    return Spec(x.shape, x.dtype)


def _batch_norm_train_cpu(x, *rest, eps):
    _normalize_cpu(x, np.ones(x.shape[1]), np.zeros(x.shape[1]), rest[-1], eps)


def _normalize_cpu(x, w, b, out, eps, relu=False):
    if out.size:
        x3 = _channels_last3(x)
        _by_channels(_normalize_channels, x3, x3, w, b, out.reshape(x3.shape), eps, relu)


def _batch_norm_train_ref(x, *stats, eps=1e-5):
    axes = _bn_axes(x.ndim)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = x64.var(axis=axes, keepdims=True)
    return ((x64 - mean) / np.sqrt(var + eps)).astype(x.dtype)


batch_norm_train = Op(
    name="batch_norm_train",
    inputs=("x", "*running_stats"),
    outputs=("out",),
    spec=_batch_norm_train_spec,
    kernels={"cpu": _batch_norm_train_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_batch_norm_train_ref,
    attrs={"eps": Attr("float", 1e-5)},
    promote=(0,),
    shape_only=("running_stats",),
    doc=(
        "Training-mode batch normalisation of x (N, C, ...): (x - mean) / sqrt(var + eps) "
        "with each channel's batch mean and biased variance. The optional running_mean and "
        "running_var inputs are not read: they place the op after their in-place update "
        "(batch_norm_update_stats_), so graph pruning keeps that update."
    ),
)


@batch_norm_train.defgrad
def _batch_norm_train_grad(g, out, x, *stats, eps):
    return (batch_norm_train_grad(g, out, x, eps=eps),) + (None,) * len(stats)


def _train_grad_spec(g, y, x, eps):
    _check_bn_input(x)
    _check_same_shapes(x, g=g, y=y)
    return Spec(x.shape, dt.promote([g.dtype, x.dtype]))


def _check_same_shapes(x, **others):
    """Each of `others` has x's shape (where both are known)."""
    for what, a in others.items():
        if len(a.shape) != len(x.shape) or any(
            p != q and known(p, q) for p, q in zip(a.shape, x.shape)
        ):
            raise ShapeError(f"{what} of shape {tuple(a.shape)} differs from x {tuple(x.shape)}")


def _train_grad_cpu(g, y, x, out, eps):
    channels = np.empty(x.shape[1])
    _normalize_grad_cpu(g, y, x, np.ones(x.shape[1]), out, channels, channels, eps)


def _normalize_grad_cpu(g, y, x, w, dx, dw, db, eps, mask=None):
    """dx, dw, db of _normalize_channels (y None: recomputed from x; mask: of a ReLU after
    it, its output)."""
    if x.size == 0:
        dw[...] = 0
        db[...] = 0
        return
    x3, g3 = _channels_last3(x), _channels_last3(g)
    y3 = x3 if y is None else _channels_last3(y)
    m3 = g3 if mask is None else _channels_last3(mask)  # (not read without a mask)
    args = (g3, y3, x3, w, dx.reshape(x3.shape), dw, db, eps, y is None, m3, mask is not None)
    _by_channels(_normalize_channels_grad, x3, *args)


def _train_grad_ref(g, y, x, eps=1e-5):
    return _normalize_grad_ref(g, y, x, _bn_axes(x.ndim), eps)


def _normalize_grad_ref(g, y, x, axes, eps):
    g64, y64, x64 = (a.astype(np.float64) for a in (g, y, x))
    rstd = 1 / np.sqrt(x64.var(axis=axes, keepdims=True) + eps)
    mean_g = g64.mean(axis=axes, keepdims=True)
    mean_gy = (g64 * y64).mean(axis=axes, keepdims=True)
    return ((g64 - mean_g - y64 * mean_gy) * rstd).astype(dt.promote([g.dtype, x.dtype]))


batch_norm_train_grad = Op(
    name="batch_norm_train_grad",
    inputs=("g", "y", "x"),
    outputs=("dx",),
    spec=_train_grad_spec,
    kernels={"cpu": _train_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_train_grad_ref,
    attrs={"eps": Attr("float", 1e-5)},
    promote=(0, 2),
    doc=(
        "The gradient of batch_norm_train: g the output gradient, y the normalised x -> "
        "rstd (g - mean(g) - y mean(g y)) per channel, rstd = 1 / sqrt(var(x) + eps) (the "
        "biased batch variance). Two passes over each channel, in cache between them."
    ),
)


@batch_norm_train_grad.defgrad
def _batch_norm_train_grad_grad(h, dx, g, y, x, eps):
    again = lambda h: batch_norm_train_grad(h, y, x, eps=eps)
    return _normalize_grad_grad(h, dx, g, y, x, _bn_axes(len(x.shape)), eps, again)


def _normalize_grad_grad(h, dx, g, y, x, axes, eps, again, wanted=None):
    """The gradient of a normalisation's gradient dx = rstd (g - mean(g) - y mean(g y)) over
    `axes` (batch_norm_train_grad, layer_norm_grad): linear and symmetric in g, so the
    g-gradient is the op again (`again(h)`); y enters through y mean(g y); x only through
    rstd (d rstd / dx = -rstd^3 (x - mean(x)) / count). `wanted`: whether each of g, y, x
    needs its gradient, when they are values the caller computed (which need none by
    themselves in a backward pass that records nothing)."""
    want_g, want_y, want_x = wanted or (needs_grad(g), needs_grad(y), needs_grad(x))
    dg = again(h) if want_g else None
    dy = dxx = None
    if want_y or want_x:
        centred = x - _reduce.mean(x, axis=axes, keepdims=True)
        rstd = rsqrt(_reduce.mean(centred * centred, axis=axes, keepdims=True) + eps)
        if want_y:
            mean_gy = _reduce.mean(g * y, axis=axes, keepdims=True)
            mean_hy = _reduce.mean(h * y, axis=axes, keepdims=True)
            dy = -(h * mean_gy + g * mean_hy) * rstd
        if want_x:
            dxx = -_reduce.mean(h * dx, axis=axes, keepdims=True) * rstd * rstd * centred
    return dg, dy, dxx


def _update_stats_spec(running_mean, running_var, x, momentum):
    _check_bn_input(x)
    _check_stats(x, (running_mean, running_var))
    _float("running_mean", running_mean.dtype)
    _float("running_var", running_var.dtype)
    if _batch_count(x.shape) == 1:
        raise ShapeError(
            f"input of shape {tuple(x.shape)} has 1 value per channel: training needs more"
        )
    return Spec(running_mean.shape, running_mean.dtype), Spec(running_var.shape, running_var.dtype)


def _update_stats_cpu(running_mean, running_var, x, mean_out, var_out, momentum):
    if x.size == 0:
        return
    x3 = _channels_last3(x)
    _by_channels(_update_stats, x3, running_mean, running_var, x3, mean_out, var_out, momentum)


def _update_stats_ref(running_mean, running_var, x, momentum=0.1):
    axes = _bn_axes(x.ndim)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes)
    var = x64.var(axis=axes, ddof=1)
    new_mean = (1 - momentum) * running_mean + momentum * mean
    new_var = (1 - momentum) * running_var + momentum * var
    return new_mean.astype(running_mean.dtype), new_var.astype(running_var.dtype)


batch_norm_update_stats_ = Op(
    name="batch_norm_update_stats_",
    inputs=("running_mean", "running_var", "x"),
    outputs=("running_mean_out", "running_var_out"),
    spec=_update_stats_spec,
    kernels={"cpu": _update_stats_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_update_stats_ref,
    differentiable=False,
    attrs={"momentum": Attr("float", 0.1)},
    inplace={0: 0, 1: 1},
    doc=(
        "In place: running_mean = (1 - momentum) running_mean + momentum batch_mean and "
        "running_var likewise with the unbiased batch variance, per channel (axis 1) of x "
        "(PyTorch's batch_norm in training mode)."
    ),
)


# ---------------------------------------------------------------- channel_affine


def _affine_spec(y, w, b):
    _check_bn_input(y)
    _check_stats(y, (w, b))
    return Spec(y.shape, dt.promote([y.dtype, w.dtype, b.dtype]))


def _affine_cpu(y, w, b, out):
    if out.size:
        y3 = _channels_last3(y)
        _by_channels(_affine_channels, y3, y3, w, b, out.reshape(y3.shape), False)


def _affine_ref(y, w, b):
    per_channel = (-1,) + (1,) * (y.ndim - 2)
    d = dt.promote([y.dtype, w.dtype, b.dtype])
    return (y.astype(np.float64) * w.reshape(per_channel) + b.reshape(per_channel)).astype(d)


channel_affine = Op(
    name="channel_affine",
    inputs=("y", "weight", "bias"),
    outputs=("out",),
    spec=_affine_spec,
    kernels={"cpu": _affine_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_affine_ref,
    doc=(
        "y (N, C, ...) scaled and shifted per channel: y * weight[c] + bias[c], weight and "
        "bias (C,) (batch norm's affine step, and eval-mode batch norm as a whole). One pass."
    ),
)


@channel_affine.defgrad
def _channel_affine_grad(g, out, y, w, b):
    dy, dw, db = channel_affine_grad(g, y, w)
    return (
        dy if needs_grad(y) else None,
        dw if needs_grad(w) else None,
        db if needs_grad(b) else None,
    )


def _affine_grad_spec(g, y, w):
    _check_bn_input(y)
    _check_stats(y, (w,))
    _check_same_shapes(y, g=g)
    return (
        Spec(y.shape, dt.promote([g.dtype, w.dtype])),
        Spec(w.shape, dt.promote([g.dtype, y.dtype])),
        Spec(w.shape, g.dtype),
    )


def _affine_grad_cpu(g, y, w, dy, dw, db):
    y3 = _channels_last3(y)
    if y.size == 0:
        dw[...] = 0
        db[...] = 0
        return
    g3 = _channels_last3(g)
    _by_channels(_affine_channels_grad, y3, g3, y3, w, dy.reshape(y3.shape), dw, db)


def _affine_grad_ref(g, y, w):
    axes = _bn_axes(y.ndim)
    g64 = g.astype(np.float64)
    per_channel = (-1,) + (1,) * (y.ndim - 2)
    return (
        (g64 * w.reshape(per_channel)).astype(dt.promote([g.dtype, w.dtype])),
        (g64 * y).sum(axis=axes).astype(dt.promote([g.dtype, y.dtype])),
        g64.sum(axis=axes).astype(g.dtype),
    )


channel_affine_grad = Op(
    name="channel_affine_grad",
    inputs=("g", "y", "weight"),
    outputs=("dy", "dweight", "dbias"),
    spec=_affine_grad_spec,
    kernels={"cpu": _affine_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_affine_grad_ref,
    doc=(
        "The gradients of channel_affine in one pass: dy = g * weight[c], dweight[c] = "
        "sum(g * y) and dbias[c] = sum(g) over the batch and spatial dims (float64 sums)."
    ),
)


@channel_affine_grad.defgrad
def _channel_affine_grad_grad(h, outs, g, y, w):
    # linear in each input: d/dg = hy w + y hw + hb, d/dy = g hw, d/dw = sum(hy g)
    hy, hw, hb = h
    zeros = zeros_like(hb)
    dg = channel_affine(hy, w, hb) + channel_affine(y, hw, zeros) if needs_grad(g) else None
    dy = channel_affine(g, hw, zeros) if needs_grad(y) else None
    dw = _reduce.sum(hy * g, axis=_bn_axes(len(g.shape))) if needs_grad(w) else None
    return dg, dy, dw


# ---------------------------------------------------------------- batch_norm_train_affine


def _train_affine_spec(x, w, b, *stats, eps, activation="none"):
    _batch_norm_train_spec(x, *stats, eps=eps)
    _check_stats(x, (w, b))
    return Spec(x.shape, dt.promote([x.dtype, w.dtype, b.dtype]))


def _train_affine_cpu(x, w, b, *rest, eps, activation="none"):
    _normalize_cpu(x, w, b, rest[-1], eps, activation == "relu")


def _train_affine_ref(x, w, b, *stats, eps=1e-5, activation="none"):
    y = _affine_ref(_batch_norm_train_ref(x.astype(np.float64), eps=eps), w.astype(np.float64), b)
    y = np.where(y < 0, 0.0, y) if activation == "relu" else y
    return y.astype(dt.promote([x.dtype, w.dtype, b.dtype]))


batch_norm_train_affine = Op(
    name="batch_norm_train_affine",
    inputs=("x", "weight", "bias", "*running_stats"),
    outputs=("out",),
    spec=_train_affine_spec,
    kernels={"cpu": _train_affine_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_train_affine_ref,
    attrs={
        "eps": Attr("float", 1e-5),
        "activation": ACTIVATION,
    },
    promote=(0, 1, 2),
    shape_only=("running_stats",),
    doc=(
        "batch_norm_train followed by channel_affine in one op: (x - mean) / sqrt(var + eps) "
        "* weight[c] + bias[c] with each channel's batch statistics, one pass over x after "
        "them (PyTorch's batch_norm in training mode with its affine parameters). "
        "activation='relu' applies a ReLU in the same pass (graph mode folds a following "
        "relu in: graph/rewrite.py)."
    ),
)


@batch_norm_train_affine.defgrad
def _batch_norm_train_affine_grad(g, out, x, w, b, *stats, eps, activation):
    # the ReLU's mask is out > 0, exactly where its input was > 0
    mask = (out,) if activation == "relu" else ()
    dx, dw, db = batch_norm_train_affine_grad(g, x, w, *mask, eps=eps)
    wanted = zip((dx, dw, db), (x, w, b))
    return tuple(d if needs_grad(a) else None for d, a in wanted) + (None,) * len(stats)


def _train_affine_grad_spec(g, x, w, *mask, eps):
    _check_bn_input(x)
    _check_stats(x, (w,))
    _check_same_shapes(x, g=g, **({"mask": mask[0]} if mask else {}))
    d = dt.promote([g.dtype, x.dtype, w.dtype])
    return Spec(x.shape, d), Spec(w.shape, d), Spec(w.shape, d)


def _train_affine_grad_cpu(g, x, w, *rest, eps):
    *mask, dx, dw, db = rest
    _normalize_grad_cpu(g, None, x, w, dx, dw, db, eps, *mask)


def _train_affine_grad_ref(g, x, w, *mask, eps=1e-5):
    axes = _bn_axes(x.ndim)
    g64 = np.where(mask[0] <= 0, 0.0, g) if mask else g.astype(np.float64)
    y = _batch_norm_train_ref(x.astype(np.float64), eps=eps)
    dx = _normalize_grad_ref(g64 * w.reshape((-1,) + (1,) * (x.ndim - 2)), y, x, axes, eps)
    d = dt.promote([g.dtype, x.dtype, w.dtype])
    return dx.astype(d), (g64 * y).sum(axis=axes).astype(d), g64.sum(axis=axes).astype(d)


batch_norm_train_affine_grad = Op(
    name="batch_norm_train_affine_grad",
    inputs=("g", "x", "weight", "*mask"),
    outputs=("dx", "dweight", "dbias"),
    spec=_train_affine_grad_spec,
    kernels={"cpu": _train_affine_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_train_affine_grad_ref,
    attrs={"eps": Attr("float", 1e-5)},
    promote=(0, 1, 2),
    doc=(
        "The gradients of batch_norm_train_affine from g and x (the normalised x recomputed "
        "as it is read): dx = weight[c] rstd (g - mean(g) - y mean(g y)), dweight = sum(g y), "
        "dbias = sum(g), per channel; two passes over each channel after its statistics. "
        "An optional mask (the output of a ReLU after the normalisation, activation='relu') "
        "zeroes g where mask <= 0 as it is read, as relu_grad(mask, g) would."
    ),
)


@batch_norm_train_affine_grad.defgrad
def _batch_norm_train_affine_grad_grad(h, outs, g, x, w, *mask, eps):
    axes, y = _bn_axes(len(x.shape)), batch_norm_train(x, eps=eps)
    again = lambda h: batch_norm_train_grad(h, y, x, eps=eps)
    affine = lambda a, s, b=None: channel_affine(a, s, zeros_like(s) if b is None else b)
    if not mask:
        return affine_normalize_grad_grad(h, outs[0], g, y, x, w, axes, axes, eps, again, affine)
    # the op is the unmasked one of relu_grad(mask, g), which is linear in g
    masked = relu_grad(mask[0], g)
    dg, dx, dw = affine_normalize_grad_grad(
        h, outs[0], masked, y, x, w, axes, axes, eps, again, affine, needs_grad(g)
    )
    return (None if dg is None else relu_grad(mask[0], dg)), dx, dw, None


def affine_normalize_grad_grad(h, dx, g, y, x, w, axes, sum_axes, eps, again, affine, want_g=None):
    """The gradient of an affine normalisation's gradient dx = again(g w), dweight = sum(g y),
    dbias = sum(g) over `sum_axes` (y the normalised x), through those ops' own rules;
    affine(a, scale, shift=None) applies a per-feature scale and shift as the forward does.
    want_g: whether g needs its gradient, where g is a value the caller computed (which needs
    none by itself in a backward pass that records nothing)."""
    hx, hw, hb = h
    want_g = needs_grad(g) if want_g is None else want_g
    want_x, want_w = needs_grad(x), needs_grad(w)
    wanted = (want_g or want_w, want_x, want_x)
    d_gw, d_y, d_x = _normalize_grad_grad(hx, dx, affine(g, w), y, x, axes, eps, again, wanted)
    dg = affine(d_gw, w, hb) + affine(y, hw) if want_g else None
    dw = _reduce.sum(d_gw * g, axis=sum_axes) if want_w else None
    dxx = again(d_y + affine(g, hw)) + d_x if want_x else None
    return dg, dxx, dw


# ---------------------------------------------------------------- batch_norm_eval


def _eval_spec(x, mean, var, w, b, eps, activation="none"):
    _check_bn_input(x)
    _check_stats(x, (mean, var, w, b))
    return Spec(x.shape, dt.promote([a.dtype for a in (x, mean, var, w, b)]))


@njit(**JIT)
def _eval_affine(mean, var, w, b, eps, scale, shift):
    """scale = w / sqrt(var + eps) and shift = b - mean scale per channel, in float64 and
    rounded once to scale's dtype (numpy's ops on such short vectors cost more than the
    normalising pass at batch 1; six graph ops would each cost their dispatch)."""
    for c in range(scale.shape[0]):
        factor = np.float64(w[c]) / math.sqrt(np.float64(var[c]) + eps)
        scale[c] = factor
        shift[c] = np.float64(b[c]) - np.float64(mean[c]) * factor


def _eval_cpu(x, mean, var, w, b, out, eps, activation="none"):
    if out.size:
        scale, shift = np.empty(len(mean), out.dtype), np.empty(len(mean), out.dtype)
        _eval_affine(mean, var, w, b, eps, scale, shift)
        x3 = _channels_last3(x)
        relu = activation == "relu"
        _by_channels(_affine_channels, x3, x3, scale, shift, out.reshape(x3.shape), relu)


def _eval_ref(x, mean, var, w, b, eps=1e-5, activation="none"):
    d = dt.promote([a.dtype for a in (x, mean, var, w, b)])
    x, mean, var, w, b = (a.astype(np.float64) for a in (x, mean, var, w, b))
    per_channel = (-1,) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(per_channel)) / np.sqrt(var.reshape(per_channel) + eps)
    y = y * w.reshape(per_channel) + b.reshape(per_channel)
    return (np.where(y < 0, 0.0, y) if activation == "relu" else y).astype(d)


batch_norm_eval = Op(
    name="batch_norm_eval",
    inputs=("x", "running_mean", "running_var", "weight", "bias"),
    outputs=("out",),
    spec=_eval_spec,
    kernels={
        "cpu": _eval_cpu,
        "cuda": not_supported(
            "batch_norm_eval runs on the CPU; F.batch_norm composes it from rsqrt and "
            "channel_affine on a GPU"
        ),
    },
    dtypes=FLOATS,
    ref=_eval_ref,
    attrs={"eps": Attr("float", 1e-5), "activation": ACTIVATION},
    doc=(
        "Batch norm in evaluation mode, x (N, C, ...) by its running statistics: "
        "(x - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c], in one pass "
        "(the per-channel scale and shift made first). activation='relu' applies a ReLU in "
        "the same pass (graph mode folds a following relu in: graph/rewrite.py)."
    ),
)


@batch_norm_eval.defgrad
def _batch_norm_eval_grad(g, out, x, mean, var, w, b, eps, activation):
    if activation == "relu":  # out > 0 exactly where the ReLU's input was > 0
        g = relu_grad(out, g)
    # out = channel_affine(x, scale, shift), scale = w rsqrt(var + eps), shift = b - mean scale
    inverse = rsqrt(var + eps)
    scale = inverse * w
    dx, d_scale, d_shift = channel_affine_grad(g, x, scale)
    d_scale = d_scale - d_shift * mean  # (the shift reads the scale too)
    d_var = d_scale * w * inverse * inverse * inverse * -0.5 if needs_grad(var) else None
    return (
        dx if needs_grad(x) else None,
        -d_shift * scale if needs_grad(mean) else None,
        d_var,
        d_scale * inverse if needs_grad(w) else None,
        d_shift if needs_grad(b) else None,
    )


def _per_channel(t, ndim):
    """A (C,) tensor shaped (C, 1, ...) to broadcast along axis 1 of an ndim-D input."""
    for _ in range(ndim - 2):
        t = _shape.unsqueeze(t, -1)
    return t


def batch_norm(
    x,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training=False,
    momentum=0.1,
    eps=1e-5,
):
    """PyTorch's F.batch_norm on x (N, C) or (N, C, ...): in training, normalise by the batch
    statistics and update running_mean and running_var in place (unless None); otherwise
    normalise by the running statistics. weight and bias (C,) or None."""
    _check_bn_input(x)
    channels = (x.shape[1],)
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and known(x.shape[1]):
            _check_affine(t, channels, what, "batch_norm")
    if (running_mean is None) != (running_var is None):
        raise ShapeError("batch_norm: give both running_mean and running_var, or neither")
    if training:
        stats = ()
        if running_mean is not None:
            if momentum is None:
                raise AttrError(
                    "batch_norm: momentum=None (a cumulative average) is kept by the layer; "
                    "pass the momentum for this step"
                )
            stats = batch_norm_update_stats_(running_mean, running_var, x, momentum=momentum)
        if weight is None and bias is None:
            return batch_norm_train(x, *stats, eps=eps)
        scale = ones_like(bias) if weight is None else weight
        shift = zeros_like(weight) if bias is None else bias
        return batch_norm_train_affine(x, scale, shift, *stats, eps=eps)
    if running_mean is None:
        raise ShapeError("batch_norm: evaluation needs running_mean and running_var")
    if not getattr(x, "is_cuda", False):
        weight = ones_like(running_var) if weight is None else weight
        bias = zeros_like(running_mean) if bias is None else bias
        return batch_norm_eval(x, running_mean, running_var, weight, bias, eps=eps)
    # on a GPU: x * scale + shift, the statistics and the affine folded per channel
    scale = rsqrt(running_var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return channel_affine(x, scale, shift)


__all__ = [
    "batch_norm",
    "batch_norm_train",
    "batch_norm_train_grad",
    "batch_norm_train_affine",
    "batch_norm_train_affine_grad",
    "batch_norm_eval",
    "channel_affine",
    "channel_affine_grad",
    "batch_norm_update_stats_",
]
