"""More of PyTorch's nn.functional and nn: activations, losses, norms, dropouts, Bilinear and
the parameter containers, all composed from nbflow's ops.

Each function is checked against an independent numpy reference (always) and against PyTorch
in float64 (when torch imports): values, then gradients of a random cotangent for every float
input; a few gradients also against finite differences. Modules: parameter names and shapes
equal PyTorch's, outputs equal with the same weights, train/eval behaviour of the dropouts.
Typed errors for bad input, and eager equals @nbflow.jit for a handful."""

import math

import numpy as np
import pytest

import nbflow as nb
import nbflow.nn.functional as F
from nbflow import nn
from nbflow import testing as nt

RNG = np.random.default_rng(0)
REDUCTIONS = ("mean", "sum", "none")
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _torch():
    return pytest.importorskip("torch")


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_sigmoid(x):
    return -np.logaddexp(0, -x)


def _reduce(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": np.asarray}[reduction](loss)


def _close(got, expected, rtol=1e-10, atol=1e-12):
    got = got.numpy() if hasattr(got, "numpy") else got
    expected = expected.detach().numpy() if hasattr(expected, "detach") else expected
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=rtol, atol=atol)
    assert np.shape(got) == np.shape(expected)


def _against_torch(nb_fn, torch_fn, arrays, grad_of=None, grad_rtol=1e-9):
    """nb_fn(*tensors) and torch_fn(*torch tensors) agree in value and, for the inputs at
    positions grad_of (default: every float array), in the gradient of a random cotangent."""
    torch = _torch()
    grad_of = (
        [i for i, a in enumerate(arrays) if a.dtype.kind == "f"] if grad_of is None else grad_of
    )
    ours = [nb.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
    out, expected = nb_fn(*ours), torch_fn(*theirs)
    _close(out, expected)
    if not grad_of:
        return
    cot = np.random.default_rng(1).standard_normal(np.shape(expected.detach().numpy()))
    got = nb.grad(out, [ours[i] for i in grad_of], nb.tensor(cot))
    want = torch.autograd.grad(expected, [theirs[i] for i in grad_of], torch.tensor(cot))
    for g, w in zip(got, want):
        _close(g, w, rtol=grad_rtol, atol=1e-10)


# ---------------------------------------------------------------- activations

X = RNG.standard_normal((3, 4, 5)) * 3
W4 = RNG.uniform(0.05, 0.5, 4)

# name, kwargs, numpy reference
ACTIVATIONS = [
    ("hardswish", {}, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hardsigmoid", {}, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("mish", {}, lambda x: x * np.tanh(np.logaddexp(0, x))),
    ("selu", {}, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    ("celu", {"alpha": 0.7}, lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7))),
    ("softsign", {}, lambda x: x / (1 + np.abs(x))),
    ("softmin", {"dim": 1}, lambda x: _softmax(-x, 1)),
    ("tanhshrink", {}, lambda x: x - np.tanh(x)),
    ("softshrink", {"lambd": 0.4}, lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.4, 0)),
    ("hardshrink", {"lambd": 0.4}, lambda x: np.where(np.abs(x) > 0.4, x, 0.0)),
    ("threshold", {"threshold": 0.2, "value": -1.5}, lambda x: np.where(x > 0.2, x, -1.5)),
    ("glu", {"dim": -1}, lambda x: x[..., :2] * _sigmoid(x[..., 2:4])),
    ("glu", {"dim": 1}, lambda x: x[:, :2] * _sigmoid(x[:, 2:])),
]


def _activation_input(name, kwargs):
    return X[..., :4] if name == "glu" and kwargs["dim"] == -1 else X


@pytest.mark.parametrize("name, kwargs, ref", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_matches_numpy(name, kwargs, ref):
    x = _activation_input(name, kwargs)
    out = getattr(F, name)(nb.tensor(x), **kwargs)
    assert out.dtype == nb.float64
    _close(out, ref(x))
    f32 = getattr(F, name)(nb.tensor(x.astype(np.float32)), **kwargs)
    assert f32.dtype == nb.float32
    _close(f32, ref(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, kwargs, ref", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_gradients_match_torch(name, kwargs, ref):
    TF = _torch().nn.functional
    x = _activation_input(name, kwargs)
    # PyTorch's backward of hardsigmoid multiplies by a float32 1/6 and celu's by a float32
    # 1/alpha, even in float64
    rtol = 1e-6 if name in ("hardsigmoid", "celu") else 1e-9
    _against_torch(
        lambda t: getattr(F, name)(t, **kwargs),
        lambda t: getattr(TF, name)(t, **kwargs),
        [x],
        grad_rtol=rtol,
    )


KINKS = np.array([-4.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0])


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("hardtanh", {}),
        ("hardtanh", {"min_val": -0.5, "max_val": 3.0}),
        ("relu6", {}),
        ("hardswish", {}),
        ("hardsigmoid", {}),
        ("relu", {}),
    ],
)
def test_activation_gradients_at_their_kinks_match_torch(name, kwargs):
    """At the bounds themselves: hardtanh and relu6 pass no gradient there (clip does)."""
    TF = _torch().nn.functional
    _against_torch(
        lambda t: getattr(F, name)(t, **kwargs),
        lambda t: getattr(TF, name)(t, **kwargs),
        [KINKS],
        grad_rtol=1e-6,
    )


def test_clip_passes_the_gradient_at_its_bounds_as_torch_clamp_does():
    torch = _torch()
    _against_torch(lambda t: nb.clip(t, -1.0, 3.0), lambda t: torch.clamp(t, -1.0, 3.0), [KINKS])


def test_hardtanh_refuses_bounds_in_the_wrong_order():
    with pytest.raises(nb.errors.AttrError, match="min_val"):
        F.hardtanh(nb.tensor(KINKS), 1.0, -1.0)


@pytest.mark.parametrize("count", [1, 4])
def test_prelu_matches_numpy_and_torch(count):
    w = W4[:count]
    expected = np.where(X > 0, X, (w if count == 1 else w[:, None]) * X)
    _close(F.prelu(nb.tensor(X), nb.tensor(w)), expected)
    _close(F.prelu(nb.tensor(X[0, :, 0]), nb.tensor(w)), expected[0, :, 0])  # 1-D: dim 0
    torch = _torch()
    _against_torch(F.prelu, torch.nn.functional.prelu, [X, w])


def test_activation_gradients_against_finite_differences():
    x = nb.tensor(RNG.standard_normal((3, 4)) * 2, requires_grad=True)
    w = nb.tensor(W4, requires_grad=True)
    for fn in (F.mish, F.selu, F.softsign, lambda t: F.celu(t, 0.6), lambda t: F.glu(t, 1)):
        nt.gradcheck(fn, [x])
    nt.gradcheck(F.prelu, [x, w])
    nt.gradgradcheck(F.mish, [x])


def test_softmin_default_dim_is_pytorchs_with_its_warning():
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = F.softmin(nb.tensor(X[0]))  # 2-D: dim 1
    _close(out, _softmax(-X[0], 1))
    with pytest.warns(UserWarning):
        _close(nn.Softmin()(nb.tensor(X)), _softmax(-X, 0))  # 3-D: dim 0


INPLACE = [
    ("relu_", {}, lambda x: np.maximum(x, 0)),
    ("leaky_relu_", {"negative_slope": 0.2}, lambda x: np.where(x > 0, x, 0.2 * x)),
    ("elu_", {"alpha": 0.5}, lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("hardtanh_", {"min_val": -0.5, "max_val": 2.0}, lambda x: np.clip(x, -0.5, 2.0)),
    ("selu_", {}, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
    ("celu_", {"alpha": 2.0}, lambda x: np.where(x > 0, x, 2.0 * np.expm1(x / 2.0))),
    ("threshold_", {"threshold": 0.1, "value": 7.0}, lambda x: np.where(x > 0.1, x, 7.0)),
]


@pytest.mark.parametrize("name, kwargs, ref", INPLACE, ids=[a[0] for a in INPLACE])
def test_inplace_forms_write_into_the_input(name, kwargs, ref):
    x = nb.tensor(X.copy())
    out = getattr(F, name)(x, **kwargs)
    assert out is x
    _close(x, ref(X))
    if pytest.importorskip("torch", reason="torch for the comparison"):
        import torch

        t = torch.tensor(X.copy())
        getattr(torch.nn.functional, name)(t, **kwargs)
        _close(x, t)


def test_inplace_argument_of_the_new_modules():
    for module, ref in [
        (nn.Hardswish(inplace=True), ACTIVATIONS[0][2]),
        (nn.SELU(inplace=True), INPLACE[4][2]),
        (nn.CELU(2.0, inplace=True), INPLACE[5][2]),
        (nn.Threshold(0.1, 7.0, inplace=True), INPLACE[6][2]),
    ]:
        x = nb.tensor(X.copy())
        assert module(x) is x
        _close(x, ref(X))
    x = nb.tensor(X.copy())
    assert nn.Mish()(x) is not x  # inplace=False leaves the input alone
    _close(x, X)


@pytest.mark.parametrize("name, kwargs, ref", INPLACE, ids=[a[0] for a in INPLACE])
def test_inplace_forms_of_a_computed_tensor_differentiate_as_the_plain_ones(name, kwargs, ref):
    # (their gradients read the input, which the write overwrites: PyTorch keeps the original)
    leaf = nb.tensor(X, dtype=nb.float64, requires_grad=True)
    y = leaf * 1.0
    assert getattr(F, name)(y, **kwargs) is y
    (got,) = nb.grad(nb.sum(y * y), [leaf])
    plain = getattr(F, name.rstrip("_"))(leaf, **kwargs)
    (want,) = nb.grad(nb.sum(plain * plain), [leaf])
    _close(got, want.numpy())
    _close(y, ref(X))


def test_inplace_methods_of_a_computed_tensor_differentiate():
    x0 = np.abs(X) + 0.1
    for method in ("sin_", "log_", "abs_", "relu_", "sqrt_", "reciprocal_"):
        leaf = nb.tensor(x0, dtype=nb.float64, requires_grad=True)
        y = leaf * 1.0
        getattr(y, method)()
        (got,) = nb.grad(nb.sum(y * y), [leaf])
        plain = getattr(leaf * 1.0, method.rstrip("_"))()
        (want,) = nb.grad(nb.sum(plain * plain), [leaf])
        _close(got, want.numpy())
    leaf = nb.tensor(x0, dtype=nb.float64, requires_grad=True)
    y = leaf * 1.0
    y.pow_(1.5)
    (got,) = nb.grad(nb.sum(y), [leaf])
    _close(got, 1.5 * x0**0.5)


def test_inplace_write_is_seen_by_autograd():
    leaf = nb.tensor(X, requires_grad=True)
    y = leaf * 1.0
    z = nb.sin(y)  # saves y
    F.selu_(y)
    with pytest.raises(nb.GradientError):
        nb.sum(z).backward()


ACTIVATION_MODULES = [
    ("Hardswish", (), "hardswish", {}),
    ("Hardsigmoid", (), "hardsigmoid", {}),
    ("Mish", (), "mish", {}),
    ("SELU", (), "selu", {}),
    ("CELU", (0.7,), "celu", {"alpha": 0.7}),
    ("Softsign", (), "softsign", {}),
    ("Softmin", (1,), "softmin", {"dim": 1}),
    ("Tanhshrink", (), "tanhshrink", {}),
    ("Softshrink", (0.3,), "softshrink", {"lambd": 0.3}),
    ("Hardshrink", (0.3,), "hardshrink", {"lambd": 0.3}),
    ("Threshold", (0.2, -1.0), "threshold", {"threshold": 0.2, "value": -1.0}),
    ("GLU", (1,), "glu", {"dim": 1}),
    ("LogSigmoid", (), "logsigmoid", {}),
]


@pytest.mark.parametrize(
    "cls, args, fn, kwargs", ACTIVATION_MODULES, ids=[m[0] for m in ACTIVATION_MODULES]
)
def test_activation_modules_call_their_function(cls, args, fn, kwargs):
    x = nb.tensor(X)
    _close(getattr(nn, cls)(*args)(x), getattr(F, fn)(x, **kwargs))
    torch = pytest.importorskip("torch")
    _close(getattr(nn, cls)(*args)(x), getattr(torch.nn, cls)(*args)(torch.tensor(X)))


def test_softmax2d_and_prelu_module():
    x = X.reshape(3, 4, 5, 1)
    _close(nn.Softmax2d()(nb.tensor(x)), _softmax(x, 1))
    _close(nn.Softmax2d()(nb.tensor(X)), _softmax(X, 0))
    m = nn.PReLU(4, init=0.1, dtype="float64")
    assert [(n, p.shape) for n, p in m.named_parameters()] == [("weight", (4,))]
    _close(m.weight, np.full(4, 0.1))
    out = m(nb.tensor(X))
    _close(out, np.where(X > 0, X, 0.1 * X))
    nb.sum(out).backward()
    _close(m.weight.grad, np.where(X > 0, 0, X).sum(axis=(0, 2)))
    torch = pytest.importorskip("torch")
    assert list(nn.PReLU().state_dict()) == list(torch.nn.PReLU().state_dict())
    _close(nn.Softmax2d()(nb.tensor(x)), torch.nn.Softmax2d()(torch.tensor(x)))


# ---------------------------------------------------------------- losses

A = RNG.standard_normal((4, 5)) * 2
B = RNG.standard_normal((4, 5))
C = RNG.standard_normal((4, 5))
P = RNG.uniform(0.02, 0.98, (4, 5))
Y = RNG.uniform(0, 1, (4, 5))
LABELS = (RNG.random((4, 5)) > 0.5).astype(np.float64)
SIGNS = np.where(RNG.random((4, 5)) > 0.5, 1.0, -1.0)
ROW_SIGNS = np.array([1.0, -1.0, 1.0, -1.0])
COUNTS = RNG.poisson(2.0, (4, 5)).astype(np.float64)
VAR = RNG.uniform(0.1, 2.0, (4, 5))
WEIGHT5 = RNG.uniform(0.5, 2.0, 5)
LOG_P = np.log(_softmax(A, 1))
Q = _softmax(B, 1)
Q[0, 0] = 0.0  # a zero target: xlogy's 0


def _distance(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def _huber(a, b, delta):
    d = np.abs(a - b)
    return np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))


def _stirling(c):
    safe = np.where(c > 1, c, 2.0)
    return np.where(c > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe), 0.0)


def _cos_embedding(a, b, y, margin):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    return np.where(y == 1, 1 - cos, np.maximum(cos - margin, 0))


# name, arrays, kwargs, numpy reference of the unreduced loss, float inputs with gradients
LOSSES = [
    (
        "binary_cross_entropy",
        [P, Y, WEIGHT5],
        {},
        lambda p, y, w: -w * (y * np.log(p) + (1 - y) * np.log(1 - p)),
        [0, 1],  # (PyTorch takes no gradient for weight)
    ),
    ("huber_loss", [A, B], {"delta": 0.7}, lambda a, b: _huber(a, b, 0.7), [0, 1]),
    (
        "smooth_l1_loss",
        [A, B],
        {"beta": 0.5},
        lambda a, b: _huber(a, b, 0.5) / 0.5,
        [0, 1],
    ),
    ("smooth_l1_loss", [A, B], {"beta": 0.0}, lambda a, b: np.abs(a - b), [0, 1]),
    (
        "kl_div",
        [LOG_P, Q],
        {},
        lambda lp, q: np.where(q > 0, q * np.log(np.where(q > 0, q, 1)), 0) - q * lp,
        [0],  # (PyTorch's target gradient is NaN where the target is 0; ours is finite)
    ),
    (
        "kl_div",
        [LOG_P, np.log(P)],
        {"log_target": True},
        lambda lp, lq: np.exp(lq) * (lq - lp),
        [0, 1],
    ),
    (
        "margin_ranking_loss",
        [A, B, SIGNS],
        {"margin": 0.3},
        lambda a, b, y: np.maximum(-y * (a - b) + 0.3, 0),
        [0, 1],
    ),
    (
        "hinge_embedding_loss",
        [A, SIGNS],
        {"margin": 0.8},
        lambda a, y: np.where(y == 1, a, np.maximum(0.8 - a, 0)),
        [0],
    ),
    ("soft_margin_loss", [A, SIGNS], {}, lambda a, y: np.log1p(np.exp(-y * a)), [0]),
    ("poisson_nll_loss", [A, COUNTS], {}, lambda a, c: np.exp(a) - c * a, [0]),
    (
        "poisson_nll_loss",
        [P, COUNTS],
        {"log_input": False, "full": True, "eps": 1e-6},
        lambda p, c: p - c * np.log(p + 1e-6) + _stirling(c),
        [0],
    ),
    (
        "gaussian_nll_loss",
        [A, B, VAR],
        {"full": True},
        lambda a, b, v: 0.5 * (np.log(v) + (a - b) ** 2 / v) + 0.5 * np.log(2 * np.pi),
        [0, 1, 2],
    ),
    (
        "gaussian_nll_loss",
        [A, B, VAR[:, 0]],  # one variance per row
        {},
        lambda a, b, v: 0.5 * (np.log(v[:, None]) + (a - b) ** 2 / v[:, None]),
        [0, 1, 2],
    ),
    (
        "cosine_embedding_loss",
        [A, B, ROW_SIGNS],
        {"margin": 0.1},
        lambda a, b, y: _cos_embedding(a, b, y, 0.1),
        [0, 1],
    ),
    (
        "triplet_margin_loss",
        [A, B, C],
        {"margin": 1.5},
        lambda a, p, n: np.maximum(1.5 + _distance(a, p) - _distance(a, n), 0),
        [0, 1, 2],
    ),
    (
        "triplet_margin_loss",
        [A, B, C],
        {"p": 1, "swap": True},
        lambda a, p, n: np.maximum(
            1 + _distance(a, p, 1) - np.minimum(_distance(a, n, 1), _distance(p, n, 1)), 0
        ),
        [0, 1, 2],
    ),
    (
        "multilabel_soft_margin_loss",
        [A, LABELS, WEIGHT5],
        {},
        lambda a, y, w: (-(y * _log_sigmoid(a) + (1 - y) * _log_sigmoid(-a)) * w).mean(-1),
        [0, 2],
    ),
]
LOSS_IDS = [f"{name}-{i}" for i, (name, *_) in enumerate(LOSSES)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, arrays, kwargs, ref, grads", LOSSES, ids=LOSS_IDS)
def test_loss_matches_numpy(name, arrays, kwargs, ref, grads, reduction):
    tensors = [nb.tensor(a) for a in arrays]
    out = getattr(F, name)(*tensors, reduction=reduction, **kwargs)
    assert out.dtype == nb.float64
    _close(out, _reduce(ref(*arrays), reduction))


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # (PyTorch's kl_div)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, arrays, kwargs, ref, grads", LOSSES, ids=LOSS_IDS)
def test_loss_values_and_gradients_match_torch(name, arrays, kwargs, ref, grads, reduction):
    torch = _torch()
    _against_torch(
        lambda *t: getattr(F, name)(*t, reduction=reduction, **kwargs),
        lambda *t: getattr(torch.nn.functional, name)(*t, reduction=reduction, **kwargs),
        arrays,
        grad_of=grads,
    )


def test_kl_div_batchmean():
    out = F.kl_div(nb.tensor(LOG_P), nb.tensor(Q), reduction="batchmean")
    _close(out, (np.where(Q > 0, Q * np.log(np.where(Q > 0, Q, 1)), 0) - Q * LOG_P).sum() / 4)
    torch = _torch()
    _against_torch(
        lambda x, y: F.kl_div(x, y, reduction="batchmean"),
        lambda x, y: torch.nn.functional.kl_div(x, y, reduction="batchmean"),
        [LOG_P, Q],
        grad_of=[0],
    )


def test_binary_cross_entropy_clamps_the_log_at_minus_100():
    p = np.array([0.0, 1.0, 0.5, 1e-50, 0.3, 1.0])
    y = np.array([1.0, 0.0, 0.5, 1.0, 0.2, 1.0])
    out = F.binary_cross_entropy(nb.tensor(p), nb.tensor(y), reduction="none")
    _close(out[:3], [100.0, 100.0, math.log(2)])
    # the gradients too, where a log is clamped: PyTorch's (x - y) / max(x (1 - x), 1e-12)
    _against_torch(
        lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
        lambda a, b: _torch().nn.functional.binary_cross_entropy(a, b, reduction="none"),
        [p[1:], y[1:]],  # (p = 0: the target's gradient is -inf - inf there, NaN both ways)
        grad_of=[0, 1],
        grad_rtol=1e-7,  # (1e11-sized gradients, the division's order differs)
    )
    x = nb.tensor(p, requires_grad=True)
    nb.sum(F.binary_cross_entropy(x, nb.tensor(y))).backward()
    _close(x.grad[:2], [-1e12 / 6, 1e12 / 6], rtol=1e-6)


def test_gaussian_nll_loss_clamps_the_variance_but_not_its_gradient_as_torch():
    var = np.array([[1e-9, 0.0, 0.5], [2.0, 1e-7, 1e-6]])  # below, at and above eps
    _against_torch(
        lambda a, b, v: F.gaussian_nll_loss(a, b, v, reduction="none"),
        lambda a, b, v: _torch().nn.functional.gaussian_nll_loss(a, b, v, reduction="none"),
        [A[:2, :3] * 1e-3, B[:2, :3] * 1e-3, var],
        grad_of=[0, 1, 2],
        grad_rtol=1e-8,
    )


def test_gaussian_nll_loss_refuses_a_negative_variance_tensor_in_both_modes():
    x, var = nb.tensor(A[:2, :3]), nb.tensor(np.abs(B[:2, :3]))
    F.gaussian_nll_loss(x, x * 0.5, var)  # non-negative: fine
    var.numpy()[1, 2] = -1e-3
    traced = nb.jit(lambda a, b, v: F.gaussian_nll_loss(a, b, v))
    for call in (F.gaussian_nll_loss, traced):
        with pytest.raises(nb.DomainError, match="negative entry"):
            call(x, x * 0.5, var)


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan])
def test_binary_cross_entropy_refuses_what_is_not_a_probability(bad):
    with pytest.raises(nb.errors.DomainError, match="probability"):
        F.binary_cross_entropy(nb.tensor([0.5, bad]), nb.tensor([1.0, 0.0]))


def test_distances_match_numpy_and_torch():
    a, b = nb.tensor(A), nb.tensor(B)
    n1 = np.maximum(np.linalg.norm(A, axis=0), 1e-8)
    n2 = np.maximum(np.linalg.norm(B, axis=0), 1e-8)
    _close(F.cosine_similarity(a, b, dim=0), (A * B).sum(0) / (n1 * n2))
    _close(nn.CosineSimilarity(dim=0)(a, b), (A * B).sum(0) / (n1 * n2))
    _close(F.pairwise_distance(a, b, 3.0), _distance(A, B, 3.0))
    _close(nn.PairwiseDistance(1.0, keepdim=True)(a, b), _distance(A, B, 1.0)[:, None])
    torch = _torch()
    for dim in (0, 1, -1):
        _against_torch(
            lambda x, y, d=dim: F.cosine_similarity(x, y, d),
            lambda x, y, d=dim: torch.nn.functional.cosine_similarity(x, y, d),
            [A, B],
        )
    for p in (1.0, 2.0, 3.5):
        _against_torch(
            lambda x, y, p=p: F.pairwise_distance(x, y, p, keepdim=True),
            lambda x, y, p=p: torch.nn.functional.pairwise_distance(x, y, p, keepdim=True),
            [A, B],
        )
    # broadcasting a row against a batch, as PyTorch allows
    _against_torch(F.cosine_similarity, torch.nn.functional.cosine_similarity, [A[:1], B])


def test_loss_gradients_against_finite_differences():
    def leaf(a):
        return nb.tensor(a, requires_grad=True)

    nt.gradcheck(F.binary_cross_entropy, [leaf(P), leaf(Y), leaf(WEIGHT5)])
    nt.gradcheck(lambda a, b: F.huber_loss(a, b, delta=0.7), [leaf(A), leaf(B)])
    nt.gradcheck(F.kl_div, [leaf(LOG_P), leaf(P)])
    nt.gradcheck(F.gaussian_nll_loss, [leaf(A), leaf(B), leaf(VAR)])
    nt.gradcheck(F.triplet_margin_loss, [leaf(A), leaf(B), leaf(C)])
    nt.gradcheck(
        lambda a, b: F.cosine_embedding_loss(a, b, nb.tensor(ROW_SIGNS)), [leaf(A), leaf(B)]
    )


LOSS_MODULES = [
    ("BCELoss", {"weight": WEIGHT5}, "binary_cross_entropy", [P, Y]),
    ("HuberLoss", {"delta": 0.6}, "huber_loss", [A, B]),
    ("SmoothL1Loss", {"beta": 0.4}, "smooth_l1_loss", [A, B]),
    ("KLDivLoss", {"reduction": "batchmean", "log_target": False}, "kl_div", [LOG_P, Q]),
    ("MarginRankingLoss", {"margin": 0.2}, "margin_ranking_loss", [A, B, SIGNS]),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "hinge_embedding_loss", [A, SIGNS]),
    ("SoftMarginLoss", {}, "soft_margin_loss", [A, SIGNS]),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, "poisson_nll_loss", [P, COUNTS]),
    ("GaussianNLLLoss", {"full": True, "eps": 1e-3}, "gaussian_nll_loss", [A, B, VAR]),
    ("CosineEmbeddingLoss", {"margin": 0.1}, "cosine_embedding_loss", [A, B, ROW_SIGNS]),
    (
        "TripletMarginLoss",
        {"margin": 0.5, "p": 1.0, "swap": True},
        "triplet_margin_loss",
        [A, B, C],
    ),
    ("MultiLabelSoftMarginLoss", {"weight": WEIGHT5}, "multilabel_soft_margin_loss", [A, LABELS]),
]


@pytest.mark.parametrize("cls, kwargs, fn, arrays", LOSS_MODULES, ids=[m[0] for m in LOSS_MODULES])
def test_loss_modules(cls, kwargs, fn, arrays):
    ours = {k: nb.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tensors = [nb.tensor(a) for a in arrays]
    for reduction in ("sum", kwargs.get("reduction", "mean")):
        module = getattr(nn, cls)(**{**ours, "reduction": reduction})
        expected = getattr(F, fn)(*tensors, **{**ours, "reduction": reduction})
        _close(module(*tensors), expected)
    torch = pytest.importorskip("torch")
    theirs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    reference = getattr(torch.nn, cls)(**theirs)
    _close(getattr(nn, cls)(**ours)(*tensors), reference(*[torch.tensor(a) for a in arrays]))
    assert list(getattr(nn, cls)(**ours).state_dict()) == list(reference.state_dict())


def test_legacy_size_average_and_reduce_set_the_reduction():
    a, b = nb.tensor(A), nb.tensor(B)
    _close(F.smooth_l1_loss(a, b, reduce=False), _huber(A, B, 1.0))
    _close(F.smooth_l1_loss(a, b, size_average=False), _huber(A, B, 1.0).sum())
    assert nn.SoftMarginLoss(size_average=False).reduction == "sum"
    assert nn.BCELoss(None, None, False).reduction == "none"


# ---------------------------------------------------------------- norms


def _instance_norm(x, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def _lrn(x, size, alpha=1e-4, beta=0.75, k=1.0):
    sq = x * x
    div = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - size // 2), min(x.shape[1], c + (size - 1) // 2 + 1)
        div[:, c] = sq[:, lo:hi].sum(1)
    return x / (k + alpha * div / size) ** beta


def test_rms_norm_matches_numpy_and_torch():
    w = RNG.uniform(0.5, 1.5, 5)
    ms = (X * X).mean(-1, keepdims=True)
    _close(F.rms_norm(nb.tensor(X), 5, nb.tensor(w), 1e-3), X / np.sqrt(ms + 1e-3) * w)
    eps = np.finfo(np.float64).eps  # eps None: the dtype's machine epsilon
    ms2 = (X * X).mean((-2, -1), keepdims=True)
    _close(F.rms_norm(nb.tensor(X), (4, 5)), X / np.sqrt(ms2 + eps))
    m = nn.RMSNorm([4, 5], dtype="float64")
    assert [(n, p.shape) for n, p in m.named_parameters()] == [("weight", (4, 5))]
    _close(m(nb.tensor(X)), X / np.sqrt(ms2 + eps))
    torch = _torch()
    tf = torch.nn.functional
    _against_torch(
        lambda x, w: F.rms_norm(x, (5,), w), lambda x, w: tf.rms_norm(x, (5,), w), [X, w]
    )
    x32 = (X * 1e-4).astype(np.float32)  # small values, where the default eps shows
    _close(
        F.rms_norm(nb.tensor(x32), (4, 5)),
        tf.rms_norm(torch.tensor(x32), (4, 5)),
        rtol=1e-5,
        atol=1e-6,
    )
    assert list(nn.RMSNorm(3).state_dict()) == list(torch.nn.RMSNorm(3).state_dict())


def test_instance_norm_matches_numpy_and_updates_running_statistics():
    x = RNG.standard_normal((3, 4, 5, 2)) * 2 + 1
    w, b = RNG.uniform(0.5, 1.5, 4), RNG.standard_normal(4)
    out = F.instance_norm(nb.tensor(x), weight=nb.tensor(w), bias=nb.tensor(b), eps=1e-3)
    _close(out, _instance_norm(x, 1e-3) * w[:, None, None] + b[:, None, None])
    mean, var = nb.zeros(4, dtype="float64"), nb.ones(4, dtype="float64")
    F.instance_norm(nb.tensor(x), mean, var, momentum=0.3)
    per = x.reshape(3, 4, -1)
    _close(mean, 0.7 * 0 + 0.3 * per.mean(-1).mean(0))
    _close(var, 0.7 * 1 + 0.3 * per.var(-1, ddof=1).mean(0))
    frozen = F.instance_norm(nb.tensor(x), mean, var, use_input_stats=False)
    _close(frozen, (x - mean.numpy()[:, None, None]) / np.sqrt(var.numpy()[:, None, None] + 1e-5))
    torch = _torch()
    tf = torch.nn.functional
    _against_torch(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
        lambda x, w, b: tf.instance_norm(x, weight=w, bias=b),
        [x, w, b],
    )


@pytest.mark.parametrize("dims", [1, 2])
def test_instance_norm_modules_match_torch(dims):
    torch = _torch()
    shape = (3, 4, 6) if dims == 1 else (3, 4, 3, 2)
    x = RNG.standard_normal(shape) * 2 + 0.5
    cls = f"InstanceNorm{dims}d"
    plain = getattr(nn, cls)(4)
    assert list(plain.state_dict()) == list(getattr(torch.nn, cls)(4).state_dict()) == []
    _close(plain(nb.tensor(x)), _instance_norm(x))
    _close(plain(nb.tensor(x[0])), _instance_norm(x[:1])[0])  # unbatched
    ours = getattr(nn, cls)(4, momentum=0.2, affine=True, track_running_stats=True, dtype="float64")
    theirs = getattr(torch.nn, cls)(4, momentum=0.2, affine=True, track_running_stats=True).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(RNG.uniform(0.5, 1.5, 4)))
        theirs.bias.copy_(torch.tensor(RNG.standard_normal(4)))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})  # 0-D too
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }
    for _ in range(2):  # training: batch statistics, running ones updated
        _close(ours(nb.tensor(x)), theirs(torch.tensor(x)))
    for name in ("running_mean", "running_var"):
        _close(getattr(ours, name), getattr(theirs, name))
    ours.eval()
    theirs.eval()
    _close(ours(nb.tensor(x)), theirs(torch.tensor(x)))  # eval: the running statistics


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm(size):
    x = RNG.standard_normal((2, 6, 3, 2)) * 3
    _close(F.local_response_norm(nb.tensor(x), size, 0.1, 0.6, 2.0), _lrn(x, size, 0.1, 0.6, 2.0))
    _close(nn.LocalResponseNorm(size)(nb.tensor(x[..., 0])), _lrn(x[..., 0], size))
    torch = _torch()
    _against_torch(
        lambda t: F.local_response_norm(t, size, 0.1, 0.6, 2.0),
        lambda t: torch.nn.functional.local_response_norm(t, size, 0.1, 0.6, 2.0),
        [x],
    )


def test_norm_gradients_against_finite_differences():
    x = nb.tensor(RNG.standard_normal((2, 3, 4)), requires_grad=True)
    w = nb.tensor(RNG.uniform(0.5, 1.5, 4), requires_grad=True)
    nt.gradcheck(lambda x, w: F.rms_norm(x, 4, w), [x, w])
    nt.gradcheck(lambda x: F.instance_norm(x), [x])
    nt.gradcheck(lambda x: F.local_response_norm(x, 2, 0.5), [x])


# ---------------------------------------------------------------- bilinear and containers


def test_bilinear_matches_numpy_and_torch():
    x1, x2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 5))
    m = nn.Bilinear(4, 5, 6, dtype="float64", generator=nb.Generator(0))
    assert [(n, p.shape) for n, p in m.named_parameters()] == [
        ("weight", (6, 4, 5)),
        ("bias", (6,)),
    ]
    bound = 1 / math.sqrt(4)
    assert np.abs(m.weight.numpy()).max() <= bound and np.abs(m.bias.numpy()).max() <= bound
    expected = np.einsum("abi,oij,abj->abo", x1, m.weight.numpy(), x2) + m.bias.numpy()
    _close(m(nb.tensor(x1), nb.tensor(x2)), expected)
    assert nn.Bilinear(4, 5, 6, bias=False).bias is None
    torch = _torch()
    theirs = torch.nn.Bilinear(4, 5, 6)
    assert {k: tuple(v.shape) for k, v in theirs.state_dict().items()} == {
        k: v.shape for k, v in m.state_dict().items()
    }
    w, b = m.weight.numpy(), m.bias.numpy()
    _against_torch(F.bilinear, torch.nn.functional.bilinear, [x1, x2, w, b])


def test_parameter_list_and_dict_register_their_parameters():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([nb.ones(3), nn.Parameter(nb.zeros(2))])
            self.extra = nn.ParameterDict({"shift": nb.zeros(3)})
            self.scales.append(nb.full((4,), 2.0))
            self.extra["gain"] = nb.ones(1)

        def forward(self, x):
            return x * self.scales[0] + self.extra["shift"] + self.extra["gain"]

    m = Model()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scales.0", "scales.1", "scales.2", "extra.shift", "extra.gain"]
    assert list(m.state_dict()) == names
    assert all(p.requires_grad for p in m.parameters())
    assert len(m.scales) == 3 and [p.shape for p in m.scales] == [(3,), (2,), (4,)]
    assert m.scales[-1] is m.scales[2] and "gain" in m.extra and len(m.extra) == 2
    assert list(m.extra.keys()) == ["shift", "gain"]
    nb.sum(m(nb.ones(3))).backward()
    _close(m.extra["shift"].grad, np.ones(3, np.float32), 0, 0)
    m.load_state_dict({**{k: v.numpy() for k, v in m.state_dict().items()}, "scales.1": [5, 6]})
    _close(m.scales[1], np.array([5, 6], np.float32), 0, 0)
    del m.extra["gain"]
    assert list(m.extra) == ["shift"] and "extra.gain" not in m.state_dict()
    torch = pytest.importorskip("torch")
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(3)), torch.zeros(2)])
    assert list(theirs.state_dict()) == list(
        nn.ParameterList([nb.ones(3), nb.zeros(2)]).state_dict()
    )


# ---------------------------------------------------------------- dropouts


@pytest.mark.parametrize(
    "cls, shape, kept",
    [
        ("Dropout1d", (40, 8, 5), 2),
        ("Dropout1d", (60, 5), 1),
        ("Dropout2d", (20, 12, 3, 2), 2),
        ("Dropout3d", (10, 12, 2, 2, 2), 2),
        ("Dropout3d", (60, 2, 2, 2), 1),
    ],
)
def test_channel_dropout_zeros_whole_channels(cls, shape, kept):
    x = RNG.uniform(1.0, 2.0, shape)  # no zeros of its own
    m = getattr(nn, cls)(0.25, generator=nb.Generator(0))
    out = m(nb.tensor(x)).numpy()
    flat, xs = out.reshape(*shape[:kept], -1), x.reshape(*shape[:kept], -1)
    dropped = (flat == 0).all(-1)
    kept_values = np.where(dropped[..., None], xs / 0.75, flat)
    np.testing.assert_allclose(kept_values, xs / 0.75, rtol=1e-12)  # the rest scaled
    assert ((flat == 0).any(-1) == dropped).all()  # a channel is dropped whole or not at all
    assert 0.1 < dropped.mean() < 0.4
    again = getattr(nn, cls)(0.25, generator=nb.Generator(0))(nb.tensor(x))
    _close(again, out, 0, 0)  # the generator makes it reproducible
    m.eval()
    _close(m(nb.tensor(x)), x, 0, 0)
    t = nb.tensor(x)
    assert getattr(F, cls.lower())(t, 0.25, training=False) is t


def test_channel_dropout_edges_and_gradient():
    x = nb.tensor(RNG.uniform(1, 2, (4, 6, 3)), requires_grad=True)
    _close(F.dropout1d(x, 1.0), np.zeros((4, 6, 3)))
    assert F.dropout1d(x, 0.0) is x
    out = F.dropout1d(x, 0.5, generator=nb.Generator(3))
    nb.sum(out).backward()
    _close(x.grad, (out.numpy() != 0) * 2.0)  # the mask, scaled
    with pytest.warns(UserWarning, match="3-D input"):
        three = F.dropout2d(nb.tensor(np.ones((4, 6, 3))), 0.5)  # PyTorch's (N, C, L) reading
    assert (three.numpy().reshape(24, 3).std(-1) == 0).all()


def test_alpha_dropout_values_and_statistics():
    p = 0.2
    a = 1 / math.sqrt((SELU_ALPHA**2 * SELU_SCALE**2 * p + 1) * (1 - p))
    alpha = SELU_ALPHA * SELU_SCALE
    dropped_value = -alpha * a + alpha * a * p
    x = RNG.standard_normal((100, 200))
    m = nn.AlphaDropout(p, generator=nb.Generator(1))
    out = m(nb.tensor(x)).numpy()
    kept = np.isclose(out, x * a + alpha * a * p, rtol=1e-12, atol=1e-12)
    assert (kept | np.isclose(out, dropped_value, rtol=1e-12)).all()
    assert abs((~kept).mean() - p) < 0.02
    assert abs(out.mean()) < 0.03 and abs(out.std() - 1) < 0.03  # SELU's fixed point kept
    m.eval()
    _close(m(nb.tensor(x)), x, 0, 0)
    _close(F.alpha_dropout(nb.tensor(x), p), x, 0, 0)  # training=False by default, as PyTorch
    _close(F.alpha_dropout(nb.tensor(x), 1.0, training=True), np.zeros_like(x))
    x3 = x.reshape(20, 10, 100)
    feature = F.feature_alpha_dropout(nb.tensor(x3), p, training=True).numpy()
    whole_kept = np.isclose(feature, x3 * a + alpha * a * p, rtol=1e-12).all(-1)
    whole_dropped = np.isclose(feature, dropped_value, rtol=1e-12).all(-1)
    assert (whole_kept | whole_dropped).all() and whole_dropped.any()  # channel by channel
    torch = _torch()
    theirs = torch.nn.functional.alpha_dropout(torch.tensor(x), p, training=True).numpy()
    same = np.isclose(theirs, x * a + alpha * a * p, rtol=1e-12, atol=1e-12)
    assert (same | np.isclose(theirs, dropped_value, rtol=1e-12)).all()  # PyTorch's formula
    zeros = torch.nn.functional.alpha_dropout(torch.tensor(x), 1.0, training=True).numpy()
    _close(zeros, np.zeros_like(x))


# ---------------------------------------------------------------- errors


def test_bad_input_raises_typed_errors_naming_the_function():
    x, y = nb.tensor(A), nb.tensor(B)
    cases = [
        (nb.AttrError, "huber_loss", lambda: F.huber_loss(x, y, reduction="avg")),
        (nb.AttrError, "kl_div", lambda: F.kl_div(x, y, reduction="batch")),
        (ValueError, "reduction", lambda: nn.HuberLoss(reduction="avg")),
        (nb.ShapeError, "binary_cross_entropy", lambda: F.binary_cross_entropy(x, y[:2])),
        (nb.ShapeError, "glu", lambda: F.glu(x, -1)),
        (nb.ShapeError, "prelu", lambda: F.prelu(x, nb.tensor(W4[:3]))),
        (nb.ShapeError, "margin_ranking_loss", lambda: F.margin_ranking_loss(x, y, y[0])),
        (nb.ShapeError, "gaussian_nll_loss", lambda: F.gaussian_nll_loss(x, y, y[:, :2])),
        (nb.DomainError, "gaussian_nll_loss", lambda: F.gaussian_nll_loss(x, y, -1.0)),
        (nb.ShapeError, "cosine_embedding_loss", lambda: F.cosine_embedding_loss(x, y, y)),
        (nb.AttrError, "triplet_margin_loss", lambda: F.triplet_margin_loss(x, y, y, 0.0)),
        (nb.ShapeError, "rms_norm", lambda: F.rms_norm(x, (4,))),
        (nb.ShapeError, "instance_norm", lambda: F.instance_norm(x)),
        (nb.ShapeError, "InstanceNorm1d", lambda: nn.InstanceNorm1d(3, affine=True)(x[None])),
        (nb.ShapeError, "local_response_norm", lambda: F.local_response_norm(x, 2)),
        (nb.ShapeError, "Softmax2d", lambda: nn.Softmax2d()(x)),
        (nb.ShapeError, "bilinear", lambda: F.bilinear(x, y, nb.tensor(np.ones((2, 5, 4))))),
        (nb.AttrError, "dropout2d", lambda: F.dropout2d(x[None, None], 1.5)),
        (nb.ShapeError, "dropout1d", lambda: F.dropout1d(x[0])),
        (nb.AttrError, "AlphaDropout", lambda: nn.AlphaDropout(-0.1)),
        (nb.AttrError, "softshrink", lambda: F.softshrink(x, -1.0)),
        (nb.AttrError, "celu", lambda: F.celu(x, 0.0)),
    ]
    for error, name, call in cases:
        with pytest.raises(error, match=name):
            call()


# ---------------------------------------------------------------- graph mode


def test_eager_equals_jit():
    def losses(a, b, p):
        return (
            F.huber_loss(F.mish(a), b, delta=0.5)
            + F.binary_cross_entropy(p, F.hardsigmoid(b))
            + F.kl_div(F.log_softmax(a, dim=1), F.softmin(b, dim=1), reduction="batchmean")
            + F.triplet_margin_loss(a, b, F.selu(b), swap=True)
            + F.cosine_embedding_loss(a, b, nb.tensor(ROW_SIGNS))
        )

    assert nt.check_modes(losses, A, B, P) == {"outputs": 1, "gradients": 3}

    def norms(x, w):
        y = F.rms_norm(F.glu(x, 1), 2, w) + F.local_response_norm(x[:, :2], 2)
        return F.instance_norm(y) + F.prelu(y, w[:1])

    assert nt.check_modes(norms, RNG.standard_normal((3, 4, 2)), W4[:2])["gradients"] == 2


def test_jit_instance_norm_updates_running_statistics_as_eager():
    x = RNG.standard_normal((3, 4, 5))

    def run(step):
        m = nn.InstanceNorm1d(4, track_running_stats=True, dtype="float64")
        out = step(m, nb.tensor(x))
        return out, m.running_mean.numpy().copy(), m.running_var.numpy().copy()

    eager = run(lambda m, t: m(t))
    jitted = run(lambda m, t: nb.jit(lambda t: m(t) * 2.0)(t) / 2.0)
    for got, expected in zip(jitted, eager):
        _close(got, expected)
    assert not np.allclose(eager[1], 0)  # updated


def test_gumbel_softmax_samples_the_softmax_and_passes_the_soft_gradient_when_hard():
    p = np.array([0.1, 0.6, 0.3])
    n = 20000
    logits = nb.tensor(np.tile(np.log(p), (n, 1)))
    soft = F.gumbel_softmax(logits, tau=0.5, generator=nb.Generator(0)).numpy()
    np.testing.assert_allclose(soft.sum(axis=1), 1, rtol=1e-12)
    freq = np.bincount(soft.argmax(axis=1), minlength=3) / n  # the Gumbel-max trick
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n))
    hard = F.gumbel_softmax(logits[:100], hard=True, dim=1).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(axis=1) == 1).all()
    x = nb.tensor(np.random.default_rng(1).standard_normal((4, 5)), requires_grad=True)
    w = nb.tensor(np.random.default_rng(2).standard_normal((4, 5)))
    grads = []
    for is_hard in (True, False):  # the same draws (one seed): straight-through
        (F.gumbel_softmax(x, hard=is_hard, generator=nb.Generator(3)) * w).sum().backward()
        grads.append(x.grad.numpy().copy())
        x.grad = None
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    with pytest.raises(nb.DomainError):
        F.gumbel_softmax(x, tau=0)
