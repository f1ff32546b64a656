"""nn.RNN, nn.LSTM and nn.GRU over whole sequences: against a numpy reference of the
equations (every layer count, direction and layout), PyTorch itself when installed, eager vs
graph mode, gradients by finite differences, and the errors."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import nn
from nbflow import testing as nt

CONFIGS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False},
]


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _step(kind, xw, h, c, w_hh, b_hh, hidden):
    """One step of the equations in PyTorch's documentation, in numpy."""
    hw = h @ w_hh.T + b_hh
    if kind == "RNN":
        return np.tanh(xw + hw), None
    if kind == "LSTM":
        i, f, g, o = np.split(xw + hw, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    r = _sigmoid(xw[:, :hidden] + hw[:, :hidden])
    z = _sigmoid(xw[:, hidden : 2 * hidden] + hw[:, hidden : 2 * hidden])
    n = np.tanh(xw[:, 2 * hidden :] + r * hw[:, 2 * hidden :])
    return (1 - z) * n + z * h, None


def _reference(kind, params, x, layers, bidirectional, hidden):
    """(output, h_n, c_n) for x (T, B, I)."""
    finals_h, finals_c = [], []
    for layer in range(layers):
        outs = []
        for suffix in [f"_l{layer}"] + ([f"_l{layer}_reverse"] if bidirectional else []):
            w_ih, w_hh = params["weight_ih" + suffix], params["weight_hh" + suffix]
            b_ih = params.get("bias_ih" + suffix, 0.0)
            b_hh = params.get("bias_hh" + suffix, 0.0)
            h = np.zeros((x.shape[1], hidden))
            c = np.zeros_like(h)
            out = np.zeros((x.shape[0], x.shape[1], hidden))
            order = range(x.shape[0])
            for t in reversed(order) if suffix.endswith("reverse") else order:
                h, c = _step(kind, x[t] @ w_ih.T + b_ih, h, c, w_hh, b_hh, hidden)
                out[t] = h
            outs.append(out)
            finals_h.append(h)
            finals_c.append(c)
        x = np.concatenate(outs, axis=2)
    c_n = np.stack(finals_c) if kind == "LSTM" else None
    return x, np.stack(finals_h), c_n


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(c) or "plain")
def test_sequence_layers_match_the_equations(kind, config):
    model = getattr(nn, kind)(3, 4, dtype="float64", generator=nb.Generator(1), **config)
    params = {name: p.numpy() for name, p in model.named_parameters()}
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    layers, bidirectional = config.get("num_layers", 1), config.get("bidirectional", False)
    expected, h_n, c_n = _reference(kind, params, x, layers, bidirectional, 4)
    given = np.swapaxes(x, 0, 1) if config.get("batch_first") else x
    out, state = model(nb.tensor(given))
    got = out.numpy()
    got = np.swapaxes(got, 0, 1) if config.get("batch_first") else got
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    h = state[0] if kind == "LSTM" else state
    np.testing.assert_allclose(h.numpy(), h_n, rtol=1e-12, atol=1e-12)
    if kind == "LSTM":
        np.testing.assert_allclose(state[1].numpy(), c_n, rtol=1e-12, atol=1e-12)
    names = {n for n, _ in model.named_parameters()}
    assert "weight_ih_l0" in names and ("bias_hh_l0" in names) is config.get("bias", True)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_sequence_layers_match_pytorch(kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    ours = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype="float64")
    ours.load_state_dict({k: nb.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((6, 2, 3))
    h0 = np.random.default_rng(1).standard_normal((4, 2, 4))
    state = (h0, h0 * 0.5) if kind == "LSTM" else h0
    nb_state = tuple(nb.tensor(s) for s in state) if kind == "LSTM" else nb.tensor(state)
    th_state = tuple(torch.from_numpy(s) for s in state) if kind == "LSTM" else torch.from_numpy(h0)
    out, _ = ours(nb.tensor(x), nb_state)
    expected, _ = theirs(torch.from_numpy(x), th_state)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("config", [{}, {"num_layers": 2, "bidirectional": True}])
def test_an_lstm_with_a_projection_matches_pytorch(config):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(5, 6, proj_size=3, **config).double()
    ours = nn.LSTM(5, 6, proj_size=3, dtype="float64", **config)
    state = theirs.state_dict()
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in state.items()
    }
    ours.load_state_dict({k: nb.tensor(v.numpy()) for k, v in state.items()})
    count = 4 if config else 1
    rng = np.random.default_rng(0)
    x, h0, c0 = (
        rng.standard_normal((4, 2, 5)),
        rng.standard_normal((count, 2, 3)),
        rng.standard_normal((count, 2, 6)),
    )
    xs = nb.tensor(x, requires_grad=True)
    out, (h, c) = ours(xs, (nb.tensor(h0), nb.tensor(c0)))
    tx = torch.tensor(x, requires_grad=True)
    t_out, (t_h, t_c) = theirs(tx, (torch.tensor(h0), torch.tensor(c0)))
    for a, b in ((out, t_out), (h, t_h), (c, t_c)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    (out.sum() + c.sum()).backward()
    (t_out.sum() + t_c.sum()).backward()
    np.testing.assert_allclose(xs.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        ours.weight_hr_l0.grad.numpy(), theirs.weight_hr_l0.grad.numpy(), rtol=1e-9, atol=1e-12
    )


def test_a_projection_is_an_lstms_only_and_smaller_than_the_hidden_size():
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    for bad in (4, 5, -1):
        with pytest.raises(ValueError, match="proj_size"):
            nn.LSTM(3, 4, proj_size=bad)


def test_unbatched_input_initial_state_and_modes():
    model = nn.GRU(3, 4, num_layers=2, dtype="float64", generator=nb.Generator(2))
    x = np.random.default_rng(3).standard_normal((5, 3))
    h0 = np.random.default_rng(4).standard_normal((2, 4))
    out, h = model(nb.tensor(x), nb.tensor(h0))
    batched, hb = model(nb.tensor(x[:, None]), nb.tensor(h0[:, None]))
    assert out.shape == (5, 4) and h.shape == (2, 4)
    np.testing.assert_allclose(out.numpy(), batched.numpy()[:, 0], rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), hb.numpy()[:, 0], rtol=1e-12)
    lstm = nn.LSTM(3, 2, dtype="float64", generator=nb.Generator(5))
    counts = nt.check_modes(lambda t: lstm(t)[0].sum(axis=0), x[:, None])
    assert counts == {"outputs": 1, "gradients": 1}
    nt.gradcheck(lambda t: lstm(t)[1][1], [nb.tensor(x[:3, None], requires_grad=True)])


def test_dropout_between_layers_only_while_training():
    model = nn.LSTM(3, 4, num_layers=2, dropout=0.5, generator=nb.Generator(0))
    x = nb.tensor(np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32))
    model.eval()
    first, second = model(x)[0].numpy(), model(x)[0].numpy()
    np.testing.assert_array_equal(first, second)
    model.train()
    assert not np.array_equal(model(x)[0].numpy(), first)


def test_errors():
    with pytest.raises(nb.ShapeError, match="input must be"):
        nn.LSTM(3, 4)(nb.ones(5, 2, 7))
    with pytest.raises(nb.ShapeError, match="state of shape"):
        nn.GRU(3, 4)(nb.ones(5, 2, 3), nb.ones(2, 2, 4))
    with pytest.raises(ValueError):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError):
        nn.GRU(3, 4, num_layers=0)


def test_states_of_the_wrong_kind_or_shape_are_refused():
    x, h = nb.ones(2, 4), nb.ones(2, 3)
    with pytest.raises(nb.ArgumentError, match=r"tuple \(h, c\)"):
        nb.nn.LSTMCell(4, 3)(x, h)  # (its rows were taken as h and c)
    with pytest.raises(nb.ArgumentError, match="must be a tensor"):
        nb.nn.GRUCell(4, 3)(x, (h,))
    with pytest.raises(nb.ShapeError, match="expected"):
        nb.nn.GRUCell(4, 3)(x, nb.ones(1, 3))  # (it broadcast over the batch)
    with pytest.raises(nb.ArgumentError, match="must be a tensor"):
        nb.nn.GRU(4, 3)(nb.ones(5, 2, 4), (nb.ones(1, 2, 3),))
    with pytest.raises(nb.ArgumentError, match=r"tuple \(h_0, c_0\)"):
        nb.nn.LSTM(4, 3)(nb.ones(5, 2, 4), (nb.ones(1, 2, 3),))
    assert nb.nn.GRUCell(4, 3)(nb.ones(4), nb.ones(3)).shape == (3,)  # unbatched


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_lstm_fused_recurrence_equals_the_steps_op_by_op(config):
    """nn.LSTM runs each layer and direction as one lstm_sequence op; the cells' ops step by
    step (what a mask or a projection still uses) give the same outputs and gradients."""
    lstm = nn.LSTM(3, 4, generator=nb.Generator(0), **config).double()
    fused = nn.LSTM(3, 4, **config).double()
    fused.load_state_dict(lstm.state_dict())
    steps = lambda self, *a, **k: nn.modules.rnn._RNNBase._direction(self, *a, **k)
    lstm._direction = steps.__get__(lstm)  # this instance steps op by op
    data = np.random.default_rng(1).standard_normal((5, 2, 3))
    results = []
    for model in (lstm, fused):
        x = nb.tensor(data, requires_grad=True)
        out, (h, c) = model(x)
        (nb.sum(out * out) + nb.sum(h) + nb.sum(c * c)).backward()
        grads = [p.grad.numpy() for p in model.parameters()]
        results.append([out.numpy(), h.numpy(), c.numpy(), x.grad.numpy(), *grads])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_lstm_fused_recurrence_refuses_a_second_derivative():
    lstm = nn.LSTM(3, 4, generator=nb.Generator(0)).double()
    x = nb.tensor(np.ones((2, 1, 3)), requires_grad=True)
    (g,) = nb.grad(nb.sum(lstm(x)[0]), [x], create_graph=True)
    with pytest.raises(nb.errors.GradientError, match="no derivative"):
        nb.sum(g * g).backward()
