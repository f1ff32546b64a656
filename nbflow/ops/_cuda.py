"""The CUDA kernels of the structured ops, by op name (elementwise ops get theirs from their
scalar body, in _define.py).

Each launcher has the CPU launcher's signature, `(*inputs, *outputs, **attrs)` (a view op:
`(*inputs, **attrs) -> view(s)`), takes GPU arrays, and calls the skeletons of
nbflow.kernels.cuda.skeletons, which is imported on the first launch (it needs numba-cuda). Ops not
in this table keep `"cuda": None`; tests/test_cuda_sim.py lists them with the reason.
"""

import numpy as np

from ..core import REGISTRY
from ..core import dtypes as dt
from ..core.errors import OutOfRangeError, UnsupportedError
from ..kernels.cuda.loader import impl, not_supported
from ..runtime import device as devices
from . import conv as conv_ops
from . import dropouts, embeddings, index, losses, nn, tiling
from . import shape as shape_ops
from .broadcast import summed_axes
from .reduce import _check_nonempty, _count, reduced_axes, reduced_shape


def _reduction(kind):
    def launch(x, out, axis, keepdims, **params):
        impl().reduce_rows(kind, x, reduced_axes(axis, x.ndim), out)

    return launch


def _logsumexp(x, out, axis, keepdims):
    impl().softmax_rows(x, out, reduced_axes(axis, x.ndim), mode=2)


def _softmax_grad(g, out, dx, axis, log):
    if dx.size:
        impl().softmax_grad_rows(g, out, dx, axis % out.ndim if out.ndim else 0, log)


def _softmax(mode):
    def launch(x, out, axis):
        if x.ndim == 0:
            impl().fill(out, 1.0 if mode == 0 else 0.0)
            return
        impl().softmax_rows(x, out, (axis % x.ndim,), mode=mode)

    return launch


def _arg_extremum(want_max):
    def launch(x, out, axis, keepdims):
        axes = reduced_axes(axis, x.ndim)
        _check_nonempty(x.shape, axes)
        impl().rows_kernel(impl()._argmax_rows, x, axes, out, want_max)

    return launch


def _variance(take_sqrt):
    def launch(x, out, axis, keepdims, correction):
        axes = reduced_axes(axis, x.ndim)
        impl().rows_kernel(impl()._var_rows, x, axes, out, correction, take_sqrt)

    return launch


def _sum_to_like(x, like, out):
    impl().reduce_rows("sum", x, summed_axes(x.shape, like.shape), out)


def _broadcast_to_like(x, like, out):
    impl().copy_into(x, out)


def _expand_reduced(g, like, out, axis, keepdims):
    keep = reduced_shape(like.shape, reduced_axes(axis, like.ndim), keepdims=True)
    impl().copy_into(impl().contiguous(g).reshape(keep), out)


def _reduced_count(x, out, axis):
    impl().fill(out, _count(x.shape, reduced_axes(axis, x.ndim)))


def _fill_like(x, out, value, dtype=None):
    impl().fill(out, dt.scalar(value, out.dtype))


def _fill_(x, out, value):
    impl().fill(out, dt.scalar(value, out.dtype))


def _linear(x, w, *rest, activation="none"):
    *bias, out = rest
    impl().matmul(x, devices.view_like(np.swapaxes, w, 0, 1), out)
    if bias:
        REGISTRY["add"].kernels["cuda"](out, bias[0], out)
    if activation == "relu":
        REGISTRY["relu"].kernels["cuda"](out, out)


def _copy_(x, src, out):
    impl().copy_into(src, out)


def _add_n(*arrays):
    *xs, out = arrays
    add = REGISTRY["add"].kernels["cuda"]
    if len(xs) == 1:
        impl().copy_into(xs[0], out)
        return
    add(xs[0], xs[1], out)
    for x in xs[2:]:
        add(out, x, out)


def _view(cpu_view):
    """The CPU view function (a numpy view) applied to the GPU array's layout; where numpy
    would copy (a reshape of a strided array), the input is made contiguous first."""

    def launch(x, *rest, **attrs):
        views = devices.view_like(cpu_view, x, *rest, **attrs)
        if views is None:
            views = devices.view_like(cpu_view, impl().contiguous(x), *rest, **attrs)
        if views is None:
            raise UnsupportedError(
                "a view with negative strides (a negative slice step) is not supported on a "
                "GPU yet; flip() makes the reversed copy"
            )
        return views

    return launch


def _concat(*arrays, axis):
    *xs, out = arrays
    axis = axis % out.ndim
    start = 0
    for x in xs:
        index = (slice(None),) * axis + (slice(start, start + x.shape[axis]),)
        impl().copy_into(x, devices.view_like(lambda a, i=index: a[i], out))
        start += x.shape[axis]


def _stack(*arrays, axis):
    *xs, out = arrays
    axis = axis % out.ndim
    for k, x in enumerate(xs):
        index = (slice(None),) * axis + (k,)
        impl().copy_into(x, devices.view_like(lambda a, i=index: a[i], out))


def _matmul(a, b, out):
    impl().matmul(a, b, out)


def _addmm(x, a, b, out, beta, alpha):
    # the product, scaled, added to the scaled input (no GEMM with beta on the GPU yet)
    product = devices.empty(tuple(out.shape), out.dtype)
    impl().matmul(a, b, product)
    mul, add = REGISTRY["mul"].kernels["cuda"], REGISTRY["add"].kernels["cuda"]
    mul(product, _device_scalar(alpha, out), product)
    if beta == 0:  # input not read, as on the CPU
        impl().copy_into(product, out)
        return
    mul(x, _device_scalar(beta, out), out)  # (x broadcasts to out; out may be x itself)
    add(out, product, out)


def _device_scalar(value, like):
    s = devices.empty((), like.dtype)
    impl().fill(s, dt.scalar(value, like.dtype))
    return s


def _pointwise_loss(name):
    def launch(*arrays, reduction):
        *ins, out = arrays
        impl().pointwise_loss(name, ins, out, reduction)

    return launch


def _nll_loss(x, t, w, out, reduction, ignore_index):
    cls = losses._class_axis(x.ndim)
    flat = np.ascontiguousarray(devices.to_host(t)).reshape(-1)
    bad = losses._first_bad_label(flat, x.shape[cls], ignore_index)
    if bad >= 0:
        where = tuple(int(i) for i in np.unravel_index(bad, t.shape))
        raise OutOfRangeError(
            f"nll_loss: target {int(flat[bad])} at position {where} is outside "
            f"[0, {x.shape[cls]}) and is not ignore_index={ignore_index}"
        )
    impl().nll_loss(x, t, w, out, cls, reduction, ignore_index)


def _one_hot(labels, out, num_classes, axis, dtype, ignore_index):
    nn._check_labels("one_hot", devices.to_host(labels), num_classes, ignore_index)
    if out.size:
        impl().one_hot(labels, out, axis % out.ndim, ignore_index)


# ---------------------------------------------------------------- indexing


def _basic_view(x, basic):
    view = devices.view_like(lambda a: a[basic], x)
    if view is None:
        raise UnsupportedError(
            "negative slice steps are not supported on a GPU yet; flip() makes the reversed copy"
        )
    return view


def _index(x, *rest, key):
    *idx, out = rest
    basic, view_axes, x_axes, front = index._plan(key, x.ndim)
    v = _basic_view(x, basic)
    host = [devices.to_host(i) for i in idx]
    perm, src3, res3, lin, _ = index._rows(v, host, view_axes, x_axes, front)
    if out.size == 0:
        return
    src = v if perm is None else devices.view_like(np.transpose, v, perm)
    src = impl().contiguous(src).reshape(src3)
    impl().gather_rows(src, impl().upload(lin, x), out.reshape(res3))


def _index_put(x, value, *rest, key, accumulate):
    *idx, out = rest
    basic, view_axes, x_axes, front = index._plan(key, x.ndim)
    fresh = devices.empty(tuple(value.shape), out.dtype, devices.device_of(out))
    impl().copy_into(value, fresh)  # cast, and read before any write (x[1:] = x[:-1])
    value = fresh
    if out is not x:
        impl().copy_into(x, out)
    target = _basic_view(out, basic)
    if not idx:
        value = value.reshape(tuple(value.shape)[max(0, value.ndim - target.ndim) :])
        if accumulate:
            REGISTRY["add"].kernels["cuda"](target, value, target)
        else:
            impl().copy_into(value, target)
        return
    host = [devices.to_host(i) for i in idx]
    perm, src3, res3, lin, bshape = index._rows(target, host, view_axes, x_axes, front)
    if lin.size == 0 or index.size_of(src3) == 0:
        return
    if perm is not None:
        target = devices.view_like(np.transpose, target, perm)
    dst = devices.view_like(np.reshape, target, src3)  # None when that needs a copy
    work = dst if dst is not None else impl().contiguous(target).reshape(src3)
    result = index._result_shape(tuple(target.shape), view_axes, bshape, front)
    value = value.reshape(tuple(value.shape)[max(0, value.ndim - len(result)) :])
    src = impl().contiguous(devices.broadcast(value, result)).reshape(res3)
    impl().put_rows(work, impl().upload(lin, x), src, accumulate)
    if dst is None:
        impl().copy_into(work.reshape(tuple(target.shape)), target)


def _index_select(x, idx, out, axis):
    a = axis % x.ndim
    flat = np.ravel(devices.to_host(idx)).astype(np.int64).reshape(1, -1)
    lin = np.empty(flat.shape[1], np.int64)
    bad = index._linear_index(flat, np.array([x.shape[a]], np.int64), lin)
    if bad >= 0:
        raise OutOfRangeError(
            f"index {int(flat[0, bad])} is out of range for axis {a} with size {x.shape[a]}"
        )
    if out.size == 0:
        return
    o, n, i = index._three(tuple(x.shape), a, a + 1)
    src = impl().contiguous(x).reshape(o, n, i)
    impl().gather_rows(src, impl().upload(lin, x), out.reshape(o, lin.size, i))


def _checked_range(x, out, low, high, what):
    index.check_in_range(devices.to_host(x), low, high, what)
    impl().copy_into(x, out)


def _take_along_axis(x, idx, out, axis):
    a = axis % x.ndim
    shape = tuple(out.shape)
    n = x.shape[a]
    index._check_range(devices.to_host(idx), n, a)
    if out.size == 0:
        return
    xb = devices.broadcast(x, shape[:a] + (n,) + shape[a + 1 :])
    src = impl().contiguous(xb).reshape(index._three(tuple(xb.shape), a, a + 1))
    ib = impl().contiguous(devices.broadcast(idx, shape), np.int64)
    three = index._three(shape, a, a + 1)
    impl().gather_axis(src, ib.reshape(three), out.reshape(three))


def _scatter_add(x, idx, src, out, axis):
    a = axis % x.ndim
    index._check_range(devices.to_host(idx), x.shape[a], a)
    impl().copy_into(x, out)
    if idx.size == 0:
        return
    region = tuple(slice(0, n) for n in idx.shape)
    src = devices.view_like(lambda s: s[region], src)
    target = devices.view_like(lambda o: o[region[:a] + (slice(None),) + region[a + 1 :]], out)
    three = index._three(tuple(target.shape), a, a + 1)
    dst = devices.view_like(np.reshape, target, three)
    work = dst if dst is not None else impl().contiguous(target).reshape(three)
    i3 = impl().contiguous(idx, np.int64).reshape(index._three(tuple(idx.shape), a, a + 1))
    s3 = impl().contiguous(src).reshape(index._three(tuple(src.shape), a, a + 1))
    impl().scatter_axis(work, i3, s3)
    if dst is None:
        impl().copy_into(work.reshape(tuple(target.shape)), target)


# ---------------------------------------------------------------- embedding, norms, dropout


def _embedding(indices, weight, out, padding_idx):
    flat = embeddings._checked_indices(devices.to_host(indices), weight.shape[0])
    if flat.size:
        w = impl().contiguous(weight)
        out3 = out.reshape(1, flat.size, weight.shape[1])
        impl().gather_rows(w.reshape(1, *weight.shape), impl().upload(flat, weight), out3)


def _embedding_backward(g, indices, weight, out, padding_idx):
    num = weight.shape[0]
    flat = embeddings._checked_indices(devices.to_host(indices), num)
    g2 = impl().contiguous(g).reshape(flat.size, out.shape[1])
    skip = embeddings._padding_row(padding_idx, num)
    impl().embedding_backward(g2, impl().upload(flat.astype(np.int64), g), out, skip)


def _layer_norm(x, out, normalized_shape, eps):
    if out.size == 0:
        return
    n = int(np.prod(normalized_shape, dtype=np.int64))
    x2 = impl().contiguous(x).reshape(x.size // n, n)
    if out.is_c_contiguous():
        impl().normalize_rows(x2, out.reshape(x.size // n, n), eps)
    else:
        res = devices.empty(tuple(x2.shape), out.dtype)
        impl().normalize_rows(x2, res, eps)
        impl().copy_into(res.reshape(tuple(out.shape)), out)


def _layer_norm_affine(x, w, b, out, normalized_shape, eps):
    _layer_norm(x, out, normalized_shape, eps)
    if out.size:  # (out: the op's own, contiguous) then the affine over the features
        n = int(np.prod(normalized_shape, dtype=np.int64))
        rows = out.reshape(out.size // n, n)
        w1, b1 = (impl().contiguous(a).reshape(n) for a in (w, b))
        impl().channel_affine(rows, w1, b1, rows)  # (in place: each element read, then written)


def _layer_norm_affine_grad(g, x, w, dx, dw, db, normalized_shape, eps):
    # layer_norm_grad(g w, y, x) with y normalised again, as the CPU kernel computes it
    if x.size == 0:
        impl().fill(dw, 0)
        impl().fill(db, 0)
        return
    n = int(np.prod(normalized_shape, dtype=np.int64))
    y, gw = (devices.empty(tuple(x.shape), dx.dtype) for _ in range(2))
    _layer_norm(x, y, normalized_shape, eps)
    rows = lambda a: impl().contiguous(a).reshape(x.size // n, n)
    w1 = impl().contiguous(w).reshape(n)
    impl().channel_affine_grad(rows(g), rows(y), w1, rows(gw), dw.reshape(n), db.reshape(n))
    _layer_norm_grad(gw, y, x, dx, normalized_shape, eps)


def _batch_norm_train(x, *rest, eps):
    out = rest[-1]
    if out.size:
        impl().batch_norm(x, out, eps)


def _layer_norm_grad(g, y, x, out, normalized_shape, eps):
    if out.size == 0:
        return
    n = int(np.prod(normalized_shape, dtype=np.int64))
    g2, y2, x2 = (impl().contiguous(a).reshape(x.size // n, n) for a in (g, y, x))
    res = out if out.is_c_contiguous() else devices.empty(tuple(out.shape), out.dtype)
    impl().normalize_rows_grad(g2, y2, x2, res.reshape(x.size // n, n), eps)
    if res is not out:
        impl().copy_into(res, out)


def _batch_norm_train_grad(g, y, x, out, eps):
    if out.size:
        impl().batch_norm_grad(g, y, x, out, eps)


def _batch_norm_train_affine(x, w, b, *rest, eps, activation="none"):
    out = rest[-1]
    if out.size:
        impl().batch_norm(x, out, eps)
        impl().channel_affine(out, w, b, out)  # (in place: each element read, then written)
    if activation == "relu":
        REGISTRY["relu"].kernels["cuda"](out, out)


def _batch_norm_train_affine_grad(g, x, w, *rest, eps):
    # batch_norm_train_grad(g w, y, x) with y normalised again, on the CPU's kernels' terms
    *mask, dx, dw, db = rest
    y, gw = (devices.empty(tuple(x.shape), dx.dtype) for _ in range(2))
    if mask:  # the gradient through a ReLU with output mask: relu_grad(mask, g)
        masked = devices.empty(tuple(g.shape), g.dtype)
        REGISTRY["relu_grad"].kernels["cuda"](mask[0], g, masked)
        g = masked
    if x.size:
        impl().batch_norm(x, y, eps)
    impl().channel_affine_grad(g, y, w, gw, dw, db)
    if x.size:
        impl().batch_norm_grad(gw, y, x, dx, eps)


def _channel_affine(y, w, b, out):
    impl().channel_affine(y, w, b, out)


def _channel_affine_grad(g, y, w, dy, dw, db):
    impl().channel_affine_grad(g, y, w, dy, dw, db)


def _update_stats(mean, var, x, mean_out, var_out, momentum):
    impl().update_running_stats(mean, var, x, mean_out, var_out, momentum)


def _dropout_mask(x, out, p, generator):
    """The mask is drawn on the host by the same Generator as on the CPU (so a seeded run
    gives the same mask on both devices) and copied to the GPU."""
    host = np.empty(tuple(out.shape), dt.CPU_COMPUTE.get(out.dtype, out.dtype))
    dropouts._dropout_mask_launch(None, host, p, generator)
    impl().copy_into(devices.to_device(host, devices.device_of(out)), out)


# ---------------------------------------------------------------- pad, tile, repeat, flip


def _pad(x, out, pad_width, value, mode):
    impl().fill(out, value)
    pairs = shape_ops._pad_pairs(pad_width, x.ndim)
    inner = tuple(slice(b, b + n) for (b, _), n in zip(pairs, tuple(x.shape), strict=True))
    if x.size:
        impl().copy_into(x, devices.view_like(lambda o: o[inner], out))


def _tile(x, out, reps):
    xs, rs = tiling._tile_dims(tuple(x.shape), reps)
    if out.size == 0:
        return
    # out viewed as (r0, n0, r1, n1, ...) receives x viewed as (1, n0, 1, n1, ...)
    target = out.reshape(tuple(v for pair in zip(rs, xs, strict=True) for v in pair))
    impl().copy_into(impl().contiguous(x).reshape(tuple(v for n in xs for v in (1, n))), target)


def _repeat(x, out, repeats, axis):
    if out.size == 0:
        return
    x = impl().contiguous(x)
    if axis is None or x.ndim == 0:
        x, axis = x.reshape(x.size), 0
    a = axis % x.ndim
    shape = tuple(x.shape)
    # out viewed as (..., n, repeats, ...) receives x viewed as (..., n, 1, ...)
    target = out.reshape(shape[: a + 1] + (repeats,) + shape[a + 1 :])
    impl().copy_into(x.reshape(shape[: a + 1] + (1,) + shape[a + 1 :]), target)


def _flip(x, axis=None):
    """A copy on the GPU (the CPU's is a view with negative strides)."""
    if x.ndim == 0:
        return devices.view_like(lambda a: a[...], x)
    return impl().flip_copy(x, shape_ops._flip_axes(axis, x.ndim))


# ---------------------------------------------------------------- convolution and pooling


def _conv2d(x, w, *rest, stride, padding, dilation, groups):
    conv = conv_ops.Conv(x.shape, w.shape, stride, padding, dilation, groups)
    impl().conv2d(x, w, rest[-1], groups, conv.args(*conv.out_hw))
    add_bias(rest)


def add_bias(rest):
    """A convolution's launcher arguments ([bias,] out): out += bias over its channels."""
    if len(rest) == 2 and rest[-1].size:
        bias, out = rest
        rows = out.reshape(out.shape[0], out.shape[1], out.size // (out.shape[0] * out.shape[1]))
        add = REGISTRY["add"].kernels["cuda"]
        add(rows, impl().contiguous(bias).reshape(1, out.shape[1], 1), rows)


def _conv2d_input_grad(g, w, x, out, stride, padding, dilation, groups):
    conv = conv_ops.Conv(x.shape, w.shape, stride, padding, dilation, groups)
    impl().conv2d_input_grad(g, w, out, groups, conv.args(*conv.out_hw))


def _conv2d_weight_grad(x, g, w, out, stride, padding, dilation, groups):
    conv = conv_ops.Conv(x.shape, w.shape, stride, padding, dilation, groups)
    impl().conv2d_weight_grad(x, g, out, groups, conv.args(*conv.out_hw))


def _max_pool(x, out, indices, **attrs):
    pool = conv_ops.Pool(x.shape, **attrs)
    impl().max_pool(x, out, indices, *pool.args(), *pool.dilation)


def _max_pool_backward(g, indices, x, out):
    impl().pool_backward(impl()._scatter_planes, g, out, flat_index=indices)


def _avg_params(attrs):
    return attrs["count_include_pad"], attrs["divisor_override"] or 0


def _avg_pool(x, out, **attrs):
    pool = conv_ops._avg_pool(x.shape, **attrs)
    impl().pool_forward(impl()._avg_pool, x, out, *pool.args(), *_avg_params(attrs))


def _avg_pool_backward(g, x, out, **attrs):
    pool = conv_ops._avg_pool(x.shape, **attrs)
    impl().pool_backward(impl()._avg_pool_back, g, out, *pool.args(), *_avg_params(attrs))


def _adaptive(x, out, output_size):
    impl().pool_forward(impl()._adaptive, x, out)


def _adaptive_backward(g, x, out, output_size):
    impl().pool_backward(impl()._adaptive_back, g, out)


def _labels_on_host(name, labels, n_classes, ignore_index):
    """Check the labels (a host copy: small, one int per row) and count the rows not
    ignored, which 'mean' divides by."""
    flat = nn._check_labels(name, devices.to_host(labels), n_classes, ignore_index)
    return int(np.count_nonzero(flat != ignore_index))


def _cross_entropy(logits, labels, out, reduction, ignore_index, label_smoothing):
    cls = nn._class_axis(logits.ndim)
    count = _labels_on_host("cross_entropy", labels, logits.shape[cls], ignore_index)
    impl().cross_entropy(logits, labels, out, cls, reduction, ignore_index, label_smoothing, count)


def _cross_entropy_grad(g, logits, labels, out, reduction, ignore_index, label_smoothing):
    cls = nn._class_axis(logits.ndim)
    count = _labels_on_host("cross_entropy", labels, logits.shape[cls], ignore_index)
    impl().cross_entropy_grad(
        g, logits, labels, out, cls, reduction, ignore_index, label_smoothing, count
    )


_VIEWS = (
    "reshape",
    "reshape_like",
    "transpose",
    "permute",
    "broadcast_to",
    "squeeze",
    "unsqueeze",
    "flatten",
    "split_like",
    "split",
    "slice",
    "matrix_transpose",
)

KERNELS = {
    "sum": _reduction("sum"),
    "mean": _reduction("mean"),
    "prod": _reduction("prod"),
    "max": _reduction("max"),
    "min": _reduction("min"),
    "all": _reduction("all"),
    "any": _reduction("any"),
    "logsumexp": _logsumexp,
    "cumsum": lambda x, out, axis: impl().cumsum_rows(x, out, axis % max(x.ndim, 1)),
    "sort": lambda x, values, indices, axis, descending: impl().sort_rows(
        x, values, indices, axis % max(x.ndim, 1), descending
    ),
    "softmax": _softmax(0),
    "log_softmax": _softmax(1),
    "softmax_grad": _softmax_grad,
    "sum_to_like": _sum_to_like,
    "broadcast_to_like": _broadcast_to_like,
    "expand_reduced": _expand_reduced,
    "reduced_count": _reduced_count,
    "full_like": _fill_like,
    "fill_": _fill_,
    "copy_": _copy_,
    "add_n": _add_n,
    "concat": _concat,
    "stack": _stack,
    "matmul": _matmul,
    "addmm": _addmm,
    "addmm_": _addmm,
    "linear": _linear,
    "cross_entropy": _cross_entropy,
    "cross_entropy_grad": _cross_entropy_grad,
    "argmax": _arg_extremum(True),
    "argmin": _arg_extremum(False),
    "var": _variance(False),
    "std": _variance(True),
    "mse_loss": _pointwise_loss("mse"),
    "l1_loss": _pointwise_loss("l1"),
    "binary_cross_entropy_with_logits": _pointwise_loss("bce"),
    "nll_loss": _nll_loss,
    "one_hot": _one_hot,
    "index": _index,
    "index_put": _index_put,
    "index_select": _index_select,
    "take_along_axis": _take_along_axis,
    "checked_range": _checked_range,
    "scatter_add": _scatter_add,
    "embedding": _embedding,
    "embedding_backward": _embedding_backward,
    "layer_norm": _layer_norm,
    "layer_norm_grad": _layer_norm_grad,
    "layer_norm_affine": _layer_norm_affine,
    "layer_norm_affine_grad": _layer_norm_affine_grad,
    "batch_norm_train": _batch_norm_train,
    "batch_norm_train_grad": _batch_norm_train_grad,
    "batch_norm_train_affine": _batch_norm_train_affine,
    "batch_norm_train_affine_grad": _batch_norm_train_affine_grad,
    "channel_affine": _channel_affine,
    "channel_affine_grad": _channel_affine_grad,
    "batch_norm_update_stats_": _update_stats,
    "dropout_mask": _dropout_mask,
    "pad": _pad,
    "tile": _tile,
    "repeat": _repeat,
    "flip": _flip,
    "conv2d": _conv2d,
    "conv2d_input_grad": _conv2d_input_grad,
    "conv2d_weight_grad": _conv2d_weight_grad,
    "max_pool2d": _max_pool,
    "max_pool2d_backward": _max_pool_backward,
    "avg_pool2d": _avg_pool,
    "avg_pool2d_backward": _avg_pool_backward,
    "adaptive_avg_pool2d": _adaptive,
    "adaptive_avg_pool2d_backward": _adaptive_backward,
    "sgd_update_": lambda *arrays, **attrs: impl().sgd(*arrays, **attrs),
    "adam_update_": lambda *arrays, **attrs: impl().adam(*arrays, **attrs),
    "rmsprop_update_": lambda *arrays, **attrs: impl().rmsprop(*arrays, **attrs),
    "adagrad_update_": lambda *arrays, **attrs: impl().adagrad(*arrays, **attrs),
}


# Ops without a tensor input never run on a GPU: eager mode runs them on the CPU (there is no
# input to say where), `device=` on the creation functions and the GPU executor copy the
# result over.
NO_INPUT = "no tensor input: runs on the CPU; device= on the creation function copies the result"
CPU_ONLY = ("full", "arange", "linspace", "eye", "uniform", "normal", "randint")


def install():
    """Fill the "cuda" slot of the ops above (views reuse their CPU numpy view function)."""
    for name, launch in KERNELS.items():
        REGISTRY[name].kernels["cuda"] = launch
    for name in CPU_ONLY:
        REGISTRY[name].kernels["cuda"] = not_supported(NO_INPUT)
    for name in _VIEWS:
        op = REGISTRY[name]
        op.kernels["cuda"] = _view(op.kernels["cpu"])
