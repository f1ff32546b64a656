"""PyTorch's ranges and index grids beyond arange and linspace: logspace, range (end
included; deprecated in PyTorch), tril_indices and triu_indices."""

import math
import warnings

import numpy as np

from ..argcheck import integer, number
from ..core import dtypes as dt
from ..core.errors import DomainError, DTypeError
from .creation import endpoint, is_complex_range, linspace, on_device
from .elementwise import astype


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """`steps` numbers from base**start to base**end, evenly spaced in the exponent (start
    and end may be 0-d tensors). Complex ends (or a complex dtype) give complex numbers (the
    principal powers), in the default complex dtype unless given."""
    start, end = endpoint("logspace", "start", start), endpoint("logspace", "end", end)
    complex_range = is_complex_range(start, end, dtype)
    for arg, v in (("start", start), ("end", end), ("base", base)):
        if not (complex_range and arg != "base" and isinstance(v, (complex, np.complexfloating))):
            number("logspace", arg, v)
    steps = integer(steps, "logspace: steps", 0)
    wide = dt.complex128 if complex_range else dt.float64
    exponents = linspace(start, end, steps, dtype=wide)
    # computed in float64 (complex128), then rounded once to the dtype asked for
    values = float(base) ** exponents
    if dtype is None and complex_range:
        dtype = dt.to_complex(dt.default_float())
    return on_device(astype(values, dt.as_dtype(dtype)), device, requires_grad)


def _triangle_indices(name, pick, row, col, offset, dtype, device):
    row, col = integer(row, f"{name}: row", 0), integer(col, f"{name}: col", 0)
    offset = integer(offset, f"{name}: offset")
    dtype = dt.as_dtype(dtype)
    if dtype not in dt.INTS:
        raise DTypeError(f"{name}: dtype must be int32 or int64, got {dtype}")
    # fixed by the ints: numpy's indices (PyTorch's order), made a tensor (a graph constant)
    indices = np.stack(pick(row, offset, col)).astype(np.int64).reshape(2, -1)
    return on_device(astype(indices, dtype), device)


def tril_indices(row, col, offset=0, *, dtype=dt.int64, device=None):
    """The (2, N) row and column indices of the lower triangle of a row x col matrix, on and
    below the `offset`-th diagonal, row by row."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=dt.int64, device=None):
    """The (2, N) row and column indices of the upper triangle of a row x col matrix, on and
    above the `offset`-th diagonal, row by row."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def inclusive_range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """PyTorch's deprecated torch.range: start, start + step, ... up to and including end,
    in the default float dtype unless given (nbflow.range is this; use arange)."""
    warnings.warn(
        "torch.range is deprecated: use arange, which excludes end", UserWarning, stacklevel=2
    )
    if end is None:
        start, end = 0, start
    for arg, v in (("start", start), ("end", end), ("step", step)):
        number("range", arg, v)
    if step == 0 or (end - start) * step < 0:
        raise DomainError(f"range: end {end} can't be reached from start {start} by step {step}")
    count = int(math.floor((end - start) / step)) + 1
    values = start + step * np.arange(count, dtype=np.float64)
    dtype = dt.as_dtype(dtype)
    return on_device(astype(values, dtype), device, requires_grad)


__all__ = [
    "logspace",
    "tril_indices",
    "triu_indices",
]
