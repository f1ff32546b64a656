"""DataLoader worker processes (num_workers > 0) and get_worker_info, for nbflow.data.

Each worker holds its own copy of the dataset (pickled to it) and answers tasks from its own
queue: a batch of indices to fetch and collate (map-style datasets), or the next batch of its
copy's stream (IterableDataset: `get_worker_info()` tells a copy which share to yield, as in
PyTorch). Answers come back on one queue and are put back in task order, so a loader gives
the batches num_workers=0 gives (an IterableDataset's come round-robin, worker 0 first).
`prefetch_factor` tasks per worker are in flight.

Workers start by "forkserver" where the platform has it, else "spawn", never a plain fork by
default: a fork of a process whose numba threads (prange) or OpenBLAS threads have run can
kill or hang the child. The worker's seed is `base_seed + worker_id`, base_seed drawn for each
epoch from a child stream of the loader's generator (numpy's `spawn`, which leaves the
generator where it was, so the shuffled order is num_workers=0's); a worker seeds nbflow's
default generator and Python's `random` with it, and runs nbflow on one thread.

An exception in a worker is raised in the main process with its type (else RuntimeError) and
the worker's traceback; a worker that dies, or no batch within `timeout` seconds, raises a
RuntimeError saying so. Workers stop at the end of an epoch, unless `persistent_workers`.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from ..core.errors import ArgumentError, DomainError
from .sampler import _rng

POLL_SECONDS = 1.0  # how often a wait for a batch checks that the workers are alive

__all__ = ["WorkerInfo", "get_worker_info"]


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() gives inside a worker (PyTorch's fields)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_WORKER_INFO: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its WorkerInfo (id, num_workers, seed, dataset: this
    worker's copy); in the main process, None."""
    return _WORKER_INFO


# ---------------------------------------------------------------- in the worker


@dataclass(frozen=True)
class _Failure:
    """An exception raised in a worker, carried back as its type and formatted traceback."""

    kind: type
    where: str
    text: str

    def reraise(self):
        message = f"Caught {self.kind.__name__} {self.where}.\nOriginal {self.text}"
        try:
            error = self.kind(message)
        except Exception:  # an exception type whose constructor wants other arguments
            error = RuntimeError(message)
        raise error


def _failure(where: str) -> _Failure:
    kind = sys.exc_info()[0]
    return _Failure(kind, where, traceback.format_exc())


def _worker_loop(batches, init_fn, worker_id: int, num_workers: int, seed: int, tasks, results):
    """A worker process: set up, then answer tasks until a None arrives."""
    global _WORKER_INFO
    from ..kernels.cpu.threads import set_num_threads
    from ..ops.creation import manual_seed

    where = f"in DataLoader worker process {worker_id}"
    _WORKER_INFO = WorkerInfo(worker_id, num_workers, seed, batches.dataset)
    set_num_threads(1)  # the workers share the cores with the main process and each other
    manual_seed(seed)
    random.seed(seed)
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception:
        results.put((None, None, _failure(where)))
        return
    stream, stream_epoch = None, None
    while (task := tasks.get()) is not None:
        epoch, number, indices = task  # (indices None: the next batch of the stream)
        try:
            if indices is not None:
                value = batches.fetch(indices)
            else:
                if stream_epoch != epoch:
                    stream, stream_epoch = batches.stream(), epoch
                value = next(stream, StopIteration)
        except Exception:
            value = _failure(where)
        results.put((epoch, number, value))


# ---------------------------------------------------------------- in the main process


def _context(spec):
    if spec is None:
        if "forkserver" not in multiprocessing.get_all_start_methods():
            return multiprocessing.get_context("spawn")
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["nbflow"])  # (the server imports it once, not each worker)
        return ctx
    if isinstance(spec, str):
        if spec not in multiprocessing.get_all_start_methods():
            raise DomainError(
                f"multiprocessing_context option should specify a valid start method in "
                f"{multiprocessing.get_all_start_methods()!r}, but got {spec!r}"
            )
        return multiprocessing.get_context(spec)
    if not hasattr(spec, "Process"):
        raise ArgumentError(
            "multiprocessing_context option should be a start method name or a "
            f"multiprocessing context, but got {spec!r}"
        )
    return spec


class _Workers:
    """The worker processes of one loader: their task queues and the shared result queue."""

    def __init__(self, loader, base_seed: int):
        ctx = _context(loader.multiprocessing_context)
        n = loader.num_workers
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(n)]
        batches, init_fn = loader._batches(), loader.worker_init_fn
        self.processes = [
            ctx.Process(
                target=_worker_loop,
                args=(batches, init_fn, i, n, base_seed + i, self.tasks[i], self.results),
                daemon=True,
            )
            for i in range(n)
        ]
        # (multiprocessing's finalizer, with a priority above its queues' own: at exit the
        # workers get their stop message before the queues close, and end cleanly)
        self._finalizer = multiprocessing.util.Finalize(
            self, _stop, (self.__dict__,), exitpriority=100
        )
        try:
            for p in self.processes:
                p.start()
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            self.stop()
            raise ArgumentError(
                "DataLoader: num_workers > 0 sends the dataset, collate_fn and worker_init_fn "
                f"to the worker processes by pickling, and one of them cannot be: {e}"
            ) from e

    def stop(self):
        self._finalizer()

    def get(self, timeout: float):
        """The next answer (epoch, task number, value), within timeout seconds (0: no limit);
        a RuntimeError when a worker has died or the time is up."""
        waited = 0.0
        while True:
            step = POLL_SECONDS if timeout <= 0 else min(POLL_SECONDS, timeout - waited)
            try:
                return self.results.get(timeout=step)
            except queue.Empty:
                waited += step
            dead = [p for p in self.processes if p.exitcode is not None]
            if dead:
                try:  # (its last answer, e.g. worker_init_fn's exception, may just have come)
                    return self.results.get(timeout=0.1)
                except queue.Empty:
                    pass
                self.stop()
                raise RuntimeError(
                    f"DataLoader worker (pid {dead[0].pid}) exited unexpectedly with exit "
                    f"code {dead[0].exitcode}"
                )
            if 0 < timeout <= waited:
                for p in self.processes:
                    p.terminate()  # (a worker stuck in the dataset would not read its stop)
                self.stop()
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")


def _stop(state: dict):
    """Stop the workers and close the queues of a _Workers' attributes `state`, and drop them
    (a loader alive until the interpreter exits then holds no queue semaphores)."""
    processes, tasks, results = (state.pop(k) for k in ("processes", "tasks", "results"))
    for p, q in zip(processes, tasks):
        if p.exitcode is None and p.pid is not None:
            q.put(None)
    clean = True
    for p in processes:
        if p.pid is None:  # never started
            continue
        p.join(timeout=5)
        if p.exitcode is None:
            p.terminate()
            p.join()
            clean = False
    for q in (*tasks, results):
        q.close()
        if clean:
            q.join_thread()  # (the feeder threads' last puts are read: they end now)
        else:
            q.cancel_join_thread()  # (a killed worker left puts nobody will read)


class WorkerIterator:
    """One epoch of a loader with worker processes: tasks out, answers back in task order."""

    def __init__(self, loader, workers: _Workers, epoch: int):
        self.loader, self.workers, self.epoch = loader, workers, epoch
        self.sources = None if loader.sampler is None else iter(loader._index_source())
        self.active = list(range(len(workers.processes)))  # workers whose stream goes on
        self.owner = []  # the worker of each task sent, by task number
        self.waiting = {}  # answers that came before their turn
        self.next_number = 0
        for _ in range(loader.prefetch_factor * len(workers.processes)):
            self._send()

    def _send(self):
        indices = None  # an IterableDataset's task: the worker's stream's next batch
        if self.sources is not None:
            indices = next(self.sources, None)
            if indices is None:
                self.active = []
        if not self.active:
            return
        worker = self.active[len(self.owner) % len(self.active)]
        self.workers.tasks[worker].put((self.epoch, len(self.owner), indices))
        self.owner.append(worker)

    def __iter__(self):
        return self

    def __next__(self):
        while self.next_number < len(self.owner):
            number = self.next_number
            self.next_number += 1
            value = self._answer(number)
            if value is StopIteration and self.owner[number] in self.active:
                self.active.remove(self.owner[number])  # that worker's stream has ended
            self._send()
            if isinstance(value, _Failure):
                self._finish()
                value.reraise()
            if value is not StopIteration:
                return self.loader._finish_batch(value)
        self._finish()
        raise StopIteration

    def _answer(self, number: int):
        while number not in self.waiting:
            try:
                epoch, got, value = self.workers.get(self.loader.timeout)
            except RuntimeError:
                self._finish(broken=True)
                raise
            if epoch is None:  # worker_init_fn raised: that worker has stopped
                self._finish(broken=True)
                value.reraise()
            if epoch == self.epoch:  # (a persistent worker's answers to an abandoned epoch)
                self.waiting[got] = value
        return self.waiting.pop(number)

    def _finish(self, broken: bool = False):
        self.active = []
        del self.owner[self.next_number :]  # (answers not yet read are not waited for)
        if broken or not self.loader.persistent_workers:
            self.workers.stop()
            if self.loader._workers is self.workers:
                self.loader._workers = None

    def __del__(self):
        if not self.loader.persistent_workers:
            self.workers.stop()


def _base_seed(generator) -> int:
    """An epoch's worker seed base, from a child stream of the loader's generator (spawn
    leaves the generator's own draws, the shuffled order, as they were)."""
    rng = _rng(generator)
    try:
        child = rng.spawn(1)[0]
    except (TypeError, ValueError):  # a numpy Generator made without a SeedSequence
        child = rng
    return int(child.integers(2**62))


def worker_iterator(loader) -> WorkerIterator:
    """An epoch's iterator over `loader` with its worker processes (started here, or kept on
    the loader between epochs with persistent_workers)."""
    workers = loader._workers
    if workers is None:
        workers = _Workers(loader, _base_seed(loader.generator))
        if loader.persistent_workers:
            loader._workers = workers
    loader._epochs += 1
    return WorkerIterator(loader, workers, loader._epochs)
