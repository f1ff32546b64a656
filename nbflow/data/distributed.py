"""PyTorch's DistributedSampler (torch.utils.data.distributed), for nbflow.data.

DistributedSampler gives each of `num_replicas` processes (ranks) its own equal share of a
dataset's indices. Without num_replicas / rank it takes the world size and this process's
rank from nbflow.distributed's default group, or before init_process_group from MPI (mpi4py's
COMM_WORLD, nbflow's distributed transport); with no MPI installed it refuses with a clear
error. The shuffled order is a permutation drawn from a numpy PCG64 stream seeded with
seed + epoch: the same on every rank (what makes the shares disjoint), but not
torch.randperm's order.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..core.errors import ArgumentError, DomainError
from ..runtime import comm
from .sampler import Sampler, _check_bool

__all__ = ["DistributedSampler"]


def _world() -> tuple[int, int]:
    """(world size, rank) of nbflow.distributed's default group, else from MPI."""
    group = comm.group(0)
    if group is not None:
        return group.size(), group.rank()
    try:
        from mpi4py import MPI
    except ImportError:
        raise RuntimeError(
            "DistributedSampler: num_replicas and rank were not given and there is no MPI "
            "(mpi4py) to ask for them; pass num_replicas= and rank= explicitly"
        ) from None
    return MPI.COMM_WORLD.Get_size(), MPI.COMM_WORLD.Get_rank()


def _int(value, name: str) -> int:
    try:
        if not isinstance(value, bool):
            return operator.index(value)
    except TypeError:
        pass
    raise ArgumentError(f"{name} should be an integer, but got {name}={value!r}")


class DistributedSampler(Sampler):
    """The indices of rank `rank` out of `num_replicas`: every num_replicas-th index from
    `rank` on, of the (shuffle: per-epoch permuted) indices padded by repeating the first ones
    to a multiple of num_replicas (drop_last: cut to one instead). Each rank gets
    num_samples = len(sampler) indices. Call set_epoch(epoch) before each epoch so that the
    shuffled order changes (identically on every rank)."""

    def __init__(
        self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False
    ):
        if num_replicas is None or rank is None:
            size, own = _world()
            num_replicas = size if num_replicas is None else num_replicas
            rank = own if rank is None else rank
        num_replicas, rank = _int(num_replicas, "num_replicas"), _int(rank, "rank")
        if num_replicas < 1:
            raise DomainError(f"num_replicas should be a positive integer, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise DomainError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch = 0
        self.drop_last = _check_bool(drop_last, "drop_last")
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle, self.seed = _check_bool(shuffle, "shuffle"), int(seed)

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.Generator(np.random.PCG64(self.seed + self.epoch)).permutation(n)
            indices = indices.tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:  # pad by repeating the first indices
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next iteration draws (shuffle)."""
        self.epoch = epoch
