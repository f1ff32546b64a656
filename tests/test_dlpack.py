"""DLPack both ways: nbflow tensors shared with numpy and PyTorch without a copy, and what
cannot be shared refused with a typed error (nbflow/dlpack.py). The GPU path runs under numba's
CUDA simulator in a subprocess (tests/dlpack_sim_check.py) and on a real GPU in
bench/gpu_check.py."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbflow as nb
from nbflow.dlpack import DLPackDTypeError, DLPackError

ROOT = Path(__file__).resolve().parent.parent


def _same_layout(t, a):
    assert tuple(t.shape) == tuple(a.shape)
    assert np.dtype(t.dtype) == np.dtype(a.dtype)
    assert tuple(t.stride()) == tuple(s // a.dtype.itemsize for s in a.strides)


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float16", "float32", "float64"])
def test_numpy_round_trip_shares_memory(dtype):
    t = nb.tensor(np.arange(12).reshape(3, 4) % 2, dtype=dtype)
    a = np.from_dlpack(t)
    _same_layout(t, a)
    assert np.shares_memory(a, t.numpy())
    a[1, 2] = 0 if dtype == "bool" else 7
    assert t.numpy()[1, 2] == a[1, 2]
    back = nb.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr() and back.dtype == t.dtype
    back.numpy()[0, 0] = 1
    assert t.numpy()[0, 0] == 1


def test_strided_views_keep_their_strides():
    base = nb.tensor(np.arange(24.0).reshape(4, 6))
    for view in (base.T, base[:, ::2], base[1:3, 1:], base.permute(1, 0)[::2]):
        a = np.from_dlpack(view)
        _same_layout(view, a)
        np.testing.assert_array_equal(a, view.numpy())
    a = np.arange(20.0).reshape(4, 5)[::2, ::-1]  # a negative stride
    t = nb.from_dlpack(a)
    _same_layout(t, a)
    a[0, 0] = -1
    assert t[0, 0].item() == -1


def test_torch_round_trip_shares_memory():
    torch = pytest.importorskip("torch")
    t = nb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=nb.float32)
    x = torch.from_dlpack(t)
    assert x.dtype == torch.float32 and tuple(x.shape) == t.shape and x.stride() == t.stride()
    x[0, 1] = 20.0
    assert t[0, 1].item() == 20.0
    t.numpy()[1, 0] = 40.0
    assert x[1, 0].item() == 40.0
    assert torch.from_dlpack(t.T).stride() == t.T.stride()

    y = torch.arange(12, dtype=torch.int64).reshape(3, 4)[:, 1::2]
    u = nb.from_dlpack(y)
    assert u.dtype == nb.int64 and u.shape == (3, 2) and u.stride() == y.stride()
    y[2, 1] = -5
    assert u[2, 1].item() == -5
    for td, nd in [(torch.bool, nb.bool_), (torch.int32, nb.int32), (torch.float16, nb.float16)]:
        z = torch.zeros(2, 3, dtype=td)
        assert nb.from_dlpack(z).dtype == nd
        assert torch.from_dlpack(nb.from_dlpack(z)).data_ptr() == z.data_ptr()


def test_autograd_sees_an_imported_tensor_as_a_leaf():
    a = np.array([1.0, 2.0, 3.0])
    t = nb.from_dlpack(a).requires_grad_()
    (t * t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * a)


def test_dtypes_nbflow_lacks_are_refused():
    with pytest.raises(DLPackDTypeError, match="uint16"):
        nb.from_dlpack(np.zeros(3, np.uint16))
    assert issubclass(DLPackDTypeError, nb.DTypeError) and issubclass(DLPackError, BufferError)
    torch = pytest.importorskip("torch")
    with pytest.raises(DLPackDTypeError):
        nb.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(DLPackDTypeError):
        nb.from_dlpack(torch.zeros(3, dtype=torch.uint16))


def test_read_only_buffers():
    ro = np.arange(3.0)
    ro.flags.writeable = False
    t = nb.from_numpy(ro)
    # a pre-1.0 consumer cannot be told the buffer is read-only: refused, unless copied
    with pytest.raises(DLPackError, match="read-only"):
        t.__dlpack__()
    assert type(t.__dlpack__(copy=True)).__name__ == "PyCapsule"
    assert np.from_dlpack(t, copy=True).flags.writeable
    # a DLPack 1.0 consumer gets the read-only flag
    assert not np.from_dlpack(t).flags.writeable
    # a read-only import is a read-only tensor: writes are refused, not silently lost
    imported = nb.from_dlpack(ro)
    with pytest.raises(nb.UnsupportedError, match="read-only"):
        imported.add_(1)
    assert nb.from_dlpack(ro, copy=True).add_(1).numpy().tolist() == [1.0, 2.0, 3.0]


def test_copy_and_device_requests():
    t = nb.tensor([1.0, 2.0])
    assert t.__dlpack_device__() == (1, 0)
    c = nb.from_dlpack(t, copy=True)
    assert c.data_ptr() != t.data_ptr()
    c.numpy()[0] = 9
    assert t[0].item() == 1.0
    assert nb.from_dlpack(t, copy=False).data_ptr() == t.data_ptr()
    assert nb.from_dlpack(t, device="cpu").data_ptr() == t.data_ptr()
    with pytest.raises(DLPackError, match="copy=False"):
        nb.from_dlpack(t, device="cuda", copy=False)
    with pytest.raises(DLPackError, match="device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0), copy=False)
    with pytest.raises(DLPackError, match="stream"):
        t.__dlpack__(stream=1)
    with pytest.raises(DLPackError, match="__dlpack__"):
        nb.from_dlpack([1.0, 2.0])
    assert np.from_dlpack(t, copy=True).ctypes.data != t.data_ptr()


def test_gpu_path_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "dlpack_sim_check.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_the_capsule_writer_on_host_memory():
    """make_capsule, which writes a GPU tensor's capsule (numba has no DLPack exporter), over
    host memory: numpy and PyTorch read it (legacy and versioned), share it, and free it."""
    import gc

    from nbflow import dlpack

    class Producer:
        def __init__(self, a, versioned):
            self.a, self.versioned = a, versioned

        def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
            a = self.a
            mv = max_version if self.versioned else None
            return dlpack.make_capsule(a.ctypes.data, a.shape, a.strides, a.dtype, (1, 0), a, mv)

        def __dlpack_device__(self):
            return (1, 0)

    live = len(dlpack._LIVE)
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    for versioned in (False, True):
        b = np.from_dlpack(Producer(a, versioned))
        assert b.strides == a.strides and b.ctypes.data == a.ctypes.data
        np.testing.assert_array_equal(b, a)
        del b
        gc.collect()
        assert len(dlpack._LIVE) == live
    c_order = np.arange(6.0).reshape(2, 3)  # strides None: C order written out

    class Holder:
        def __dlpack__(self, **kwargs):
            a = c_order
            return dlpack.make_capsule(a.ctypes.data, a.shape, None, a.dtype, (1, 0), a, (1, 0))

        def __dlpack_device__(self):
            return (1, 0)

    np.testing.assert_array_equal(np.from_dlpack(Holder()), c_order)
    gc.collect()
    unused = Producer(np.ones(2, bool), True).__dlpack__(max_version=(1, 0))
    del unused  # a capsule nobody consumed frees its tensor too
    assert len(dlpack._LIVE) == live
    torch = pytest.importorskip("torch")
    x = torch.from_dlpack(Producer(np.arange(4, dtype=np.int32), True))
    assert x.tolist() == [0, 1, 2, 3] and x.dtype == torch.int32
    del x
    gc.collect()
    assert len(dlpack._LIVE) == live
