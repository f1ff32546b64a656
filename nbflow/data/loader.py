"""The DataLoader (PyTorch's torch.utils.data.DataLoader) and its collate functions
(`default_collate`, `default_convert`): batches fetched in this process, or in worker processes
(workers.py)."""

from __future__ import annotations

import collections.abc
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..core import dtypes as dt
from ..core.errors import ArgumentError, DomainError
from ..eager.tensor import Tensor, from_numpy, tensor
from ..ops import creation
from .dataset import Dataset, IterableDataset, _batchable, _sample_indices
from .sampler import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    _check_bool,
    _positive_int,
)
from .workers import worker_iterator

__all__ = ["DataLoader", "default_collate", "default_convert"]


def _as_tensor(a: np.ndarray) -> Tensor:
    """A fresh array as a Tensor without another copy (when nbflow holds its dtype as is)."""
    if a.dtype == dt.widen(a.dtype) and a.flags.c_contiguous and a.flags.writeable:
        return from_numpy(a)
    return tensor(a)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def _rebuild(template, mapping: dict):
    """A mapping of `template`'s type holding `mapping`'s items, else a dict (PyTorch keeps
    the sample's mapping type where it can be made from a dict)."""
    try:
        return type(template)(mapping)
    except TypeError:
        return mapping


def default_convert(data):
    """A sample as the DataLoader gives it without batching (batch_size=None): numpy arrays
    and scalars become Tensors (string and object arrays stay), containers are converted
    inside (tuples become lists, namedtuples stay namedtuples, as in PyTorch), anything else
    is left as is."""
    if isinstance(data, np.ndarray | np.generic):
        if np.asarray(data).dtype.kind in "SUOV":
            return data
        return _as_tensor(np.array(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        return [default_convert(d) for d in data]
    return data


def _collate_fields(samples):
    first = samples[0]
    if any(len(s) != len(first) for s in samples):
        raise DomainError("default_collate: samples have different numbers of fields")
    fields = [default_collate([s[i] for s in samples]) for i in range(len(first))]
    return type(first)(*fields) if _is_namedtuple(first) else fields


def _collate_leaves(samples):
    first = samples[0]
    if isinstance(first, Tensor):
        return _as_tensor(np.stack([s.numpy() for s in samples]))
    if isinstance(first, np.ndarray | np.generic):
        if np.asarray(first).dtype.kind in "SUOV":
            raise ArgumentError(f"default_collate: cannot batch numpy arrays of {first.dtype}")
        return _as_tensor(np.stack([np.asarray(s) for s in samples]))
    if isinstance(first, bool | int | float):  # the kind of them all, as torch.tensor takes
        kinds = {bool if isinstance(s, bool) else type(s) for s in samples}
        if not kinds <= {bool, int, float}:
            raise ArgumentError(
                f"default_collate: cannot batch numbers with {kinds - {bool, int, float}}"
            )
        dtype = np.float32 if float in kinds else np.int64 if int in kinds else np.bool_
        return _as_tensor(np.array(samples, dtype=dtype))
    raise ArgumentError(f"default_collate: cannot batch samples of type {type(first).__name__}")


def default_collate(samples):
    """Stack a list of samples into a batch: dicts key by key (keeping the mapping type),
    tuples and lists field by field (giving a list, a namedtuple staying one), tensors and
    arrays stacked along a new first axis, Python ints as int64, floats as float32 (nbflow's
    default float; PyTorch gives float64) and bools as bool tensors; strings stay a list."""
    first = samples[0]
    if isinstance(first, collections.abc.Mapping):
        return _rebuild(first, {k: default_collate([s[k] for s in samples]) for k in first})
    if isinstance(first, str | bytes):
        return list(samples)
    if isinstance(first, tuple | list):
        return _collate_fields(samples)
    return _collate_leaves(samples)


def _check_workers(num_workers, timeout, multiprocessing_context, prefetch, persistent) -> int:
    """PyTorch's checks of the worker options, with its messages; returns prefetch_factor."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise DomainError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            f"multiprocessing, got {num_workers!r}"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise DomainError(f"timeout option should be non-negative, got {timeout!r}")
    if num_workers == 0:
        if multiprocessing_context is not None:
            raise DomainError("multiprocessing_context needs worker processes (num_workers > 0)")
        if prefetch is not None:
            raise DomainError("prefetch_factor needs worker processes (num_workers > 0)")
        if persistent:
            raise DomainError("persistent_workers option needs num_workers > 0")
        return 0
    _check_bool(persistent, "persistent_workers")
    return 2 if prefetch is None else _positive_int(prefetch, "prefetch_factor")


def _check_options(iterable, shuffle, sampler, batch_sampler, batch_size, drop_last):
    """PyTorch's checks of conflicting options, with its messages; returns shuffle as a bool."""
    if iterable:
        for name, value in (("shuffle", shuffle), ("sampler", sampler)):
            if value is not None and value is not False:
                raise DomainError(
                    f"DataLoader with IterableDataset: expected unspecified {name} option, "
                    f"but got {name}={value!r}"
                )
        if batch_sampler is not None:
            raise DomainError(
                "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                f"but got batch_sampler={batch_sampler!r}"
            )
    shuffle = bool(shuffle)
    if sampler is not None and shuffle:
        raise DomainError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise DomainError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                "sampler, and drop_last"
            )
    elif batch_size is None and drop_last:
        raise DomainError(
            "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
        )
    return shuffle


class DataLoader:
    """Iterates over a dataset in batches (PyTorch's DataLoader).

    Indices come from `sampler` (default: SequentialSampler, or RandomSampler with
    shuffle=True drawing from `seed` or `generator`, see the module doc), grouped by a
    BatchSampler(sampler, batch_size, drop_last) unless a `batch_sampler` is given;
    `batch_size=None` turns batching off (each sample goes through `collate_fn`, by default
    `default_convert`). An IterableDataset is read in order, batched the same way.
    A dataset with a `batch(indices)` method (TensorDataset, Subset of one) is gathered a
    batch at a time when collate_fn is not given. With num_workers > 0, worker processes
    fetch and collate (`prefetch_factor` batches each in flight, `timeout` seconds per batch
    at most, `persistent_workers` kept between epochs; nbflow.data.workers); `pin_memory` is
    accepted and does nothing (nbflow has no pinned host memory)."""

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        seed: int | None = None,
    ):
        prefetch_factor = _check_workers(
            num_workers, timeout, multiprocessing_context, prefetch_factor, persistent_workers
        )
        if seed is not None and generator is not None:
            raise DomainError("DataLoader: pass seed or generator, not both")
        iterable = isinstance(dataset, IterableDataset)
        shuffle = _check_options(iterable, shuffle, sampler, batch_sampler, batch_size, drop_last)
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        elif batch_size is not None:
            batch_size = _positive_int(batch_size, "batch_size")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, bool(drop_last)
        self.shuffle, self.num_workers, self.pin_memory = shuffle, num_workers, pin_memory
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.multiprocessing_context, self.prefetch_factor = (
            multiprocessing_context,
            prefetch_factor,
        )
        self.persistent_workers = bool(persistent_workers)
        self._workers, self._epochs = None, 0  # (persistent worker processes; epochs begun)
        self.generator = creation.Generator(seed) if seed is not None else generator
        if not iterable and sampler is None:
            sampler = self._default_sampler()
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None and not iterable:
            batch_sampler = BatchSampler(self.sampler, batch_size, self.drop_last)
        self.batch_sampler = batch_sampler
        self._fast = collate_fn is None and _batchable(dataset)
        self._devices = dataset.devices if self._fast else None
        self._batched = batch_size is not None or batch_sampler is not None
        self.collate_fn = collate_fn or (default_collate if self._batched else default_convert)

    def _default_sampler(self):
        if self.shuffle:
            return RandomSampler(self.dataset, generator=self.generator)
        return SequentialSampler(self.dataset)

    def __len__(self) -> int:
        """Batches per epoch: from the (batch) sampler, or for an IterableDataset from its
        len() (a TypeError when it has none, as in PyTorch)."""
        if self.sampler is not None:
            return len(self.batch_sampler if self._batched else self.sampler)
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def _batches(self) -> _Batches:
        return _Batches(
            self.dataset, self.collate_fn, self._fast, self._batched, self.batch_size,
            self.drop_last,
        )  # fmt: skip

    def _index_source(self):
        return self.batch_sampler if self._batched else self.sampler

    def _finish_batch(self, value):
        """A fetched batch as the loader gives it: the fast path's arrays become tensors on
        the dataset's devices."""
        if not self._fast:
            return value
        return [_as_tensor(np.ascontiguousarray(a)).to(d) for a, d in zip(value, self._devices)]

    def __iter__(self):
        if self.num_workers > 0:
            return worker_iterator(self)
        batches = self._batches()
        if self.sampler is None:
            return batches.stream()
        return (self._finish_batch(batches.fetch(i)) for i in self._index_source())


@dataclass(frozen=True)
class _Batches:
    """How a loader makes batches from its dataset (what a worker process is sent, too)."""

    dataset: Dataset
    collate_fn: collections.abc.Callable
    fast: bool  # dataset.batch(indices) gives the batch's arrays (made tensors by the loader)
    batched: bool
    batch_size: int | None
    drop_last: bool

    def fetch(self, indices):
        """The batch of these indices (one index when batching is off)."""
        if self.fast:
            return self.dataset.batch(_sample_indices(indices, "DataLoader"))
        if not self.batched:
            return self.collate_fn(self.dataset[indices])
        return self.collate_fn([self.dataset[i] for i in indices])

    def stream(self):
        """An IterableDataset's batches, in its order."""
        it = iter(self.dataset)
        if self.batch_size is None:
            yield from map(self.collate_fn, it)
            return
        while batch := list(itertools.islice(it, self.batch_size)):
            if len(batch) == self.batch_size or not self.drop_last:
                yield self.collate_fn(batch)
