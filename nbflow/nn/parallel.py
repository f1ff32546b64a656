"""PyTorch's nn.parallel: DistributedDataParallel over nbflow.distributed's process group,
and DataParallel (one device).

DistributedDataParallel (DDP) makes every rank's copy of a module the same at construction
(rank 0's parameters and buffers, broadcast) and keeps them the same: after each backward()
every parameter's gradient is the average over the ranks, so identical optimizer steps follow.
Eagerly, each parameter's post-accumulate hook marks it ready and the first one queues a
callback for the end of that backward(); the callback reduces the gradients in buckets of
about bucket_cap_mb (one MPI allreduce per bucket, in reverse parameter order as PyTorch).
In graph mode (optimizer.minimize inside @nbflow.jit, or on a static Program) the optimizer
appends one allreduce op (avg) per gradient of a DDP module's parameter before its update.

Unused parameters: the ranks first add up which parameters got a gradient (one small
allreduce), so all of them decide alike. With find_unused_parameters=False, a parameter
unused on some rank is an error (on every rank; PyTorch raises it at the next forward).
With True, a parameter unused here but used elsewhere contributes zeros, and one unused on
every rank keeps its .grad as it was.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from .. import distributed as dist
from ..core import hooks
from ..core.errors import ArgumentError, DistributedError, UnsupportedError
from ..eager.tensor import Tensor, version_counter
from ..runtime import comm
from .modules.module import Module

__all__ = ["DistributedDataParallel", "DataParallel"]


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


class DistributedDataParallel(Module):
    """Data-parallel training of `module` over `process_group` (None: the default group)."""

    def __init__(
        self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
        process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
        check_reduction=False, gradient_as_bucket_view=False, static_graph=False,
    ):  # fmt: skip
        super().__init__()
        if not isinstance(module, Module):
            raise ArgumentError(f"DistributedDataParallel: expected an nn.Module, got {module!r}")
        group = dist.resolve_group(process_group)
        self.module = module
        self.process_group = group
        self.ring_id = comm.ring_id(group)
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.bucket_bytes = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        self.require_backward_grad_sync = True
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self._trained = _trainable(module)
        self._ids = {id(p) for _, p in self._trained}
        self._ready: set[int] = set()
        self._queued = False
        self._bucket_buffers: dict[tuple, tuple] = {}  # bucket -> (flat Tensor, views)
        self._check_same_model()
        for t in [p for _, p in self._trained] + list(module.buffers()):
            dist.broadcast(t, src=group.ranks[0], group=group)
        for _, p in self._trained:
            p.register_post_accumulate_grad_hook(self._grad_ready)
        dist._data_parallel.add(self)

    def _check_same_model(self) -> None:
        """Every rank must hold the same parameter names, shapes and dtypes (decided alike
        on all ranks, before any broadcast could mismatch)."""
        mine = [(n, p.shape, str(p.dtype)) for n, p in self._trained]
        mine += [(n, b.shape, str(b.dtype)) for n, b in self.module.named_buffers()]
        everyone = [None] * self.process_group.size()
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in zip(self.process_group.ranks, everyone):
            if theirs != mine:
                raise DistributedError(
                    f"DistributedDataParallel: rank {rank}'s module differs from this one's "
                    f"(parameters and buffers: {theirs} vs {mine})"
                )

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers:  # rank 0's running statistics, as PyTorch does
            for b in self.module.buffers():
                dist.broadcast(b, src=self.process_group.ranks[0], group=self.process_group)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients without reducing them; the first one
        after reduces the accumulated sum (eager mode)."""
        old, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def reduces(self, param) -> bool:
        """Whether this DDP averages `param`'s gradient."""
        return id(param) in self._ids

    def graph_ring_id(self) -> int:
        """The group a Program's gradient allreduce ops name (refusing no_sync: a traced
        program would keep whichever choice it was traced with)."""
        if not self.require_backward_grad_sync:
            raise UnsupportedError(
                "DistributedDataParallel.no_sync() under graph mode: trace a step without "
                "minimize() for the accumulating steps instead"
            )
        return self.ring_id

    # ------------------------------------------------------------ eager reduction

    def _grad_ready(self, param) -> None:
        if not self.require_backward_grad_sync:
            return
        self._ready.add(id(param))
        if not self._queued:
            self._queued = True
            hooks.queue_callback(self._reduce)

    def _reduce(self) -> None:
        ready, self._ready, self._queued = self._ready, set(), False
        group = self.process_group
        used_here = Tensor(np.array([id(p) in ready for _, p in self._trained], np.int64))
        dist.all_reduce(used_here, group=group)
        counts = used_here.numpy()  # how many ranks used each parameter
        if not self.find_unused_parameters and (counts < group.size()).any():
            unused = [n for (n, _), c in zip(self._trained, counts) if c < group.size()]
            raise DistributedError(
                "DistributedDataParallel: parameters got no gradient on some rank: "
                f"{unused}. Pass find_unused_parameters=True if parts of the model are "
                "unused, or make every parameter take part in the loss."
            )
        used = [p for (_, p), c in zip(self._trained, counts) if c > 0]
        for bucket in _buckets(used[::-1], self.bucket_bytes):
            self._reduce_bucket(bucket)

    def _reduce_bucket(self, params) -> None:
        flat, views = self._bucket_buffer(params)
        for p, view in zip(params, views):
            if p.grad is None:
                view.fill(0)
            else:
                np.copyto(view, p.grad._data, casting="unsafe")
        dist.all_reduce(flat, op=dist.ReduceOp.AVG, group=self.process_group)
        for p, view in zip(params, views):
            if p.grad is None:
                p.grad = Tensor(view.astype(p.dtype))
            else:
                np.copyto(p.grad._data, view, casting="unsafe")
                version_counter(p.grad)[0] += 1

    def _bucket_buffer(self, params):
        """The bucket's flat buffer (a Tensor, float32 for float16 gradients) and each
        parameter's view into it, kept from step to step (a fresh 1 MB buffer a step costs
        its page faults)."""
        key = tuple(id(p) for p in params)
        found = self._bucket_buffers.get(key)
        if found is None:
            work = np.float32 if params[0].dtype == np.float16 else params[0].dtype
            data = np.empty(sum(p.numel() for p in params), work)
            views, offset = [], 0
            for p in params:
                views.append(data[offset : offset + p.numel()].reshape(p.shape))
                offset += p.numel()
            found = self._bucket_buffers[key] = (Tensor(data), views)
        return found


def _trainable(module) -> list[tuple[str, Tensor]]:
    """(name, parameter) for each distinct parameter that requires grad."""
    seen, out = set(), []
    for name, p in module.named_parameters():
        if p.requires_grad and id(p) not in seen:
            seen.add(id(p))
            out.append((name, p))
    return out


def _buckets(params, cap_bytes: int):
    """Runs of params of one dtype, each up to about cap_bytes (at least one parameter)."""
    bucket, size = [], 0
    for p in params:
        nbytes = p.numel() * p.dtype.itemsize
        if bucket and (p.dtype != bucket[0].dtype or size + nbytes > cap_bytes):
            yield bucket
            bucket, size = [], 0
        bucket.append(p)
        size += nbytes
    if bucket:
        yield bucket
