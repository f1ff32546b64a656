"""Samplers (PyTorch's torch.utils.data.sampler): they yield dataset indices (Sequential,
Random, SubsetRandom, WeightedRandom), or a BatchSampler groups them; and the helpers the data
package shares (the random stream behind a `generator`, the option checks)."""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from ..core.errors import ArgumentError, DomainError
from ..ops import creation

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
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
    raise ArgumentError(
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
        raise DomainError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return number


def _check_bool(value, name: str, error=ValueError) -> bool:
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value!r}")
    return value


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
            raise DomainError(
                f"weights should be a 1d sequence but given weights have shape {self.weights.shape}"
            )
        w = self.weights
        if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
            raise DomainError("weights should be finite, non-negative and not all zero")
        if not replacement and self.num_samples > np.count_nonzero(w):
            raise DomainError(
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
