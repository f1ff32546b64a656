"""PyTorch's remaining nn modules: AdaptiveLogSoftmaxWithLoss, SyncBatchNorm, DataParallel,
RNNBase and RNNCellBase, CrossMapLRN2d, and the 3-D forms of the pools in nn/sampling_grid.py
(lp_pool3d, max_unpool3d, fractional_max_pool3d, with their modules) with the
`*_with_indices` aliases of the 3-D max pools.

All are composed from nbflow's ops (gradients and @nbflow.jit come with them):
- AdaptiveLogSoftmaxWithLoss computes each cluster's log-softmax for every row and keeps it
  where the target falls in that cluster (PyTorch runs a cluster on its rows only: that
  selection has a data-dependent size, which a traced program cannot have). Outputs, loss
  and gradients are PyTorch's.
- SyncBatchNorm reduces its batch statistics over nbflow.distributed's ranks while training
  (two differentiable allreduces); in one process it is BatchNorm over inputs of any rank >= 2
  (PyTorch's own fallback when there is nothing to synchronise). DataParallel on one device
  calls the module.
- CrossMapLRN2d is PyTorch's legacy forward exactly, including its window: channel c sums the
  squares over [c - pre_pad + 1, c + pre_pad - 1] and always channel 0 too (the running sum
  never subtracts it), one constant (C, C) matrix product. Its gradient is that function's;
  PyTorch's hand-written backward assumes the symmetric window instead.
- The 3-D pools reuse the 2-D ones' helpers (sampling_grid.py) and the 3-D max / avg pools
  (volumetric.py).
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np

from .. import ops
from ..argcheck import integers
from ..core import STATE, no_grad
from ..core import dtypes as dt
from ..core.dtypes import as_dtype
from ..core.errors import ArgumentError, AttrError, DomainError, DTypeError, ShapeError
from ..eager.tensor import EagerTrace
from ..ops.conv import _batched
from ..runtime import comm
from . import functional as F
from .layers import Linear, Sequential, _BatchNorm, _RNNCellBase
from .module import Module, ModuleList
from .recurrent import GRU, LSTM, RNN, _RNNBase
from .sampling_grid import (
    FractionalMaxPool2d,
    _float_const,
    _interval_starts,
    _lp_pool,
    _LPPoolNd,
    _max_unpool,
    _MaxUnpoolNd,
)
from .spatial import _index, _ints, _known_dims, _unbatch
from .volumetric import LAYOUT, adaptive_max_pool3d, avg_pool3d, max_pool3d

# ---------------------------------------------------------------- 3-D pools


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """PyTorch's F.lp_pool3d: (sum over each window of x^p)^(1 / p) on (N, C, D, H, W) or (C,
    D, H, W)."""
    _batched(input, 5, "lp_pool3d", LAYOUT)
    kernel = _ints(kernel_size, 3, "lp_pool3d", "kernel_size", 1)
    pools = (max_pool3d, avg_pool3d)
    return _lp_pool("lp_pool3d", input, norm_type, kernel, stride, ceil_mode, *pools)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """PyTorch's F.max_unpool3d: max_pool3d's partial inverse, (N, C, D, H, W) or (C, D, H, W)
    values put at their flat volume `indices` (from max_pool3d(return_indices=True)) in zeros
    of (D - 1) stride - 2 padding + kernel_size (and so H and W), or output_size."""
    _batched(input, 5, "max_unpool3d", LAYOUT)
    args = (kernel_size, stride, padding, output_size)
    return _max_unpool(input, indices, *args, 3, "max_unpool3d")


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
):  # fmt: skip
    """max_pool3d's values and indices (return_indices is PyTorch's, ignored)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode)
    return max_pool3d(input, *args, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """adaptive_max_pool3d's values and indices (return_indices is PyTorch's, ignored)."""
    return adaptive_max_pool3d(input, output_size, return_indices=True)


def _fractional_size(x, kernel, output_size, output_ratio, fn):
    if output_size is None:
        if output_ratio is None:
            raise AttrError(f"{fn}: requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * 3
        if len(ratio) != 3:
            raise AttrError(f"{fn}: output_ratio must be a number or 3 numbers, got {ratio!r}")
        output_size = tuple(int(n * r) for n, r in zip(x.shape[2:], ratio))
    size = _ints(output_size, 3, fn, "output_size", 1)
    if any(o + k - 1 > n for o, k, n in zip(size, kernel, x.shape[2:])):
        raise ShapeError(
            f"{fn}: kernel_size {kernel} + output_size {size} - 1 must be at most the input's "
            f"spatial size {tuple(x.shape[2:])}"
        )
    return size


def _samples(x, _random_samples, fn):
    want = (x.shape[0], x.shape[1], 3)
    if _random_samples is None:
        return ops.uniform(want, dtype=x.dtype, device=getattr(x, "device", None))
    samples = _random_samples
    if samples.ndim != 3 or tuple(samples.shape) != want:
        raise ShapeError(
            f"{fn}: expected _random_samples of shape {want} (N, C, 3), got {tuple(samples.shape)}"
        )
    if samples.dtype != x.dtype:
        raise DTypeError(
            f"{fn}: expected _random_samples of the input's dtype {x.dtype}, got {samples.dtype}"
        )
    return samples


def fractional_max_pool3d_with_indices(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """fractional_max_pool3d's values and int64 flat volume indices."""
    fn = "fractional_max_pool3d"
    x, added = _batched(input, 5, fn, LAYOUT)
    _known_dims(x, fn, 0)
    kernel = _ints(kernel_size, 3, fn, "kernel_size", 1)
    size = _fractional_size(x, kernel, output_size, output_ratio, fn)
    samples = _samples(x, _random_samples, fn)
    c, spatial = x.shape[1], x.shape[2:]
    # sample a places the windows along spatial axis a (depth, height, width: PyTorch's order)
    windows, starts = x, []
    for a in range(3):
        n, m, k = spatial[a], size[a], kernel[a]
        start = _interval_starts(samples[..., a], n, m, k, x).astype(dt.int64)  # (N, C, m)
        starts.append(start)
        taps = ops.reshape(ops.unsqueeze(start, -1) + _index(np.arange(k), x), (-1, c, m * k))
        shape = [-1, c, 1, 1, 1]
        shape[2 + a] = m * k
        windows = ops.take_along_axis(windows, ops.reshape(taps, tuple(shape)), 2 + a)
    (od, oh, ow), (kd, kh, kw) = size, kernel
    windows = ops.reshape(windows, (-1, c, od, kd, oh, kh, ow, kw))
    windows = ops.reshape(
        ops.permute(windows, (0, 1, 2, 4, 6, 3, 5, 7)), (-1, c, *size, kd * kh * kw)
    )
    best = ops.argmax(windows, axis=-1, keepdims=True)  # (the first maximum, as PyTorch's)
    out = ops.squeeze(ops.take_along_axis(windows, best, 5), 5)
    best = ops.squeeze(best, 5)
    depth = ops.reshape(starts[0], (-1, c, od, 1, 1)) + ops.floor_div(best, kh * kw)
    row = ops.reshape(starts[1], (-1, c, 1, oh, 1)) + ops.remainder(ops.floor_div(best, kw), kh)
    col = ops.reshape(starts[2], (-1, c, 1, 1, ow)) + ops.remainder(best, kw)
    indices = (depth * spatial[1] + row) * spatial[2] + col
    return _unbatch(out, added), _unbatch(indices, added)


def fractional_max_pool3d(
    input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None,
):  # fmt: skip
    """PyTorch's F.fractional_max_pool3d on (N, C, D, H, W) or (C, D, H, W): max over
    kernel_size boxes whose starts step pseudo-randomly so that output_size (or floor(input
    size * output_ratio)) boxes span each axis; the starts come from _random_samples (N, C, 3)
    in [0, 1) (depth, height, width), drawn uniformly when None."""
    out, indices = fractional_max_pool3d_with_indices(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples
    )
    return (out, indices) if return_indices else out


class LPPool3d(_LPPoolNd):
    """(sum over each window of x^p)^(1 / p) over D, H and W."""

    def forward(self, input):
        return lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class MaxUnpool3d(_MaxUnpoolNd):
    """max_pool3d's partial inverse: forward(input, indices, output_size=None)."""

    def forward(self, input, indices, output_size=None):
        args = (self.kernel_size, self.stride, self.padding, output_size)
        return max_unpool3d(input, indices, *args)


class FractionalMaxPool3d(FractionalMaxPool2d):
    """Fractional max pooling (F.fractional_max_pool3d) to output_size, or to output_ratio (in
    (0, 1)) of the input's size; new pseudo-random box starts every call unless
    _random_samples is given."""

    def forward(self, input):
        return fractional_max_pool3d(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples,
        )  # fmt: skip


# ---------------------------------------------------------------- CrossMapLRN2d


def _cross_map_window(channels: int, size: int) -> np.ndarray:
    """(C, C) 0/1: row c marks the channels PyTorch's legacy running sum adds for channel c."""
    pre_pad = int((size - 1) / 2 + 1)  # (PyTorch's expression, float division and all)
    c = np.arange(channels)[:, None]
    j = np.arange(channels)[None, :]
    inside = (j >= np.maximum(1, c - pre_pad + 1)) & (j <= c + pre_pad - 1)
    return (inside | (j == 0)).astype(np.float64)


class CrossMapLRN2d(Module):
    """PyTorch's legacy cross-channel local response normalisation of (N, C, H, W): x / (k +
    alpha / size * (sum of x^2 over the channel window))^beta (see the module doc for its
    window)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.ndim != 4:
            raise ShapeError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        _known_dims(input, "CrossMapLRN2d", 1)
        window = _float_const(_cross_map_window(input.shape[1], self.size).T, input)
        # channels last, so the window is one matrix product over them
        squares = ops.permute(input * input, (0, 2, 3, 1))
        sums = ops.permute(ops.matmul(squares, window), (0, 3, 1, 2))
        return input * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# ---------------------------------------------------------------- one-process stand-ins


class SyncBatchNorm(_BatchNorm):
    """PyTorch's SyncBatchNorm: batch normalisation over dim 1 of an input of any rank >= 2
    (statistics over the other dims), with BatchNorm's running statistics. While training
    under nbflow.distributed (process_group, or the default group), the statistics are those
    of every rank's batch together (the batches must be of one size); in one process it is
    BatchNorm."""

    expected_dims = range(2, 65)

    def __init__(
        self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
        process_group=None, device=None, dtype=None,
    ):  # fmt: skip
        dtype = as_dtype(dtype)
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)
        self.process_group = process_group
        if device is not None:
            self.to(device)

    def forward(self, x):
        if x.ndim < 2:
            raise ShapeError(f"SyncBatchNorm: expected at least 2D input (got {x.ndim}D input)")
        group = self._group()
        if group is None or group.size() == 1 or not self.training:
            return super().forward(x)
        return self._synced(x, group)

    def _group(self):
        """The process group the statistics are reduced over (None: a world of one)."""
        if self.process_group is not None:
            return self.process_group
        return comm.group(0)

    def _synced(self, x, group):
        """Batch statistics over every rank's batch: the mean first, then the mean squared
        deviation from it (two allreduces; steadier than a sum of squares). Both reductions
        differentiate, so each rank's gradient sees the other ranks' batches."""
        ring = comm.ring_id(group)
        dims = (0, *range(2, x.ndim))
        shape = (1, -1) + (1,) * (x.ndim - 2)
        count = math.prod(x.shape) // x.shape[1] * group.size()  # (equal batches per rank)
        mean = ops.collective.allreduce(ops.sum(x, axis=dims), ring_id=ring) / count
        centred = x - ops.reshape(mean, shape)
        var = ops.collective.allreduce(ops.sum(centred * centred, axis=dims), ring_id=ring)
        var = var / count
        y = centred / ops.reshape(ops.sqrt(var + self.eps), shape)
        if self.affine:
            y = y * ops.reshape(self.weight, shape) + ops.reshape(self.bias, shape)
        momentum = self.step_momentum()
        if self.running_mean is not None:
            with no_grad():
                unbiased = var * (count / max(count - 1, 1))
                self.running_mean.mul_(1 - momentum).add_(mean * momentum)
                self.running_var.mul_(1 - momentum).add_(unbiased * momentum)
        return y

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*D (any _BatchNorm) in it replaced by a SyncBatchNorm
        holding the same parameter and buffer tensors (PyTorch's); other modules are kept,
        their children converted in place."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(
                module.num_features, module.eps, module.momentum, module.affine,
                module.track_running_stats, process_group,
            )  # fmt: skip
            for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
                value = getattr(module, name)
                if value is not None:
                    setattr(out, name, value)
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class DataParallel(Module):
    """PyTorch's DataParallel on one device: forward calls `module` (kept as `.module`, so the
    state_dict keys carry PyTorch's "module." prefix). nbflow does not replicate a module over
    devices; more than one device id warns and runs on one."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise ArgumentError(f"DataParallel: expected an nn.Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        if len(self.device_ids) > 1:
            warnings.warn(
                f"DataParallel: nbflow runs the module on one device, not on {self.device_ids}",
                stacklevel=2,
            )
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


# ---------------------------------------------------------------- RNN bases


class _Covers(type):
    """The metaclass of PyTorch's exported RNN bases: isinstance / issubclass hold for nbflow's
    own base class (`_covers`) and its subclasses (nn.LSTM is an nn.RNNBase), which cannot
    inherit from the exported class (it inherits from theirs)."""

    def __instancecheck__(cls, obj) -> bool:
        return cls.__subclasscheck__(type(obj))

    def __subclasscheck__(cls, sub) -> bool:
        covers = cls.__dict__.get("_covers")
        return type.__subclasscheck__(cls, sub) or (covers is not None and issubclass(sub, covers))


_RNN_MODES = {"RNN_TANH": (RNN, "tanh"), "RNN_RELU": (RNN, "relu"), "LSTM": (LSTM, None)}
_RNN_MODES["GRU"] = (GRU, None)


class RNNBase(_RNNBase, metaclass=_Covers):
    """PyTorch's RNNBase: the base of nn.RNN, nn.LSTM and nn.GRU (isinstance holds for them),
    and itself a recurrent layer of `mode` 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'."""

    _covers = _RNNBase

    def __init__(
        self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
        dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None, generator=None,
    ):  # fmt: skip
        if not isinstance(mode, str) or mode not in _RNN_MODES:
            raise DomainError(f"Unrecognized RNN mode: {mode}")
        kind, nonlinearity = _RNN_MODES[mode]
        # (read by _RNNBase.__init__, before Module.__init__ allows attribute assignment)
        self.__dict__.update(gates=kind.gates, states=kind.states, _kind=kind)
        options = (num_layers, bias, batch_first, dropout, bidirectional, proj_size)
        super().__init__(input_size, hidden_size, *options, as_dtype(dtype), generator)
        self.mode = mode
        if nonlinearity is not None:
            self.nonlinearity = nonlinearity
        if device is not None:
            self.to(device)

    def _step(self, *args):
        return self._kind._step(self, *args)

    def _direction(self, *args, **kwargs):  # (nn.LSTM's: one lstm_sequence op)
        return self._kind._direction(self, *args, **kwargs)


class RNNCellBase(_RNNCellBase, metaclass=_Covers):
    """PyTorch's RNNCellBase: the base of nn.RNNCell, nn.LSTMCell and nn.GRUCell (isinstance
    holds for them); num_chunks gate blocks of hidden_size rows in its weights."""

    _covers = _RNNCellBase

    def __init__(
        self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None, generator=None
    ):
        self.__dict__["gates"] = int(num_chunks)  # (read by _RNNCellBase.__init__)
        super().__init__(input_size, hidden_size, bias, as_dtype(dtype), generator)
        if device is not None:
            self.to(device)


# ---------------------------------------------------------------- adaptive log softmax

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """PyTorch's adaptive softmax (Grave et al.): the classes below cutoffs[0] (the shortlist)
    and one entry per cluster share the head's softmax; cluster i's classes [cutoffs[i],
    cutoffs[i+1]) get their own softmax from a two-layer projection of size in_features //
    div_value^(i+1). forward(input (N, in_features), target (N,)) -> (output: each target's
    log-probability, loss: the mean of -output); log_prob(input) gives all n_classes."""

    def __init__(
        self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None,
        dtype=None,
    ):  # fmt: skip
        super().__init__()
        cutoffs = list(integers(cutoffs, "AdaptiveLogSoftmaxWithLoss: cutoffs"))
        if len(cutoffs) == 0:
            raise ShapeError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise DomainError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                "increasing order, where each value is between 1 and n_classes-1"
            )
        dtype = as_dtype(dtype)
        self.in_features, self.n_classes = int(in_features), int(n_classes)
        self.cutoffs = [int(c) for c in cutoffs] + [self.n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(self.in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(self.in_features, hidden, bias=False, dtype=dtype),
                    Linear(hidden, size, bias=False, dtype=dtype),
                )
            )
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def _check(self, input, target):
        name = type(self).__name__
        if target.ndim == 1:
            if input.ndim != 2:
                raise ShapeError(
                    f"{name}: 1D target tensor expects 2D input tensors, but found inputs with "
                    f"size {tuple(input.shape)}"
                )
            if input.shape[0] != target.shape[0]:
                raise ShapeError(
                    f"{name}: Input and target should have the same size in the batch dimension "
                    f"(input {tuple(input.shape)}, target {tuple(target.shape)})"
                )
        elif target.ndim == 0:
            if input.ndim != 1:
                raise ShapeError(
                    f"{name}: 0D target tensor expects 1D input tensors, but found inputs with "
                    f"size {tuple(input.shape)}"
                )
        else:
            raise ShapeError(f"{name}: 0D or 1D target tensor expected, multi-target not supported")
        if np.dtype(target.dtype).kind not in "iu":
            raise DTypeError(f"{name}: target must be an integer tensor, got {target.dtype}")
        if isinstance(STATE.trace, EagerTrace):  # (a traced target has no values: an
            values = np.asarray(target.numpy())  # invalid one fails the head's gather)
            if values.size and (values.min() < 0 or values.max() >= self.n_classes):
                raise DomainError(
                    f"{name}: Target values should be in [0, {self.n_classes - 1}], but values "
                    f"in range [{values.min()}, {values.max()}] were found."
                )

    def forward(self, input, target):
        self._check(input, target)
        batched = target.ndim > 0
        x = input if batched else ops.unsqueeze(input, 0)
        t = (target if batched else ops.unsqueeze(target, 0)).astype(dt.int64)
        head = F.log_softmax(self.head(x), dim=1)
        # the head's column for each target: itself in the shortlist, else its cluster's; an
        # invalid target points past the head (take_along_axis then raises)
        bucket = sum((t >= c).astype(dt.int64) for c in self.cutoffs)
        column = ops.where(bucket == 0, t, bucket + (self.shortlist_size - 1))
        column = ops.where(t < 0, self.head_size, column)
        output = _pick(head, column)
        for i, tail in enumerate(self.tail):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            inside = (t >= low) & (t < high)
            local = _pick(F.log_softmax(tail(x), dim=1), ops.clip(t - low, 0, high - low - 1))
            output = output + ops.where(inside, local, 0.0)
        loss = ops.mean(-output)
        return _ASMoutput(output if batched else ops.squeeze(output, 0), loss)

    def log_prob(self, input):
        """The log-probabilities of all n_classes for each row of input (N, in_features)."""
        if input.ndim != 2:
            raise ShapeError(
                f"{type(self).__name__}.log_prob: expects input (N, in_features), got "
                f"{tuple(input.shape)}"
            )
        head = F.log_softmax(self.head(input), dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = head[:, self.shortlist_size + i : self.shortlist_size + i + 1]
            parts.append(F.log_softmax(tail(input), dim=1) + cluster)
        return ops.concat(parts, axis=1)

    def predict(self, input):
        """The most probable class of each row: log_prob(input).argmax(1) (PyTorch's shortcut
        through the head picks the same classes)."""
        return ops.argmax(self.log_prob(input), axis=1)


def _pick(values, columns):
    """values[i, columns[i]] for each row i."""
    return ops.squeeze(ops.take_along_axis(values, ops.unsqueeze(columns, 1), 1), 1)


FUNCTIONS = [
    "adaptive_max_pool3d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool3d",
    "max_pool3d_with_indices",
    "max_unpool3d",
]
MODULES = [
    "AdaptiveLogSoftmaxWithLoss",
    "CrossMapLRN2d",
    "DataParallel",
    "FractionalMaxPool3d",
    "LPPool3d",
    "MaxUnpool3d",
    "RNNBase",
    "RNNCellBase",
    "SyncBatchNorm",
]
__all__ = FUNCTIONS + MODULES
