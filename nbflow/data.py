"""Datasets, samplers and batching (PyTorch's torch.utils.data), and the 8x8 digits.
`nbflow.utils.data` is this module under PyTorch's name.

    train = nbflow.data.load_digits("train", seed=0)        # needs scikit-learn
    loader = nbflow.data.DataLoader(train, batch_size=64, shuffle=True, seed=0)
    for x, y in loader:                                      # nbflow Tensors
        ...

The pieces are PyTorch's: map-style `Dataset`s (TensorDataset, Subset, ConcatDataset,
StackDataset, `random_split`) and `IterableDataset`s (ChainDataset); samplers that yield
indices (Sequential, Random, SubsetRandom, WeightedRandom) and a `BatchSampler` that groups
them; a `DataLoader` that fetches and collates (`default_collate`, `default_convert`), in
this process or in `num_workers` worker processes (nbflow.data_workers).

Every random draw comes from an explicit stream, never numpy's global state: a sampler's or
`random_split`'s `generator` (an `nbflow.Generator`, or a numpy Generator), else nbflow's
default generator (reseeded by `nbflow.manual_seed`), as PyTorch draws from its global one.
Shuffling draws one permutation per epoch (per `iter(loader)`) from the loader's own `seed`
(a PCG64 stream made once, so epoch k's order depends only on the seed and k), its
`generator`, or the default generator.
"""

from __future__ import annotations

import bisect
import collections.abc
import itertools
import math
import operator
import warnings
from dataclasses import dataclass

import numpy as np

from . import dtypes as dt
from .ops import creation
from .tensor import Tensor, from_numpy, tensor

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "load_digits",
    "random_split",
]


def _rng(generator) -> np.random.Generator:
    """The numpy stream behind `generator`, looked up at draw time (not when a sampler is made)
    so that `nbflow.manual_seed` between epochs takes effect, as in PyTorch."""
    if generator is None:
        return creation.default_generator.numpy
    if isinstance(generator, creation.Generator):
        return generator.numpy
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(
        f"generator must be an nbflow.Generator or a numpy Generator, got {type(generator)}"
    )


def _positive_int(value, name: str) -> int:
    """`value` as an int, rejecting bools, non-integers and values below 1 with a ValueError
    (PyTorch's error type for these options)."""
    try:
        number = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        number = None
    if number is None or number < 1:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return number


def _check_bool(value, name: str, error=ValueError) -> bool:
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value!r}")
    return value


class Dataset:
    """A map-style dataset: `dataset[i]` is sample i, `len(dataset)` the number of samples.
    `a + b` concatenates (a ConcatDataset), as in PyTorch."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define `__iter__` (and `__len__` if the length is
    known). The DataLoader reads it in order; it takes no sampler or shuffle. `a + b` chains
    (a ChainDataset)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __len__(self) -> int:
        # TypeError, as len() raises for objects without a length (PyTorch defines none)
        raise TypeError(f"{type(self).__name__} has no len(); define __len__ to give one")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are rows of equally long tensors or arrays: `dataset[i]` is `(a[i], b[i], ...)`
    as Tensors (copies, on each tensor's device). `batch(indices)` gives whole batches as
    numpy arrays (the DataLoader's fast path: one gather per array instead of one row per
    sample; the rows are kept on the host and batches go to `devices`)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        arrays = [t.numpy() if isinstance(t, Tensor) else np.asarray(t) for t in tensors]
        self.devices = tuple(t.device if isinstance(t, Tensor) else "cpu" for t in tensors)
        if any(a.ndim == 0 for a in arrays):
            raise ValueError("TensorDataset: every tensor needs a first (sample) dimension")
        n = len(arrays[0])
        if any(len(a) != n for a in arrays):
            sizes = [len(a) for a in arrays]
            raise ValueError(f"TensorDataset: tensors have different lengths {sizes}")
        self.arrays = arrays

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        return tuple(
            (from_numpy(a) if a.dtype == dt.widen(a.dtype) else tensor(a)).to(d)
            for a, d in zip(self.arrays, self.devices)
        )

    def __getitem__(self, index):
        return tuple(tensor(a[index], device=d) for a, d in zip(self.arrays, self.devices))

    def __len__(self) -> int:
        return len(self.arrays[0])

    def batch(self, indices) -> tuple[np.ndarray, ...]:
        return tuple(a[indices] for a in self.arrays)


def _sample_indices(indices, who) -> np.ndarray:
    """indices as an int64 array; a float or bool index is an IndexError (an int64 cast
    would truncate 0.9 to 0 silently)."""
    a = np.asarray(indices)
    if a.size and a.dtype.kind not in "iu":
        raise IndexError(f"{who}: sample indices must be integers, got {a.dtype} values")
    return a.astype(np.int64)


def _batchable(dataset) -> bool:
    """Whether the loader may take whole batches by array indexing (nbflow's own datasets of
    arrays, not any dataset that happens to have a `batch` attribute)."""
    if type(dataset) is Subset:
        return _batchable(dataset.dataset)
    return type(dataset) is TensorDataset


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = _sample_indices(indices, "Subset")
        n = len(dataset)
        if self.indices.ndim != 1 or (len(self.indices) and not (
            -n <= self.indices.min() and self.indices.max() < n
        )):  # fmt: skip
            raise IndexError(f"Subset: indices out of range for a dataset of {n} samples")

    def __getitem__(self, index):
        return self.dataset[int(self.indices[index])]

    def __len__(self) -> int:
        return len(self.indices)

    def batch(self, indices):
        return self.dataset.batch(self.indices[indices])

    @property
    def devices(self) -> tuple[str, ...]:
        return self.dataset.devices


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after another; `cumulative_sizes[k]` is
    the total length of the first k + 1 of them (PyTorch's attribute)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index, n = operator.index(index), len(self)
        if index < 0:
            if -index > n:
                raise ValueError("absolute value of index should not exceed dataset length")
            index += n
        if index >= n:
            raise IndexError(f"index {index} is out of range for a dataset of {n} samples")
        k = bisect.bisect_right(self.cumulative_sizes, index)
        return self.datasets[k][index - (self.cumulative_sizes[k - 1] if k else 0)]


class ChainDataset(IterableDataset):
    """Several IterableDatasets read one after another (the streaming ConcatDataset); the
    chaining is lazy, so the parts are only checked when read or measured."""

    def __init__(self, datasets):
        self.datasets = datasets

    def _parts(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield d

    def __iter__(self):
        for d in self._parts():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._parts())


class StackDataset(Dataset):
    """Equally long datasets side by side: `StackDataset(a, b)[i]` is `(a[i], b[i])`,
    `StackDataset(x=a, y=b)[i]` is `{"x": a[i], "y": b[i]}` (one form or the other)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError(
                "StackDataset: pass datasets positionally (tuple samples) or by keyword "
                "(dict samples), not both"
            )
        parts = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if not lengths:
            raise ValueError("StackDataset: at least one dataset should be passed")
        if any(n != lengths[0] for n in lengths):
            raise ValueError(f"StackDataset: size mismatch between datasets {lengths}")
        self.datasets, self._length = parts, lengths[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


def _split_lengths(lengths, n: int) -> list[int]:
    """Fractions summing to 1 become counts as PyTorch makes them: each floor(n * fraction),
    then the remainder handed out one by one from the first split on."""
    if not (math.isclose(sum(lengths), 1) and sum(lengths) <= 1):
        return [operator.index(k) for k in lengths]
    for i, frac in enumerate(lengths):
        if not 0 <= frac <= 1:
            raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1")
    counts = [int(math.floor(n * frac)) for frac in lengths]
    for i in range(n - sum(counts)):
        counts[i % len(counts)] += 1
    for i, k in enumerate(counts):
        if k == 0:
            warnings.warn(f"random_split: length of split at index {i} is 0", stacklevel=3)
    return counts


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Disjoint random Subsets of `dataset` of the given lengths (counts summing to
    len(dataset), or fractions summing to 1), from one permutation of `generator`."""
    counts = _split_lengths(lengths, len(dataset))
    if any(k < 0 for k in counts):
        raise ValueError(f"random_split: lengths must be non-negative, got {counts}")
    if sum(counts) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _rng(generator).permutation(sum(counts))
    ends = itertools.accumulate(counts)
    return [Subset(dataset, order[end - k : end]) for end, k in zip(ends, counts, strict=True)]


class Sampler:
    """Yields dataset indices (or, for a batch sampler, lists of them) in some order; the
    DataLoader fetches what it yields. Subclasses define `__iter__` and usually `__len__`."""

    def __init__(self, data_source=None):
        pass  # PyTorch's (deprecated) argument, accepted for subclasses that pass it on

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1: the DataLoader's order without shuffle."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices, drawn anew per iteration from `generator`.

    Without replacement, `num_samples` (default len(data_source)) indices come from whole
    permutations one after another, so every index appears equally often; with replacement
    they are independent uniform draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = _check_bool(replacement, "replacement", TypeError)
        self._num_samples = num_samples
        self.generator = generator
        _positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self) -> int:
        """Read when asked, as the data source may grow (PyTorch's property)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, k, rng = len(self.data_source), self.num_samples, _rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=k).tolist()
            return
        for _ in range(k // n):
            yield from rng.permutation(n).tolist()
        if k % n:  # no draw for an empty tail: one permutation per epoch by default
            yield from rng.permutation(n)[: k % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, drawn anew per iteration (e.g. a validation
    split of one dataset without making a Subset)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights` (e.g. to
    balance classes), with replacement by default; without it, each index at most once."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        self.num_samples = _positive_int(num_samples, "num_samples")
        self.replacement = _check_bool(replacement, "replacement")
        self.weights = np.asarray(weights, dtype=np.float64)
        if self.weights.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {self.weights.shape}"
            )
        w = self.weights
        if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
            raise ValueError("weights should be finite, non-negative and not all zero")
        if not replacement and self.num_samples > np.count_nonzero(w):
            raise ValueError(
                f"cannot draw num_samples={self.num_samples} without replacement from "
                f"{np.count_nonzero(w)} non-zero weights"
            )
        self.generator = generator

    def __iter__(self):
        p = self.weights / self.weights.sum()
        rng = _rng(self.generator)
        draws = rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p)
        yield from draws.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` (any iterable of indices) into lists of `batch_size`,
    the last one shorter unless `drop_last`."""

    def __init__(self, sampler, batch_size, drop_last):
        self.sampler = sampler
        self.batch_size = _positive_int(batch_size, "batch_size")
        self.drop_last = _check_bool(drop_last, "drop_last")

    def __iter__(self):
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if len(batch) == self.batch_size or not self.drop_last:
                yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


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
        raise ValueError("default_collate: samples have different numbers of fields")
    fields = [default_collate([s[i] for s in samples]) for i in range(len(first))]
    return type(first)(*fields) if _is_namedtuple(first) else fields


def _collate_leaves(samples):
    first = samples[0]
    if isinstance(first, Tensor):
        return _as_tensor(np.stack([s.numpy() for s in samples]))
    if isinstance(first, np.ndarray | np.generic):
        if np.asarray(first).dtype.kind in "SUOV":
            raise TypeError(f"default_collate: cannot batch numpy arrays of {first.dtype}")
        return _as_tensor(np.stack([np.asarray(s) for s in samples]))
    if isinstance(first, bool | int | float):  # the kind of them all, as torch.tensor takes
        kinds = {bool if isinstance(s, bool) else type(s) for s in samples}
        if not kinds <= {bool, int, float}:
            raise TypeError(
                f"default_collate: cannot batch numbers with {kinds - {bool, int, float}}"
            )
        dtype = np.float32 if float in kinds else np.int64 if int in kinds else np.bool_
        return _as_tensor(np.array(samples, dtype=dtype))
    raise TypeError(f"default_collate: cannot batch samples of type {type(first).__name__}")


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
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            f"multiprocessing, got {num_workers!r}"
        )
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise ValueError(f"timeout option should be non-negative, got {timeout!r}")
    if num_workers == 0:
        if multiprocessing_context is not None:
            raise ValueError("multiprocessing_context needs worker processes (num_workers > 0)")
        if prefetch is not None:
            raise ValueError("prefetch_factor needs worker processes (num_workers > 0)")
        if persistent:
            raise ValueError("persistent_workers option needs num_workers > 0")
        return 0
    _check_bool(persistent, "persistent_workers")
    return 2 if prefetch is None else _positive_int(prefetch, "prefetch_factor")


def _check_options(iterable, shuffle, sampler, batch_sampler, batch_size, drop_last):
    """PyTorch's checks of conflicting options, with its messages; returns shuffle as a bool."""
    if iterable:
        for name, value in (("shuffle", shuffle), ("sampler", sampler)):
            if value is not None and value is not False:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified {name} option, "
                    f"but got {name}={value!r}"
                )
        if batch_sampler is not None:
            raise ValueError(
                "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                f"but got batch_sampler={batch_sampler!r}"
            )
    shuffle = bool(shuffle)
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                "sampler, and drop_last"
            )
    elif batch_size is None and drop_last:
        raise ValueError(
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
    at most, `persistent_workers` kept between epochs; nbflow.data_workers); `pin_memory` is
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
            raise ValueError("DataLoader: pass seed or generator, not both")
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


def load_digits(split: str = "train", seed: int = 0, test_fraction: float = 0.2, image=False):
    """scikit-learn's 8x8 handwritten digits (1797 samples, 10 classes) as a TensorDataset of
    (x float32 in [0, 1], y int64). x is [n, 64], or [n, 1, 8, 8] with image=True.

    split: "train" or "test" (the samples shuffled with `seed`, the last `test_fraction` of
    them for testing: the same split as examples/train_digits.py), or "all" (file order).
    Needs scikit-learn (`pip install 'nbflow[examples]'`)."""
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError as e:
        raise ImportError(
            "nbflow.data.load_digits needs scikit-learn, an optional dependency: "
            "pip install 'nbflow[examples]' (or pip install scikit-learn)"
        ) from e
    digits = sklearn_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    if split != "all":
        order = np.random.default_rng(seed).permutation(len(x))
        cut = int((1 - test_fraction) * len(x))
        keep = order[:cut] if split == "train" else order[cut:]
        x, y = x[keep], y[keep]
    if image:
        x = x.reshape(-1, 1, 8, 8)
    return TensorDataset(np.ascontiguousarray(x), y)


# PyTorch's DistributedSampler (built on the samplers above); worker processes
from .data_distributed import DistributedSampler  # noqa: E402
from .data_workers import get_worker_info, worker_iterator  # noqa: E402

__all__ += ["DistributedSampler", "get_worker_info"]
