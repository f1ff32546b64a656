"""One rank of tests/test_distributed.py, started by `mpiexec -n 2 python THIS OUT_DIR`.

Each rank runs every case and writes what it saw to OUT_DIR/rank<r>.npz (arrays) and
OUT_DIR/rank<r>.json (error messages); the test process compares them with references it
computes itself, in one process, without MPI. The data and the models come from
distributed_shared.py, which the test imports too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import nbflow as nb
import nbflow.distributed as dist
from nbflow import nn
from nbflow.distributed.optim import ZeroRedundancyOptimizer
from nbflow.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).parent))
from distributed_shared import (
    STEPS,
    Branchy,
    batch,
    collective_input,
    make_bn_model,
    make_model,
    static_train,
    train,
)

DTYPES = ("float32", "float64")


def collectives(rank, size, out):
    x = collective_input(rank)
    for op in ("sum", "avg", "product", "min", "max"):
        t = nb.tensor(x)
        dist.all_reduce(t, op=dist.ReduceOp(op))
        out[f"all_reduce_{op}"] = t.numpy()
    t = nb.tensor(np.arange(4) * (rank + 1))
    dist.all_reduce(t, op=dist.ReduceOp.BXOR)
    out["all_reduce_bxor"] = t.numpy()
    t = nb.tensor(x)
    dist.broadcast(t, src=1)
    out["broadcast"] = t.numpy()
    t = nb.tensor(x)
    dist.reduce(t, dst=1, op=dist.ReduceOp.MAX)
    out["reduce"] = t.numpy()
    parts = [nb.zeros(x.shape, dtype=x.dtype) for _ in range(size)]
    dist.all_gather(parts, nb.tensor(x))
    out["all_gather"] = np.stack([p.numpy() for p in parts])
    whole = nb.zeros((size * x.shape[0], x.shape[1]), dtype=x.dtype)
    dist.all_gather_into_tensor(whole, nb.tensor(x))
    out["all_gather_into_tensor"] = whole.numpy()
    share = nb.zeros((x.shape[0] // size, x.shape[1]), dtype=x.dtype)
    dist.reduce_scatter_tensor(share, nb.tensor(x))
    out["reduce_scatter_tensor"] = share.numpy()
    got = [nb.zeros(x.shape, dtype=x.dtype) for _ in range(size)] if rank == 0 else None
    dist.gather(nb.tensor(x), got, dst=0)
    if rank == 0:
        out["gather"] = np.stack([g.numpy() for g in got])
    t = nb.zeros(x.shape, dtype=x.dtype)
    dist.scatter(
        t, [nb.tensor(collective_input(10 + r)) for r in range(size)] if rank == 1 else None, src=1
    )
    out["scatter"] = t.numpy()
    t = nb.tensor(x)
    if rank == 0:
        dist.send(t, dst=1)
    else:
        out["recv_from"] = np.array(dist.recv(t, src=0))
        out["recv"] = t.numpy()
    t = nb.tensor(x)
    if rank == 0:
        work = dist.isend(t, dst=1)
    else:
        t = nb.zeros(x.shape, dtype=x.dtype)
        work = dist.irecv(t, src=0)
    work.wait()
    assert work.is_completed()
    out["irecv"] = t.numpy()
    both = nb.zeros(x.shape, dtype=x.dtype)
    dist.all_to_all_single(both, nb.tensor(x))
    out["all_to_all_single"] = both.numpy()
    sends, receives = ((1, 3), (2, 2))[rank], ((1, 2), (3, 2))[rank]
    uneven = nb.zeros((sum(receives), 3), dtype=x.dtype)
    dist.all_to_all_single(uneven, nb.tensor(x), receives, sends)
    out["all_to_all_uneven"] = uneven.numpy()
    gathered = [None] * size if rank == 1 else None
    dist.gather_object(("from", rank), gathered, dst=1)
    if rank == 1:
        out["gather_object"] = np.array([g[1] for g in gathered])
    received = [None]
    dist.scatter_object_list(received, [{"to": r} for r in range(size)] if rank == 0 else None)
    out["scatter_object"] = np.array(received[0]["to"])
    objects = [None] * size
    dist.all_gather_object(objects, {"rank": rank})
    out["all_gather_object"] = np.array([o["rank"] for o in objects])
    one = dist.new_group([1])
    out["subgroup_rank"] = np.array(dist.get_rank(one))
    if rank == 1:
        t = nb.tensor(x)
        dist.all_reduce(t, group=one)  # a group of one: unchanged
        out["subgroup_all_reduce"] = t.numpy()

    @nb.jit
    def traced(v):
        y = v * 2.0
        dist.all_reduce(y)
        return y

    out["jit_all_reduce"] = traced(nb.tensor(x)).numpy()
    v = nb.tensor(x, requires_grad=True)
    (nb.ops.collective.allreduce(v * v).sum()).backward()
    out["allreduce_grad"] = v.grad.numpy()


def training(rank, out):
    """DDP training, eager and graph, of the MLP and of one with SyncBatchNorm."""
    for mode in ("eager", "graph"):
        model = train(DDP(make_model(seed=rank)), lambda step: batch(step, rank), mode == "graph")
        for name, p in model.module.named_parameters():
            out[f"{mode}.{name}"] = p.numpy()
        model = DDP(make_bn_model(seed=rank, sync=True))
        train(model, lambda step: batch(step, rank), mode == "graph")
        for name, t in model.state_dict().items():  # PyTorch's keys: module.<name>
            out[f"{mode}_bn.{name}"] = t.numpy()
    for name, value in static_train(lambda step: batch(step, rank), average=True).items():
        out[f"static.{name}"] = value
    forward = nb.compile(DDP(make_model(seed=rank)))  # a traced forward, an eager backward
    train(forward, lambda step: batch(step, rank))
    for name, p in forward._orig_mod.module.named_parameters():
        out[f"jit_forward.{name}"] = p.numpy()


def zero_redundancy(rank, out):
    """DDP with ZeroRedundancyOptimizer(Adam) against DDP with Adam, then a consolidated
    state loaded into a fresh ZeRO to continue."""
    plain, sharded = DDP(make_model(seed=0)), DDP(make_model(seed=0))
    adam = nb.optim.Adam(plain.parameters(), lr=0.05)
    zero = ZeroRedundancyOptimizer(sharded.parameters(), nb.optim.Adam, lr=0.05)

    def step(model, optimizer, step):
        x, y = batch(step, rank)
        optimizer.zero_grad()
        nb.cross_entropy(model(nb.tensor(x)), nb.tensor(y)).backward()
        optimizer.step()

    for i in range(STEPS):
        step(plain, adam, i)
        step(sharded, zero, i)
    for name, p in sharded.module.named_parameters():
        out[f"zero.{name}"] = p.numpy().copy()
        out[f"zero_plain.{name}"] = dict(plain.module.named_parameters())[name].numpy().copy()
    out["zero.local_states"] = np.array(len(zero.optim.state))
    zero.consolidate_state_dict(to=0)
    saved = [zero.state_dict() if rank == 0 else None]
    dist.broadcast_object_list(saved, src=0)
    resumed = DDP(make_model(seed=1))
    resumed.module.load_state_dict(sharded.module.state_dict())
    again = ZeroRedundancyOptimizer(resumed.parameters(), nb.optim.Adam, lr=0.05)
    again.load_state_dict(saved[0])
    step(plain, adam, STEPS)
    step(resumed, again, STEPS)
    for name, p in resumed.module.named_parameters():
        out[f"zero_resumed.{name}"] = p.numpy()
        out[f"zero_resumed_plain.{name}"] = dict(plain.module.named_parameters())[name].numpy()


def accumulate(rank, out):
    """Two micro-batches per rank: the first under no_sync, the second reduces the sum."""
    model = DDP(make_model(seed=rank))
    x, y = batch(0, rank)
    with model.no_sync():
        nb.cross_entropy(model(nb.tensor(x[:2])), nb.tensor(y[:2])).backward()
    out["no_sync_local"] = model.module[0].weight.grad.numpy().copy()
    nb.cross_entropy(model(nb.tensor(x[2:])), nb.tensor(y[2:])).backward()
    for name, p in model.module.named_parameters():
        out[f"accumulated.{name}"] = p.grad.numpy()


def unused(rank, out, errors):
    x, y = batch(0, rank)
    model = DDP(Branchy(), find_unused_parameters=True)
    nb.cross_entropy(model(nb.tensor(x), rank == 0), nb.tensor(y)).backward()
    out["unused.head.weight"] = model.module.head.weight.grad.numpy()
    out["unused.trunk.0.weight"] = model.module.trunk[0].weight.grad.numpy()
    strict = DDP(Branchy())
    try:
        nb.cross_entropy(strict(nb.tensor(x), rank == 0), nb.tensor(y)).backward()
    except nb.DistributedError as e:
        errors["unused_strict"] = str(e)
    try:
        DDP(nn.Linear(3 + rank, 2))
    except nb.DistributedError as e:
        errors["mismatch"] = str(e)
    for name, call in (
        ("all_reduce_shapes", lambda: dist.all_reduce(nb.ones(3 + rank))),
        ("broadcast_dtypes", lambda: dist.broadcast(nb.ones(3, dtype=DTYPES[rank]), src=0)),
        ("all_reduce_ops", lambda: dist.all_reduce(nb.ones(3), op=("sum", "max")[rank])),
    ):
        try:
            call()
        except nb.DistributedError as e:
            errors[name] = str(e)


def main():
    out_dir = Path(sys.argv[1])
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    out, errors = {}, {}
    collectives(rank, size, out)
    training(rank, out)
    zero_redundancy(rank, out)
    accumulate(rank, out)
    unused(rank, out, errors)
    dist.barrier()
    dist.destroy_process_group()
    np.savez(out_dir / f"rank{rank}.npz", **out)
    (out_dir / f"rank{rank}.json").write_text(json.dumps(errors))


if __name__ == "__main__":
    main()
