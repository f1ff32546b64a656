"""nbflow.nn: Module registration and state, layers against numpy references (outputs and
gradients), initialisers, and eager training == training under @nbflow.jit."""

import math

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt
from nbflow.nn import functional as F

RNG = np.random.default_rng(0)


def needs(*names):
    missing = [n for n in names if not hasattr(nb, n)]
    return pytest.mark.skipif(
        bool(missing), reason=f"nbflow.{', nbflow.'.join(missing)} not available yet"
    )


def numeric_grads(f, arrays, eps=1e-6):
    """Central differences of the scalar f(*arrays) with respect to each array (float64)."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            old = a[i]
            a[i] = old + eps
            hi = f(*arrays)
            a[i] = old - eps
            lo = f(*arrays)
            a[i] = old
            g[i] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def check_layer(layer, inputs, ref, params, rtol=1e-6, atol=1e-8, call=None):
    """layer(*inputs) == ref(inputs..., params...) and its gradients (for a random cotangent)
    == finite differences of the numpy reference, for the inputs and the named parameters.
    Everything in float64."""
    call = call or (lambda *xs: layer(*xs))
    xs = [nb.tensor(x, requires_grad=x.dtype.kind == "f") for x in inputs]
    ps = [getattr(layer, name) for name in params]
    out = call(*xs)
    arrays = [x.copy() for x in inputs] + [p.numpy().copy() for p in ps]
    expected = ref(*arrays)
    nt.assert_close(out, expected, rtol=rtol, atol=atol)
    u = RNG.standard_normal(expected.shape)
    wrt = [x for x in xs if x.requires_grad] + ps
    got = nb.grad([out], wrt, [nb.tensor(u)])
    diff_idx = [i for i, x in enumerate(inputs) if x.dtype.kind == "f"]
    diff_idx += list(range(len(inputs), len(arrays)))
    diff_arrays = [arrays[i] for i in diff_idx]

    def objective(*values):
        full = list(arrays)
        for i, v in zip(diff_idx, values):
            full[i] = v
        return float(np.sum(ref(*full) * u))

    for g, n in zip(got, numeric_grads(objective, diff_arrays)):
        nt.assert_close(g, n, rtol=1e-5, atol=1e-6)


def f64(*shape):
    return RNG.standard_normal(shape)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---------------------------------------------------------------- Module


class Block(nn.Module):
    def __init__(self, gen):
        super().__init__()
        self.fc = nn.Linear(4, 3, generator=gen)
        self.scale = nn.Parameter([1.0, 2.0, 3.0])
        self.register_buffer("count", nb.zeros(1))
        self.plain = nb.ones(2)  # a plain tensor: neither parameter nor buffer

    def forward(self, x):
        return self.fc(x) * self.scale


class Net(nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        gen = nb.Generator(seed)
        self.blocks = nn.ModuleList([Block(gen), Block(gen)])
        self.head = nn.Sequential(nn.Tanh(), nn.Linear(3, 2, generator=gen))

    def forward(self, x):
        for b in self.blocks:
            x = nb.concat(b(x), x[:, 3:], axis=1)
        return self.head(x[:, :3])


def test_registration_and_dotted_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [  # a module's own parameters first, then its children's (as PyTorch)
        "blocks.0.scale",
        "blocks.0.fc.weight",
        "blocks.0.fc.bias",
        "blocks.1.scale",
        "blocks.1.fc.weight",
        "blocks.1.fc.bias",
        "head.1.weight",
        "head.1.bias",
    ]
    assert len(list(net.parameters())) == 8
    assert [n for n, _ in net.named_buffers()] == ["blocks.0.count", "blocks.1.count"]
    keys = list(net.state_dict())
    assert keys == names[:1] + ["blocks.0.count"] + names[1:4] + ["blocks.1.count"] + names[4:]
    assert "plain" not in net.blocks[0].state_dict()
    assert [n for n, _ in net.named_modules()][:4] == ["", "blocks", "blocks.0", "blocks.0.fc"]
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())
    # reassigning a submodule replaces it; deleting unregisters
    net.head = nn.Linear(3, 2)
    assert [n for n, _ in net.named_parameters()][-2:] == ["head.weight", "head.bias"]
    del net.blocks[1].scale
    assert "blocks.1.scale" not in dict(net.named_parameters())
    # a parameter shared by two modules is listed once
    seq = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    seq[1].weight = seq[0].weight
    assert len(list(seq.parameters())) == 3


def test_parameter_helper_and_errors():
    p = nn.Parameter(np.arange(3.0))
    assert p.requires_grad and p.dtype == np.float64
    base = nb.zeros(2)
    assert np.shares_memory(nn.Parameter(base).numpy(), base.numpy())  # shares the buffer
    with pytest.raises(nb.DTypeError):
        nn.Parameter(np.arange(3))

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter([1.0])

    with pytest.raises(AttributeError, match="super"):
        Early()
    with pytest.raises(NotImplementedError):
        nn.Module()(1)


def test_repr_lists_children():
    text = repr(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.2)))
    assert text == (
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Dropout(p=0.2)\n"
        ")"
    )
    assert "(blocks): ModuleList(\n    (0): Block(\n      (fc): Linear" in repr(Net())


def test_train_eval_propagates():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.blocks.train()
    assert net.blocks[1].fc.training and not net.training and not net.head.training
    net.train()
    assert all(m.training for m in net.modules())


def test_zero_grad_and_requires_grad():
    net = Net()
    net(nb.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.blocks.requires_grad_(False)
    assert [n for n, p in net.named_parameters() if p.requires_grad] == [
        "head.1.weight",
        "head.1.bias",
    ]


def test_state_dict_round_trip():
    x = nb.randn(6, 4)
    a, b = Net(seed=1), Net(seed=2)
    assert not np.allclose(a(x).numpy(), b(x).numpy())
    with nb.no_grad():
        a.blocks[0].count.add_(5)
    state = a.state_dict()
    assert all(isinstance(v, nb.Tensor) and not v.requires_grad for v in state.values())
    weight = b.blocks[0].fc.weight
    opt = nb.optim.SGD(b.parameters(), lr=0.1)
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.blocks[0].fc.weight is weight  # copied in place: the optimizer still holds it
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())
    assert b.blocks[0].count.item() == 5
    # numpy snapshots load too, and the optimizer keeps training the loaded tensors
    snapshot = {k: v.numpy().copy() for k, v in state.items()}
    c = Net(seed=3)
    c.load_state_dict(snapshot)
    np.testing.assert_array_equal(a(x).numpy(), c(x).numpy())
    b(x).sum().backward()
    opt.step()
    assert not np.array_equal(weight.numpy(), state["blocks.0.fc.weight"].numpy())


def test_load_state_dict_strict_errors():
    net = Net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    good = {k: v.copy() for k, v in before.items()}

    missing = dict(good)
    del missing["head.1.bias"]
    with pytest.raises(nn.StateDictError, match="missing keys: head.1.bias"):
        net.load_state_dict(missing)
    with pytest.raises(KeyError, match="unexpected keys: extra"):
        net.load_state_dict({**good, "extra": np.zeros(1)})

    bad_shape = {**good, "blocks.0.fc.weight": np.zeros((4, 3), np.float32)}
    with pytest.raises(nb.ShapeError, match=r"'blocks\.0\.fc\.weight'.*\(4, 3\).*\(3, 4\)"):
        net.load_state_dict(bad_shape)
    bad_dtype = {**good, "head.1.weight": good["head.1.weight"].astype(np.float64)}
    with pytest.raises(nb.DTypeError, match=r"'head\.1\.weight'.*float64.*float32"):
        net.load_state_dict(bad_dtype)
    # a failed load writes nothing, even to the keys checked before the bad one
    changed = {k: v + 1 for k, v in good.items()}
    changed["head.1.bias"] = np.zeros(5, np.float32)
    with pytest.raises(nb.ShapeError):
        net.load_state_dict(changed)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])

    # strict=False loads what matches and reports the rest
    partial = {"head.1.bias": np.full(2, 7, np.float32), "nope": np.zeros(1)}
    result = net.load_state_dict(partial, strict=False)
    assert result.unexpected_keys == ["nope"] and "head.1.weight" in result.missing_keys
    np.testing.assert_array_equal(net.head[1].bias.numpy(), [7, 7])
    with pytest.raises(nb.ShapeError):  # shapes are checked with strict=False too
        net.load_state_dict({"head.1.bias": np.zeros(3, np.float32)}, strict=False)


# ---------------------------------------------------------------- initialisers


def test_initialisers():
    w = nb.zeros(64, 32)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=nb.Generator(0))
    bound = 1 / math.sqrt(32)  # PyTorch's default Linear range
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.9 * bound
    nn.init.xavier_uniform_(w, generator=nb.Generator(0))
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 96)
    nn.init.normal_(w, 1.0, 0.5, generator=nb.Generator(0))
    assert abs(w.numpy().mean() - 1) < 0.05 and abs(w.numpy().std() - 0.5) < 0.05
    nn.init.ones_(w)
    assert (w.numpy() == 1).all()
    nn.init.zeros_(w)
    assert (w.numpy() == 0).all()
    u = nn.init.uniform_(nb.zeros(3, 4, dtype="float64"), -2, 2, generator=nb.Generator(1))
    expected = -2 + 4 * np.random.Generator(np.random.PCG64(1)).random(12)
    nt.assert_close(u, expected.reshape(3, 4))
    p = nn.Parameter(np.zeros(3))
    assert nn.init.uniform_(p, generator=nb.Generator(0)) is p and p.requires_grad  # leaf ok

    a = nn.Linear(5, 4, generator=nb.Generator(7))
    b = nn.Linear(5, 4, generator=nb.Generator(7))
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    assert np.abs(a.bias.numpy()).max() <= 1 / math.sqrt(5)


# ---------------------------------------------------------------- layers


def test_linear():
    layer = nn.Linear(5, 3, dtype="float64")
    check_layer(layer, [f64(4, 5)], lambda x, w, b: x @ w.T + b, ["weight", "bias"])
    no_bias = nn.Linear(5, 3, bias=False, dtype="float64")
    assert no_bias.bias is None and len(list(no_bias.parameters())) == 1
    check_layer(no_bias, [f64(2, 7, 5)], lambda x, w: x @ w.T, ["weight"])


def test_sequential_runs_a_linear_and_its_relu_as_one_op():
    rng = np.random.default_rng(4)
    g = nb.Generator(0)
    model = nn.Sequential(nn.Linear(5, 4, generator=g), nn.ReLU(), nn.Linear(4, 3, generator=g))
    x = nb.tensor(rng.standard_normal((6, 5)).astype(np.float32), requires_grad=True)
    out = model(x)
    hidden = out._node.inputs[0]  # the second Linear's input: the fused op's output
    assert hidden._node.op.name == "linear" and hidden._node.attrs["activation"] == "relu"
    # the same as the modules one by one, values and gradients
    x2 = nb.tensor(x.numpy(), requires_grad=True)
    plain = model[2](model[1](model[0](x2)))
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    out.sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy()]
    model.zero_grad()
    plain.sum().backward()
    for a, b in zip(grads, [p.grad.numpy() for p in model.parameters()] + [x2.grad.numpy()]):
        np.testing.assert_array_equal(a, b)

    class Scaled(nn.Linear):  # a subclass may change forward: its modules run one by one
        def forward(self, x):
            return super().forward(x) * 2.0

    model = nn.Sequential(Scaled(5, 4, generator=g), nn.ReLU())
    y = model(x)
    assert y._node.op.name == "relu"
    np.testing.assert_array_equal(y.numpy(), nb.relu(model[0](x)).numpy())


@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_rnn_cell(nonlinearity):
    cell = nn.RNNCell(3, 4, nonlinearity=nonlinearity, dtype="float64")
    act = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, 0))

    def ref(x, h, wih, whh, bih, bhh):
        return act(x @ wih.T + bih + h @ whh.T + bhh)

    params = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    check_layer(cell, [f64(2, 3), f64(2, 4)], ref, params)
    x = f64(2, 3)
    zeros = cell(nb.tensor(x), nb.zeros(2, 4, dtype="float64"))
    nt.assert_close(cell(nb.tensor(x)), zeros.numpy())  # no state means zeros
    nt.assert_close(cell(nb.tensor(x[0])), zeros.numpy()[0])  # unbatched


def lstm_ref(x, h, c, wih, whh, bih, bhh):
    gates = x @ wih.T + bih + h @ whh.T + bhh
    i, f, g, o = np.split(gates, 4, axis=1)
    c2 = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c2), c2


def test_lstm_cell():
    cell = nn.LSTMCell(3, 4, dtype="float64")
    assert cell.weight_ih.shape == (16, 3) and cell.weight_hh.shape == (16, 4)
    params = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    inputs = [f64(2, 3), f64(2, 4), f64(2, 4)]
    for k in range(2):  # h' and c' with their gradients
        check_layer(
            cell,
            inputs,
            lambda *a, k=k: lstm_ref(*a)[k],
            params,
            call=lambda x, h, c, k=k: cell(x, (h, c))[k],
        )
    x = nb.tensor(inputs[0])
    z = nb.zeros(2, 4, dtype="float64")
    for got, want in zip(cell(x), cell(x, (z, z))):
        nt.assert_close(got, want.numpy())


def gru_ref(x, h, wih, whh, bih, bhh):
    xr, xz, xn = np.split(x @ wih.T + bih, 3, axis=1)
    hr, hz, hn = np.split(h @ whh.T + bhh, 3, axis=1)
    r, z = sigmoid(xr + hr), sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def test_gru_cell():
    cell = nn.GRUCell(3, 4, dtype="float64")
    assert cell.weight_ih.shape == (12, 3)
    params = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
    check_layer(cell, [f64(2, 3), f64(2, 4)], gru_ref, params)
    x = nb.tensor(f64(2, 3))
    nt.assert_close(cell(x), cell(x, nb.zeros(2, 4, dtype="float64")).numpy())
    no_bias = nn.GRUCell(3, 4, bias=False, dtype="float64")
    check_layer(
        no_bias,
        [f64(2, 3), f64(2, 4)],
        lambda x, h, wih, whh: gru_ref(x, h, wih, whh, 0.0, 0.0),
        ["weight_ih", "weight_hh"],
    )
    nt.assert_close(no_bias(x), no_bias(x, nb.zeros(2, 4, dtype="float64")).numpy())


def test_activations_and_flatten():
    x = f64(2, 3, 4)
    t = nb.tensor(x)
    nt.assert_close(nn.ReLU()(t), np.maximum(x, 0))
    nt.assert_close(nn.Tanh()(t), np.tanh(x))
    nt.assert_close(nn.Sigmoid()(t), sigmoid(x))
    erf = np.vectorize(math.erf)
    nt.assert_close(nn.GELU()(t), 0.5 * x * (1 + erf(x / math.sqrt(2))))
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    nt.assert_close(nn.GELU("tanh")(t), tanh_form)
    assert nn.Flatten()(t).shape == (2, 12) and nn.Flatten(0, 1)(t).shape == (6, 4)
    check_layer(
        nn.Sequential(nn.Tanh(), nn.Flatten()), [x], lambda v: np.tanh(v).reshape(2, 12), []
    )


def conv2d_ref(x, w, b, stride=1, padding=0):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return out + b[None, :, None, None]


@needs("conv2d")
def test_conv2d():
    layer = nn.Conv2d(2, 3, 3, stride=2, padding=1, dtype="float64")
    assert layer.weight.shape == (3, 2, 3, 3)
    assert np.abs(layer.weight.numpy()).max() <= 1 / math.sqrt(18)
    check_layer(
        layer,
        [f64(2, 2, 5, 5)],
        lambda x, w, b: conv2d_ref(x, w, b, 2, 1),
        ["weight", "bias"],
    )


@needs("conv1d")
def test_conv1d():
    layer = nn.Conv1d(2, 3, 3, padding=1, dtype="float64")
    assert layer.weight.shape == (3, 2, 3)

    def ref(x, w, b):
        return conv2d_ref(x[:, :, None, :], w[:, :, None, :], b, 1, 0)[:, :, 0, :]

    def padded(x, w, b):
        return ref(np.pad(x, ((0, 0), (0, 0), (1, 1))), w, b)

    check_layer(layer, [f64(2, 2, 6)], padded, ["weight", "bias"])


@needs("max_pool2d", "avg_pool2d")
def test_pooling():
    x = f64(2, 3, 4, 6)
    windows = x.reshape(2, 3, 2, 2, 3, 2)
    check_layer(nn.MaxPool2d(2), [x], lambda v: v.reshape(2, 3, 2, 2, 3, 2).max((3, 5)), [])
    check_layer(nn.AvgPool2d(2), [x], lambda v: v.reshape(2, 3, 2, 2, 3, 2).mean((3, 5)), [])
    assert nn.MaxPool2d(2)(nb.tensor(x)).shape == windows.max((3, 5)).shape


def bn_ref(x, w, b, axes, eps=1e-5):
    mean = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    shape = [1] * x.ndim
    shape[1] = -1
    return (x - mean) / np.sqrt(var + eps) * w.reshape(shape) + b.reshape(shape)


@needs("batch_norm")
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm(shape):
    layer = (nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm1d)(
        3, momentum=0.2, dtype="float64"
    )
    assert [n for n, _ in layer.named_buffers()] == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    axes = tuple(i for i in range(len(shape)) if i != 1)
    with nb.no_grad():
        layer.weight.copy_(nb.tensor([1.0, 2.0, 0.5], dtype="float64"))
        layer.bias.copy_(nb.tensor([0.0, -1.0, 3.0], dtype="float64"))
    x = f64(*shape) * 2 + 1
    # training: batch statistics, running statistics updated (unbiased variance)
    check_layer(layer, [x], lambda v, w, b: bn_ref(v, w, b, axes), ["weight", "bias"])
    n = x.size // 3
    for _ in range(1):  # check_layer ran the layer once
        mean, var = x.mean(axes), x.var(axes) * n / (n - 1)
    nt.assert_close(layer.running_mean, 0.2 * mean)
    nt.assert_close(layer.running_var, 0.8 + 0.2 * var)
    # eval: the running statistics
    layer.eval()
    rm, rv = layer.running_mean.numpy().copy(), layer.running_var.numpy().copy()
    shape_c = [1] * len(shape)
    shape_c[1] = -1
    w, b = layer.weight.numpy(), layer.bias.numpy()
    expected = (x - rm.reshape(shape_c)) / np.sqrt(rv.reshape(shape_c) + 1e-5)
    expected = expected * w.reshape(shape_c) + b.reshape(shape_c)
    nt.assert_close(layer(nb.tensor(x)), expected)
    nt.assert_close(layer.running_mean, rm)  # not updated in eval mode
    with pytest.raises(nb.ShapeError):
        layer(nb.tensor(f64(3)))


@needs("layer_norm")
def test_layer_norm():
    layer = nn.LayerNorm((3, 4), dtype="float64")
    with nb.no_grad():
        layer.weight.copy_(nb.tensor(f64(3, 4)))
        layer.bias.copy_(nb.tensor(f64(3, 4)))

    def ref(x, w, b):
        mean = x.mean((-2, -1), keepdims=True)
        var = x.var((-2, -1), keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * w + b

    check_layer(layer, [f64(2, 3, 4)], ref, ["weight", "bias"])
    layer.eval()  # no mode dependence
    x = f64(2, 3, 4)
    nt.assert_close(layer(nb.tensor(x)), ref(x, layer.weight.numpy(), layer.bias.numpy()))


@needs("dropout")
def test_dropout_train_and_eval():
    x = nb.tensor(np.ones((200, 50)), requires_grad=True)
    layer = nn.Dropout(0.3, generator=nb.Generator(0))
    y = layer(x)
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    nt.assert_close(y.numpy()[kept], np.full(kept.sum(), 1 / 0.7))
    (g,) = nb.grad([y], [x], [nb.ones(200, 50, dtype="float64")])
    nt.assert_close(g, kept / 0.7)
    # the same seed gives the same mask; the stream moves on
    again = nn.Dropout(0.3, generator=nb.Generator(0))(x)
    np.testing.assert_array_equal(again.numpy(), y.numpy())
    assert not np.array_equal(layer(x).numpy(), y.numpy())
    layer.eval()
    assert layer(x) is x


@needs("embedding")
def test_embedding():
    layer = nn.Embedding(6, 3, padding_idx=2, dtype="float64", generator=nb.Generator(0))
    assert (layer.weight.numpy()[2] == 0).all()
    idx = np.array([[0, 2, 5], [5, 5, 1]])
    out = layer(nb.tensor(idx))
    w = layer.weight.numpy()
    nt.assert_close(out, w[idx])
    u = f64(2, 3, 3)
    (g,) = nb.grad([out], [layer.weight], [nb.tensor(u)])
    expected = np.zeros_like(w)
    np.add.at(expected, idx, u)
    expected[2] = 0.0  # PyTorch gives the padding row no gradient
    nt.assert_close(g, expected)


# ---------------------------------------------------------------- training


class MLP(nn.Module):
    def __init__(self, sizes, seed=0):
        super().__init__()
        gen = nb.Generator(seed)
        self.layers = nn.ModuleList(
            nn.Linear(a, b, generator=gen) for a, b in zip(sizes[:-1], sizes[1:])
        )
        self.act = nn.Tanh()

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
        return self.layers[-1](x)


def _data(n=32, d=6, classes=3):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, d)).astype(np.float32)
    return nb.tensor(x), nb.tensor(rng.integers(0, classes, n))


def _train_eager(model, x, y, steps, **hyper):
    opt = nb.optim.SGD(model.parameters(), **hyper)
    losses = []
    for _ in range(steps):
        loss = nb.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("hyper", [{"lr": 0.2}, {"lr": 0.1, "momentum": 0.9}])
def test_eager_equals_jit_forward(hyper):
    """The forward pass (and its backward) jitted, the optimizer eager."""
    x, y = _data()
    eager = MLP([6, 8, 3], seed=4)
    graph = MLP([6, 8, 3], seed=4)
    eager_losses = _train_eager(eager, x, y, 5, **hyper)

    @nb.jit
    def loss_fn(x, y):
        return nb.cross_entropy(graph(x), y)

    opt = nb.optim.SGD(graph.parameters(), **hyper)
    graph_losses = []
    for _ in range(5):
        loss = loss_fn(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        graph_losses.append(loss.item())
    assert len(loss_fn.cache) == 1  # traced once: the updates are seen in place
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for (name, a), b in zip(eager.named_parameters(), graph.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=name)


def test_eager_equals_graph_mode_training():
    """The whole step (forward, backward and in-place SGD updates) is one traced Program."""
    x, y = _data()
    eager = MLP([6, 8, 3], seed=4)
    graph = MLP([6, 8, 3], seed=4)
    eager_losses = _train_eager(eager, x, y, 5, lr=0.2)

    @nb.jit
    def train_step(x, y):
        loss = nb.cross_entropy(graph(x), y)
        nb.optim.SGD(lr=0.2).minimize(loss)
        return loss

    with nb.no_grad():  # the Program does its own backward
        graph_losses = [train_step(x, y).item() for _ in range(5)]
    program = str(train_step.program(x, y))
    assert program.count("sgd_update_") == 4
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for (name, a), b in zip(eager.named_parameters(), graph.parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=name)


def test_mlp_learns_digits():
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = nb.tensor((digits.data[:512] / 16.0).astype(np.float32))
    y = nb.tensor(digits.target[:512].astype(np.int64))
    model = nn.Sequential(
        nn.Linear(64, 32, generator=nb.Generator(0)),
        nn.ReLU(),
        nn.Linear(32, 10, generator=nb.Generator(1)),
    )
    losses = _train_eager(model, x, y, 30, lr=0.5, momentum=0.9)
    assert losses[-1] < 0.5 * losses[0]
    with nb.no_grad():
        accuracy = (nb.argmax(model.eval()(x), axis=1).numpy() == y.numpy()).mean()
    assert accuracy > 0.7


def test_a_child_assigned_again_keeps_its_place():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU(), nn.Tanh()])
    layers[0] = nn.Identity()  # (it moved to the end: forward ran the layers out of order)
    assert [type(m).__name__ for m in layers] == ["Identity", "ReLU", "Tanh"]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 2), nn.Linear(2, 2)
            self.register_buffer("z", nb.ones(1))

    net = Net()
    net.a = nn.Linear(2, 2)
    net.register_buffer("z", nb.zeros(1))
    assert list(net.state_dict()) == ["z", "a.weight", "a.bias", "b.weight", "b.bias"]


def test_state_dict_prefix_and_a_child_under_two_names_as_pytorch():
    assert list(nn.Linear(2, 2).state_dict(prefix="m.")) == ["m.weight", "m.bias"]

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = self.a  # PyTorch lists it under both names

    tied = Tied()
    keys = ["a.weight", "a.bias", "b.weight", "b.bias"]
    assert list(tied.state_dict()) == keys
    tied.load_state_dict(
        {k: np.full(v.shape, 0.5, np.float32) for k, v in tied.state_dict().items()}
    )
    assert (tied.a.weight.numpy() == 0.5).all()


def test_sequential_runs_hooked_modules_themselves():
    lin, relu, seen = nn.Linear(2, 2), nn.ReLU(), []
    lin.register_forward_hook(lambda m, args, out: seen.append("linear"))
    relu.register_forward_hook(lambda m, args, out: seen.append("relu"))
    nn.Sequential(lin, relu)(nb.ones(1, 2))  # (the pair ran as one fused op, no hook)
    assert seen == ["linear", "relu"]


def test_nll_loss_with_every_target_ignored_has_a_zero_gradient():
    x = nb.tensor(np.ones((2, 3)), requires_grad=True)
    nb.nn.functional.nll_loss(x, nb.tensor([-100, -100])).backward()
    assert np.array_equal(x.grad.numpy(), np.zeros((2, 3)))  # (0 / 0 gave NaN)


def test_batch_norm_counts_batches_and_averages_with_momentum_none():
    layer = nn.BatchNorm1d(3, momentum=None, dtype="float64")
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((8, 3)) + k for k in range(3)]
    for b in batches:
        layer(nb.tensor(b))
    assert layer.num_batches_tracked.item() == 3
    # PyTorch's cumulative average: the running mean is the mean of the batch means
    nt.assert_close(layer.running_mean, np.mean([b.mean(axis=0) for b in batches], axis=0))
    older = {k: v for k, v in layer.state_dict().items() if k != "num_batches_tracked"}
    nn.BatchNorm1d(3, dtype="float64").load_state_dict(older)  # a state_dict without it loads


def test_pool_modules_take_pytorchs_options():
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    t = nb.tensor(x)
    nt.assert_close(nn.MaxPool2d(2, ceil_mode=True)(t), F.max_pool2d(t, 2, ceil_mode=True))
    out, idx = nn.MaxPool2d(3, 1, 1, dilation=1, return_indices=True)(t)
    nt.assert_close(out, F.max_pool2d(t, 3, 1, 1))
    assert idx.dtype == nb.int64
    pool = nn.AvgPool2d(3, padding=1, count_include_pad=False, divisor_override=None)
    nt.assert_close(pool(t), F.avg_pool2d(t, 3, padding=1, count_include_pad=False))
    nt.assert_close(nn.AdaptiveAvgPool2d((2, None))(t), F.adaptive_avg_pool2d(t, (2, None)))
    assert nn.AdaptiveAvgPool2d((2, None))(t).shape == (2, 3, 2, 6)


def test_softmax_module_without_dim_takes_pytorchs_implicit_dim():
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = nn.Softmax()(nb.tensor(x))
    nt.assert_close(out, np.exp(x) / np.exp(x).sum(axis=0))  # dim 0 for a 3-D input
    nt.assert_close(
        nn.LogSoftmax(dim=-1)(nb.tensor(x)), x - np.log(np.exp(x).sum(-1, keepdims=True))
    )


def _children(m):
    return [(name, type(child).__name__) for name, child in m._modules.items()]


def test_container_insert_pop_and_del_renumber_as_pytorch():
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    s.insert(1, nn.Tanh())
    s.append(nn.Sigmoid())
    assert isinstance(s.pop(0), nn.Linear)
    del s[-1]
    s.extend([nn.ReLU()])
    s[0] = nn.Identity()  # (the name keeps its place)
    assert _children(s) == [("0", "Identity"), ("1", "ReLU"), ("2", "Linear"), ("3", "ReLU")]
    assert s[2] is getattr(s, "2")  # attribute names follow
    assert not hasattr(s, "4") and list(s.state_dict()) == ["2.weight", "2.bias"]
    x = nb.tensor(np.ones((1, 3), np.float32))
    expected = np.maximum(x.numpy() @ s[2].weight.numpy().T + s[2].bias.numpy(), 0)
    np.testing.assert_allclose(s(x).numpy(), expected, rtol=1e-6)

    ml = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    ml.insert(0, nn.Sigmoid())
    assert isinstance(ml.pop(1), nn.ReLU)
    del ml[0]
    ml.insert(1, nn.Identity())
    assert _children(ml) == [("0", "Tanh"), ("1", "Identity")]
    with pytest.raises(IndexError):
        ml.insert(5, nn.ReLU())
    with pytest.raises(IndexError):
        ml.pop(2)
    with pytest.raises(TypeError, match="not a Module"):
        ml.insert(0, "relu")
    assert _children(ml) == [("0", "Tanh"), ("1", "Identity")]  # refused: nothing changed


NUMPY_PAD = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@needs("conv2d")
@pytest.mark.parametrize("mode", sorted(NUMPY_PAD))
def test_conv_padding_modes_pad_the_input_as_numpy_pads(mode):
    def padded(x, pads):  # pads: (before, after) per spatial dim
        return np.pad(x, ((0, 0), (0, 0), *pads), mode=NUMPY_PAD[mode])

    layer = nn.Conv2d(2, 3, 3, stride=2, padding=(1, 2), padding_mode=mode, dtype="float64")
    assert f"padding_mode={mode}" in repr(layer)
    ref = lambda x, w, b: conv2d_ref(padded(x, [(1, 1), (2, 2)]), w, b, 2, 0)
    check_layer(layer, [f64(2, 2, 5, 6)], ref, ["weight", "bias"])
    # "same" with an even kernel width: the extra column after, as PyTorch
    layer = nn.Conv2d(2, 3, (3, 2), padding="same", padding_mode=mode, dtype="float64")
    ref = lambda x, w, b: conv2d_ref(padded(x, [(1, 1), (0, 1)]), w, b, 1, 0)
    check_layer(layer, [f64(2, 2, 5, 6)], ref, ["weight", "bias"])
    layer = nn.Conv1d(2, 3, 3, padding=2, padding_mode=mode, dtype="float64")

    def ref1(x, w, b):
        x = padded(x[:, :, None, :], [(0, 0), (2, 2)])
        return conv2d_ref(x, w[:, :, None, :], b, 1, 0)[:, :, 0, :]

    check_layer(layer, [f64(2, 2, 6)], ref1, ["weight", "bias"])


def test_conv_refuses_an_unknown_padding_mode():
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")


def test_load_state_dict_assign_takes_the_states_tensors():
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    model[0].bias.requires_grad_(False)  # (a frozen parameter stays frozen)
    state = {k: nb.tensor(np.full(v.shape, i + 1.0, np.float32)) for i, (k, v) in
             enumerate(model.state_dict().items()) if v.dtype == np.float32}  # fmt: skip
    state["1.num_batches_tracked"] = nb.tensor(7)
    model.load_state_dict(state, assign=True)
    w = model[0].weight
    assert np.shares_memory(w.numpy(), state["0.weight"].numpy()) and w.is_leaf
    assert w.requires_grad and not model[0].bias.requires_grad
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert np.shares_memory(model[1].running_mean.numpy(), state["1.running_mean"].numpy())
    assert model[1].num_batches_tracked.item() == 7
    nb.sum(model(nb.ones(4, 3))).backward()
    assert w.grad is not None and state["0.weight"].grad is None  # the module's own leaf
    with pytest.raises(nb.ShapeError):
        model.load_state_dict({**state, "0.weight": nb.ones(3, 3)}, assign=True)
    assert model[0].weight is w  # refused before anything was assigned


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_the_rows_looked_up(norm_type):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((6, 3)) * 2
    layer = nn.Embedding(6, 3, max_norm=1.5, norm_type=norm_type, dtype="float64")
    layer.weight.data = w0.copy()
    idx = np.array([[1, 2, 1], [5, 0, 1]])
    out = layer(nb.tensor(idx))
    norms = np.linalg.norm(w0, ord=norm_type, axis=1, keepdims=True)
    want = np.where(norms > 1.5, w0 * 1.5 / (norms + 1e-7), w0)
    looked_up = np.isin(np.arange(6), idx)[:, None]
    np.testing.assert_allclose(layer.weight.numpy(), np.where(looked_up, want, w0), rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), want[idx], rtol=1e-12)
    nb.sum(out).backward()  # the renormalisation has no gradient: the lookup's counts
    np.testing.assert_array_equal(
        layer.weight.grad.numpy()[:, 0], np.bincount(idx.ravel(), None, 6)
    )
    before = layer.weight.numpy().copy()
    with pytest.raises(IndexError):
        layer(nb.tensor([0, 6]))
    np.testing.assert_array_equal(layer.weight.numpy(), before)  # nothing written
    with pytest.raises(nb.UnsupportedError, match="sparse"):
        nn.Embedding(6, 3, sparse=True)
