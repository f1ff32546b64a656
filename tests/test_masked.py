"""nbflow.masked against PyTorch's torch.masked (values, dtypes and float64 gradients), with
masks that leave whole slices out, broadcast masks, dim/keepdim/dtype arguments, graph mode,
numpy references, and typed errors for bad masks and arguments."""

import math

import numpy as np
import pytest

import nbflow as nb

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 5))
MASK = RNG.random((4, 5)) > 0.4
MASK[1] = False  # a fully masked-out row
MASK[:, 2] = False  # and a fully masked-out column

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]


def _both(name, x, mask, *args, **kwargs):
    """(nbflow's result, PyTorch's) of masked.<name> on float64 copies of x, with gradients
    of the sum of result * a fixed cotangent: ((out, grad), (out, grad))."""
    results = []
    for lib, tensor in ((nb, nb.tensor), (torch, torch.tensor)):
        xt = tensor(x.copy(), requires_grad=True)
        mt = None if mask is None else tensor(mask.copy())
        out = getattr(lib.masked, name)(xt, *args, mask=mt, **kwargs)
        cot = tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        finite = tensor(np.isfinite(out.detach().numpy()))
        lib.where(finite, out * cot, tensor(0.0)).sum().backward()
        results.append((out.detach().numpy(), xt.grad.numpy()))
    return results


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim, keepdim", [(None, False), (1, False), (0, True), ((0, 1), True)])
def test_reductions_match_torch_masked(name, dim, keepdim):
    (got, dgot), (want, dwant) = _both(name, X, MASK, dim=dim, keepdim=keepdim)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dgot, dwant, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_normalizations_and_scans_match_torch_masked(name, dim):
    (got, dgot), (want, dwant) = _both(name, X, MASK, dim)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dgot, dwant, rtol=1e-10, atol=1e-12)


def test_whole_slices_masked_out_give_torchs_values():
    """Row 1 is masked out: each reduction's identity, or NaN where there is none."""
    x, m = nb.tensor(X), nb.tensor(MASK)
    row = {
        "sum": 0.0,
        "prod": 1.0,
        "amax": -math.inf,
        "amin": math.inf,
        "logsumexp": -math.inf,
        "norm": 0.0,
        "mean": math.nan,
        "var": math.nan,
        "std": math.nan,
        "median": math.nan,
        "argmax": 0.0,
    }
    for name, value in row.items():
        got = getattr(nb.masked, name)(x, dim=1, mask=m).numpy()[1]
        want = getattr(torch.masked, name)(torch.tensor(X), dim=1, mask=torch.tensor(MASK))[1]
        np.testing.assert_equal(got, value, err_msg=name)
        np.testing.assert_equal(got, want.item(), err_msg=name)
    assert np.isnan(nb.masked.softmax(x, 1, mask=m).numpy()[1]).all()


def test_median_and_normalize_match_torch():
    for dim in (0, 1):
        got = nb.masked.median(nb.tensor(X), dim, mask=nb.tensor(MASK)).numpy()
        want = torch.masked.median(torch.tensor(X), dim, mask=torch.tensor(MASK)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
        for ord in (1.0, 2.0, math.inf):
            (got, dgot), (want, dwant) = _both("normalize", X, MASK, ord, dim)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(dgot, dwant, rtol=1e-10, atol=1e-12)


def test_argmax_argmin_skip_masked_out_elements():
    x = np.array([[5.0, 1.0, 3.0], [2.0, 9.0, -4.0]])
    m = np.array([[False, True, True], [True, False, False]])
    assert nb.masked.argmax(nb.tensor(x), 1, mask=nb.tensor(m)).numpy().tolist() == [2.0, 0.0]
    assert nb.masked.argmin(nb.tensor(x), 1, mask=nb.tensor(m)).numpy().tolist() == [1.0, 0.0]
    # the index comes in input's dtype (PyTorch's) unless dtype= says otherwise
    index = nb.masked.argmax(nb.tensor(x), 1, mask=nb.tensor(m), dtype=nb.int64)
    assert index.dtype == nb.int64


def test_masked_mean_and_var_match_numpy_masked_arrays():
    dense = MASK.copy()
    dense[1, 0] = True  # (numpy's masked arrays give no value for an empty slice)
    dense[:, 2] = True
    ma = np.ma.masked_array(X, mask=~dense)
    x, m = nb.tensor(X), nb.tensor(dense)
    np.testing.assert_allclose(nb.masked.mean(x, 0, mask=m).numpy(), ma.mean(0), rtol=1e-12)
    got = nb.masked.var(x, 0, correction=0, mask=m).numpy()
    np.testing.assert_allclose(got, ma.var(0), rtol=1e-12)
    got = nb.masked.std(x, None, unbiased=False, mask=m).numpy()
    np.testing.assert_allclose(got, ma.std(), rtol=1e-12)


def test_a_smaller_mask_broadcasts_to_the_input():
    rows = np.array([[True], [False], [True], [True]])
    got = nb.masked.sum(nb.tensor(X), 0, mask=nb.tensor(rows)).numpy()
    np.testing.assert_allclose(got, X[[0, 2, 3]].sum(0), rtol=1e-12)
    cols = np.array([True, False, True, False, False])
    got = nb.masked.amax(nb.tensor(X), 1, mask=nb.tensor(cols)).numpy()
    np.testing.assert_allclose(got, X[:, [0, 2]].max(1))


def test_no_mask_is_the_plain_reduction():
    x = nb.tensor(X)
    np.testing.assert_allclose(nb.masked.mean(x, 1).numpy(), X.mean(1), rtol=1e-12)
    np.testing.assert_allclose(nb.masked.var(x).numpy(), X.var(ddof=1), rtol=1e-12)
    np.testing.assert_allclose(nb.masked.norm(x, 1.0, 0).numpy(), np.abs(X).sum(0), rtol=1e-12)


def test_integer_inputs_and_dtypes_follow_torch():
    xi = RNG.integers(-5, 6, size=(3, 4))
    m = RNG.random((3, 4)) > 0.3
    for name, kwargs in [
        ("sum", {}),
        ("prod", {}),
        ("amax", {}),
        ("var", {}),
        ("logsumexp", {}),
        ("sum", {"dtype": torch.float64}),
        ("mean", {"dtype": torch.float64}),
    ]:
        want = getattr(torch.masked, name)(torch.tensor(xi), 1, mask=torch.tensor(m), **kwargs)
        nb_kwargs = dict.fromkeys(kwargs, nb.float64)
        got = getattr(nb.masked, name)(nb.tensor(xi), 1, mask=nb.tensor(m), **nb_kwargs)
        assert str(got.dtype) == str(want.dtype).removeprefix("torch."), name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, err_msg=name)
    x32 = nb.tensor(np.array([[1, 2], [3, 4]], dtype=np.int32))
    assert nb.masked.sum(x32).dtype == nb.int64  # small integers sum in int64 (PyTorch's)


def test_logaddexp_masks_each_operand():
    a, b = np.array([-100.0, -200.0, -300.0]), np.array([-1.0, -2.0, -3.0])
    keep = np.array([True, False, True])
    got = nb.masked.logaddexp(
        nb.tensor(a), nb.tensor(b), input_mask=nb.tensor(keep), other_mask=nb.tensor(keep)
    ).numpy()
    np.testing.assert_allclose(got, [np.logaddexp(-100.0, -1.0), -np.inf, np.logaddexp(-300, -3)])


def test_graph_mode_matches_eager():
    @nb.jit
    def f(x, m):
        return nb.masked.mean(x, 1, mask=m), nb.masked.softmax(x, 1, mask=m)

    x, m = nb.tensor(X), nb.tensor(MASK)
    for got, want in zip(f(x, m), (nb.masked.mean(x, 1, mask=m), nb.masked.softmax(x, 1, mask=m))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), equal_nan=True)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda x: nb.masked.sum(x, mask=nb.tensor(np.ones((4, 5)))), nb.DTypeError, "bool"),
        (lambda x: nb.masked.sum(x, mask=nb.tensor(np.ones((4, 5), int))), nb.DTypeError, "bool"),
        (
            lambda x: nb.masked.amax(x, mask=nb.tensor(np.ones((4, 4), bool))),
            nb.ShapeError,
            "broadcast",
        ),
        (
            lambda x: nb.masked.mean(x, mask=nb.tensor(np.ones((2, 4, 5), bool))),
            nb.ShapeError,
            "more dims",
        ),
        (lambda x: nb.masked.softmax(x, 2), nb.ShapeError, "out of range"),
        (lambda x: nb.masked.softmax(x, 1.0), nb.AttrError, "dim"),
        (lambda x: nb.masked.sum(x, 3), nb.ShapeError, "out of range"),
        (lambda x: nb.masked.var(x, 0, True, correction=0), nb.AttrError, "not both"),
        (lambda x: nb.masked.mean(x.long()), nb.DTypeError, "float"),
        (lambda x: nb.masked.sum([1.0, 2.0]), nb.ArgumentError, "input"),
        (lambda x: nb.masked.mean(3.0), nb.ArgumentError, "input"),
        (lambda x: nb.masked.sum(x, mask=[True] * 5), nb.ArgumentError, "mask"),
        (lambda x: nb.masked.normalize(x, 2.0, 1, eps="a"), nb.AttrError, "eps"),
        (lambda x: nb.masked.median(x, 2), nb.ShapeError, "masked.median: axis 2 is out of range"),
        (lambda x: nb.masked.median(x, 1, keepdim=x), nb.AttrError, "keepdim"),
        (lambda x: nb.masked.var(x, 1, x), nb.AttrError, "unbiased"),
        (lambda x: nb.masked.norm(x, x), nb.AttrError, "ord"),
        (lambda x: nb.masked.amax(x.numpy().astype(complex)), nb.DTypeError, "complex"),
        (lambda x: nb.masked.logaddexp(x, "a"), nb.ArgumentError, "other"),
    ],
)
def test_bad_input_raises_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nb.tensor(X))


def test_numpy_arrays_of_small_integers_are_taken_as_nbflow_tensor_takes_them():
    small = np.array([[3, -1, 2], [0, 5, 1]], dtype=np.int8)
    m = nb.tensor(np.array([True, False, True]))
    got = nb.masked.amax(small, 1, mask=m)
    assert got.dtype == nb.int8 and got.numpy().tolist() == [3, 1]
    assert nb.masked.sum(small, mask=m).numpy() == 6


def test_integer_median_of_a_fully_masked_slice_raises():
    xi = nb.tensor(np.arange(6).reshape(2, 3))
    m = nb.tensor(np.array([[True, True, False], [False, False, False]]))
    with pytest.raises(nb.DomainError, match="fully masked-out"):
        nb.masked.median(xi, 1, mask=m)
    m = nb.tensor(np.array([[True, False, False], [False, True, True]]))
    assert nb.masked.median(xi, 0, mask=m).numpy().tolist() == [0, 4, 5]
