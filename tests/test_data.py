"""Dataset, TensorDataset, DataLoader (batching, seeded shuffling, drop_last), load_digits."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.data import DataLoader, Dataset, Subset, TensorDataset, default_collate


def _dataset(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64)
    return TensorDataset(x, nb.tensor(y))


def _labels(loader):
    return [b[1].numpy().tolist() for b in loader]


def test_batches_shapes_dtypes_and_len():
    loader = DataLoader(_dataset(10), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    x, y = batches[0]
    assert isinstance(x, nb.Tensor) and isinstance(y, nb.Tensor)
    assert x.shape == (4, 3) and x.dtype == nb.float32
    assert y.shape == (4,) and y.dtype == nb.int64
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(x.numpy()[1], [3, 4, 5])
    assert _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_drop_last():
    loader = DataLoader(_dataset(10), batch_size=4, drop_last=True, shuffle=True, seed=0)
    assert len(loader) == 2
    for _ in range(3):
        batches = list(loader)
        assert len(batches) == 2 and all(b[0].shape == (4, 3) for b in batches)
    assert len(DataLoader(_dataset(8), batch_size=4, drop_last=True)) == 2


@pytest.mark.parametrize("batch_size", [1, 3, 7, 32])
def test_every_sample_exactly_once_per_epoch(batch_size):
    loader = DataLoader(_dataset(23), batch_size=batch_size, shuffle=True, seed=5)
    orders = []
    for _ in range(3):
        seen = [i for b in _labels(loader) for i in b]
        assert sorted(seen) == list(range(23))
        orders.append(seen)
    assert orders[0] != orders[1]  # a new order each epoch


def test_seeded_shuffle_is_deterministic():
    a = DataLoader(_dataset(50), batch_size=8, shuffle=True, seed=3)
    b = DataLoader(_dataset(50), batch_size=8, shuffle=True, seed=3)
    c = DataLoader(_dataset(50), batch_size=8, shuffle=True, seed=4)
    epochs_a = [_labels(a) for _ in range(2)]
    assert epochs_a == [_labels(b) for _ in range(2)]
    assert epochs_a[0] != _labels(c)
    # an nbflow.Generator, and the default generator reseeded by manual_seed
    g1 = DataLoader(_dataset(50), batch_size=8, shuffle=True, generator=nb.Generator(7))
    g2 = DataLoader(_dataset(50), batch_size=8, shuffle=True, generator=nb.Generator(7))
    assert _labels(g1) == _labels(g2)
    d = DataLoader(_dataset(50), batch_size=8, shuffle=True)
    nb.manual_seed(11)
    first = _labels(d)
    nb.manual_seed(11)
    assert _labels(d) == first
    with pytest.raises(ValueError):
        DataLoader(_dataset(), seed=1, generator=nb.Generator(1))
    with pytest.raises(ValueError):
        DataLoader(_dataset(), batch_size=0)


class Squares(Dataset):
    """A map-style dataset without a batch() method: the per-sample path and collate."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float64), "y": i * i, "w": 0.5, "ok": i % 2 == 0}


def test_generic_dataset_and_default_collate():
    (batch,) = list(DataLoader(Squares(), batch_size=5))
    assert batch["x"].shape == (5, 2) and batch["x"].dtype == nb.float64
    assert batch["y"].dtype == nb.int64 and batch["y"].numpy().tolist() == [0, 1, 4, 9, 16]
    assert batch["w"].dtype == nb.float32 and batch["ok"].dtype == nb.bool_
    pairs = default_collate([(nb.tensor([1.0, 2.0]), 3), (nb.tensor([4.0, 5.0]), 6)])
    assert pairs[0].shape == (2, 2) and pairs[1].numpy().tolist() == [3, 6]
    custom = DataLoader(_dataset(4), batch_size=2, collate_fn=lambda s: len(s))
    assert list(custom) == [2, 2]


def test_tensor_dataset_and_subset():
    ds = _dataset(6)
    x, y = ds[2]
    assert isinstance(x, nb.Tensor) and x.numpy().tolist() == [6, 7, 8] and y.item() == 2
    assert len(ds) == 6
    sub = Subset(ds, [5, 1, 3])
    assert len(sub) == 3 and sub[0][1].item() == 5
    assert _labels(DataLoader(sub, batch_size=2)) == [[5, 1], [3]]
    with pytest.raises(ValueError):
        TensorDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(IndexError):
        Subset(ds, [6])


def test_load_digits():
    pytest.importorskip("sklearn")
    train = nb.data.load_digits("train", seed=0)
    test = nb.data.load_digits("test", seed=0)
    assert len(train) == 1437 and len(test) == 360
    x, y = next(iter(DataLoader(train, batch_size=16)))
    assert x.shape == (16, 64) and x.dtype == nb.float32 and y.dtype == nb.int64
    assert x.numpy().min() >= 0.0 and x.numpy().max() <= 1.0
    images = nb.data.load_digits("test", seed=0, image=True)
    assert images.arrays[0].shape == (360, 1, 8, 8)
    np.testing.assert_array_equal(images.arrays[0].reshape(360, 64), test.arrays[0])
    # the same split as examples/train_digits.py
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.default_rng(0).permutation(len(digits.target))
    np.testing.assert_array_equal(train.arrays[1], digits.target[order[:1437]])
    with pytest.raises(ValueError):
        nb.data.load_digits("validation")
