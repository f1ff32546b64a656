"""matmul and matrix_transpose: forward vs numpy per dtype (shape and dtype first), 1-D and
batched operands with broadcasting, gradients (first and second order), errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import Spec

# float32 BLAS accumulates in float32: allow for cancellation in sums of k products
ATOL = {dt.float32: 1e-5}


@st.composite
def matmul_shapes(draw, min_side=0):
    """(a shape, b shape): vectors or matrices, with batch dims that broadcast."""
    n, k, m = (draw(st.integers(min_side, 4)) for _ in range(3))
    batch_a, batch_b = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, min_side=min_side, max_side=3)
    ).input_shapes
    a = (k,) if draw(st.booleans()) else batch_a + (n, k)
    b = (k,) if draw(st.booleans()) else batch_b + (k, m)
    return a, b


def _check_forward(op, arrays):
    out = op(*[nb.from_numpy(a) for a in arrays])
    (spec,) = op.infer([Spec(a.shape, a.dtype) for a in arrays], {})
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    nt.assert_close(out, op.ref(*arrays), atol=ATOL.get(out.dtype))
    return out


@pytest.mark.parametrize("dtype", nb.matmul.dtypes, ids=lambda d: dt.SHORT[d])
@given(data=st.data())
def test_matmul_matches_numpy(dtype, data):
    sa, sb = data.draw(matmul_shapes())
    _check_forward(nb.matmul, [data.draw(nt.arrays(dtype, sa)), data.draw(nt.arrays(dtype, sb))])


@given(data=st.data())
def test_matmul_mixed_dtypes_promote(data):
    da, db = (data.draw(st.sampled_from(nb.matmul.dtypes)) for _ in range(2))
    sa, sb = data.draw(matmul_shapes())
    out = _check_forward(nb.matmul, [data.draw(nt.arrays(da, sa)), data.draw(nt.arrays(db, sb))])
    assert out.dtype == dt.promote([da, db])


@given(data=st.data())
def test_matmul_rule_on_unknown_dims_generalises(data):
    sa, sb = data.draw(matmul_shapes(min_side=1))
    specs = [Spec(sa, dt.float32), Spec(sb, dt.float32)]
    hidden = [
        Spec(tuple(data.draw(st.sampled_from([n, -1])) for n in s.shape), s.dtype) for s in specs
    ]
    (known,) = nb.matmul.infer(specs, {})
    (compiled,) = nb.matmul.infer(hidden, {})
    assert len(compiled.shape) == len(known.shape)
    assert all(c in (k, -1) for c, k in zip(compiled.shape, known.shape, strict=True))


def test_matmul_shapes_of_vector_cases():
    assert nb.matmul(nb.ones(3), nb.ones(3)).shape == ()
    assert nb.matmul(nb.ones(3), nb.ones(2, 3, 4)).shape == (2, 4)
    assert nb.matmul(nb.ones(2, 1, 4, 3), nb.ones(3)).shape == (2, 1, 4)
    assert nb.matmul(nb.ones(2, 1, 4, 3), nb.ones(5, 3, 2)).shape == (2, 5, 4, 2)
    assert nb.matmul(nb.ones(2, 0), nb.ones(0, 3)).tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("dtype", dt.ALL, ids=lambda d: dt.SHORT[d])
@given(data=st.data())
def test_matrix_transpose_matches_numpy(dtype, data):
    x = data.draw(nt.arrays(dtype, data.draw(nt.shapes(min_dims=2, max_dims=4))))
    out = _check_forward(nb.matrix_transpose, [x])
    assert np.shares_memory(out.numpy(), x) or x.size == 0  # a view


# ---------------------------------------------------------------- gradients


def _operands(data):
    sa, sb = data.draw(matmul_shapes(min_side=1))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    return [
        nb.tensor(rng.standard_normal(s), dtype="float64", requires_grad=True) for s in (sa, sb)
    ]


@given(data=st.data())
def test_matmul_gradcheck(data):
    nt.gradcheck(nb.matmul, _operands(data))


@given(data=st.data())
def test_matmul_gradgradcheck(data):
    nt.gradgradcheck(nb.matmul, _operands(data))


def test_matmul_gradient_sums_broadcast_batch_dims():
    a = nb.tensor(np.ones((1, 2, 3)), dtype="float64", requires_grad=True)
    b = nb.tensor(np.ones((4, 3, 5)), dtype="float64", requires_grad=True)
    nb.matmul(a, b).sum().backward()
    assert a.grad.shape == (1, 2, 3) and b.grad.shape == (4, 3, 5)
    nt.assert_close(a.grad, np.full((1, 2, 3), 20.0))
    nt.assert_close(b.grad, np.full((4, 3, 5), 2.0))


def test_matmul_float32_gradients_match_float64():
    rng = np.random.default_rng(4)
    va, vb = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    grads = {}
    for d in ("float32", "float64"):
        a = nb.tensor(va, dtype=d, requires_grad=True)
        b = nb.tensor(vb, dtype=d, requires_grad=True)
        nb.matmul(a, b).sum().backward()
        grads[d] = (a.grad.numpy(), b.grad.numpy())
    for g32, g64 in zip(grads["float32"], grads["float64"], strict=True):
        nt.assert_close(g32, g64.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_matrix_transpose_gradients():
    x = nb.tensor(
        np.random.default_rng(5).standard_normal((2, 3, 4)), dtype="float64", requires_grad=True
    )
    nt.gradcheck(nb.matrix_transpose, [x])
    nt.gradgradcheck(lambda t: nb.matrix_transpose(t * t), [x])
    assert nb.matrix_transpose(nb.matrix_transpose(x)).shape == (2, 3, 4)


# ---------------------------------------------------------------- errors


def test_inner_dim_mismatch_names_both_shapes():
    with pytest.raises(nb.ShapeError, match="matmul") as info:
        nb.matmul(nb.ones(2, 3), nb.ones(4, 5))
    assert isinstance(info.value, ValueError)
    assert "a: f32[2,3]" in str(info.value) and "b: f32[4,5]" in str(info.value)
    with pytest.raises(nb.ShapeError, match="matmul"):
        nb.matmul(nb.ones(3), nb.ones(4))
    with pytest.raises(nb.ShapeError, match="matmul"):
        nb.matmul(nb.ones(2, 2, 3), nb.ones(3, 3, 4))  # batch dims 2 and 3


def test_matmul_scalars_are_rejected():
    with pytest.raises(nb.ShapeError, match="matmul"):
        nb.matmul(nb.tensor(2.0), nb.ones(3))
    with pytest.raises(nb.ShapeError, match="matrix_transpose"):
        nb.matrix_transpose(nb.ones(3))


def test_unsupported_dtype_names_op_device_and_dtype():
    x = nb.ones(2, 2, dtype="bool")
    with pytest.raises(nb.KernelNotFoundError, match="matmul.*'cpu'.*bool") as info:
        nb.matmul(x, x)
    assert info.value.key == ("matmul", "cpu", "bool")


def test_weight_gradient_through_a_transposed_view_is_contiguous():
    # x @ W.T (a linear layer): the rule computes W's gradient in W's layout
    rng = np.random.default_rng(3)
    x0, w0, g0 = (rng.standard_normal(s) for s in ((5, 4), (3, 4), (5, 3)))
    x, w = nb.tensor(x0, requires_grad=True), nb.tensor(w0, requires_grad=True)
    y = nb.matmul(x, nb.matrix_transpose(w))
    gw, gx = nb.autograd.grad(y, [w, x], nb.tensor(g0))  # (backward() would copy)
    assert gw.numpy().flags.c_contiguous
    np.testing.assert_allclose(gw.numpy(), g0.T @ x0, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), g0 @ w0, rtol=1e-12)
    # first and second order against finite differences, with both operands needing grads
    fn = lambda x, w: nb.tanh(nb.matmul(x, nb.matrix_transpose(w)))
    leaves = [nb.tensor(x0, requires_grad=True), nb.tensor(w0, requires_grad=True)]
    nt.gradcheck(fn, leaves)
    nt.gradgradcheck(fn, leaves)


def test_outer_products_match_numpy_for_every_layout():
    # an inner dim of 1 (a batch-1 weight gradient) runs nbflow's own loop, not numpy's matmul
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float64, np.float16):
        col = rng.standard_normal((1, 6)).astype(dtype)
        row = rng.standard_normal((1, 9)).astype(dtype)
        wide = rng.standard_normal((2, 18)).astype(dtype)
        for a, b in ((col.T, row), (col.T.copy(), wide[:1, ::2]), (col[:, ::-1].T, row)):
            out = nb.matmul(nb.from_numpy(a), nb.from_numpy(b))
            assert (out.shape, out.dtype) == ((6, 9), dtype)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            nt.assert_close(out, ref.astype(dtype), atol=1e-3 if dtype == np.float16 else 0)
    # a batch of one through a linear layer: first and second order
    leaves = [nb.tensor(rng.standard_normal(s), requires_grad=True) for s in ((1, 4), (3, 4))]
    fn = lambda x, w: nb.tanh(nb.linear(x, w))
    nt.gradcheck(fn, leaves)
    nt.gradgradcheck(fn, leaves)


# ---------------------------------------------------------------- linear


@st.composite
def linear_shapes(draw, min_side=0):
    """(x shape, weight shape, bias shape or None): x with 1-3 dims."""
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=min_side, max_side=3))
    n_in, n_out = draw(st.integers(min_side, 4)), draw(st.integers(min_side, 4))
    return lead + (n_in,), (n_out, n_in), (n_out,) if draw(st.booleans()) else None


def _linear_inputs(data, dtype, requires_grad=False):
    shapes = [s for s in data.draw(linear_shapes()) if s is not None]
    return [
        nb.tensor(data.draw(nt.arrays(dtype, s)), dtype=dtype, requires_grad=requires_grad)
        for s in shapes
    ]


@pytest.mark.parametrize("dtype", dt.FLOATS, ids=lambda d: dt.SHORT[d])  # complex: test_complex
@given(data=st.data())
def test_linear_matches_numpy(dtype, data):
    inputs = _linear_inputs(data, dtype)
    activation = data.draw(st.sampled_from(["none", "relu"]))
    x, w = (t.numpy().astype(np.float64) for t in inputs[:2])
    expected = x @ w.T + (inputs[2].numpy() if len(inputs) == 3 else 0)
    if activation == "relu":
        expected = np.maximum(expected, 0)
    out = nb.ops.linear(*inputs[:2], *inputs[2:], activation=activation)
    assert out.shape == expected.shape and out.dtype == dtype
    tol = {dt.float16: 2e-2, dt.float32: 1e-5}.get(dtype, 1e-12)
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected, rtol=tol, atol=tol)


@given(data=st.data())
def test_linear_gradcheck_and_second_order(data):
    inputs = _linear_inputs(data, dt.float64, requires_grad=True)
    nt.gradcheck(nb.linear, inputs)
    nt.gradgradcheck(nb.linear, inputs)


def test_linear_with_relu_gradcheck_and_second_order():
    # pre-activations kept away from the ReLU's kink, where finite differences straddle it
    rng = np.random.default_rng(10)
    x, w, b = rng.standard_normal((5, 4)), rng.standard_normal((3, 4)), rng.standard_normal(3)
    pre = x @ w.T + b
    x[np.abs(pre).min(axis=1) < 0.2] *= 0  # such rows: the bias alone, below
    b[np.abs(b) < 0.2] = 0.5
    leaves = [nb.tensor(v, requires_grad=True) for v in (x, w, b)]
    fn = lambda x, w, b: nb.linear(x, w, b, activation="relu")
    assert (fn(*leaves).numpy() > 0).any() and (fn(*leaves).numpy() == 0).any()
    nt.gradcheck(fn, leaves)
    nt.gradgradcheck(fn, leaves)


def test_linear_with_relu_equals_relu_of_linear_to_the_bit():
    # the fused ReLU rides the bias's pass with relu's own body; its gradient reads the output
    rng = np.random.default_rng(9)
    for dtype in ("float32", "float64", "float16"):
        x, w, b = (rng.standard_normal(s).astype(dtype) for s in ((6, 5), (4, 5), (4,)))
        x[0, 0] = np.nan
        for bias in ([b], []):
            leaves = [nb.tensor(v, requires_grad=True) for v in (x, w, *bias)]
            fused = nb.linear(*leaves[:2], *leaves[2:], activation="relu")
            twin = [nb.tensor(v, requires_grad=True) for v in (x, w, *bias)]
            plain = nb.relu(nb.linear(*twin))
            np.testing.assert_array_equal(fused.numpy(), plain.numpy())
            seed = rng.standard_normal(fused.shape).astype(dtype)
            fused.backward(nb.tensor(seed))
            plain.backward(nb.tensor(seed))
            for a, t in zip(leaves, twin):
                np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


@given(data=st.data())
def test_linear_rule_on_unknown_dims_generalises(data):
    shapes = [s for s in data.draw(linear_shapes(min_side=1)) if s is not None]
    specs = [Spec(s, dt.float32) for s in shapes]
    hidden = [
        Spec(tuple(data.draw(st.sampled_from([n, -1])) for n in s), dt.float32) for s in shapes
    ]
    (known,) = nb.linear_op.infer(specs, {})
    (compiled,) = nb.linear_op.infer(hidden, {})
    assert all(c in (k, -1) for c, k in zip(compiled.shape, known.shape, strict=True))


def test_linear_layer_in_graph_mode_matches_eager():
    rng = np.random.default_rng(0)
    layer = nb.nn.Linear(4, 3, dtype="float64")
    x = rng.standard_normal((5, 4))
    eager = nb.tensor(x, dtype="float64")
    loss = (layer(eager) ** 2).sum()
    loss.backward()
    grads = [p.grad.numpy().copy() for p in layer.parameters()]
    main = nb.Program()
    with nb.program_guard(main):
        data = nb.static.data("x", [-1, 4], dtype="float64")
        out = layer(data)
        graph_loss = (out**2).sum()
        assert out.shape == (-1, 3)
        pairs = nb.append_backward(graph_loss)  # the layer's captured parameters
    by_tensor = {id(main.captured[p.name]): g for p, g in pairs}
    grad_vars = [by_tensor[id(p)] for p in layer.parameters()]
    got = nb.Executor().run(main, {"x": x}, [graph_loss, *grad_vars])
    np.testing.assert_allclose(got[0], loss.numpy(), rtol=1e-12)
    for g, expected in zip(got[1:], grads, strict=True):
        np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_linear_shape_errors_name_the_shapes():
    x, w = nb.tensor(np.ones((2, 5))), nb.tensor(np.ones((3, 4)))
    with pytest.raises(nb.ShapeError, match=r"x\(2, 5\) has 5 features, weight\(3, 4\) takes 4"):
        nb.linear(x, w)
    with pytest.raises(nb.ShapeError, match=r"bias\(4,\) must have shape \(3,\)"):
        nb.linear(nb.tensor(np.ones((2, 4))), w, nb.tensor(np.ones(4)))
    with pytest.raises(nb.ShapeError, match="2-D weight"):
        nb.linear(nb.tensor(np.ones((2, 4))), nb.tensor(np.ones(4)))
    with pytest.raises(nb.DTypeError, match="linear"):
        nb.linear(nb.tensor(np.ones((2, 4), bool)), nb.tensor(np.ones((3, 4), bool)))


def test_integer_linear_and_addmm_are_exact():
    """PyTorch's F.linear and addmm take integer tensors: exact int64 results."""
    rng = np.random.default_rng(0)
    x, w, b = rng.integers(-50, 50, (5, 7)), rng.integers(-50, 50, (3, 7)), rng.integers(-9, 9, 3)
    got = nb.linear(nb.tensor(x), nb.tensor(w), nb.tensor(b), activation="relu")
    assert got.dtype == nb.int64
    np.testing.assert_array_equal(got.numpy(), np.maximum(x @ w.T + b, 0))
    c = rng.integers(-9, 9, (5, 3))
    got = nb.addmm(nb.tensor(c), nb.tensor(x), nb.tensor(w.T.copy()), beta=2, alpha=-3)
    np.testing.assert_array_equal(got.numpy(), 2 * c - 3 * (x @ w.T))


# ---------------------------------------------------------------- addmm


@st.composite
def addmm_shapes(draw):
    """(input shape, a shape, b shape): input any shape that broadcasts to the product's."""
    n, k, m = (draw(st.integers(0, 4)) for _ in range(3))
    inp = draw(st.sampled_from([(n, m), (m,), (1, m), (n, 1), ()]))
    return inp, (n, k), (k, m)


def _addmm_expected(x, a, b, beta, alpha, dtype):
    product = alpha * (a.astype(np.float64) @ b.astype(np.float64))
    if beta == 0:  # input not read (PyTorch and BLAS): its NaNs do not propagate
        return np.broadcast_to(product, product.shape).astype(dtype)
    return (beta * x.astype(np.float64) + product).astype(dtype)


SCALARS = st.sampled_from([0.0, 1.0, 0.5, -2.0])


@pytest.mark.parametrize("dtype", dt.FLOATS, ids=lambda d: dt.SHORT[d])  # complex: test_complex
@given(data=st.data())
def test_addmm_matches_numpy(dtype, data):
    shapes = data.draw(addmm_shapes())
    x, a, b = (data.draw(nt.arrays(dtype, s)) for s in shapes)
    beta, alpha = data.draw(SCALARS), data.draw(SCALARS)
    out = nb.addmm(*(nb.from_numpy(v) for v in (x, a, b)), beta=beta, alpha=alpha)
    expected = _addmm_expected(x, a, b, beta, alpha, dtype)
    assert (out.shape, out.dtype) == (expected.shape, dtype)
    nt.assert_close(out, expected, atol={dt.float32: 1e-5, dt.float16: 1e-2}.get(dtype))


@pytest.mark.parametrize("dtype", dt.FLOATS, ids=lambda d: dt.SHORT[d])  # complex: test_complex
@given(data=st.data())
def test_addmm_in_place_writes_every_target_layout(dtype, data):
    _, sa, sb = data.draw(addmm_shapes())
    target = data.draw(nt.arrays(dtype, (sa[0], sb[1])))  # C, strided or transposed
    a, b = data.draw(nt.arrays(dtype, sa)), data.draw(nt.arrays(dtype, sb))
    beta, alpha = data.draw(SCALARS), data.draw(SCALARS)
    expected = _addmm_expected(target, a, b, beta, alpha, dtype)
    t = nb.from_numpy(target.copy() if not target.flags.writeable else target)
    out = nb.addmm_(t, nb.from_numpy(a), nb.from_numpy(b), beta=beta, alpha=alpha)
    assert out is t and t.version == 1 and t.shape == expected.shape
    nt.assert_close(t, expected, atol={dt.float32: 1e-5, dt.float16: 1e-2}.get(dtype))


def test_addmm_reading_its_own_target_sees_the_old_values():
    # a @ a into a: BLAS would read what it has written; the product comes first
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        s = rng.standard_normal((4, 4)).astype(dtype)
        t = nb.tensor(s.copy())
        nb.addmm_(t, t, t.T, beta=0.5, alpha=2.0)
        nt.assert_close(t, (0.5 * s + 2.0 * (s @ s.T)).astype(dtype), atol=1e-5)


def test_addmm_without_direct_blas_computes_the_same(monkeypatch):
    from nbflow.kernels.cpu import blas

    rng = np.random.default_rng(6)
    x, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((3,), (2, 5), (5, 3)))
    with_blas = nb.addmm(*(nb.tensor(v) for v in (x, a, b)), beta=-1.0, alpha=0.5).numpy()
    monkeypatch.setattr(blas, "gemm", lambda *args: False)
    without = nb.addmm(*(nb.tensor(v) for v in (x, a, b)), beta=-1.0, alpha=0.5).numpy()
    nt.assert_close(without, with_blas, atol=1e-6)
    nt.assert_close(without, _addmm_expected(x, a, b, -1.0, 0.5, np.float32), atol=1e-5)


def test_blas_gemm_takes_row_and_column_layouts_and_refuses_the_rest():
    from nbflow.kernels.cpu import blas

    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 5)), rng.standard_normal((5, 4))
    for left in (a, np.asfortranarray(a)):
        for right in (b, np.asfortranarray(b)):
            for c in (np.ones((3, 4)), np.asfortranarray(np.ones((3, 4)))):
                assert blas.gemm(left, right, c, 2.0, -1.0) or blas.numpy_openblas() is None
                if blas.numpy_openblas() is not None:
                    nt.assert_close(c, 2.0 * a @ b - 1.0)
    c = np.ones((3, 4))
    wide = np.zeros((6, 10))
    assert not blas.gemm(wide[::2, ::2], b, c, 1.0, 0.0)  # neither axis contiguous
    assert not blas.gemm(a, b, np.ones((4, 8))[::1, ::2], 1.0, 0.0)
    assert not blas.gemm(a.astype(np.float32), b, c, 1.0, 0.0)  # mixed dtypes
    square = np.ones((3, 3))
    assert not blas.gemm(square, square, square, 1.0, 1.0)  # c is an operand
    assert (c == 1).all()  # nothing written by a refusal


SMALL_CASES = [
    # (m, k, n), the limit, the blocks (axis, at most this wide) made with a as it is and with
    # a read transposed (rows of c are no rows of a then): one call is (-1, 0)
    ((8, 40, 100), 0, (-1, 0), (-1, 0)),
    ((8, 40, 100), 2048, (-1, 0), (-1, 0)),  # every block would be narrower than 16
    ((8, 40, 100), 5120, (1, 16), (1, 16)),  # c's columns
    ((100, 40, 8), 5120, (0, 16), (-1, 0)),  # c's rows
    ((16, 200, 16), 8192, (2, 32), (2, 32)),  # the inner dim, each block adding its part
]


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("case", SMALL_CASES)
def test_cblas_product_in_small_blocks_equals_numpy(case, trans_a):
    """The product in blocks sized for OpenBLAS's small-matrix kernels, with beta, into a
    strided view of c: the blocks chosen, and the product against numpy's."""
    from nbflow.kernels.cpu import blas

    (m, k, n), small, plain, transposed = case
    assert blas.small_blocks(m, n, k, small, not trans_a) == (transposed if trans_a else plain)
    gemm = blas.cblas_gemm(np.float64)
    if gemm is None:
        pytest.skip("numpy's BLAS has no CBLAS symbols to call")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    base = rng.standard_normal((m, n + 20))
    c = base.copy()
    flag = blas.TRANS if trans_a else blas.NO_TRANS
    operand = np.ascontiguousarray(a.T) if trans_a else a  # (read transposed: a again)
    blas.cblas_product_small(gemm, operand, b, c[:, 10 : n + 10], flag, 1.0, -1.0, small)
    want = base.copy()
    want[:, 10 : n + 10] = a @ b - base[:, 10 : n + 10]
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)


@given(data=st.data())
def test_addmm_gradcheck_and_second_order(data):
    shapes = data.draw(addmm_shapes())
    beta, alpha = data.draw(SCALARS), data.draw(SCALARS)
    inputs = [
        nb.tensor(data.draw(nt.arrays(dt.float64, s)), dtype="float64", requires_grad=True)
        for s in shapes
    ]
    fn = lambda x, a, b: nb.addmm(x, a, b, beta=beta, alpha=alpha)
    nt.gradcheck(fn, inputs)
    nt.gradgradcheck(fn, inputs)


def test_addmm_errors_name_the_shapes_and_dtypes():
    a, b = nb.ones(2, 3), nb.ones(3, 4)
    with pytest.raises(nb.errors.ShapeError, match=r"input\(2, 2, 4\) does not broadcast"):
        nb.addmm(nb.ones(2, 2, 4), a, b)
    with pytest.raises(nb.errors.ShapeError, match="inner dims differ"):
        nb.addmm(nb.ones(2, 4), a, nb.ones(4, 4))
    with pytest.raises(nb.errors.ShapeError, match="needs 2-D a and b"):
        nb.addmm(nb.ones(4), nb.ones(3), b)
    with pytest.raises(nb.errors.ShapeError):  # the target cannot take the product's shape
        nb.addmm_(nb.ones(4), a, b)
    with pytest.raises(TypeError, match="bool"):
        nb.addmm(*(nb.ones(2, 2, dtype="bool") for _ in range(3)))


def test_addmm_of_a_large_product_runs_one_gemm_for_every_layout(monkeypatch):
    # from 2^20 multiply-adds the product is added by BLAS itself (GEMM's beta)
    from nbflow.kernels.cpu import blas

    calls = []
    gemm = blas.gemm
    monkeypatch.setattr(blas, "gemm", lambda *args: calls.append(1) or gemm(*args))
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((64, 128)), rng.standard_normal((128, 160))
    target = rng.standard_normal((64, 160))
    for dtype in (np.float32, np.float64):
        for left, right in ((a, b), (np.asfortranarray(a), b), (a, np.asfortranarray(b))):
            for beta in (0.0, 1.0, -0.5):
                x, p, q = (nb.tensor(v.astype(dtype)) for v in (target, left, right))
                expected = (beta * target if beta else 0) - 0.25 * (a @ b)
                out = nb.addmm(x, p, q, beta=beta, alpha=-0.25)
                nt.assert_close(out, expected.astype(dtype), rtol=1e-4, atol=1e-4)
                t = nb.tensor(np.asfortranarray(target.astype(dtype)))  # stored by columns
                nb.addmm_(t, p, q, beta=beta, alpha=-0.25)
                nt.assert_close(t, expected.astype(dtype), rtol=1e-4, atol=1e-4)
    assert len(calls) == 2 * 3 * 3 * 2 or blas.numpy_openblas() is None


def _layouts():
    """The common layouts of a large float32 matmul: (name, a, b, the path it must take)."""
    rng = np.random.default_rng(0)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    qkv = r(64, 8, 96)  # (L, N, 3E), a sequence-first projection
    return [
        ("rows x matrix", r(8, 64, 128), r(128, 96), "rows"),
        ("strided rows x matrix", r(64, 8, 128).transpose(1, 0, 2), r(128, 96), "rows"),
        ("rows x transposed weight", r(8, 64, 128), r(96, 128).T, "rows"),
        ("heads q @ k^T", qkv[..., :32].reshape(64, 8, 4, 8).transpose(1, 2, 0, 3),
         qkv[..., 32:64].reshape(64, 8, 4, 8).transpose(1, 2, 3, 0), "stack"),
        ("broadcast stack", r(8, 64, 64), r(1, 64, 32), "stack"),
        ("matrix x matrix", r(512, 128), r(128, 64), "gemm"),
    ]  # fmt: skip


@pytest.mark.parametrize("layout", _layouts(), ids=lambda c: c[0])
def test_matmul_takes_blas_paths_for_the_common_layouts(layout, monkeypatch):
    """Stacked rows times one matrix run as one 2-D GEMM over the flattened rows (numpy's
    matmul would loop over the stack, or leave BLAS for a strided stack); stacks of products
    run as one loop of GEMMs, in turn or over numba's threads (the first three calls try each
    of the thread choices); each result equals numpy's."""
    from nbflow.kernels.cpu import blas
    from nbflow.ops import linalg

    _, a, b, path = layout
    taken = []
    gemm, stack_call = linalg._gemm, blas.stack_call
    monkeypatch.setattr(linalg, "_gemm", lambda *x: taken.append(("gemm", x[0].ndim)) or gemm(*x))
    monkeypatch.setattr(blas, "stack_call", lambda *x: taken.append("stack") or stack_call(*x))
    want = np.matmul(a.astype(np.float64), b)
    for dtype in (np.float32, np.float64):
        x, y = (nb.tensor(v.astype(dtype)) for v in (a, b))
        for _ in range(3):
            np.testing.assert_allclose(nb.matmul(x, y).numpy(), want, rtol=1e-4, atol=1e-4)
    want_path = {"rows": [("gemm", 2)], "gemm": [("gemm", 2)]}.get(path)
    assert taken == want_path * 6 if want_path else set(taken) == {"stack"}
