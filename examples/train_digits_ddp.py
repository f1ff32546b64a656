"""Data-parallel training over MPI: the main job's CNN on the 8x8 digits, one rank each.

    pip install -e ".[examples]" && mpiexec -n 2 python examples/train_digits_ddp.py

Each rank trains on its own share of every epoch (DistributedSampler) with a batch of 32, so
the two ranks together take the main job's batches of 64. DistributedDataParallel starts every
rank from rank 0's parameters and averages the gradients: the traced training step
(@nbflow.jit, backward and Adam in one Program) holds one allreduce op per gradient, and the
ranks take identical steps. Rank 0 reports the test accuracy; every rank checks that all of
them ended with the same parameters.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
from tqdm import tqdm
from train_digits_cnn import make_model

import nbflow as nb
import nbflow.distributed as dist
from nbflow.data import DataLoader, DistributedSampler, load_digits
from nbflow.nn.parallel import DistributedDataParallel


def digest(model) -> str:
    """A hash of the parameters: equal on every rank, or the ranks diverged."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.numpy().tobytes())
    return h.hexdigest()


def train(epochs=15, batch=32, lr=0.01, seed=0, progress=True):
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    nb.manual_seed(seed)
    train_set = load_digits("train", seed=seed, image=True)
    test_set = load_digits("test", seed=seed, image=True)
    # each rank initialises its own way; DDP makes them all rank 0's
    model = DistributedDataParallel(make_model(nb.Generator(seed + rank)))
    optimizer = nb.optim.Adam(model.parameters(), lr=lr)

    @nb.jit
    def train_step(x, y):
        loss = nb.cross_entropy(model(x), y)
        optimizer.minimize(loss)  # backward, the gradients' allreduce and the updates
        return loss

    sampler = DistributedSampler(train_set, shuffle=True, seed=seed)
    loader = DataLoader(train_set, batch_size=batch, sampler=sampler, drop_last=True)
    start = time.perf_counter()
    with nb.no_grad():
        for epoch in range(epochs):
            sampler.set_epoch(epoch)  # a new order each epoch, the same on every rank
            show = progress and rank == 0
            bar = tqdm(loader, desc=f"epoch {epoch + 1:2d}/{epochs}", disable=not show)
            for x, y in bar:
                loss = train_step(x, y)
                bar.set_postfix(loss=f"{loss.item():.4f}")
        seconds = time.perf_counter() - start
        x_test, y_test = test_set.tensors
        predicted = nb.argmax(model.module(x_test), axis=1).numpy()
    digests = [None] * world
    dist.all_gather_object(digests, digest(model))
    if len(set(digests)) != 1:
        raise RuntimeError(f"rank {rank}: the ranks' parameters differ: {digests}")
    accuracy = float(np.mean(predicted == y_test.numpy()))
    if rank == 0:
        print(
            f"test accuracy {accuracy:.3f} ({len(y_test)} digits, {world} ranks, trained in "
            f"{seconds:.1f} s; the ranks hold identical parameters)"
        )
    dist.destroy_process_group()
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    train(epochs=args.epochs, progress=not args.no_progress)
