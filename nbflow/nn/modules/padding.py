"""Padding modules: constant, zero, reflection, replication and circular pads in 1, 2 and 3 dims."""

from __future__ import annotations

from ...argcheck import real
from .. import functional as F
from .module import Module
from .utils import _tuple


class _PadNd(Module):
    """F.pad of the last `dims` dims; padding an int (every side) or 2 * dims ints (last dim
    first: left, right, top, bottom, front, back), as PyTorch's padding modules."""

    dims, mode = 1, "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = _tuple(padding, 2 * self.dims)
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, self.mode, self.value)

    def extra_repr(self) -> str:
        if self.value is None or type(self).__name__.startswith("Zero"):
            return f"{self.padding}"
        return f"padding={self.padding}, value={self.value}"


def _pad_module(name, dims, mode, doc):
    if mode == "constant":

        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, real(value, f"{name}: value"))

    else:

        def __init__(self, padding):
            _PadNd.__init__(self, padding)

    return type(name, (_PadNd,), {"dims": dims, "mode": mode, "__init__": __init__, "__doc__": doc})


ConstantPad1d = _pad_module("ConstantPad1d", 1, "constant", "Pads the last dim with `value`.")


ConstantPad2d = _pad_module("ConstantPad2d", 2, "constant", "Pads the last 2 dims with `value`.")


ConstantPad3d = _pad_module("ConstantPad3d", 3, "constant", "Pads the last 3 dims with `value`.")


ReflectionPad1d = _pad_module("ReflectionPad1d", 1, "reflect", "Mirrors the last dim's edges.")


ReflectionPad2d = _pad_module("ReflectionPad2d", 2, "reflect", "Mirrors the last 2 dims' edges.")


ReflectionPad3d = _pad_module("ReflectionPad3d", 3, "reflect", "Mirrors the last 3 dims' edges.")


ReplicationPad1d = _pad_module("ReplicationPad1d", 1, "replicate", "Repeats the last dim's edge.")


ReplicationPad2d = _pad_module("ReplicationPad2d", 2, "replicate", "Repeats the last 2 dims'.")


ReplicationPad3d = _pad_module("ReplicationPad3d", 3, "replicate", "Repeats the last 3 dims'.")


CircularPad1d = _pad_module("CircularPad1d", 1, "circular", "Wraps the last dim around.")


CircularPad2d = _pad_module("CircularPad2d", 2, "circular", "Wraps the last 2 dims around.")


CircularPad3d = _pad_module("CircularPad3d", 3, "circular", "Wraps the last 3 dims around.")


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)


__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]
