"""PyTorch's remaining nn modules (nn/parameter.py, nn/modules/lazy.py, ...): nn.Buffer,
the uninitialised parameters and the Lazy modules, AdaptiveLogSoftmaxWithLoss, SyncBatchNorm,
DataParallel, RNNBase / RNNCellBase, CrossMapLRN2d and the 3-D lp / unpool / fractional pools.

Lazy modules: shapes inferred at the first call, then equal to the ordinary module with the
same parameters, state_dict round trips, under jit. The other layers against numpy references
written here (float64), float64 gradient checks, eager vs jit, typed errors, and PyTorch parity
(copied weights) when torch is installed."""

import itertools
import math

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt
from nbflow.nn.parameter import UninitializedError

RNG = np.random.default_rng(0)


def _leaf(a):
    return nb.tensor(a, dtype="float64", requires_grad=True)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- nn.Buffer


def test_buffer_registers_on_assignment():
    m = nn.Module()
    source = nb.ones(3)
    m.seen = nn.Buffer(source)
    m.scratch = nn.Buffer(nb.zeros(2), persistent=False)
    m.plain = nb.zeros(1)  # a plain tensor stays an attribute (PyTorch's)
    assert list(dict(m.named_buffers())) == ["seen", "scratch"]
    assert list(m.state_dict()) == ["seen"]
    assert isinstance(m.seen, nn.Buffer) and not isinstance(m.plain, nn.Buffer)
    assert isinstance(m.seen, nb.Tensor) and m.seen is not source
    with nb.no_grad():
        source.add_(1.0)  # shares the memory (detached, as PyTorch's)
    np.testing.assert_array_equal(m.seen.numpy(), [2.0, 2.0, 2.0])
    assert (m.seen * 2).numpy().tolist() == [4.0, 4.0, 4.0]  # an ordinary tensor in ops
    assert nn.Buffer().shape == (0,)


def test_buffer_keeps_requires_grad_and_refuses_parameter_names():
    m = nn.Linear(2, 2)
    b = nn.Buffer(nb.ones(2, requires_grad=True))
    m.extra = b
    assert b.requires_grad and "extra" in dict(m.named_buffers())
    assert "extra" not in dict(m.named_parameters())
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.weight = nn.Buffer(nb.ones((2, 2)))
    with pytest.raises(TypeError):
        nn.Buffer(np.ones(2))


# ---------------------------------------------------------------- lazy modules

LAZY_CASES = [
    # (lazy module, ordinary module with the inferred size, input shape)
    (lambda: nn.LazyLinear(4), lambda: nn.Linear(3, 4), (2, 3)),
    (lambda: nn.LazyLinear(4, bias=False), lambda: nn.Linear(5, 4, bias=False), (2, 6, 5)),
    (lambda: nn.LazyConv1d(4, 3, padding=1), lambda: nn.Conv1d(2, 4, 3, padding=1), (2, 2, 7)),
    (lambda: nn.LazyConv2d(4, 3, groups=2), lambda: nn.Conv2d(6, 4, 3, groups=2), (2, 6, 5, 5)),
    (lambda: nn.LazyConv2d(3, 2), lambda: nn.Conv2d(2, 3, 2), (2, 4, 4)),  # unbatched
    (lambda: nn.LazyConv3d(2, 2), lambda: nn.Conv3d(3, 2, 2), (1, 3, 4, 4, 4)),
    (
        lambda: nn.LazyConvTranspose1d(3, 3, stride=2),
        lambda: nn.ConvTranspose1d(2, 3, 3, stride=2),
        (2, 2, 5),
    ),
    (
        lambda: nn.LazyConvTranspose2d(4, 2, groups=2),
        lambda: nn.ConvTranspose2d(2, 4, 2, groups=2),
        (1, 2, 3, 3),
    ),
    (lambda: nn.LazyConvTranspose3d(2, 2), lambda: nn.ConvTranspose3d(3, 2, 2), (1, 3, 2, 3, 2)),
    (lambda: nn.LazyBatchNorm1d(), lambda: nn.BatchNorm1d(3), (4, 3)),
    (lambda: nn.LazyBatchNorm2d(), lambda: nn.BatchNorm2d(3), (2, 3, 2, 2)),
    (
        lambda: nn.LazyBatchNorm3d(affine=False),
        lambda: nn.BatchNorm3d(2, affine=False),
        (2, 2, 2, 2, 2),
    ),
    (
        lambda: nn.LazyInstanceNorm1d(),
        lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
        (2, 3, 5),
    ),
    (
        lambda: nn.LazyInstanceNorm2d(),
        lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
        (3, 4, 4),  # unbatched: the channels are dim 0
    ),
    (
        lambda: nn.LazyInstanceNorm3d(track_running_stats=False),
        lambda: nn.InstanceNorm3d(2, affine=True),
        (1, 2, 3, 3, 3),
    ),
]


def _randomise(module):
    """Distinct values in every float tensor (so a wrong copy or layout shows)."""
    with nb.no_grad():
        for t in [*module.parameters(), *module.buffers()]:
            if t.dtype.kind == "f":
                t.copy_(nb.tensor(RNG.uniform(0.5, 1.5, t.shape).astype(t.dtype)))


@pytest.mark.parametrize("make_lazy, make_plain, shape", LAZY_CASES)
def test_lazy_infers_then_equals_the_ordinary_module(make_lazy, make_plain, shape):
    lazy, plain = make_lazy(), make_plain()
    assert lazy.has_uninitialized_params()
    assert all(nn.parameter.is_lazy(p) for p in lazy.parameters())
    x = nb.tensor(_f32(*shape))
    held = list(lazy.parameters())
    lazy(x)  # materialise and initialise
    assert type(lazy) is type(plain)  # cls_to_become
    assert not any(nn.parameter.is_lazy(t) for t in [*lazy.parameters(), *lazy.buffers()])
    assert all(a is b for a, b in zip(held, lazy.parameters()))  # materialised in place
    want = {k: v.shape for k, v in plain.state_dict().items()}
    assert {k: v.shape for k, v in lazy.state_dict().items()} == want
    assert repr(lazy) == repr(plain)
    _randomise(plain)
    lazy.load_state_dict(plain.state_dict())
    lazy.train(plain.training)
    np.testing.assert_allclose(lazy(x).numpy(), plain(x).numpy(), rtol=1e-6, atol=1e-6)


def test_lazy_init_is_the_ordinary_reset_parameters():
    lazy = nn.LazyLinear(4, generator=nb.Generator().manual_seed(3))
    plain = nn.Linear(3, 4, generator=nb.Generator().manual_seed(3))
    lazy(nb.ones((1, 3)))
    np.testing.assert_array_equal(lazy.weight.numpy(), plain.weight.numpy())
    np.testing.assert_array_equal(lazy.bias.numpy(), plain.bias.numpy())
    bound = 1 / math.sqrt(3)
    assert np.abs(lazy.weight.numpy()).max() <= bound and lazy.weight.numpy().std() > 0
    bn = nn.LazyBatchNorm1d()
    bn(nb.tensor(_f32(4, 3)))
    np.testing.assert_array_equal(bn.weight.numpy(), np.ones(3))
    np.testing.assert_array_equal(bn.running_var.numpy() > 0, np.ones(3, bool))


def test_lazy_state_dict_round_trip():
    trained = nn.Sequential(nn.LazyLinear(5), nn.ReLU(), nn.LazyLinear(2))
    x = nb.tensor(_f32(3, 4))
    expected = trained(x).numpy()
    state = {k: v.numpy().copy() for k, v in trained.state_dict().items()}
    # a load before the first call materialises from the state's shapes
    fresh = nn.Sequential(nn.LazyLinear(5), nn.ReLU(), nn.LazyLinear(2))
    fresh.load_state_dict(state)
    assert not fresh[0].has_uninitialized_params() and fresh[0].in_features == 4
    assert type(fresh[0]) is nn.LazyLinear  # (the ordinary class at its first call)
    np.testing.assert_array_equal(fresh(x).numpy(), expected)
    assert type(fresh[2]) is nn.Linear
    # an uninitialised module's state_dict holds the stand-ins; loading it changes nothing
    lazy = nn.LazyConv2d(3, 2)
    keys = lazy.state_dict()
    assert list(keys) == ["weight", "bias"] and nn.parameter.is_lazy(keys["weight"])
    other = nn.LazyConv2d(3, 2)
    other.load_state_dict(keys)
    assert other.has_uninitialized_params()
    # a strict load that fails on keys leaves the module lazy
    with pytest.raises(nn.StateDictError):
        nn.LazyLinear(2).load_state_dict({"weight": np.ones((2, 3), np.float32)})
    norm = nn.LazyBatchNorm2d()
    norm.load_state_dict({k: v.numpy() for k, v in nn.BatchNorm2d(6).state_dict().items()})
    assert norm.num_features == 6 and norm.running_mean.shape == (6,)


def test_lazy_under_jit():
    model = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(2))
    model.eval()

    @nb.jit
    def forward(x):
        return model(x)

    x = nb.tensor(_f32(2, 3, 5, 5))
    out = forward(x)  # the first call is traced: materialised eagerly
    assert type(model[0]) is nn.Conv2d and type(model[3]) is nn.Linear
    assert model[3].weight.shape == (2, 4 * 3 * 3)
    np.testing.assert_allclose(out.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(forward(x).numpy(), out.numpy(), rtol=1e-6)

    # training through jit: the gradients reach the materialised parameters
    layer = nn.LazyLinear(1)
    optimizer = nb.optim.SGD(layer.parameters(), lr=0.1)  # made before materialisation

    @nb.jit
    def loss_of(x):
        return (layer(x) ** 2).mean()

    x = nb.tensor(_f32(4, 3))
    before = loss_of(x).item()
    for _ in range(3):
        optimizer.zero_grad()
        loss = layer(x).pow(2).mean()
        loss.backward()
        optimizer.step()
    assert loss_of(x).item() < before


def test_lazy_eager_vs_jit_gradients():
    layer = nn.LazyLinear(3, dtype="float64")
    nt.check_modes(lambda x: layer(x).tanh(), _leaf(RNG.standard_normal((2, 4))))


def test_lazy_optimizer_made_before_materialisation_trains():
    layer = nn.LazyLinear(1)
    optimizer = nb.optim.Adam(layer.parameters(), lr=0.05)
    x, y = nb.tensor(_f32(8, 3)), nb.tensor(_f32(8, 1))
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert optimizer.params[0] is layer.weight


def test_uninitialized_errors():
    lazy = nn.LazyLinear(3)
    with pytest.raises(UninitializedError, match="first call"):
        _ = lazy.weight.shape
    with pytest.raises(UninitializedError):
        sum(p.numel() for p in lazy.parameters())
    with pytest.raises(nb.NbflowError, match="uninitialized parameter"):
        lazy.weight + 1.0
    with pytest.raises(UninitializedError):
        nn.init.uniform_(lazy.weight)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(nb.ones((1, 3, 5, 5)))
    with pytest.raises(nb.ShapeError, match="unbatched"):
        nn.LazyConv2d(4, 3)(nb.ones((5, 5)))
    with pytest.raises(nb.ShapeError):
        nn.LazyBatchNorm1d()(nb.ones(3))
    with pytest.raises(nb.ShapeError, match="state but"):  # lazy state into a real module
        nn.Linear(2, 3).load_state_dict(nn.LazyLinear(3).state_dict())
    with pytest.raises(nb.UnsupportedError):
        nn.LazyLinear(3, device="cuda")
    p = nn.UninitializedParameter()
    assert p.requires_grad and not nn.UninitializedBuffer().requires_grad
    p.materialize((2, 3))
    assert type(p) is nb.Tensor and p.shape == (2, 3) and p.requires_grad
    double = nn.LazyLinear(2).to(nb.float64)
    double(nb.ones((1, 3), dtype="float64"))
    assert double.weight.dtype == np.float64


# ---------------------------------------------------------------- AdaptiveLogSoftmaxWithLoss


def _log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def adaptive_numpy(module, x, target):
    """The two-level softmax from the weights: log p(c) = head[c] in the shortlist, else
    head[cluster] + the cluster's log-softmax at c's place in it."""
    x = x.astype(np.float64)
    w = {k: v.numpy().astype(np.float64) for k, v in module.state_dict().items()}
    head = x @ w["head.weight"].T + w.get("head.bias", 0.0)
    head = _log_softmax(head)
    cutoffs = module.cutoffs
    full = [head[:, : cutoffs[0]]]
    for i in range(len(cutoffs) - 1):
        hidden = x @ w[f"tail.{i}.0.weight"].T
        cluster = _log_softmax(hidden @ w[f"tail.{i}.1.weight"].T)
        full.append(cluster + head[:, cutoffs[0] + i : cutoffs[0] + i + 1])
    full = np.concatenate(full, axis=1)
    output = full[np.arange(len(target)), target]
    return output, -output.mean(), full


def _adaptive(**kw):
    return nn.AdaptiveLogSoftmaxWithLoss(6, 11, [3, 7], div_value=2.0, **kw)


def test_adaptive_log_softmax_against_numpy():
    module = _adaptive(head_bias=True)
    x = _f32(9, 6)
    target = np.array([0, 3, 10, 2, 7, 6, 1, 9, 4])
    result = module(nb.tensor(x), nb.tensor(target))
    assert isinstance(result, tuple) and result._fields == ("output", "loss")
    output, loss, full = adaptive_numpy(module, x, target)
    np.testing.assert_allclose(result.output.numpy(), output, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.loss.item(), loss, rtol=1e-5)
    np.testing.assert_allclose(module.log_prob(nb.tensor(x)).numpy(), full, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.exp(full).sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(module.predict(nb.tensor(x)).numpy(), full.argmax(axis=1))
    single = module(nb.tensor(x[0]), nb.tensor(np.array(target[0])))  # unbatched
    assert single.output.shape == ()
    np.testing.assert_allclose(single.output.item(), output[0], rtol=1e-5)
    assert [p.shape for p in module.tail[1].parameters()] == [(1, 6), (4, 1)]  # 6 // 2^2


def test_adaptive_log_softmax_gradients_and_jit():
    module = _adaptive().double()
    target = nb.tensor(np.array([1, 5, 8, 0, 10]))
    nt.gradcheck(lambda x: module(x, target).loss, [_leaf(RNG.standard_normal((5, 6)))])
    # (a tuple: jit's outputs rebuild a tuple by its type, which a namedtuple's does not take)
    nt.check_modes(lambda x: tuple(module(x, target)), _leaf(RNG.standard_normal((5, 6))))
    # the weights' gradients: rows outside a cluster give none to its projection
    x = nb.tensor(RNG.standard_normal((2, 6)))
    module.zero_grad()
    module(x, nb.tensor(np.array([0, 1]))).loss.backward()
    assert np.all(module.tail[0][0].weight.grad.numpy() == 0)
    assert np.any(module.head.weight.grad.numpy() != 0)


def test_adaptive_log_softmax_errors():
    for cutoffs in ([], [3, 3], [5, 2], [0, 4], [4, 11]):
        with pytest.raises(ValueError, match="cutoffs"):
            nn.AdaptiveLogSoftmaxWithLoss(6, 11, cutoffs)
    module = _adaptive()
    with pytest.raises(nb.DomainError, match=r"\[0, 10\]"):
        module(nb.ones((2, 6)), nb.tensor(np.array([0, 11])))
    with pytest.raises(nb.DomainError):
        module(nb.ones((2, 6)), nb.tensor(np.array([-1, 0])))
    with pytest.raises(nb.ShapeError, match="same size"):
        module(nb.ones((3, 6)), nb.tensor(np.array([0, 1])))
    with pytest.raises(nb.ShapeError, match="multi-target"):
        module(nb.ones((2, 6)), nb.tensor(np.zeros((2, 1), np.int64)))
    with pytest.raises(nb.DTypeError):
        module(nb.ones((2, 6)), nb.ones(2))


def test_adaptive_log_softmax_matches_torch():
    torch = pytest.importorskip("torch")
    module = _adaptive(head_bias=True)
    reference = torch.nn.AdaptiveLogSoftmaxWithLoss(6, 11, [3, 7], div_value=2.0, head_bias=True)
    reference.load_state_dict({k: torch.tensor(v.numpy()) for k, v in module.state_dict().items()})
    x = _f32(7, 6)
    target = np.array([10, 0, 4, 7, 2, 8, 3])
    ours = module(nb.tensor(x), nb.tensor(target))
    theirs = reference(torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(ours.output.numpy(), theirs.output.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours.loss.item(), theirs.loss.item(), rtol=1e-5)
    np.testing.assert_array_equal(
        module.predict(nb.tensor(x)).numpy(), reference.predict(torch.tensor(x)).numpy()
    )
    ours.loss.backward()
    theirs.loss.backward()
    for p, q in zip(module.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- 3-D pools


def _volume(shape):
    """Values without ties (a shuffled range), so every window has one maximum."""
    return (RNG.permutation(math.prod(shape)).reshape(shape) / 7.0 - 3.0).astype(np.float64)


def lp_pool3d_numpy(x, p, k, s):
    n, c = x.shape[:2]
    size = [(x.shape[2 + i] - k) // s + 1 for i in range(3)]
    out = np.zeros((n, c, *size))
    for z, y, t in itertools.product(*(range(m) for m in size)):
        box = x[:, :, z * s : z * s + k, y * s : y * s + k, t * s : t * s + k]
        out[:, :, z, y, t] = (box**p).sum(axis=(2, 3, 4)) ** (1 / p)
    return out


def test_lp_pool3d_against_numpy():
    x = np.abs(_volume((2, 2, 5, 4, 6))) + 0.1
    out = F.lp_pool3d(nb.tensor(x), 2, 2, stride=1)
    np.testing.assert_allclose(out.numpy(), lp_pool3d_numpy(x, 2, 2, 1), rtol=1e-10)
    module = nn.LPPool3d(3, 2)
    np.testing.assert_allclose(module(nb.tensor(x)).numpy(), lp_pool3d_numpy(x, 3, 2, 2))
    unbatched = nn.LPPool3d(2, 2)(nb.tensor(x[0]))
    np.testing.assert_allclose(unbatched.numpy(), lp_pool3d_numpy(x, 2, 2, 2)[0])
    nt.gradcheck(lambda v: F.lp_pool3d(v, 2, 2, 1), [_leaf(x[:1, :1, :3, :3, :3])])
    nt.check_modes(lambda v: F.lp_pool3d(v, 2, 2), _leaf(x))
    with pytest.raises(nb.AttrError, match="norm_type"):
        F.lp_pool3d(nb.tensor(x), 0, 2)
    with pytest.raises(nb.ShapeError, match="lp_pool3d"):
        F.lp_pool3d(nb.tensor(x[0, 0]), 2, 2)


def test_max_unpool3d_against_numpy():
    x = _volume((2, 3, 4, 6, 4))
    pooled, indices = F.max_pool3d_with_indices(nb.tensor(x), 2)
    out = F.max_unpool3d(pooled, indices, 2)
    # reference: each window's maximum back at its place, zeros elsewhere
    want = np.zeros_like(x)
    for z, y, t in itertools.product(range(2), range(3), range(2)):
        box = x[:, :, 2 * z : 2 * z + 2, 2 * y : 2 * y + 2, 2 * t : 2 * t + 2]
        keep = box == box.max(axis=(2, 3, 4), keepdims=True)
        want[:, :, 2 * z : 2 * z + 2, 2 * y : 2 * y + 2, 2 * t : 2 * t + 2] = box * keep
    np.testing.assert_array_equal(out.numpy(), want)
    flat = indices.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(x.reshape(2, 3, -1), flat, 2), pooled.numpy().reshape(2, 3, -1)
    )
    module = nn.MaxUnpool3d(2)
    bigger = module(pooled, indices, output_size=(5, 7, 5))
    assert bigger.shape == (2, 3, 5, 7, 5)
    # the same values, summed over arrays of other shapes (in another order)
    np.testing.assert_allclose(bigger.numpy().sum(), want.sum(), rtol=1e-12)
    values = _leaf(pooled.numpy())
    nt.gradcheck(lambda v: F.max_unpool3d(v, indices, 2), [values])
    nt.check_modes(lambda v: F.max_unpool3d(v, indices, 2), values)
    with pytest.raises(nb.ShapeError, match="output_size"):
        F.max_unpool3d(pooled, indices, 2, output_size=(9, 6, 4))
    with pytest.raises(nb.ShapeError, match="max_unpool3d"):
        F.max_unpool3d(pooled[0, 0], indices[0, 0], 2)
    with pytest.raises(nb.DTypeError):
        F.max_unpool3d(pooled, indices.astype("int32"), 2)


def test_with_indices_aliases():
    x = nb.tensor(_volume((1, 2, 4, 5, 6)))
    out, where = F.max_pool3d_with_indices(x, 2, stride=1)
    want, want_where = F.max_pool3d(x, 2, stride=1, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), want.numpy())
    np.testing.assert_array_equal(where.numpy(), want_where.numpy())
    out, where = F.adaptive_max_pool3d_with_indices(x, (2, 3, 2))
    want, want_where = F.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True)
    np.testing.assert_array_equal(where.numpy(), want_where.numpy())


def _starts(u, n, m, k):
    """PyTorch's generate_intervals, in float64 from the sample's float32 value."""
    if m == 1:
        return [n - k]
    alpha = np.float32(n - k) / np.float32(m - 1)
    return [int(np.floor((i + u) * alpha) - np.floor(u * alpha)) for i in range(m - 1)] + [n - k]


def fractional_numpy(x, kernel, size, samples):
    n, c = x.shape[:2]
    out = np.zeros((n, c, *size))
    where = np.zeros((n, c, *size), np.int64)
    for b, ch in itertools.product(range(n), range(c)):
        starts = [
            _starts(float(samples[b, ch, a]), x.shape[2 + a], size[a], kernel[a]) for a in range(3)
        ]
        for z, y, t in itertools.product(*(range(m) for m in size)):
            d0, h0, w0 = starts[0][z], starts[1][y], starts[2][t]
            box = x[b, ch, d0 : d0 + kernel[0], h0 : h0 + kernel[1], w0 : w0 + kernel[2]]
            i = np.unravel_index(np.argmax(box), box.shape)
            out[b, ch, z, y, t] = box[i]
            where[b, ch, z, y, t] = np.ravel_multi_index(
                (d0 + i[0], h0 + i[1], w0 + i[2]), x.shape[2:]
            )
    return out, where


def test_fractional_max_pool3d_against_numpy():
    x = _volume((2, 2, 7, 8, 9))
    samples = RNG.random((2, 2, 3))
    kernel, size = (2, 3, 2), (4, 3, 5)
    out, where = F.fractional_max_pool3d(
        nb.tensor(x), kernel, output_size=size, return_indices=True,
        _random_samples=nb.tensor(samples),
    )  # fmt: skip
    want, want_where = fractional_numpy(x, kernel, size, samples)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(where.numpy(), want_where)
    module = nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=nb.tensor(samples))
    assert module(nb.tensor(x)).shape == (2, 2, 3, 4, 4)
    assert nn.FractionalMaxPool3d(2, output_size=3)(nb.tensor(x[0])).shape == (2, 3, 3, 3)
    s = nb.tensor(samples[:1, :1])
    leaf = _leaf(x[:1, :1, :5, :5, :5])
    nt.gradcheck(lambda v: F.fractional_max_pool3d(v, 2, 3, _random_samples=s), [leaf])
    nt.check_modes(lambda v: F.fractional_max_pool3d(v, 2, 3, _random_samples=s), leaf)
    with pytest.raises(nb.AttrError, match="output_size or an output_ratio"):
        F.fractional_max_pool3d(nb.tensor(x), 2)
    with pytest.raises(nb.ShapeError, match="_random_samples"):
        F.fractional_max_pool3d(nb.tensor(x), 2, 3, _random_samples=nb.tensor(samples[..., :2]))
    with pytest.raises(nb.ShapeError, match="at most"):
        F.fractional_max_pool3d(nb.tensor(x), 4, 5)
    with pytest.raises(nb.AttrError):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)


def test_3d_pools_match_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = _f32(2, 3, 7, 8, 9)
    samples = RNG.random((2, 3, 3)).astype(np.float32)
    ours = F.fractional_max_pool3d(
        nb.tensor(x), (2, 3, 2), (4, 3, 5), return_indices=True, _random_samples=nb.tensor(samples)
    )
    theirs = tf.fractional_max_pool3d(
        torch.tensor(x), (2, 3, 2), (4, 3, 5), return_indices=True,
        _random_samples=torch.tensor(samples),
    )  # fmt: skip
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    a = np.abs(x)
    np.testing.assert_allclose(
        F.lp_pool3d(nb.tensor(a), 2, 2, ceil_mode=True).numpy(),
        tf.lp_pool3d(torch.tensor(a), 2, 2, ceil_mode=True).numpy(),
        rtol=1e-5,
    )
    pooled, where = tf.max_pool3d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(
        F.max_unpool3d(
            nb.tensor(pooled.numpy()), nb.tensor(where.numpy()), 2, None, 0, (7, 8, 9)
        ).numpy(),
        tf.max_unpool3d(pooled, where, 2, output_size=(7, 8, 9)).numpy(),
    )


# ---------------------------------------------------------------- CrossMapLRN2d


def cross_map_numpy(x, size, alpha, beta, k):
    """PyTorch's legacy running sum over channels, step by step (float64)."""
    x = x.astype(np.float64)
    channels = x.shape[1]
    squares = x**2
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.zeros_like(x)
    scale[:, 0] = squares[:, : min(pre_pad, channels)].sum(axis=1)
    for c in range(1, channels):
        scale[:, c] = scale[:, c - 1]
        if c < channels - pre_pad + 1:
            scale[:, c] += squares[:, c + pre_pad - 1]
        if c > pre_pad:
            scale[:, c] -= squares[:, c - pre_pad]
    return x * (scale * alpha / size + k) ** -beta


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_cross_map_lrn2d_against_numpy(size):
    x = RNG.standard_normal((2, 7, 3, 2))
    module = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=2.0)
    np.testing.assert_allclose(
        module(nb.tensor(x)).numpy(), cross_map_numpy(x, size, 0.5, 0.75, 2.0), rtol=1e-12
    )


def test_cross_map_lrn2d_gradients_errors_and_torch():
    module = nn.CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=1.0)
    x = _leaf(RNG.standard_normal((1, 5, 2, 2)))
    nt.gradcheck(module, [x])
    nt.check_modes(module, x)
    assert repr(module) == "CrossMapLRN2d(3, alpha=0.5, beta=0.75, k=1.0)"
    with pytest.raises(nb.ShapeError, match="Expected input to be 4D"):
        module(nb.ones((5, 2, 2)))
    torch = pytest.importorskip("torch")
    y = _f32(2, 6, 3, 3)
    np.testing.assert_allclose(
        nn.CrossMapLRN2d(4, 1e-2, 0.75, 1.0)(nb.tensor(y)).numpy(),
        torch.nn.CrossMapLRN2d(4, 1e-2, 0.75, 1.0)(torch.tensor(y)).numpy(),
        rtol=1e-5,
    )


# ---------------------------------------------------------------- SyncBatchNorm, DataParallel


def test_sync_batch_norm_is_batch_norm_of_any_rank():
    x = RNG.standard_normal((4, 3, 2, 2, 2, 2))
    module = nn.SyncBatchNorm(3, momentum=0.5).double()
    out = module(nb.tensor(x)).numpy()
    axes = (0, 2, 3, 4, 5)
    mean = x.mean(axis=axes, keepdims=True)
    want = (x - mean) / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-10)
    count = x.size // 3
    unbiased = x.var(axis=axes) * count / (count - 1)
    np.testing.assert_allclose(module.running_var.numpy(), 0.5 + 0.5 * unbiased, rtol=1e-10)
    plain = nn.BatchNorm2d(3).double()
    y = nb.tensor(x[:, :, :, :, 0, 0])
    np.testing.assert_allclose(nn.SyncBatchNorm(3).double()(y).numpy(), plain(y).numpy())
    with pytest.raises(nb.ShapeError, match="at least 2D"):
        module(nb.ones(3, dtype="float64"))


def test_convert_sync_batchnorm_shares_the_tensors():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(4)))
    model[1].eval()
    weight, mean = model[1].weight, model[1].running_mean
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and type(model[1]) is nn.SyncBatchNorm
    assert type(model[2][0]) is nn.SyncBatchNorm and model[2][0].num_features == 4
    assert model[1].weight is weight and model[1].running_mean is mean
    assert not model[1].training and type(model[0]) is nn.Conv2d
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2))) is nn.SyncBatchNorm


def test_data_parallel_one_device():
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner)
    assert model.module is inner
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    x = nb.tensor(_f32(4, 3))
    np.testing.assert_array_equal(model(x).numpy(), inner(x).numpy())
    jitted = nb.jit(lambda v: model(v))
    np.testing.assert_allclose(jitted(x).numpy(), inner(x).numpy(), rtol=1e-6)
    with pytest.warns(UserWarning, match="one device"):
        nn.DataParallel(inner, device_ids=[0, 1])
    with pytest.raises(TypeError):
        nn.DataParallel(lambda v: v)


# ---------------------------------------------------------------- RNN bases


def test_rnn_bases():
    assert isinstance(nn.LSTM(3, 4), nn.RNNBase) and isinstance(nn.GRU(3, 4), nn.RNNBase)
    assert issubclass(nn.RNN, nn.RNNBase) and not isinstance(nn.Linear(2, 2), nn.RNNBase)
    assert isinstance(nn.LSTMCell(3, 4), nn.RNNCellBase)
    assert not isinstance(nn.LSTM(3, 4), nn.RNNCellBase)
    x = nb.tensor(_f32(5, 2, 3))
    for mode, cls, kwargs in [
        ("LSTM", nn.LSTM, {}),
        ("GRU", nn.GRU, {}),
        ("RNN_RELU", nn.RNN, {"nonlinearity": "relu"}),
    ]:
        base = nn.RNNBase(mode, 3, 4, num_layers=2)
        plain = cls(3, 4, num_layers=2, **kwargs)
        plain.load_state_dict(base.state_dict())
        ours, theirs = base(x), plain(x)
        np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-6)
    cell = nn.RNNCellBase(3, 4, True, 4)
    assert cell.weight_ih.shape == (16, 3) and cell.bias_hh.shape == (16,)
    with pytest.raises(ValueError, match="Unrecognized RNN mode"):
        nn.RNNBase("LSTMX", 3, 4)

    class Mine(nn.RNNBase):  # a user's subclass, as in PyTorch
        def __init__(self):
            super().__init__("GRU", 3, 2)

    assert isinstance(Mine(), nn.RNNBase) and not isinstance(nn.GRU(3, 2), Mine)
    assert Mine()(x)[0].shape == (5, 2, 2)
