"""nbflow.signal.windows against scipy.signal.windows (float64, symmetric and periodic) and
PyTorch's torch.signal.windows (dtypes, the shortest windows, a centre of one's own), and
typed errors for bad arguments."""

import numpy as np
import pytest
import scipy.signal.windows as sw

import nbflow as nb

windows = nb.signal.windows

# name: (nbflow and PyTorch keywords, scipy's window for M points and sym)
CASES = {
    "bartlett": ({}, lambda m, sym: sw.bartlett(m, sym=sym)),
    "blackman": ({}, lambda m, sym: sw.blackman(m, sym=sym)),
    "cosine": ({}, lambda m, sym: sw.cosine(m, sym=sym)),
    "exponential": ({"tau": 2.5}, lambda m, sym: sw.exponential(m, tau=2.5, sym=sym)),
    "gaussian": ({"std": 1.7}, lambda m, sym: sw.gaussian(m, 1.7, sym=sym)),
    "general_cosine": (
        {"a": [0.5, 0.3, 0.2]},
        lambda m, sym: sw.general_cosine(m, [0.5, 0.3, 0.2], sym=sym),
    ),
    "general_hamming": ({"alpha": 0.6}, lambda m, sym: sw.general_hamming(m, 0.6, sym=sym)),
    "hamming": ({}, lambda m, sym: sw.hamming(m, sym=sym)),
    "hann": ({}, lambda m, sym: sw.hann(m, sym=sym)),
    "kaiser": ({"beta": 5.0}, lambda m, sym: sw.kaiser(m, 5.0, sym=sym)),
    "nuttall": ({}, lambda m, sym: sw.nuttall(m, sym=sym)),
}


def test_every_torch_window_is_here():
    torch = pytest.importorskip("torch")
    assert sorted(torch.signal.windows.__all__) == sorted(windows.__all__) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("sym", [True, False])
def test_windows_match_scipy(name, sym):
    kwargs, reference = CASES[name]
    for m in (2, 5, 8, 33):
        got = getattr(windows, name)(m, sym=sym, dtype=nb.float64, **kwargs).numpy()
        assert got.dtype == np.float64 and got.shape == (m,)
        np.testing.assert_allclose(got, reference(m, sym), rtol=1e-12, atol=1e-15, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_dtypes_and_short_windows_match_torch(name):
    torch = pytest.importorskip("torch")
    kwargs = CASES[name][0]
    for m in (0, 1, 6):
        for sym in (True, False):
            want = getattr(torch.signal.windows, name)(m, sym=sym, **kwargs)
            got = getattr(windows, name)(m, sym=sym, **kwargs)
            assert got.dtype == nb.float32 and got.shape == tuple(want.shape)  # the default
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_exponential_with_a_centre_of_its_own():
    torch = pytest.importorskip("torch")
    for m in (1, 4, 7):
        want = torch.signal.windows.exponential(m, center=1.5, tau=2.0, sym=False)
        got = windows.exponential(m, center=1.5, tau=2.0, sym=False)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        np.testing.assert_allclose(got.numpy(), np.exp(-np.abs(np.arange(m) - 1.5) / 2.0))


def test_requires_grad_gives_a_leaf():
    w = windows.hann(5, requires_grad=True, dtype=nb.float64)
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * sw.hann(5))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: windows.hann(-1), nb.DomainError, "hann: M must be >= 0"),
        (lambda: windows.hann(4.0), nb.AttrError, "M must be an int"),
        (lambda: windows.hann(4, sym=1), nb.AttrError, "sym"),
        (lambda: windows.hann(4, dtype=nb.int64), nb.DTypeError, "float32 or float64"),
        (lambda: windows.nuttall(4, dtype=nb.float16), nb.DTypeError, "float32 or float64"),
        (lambda: windows.hann(4, layout="sparse_coo"), nb.UnsupportedError, "strided"),
        (lambda: windows.exponential(4, tau=0.0), nb.DomainError, "tau"),
        (lambda: windows.exponential(4, center=1.0), nb.AttrError, "center"),
        (lambda: windows.gaussian(4, std=-1.0), nb.DomainError, "std"),
        (lambda: windows.kaiser(4, beta=-1.0), nb.DomainError, "beta"),
        (lambda: windows.general_cosine(4, a=[]), nb.DomainError, "empty"),
        (lambda: windows.general_cosine(4, a=0.5), nb.AttrError, "list"),
        (lambda: windows.general_cosine(4, a=["x"]), nb.AttrError, "coefficient"),
    ],
)
def test_bad_arguments_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_window_over_the_memory_budget_is_refused_before_it_is_computed():
    budget = nb.get_memory_budget()
    nb.set_memory_budget(1 << 20)
    try:
        with pytest.raises(nb.ResourceExhaustedError, match="memory budget"):
            windows.gaussian(1 << 20)
        with pytest.raises(nb.ResourceExhaustedError, match="memory budget"):
            nb.hann_window(1 << 20)
    finally:
        nb.set_memory_budget(budget)
