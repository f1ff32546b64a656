"""Datasets and batching: Dataset, TensorDataset, Subset, DataLoader, and the 8x8 digits.

    train = nbflow.data.load_digits("train", seed=0)        # needs scikit-learn
    loader = nbflow.data.DataLoader(train, batch_size=64, shuffle=True, seed=0)
    for x, y in loader:                                      # nbflow Tensors
        ...

Shuffling draws one permutation per epoch (per `iter(loader)`) from, in order of preference,
the loader's own `seed` (a numpy PCG64 stream made once, so epoch k's order depends only on
the seed and k), an `nbflow.Generator` passed as `generator`, or nbflow's default generator
(reseeded by `nbflow.manual_seed`), as PyTorch draws from its global generator.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt
from .ops import creation
from .tensor import Tensor, from_numpy, tensor

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate", "load_digits"]


class Dataset:
    """A map-style dataset: `dataset[i]` is sample i, `len(dataset)` the number of samples."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")


class TensorDataset(Dataset):
    """Samples are rows of equally long tensors or arrays: `dataset[i]` is `(a[i], b[i], ...)`
    as Tensors (copies). `batch(indices)` gives whole batches as numpy arrays (the
    DataLoader's fast path: one gather per array instead of one row per sample)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        arrays = [t.numpy() if isinstance(t, Tensor) else np.asarray(t) for t in tensors]
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
            from_numpy(a) if a.dtype == dt.widen(a.dtype) else tensor(a) for a in self.arrays
        )

    def __getitem__(self, index):
        return tuple(tensor(a[index]) for a in self.arrays)

    def __len__(self) -> int:
        return len(self.arrays[0])

    def batch(self, indices) -> tuple[np.ndarray, ...]:
        return tuple(a[indices] for a in self.arrays)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = np.asarray(indices, dtype=np.int64)
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


def _as_tensor(a: np.ndarray) -> Tensor:
    """A fresh array as a Tensor without another copy (when nbflow holds its dtype as is)."""
    if a.dtype == dt.widen(a.dtype) and a.flags.c_contiguous and a.flags.writeable:
        return from_numpy(a)
    return tensor(a)


def default_collate(samples):
    """Stack a list of samples into a batch: tuples and lists element by element (giving a
    tuple), dicts key by key, tensors and arrays stacked along a new first axis, Python
    ints as int64, floats as float32 and bools as bool tensors; strings stay a list."""
    first = samples[0]
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("default_collate: samples have different numbers of fields")
        return tuple(default_collate([s[i] for s in samples]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, str):
        return list(samples)
    if isinstance(first, Tensor):
        return _as_tensor(np.stack([s.numpy() for s in samples]))
    if isinstance(first, np.ndarray | np.generic):
        return _as_tensor(np.stack([np.asarray(s) for s in samples]))
    if isinstance(first, bool):
        return _as_tensor(np.array(samples, dtype=np.bool_))
    if isinstance(first, int):
        return _as_tensor(np.array(samples, dtype=np.int64))
    if isinstance(first, float):
        return _as_tensor(np.array(samples, dtype=np.float32))
    raise TypeError(f"default_collate: cannot batch samples of type {type(first).__name__}")


def _collate_arrays(batch):
    return tuple(_as_tensor(np.ascontiguousarray(a)) for a in batch)


class DataLoader:
    """Iterates over a dataset in batches (PyTorch's DataLoader, single process).

    batch_size: samples per batch; shuffle: a new order each epoch (see the module doc for
    the random stream: `seed`, `generator`, or nbflow's default generator); drop_last: skip a
    last, smaller batch; collate_fn: turns a list of samples into a batch (default_collate).
    A dataset with a `batch(indices)` method (TensorDataset, Subset of one) is gathered a
    batch at a time when collate_fn is not given."""

    def __init__(
        self,
        dataset,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        *,
        seed: int | None = None,
        generator=None,
        collate_fn=None,
    ):
        if isinstance(batch_size, bool) or int(batch_size) < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if seed is not None and generator is not None:
            raise ValueError("DataLoader: pass seed or generator, not both")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        self.generator = generator
        self._rng = np.random.default_rng(seed) if seed is not None else None

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def _order(self) -> np.ndarray:
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        if self._rng is not None:
            return self._rng.permutation(n)
        gen = self.generator if self.generator is not None else creation.default_generator
        return gen.numpy.permutation(n)

    def __iter__(self):
        order = self._order()  # drawn when the epoch starts, as in PyTorch
        fast = self.collate_fn is None and hasattr(self.dataset, "batch")
        stop = len(self) * self.batch_size
        for start in range(0, min(stop, len(order)), self.batch_size):
            idx = order[start : start + self.batch_size]
            if fast:
                yield _collate_arrays(self.dataset.batch(idx))
            else:
                collate = self.collate_fn or default_collate
                yield collate([self.dataset[int(i)] for i in idx])


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
