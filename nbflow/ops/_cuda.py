"""The CUDA kernels of the structured ops, by op name (elementwise ops get theirs from their
scalar body, in _define.py).

Each launcher has the CPU launcher's signature, `(*inputs, *outputs, **attrs)` (a view op:
`(*inputs, **attrs) -> view(s)`), takes GPU arrays, and calls the skeletons of
nbflow.kernels.cuda_impl, which is imported on the first launch (it needs numba-cuda). Ops not
in this table keep `"cuda": None`; tests/test_cuda_sim.py lists them with the reason.
"""

import numpy as np

from .. import device as devices
from .. import dtypes as dt
from ..core import REGISTRY
from ..errors import OutOfRangeError, UnsupportedError
from ..kernels.cuda import impl
from . import losses, nn
from .broadcast import summed_axes
from .reduce import _check_nonempty, _count, reduced_axes, reduced_shape


def _reduction(kind):
    def launch(x, out, axis, keepdims, **params):
        impl().reduce_rows(kind, x, reduced_axes(axis, x.ndim), out)

    return launch


def _logsumexp(x, out, axis, keepdims):
    impl().softmax_rows(x, out, reduced_axes(axis, x.ndim), mode=2)


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
            raise UnsupportedError("this view (negative strides) is not supported on a GPU yet")
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
    "softmax": _softmax(0),
    "log_softmax": _softmax(1),
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
    "sgd_update_": lambda *arrays, **attrs: impl().sgd(*arrays, **attrs),
    "adam_update_": lambda *arrays, **attrs: impl().adam(*arrays, **attrs),
    "rmsprop_update_": lambda *arrays, **attrs: impl().rmsprop(*arrays, **attrs),
}


def install():
    """Fill the "cuda" slot of the ops above (views reuse their CPU numpy view function)."""
    for name, launch in KERNELS.items():
        REGISTRY[name].kernels["cuda"] = launch
    for name in _VIEWS:
        op = REGISTRY[name]
        op.kernels["cuda"] = _view(op.kernels["cpu"])
