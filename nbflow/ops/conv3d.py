"""conv3d, PyTorch's volumetric convolution, in the NCDHW layout: conv2d's design (conv.py) with
one more spatial dim.

A numba kernel unfolds the input into columns (vol2col: one row per (channel, kernel depth,
kernel row, kernel column), one column per output voxel of the whole batch), one np.matmul per
group multiplies the weights by them, and the input gradient folds the columns back (col2vol,
the adjoint). The geometry (Conv3), the BLAS launchers, the float64 references and the
gradient rules are conv2d's, generalised there to any number of spatial dims; only the two
column kernels and the 5-D layouts are new here. `conv3d(x, w, b, stride=1, ...)` adds
PyTorch's signature: the bias, 'same' and 'valid' padding, unbatched (C, D, H, W) input.

On a GPU the same pipeline runs with CUDA column kernels (nbflow/kernels/cuda/conv3d.py).
"""

from ..core import Op
from ..core import dtypes as dt
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..kernels.cuda import conv3d as cuda_conv3d
from ..kernels.cuda.loader import impl
from . import conv, conv_columns
from ._cuda import add_bias

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _vol2col(x, cols, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow):
    """cols[g, (c, a, i, j), n * od * oh * ow + (z * oh + y) * ow + t] = x[n, g * cg + c,
    z*sd - pd + a*dd, y*sh - ph + i*dh, t*sw - pw + j*dw], or 0 in the padding. x is (N, C, D,
    H, W) and cols (G, C/G * kd * kh * kw, N * od * oh * ow), both C-contiguous; flat offsets
    and the in-range span [t0, t1) of each kernel column keep the inner loop free of index
    checks."""
    n_batch, channels, depth, height, width = x.shape
    groups = cols.shape[0]
    cg = channels // groups
    volume = od * oh * ow
    xf = x.ravel()
    cf = cols.ravel()
    k = cols.shape[1]
    m = cols.shape[2]
    for g in range(groups):
        for c in range(cg):
            for j in range(kw):
                t0 = min(ow, max(0, (pw - j * dw + sw - 1) // sw))
                t1 = min(ow, max(t0, (width + pw - j * dw + sw - 1) // sw))
                for a in range(kd):
                    for i in range(kh):
                        r = (g * k + ((c * kd + a) * kh + i) * kw + j) * m
                        for n in range(n_batch):
                            xbase = (n * channels + g * cg + c) * depth * height * width
                            for z in range(od):
                                dz = z * sd - pd + a * dd
                                outside = dz < 0 or dz >= depth
                                for y in range(oh):
                                    hy = y * sh - ph + i * dh
                                    o = r + n * volume + (z * oh + y) * ow
                                    if outside or hy < 0 or hy >= height:
                                        for t in range(ow):
                                            cf[o + t] = 0
                                        continue
                                    for t in range(t0):
                                        cf[o + t] = 0
                                    src = xbase + (dz * height + hy) * width + t0 * sw - pw + j * dw
                                    for t in range(t0, t1):
                                        cf[o + t] = xf[src]
                                        src += sw
                                    for t in range(t1, ow):
                                        cf[o + t] = 0


@njit(**JIT)
def _col2vol(cols, dx, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow):
    """The adjoint of _vol2col: adds each column entry into the input voxel it came from.
    dx must be zeroed first."""
    n_batch, channels, depth, height, width = dx.shape
    groups = cols.shape[0]
    cg = channels // groups
    volume = od * oh * ow
    for g in range(groups):
        for c in range(cg):
            for a in range(kd):
                for i in range(kh):
                    for j in range(kw):
                        row = ((c * kd + a) * kh + i) * kw + j
                        for n in range(n_batch):
                            dst = dx[n, g * cg + c]
                            for z in range(od):
                                dz = z * sd - pd + a * dd
                                if dz < 0 or dz >= depth:
                                    continue
                                for y in range(oh):
                                    hy = y * sh - ph + i * dh
                                    if hy < 0 or hy >= height:
                                        continue
                                    base = n * volume + (z * oh + y) * ow
                                    for t in range(ow):
                                        wx = t * sw - pw + j * dw
                                        if wx >= 0 and wx < width:
                                            dst[dz, hy, wx] += cols[g, row, base + t]


class Conv3(conv.Conv):
    """The checked geometry of a conv3d: triples for stride, padding, dilation; groups; the
    output depth, height and width in `out_hw` (-1 when unknown)."""

    dims = 3
    x_layout = "(N, C, D, H, W)"
    w_layout = "(out_channels, in_channels / groups, kD, kH, kW)"
    im2col = staticmethod(_vol2col)
    col2im = staticmethod(_col2vol)


# ---------------------------------------------------------------- the three ops
# (on a GPU: conv2d's pipeline with the rank-3 column kernels of kernels/cuda/conv3d.py)


def _geometry(x_shape, w_shape, attrs):
    """(groups, the 15 column-kernel arguments) of a conv3d, checked as on the CPU."""
    conv = Conv3(x_shape, w_shape, **attrs)
    return conv.groups, conv.args(*conv.out_hw)


def _conv3d_cuda(x, w, *rest, **attrs):
    """The "cuda" kernel of conv3d: (x, w, [bias,] out, **geometry), GPU arrays."""
    groups, geometry = _geometry(x.shape, w.shape, attrs)
    impl().conv2d(x, w, rest[-1], groups, geometry, columns=cuda_conv3d.kernels())
    add_bias(rest)


def _input_grad_cuda(g, w, x, out, **attrs):
    """The "cuda" kernel of conv3d_input_grad: weights^T @ g's columns, then col2vol."""
    groups, geometry = _geometry(x.shape, w.shape, attrs)
    impl().conv2d_input_grad(g, w, out, groups, geometry, columns=cuda_conv3d.kernels())


def _weight_grad_cuda(x, g, w, out, **attrs):
    """The "cuda" kernel of conv3d_weight_grad: g's columns @ vol2col(x)^T per group."""
    groups, geometry = _geometry(x.shape, w.shape, attrs)
    impl().conv2d_weight_grad(x, g, out, groups, geometry, columns=cuda_conv3d.kernels())


def _conv3d_spec(x, w, *bias, **geometry):
    return conv._conv_spec(Conv3(x.shape, w.shape, **geometry), x, w, *bias)


def _conv3d_cpu(x, w, *rest, **geometry):
    conv_columns.forward(Conv3(x.shape, w.shape, **geometry), x, w, rest[-1], *rest[:-1])


conv3d_op = Op(
    name="conv3d",
    inputs=("x", "weight", "*bias"),
    outputs=("out",),
    spec=_conv3d_spec,
    kernels={"cpu": _conv3d_cpu, "cuda": _conv3d_cuda},
    dtypes=dt.NUMERIC,
    ref=conv._conv_ref,
    attrs=conv.CONV_ATTRS,
    doc=(
        "3-D cross-correlation, PyTorch's conv3d: x (N, C, D, H, W), weight (O, C / groups, "
        "kD, kH, kW), optional bias (O,) -> (N, O, oD, oH, oW) with oD = (D + 2 padding - "
        "dilation (kD - 1) - 1) // stride + 1 (and so oH, oW). stride, padding and dilation "
        "are an int or a (d, h, w) triple; groups splits the channels. vol2col + BLAS matmul "
        "on the CPU."
    ),
)


def _input_grad_spec(g, w, x, **geometry):
    return conv._grad_spec(Conv3(x.shape, w.shape, **geometry), g, w, x)


def _input_grad_cpu(g, w, x, out, **geometry):
    conv_columns.input_grad(Conv3(x.shape, w.shape, **geometry), g, w, out)


conv3d_input_grad = Op(
    name="conv3d_input_grad",
    inputs=("g", "weight", "x"),
    outputs=("out",),
    spec=_input_grad_spec,
    kernels={"cpu": _input_grad_cpu, "cuda": _input_grad_cuda},
    dtypes=dt.NUMERIC,
    ref=conv._input_grad_ref,
    attrs=conv.CONV_ATTRS,
    promote=(0, 1),
    shape_only=("x",),
    doc=(
        "The gradient of conv3d with respect to its input x (a transposed convolution): "
        "g (N, O, oD, oH, oW) and weight -> x's shape. Only x's shape is read. BLAS matmul, "
        "then col2vol."
    ),
)


def _weight_grad_spec(x, g, w, **geometry):
    return conv._weight_spec(Conv3(x.shape, w.shape, **geometry), x, g, w)


def _weight_grad_cpu(x, g, w, out, **geometry):
    conv_columns.weight_grad(Conv3(x.shape, w.shape, **geometry), x, g, out)


conv3d_weight_grad = Op(
    name="conv3d_weight_grad",
    inputs=("x", "g", "weight"),
    outputs=("out",),
    spec=_weight_grad_spec,
    kernels={"cpu": _weight_grad_cpu, "cuda": _weight_grad_cuda},
    dtypes=dt.FLOATS,
    ref=conv._weight_grad_ref,
    attrs=conv.CONV_ATTRS,
    promote=(0, 1),
    shape_only=("weight",),
    doc=(
        "The gradient of conv3d with respect to its weight: x and g (N, O, oD, oH, oW) -> "
        "weight's shape. Only weight's shape is read. vol2col, then one BLAS matmul per group."
    ),
)

conv.define_grads(conv3d_op, conv3d_input_grad, conv3d_weight_grad)


# ---------------------------------------------------------------- public function


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's F.conv3d: x (N, C, D, H, W) or (C, D, H, W), weight (O, C / groups, kD, kH,
    kW), bias (O,) or None; padding an int, a triple, 'valid' or 'same'."""
    return conv.convolve(Conv3, conv3d_op, x, weight, bias, stride, padding, dilation, groups)


__all__ = ["conv3d", "conv3d_op", "conv3d_input_grad", "conv3d_weight_grad"]
