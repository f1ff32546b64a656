"""nn ops: softmax, log_softmax, one_hot, cross_entropy, mse_loss.

Forward against the numpy references for every dtype (shape and dtype first, then values),
non-contiguous and large inputs, float64 gradient checks (first and second order), typed
errors, and PyTorch parity when torch is installed."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import nbflow as nb
from nbflow import dtypes as dt
from nbflow import testing as nt
from nbflow.core import REGISTRY, Spec

FLOATS = dt.FLOATS
REDUCTIONS = ("mean", "sum", "none")


def _ids(dtypes):
    return [dt.SHORT[d] for d in dtypes]


def check_forward(op, arrays, attrs, rtol=None, atol=None):
    """The result's shape and dtype equal the op's spec (and the reference's), then values."""
    out = op(*[nb.from_numpy(a) for a in arrays], **attrs)
    spec = op.infer([Spec(a.shape, a.dtype) for a in arrays], op.check_attrs(attrs))[0]
    assert (out.shape, out.dtype) == (spec.shape, spec.dtype)
    expected = np.asarray(op.ref(*arrays, **attrs))
    assert (expected.shape, expected.dtype) == (spec.shape, spec.dtype)
    nt.assert_close(out, expected, rtol=rtol, atol=atol, msg=f"{op.name} {attrs}")
    return out


@st.composite
def shape_and_axis(draw, min_side=0):
    shape = draw(nt.shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=4))
    ndim = len(shape)
    axis = draw(st.sampled_from([0, -1])) if ndim == 0 else draw(st.integers(-ndim, ndim - 1))
    return shape, axis


@st.composite
def classification(draw, dtype, max_spatial=2):
    """(logits, labels, ignore_index): logits (C,), (N, C) or (N, C, d1, ...), some labels
    replaced by ignore_index."""
    n_classes = draw(st.integers(1, 5))
    lead = draw(st.sampled_from([(), (draw(st.integers(0, 4)),)]))
    spatial = tuple(draw(st.lists(st.integers(1, 3), max_size=max_spatial))) if lead else ()
    label_shape = lead + spatial
    logits_shape = lead + (n_classes,) + spatial
    logits = draw(nt.arrays(dtype, logits_shape, -4, 4))
    label_dtype = draw(st.sampled_from([dt.int32, dt.int64]))  # (ignore_index -100: signed)
    labels = draw(hnp.arrays(label_dtype, label_shape, elements=st.integers(0, n_classes - 1)))
    ignore_index = draw(st.sampled_from([-100, 0]))
    ignored = draw(hnp.arrays(np.bool_, label_shape))
    labels = np.where(ignored, ignore_index, labels).astype(label_dtype)
    return logits, labels, ignore_index


# ---------------------------------------------------------------- forward


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
@given(data=st.data())
def test_softmax_forward(name, dtype, data):
    shape, axis = data.draw(shape_and_axis())
    x = data.draw(nt.arrays(dtype, shape, -5, 5))
    check_forward(REGISTRY[name], [x], {"axis": axis})


@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
@given(data=st.data())
def test_cross_entropy_forward(dtype, data):
    logits, labels, ignore_index = data.draw(classification(dtype))
    attrs = {
        "reduction": data.draw(st.sampled_from(REDUCTIONS)),
        "ignore_index": ignore_index,
        "label_smoothing": data.draw(st.sampled_from([0.0, 0.2])),
    }
    check_forward(nb.ops.cross_entropy, [logits, labels], attrs)


@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
@given(data=st.data())
def test_mse_loss_forward(dtype, data):
    shape = data.draw(nt.shapes(max_dims=3, min_side=1))
    x = data.draw(nt.arrays(dtype, shape))
    y = data.draw(nt.arrays(dtype, shape))
    check_forward(nb.ops.mse_loss, [x, y], {"reduction": data.draw(st.sampled_from(REDUCTIONS))})


@pytest.mark.parametrize("out_dtype", dt.ALL, ids=_ids(dt.ALL))
@given(data=st.data())
def test_one_hot_forward(out_dtype, data):
    shape = data.draw(nt.shapes(max_dims=2, max_side=3))
    n_classes = data.draw(st.integers(1, 4))
    labels = data.draw(
        hnp.arrays(st.sampled_from(dt.INTS), shape, elements=st.integers(0, n_classes - 1))
    )
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    attrs = {"num_classes": n_classes, "axis": axis, "dtype": out_dtype}
    if data.draw(st.booleans()):
        attrs["ignore_index"] = 0
    check_forward(nb.ops.one_hot, [labels], attrs)


def test_mixed_dtypes_promote():
    x = nb.tensor([[1.0, 2.0]], dtype=nb.float32)
    y = nb.tensor([[0.5, 0.0]], dtype=nb.float64)
    assert nb.mse_loss(x, y).dtype == nb.float64
    assert nb.mse_loss(x.cast(dtype=nb.float16), x).dtype == nb.float32
    logits16 = nb.tensor([[1.0, 2.0, 3.0]], dtype=nb.float16)
    labels32 = nb.tensor([2], dtype=nb.int32)
    out = nb.cross_entropy(logits16, labels32)
    assert (out.shape, out.dtype) == ((), nb.float16)


def test_mse_loss_broadcast_warns_like_pytorch():
    x = np.arange(6, dtype=np.float64).reshape(3, 2)
    y = np.array([1.0, -1.0])
    with pytest.warns(UserWarning, match="differs from input shape"):
        out = nb.mse_loss(nb.tensor(x), nb.tensor(y), reduction="none")
    nt.assert_close(out, (x - y) ** 2)


def test_size_zero_and_scalar_inputs():
    empty = nb.zeros(0, 3)
    assert nb.softmax(empty).shape == (0, 3)
    assert nb.log_softmax(nb.zeros(2, 0), axis=1).shape == (2, 0)
    assert nb.softmax(nb.tensor(3.0)).item() == 1.0
    assert nb.log_softmax(nb.tensor(3.0), axis=0).item() == 0.0
    assert nb.cross_entropy(empty, nb.zeros(0, dtype=nb.int64), reduction="sum").item() == 0
    assert nb.cross_entropy(empty, nb.zeros(0, dtype=nb.int64), reduction="none").shape == (0,)
    assert np.isnan(nb.cross_entropy(empty, nb.zeros(0, dtype=nb.int64)).item())  # as PyTorch
    # unbatched logits (C,) with a 0-d label, the label may be a Python int
    out = nb.cross_entropy(nb.tensor([1.0, 2.0, 3.0]), 2)
    nt.assert_close(out, np.float32(np.log(np.exp([1, 2, 3]).sum()) - 3))


def test_all_targets_ignored_give_nan_mean_and_zero_sum():
    logits = nb.tensor([[1.0, 2.0], [0.5, 0.0]])
    labels = nb.tensor([-100, -100])
    assert np.isnan(nb.cross_entropy(logits, labels).item())
    assert nb.cross_entropy(logits, labels, reduction="sum").item() == 0.0


def test_ignore_index_counts_only_kept_targets():
    logits = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 1.0], [1.0, 1.0, 1.0]])
    labels = np.array([0, 2, 1])
    full = nb.cross_entropy(nb.tensor(logits), nb.tensor(labels), reduction="none").numpy()
    mean = nb.cross_entropy(nb.tensor(logits), nb.tensor(labels), ignore_index=2).item()
    assert mean == pytest.approx((full[0] + full[2]) / 2, rel=1e-12)


# ---------------------------------------------------------------- layouts and large values


@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_non_contiguous_inputs(dtype):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((5, 4, 6)).astype(dtype)
    views = [base.transpose(2, 0, 1), base[:, ::2, ::3], base[::-1]]
    for v in views:
        assert not v.flags.c_contiguous
        for axis in range(-v.ndim, v.ndim):
            check_forward(nb.ops.softmax, [v], {"axis": axis})
            check_forward(nb.ops.log_softmax, [v], {"axis": axis})
        labels = rng.integers(0, v.shape[1], (v.shape[0],) + v.shape[2:])[:, ::-1]
        for reduction in REDUCTIONS:
            check_forward(nb.ops.cross_entropy, [v, labels], {"reduction": reduction})
        check_forward(nb.ops.mse_loss, [v, v[::-1]], {"reduction": "none"})
    # a strided output buffer case: softmax over axis 0 writes through a moved-axis view
    check_forward(nb.ops.softmax, [base], {"axis": 0})


@pytest.mark.parametrize("dtype", FLOATS, ids=_ids(FLOATS))
def test_large_logits_stay_finite(dtype):
    x = np.array([[1e4, 0.0, -1e4], [1e4, 1e4, 9990.0], [-1e4, -1e4, -1e4]], dtype)
    for op in (nb.ops.softmax, nb.ops.log_softmax):
        out = check_forward(op, [x], {"axis": -1})
        assert np.isfinite(out.numpy()).all()
    p = nb.softmax(nb.tensor(x)).numpy().astype(np.float64)
    np.testing.assert_allclose(p[0], [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(p[2], [1 / 3] * 3, rtol=1e-3)
    labels = np.array([2, 0, 1])
    for reduction in REDUCTIONS:
        out = check_forward(nb.ops.cross_entropy, [x, labels], {"reduction": reduction})
        assert np.isfinite(out.numpy()).all()
    assert nb.cross_entropy(nb.tensor(x), nb.tensor(labels), reduction="none").numpy()[0] == (
        pytest.approx(2e4, rel=1e-3)
    )


def test_large_logits_gradient_finite():
    x = nb.tensor([[1e4, 0.0, -1e4], [5.0, 1e4, 1e4]], requires_grad=True)
    nb.cross_entropy(x, nb.tensor([1, 2])).backward()
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), [[0.5, -0.5, 0], [0, 0.25, -0.25]], atol=1e-6)


# ---------------------------------------------------------------- gradients (float64)


def _x(shape, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return nb.tensor(rng.standard_normal(shape) * scale, dtype=nb.float64, requires_grad=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1)])
def test_softmax_gradcheck(name, shape, axis):
    op = REGISTRY[name]
    nt.gradcheck(lambda x: op(x, axis=axis), [_x(shape)])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_gradgradcheck(name):
    op = REGISTRY[name]
    nt.gradgradcheck(lambda x: op(x, axis=1), [_x((2, 3, 4))])


CE_CASES = {
    "2d": ((4, 5), [0, 4, 2, 1]),
    "2d-ignored": ((4, 5), [0, -100, 2, -100]),
    "spatial": ((2, 3, 2, 2), [[[0, 1], [2, -100]], [[2, 2], [1, 0]]]),
    "unbatched": ((4,), 3),
}


@pytest.mark.parametrize("case", list(CE_CASES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_gradcheck(case, reduction, label_smoothing):
    shape, labels = CE_CASES[case]
    labels = nb.tensor(labels)
    nt.gradcheck(
        lambda x: nb.cross_entropy(x, labels, reduction=reduction, label_smoothing=label_smoothing),
        [_x(shape)],
    )


@pytest.mark.parametrize("case", ["2d-ignored", "spatial"])
def test_cross_entropy_gradgradcheck(case):
    shape, labels = CE_CASES[case]
    labels = nb.tensor(labels)
    nt.gradgradcheck(lambda x: nb.cross_entropy(x, labels), [_x(shape)])


def test_cross_entropy_labels_get_no_gradient():
    x = _x((3, 4))
    loss = nb.cross_entropy(x, nb.tensor([0, 1, 2]))
    (g,) = nb.grad(loss, [x])
    assert g.shape == (3, 4) and g.dtype == nb.float64


@pytest.mark.filterwarnings("ignore:mse_loss. target shape")
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3), ())], ids=["same", "scalar-t"])
def test_mse_loss_gradcheck(reduction, shapes):
    nt.gradcheck(
        lambda x, y: nb.mse_loss(x, y, reduction=reduction),
        [_x(shapes[0]), _x(shapes[1], seed=1)],
    )


def test_mse_loss_gradgradcheck():
    nt.gradgradcheck(lambda x, y: nb.mse_loss(x, y), [_x((3, 4)), _x((3, 4), seed=1)])


@pytest.mark.parametrize("dtype", [nb.float16, nb.float32], ids=["f16", "f32"])
def test_low_precision_gradients_match_float64(dtype):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((4, 5))
    labels = nb.tensor([1, 0, -100, 4])
    grads = {}
    for d in (dtype, nb.float64):
        x = nb.tensor(logits, dtype=d, requires_grad=True)
        loss = nb.cross_entropy(nb.log_softmax(x) * 1.5, labels) + nb.mse_loss(
            nb.softmax(x, axis=0), nb.tensor(logits * 0.1, dtype=d)
        )
        loss.backward()
        assert x.grad.dtype == d
        grads[d] = x.grad.numpy().astype(np.float64)
    tol = 1e-2 if dtype == nb.float16 else 1e-5
    np.testing.assert_allclose(grads[dtype], grads[nb.float64], rtol=tol, atol=tol)


# ---------------------------------------------------------------- specs with unknown dims


def test_specs_with_unknown_dims_generalise_run_time():
    ce = nb.ops.cross_entropy
    logits, labels = Spec((-1, 5, -1), dt.float32), Spec((-1, -1), dt.int64)
    for reduction, shape in (("none", (-1, -1)), ("mean", ())):
        (out,) = ce.infer([logits, labels], ce.check_attrs({"reduction": reduction}))
        assert out == Spec(shape, dt.float32)
    (out,) = ce.infer(
        [Spec((4, -1), dt.float16), Spec((-1,), dt.int32)], ce.check_attrs({"reduction": "none"})
    )
    assert out == Spec((4,), dt.float16)
    sm = nb.ops.softmax
    assert sm.infer([Spec((-1, 3), dt.float64)], {"axis": 0}) == (Spec((-1, 3), dt.float64),)
    mse = nb.ops.mse_loss
    (out,) = mse.infer([Spec((-1, 3), dt.float32), Spec((2, 3), dt.float32)], {"reduction": "none"})
    assert out == Spec((2, 3), dt.float32)
    oh = nb.ops.one_hot
    (out,) = oh.infer([Spec((-1, 2), dt.int64)], oh.check_attrs({"num_classes": 7, "axis": 1}))
    assert out == Spec((-1, 7, 2), dt.int64)


# ---------------------------------------------------------------- errors


def test_cross_entropy_label_out_of_range():
    logits = nb.zeros(3, 4)
    for bad in ([0, 4, 1], [0, -1, 1], [-101, 0, 0]):
        with pytest.raises(nb.OutOfRangeError, match=r"cross_entropy.*label") as e:
            nb.cross_entropy(logits, nb.tensor(bad))
        assert isinstance(e.value, IndexError)
    with pytest.raises(IndexError, match=r"position \(1, 0\)"):
        nb.cross_entropy(nb.zeros(2, 3, 1), nb.tensor([[0], [3]]))
    # a non-default ignore_index makes -100 out of range; ignore_index=-1 allows -1
    with pytest.raises(IndexError):
        nb.cross_entropy(logits, nb.tensor([-100, 0, 0]), ignore_index=-1)
    nb.cross_entropy(logits, nb.tensor([-1, 0, 0]), ignore_index=-1)


def test_cross_entropy_float_labels_are_a_dtype_error():
    with pytest.raises(nb.DTypeError) as e:
        nb.cross_entropy(nb.zeros(3, 4), nb.tensor([0.0, 1.0, 2.0]))
    assert isinstance(e.value, TypeError)
    msg = str(e.value)
    assert "cross_entropy" in msg and "f32" in msg and "float32" in msg
    with pytest.raises(TypeError, match="bool"):
        nb.cross_entropy(nb.zeros(3, 4), nb.tensor([True, False, True]))
    with pytest.raises(TypeError, match="logits must be a float"):
        nb.cross_entropy(nb.zeros(3, 4, dtype=nb.int64), nb.tensor([0, 1, 2]))


@pytest.mark.parametrize(
    "logits_shape,labels_shape",
    [((3, 4), (2,)), ((3, 4), (3, 1)), ((2, 4, 5), (2, 4)), ((4,), (1,)), ((), ())],
)
def test_cross_entropy_shape_mismatch(logits_shape, labels_shape):
    with pytest.raises(nb.ShapeError) as e:
        nb.cross_entropy(nb.zeros(logits_shape), nb.zeros(labels_shape, dtype=nb.int64))
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert "cross_entropy" in msg and "logits" in msg and "labels" in msg
    assert str(logits_shape) in msg and str(labels_shape) in msg


def test_attr_errors():
    x, labels = nb.zeros(2, 3), nb.tensor([0, 1])
    with pytest.raises(nb.AttrError, match="reduction"):
        nb.cross_entropy(x, labels, reduction="avg")
    with pytest.raises(nb.AttrError, match="label_smoothing"):
        nb.cross_entropy(x, labels, label_smoothing=1.5)
    with pytest.raises(nb.AttrError, match="reduction"):
        nb.mse_loss(x, x, reduction="batchmean")
    with pytest.raises(nb.AttrError, match="num_classes"):
        nb.one_hot(labels, num_classes=-2)
    with pytest.raises(nb.AttrError, match="axis"):
        nb.softmax(x, axis=1.0)


def test_softmax_errors():
    with pytest.raises(nb.ShapeError, match="axis 2 is out of range"):
        nb.softmax(nb.zeros(2, 3), axis=2)
    with pytest.raises(ValueError, match="log_softmax"):
        nb.log_softmax(nb.zeros(2, 3), axis=-3)
    with pytest.raises(nb.DTypeError, match=r"softmax\(x: i64.*float"):
        nb.softmax(nb.tensor([1, 2, 3]))


def test_mse_loss_and_one_hot_errors():
    with pytest.raises(nb.ShapeError, match=r"mse_loss.*\(2, 3\).*\(4,\)|do not broadcast"):
        nb.mse_loss(nb.zeros(2, 3), nb.zeros(4))
    with pytest.raises(nb.DTypeError, match="mse_loss"):
        nb.mse_loss(nb.tensor([1, 2]), nb.tensor([1, 3]))
    with pytest.raises(nb.OutOfRangeError, match="one_hot: label 3"):
        nb.one_hot(nb.tensor([0, 3]), num_classes=3)
    with pytest.raises(nb.DTypeError, match="one_hot"):
        nb.one_hot(nb.tensor([0.0]), num_classes=3)


def test_declarations_are_complete():
    for name in ("softmax", "log_softmax", "one_hot", "cross_entropy", "mse_loss"):
        op = REGISTRY[name]
        assert op.ref is not None and op.dtypes and op.doc
        assert op.grad is not None or not op.differentiable
        assert set(op.kernels) == {"cpu", "cuda"}
        assert getattr(nb, name) is op


# ---------------------------------------------------------------- PyTorch parity


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_matches_pytorch(reduction, label_smoothing):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    logits = rng.standard_normal((3, 4, 2)) * 3
    labels = np.array([[0, 3], [-100, 1], [2, -100]])
    kw = {"reduction": reduction, "label_smoothing": label_smoothing}
    x = nb.tensor(logits, dtype=nb.float64, requires_grad=True)
    out = nb.cross_entropy(x, nb.tensor(labels), **kw)
    tx = torch.tensor(logits, requires_grad=True)
    tout = torch.nn.functional.cross_entropy(tx, torch.tensor(labels), **kw)
    nt.assert_close(out, tout.detach().numpy())
    seed = rng.standard_normal(out.shape)
    out.backward(nb.tensor(seed, dtype=nb.float64))
    tout.backward(torch.tensor(seed))
    nt.assert_close(x.grad, tx.grad.numpy())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(3,), (6, 3), (3, 4, 2)])
def test_weighted_label_smoothing_matches_pytorch(reduction, shape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    logits = rng.standard_normal(shape)
    n_classes = shape[1 if len(shape) > 1 else 0]
    labels = rng.integers(0, n_classes, shape[:1] + shape[2:] if len(shape) > 1 else ())
    labels = np.where(rng.random(labels.shape) < 0.2, -100, labels) if labels.ndim else labels
    weight = rng.uniform(0.2, 2.0, n_classes)
    kw = {"reduction": reduction, "label_smoothing": 0.2}
    x = nb.tensor(logits, requires_grad=True)
    out = nb.nn.functional.cross_entropy(x, nb.tensor(labels), nb.tensor(weight), **kw)
    tx = torch.tensor(logits, requires_grad=True)
    tout = torch.nn.functional.cross_entropy(tx, torch.tensor(labels), torch.tensor(weight), **kw)
    nt.assert_close(out, tout.detach().numpy())
    seed = rng.standard_normal(out.shape)
    out.backward(nb.tensor(seed))
    tout.backward(torch.tensor(seed))
    nt.assert_close(x.grad, tx.grad.numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3)])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_grad_matches_reference(reduction, shape, smoothing):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal(shape)
    label_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    labels = rng.integers(0, 5, label_shape)
    if labels.ndim:
        labels.flat[0] = -100  # one ignored target
    g = rng.standard_normal(label_shape if reduction == "none" else ())
    attrs = {"reduction": reduction, "ignore_index": -100, "label_smoothing": smoothing}
    out = nb.cross_entropy_grad(nb.tensor(g), nb.tensor(logits), nb.tensor(labels), **attrs)
    expected = REGISTRY["cross_entropy_grad"].ref(g, logits, labels, **attrs)
    assert out.shape == logits.shape and out.dtype == np.float64
    nt.assert_close(out, expected)
