"""Reductions: forward vs numpy per op and dtype (shape and dtype first, then values), the
compile-time rule on unknown dims, NaN and empty cases, gradients by finite differences (first
and second order) and the typed errors."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import Spec
from nbflow.ops.reduce import reduced_axes, reduced_shape

REDUCTIONS = [
    nb.sum, nb.mean, nb.prod, nb.max, nb.min, nb.argmax, nb.argmin,
    nb.var, nb.std, nb.logsumexp, nb.all, nb.any,
]  # fmt: skip
SINGLE_AXIS = {"argmax", "argmin"}
NO_IDENTITY = {"max", "min", "argmax", "argmin"}  # an empty reduction is an error
DIFFERENTIABLE = [nb.sum, nb.mean, nb.prod, nb.max, nb.min, nb.var, nb.std, nb.logsumexp]


def _cases():
    for op in REDUCTIONS:
        dtypes = dt.ALL if op is nb.logsumexp else op.dtypes  # logsumexp takes ints as float
        for d in dtypes:
            yield pytest.param(op, d, id=f"{op.name}-{dt.SHORT[d]}")


@st.composite
def axes(draw, ndim, single=False):
    """None, an int or (unless single) a tuple of distinct axes, some negative."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1] if single else [None, 0, -1, (0,), (-1,), ()]))
    one = st.integers(-ndim, ndim - 1)
    if single:
        return draw(st.none() | one)
    many = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).flatmap(
        lambda ax: st.tuples(*[st.sampled_from([a, a - ndim]) for a in ax])
    )
    return draw(st.none() | one | many)


@st.composite
def reduce_args(draw, op, dtype, min_side=0):
    shape = draw(nt.shapes(min_side=min_side))
    x = draw(nt.arrays(dtype, shape))
    attrs = {
        "axis": draw(axes(len(shape), single=op.name in SINGLE_AXIS)),
        "keepdims": draw(st.booleans()),
    }
    if op.name in ("var", "std"):
        attrs["correction"] = draw(st.integers(0, 2))
    return x, attrs


def _count(shape, axis):
    return math.prod(shape[i] for i in reduced_axes(axis, len(shape)))


def _empty_reduction(shape, axis):
    return any(shape[i] == 0 for i in reduced_axes(axis, len(shape)))


@pytest.mark.parametrize("op,dtype", list(_cases()))
@given(data=st.data())
def test_forward_matches_numpy(op, dtype, data):
    x, attrs = data.draw(reduce_args(op, dtype))
    if op.name in NO_IDENTITY and _empty_reduction(x.shape, attrs["axis"]):
        with pytest.raises(nb.ShapeError, match=op.name):
            op(nb.from_numpy(x), **attrs)
        return
    out = op(nb.from_numpy(x), **attrs)
    (spec,) = op.infer([Spec(x.shape, x.dtype)], op.check_attrs(attrs))
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    nt.assert_close(out, op.ref(x, **attrs), msg=f"{op.name} {attrs}")


@pytest.mark.parametrize("op", REDUCTIONS, ids=lambda op: op.name)
@given(data=st.data())
def test_rule_on_unknown_dims_generalises(op, data):
    x, attrs = data.draw(reduce_args(op, dt.float32, min_side=1))
    unknown = tuple(data.draw(st.sampled_from([n, -1])) for n in x.shape)
    attrs = op.check_attrs(attrs)
    (known,) = op.infer([Spec(x.shape, x.dtype)], attrs)
    (compiled,) = op.infer([Spec(unknown, x.dtype)], attrs)
    assert compiled.dtype == known.dtype and len(compiled.shape) == len(known.shape)
    assert all(c in (k, -1) for c, k in zip(compiled.shape, known.shape, strict=True))


def test_zero_d_and_size_zero():
    s = nb.tensor(2.5)
    for axis in (None, 0, -1, (0,), ()):
        for keepdims in (False, True):
            assert nb.sum(s, axis=axis, keepdims=keepdims).shape == ()
    assert nb.argmax(s, axis=0).item() == 0
    e = nb.zeros(0, 3)
    assert nb.sum(e, axis=0).tolist() == [0, 0, 0]
    assert nb.prod(e, axis=0).tolist() == [1, 1, 1]
    assert nb.max(e, axis=1).shape == (0,)  # nothing is reduced over the empty axis
    assert np.isnan(nb.mean(e).item())
    assert nb.logsumexp(e, axis=0).tolist() == [-np.inf] * 3
    assert nb.all(e).item() is True and nb.any(e).item() is False


def test_dtype_rules():
    i32 = nb.tensor([1, 2, 3], dtype="int32")
    assert nb.sum(i32).dtype == dt.int64 and nb.prod(i32).dtype == dt.int64
    assert nb.sum(nb.tensor([True, True])).item() == 2
    assert nb.max(i32).dtype == dt.int32 and nb.argmax(i32).dtype == dt.int64
    assert nb.logsumexp(i32).dtype == dt.float32
    assert nb.sum(nb.ones(3, dtype="float16")).dtype == dt.float16
    assert nb.all(i32).dtype == dt.bool_


def test_float_accumulation_is_float64():
    x = np.full(1 << 14, 0.1, np.float32)
    nt.assert_close(nb.sum(nb.from_numpy(x)), np.float32(np.sum(x, dtype=np.float64)))


def test_nan_propagates_like_numpy():
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 5.0, 2.0], [4.0, 0.0, -1.0]])
    t = nb.from_numpy(x)
    for op, ref in [
        (nb.max, np.max),
        (nb.min, np.min),
        (nb.argmax, np.argmax),
        (nb.argmin, np.argmin),
        (nb.sum, np.sum),
        (nb.logsumexp, None),
    ]:
        for axis in (None, 0, 1):
            expected = op.ref(x, axis=axis) if ref is None else ref(x, axis=axis)
            nt.assert_close(op(t, axis=axis), np.asarray(expected), check_dtype=False)
    assert nb.all(nb.tensor([np.nan, 1.0])).item() is True  # NaN is nonzero


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_leading_and_trailing_axes_of_wide_arrays(dtype):
    # the column kernels (leading axes), the four-lane row kernels (trailing), and strided
    # inputs, which go through the general path; NaN anywhere in a column or row wins
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((37, 19, 6)) * 5).astype(dtype)
    if dtype in (np.float32, np.float64):
        x[3, 4, 2] = x[36, 0, 5] = x[0, 18, 0] = np.nan
    for a in (x, x[:, ::2], x.transpose(1, 0, 2)):
        t = nb.from_numpy(a)
        for axis in (0, (0, 1), 2, (1, 2), None):
            for op in (nb.max, nb.min, nb.sum, nb.mean):
                if op is nb.mean and dtype not in (np.float32, np.float64):
                    continue
                got = op(t, axis=axis)
                nt.assert_close(got, np.asarray(op.ref(a, axis=axis)), msg=f"{op.name} {axis}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_middle_axes_of_wide_arrays(dtype):
    # axes between kept ones, with wide rows after them: each leading slice's columns (a mean
    # over a sequence's steps); NaN in a column wins
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((5, 7, 3, 70)) * 5).astype(dtype)
    if dtype != np.int32:
        x[1, 2, 0, 3] = x[4, 6, 2, 69] = np.nan
    t = nb.from_numpy(x)
    for axis in (1, (1, 2), 2):
        for op in (nb.max, nb.min, nb.sum, nb.mean):
            if op is nb.mean and dtype == np.int32:
                continue
            got = op(t, axis=axis)
            nt.assert_close(got, np.asarray(op.ref(x, axis=axis)), msg=f"{op.name} {axis}")


def test_infinities():
    x = nb.tensor([[-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 0.0]], dtype="float64")
    assert nb.logsumexp(x, axis=1).tolist() == [-np.inf, np.inf, 0.0]
    assert nb.max(x, axis=1).tolist() == [-np.inf, np.inf, 0.0]


def test_var_correction():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    t = nb.from_numpy(x)
    assert nb.var(t).item() == pytest.approx(np.var(x, ddof=1))  # unbiased by default
    assert nb.var(t, correction=0).item() == pytest.approx(np.var(x))
    assert nb.std(t, correction=2).item() == pytest.approx(np.std(x, ddof=2))
    assert np.isinf(nb.var(t, correction=4).item())  # N - correction <= 0, as numpy
    assert np.isnan(nb.var(nb.tensor([3.0])).item())


def test_methods():
    x = nb.tensor([[1.0, 5.0], [3.0, 2.0]])
    assert x.sum(axis=1).tolist() == [6.0, 5.0]
    assert x.max().item() == 5.0 and x.argmin(axis=0).tolist() == [0, 1]
    assert x.mean(axis=(0, 1), keepdims=True).shape == (1, 1)


# ---------------------------------------------------------------- gradients


def _grad_args(data, op, min_side=1):
    x, attrs = data.draw(reduce_args(op, dt.float64, min_side=min_side))
    seed = data.draw(st.integers(0, 2**16))
    values = np.random.default_rng(seed).standard_normal(x.shape)  # ties have probability 0
    n = _count(x.shape, attrs["axis"])
    if op.name in ("var", "std"):
        assume(n > attrs["correction"] and n >= 2)  # finite, and std > 0
    return nb.tensor(values, dtype="float64", requires_grad=True), attrs


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
@given(data=st.data())
def test_gradcheck(op, data):
    x, attrs = _grad_args(data, op)
    nt.gradcheck(lambda t: op(t, **attrs), [x])


def _square(op, attrs):
    # the gradient of a linear op does not depend on x: square it so the second
    # derivative runs through the op's gradient rule (and its helper ops)
    def fn(t):
        y = op(t, **attrs)
        return y * y

    return fn


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
@given(data=st.data())
def test_gradgradcheck(op, data):
    x, attrs = _grad_args(data, op)
    nt.gradgradcheck(_square(op, attrs), [x])


def test_gradgradcheck_nonlinear_directly():
    x = nb.tensor(
        np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True, dtype="float64"
    )
    for op in (nb.logsumexp, nb.var, nb.std):
        nt.gradgradcheck(lambda t, op=op: op(t, axis=1), [x])


@pytest.mark.parametrize("row", [[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 2.0], [0.0], [1.5, -2.0]])
def test_prod_gradient_with_zeros(row):
    x = nb.tensor(row, dtype="float64", requires_grad=True)
    nb.prod(x).backward()
    expected = [math.prod(row[:i] + row[i + 1 :]) for i in range(len(row))]
    nt.assert_close(x.grad, np.array(expected, np.float64))
    nt.gradcheck(nb.prod, [x])
    # second order at the zeros too: d2 prod / dx_i dx_j is the product of the rest
    (g,) = nb.grad(nb.prod(x), [x], create_graph=True)
    for i in range(len(row)):
        (h,) = nb.grad(g[i], [x], retain_graph=True)  # (g[i] share one graph)
        rest = [math.prod(v for k, v in enumerate(row) if k not in (i, j)) for j in range(len(row))]
        nt.assert_close(h, np.where(np.arange(len(row)) == i, 0.0, rest))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2), (2, 0, 1)])
def test_prod_second_order_with_zeros_over_several_axes(axis):
    x = np.array([[[0.0, 2.0], [1.5, 0.0]], [[1.0, -2.0], [0.5, 3.0]], [[0.0, 0.7], [0.0, 1.2]]])
    t = nb.tensor(x, requires_grad=True)
    nt.gradcheck(lambda t: nb.grad(nb.prod(t, axis=axis).sum(), [t], create_graph=True)[0], [t])


def test_max_min_ties_share_the_gradient():
    x = nb.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], dtype="float64", requires_grad=True)
    nb.max(x, axis=1).sum().backward()
    nt.assert_close(x.grad, np.array([[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]))
    x.grad = None
    nb.min(x).backward()
    nt.assert_close(x.grad, np.array([[1.0, 0, 0], [0, 0, 0]]))


def test_float32_gradients_match_float64():
    v = np.random.default_rng(2).standard_normal((3, 5))
    for op in DIFFERENTIABLE:
        grads = []
        for d in ("float32", "float64"):
            x = nb.tensor(v, dtype=d, requires_grad=True)
            op(x, axis=1).sum().backward()
            assert x.grad.dtype == x.dtype
            grads.append(x.grad.numpy())
        nt.assert_close(grads[0], grads[1].astype(np.float32), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- helper ops


@pytest.mark.parametrize("dtype", dt.ALL, ids=lambda d: dt.SHORT[d])
@given(data=st.data())
def test_expand_reduced_matches_numpy(dtype, data):
    like, attrs = data.draw(reduce_args(nb.sum, dt.float32))
    axes = reduced_axes(attrs["axis"], like.ndim)
    g_shape = reduced_shape(like.shape, axes, attrs["keepdims"])
    g = data.draw(nt.arrays(dtype, g_shape))
    out = nb.expand_reduced(nb.from_numpy(g), nb.from_numpy(like), **attrs)
    (spec,) = nb.expand_reduced.infer(
        [Spec(g.shape, g.dtype), Spec(like.shape, like.dtype)], nb.expand_reduced.check_attrs(attrs)
    )
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    nt.assert_close(out, nb.expand_reduced.ref(g, like, **attrs))
    count = nb.reduced_count(nb.from_numpy(like), axis=attrs["axis"])
    assert (count.shape, count.dtype) == ((), dt.int64)
    assert count.item() == nb.reduced_count.ref(like, axis=attrs["axis"])


def test_expand_reduced_gradients():
    like = nb.zeros(2, 3, 4, dtype="float64")
    g = nb.tensor(
        np.random.default_rng(3).standard_normal((2, 4)), dtype="float64", requires_grad=True
    )
    nt.gradcheck(lambda t: nb.expand_reduced(t, like, axis=1), [g])
    nt.gradgradcheck(lambda t: nb.expand_reduced(t * t, like, axis=1), [g])
    with pytest.raises(nb.ShapeError, match="expand_reduced"):
        nb.expand_reduced(g, like, axis=0)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("axis", [2, -3, (0, 2), (1, -1)])
def test_bad_axis_is_a_shape_error_naming_the_op(axis):
    x = nb.ones(2, 3)
    for op in (nb.sum, nb.max, nb.var, nb.all):
        with pytest.raises(nb.ShapeError, match=op.name) as info:
            op(x, axis=axis)
        assert isinstance(info.value, ValueError) and "f32[2,3]" in str(info.value)


def test_bad_attrs():
    with pytest.raises(nb.AttrError, match="argmax"):
        nb.argmax(nb.ones(2, 3), axis=(0, 1))
    with pytest.raises(nb.AttrError, match="sum"):
        nb.sum(nb.ones(2), axis=0.5)
    with pytest.raises(nb.AttrError, match="var"):
        nb.var(nb.ones(2), correction=0.5)


def test_empty_max_fails_before_the_kernel():
    x = Spec((0, 3), dt.float32)
    for op in (nb.max, nb.min, nb.argmax, nb.argmin):
        with pytest.raises(nb.ShapeError, match=f"{op.name}.*size 0"):
            op.infer([x], op.check_attrs({"axis": 0}))  # the shape rule alone rejects it
        with pytest.raises(nb.ShapeError, match=op.name):
            op(nb.zeros(0, 3), axis=0)
        with pytest.raises(nb.ShapeError, match=op.name):
            op(nb.zeros(0))


def test_integer_mean_is_a_dtype_error():
    for op in (nb.mean, nb.var, nb.std):
        with pytest.raises(nb.DTypeError, match=f"{op.name}.*int32") as info:
            op(nb.tensor([1, 2], dtype="int32"))
        assert isinstance(info.value, TypeError)


def test_unsupported_dtype_names_op_device_and_dtype():
    # past the shape rule (as a graph executor would be), the kernel lookup names the key
    with pytest.raises(nb.KernelNotFoundError, match="mean.*'cpu'.*int64"):
        nb.mean.kernel("cpu", dt.int64)
