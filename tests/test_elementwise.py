"""Elementwise ops: forward vs numpy per op and dtype (shape and dtype first), gradients by
finite differences, second-order gradients."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY, Spec
from nbflow.kernels.cpu.templates import broadcast_view
from nbflow.ops import BUILTIN

ELEMENTWISE = sorted(
    (REGISTRY[n] for n in BUILTIN if hasattr(REGISTRY[n], "scalar_body")), key=lambda op: op.name
)

# input domains (low, high) where an op is defined and well-conditioned
DOMAIN = {
    "log": (0.1, 5),
    "log1p": (-0.9, 5),
    "sqrt": (0.1, 5),
    "rsqrt": (0.1, 5),
    "pow": (0.5, 2),
    "exp": (-5, 5),
    "expm1": (-5, 5),
    "log2": (0.1, 5),
    "log10": (0.1, 5),
    "asin": (-0.95, 0.95),
    "acos": (-0.95, 0.95),
    "tan": (-1.3, 1.3),
    "reciprocal": (0.2, 5),
    "acosh": (1.1, 5),
    "atanh": (-0.9, 0.9),
    "logit": (0.05, 0.95),
    "binary_cross_entropy_pointwise": (0.0, 1.0),
    "gaussian_nll_variance": (0.1, 3),  # variances (negative ones are refused); past eps
    "xlogy": (0.1, 5),
    "erfinv": (-0.95, 0.95),
    "lgamma": (0.1, 5),
    "digamma": (0.1, 5),
    "trigamma": (0.1, 5),
    "ndtri": (0.05, 0.95),
    "entr": (0.1, 5),
    "xlog1py": (-0.9, 5),
    "standard_gamma_grad": (0.1, 5),  # a, x > 0; tiny values below lose the ref its accuracy
}
# divisors stay away from zero (the sign is drawn separately)
NONZERO_SECOND = {"div", "floor_div", "mod", "fmod"}
ATTRS = {
    "leaky_relu": [{}, {"negative_slope": 0.2}],
    "gelu": [{}, {"approximate": True}],
    "softplus": [{}, {"beta": 2.0, "threshold": 5.0}],
    "clip": [{"min": -1, "max": 1}, {"min": 0.5}, {"max": -0.5}],
    "cast": [{"dtype": d} for d in dt.ALL + dt.COMPLEX],
    "logit": [{}, {"eps": 0.1}],
    "nan_to_num": [{"posinf": 1e4, "neginf": -1e4}, {"nan": 1.0, "posinf": 100.0, "neginf": -7.0}],
}


def _cases():
    for op in ELEMENTWISE:
        for d in op.dtypes:
            yield pytest.param(op, d, id=f"{op.name}-{dt.SHORT[d]}")


def _draw_inputs(data, op, dtype, shapes):
    low, high = DOMAIN.get(op.name, (-3, 3))
    arrays = []
    for i, shape in enumerate(shapes):
        d = dt.bool_ if (op.name == "where" and i == 0) else dtype
        a = data.draw(nt.arrays(d, shape, low, high))
        if i == 1 and op.name in NONZERO_SECOND:
            a = np.where(a == 0, 1, a).astype(d)
            if d.kind == "f":  # keep |y| >= 0.5 so that floor/mod are not knife-edge
                a = np.where(np.abs(a) < 0.5, np.sign(a) + (a == 0), a).astype(d)
        arrays.append(a)
    return arrays


def _attrs_fit(op, attrs, dtype):
    """Whether the op's number attributes (given, or their defaults) fit an integer dtype:
    nbflow refuses a scalar an integer tensor cannot hold, where PyTorch wraps it."""
    if dtype.kind not in "iu":
        return True
    info = np.iinfo(dtype)
    values = {name: a.default for name, a in op.attrs.items()} | attrs
    kinds = (int,) if op.name == "clip" else (int, float)  # (clip's float bounds promote)
    numbers = [v for v in values.values() if isinstance(v, kinds) and not isinstance(v, bool)]
    return all(info.min <= v <= info.max for v in numbers if np.isfinite(v))


@pytest.mark.parametrize("op,dtype", list(_cases()))
@given(data=st.data())
def test_forward_matches_numpy(op, dtype, data):
    shapes = data.draw(nt.broadcastable_shapes(len(op.inputs)))
    arrays = _draw_inputs(data, op, dtype, shapes)
    attrs = data.draw(st.sampled_from(ATTRS.get(op.name, [{}])))
    if op.name == "cast" and dtype.kind == "c" and attrs["dtype"].kind != "c":
        with pytest.raises(nb.DTypeError, match="imaginary"):  # take .real (PyTorch warns)
            op(*[nb.from_numpy(a) for a in arrays], **attrs)
        return
    if not _attrs_fit(op, attrs, dtype):  # (-1 for a uint8 clip: refused, not wrapped)
        with pytest.raises(nb.DTypeError, match="out of range"):
            op(*[nb.from_numpy(a) for a in arrays], **attrs)
        return
    out = op(*[nb.from_numpy(a) for a in arrays], **attrs)
    spec = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))[0]
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    expected = np.asarray(op.ref(*arrays, **attrs))
    nt.assert_close(out, expected.astype(out.dtype), msg=f"{op.name} {dtype}")


@pytest.mark.parametrize("op", [REGISTRY[n] for n in ("add", "mul", "exp", "where")])
def test_size_zero_and_scalar_inputs(op):
    arrays = [np.ones((0, 3), np.float32)] * len(op.inputs)
    if op.name == "where":
        arrays[0] = np.ones((0, 3), bool)
    assert op(*[nb.from_numpy(a) for a in arrays]).shape == (0, 3)
    zero_d = [np.asarray(0.5, np.float32)] * len(op.inputs)
    if op.name == "where":
        zero_d[0] = np.asarray(True)
    out = op(*[nb.from_numpy(a) for a in zero_d])
    assert out.shape == () and out.dtype == np.float32


def test_python_scalars_are_weak():
    x = nb.tensor([1, 2], dtype="int32")
    assert (x + 1).dtype == np.int32
    assert (x * 0.5).dtype == np.float32
    h = nb.tensor([1.0], dtype="float16")
    assert (h * 3.0).dtype == np.float16
    assert (2 - x).numpy().tolist() == [1, 0]
    assert (1.0 / nb.tensor([4.0])).numpy().tolist() == [0.25]


def test_float16_is_stored_and_computed_in_float32():
    x = np.array([0.1, 1.5, 65504.0], np.float16)
    out = nb.exp(nb.from_numpy(x[:2]))
    assert out.dtype == np.float16
    nt.assert_close(out, np.exp(x[:2].astype(np.float32)).astype(np.float16))
    assert (nb.from_numpy(x) + nb.from_numpy(x)).numpy()[2] == np.inf  # f16 overflow, as numpy


def test_broadcast_rank_above_four_falls_back():
    a = np.arange(2 * 3 * 2 * 3 * 2, dtype=np.float64).reshape(2, 3, 2, 3, 2)
    b = np.arange(3 * 2, dtype=np.float64).reshape(3, 1, 1, 2)[:, :, :, ::-1]
    out = nb.add(nb.from_numpy(a[:, :, :, :, ::-1]), nb.from_numpy(b))
    nt.assert_close(out, a[:, :, :, :, ::-1] + b)


@pytest.mark.parametrize(
    "shapes",
    [((128, 10), (10,)), ((10,), (4, 3, 10)), ((2, 3, 5), (1, 3, 5)), ((3, 5), (3, 5), (5,))],
)
def test_row_broadcast_loop_matches_numpy(shapes):
    # inputs of the output's shape mixed with one contiguous row repeated (a bias add)
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if len(xs) == 2:
        nt.assert_close(nb.add(*map(nb.tensor, xs)), xs[0] + xs[1])
        nt.assert_close(nb.maximum(*map(nb.tensor, xs)), np.maximum(xs[0], xs[1]))
    else:
        nt.assert_close(
            nb.where(*map(nb.tensor, [xs[0] > 0, *xs[1:]])), np.where(xs[0] > 0, *xs[1:])
        )


def test_in_place_add_of_own_row():
    # the row is part of the output: it must be read as it was before the write
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = nb.tensor(x.copy())
    t += t[1]
    nt.assert_close(t, x + x[1])


@pytest.mark.parametrize("shape", [(7,), (4, 5)])
def test_in_place_op_on_a_shifted_view_of_itself_reads_the_old_values(shape):
    # x[1:] += x[:-1]: the same shape, one element apart; numpy reads the input as it was
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape) + 1
    t = nb.tensor(x.copy())
    t[1:] += t[:-1]
    expected = x.copy()
    expected[1:] += x[:-1]
    nt.assert_close(t, expected)
    u = nb.tensor(x.copy())
    nb.ops.mul_(u[:-1], u[1:])  # the other direction, through the op itself
    expected = x.copy()
    expected[:-1] *= x[1:]
    nt.assert_close(u, expected)


def _random(rng, dtype, shape):
    if dtype == dt.bool_:
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-3, 3, shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


@pytest.mark.parametrize("op", ELEMENTWISE, ids=lambda op: op.name)
def test_kernels_writing_into_an_input_match_numpy(op):
    # in place (x += y, a graph step writing into a dying input's buffer) the loops take a
    # branch that reads and writes that input through one name; also when the input is a
    # read-only view of the output's memory. Flat, one-scalar and repeated-row loops.
    dtype = dt.float32 if dt.float32 in op.dtypes else op.dtypes[0]
    attrs = op.check_attrs(ATTRS.get(op.name, [{}])[0])
    kernel = op.kernel("cpu", dtype)
    n = len(op.inputs)
    layouts = [[(300,)] * n, [(5, 64)] * n]
    if n > 1:
        layouts += [[(300,)] * (n - 1) + [(1,)], [(5, 64)] * (n - 1) + [(64,)]]
    rng = np.random.default_rng(0)
    for shapes in layouts:
        arrays = [
            _random(rng, dt.bool_ if (op.name == "where" and i == 0) else dtype, s)
            for i, s in enumerate(shapes)
        ]
        if op.name in NONZERO_SECOND:
            arrays[1] = np.where(arrays[1] == 0, 1, arrays[1]).astype(dtype)
        if op.name in DOMAIN:
            low, high = DOMAIN[op.name]
            arrays = [
                np.clip(np.abs(a) + 0.5, low, high).astype(a.dtype) if a.dtype.kind == "f" else a
                for a in arrays
            ]
        expected = np.asarray(op.ref(*arrays, **attrs))
        for k, a in enumerate(arrays):
            if a.shape != expected.shape or a.dtype != expected.dtype:
                continue
            for read_only in (False, True):
                ins = [b.copy() for b in arrays]
                out = ins[k]
                if read_only:
                    ins[k] = out.view()
                    ins[k].flags.writeable = False
                kernel(*ins, out, **attrs)
                nt.assert_close(out, expected, msg=f"{op.name} {shapes} into input {k}")


# ---------------------------------------------------------------- gradients

# (zeta's and the incomplete gammas' first input has no gradient, as in PyTorch: test_all_ops
# and test_special check the second)
NO_FIRST_GRAD = {"zeta", "gammainc", "gammaincc"}
DIFFERENTIABLE = [
    op
    for op in ELEMENTWISE
    if op.differentiable
    and not op.no_derivative
    and op.name not in {"cast", *NO_FIRST_GRAD}
    # (the complex ops: checked through real leaves in test_all_ops and test_complex)
    and dt.float64 in op.dtypes
    and op.name != "complex"
]
SHAPE_SETS = [((3,), (3,), (3,)), ((2, 3), (3,), (1, 3)), ((), (2, 2), (2, 1))]


def _grad_inputs(op, shapes, seed):
    rng = np.random.default_rng(seed)
    low, high = DOMAIN.get(op.name, (-2, 2))
    xs = []
    for i, shape in enumerate(shapes[: len(op.inputs)]):
        if op.name == "where" and i == 0:
            xs.append(nb.tensor(rng.random(shape) > 0.5))
            continue
        a = rng.uniform(low, high, shape)
        if i == 1 and op.name in NONZERO_SECOND:
            a = np.sign(a) * (np.abs(a) + 0.5)
        xs.append(nb.tensor(a, dtype="float64", requires_grad=True))
    return xs


@pytest.mark.parametrize("op", DIFFERENTIABLE, ids=lambda op: op.name)
@pytest.mark.parametrize("shapes", SHAPE_SETS, ids=["same", "broadcast", "scalar"])
def test_gradcheck(op, shapes):
    for attrs in ATTRS.get(op.name, [{}]):
        xs = _grad_inputs(op, shapes, seed=len(op.name))
        nt.gradcheck(lambda *a, attrs=attrs: op(*a, **attrs), xs)


def test_cast_gradient_flows_between_float_dtypes():
    x = nb.tensor([1.0, 2.0], dtype="float64", requires_grad=True)
    y = nb.cast(x, dtype="float32") * 3
    (g,) = nb.grad(y, [x], nb.ones_like(y))
    assert g.dtype == np.float64 and g.numpy().tolist() == [3.0, 3.0]


SECOND_ORDER = "exp log sin cos tanh sigmoid mul div pow sqrt gelu softplus erf rsqrt".split()


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    op = REGISTRY[name]
    xs = _grad_inputs(op, SHAPE_SETS[1], seed=1)
    nt.gradgradcheck(op, xs)


@settings(max_examples=5)
@given(st.floats(-3, 3))
def test_nondifferentiable_points_give_finite_gradients(v):
    x = nb.tensor([v, 0.0], dtype="float64", requires_grad=True)
    for op in (nb.relu, nb.abs, nb.leaky_relu):
        (g,) = nb.grad(op(x), [x], nb.ones_like(x))
        assert np.all(np.isfinite(g.numpy()))


def test_maximum_splits_ties_like_pytorch():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = nb.tensor([1.0, 3.0], requires_grad=True)
    gx, gy = nb.grad(nb.maximum(x, y), [x, y], nb.ones_like(x))
    assert gx.numpy().tolist() == [0.5, 0.0] and gy.numpy().tolist() == [0.5, 1.0]


@pytest.mark.parametrize("n", [1, 2, 4])
@given(data=st.data())
def test_add_n_matches_numpy(n, data):
    shapes = data.draw(nt.broadcastable_shapes(n))
    arrays = [data.draw(nt.arrays(np.float64, s)) for s in shapes]
    out = nb.add_n(*[nb.from_numpy(a) for a in arrays])
    expected = np.broadcast_arrays(*arrays)
    nt.assert_close(out, np.sum(expected, axis=0) if n > 1 else arrays[0].copy())


@settings(max_examples=60, deadline=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
    contiguous=st.booleans(),
)
def test_broadcast_view_is_numpys_broadcast_to(shapes, contiguous):
    a_shape, _ = shapes.input_shapes
    a = np.arange(int(np.prod(a_shape)), dtype=np.float32).reshape(a_shape)
    if not contiguous and a.ndim:
        a = np.repeat(a, 2, axis=-1)[..., ::2]  # (a strided view: numpy's path)
    got = broadcast_view(a, shapes.result_shape)
    np.testing.assert_array_equal(got, np.broadcast_to(a, shapes.result_shape))
    assert got.shape == shapes.result_shape and not got.flags.writeable
    if a.ndim and a.shape[-1] > 1:
        with pytest.raises(ValueError):  # a shape that does not broadcast
            broadcast_view(a, a.shape[:-1] + (a.shape[-1] + 1,))
