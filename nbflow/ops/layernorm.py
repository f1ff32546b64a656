"""Layer and group normalisation: `layer_norm_op` normalises over the trailing dims (mean and
variance in float64 per row, on batch norm's channel kernels with each row as a channel), and
with both affine parameters `layer_norm_affine` does the whole of PyTorch's layer_norm in one
pass after each row's statistics; its gradient, `layer_norm_affine_grad`, gives dx, dweight
and dbias in one kernel reading g and x (the row statistics recomputed while the row is in
cache), where the composed form took six passes (mul, add, and their gradients' products and
sums around layer_norm_grad). group_norm is layer_norm_op over each group's rows.
"""

import math

import numpy as np
from numba import prange

from ..argcheck import integer, integers
from ..core import UNKNOWN, Attr, Op, Spec, known, needs_grad
from ..core import dtypes as dt
from ..core.errors import AttrError, ShapeError
from ..kernels.cpu import threads
from ..kernels.cpu.jit import njit
from ..runtime import buffers
from . import shape as _shape
from .norm import (
    CHANNEL_JIT,
    _check_affine,
    _check_same_shapes,
    _float,
    _normalize_cpu,
    _normalize_grad_cpu,
    _normalize_grad_grad,
    _normalize_grad_ref,
    affine_normalize_grad_grad,
)

FLOATS = dt.FLOATS


@njit(**CHANNEL_JIT)
def _row_moments(row):
    """(mean, biased variance) of a row in float64, in one pass: the sums of its deviations
    from its first element, which keeps the squares' cancellation small (that element lies a
    few standard deviations from the mean, as a rule)."""
    shift = np.float64(row[0])
    total = squares = 0.0
    for j in range(row.size):
        d = np.float64(row[j]) - shift
        total += d
        squares += d * d
    mean = total / row.size
    return shift + mean, max(squares / row.size - mean * mean, 0.0)


@njit(**CHANNEL_JIT)
def _affine_rows(x, w, b, out, eps, first, last):
    """out = (x - mean) rstd * w + b for rows [first, last) of x (rows, n), the statistics in
    float64 and the rest in x's dtype (so the row's loop runs at its vector width)."""
    scalars = np.empty(2, x.dtype)
    for r in range(first, last):
        row, dst = x[r], out[r]
        mean, var = _row_moments(row)
        scalars[0], scalars[1] = mean, 1.0 / math.sqrt(var + eps)
        mean, rstd = scalars[0], scalars[1]
        for j in range(row.size):
            dst[j] = (row[j] - mean) * rstd * w[j] + b[j]


@njit(parallel=True, **CHANNEL_JIT)
def _affine_rows_threads(x, w, b, out, eps, parts):
    """_affine_rows over the rows cut into parts, over numba's threads."""
    rows = x.shape[0]
    for p in prange(parts):
        _affine_rows(x, w, b, out, eps, rows * p // parts, rows * (p + 1) // parts)


@njit(**CHANNEL_JIT)
def _affine_rows_grad(g, x, w, dx, sums, eps, first, last):
    """dx of _affine_rows for rows [first, last), and into sums (2, n) in float64 their part
    of dweight = sum(g y) and dbias = sum(g) (y the normalised row)."""
    scalars = np.empty(4, x.dtype)
    n = x.shape[1]
    for r in range(first, last):
        row, gr, dst = x[r], g[r], dx[r]
        mean, var = _row_moments(row)
        scalars[0], scalars[1] = mean, 1.0 / math.sqrt(var + eps)
        mean, rstd = scalars[0], scalars[1]
        total = dot = 0.0
        for j in range(n):
            y = (row[j] - mean) * rstd
            gw = gr[j] * w[j]
            total += gw
            dot += gw * y
            sums[0, j] += gr[j] * y
            sums[1, j] += gr[j]
        scalars[2], scalars[3] = total / n, dot / n
        mean_gw, mean_gwy = scalars[2], scalars[3]
        for j in range(n):
            y = (row[j] - mean) * rstd
            dst[j] = (gr[j] * w[j] - mean_gw - y * mean_gwy) * rstd


@njit(parallel=True, **CHANNEL_JIT)
def _affine_grad_parts(g, x, w, dx, sums, eps):
    """_affine_rows_grad over the rows cut into parts, one float64 sums (2, n) of sums
    (parts, 2, n) each, over numba's threads (so the sums are the same on any thread count)."""
    rows, parts = x.shape[0], sums.shape[0]
    for p in prange(parts):
        _affine_rows_grad(g, x, w, dx, sums[p], eps, rows * p // parts, rows * (p + 1) // parts)


# ---------------------------------------------------------------- layer_norm


def _norm_axes(x_ndim, normalized_shape) -> tuple[int, ...]:
    return tuple(range(x_ndim - len(normalized_shape), x_ndim))


def _layer_norm_spec(x, normalized_shape, eps):
    _float("the input", x.dtype)
    k = len(normalized_shape)
    tail = tuple(x.shape[x.ndim - k :]) if k else ()
    if k > x.ndim or any(a != b and known(a) for a, b in zip(tail, normalized_shape)):
        raise ShapeError(
            f"input of shape {tuple(x.shape)} does not end with normalized_shape "
            f"{tuple(normalized_shape)}"
        )
    if any(n < 1 for n in normalized_shape):
        raise AttrError(f"normalized_shape {tuple(normalized_shape)} must be positive")
    if eps < 0:
        raise AttrError(f"eps must be >= 0, got {eps}")
    return Spec(x.shape, x.dtype)


def _layer_norm_cpu(x, out, normalized_shape, eps):
    if out.size == 0:
        return
    rows = (1, -1, math.prod(normalized_shape))  # rows as channels
    count = x.size // rows[2]
    _normalize_cpu(x.reshape(rows), np.ones(count), np.zeros(count), out.reshape(rows), eps)


def _layer_norm_ref(x, normalized_shape, eps=1e-5):
    axes = _norm_axes(x.ndim, tuple(normalized_shape))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=axes, keepdims=True)
    var = x64.var(axis=axes, keepdims=True)
    return ((x64 - mean) / np.sqrt(var + eps)).astype(x.dtype)


layer_norm_op = Op(
    name="layer_norm",
    inputs=("x",),
    outputs=("out",),
    spec=_layer_norm_spec,
    kernels={"cpu": _layer_norm_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_layer_norm_ref,
    attrs={"normalized_shape": Attr("ints"), "eps": Attr("float", 1e-5)},
    doc=(
        "(x - mean) / sqrt(var + eps) over the trailing dims normalized_shape (biased "
        "variance, as PyTorch's layer_norm; the affine weight and bias are applied by the "
        "public function)."
    ),
)


@layer_norm_op.defgrad
def _layer_norm_grad(g, out, x, normalized_shape, eps):
    return (layer_norm_grad(g, out, x, normalized_shape=normalized_shape, eps=eps),)


def _layer_norm_grad_spec(g, y, x, normalized_shape, eps):
    _layer_norm_spec(x, normalized_shape, eps)
    _check_same_shapes(x, g=g, y=y)
    return Spec(x.shape, dt.promote([g.dtype, x.dtype]))


def _layer_norm_grad_cpu(g, y, x, out, normalized_shape, eps):
    if out.size:
        rows = (1, -1, math.prod(normalized_shape))  # rows as channels
        count = x.size // rows[2]
        g3, y3, x3, dx = (a.reshape(rows) for a in (g, y, x, out))
        scratch = np.empty(count)
        _normalize_grad_cpu(g3, y3, x3, np.ones(count), dx, scratch, scratch, eps)


def _layer_norm_grad_ref(g, y, x, normalized_shape, eps=1e-5):
    return _normalize_grad_ref(g, y, x, _norm_axes(x.ndim, normalized_shape), eps)


layer_norm_grad = Op(
    name="layer_norm_grad",
    inputs=("g", "y", "x"),
    outputs=("dx",),
    spec=_layer_norm_grad_spec,
    kernels={"cpu": _layer_norm_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_layer_norm_grad_ref,
    attrs={"normalized_shape": Attr("ints"), "eps": Attr("float", 1e-5)},
    promote=(0, 2),
    doc=(
        "The gradient of layer_norm: g the output gradient, y the normalised x -> rstd (g - "
        "mean(g) - y mean(g y)) over the trailing dims normalized_shape, rstd = 1 / sqrt(var(x) "
        "+ eps). Two passes over each row, in cache between them."
    ),
)


@layer_norm_grad.defgrad
def _layer_norm_grad_grad(h, dx, g, y, x, normalized_shape, eps):
    again = lambda h: layer_norm_grad(h, y, x, normalized_shape=normalized_shape, eps=eps)
    axes = _norm_axes(len(x.shape), normalized_shape)
    return _normalize_grad_grad(h, dx, g, y, x, axes, eps, again)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """PyTorch's F.layer_norm: normalise over the trailing dims `normalized_shape`, then
    multiply by weight and add bias (each of that shape, or None)."""
    shape = integers(normalized_shape, "layer_norm: normalized_shape")
    _check_affine(weight, shape, "weight", "layer_norm")
    _check_affine(bias, shape, "bias", "layer_norm")
    if weight is not None and bias is not None:
        return layer_norm_affine(x, weight, bias, normalized_shape=shape, eps=eps)
    out = layer_norm_op(x, normalized_shape=shape, eps=eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """PyTorch's F.group_norm: x (N, C, *) normalised over each group of C / num_groups
    channels (with all their other dims), then weight and bias per channel; the groups are
    the rows of the layer_norm kernel."""
    if x.ndim < 2:
        raise ShapeError(f"group_norm needs x (N, C, ...), got shape {tuple(x.shape)}")
    channels = x.shape[1]
    num_groups = integer(num_groups, "group_norm: num_groups")
    if num_groups < 1 or channels % num_groups:
        raise ShapeError(f"group_norm: {channels} channels do not split into {num_groups} groups")
    _check_affine(weight, (channels,), "weight", "group_norm")
    _check_affine(bias, (channels,), "bias", "group_norm")
    inner = _shape.size_of(x.shape[2:])
    if inner == UNKNOWN:
        raise ShapeError(f"group_norm needs known dims after the channels, got {x.shape}")
    inner *= channels // num_groups
    rows = _shape.reshape_op(x, shape=(-1, num_groups, inner))
    out = _shape.reshape_op(layer_norm_op(rows, normalized_shape=(inner,), eps=eps), shape=x.shape)
    per_channel = (channels,) + (1,) * (x.ndim - 2)
    if weight is not None:
        out = out * _shape.reshape_op(weight, shape=per_channel)
    if bias is not None:
        out = out + _shape.reshape_op(bias, shape=per_channel)
    return out


# ---------------------------------------------------------------- layer_norm_affine


def _rows(a, normalized_shape):
    """a (..., *normalized_shape) as a contiguous (rows, n) array."""
    return buffers.contiguous(a).reshape(-1, math.prod(normalized_shape))


def _affine_spec(x, w, b, normalized_shape, eps):
    _layer_norm_spec(x, normalized_shape, eps)
    _check_affine(w, normalized_shape, "weight", "layer_norm")
    _check_affine(b, normalized_shape, "bias", "layer_norm")
    return Spec(x.shape, dt.promote([x.dtype, w.dtype, b.dtype]))


def _affine_cpu(x, w, b, out, normalized_shape, eps):
    if out.size:
        x2 = _rows(x, normalized_shape)
        out2, w1, b1 = out.reshape(x2.shape), w.reshape(-1), b.reshape(-1)
        threads.measured(
            ("layer_norm_affine", x2.shape, x2.dtype),
            lambda: _affine_rows(x2, w1, b1, out2, eps, 0, x2.shape[0]),
            lambda: _affine_rows_threads(x2, w1, b1, out2, eps, threads.get_num_threads()),
            x2.size,
        )


def _affine_ref(x, w, b, normalized_shape, eps=1e-5):
    y = _layer_norm_ref(x.astype(np.float64), normalized_shape, eps)
    return (y * w + b.astype(np.float64)).astype(dt.promote([x.dtype, w.dtype, b.dtype]))


layer_norm_affine = Op(
    name="layer_norm_affine",
    inputs=("x", "weight", "bias"),
    outputs=("out",),
    spec=_affine_spec,
    kernels={"cpu": _affine_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_affine_ref,
    attrs={"normalized_shape": Attr("ints"), "eps": Attr("float", 1e-5)},
    doc=(
        "PyTorch's layer_norm with both affine parameters in one op: (x - mean) / sqrt(var + "
        "eps) * weight + bias over the trailing dims normalized_shape (weight and bias of "
        "that shape; biased variance), one pass over each row after its statistics."
    ),
)


@layer_norm_affine.defgrad
def _layer_norm_affine_grad(g, out, x, w, b, normalized_shape, eps):
    grads = layer_norm_affine_grad(g, x, w, normalized_shape=normalized_shape, eps=eps)
    return tuple(d if needs_grad(a) else None for d, a in zip(grads, (x, w, b)))


def _affine_grad_spec(g, x, w, normalized_shape, eps):
    _layer_norm_spec(x, normalized_shape, eps)
    _check_affine(w, normalized_shape, "weight", "layer_norm_affine_grad")
    _check_same_shapes(x, g=g)
    d = dt.promote([g.dtype, x.dtype, w.dtype])
    return Spec(x.shape, d), Spec(w.shape, d), Spec(w.shape, d)


def _affine_grad_cpu(g, x, w, dx, dw, db, normalized_shape, eps):
    g2, x2 = _rows(g, normalized_shape), _rows(x, normalized_shape)
    dx2, w1 = dx.reshape(x2.shape), w.reshape(-1)
    parts = threads.get_num_threads() if x2.size >= threads.THREADED_ELEMENTS else 1
    sums = np.zeros((parts, 2, x2.shape[1]))

    def serial():
        for p in range(parts):
            rows = x2.shape[0] * p // parts, x2.shape[0] * (p + 1) // parts
            _affine_rows_grad(g2, x2, w1, dx2, sums[p], eps, *rows)

    threaded = lambda: _affine_grad_parts(g2, x2, w1, dx2, sums, eps)
    threads.measured(("layer_norm_affine_grad", x2.shape, x2.dtype), serial, threaded, x2.size)
    total = sums.sum(axis=0)
    dw.reshape(-1)[...] = total[0]
    db.reshape(-1)[...] = total[1]


def _affine_grad_ref(g, x, w, normalized_shape, eps=1e-5):
    rows = tuple(range(x.ndim - len(normalized_shape)))
    g64 = g.astype(np.float64)
    y = _layer_norm_ref(x.astype(np.float64), normalized_shape, eps)
    dx = _layer_norm_grad_ref(g64 * w, y, x, normalized_shape, eps)
    d = dt.promote([g.dtype, x.dtype, w.dtype])
    return dx.astype(d), (g64 * y).sum(axis=rows).astype(d), g64.sum(axis=rows).astype(d)


layer_norm_affine_grad = Op(
    name="layer_norm_affine_grad",
    inputs=("g", "x", "weight"),
    outputs=("dx", "dweight", "dbias"),
    spec=_affine_grad_spec,
    kernels={"cpu": _affine_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_affine_grad_ref,
    attrs={"normalized_shape": Attr("ints"), "eps": Attr("float", 1e-5)},
    doc=(
        "The gradients of layer_norm_affine from g and x (each row's statistics recomputed "
        "as it is read): dx = rstd (g w - mean(g w) - y mean(g w y)) over each row, dweight = "
        "sum(g y) and dbias = sum(g) over the rows (float64 sums); one kernel."
    ),
)


@layer_norm_affine_grad.defgrad
def _layer_norm_affine_grad_grad(h, outs, g, x, w, normalized_shape, eps):
    axes = _norm_axes(len(x.shape), normalized_shape)
    rows = tuple(range(len(x.shape) - len(normalized_shape)))
    y = layer_norm_op(x, normalized_shape=normalized_shape, eps=eps)
    again = lambda h: layer_norm_grad(h, y, x, normalized_shape=normalized_shape, eps=eps)
    affine = lambda a, s, b=None: a * s if b is None else a * s + b
    return affine_normalize_grad_grad(h, outs[0], g, y, x, w, axes, rows, eps, again, affine)


__all__ = [
    "layer_norm",
    "group_norm",
    "layer_norm_op",
    "layer_norm_grad",
    "layer_norm_affine",
    "layer_norm_affine_grad",
]
