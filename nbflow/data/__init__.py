"""Datasets, samplers and batching (PyTorch's torch.utils.data), and the 8x8 digits.
`nbflow.utils.data` is this package under PyTorch's name.

    train = nbflow.data.load_digits("train", seed=0)        # needs scikit-learn
    loader = nbflow.data.DataLoader(train, batch_size=64, shuffle=True, seed=0)
    for x, y in loader:                                      # nbflow Tensors
        ...

The pieces are PyTorch's: map-style `Dataset`s (TensorDataset, Subset, ConcatDataset,
StackDataset, `random_split`) and `IterableDataset`s (ChainDataset); samplers that yield
indices (Sequential, Random, SubsetRandom, WeightedRandom) and a `BatchSampler` that groups
them; a `DataLoader` that fetches and collates (`default_collate`, `default_convert`), in
this process or in `num_workers` worker processes (nbflow.data.workers).

Every random draw comes from an explicit stream, never numpy's global state: a sampler's or
`random_split`'s `generator` (an `nbflow.Generator`, or a numpy Generator), else nbflow's
default generator (reseeded by `nbflow.manual_seed`), as PyTorch draws from its global one.
Shuffling draws one permutation per epoch (per `iter(loader)`) from the loader's own `seed`
(a PCG64 stream made once, so epoch k's order depends only on the seed and k), its
`generator`, or the default generator.
"""

from . import dataset, loader, sampler
from .dataset import *  # noqa: F403
from .distributed import DistributedSampler
from .loader import *  # noqa: F403
from .sampler import *  # noqa: F403
from .workers import get_worker_info

__all__ = [*dataset.__all__, *sampler.__all__, *loader.__all__]
__all__ += ["DistributedSampler", "get_worker_info"]
