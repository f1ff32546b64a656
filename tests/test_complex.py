"""complex64 / complex128 tensors (issue 39, item 3): dtypes and promotion, the ops that take
them against PyTorch (values, and gradients of real losses with PyTorch's conjugate
convention), against numpy and finite differences where PyTorch is not installed, eager ==
@jit, and the typed refusals of every op not opted in."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.errors import DTypeError, ShapeError

DTYPES = [nb.complex64, nb.complex128]
TOL = {
    nb.complex64: {"rtol": 2e-5, "atol": 2e-5},
    nb.complex128: {"rtol": 1e-10, "atol": 1e-12},
}


def _z(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def _real_dtype(dtype):
    return np.float32 if dtype == nb.complex64 else np.float64


# ---------------------------------------------------------------- dtypes and promotion


def test_dtype_names_and_round_trips():
    assert nb.complex64 == np.complex64 and nb.complex128 == np.complex128
    assert nb.cfloat == nb.complex64 and nb.cdouble == nb.complex128
    assert nb.dtypes.as_dtype("complex64") == nb.complex64
    assert nb.dtypes.as_dtype("c128") == nb.complex128
    t = nb.tensor([1 + 2j, -3j])
    assert t.dtype == nb.complex64  # Python complex numbers: the default float's complex
    a = np.array([1 - 1j, 2.5 + 0.5j])
    u = nb.tensor(a)
    assert u.dtype == nb.complex128 and u.is_complex() and not u.is_floating_point()
    np.testing.assert_array_equal(u.numpy(), a)
    np.testing.assert_array_equal(nb.from_numpy(a.astype(np.complex64)).numpy(), a)
    assert "2.5+0.5j" in repr(u) and "complex128" in repr(u)
    assert nb.tensor([1.0, 2.0]).cfloat().dtype == nb.complex64
    assert nb.tensor([1, 2]).cdouble().dtype == nb.complex128
    nb.set_default_dtype(nb.float64)
    try:
        assert nb.tensor([1j]).dtype == nb.complex128
    finally:
        nb.set_default_dtype(nb.float32)


@pytest.mark.parametrize(
    "a, b, want",
    [
        (nb.float32, nb.complex64, nb.complex64),
        (nb.float64, nb.complex64, nb.complex128),
        (nb.float16, nb.complex64, nb.complex64),
        (nb.int64, nb.complex64, nb.complex64),
        (nb.bool_, nb.complex128, nb.complex128),
        (nb.complex64, nb.complex128, nb.complex128),
    ],
)
def test_promotion_of_tensors(a, b, want):
    x, y = nb.ones(2, dtype=a), nb.ones(2, dtype=b)
    assert (x + y).dtype == want and (y * x).dtype == want
    assert nb.promote_types(a, b) == want
    torch = pytest.importorskip("torch")
    names = {nb.float16: "float16", nb.int64: "int64", nb.bool_: "bool"}
    names.update({nb.float32: "float32", nb.float64: "float64"})
    names.update({nb.complex64: "complex64", nb.complex128: "complex128"})
    got = torch.promote_types(getattr(torch, names[a]), getattr(torch, names[b]))
    assert str(got) == f"torch.{np.dtype(want).name}"


@pytest.mark.parametrize(
    "dtype, want",
    [
        (nb.float32, nb.complex64),
        (nb.float64, nb.complex128),
        (nb.int64, nb.complex64),
        (nb.complex64, nb.complex64),
        (nb.complex128, nb.complex128),
    ],
)
def test_a_python_complex_is_weak(dtype, want):
    x = nb.ones(3, dtype=dtype)
    assert (x * 1j).dtype == want and (2j + x).dtype == want
    np.testing.assert_allclose((x * 1j).numpy(), np.full(3, 1j))
    assert (nb.ones(2, dtype=nb.complex64) * 2.5).dtype == nb.complex64  # a float is weak too


def test_a_python_complex_keeps_its_precision():
    """A weak complex number is converted to the result's dtype, not first to complex64 (in
    eager mode and in a graph)."""
    x = nb.tensor([1.0, 2.0], dtype="float64")
    for fn in (lambda t: t * (1 / 3j), nb.jit(lambda t: t * (1 / 3j))):
        out = fn(x)
        assert out.dtype == nb.complex128
        np.testing.assert_array_equal(out.numpy(), x.numpy() * (1 / 3j))


# ---------------------------------------------------------------- values against numpy

TRIG = ("sin", "cos", "tan", "sinh", "cosh", "tanh")
INVERSE = ("asin", "acos", "atan", "asinh", "acosh", "atanh")
LOGS_EXPS = ("log2", "log10", "log1p", "expm1", "exp2")
NP_NAMES = {name: name.replace("a", "arc", 1) for name in INVERSE}


def _sigmoid(a):
    return (1 / (1 + np.exp(-a.astype(np.complex128)))).astype(a.dtype)


def _variance(a, axis=None, ddof=1):
    return np.var(a.real, axis=axis, ddof=ddof) + np.var(a.imag, axis=axis, ddof=ddof)


def _called(name):
    return lambda m, z: getattr(m, name)(z)


def _trig_loss(name):
    return lambda m, z, w: (getattr(m, name)(z * 0.5) * w).abs().sum()


UNARY = {
    "neg": (lambda m, z: -z, np.negative),
    "exp": (lambda m, z: m.exp(z), np.exp),
    "log": (lambda m, z: m.log(z), np.log),
    "sqrt": (lambda m, z: m.sqrt(z), np.sqrt),
    **{name: (_called(name), getattr(np, name)) for name in TRIG + ("square", "reciprocal")},
    "pow": (lambda m, z: z ** (0.5 - 1.5j), lambda a: a ** (0.5 - 1.5j)),
    "abs": (lambda m, z: m.abs(z), np.abs),
    "conj": (lambda m, z: m.conj(z), np.conj),
    "real": (lambda m, z: m.real(z), np.real),
    "imag": (lambda m, z: m.imag(z), np.imag),
    "angle": (lambda m, z: m.angle(z), np.angle),
    "sum": (lambda m, z: m.sum(z, axis=0), lambda a: a.sum(axis=0)),
    "mean": (lambda m, z: m.mean(z, axis=1), lambda a: a.mean(axis=1)),
    "sinc": (lambda m, z: m.sinc(z), np.sinc),
    "logsumexp": (lambda m, z: m.logsumexp(z, 1), lambda a: np.log(np.exp(a).sum(axis=1))),
    "mean_all": (lambda m, z: z.mean(), lambda a: a.mean()),
    **{name: (_called(name), getattr(np, NP_NAMES[name])) for name in INVERSE},
    **{name: (_called(name), getattr(np, name)) for name in LOGS_EXPS},
    "rsqrt": (_called("rsqrt"), lambda a: 1 / np.sqrt(a)),
    "sigmoid": (lambda m, z: m.sigmoid(z), _sigmoid),
    "sgn": (lambda m, z: m.sgn(z), lambda a: a / np.abs(a)),
    "prod": (lambda m, z: m.prod(z, axis=1), lambda a: a.prod(axis=1)),
    "cumsum": (lambda m, z: m.cumsum(z, 1), lambda a: np.cumsum(a, 1)),
    "cumprod": (lambda m, z: m.cumprod(z, 0), lambda a: np.cumprod(a, 0)),
    "var": (lambda m, z: m.var(z, axis=1), lambda a: _variance(a, 1)),
    "std": (lambda m, z: m.std(z, correction=0), lambda a: np.sqrt(_variance(a, ddof=0))),
    "norm": (lambda m, z: m.linalg.vector_norm(z, dim=0), lambda a: np.linalg.norm(a, axis=0)),
    "norm_3": (
        lambda m, z: m.linalg.vector_norm(z, 3),
        lambda a: (np.abs(a) ** 3).sum() ** (1 / 3),
    ),
    "inv": (lambda m, z: m.linalg.inv(z[:, :3]), lambda a: np.linalg.inv(a[:, :3])),
    "det": (lambda m, z: m.linalg.det(z[:, :3]), lambda a: np.asarray(np.linalg.det(a[:, :3]))),
    "solve": (
        lambda m, z: m.linalg.solve(z[:, :3], z[:, 3:]),
        lambda a: np.linalg.solve(a[:, :3], a[:, 3:]),
    ),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_against_numpy(name, dtype):
    fn, ref = UNARY[name]
    a = _z((3, 5), dtype)
    out = fn(nb, nb.tensor(a))
    want = ref(a)
    want = want.astype(_real_dtype(dtype)) if want.dtype.kind == "f" else want
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_values_against_numpy(dtype):
    a, b = _z((4, 3), dtype, 1), _z((3,), dtype, 2)
    x, y = nb.tensor(a), nb.tensor(b)
    for got, want in [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b)]:
        assert got.dtype == dtype
        np.testing.assert_allclose(got.numpy(), want, **TOL[dtype])
    np.testing.assert_allclose((x @ nb.tensor(a.T)).numpy(), a @ a.T, **TOL[dtype])
    np.testing.assert_allclose(nb.matmul(x, y).numpy(), a @ b, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_parts_and_back(dtype):
    a = _z((2, 3), dtype)
    z = nb.tensor(a)
    r = nb.view_as_real(z)
    assert r.dtype == _real_dtype(dtype) and r.shape == (2, 3, 2)
    np.testing.assert_array_equal(r.numpy(), np.stack([a.real, a.imag], -1))
    np.testing.assert_array_equal(nb.view_as_complex(r).numpy(), a)
    np.testing.assert_array_equal(nb.complex(z.real, z.imag).numpy(), a)
    assert z.real.dtype == _real_dtype(dtype) and z.imag.dtype == _real_dtype(dtype)
    np.testing.assert_array_equal(z.conj().numpy(), a.conj())
    p = nb.polar(z.abs(), z.angle())
    np.testing.assert_allclose(p.numpy(), a, **TOL[dtype])
    # infinite parts stay exact (re + im * 1j would make inf * 0 = NaN)
    inf = nb.complex(nb.tensor([0.0, np.inf]), nb.tensor([np.inf, -1.0]))
    np.testing.assert_array_equal(inf.numpy(), np.array([complex(0, np.inf), complex(np.inf, -1)]))
    np.testing.assert_array_equal(z.mH.numpy(), a.conj().T)


# ---------------------------------------------------------------- gradients


def _finite_difference(loss, a, eps=1e-6):
    """dL/dx + 1j dL/dy for a real loss L of a complex array a = x + 1j y: the gradient
    PyTorch's convention gives a complex leaf."""
    g = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        for unit in (1, 1j):
            up, down = a.copy(), a.copy()
            up[idx] += eps * unit
            down[idx] -= eps * unit
            g[idx] += unit * (loss(up) - loss(down)) / (2 * eps)
    return g


LOSSES = {
    "mul_abs": lambda m, z, w: (z * w).abs().sum(),
    "div_abs": lambda m, z, w: (z / w).abs().sum(),
    "exp_real": lambda m, z, w: m.view_as_real(m.exp(z) * w).sum(),
    "log_sq": lambda m, z, w: (m.view_as_real(m.log(z) - w) ** 2).sum(),
    "sqrt_real": lambda m, z, w: m.sqrt(z * w).real.sum(),
    "conj_imag": lambda m, z, w: (z.conj() * w).imag.sum(),
    "angle": lambda m, z, w: m.angle(z - w).sum(),
    "matmul": lambda m, z, w: (z @ w.mT).abs().sum(),
    "matmul_H": lambda m, z, w: (z @ w.mH).abs().sum(),
    "matvec": lambda m, z, w: (z @ w[0]).abs().sum(),
    "mean_bcast": lambda m, z, w: (z[:1] * w).mean(0).abs().sum(),
    "neg_sub_scalar": lambda m, z, w: (-z - w * 2j + 1).abs().sum(),
    **{f"{name}_abs": _trig_loss(name) for name in TRIG + ("square", "reciprocal")},
    "pow_abs": lambda m, z, w: (z**w).abs().sum(),
    **{f"{name}_abs": _trig_loss(name) for name in INVERSE + ("sigmoid", "sgn")},
    **{f"{name}_abs": _trig_loss(name) for name in LOGS_EXPS + ("rsqrt",)},
    "prod_abs": lambda m, z, w: (m.prod(z * 0.5, 1) * w[:, 0]).abs().sum(),
    "cumsum_abs": lambda m, z, w: (m.cumsum(z, 1) * w).abs().sum(),
    "cumprod_abs": lambda m, z, w: (m.cumprod(z * 0.5, 0) * w).abs().sum(),
    "var_std": lambda m, z, w: m.var(z * w, 1).sum() + m.std(z - w),
    "inv_abs": lambda m, z, w: (m.linalg.inv(z[:, :3]) * w[:, 1:]).abs().sum(),
    "solve_abs": lambda m, z, w: m.linalg.solve(z[:, :3], w[:, :2]).abs().sum(),
    "solve_vec": lambda m, z, w: m.linalg.solve(z[:, 1:], w[:, 0]).abs().sum(),
    "det_abs": lambda m, z, w: (m.linalg.det(z[:, :3]) * w[0, 0]).abs(),
    "norms": lambda m, z, w: m.linalg.vector_norm(z * w, dim=1).sum() + m.linalg.vector_norm(z, 3),
    "linear": lambda m, z, w: m.nn.functional.linear(z, w, w[:, 1]).abs().sum(),
    "linear_3d": lambda m, z, w: m.nn.functional.linear(m.stack([z, w]), w[:2]).abs().sum(),
    "addmm": lambda m, z, w: m.addmm(z[:, :3], z, w.mT, beta=0.5, alpha=-2.0).abs().sum(),
    "sinc_abs": lambda m, z, w: (m.sinc(z * 0.5) * w).abs().sum(),
    "logsumexp_abs": lambda m, z, w: (m.logsumexp(z * w, 0) + m.logsumexp(z, 1)[0]).abs().sum(),
    "scatter_add_abs": lambda m, z, w: (
        m.scatter_add(z, 1, m.tensor([[0, 0, 1], [3, 2, 2], [1, 1, 1]]), w[:, :3] * 1j).abs().sum()
    ),
    "trapezoid": lambda m, z, w: (
        (m.trapezoid(z * w, dx=0.5).abs().sum()) + m.cumulative_trapezoid(z, dim=0).abs().sum()
    ),
}


def _nb_grads(loss, a, b):
    z, w = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
    out = loss(nb, z, w)
    out.backward()
    assert out.dtype == _real_dtype(a.dtype)
    return out.numpy(), z.grad.numpy(), w.grad.numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradients_against_pytorch(name, dtype):
    torch = pytest.importorskip("torch")
    a, b = _z((3, 4), dtype, 3), _z((3, 4), dtype, 4)
    loss = LOSSES[name]
    z, w = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out = loss(torch, z, w)
    out.backward()
    value, gz, gw = _nb_grads(loss, a, b)
    assert gz.dtype == dtype and gw.dtype == dtype
    np.testing.assert_allclose(value, out.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(gz, z.grad.resolve_conj().numpy(), **TOL[dtype])
    np.testing.assert_allclose(gw, w.grad.resolve_conj().numpy(), **TOL[dtype])


@pytest.mark.parametrize(
    "name",
    ["mul_abs", "log_sq", "angle", "matmul_H", "conj_imag", "tan_abs", "cosh_abs", "pow_abs"],
)
def test_gradients_against_finite_differences(name):
    a, b = _z((2, 3), np.complex128, 5), _z((2, 3), np.complex128, 6)
    loss = LOSSES[name]
    _, gz, gw = _nb_grads(loss, a, b)

    def value(x, y):
        return float(loss(nb, nb.tensor(x), nb.tensor(y)).numpy())

    np.testing.assert_allclose(gz, _finite_difference(lambda x: value(x, b), a), atol=1e-6)
    np.testing.assert_allclose(gw, _finite_difference(lambda y: value(a, y), b), atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradients_of_real_inputs_of_complex_results(dtype):
    """complex(x, y), polar and view_as_complex of real leaves, and a real tensor times a
    complex one: the real leaves get the real part (PyTorch's rule)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    r, s = rng.normal(size=(3, 2)).astype(dtype), rng.normal(size=(3, 2)).astype(dtype)
    c = _z((3, 2), np.complex64 if dtype == np.float32 else np.complex128, 8)
    tol = TOL[nb.complex64 if dtype == np.float32 else nb.complex128]

    def loss(m, x, y, z):
        parts = m.complex(x, y) * z + m.polar(x.abs(), y) + x * z
        pairs = m.view_as_complex(m.stack([x, y * 3], -1))
        return (parts * pairs).abs().sum()

    xs = [torch.tensor(v, requires_grad=True) for v in (r, s, c)]
    loss(torch, *xs).backward()
    ys = [nb.tensor(v, requires_grad=True) for v in (r, s, c)]
    loss(nb, *ys).backward()
    for t, n in zip(xs, ys):
        assert n.grad.dtype == n.dtype
        np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), **tol)


def test_angle_gradient_is_zero_at_zero():
    z = nb.tensor([0j, 1 + 1j], requires_grad=True)
    nb.angle(z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [0, (-1 + 1j) / 2], rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eager_equals_jit(dtype):
    a, b = _z((3, 4), dtype, 9), _z((3, 4), dtype, 10)

    def f(z, w):
        y = nb.exp(z) * w / (z + 2) - nb.sqrt(w) + nb.log(z) * 1j
        loss = nb.view_as_real(y @ w.mH).sum() + nb.angle(y).sum() + (y.abs() * y.real).mean()
        layer = nb.nn.functional.linear(nb.log1p(y), w, w[:, 0]) + nb.addmm(z[:, :3], z, w.mT)
        return loss + nb.polar(y.imag, y.real).conj().abs().sum() + layer.abs().mean()

    results = []
    for fn in (f, nb.jit(f)):
        z, w = nb.tensor(a, requires_grad=True), nb.tensor(b, requires_grad=True)
        loss = fn(z, w)
        loss.backward()
        results.append((loss.numpy(), z.grad.numpy(), w.grad.numpy()))
    for eager, jitted in zip(*results):
        np.testing.assert_allclose(jitted, eager, **TOL[dtype])


def test_real_tensors_pay_no_conjugate():
    """The rules that conjugate do nothing for real tensors: no op is added (the backward
    Program of a real product holds no conj_physical), conj and real return the input."""
    x = nb.tensor([1.0, -2.0])
    assert nb.conj(x) is x and nb.real(x) is x and x.conj() is x and nb.resolve_conj(x) is x

    def f(a, b):
        return (a * b / b).exp().log().sqrt().abs().sum() + (a.reshape(1, 2) @ b.reshape(2, 1))

    step = nb.jit(f)
    a, b = nb.tensor([1.0, 2.0], requires_grad=True), nb.tensor([3.0, 4.0], requires_grad=True)
    step(a, b).sum().backward()
    program = step.program(a, b)
    types = {node.op.name for node in program.global_block().ops}
    assert "mul" in types and "conj_physical" not in types
    assert "real_part" not in types and "complex" not in types


def test_log1p_and_expm1_keep_their_accuracy_near_zero():
    """log(1 + z) and e**z - 1 computed directly lose the digits of a small z (numpy's complex
    log1p does); nbflow's, as PyTorch's, agree with the series to the last digits."""
    z = np.array([1e-10 + 1e-10j, -3e-9 + 2e-12j, 1e-300j, 2e-6 - 1e-6j])
    log1p = z - z**2 / 2 + z**3 / 3
    expm1 = z + z**2 / 2 + z**3 / 6
    np.testing.assert_allclose(nb.log1p(nb.tensor(z)).numpy(), log1p, rtol=1e-14)
    np.testing.assert_allclose(nb.expm1(nb.tensor(z)).numpy(), expm1, rtol=1e-14)


def test_fills_of_complex_values_eagerly_in_programs_and_saved_programs():
    """full, full_like and fill_ take a complex value (a complex dtype by default, as
    PyTorch's full), and a saved program keeps it as [real, imaginary]."""
    from nbflow.graph.serialize import dumps, loads

    t = nb.full((2, 3), 1 - 2j)
    assert t.dtype == nb.complex64
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 1 - 2j, np.complex64))
    z = nb.zeros(2, dtype=nb.complex128)
    np.testing.assert_array_equal(nb.full_like(z, 2j).numpy(), [2j, 2j])
    np.testing.assert_array_equal(z.fill_(3 + 4j).numpy(), [3 + 4j, 3 + 4j])
    with pytest.raises(DTypeError):
        nb.full((2,), 1j, dtype=nb.float32)
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", (2,), nb.complex64)
        y = x * nb.full((2,), complex(float("inf"), -0.5))
    loaded = loads(dumps(main))
    assert str(loaded) == str(main)
    feed = {"x": np.array([1, 1j], np.complex64)}
    want = feed["x"] * complex(np.inf, -0.5)
    for program in (main, loaded):
        (got,) = nb.Executor().run(program, feed, [y.name])
        np.testing.assert_array_equal(got, want)


def test_random_complex_tensors_draw_both_parts_as_pytorch():
    """randn's complex parts are each N(0, 1/2) (the values' variance 1), rand's each uniform
    in [0, 1), drawn in turn from the stream a real draw of twice the size takes."""
    nb.manual_seed(0)
    z = nb.randn(40000, dtype=nb.complex128).numpy()
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.03
    u = nb.rand(40000, dtype=nb.complex64).numpy()
    assert u.dtype == np.complex64 and u.real.min() >= 0 and u.imag.max() < 1
    assert abs(u.real.mean() - 0.5) < 0.01 and abs(u.imag.mean() - 0.5) < 0.01
    nb.manual_seed(1)
    parts = nb.randn_like(nb.zeros(5, dtype=nb.complex64)).numpy().view(np.float32)
    nb.manual_seed(1)
    np.testing.assert_allclose(parts, nb.randn(10).numpy() / np.sqrt(2), rtol=1e-6)


def test_complex_tensors_and_arrays_round_trip_through_a_checkpoint(tmp_path):
    path = str(tmp_path / "state.pt")
    z = nb.tensor(np.array([1 + 2j, complex(np.inf, np.nan)], np.complex64), requires_grad=True)
    state = {"z": z, "w": np.array([[0.5j]], np.complex128)}
    nb.save(state, path)
    loaded = nb.load(path)
    assert loaded["z"].dtype == nb.complex64 and loaded["z"].requires_grad
    np.testing.assert_array_equal(loaded["z"].detach().numpy(), z.detach().numpy())
    assert loaded["w"].dtype == np.complex128 and loaded["w"][0, 0] == 0.5j


def test_allclose_takes_complex_as_numpy_does():
    a = np.array([1 + 1j, 2 - 1j, 1e-9j])
    for b in (a, a + 1e-7j, a + 1e-3, a * 1j, 1 + 1j):
        assert nb.allclose(nb.tensor(a), nb.tensor(b)) == np.allclose(a, b)
    assert not nb.allclose(nb.tensor([np.nan * 1j]), nb.tensor([np.nan * 1j]))
    assert nb.allclose(nb.tensor([np.nan * 1j]), nb.tensor([np.nan * 1j]), equal_nan=True)


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "call",
    [
        lambda z: nb.relu(z),
        lambda z: nb.sort(z),
        lambda z: nb.max(z),
        lambda z: nb.floor(z),
        lambda z: nb.maximum(z, z),
        lambda z: nb.logaddexp2(z, z),  # (PyTorch's refuses complex too)
        lambda z: nb.histc(z),
        lambda z: z < z,
        lambda z: nb.erf(z),
        lambda z: nb.cummax(z, 0),
    ],
)
def test_ops_not_opted_in_refuse_complex(call):
    z = nb.tensor([1 + 1j, 2 - 1j])
    with pytest.raises(DTypeError):
        call(z)


def test_a_cast_to_a_real_dtype_keeps_the_real_part_and_warns():
    """As PyTorch's (and numpy's): the imaginary part is dropped, with a warning; the
    gradient is the real gradient as a complex one."""
    z = nb.tensor([1.5 + 2j, -3.7 - 1j], requires_grad=True)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert z.float().tolist() == pytest.approx([1.5, -3.7]) and z.long().tolist() == [1, -3]
    with pytest.warns(UserWarning):
        (z.double() * nb.tensor([2.0, 3.0])).sum().backward()
    assert z.grad.tolist() == [2 + 0j, 3 + 0j]


def test_typed_errors():
    z, x = nb.tensor([1 + 1j]), nb.tensor([[1.0, 2.0, 3.0]])
    with pytest.raises(DTypeError, match="imaginary part"):
        nb.cast(z, dtype=nb.float32)  # (the op; astype takes the real part)
    with pytest.raises(DTypeError):
        nb.imag(x)
    with pytest.raises(DTypeError):
        nb.view_as_real(x)
    with pytest.raises(ShapeError):
        nb.view_as_complex(x)
    with pytest.raises(DTypeError):
        nb.view_as_complex(nb.tensor([[1, 2]]))
    with pytest.raises(DTypeError):
        nb.complex(nb.tensor([1]), nb.tensor([2]))  # integer parts (PyTorch refuses them too)
    with pytest.raises(DTypeError):
        nb.tensor([1, 2]).requires_grad_(True)
    assert nb.tensor([1j]).requires_grad_(True).requires_grad


def test_division_by_zero_and_empty_means_as_numpy():
    a, b = np.array([1 + 1j, 0j, -2 + 0j, 3j]), np.zeros(4, complex)
    with np.errstate(all="ignore"):
        want = a / b
    np.testing.assert_array_equal((nb.tensor(a) / nb.tensor(b)).numpy(), want)
    for shape, axis in [((0,), None), ((0, 3), 0), ((3, 0), 1)]:
        got = nb.mean(nb.zeros(*shape, dtype=nb.complex128), axis=axis).numpy()
        assert np.isnan(got.real).all() and np.isnan(got.imag).all()


def test_queries():
    z = nb.tensor([1 + 0j, 2j])
    assert nb.is_complex(z) and not nb.is_complex(z.real) and nb.is_signed(z)
    assert nb.isreal(z).numpy().tolist() == [True, False]
    assert nb.isreal(nb.tensor([1.0])).numpy().tolist() == [True]
    assert z.type() == "nbflow.ComplexFloatTensor"


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_infinity_tests_look_at_both_parts(dtype):
    inf, nan = np.inf, np.nan
    a = np.array([1 + 1j, inf + 0j, complex(1, inf), complex(nan, 1), complex(1, nan), -inf - 1j])
    z = nb.tensor(a.astype(dtype))
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(nb, name)(z).numpy(), getattr(np, name)(a))
    np.testing.assert_array_equal(nb.isclose(z, z).numpy(), np.isclose(a, a))
    near = a * (1 + 1e-9)
    np.testing.assert_array_equal(
        nb.isclose(z, nb.tensor(near.astype(dtype)), equal_nan=True).numpy(),
        np.isclose(a.astype(dtype), near.astype(dtype), equal_nan=True),
    )


def test_second_derivative_of_abs_against_pytorch():
    """abs's complex gradient is sgn(z), itself differentiable (create_graph=True)."""
    torch = pytest.importorskip("torch")
    a, b = _z((4,), np.complex128, 11), _z((4,), np.complex128, 12)

    def second(m, grad):
        z = m.tensor(a, requires_grad=True)
        w = m.tensor(b)
        (g,) = grad(((z * w).abs() ** 3).sum(), [z], create_graph=True)
        (gg,) = grad(m.real(g * w).sum(), [z])
        return gg

    want = second(torch, torch.autograd.grad).resolve_conj().numpy()
    np.testing.assert_allclose(second(nb, nb.grad).numpy(), want, rtol=1e-10, atol=1e-12)


def test_equality_and_a_zero_base():
    a, b = nb.tensor([1 + 1j, 2, 0]), nb.tensor([1 + 1j, 2 + 1j, 0])
    np.testing.assert_array_equal((a == b).numpy(), [True, False, True])
    np.testing.assert_array_equal((a != 1 + 1j).numpy(), [False, True, True])
    # PyTorch's convention at a zero base: no gradient in the exponent
    x = nb.tensor(np.array([0j, 1 + 1j]), requires_grad=True)
    y = nb.tensor(np.array([2 + 0j, 1j]), requires_grad=True)
    nb.real(nb.sum(x**y)).backward()
    assert y.grad.numpy()[0] == 0 and x.grad.numpy()[0] == 0


# ---------------------------------------------------------------- optimizers

COMPLEX_OPTIMIZERS = [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.01}),
    ("AdamW", {"lr": 0.05}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr": 0.1}),
    ("Adamax", {"lr": 0.05}),
    ("NAdam", {"lr": 0.05}),
    ("RAdam", {"lr": 0.05}),
    ("Adadelta", {"lr": 1.0}),
    ("Rprop", {"lr": 0.01}),
    ("ASGD", {"lr": 0.05, "t0": 2}),
]


def _complex_problem():
    rng = np.random.default_rng(3)
    parts = lambda *shape: rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return parts(6, 4), parts(6, 3), parts(3, 4)  # x, y, w0


def _train_complex(name, options, steps=7, jit=False):
    x, y, w0 = (nb.tensor(a) for a in _complex_problem())
    w = nb.tensor(w0.numpy(), requires_grad=True)
    opt = getattr(nb.optim, name)([w], **options)
    loss = lambda: nb.abs(x @ w.T - y).square().mean()

    @nb.jit
    def train():
        opt.zero_grad()
        loss().backward()
        opt.step()

    for _ in range(steps):
        if jit:
            train()
        else:
            opt.zero_grad()
            loss().backward()
            opt.step()
    return w, opt


@pytest.mark.parametrize("name, options", COMPLEX_OPTIMIZERS)
def test_optimizers_update_complex_parameters_as_pytorch(name, options):
    # PyTorch updates a complex parameter as pairs of reals (view_as_real): Adam's second
    # moment squares the real and imaginary parts apart, not |g|^2
    torch = pytest.importorskip("torch")
    w, opt = _train_complex(name, options)
    x, y, w0 = (torch.tensor(a) for a in _complex_problem())
    tw = w0.clone().requires_grad_()
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # PyTorch's scalar states (NAdam's mu_product)
    try:
        topt = getattr(torch.optim, name)([tw], **options)
        for _ in range(7):
            topt.zero_grad()
            (x @ tw.T - y).abs().square().mean().backward()
            topt.step()
    finally:
        torch.set_default_dtype(default)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert w.dtype == nb.complex128
    for key, value in topt.state[tw].items():  # the parameter-shaped states: PyTorch's
        if value.ndim and key in opt.state[0]:  # dtypes and values (its step counters are
            # floats, nbflow's ints; nbflow's Adagrad names its sum "state_sum")
            ours = opt.state[0][key].numpy()
            assert ours.dtype == value.numpy().dtype, key
            np.testing.assert_allclose(ours, value.numpy(), rtol=1e-10, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name, options", COMPLEX_OPTIMIZERS[::3])
def test_optimizers_on_complex_parameters_under_jit_step_as_in_eager_mode(name, options):
    w, opt = _train_complex(name, options, jit=True)
    want, want_opt = _train_complex(name, options)
    np.testing.assert_allclose(w.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    for key, value in want_opt.state[0].items():
        np.testing.assert_allclose(
            opt.state[0][key].numpy(), value.numpy(), rtol=1e-10, err_msg=key
        )


def test_lbfgs_takes_complex_parameters_as_pytorch():
    torch = pytest.importorskip("torch")
    x, y, w0 = _complex_problem()
    w = nb.tensor(w0, requires_grad=True)
    opt = nb.optim.LBFGS([w], line_search_fn="strong_wolfe")
    tw = torch.tensor(w0, requires_grad=True)
    topt = torch.optim.LBFGS([tw], line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = nb.abs(nb.tensor(x) @ w.T - nb.tensor(y)).square().mean()
        loss.backward()
        return loss

    def torch_closure():
        topt.zero_grad()
        loss = (torch.tensor(x) @ tw.T - torch.tensor(y)).abs().square().mean()
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
        topt.step(torch_closure)
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_adafactor_refuses_complex_parameters_as_pytorch():
    w = nb.tensor(_complex_problem()[2], requires_grad=True)
    opt = nb.optim.Adafactor([w])
    nb.abs(w).sum().backward()
    with pytest.raises(DTypeError, match="complex"):
        opt.step()
    np.testing.assert_array_equal(w.numpy(), _complex_problem()[2])  # nothing written


# ---------------------------------------------------------------- Hermitian decompositions


def _hermitian_problem(dtype=np.complex128):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + 4 * np.eye(4)  # positive-definite
    weights = rng.standard_normal((2, 4, 4)) + 1j * rng.standard_normal((2, 4, 4))
    return h.astype(dtype), weights


HERMITIAN_LOSSES = {
    # losses a complex eigenvector's phase does not change (|v|), as PyTorch requires
    "cholesky": lambda m, w, lib: (lib.linalg.cholesky(m) * w).real.sum(),
    "cholesky_upper": lambda m, w, lib: (lib.linalg.cholesky(m, upper=True) * w).imag.sum(),
    "eigh": lambda m, w, lib: (
        (lib.linalg.eigh(m)[0] * w.real[..., 0]).sum()
        + (lib.abs(lib.linalg.eigh(m)[1]) ** 2 * w.real).sum()
    ),
    "eigvalsh": lambda m, w, lib: (lib.linalg.eigvalsh(m) ** 2).sum(),
}


def _agrees_with_pytorch(loss, a, weights):
    """loss(matrix, weights, library) (nbflow or torch): its value and float64 gradient in
    the matrix agree with PyTorch's."""
    torch = pytest.importorskip("torch")
    m = nb.tensor(a, requires_grad=True)
    value = loss(m, nb.tensor(weights), nb)
    value.backward()
    tm = torch.tensor(a, requires_grad=True)
    want = loss(tm, torch.tensor(weights), torch)
    want.backward()
    np.testing.assert_allclose(value.item(), want.item(), rtol=1e-10)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", HERMITIAN_LOSSES)
def test_hermitian_decompositions_of_complex_matrices_as_pytorch(name):
    h, weights = _hermitian_problem()
    loss = HERMITIAN_LOSSES[name]
    _agrees_with_pytorch(loss, h, weights)


def test_hermitian_decompositions_read_the_lower_triangle_as_lapack():
    h, _ = _hermitian_problem(np.complex64)
    garbled = np.tril(h) + np.triu(np.full_like(h, 9 + 9j), 1)  # (upper triangle unread)
    garbled[..., range(4), range(4)] += 5j  # (the diagonal's imaginary part unread)
    low = nb.linalg.cholesky(nb.tensor(garbled)).numpy()
    np.testing.assert_allclose(low @ np.conj(np.swapaxes(low, -1, -2)), h, rtol=1e-4, atol=1e-4)
    w, v = (t.numpy() for t in nb.linalg.eigh(nb.tensor(garbled)))
    assert w.dtype == np.float32 and v.dtype == np.complex64
    np.testing.assert_allclose(w, np.linalg.eigvalsh(h), rtol=1e-4, atol=1e-4)


def _complex_matrices(shape):
    rng = np.random.default_rng(11)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _weighted(x, w):
    """x times the weights' leading block of x's shape."""
    return x * w[..., : x.shape[-2], : x.shape[-1]]


GENERAL_LOSSES = {
    # QR's factors are unique up to a diagonal of phases; LAPACK's choice is PyTorch's too
    "qr_tall": (
        (2, 5, 3),
        lambda m, w, lib: (
            _weighted(lib.linalg.qr(m)[0], w).real.sum()
            + _weighted(lib.linalg.qr(m)[1], w).imag.sum()
        ),
    ),
    "qr_wide": (
        (2, 3, 5),
        lambda m, w, lib: (
            _weighted(lib.linalg.qr(m)[0], w).imag.sum()
            + _weighted(lib.linalg.qr(m)[1], w).real.sum()
        ),
    ),
    "slogdet": (
        (2, 4, 4),
        lambda m, w, lib: (
            lib.linalg.slogdet(m)[1].sum() + (lib.linalg.slogdet(m)[0] * w[..., 0, 0]).real.sum()
        ),
    ),
}


@pytest.mark.parametrize("name", GENERAL_LOSSES)
def test_qr_and_slogdet_of_complex_matrices_as_pytorch(name):
    shape, loss = GENERAL_LOSSES[name]
    a, weights = _complex_matrices(shape), _complex_matrices((2, 5, 5))
    _agrees_with_pytorch(loss, a, weights)
    sign, logabs = nb.linalg.slogdet(nb.tensor(a[..., :3, :3]))
    assert sign.dtype == nb.complex128 and logabs.dtype == nb.float64


SVD_LOSSES = {
    # losses the singular vectors' phases do not change, as PyTorch requires
    "svdvals": lambda a, w, lib: (lib.linalg.svdvals(a) ** 2).sum(),
    "u_and_vh": lambda a, w, lib: (
        _weighted(lib.abs(lib.linalg.svd(a, full_matrices=False)[0]) ** 2, w.real).sum()
        + _weighted(lib.abs(lib.linalg.svd(a, full_matrices=False)[2]) ** 2, w.imag).sum()
    ),
    "u_only": lambda a, w, lib: _weighted(lib.abs(lib.linalg.svd(a)[0]) ** 2, w.real).sum(),
    "product": lambda a, w, lib: _weighted(
        _usvh(*lib.linalg.svd(a, full_matrices=False)), w
    ).real.sum(),
    "pinv": lambda a, w, lib: _weighted(lib.linalg.pinv(a), w).real.sum(),
}


def _usvh(u, s, vh):
    """U diag(S) Vh: phase-free, and through U, S and Vh's gradients at once."""
    return (u * s[..., None, :]) @ vh


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5)])
@pytest.mark.parametrize("name", SVD_LOSSES)
def test_svd_and_what_is_built_on_it_for_complex_matrices_as_pytorch(name, shape):
    a, weights = _complex_matrices(shape), _complex_matrices((2, 5, 5))
    loss = SVD_LOSSES[name]
    _agrees_with_pytorch(loss, a, weights)


def _hermitian_pd(m, lib):
    """m m^H + 4 I: Hermitian positive-definite, built in the loss so gradients reach m."""
    return m @ m.mH + 4 * lib.eye(m.shape[-1], dtype=m.dtype)


def _lu_solve(m, lib, left, adjoint):
    b = m[..., :, :2] if left else m[..., :2, :]  # (B is m's too: its gradient counts)
    return lib.linalg.lu_solve(*lib.linalg.lu_factor(m), b, left=left, adjoint=adjoint)


LU_LOSSES = {
    # LU with partial pivoting is unique: no phases to fix, every factor has a gradient
    "lu_square": (
        (2, 4, 4),
        lambda m, w, lib: (
            _weighted(lib.linalg.lu(m)[1], w).real.sum()
            + _weighted(lib.linalg.lu(m)[2], w).imag.sum()
        ),
    ),
    "lu_tall": ((2, 5, 3), lambda m, w, lib: _weighted(lib.linalg.lu(m)[1], w).imag.sum()),
    "lu_wide": ((2, 3, 5), lambda m, w, lib: _weighted(lib.linalg.lu(m)[2], w).real.sum()),
    "lu_factor": ((4, 4), lambda m, w, lib: _weighted(lib.linalg.lu_factor(m)[0], w).real.sum()),
    "inv_ex": ((2, 4, 4), lambda m, w, lib: _weighted(lib.linalg.inv_ex(m)[0], w).real.sum()),
    "solve_ex": (
        (2, 4, 4),
        lambda m, w, lib: _weighted(lib.linalg.solve_ex(m, m[..., :2])[0], w).imag.sum(),
    ),
    "cholesky_ex_upper": (
        (2, 4, 4),
        lambda m, w, lib: _weighted(
            lib.linalg.cholesky_ex(_hermitian_pd(m, lib), upper=True)[0], w
        ).real.sum(),
    ),
    **{
        f"lu_solve_left={left}_adjoint={adjoint}": (
            (2, 4, 4),
            lambda m, w, lib, left=left, adjoint=adjoint: _weighted(
                _lu_solve(m, lib, left, adjoint), w
            ).real.sum(),
        )
        for left in (True, False)
        for adjoint in (False, True)
    },
}


@pytest.mark.parametrize("name", LU_LOSSES)
def test_lu_family_of_complex_matrices_as_pytorch(name):
    shape, loss = LU_LOSSES[name]
    a, weights = _complex_matrices(shape), _complex_matrices((2, 5, 5))
    _agrees_with_pytorch(loss, a, weights)


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_of_complex_matrices_solves_as_numpy(hermitian):
    """ldl_factor/ldl_solve (no gradient, as PyTorch): the solution of the matrix whose lower
    triangle was factored, symmetric or Hermitian, checked against numpy's solve."""
    a, b = _complex_matrices((2, 4, 4)), _complex_matrices((2, 4, 3))
    low = np.tril(a, -1)
    diagonal = np.diagonal(a, 0, -2, -1)
    if hermitian:  # (LAPACK's hetrf reads the diagonal's real part only)
        full = (
            low
            + np.conj(np.swapaxes(low, -1, -2))
            + np.apply_along_axis(np.diag, -1, diagonal.real)
        )
    else:
        full = low + np.swapaxes(low, -1, -2) + np.apply_along_axis(np.diag, -1, diagonal)
    for dtype, tol in ((np.complex128, 1e-10), (np.complex64, 1e-4)):
        ld, pivots = nb.linalg.ldl_factor(nb.tensor(a.astype(dtype)), hermitian=hermitian)
        x = nb.linalg.ldl_solve(ld, pivots, nb.tensor(b.astype(dtype)), hermitian=hermitian)
        assert x.dtype == dtype
        np.testing.assert_allclose(x.numpy(), np.linalg.solve(full, b), rtol=tol, atol=tol)


def test_householder_product_of_complex_reflectors_as_pytorch():
    torch = pytest.importorskip("torch")
    a, tau = _complex_matrices((2, 5, 3)), _complex_matrices((2, 2)) * 0.5
    m, t = nb.tensor(a, requires_grad=True), nb.tensor(tau, requires_grad=True)
    q = nb.linalg.householder_product(m, t)
    (q * nb.tensor(a)).real.sum().backward()
    tm, tt = torch.tensor(a, requires_grad=True), torch.tensor(tau, requires_grad=True)
    want = torch.linalg.householder_product(tm, tt)
    (want * torch.tensor(a)).real.sum().backward()
    np.testing.assert_allclose(q.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_pinv_and_lstsq_of_complex_matrices_give_pytorchs_values():
    torch = pytest.importorskip("torch")
    tall, rhs = _complex_matrices((5, 3)), _complex_matrices((5, 2))
    hermitian = tall.conj().T @ tall
    for ours, theirs in [
        (nb.linalg.pinv(nb.tensor(tall)), torch.linalg.pinv(torch.tensor(tall))),
        (
            nb.linalg.pinv(nb.tensor(np.tril(hermitian)), hermitian=True),
            torch.linalg.pinv(torch.tensor(np.tril(hermitian)), hermitian=True),
        ),
    ]:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
    for driver in ("gels", "gelsd"):
        ours = nb.linalg.lstsq(nb.tensor(tall), nb.tensor(rhs), driver=driver)
        theirs = torch.linalg.lstsq(torch.tensor(tall), torch.tensor(rhs), driver=driver)
        np.testing.assert_allclose(ours.solution.numpy(), theirs.solution.numpy(), rtol=1e-10)
        assert ours.residuals.dtype == nb.float64  # |r|^2 summed: real, as PyTorch's
        np.testing.assert_allclose(ours.residuals.numpy(), theirs.residuals.numpy(), rtol=1e-10)
    a = nb.tensor(tall, requires_grad=True)  # the solution's gradient (PyTorch's CPU lstsq
    nb.abs(nb.linalg.lstsq(a, nb.tensor(rhs)).solution).sum().backward()  # has one for tall A)
    ta = torch.tensor(tall, requires_grad=True)
    torch.linalg.lstsq(ta, torch.tensor(rhs)).solution.abs().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_matrix_exp_of_complex_matrices_as_pytorch():
    torch = pytest.importorskip("torch")
    a, weights = _complex_matrices((2, 4, 4)) * 0.5, _complex_matrices((2, 4, 4))
    m = nb.tensor(a, requires_grad=True)
    out = nb.linalg.matrix_exp(m)
    (out * nb.tensor(weights)).real.sum().backward()
    tm = torch.tensor(a, requires_grad=True)
    want = torch.linalg.matrix_exp(tm)
    (want * torch.tensor(weights)).real.sum().backward()
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-8, atol=1e-10)
    small = nb.linalg.matrix_exp(nb.tensor(a.astype(np.complex64)))
    assert small.dtype == nb.complex64
    np.testing.assert_allclose(small.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- PyTorch's complex extensions


def _int_exponents(lib):
    # (not negative: PyTorch's gradient takes 2 ** other in integers there, giving 0)
    return lib.tensor([[1, 0, 3], [0, 2, 4]])


EXTENDED = {
    # name: (fn(lib, *inputs), the complex inputs' shapes); lib is nbflow or torch
    "l1_loss": (lambda lib, a, b: lib.nn.functional.l1_loss(a, b), [(2, 3), (2, 3)]),
    "l1_loss_none": (
        lambda lib, a, b: lib.nn.functional.l1_loss(a, b, reduction="none"),
        [(2, 3), (2, 3)],
    ),
    "rms_norm": (lambda lib, a: lib.nn.functional.rms_norm(a, (3,)), [(2, 3)]),
    "logaddexp": (lambda lib, a, b: lib.logaddexp(a, b), [(2, 3), (2, 3)]),
    "logcumsumexp": (lambda lib, a: lib.logcumsumexp(a * 3, 1), [(2, 5)]),
    "float_power": (lambda lib, a, b: lib.float_power(a, b), [(2, 3), (2, 3)]),
    "float_power_number": (lambda lib, a: lib.float_power(a, 2.5), [(2, 3)]),
    "ldexp": (lambda lib, a: lib.ldexp(a, _int_exponents(lib)), [(2, 3)]),
    "ldexp_complex_exponent": (lambda lib, a, b: lib.ldexp(a, b), [(2, 3), (2, 3)]),
    # (a real input that requires grad: PyTorch's backward raises)
    "ldexp_of_a_real_input": (lambda lib, b: lib.ldexp(lib.ones(2, 3), b), [(2, 3)]),
    "cov": (lambda lib, a: lib.cov(a), [(3, 4)]),
    "cov_weighted": (
        lambda lib, a: lib.cov(
            a,
            correction=0,
            fweights=lib.tensor([1, 2, 1, 3]),
            aweights=lib.tensor([0.5, 2, 1.5, 1]),
        ),
        [(3, 4)],
    ),
    "cov_of_one_variable": (lambda lib, a: lib.cov(a), [(5,)]),
    "corrcoef": (lambda lib, a: lib.corrcoef(a), [(3, 4)]),
    "renorm": (lambda lib, a: lib.renorm(a, 2, 1, 3.5), [(3, 4, 2)]),
    "renorm_p1": (lambda lib, a: lib.renorm(a, 1, -1, 6.0), [(3, 4, 2)]),
    "gradient": (lambda lib, a: lib.gradient(a, spacing=2.0)[0], [(5,)]),
    "gradient_edge_order_2": (lambda lib, a: lib.gradient(a, dim=1, edge_order=2)[0], [(3, 4)]),
    "conv1d": (
        lambda lib, x, w, b: lib.nn.functional.conv1d(x, w, b, stride=2, padding=1, groups=2),
        [(2, 4, 7), (4, 2, 3), (4,)],
    ),
    "conv2d": (
        lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, padding="same", dilation=2),
        [(1, 2, 5, 5), (3, 2, 3, 3), (3,)],
    ),
    "conv3d": (
        lambda lib, x, w: lib.nn.functional.conv3d(x, w),
        [(1, 2, 4, 4, 4), (2, 2, 2, 2, 2)],
    ),
    "conv_transpose1d": (
        lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=2),
        [(2, 2, 5), (2, 3, 3)],
    ),
    "conv_transpose2d": (
        lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(
            x, w, b, stride=2, output_padding=1
        ),
        [(1, 3, 4, 4), (3, 2, 3, 3), (2,)],
    ),
    "conv_transpose3d": (
        lambda lib, x, w, b: lib.nn.functional.conv_transpose3d(x, w, b, stride=2),
        [(2, 3, 3, 3), (2, 1, 2, 2, 2), (1,)],  # (an unbatched input)
    ),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", EXTENDED)
def test_functions_pytorch_extends_to_complex_as_pytorch(name, dtype):
    """The result (dtype, value) and the gradient of Re(sum(result * w)) in each complex input,
    against PyTorch's (its conjugate convention)."""
    torch = pytest.importorskip("torch")
    fn, shapes = EXTENDED[name]
    arrays = [_z(shape, dtype, seed=i) for i, shape in enumerate(shapes)]
    ours = [nb.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, want = fn(nb, *ours), fn(torch, *theirs)
    assert str(want.dtype) == f"torch.{np.dtype(out.dtype).name}"
    tol = TOL[dtype]
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), **tol)
    w = np.asarray(_z(out.shape, np.complex128, seed=7))  # (0-d: an array, not a scalar)
    (out * nb.tensor(w)).real.sum().backward()
    (want * torch.tensor(w)).real.sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


def test_logaddexp_of_nan_and_infinite_parts_as_pytorch():
    torch = pytest.importorskip("torch")
    inf, nan = float("inf"), float("nan")
    values = [complex(inf, 1), complex(-inf, 2), complex(inf, 0), complex(-inf, 0)]
    values += [complex(nan, 0), complex(0, nan), complex(1, 4), complex(-2, 3)]
    a = np.array([values] * len(values))
    got = nb.logaddexp(nb.tensor(a), nb.tensor(a.T)).numpy()
    want = torch.logaddexp(torch.tensor(a), torch.tensor(a.T)).numpy()
    # each part apart (a complex NaN is any NaN part): NaN + NaNj where PyTorch's is
    np.testing.assert_allclose(got.real, want.real, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.imag, want.imag, rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.linspace(1 + 1j, 2 + 3j, 5),
        lambda lib: lib.linspace(-2, 3, 4, dtype=lib.complex128),
        lambda lib: lib.linspace(lib.tensor(1 + 1j), 2, 3),
        lambda lib: lib.linspace(1j, 2, 1),
        lambda lib: lib.logspace(1 + 1j, 2 + 3j, 3),
        lambda lib: lib.logspace(1 + 1j, 2, 4, base=-2.0),
        lambda lib: lib.logspace(0, 2, 3, dtype=lib.complex128),
        lambda lib: lib.logspace(0.1 + 0.3j, 2.7, 5, dtype=lib.complex128),
    ],
)
def test_complex_ranges_as_pytorch(call):
    torch = pytest.importorskip("torch")
    got, want = call(nb), call(torch)
    assert str(want.dtype) == f"torch.{np.dtype(got.dtype).name}"
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL[got.dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_random_fills_of_complex_tensors_as_pytorch(dtype):
    """normal_ and uniform_ draw each part as PyTorch does (into the real view): a normal's
    parts both have mean `mean` and std std / sqrt(2), a uniform's both lie in [from, to)."""
    n = 20000
    z = nb.zeros(n, dtype=dtype).normal_(3.0, 2.0).numpy()
    assert z.dtype == dtype
    for part in (z.real, z.imag):
        assert abs(part.mean() - 3.0) < 0.05 and abs(part.std() - 2.0 / np.sqrt(2)) < 0.05
    u = nb.zeros(n, dtype=dtype).uniform_(1.0, 2.0).numpy()
    for part in (u.real, u.imag):
        assert part.min() >= 1.0 and part.max() < 2.0 and abs(part.mean() - 1.5) < 0.02


@pytest.mark.parametrize(
    "name, shape", [("Conv1d", (2, 2, 6)), ("Conv2d", (1, 2, 5, 5)), ("Conv3d", (1, 2, 4, 4, 4))]
)
def test_conv_modules_with_complex_parameters_as_pytorch(name, shape):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(2, 3, 3, padding=1, dtype=torch.complex128)
    ours = getattr(nb.nn, name)(2, 3, 3, padding=1)
    ours.weight = nb.nn.Parameter(nb.tensor(theirs.weight.detach().numpy()))
    ours.bias = nb.nn.Parameter(nb.tensor(theirs.bias.detach().numpy()))
    x = _z(shape, np.complex128)
    want = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours(nb.tensor(x)).numpy(), want, **TOL[nb.complex128])


@pytest.mark.parametrize("shape", [(2, 6, 4), (2, 4, 6)])
def test_low_rank_svd_and_pca_of_complex_matrices_as_pytorch(shape):
    """Of a rank-2 complex matrix with q = 2 the random draw spans its range: U diag(S) V^H
    reproduces it, S holds its singular values, and their gradient is PyTorch's."""
    torch = pytest.importorskip("torch")
    rows, cols = shape[1:]
    a = _z((2, rows, 2), np.complex128) @ _z((2, 2, cols), np.complex128, seed=1)
    m = nb.tensor(a, requires_grad=True)
    u, s, v = nb.svd_lowrank(m, q=2)
    np.testing.assert_allclose(((u * s[..., None, :]) @ v.mH).numpy(), a, rtol=1e-9, atol=1e-9)
    tm = torch.tensor(a, requires_grad=True)
    want = torch.svd_lowrank(tm, q=2)[1]
    np.testing.assert_allclose(s.detach().numpy(), want.detach().numpy(), rtol=1e-9)
    (s * nb.tensor([1.0, 2.0])).sum().backward()
    (want * torch.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-7, atol=1e-9)
    centered = a - a.mean(axis=-2, keepdims=True)
    u, s, v = nb.pca_lowrank(nb.tensor(a), q=2)
    np.testing.assert_allclose(((u * s[..., None, :]) @ v.mH).numpy(), centered, atol=1e-9)


def test_low_rank_svd_power_iterations_of_complex_matrices_converge():
    """q below the rank: the power iterations (with A^H, not A^T) find the largest singular
    values of a matrix whose spectrum falls fast."""
    left = np.linalg.qr(_z((8, 3), np.complex128))[0]
    right = np.linalg.qr(_z((5, 3), np.complex128, seed=1))[0]
    a = (left * np.array([100.0, 10.0, 0.01])) @ right.conj().T
    nb.manual_seed(0)
    s = nb.svd_lowrank(nb.tensor(a), q=2, niter=3)[1].numpy()
    np.testing.assert_allclose(s, [100.0, 10.0], rtol=1e-9)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5)])
def test_geqrf_of_complex_matrices_as_lapack(shape):
    """LAPACK's zgeqrf (PyTorch's): real diagonal R, complex tau; a column already real and
    zero below the diagonal keeps tau = 0."""
    torch = pytest.importorskip("torch")
    a = _z(shape, np.complex128)
    a[0, 1:, 0] = 0  # (the first column of the first matrix: nothing to reflect)
    ours = [t.numpy() for t in nb.geqrf(nb.tensor(a))]
    theirs = [t.numpy() for t in torch.geqrf(torch.tensor(a))]
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_of_complex_reflectors_as_pytorch(left, transpose):
    torch = pytest.importorskip("torch")
    a, c = _z((2, 5, 3), np.complex128), _z((2, 5, 4) if left else (2, 4, 5), np.complex128, 1)
    reflectors, tau = torch.geqrf(torch.tensor(a))
    tau = tau * 0.9  # (not a geqrf's own: the gradient of tau does not vanish by symmetry)
    leaves = [reflectors.numpy(), tau.numpy(), c]
    ours = [nb.tensor(x, requires_grad=True) for x in leaves]
    theirs = [torch.tensor(x, requires_grad=True) for x in leaves]
    out = nb.ormqr(*ours, left=left, transpose=transpose)
    want = torch.ormqr(*theirs, left=left, transpose=transpose)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    w = _z(out.shape, np.complex128, seed=2)
    (out * nb.tensor(w)).real.sum().backward()
    (want * torch.tensor(w)).real.sum().backward()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-8, atol=1e-10)
