"""Batch normalisation: BatchNorm1d/2d/3d and SyncBatchNorm.

SyncBatchNorm reduces its batch statistics over nbflow.distributed's ranks while training
(two differentiable allreduces); in one process it is BatchNorm over inputs of any rank >= 2
(PyTorch's own fallback when there is nothing to synchronise)."""

from __future__ import annotations

import math

from ... import ops
from ...argcheck import optional_real
from ...core import graph_mode, no_grad
from ...core.dtypes import as_dtype
from ...core.errors import ShapeError, UnsupportedError
from ...runtime import comm
from .. import init
from .module import Module, Parameter
from .utils import flag, ints, reals


class _NormBase(Module):
    """The parameters and running statistics that the batch and instance norms share (PyTorch's
    _NormBase): weight and bias with affine, running_mean and running_var with
    track_running_stats."""

    def __init__(
        self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
        dtype=None,
    ):  # fmt: skip
        super().__init__()
        [self.num_features] = ints(self, num_features=num_features)
        [self.eps] = reals(self, eps=eps)
        self.momentum = optional_real(momentum, f"{type(self).__name__}: momentum")
        self.affine, self.track_running_stats = affine, track_running_stats
        if flag(self, "affine", affine):
            self.weight = Parameter(ops.ones(self.num_features, dtype=dtype))
            self.bias = Parameter(ops.zeros(self.num_features, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if flag(self, "track_running_stats", track_running_stats):
            self.register_buffer("running_mean", ops.zeros(self.num_features, dtype=dtype))
            self.register_buffer("running_var", ops.ones(self.num_features, dtype=dtype))
            # the training batches seen (PyTorch's buffer; momentum=None averages over them)
            self.register_buffer("num_batches_tracked", ops.zeros((), dtype="int64"))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    # a state_dict from before the counter (older nbflow) still loads: it starts at 0
    optional_state = ("num_batches_tracked",)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class BatchNormBase(_NormBase):
    """The batch norms' base: BatchNorm1d/2d/3d and SyncBatchNorm (PyTorch's _BatchNorm)."""

    expected_dims: tuple = ()

    def forward(self, x):
        if x.ndim not in self.expected_dims:
            raise ShapeError(
                f"{type(self).__name__} expects a {' or '.join(map(str, self.expected_dims))}-D "
                f"input, got shape {tuple(x.shape)}"
            )
        # batch statistics while training, and whenever there are no running statistics
        use_batch = self.training or self.running_mean is None
        return ops.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_batch,
            self.step_momentum(),
            self.eps,
        )

    def step_momentum(self):
        """The running statistics' factor for this forward, counting a training batch."""
        momentum = self.momentum
        if self.training and self.running_mean is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if momentum is None:  # PyTorch's cumulative average: 1 / the batches seen
                if graph_mode():
                    raise UnsupportedError(
                        f"{type(self).__name__}(momentum=None) under a graph trace: its factor "
                        "1 / num_batches_tracked would be baked in; give a momentum"
                    )
                momentum = 1.0 / self.num_batches_tracked.item()
        return momentum


# PyTorch's private name for the base, which torch code imports from this path
# (torch.nn.modules.batchnorm._BatchNorm, as in isinstance(m, _BatchNorm)): kept importable
_BatchNorm = BatchNormBase


class BatchNorm1d(BatchNormBase):
    """Batch normalisation over (N, C) or (N, C, L); running statistics are buffers, updated
    in training mode (momentum: new = (1 - m) * old + m * batch, unbiased variance) and used
    in eval mode."""

    expected_dims = (2, 3)


class BatchNorm2d(BatchNormBase):
    """Batch normalisation over (N, C, H, W) (see BatchNorm1d)."""

    expected_dims = (4,)


class BatchNorm3d(BatchNormBase):
    """Batch normalisation over (N, C, D, H, W) (see BatchNorm1d)."""

    expected_dims = (5,)


class SyncBatchNorm(BatchNormBase):
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
        """`module` with every BatchNorm*D (any BatchNormBase) in it replaced by a SyncBatchNorm
        holding the same parameter and buffer tensors (PyTorch's); other modules are kept,
        their children converted in place."""
        out = module
        if isinstance(module, BatchNormBase):
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


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]
