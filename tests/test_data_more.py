"""PyTorch's torch.utils.data pieces: samplers, dataset combinators, random_split, the
DataLoader's sampler / batch_sampler / batch_size=None / IterableDataset options and their
conflicts, default_convert and default_collate on nested samples."""

import collections

import numpy as np
import pytest

import nbflow as nb
from nbflow.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    random_split,
)


def _dataset(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    return TensorDataset(x, np.arange(n, dtype=np.int64))


def _labels(loader):
    return [b[1].numpy().tolist() for b in loader]


class Range(IterableDataset):
    """A stream of ints, with a length only when asked for one."""

    def __init__(self, n, sized=True):
        self.n, self.sized = n, sized

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n if self.sized else super().__len__()


class Items(Dataset):
    """A map-style dataset over a list, without the batch() fast path."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


# samplers


def test_deterministic_samplers():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler(range(5))) == 5
    batches = BatchSampler(SequentialSampler(range(10)), 4, drop_last=False)
    assert list(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(batches) == 3
    dropped = BatchSampler(range(10), 4, drop_last=True)
    assert list(dropped) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(dropped) == 2
    assert list(BatchSampler(range(8), 4, True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    for bad in (0, -1, 1.5, True, None):
        with pytest.raises(ValueError, match="batch_size"):
            BatchSampler(range(4), bad, False)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(4), 2, 1)
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_random_sampler_permutation_and_reproducibility():
    a = list(RandomSampler(range(20), generator=nb.Generator(1)))
    assert sorted(a) == list(range(20)) and all(type(i) is int for i in a)
    assert a == list(RandomSampler(range(20), generator=nb.Generator(1)))
    assert a != list(RandomSampler(range(20), generator=nb.Generator(2)))
    s = RandomSampler(range(20), generator=nb.Generator(1))
    assert list(s) != list(s)  # a new order per iteration
    nb.manual_seed(5)  # the default generator, looked up when iterating
    first = list(RandomSampler(range(20)))
    nb.manual_seed(5)
    assert list(RandomSampler(range(20))) == first
    numpy_gen = list(RandomSampler(range(20), generator=np.random.default_rng(1)))
    assert numpy_gen == a  # nbflow.Generator(1) is numpy's PCG64(1)


def test_random_sampler_num_samples_and_replacement():
    more = list(RandomSampler(range(5), num_samples=12, generator=nb.Generator(0)))
    assert len(more) == 12 and sorted(more[:5]) == sorted(more[5:10]) == list(range(5))
    assert len(set(more[10:])) == 2
    drawn = RandomSampler(range(4), replacement=True, num_samples=400, generator=nb.Generator(0))
    values = list(drawn)
    assert len(drawn) == 400 and set(values) == {0, 1, 2, 3}
    assert np.bincount(values).min() > 60  # about 100 each
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(4), num_samples=0)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(4), replacement=1)
    with pytest.raises(TypeError, match="generator"):
        list(RandomSampler(range(4), generator=3))


def test_subset_random_sampler():
    indices = [10, 20, 30, 40, 50]
    a = list(SubsetRandomSampler(indices, generator=nb.Generator(3)))
    assert sorted(a) == indices and len(SubsetRandomSampler(indices)) == 5
    assert a == list(SubsetRandomSampler(indices, generator=nb.Generator(3)))
    others = [list(SubsetRandomSampler(indices, generator=nb.Generator(s))) for s in range(4, 9)]
    assert any(o != a for o in others)


def test_weighted_random_sampler_frequencies():
    weights = [1.0, 2.0, 0.0, 7.0]
    sampler = WeightedRandomSampler(weights, 20000, generator=nb.Generator(0))
    counts = np.bincount(list(sampler), minlength=4) / 20000
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.0, 0.7], atol=0.02)
    assert len(sampler) == 20000
    again = WeightedRandomSampler(weights, 50, generator=nb.Generator(0))
    assert list(again) == list(WeightedRandomSampler(weights, 50, generator=nb.Generator(0)))
    assert list(again) != list(WeightedRandomSampler(weights, 50, generator=nb.Generator(1)))
    unique = list(WeightedRandomSampler(weights, 3, replacement=False, generator=nb.Generator(0)))
    assert sorted(unique) == [0, 1, 3]


@pytest.mark.parametrize(
    ("weights", "num_samples", "replacement"),
    [([[1.0, 2.0]], 2, True), ([1.0, -1.0], 2, True), ([0.0, 0.0], 1, True),
     ([1.0, 0.0], 2, False), ([1.0, 2.0], 0, True), ([1.0, 2.0], 2, "yes")],
)  # fmt: skip
def test_weighted_random_sampler_errors(weights, num_samples, replacement):
    with pytest.raises(ValueError):
        WeightedRandomSampler(weights, num_samples, replacement)


# datasets


def test_concat_dataset():
    cat = ConcatDataset([Items([0, 1, 2]), Items([]), Items([3, 4])])
    assert len(cat) == 5 and cat.cumulative_sizes == [3, 3, 5]
    assert [cat[i] for i in range(5)] == [0, 1, 2, 3, 4] and cat[-1] == 4 and cat[-5] == 0
    assert [(Items([7]) + Items([8]))[i] for i in range(2)] == [7, 8]
    with pytest.raises(ValueError):
        cat[-6]
    with pytest.raises(IndexError):
        cat[5]
    with pytest.raises(ValueError):
        ConcatDataset([])
    with pytest.raises(TypeError):
        ConcatDataset([Range(3)])
    both = DataLoader(ConcatDataset([_dataset(3), _dataset(2)]), batch_size=4)
    assert _labels(both) == [[0, 1, 2, 0], [1]]


def test_chain_and_iterable_datasets():
    chain = ChainDataset([Range(3), Range(2)])
    assert list(chain) == [0, 1, 2, 0, 1] and len(chain) == 5
    assert list(Range(2) + Range(1)) == [0, 1, 0]
    with pytest.raises(TypeError):
        list(ChainDataset([Items([1])]))
    with pytest.raises(TypeError):
        len(Range(3, sized=False))


def test_stack_dataset():
    pairs = StackDataset(Items([1, 2, 3]), Items("abc"))
    assert len(pairs) == 3 and pairs[1] == (2, "b")
    named = StackDataset(x=Items([1, 2]), y=Items([3, 4]))
    assert named[0] == {"x": 1, "y": 3}
    (batch,) = list(DataLoader(named, batch_size=2))
    assert batch["x"].numpy().tolist() == [1, 2] and batch["y"].numpy().tolist() == [3, 4]
    with pytest.raises(ValueError, match="size mismatch"):
        StackDataset(Items([1]), Items([1, 2]))
    with pytest.raises(ValueError):
        StackDataset(Items([1]), y=Items([1]))
    with pytest.raises(ValueError):
        StackDataset()


def _check_split(parts, n):
    seen = np.concatenate([np.asarray(p.indices) for p in parts])
    assert sorted(seen.tolist()) == list(range(n))


def test_random_split_lengths_and_cover():
    ds = _dataset(10)
    parts = random_split(ds, [3, 7], generator=nb.Generator(0))
    assert [len(p) for p in parts] == [3, 7] and all(isinstance(p, Subset) for p in parts)
    _check_split(parts, 10)
    again = random_split(ds, [3, 7], generator=nb.Generator(0))
    assert parts[0].indices.tolist() == again[0].indices.tolist()
    other = random_split(ds, [3, 7], generator=nb.Generator(1))
    assert parts[0].indices.tolist() != other[0].indices.tolist()
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 8])
    with pytest.raises(ValueError):
        random_split(ds, [0.5, 0.7, -0.2])


@pytest.mark.parametrize(
    ("n", "fractions"),
    [(10, [0.3, 0.7]), (11, [0.5, 0.5]), (7, [0.2, 0.2, 0.6]), (5, [1 / 3] * 3), (3, [0.1, 0.9])],
)
def test_random_split_fractions_match_torch(n, fractions):
    torch = pytest.importorskip("torch")
    expected = [len(p) for p in torch.utils.data.random_split(range(n), fractions)]
    with pytest.warns(UserWarning) if 0 in expected else _no_warning():
        parts = random_split(Items(list(range(n))), fractions, generator=nb.Generator(0))
    assert [len(p) for p in parts] == expected
    _check_split(parts, n)


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# DataLoader options


def test_loader_sampler_and_batch_sampler():
    ds = _dataset(10)
    loader = DataLoader(ds, batch_size=3, sampler=[9, 8, 7, 6, 5])
    assert _labels(loader) == [[9, 8, 7], [6, 5]] and len(loader) == 2
    by_batches = DataLoader(ds, batch_sampler=[[0, 2], [4, 6, 8]])
    assert _labels(by_batches) == [[0, 2], [4, 6, 8]] and len(by_batches) == 2
    assert by_batches.batch_size is None and by_batches.drop_last is False
    rand = DataLoader(ds, batch_size=4, sampler=RandomSampler(ds, generator=nb.Generator(0)))
    assert sorted(i for b in _labels(rand) for i in b) == list(range(10))
    weighted = WeightedRandomSampler([0, 0, 1, 1, 0, 0, 0, 0, 0, 0], 8, generator=nb.Generator(0))
    drawn = {i for b in _labels(DataLoader(ds, batch_size=4, sampler=weighted)) for i in b}
    assert drawn <= {2, 3}
    generic = DataLoader(Items([(i, float(i)) for i in range(5)]), batch_size=2, sampler=[4, 0])
    (batch,) = list(generic)
    assert batch[0].numpy().tolist() == [4, 0] and batch[1].dtype == nb.float32


def test_loader_shuffle_seed_generator_same_as_before():
    """shuffle=True with seed draws one PCG64 permutation per epoch, as the loader always did."""
    loader = DataLoader(_dataset(12), batch_size=12, shuffle=True, seed=4)
    rng = np.random.default_rng(4)
    for _ in range(3):
        assert _labels(loader) == [rng.permutation(12).tolist()]
    assert isinstance(loader.sampler, RandomSampler)
    assert isinstance(DataLoader(_dataset(3)).sampler, SequentialSampler)


def test_loader_without_batching():
    ds = _dataset(3)
    items = list(DataLoader(ds, batch_size=None))
    assert len(items) == 3 and isinstance(items[0], list)  # default_convert: tuples to lists
    assert items[1][0].shape == (3,) and items[1][1].item() == 1
    assert len(DataLoader(ds, batch_size=None)) == 3
    raw = list(DataLoader(Items([np.arange(2), 5]), batch_size=None))
    assert isinstance(raw[0], nb.Tensor) and raw[1] == 5
    custom = DataLoader(Items([1, 2]), batch_size=None, collate_fn=lambda s: s * 10)
    assert list(custom) == [10, 20]


def test_loader_iterable_dataset():
    loader = DataLoader(Range(7), batch_size=3)
    assert [b.numpy().tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(loader) == 3
    dropped = DataLoader(Range(7), batch_size=3, drop_last=True)
    assert len(list(dropped)) == 2 and len(dropped) == 2
    assert list(DataLoader(Range(3), batch_size=None)) == [0, 1, 2]
    assert len(DataLoader(Range(3), batch_size=None)) == 3
    unsized = DataLoader(Range(4, sized=False), batch_size=2, shuffle=False)
    assert len(list(unsized)) == 2
    with pytest.raises(TypeError):
        len(unsized)
    chained = DataLoader(ChainDataset([Range(2), Range(2)]), batch_size=4)
    assert [b.numpy().tolist() for b in chained] == [[0, 1, 0, 1]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampler": [0, 1], "shuffle": True}, "mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually"),
        ({"batch_sampler": [[0]], "shuffle": True}, "batch_sampler option is mutually"),
        ({"batch_sampler": [[0]], "sampler": [0]}, "batch_sampler option is mutually"),
        ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually"),
        ({"batch_size": None, "drop_last": True}, "disables auto-batching"),
        ({"batch_size": 0}, "batch_size"),
        ({"num_workers": -1}, "non-negative"),
        ({"prefetch_factor": 2}, "prefetch_factor"),
        ({"persistent_workers": True}, "persistent_workers"),
        ({"multiprocessing_context": "spawn"}, "multiprocessing_context"),
        ({"timeout": -1}, "timeout"),
        ({"seed": 1, "generator": nb.Generator(1)}, "seed or generator"),
    ],
)
def test_loader_option_conflicts(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(_dataset(4), **kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}]
)  # fmt: skip
def test_loader_iterable_dataset_refuses_index_options(kwargs):
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified"):
        DataLoader(Range(3), **kwargs)


def test_loader_torch_positional_order():
    """batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn: PyTorch's order."""
    loader = DataLoader(_dataset(6), 4, False, [5, 4, 3], None, 0, None)
    assert _labels(loader) == [[5, 4, 3]]


# collate and convert

Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_nested():
    samples = [
        {"a": (np.float32(i), [i, {"b": nb.tensor([i, i])}]), "p": Point(i, float(i)), "s": "t"}
        for i in range(3)
    ]
    batch = default_collate(samples)
    first, (ints, inner) = batch["a"]
    assert first.dtype == nb.float32 and first.numpy().tolist() == [0, 1, 2]
    assert ints.dtype == nb.int64 and inner["b"].shape == (3, 2)
    assert isinstance(batch["p"], Point) and batch["p"].x.numpy().tolist() == [0, 1, 2]
    assert batch["s"] == ["t", "t", "t"]
    ordered = default_collate([collections.OrderedDict(k=1), collections.OrderedDict(k=2)])
    assert isinstance(ordered, collections.OrderedDict)
    with pytest.raises(TypeError):
        default_collate([None, None])
    with pytest.raises(TypeError):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(ValueError):
        default_collate([(1, 2), (1,)])


def test_default_convert():
    converted = default_convert({"x": np.ones(2), "p": Point(np.int64(3), 4), "t": (np.ones(1),)})
    assert isinstance(converted["x"], nb.Tensor) and converted["x"].dtype == nb.float64
    assert isinstance(converted["p"], Point) and converted["p"].x.item() == 3
    assert converted["p"].y == 4 and isinstance(converted["t"], list)
    strings = np.array(["a", "b"])
    assert default_convert(strings) is strings and default_convert("s") == "s"
    tensor = nb.tensor([1.0])
    assert default_convert(tensor) is tensor


def test_torch_names_under_utils_data():
    import nbflow.utils.data as utils_data

    assert utils_data.__all__ == nb.data.__all__
    assert utils_data.WeightedRandomSampler is WeightedRandomSampler
    assert all(hasattr(nb.utils.data, name) for name in nb.data.__all__)


def test_training_loop_with_sampler():
    """A linear regression over a TensorDataset, batches drawn by a seeded RandomSampler."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    ds = TensorDataset(x, y)
    loader = DataLoader(ds, batch_size=16, sampler=RandomSampler(ds, generator=nb.Generator(0)))
    model = nb.nn.Linear(3, 1)
    opt = nb.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(30):
        for xb, yb in loader:
            loss = nb.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert loss.item() < 1e-3


def test_default_collate_takes_the_kind_of_all_the_numbers():
    from nbflow.data import default_collate

    mixed = default_collate([1, 2.5])  # (the first sample's int would truncate 2.5)
    assert mixed.dtype == nb.float32 and mixed.tolist() == [1.0, 2.5]
    assert default_collate([True, 2]).dtype == nb.int64
    assert default_collate([True, False]).dtype == nb.bool_
    with pytest.raises(TypeError, match="str"):
        default_collate([1, "a"])


def test_only_nbflow_array_datasets_are_batched_by_indexing():
    class WithBatch(Dataset):  # an unrelated `batch` attribute
        batch = 4

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return float(i)

    batches = [b.tolist() for b in DataLoader(WithBatch(), batch_size=2)]
    assert batches == [[0.0, 1.0], [2.0, 3.0]]
    assert [b.tolist() for b in DataLoader(Subset(WithBatch(), [3, 1]), batch_size=2)] == [
        [3.0, 1.0]
    ]


def test_float_sample_indices_are_refused_not_truncated():
    data = TensorDataset(np.arange(5))
    with pytest.raises(IndexError, match="integers"):
        list(DataLoader(data, sampler=[0.9, 3.99], batch_size=2))
    with pytest.raises(IndexError, match="integers"):
        Subset(data, [0.5])
    assert [b[0].tolist() for b in DataLoader(Subset(data, []), batch_size=2)] == []
