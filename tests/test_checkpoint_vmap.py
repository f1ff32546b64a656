"""Activation checkpointing (nbflow.utils.checkpoint), vmap over pytrees (the ensembling
recipe of torch.func), and the older distributions sampled under @nbflow.jit.

References: gradients of the same network without checkpointing and float64 finite
differences, peak traced bytes of a deep MLP's forward+backward, a Python loop over the
models (and numpy) for vmap, the distributions' moments and numpy formulas of the
reparameterized gradients."""

import tracemalloc
import warnings

import numpy as np
import pytest

import nbflow as nb
import nbflow.runtime.buffers
from nbflow import distributions as D
from nbflow.func import functional_call, stack_module_state, vmap
from nbflow.kernels.cpu import threads
from nbflow.testing import gradcheck
from nbflow.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

RNG = np.random.default_rng(0)


def f64(*shape, requires_grad=True):
    return nb.tensor(RNG.standard_normal(shape), dtype="float64", requires_grad=requires_grad)


def close(got, want, rtol=1e-10, atol=1e-12):
    got = got.numpy() if isinstance(got, nb.Tensor) else np.asarray(got)
    want = want.numpy() if isinstance(want, nb.Tensor) else np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol, atol)


# ---------------------------------------------------------------- checkpoint


def mlp(depth, width):
    nb.manual_seed(0)
    return [nb.nn.Linear(width, width) for _ in range(depth)]


def run_layers(x, layers):
    for layer in layers:
        x = nb.tanh(layer(x))
    return x


def params(layers):
    return [p for layer in layers for p in layer.parameters()]


def train_step(layers, x, segment, use_reentrant):
    """Peak traced bytes of forward+backward, and the parameters' gradients."""
    for p in params(layers):
        p.grad = None
    nb.empty_cache()
    tracemalloc.start()
    try:
        h = x
        for i in range(0, len(layers), segment):
            part = layers[i : i + segment]
            if use_reentrant is None:
                h = run_layers(h, part)
            else:
                h = checkpoint(run_layers, h, part, use_reentrant=use_reentrant)
        h.square().sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, [p.grad.numpy().copy() for p in params(layers)]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_saves_memory_and_keeps_gradients(monkeypatch, use_reentrant):
    monkeypatch.setattr(nbflow.runtime.buffers, "CACHE_BYTES", 0)  # freed buffers go back to malloc
    layers = mlp(12, 128)
    x = nb.randn(256, 128, requires_grad=use_reentrant)  # (reentrant: an input must)
    train_step(layers, x, 3, None)  # compile everything first
    plain, want = train_step(layers, x, 3, None)
    ck, got = train_step(layers, x, 3, use_reentrant)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
    # 12 layers' activations (256x128 float32, about 3 per layer; the plain backward frees
    # each layer's as it passes) against 4 boundaries plus one segment being recomputed
    assert ck < 0.75 * plain, (ck, plain)


def test_checkpoint_gradients_against_finite_differences():
    w1, w2, x = f64(3, 4), f64(4, 2), f64(5, 3)

    def net(x, w1, w2):
        def block(h):
            return nb.tanh(h @ w1).sin() @ w2  # w1, w2 closed over

        return checkpoint(block, x, use_reentrant=False)

    gradcheck(net, [x, w1, w2])
    got = nb.grad(net(x, w1, w2).sum(), [x, w1, w2])
    want = nb.grad((nb.tanh(x @ w1).sin() @ w2).sum(), [x, w1, w2])
    for g, w in zip(got, want):
        close(g, w)


def test_checkpoint_double_backward():
    x, w = f64(4), f64(4)

    def f(x):
        return checkpoint(lambda a: (a * w).tanh().sum(), x, use_reentrant=False)

    (g,) = nb.grad(f(x), [x], create_graph=True)
    (gg,) = nb.grad(g.square().sum(), [w])
    (g0,) = nb.grad((x * w).tanh().sum(), [x], create_graph=True)
    (gg0,) = nb.grad(g0.square().sum(), [w])
    close(g, g0)
    close(gg, gg0)


def test_checkpoint_reaches_history_before_the_segment_and_closed_over_values():
    a, w = f64(3), f64(3)
    h = a.exp()  # a tensor with history, closed over by the segment
    x = a * 2
    y = checkpoint(lambda t: (t * h * w).sum(), x, use_reentrant=False)
    y.backward()
    ga, gw = a.grad.numpy(), w.grad.numpy()
    a_, w_ = a.detach().numpy(), w.detach().numpy()
    # y = sum(2 a e^a w): dy/da = 2 w e^a (1 + a), dy/dw = 2 a e^a
    close(ga, 2 * w_ * np.exp(a_) * (1 + a_))
    close(gw, 2 * a_ * np.exp(a_))


def test_checkpoint_replays_the_random_state():
    drop = nb.nn.Dropout(0.5)
    layer = mlp(1, 8)[0]
    x = nb.randn(16, 8)

    def block(t):
        return drop(nb.tanh(layer(t)))

    def grads(fn):
        layer.weight.grad = None
        nb.manual_seed(5)
        fn(x).sum().backward()
        return layer.weight.grad.numpy().copy(), nb.get_rng_state()

    want, state = grads(block)
    got, state_ck = grads(lambda t: checkpoint(block, t, use_reentrant=False))
    close(got, want, 1e-6, 1e-7)
    assert np.array_equal(state_ck, state)  # the recomputation's draws are put back
    other, _ = grads(lambda t: checkpoint(block, t, use_reentrant=False, preserve_rng_state=False))
    assert not np.allclose(other, want)  # other draws: other dropout masks


def test_checkpoint_outputs_pytrees_kwargs_and_sequential():
    w = f64(3, 3)

    def f(x, scale=1.0):
        return {"y": (x @ w) * scale, "n": 3, "pair": (x.sum(), None)}

    x = f64(2, 3)
    out = checkpoint(f, x, scale=2.0, use_reentrant=False)
    assert out["n"] == 3 and out["pair"][1] is None
    (out["y"].sum() + out["pair"][0]).backward()
    close(w.grad, 2 * x.detach().numpy().sum(0)[:, None].repeat(3, 1))
    close(x.grad, (2 * w.detach().numpy().sum(1) + 1)[None].repeat(2, 0))

    nb.manual_seed(1)
    model = nb.nn.Sequential(*(nb.nn.Linear(4, 4) for _ in range(5)))
    inp = nb.randn(3, 4, requires_grad=True)
    checkpoint_sequential(model, 2, inp, use_reentrant=False).sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()] + [inp.grad.numpy()]
    for p in [*model.parameters(), inp]:
        p.grad = None
    model(inp).sum().backward()
    for g, p in zip(got, [*model.parameters(), inp]):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_checkpoint_rules_and_errors():
    w = f64(3)
    x = f64(3, requires_grad=False)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint(lambda t: t * w, x.requires_grad_(True))
    x = x.detach()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        y = checkpoint(lambda t: t * w, x, use_reentrant=True)
    assert not y.requires_grad  # PyTorch's reentrant variant: no input needs grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert checkpoint(lambda t: t * w, x, use_reentrant=False).requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(lambda t, k: t, x, k=1, use_reentrant=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="bogus")

    calls = []

    def changing(t):  # a different shape when run again
        calls.append(1)
        return (t * w)[: 4 - len(calls)]

    y = checkpoint(changing, x, use_reentrant=False, debug=True)
    with pytest.raises(CheckpointError, match="ops of the forward"):
        y.sum().backward()

    a = f64(3)
    y = checkpoint(lambda t: (t * t).sum(), a, use_reentrant=False)
    with nb.no_grad():
        a.add_(1.0)  # an input changed in place before backward
    with pytest.raises(nb.GradientError):
        y.backward()


def test_checkpoint_of_a_jitted_function_says_what_it_missed():
    layer = mlp(1, 3)[0]
    x = f64(2, 3, requires_grad=False).astype("float32").requires_grad_(True)
    jitted = nb.jit(lambda t: nb.tanh(layer(t)))  # its parameter reads bypass the trace
    y = checkpoint(jitted, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="did not see"):
        y.sum().backward()
    y = checkpoint(
        lambda t, w, b: nb.tanh(t @ w.T + b), x, layer.weight, layer.bias, use_reentrant=False
    )
    y.sum().backward()  # passed as arguments, they are differentiated
    assert layer.weight.grad is not None


def _jitted_training(use_checkpoint, steps=2, batch=128, width=128):
    """Parameters, last loss and the peak traced bytes of the last of `steps` jitted SGD
    steps (the first step plans the arena, the second places its buffers there) of a
    tanh MLP in two blocks, each block checkpointed or not."""
    g = nb.Generator(0)
    blocks = []
    for _ in range(2):
        layers = []
        for _ in range(3):
            layers += [nb.nn.Linear(width, width, generator=g), nb.nn.Tanh()]
        blocks.append(nb.nn.Sequential(*layers))
    head = nb.nn.Linear(width, 10, generator=g)
    params = [p for b in blocks for p in b.parameters()] + list(head.parameters())
    opt = nb.optim.SGD(params, lr=0.05)
    data = np.random.default_rng(1)
    x = nb.tensor(data.standard_normal((batch, width)).astype(np.float32))
    y = nb.tensor(data.integers(0, 10, batch))

    @nb.jit
    def step(x, y):
        h = x
        for b in blocks:
            h = checkpoint(b, h, use_reentrant=False) if use_checkpoint else b(h)
        loss = nb.cross_entropy(head(h), y)
        opt.minimize(loss)
        return loss

    with nb.no_grad():
        for _ in range(steps - 1):
            step(x, y)
        nb.empty_cache()  # (so that every buffer of the measured step counts)
        tracemalloc.start()
        try:
            loss = step(x, y)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return [p.numpy().copy() for p in params], loss.item(), peak


def test_checkpoint_under_jit_recomputes_in_the_programs_backward(monkeypatch):
    # OpenBLAS's thread count held (NBFLOW_BLAS_THREADS=fixed): the thread choice, timed per
    # call, may differ between the two runs, and some of OpenBLAS's kernels (Haswell's) round
    # a product on several threads differently from one on one thread
    monkeypatch.setattr(threads, "_OPENBLAS", False)
    plain, plain_loss, plain_peak = _jitted_training(False)
    ckpt, ckpt_loss, ckpt_peak = _jitted_training(True)
    # the same program values: the recomputation runs the same ops on the same inputs
    assert ckpt_loss == plain_loss
    for a, b in zip(ckpt, plain):
        np.testing.assert_array_equal(a, b)
    # the blocks' activations (6 of 128x128 float32) are not held to the backward
    assert ckpt_peak < 0.8 * plain_peak, (ckpt_peak, plain_peak)


def test_checkpoint_inside_a_jitted_function_differentiated_eagerly():
    layer = mlp(1, 3)[0]
    f = lambda t: nb.tanh(layer(t)) * 2
    x = f64(4, 3, requires_grad=False).astype("float32")
    x1 = x.detach().requires_grad_(True)
    f(x1).square().sum().backward()
    want_x, want_w = x1.grad.numpy(), layer.weight.grad.numpy().copy()
    layer.weight.grad = layer.bias.grad = None
    jitted = nb.jit(lambda t: checkpoint(f, t, use_reentrant=False).square().sum())
    x2 = x.detach().requires_grad_(True)
    jitted(x2).backward()
    np.testing.assert_allclose(x2.grad.numpy(), want_x, rtol=1e-6)
    np.testing.assert_allclose(layer.weight.grad.numpy(), want_w, rtol=1e-6)


def test_checkpoint_under_jit_refuses_random_ops():
    drop = nb.nn.Dropout(0.5)

    @nb.jit
    def f(x):
        return checkpoint(drop, x, use_reentrant=False).sum()

    with pytest.raises(nb.UnsupportedError, match="draws random numbers"):
        f(f64(3))


# ---------------------------------------------------------------- vmap over pytrees


class Tiny(nb.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nb.nn.Linear(3, 5), nb.nn.Linear(5, 2)
        self.register_buffer("shift", nb.randn(2))

    def forward(self, x):
        return self.fc2(nb.tanh(self.fc1(x))) + self.shift


def test_vmap_ensemble_recipe_matches_a_loop():
    nb.manual_seed(2)
    models = [Tiny() for _ in range(4)]
    p, b = stack_module_state(models)
    x = nb.randn(6, 3)
    base = Tiny()

    def one(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    out = vmap(one, in_dims=(0, 0, None))(p, b, x)
    want = nb.stack([m(x) for m in models], axis=0)
    assert tuple(out.shape) == (4, 6, 2)
    close(out, want, 1e-6, 1e-6)
    out.square().sum().backward()
    for m in models:
        m(x).square().sum().backward()
    for name, stacked in p.items():
        loop = np.stack([dict(m.named_parameters())[name].grad.numpy() for m in models])
        close(stacked.grad, loop, 1e-5, 1e-6)


def test_vmap_nested_in_and_out_dims():
    a, b, c = f64(4, 3), f64(3, 4), f64(2)
    an, bn, cn = (t.detach().numpy() for t in (a, b, c))

    def f(tree, k):
        u, v = tree["u"], tree["pair"][0]
        return {"s": u * v + tree["pair"][1].sum(), "t": (u.sum() * k, k)}

    out = vmap(f, in_dims=({"u": 0, "pair": [1, None]}, None), out_dims={"s": 1, "t": (0, None)})(
        {"pair": [b, c], "u": a}, 3.0
    )
    want_s = np.stack([an[i] * bn[:, i] + cn.sum() for i in range(4)], axis=1)
    close(out["s"], want_s)
    close(out["t"][0], 3.0 * an.sum(1))
    assert out["t"][1] == 3.0  # a non-tensor output kept where out_dims is None
    # None for a whole subtree, and the bare tuple torch takes for one output
    out = vmap(lambda t, x: t[0] * x, in_dims=(None, 0), out_dims=(0,))([c, 1], a[:, :2])
    close(out, cn * an[:, :2])


def test_vmap_pytree_errors():
    a = f64(4, 3)
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        vmap(lambda t: t[0], in_dims=((0, 0),))((a,))
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        vmap(lambda t: t["x"], in_dims=({"y": 0},))({"x": a})
    with pytest.raises(ValueError, match="non-Tensor"):
        vmap(lambda t: t[0], in_dims=([0, 0],))([a, 2.0])
    with pytest.raises(ValueError, match="out_dims is not compatible"):
        vmap(lambda t: (t, t), out_dims=(0, 0, 0))(a)
    with pytest.raises(ValueError, match="can be None only if"):
        vmap(lambda t: t * 2, out_dims=None)(a)
    with pytest.raises(ValueError, match="must only return Tensors"):
        vmap(lambda t: (t, 1))(a)
    w = f64(3)
    assert vmap(lambda t: w, out_dims=None)(a) is w  # does not vary: kept as is


# ---------------------------------------------------------------- distributions under jit

N = 4000  # draws per moment check: standard errors about 1.6% of a standard deviation


def moments_ok(x, mean, var, k=5.0):
    """Sample mean and variance within k standard errors (the variance's SE from the sample
    fourth moment)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    se_mean = np.sqrt(var / n)
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var**2, 1e-12) / n)
    assert np.all(np.abs(x.mean(0) - mean) < k * se_mean + 1e-9), (x.mean(0), mean)
    assert np.all(np.abs(x.var(0) - var) < k * se_var + 1e-9), (x.var(0), var)


CASES = [  # (family, parameters, mean, variance) of one element of the sample
    (D.Normal, ([0.5, -1.0], [1.0, 2.0]), [0.5, -1.0], [1.0, 4.0]),
    (D.Laplace, ([0.5, -1.0], [1.0, 0.5]), [0.5, -1.0], [2.0, 0.5]),
    (D.Uniform, ([0.0, -2.0], [1.0, 3.0]), [0.5, 0.5], [1 / 12, 25 / 12]),
    (D.Exponential, ([1.0, 4.0],), [1.0, 0.25], [1.0, 1 / 16]),
    (D.Bernoulli, ([0.3, 0.9],), [0.3, 0.9], [0.21, 0.09]),
    (D.Categorical, ([[0.2, 0.5, 0.3]],), [1.1], [0.49]),
    (D.OneHotCategorical, ([0.2, 0.5, 0.3],), [0.2, 0.5, 0.3], [0.16, 0.25, 0.21]),
]


@pytest.mark.parametrize("family, args, mean, var", CASES, ids=[c[0].__name__ for c in CASES])
def test_old_distributions_sample_under_jit(family, args, mean, var):
    @nb.jit
    def draw(*params):
        return family(*params).sample((N,))

    params = [nb.tensor(np.asarray(a, dtype=np.float32)) for a in args]
    nb.manual_seed(11)
    x = draw(*params).numpy()
    nb.manual_seed(11)
    eager = family(*params).sample((N,)).numpy()
    assert np.array_equal(x, eager)  # the same stream as eager mode
    moments_ok(x.reshape(N, -1), np.asarray(mean), np.asarray(var))
    assert not np.array_equal(draw(*params).numpy(), x)  # fresh draws on every call


RSAMPLED = [
    (D.Normal, lambda x, a, b: (x - a) / b),  # d x / d scale = eps
    (D.Laplace, lambda x, a, b: (x - a) / b),
    (D.Uniform, lambda x, a, b: 1 - (x - a) / (b - a)),  # d x / d low = 1 - u
]


@pytest.mark.parametrize("family, dx_db", RSAMPLED, ids=[c[0].__name__ for c in RSAMPLED])
def test_reparameterized_gradients_through_jit(family, dx_db):
    a = nb.tensor([0.5, -1.0], dtype="float64", requires_grad=True)
    b = nb.tensor([1.5, 2.0], dtype="float64", requires_grad=True)

    def loss(a, b):
        x = family(a, b).rsample((7,))
        return x, (x * x).mean()

    nb.manual_seed(3)
    x, value = nb.jit(loss)(a, b)
    ga, gb = nb.grad(value, [a, b])
    nb.manual_seed(3)
    xe, value_e = loss(a, b)
    ga_e, gb_e = nb.grad(value_e, [a, b])
    close(x, xe)
    close(ga, ga_e)
    close(gb, gb_e)
    # numpy: d mean(x^2) / d param = sum(2 x dx/dparam) over the draws / x.size
    xn, an, bn = x.numpy(), a.detach().numpy(), b.detach().numpy()
    if family is D.Uniform:  # x = a + u (b - a): dx/da = 1 - u, dx/db = u
        u = (xn - an) / (bn - an)
        close(ga, (2 * xn * (1 - u)).sum(0) / xn.size, 1e-9)
        close(gb, (2 * xn * u).sum(0) / xn.size, 1e-9)
    else:
        close(ga, (2 * xn).sum(0) / xn.size, 1e-9)
        close(gb, (2 * xn * dx_db(xn, an, bn)).sum(0) / xn.size, 1e-9)


def test_exponential_rsample_gradient_through_jit():
    rate = nb.tensor([0.5, 2.0], dtype="float64", requires_grad=True)

    @nb.jit
    def f(rate):
        x = D.Exponential(rate).rsample((9,))
        return x, x.sum()

    x, s = f(rate)
    (g,) = nb.grad(s, [rate])
    # x = -log(1 - u) / rate: dx / drate = -x / rate
    close(g, (-x.numpy() / rate.detach().numpy()).sum(0), 1e-9)


def test_von_mises_under_jit_is_refused():
    # (Gamma and its kin sample under jit through the standard_gamma op:
    # tests/test_random_params.py; VonMises's rejection sampler runs on the host)
    @nb.jit
    def von_mises(a):
        return D.VonMises(a, a).sample((3,))

    with pytest.raises(nb.UnsupportedError, match="VonMises draws on the host"):
        von_mises(nb.tensor([2.0]))


def test_multivariate_normal_rsample_under_jit_follows_its_covariance():
    cov = nb.tensor([[2.0, 0.5], [0.5, 1.0]], dtype="float64")
    loc = nb.tensor([1.0, -1.0], dtype="float64", requires_grad=True)

    @nb.jit
    def draw(loc):
        return D.MultivariateNormal(loc, covariance_matrix=cov).rsample((N,))

    nb.manual_seed(5)
    x = draw(loc)
    nb.manual_seed(5)
    eager = D.MultivariateNormal(loc, covariance_matrix=cov).rsample((N,))
    close(x, eager)
    moments_ok(x.numpy(), np.array([1.0, -1.0]), np.array([2.0, 1.0]))
    (g,) = nb.grad(x.sum(), [loc])  # d sum / d loc: one per draw
    close(g, np.full(2, float(N)), 1e-9)
