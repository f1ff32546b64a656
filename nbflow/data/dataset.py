"""Datasets (PyTorch's torch.utils.data.dataset): map-style (TensorDataset, Subset,
ConcatDataset, StackDataset, `random_split`) and iterable (ChainDataset), and scikit-learn's
8x8 digits as a TensorDataset (`load_digits`)."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import warnings

import numpy as np

from ..core import dtypes as dt
from ..core.errors import ArgumentError, DomainError, OutOfRangeError
from ..eager.tensor import Tensor, from_numpy, tensor
from .sampler import _rng

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "load_digits",
    "random_split",
]


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
        raise ArgumentError(f"{type(self).__name__} has no len(); define __len__ to give one")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are rows of equally long tensors or arrays: `dataset[i]` is `(a[i], b[i], ...)`
    as Tensors (copies, on each tensor's device). `batch(indices)` gives whole batches as
    numpy arrays (the DataLoader's fast path: one gather per array instead of one row per
    sample; the rows are kept on the host and batches go to `devices`)."""

    def __init__(self, *tensors):
        if not tensors:
            raise DomainError("TensorDataset needs at least one tensor")
        arrays = [t.numpy() if isinstance(t, Tensor) else np.asarray(t) for t in tensors]
        self.devices = tuple(t.device if isinstance(t, Tensor) else "cpu" for t in tensors)
        if any(a.ndim == 0 for a in arrays):
            raise DomainError("TensorDataset: every tensor needs a first (sample) dimension")
        n = len(arrays[0])
        if any(len(a) != n for a in arrays):
            sizes = [len(a) for a in arrays]
            raise DomainError(f"TensorDataset: tensors have different lengths {sizes}")
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
        raise OutOfRangeError(f"{who}: sample indices must be integers, got {a.dtype} values")
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
            raise OutOfRangeError(f"Subset: indices out of range for a dataset of {n} samples")

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
            raise DomainError("ConcatDataset: datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise ArgumentError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index, n = operator.index(index), len(self)
        if index < 0:
            if -index > n:
                raise DomainError("absolute value of index should not exceed dataset length")
            index += n
        if index >= n:
            raise OutOfRangeError(f"index {index} is out of range for a dataset of {n} samples")
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
                raise ArgumentError("ChainDataset only supports IterableDataset")
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
            raise DomainError(
                "StackDataset: pass datasets positionally (tuple samples) or by keyword "
                "(dict samples), not both"
            )
        parts = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]
        if not lengths:
            raise DomainError("StackDataset: at least one dataset should be passed")
        if any(n != lengths[0] for n in lengths):
            raise DomainError(f"StackDataset: size mismatch between datasets {lengths}")
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
            raise DomainError(f"random_split: fraction at index {i} is not between 0 and 1")
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
        raise DomainError(f"random_split: lengths must be non-negative, got {counts}")
    if sum(counts) != len(dataset):
        raise DomainError("Sum of input lengths does not equal the length of the input dataset!")
    order = _rng(generator).permutation(sum(counts))
    ends = itertools.accumulate(counts)
    return [Subset(dataset, order[end - k : end]) for end, k in zip(ends, counts, strict=True)]


def load_digits(split: str = "train", seed: int = 0, test_fraction: float = 0.2, image=False):
    """scikit-learn's 8x8 handwritten digits (1797 samples, 10 classes) as a TensorDataset of
    (x float32 in [0, 1], y int64). x is [n, 64], or [n, 1, 8, 8] with image=True.

    split: "train" or "test" (the samples shuffled with `seed`, the last `test_fraction` of
    them for testing: the same split as examples/train_digits.py), or "all" (file order).
    Needs scikit-learn (`pip install 'nbflow[examples]'`)."""
    if split not in ("train", "test", "all"):
        raise DomainError(f"split must be 'train', 'test' or 'all', got {split!r}")
    if not 0 < test_fraction < 1:
        raise DomainError(f"test_fraction must be in (0, 1), got {test_fraction}")
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
