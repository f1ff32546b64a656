"""nbflow.distributed and DistributedDataParallel over real MPI: two ranks started by mpiexec
(tests/distributed_worker.py) write what they computed; the references here are numpy's
reductions of both ranks' inputs and one-process training on the whole batch (what averaging
two half-batch gradients must equal). The single-process checks (errors, a world of one) run
in this process without starting MPI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbflow as nb
import nbflow.distributed as dist
from nbflow.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).parent))
from distributed_shared import (
    BATCH,
    RANKS,
    Branchy,
    batch,
    collective_input,
    full_batch,
    make_bn_model,
    make_model,
    static_train,
    train,
)

pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is not installed")


def _mpiexec() -> str:
    """The mpiexec beside this Python (the mpich wheel's), else one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    assert found, "mpi4py is installed but there is no mpiexec (pip install mpich)"
    return found


def _run_ranks(script: Path, *args) -> str:
    """Run script on RANKS MPI ranks (one thread each: 2 cores); its output."""
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    command = [_mpiexec(), "-n", str(RANKS), sys.executable, str(script), *map(str, args)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """[(arrays, errors)] of each rank, from one mpiexec run of the worker."""
    out = tmp_path_factory.mktemp("ranks")
    _run_ranks(Path(__file__).with_name("distributed_worker.py"), out)
    return [
        (dict(np.load(out / f"rank{r}.npz")), json.loads((out / f"rank{r}.json").read_text()))
        for r in range(RANKS)
    ]


def test_reductions_equal_numpys(ranks):
    x = [collective_input(r) for r in range(RANKS)]
    expected = {
        "sum": x[0] + x[1],
        "avg": (x[0] + x[1]) / 2,
        "product": x[0] * x[1],
        "min": np.minimum(x[0], x[1]),
        "max": np.maximum(x[0], x[1]),
    }
    for got, _ in ranks:
        for op, want in expected.items():
            np.testing.assert_allclose(got[f"all_reduce_{op}"], want, rtol=1e-15, err_msg=op)
        np.testing.assert_array_equal(got["all_reduce_bxor"], np.arange(4) ^ (np.arange(4) * 2))
        np.testing.assert_array_equal(got["broadcast"], x[1])
        np.testing.assert_array_equal(got["all_gather"], np.stack(x))
        np.testing.assert_array_equal(got["all_gather_into_tensor"], np.concatenate(x))
        np.testing.assert_allclose(got["jit_all_reduce"], 2 * (x[0] + x[1]), rtol=1e-15)
    np.testing.assert_array_equal(ranks[1][0]["reduce"], np.maximum(x[0], x[1]))
    np.testing.assert_array_equal(ranks[0][0]["reduce"], x[0])  # not the destination
    for r, (got, _) in enumerate(ranks):
        np.testing.assert_allclose(got["reduce_scatter_tensor"], (x[0] + x[1])[2 * r : 2 * r + 2])


def test_point_to_point_gather_scatter_and_objects(ranks):
    x = [collective_input(r) for r in range(RANKS)]
    (r0, _), (r1, _) = ranks
    np.testing.assert_array_equal(r0["gather"], np.stack(x))
    assert "gather" not in r1
    for r, (got, _) in enumerate(ranks):
        np.testing.assert_array_equal(got["scatter"], collective_input(10 + r))
        np.testing.assert_array_equal(got["all_gather_object"], [0, 1])
    np.testing.assert_array_equal(r1["recv"], x[0])
    assert int(r1["recv_from"]) == 0
    assert int(r0["subgroup_rank"]) == -1 and int(r1["subgroup_rank"]) == 0
    np.testing.assert_array_equal(r1["subgroup_all_reduce"], x[1])


def test_nonblocking_and_all_to_all(ranks):
    x = [collective_input(r) for r in range(RANKS)]
    (r0, _), (r1, _) = ranks
    np.testing.assert_array_equal(r1["irecv"], x[0])
    for r, (got, _) in enumerate(ranks):
        # rank r gets the r-th half of every rank's rows, in rank order
        want = np.concatenate([x[0][2 * r : 2 * r + 2], x[1][2 * r : 2 * r + 2]])
        np.testing.assert_array_equal(got["all_to_all_single"], want)
        np.testing.assert_array_equal(got["scatter_object"], r)
    # rank 0 sends rows [0:1] to itself and [1:4] to rank 1; rank 1 sends [0:2] and [2:4]
    np.testing.assert_array_equal(r0["all_to_all_uneven"], np.concatenate([x[0][:1], x[1][:2]]))
    np.testing.assert_array_equal(r1["all_to_all_uneven"], np.concatenate([x[0][1:], x[1][2:]]))
    np.testing.assert_array_equal(r1["gather_object"], [0, 1])
    assert "gather_object" not in r0


def test_allreduce_gradient_sums_every_ranks_loss(ranks):
    # each rank's loss is sum(allreduce(v * v)) = sum over ranks s of v_s^2; the losses add
    # up over the ranks, so d/dv_r = RANKS * 2 v_r
    for r, (got, _) in enumerate(ranks):
        np.testing.assert_allclose(got["allreduce_grad"], RANKS * 2 * collective_input(r))


@pytest.mark.parametrize("mode", ["eager", "graph", "jit_forward"])
def test_ddp_training_equals_whole_batch_training(ranks, mode):
    reference = train(make_model(seed=0), full_batch)  # rank 0's initial parameters
    for name, p in reference.named_parameters():
        for got, _ in ranks:
            np.testing.assert_allclose(got[f"{mode}.{name}"], p.numpy(), rtol=1e-10, atol=1e-12)
        # the ranks hold one model: bit-identical parameters
        np.testing.assert_array_equal(ranks[0][0][f"{mode}.{name}"], ranks[1][0][f"{mode}.{name}"])


def test_static_program_with_averaged_gradients_equals_whole_batch_training(ranks):
    reference = static_train(full_batch, average=False)
    for got, _ in ranks:
        for name, value in reference.items():
            np.testing.assert_allclose(got[f"static.{name}"], value, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_sync_batch_norm_equals_batch_norm_of_the_whole_batch(ranks, mode):
    # statistics over both ranks' rows and gradients through them: BatchNorm1d on the
    # whole batch, parameters and running statistics alike
    reference = train(make_bn_model(seed=0, sync=False), full_batch)
    for name, t in reference.state_dict().items():
        for got, _ in ranks:
            want = t.numpy()
            got_t = got[f"{mode}_bn.module.{name}"]  # (DDP's state_dict: PyTorch's keys)
            np.testing.assert_allclose(got_t, want, rtol=1e-9, atol=1e-12)


def test_zero_redundancy_optimizer_shards_the_state_and_matches_adam(ranks):
    names = [n for n, _ in make_model(seed=0).named_parameters()]
    for got, _ in ranks:
        for name in names:
            for prefix in ("zero", "zero_resumed"):
                np.testing.assert_allclose(
                    got[f"{prefix}.{name}"], got[f"{prefix}_plain.{name}"], rtol=1e-12, atol=1e-14
                )
    # each rank holds the Adam state of its own parameters only; sorted-greedy by size deals
    # the 35-element weight to rank 0 and the 21-, 7- and 3-element ones to rank 1
    assert [int(got["zero.local_states"]) for got, _ in ranks] == [1, 3]


def _grads(model, loss):
    model.zero_grad()
    loss.backward()
    return {
        n: np.zeros(p.shape) if p.grad is None else p.grad.numpy().copy()
        for n, p in model.named_parameters()
    }


def test_no_sync_accumulation(ranks):
    model = make_model(seed=0)
    per_rank, first = [], []
    for r in range(RANKS):
        x, y = batch(0, r)
        first.append(_grads(model, nb.cross_entropy(model(nb.tensor(x[:2])), nb.tensor(y[:2]))))
        loss = nb.cross_entropy(model(nb.tensor(x[:2])), nb.tensor(y[:2]))
        loss = loss + nb.cross_entropy(model(nb.tensor(x[2:])), nb.tensor(y[2:]))
        per_rank.append(_grads(model, loss))
    for r, (got, _) in enumerate(ranks):
        # inside no_sync nothing is reduced: each rank keeps its own micro-batch's gradient
        np.testing.assert_allclose(got["no_sync_local"], first[r]["0.weight"], rtol=1e-12)
        for name in per_rank[0]:
            want = (per_rank[0][name] + per_rank[1][name]) / RANKS
            np.testing.assert_allclose(got[f"accumulated.{name}"], want, rtol=1e-12, atol=1e-15)


def test_unused_parameters(ranks):
    grads = []
    for r in range(RANKS):
        model = Branchy()
        x, y = batch(0, r)
        g = _grads(model, nb.cross_entropy(model(nb.tensor(x), r == 0), nb.tensor(y)))
        grads.append(g)
    for got, errors in ranks:
        # the head is used on rank 0 only: rank 1 contributes zeros to the average
        np.testing.assert_allclose(got["unused.head.weight"], grads[0]["head.weight"] / RANKS)
        want = (grads[0]["trunk.0.weight"] + grads[1]["trunk.0.weight"]) / RANKS
        np.testing.assert_allclose(got["unused.trunk.0.weight"], want, rtol=1e-12)
        # without find_unused_parameters every rank refuses alike (none waits forever)
        assert "head.weight" in errors["unused_strict"], errors
        assert "find_unused_parameters=True" in errors["unused_strict"]
        assert "differs" in errors["mismatch"]


def test_ranks_calling_different_collectives_are_refused_alike(ranks):
    # MPI itself would abort one rank and hand the other a silently wrong result
    for _, errors in ranks:
        assert "(3,)" in errors["all_reduce_shapes"] and "(4,)" in errors["all_reduce_shapes"]
        assert "different" in errors["broadcast_dtypes"]
        assert "'sum'" in errors["all_reduce_ops"] and "'max'" in errors["all_reduce_ops"]


def test_data_parallel_example_learns_the_digits():
    # the script itself fails unless every rank ends with the same parameters
    example = Path(__file__).parent.parent / "examples" / "train_digits_ddp.py"
    printed = _run_ranks(example, "--epochs", 6, "--no-progress")
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", printed).group(1))
    assert accuracy >= 0.95, printed
    assert f"{RANKS} ranks" in printed


# ------------------------------------------------------------- one process, no MPI started


def test_uninitialized_and_unknown_backends_are_refused():
    assert not dist.is_initialized()
    with pytest.raises(nb.DistributedError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(nb.DistributedError, match="init_process_group"):
        dist.all_reduce(nb.ones(2))
    with pytest.raises(nb.DistributedError, match="init_process_group"):
        DDP(make_model(seed=0))
    with pytest.raises(nb.DistributedError, match="MPI"):
        dist.init_process_group("nccl")
    assert isinstance(nb.DistributedError("x"), RuntimeError)


def test_collective_ops_in_a_world_of_one_process():
    # before init_process_group the ops compute what one rank would: their input
    x = nb.tensor([1.0, -2.0], requires_grad=True)
    y = nb.ops.collective.allreduce(x * 3.0, reduce_op="avg")
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), [3.0, -6.0])
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(nb.DTypeError, match="avg"):
        nb.ops.collective.allreduce(nb.tensor([1, 2]), reduce_op="avg")
    with pytest.raises(nb.DTypeError, match="integer"):
        nb.ops.collective.allreduce(nb.tensor([1.0]), reduce_op="bxor")
    with pytest.raises(nb.GradientError, match="max"):
        v = nb.tensor([1.0], requires_grad=True)
        nb.ops.collective.allreduce(v, reduce_op="max").sum().backward()
    with pytest.raises(nb.DistributedError, match="ring id 7"):
        nb.ops.collective.allreduce(nb.ones(1), ring_id=7)


def test_ddp_sums_batches_of_ranks_like_one_batch():
    # the reference's premise: the mean of the ranks' half-batch gradients is the whole
    # batch's gradient (equal halves), checked on the reference itself
    model = make_model(seed=0)
    x, y = full_batch(0)
    whole = _grads(model, nb.cross_entropy(model(nb.tensor(x)), nb.tensor(y)))
    halves = [
        _grads(model, nb.cross_entropy(model(nb.tensor(xb)), nb.tensor(yb)))
        for xb, yb in (batch(0, r) for r in range(RANKS))
    ]
    assert x.shape[0] == RANKS * BATCH
    for name, g in whole.items():
        np.testing.assert_allclose((halves[0][name] + halves[1][name]) / 2, g, rtol=1e-12)
