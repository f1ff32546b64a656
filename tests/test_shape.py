"""Shape ops: forward against the numpy references for every dtype (shape and dtype equal the
spec first, then values), unknown-dim specs that generalise the run-time ones, float64
gradient checks (first and second order), views sharing version counters, typed errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY, Spec

# ---------------------------------------------------------------- the forward harness


def check_forward(op, arrays, attrs):
    """Outputs' shapes and dtypes equal the spec's, then the values equal the reference's."""
    out = op(*[nb.from_numpy(a) for a in arrays], **attrs)
    outs = out if isinstance(out, tuple) else (out,)
    specs = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))
    assert [(o.shape, o.dtype) for o in outs] == [(s.shape, s.dtype) for s in specs]
    expected = op.ref(*arrays, **attrs)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    assert len(expected) == len(outs)
    for o, e in zip(outs, expected, strict=True):
        nt.assert_close(o, np.asarray(e).astype(o.dtype), msg=f"{op.name} {attrs}")
    return outs


def check_unknown_dims(op, arrays, attrs, hide):
    """The spec on inputs whose dims in `hide` are unknown (-1) generalises the real one:
    each output dim is either -1 or the run-time dim (or the rule refuses with ShapeError)."""
    real = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))
    masked = [
        Spec(tuple(-1 if (i, d) in hide else n for d, n in enumerate(a.shape)), a.dtype)
        for i, a in enumerate(arrays)
    ]
    try:
        guess = op.infer(masked, op.check_attrs(attrs))
    except nb.ShapeError:
        return
    assert len(guess) == len(real)
    for g, r in zip(guess, real, strict=True):
        assert g.dtype == r.dtype and len(g.shape) == len(r.shape)
        assert all(a in (-1, b) for a, b in zip(g.shape, r.shape, strict=True)), (g, r)


def _dtype_cases(ops):
    return [
        pytest.param(REGISTRY[name], d, id=f"{name}-{dt.SHORT[d]}")
        for name in ops
        for d in REGISTRY[name].dtypes
    ]


# ---------------------------------------------------------------- strategies per op


def _reshape_targets(shape):
    size = int(np.prod(shape, dtype=np.int64))
    out = [(size,), tuple(reversed(shape)), (1,) + tuple(shape) + (1,)]
    if size:
        out += [(-1,), (1, -1), tuple(shape[:1]) + (-1,)]
    if size % 2 == 0 and size:
        out += [(2, -1), (size // 2, 2)]
    return out


@st.composite
def reshape_case(draw, dtype):
    shape = draw(nt.shapes())
    target = draw(st.sampled_from(_reshape_targets(shape)))
    return [draw(nt.arrays(dtype, shape))], {"shape": target}


@st.composite
def reshape_like_case(draw, dtype):
    (x,), attrs = draw(reshape_case(dtype))
    like_shape = np.empty(x.shape).reshape(attrs["shape"]).shape
    return [x, np.zeros(like_shape, dtype)], {}


@st.composite
def transpose_case(draw, dtype):
    shape = draw(nt.shapes())
    n = max(len(shape), 1)
    axes = st.integers(-n, n - 1)
    return [draw(nt.arrays(dtype, shape))], {"axis0": draw(axes), "axis1": draw(axes)}


@st.composite
def permute_case(draw, dtype):
    shape = draw(nt.shapes())
    axes = draw(st.permutations(range(len(shape))))
    if axes and draw(st.booleans()):
        axes = [a - len(shape) for a in axes]  # negative axes
    return [draw(nt.arrays(dtype, shape))], {"axes": tuple(axes)}


@st.composite
def broadcast_to_case(draw, dtype):
    shape = draw(nt.shapes(max_side=3))
    target = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    for n in shape:
        target.append(draw(st.sampled_from([n, -1] + ([0, 2, 3] if n == 1 else []))))
    return [draw(nt.arrays(dtype, shape))], {"shape": tuple(target)}


@st.composite
def squeeze_case(draw, dtype):
    shape = draw(nt.shapes(max_side=2))
    ones = [i for i, n in enumerate(shape) if n == 1]
    some = st.lists(st.sampled_from(ones), unique=True) if ones else st.just([])
    axis = draw(st.one_of(st.none(), some))
    if axis and draw(st.booleans()):
        axis = [a - len(shape) for a in axis]
    return [draw(nt.arrays(dtype, shape))], {"axis": None if axis is None else tuple(axis)}


@st.composite
def unsqueeze_case(draw, dtype):
    shape = draw(nt.shapes())
    k = draw(st.integers(1, 2))
    ndim = len(shape) + k
    axis = draw(st.lists(st.integers(0, ndim - 1), min_size=k, max_size=k, unique=True))
    if draw(st.booleans()):
        axis = [a - ndim for a in axis]
    return [draw(nt.arrays(dtype, shape))], {"axis": tuple(axis)}


@st.composite
def flatten_case(draw, dtype):
    shape = draw(nt.shapes())
    n = max(len(shape), 1)
    start = draw(st.integers(0, n - 1))
    end = draw(st.integers(start, n - 1))
    if draw(st.booleans()):
        end -= n
    return [draw(nt.arrays(dtype, shape))], {"start_axis": start, "end_axis": end}


@st.composite
def concat_case(draw, dtype):
    shape = draw(nt.shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    arrays = []
    for _ in range(draw(st.integers(1, 3))):
        s = list(shape)
        s[axis] = draw(st.integers(0, 3))
        arrays.append(draw(nt.arrays(dtype, tuple(s))))
    return arrays, {"axis": axis}


@st.composite
def stack_case(draw, dtype):
    shape = draw(nt.shapes())
    axis = draw(st.integers(-len(shape) - 1, len(shape)))
    arrays = [draw(nt.arrays(dtype, shape)) for _ in range(draw(st.integers(1, 3)))]
    return arrays, {"axis": axis}


def _partition(draw, n):
    """Piece lengths (some maybe 0) that sum to n."""
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=3)))
    return [b - a for a, b in zip([0] + cuts, cuts + [n], strict=True)]


@st.composite
def split_case(draw, dtype):
    shape = draw(nt.shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if draw(st.booleans()):
        attrs = {"split_size": draw(st.integers(1, 5)), "axis": axis}
    else:
        attrs = {"sizes": tuple(_partition(draw, shape[axis])), "axis": axis}
    return [draw(nt.arrays(dtype, shape))], attrs


@st.composite
def split_like_case(draw, dtype):
    shape = draw(nt.shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    likes = []
    for n in _partition(draw, shape[axis]):
        s = list(shape)
        s[axis] = n
        likes.append(np.zeros(s, dtype))
    return [draw(nt.arrays(dtype, shape))] + likes, {"axis": axis}


@st.composite
def pad_case(draw, dtype):
    shape = draw(nt.shapes(max_side=3))
    widths = tuple(draw(st.integers(0, 2)) for _ in range(2 * len(shape)))
    value = draw(st.sampled_from([0, 1, 2.5] if dtype.kind == "f" else [0, 1]))
    return [draw(nt.arrays(dtype, shape))], {"pad_width": widths, "value": value}


@st.composite
def flip_case(draw, dtype):
    shape = draw(nt.shapes())
    n = len(shape)
    axis = draw(st.one_of(st.none(), st.lists(st.integers(0, max(n - 1, 0)), unique=True)))
    if n == 0 and axis:
        axis = [0]
    return [draw(nt.arrays(dtype, shape))], {"axis": None if axis is None else tuple(axis)}


@st.composite
def tile_case(draw, dtype):
    shape = draw(nt.shapes(max_side=3))
    reps = tuple(draw(st.lists(st.integers(0, 3), max_size=4)))
    return [draw(nt.arrays(dtype, shape))], {"reps": reps}


@st.composite
def repeat_case(draw, dtype):
    shape = draw(nt.shapes(max_side=3))
    n = max(len(shape), 1)
    axis = draw(st.one_of(st.none(), st.integers(-n, n - 1)))
    return [draw(nt.arrays(dtype, shape))], {"repeats": draw(st.integers(0, 3)), "axis": axis}


CASES = {
    "reshape": reshape_case,
    "reshape_like": reshape_like_case,
    "transpose": transpose_case,
    "permute": permute_case,
    "broadcast_to": broadcast_to_case,
    "squeeze": squeeze_case,
    "unsqueeze": unsqueeze_case,
    "flatten": flatten_case,
    "concat": concat_case,
    "stack": stack_case,
    "split": split_case,
    "split_like": split_like_case,
    "pad": pad_case,
    "flip": flip_case,
    "tile": tile_case,
    "repeat": repeat_case,
}


@pytest.mark.parametrize("op,dtype", _dtype_cases(CASES))
@given(data=st.data())
def test_forward_matches_numpy(op, dtype, data):
    arrays, attrs = data.draw(CASES[op.name](dtype))
    check_forward(op, arrays, attrs)
    dims = [(i, d) for i, a in enumerate(arrays) for d in range(a.ndim)]
    hide = data.draw(st.sets(st.sampled_from(dims))) if dims else set()
    check_unknown_dims(op, arrays, attrs, hide)


def test_public_functions_take_numpy_and_pytorch_style_arguments():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nb.from_numpy(a)
    assert x.reshape(4, 6).shape == nb.reshape(x, (4, 6)).shape == (4, 6)
    assert x.permute(2, 0, 1).shape == nb.permute(x, [2, 0, 1]).shape == (4, 2, 3)
    assert x.T.shape == (4, 3, 2)
    assert x.transpose(0, 2).shape == (4, 3, 2)
    assert x.broadcast_to(5, 2, 3, 4).shape == (5, 2, 3, 4)
    assert nb.concat([x, x], axis=1).shape == nb.concat(x, x, axis=1).shape == (2, 6, 4)
    assert nb.stack([x, x]).shape == (2, 2, 3, 4)
    assert x.pad(((1, 1), (0, 0), (0, 2))).shape == x.pad((1, 1, 0, 0, 0, 2)).shape
    assert x.tile(2, 1).shape == (2, 6, 4)
    assert x.repeat(2, axis=1).shape == (2, 6, 4)
    assert x.flatten(1).shape == (2, 12)
    assert x.unsqueeze(0).squeeze(0).shape == (2, 3, 4)


def test_split_follows_torch_split():
    x = nb.from_numpy(np.arange(10.0))
    assert [p.shape[0] for p in x.split(4)] == [4, 4, 2]
    assert [p.shape[0] for p in x.split([3, 0, 7])] == [3, 0, 7]
    (one,) = x.split(10)  # always a tuple, even for one piece
    assert one.shape == (10,)
    (empty,) = nb.split(nb.zeros(0), 3)  # an empty axis gives one empty piece (torch)
    assert empty.shape == (0,)


def test_concat_and_stack_promote_dtypes():
    a = nb.tensor([1, 2], dtype="int32")
    b = nb.tensor([0.5], dtype="float16")
    c = nb.concat(a, b)
    assert c.dtype == np.float16 and c.numpy().tolist() == [1.0, 2.0, 0.5]
    s = nb.stack(a, nb.tensor([1.5, 2.5], dtype="float64"))
    assert s.dtype == np.float64 and s.shape == (2, 2)


def test_specs_with_an_unknown_batch_dim():
    f32 = np.dtype(np.float32)
    x = Spec((-1, 3, 4), f32)
    (out,) = REGISTRY["reshape"].infer([x], {"shape": (-1, 12)})
    assert out.shape == (-1, 12)
    (out,) = REGISTRY["flatten"].infer([x], {"start_axis": 1, "end_axis": -1})
    assert out.shape == (-1, 12)
    (out,) = REGISTRY["concat"].infer([x, Spec((2, 3, 4), f32)], {"axis": 0})
    assert out.shape == (-1, 3, 4)
    (out,) = REGISTRY["reshape_like"].infer([Spec((-1, 12), f32), Spec((-1, -1, 4), f32)], {})
    assert out.shape == (-1, -1, 4)
    with pytest.raises(nb.ShapeError, match="ambiguous"):
        REGISTRY["squeeze"].infer([x], {"axis": None})
    with pytest.raises(nb.ShapeError, match="unknown"):
        REGISTRY["split"].infer([x], {"split_size": 2, "sizes": None, "axis": 0})


# ---------------------------------------------------------------- views and version counters

VIEWS = {
    "reshape": lambda x: x.reshape(3, 2),
    "transpose": lambda x: x.transpose(0, 1),
    "permute": lambda x: x.permute(1, 0),
    "squeeze": lambda x: x.unsqueeze(0).squeeze(0),
    "flatten": lambda x: x.flatten(),
    "flip": lambda x: x.flip(1),
    "split": lambda x: x.split(1, axis=0)[1],
    "slice": lambda x: x[1:, ::2],
    "view of a view": lambda x: x.reshape(3, 2).permute(1, 0)[0],
}


@pytest.mark.parametrize("name", VIEWS)
def test_writing_to_a_view_changes_the_base_and_bumps_the_shared_version(name):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = nb.tensor(a)
    v = VIEWS[name](x)
    before = x.numpy().copy()
    assert v.version == x.version == 0
    with nb.no_grad():
        nb.add_(v, 1)
    assert x.version == v.version == 1
    assert not np.array_equal(x.numpy(), before)  # the write went through to the base
    assert np.shares_memory(v.numpy(), x.numpy())


def test_backward_through_a_view_whose_base_changed_raises():
    x = nb.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y.reshape(3, 1)
    z = v * v  # saves v
    with nb.no_grad():
        nb.add_(y, 1)  # same buffer and version counter as v
    with pytest.raises(nb.GradientError, match="modified in place"):
        nb.grad(z, [x], nb.ones_like(z))


def test_broadcast_to_is_a_read_only_view():
    x = nb.tensor([1.0, 2.0])
    y = nb.broadcast_to(x, (3, 2))
    assert np.shares_memory(y.numpy(), x.numpy()) and not y.numpy().flags.writeable


# ---------------------------------------------------------------- gradients


def _f64(*shape, seed=0):
    rng = np.random.default_rng(seed + len(shape))
    return nb.tensor(rng.standard_normal(shape), dtype="float64", requires_grad=True)


GRAD_CASES = {
    "reshape": (lambda x: nb.reshape(x, 4, -1), [(2, 3, 4)]),
    "reshape_like": (lambda x, y: nb.reshape_like(x, y), [(2, 3), (3, 2)]),
    "transpose": (lambda x: nb.transpose(x, 0, -1), [(2, 3, 4)]),
    "permute": (lambda x: nb.permute(x, 2, 0, 1), [(2, 3, 4)]),
    "broadcast_to": (lambda x: nb.broadcast_to(x, (2, 3, 4)), [(3, 1)]),
    "squeeze": (lambda x: nb.squeeze(x), [(1, 3, 1)]),
    "unsqueeze": (lambda x: nb.unsqueeze(x, (0, -1)), [(3,)]),
    "flatten": (lambda x: nb.flatten(x, 1), [(2, 3, 4)]),
    "concat": (lambda a, b, c: nb.concat(a, b, c, axis=1), [(2, 3), (2, 1), (2, 2)]),
    "stack": (lambda a, b: nb.stack(a, b, axis=1), [(2, 3), (2, 3)]),
    "split": (lambda x: nb.split(x, 2, axis=1), [(2, 5)]),
    "split_sizes": (lambda x: nb.split(x, (1, 0, 3), axis=-1), [(2, 4)]),
    "split_like": (lambda x, a, b: nb.split_like(x, a, b, axis=0), [(5, 2), (2, 2), (3, 2)]),
    "pad": (lambda x: nb.pad(x, (1, 0, 2, 3), value=1.5), [(2, 3)]),
    "flip": (lambda x: nb.flip(x, (0, 1)), [(2, 3)]),
    "tile": (lambda x: nb.tile(x, 2, 1, 3), [(2, 3)]),
    "repeat": (lambda x: nb.repeat(x, 3, axis=1), [(2, 3)]),
    "repeat_flat": (lambda x: nb.repeat(x, 2), [(2, 3)]),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradcheck(name):
    fn, shapes = GRAD_CASES[name]
    nt.gradcheck(fn, [_f64(*s, seed=i) for i, s in enumerate(shapes)])


def test_every_differentiable_shape_op_has_a_gradient_check():
    from nbflow.ops import shape

    names = {op.name for op in REGISTRY.values() if op.kernels["cpu"].__module__ == shape.__name__}
    assert names <= {n.removesuffix("_sizes").removesuffix("_flat") for n in GRAD_CASES}


# linear ops have a zero second derivative; squaring the output makes the check see the rule
SECOND_ORDER = ["reshape", "permute", "concat", "stack", "split", "tile", "repeat", "pad"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    fn, shapes = GRAD_CASES[name]

    def squared(*xs):
        out = fn(*xs)
        return tuple(o * o for o in out) if isinstance(out, tuple) else out * out

    nt.gradgradcheck(squared, [_f64(*s, seed=i) for i, s in enumerate(shapes)])


# ---------------------------------------------------------------- errors


def test_reshape_to_an_incompatible_size_names_op_and_shapes():
    x = nb.zeros(2, 3)
    with pytest.raises(nb.ShapeError) as e:
        x.reshape(4, 2)
    assert isinstance(e.value, ValueError)
    assert "reshape(x: f32[2,3])" in str(e.value) and "(4, 2)" in str(e.value)
    with pytest.raises(nb.ShapeError, match="more than one -1"):
        x.reshape(-1, -1)
    with pytest.raises(nb.ShapeError, match="cannot reshape"):
        nb.zeros(0, 3).reshape(0, -1)


def test_concat_of_mismatched_shapes_names_the_arguments():
    with pytest.raises(nb.ShapeError) as e:
        nb.concat(nb.zeros(2, 3), nb.zeros(2, 4), nb.zeros(3, 3), axis=0)
    msg = str(e.value)
    assert "concat(xs0: f32[2,3], xs1: f32[2,4], xs2: f32[3,3])" in msg and "xs1" in msg
    with pytest.raises(nb.ShapeError, match="dims"):
        nb.concat(nb.zeros(2, 3), nb.zeros(3))
    with pytest.raises(nb.ShapeError, match="at least one"):
        nb.concat()
    with pytest.raises(nb.ShapeError, match="0-d"):
        nb.concat(nb.zeros(()), nb.zeros(()))
    with pytest.raises(nb.ShapeError, match="stack"):
        nb.stack(nb.zeros(2), nb.zeros(3))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.transpose(0, 3),
        lambda x: x.permute(0, 1),
        lambda x: x.permute(0, 0, 1),
        lambda x: x.unsqueeze(4),
        lambda x: x.flatten(2, 1),
        lambda x: nb.concat(x, x, axis=3),
        lambda x: nb.stack(x, x, axis=-5),
        lambda x: x.split(2, axis=3),
        lambda x: x.split((1, 2)),
        lambda x: x.flip(3),
        lambda x: x.repeat(2, axis=-4),
        lambda x: x.broadcast_to(3, 2),
        lambda x: x.broadcast_to(2, 5, 4),
        lambda x: x.pad((1, 1)),
        lambda x: x.pad((1, -1, 0, 0, 0, 0)),
        lambda x: x.tile(-1),
    ],
)
def test_bad_axes_and_shapes_raise_shape_errors(call):
    x = nb.zeros(2, 3, 4)
    with pytest.raises(nb.ShapeError):
        call(x)


def test_bad_attrs_raise_attr_errors():
    x = nb.zeros(4)
    with pytest.raises(nb.AttrError):
        x.split(0)
    with pytest.raises(nb.AttrError):
        x.reshape(2.5)
    with pytest.raises(nb.AttrError):
        nb.pad(x, (1, 1), mode="reflect")
