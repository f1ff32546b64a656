"""DataLoader with worker processes: the batches num_workers=0 gives, get_worker_info and the
workers' seeds, worker_init_fn, errors raised in a worker, a worker that dies, timeout,
persistent workers, and the option checks. (The datasets are module-level: the workers
import this module to unpickle them.)"""

import os
import time

import numpy as np
import pytest

import nbflow as nb
from nbflow.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info


class Squares(Dataset):
    """Samples as dicts, collated by default_collate (not the fast batch path)."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"x": np.full(2, i * i, np.float32), "i": i}


class Shards(IterableDataset):
    """Each worker yields its share: worker k the items k, k + n, k + 2n, ... of range(12)."""

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 12, step))


class WhoAmI(Dataset):
    """What the worker fetching a sample knows: its id, seed, and a draw from nbflow's
    default generator (seeded with the worker's seed)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return [info.id, info.num_workers, info.seed, float(nb.rand(()).item()), os.getpid()]


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"no sample {i}")
        return i


class Dying(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        os._exit(3)


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(30)


def _set_offset(worker_id):
    Offset.offset = 100 * (worker_id + 1)


class Offset(Dataset):
    offset = 0  # set in each worker by _set_offset

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return Offset.offset + i


def _values(batches):
    return [[np.asarray(b.numpy() if isinstance(b, nb.Tensor) else b) for b in x] for x in batches]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


def test_shuffled_tensor_dataset_gives_the_single_process_batches():
    ds = TensorDataset(np.arange(46, dtype=np.float32).reshape(23, 2), np.arange(23))
    want = _values(DataLoader(ds, 4, shuffle=True, seed=5, drop_last=False))
    got = _values(DataLoader(ds, 4, shuffle=True, seed=5, num_workers=2))
    _same(got, want)
    assert isinstance(next(iter(DataLoader(ds, 4, num_workers=2)))[0], nb.Tensor)


def test_collated_samples_and_unbatched_samples_match_the_single_process_loader():
    for kwargs in ({"batch_size": 3}, {"batch_size": None}, {"batch_sampler": [[3, 1], [0]]}):
        want = list(DataLoader(Squares(), **kwargs))
        got = list(DataLoader(Squares(), num_workers=2, prefetch_factor=1, **kwargs))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g["x"].numpy(), w["x"].numpy())
            np.testing.assert_array_equal(np.asarray(g["i"]), np.asarray(w["i"]))


def test_iterable_dataset_shards_come_round_robin():
    loader = DataLoader(Shards(), batch_size=2, num_workers=2)
    got = [b.numpy().tolist() for b in loader]
    # worker 0 yields 0 2 4 6 8 10, worker 1 yields 1 3 5 7 9 11; batches alternate
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11]]
    assert get_worker_info() is None  # (the main process)


def test_worker_info_seeds_and_draws():
    def run(seed):
        return list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, seed=seed))

    a, b = run(7), run(7)
    assert [r[:4] for r in a] == [r[:4] for r in b]  # seeds and draws repeat with the seed
    assert sorted({r[0] for r in a}) == [0, 1] and all(r[1] == 2 for r in a)
    seeds = {r[0]: r[2] for r in a}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker id
    first = {r[0]: r[3] for r in reversed(a)}  # each worker's first draw
    assert first[0] != first[1]
    assert len({r[4] for r in a}) == 2 and os.getpid() not in {r[4] for r in a}
    c = run(8)
    assert [r[2] for r in c] != [r[2] for r in a]


def test_worker_seeds_leave_the_shuffle_order_alone():
    gen = nb.Generator(3)
    ds = TensorDataset(np.arange(10))
    loader = DataLoader(ds, 5, shuffle=True, generator=gen, num_workers=2)
    got = [b[0].numpy().tolist() for b in loader]
    want = [b[0].numpy().tolist() for b in DataLoader(ds, 5, shuffle=True, seed=3)]
    assert got == want


def test_worker_init_fn_runs_in_each_worker():
    got = [int(b) for b in DataLoader(Offset(), batch_size=None, num_workers=2,
                                      worker_init_fn=_set_offset)]  # fmt: skip
    assert got == [100, 201, 102, 203, 104, 205]  # tasks go to workers 0, 1, 0, ...


def test_an_exception_in_a_worker_is_raised_with_its_type_and_traceback():
    loader = DataLoader(Failing(), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).numpy().tolist() == [0, 1]
    assert next(it).numpy().tolist() == [2, 3]
    with pytest.raises(KeyError, match="(?s)Caught KeyError in DataLoader worker.*no sample 5"):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_a_worker_that_dies_and_a_timeout_are_reported():
    with pytest.raises(RuntimeError, match="exited unexpectedly with exit code 3"):
        list(DataLoader(Dying(), num_workers=1))
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.5))
    assert time.perf_counter() - start < 15


def test_persistent_workers_stay_and_drop_an_abandoned_epoch():
    ds = TensorDataset(np.arange(12))
    loader = DataLoader(ds, 2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    next(it)
    pids = [p.pid for p in loader._workers.processes]
    del it  # abandoned after one batch: its answers still come, and are dropped
    got = [b[0].numpy().tolist() for b in loader]
    assert got == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert [p.pid for p in loader._workers.processes] == pids
    shards = DataLoader(Shards(), batch_size=3, num_workers=2, persistent_workers=True)
    assert [b.numpy().tolist() for b in shards] == [b.numpy().tolist() for b in shards]


def test_workers_stop_at_the_end_of_an_epoch():
    loader = DataLoader(TensorDataset(np.arange(4)), 2, num_workers=2)
    it = iter(loader)
    processes = list(it.workers.processes)
    list(it)
    assert all(p.exitcode == 0 for p in processes)


def test_what_cannot_be_pickled_is_refused_clearly():
    loader = DataLoader(Squares(), 2, num_workers=1, collate_fn=lambda batch: batch)
    with pytest.raises(TypeError, match="by pickling"):
        iter(loader)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_workers": -1}, "non-negative"),
        ({"num_workers": 1.5}, "non-negative"),
        ({"num_workers": 2, "prefetch_factor": 0}, "prefetch_factor"),
        ({"num_workers": 2, "multiprocessing_context": "nonsense"}, "valid start method"),
        ({"num_workers": 2, "timeout": -1}, "timeout"),
    ],
)
def test_worker_option_checks(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        iter(DataLoader(TensorDataset(np.arange(4)), **kwargs))
