"""The collective ops: allreduce and broadcast over a process group (nbflow/runtime/comm.py; the
ring_id attr names it, 0 the default group, as Paddle's c_allreduce_* ops do), with their
in-place forms allreduce_ and broadcast_. broadcast's src is a rank of that group.

As ops they run eagerly and inside Programs (a traced or static training step that reduces
its gradients: DistributedDataParallel under graph mode), in the same order on every rank.
allreduce differentiates: its outputs feed every rank's loss and the losses add up, so the
gradient of each rank's input is the same reduction of the output gradients (sum and avg;
PyTorch's functional collectives). In a world of one process they give their input back,
which is what their references say.
"""

from ..core import Attr, Op, Spec
from ..core import dtypes as dt
from ..core.errors import DistributedError, GradientError
from ..kernels.cuda.loader import not_supported
from ..runtime import comm
from ._define import inplace_variant

# (MPI moves host buffers; a GPU tensor goes to the CPU for its collective)
ON_GPU = not_supported("collectives run on CPU tensors (MPI): call .cpu() first")

RING = {"ring_id": Attr("int", 0)}  # the process group (nbflow/runtime/comm.py); 0: the default


def _allreduce_spec(x, reduce_op, ring_id):
    comm.check_reduce(reduce_op, x.dtype)
    comm.group(ring_id)
    return Spec(x.shape, x.dtype)


def _allreduce_cpu(x, out, reduce_op, ring_id):
    comm.allreduce(comm.group(ring_id), x, out, reduce_op)


allreduce = Op(
    name="allreduce",
    inputs=("x",),
    outputs=("out",),
    spec=_allreduce_spec,
    kernels={"cpu": _allreduce_cpu, "cuda": ON_GPU},
    dtypes=dt.NUMERIC,
    ref=lambda x, reduce_op, ring_id: x.copy(),
    attrs={"reduce_op": Attr("str", "sum", choices=comm.REDUCE_OPS), **RING},
    doc="x reduced elementwise over the ranks of the default process group (every rank "
    "gets the result).",
)


@allreduce.defgrad
def _allreduce_grad(g, out, x, reduce_op, ring_id):
    if reduce_op not in ("sum", "avg"):
        raise GradientError(f"allreduce: no derivative for {reduce_op}, only for sum and avg")
    return (allreduce(g, reduce_op=reduce_op, ring_id=ring_id),)


def _broadcast_spec(x, src, ring_id):
    group = comm.group(ring_id)
    size = 1 if group is None else group.size()
    if not 0 <= src < size:
        raise DistributedError(f"broadcast: src={src} is not a rank of the group's {size}")
    return Spec(x.shape, x.dtype)


def _broadcast_cpu(x, out, src, ring_id):
    comm.broadcast(comm.group(ring_id), x, out, src)


broadcast = Op(
    name="broadcast",
    inputs=("x",),
    outputs=("out",),
    spec=_broadcast_spec,
    kernels={"cpu": _broadcast_cpu, "cuda": ON_GPU},
    dtypes=dt.ALL,
    ref=lambda x, src, ring_id: x.copy(),
    attrs={"src": Attr("int", 0), **RING},
    no_derivative="a broadcast's gradient is a reduce to src, which nbflow does not build",
    doc="The value of x on rank `src` of the default process group, on every rank.",
)

allreduce_ = inplace_variant(allreduce, "allreduce_")
broadcast_ = inplace_variant(broadcast, "broadcast_")

__all__ = ["allreduce", "allreduce_", "broadcast", "broadcast_"]
