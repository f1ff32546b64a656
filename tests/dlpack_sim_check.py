"""GPU tensors and DLPack under numba's CUDA simulator (run by tests/test_dlpack.py with
NUMBA_ENABLE_CUDASIM=1): `__cuda_array_interface__`, the device import without a host round
trip, and the typed refusals. On a real GPU, bench/gpu_check.py runs the same checks."""

import numpy as np

import nbflow as nb
from nbflow.dlpack import DLPackError


class Producer:
    """A GPU array from another library: DLPack device and a CUDA array interface."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kwargs):
        raise AssertionError("a GPU import reads __cuda_array_interface__, not a host capsule")

    def __dlpack_device__(self):
        return (2, 0)

    @property
    def __cuda_array_interface__(self):
        return self.t.__cuda_array_interface__


def main():
    t = nb.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).cuda()
    assert t.__dlpack_device__() == (2, 0)
    desc = t.__cuda_array_interface__
    assert desc["shape"] == (2, 3) and desc["typestr"] == "<f4" and desc["version"] == 3

    u = nb.from_dlpack(Producer(t))  # on the device, sharing the memory
    assert u.device == "cuda:0" and u.shape == (2, 3)
    u.add_(1)
    np.testing.assert_array_equal(t.numpy(), [[2, 3, 4], [5, 6, 7]])
    v = nb.from_dlpack(t.T)
    assert v.stride() == t.T.stride()
    np.testing.assert_array_equal(v.numpy(), t.numpy().T)

    host = nb.from_dlpack(t, device="cpu")  # a copy, allowed unless copy=False
    np.testing.assert_array_equal(host.numpy(), t.numpy())
    # a capsule on the device (written by nbflow/dlpack.py: numba has no exporter)
    for kw in ({}, {"max_version": (1, 0)}, {"dl_device": (2, 0), "copy": True}):
        assert type(t.__dlpack__(**kw)).__name__ == "PyCapsule"
    for call in (
        lambda: nb.from_dlpack(t, device="cpu", copy=False),
        lambda: t.__dlpack__(dl_device=(1, 0), copy=False),
    ):
        try:
            call()
        except DLPackError:
            pass
        else:
            raise AssertionError("not refused")
    np.testing.assert_array_equal(np.from_dlpack(t, device="cpu"), t.numpy())
    g = nb.from_dlpack(np.arange(3.0), device="cuda")
    assert g.device == "cuda:0" and g.numpy().tolist() == [0.0, 1.0, 2.0]
    print("ok")


if __name__ == "__main__":
    main()
