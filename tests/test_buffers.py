"""Recycled large buffers (nbflow/runtime/buffers.py): reused only once nothing refers to them."""

import numpy as np
import pytest

import nbflow as nb
from nbflow.runtime import buffers

N = (buffers.MIN_BYTES // 4) * 2  # float32 elements: over the recycling threshold


def address(t) -> int:
    return t.numpy().__array_interface__["data"][0]


@pytest.fixture(autouse=True)
def fresh_cache():
    nb.empty_cache()
    yield
    nb.empty_cache()


def test_a_dropped_output_buffer_is_reused_and_a_held_one_is_not():
    x = nb.tensor(np.arange(N, dtype=np.float32))
    y = x * 2.0
    first = address(y)
    z = x * 3.0  # y is alive: z needs another buffer
    assert address(z) != first
    np.testing.assert_array_equal(y.numpy(), np.arange(N, dtype=np.float32) * 2)
    del y
    w = x + 1.0
    assert address(w) == first
    np.testing.assert_array_equal(w.numpy(), np.arange(N, dtype=np.float32) + 1)
    np.testing.assert_array_equal(z.numpy(), np.arange(N, dtype=np.float32) * 3)


def test_a_view_or_a_numpy_reference_keeps_the_buffer():
    x = nb.tensor(np.ones(N, np.float32))
    y = x * 2.0
    first = address(y)
    view = y[1:]
    array = (x * 5.0).numpy()
    del y
    assert address(x * 3.0) != first  # the view still reads it
    del view
    again = x * 4.0
    assert address(again) == first
    np.testing.assert_array_equal(again.numpy()[:3], [4, 4, 4])
    np.testing.assert_array_equal(array[:3], [5, 5, 5])  # the numpy reference kept its values


def test_a_buffer_saved_for_backward_is_not_reused_before_backward():
    x = nb.tensor(np.linspace(-1, 1, N).astype(np.float32), requires_grad=True)
    y = nb.tanh(x)  # tanh's gradient reads its output
    saved = address(y)
    loss = y.sum()
    del y
    assert address(x * 2.0) != saved
    loss.backward()
    expected = 1 - np.tanh(np.linspace(-1, 1, N).astype(np.float32)) ** 2
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_jit_outputs_are_recycled_between_calls():
    # a reference cycle around the returned tensors would keep them until the next
    # garbage collection; the second call must find the first one's buffer free
    x = nb.tensor(np.ones(N, np.float32))

    @nb.jit
    def f(x):
        return nb.tanh(x * 2.0) + 1.0

    first = address(f(x))
    y = f(x)
    assert address(y) == first
    np.testing.assert_allclose(y.numpy()[:4], np.tanh(2.0) + 1.0, rtol=1e-6)


def test_empty_cache_frees_only_unused_buffers():
    x = nb.tensor(np.ones(N, np.float32))
    held = x * 2.0
    dropped = x * 3.0
    del dropped
    assert nb.empty_cache() == N * 4
    assert nb.empty_cache() == 0
    np.testing.assert_array_equal(held.numpy()[:2], [2, 2])


def test_small_buffers_and_other_sizes_are_not_mixed_up():
    a = buffers.empty((N,), np.float32)
    base = a.__array_interface__["data"][0]
    del a
    b = buffers.empty((N // 2,), np.float64)  # same bytes, other dtype and shape
    assert b.__array_interface__["data"][0] == base and b.dtype == np.float64
    c = buffers.empty((N + 1,), np.float32)  # another size: a new buffer
    assert c.__array_interface__["data"][0] != base
    assert type(buffers.empty((3,), np.int64)) is np.ndarray


def test_the_cache_stays_under_its_limit_and_frees_unused_buffers_first(monkeypatch):
    nbytes = N * 4
    monkeypatch.setattr(buffers, "CACHE_BYTES", 3 * nbytes)
    held = [buffers.empty((N,), np.float32) for _ in range(2)]
    dropped = buffers.empty((N,), np.float32)
    del dropped
    more = [buffers.empty((2 * N,), np.float32)]  # needs room: the unused one goes first
    assert buffers._kept_bytes <= buffers.CACHE_BYTES
    assert sum(len(v) for v in buffers._kept.values()) == 2  # one held N-buffer and `more`
    more.append(buffers.empty((2 * N,), np.float32))  # past the limit: the oldest untracked
    assert buffers._kept_bytes <= buffers.CACHE_BYTES
    for i, a in enumerate(held + more):
        a[:] = i  # every buffer handed out is still its own
    for i, a in enumerate(held + more):
        assert (a == i).all()
    big = buffers.empty((4 * N,), np.float32)  # over the whole limit: never tracked
    assert big.base is not None and buffers._kept_bytes <= buffers.CACHE_BYTES


def test_a_reshape_that_must_copy_copies_into_a_recycled_buffer():
    # heads (batch, heads, L, d) permuted back to (batch, L, heads * d): no view can do it
    values = np.arange(N, dtype=np.float32).reshape(4, 2, -1, 8)
    heads = nb.tensor(values).permute(0, 2, 1, 3)
    merged = heads.reshape(4, -1, 16)
    np.testing.assert_array_equal(merged.numpy(), values.transpose(0, 2, 1, 3).reshape(4, -1, 16))
    first = address(merged)
    del merged
    assert address(heads.reshape(4, -1, 16)) == first
    x = nb.tensor(values)
    assert np.shares_memory(x.reshape(-1).numpy(), x.numpy())  # contiguous: a view, no copy
