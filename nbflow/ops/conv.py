"""Convolution and pooling: conv2d (stride, padding, dilation, groups), conv1d, max_pool2d,
avg_pool2d and adaptive_avg_pool2d, in PyTorch's NCHW layout.

conv2d lands its work on BLAS (conv_columns.py): images unfold into columns that one GEMM per
group multiplies by the weights (the forward and the input gradient of most layers multiply
each tap's weights by the padded images at its offset instead), over numba's threads, each calling
OpenBLAS on one thread. The gradients are ops, `conv2d_input_grad` (the transposed
convolution) and `conv2d_weight_grad`, whose gradients are again the three convolution ops:
second derivatives work in both modes.

The pooling kernels loop over (batch x channel) planes of a contiguous input, so each compiles
once per dtype. max_pool2d has a second, int64 output: the argmax of each window as a flat
index into its input plane (PyTorch's return_indices); its gradient routes `g` there.

The geometry (Conv), the BLAS launchers, the references and the gradient rules take any number
of spatial dims: conv3d.py declares conv3d on them with its own column kernels.

The ops take their geometry as attrs (`stride=(2,)` or `(2, 1)`); the public functions
(`conv2d(x, w, b, stride=1, padding=0, ...)`, ...) add PyTorch's signatures, the bias, 'same'
and 'valid' padding, unbatched inputs, and conv1d as a conv2d of height 1.
"""

import numpy as np

from ..core import UNKNOWN, Attr, Op, Spec, known, needs_grad
from ..core import dtypes as dt
from ..core.errors import AttrError, ShapeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..kernels.windows import adaptive_bin, avg_window, max_window
from . import conv_columns
from . import reduce as _reduce
from . import shape as _shape
from .index import take_along_axis

FLOATS = dt.FLOATS

# ---------------------------------------------------------------- kernels


_max_window = njit(**JIT)(max_window)


@njit(**JIT)
def _max_pool_planes(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw):
    """Max of each window of each (H, W) plane of x, and its flat index in the plane (-1 for
    a window that holds only padding)."""
    for p in range(x.shape[0]):
        for y in range(out.shape[1]):
            for t in range(out.shape[2]):
                best, k = _max_window(x, p, y, t, kh, kw, sh, sw, ph, pw, dh, dw)
                out[p, y, t] = best if k >= 0 else -np.inf
                idx[p, y, t] = k


@njit(**JIT)
def _scatter_planes(g, idx, dx):
    """dx[p, idx[p, l]] += g[p, l] (dx zeroed first; index -1 is skipped)."""
    for p in range(g.shape[0]):
        for q in range(g.shape[1]):
            k = idx[p, q]
            if k >= 0:
                dx[p, k] += g[p, q]


_avg_window = njit(**JIT)(avg_window)


@njit(**JIT)
def _avg_pool_planes(x, out, kh, kw, sh, sw, ph, pw, include_pad, divisor):
    n_planes, height, width = x.shape
    oh, ow = out.shape[1], out.shape[2]
    for p in range(n_planes):
        for y in range(oh):
            for t in range(ow):
                h0, h1, w0, w1, d = _avg_window(
                    y, t, kh, kw, sh, sw, ph, pw, height, width, include_pad, divisor
                )
                acc = 0.0
                for a in range(h0, h1):
                    for b in range(w0, w1):
                        acc += x[p, a, b]
                out[p, y, t] = acc / d if d > 0 else 0.0


@njit(**JIT)
def _avg_pool_back_planes(g, dx, kh, kw, sh, sw, ph, pw, include_pad, divisor):
    """The adjoint of _avg_pool_planes (dx zeroed first)."""
    n_planes, height, width = dx.shape
    oh, ow = g.shape[1], g.shape[2]
    for p in range(n_planes):
        for y in range(oh):
            for t in range(ow):
                h0, h1, w0, w1, d = _avg_window(
                    y, t, kh, kw, sh, sw, ph, pw, height, width, include_pad, divisor
                )
                if d <= 0:
                    continue
                v = g[p, y, t] / d
                for a in range(h0, h1):
                    for b in range(w0, w1):
                        dx[p, a, b] += v


_adaptive_bin = njit(**JIT)(adaptive_bin)


@njit(**JIT)
def _adaptive_planes(x, out, backward):
    """Adaptive average pooling of each plane (backward=False: x -> out), or its adjoint
    (backward=True: out is the gradient, x receives it; x zeroed first). Bin i of n over a
    length m spans [floor(i m / n), ceil((i + 1) m / n))."""
    n_planes, height, width = x.shape
    oh, ow = out.shape[1], out.shape[2]
    for p in range(n_planes):
        for y in range(oh):
            h0, h1 = _adaptive_bin(y, height, oh)
            for t in range(ow):
                w0, w1 = _adaptive_bin(t, width, ow)
                count = (h1 - h0) * (w1 - w0)
                if backward:
                    v = out[p, y, t] / count
                    for a in range(h0, h1):
                        for b in range(w0, w1):
                            x[p, a, b] += v
                else:
                    acc = 0.0
                    for a in range(h0, h1):
                        for b in range(w0, w1):
                            acc += x[p, a, b]
                    out[p, y, t] = acc / count


# ---------------------------------------------------------------- geometry


def _pair(value, name, minimum, n=2) -> tuple[int, ...]:
    """An int attr given as (v,) or n values (a pair by default), checked >= minimum."""
    if len(value) == 1:
        value = (value[0],) * n
    if len(value) != n:
        what = "a pair of ints" if n == 2 else f"{n} ints"
        raise AttrError(f"{name} must be an int or {what}, got {value}")
    if any(v < minimum for v in value):
        raise AttrError(f"{name} must be >= {minimum}, got {value}")
    return tuple(int(v) for v in value)


def window_out_size(n, k, s, p, d, ceil_mode=False) -> int:
    """Output length of a window of k taps (dilation d, stride s) over n + 2p positions."""
    if not known(n, k):
        return UNKNOWN
    span = d * (k - 1) + 1
    room = n + 2 * p - span
    if room < 0:
        return 0
    if not ceil_mode:
        return room // s + 1
    out = -(-room // s) + 1
    if (out - 1) * s >= n + p:  # the last window must start inside the input or left padding
        out -= 1
    return out


def _check_ndim(shape, what, layout, ndim=4):
    if len(shape) != ndim:
        raise ShapeError(f"{what} of shape {tuple(shape)} must be {ndim}-D {layout}")


class Conv:
    """The checked geometry of a conv2d: pairs for stride, padding, dilation; groups; output
    height and width (-1 when unknown). A subclass with other `dims`, layouts and column
    kernels is the geometry of another convolution (conv3d.py's Conv3)."""

    dims = 2  # spatial dims
    x_layout = "(N, C, H, W)"
    w_layout = "(out_channels, in_channels / groups, kH, kW)"
    im2col = col2im = None  # (2-D convolutions unfold through Columns' own kernels)

    def __init__(self, x_shape, w_shape, stride, padding, dilation, groups):
        x_shape, w_shape = tuple(x_shape), tuple(w_shape)
        n = self.dims
        _check_ndim(x_shape, "input", self.x_layout, n + 2)
        _check_ndim(w_shape, "weight", self.w_layout, n + 2)
        self.stride = _pair(stride, "stride", 1, n)
        self.padding = _pair(padding, "padding", 0, n)
        self.dilation = _pair(dilation, "dilation", 1, n)
        if groups < 1:
            raise AttrError(f"groups must be >= 1, got {groups}")
        self.groups = groups
        channels, out_channels, per_group = x_shape[1], w_shape[0], w_shape[1]
        if known(channels) and channels % groups:
            raise ShapeError(
                f"input of shape {x_shape}: {channels} channels are not divisible by "
                f"groups={groups}"
            )
        if known(out_channels) and out_channels % groups:
            raise ShapeError(
                f"weight of shape {w_shape}: {out_channels} output channels are not divisible "
                f"by groups={groups}"
            )
        if known(channels, per_group) and channels != per_group * groups:
            raise ShapeError(
                f"input of shape {x_shape} has {channels} channels, but weight of shape "
                f"{w_shape} expects {per_group} x groups={groups} = {per_group * groups}"
            )
        for k in w_shape[2:]:
            if known(k) and k < 1:
                raise ShapeError(f"weight of shape {w_shape} has an empty kernel")
        self.kernel = w_shape[2:]
        self.out_hw = tuple(
            window_out_size(n, k, s, p, d)
            for n, k, s, p, d in zip(
                x_shape[2:], self.kernel, self.stride, self.padding, self.dilation
            )
        )
        if any(o == 0 for o in self.out_hw):
            raise ShapeError(
                f"input of shape {x_shape} with padding {self.padding} is smaller than the "
                f"kernel {w_shape[2:]} with dilation {self.dilation}"
            )
        self.out_shape = (x_shape[0], out_channels) + self.out_hw

    def args(self, *out):
        """The kernel arguments after the arrays: kh, kw, sh, sw, ph, pw, dh, dw, oh, ow (each
        group one entry per spatial dim)."""
        return (*self.kernel, *self.stride, *self.padding, *self.dilation, *out)


def _check_like(shape, want, what):
    """`shape` equals `want` where both are known."""
    if len(shape) != len(want) or any(
        a != b and known(a, b) for a, b in zip(shape, want, strict=True)
    ):
        raise ShapeError(f"{what} of shape {tuple(shape)} should have shape {tuple(want)}")


CONV_ATTRS = {
    "stride": Attr("ints", 1),
    "padding": Attr("ints", 0),
    "dilation": Attr("ints", 1),
    "groups": Attr("int", 1),
}


# ---------------------------------------------------------------- conv2d


def _conv2d_spec(x, w, *bias, **geometry):
    return _conv_spec(Conv(x.shape, w.shape, **geometry), x, w, *bias)


def _conv_spec(conv, x, w, *bias):
    if len(bias) > 1:
        raise ShapeError(f"takes at most one bias, got {len(bias)}")
    for b in bias:
        _check_like(b.shape, (w.shape[0],), "bias")
    return Spec(conv.out_shape, dt.promote([s.dtype for s in (x, w, *bias)]))


def _conv2d_cpu(x, w, *rest, **geometry):
    conv_columns.forward(Conv(x.shape, w.shape, **geometry), x, w, rest[-1], *rest[:-1])


BATCH_CHANNEL = (slice(None), slice(None))  # the leading key of the references' slices


def _conv_ref(x, w, *bias, stride=1, padding=0, dilation=1, groups=1):
    """Direct convolution in float64: a sum over kernel taps of strided slices (of any number
    of spatial dims: conv3d's reference too)."""
    geometry = _ref_geometry(x.ndim - 2, stride, padding, dilation)
    d = dt.promote([x.dtype, w.dtype])
    x64 = _zero_pad(x.astype(np.float64), geometry[1])
    w64 = w.astype(np.float64)
    o, cg = w.shape[:2]
    size = _ref_out_size(x64.shape[2:], w.shape[2:], geometry)
    out = np.zeros((x.shape[0], o) + size)
    og = o // groups
    for g in range(groups):
        xs = x64[:, g * cg : (g + 1) * cg]
        ws = w64[g * og : (g + 1) * og]
        for tap in np.ndindex(*w.shape[2:]):
            patch = xs[_tap_slices(tap, geometry, size)]
            out[:, g * og : (g + 1) * og] += np.einsum(
                "nc...,oc->no...", patch, ws[BATCH_CHANNEL + tap]
            )
    for b in bias:
        out += b.astype(np.float64).reshape((-1,) + (1,) * len(size))
        d = dt.promote([d, b.dtype])
    return out.astype(d)


def _ref_geometry(n, stride, padding, dilation):
    """(stride, padding, dilation) of a reference as n-tuples."""

    def many(v):
        v = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
        return v * n if len(v) == 1 else v

    return many(stride), many(padding), many(dilation)


def _zero_pad(x, padding):
    return np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))


def _ref_out_size(padded, kernel, geometry):
    stride, _, dilation = geometry
    return tuple(
        (n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(padded, kernel, stride, dilation)
    )


def _tap_slices(tap, geometry, size):
    """The (all, all, strided slices) key of the padded input that kernel tap `tap` reads for
    the output positions of `size`."""
    stride, _, dilation = geometry
    return BATCH_CHANNEL + tuple(
        slice(i * d, i * d + s * (m - 1) + 1, s) for i, s, d, m in zip(tap, stride, dilation, size)
    )


conv2d_op = Op(
    name="conv2d",
    inputs=("x", "weight", "*bias"),
    outputs=("out",),
    spec=_conv2d_spec,
    kernels={"cpu": _conv2d_cpu, "cuda": None},
    dtypes=dt.NUMERIC,  # (integers too, as PyTorch's: no gradient)
    ref=_conv_ref,
    attrs=CONV_ATTRS,
    doc=(
        "2-D cross-correlation, PyTorch's conv2d: x (N, C, H, W), weight (O, C / groups, kH, "
        "kW), optional bias (O,) -> (N, O, oH, oW) with oH = (H + 2 padding - dilation "
        "(kH - 1) - 1) // stride + 1. stride, padding and dilation are an int or an (h, w) "
        "pair; groups splits the channels. im2col + BLAS matmul on the CPU."
    ),
)


# ---------------------------------------------------------------- gradients as ops


def _input_grad_spec(g, w, x, **geometry):
    return _grad_spec(Conv(x.shape, w.shape, **geometry), g, w, x)


def _grad_spec(conv, g, w, x):
    """The input gradient's spec (x's shape; g must have the convolution's output shape)."""
    _check_like(g.shape, conv.out_shape, "the output gradient")
    return Spec(x.shape, dt.promote([g.dtype, w.dtype]))


def _input_grad_cpu(g, w, x, out, **geometry):
    conv_columns.input_grad(Conv(x.shape, w.shape, **geometry), g, w, out)


def _input_grad_ref(g, w, x, stride=1, padding=0, dilation=1, groups=1):
    """The adjoint of the direct convolution, by scattering each tap back."""
    geometry = _ref_geometry(x.ndim - 2, stride, padding, dilation)
    o, cg = w.shape[:2]
    og = o // groups
    size = g.shape[2:]
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    dx = _zero_pad(np.zeros(x.shape), geometry[1])
    for grp in range(groups):
        gs = g64[:, grp * og : (grp + 1) * og]
        ws = w64[grp * og : (grp + 1) * og]
        for tap in np.ndindex(*w.shape[2:]):
            key = _tap_slices(tap, geometry, size)
            dx[:, grp * cg : (grp + 1) * cg][key] += np.einsum(
                "no...,oc->nc...", gs, ws[BATCH_CHANNEL + tap]
            )
    crop = BATCH_CHANNEL + tuple(slice(p, p + n) for p, n in zip(geometry[1], x.shape[2:]))
    return dx[crop].astype(dt.promote([g.dtype, w.dtype]))


conv2d_input_grad = Op(
    name="conv2d_input_grad",
    inputs=("g", "weight", "x"),
    outputs=("out",),
    spec=_input_grad_spec,
    kernels={"cpu": _input_grad_cpu, "cuda": None},
    dtypes=dt.NUMERIC,
    ref=_input_grad_ref,
    attrs=CONV_ATTRS,
    promote=(0, 1),
    shape_only=("x",),
    doc=(
        "The gradient of conv2d with respect to its input x (a transposed convolution): "
        "g (N, O, oH, oW) and weight -> x's shape. Only x's shape is read. BLAS matmul, "
        "then col2im."
    ),
)


def _weight_grad_spec(x, g, w, **geometry):
    return _weight_spec(Conv(x.shape, w.shape, **geometry), x, g, w)


def _weight_spec(conv, x, g, w):
    """The weight gradient's spec (w's shape; g must have the convolution's output shape)."""
    _check_like(g.shape, conv.out_shape, "the output gradient")
    return Spec(w.shape, dt.promote([x.dtype, g.dtype]))


def _weight_grad_cpu(x, g, w, out, **geometry):
    conv_columns.weight_grad(Conv(x.shape, w.shape, **geometry), x, g, out)


def _weight_grad_ref(x, g, w, stride=1, padding=0, dilation=1, groups=1):
    geometry = _ref_geometry(x.ndim - 2, stride, padding, dilation)
    x64 = _zero_pad(x.astype(np.float64), geometry[1])
    g64 = g.astype(np.float64)
    o, cg = w.shape[:2]
    og = o // groups
    size = g.shape[2:]
    dw_ = np.zeros(w.shape)
    for grp in range(groups):
        xs = x64[:, grp * cg : (grp + 1) * cg]
        gs = g64[:, grp * og : (grp + 1) * og]
        for tap in np.ndindex(*w.shape[2:]):
            patch = xs[_tap_slices(tap, geometry, size)]
            summed = (0, *range(2, gs.ndim))  # batch and positions
            dw_[(slice(grp * og, (grp + 1) * og), slice(None)) + tap] = np.tensordot(
                gs, patch, axes=(summed, summed)
            )
    return dw_.astype(dt.promote([x.dtype, g.dtype]))


conv2d_weight_grad = Op(
    name="conv2d_weight_grad",
    inputs=("x", "g", "weight"),
    outputs=("out",),
    spec=_weight_grad_spec,
    kernels={"cpu": _weight_grad_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_weight_grad_ref,
    attrs=CONV_ATTRS,
    promote=(0, 1),
    shape_only=("weight",),
    doc=(
        "The gradient of conv2d with respect to its weight: x and g (N, O, oH, oW) -> "
        "weight's shape. Only weight's shape is read. im2col, then one BLAS matmul per group."
    ),
)


def define_grads(forward, input_grad, weight_grad):
    """The gradient rules of a convolution's three ops (conv2d's here, conv3d's in conv3d.py),
    each written with the other two: the convolution is linear in x and in w, so the
    gradients of its gradients are convolutions again (second derivatives in both modes)."""

    @forward.defgrad
    def _forward_grad(g, out, x, w, *bias, **geometry):
        dx = input_grad(g, w, x, **geometry) if needs_grad(x) else None
        dw = weight_grad(x, g, w, **geometry) if needs_grad(w) else None
        axes = (0, *range(2, len(g.shape)))
        db = tuple(_reduce.sum(g, axis=axes) if needs_grad(b) else None for b in bias)
        return (dx, dw, *db)

    @input_grad.defgrad
    def _input_grad_grad(h, out, g, w, x, **geometry):
        # linear in g and in w: <out, h> = <g, conv(h, w)>
        dg = forward(h, w, **geometry) if needs_grad(g) else None
        dw = weight_grad(h, g, w, **geometry) if needs_grad(w) else None
        return dg, dw, None

    @weight_grad.defgrad
    def _weight_grad_grad(h, out, x, g, w, **geometry):
        # linear in x and in g: <out, h> = <g, conv(x, h)>
        dx = input_grad(g, h, x, **geometry) if needs_grad(x) else None
        dg = forward(x, h, **geometry) if needs_grad(g) else None
        return dx, dg, None


define_grads(conv2d_op, conv2d_input_grad, conv2d_weight_grad)


# ---------------------------------------------------------------- pooling geometry


class Pool:
    """The checked geometry of a 2-D pooling window over x (N, C, H, W)."""

    def __init__(self, x_shape, kernel_size, stride, padding, dilation=(1,), ceil_mode=False):
        x_shape = tuple(x_shape)
        _check_ndim(x_shape, "input", "(N, C, H, W)")
        self.kernel = _pair(kernel_size, "kernel_size", 1)
        self.stride = _pair(kernel_size if stride is None else stride, "stride", 1)
        self.padding = _pair(padding, "padding", 0)
        self.dilation = _pair(dilation, "dilation", 1)
        for k, p, d in zip(self.kernel, self.padding, self.dilation):
            if p > (d * (k - 1) + 1) // 2:
                raise AttrError(
                    f"padding {self.padding} must be at most half of the kernel "
                    f"{self.kernel} (dilation {self.dilation})"
                )
        self.out_hw = tuple(
            window_out_size(n, k, s, p, d, ceil_mode)
            for n, k, s, p, d in zip(
                x_shape[2:], self.kernel, self.stride, self.padding, self.dilation
            )
        )
        if any(o == 0 for o in self.out_hw):
            raise ShapeError(
                f"input of shape {x_shape} with padding {self.padding} is smaller than the "
                f"window {self.kernel} with dilation {self.dilation}"
            )
        self.out_shape = x_shape[:2] + self.out_hw

    def args(self):
        return (*self.kernel, *self.stride, *self.padding)


def _planes(a):
    """A contiguous (N, C, H, W) array as (N * C, H, W) (a view)."""
    return a.reshape(a.shape[0] * a.shape[1], a.shape[2], a.shape[3])


def _windows(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, fill):
    """The references' view of every pooling window: (N, C, oh, ow, kh * kw) from x padded
    with `fill` (enough on the right for ceil_mode)."""
    n, c, h, w = x.shape
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + 2 * ph))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + 2 * pw))
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph + extra_h), (pw, pw + extra_w)), constant_values=fill)
    taps = []
    for i in range(kh):
        for j in range(kw):
            taps.append(
                xp[
                    :,
                    :,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
            )
    return np.stack(taps, axis=-1)


# ---------------------------------------------------------------- max_pool2d

POOL_ATTRS = {
    "kernel_size": Attr("ints"),
    "stride": Attr("ints", None, optional=True),
    "padding": Attr("ints", 0),
    "dilation": Attr("ints", 1),
    "ceil_mode": Attr("bool", False),
}


def _max_pool_spec(x, **attrs):
    pool = Pool(x.shape, **attrs)
    return Spec(pool.out_shape, x.dtype), Spec(pool.out_shape, dt.int64)


def _max_pool_cpu(x, out, indices, **attrs):
    pool = Pool(x.shape, **attrs)
    if out.size:
        _max_pool_planes(
            _planes(np.ascontiguousarray(x)),
            _planes(out),
            _planes(indices),
            *pool.args(),
            *pool.dilation,
        )


def _max_pool_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    attrs = _pool_ref_attrs(kernel_size, stride, padding, dilation)
    pool = Pool(x.shape, *attrs, ceil_mode=ceil_mode)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = pool.kernel, pool.stride, pool.padding, pool.dilation
    oh, ow = pool.out_hw
    h, w = x.shape[2:]
    vals = _windows(x.astype(np.float64), kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, -np.inf)
    plane = np.arange(h * w, dtype=np.float64).reshape(1, 1, h, w)  # -1 in the padding
    where = _windows(plane, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, -1).astype(np.int64)
    nan = np.isnan(vals)
    first = np.where(nan.any(-1), nan.argmax(-1), vals.argmax(-1))  # the first NaN or max
    best = np.take_along_axis(vals, first[..., None], -1)[..., 0]
    idx = np.take_along_axis(np.broadcast_to(where, vals.shape), first[..., None], -1)[..., 0]
    return best.astype(x.dtype), idx


def _pool_ref_attrs(kernel_size, stride, padding, dilation):
    def ints(v):
        return None if v is None else ((v,) if isinstance(v, (int, np.integer)) else tuple(v))

    return ints(kernel_size), ints(stride), ints(padding), ints(dilation)


max_pool2d_op = Op(
    name="max_pool2d",
    inputs=("x",),
    outputs=("out", "indices"),
    spec=_max_pool_spec,
    kernels={"cpu": _max_pool_cpu, "cuda": None},
    dtypes=dt.NUMERIC,
    ref=_max_pool_ref,
    attrs=POOL_ATTRS,
    doc=(
        "Max over kernel_size windows of x (N, C, H, W) (stride defaults to kernel_size; "
        "padding is -inf and at most half the window; dilation; ceil_mode). Second output: "
        "the int64 flat index in the (H, W) plane of each maximum (PyTorch's "
        "return_indices). A NaN in a window wins. The gradient goes to the maximum."
    ),
)


@max_pool2d_op.defgrad
def _max_pool_grad(g, out, x, **attrs):
    return (max_pool2d_backward(g[0], out[1], x),)


def _max_pool_back_spec(g, indices, x):
    _check_ndim(x.shape, "input", "(N, C, H, W)")
    _check_ndim(g.shape, "the output gradient", "(N, C, oH, oW)")
    if indices.dtype not in dt.INTS:
        raise ShapeError(f"indices must be int32 or int64, got {indices.dtype}")
    _check_like(indices.shape, g.shape, "indices")
    _check_like(g.shape[:2], x.shape[:2], "the output gradient's (N, C)")
    return Spec(x.shape, g.dtype)


def _max_pool_back_cpu(g, indices, x, out):
    out[...] = 0
    if g.size == 0:
        return
    p = g.shape[0] * g.shape[1]
    _scatter_planes(
        np.ascontiguousarray(g).reshape(p, -1),
        np.ascontiguousarray(indices, dtype=np.int64).reshape(p, -1),
        out.reshape(p, -1),
    )


def _max_pool_back_ref(g, indices, x):
    n, c, h, w = x.shape
    dx = np.zeros((n * c, h * w))
    gf, idx = g.reshape(n * c, -1).astype(np.float64), indices.reshape(n * c, -1)
    for p in range(n * c):
        keep = idx[p] >= 0
        np.add.at(dx[p], idx[p][keep], gf[p][keep])
    return dx.reshape(x.shape).astype(g.dtype)


max_pool2d_backward = Op(
    name="max_pool2d_backward",
    inputs=("g", "indices", "x"),
    outputs=("out",),
    spec=_max_pool_back_spec,
    kernels={"cpu": _max_pool_back_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_max_pool_back_ref,
    promote=(0,),
    shape_only=("x",),
    doc=(
        "The gradient of max_pool2d: adds each g[n, c, i, j] at the flat plane position "
        "indices[n, c, i, j] of a zero tensor of x's shape (x is read for its shape only)."
    ),
)


@max_pool2d_backward.defgrad
def _max_pool_back_grad(h, out, g, indices, x):
    # the adjoint of scattering: gather h at the indices
    picked = take_along_axis(
        _shape.flatten(h, start_axis=2), _shape.flatten(indices, start_axis=2), axis=2
    )
    return _shape.reshape_like(picked, g), None, None


# ---------------------------------------------------------------- avg_pool2d

AVG_ATTRS = {
    "kernel_size": Attr("ints"),
    "stride": Attr("ints", None, optional=True),
    "padding": Attr("ints", 0),
    "ceil_mode": Attr("bool", False),
    "count_include_pad": Attr("bool", True),
    "divisor_override": Attr("int", None, optional=True),
}


def _avg_pool(x_shape, kernel_size, stride, padding, ceil_mode, divisor_override, **_):
    if divisor_override is not None and divisor_override < 1:
        raise AttrError(f"divisor_override must be >= 1, got {divisor_override}")
    return Pool(x_shape, kernel_size, stride, padding, (1,), ceil_mode)


def _avg_pool_spec(x, **attrs):
    return Spec(_avg_pool(x.shape, **attrs).out_shape, x.dtype)


def _avg_pool_cpu(x, out, **attrs):
    pool = _avg_pool(x.shape, **attrs)
    if out.size:
        _avg_pool_planes(
            _planes(np.ascontiguousarray(x)),
            _planes(out),
            *pool.args(),
            attrs["count_include_pad"],
            attrs["divisor_override"] or 0,
        )


def _avg_pool_ref(
    x,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    k, s, p, _ = _pool_ref_attrs(kernel_size, stride, padding, 1)
    pool = Pool(x.shape, k, s, p, (1,), ceil_mode)
    (kh, kw), (sh, sw), (ph, pw) = pool.kernel, pool.stride, pool.padding
    oh, ow = pool.out_hw
    h, w = x.shape[2:]
    x64 = x.astype(np.float64)
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            # the window within the padded input; padding counts, what lies past it does not
            h0, w0 = i * sh - ph, j * sw - pw
            h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
            in_padded = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            inside = max(h1 - h0, 0) * max(w1 - w0, 0)
            divisor = divisor_override or (in_padded if count_include_pad else inside)
            if inside and divisor:
                out[:, :, i, j] = x64[:, :, h0:h1, w0:w1].sum(axis=(2, 3)) / divisor
    return out.astype(x.dtype)


avg_pool2d_op = Op(
    name="avg_pool2d",
    inputs=("x",),
    outputs=("out",),
    spec=_avg_pool_spec,
    kernels={"cpu": _avg_pool_cpu, "cuda": None},
    dtypes=dt.NUMERIC,
    ref=_avg_pool_ref,
    attrs=AVG_ATTRS,
    doc=(
        "Mean over kernel_size windows of x (N, C, H, W), as PyTorch's avg_pool2d: stride "
        "defaults to kernel_size, zero padding (at most half the window) counts in the "
        "divisor when count_include_pad, ceil_mode, divisor_override."
    ),
)

avg_pool2d_op.defgrad(lambda g, out, x, **attrs: (avg_pool2d_backward(g, x, **attrs),))


def _avg_back_spec(g, x, **attrs):
    _check_like(g.shape, _avg_pool(x.shape, **attrs).out_shape, "the output gradient")
    return Spec(x.shape, g.dtype)


def _avg_back_cpu(g, x, out, **attrs):
    pool = _avg_pool(x.shape, **attrs)
    out[...] = 0
    if g.size:
        _avg_pool_back_planes(
            _planes(np.ascontiguousarray(g)),
            _planes(out),
            *pool.args(),
            attrs["count_include_pad"],
            attrs["divisor_override"] or 0,
        )


def _avg_back_ref(g, x, **attrs):
    """The adjoint by linearity: column k of the pooling matrix is the pooling of e_k."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, h * w))
    g64 = g.astype(np.float64).reshape(n, c, -1)
    for k in range(h * w):
        e = np.zeros((1, 1, h * w))
        e[0, 0, k] = 1.0
        col = _avg_pool_ref(e.reshape(1, 1, h, w), **attrs).reshape(-1)
        out[:, :, k] = g64 @ col
    return out.reshape(x.shape).astype(g.dtype)


avg_pool2d_backward = Op(
    name="avg_pool2d_backward",
    inputs=("g", "x"),
    outputs=("out",),
    spec=_avg_back_spec,
    kernels={"cpu": _avg_back_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_avg_back_ref,
    attrs=AVG_ATTRS,
    promote=(0,),
    shape_only=("x",),
    doc=(
        "The gradient of avg_pool2d (its adjoint): spreads each g over its window, divided "
        "as the forward divides. x is read for its shape only."
    ),
)

avg_pool2d_backward.defgrad(lambda h, out, g, x, **attrs: (avg_pool2d_op(h, **attrs), None))


# ---------------------------------------------------------------- adaptive_avg_pool2d


def _adaptive_size(x_shape, output_size):
    _check_ndim(x_shape, "input", "(N, C, H, W)")
    size = _pair(output_size, "output_size", 1)
    for n in x_shape[2:]:
        if n == 0:
            raise ShapeError(f"input of shape {tuple(x_shape)} has an empty spatial dim")
    return size


def _adaptive_spec(x, output_size):
    return Spec(tuple(x.shape[:2]) + _adaptive_size(x.shape, output_size), x.dtype)


def _adaptive_cpu(x, out, output_size):
    if out.size:
        _adaptive_planes(_planes(np.ascontiguousarray(x)), _planes(out), False)


def _adaptive_ref(x, output_size):
    oh, ow = _adaptive_size(x.shape, _pool_ref_attrs(output_size, None, 0, 1)[0])
    h, w = x.shape[2:]
    out = np.empty(x.shape[:2] + (oh, ow))
    x64 = x.astype(np.float64)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[:, :, i, j] = x64[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return out.astype(x.dtype)


adaptive_avg_pool2d_op = Op(
    name="adaptive_avg_pool2d",
    inputs=("x",),
    outputs=("out",),
    spec=_adaptive_spec,
    kernels={"cpu": _adaptive_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_adaptive_ref,
    attrs={"output_size": Attr("ints")},
    doc=(
        "Average pooling of x (N, C, H, W) to output_size (oH, oW): bin i of oH covers "
        "rows floor(i H / oH) to ceil((i + 1) H / oH), as PyTorch."
    ),
)

adaptive_avg_pool2d_op.defgrad(
    lambda g, out, x, output_size: (adaptive_avg_pool2d_backward(g, x, output_size=output_size),)
)


def _adaptive_back_spec(g, x, output_size):
    want = tuple(x.shape[:2]) + _adaptive_size(x.shape, output_size)
    _check_like(g.shape, want, "the output gradient")
    return Spec(x.shape, g.dtype)


def _adaptive_back_cpu(g, x, out, output_size):
    out[...] = 0
    if g.size:
        _adaptive_planes(_planes(out), _planes(np.ascontiguousarray(g)), True)


def _adaptive_back_ref(g, x, output_size):
    n, c, h, w = x.shape
    out = np.zeros((n, c, h * w))
    g64 = g.astype(np.float64).reshape(n, c, -1)
    for k in range(h * w):
        e = np.zeros(h * w)
        e[k] = 1.0
        col = _adaptive_ref(e.reshape(1, 1, h, w), output_size).reshape(-1)
        out[:, :, k] = g64 @ col
    return out.reshape(x.shape).astype(g.dtype)


adaptive_avg_pool2d_backward = Op(
    name="adaptive_avg_pool2d_backward",
    inputs=("g", "x"),
    outputs=("out",),
    spec=_adaptive_back_spec,
    kernels={"cpu": _adaptive_back_cpu, "cuda": None},
    dtypes=FLOATS,
    ref=_adaptive_back_ref,
    attrs={"output_size": Attr("ints")},
    promote=(0,),
    shape_only=("x",),
    doc="The gradient of adaptive_avg_pool2d (its adjoint). x is read for its shape only.",
)

adaptive_avg_pool2d_backward.defgrad(
    lambda h, out, g, x, output_size: (adaptive_avg_pool2d_op(h, output_size=output_size), None)
)


# ---------------------------------------------------------------- public functions


def with_batch_dim(x, ndim, name, layout):
    """x with a batch dim of 1 added when it is unbatched (ndim - 1 dims), and whether it was
    added."""
    if x.ndim == ndim - 1:
        return _shape.unsqueeze(x, 0), True
    if x.ndim != ndim:
        raise ShapeError(
            f"{name}: input of shape {tuple(x.shape)} must be {ndim}-D {layout} "
            f"(or {ndim - 1}-D without the batch dim)"
        )
    return x, False


def _padding(padding, kernel, dilation, stride, name):
    """'valid' and 'same' padding as ints, and the extra zeros 'same' puts after the input
    where the total padding is odd (PyTorch's: symmetric, one more on the far side). 'same'
    needs stride 1."""
    if not isinstance(padding, str):
        return padding, None
    if padding == "valid":
        return 0, None
    if padding != "same":
        raise AttrError(f"{name}: padding must be an int, a tuple, 'valid' or 'same'")
    strides = (stride,) if isinstance(stride, int) else tuple(stride)
    if any(s != 1 for s in strides):
        raise AttrError(f"{name}: padding='same' needs stride 1, got {stride}")
    dilation = (dilation,) * len(kernel) if isinstance(dilation, int) else tuple(dilation)
    dilation = dilation * len(kernel) if len(dilation) == 1 else dilation
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    extra = tuple(t % 2 for t in totals)
    return tuple(t // 2 for t in totals), extra if any(extra) else None


def _pad_after(x, extra):
    """x with `extra` zeros after each of its trailing (spatial) dims."""
    if extra is None:
        return x
    return _shape.pad(x, [(0, 0)] * (x.ndim - len(extra)) + [(0, e) for e in extra])


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's F.conv2d: x (N, C, H, W) or (C, H, W), weight (O, C / groups, kH, kW), bias
    (O,) or None; padding an int, a pair, 'valid' or 'same'."""
    return convolve(Conv, conv2d_op, x, weight, bias, stride, padding, dilation, groups)


def convolve(geometry, op, x, weight, bias, stride, padding, dilation, groups):
    """The public convolution of `op` (conv2d, conv3d) whose geometry class is `geometry`:
    unbatched input, the optional bias, 'valid' and 'same' padding."""
    fn, ndim = op.name, geometry.dims + 2
    x, added = with_batch_dim(x, ndim, fn, geometry.x_layout)
    if weight.ndim != ndim:
        raise ShapeError(
            f"{fn}: weight of shape {tuple(weight.shape)} must be {ndim}-D {geometry.w_layout}"
        )
    padding, extra = _padding(padding, weight.shape[2:], dilation, stride, fn)
    x = _pad_after(x, extra)
    if bias is not None and bias.ndim != 1:
        raise ShapeError(f"{fn}: bias of shape {tuple(bias.shape)} must be 1-D (out_channels,)")
    args = (x, weight) if bias is None else (x, weight, bias)
    out = op(*args, stride=stride, padding=padding, dilation=dilation, groups=groups)
    return _shape.squeeze(out, 0) if added else out


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's F.conv1d: x (N, C, L) or (C, L), weight (O, C / groups, k), bias (O,) or
    None. Runs as a conv2d of height 1."""
    x, added = with_batch_dim(x, 3, "conv1d", "(N, C, L)")
    if weight.ndim != 3:
        raise ShapeError(
            f"conv1d: weight of shape {tuple(weight.shape)} must be 3-D "
            "(out_channels, in_channels / groups, k)"
        )
    padding, extra = _padding(padding, weight.shape[2:], dilation, stride, "conv1d")
    x = _pad_after(x, extra)
    if bias is not None and bias.ndim != 1:
        raise ShapeError(f"conv1d: bias of shape {tuple(bias.shape)} must be 1-D (out_channels,)")
    out = conv2d_op(
        _shape.unsqueeze(x, 2),
        _shape.unsqueeze(weight, 2),
        *(() if bias is None else (bias,)),
        stride=(1, _single(stride, "stride")),
        padding=(0, _single(padding, "padding")),
        dilation=(1, _single(dilation, "dilation")),
        groups=groups,
    )
    out = _shape.squeeze(out, 2)
    return _shape.squeeze(out, 0) if added else out


def _single(v, name) -> int:
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise AttrError(f"conv1d: {name} must be an int or a 1-tuple, got {v}")
        v = v[0]
    return v


def max_pool2d(
    x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """PyTorch's F.max_pool2d on (N, C, H, W) or (C, H, W); return_indices also returns the
    int64 flat plane index of each maximum."""
    x, added = with_batch_dim(x, 4, "max_pool2d", "(N, C, H, W)")
    out, indices = max_pool2d_op(
        x,
        kernel_size=kernel_size,
        stride=stride,
        padding=padding,
        dilation=dilation,
        ceil_mode=ceil_mode,
    )
    if added:
        out, indices = _shape.squeeze(out, 0), _shape.squeeze(indices, 0)
    return (out, indices) if return_indices else out


def avg_pool2d(
    x,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """PyTorch's F.avg_pool2d on (N, C, H, W) or (C, H, W)."""
    x, added = with_batch_dim(x, 4, "avg_pool2d", "(N, C, H, W)")
    out = avg_pool2d_op(
        x,
        kernel_size=kernel_size,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
    )
    return _shape.squeeze(out, 0) if added else out


def adaptive_avg_pool2d(x, output_size):
    """PyTorch's F.adaptive_avg_pool2d on (N, C, H, W) or (C, H, W); output_size an int or a
    pair, where None keeps the input's size."""
    x, added = with_batch_dim(x, 4, "adaptive_avg_pool2d", "(N, C, H, W)")
    size = (output_size, output_size) if not isinstance(output_size, (tuple, list)) else output_size
    size = tuple(x.shape[2 + i] if s is None else s for i, s in enumerate(size))
    if UNKNOWN in size:
        raise ShapeError(
            f"adaptive_avg_pool2d: output_size {output_size} keeps a dim unknown until run time"
        )
    out = adaptive_avg_pool2d_op(x, output_size=size)
    return _shape.squeeze(out, 0) if added else out


__all__ = [
    "conv2d",
    "conv1d",
    "max_pool2d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "conv2d_op",
    "conv2d_input_grad",
    "conv2d_weight_grad",
    "max_pool2d_op",
    "max_pool2d_backward",
    "avg_pool2d_op",
    "avg_pool2d_backward",
    "adaptive_avg_pool2d_op",
    "adaptive_avg_pool2d_backward",
]
