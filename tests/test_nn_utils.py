"""nn.utils (packing, packed RNNs, flat parameter vectors, clipping, weight/spectral norm) and
EmbeddingBag: numpy references written here, then PyTorch in float64 where installed."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.nn.utils import rnn as R
from nbflow.nn.utils.parametrizations import spectral_norm, weight_norm

RNG = np.random.default_rng(0)


def _close(a, b, tol=1e-10):
    a = a.numpy() if hasattr(a, "numpy") and not isinstance(a, np.ndarray) else a
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _np(t):
    """A torch tensor as numpy."""
    return t.detach().numpy()


# ---------------------------------------------------------------- packing, numpy references


def test_pack_padded_numpy_reference():
    x = RNG.standard_normal((4, 3, 2))
    lengths = [2, 4, 1]
    packed = R.pack_padded_sequence(nb.tensor(x), lengths, enforce_sorted=False)
    order = [1, 0, 2]  # by decreasing length
    expected = [x[t, b] for t in range(4) for b in order if lengths[b] > t]
    _close(packed.data, np.stack(expected), 0)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    assert packed.sorted_indices.tolist() == order
    padded, lens = R.pad_packed_sequence(packed, padding_value=-1.0)
    mask = np.arange(4)[:, None] < np.array(lengths)[None, :]
    _close(padded, np.where(mask[..., None], x, -1.0), 0)
    assert lens.tolist() == lengths


def test_pad_sequence_sides_and_unpad():
    seqs = [RNG.standard_normal((n, 2)) for n in (3, 1, 2)]
    right = R.pad_sequence([nb.tensor(s) for s in seqs], batch_first=True, padding_value=7.0)
    left = R.pad_sequence([nb.tensor(s) for s in seqs], padding_side="left")
    for b, s in enumerate(seqs):
        _close(right[b][: len(s)], s, 0)
        _close(right[b][len(s) :], np.full((3 - len(s), 2), 7.0), 0)
        _close(left[3 - len(s) :, b], s, 0)
    back = R.unpad_sequence(right, [3, 1, 2], batch_first=True)
    for got, s in zip(back, seqs):
        _close(got, s, 0)
    unpacked = R.unpack_sequence(R.pack_sequence([nb.tensor(s) for s in seqs], False))
    for got, s in zip(unpacked, seqs):
        _close(got, s, 0)


def test_total_length_and_gradient_through_packing():
    x = nb.tensor(RNG.standard_normal((3, 2, 2)), requires_grad=True)
    packed = R.pack_padded_sequence(x, [3, 2])
    padded, _ = R.pad_packed_sequence(packed, batch_first=True, total_length=5)
    assert padded.shape == (2, 5, 2)
    nb.sum(padded).backward()
    _close(x.grad, np.array([1, 1, 1, 1, 1, 0])[:, None].repeat(2, 1).reshape(3, 2, 2), 0)
    with pytest.raises(ValueError, match="total_length"):
        R.pad_packed_sequence(packed, total_length=2)


@pytest.mark.parametrize(
    "lengths, match",
    [([1, 3], "decreasing order"), ([3, 0], "greater than 0"), ([5, 2], "exceed")],
)
def test_packing_errors(lengths, match):
    with pytest.raises(nb.ShapeError, match=match):
        R.pack_padded_sequence(nb.zeros((3, 2, 1)), lengths)


# ---------------------------------------------------------------- packed RNNs


def _masked_rnn_reference(x, lengths, w_ih, w_hh, b):
    """A tanh RNN in numpy, each sequence stepped only to its length."""
    h = np.zeros((x.shape[1], w_hh.shape[0]))
    outs = []
    for t in range(x.shape[0]):
        new = np.tanh(x[t] @ w_ih.T + h @ w_hh.T + b)
        alive = (np.array(lengths) > t)[:, None]
        h = np.where(alive, new, h)
        outs.append(h)
    return np.stack(outs), h


def test_packed_rnn_numpy_reference():
    m = nb.nn.RNN(2, 3, dtype=nb.float64)
    x = RNG.standard_normal((4, 3, 2))
    lengths = [4, 2, 1]
    out, h = m(R.pack_padded_sequence(nb.tensor(x), lengths))
    b = (m.bias_ih_l0 + m.bias_hh_l0).numpy()
    ref_out, ref_h = _masked_rnn_reference(
        x, lengths, m.weight_ih_l0.numpy(), m.weight_hh_l0.numpy(), b
    )
    _close(h[0], ref_h)
    padded, _ = R.pad_packed_sequence(out)
    mask = (np.arange(4)[:, None] < np.array(lengths))[..., None]
    _close(padded, np.where(mask, ref_out, 0.0))


def _pair(cls, torch, **kwargs):
    tm = getattr(torch.nn, cls)(3, 4, **kwargs).double()
    m = getattr(nb.nn, cls)(3, 4, dtype=nb.float64, **kwargs)
    m.load_state_dict({k: nb.tensor(_np(v)) for k, v in tm.state_dict().items()})
    return tm, m


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_rnn_matches_torch(cls, bidirectional):
    torch = pytest.importorskip("torch")
    tm, m = _pair(cls, torch, num_layers=2, bidirectional=bidirectional)
    x, lengths = RNG.standard_normal((5, 3, 3)), [2, 5, 3]
    h0 = RNG.standard_normal((4 if bidirectional else 2, 3, 4))
    tx = torch.tensor(x, requires_grad=True)
    th0 = torch.tensor(h0, requires_grad=True)
    thx = (th0, th0 * 0.5) if cls == "LSTM" else th0
    tout, tstate = tm(torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, False, False), thx)
    nx, nh0 = nb.tensor(x, requires_grad=True), nb.tensor(h0, requires_grad=True)
    nhx = (nh0, nh0 * 0.5) if cls == "LSTM" else nh0
    out, state = m(R.pack_padded_sequence(nx, lengths, enforce_sorted=False), nhx)
    _close(out.data, _np(tout.data))
    tstates = tstate if cls == "LSTM" else (tstate,)
    states = state if cls == "LSTM" else (state,)
    for a, b in zip(states, tstates):
        _close(a, _np(b))
    (torch.sum(tout.data**2) + sum(s.sum() for s in tstates)).backward()
    loss = nb.sum(out.data**2)
    for s in states:
        loss = loss + nb.sum(s)
    loss.backward()
    _close(nx.grad, _np(tx.grad))
    _close(nh0.grad, _np(th0.grad))
    for name, p in m.named_parameters():
        _close(p.grad, _np(dict(tm.named_parameters())[name].grad))


def test_packed_lstm_under_jit_equals_eager():
    m = nb.nn.LSTM(3, 4, dtype=nb.float64)
    x = nb.tensor(RNG.standard_normal((4, 2, 3)))

    def run(x, lengths):
        out, (h, c) = m(R.pack_padded_sequence(x, lengths))
        return out.data, h, c

    jitted = nb.jit(run)
    for lengths in ((4, 2), (3, 3)):  # the lengths are Python ints: one trace each
        for got, want in zip(jitted(x, lengths), run(x, lengths)):
            _close(got, want)


# ---------------------------------------------------------------- vectors and clipping


def test_parameters_to_vector_round_trip():
    ps = [nb.nn.Parameter(nb.tensor(RNG.standard_normal(s))) for s in ((2, 3), (4,))]
    vec = nb.nn.utils.parameters_to_vector(ps)
    _close(vec, np.concatenate([p.numpy().ravel() for p in ps]), 0)
    nb.nn.utils.vector_to_parameters(nb.arange(10, dtype=nb.float64), ps)
    _close(ps[0], np.arange(6.0).reshape(2, 3), 0)
    _close(ps[1], np.arange(6.0, 10.0), 0)
    with pytest.raises(nb.ShapeError):
        nb.nn.utils.vector_to_parameters(nb.zeros(3), ps)


def test_clip_grad_norm_options():
    p = nb.nn.Parameter(nb.zeros(3, dtype=nb.float64))
    p.grad = nb.tensor([3.0, 4.0, 0.0], dtype=nb.float64)
    total = nb.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True, foreach=True)
    assert abs(total.item() - 5.0) < 1e-12
    _close(p.grad, np.array([3.0, 4.0, 0.0]) / (5.0 + 1e-6))
    assert (
        abs(
            nb.nn.utils.get_total_norm([nb.tensor([3.0, -4.0], dtype=nb.float64)], "inf").item() - 4
        )
        < 1e-12
    )
    p.grad = nb.tensor([np.inf, 1.0, 0.0], dtype=nb.float64)
    with pytest.raises(RuntimeError, match="non-finite"):
        nb.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    p.grad = nb.tensor([3.0, 4.0, 0.0], dtype=nb.float64)  # parameters given as a generator
    nb.nn.utils.clip_grad_norm_((t for t in [p]), 1.0, error_if_nonfinite=True)
    _close(p.grad, np.array([3.0, 4.0, 0.0]) / (5.0 + 1e-6))
    q = nb.nn.Parameter(nb.zeros(2, dtype=nb.float64))
    q.grad = nb.tensor([6.0, 8.0], dtype=nb.float64)
    nb.nn.utils.clip_grads_with_norm_([q], 5.0, nb.tensor(10.0, dtype=nb.float64))
    _close(q.grad, np.array([6.0, 8.0]) * 5.0 / (10.0 + 1e-6))


# ---------------------------------------------------------------- parametrizations


def test_weight_norm_parametrization_numpy_and_names():
    lin = weight_norm(nb.nn.Linear(3, 2, dtype=nb.float64))
    keys = set(lin.state_dict())
    assert {"parametrizations.weight.original0", "parametrizations.weight.original1"} <= keys
    g = lin.parametrizations.weight.original0
    v = lin.parametrizations.weight.original1
    assert g.shape == (2, 1)
    with nb.no_grad():
        g.copy_(nb.tensor([[2.0], [3.0]]))
    vn = v.numpy()
    _close(lin.weight, vn / np.linalg.norm(vn, axis=1, keepdims=True) * [[2.0], [3.0]])


def test_weight_norm_matches_torch_with_gradients():
    torch = pytest.importorskip("torch")
    tl = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2).double())
    nl = weight_norm(nb.nn.Linear(3, 2, dtype=nb.float64))
    nl.load_state_dict({k: nb.tensor(_np(v)) for k, v in tl.state_dict().items()})
    x = RNG.standard_normal((4, 3))
    tl(torch.tensor(x)).pow(2).sum().backward()
    y = nl(nb.tensor(x))
    nb.sum(y**2).backward()
    _close(y, _np(tl(torch.tensor(x))))
    for name, p in nl.named_parameters():
        _close(p.grad, _np(dict(tl.named_parameters())[name].grad))


def test_spectral_norm_matches_torch_train_and_eval():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)  # (the Linear's initial weight: reproducible runs)
    tl = torch.nn.utils.parametrizations.spectral_norm(
        torch.nn.Linear(5, 4).double(), n_power_iterations=2
    )
    nl = spectral_norm(nb.nn.Linear(5, 4, dtype=nb.float64), n_power_iterations=2)
    assert set(nl.state_dict()) == set(tl.state_dict())
    nl.load_state_dict({k: nb.tensor(_np(v)) for k, v in tl.state_dict().items()})
    x = RNG.standard_normal((3, 5))
    for _ in range(2):  # training: each forward refines u and v
        _close(nl(nb.tensor(x)), _np(tl(torch.tensor(x))))
    _close(nl.parametrizations.weight[0]._u, _np(tl.parametrizations.weight[0]._u))
    nl.eval(), tl.eval()
    u = nl.parametrizations.weight[0]._u.numpy().copy()
    _close(nl(nb.tensor(x)), _np(tl(torch.tensor(x))))
    _close(nl.parametrizations.weight[0]._u, u, 0)  # eval: no power iteration
    # the weight is divided by the power iteration's estimate u^T W v (PyTorch's), not by the
    # exact largest singular value, which two iterations need not reach (a close second one)
    w = nl.parametrizations.weight.original.numpy()
    snorm = nl.parametrizations.weight[0]
    sigma = snorm._u.numpy() @ w @ snorm._v.numpy()
    _close(nl.weight, w / sigma, 1e-10)
    assert sigma <= np.linalg.svd(w, compute_uv=False)[0] * (1 + 1e-12)


def test_remove_parametrizations_keeps_value():
    from nbflow.nn.utils import parametrize

    lin = weight_norm(nb.nn.Linear(3, 2, dtype=nb.float64))
    value = lin.weight.numpy().copy()
    parametrize.remove_parametrizations(lin, "weight")
    assert not parametrize.is_parametrized(lin)
    assert type(lin) is nb.nn.Linear
    _close(lin.weight, value, 0)
    assert "weight" in dict(lin.named_parameters())


# ---------------------------------------------------------------- EmbeddingBag


def _bag_reference(w, idx, offsets, mode, padding_idx=None, psw=None):
    """Each bag's rows reduced in numpy, the padding entries left out, empty bags zero."""
    ends = list(offsets[1:]) + [len(idx)]
    out = []
    for start, end in zip(offsets, ends):
        keep = [i for i in range(start, end) if idx[i] != padding_idx]
        rows = w[idx[keep]] * (psw[keep, None] if psw is not None else 1.0)
        if not keep:
            out.append(np.zeros(w.shape[1]))
        else:
            out.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    return np.stack(out)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4])
def test_embedding_bag_numpy_reference(mode, padding_idx):
    bag = nb.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx, dtype=nb.float64)
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0]), np.array([0, 4, 4, 7])
    psw = RNG.random(9) if mode == "sum" else None
    got = bag(nb.tensor(idx), nb.tensor(offsets), None if psw is None else nb.tensor(psw))
    _close(got, _bag_reference(bag.weight.numpy(), idx, offsets, mode, padding_idx, psw))
    two_d = bag(nb.tensor(idx[:8].reshape(2, 4)))
    _close(two_d, _bag_reference(bag.weight.numpy(), idx[:8], np.array([0, 4]), mode, padding_idx))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_torch(mode):
    torch = pytest.importorskip("torch")
    w = RNG.standard_normal((10, 3))
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7]), np.array([0, 4, 4, 7, 10])
    tw, nw = torch.tensor(w, requires_grad=True), nb.tensor(w, requires_grad=True)
    kw = {"mode": mode, "padding_idx": 4, "include_last_offset": True}
    psw = RNG.random(10) if mode == "sum" else None
    tpsw = None if psw is None else torch.tensor(psw)
    to = torch.nn.functional.embedding_bag(
        torch.tensor(idx), tw, torch.tensor(offsets), per_sample_weights=tpsw, **kw
    )
    npsw = None if psw is None else nb.tensor(psw)
    no = nb.nn.functional.embedding_bag(
        nb.tensor(idx), nw, nb.tensor(offsets), per_sample_weights=npsw, **kw
    )
    _close(no, _np(to))
    (to**3).sum().backward()
    nb.sum(no**3).backward()
    _close(nw.grad, _np(tw.grad))


def test_embedding_bag_errors():
    w = nb.zeros((4, 2))
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        nb.nn.functional.embedding_bag(
            nb.tensor([0, 1]), w, nb.tensor([0]), mode="mean", per_sample_weights=nb.ones(2)
        )
    with pytest.raises(ValueError, match="offsets has to be None"):
        nb.nn.functional.embedding_bag(nb.tensor([[0, 1]]), w, nb.tensor([0]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize(
    "offsets, last",
    [([0, 1], False), ([0, 0, 3], False), ([0, 2, 5], True), ([0], False), ([0, 5], True)],
)
def test_embedding_bag_with_offsets_under_jit_equals_eager(mode, offsets, last):
    weight = nb.tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    idx, off = nb.tensor([0, 2, 4, 5, 1]), nb.tensor(offsets)

    def bag(i, w, o):
        return nb.nn.functional.embedding_bag(i, w, o, mode=mode, include_last_offset=last)

    want = bag(idx, weight, off).numpy()
    np.testing.assert_array_equal(nb.jit(bag)(idx, weight, off).numpy(), want)  # was TypeError


def test_embedding_bag_under_jit_checks_its_offsets_as_it_runs():
    weight, idx = nb.ones(6, 2), nb.tensor([0, 2, 4])
    bag = nb.jit(lambda i, w, o: nb.nn.functional.embedding_bag(i, w, o, mode="sum"))
    assert bag(idx, weight, nb.tensor([0, 1])).shape == (2, 2)
    for bad in ([1, 2], [0, 2, 1], [0, 4], [0, -1]):  # (eager mode: ShapeError)
        with pytest.raises(nb.OutOfRangeError, match="embedding_bag: offsets"):
            bag(idx, weight, nb.tensor(bad))
