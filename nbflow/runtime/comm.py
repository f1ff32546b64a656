"""nbflow's transport between processes: MPI through mpi4py, loaded on first use.

A ProcessGroup is an MPI communicator and the world ranks of its members. The default group
is the one nbflow.distributed.init_process_group makes; until then nbflow runs in a world of
one process, where every collective gives its input back (what it computes with one rank).
A rank outside a group holds it with comm None.
This module imports only numpy and nbflow.errors, so that the collective ops
(nbflow/ops/collective.py) and the API (nbflow/distributed.py) both build on it.

Collectives block until every member of the group has called them, in the same order: the
same program on every rank keeps that order. MPI has no timeout; a rank that stops calling
leaves the others waiting, as PyTorch's MPI backend does.
"""

from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass

import numpy as np

from ..core.errors import DistributedError, DTypeError

REDUCE_OPS = ("sum", "avg", "product", "min", "max", "band", "bor", "bxor")
BITWISE = ("band", "bor", "bxor")


@functools.cache
def mpi():
    """mpi4py's MPI module, or a clear error when there is none."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistributedError(
            f"nbflow's distributed transport needs mpi4py and an MPI library ({e}); "
            "install them with: pip install 'nbflow[distributed]'"
        ) from None
    return MPI


@dataclass(eq=False)
class ProcessGroup:
    """An MPI communicator and the world ranks of its members (in group-rank order)."""

    comm: object
    ranks: tuple[int, ...]

    def rank(self) -> int:
        """This process's rank in the group (-1 outside it, as in PyTorch)."""
        return -1 if self.comm is None else self.comm.Get_rank()

    def size(self) -> int:
        return len(self.ranks)


# ring id -> group, as Paddle's collective ops name theirs: 0 is the default (world) group,
# later ids are new_group's, numbered in creation order (the same on every rank, since
# new_group is itself collective). A Program's collective ops name their group this way.
_groups: dict[int, ProcessGroup] = {}


def group(ring_id: int = 0) -> ProcessGroup | None:
    """The group with this ring id; None for ring 0 before init_process_group (a world of
    one process)."""
    found = _groups.get(ring_id)
    if found is None and ring_id != 0:
        raise DistributedError(f"no process group has ring id {ring_id}")
    return found


def add_group(g: ProcessGroup, ring_id: int | None = None) -> int:
    ring_id = max(_groups, default=0) + 1 if ring_id is None else ring_id
    _groups[ring_id] = g
    return ring_id


def ring_id(g: ProcessGroup) -> int:
    """The ring id of a group this process made."""
    if _groups.get(0) is g:  # (the common case, first)
        return 0
    return next(i for i, made in _groups.items() if made is g)


def remove_groups(*ring_ids: int) -> None:
    """Forget the groups (freeing their communicators); none given: every group."""
    for i in ring_ids or list(_groups):
        g = _groups.pop(i)
        if g.comm is not None:
            g.comm.Free()
            g.comm = None


@functools.cache
def mpi_op(name: str):
    MPI = mpi()
    ops = {"sum": MPI.SUM, "avg": MPI.SUM, "product": MPI.PROD, "min": MPI.MIN}
    ops |= {"max": MPI.MAX, "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}
    return ops[name]


def check_reduce(op: str, dtype) -> None:
    """Refuse a reduction the dtype has no meaning for (before any rank sends anything)."""
    if op not in REDUCE_OPS:
        raise DistributedError(f"unknown reduce op {op!r}; expected one of {REDUCE_OPS}")
    floating = dtype.kind == "f"
    if op in BITWISE and floating:
        raise DTypeError(f"reduce op {op!r} takes integer tensors, not {dtype}")
    if op == "avg" and not floating:
        raise DTypeError(f"reduce op 'avg' takes floating tensors, not {dtype}")


def agree(group: ProcessGroup, *signature) -> None:
    """Refuse, on every rank alike, a collective the ranks called differently (another op,
    shape or dtype): MPI would abort one rank and give another a silently wrong result.
    Costs one allgather of an int per collective."""
    own = zlib.crc32(repr(signature).encode())
    codes = np.empty(group.size(), np.int64)
    group.comm.Allgather(np.array([own], np.int64), codes)
    if codes.min() != codes.max():
        everyone = group.comm.allgather(signature)
        raise DistributedError(
            "the ranks called different collectives (or on different shapes or dtypes): "
            + "; ".join(f"rank {r}: {s}" for r, s in zip(group.ranks, everyone))
        )


def member(group: ProcessGroup) -> ProcessGroup:
    """`group`, refusing a collective on a group this process is not in."""
    if group.comm is None:
        raise DistributedError(f"this process is not a member of the group of ranks {group.ranks}")
    return group


def _alone(group: ProcessGroup | None) -> bool:
    return group is None or member(group).size() == 1


def _in_place(group, x, out, signature, collective) -> None:
    """out = x, then `collective(buffer)` run on it across the group (MPI writes a
    C-contiguous buffer; a strided out gets a copy, written back)."""
    if x is not out:
        np.copyto(out, x)
    if _alone(group):
        return
    agree(group, *signature, out.shape, out.dtype.char)
    buf = out if out.flags.c_contiguous else np.ascontiguousarray(out)
    collective(buf)
    if buf is not out:
        np.copyto(out, buf)


def allreduce(group: ProcessGroup | None, x: np.ndarray, out: np.ndarray, op: str) -> None:
    """out = the reduction `op` of x over the group's ranks (x may be out itself)."""

    def reduce(buf):
        group.comm.Allreduce(mpi().IN_PLACE, buf, op=mpi_op(op))
        if op == "avg":
            np.divide(buf, group.size(), out=buf, casting="unsafe")

    _in_place(group, x, out, ("allreduce", op), reduce)


def broadcast(group: ProcessGroup | None, x: np.ndarray, out: np.ndarray, src: int) -> None:
    """out = x of the group's rank `src`, on every rank (x may be out itself)."""
    _in_place(group, x, out, ("broadcast", src), lambda buf: group.comm.Bcast(buf, root=src))
