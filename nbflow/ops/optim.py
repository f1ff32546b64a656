"""Optimizer update ops: one in-place op per parameter update (no gradient).

`sgd_update_(param, grad, velocity)` writes param (and velocity) in place, so in graph mode the
update is annotated in the IR (`%w!: ... = sgd_update_(...)`) rather than copied.
"""

import numpy as np
from numba import njit

from .. import dtypes as dt
from ..core import Attr, Op, Spec
from ..errors import ShapeError, UnsupportedError
from ..kernels.cpu import JIT


@njit(**JIT)
def _sgd_kernel(p, g, v, p_out, v_out, lr, momentum, dampening, weight_decay, nesterov):
    # p_out and v_out may be p and v themselves: each element is read before it is written
    for i in range(p.size):
        d = g[i] + weight_decay * p[i]
        if momentum != 0:
            vi = momentum * v[i] + (1 - dampening) * d
            v_out[i] = vi
            d = d + momentum * vi if nesterov else vi
        p_out[i] = p[i] - lr * d


def _sgd_spec(p, g, v, **attrs):
    for name, s in (("grad", g), ("velocity", v)):
        if s.shape != p.shape:
            raise ShapeError(f"{name} must have the parameter's shape")
    return Spec(p.shape, p.dtype), Spec(v.shape, v.dtype)


def _sgd_cpu(p, g, v, p_out, v_out, lr, momentum, dampening, weight_decay, nesterov):
    if not (p_out.flags.c_contiguous and v_out.flags.c_contiguous):
        raise UnsupportedError("sgd_update_: parameters must be contiguous")
    flat = [np.ravel(a) for a in (p, g, v, p_out, v_out)]  # views of contiguous buffers
    _sgd_kernel(*flat, lr, momentum, dampening, weight_decay, nesterov)


def _sgd_ref(p, g, v, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    d = g + weight_decay * p
    if momentum:
        v = momentum * v + (1 - dampening) * d
        d = d + momentum * v if nesterov else v
    return p - lr * d, v


sgd_update_ = Op(
    name="sgd_update_",
    inputs=("param", "grad", "velocity"),
    outputs=("param_out", "velocity_out"),
    spec=_sgd_spec,
    kernels={"cpu": _sgd_cpu, "cuda": None},
    dtypes=dt.FLOATS,
    ref=_sgd_ref,
    differentiable=False,
    attrs={
        "lr": Attr("float"),
        "momentum": Attr("float", 0.0),
        "dampening": Attr("float", 0.0),
        "weight_decay": Attr("float", 0.0),
        "nesterov": Attr("bool", False),
    },
    inplace={0: 0, 1: 2},
    doc="SGD step in place: d = g + wd p; v = m v + (1 - dampening) d; p -= lr (d + m v if "
    "nesterov else v) (PyTorch's SGD; velocity unused when momentum is 0).",
)

__all__ = ["sgd_update_"]
