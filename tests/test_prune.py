"""nn.utils.prune against numpy references (and PyTorch when installed): which entries and
channels each method prunes, repeated pruning, global pruning, gradients and training through
the mask, remove, jit, and the checks."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow.nn.utils import prune


def _linear(seed=0, shape=(6, 5)):
    m = nn.Linear(shape[1], shape[0])
    w = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    with nb.no_grad():
        m.weight.copy_(nb.tensor(w))
    return m, w


@pytest.mark.parametrize("amount, count", [(0.3, 9), (7, 7), (0.0, 0), (1.0, 30)])
def test_l1_unstructured_prunes_the_smallest_magnitudes(amount, count):
    m, w = _linear()
    prune.l1_unstructured(m, "weight", amount=amount)
    mask = m.weight_mask.numpy()
    assert int((mask == 0).sum()) == count
    if 0 < count < w.size:
        assert np.abs(w[mask == 0]).max() < np.abs(w[mask == 1]).min()
    np.testing.assert_array_equal(m.weight.numpy(), w * mask)
    assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert "weight" not in dict(m.named_parameters()) and prune.is_pruned(m)


def test_random_unstructured_counts_and_follows_the_seed():
    m, _ = _linear()
    nb.manual_seed(4)
    prune.random_unstructured(m, "weight", amount=0.5)
    first = m.weight_mask.numpy()
    assert int((first == 0).sum()) == 15
    m2, _ = _linear()
    nb.manual_seed(4)
    prune.random_unstructured(m2, "weight", amount=0.5)
    np.testing.assert_array_equal(m2.weight_mask.numpy(), first)


@pytest.mark.parametrize("n", [1, 2, np.inf, "fro"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_ln_structured_prunes_the_channels_of_smallest_norm(n, dim):
    m, w = _linear(seed=2)
    prune.ln_structured(m, "weight", amount=2, n=n, dim=dim)
    mask = m.weight_mask.numpy()
    axis = dim % 2
    order = 2 if n == "fro" else n
    norms = np.linalg.norm(np.moveaxis(w, axis, 0), ord=order, axis=1)
    gone = np.flatnonzero((np.moveaxis(mask, axis, 0) == 0).all(axis=1))
    np.testing.assert_array_equal(np.sort(gone), np.sort(np.argsort(norms)[:2]))
    assert ((np.moveaxis(mask, axis, 0) == 1).all(axis=1).sum()) == w.shape[axis] - 2


def test_random_structured_zeroes_whole_channels():
    m, _ = _linear()
    prune.random_structured(m, "weight", amount=0.5, dim=0)
    rows = m.weight_mask.numpy()
    assert sorted(rows.sum(axis=1).tolist()) == [0, 0, 0, 5, 5, 5]


def test_pruning_again_prunes_among_what_is_left():
    m, w = _linear()
    prune.l1_unstructured(m, "weight", amount=0.5)  # 15 of 30
    first = m.weight_mask.numpy()
    prune.l1_unstructured(m, "weight", amount=0.5)  # round(7.5) = 8 of the 15 left
    mask = m.weight_mask.numpy()
    assert int((mask == 0).sum()) == 15 + 8 and (mask <= first).all()
    assert np.abs(w[mask == 0]).max() < np.abs(w[mask == 1]).min()
    hooks = [h for h in m._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    prune.ln_structured(m, "weight", amount=1, n=1, dim=0)  # one more row, among the rows left
    rows_gone = (m.weight_mask.numpy() == 0).all(axis=1).sum()
    assert rows_gone >= 1 and (m.weight_mask.numpy() <= mask).all()


def test_global_unstructured_ranks_all_parameters_together():
    a, wa = _linear(seed=1, shape=(4, 5))
    b, wb = _linear(seed=2, shape=(3, 4))
    with nb.no_grad():
        b.weight.mul_(3.0)  # b's weights are larger: more of a's are pruned
    wb = wb * 3
    prune.global_unstructured(
        [(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=12
    )
    ma, mb = a.weight_mask.numpy(), b.weight_mask.numpy()
    assert int((ma == 0).sum() + (mb == 0).sum()) == 12
    pruned = np.concatenate([np.abs(wa[ma == 0]), np.abs(wb[mb == 0])])
    kept = np.concatenate([np.abs(wa[ma == 1]), np.abs(wb[mb == 1])])
    assert pruned.max() < kept.min()
    with pytest.raises(TypeError, match="unstructured"):
        prune.global_unstructured([(a, "weight")], prune.RandomStructured, amount=1, dim=0)


def test_custom_mask_and_importance_scores():
    m, w = _linear()
    mask = (np.arange(30).reshape(6, 5) % 3 != 0).astype(np.float32)
    prune.custom_from_mask(m, "weight", nb.tensor(mask))
    np.testing.assert_array_equal(m.weight.numpy(), w * mask)
    m2, _ = _linear()
    scores = nb.tensor(np.arange(30.0, dtype=np.float32).reshape(6, 5))
    prune.l1_unstructured(m2, "weight", amount=5, importance_scores=scores)
    np.testing.assert_array_equal(m2.weight_mask.numpy().reshape(-1)[:5], 0)
    assert m2.weight_mask.numpy().reshape(-1)[5:].all()


def test_training_keeps_pruned_weights_at_zero_and_remove_keeps_them():
    m, _ = _linear()
    prune.l1_unstructured(m, "bias", amount=2)
    prune.l1_unstructured(m, "weight", amount=0.4)
    mask = m.weight_mask.numpy()
    opt = nb.optim.SGD(m.parameters(), lr=0.1)
    x = nb.tensor(np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32))
    for _ in range(3):
        opt.zero_grad()
        (m(x) ** 2).mean().backward()
        assert (m.weight_orig.grad.numpy()[mask == 0] == 0).all()
        opt.step()
    assert (m.weight.numpy()[mask == 0] == 0).all()
    before = (m.weight_orig * m.weight_mask).numpy()  # (m.weight is the last forward's)
    prune.remove(m, "weight")
    assert "weight" in dict(m.named_parameters()) and "weight_mask" not in m.state_dict()
    np.testing.assert_array_equal(m.weight.numpy(), before)
    assert prune.is_pruned(m)  # (the bias still is)
    prune.remove(m, "bias")
    assert not prune.is_pruned(m)


def test_a_pruned_module_under_jit():
    m, _ = _linear()
    prune.l1_unstructured(m, "weight", amount=0.5)
    x = nb.ones((2, 5))
    np.testing.assert_allclose(nb.jit(m)(x).numpy(), m(x).numpy(), rtol=1e-6)
    assert isinstance(m.weight, nb.Tensor)  # an eager tensor again after the trace


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m: prune.l1_unstructured(m, "weight", amount=-1), ValueError, "non-negative"),
        (lambda m: prune.l1_unstructured(m, "weight", amount=1.5), ValueError, "range"),
        (lambda m: prune.l1_unstructured(m, "weight", amount="all"), TypeError, "int or float"),
        (lambda m: prune.l1_unstructured(m, "weight", amount=31), ValueError, "smaller"),
        (lambda m: prune.l1_unstructured(m, "gamma", amount=1), AttributeError, "gamma"),
        (lambda m: prune.remove(m, "weight"), ValueError, "has to be pruned"),
    ],
)
def test_checks(call, error, message):
    m, w = _linear()
    with pytest.raises(error, match=message):
        call(m)
    assert not prune.is_pruned(m)
    np.testing.assert_array_equal(m.weight.numpy(), w)


def test_masks_match_pytorch():
    torch = pytest.importorskip("torch")
    from torch.nn.utils import prune as tprune

    m, w = _linear(seed=5)
    t = torch.nn.Linear(5, 6)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
    for ours, theirs in (
        (
            lambda: prune.l1_unstructured(m, "weight", 0.3),
            lambda: tprune.l1_unstructured(t, "weight", 0.3),
        ),
        (
            lambda: prune.ln_structured(m, "weight", 2, 2, 0),
            lambda: tprune.ln_structured(t, "weight", 2, 2, 0),
        ),
        (
            lambda: prune.l1_unstructured(m, "weight", 4),
            lambda: tprune.l1_unstructured(t, "weight", 4),
        ),
    ):
        ours()
        theirs()
        np.testing.assert_array_equal(m.weight_mask.numpy(), t.weight_mask.numpy())
    assert sorted(m.state_dict()) == sorted(t.state_dict())
