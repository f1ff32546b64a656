"""Indexing: x[key] and x[key] = value against numpy (basic and advanced keys, masks),
take_along_axis/gather, index_select, scatter_add and index_put; specs first, then values;
gradients; views and version counters; bounds checked before any kernel runs."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY, Spec
from nbflow.ops.index import _index_items


def check_forward(op, arrays, attrs):
    """The output's shape and dtype equal the spec's, then the values equal the reference's."""
    out = op(*[nb.from_numpy(a) for a in arrays], **attrs)
    (spec,) = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    nt.assert_close(out, np.asarray(op.ref(*arrays, **attrs)).astype(out.dtype))
    return out


def check_unknown_dims(op, arrays, attrs, hide):
    """The spec with the dims in `hide` unknown (-1) generalises the run-time spec."""
    attrs = op.check_attrs(attrs)
    (real,) = op.infer([Spec(a.shape, a.dtype) for a in arrays], attrs)
    masked = [
        Spec(tuple(-1 if (i, d) in hide else n for d, n in enumerate(a.shape)), a.dtype)
        for i, a in enumerate(arrays)
    ]
    (guess,) = op.infer(masked, attrs)
    assert guess.dtype == real.dtype and len(guess.shape) == len(real.shape)
    assert all(a in (-1, b) for a, b in zip(guess.shape, real.shape, strict=True)), (guess, real)


def _hide(data, arrays):
    dims = [(i, d) for i, a in enumerate(arrays) for d in range(a.ndim)]
    return data.draw(st.sets(st.sampled_from(dims))) if dims else set()


def _dtype_cases(ops):
    return [
        pytest.param(REGISTRY[name], d, id=f"{name}-{dt.SHORT[d]}")
        for name in ops
        for d in REGISTRY[name].dtypes
    ]


INDEX_DTYPES = st.sampled_from([np.int32, np.int64])


def index_arrays(draw, shape, n):
    """Integer indices valid for an axis of size n (n == 0 only with an empty shape)."""
    return draw(nt.arrays(draw(INDEX_DTYPES), tuple(shape), -n, max(n - 1, 0)))


# ---------------------------------------------------------------- key strategies


@st.composite
def slices(draw, n):
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    step = st.sampled_from([None, 1, 2, 3, -1, -2])
    return slice(draw(bound), draw(bound), draw(step))


@st.composite
def keys(draw, shape, arrays=False):
    """A numpy key for `shape`: ints, slices, None, an Ellipsis and, when `arrays`, one to
    three integer index arrays (numpy arrays, lists or tensors) of broadcastable shapes."""
    ndim = len(shape)
    used = draw(st.integers(1 if arrays else 0, ndim)) if ndim else 0
    ellipsis = draw(st.one_of(st.none(), st.integers(0, used)))
    axes = list(range(used))
    if ellipsis is not None:  # items after the ellipsis index the last axes
        axes = axes[:ellipsis] + [ndim - used + i for i in axes[ellipsis:]]
    sized = [i for i, a in enumerate(axes) if shape[a] > 0]
    chosen = []
    if arrays and sized:
        chosen = draw(st.lists(st.sampled_from(sized), min_size=1, max_size=3, unique=True))
    shapes = draw(nt.broadcastable_shapes(len(chosen), max_dims=2, max_side=3)) if chosen else []
    items = []
    for i, a in enumerate(axes):
        n = shape[a]
        if i in chosen:
            idx = draw(nt.arrays(draw(INDEX_DTYPES), shapes[chosen.index(i)], -n, n - 1))
            items.append(draw(st.sampled_from([idx, idx.tolist(), nb.from_numpy(idx)])))
        elif n and draw(st.booleans()):
            items.append(draw(st.integers(-n, n - 1)))
        else:
            items.append(draw(slices(n)))
    if ellipsis is not None:
        items.insert(ellipsis, Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)


def _as_numpy(key):
    return tuple(k.numpy() if isinstance(k, nb.Tensor) else k for k in key)


def _op_inputs(x, key):
    """(op, arrays, attrs) that x[key] runs."""
    items, arrays = _index_items(key, x.shape)
    arrays = [np.asarray(a.numpy() if isinstance(a, nb.Tensor) else a) for a in arrays]
    op = REGISTRY["index" if arrays else "slice"]
    return op, [x] + arrays, {"key": items}


# ---------------------------------------------------------------- getitem


@pytest.mark.parametrize("dtype", dt.ALL, ids=dt.SHORT.get)
@pytest.mark.parametrize("advanced", [False, True], ids=["basic", "arrays"])
@given(data=st.data())
def test_getitem_matches_numpy(dtype, advanced, data):
    a = data.draw(nt.arrays(dtype, data.draw(nt.shapes(min_dims=int(advanced)))))
    key = data.draw(keys(a.shape, arrays=advanced))
    try:
        expected = a[_as_numpy(key)]
    except IndexError:  # index arrays that do not broadcast together: a typed error here too
        with pytest.raises(nb.ShapeError, match="do not broadcast"):
            nb.from_numpy(a)[key]
        return
    op, arrays, attrs = _op_inputs(a, key)
    check_forward(op, arrays, attrs)
    check_unknown_dims(op, arrays, attrs, _hide(data, arrays))
    out = nb.from_numpy(a)[key]
    assert (out.shape, out.dtype) == (expected.shape, expected.dtype)
    np.testing.assert_array_equal(out.numpy(), expected)
    if not advanced:  # a view of the same memory
        assert out.size == 0 or np.shares_memory(out.numpy(), a)


@pytest.mark.parametrize(
    "key",
    [
        (0, slice(None), [0, 1]),  # the int counts as an advanced index: dims go first
        (slice(None), [0], Ellipsis, [1]),  # an (empty) ellipsis between arrays: first
        (slice(None), [0], None, [1]),
        (slice(None), 1, [[1], [0]]),  # adjacent through an int: in place
        ([[0, 1]], Ellipsis),
        ([],),
        (Ellipsis, 0, 1, 2),  # all ints: a 0-d view
    ],
    ids=str,
)
def test_getitem_places_advanced_dims_like_numpy(key):
    a = np.arange(2 * 3 * 4.0).reshape(2, 3, 4)
    out = nb.tensor(a)[key]
    np.testing.assert_array_equal(out.numpy(), a[key])
    assert out.shape == a[key].shape


def test_boolean_masks():
    a = np.arange(12.0).reshape(3, 4) - 5
    x = nb.tensor(a)
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])
    np.testing.assert_array_equal(x[:, [True, False, True, False]].numpy(), a[:, [0, 2]])
    np.testing.assert_array_equal(x[..., np.array([1, 0, 0, 1], bool)].numpy(), a[..., [0, 3]])
    x[x < 0] = 0
    np.testing.assert_array_equal(x.numpy(), np.where(a < 0, 0, a))


def test_getitem_of_a_basic_key_is_a_view_sharing_the_version_counter():
    x = nb.tensor(np.zeros((4, 3), np.float32))
    v = x[1:3, ::-2]
    with nb.no_grad():
        nb.add_(v, 1)
    assert x.version == v.version == 1
    assert x.numpy()[1:3, ::-2].tolist() == [[1, 1], [1, 1]] and x.numpy().sum() == 4
    c = x[[1, 2]]  # an index array gathers a copy
    with nb.no_grad():
        nb.add_(c, 1)
    assert x.numpy().sum() == 4 and x.version == 1


# ---------------------------------------------------------------- setitem and index_put


@st.composite
def put_case(draw, dtype, advanced):
    a = draw(nt.arrays(dtype, draw(nt.shapes(min_dims=int(advanced)))))
    key = draw(keys(a.shape, arrays=advanced))
    try:
        target = a[_as_numpy(key)].shape
    except IndexError:  # index arrays that do not broadcast: test_getitem checks the error
        assume(False)
    vshape = list(target[draw(st.integers(0, len(target))) :])  # drop leading dims
    vshape = [1 if draw(st.booleans()) else n for n in vshape]  # and broadcast others
    if target and draw(st.booleans()):
        vshape = [1] + vshape  # numpy drops the value's leading 1s
    value = draw(nt.arrays(draw(st.sampled_from([dtype, dt.float64, dt.int32])), tuple(vshape)))
    return a, key, value


@pytest.mark.parametrize("dtype", dt.ALL, ids=dt.SHORT.get)
@pytest.mark.parametrize("advanced", [False, True], ids=["basic", "arrays"])
@given(data=st.data())
def test_setitem_matches_numpy(dtype, advanced, data):
    a, key, value = data.draw(put_case(dtype, advanced))
    expected = a.copy()
    expected[_as_numpy(key)] = value
    x = nb.from_numpy(a)  # writes through a's own (maybe non-contiguous) layout
    x[key] = nb.from_numpy(value)
    assert (x.shape, x.dtype) == (a.shape, a.dtype)
    nt.assert_close(x, expected)
    assert x.version == 1


@pytest.mark.parametrize("op,dtype", _dtype_cases(["index_put"]))
@given(data=st.data())
def test_index_put_matches_reference(op, dtype, data):
    a, key, value = data.draw(put_case(dtype, advanced=data.draw(st.booleans())))
    _, arrays, attrs = _op_inputs(a, key)
    accumulate = data.draw(st.booleans())
    check_forward(op, [a, value] + arrays[1:], {**attrs, "accumulate": accumulate})


def test_setitem_with_a_slice_and_an_index_array():
    a = np.arange(20.0).reshape(5, 4)
    idx = np.array([3, 0])
    x = nb.tensor(a)
    x[1:3, idx] = nb.tensor([[-1.0], [-2.0]])
    expected = a.copy()
    expected[1:3, idx] = [[-1.0], [-2.0]]
    np.testing.assert_array_equal(x.numpy(), expected)


def test_setitem_into_a_non_contiguous_tensor():
    a = np.arange(24.0).reshape(4, 6)
    t = a.T.copy().T  # Fortran order: rows are not contiguous
    x = nb.from_numpy(t)
    x[1:3, [0, 5, 2]] = nb.tensor([[-1.0, -2.0, -3.0]], dtype="float64")
    expected = a.copy()
    expected[1:3, [0, 5, 2]] = [[-1.0, -2.0, -3.0]]
    np.testing.assert_array_equal(t, expected)
    x[[[3], [0]], ::-2] = 7.0
    expected[[[3], [0]], ::-2] = 7.0
    x[[0, 3], [1, 4]] = -5.0  # the two indexed axes cannot merge into one: a copy, put back
    expected[[0, 3], [1, 4]] = -5.0
    np.testing.assert_array_equal(t, expected)


def test_setitem_semantics_follow_numpy():
    x = nb.tensor(np.arange(6.0))
    x[1:] = x[:-1]  # overlapping memory: reads before writing
    np.testing.assert_array_equal(x.numpy(), [0, 0, 1, 2, 3, 4])
    x[[0, 0, 1]] += 1  # a gather, an add, a put: repeated indices count once (numpy)
    np.testing.assert_array_equal(x.numpy(), [1, 1, 1, 2, 3, 4])
    i = nb.tensor([1, 2, 3], dtype="int32")
    i[0] = 2.7  # cast to the target's dtype
    i[-1] = True
    assert i.numpy().tolist() == [2, 2, 1] and i.dtype == np.int32
    h = nb.tensor([1.0, 2.0], dtype="float16")
    h[1] = 0.5
    assert h.dtype == np.float16 and h.numpy().tolist() == [1.0, 0.5]
    i = nb.tensor([0, 2, 0, 0])
    acc = nb.index_put(nb.zeros(3), (i,), nb.ones(4), accumulate=True)  # repeats add up
    assert acc.numpy().tolist() == [3.0, 0.0, 1.0]
    z = nb.zeros(3)
    assert nb.index_put_(z, i, 2.0) is z and z.numpy().tolist() == [2.0, 0.0, 2.0]


def test_setitem_gradient_flows_to_the_tensor_and_the_value():
    rng = np.random.default_rng(0)
    a = nb.tensor(rng.standard_normal((5, 4)), dtype="float64", requires_grad=True)
    v = nb.tensor(rng.standard_normal((2, 1)), dtype="float64", requires_grad=True)
    w = rng.standard_normal((5, 4))
    idx = [3, 0]
    x = a * 1
    x[1:3, idx] = v
    ga, gv = nb.grad(x * nb.tensor(w), [a, v], nb.ones_like(x))
    expected = w.copy()
    expected[1:3, idx] = 0
    np.testing.assert_allclose(ga.numpy(), expected)
    np.testing.assert_allclose(gv.numpy(), w[1:3][:, idx].sum(axis=1, keepdims=True))

    def f(a, v):
        x = a * 1
        x[1:3, idx] = v
        return x

    nt.gradcheck(f, [a, v])


def test_setitem_on_a_leaf_that_requires_grad_raises():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(nb.GradientError, match="leaf"):
        x[0] = 3.0
    with nb.no_grad():
        x[0] = 3.0
    assert x.numpy().tolist() == [3.0, 2.0]


def test_backward_after_setitem_on_a_saved_tensor_raises():
    x = nb.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y * y  # saves y
    y[0] = 5.0
    with pytest.raises(nb.GradientError, match="modified in place"):
        nb.grad(z, [x], nb.ones_like(z))


# ---------------------------------------------------------------- take_along_axis, gather,
# index_select, scatter_add


@st.composite
def along_case(draw, dtype):
    shape = draw(nt.shapes(min_dims=1, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    ishape = [draw(st.sampled_from([s, 1])) for s in shape]
    ishape[axis] = draw(st.integers(0, 3)) if n else 0
    xshape = [
        1 if (d != axis % len(shape) and draw(st.booleans())) else s for d, s in enumerate(shape)
    ]
    x = draw(nt.arrays(dtype, tuple(xshape)))
    idx = index_arrays(draw, ishape, n)
    return [x, idx], {"axis": axis}


@st.composite
def select_case(draw, dtype):
    shape = draw(nt.shapes(min_dims=1))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    ishape = draw(nt.shapes(max_dims=2, max_side=3)) if n else (0,)
    idx = index_arrays(draw, ishape, n)
    return [draw(nt.arrays(dtype, shape)), idx], {"axis": axis}


@st.composite
def scatter_case(draw, dtype):
    shape = draw(nt.shapes(min_dims=1, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    a = axis % len(shape)
    n = shape[a]
    ishape = [draw(st.integers(0, s)) for s in shape]
    ishape[a] = draw(st.integers(0, 4)) if n else 0
    sshape = [s + draw(st.integers(0, 1)) for s in ishape]
    idx = index_arrays(draw, ishape, n)
    src = draw(nt.arrays(dtype, tuple(sshape)))
    return [draw(nt.arrays(dtype, shape)), idx, src], {"axis": axis}


CASES = {"take_along_axis": along_case, "index_select": select_case, "scatter_add": scatter_case}


@pytest.mark.parametrize("op,dtype", _dtype_cases(CASES))
@given(data=st.data())
def test_forward_matches_numpy(op, dtype, data):
    arrays, attrs = data.draw(CASES[op.name](dtype))
    check_forward(op, arrays, attrs)
    check_unknown_dims(op, arrays, attrs, _hide(data, arrays))


def test_gather_and_take_along_axis_agree_with_numpy_and_torch_argument_order():
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    x = nb.tensor(a)
    expected = np.take_along_axis(a, idx, 1)
    np.testing.assert_array_equal(nb.take_along_axis(x, idx, 1).numpy(), expected)
    np.testing.assert_array_equal(x.gather(1, nb.tensor(idx)).numpy(), expected)
    np.testing.assert_array_equal(x.index_select(0, nb.tensor([2, 0])).numpy(), a[[2, 0]])
    out = nb.zeros(3, 4).scatter_add(1, nb.tensor(idx), nb.ones(3, 2))
    assert out.numpy().tolist() == [[1, 0, 0, 1], [0, 2, 0, 0], [1, 0, 1, 0]]


# ---------------------------------------------------------------- gradients


def _f64(*shape, seed=0):
    rng = np.random.default_rng(seed + 7 * len(shape))
    return nb.tensor(rng.standard_normal(shape), dtype="float64", requires_grad=True)


def _put(x, v, idx, accumulate):
    return nb.index_put(x, (nb.tensor(idx), slice(1, None)), v, accumulate=accumulate)


GRAD_CASES = {
    "basic": (lambda x: x[1:, None, ::-2], [(3, 4)]),
    "int": (lambda x: x[-1, ..., 1], [(2, 3, 4)]),
    "array": (lambda x: x[[0, 0, 2], 1:], [(3, 4)]),
    "arrays_first": (lambda x: x[0, :, [1, 1, 3]], [(2, 3, 4)]),
    "two_arrays": (lambda x: x[[[0], [2]], [1, 1, 3]], [(3, 4)]),
    "mask": (lambda x: x[np.array([True, False, True])], [(3, 2)]),
    "take_along_axis": (lambda x: nb.take_along_axis(x, nb.tensor([[0, 2, 2, -1]]), 1), [(2, 3)]),
    "take_along_axis_broadcast_x": (
        lambda x: nb.take_along_axis(x, nb.tensor([[0], [2]]), 1),
        [(1, 3)],
    ),
    "index_select": (lambda x: nb.index_select(x, 1, nb.tensor([[2, 0], [2, 2]])), [(2, 3)]),
    "scatter_add": (
        lambda x, s: nb.scatter_add(x, 0, nb.tensor([[0, 1], [0, 0]]), s),
        [(2, 3), (3, 3)],
    ),
    # without accumulate a repeated index keeps only its last write: no repeats here
    "index_put": (lambda x, v: _put(x, v, [[0], [2]], False), [(3, 4), (1, 2, 1, 3)]),
    "index_put_accumulate": (lambda x, v: _put(x, v, [[0, 2], [2, 2]], True), [(3, 4), (3,)]),
}


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradcheck(name):
    fn, shapes = GRAD_CASES[name]
    nt.gradcheck(fn, [_f64(*s, seed=i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize("name", ["basic", "array", "two_arrays", "scatter_add", "index_put"])
def test_gradgradcheck(name):
    fn, shapes = GRAD_CASES[name]

    def squared(*xs):  # the ops are linear: square to give them a second derivative
        out = fn(*xs)
        return out * out

    nt.gradgradcheck(squared, [_f64(*s, seed=i) for i, s in enumerate(shapes)])


# ---------------------------------------------------------------- errors


def test_out_of_range_int_raises_index_error_naming_op_axis_index_and_size():
    x = nb.zeros(2, 3)
    with pytest.raises(nb.OutOfRangeError) as e:
        x[:, 3]
    assert isinstance(e.value, IndexError)
    assert "slice(x: f32[2,3])" in str(e.value)
    assert "index 3 is out of range for axis 1 with size 3" in str(e.value)
    with pytest.raises(IndexError, match="index -3 .* axis 0 with size 2"):
        x[-3]
    with pytest.raises(nb.OutOfRangeError, match="too many indices"):
        x[0, 0, 0]


def test_out_of_range_index_arrays_raise_before_any_write():
    x = nb.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(nb.OutOfRangeError, match="index 7 is out of range for axis 1 with size 3"):
        x[:, [0, 7]]
    with pytest.raises(IndexError, match="index -4"):
        x[[0], [-4]]
    with pytest.raises(nb.OutOfRangeError, match="index_put_: index 2 .* axis 0 with size 2"):
        x[[0, 1, 2]] = 1.0
    assert x.numpy().tolist() == [[0, 1, 2], [3, 4, 5]] and x.version == 0
    with pytest.raises(nb.OutOfRangeError, match="take_along_axis: index 3 .* axis 1"):
        nb.take_along_axis(x, nb.tensor([[3]]), 1)
    with pytest.raises(nb.OutOfRangeError, match="index_select: index 2 .* axis 0 with size 2"):
        nb.index_select(x, 0, nb.tensor([2]))
    with pytest.raises(nb.OutOfRangeError, match="scatter_add: index -3 .* axis 0"):
        nb.scatter_add(x, 0, nb.tensor([[-3]]), nb.ones(1, 1, dtype="float64"))
    with pytest.raises(nb.OutOfRangeError, match="mask"):
        x[np.array([True, False, True])]
    with pytest.raises(nb.OutOfRangeError):
        nb.zeros(0)[[0]]


def test_bad_keys_and_index_dtypes():
    x = nb.zeros(2, 3)
    with pytest.raises(nb.DTypeError, match="int32 or int64"):
        x[np.array([0.5])]
    with pytest.raises(nb.AttrError, match="step"):
        x[::0]
    with pytest.raises(nb.AttrError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(nb.ShapeError, match="broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(nb.ShapeError, match="does not fit"):
        x[0] = nb.zeros(2)
    with pytest.raises(nb.DTypeError):
        nb.take_along_axis(x, nb.tensor([[0.0]]), 0)
    with pytest.raises(nb.ShapeError, match="same number of dims"):
        nb.take_along_axis(x, nb.tensor([0]), 0)
    with pytest.raises(nb.ShapeError, match="larger"):
        nb.scatter_add(x, 0, nb.tensor([[0, 0, 0, 0]]), nb.ones(1, 4))
    with pytest.raises(nb.ShapeError, match="out of range"):
        nb.index_select(x, 2, nb.tensor([0]))


@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_in_a_program_whose_index_has_an_unknown_dim(dim):
    """The positions along the other dims are counted when the program runs (a -1 dim gave
    an empty arange: the run raised a ShapeError about shapes it never had)."""
    rng = np.random.default_rng(3)
    order = np.argsort(rng.random((3, 4)), axis=dim)  # (no index repeats: one write each)
    index = order[:2] if dim == 0 else order[:, :2]
    src = rng.standard_normal(index.shape).astype(np.float32)
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        i = nb.static.data("i", [-1, -1], dtype="int64")
        s = nb.static.data("s", [-1, -1])
        y = nb.scatter(x, dim, i, s)
    feed = {"x": np.zeros((3, 4), np.float32), "i": index, "s": src}
    (got,) = nb.Executor().run(main, feed, [y], nb.Scope())
    want = np.zeros((3, 4), np.float32)
    for p in np.ndindex(*index.shape):  # out[..., index[p], ...] = src[p] along dim
        at = list(p)
        at[dim] = index[p]
        want[tuple(at)] = src[p]
    np.testing.assert_array_equal(got, want)
