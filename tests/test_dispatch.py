"""Dispatch shortcuts keep the semantics: the written-out recording of `a + b` builds the same
tape as the general path, and a matmul operand that needs no gradient gets none computed."""

import numpy as np
import pytest

import nbflow as nb
from nbflow import testing as nt


def test_fast_binary_recording_matches_the_general_path():
    rng = np.random.default_rng(0)
    a = nb.tensor(rng.standard_normal(5), requires_grad=True)
    b = nb.tensor(rng.standard_normal(5))  # a constant: no gradient edge
    fast = a * b  # two tensors, no attrs: the written-out path
    general = nb.mul(a, b.numpy())  # array data: the general path
    assert fast._node.op is general._node.op and fast._node.edges[1] is None
    assert fast._node.edges[0] is a and fast.requires_grad and fast._index == 0
    (g_fast,) = nb.grad(nb.sum(fast * fast), [a])
    (g_general,) = nb.grad(nb.sum(general * general), [a])
    nt.assert_close(g_fast, g_general)
    nt.assert_close(g_fast, 2 * b.numpy() ** 2 * a.numpy())
    a_int = nb.tensor(np.arange(3))
    assert not (a_int + a_int).requires_grad  # integer results never join the tape


def test_a_data_operand_of_matmul_gets_no_gradient_op():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, 4])
        w = nb.static.create_parameter("w", [4, 3])
        loss = nb.sum(x @ w)
        nb.append_backward(loss)
    matmuls = [n for n in main.global_block().ops if n.op.name == "matmul"]
    assert len(matmuls) == 2  # forward and w's gradient; none for the data x


def test_eager_matmul_gradients_still_reach_every_operand_that_needs_one():
    rng = np.random.default_rng(0)
    x = nb.tensor(rng.standard_normal((3, 4)))
    w = nb.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    h = nb.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    gw, gh = nb.grad(nb.sum((x + h) @ w), [w, h])
    nt.assert_close(gw, (x.numpy() + h.numpy()).T @ np.ones((3, 2)))
    nt.assert_close(gh, np.ones((3, 2)) @ w.numpy().T)
    (gw_only,) = nb.grad(nb.sum(x @ w), [w])
    nt.assert_close(gw_only, x.numpy().T @ np.ones((3, 2)))


def test_short_operands_through_the_compiled_entry_point_keep_numpy_results():
    # 1-D operands up to SMALL_SIZE skip numba's type matching (kernels.cpu.entry_point): the
    # one compiled version must serve strided, read-only and unaligned arrays of each dtype
    from numba.core.dispatcher import Dispatcher

    from nbflow.kernels.cpu.templates import SMALL_SIZE

    rng = np.random.default_rng(1)
    for n in (1, 7, SMALL_SIZE, SMALL_SIZE + 1):
        for dtype in (np.float32, np.float64, np.int32, np.int64, np.bool_):
            x = (rng.standard_normal(2 * n) * 4).astype(dtype)
            y = (rng.standard_normal(n) * 4).astype(dtype)
            y.flags.writeable = False
            raw = np.zeros(n * y.itemsize + 1, np.uint8)  # an unaligned copy of y
            unaligned = np.frombuffer(raw.data, dtype, n, offset=1)
            unaligned[...] = y
            for a, b in ((x[::2], y), (x[1::2], unaligned), (y, y)):
                ta, tb = nb.from_numpy(a), nb.from_numpy(b)
                np.testing.assert_array_equal((ta == tb).numpy(), a == b)
                if dtype is not np.bool_:
                    np.testing.assert_array_equal((ta + tb).numpy(), a + b)
                    np.testing.assert_array_equal(nb.maximum(ta, tb).numpy(), np.maximum(a, b))
        x32 = nb.tensor(np.ones(n, np.float32))
        x32 + x32
        plan = nb.ops.add.cache[(x32._sig, x32._sig)]  # (keyed by the tensors' Sigs)
        assert isinstance(plan.launcher, Dispatcher) == (n > SMALL_SIZE)


def test_tensor_and_python_scalar_shortcut_matches_the_general_path():
    # x * 0.5 and 1 - x run the scalar loop straight from the operator (EagerTrace.binary)
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((3, 4))
    for dtype in ("float32", "float64", "int32", "int64"):
        x = nb.tensor(x0 * 10, dtype=dtype)
        a = x.numpy()
        for _ in range(2):  # the first call makes the plan, the second takes the shortcut
            promoted = dtype if dtype.startswith("float") else "float32"
            for got, want, want_dtype in (
                (x * 3, a * 3, dtype),
                (2 - x, 2 - a, dtype),
                (x + 1.5, a + 1.5, promoted),  # a float scalar promotes an integer tensor
                (x.T * 2, a.T * 2, dtype),  # not contiguous: the general path
            ):
                assert got.dtype == np.dtype(want_dtype)
                nt.assert_close(got, want.astype(want_dtype))
    xi = nb.tensor(np.arange(3), dtype="int32")
    xi + 1
    with pytest.raises(nb.errors.DTypeError, match="out of range") as info:
        xi + 2**40  # the shortcut's scalar conversion fails: rerun through bind()
    assert "test_dispatch.py" in str(info.value)  # the error names the user's line
    # gradients through the shortcut, first and second order
    w = nb.tensor(x0, requires_grad=True)
    (g,) = nb.grad(nb.sum((2.0 - w * 3.0) ** 2), [w], create_graph=True)
    nt.assert_close(g, -6 * (2 - 3 * x0))
    (gg,) = nb.grad(nb.sum(g), [w])
    nt.assert_close(gg, np.full_like(x0, 18.0))


def test_a_tensor_keeps_its_shape_when_what_it_handed_out_is_reshaped():
    # plans are keyed by a signature made once per tensor (tensor.Sig): the array itself is
    # never handed out, so reshaping what numpy(), data, __array__ or from_numpy's caller
    # holds cannot change the tensor under its cached key
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    t = nb.from_numpy(a)
    u = t + t  # (t's signature is cached from here on)
    a.shape = (3, 2)
    for handed in (t.numpy(), t.data, np.asarray(t)):
        handed.shape = (6,)
    assert t.shape == (2, 3) and (t + t).shape == (2, 3)
    np.testing.assert_array_equal((t + t).numpy(), u.numpy())
    assert np.shares_memory(t.numpy(), a)  # still no copy


def test_assigning_data_gives_the_tensor_the_new_shape_and_memory():
    t = nb.ones(2, 3)
    t + t
    t.data = np.arange(4.0, dtype=np.float32)
    np.testing.assert_array_equal((t + t).numpy(), [0.0, 2.0, 4.0, 6.0])
    other = nb.tensor([[1.0], [2.0]])
    t.data = other  # PyTorch's x.data = y: x holds y's memory
    assert t.shape == (2, 1) and np.shares_memory(t.numpy(), other.numpy())
    np.testing.assert_array_equal((t * t).numpy(), [[1.0], [4.0]])
    with pytest.raises(TypeError, match="numpy array"):
        t.data = [1.0, 2.0]
    with pytest.raises(nb.DTypeError):
        t.data = np.ones(2, np.longdouble)
    assert t.shape == (2, 1)  # a refused assignment changes nothing


def test_copied_and_unpickled_tensors_share_the_plans_of_the_original():
    import copy
    import pickle

    t = nb.tensor([1.0, 2.0])
    t + t
    for c in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert c._sig is t._sig
        np.testing.assert_array_equal((c + t).numpy(), [2.0, 4.0])


def test_big_endian_arrays_become_native_tensors_or_a_typed_error():
    big = np.arange(3, dtype=">f4")
    t = nb.tensor(big)  # a copy, in this machine's byte order
    assert t.dtype == np.float32 and t.numpy().dtype.isnative
    np.testing.assert_array_equal((t + t).numpy(), [0.0, 2.0, 4.0])
    assert nb.tensor(np.arange(2, dtype=">i8")).dtype == np.int64
    with pytest.raises(nb.DTypeError, match="byte order"):
        nb.from_numpy(big)  # sharing its memory cannot fix the order
