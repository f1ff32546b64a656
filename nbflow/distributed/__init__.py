"""PyTorch's torch.distributed on MPI: process groups and collectives for data-parallel runs.

    mpiexec -n 2 python train.py          # each process:
    import nbflow.distributed as dist
    dist.init_process_group("mpi")        # world size and rank come from MPI
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

The transport is MPI through mpi4py (nbflow/comm.py; `pip install 'nbflow[distributed]'`
brings mpi4py and MPICH). all_reduce and broadcast run as nbflow's ops (allreduce_,
broadcast_, their group named by a ring id), so they work inside @nbflow.jit and static
Programs too; the other collectives work on eager CPU tensors. Collectives write into the
tensors they are given, as PyTorch's do, and record nothing for autograd. `async_op=True`
returns a Work that has already completed (nbflow's collectives are blocking; isend and irecv
are not). `src` and `dst` are global ranks, as in PyTorch.
Ranks must call collectives in the same order; a rank that stops calling leaves the others
waiting (MPI has no timeout).
"""

from __future__ import annotations

import enum
import math
import operator
import weakref

import numpy as np

from ..core import no_grad
from ..core.errors import ArgumentError, DistributedError, UnsupportedError
from ..eager.tensor import Tensor, version_counter
from ..ops import collective
from ..runtime import comm

__all__ = [
    "ReduceOp", "Work", "ProcessGroup", "GroupMember", "is_available", "is_mpi_available",
    "init_process_group", "is_initialized", "destroy_process_group", "get_rank",
    "get_world_size", "get_backend", "new_group", "get_process_group_ranks", "get_global_rank",
    "get_group_rank", "barrier", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "reduce_scatter_tensor", "gather", "scatter", "send", "recv",
    "broadcast_object_list", "all_gather_object", "average_gradients", "isend", "irecv",
    "all_to_all_single", "gather_object", "scatter_object_list",
]  # fmt: skip

ProcessGroup = comm.ProcessGroup

# the live DistributedDataParallel modules (nn/parallel.py): graph mode's optimizer asks them
# which gradients to average (data_parallel_ring)
_data_parallel: weakref.WeakSet = weakref.WeakSet()


def data_parallel_ring(param) -> int | None:
    """The ring id of the DistributedDataParallel that averages `param`'s gradient, if any."""
    for ddp in list(_data_parallel):
        if ddp.reduces(param):
            return ddp.graph_ring_id()
    return None


class ReduceOp(str, enum.Enum):
    """The reductions (their values are the allreduce op's `reduce_op` attr)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class GroupMember:
    """PyTorch's GroupMember: WORLD is the default group (None stands for it, too)."""

    WORLD = None


class Work:
    """What an async_op=True collective, isend and irecv return. nbflow's collectives block,
    so theirs has completed already; an isend or irecv completes on wait() (irecv's tensor
    holds the message from then on)."""

    def __init__(self, request=None, finish=None):
        self._request, self._finish = request, finish

    def wait(self, timeout=None) -> bool:
        if self._request is not None:
            self._request.Wait()
            self._request = None
            if self._finish is not None:
                self._finish()
                self._finish = None
        return True

    def is_completed(self) -> bool:
        if self._request is not None and self._request.Test():
            self.wait()
        return self._request is None

    def is_success(self) -> bool:
        return self.is_completed()


def is_available() -> bool:
    """Whether the MPI transport (mpi4py) can be loaded."""
    try:
        comm.mpi()
    except DistributedError:
        return False
    return True


is_mpi_available = is_available


# ----------------------------------------------------------------------- process groups


def init_process_group(
    backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
    group_name="", pg_options=None, device_id=None,
):  # fmt: skip
    """Make the default group: every process that MPI started (mpiexec -n N). world_size and
    rank, if given, must be MPI's (a launcher that disagrees is a mistake, not an override)."""
    if backend not in (None, "mpi"):
        raise DistributedError(
            f"backend {backend!r}: nbflow's transport is MPI; pass backend='mpi' and start "
            "the processes with mpiexec"
        )
    if is_initialized():
        raise DistributedError("trying to initialize the default process group twice!")
    world = comm.mpi().COMM_WORLD
    size, own = world.Get_size(), world.Get_rank()
    for name, given, actual in (("world_size", world_size, size), ("rank", rank, own)):
        if given not in (-1, None) and operator.index(given) != actual:
            raise DistributedError(f"{name}={given}, but MPI started this process as {actual}")
    comm.add_group(ProcessGroup(_returning_errors(world.Dup()), tuple(range(size))), ring_id=0)


def _returning_errors(c):
    """c, its MPI errors raised as Python exceptions rather than aborting the process."""
    c.Set_errhandler(comm.mpi().ERRORS_RETURN)
    return c


def is_initialized() -> bool:
    return comm.group(0) is not None


def _default() -> ProcessGroup:
    found = comm.group(0)
    if found is None:
        raise DistributedError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    return found


def resolve_group(group) -> ProcessGroup:
    """The group a collective runs on: `group`, or the default one for None."""
    if group is None:
        return _default()
    if not isinstance(group, ProcessGroup):
        raise ArgumentError(f"group should be a ProcessGroup or None, got {type(group).__name__}")
    return group


_ring_id = comm.ring_id


def destroy_process_group(group=None) -> None:
    """Forget `group` (None: every group, the default one included)."""
    if group is None:
        comm.remove_groups()
    else:
        comm.remove_groups(_ring_id(resolve_group(group)))


def get_rank(group=None) -> int:
    """This process's rank in `group` (-1 outside it)."""
    return resolve_group(group).rank()


def get_world_size(group=None) -> int:
    return resolve_group(group).size()


def get_backend(group=None) -> str:
    resolve_group(group)
    return "mpi"


def new_group(
    ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False
):
    """A group of the given global ranks (all: None). Every process of the default group must
    call it, in the same order; a process outside `ranks` gets a group it is no member of."""
    world = _default()
    members = sorted(set(world.ranks if ranks is None else (operator.index(r) for r in ranks)))
    if not members or members[0] < 0 or members[-1] >= world.size():
        raise DistributedError(f"new_group: ranks {ranks} are not ranks of {world.size()}")
    MPI = comm.mpi()
    sub = world.comm.Create_group(world.comm.Get_group().Incl(members))
    made = ProcessGroup(None if sub == MPI.COMM_NULL else _returning_errors(sub), tuple(members))
    comm.add_group(made)
    return made


def get_process_group_ranks(group) -> list[int]:
    return list(resolve_group(group).ranks)


def get_global_rank(group, group_rank: int) -> int:
    return resolve_group(group).ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    ranks = resolve_group(group).ranks
    if global_rank not in ranks:
        raise DistributedError(f"global rank {global_rank} is not part of the group {ranks}")
    return ranks.index(global_rank)


def barrier(group=None, async_op=False, device_ids=None):
    comm.member(resolve_group(group)).comm.Barrier()
    return Work() if async_op else None


# ----------------------------------------------------------------------- collectives


def _op(op) -> str:
    name = op.value if isinstance(op, ReduceOp) else op
    if name not in comm.REDUCE_OPS:
        raise DistributedError(f"unknown reduce op {op!r}; expected a dist.ReduceOp")
    return name


def _done(async_op: bool):
    return Work() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor = the reduction of every rank's tensor, on every rank (in place)."""
    g = comm.member(resolve_group(group))
    with no_grad():
        collective.allreduce_(tensor, reduce_op=_op(op), ring_id=_ring_id(g))
    return _done(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """tensor = rank src's tensor, on every rank (in place)."""
    g = comm.member(resolve_group(group))
    with no_grad():
        collective.broadcast_(tensor, src=get_group_rank(g, src), ring_id=_ring_id(g))
    return _done(async_op)


def average_gradients(pairs, group=None) -> list:
    """Graph mode, static API: append_backward's (param, grad) pairs with every grad averaged
    over the group's ranks by an allreduce op (Paddle's data-parallel gradient ops)."""
    ring = _ring_id(comm.member(resolve_group(group)))
    return [(p, collective.allreduce(g, reduce_op="avg", ring_id=ring)) for p, g in pairs]


def _array(t, what="tensor") -> np.ndarray:
    """A collective's buffer: the eager CPU tensor's own array when MPI can use it."""
    if type(t) is not Tensor:
        if hasattr(t, "block"):  # a graph Var
            raise UnsupportedError(
                f"{what}: graph mode runs all_reduce and broadcast only; call this eagerly"
            )
        raise ArgumentError(f"{what} should be an nbflow CPU Tensor, got {type(t).__name__}")
    return np.ascontiguousarray(t._data)


def _write(t, values) -> None:
    """Write a collective's result into tensor t, as an in-place op does."""
    if not t._data.flags.writeable:
        raise DistributedError("the tensor to receive the result is read-only")
    np.copyto(t._data, np.asarray(values).reshape(t._data.shape), casting="unsafe")
    version_counter(t)[0] += 1


def _check_list(tensors, n, like, what) -> list:
    tensors = list(tensors)
    if len(tensors) != n:
        raise DistributedError(f"{what} should hold {n} tensors (one per rank), got {len(tensors)}")
    for t in tensors:
        a = _array(t, what)
        if a.shape != like.shape or a.dtype != like.dtype:
            raise DistributedError(
                f"{what}: a tensor of {a.shape} {a.dtype}, expected {like.shape} {like.dtype}"
            )
    return tensors


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank dst's tensor = the reduction of every rank's; the others' are left as they are."""
    g = comm.member(resolve_group(group))
    name, root = _op(op), get_group_rank(g, dst)
    a = _array(tensor)
    comm.check_reduce(name, a.dtype)
    comm.agree(g, "reduce", name, root, a.shape, str(a.dtype))
    out = np.empty_like(a)
    g.comm.Reduce(a, out, op=comm.mpi_op(name), root=root)
    if g.rank() == root:
        _write(tensor, out / g.size() if name == "avg" else out)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] = rank i's tensor, on every rank."""
    g = comm.member(resolve_group(group))
    a = _array(tensor)
    tensor_list = _check_list(tensor_list, g.size(), a, "tensor_list")
    comm.agree(g, "all_gather", a.shape, str(a.dtype))
    out = np.empty((g.size(), *a.shape), a.dtype)
    g.comm.Allgather(a, out)
    for t, part in zip(tensor_list, out):
        _write(t, part)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor = the ranks' input tensors concatenated along dim 0 (or stacked: an
    output of shape (world_size, *input.shape))."""
    g = comm.member(resolve_group(group))
    a, out = _array(input_tensor), _array(output_tensor, "output_tensor")
    if out.size != a.size * g.size() or out.dtype != a.dtype:
        raise DistributedError(
            f"output_tensor of {out.shape} {out.dtype} cannot hold {g.size()} inputs of "
            f"{a.shape} {a.dtype}"
        )
    comm.agree(g, "all_gather_into_tensor", a.shape, str(a.dtype))
    gathered = np.empty(out.size, a.dtype)
    g.comm.Allgather(a, gathered)
    _write(output_tensor, gathered)
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output = rank r's share (the r-th of world_size equal parts along dim 0) of the
    reduction of every rank's input."""
    g = comm.member(resolve_group(group))
    a, out = _array(input, "input"), _array(output, "output")
    name = _op(op)
    comm.check_reduce(name, a.dtype)
    if a.size != out.size * g.size() or out.dtype != a.dtype:
        raise DistributedError(
            f"input of {a.shape} does not split into {g.size()} outputs of {out.shape}"
        )
    comm.agree(g, "reduce_scatter_tensor", name, a.shape, str(a.dtype))
    part = np.empty(out.size, a.dtype)
    g.comm.Reduce_scatter_block(a.reshape(-1), part, op=comm.mpi_op(name))
    _write(output, part / g.size() if name == "avg" else part)
    return _done(async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """On rank dst, gather_list[i] = rank i's tensor (the other ranks pass no list)."""
    g = comm.member(resolve_group(group))
    root, a = get_group_rank(g, dst), _array(tensor)
    out = None
    if g.rank() == root:
        if gather_list is None:
            raise DistributedError("gather: the destination rank needs a gather_list")
        gather_list = _check_list(gather_list, g.size(), a, "gather_list")
        out = np.empty((g.size(), *a.shape), a.dtype)
    comm.agree(g, "gather", root, a.shape, str(a.dtype))
    g.comm.Gather(a, out, root=root)
    if out is not None:
        for t, part in zip(gather_list, out):
            _write(t, part)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """tensor = scatter_list[r] of rank src, on each rank r."""
    g = comm.member(resolve_group(group))
    root, a = get_group_rank(g, src), _array(tensor)
    parts = None
    if g.rank() == root:
        if scatter_list is None:
            raise DistributedError("scatter: the source rank needs a scatter_list")
        scatter_list = _check_list(scatter_list, g.size(), a, "scatter_list")
        parts = np.stack([_array(t) for t in scatter_list])
    comm.agree(g, "scatter", root, a.shape, str(a.dtype))
    out = np.empty_like(a)
    g.comm.Scatter(parts, out, root=root)
    _write(tensor, out)
    return _done(async_op)


def send(tensor, dst, group=None, tag=0) -> None:
    g = comm.member(resolve_group(group))
    g.comm.Send(_array(tensor), dest=get_group_rank(g, dst), tag=tag)


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into tensor from global rank src (None: any); returns the sender's rank."""
    g = comm.member(resolve_group(group))
    MPI = comm.mpi()
    source = MPI.ANY_SOURCE if src is None else get_group_rank(g, src)
    out, status = np.empty_like(_array(tensor)), MPI.Status()
    g.comm.Recv(out, source=source, tag=tag, status=status)
    _write(tensor, out)
    return g.ranks[status.Get_source()]


def isend(tensor, dst, group=None, tag=0) -> Work:
    """Start sending tensor to global rank dst; the Work's wait() returns once it is sent
    (do not write to the tensor before)."""
    g = comm.member(resolve_group(group))
    return Work(g.comm.Isend(_array(tensor), dest=get_group_rank(g, dst), tag=tag))


def irecv(tensor, src=None, group=None, tag=0) -> Work:
    """Start receiving into tensor from global rank src (None: any); it holds the message
    after the Work's wait()."""
    g = comm.member(resolve_group(group))
    MPI = comm.mpi()
    source = MPI.ANY_SOURCE if src is None else get_group_rank(g, src)
    out = np.empty_like(_array(tensor))
    return Work(g.comm.Irecv(out, source=source, tag=tag), lambda: _write(tensor, out))


def all_to_all_single(
    output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False
):
    """Rank r sends the r-th part of its input (along dim 0; input_split_sizes rows each, or
    equal parts) to every rank and receives every rank's part for it into output, in rank
    order (output_split_sizes rows from each)."""
    g = comm.member(resolve_group(group))
    a, out = _array(input, "input"), _array(output, "output")
    n = g.size()
    row = math.prod(a.shape[1:]) if a.ndim else 1
    sends = _splits(input_split_sizes, a.shape[0] if a.ndim else 0, n, "input") * row
    receives = _splits(output_split_sizes, out.shape[0] if out.ndim else 0, n, "output") * row
    if out.dtype != a.dtype or out.shape[1:] != a.shape[1:]:
        raise DistributedError(f"output {out.shape} {out.dtype} for input {a.shape} {a.dtype}")
    comm.agree(g, "all_to_all_single", a.shape[1:], str(a.dtype))
    got = np.empty(out.size, a.dtype)
    g.comm.Alltoallv(
        [a.reshape(-1), (sends, _offsets(sends))], [got, (receives, _offsets(receives))]
    )
    _write(output, got)
    return _done(async_op)


def _splits(sizes, rows: int, n: int, what: str) -> np.ndarray:
    """Rows per rank: the given split sizes, or equal parts of `rows`."""
    if sizes is None:
        if rows % n:
            raise DistributedError(f"{what} of {rows} rows does not split into {n} equal parts")
        return np.full(n, rows // n, np.int64)
    sizes = np.asarray(list(sizes), np.int64)
    if len(sizes) != n or sizes.sum() != rows or (sizes < 0).any():
        raise DistributedError(f"{what}_split_sizes {sizes.tolist()} for {rows} rows, {n} ranks")
    return sizes


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)


def gather_object(obj, object_gather_list=None, dst=0, group=None) -> None:
    """On rank dst, object_gather_list[i] = rank i's obj (picklable)."""
    g = comm.member(resolve_group(group))
    root = get_group_rank(g, dst)
    gathered = g.comm.gather(obj, root=root)
    if g.rank() == root:
        if object_gather_list is None or len(object_gather_list) != g.size():
            raise DistributedError(f"gather_object: dst needs a list of {g.size()} entries")
        object_gather_list[:] = gathered


def scatter_object_list(
    scatter_object_output_list, scatter_object_input_list=None, src=0, group=None
) -> None:
    """scatter_object_output_list[0] = rank src's scatter_object_input_list[r], on rank r."""
    g = comm.member(resolve_group(group))
    root = get_group_rank(g, src)
    items = None
    if g.rank() == root:
        items = list(scatter_object_input_list or ())
        if len(items) != g.size():
            raise DistributedError(f"scatter_object_list: src needs {g.size()} objects")
    scatter_object_output_list[0] = g.comm.scatter(items, root=root)


def broadcast_object_list(object_list, src=0, group=None, device=None) -> None:
    """object_list[:] = rank src's list (picklable objects; from processes of one job)."""
    g = comm.member(resolve_group(group))
    object_list[:] = g.comm.bcast(list(object_list), root=get_group_rank(g, src))


def all_gather_object(object_list, obj, group=None) -> None:
    """object_list[i] = rank i's obj, on every rank (object_list has world_size entries)."""
    g = comm.member(resolve_group(group))
    if len(object_list) != g.size():
        raise DistributedError(f"object_list should have {g.size()} entries")
    object_list[:] = g.comm.allgather(obj)


def __getattr__(name):
    """nbflow.distributed.optim (ZeroRedundancyOptimizer) on first use."""
    if name == "optim":
        import importlib

        return importlib.import_module(f"{__name__}.optim")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
