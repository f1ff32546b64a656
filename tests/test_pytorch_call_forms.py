"""PyTorch's call forms and 0-d conventions that tests/test_opinfo.py's samples do not reach
(issue 39, item 2): each compared with PyTorch itself, in eager mode and, for the ops declared
once, under nb.jit."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import errors

torch = pytest.importorskip("torch")


def _same(got, want):
    np.testing.assert_allclose(np.asarray(got.numpy()), want.numpy(), rtol=1e-6, atol=1e-12)
    assert tuple(got.shape) == tuple(want.shape)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, i, s: m.gather(x, 0, i),
        lambda m, x, i, s: m.scatter(x, 0, i, s),
        lambda m, x, i, s: m.scatter_add(x, 0, i, s),
        lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amax"),
        lambda m, x, i, s: m.topk(x, 1)[0],
        lambda m, x, i, s: m.topk(x, 1)[1],
    ],
)
def test_0d_tensors_are_one_element(call):
    x, i, s = np.float64(2.5), np.int64(0), np.float64(4.0)
    got = call(nb, nb.tensor(x), nb.tensor(i), nb.tensor(s))
    want = call(torch, torch.tensor(x), torch.tensor(i), torch.tensor(s))
    _same(got, want)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shape", [(2, 3), (4, 3), (2, 4, 3)])
def test_lstsq_reports_what_the_driver_reports(driver, shape):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (2,))
    got = nb.linalg.lstsq(nb.tensor(a), nb.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for g, w in zip(got, want):
        assert str(g.dtype) == str(w.dtype).removeprefix("torch.")
        _same(g, w)


def test_lstsq_refuses_an_unknown_driver():
    with pytest.raises(errors.DomainError, match="driver"):
        nb.linalg.lstsq(nb.ones(3, 2), nb.ones(3, 1), driver="gesv")


def test_to_copy_and_to_another_tensor():
    x = nb.tensor([1.0, 2.0])
    assert x.to(nb.float32) is x
    copied = x.to(nb.float32, False, True)  # PyTorch's to(dtype, non_blocking, copy)
    assert copied is not x and copied.dtype == nb.float32
    assert x.to(nb.tensor([1], dtype=nb.int64)).dtype == nb.int64
    with pytest.raises(errors.DomainError, match="memory_format"):
        x.to(memory_format="sideways")


def test_fill_with_a_bool():
    got = nb.full((2,), True)
    assert got.dtype == nb.bool_
    np.testing.assert_array_equal(nb.ones(2, dtype=nb.bool_).fill_(False).numpy(), [0, 0])
    np.testing.assert_array_equal(nb.full_like(nb.ones(2), True).numpy(), [1.0, 1.0])


def test_unbiased_and_correction_together_are_refused():
    with pytest.raises(errors.ArgumentError, match="not both"):
        nb.std(nb.ones(3), unbiased=True, correction=0)
    with pytest.raises(errors.AttrError, match="unbiased"):
        nb.var(nb.ones(3), unbiased="yes")


def test_normal_with_tensor_mean_and_std_differentiates():
    mean = nb.tensor([1.0, 2.0], dtype=nb.float64, requires_grad=True)
    std = nb.tensor([0.5, 3.0], dtype=nb.float64, requires_grad=True)
    out = nb.normal(mean, std, generator=nb.Generator(0))
    out.sum().backward()
    # the draw is mean + std * eps: d/dmean = 1, d/dstd = eps = (out - mean) / std
    np.testing.assert_allclose(mean.grad.numpy(), [1.0, 1.0])
    eps = (out.detach().numpy() - mean.detach().numpy()) / std.detach().numpy()
    np.testing.assert_allclose(std.grad.numpy(), eps, rtol=1e-12)


def test_call_forms_under_jit():
    a = np.array([1.26, -2.5, 3.3], np.float32)
    b = np.array([0.5, 0.7, 2.0], np.float32)

    def forms(m, x, y, **softmax):
        return (
            m.div(x, y, rounding_mode="floor"),
            m.div(x, y, rounding_mode="trunc"),
            m.round(x, decimals=1),
            m.clamp(x, min=y),
            m.std(x, unbiased=False),
            m.softmax(x, 0, dtype=softmax["dtype"]),
        )

    got = nb.jit(lambda x, y: forms(nb, x, y, dtype=nb.float64))(nb.tensor(a), nb.tensor(b))
    want = forms(torch, torch.tensor(a), torch.tensor(b), dtype=torch.float64)
    for g, w in zip(got, want):
        assert str(g.dtype) == str(w.dtype).removeprefix("torch.")
        _same(g, w)


@pytest.mark.parametrize("jit", [False, True])
def test_clamp_with_tensor_bounds_gradient(jit):
    values = np.array([-1.0, 0.5, 3.0]), np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 2.0])
    want = [torch.tensor(v, requires_grad=True) for v in values]
    torch.clamp(*want).sum().backward()

    def loss(x, low, high):
        return nb.clamp(x, min=low, max=high).sum()

    got = [nb.tensor(v, requires_grad=True) for v in values]
    (nb.jit(loss) if jit else loss)(*got).backward()  # under jit: the program's backward
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.grad.numpy(), w.grad.numpy())
