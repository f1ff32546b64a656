"""MultiheadAttention's full signature (kdim / vdim, add_bias_kv, add_zero_attn, masks,
unbatched inputs), TransformerEncoderLayer, TransformerDecoderLayer, their stacks and
nn.Transformer: equal to PyTorch's (float64, identical weights, 1e-10) in outputs and in the
gradients of the inputs and parameters; a numpy reference of a decoder layer; PyTorch's
state_dict keys; errors naming the module and the argument; a training step under
@nbflow.jit equal to eager."""

import math

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt

RNG = np.random.default_rng(0)
pytestmark = [  # PyTorch's advice on its fast paths, not about these tests
    pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning"),
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"),
]
TOL = {"rtol": 1e-10, "atol": 1e-12}


def _load(ours, theirs):
    """theirs' weights into ours, after checking the state_dict keys (in order) agree."""
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict({k: nb.tensor(v.detach().numpy()) for k, v in state.items()})
    return ours


def _pair(torch, array):
    """The same float64 values (or mask) as an nbflow tensor and a torch one."""
    if array is None:
        return None, None
    return nb.tensor(array), torch.from_numpy(array)


def _padding(shape, rows):
    """A bool key padding mask with the last key of each row in `rows` padded."""
    mask = np.zeros(shape, bool)
    for r in rows:
        mask[r, -1] = True
    return mask


def _blocked(length, source):
    """A random bool attention mask (True: not allowed) leaving key 0 open to every query."""
    mask = RNG.random((length, source)) > 0.6
    mask[:, 0] = False
    return mask


# ---------------------------------------------------------------- MultiheadAttention

MHA_CASES = {
    "kdim vdim, bool masks": (
        {"kdim": 5, "vdim": 3},
        {"batch": 2, "attn": "bool2", "padding": "bool"},
    ),
    "bias_kv, float 3-D mask, per head": (
        {"add_bias_kv": True},
        {"batch": 2, "attn": "float3", "padding": "bool", "average_attn_weights": False},
    ),
    "zero_attn, batch_first, float padding": (
        {"add_zero_attn": True, "batch_first": True},
        {"batch": 3, "attn": "bool3", "padding": "float"},
    ),
    "all, unbatched": (
        {"add_bias_kv": True, "add_zero_attn": True, "kdim": 6, "vdim": 2},
        {"batch": None, "attn": "float3", "padding": "bool"},
    ),
    "no bias, self-attention, causal": (
        {"bias": False},
        {"batch": 2, "attn": "causal", "self": True, "need_weights": False},
    ),
}


def _mha_inputs(m, batch, attn, padding=None, self=False, **_):
    """query, key, value, key_padding_mask, attn_mask as numpy arrays for module m."""
    length, source, heads = 4, 4 if self else 5, m.num_heads
    lead = (length,) if batch is None else (length, batch)
    q = RNG.standard_normal((*lead, m.embed_dim))
    k = RNG.standard_normal((source, *lead[1:], m.kdim))
    v = RNG.standard_normal((source, *lead[1:], m.vdim))
    if self:
        k = v = q
    if m.batch_first:
        q, k, v = (np.ascontiguousarray(np.swapaxes(a, 0, 1)) for a in (q, k, v))
    n = 1 if batch is None else batch
    masks = {
        "bool2": _blocked(length, source),
        "bool3": np.stack([_blocked(length, source) for _ in range(n * heads)]),
        "float3": RNG.standard_normal((n * heads, length, source)),
        "causal": np.triu(np.full((length, source), -np.inf), 1),
        None: None,
    }
    rows = [0] if batch is None else [n - 1]
    pad = None
    if padding is not None:
        pad = _padding((n, source), rows)
        if padding == "float":
            pad = np.where(pad, -1e9, RNG.standard_normal((n, source)))
        pad = pad[0] if batch is None else pad
    return q, k, v, pad, masks[attn]


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    build, call = MHA_CASES[case]
    torch.manual_seed(1)
    theirs = torch.nn.MultiheadAttention(4, 2, **build).double()
    ours = _load(nn.MultiheadAttention(4, 2, dtype="float64", **build), theirs)
    q, k, v, pad, attn = _mha_inputs(ours, **call)
    kw = {key: call[key] for key in ("need_weights", "average_attn_weights") if key in call}
    kw["is_causal"] = call["attn"] == "causal"
    (nq, tq), (nk, tk), (nv, tv) = (_pair(torch, a) for a in (q, k, v))
    if call.get("self"):
        nk = nv = nq
        tk = tv = tq
    (npad, tpad), (nattn, tattn) = _pair(torch, pad), _pair(torch, attn)
    out, w = ours(nq, nk, nv, key_padding_mask=npad, attn_mask=nattn, **kw)
    t_out, t_w = theirs(tq, tk, tv, key_padding_mask=tpad, attn_mask=tattn, **kw)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), **TOL)
    if t_w is None:
        assert w is None
    else:
        np.testing.assert_allclose(w.numpy(), t_w.detach().numpy(), **TOL)


def _grads_match(torch, ours, theirs, our_inputs, their_inputs, our_out, their_out):
    """Backward of the same random cotangent: input and parameter gradients agree."""
    cotangent = RNG.standard_normal(tuple(our_out.shape))
    nb.sum(our_out * nb.tensor(cotangent)).backward()
    (their_out * torch.from_numpy(cotangent)).sum().backward()
    for i, (a, b) in enumerate(zip(our_inputs, their_inputs)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **TOL, err_msg=f"input {i}")
    theirs_by_name = dict(theirs.named_parameters())
    names = [name for name, _ in ours.named_parameters()]
    assert names == list(theirs_by_name)
    for name, p in ours.named_parameters():
        expected = theirs_by_name[name].grad.numpy()
        np.testing.assert_allclose(p.grad.numpy(), expected, **TOL, err_msg=name)


def test_multihead_attention_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    build = {"kdim": 5, "vdim": 3, "add_bias_kv": True, "add_zero_attn": True}
    theirs = torch.nn.MultiheadAttention(4, 2, **build).double()
    ours = _load(nn.MultiheadAttention(4, 2, dtype="float64", **build), theirs)
    q, k, v, pad, attn = _mha_inputs(ours, batch=2, attn="bool2", padding="bool")
    mine = [nb.tensor(a, requires_grad=True) for a in (q, k, v)]
    yours = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out, _ = ours(*mine, nb.tensor(pad), attn_mask=nb.tensor(attn))
    t_out, _ = theirs(*yours, torch.from_numpy(pad), attn_mask=torch.from_numpy(attn))
    _grads_match(torch, ours, theirs, mine, yours, out, t_out)


# ---------------------------------------------------------------- the layers

LAYER_CASES = {
    "post-norm, relu, causal": (
        {},
        {"batch": 2, "tgt_causal": True, "memory_padding": True},
    ),
    "norm_first, gelu, batch_first, padding": (
        {"norm_first": True, "activation": "gelu", "batch_first": True},
        {"batch": 3, "tgt_padding": True, "memory_mask": "bool"},
    ),
    "unbatched, callable, no bias, eps": (
        {"activation": "silu", "bias": False, "layer_norm_eps": 1e-3},
        {"batch": None, "tgt_mask": "float", "memory_mask": "float"},
    ),
    # no mask: the self-attention is one self_attention op
    "batch_first, no masks": ({"batch_first": True}, {"batch": 3}),
    "unbatched, no masks": ({}, {"batch": None}),
}


def _activations(torch, build):
    """build with a callable activation named by "silu": nbflow's and torch's own."""
    if build.get("activation") != "silu":
        return build, build
    return {**build, "activation": F.silu}, {**build, "activation": torch.nn.functional.silu}


def _layer_inputs(batch_first, batch, tgt_causal=False, tgt_padding=False, tgt_mask=None,
                  memory_padding=False, memory_mask=None):  # fmt: skip
    """tgt, memory (numpy, in the layer's layout) and the masks, by their argument names."""
    length, source, d = 4, 5, 8
    lead = () if batch is None else (batch,)
    tgt = RNG.standard_normal((length, *lead, 8))
    memory = RNG.standard_normal((source, *lead, d))
    if batch_first and batch is not None:
        tgt, memory = (np.ascontiguousarray(np.swapaxes(a, 0, 1)) for a in (tgt, memory))
    n = 1 if batch is None else batch
    squeeze = (lambda a: a[0]) if batch is None else (lambda a: a)
    masks = {}
    if tgt_causal:
        masks["tgt_mask"] = np.triu(np.full((length, length), -np.inf), 1)
        masks["tgt_is_causal"] = True
    if tgt_mask == "float":
        masks["tgt_mask"] = RNG.standard_normal((length, length))
    if tgt_padding:
        masks["tgt_key_padding_mask"] = squeeze(_padding((n, length), [n - 1]))
    if memory_padding:
        masks["memory_key_padding_mask"] = squeeze(_padding((n, source), [0]))
    if memory_mask == "bool":
        masks["memory_mask"] = _blocked(length, source)
    if memory_mask == "float":
        masks["memory_mask"] = RNG.standard_normal((length, source))
    return tgt, memory, masks


def _split(torch, masks):
    """The masks as nbflow tensors and as torch tensors (flags as they are)."""
    ours, theirs = {}, {}
    for name, value in masks.items():
        if isinstance(value, np.ndarray):
            ours[name], theirs[name] = _pair(torch, value)
        else:
            ours[name] = theirs[name] = value
    return ours, theirs


@pytest.mark.parametrize("case", list(LAYER_CASES))
def test_decoder_layer_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    build, call = LAYER_CASES[case]
    mine, yours = _activations(torch, build)
    torch.manual_seed(3)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 16, **yours).double().eval()
    ours = _load(nn.TransformerDecoderLayer(8, 2, 16, dtype="float64", **mine), theirs).eval()
    tgt, memory, masks = _layer_inputs(build.get("batch_first", False), **call)
    our_masks, their_masks = _split(torch, masks)
    got = ours(nb.tensor(tgt), nb.tensor(memory), **our_masks)
    expected = theirs(torch.from_numpy(tgt), torch.from_numpy(memory), **their_masks)
    np.testing.assert_allclose(got.numpy(), expected.detach().numpy(), **TOL)


@pytest.mark.parametrize("case", list(LAYER_CASES))
def test_encoder_layer_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    build, call = LAYER_CASES[case]
    mine, yours = _activations(torch, build)
    torch.manual_seed(4)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, **yours).double().eval()
    ours = _load(nn.TransformerEncoderLayer(8, 2, 16, dtype="float64", **mine), theirs).eval()
    src, _, masks = _layer_inputs(build.get("batch_first", False), **call)
    renames = {"tgt_mask": "src_mask", "tgt_key_padding_mask": "src_key_padding_mask"}
    renames["tgt_is_causal"] = "is_causal"
    masks = {renames[k]: v for k, v in masks.items() if k in renames}
    our_masks, their_masks = _split(torch, masks)
    with torch.no_grad():  # (PyTorch takes its fused fast path where it can)
        expected = theirs(torch.from_numpy(src), **their_masks)
    np.testing.assert_allclose(ours(nb.tensor(src), **our_masks).numpy(), expected.numpy(), **TOL)


def test_decoder_layer_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    build = {"norm_first": True, "activation": "gelu", "batch_first": True}
    torch.manual_seed(5)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **build).double()
    ours = _load(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype="float64", **build),
                 theirs)  # fmt: skip
    tgt, memory, masks = _layer_inputs(True, 2, tgt_causal=True, memory_padding=True)
    our_masks, their_masks = _split(torch, masks)
    mine = [nb.tensor(a, requires_grad=True) for a in (tgt, memory)]
    yours = [torch.tensor(a, requires_grad=True) for a in (tgt, memory)]
    out, t_out = ours(*mine, **our_masks), theirs(*yours, **their_masks)
    _grads_match(torch, ours, theirs, mine, yours, out, t_out)


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_gradients_match_pytorch(batch_first):
    """No mask: the self-attention runs as the self_attention op, its gradient as
    self_attention_grad."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(6)
    build = {"dropout": 0.0, "batch_first": batch_first}
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, **build).double()
    ours = _load(nn.TransformerEncoderLayer(8, 2, 16, dtype="float64", **build), theirs)
    src, _, _ = _layer_inputs(batch_first, 3)
    mine, yours = [nb.tensor(src, requires_grad=True)], [torch.tensor(src, requires_grad=True)]
    _grads_match(torch, ours, theirs, mine, yours, ours(*mine), theirs(*yours))


def _qkv(shape, seed):
    rng = np.random.default_rng(seed)
    return nb.tensor(rng.standard_normal(shape), dtype=nb.float64, requires_grad=True)


def test_self_attention_second_and_third_derivatives():
    """self_attention's gradient is one fused op; that op's own gradient is composed in ops:
    second derivatives against finite differences, and self_attention_grad's (third)."""
    qkv, g = _qkv((2, 3, 12), 0), _qkv((2, 3, 4), 1)
    nt.gradgradcheck(lambda t: nb.self_attention(t, heads=2, scale=0.7), [qkv])
    nt.gradgradcheck(lambda a, t: nb.self_attention_grad(a, t, heads=2, scale=0.7), [g, qkv])


def test_self_attention_grad_matches_the_op_by_op_gradient():
    """The fused gradient against the gradient of the same attention built from single ops
    (split, per-head reshape, matmul, softmax), in float32 with 4 heads."""
    rng = np.random.default_rng(2)
    qkv = rng.standard_normal((5, 7, 48)).astype(np.float32)
    g = rng.standard_normal((5, 7, 16)).astype(np.float32)
    mine = nb.self_attention_grad(nb.tensor(g), nb.tensor(qkv), heads=4, scale=0.5).numpy()
    t = nb.tensor(qkv, requires_grad=True)
    heads = [x.reshape(5, 7, 4, 4).permute(0, 2, 1, 3) for x in nb.split(t, 16, axis=-1)]
    weights = nb.softmax(nb.matmul(heads[0], heads[1].transpose(-1, -2)) * 0.5, axis=-1)
    out = nb.matmul(weights, heads[2]).permute(0, 2, 1, 3).reshape(5, 7, 16)
    out.backward(nb.tensor(g))
    np.testing.assert_allclose(mine, t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_self_attention_grad_refuses_a_gradient_of_the_wrong_shape():
    with pytest.raises(nb.ShapeError, match=r"self_attention_grad\(.*g of shape \(2, 3, 5\)"):
        nb.self_attention_grad(nb.ones((2, 3, 5)), nb.ones((2, 3, 12)), heads=2, scale=1.0)


def test_a_used_layer_with_an_op_activation_deep_copies():
    """A layer whose activation is an op (its kernels compiled by a first call) stacks."""
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation=F.gelu, dropout=0.0, dtype="float64")
    x = nb.tensor(RNG.standard_normal((3, 2, 8)))
    layer(x)
    stack = nn.TransformerEncoder(layer, 2)
    assert stack.layers[1].activation is F.gelu
    assert stack.layers[1].linear1.weight is not layer.linear1.weight
    np.testing.assert_allclose(stack.layers[0](x).numpy(), layer(x).numpy(), rtol=1e-12)


# ---------------------------------------------------------------- nn.Transformer


def _small_transformer(lib, **kw):
    kw = {"d_model": 8, "nhead": 2, "num_encoder_layers": 2, "num_decoder_layers": 2,
          "dim_feedforward": 16, "dropout": 0.0, **kw}  # fmt: skip
    if lib is nn:
        return nn.Transformer(dtype="float64", generator=nb.Generator(0), **kw)
    return lib.nn.Transformer(**kw).double()


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_pytorch_with_gradients(batch_first):
    torch = pytest.importorskip("torch")
    torch.manual_seed(6)
    theirs = _small_transformer(torch, batch_first=batch_first, norm_first=batch_first)
    ours = _load(_small_transformer(nn, batch_first=batch_first, norm_first=batch_first), theirs)
    src, tgt = RNG.standard_normal((6, 2, 8)), RNG.standard_normal((4, 2, 8))
    if batch_first:
        src, tgt = (np.ascontiguousarray(np.swapaxes(a, 0, 1)) for a in (src, tgt))
    masks = {
        "tgt_mask": nn.Transformer.generate_square_subsequent_mask(4, dtype="float64").numpy(),
        "src_key_padding_mask": _padding((2, 6), [1]),
        "memory_key_padding_mask": _padding((2, 6), [1]),
        "tgt_is_causal": True,
    }
    our_masks, their_masks = _split(torch, masks)
    mine = [nb.tensor(a, requires_grad=True) for a in (src, tgt)]
    yours = [torch.tensor(a, requires_grad=True) for a in (src, tgt)]
    out, t_out = ours(*mine, **our_masks), theirs(*yours, **their_masks)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), **TOL)
    _grads_match(torch, ours, theirs, mine, yours, out, t_out)


def test_transformer_defaults_and_square_subsequent_mask():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.Transformer(generator=nb.Generator(0)), torch.nn.Transformer()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name, p in ours.state_dict().items():
        assert p.shape == tuple(theirs.state_dict()[name].shape), name
    assert (ours.d_model, ours.nhead, len(ours.encoder.layers), len(ours.decoder.layers)) == (
        512,
        8,
        6,
        6,
    )
    layer = ours.decoder.layers[0]
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert layer.norm1.eps == 1e-5 and not layer.norm_first
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    expected = torch.nn.Transformer.generate_square_subsequent_mask(5)
    assert mask.dtype == nb.float32
    np.testing.assert_array_equal(mask.numpy(), expected.numpy())
    mask64 = nn.Transformer.generate_square_subsequent_mask(3, dtype="float64")
    assert mask64.dtype == nb.float64 and mask64.numpy()[0, 2] == -np.inf


def test_transformer_xavier_init_and_custom_parts():
    model = _small_transformer(nn)
    first, second = model.encoder.layers
    assert first.linear1.weight is not second.linear1.weight  # deep copies
    bound = math.sqrt(6.0 / (8 + 16))  # xavier-uniform of linear1's (16, 8) weight
    assert np.abs(first.linear1.weight.numpy()).max() <= bound
    assert not np.array_equal(first.linear1.weight.numpy(), second.linear1.weight.numpy())
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype="float64")
    decoder = nn.TransformerDecoder(layer, 1)
    custom = nn.Transformer(8, 2, num_encoder_layers=1, dropout=0.0, custom_decoder=decoder,
                            dtype="float64")  # fmt: skip
    assert custom.decoder is decoder and decoder.norm is None
    src, tgt = nb.tensor(RNG.standard_normal((5, 2, 8))), nb.tensor(RNG.standard_normal((3, 2, 8)))
    expected = decoder(tgt, custom.encoder(src))
    np.testing.assert_allclose(custom(src, tgt).numpy(), expected.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- numpy reference


def _layer_norm(x, w, b, eps):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _attention(p, prefix, q_in, kv_in, allowed, heads):
    """PyTorch's attention equations for (L, N, E) inputs, weights by their state_dict names."""
    w_q, w_k, w_v = np.split(p[prefix + "in_proj_weight"], 3)
    b_q, b_k, b_v = np.split(p[prefix + "in_proj_bias"], 3)
    e = q_in.shape[-1]

    def split_heads(x):  # (S, N, E) -> (N, h, S, d)
        return x.reshape(x.shape[0], x.shape[1], heads, e // heads).transpose(1, 2, 0, 3)

    q, k, v = (split_heads(x @ w.T + b) for x, w, b in
               ((q_in, w_q, b_q), (kv_in, w_k, b_k), (kv_in, w_v, b_v)))  # fmt: skip
    scores = np.where(allowed, q @ k.swapaxes(-1, -2) / math.sqrt(e // heads), -np.inf)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    out = (scores / scores.sum(-1, keepdims=True)) @ v
    out = out.transpose(2, 0, 1, 3).reshape(q_in.shape)
    return out @ p[prefix + "out_proj.weight"].T + p[prefix + "out_proj.bias"]


def test_decoder_layer_matches_numpy_reference():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype="float64",
                                       generator=nb.Generator(7))  # fmt: skip
    p = {k: v.numpy() for k, v in layer.state_dict().items()}
    for name in p:  # the zero-initialised biases made non-trivial
        if name.endswith("bias"):
            layer.state_dict()[name].copy_(nb.tensor(RNG.standard_normal(p[name].shape)))
    p = {k: v.numpy() for k, v in layer.state_dict().items()}
    tgt, memory = RNG.standard_normal((4, 2, 8)), RNG.standard_normal((5, 2, 8))
    padding = _padding((2, 5), [1])
    causal = np.tril(np.ones((4, 4), bool))[None, None]
    x = tgt
    x = _layer_norm(x + _attention(p, "self_attn.", x, x, causal, 2), p["norm1.weight"],
                    p["norm1.bias"], 1e-5)  # fmt: skip
    seen = ~padding[:, None, None, :]
    x = _layer_norm(x + _attention(p, "multihead_attn.", x, memory, seen, 2),
                    p["norm2.weight"], p["norm2.bias"], 1e-5)  # fmt: skip
    hidden = np.maximum(x @ p["linear1.weight"].T + p["linear1.bias"], 0.0)
    ff = hidden @ p["linear2.weight"].T + p["linear2.bias"]
    expected = _layer_norm(x + ff, p["norm3.weight"], p["norm3.bias"], 1e-5)
    got = layer(nb.tensor(tgt), nb.tensor(memory), tgt_is_causal=True,
                memory_key_padding_mask=nb.tensor(padding))  # fmt: skip
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    above = nb.triu(nb.full((4, 5), -np.inf, dtype="float64"), 1)  # memory_is_causal: this mask
    t, m = nb.tensor(tgt), nb.tensor(memory)
    np.testing.assert_allclose(
        layer(t, m, memory_is_causal=True).numpy(), layer(t, m, memory_mask=above).numpy()
    )


# ---------------------------------------------------------------- errors


def test_bad_input_raises_errors_naming_the_module_and_argument():
    with pytest.raises(ValueError, match="MultiheadAttention: embed_dim 6 is not divisible"):
        nn.TransformerDecoderLayer(6, 4)
    with pytest.raises(RuntimeError, match="TransformerDecoderLayer: activation should be"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")
    with pytest.raises(TypeError, match="TransformerEncoderLayer: activation must be"):
        nn.TransformerEncoderLayer(8, 2, activation=3)
    m = nn.MultiheadAttention(4, 2, kdim=3, vdim=3, dtype="float64")
    q, k = nb.tensor(RNG.standard_normal((2, 1, 4))), nb.tensor(RNG.standard_normal((3, 1, 3)))
    cases = [
        (nb.ShapeError, "query must have 4 features", (nb.tensor(np.ones((2, 1, 5))), k, q), {}),
        (nb.ShapeError, "key must have 3 features", (q, q, q), {}),
        (nb.ShapeError, "for batched \\(3-D\\) query, key and value must be 3-D", (q, k[0], k), {}),
        (nb.ShapeError, r"attn_mask has shape \(3, 3\), expected \(2, 3\)", (q, k, k),
         {"attn_mask": nb.tensor(np.zeros((3, 3)))}),
        (nb.ShapeError, r"attn_mask has shape \(1, 2, 3\), expected \(2, 2, 3\)", (q, k, k),
         {"attn_mask": nb.tensor(np.zeros((1, 2, 3)))}),
        (nb.ShapeError, "key_padding_mask has shape", (q, k, k),
         {"key_padding_mask": nb.tensor(np.zeros((1, 2), bool))}),
        (nb.DTypeError, "key_padding_mask must be bool or floating", (q, k, k),
         {"key_padding_mask": nb.tensor(np.zeros((1, 3), np.int64))}),
    ]  # fmt: skip
    for error, message, args, kwargs in cases:
        with pytest.raises(error, match="MultiheadAttention: " + message):
            m(*args, **kwargs)
    model = _small_transformer(nn, num_encoder_layers=1, num_decoder_layers=1)
    src = nb.tensor(RNG.standard_normal((3, 2, 8)))
    with pytest.raises(nb.ShapeError, match="Transformer: the batch number"):
        model(src, nb.tensor(RNG.standard_normal((3, 1, 8))))
    with pytest.raises(nb.ShapeError, match="Transformer: the feature number"):
        model(src, nb.tensor(RNG.standard_normal((3, 2, 4))))


# ---------------------------------------------------------------- graph mode


def test_decoder_stack_eager_equals_jit():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True, dtype="float64",
                                       generator=nb.Generator(8))  # fmt: skip
    decoder = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8, dtype="float64"))
    padding = nb.tensor(_padding((2, 5), [0]))

    def run(tgt, memory):
        return decoder(tgt, memory, memory_key_padding_mask=padding, tgt_is_causal=True)

    counts = nt.check_modes(run, RNG.standard_normal((4, 2, 8)), RNG.standard_normal((5, 2, 8)))
    assert counts == {"outputs": 1, "gradients": 2}


def test_small_transformer_trains_under_jit_as_eager():
    src = nb.tensor(RNG.standard_normal((2, 5, 8)))
    tgt = nb.tensor(RNG.standard_normal((2, 4, 8)))
    target = nb.tensor(RNG.standard_normal((2, 4, 8)))
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype="float64")
    models = [_small_transformer(nn, batch_first=True, num_encoder_layers=1) for _ in range(2)]
    eager, graph = models

    def loss_of(model, src, tgt):
        return nb.mse_loss(model(src, tgt, tgt_mask=mask, tgt_is_causal=True), target)

    @nb.jit
    def train_step(src, tgt):
        loss = loss_of(graph, src, tgt)
        nb.optim.SGD(lr=0.1).minimize(loss)
        return loss

    opt = nb.optim.SGD(eager.parameters(), lr=0.1)
    eager_losses, graph_losses = [], []
    for _ in range(3):
        loss = loss_of(eager, src, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        eager_losses.append(loss.item())
        with nb.no_grad():  # the Program does its own backward
            graph_losses.append(train_step(src, tgt).item())
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-10)
    assert graph_losses[-1] < graph_losses[0]  # it trains
    for (name, a), b in zip(eager.named_parameters(), graph.parameters()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)
