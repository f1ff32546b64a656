"""scaled_dot_product_attention and nn.MultiheadAttention: against a numpy reference (masks,
causal, scale, layouts), PyTorch when installed, gradients and eager vs graph mode."""

import math

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt

RNG = np.random.default_rng(0)


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _sdpa(q, k, v, allowed=None, add=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    if add is not None:
        s = s + add
    return _softmax(s) @ v


@pytest.mark.parametrize("case", ["plain", "causal", "scale", "bool mask", "float mask"])
def test_scaled_dot_product_attention_matches_numpy(case):
    q, k, v = (
        RNG.standard_normal((2, 3, 5, 4)),
        RNG.standard_normal((2, 3, 6, 4)),
        RNG.random((2, 3, 6, 4)),
    )
    allowed = RNG.random((5, 6)) > 0.4
    allowed[:, 0] = True  # every query sees something
    add = RNG.standard_normal((5, 6))
    kwargs, ref = {}, {}
    if case == "causal":
        kwargs["is_causal"], ref["allowed"] = True, np.tril(np.ones((5, 6), bool))
    if case == "scale":
        kwargs["scale"] = ref["scale"] = 0.3
    if case == "bool mask":
        kwargs["attn_mask"], ref["allowed"] = nb.tensor(allowed), allowed
    if case == "float mask":
        kwargs["attn_mask"], ref["add"] = nb.tensor(add), add
    got = F.scaled_dot_product_attention(nb.tensor(q), nb.tensor(k), nb.tensor(v), **kwargs)
    np.testing.assert_allclose(got.numpy(), _sdpa(q, k, v, **ref), rtol=1e-10, atol=1e-12)


def _mha_reference(m, q, k, v, allowed):
    params = {n: p.numpy() for n, p in m.named_parameters()}
    w_q, w_k, w_v = np.split(params["in_proj_weight"], 3)
    b = np.split(params.get("in_proj_bias", np.zeros(3 * m.embed_dim)), 3)
    h, d = m.num_heads, m.head_dim

    def heads(x, w, bias):  # (S, N, E) -> (N, h, S, d)
        y = x @ w.T + bias
        return y.reshape(x.shape[0], x.shape[1], h, d).transpose(1, 2, 0, 3)

    out = _sdpa(heads(q, w_q, b[0]), heads(k, w_k, b[1]), heads(v, w_v, b[2]), allowed)
    out = out.transpose(2, 0, 1, 3).reshape(q.shape[0], q.shape[1], m.embed_dim)
    return out @ params["out_proj.weight"].T + params.get("out_proj.bias", 0.0)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_numpy(batch_first):
    m = nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype="float64")
    q, kv = RNG.standard_normal((5, 3, 8)), RNG.standard_normal((4, 3, 8))
    blocked = RNG.random((5, 4)) > 0.7
    blocked[:, 0] = False
    padding = np.zeros((3, 4), bool)
    padding[1, 3] = True
    allowed = ~blocked[None, None] & ~padding[:, None, None, :]
    expected = _mha_reference(m, q, kv, kv, allowed)
    swap = (lambda a: np.ascontiguousarray(np.swapaxes(a, 0, 1))) if batch_first else (lambda a: a)
    out, weights = m(
        nb.tensor(swap(q)), nb.tensor(swap(kv)), nb.tensor(swap(kv)),
        key_padding_mask=nb.tensor(padding), attn_mask=nb.tensor(blocked),
    )  # fmt: skip
    np.testing.assert_allclose(swap(out.numpy()), expected, rtol=1e-10, atol=1e-12)
    assert weights.shape == (3, 5, 4)
    np.testing.assert_allclose(weights.numpy().sum(axis=-1), 1.0, rtol=1e-12)
    assert (weights.numpy()[1, :, 3] == 0).all()  # the padded key gets no weight
    out1, w1 = m(nb.tensor(q[:, 0]), nb.tensor(kv[:, 0]), nb.tensor(kv[:, 0]), need_weights=False)
    assert w1 is None and out1.shape == (5, 8)


def test_multihead_attention_matches_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 4).double()
    ours = nn.MultiheadAttention(8, 4, dtype="float64")
    ours.load_state_dict({k: nb.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    q, kv = RNG.standard_normal((5, 2, 8)), RNG.standard_normal((6, 2, 8))
    mask = RNG.standard_normal((5, 6))
    out, w = ours(nb.tensor(q), nb.tensor(kv), nb.tensor(kv), attn_mask=nb.tensor(mask),
                  average_attn_weights=False)  # fmt: skip
    t = [torch.from_numpy(a) for a in (q, kv, kv)]
    t_out, t_w = theirs(*t, attn_mask=torch.from_numpy(mask), average_attn_weights=False)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), t_w.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_attention_gradients_and_modes():
    m = nn.MultiheadAttention(4, 2, dtype="float64", generator=nb.Generator(0))
    x = RNG.standard_normal((3, 2, 4))
    nt.gradcheck(lambda t: m(t, t, t)[0], [nb.tensor(x, requires_grad=True)])
    counts = nt.check_modes(lambda t: m(t, t, t, is_causal=True)[0], x)
    assert counts == {"outputs": 1, "gradients": 1}
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(6, 4)


def _layer_by_hand(layer, x):
    """The post-norm encoder layer's equations, with its own submodules (each tested above or
    in test_nn against references): x = norm1(x + attn(x)); norm2(x + ff(x))."""
    attn, _ = layer.self_attn(x, x, x, need_weights=False)
    x = layer.norm1(x + attn)
    ff = layer.linear2(nb.relu(layer.linear1(x)))
    return layer.norm2(x + ff)


def test_transformer_encoder_layer_and_stack():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype="float64")
    x = nb.tensor(RNG.standard_normal((5, 3, 8)))
    np.testing.assert_allclose(layer(x).numpy(), _layer_by_hand(layer, x).numpy(), rtol=1e-12)
    stack = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8, dtype="float64"))
    first, second = stack.layers
    assert first.linear1.weight is not second.linear1.weight  # copies, not shared
    expected = stack.norm(_layer_by_hand(second, _layer_by_hand(first, x)))
    np.testing.assert_allclose(stack(x).numpy(), expected.numpy(), rtol=1e-12)
    names = {n for n, _ in stack.named_parameters()}
    assert "layers.1.self_attn.in_proj_weight" in names and "layers.0.norm2.bias" in names
    counts = nt.check_modes(lambda t: stack(t, is_causal=True), x.numpy())
    assert counts == {"outputs": 1, "gradients": 1}


def test_transformer_encoder_matches_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    kw = {"dim_feedforward": 16, "dropout": 0.0, "norm_first": True, "activation": "gelu"}
    theirs = torch.nn.TransformerEncoderLayer(8, 2, batch_first=True, **kw).double()
    theirs = torch.nn.TransformerEncoder(theirs, 2, enable_nested_tensor=False).double().eval()
    ours = nn.TransformerEncoderLayer(8, 2, batch_first=True, dtype="float64", **kw)
    ours = nn.TransformerEncoder(ours, 2)
    ours.load_state_dict({k: nb.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((3, 5, 8))
    padding = np.zeros((3, 5), bool)
    padding[0, 4] = True
    got = ours(nb.tensor(x), src_key_padding_mask=nb.tensor(padding)).numpy()
    expected = theirs(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(padding))
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_a_query_the_mask_leaves_nothing_attends_to_nothing(kind):
    # PyTorch's safe softmax: an empty row's weights are 0, its output 0, and no NaN reaches
    # the gradients of the other rows or of its own inputs
    q, k, v = (RNG.standard_normal((2, 3, 4)) for _ in range(3))
    allowed = RNG.random((3, 3)) > 0.3
    allowed[0], allowed[1:, 1] = False, True  # query 0 sees nothing
    mask = allowed if kind == "bool" else np.where(allowed, 0.0, -np.inf)
    with np.errstate(invalid="ignore"):  # (the reference's empty row: NaN, then set)
        want = _sdpa(q, k, v, allowed)
    want[:, 0] = 0.0
    args = [nb.tensor(a, requires_grad=True) for a in (q, k, v)]
    got = F.scaled_dot_product_attention(*args, attn_mask=nb.tensor(mask))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    nt.gradcheck(lambda *a: F.scaled_dot_product_attention(*a, attn_mask=nb.tensor(mask)), args)
    gq = nb.grad([nb.sum(got * got)], [args[0]])[0].numpy()
    assert np.all(gq[:, 0] == 0) and np.isfinite(gq).all()
