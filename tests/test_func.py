"""nbflow.autograd.functional and nbflow.func: closed forms, finite differences, PyTorch."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import func as F
from nbflow.autograd import functional as AF

RNG = np.random.default_rng(0)
TOL = 1e-10


def t64(a):
    return nb.tensor(np.asarray(a, dtype=np.float64), dtype=nb.float64)


def close(a, b, tol=TOL):
    """Nested tuples of tensors (nbflow or torch) or arrays agree elementwise."""
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y, tol)
        return
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# closed forms -------------------------------------------------------------------------------


def sin_x2(x):
    return nb.sin(x) * x * x


def test_jacobian_of_elementwise_function_is_diagonal_of_its_derivative():
    xn = RNG.standard_normal(4)
    d = np.cos(xn) * xn**2 + 2 * xn * np.sin(xn)
    close(AF.jacobian(sin_x2, t64(xn)), np.diag(d))
    close(F.jacrev(sin_x2)(t64(xn)), np.diag(d))
    close(F.grad(lambda x: sin_x2(x).sum())(t64(xn)), d)


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    a, xn = RNG.standard_normal((3, 3)), RNG.standard_normal(3)
    A = t64(a)

    def quad(x):
        return nb.dot(x, nb.matmul(A, x))

    close(AF.hessian(quad, t64(xn)), a + a.T)
    close(F.hessian(quad)(t64(xn)), a + a.T)
    v = RNG.standard_normal(3)
    close(AF.hvp(quad, t64(xn), t64(v))[1], (a + a.T) @ v)
    close(AF.vhp(quad, t64(xn), t64(v))[1], v @ (a + a.T))


def test_mlp_jacobian_matches_finite_differences():
    w1, w2 = RNG.standard_normal((5, 3)), RNG.standard_normal((2, 5))

    def mlp_np(x):
        return w2 @ np.tanh(w1 @ x)

    def mlp(x):
        return nb.matmul(t64(w2), nb.tanh(nb.matmul(t64(w1), x)))

    xn, eps = RNG.standard_normal(3), 1e-6
    fd = np.stack(
        [(mlp_np(xn + eps * e) - mlp_np(xn - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1
    )
    close(AF.jacobian(mlp, t64(xn)), fd, tol=1e-7)
    close(F.jacrev(mlp)(t64(xn)), fd, tol=1e-7)


def test_jvp_and_vjp_are_the_jacobian_products():
    w = RNG.standard_normal((2, 3))
    xn, u, v = RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(2)

    def lin(x):
        return nb.matmul(t64(w), x)

    close(AF.jvp(lin, t64(xn), t64(u))[1], w @ u)
    close(AF.vjp(lin, t64(xn), t64(v))[1], v @ w)
    out, fn = F.vjp(lin, t64(xn))
    close(out, w @ xn)
    close(fn(t64(v)), (v @ w,))
    close(fn(t64(2 * v)), (2 * v @ w,))  # vjp_fn can be called again


def test_results_hold_no_graph_unless_asked():
    x = t64(RNG.standard_normal(3))
    assert not AF.jacobian(sin_x2, x).requires_grad
    assert AF.jacobian(sin_x2, x, create_graph=True).requires_grad
    assert not F.grad(lambda y: sin_x2(y).sum())(x).requires_grad


def test_func_grad_composes_with_autograd_through_closed_over_parameters():
    w = t64(RNG.standard_normal(3)).requires_grad_(True)
    x = t64(RNG.standard_normal(3))
    g = F.grad(lambda y: (w * y * y).sum())(x)  # 2 w x
    (dw,) = nb.grad((g * g).sum(), w)  # d/dw sum 4 w^2 x^2 = 8 w x^2
    close(dw, 8 * w.numpy() * x.numpy() ** 2)


def test_nested_grad_gives_higher_derivatives():
    x = t64(1.5)
    close(F.grad(F.grad(F.grad(lambda a: a * a * a * a)))(x), 24 * 1.5)


# errors --------------------------------------------------------------------------------------


def test_non_tensor_output_is_a_type_error():
    with pytest.raises(TypeError, match="Tensor or a tuple of Tensors"):
        AF.jacobian(lambda x: 3.0, t64([1.0]))
    with pytest.raises(RuntimeError, match="only tensors"):
        F.jacrev(lambda x: 3.0)(t64([1.0]))


def test_strict_rejects_an_output_independent_of_an_input():
    x, y = t64([1.0, 2.0]), t64([3.0])
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jacobian(lambda a: t64([1.0]), x, strict=True)
    with pytest.raises(RuntimeError, match="not supported together"):
        AF.jacobian(lambda a: a * 2, x, strict=True, vectorize=True)
    jac = AF.jacobian(lambda a, b: a * 2, (x, y))  # not strict: zeros
    close(jac[1], np.zeros((2, 1)))


def test_scalar_requirements():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="single element"):
        AF.hessian(lambda a: a * a, x)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        F.grad(lambda a: a * a)(x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a * a, x)
    with pytest.raises(RuntimeError, match="tuple: \\(output, aux\\)"):
        F.grad(lambda a: a.sum(), has_aux=True)(x)


def test_vmap_errors():
    with pytest.raises(ValueError, match="same size"):
        F.vmap(lambda a, b: a + b)(t64(np.ones(2)), t64(np.ones(3)))
    with pytest.raises(ValueError, match="non-Tensor"):
        F.vmap(lambda a, b: a * b)(t64(np.ones(2)), 2.0)
    with pytest.raises(ValueError, match="dimensionality"):
        F.vmap(lambda a: a, in_dims=2)(t64(np.ones((2, 2))))
    with pytest.raises(nb.UnsupportedError, match="size 0"):
        F.vmap(lambda a: a * 2)(t64(np.zeros((0, 3))))
    with pytest.raises(ValueError, match="randomness"):
        F.vmap(lambda a: a, randomness="bogus")


def test_vmap_randomness_modes():
    rows = t64(np.zeros((3, 2)))

    def noisy(row):
        return row + nb.rand(2, dtype="float64")

    with pytest.raises(nb.UnsupportedError, match="randomness='error'"):
        F.vmap(noisy)(rows)
    nb.manual_seed(3)
    same = F.vmap(noisy, randomness="same")(rows).numpy()
    nb.manual_seed(3)
    first = noisy(rows[0]).numpy()
    assert all(np.array_equal(r, first) for r in same)  # every slice the first one's draws
    different = F.vmap(noisy, randomness="different")(rows).numpy()
    assert len({tuple(r) for r in different}) == 3


# against PyTorch -----------------------------------------------------------------------------

torch = pytest.importorskip("torch")
TAF = torch.autograd.functional


def pair(*shapes):
    """The same random float64 values as nbflow and torch tensors."""
    arrays = [RNG.standard_normal(s) for s in shapes]
    return tuple(t64(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)


def two_outputs(lib):
    def f(x, y):
        return lib.sin(x) * y.sum(), (x * x).sum() * y

    return f


def scalar_fn(lib):
    def f(x, y):
        return (lib.tanh(x) * x).sum() * (y * y * y).sum()

    return f


def test_functional_with_tuple_inputs_and_outputs_matches_torch():
    (x, y), (tx, ty) = pair(3, 2)
    f, tf = two_outputs(nb), two_outputs(torch)
    close(AF.jacobian(f, (x, y)), TAF.jacobian(tf, (tx, ty)))
    close(AF.jacobian(lambda a: f(a, y)[0], x), TAF.jacobian(lambda a: tf(a, ty)[0], tx))
    (u, v), (tu, tv) = pair(3, 2)
    close(AF.jvp(f, (x, y), (u, v)), TAF.jvp(tf, (tx, ty), (tu, tv)))
    (c1, c2), (tc1, tc2) = pair(3, 2)
    close(AF.vjp(f, (x, y), (c1, c2)), TAF.vjp(tf, (tx, ty), (tc1, tc2)))


def test_second_order_functional_matches_torch():
    (x, y), (tx, ty) = pair(3, 2)
    (u, v), (tu, tv) = pair(3, 2)
    f, tf = scalar_fn(nb), scalar_fn(torch)
    close(AF.hessian(f, (x, y)), TAF.hessian(tf, (tx, ty)))
    close(AF.hvp(f, (x, y), (u, v)), TAF.hvp(tf, (tx, ty), (tu, tv)))
    close(AF.vhp(f, (x, y), (u, v)), TAF.vhp(tf, (tx, ty), (tu, tv)))
    g, tg = (lambda a: f(a, y)), (lambda a: tf(a, ty))
    close(AF.hessian(g, x), TAF.hessian(tg, tx))
    # create_graph: a third derivative through the hessian
    h = AF.hessian(g, x.requires_grad_(True), create_graph=True)
    th = TAF.hessian(tg, tx.requires_grad_(True), create_graph=True)
    close(nb.grad(h.sum(), x), torch.autograd.grad(th.sum(), tx))


def test_func_grad_argnums_and_aux_match_torch():
    (x, y), (tx, ty) = pair(3, 2)
    f, tf = scalar_fn(nb), scalar_fn(torch)
    close(F.grad(f)(x, y), torch.func.grad(tf)(tx, ty))
    close(F.grad(f, argnums=(0, 1))(x, y), torch.func.grad(tf, argnums=(0, 1))(tx, ty))
    close(F.grad(f, argnums=-1)(x, y), torch.func.grad(tf, argnums=-1)(tx, ty))

    def aux(lib_f):
        return lambda a, b: (lib_f(a, b), a * 2)

    got = F.grad_and_value(aux(f), argnums=(0, 1), has_aux=True)(x, y)
    want = torch.func.grad_and_value(aux(tf), argnums=(0, 1), has_aux=True)(tx, ty)
    close(got, want)
    close(F.grad(aux(f), has_aux=True)(x, y), torch.func.grad(aux(tf), has_aux=True)(tx, ty))


def test_func_jacrev_hessian_vjp_match_torch():
    (x, y), (tx, ty) = pair(3, 2)
    f, tf = two_outputs(nb), two_outputs(torch)
    for argnums in (0, 1, (0, 1)):
        close(F.jacrev(f, argnums)(x, y), torch.func.jacrev(tf, argnums)(tx, ty))
    s, ts = scalar_fn(nb), scalar_fn(torch)
    close(F.hessian(s)(x, y), torch.func.hessian(ts)(tx, ty))
    close(F.hessian(s, (0, 1))(x, y), torch.func.hessian(ts, (0, 1))(tx, ty))
    (c1, c2), (tc1, tc2) = pair(3, 2)
    out, fn = F.vjp(f, x, y)
    tout, tfn = torch.func.vjp(tf, tx, ty)
    close(out, tout)
    close(fn((c1, c2)), tfn((tc1, tc2)))
    out, fn, aux = F.vjp(lambda a: (a * a, a + 1), x, has_aux=True)
    tout, tfn, taux = torch.func.vjp(lambda a: (a * a, a + 1), tx, has_aux=True)
    close((out, fn(c1), aux), (tout, tfn(tc1), taux))


def loop_map(fn, in_dims, args):
    """The second output of fn, mapped by hand: the reference vmap must agree with."""
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
    pick = [
        [x if d is None else x.movedim(d, 0)[i] for x, d in zip(args, dims)] for i in range(size)
    ]
    return nb.stack([fn(*p)[1] for p in pick], axis=0)


@pytest.mark.parametrize("in_dims", [0, 1, (1, None), (None, 0)])
def test_vmap_matches_torch_and_a_loop(in_dims):
    (a, b), (ta, tb) = pair((3, 4), (3, 4))

    def f(lib):
        return lambda u, v: (lib.sin(u) * v.sum(), u.sum() * (v * v).sum())

    got = F.vmap(f(nb), in_dims=in_dims)(a, b)
    close(got, torch.func.vmap(f(torch), in_dims=in_dims)(ta, tb))
    got = F.vmap(f(nb), in_dims, out_dims=(1, 0))(a, b)
    close(got, torch.func.vmap(f(torch), in_dims, out_dims=(1, 0))(ta, tb))
    close(got[1], loop_map(f(nb), in_dims, (a, b)))


def test_per_sample_gradients_by_vmap_of_grad():
    (w, xs, ys), (tw, txs, tys) = pair((2, 3), (5, 3), (5, 2))

    def loss(lib):
        return lambda w, x, y: ((lib.tanh(lib.matmul(w, x)) - y) ** 2).sum()

    got = F.vmap(F.grad(loss(nb)), in_dims=(None, 0, 0))(w, xs, ys)
    loop = nb.stack([F.grad(loss(nb))(w, xs[i], ys[i]) for i in range(5)], axis=0)
    close(got, loop)
    close(got, torch.func.vmap(torch.func.grad(loss(torch)), in_dims=(None, 0, 0))(tw, txs, tys))
