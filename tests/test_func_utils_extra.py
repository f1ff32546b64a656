"""nbflow.func.functional_call / stack_module_state / jvp / jacfwd, nn.utils.fusion, the
hook-based weight_norm and spectral_norm, skip_init, DistributedSampler and get_worker_info:
numpy references (and finite differences for gradients), eager against @jit, PyTorch."""

import warnings

import numpy as np
import pytest

import nbflow as nb
from nbflow import func
from nbflow.nn import utils
from nbflow.testing import gradcheck

RNG = np.random.default_rng(1)


def f64(a, grad=False):
    return nb.tensor(np.asarray(a, dtype=np.float64), dtype=nb.float64, requires_grad=grad)


# ---------------------------------------------------------------- functional_call


def _linear():
    return nb.nn.Linear(3, 2, dtype=nb.float64)


def test_functional_call_uses_the_given_tensors_and_leaves_the_module_alone():
    m = _linear()
    before = m.weight.numpy().copy()
    w, b = RNG.standard_normal((2, 3)), RNG.standard_normal(2)
    x = RNG.standard_normal((4, 3))
    tw, tb = f64(w, True), f64(b, True)
    out = func.functional_call(m, {"weight": tw, "bias": tb}, f64(x))
    np.testing.assert_allclose(out.numpy(), x @ w.T + b, rtol=1e-14)
    out.sum().backward()
    np.testing.assert_allclose(tw.grad.numpy(), np.ones((4, 2)).T @ x, rtol=1e-14)
    assert m.weight.grad is None and m.weight is not tw
    np.testing.assert_array_equal(m.weight.numpy(), before)
    # a partial dict: the bias stays the module's; a sequence of dicts; kwargs
    out = func.functional_call(m, ({"weight": tw}, {}), args=(), kwargs={"x": f64(x)})
    np.testing.assert_allclose(out.numpy(), x @ w.T + m.bias.numpy(), rtol=1e-14)
    assert utils.stateless.functional_call is func.functional_call


def test_functional_call_gradients_by_finite_differences():
    m = nb.nn.Sequential(nb.nn.Linear(3, 4, dtype=nb.float64), nb.nn.Tanh())
    params = {k: f64(RNG.standard_normal(v.shape), True) for k, v in m.named_parameters()}
    x = f64(RNG.standard_normal((2, 3)))
    gradcheck(
        lambda w, b: func.functional_call(m, {"0.weight": w, "0.bias": b}, x),
        [params["0.weight"], params["0.bias"]],
    )


class _Tied(nb.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nb.nn.Linear(2, 2, bias=False, dtype=nb.float64)
        self.b = nb.nn.Linear(2, 2, bias=False, dtype=nb.float64)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(self.a(x))


def test_functional_call_ties_weights_as_pytorch():
    m = _Tied()
    w = RNG.standard_normal((2, 2))
    x = RNG.standard_normal((3, 2))
    out = func.functional_call(m, {"a.weight": f64(w)}, (f64(x),))
    np.testing.assert_allclose(out.numpy(), x @ w.T @ w.T, rtol=1e-14)
    untied = func.functional_call(m, {"a.weight": f64(w)}, (f64(x),), tie_weights=False)
    np.testing.assert_allclose(untied.numpy(), x @ w.T @ m.a.weight.numpy().T, rtol=1e-14)
    with pytest.raises(ValueError, match="tied"):
        func.functional_call(m, {"a.weight": f64(w), "b.weight": f64(w)}, f64(x))


def test_functional_call_refusals():
    m = _linear()
    x = f64(np.zeros((1, 3)))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'bias'"):
        func.functional_call(m, {"weight": f64(np.zeros((2, 3)))}, x, strict=True)
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\): 'extra'"):
        func.functional_call(m, {**dict(m.named_parameters()), "extra": x}, x, strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        func.functional_call(m, [{"bias": x}, {"bias": x}], x)
    with pytest.raises(ValueError, match="dict"):
        func.functional_call(m, 3, x)


def test_functional_call_under_jit_equals_eager():
    m = nb.nn.Sequential(nb.nn.Linear(3, 4, dtype=nb.float64), nb.nn.ReLU())
    w = f64(RNG.standard_normal((4, 3)))
    x = f64(RNG.standard_normal((5, 3)))

    @nb.jit
    def run(w, x):
        return func.functional_call(m, {"0.weight": w}, x)

    np.testing.assert_allclose(
        run(w, x).numpy(), func.functional_call(m, {"0.weight": w}, x).numpy()
    )
    assert isinstance(m[0].weight, nb.Tensor) and m[0].weight is not w


def test_functional_call_buffers_take_in_place_updates():
    bn = nb.nn.BatchNorm1d(2, dtype=nb.float64)
    mean = f64(np.zeros(2))
    x = RNG.standard_normal((6, 2))
    func.functional_call(bn, {"running_mean": mean}, f64(x))
    np.testing.assert_allclose(mean.numpy(), 0.1 * x.mean(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(bn.running_mean.numpy(), [0.0, 0.0])


def test_stack_module_state_and_an_ensemble_by_functional_call():
    models = [_linear() for _ in range(3)]
    params, buffers = func.stack_module_state(models)
    assert set(params) == {"weight", "bias"} and buffers == {}
    assert params["weight"].shape == (3, 2, 3) and params["weight"].is_leaf
    assert params["weight"].requires_grad
    x = f64(RNG.standard_normal((4, 3)))
    for i, m in enumerate(models):
        got = func.functional_call(models[0], {k: v[i] for k, v in params.items()}, x)
        np.testing.assert_allclose(got.numpy(), m(x).numpy(), rtol=1e-14)
    _, bn_buffers = func.stack_module_state([nb.nn.BatchNorm1d(2) for _ in range(2)])
    assert bn_buffers["running_var"].shape == (2, 2) and not bn_buffers["running_var"].requires_grad
    with pytest.raises(RuntimeError, match="at least one"):
        func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        func.stack_module_state([_linear(), nb.nn.Tanh()])
    with pytest.raises(RuntimeError, match="training/eval"):
        func.stack_module_state([_linear(), _linear().eval()])


def test_functional_call_matches_pytorch_state_dict():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Linear(3, 2).double()
    x = RNG.standard_normal((4, 3))
    state = {k: f64(v.detach().numpy()) for k, v in tm.state_dict().items()}
    got = func.functional_call(_linear(), state, f64(x))
    np.testing.assert_allclose(got.numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-14)


# ---------------------------------------------------------------- jvp and jacfwd


def _f(x, y):
    return nb.sin(x) * y, (x * x).sum()


def test_jvp_against_the_analytic_product():
    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    v, w = RNG.standard_normal(3), RNG.standard_normal(3)
    (out, total), (jv, jt) = func.jvp(_f, (f64(x), f64(y)), (f64(v), f64(w)))
    np.testing.assert_allclose(out.numpy(), np.sin(x) * y, rtol=1e-14)
    np.testing.assert_allclose(jv.numpy(), np.cos(x) * y * v + np.sin(x) * w, rtol=1e-13)
    assert jt.item() == pytest.approx(2 * (x * v).sum(), rel=1e-13)
    assert not jv.requires_grad  # a top-level result holds no graph
    out, jv, aux = func.jvp(lambda x: (nb.exp(x), x.sum()), (f64(x),), (f64(v),), has_aux=True)
    np.testing.assert_allclose(jv.numpy(), np.exp(x) * v, rtol=1e-14)
    assert aux.item() == pytest.approx(x.sum())


def test_jvp_refusals():
    x = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="tuple"):
        func.jvp(nb.sin, x, (x,))
    with pytest.raises(RuntimeError, match="structure"):
        func.jvp(nb.sin, (x,), (x, x))
    with pytest.raises(RuntimeError, match="shape"):
        func.jvp(nb.sin, (x,), (f64([1.0]),))


def test_jacfwd_equals_jacrev_and_finite_differences():
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)

    def g(x, y):
        return nb.tanh(x[:2] * y) * x.sum()

    jf = func.jacfwd(g, argnums=(0, 1))(f64(x), f64(y))
    jr = func.jacrev(g, argnums=(0, 1))(f64(x), f64(y))
    for a, b in zip(jf, jr):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    eps, fd = 1e-6, np.zeros((2, 3))
    for k in range(3):
        d = np.eye(3)[k] * eps
        fd[:, k] = (g(f64(x + d), f64(y)).numpy() - g(f64(x - d), f64(y)).numpy()) / (2 * eps)
    np.testing.assert_allclose(jf[0].numpy(), fd, rtol=1e-7, atol=1e-9)
    assert jf[1].shape == (2, 2)
    scalar = func.jacfwd(lambda x: (x**3).sum())(f64(x))  # a 0-d output
    np.testing.assert_allclose(scalar.numpy(), 3 * x**2, rtol=1e-13)


def test_hessian_by_jacfwd_of_jacrev():
    x = RNG.standard_normal(3)
    h = func.jacfwd(func.jacrev(lambda x: (x**3).sum() * x[0]))(f64(x))
    want = np.diag(6 * x * x[0])  # d2/dxi dxj of sum(x^3) * x0
    want[0, :] += 3 * x**2
    want[:, 0] += 3 * x**2
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-12)


def test_jacfwd_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3))
    got = func.jacfwd(lambda x: nb.softmax(x, axis=-1))(f64(x))
    want = torch.func.jacfwd(lambda x: torch.softmax(x, -1))(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- fusion


def _bn(n, **kw):
    bn = nb.nn.BatchNorm2d(n, dtype=nb.float64, **kw)
    with nb.no_grad():
        bn.running_mean.copy_(f64(RNG.standard_normal(n)))
        bn.running_var.copy_(f64(RNG.uniform(0.5, 2.0, n)))
        if bn.weight is not None:
            bn.weight.copy_(f64(RNG.standard_normal(n)))
            bn.bias.copy_(f64(RNG.standard_normal(n)))
    return bn.eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_fuse_conv_bn_eval_equals_conv_then_bn(bias, affine):
    conv = nb.nn.Conv2d(2, 3, 3, padding=1, bias=bias, dtype=nb.float64).eval()
    bn = _bn(3, affine=affine)
    fused = utils.fuse_conv_bn_eval(conv, bn)
    x = f64(RNG.standard_normal((2, 2, 5, 5)))
    np.testing.assert_allclose(fused(x).numpy(), bn(conv(x)).numpy(), rtol=1e-12, atol=1e-12)
    # the weights by numpy: w * gamma / sqrt(var + eps)
    gamma = bn.weight.numpy() if affine else np.ones(3)
    scale = gamma / np.sqrt(bn.running_var.numpy() + bn.eps)
    np.testing.assert_allclose(
        fused.weight.numpy(), conv.weight.numpy() * scale[:, None, None, None]
    )
    assert fused.weight.requires_grad and fused is not conv and fused.bias is not None
    np.testing.assert_allclose(nb.jit(lambda x: fused(x))(x).numpy(), fused(x).numpy(), rtol=1e-12)


def test_fuse_conv_transpose_bn_and_linear_bn():
    conv = nb.nn.ConvTranspose2d(2, 3, 2, stride=2, dtype=nb.float64).eval()
    bn = _bn(3)
    fused = utils.fuse_conv_bn_eval(conv, bn, transpose=True)
    x = f64(RNG.standard_normal((1, 2, 3, 3)))
    np.testing.assert_allclose(fused(x).numpy(), bn(conv(x)).numpy(), rtol=1e-12, atol=1e-12)
    linear = _linear().eval()
    bn1 = nb.nn.BatchNorm1d(2, dtype=nb.float64)
    with nb.no_grad():
        bn1.running_mean.copy_(f64([0.5, -1.0]))
        bn1.running_var.copy_(f64([2.0, 0.25]))
    bn1.eval()
    fused = utils.fuse_linear_bn_eval(linear, bn1)
    x = f64(RNG.standard_normal((4, 3)))
    np.testing.assert_allclose(fused(x).numpy(), bn1(linear(x)).numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(AssertionError, match="eval"):
        utils.fuse_linear_bn_eval(linear.train(), bn1)
    with pytest.raises(AssertionError, match="num_features"):
        utils.fuse_linear_bn_eval(linear.eval(), nb.nn.BatchNorm1d(3).eval())


# ---------------------------------------------------------------- weight_norm, spectral_norm


def _weight_norm(m, **kw):
    with pytest.warns(FutureWarning, match="deprecated"):
        return utils.weight_norm(m, **kw)


def test_weight_norm_has_pytorchs_parameters_and_values():
    m = _weight_norm(_linear())
    w = m.weight_v.numpy()
    assert m.weight_g.shape == (2, 1) and m.weight_v.shape == (2, 3)
    np.testing.assert_allclose(m.weight_g.numpy()[:, 0], np.linalg.norm(w, axis=1), rtol=1e-14)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    with nb.no_grad():
        m.weight_g.copy_(f64([[2.0], [0.5]]))
    x = RNG.standard_normal((4, 3))
    want = w / np.linalg.norm(w, axis=1, keepdims=True) * np.array([[2.0], [0.5]])
    np.testing.assert_allclose(m(f64(x)).numpy(), x @ want.T + m.bias.numpy(), rtol=1e-13)
    np.testing.assert_allclose(m.weight.numpy(), want, rtol=1e-13)  # set by the forward
    whole = _weight_norm(_linear(), dim=None)
    assert whole.weight_g.shape == ()
    with pytest.raises(RuntimeError, match="two weight_norm"):
        _weight_norm(m)


def test_weight_norm_gradients_reach_g_and_v():
    m = _weight_norm(_linear())
    x = RNG.standard_normal((3, 3))
    g, v = m.weight_g.numpy().copy(), m.weight_v.numpy().copy()
    m(f64(x)).sum().backward()

    def total(g, v):  # sum(x @ w.T) with w = g * v / ||v||, in numpy
        return (x @ (v * g / np.linalg.norm(v, axis=1, keepdims=True)).T).sum()

    np.testing.assert_allclose(
        m.weight_g.grad.numpy(), _fd_grad(lambda a: total(a, v), g), rtol=1e-6
    )
    np.testing.assert_allclose(
        m.weight_v.grad.numpy(), _fd_grad(lambda a: total(g, a), v), rtol=1e-6
    )
    assert m.bias.grad is not None


def _fd_grad(fn, a, eps=1e-6):
    out = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        out[i] = (fn(a + d) - fn(a - d)) / (2 * eps)
    return out


def test_weight_norm_under_jit_and_removal():
    m = _weight_norm(nb.nn.Linear(3, 2, dtype=nb.float64))
    x = f64(RNG.standard_normal((4, 3)))
    np.testing.assert_allclose(nb.jit(lambda x: m(x))(x).numpy(), m(x).numpy(), rtol=1e-13)
    assert isinstance(m.weight, nb.Tensor)  # not a traced value
    value = m.weight.numpy().copy()
    utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and m.weight.is_leaf
    np.testing.assert_allclose(m.weight.numpy(), value, rtol=1e-14)
    np.testing.assert_allclose(m(x).numpy(), x.numpy() @ value.T + m.bias.numpy(), rtol=1e-13)
    with pytest.raises(ValueError, match="not found"):
        utils.remove_weight_norm(m)


def test_weight_norm_loads_a_pytorch_state_dict():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = torch.nn.utils.weight_norm(torch.nn.Conv2d(2, 3, 3).double(), dim=1)
    m = _weight_norm(nb.nn.Conv2d(2, 3, 3, dtype=nb.float64), dim=1)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((1, 2, 5, 5))
    np.testing.assert_allclose(
        m(f64(x)).numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-13
    )


def test_spectral_norm_divides_by_the_largest_singular_value():
    m = utils.spectral_norm(nb.nn.Linear(4, 3, dtype=nb.float64), n_power_iterations=30)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    w = m.weight_orig.numpy()
    m(f64(np.zeros((1, 4))))  # training: 30 power iterations
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(m.weight.numpy(), w / sigma, rtol=1e-8)
    m.eval()
    u = m.weight_u.numpy().copy()
    m(f64(np.zeros((1, 4))))
    np.testing.assert_array_equal(m.weight_u.numpy(), u)  # eval: no power iteration
    m.train()
    m(f64(np.zeros((1, 4)))).sum().backward()
    assert m.weight_orig.grad is not None
    utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.numpy(), w / sigma, rtol=1e-8)
    with pytest.raises(ValueError, match="not found"):
        utils.remove_spectral_norm(m)
    with pytest.raises(ValueError, match="n_power_iterations"):
        utils.spectral_norm(_linear(), n_power_iterations=0)


def test_spectral_norm_under_jit_equals_eager():
    m = utils.spectral_norm(nb.nn.Linear(4, 3, dtype=nb.float64)).eval()
    x = f64(RNG.standard_normal((2, 4)))
    np.testing.assert_allclose(nb.jit(lambda x: m(x))(x).numpy(), m(x).numpy(), rtol=1e-13)
    assert isinstance(m.weight, nb.Tensor)


def test_spectral_norm_matches_pytorch_from_the_same_vectors():
    torch = pytest.importorskip("torch")
    tm = torch.nn.utils.spectral_norm(torch.nn.Linear(4, 3).double(), n_power_iterations=2)
    m = utils.spectral_norm(nb.nn.Linear(4, 3, dtype=nb.float64), n_power_iterations=2)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    x = RNG.standard_normal((2, 4))
    for _ in range(3):  # training forwards: the power iterations agree
        got, want = m(f64(x)).numpy(), tm(torch.tensor(x)).detach().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(m.weight_u.numpy(), tm.weight_u.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- skip_init


def test_skip_init_skips_the_initialisation():
    m = utils.skip_init(nb.nn.Linear, 5, out_features=2)
    assert type(m) is nb.nn.Linear and m.weight.shape == (2, 5) and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.numpy(), 0.0)  # allocated, not initialised
    assert np.abs(nb.nn.Linear(5, 2).weight.numpy()).max() > 0
    with pytest.raises(RuntimeError, match="Expected a Module"):
        utils.skip_init(int)


# ---------------------------------------------------------------- DistributedSampler


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_splits_the_dataset_over_the_ranks(shuffle, drop_last):
    n, world = 11, 3
    shares = [
        list(nb.data.DistributedSampler(range(n), world, r, shuffle=shuffle, drop_last=drop_last))
        for r in range(world)
    ]
    per = (n - world) // world + 1 if drop_last else -(-n // world)
    assert all(len(s) == per for s in shares)
    assert len(nb.data.DistributedSampler(range(n), world, 0, drop_last=drop_last)) == per
    flat = [i for s in shares for i in s]
    if drop_last:
        assert len(set(flat)) == len(flat) == 9  # disjoint, the tail dropped
    else:
        assert set(flat) == set(range(n)) and len(flat) == 12  # one index repeated as padding
    if not shuffle:
        order = list(range(n)) + list(range(n))[: world * per - n]
        assert shares[1] == order[: world * per][1::world]


def test_distributed_sampler_epochs_and_seeds():
    s = nb.data.DistributedSampler(range(20), num_replicas=2, rank=0, seed=3)
    first = list(s)
    assert list(s) == first  # the same epoch: the same order
    s.set_epoch(1)
    assert list(s) != first
    other = nb.data.DistributedSampler(range(20), num_replicas=2, rank=1, seed=3)
    other.set_epoch(1)
    assert set(s) | set(other) == set(range(20))  # both ranks drew the same permutation
    loader = nb.data.DataLoader(nb.data.TensorDataset(np.arange(20.0)), batch_size=5, sampler=s)
    assert sorted(int(v) for (b,) in loader for v in b.numpy()) == sorted(s)


def test_distributed_sampler_refusals():
    with pytest.raises(ValueError, match="Invalid rank 3"):
        nb.data.DistributedSampler(range(4), num_replicas=3, rank=3)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        nb.data.DistributedSampler(range(4), num_replicas=3, rank=-1)
    with pytest.raises(TypeError, match="num_replicas"):
        nb.data.DistributedSampler(range(4), num_replicas=2.5, rank=0)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="num_replicas= and rank="):
            nb.data.DistributedSampler(range(4))


def test_distributed_sampler_without_shuffle_matches_pytorch():
    pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler

    for drop_last in (False, True):
        for r in range(4):
            want = list(DistributedSampler(range(10), 4, r, shuffle=False, drop_last=drop_last))
            got = nb.data.DistributedSampler(range(10), 4, r, shuffle=False, drop_last=drop_last)
            assert list(got) == want


def test_get_worker_info_is_none_in_the_loading_process():
    seen = []

    class Probe(nb.data.Dataset):
        def __getitem__(self, i):
            seen.append(nb.data.get_worker_info())
            return np.float64(i)

        def __len__(self):
            return 3

    list(nb.data.DataLoader(Probe(), batch_size=2))
    assert seen == [None, None, None] and nb.utils.data.get_worker_info() is None
