"""Data and models shared by tests/distributed_worker.py (each rank) and
tests/test_distributed.py (the one-process references)."""

import numpy as np

import nbflow as nb
from nbflow import nn

RANKS = 2
STEPS = 4
BATCH = 4  # rows per rank and step


def make_model(seed: int) -> nn.Module:
    g = nb.Generator(seed)
    return nn.Sequential(
        nn.Linear(5, 7, dtype="float64", generator=g),
        nn.Tanh(),
        nn.Linear(7, 3, dtype="float64", generator=g),
    )


def make_bn_model(seed: int, sync: bool) -> nn.Module:
    g = nb.Generator(seed)
    norm = nn.SyncBatchNorm if sync else nn.BatchNorm1d
    return nn.Sequential(
        nn.Linear(5, 4, dtype="float64", generator=g),
        norm(4, dtype="float64"),
        nn.Tanh(),
        nn.Linear(4, 3, dtype="float64", generator=g),
    )


def train(model, batches, graph=False):
    """STEPS of SGD with momentum on the batches of each step (eager, or one traced step)."""
    optimizer = nb.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)

    @nb.jit
    def traced(x, y):
        optimizer.minimize(nb.cross_entropy(model(x), y))

    for step in range(STEPS):
        x, y = (nb.tensor(a) for a in batches(step))
        if graph:
            with nb.no_grad():
                traced(x, y)
        else:
            optimizer.zero_grad()
            nb.cross_entropy(model(x), y).backward()
            optimizer.step()
    return model


def static_train(batches, average: bool) -> dict:
    """The static API: a Program of the MLP, STEPS plain SGD steps; average: the gradients
    averaged over the ranks (dist.average_gradients). Returns the trained parameters."""
    import nbflow.distributed as dist

    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 5], dtype="float64")
        y = nb.static.data("y", [-1], dtype="int64")
        w = nb.static.create_parameter("w", [5, 3], dtype="float64")
        b = nb.static.create_parameter("b", [3], dtype="float64")
        loss = nb.cross_entropy(nb.tanh(x @ w) + b, y)
        pairs = nb.append_backward(loss)
        for p, g in dist.average_gradients(pairs) if average else pairs:
            nb.sub_(p, g * 0.5)
    exe, scope = nb.Executor(), nb.Scope()
    nb.manual_seed(0)  # the same initial parameters on every rank
    exe.run(startup, scope=scope)
    for step in range(STEPS):
        xs, ys = batches(step)
        exe.run(main, feed={"x": xs, "y": ys}, fetch_list=[loss], scope=scope)
    return {name: np.array(scope[name]) for name in ("w", "b")}


def full_batch(step: int):
    """The step's whole batch: every rank's rows, rank 0's first."""
    rng = np.random.default_rng(100 + step)
    return rng.normal(size=(RANKS * BATCH, 5)), rng.integers(0, 3, RANKS * BATCH)


def batch(step: int, rank: int):
    x, y = full_batch(step)
    return x[rank * BATCH : (rank + 1) * BATCH], y[rank * BATCH : (rank + 1) * BATCH]


def collective_input(rank: int) -> np.ndarray:
    return np.random.default_rng(rank).normal(size=(4, 3))


class Branchy(nn.Module):
    """A trunk every rank uses and a head only rank 0 uses."""

    def __init__(self):
        super().__init__()
        self.trunk = make_model(seed=0)
        self.head = nn.Linear(3, 3, generator=nb.Generator(5), dtype="float64")

    def forward(self, x, use_head):
        h = self.trunk(x)
        return self.head(h) if use_head else h
