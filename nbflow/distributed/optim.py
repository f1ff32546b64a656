"""PyTorch's torch.distributed.optim: ZeroRedundancyOptimizer (ZeRO stage 1).

Each rank keeps the optimizer state of its own share of the parameters only: the parameters
of each group are dealt out to the ranks, the largest first to the rank with the fewest
elements so far (PyTorch's sorted-greedy partition). step() runs the wrapped optimizer on
this rank's share (the gradients are already averaged, by DistributedDataParallel), then every
rank broadcasts the parameters it updated (one broadcast per rank and dtype), so all ranks
hold the same parameters again. The optimizer state's memory falls by the world size; the
updates equal the wrapped optimizer's on every parameter. Eager mode.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import DistributedError
from ..eager.tensor import Tensor, version_counter
from . import broadcast, gather_object, get_rank, resolve_group

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer:
    """`optimizer_class(this rank's share of params, **defaults)`, its state sharded over
    the ranks of `process_group` (None: the default group)."""

    def __init__(
        self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
        overlap_with_ddp=False, **defaults,
    ):  # fmt: skip
        if overlap_with_ddp:
            raise DistributedError("ZeroRedundancyOptimizer: overlap_with_ddp is not supported")
        self.process_group = resolve_group(process_group)
        self.world_size, self.rank = self.process_group.size(), get_rank(self.process_group)
        params = list(params)
        groups = params if params and isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = [{**g, "params": list(g["params"])} for g in groups]
        self.owner: dict[int, int] = {}  # id(param) -> the group rank that updates it
        local = []
        for group in self.param_groups:
            mine = [p for p in group["params"] if self._deal(p, group) == self.rank]
            local.append({**group, "params": mine})
        self.optim = optimizer_class(local, **defaults)
        self.defaults = self.optim.defaults
        for full, mine in zip(self.param_groups, self.optim.param_groups):
            full.update({k: v for k, v in mine.items() if k != "params"})  # (the schedules')
        self._consolidated = None

    def _deal(self, p, group) -> int:
        """The owner of p: sorted-greedy over its group (computed for the group at once)."""
        if id(p) not in self.owner:
            sizes = [0] * self.world_size
            for q in sorted(group["params"], key=lambda q: -q.numel()):
                rank = sizes.index(min(sizes))
                self.owner[id(q)] = rank
                sizes[rank] += q.numel()
        return self.owner[id(p)]

    @property
    def params(self) -> list:
        return [p for g in self.param_groups for p in g["params"]]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad._data[...] = 0
                version_counter(p.grad)[0] += 1

    def step(self, closure=None):
        """The wrapped optimizer's step on this rank's share, then every share broadcast
        from its owner."""
        for full, local in zip(self.param_groups, self.optim.param_groups):
            for key, value in full.items():  # (a schedule sets these on param_groups)
                if key != "params":
                    local[key] = value
        loss = self.optim.step(closure)
        self._broadcast_shares()
        return loss

    def _broadcast_shares(self) -> None:
        group = self.process_group
        for rank in range(self.world_size):
            shares: dict = {}
            for p in self.params:
                if self.owner[id(p)] == rank:
                    shares.setdefault(p.dtype, []).append(p)
            for share in shares.values():
                flat = Tensor(np.concatenate([p._data.ravel() for p in share]))
                broadcast(flat, src=group.ranks[rank], group=group)
                if rank != self.rank:
                    offset = 0
                    for p in share:
                        part = flat._data[offset : offset + p.numel()]
                        np.copyto(p._data, part.reshape(p.shape))
                        offset += p.numel()
                        version_counter(p)[0] += 1

    # -------------------------------------------------------------- state

    def _local_to_global(self) -> list[int]:
        """The global index (over all groups, in order) of each of this rank's parameters."""
        index = {id(p): i for i, p in enumerate(self.params)}
        return [index[id(p)] for g in self.optim.param_groups for p in g["params"]]

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's share of the state on global rank `to` (every rank calls it)."""
        mine = (self._local_to_global(), self.optim.state_dict()["state"])
        shares = [None] * self.world_size if get_rank() == to else None
        gather_object(mine, shares, dst=to, group=self.process_group)
        self._consolidated = shares

    def state_dict(self) -> dict:
        """The whole optimizer's state (PyTorch's layout, global parameter indices), on the
        rank consolidate_state_dict gathered it to."""
        if self._consolidated is None:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. Please call "
                "`consolidate_state_dict(to=...)` on all ranks first."
            )
        state = {}
        for indices, local in self._consolidated:
            state.update({indices[i]: s for i, s in local.items()})
        groups, start = [], 0
        for g in self.param_groups:
            n = len(g["params"])
            options = {k: v for k, v in g.items() if k != "params"}
            groups.append({**options, "params": list(range(start, start + n))})
            start += n
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Each rank takes its share of a consolidated state_dict."""
        indices = self._local_to_global()
        where = {g: i for i, g in enumerate(indices)}
        local = {where[g]: s for g, s in state_dict["state"].items() if g in where}
        groups, start = [], 0
        for saved, mine in zip(state_dict["param_groups"], self.optim.param_groups):
            options = {k: v for k, v in saved.items() if k != "params"}
            count = len(mine["params"])
            groups.append({**options, "params": list(range(start, start + count))})
            start += count
        for full, saved in zip(self.param_groups, state_dict["param_groups"]):
            full.update({k: v for k, v in saved.items() if k != "params"})
        self.optim.load_state_dict({"state": local, "param_groups": groups})
