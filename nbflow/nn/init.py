"""Initialisers (PyTorch's torch.nn.init): each fills a tensor in place, under no_grad, and
returns it. The random ones take an optional nbflow.Generator (default: the default generator,
reseeded by nbflow.manual_seed)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import ops
from ..core import no_grad
from ..core.errors import DomainError, ShapeError
from ..eager.tensor import Tensor, tensor
from ..ops.creation import default_generator

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def _write(t: Tensor, value: Tensor) -> Tensor:
    with no_grad():
        ops.copy_(t, value)
    return t


def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill t with samples from uniform[a, b)."""
    return _write(t, ops.uniform(t.shape, low=a, high=b, dtype=t.dtype, generator=generator))


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill t with samples from normal(mean, std)."""
    return _write(t, ops.normal(t.shape, mean=mean, std=std, dtype=t.dtype, generator=generator))


def constant_(t: Tensor, value: float) -> Tensor:
    with no_grad():
        ops.fill_(t, value)
    return t


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "identity")
    if nonlinearity in linear or nonlinearity.startswith("conv_transpose"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise DomainError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def fan_in_and_fan_out(shape) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight laid out as PyTorch's: (out, in, *kernel)."""
    if len(shape) < 2:
        raise ShapeError(f"fan in and fan out need at least 2 dims, got shape {tuple(shape)}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise DomainError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fan_in_and_fan_out(shape)
    return fan_in if mode == "fan_in" else fan_out


def _no_elements(t: Tensor) -> bool:
    """Whether t is empty: then a fan-based initialiser does nothing (PyTorch warns, as here;
    its fan may be 0)."""
    if 0 not in t.shape:
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
    return True


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot: uniform(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out))."""
    if _no_elements(t):
        return t
    fan_in, fan_out = fan_in_and_fan_out(t.shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    if _no_elements(t):
        return t
    fan_in, fan_out = fan_in_and_fan_out(t.shape)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(
    t: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """He: uniform(-b, b) with b = gain * sqrt(3 / fan). With a=sqrt(5) (PyTorch's default for
    Linear and Conv weights) b = 1 / sqrt(fan_in)."""
    if _no_elements(t):
        return t
    gain = calculate_gain(nonlinearity, a)
    bound = gain * math.sqrt(3.0 / _fan(t.shape, mode))
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(
    t: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    if _no_elements(t):
        return t
    gain = calculate_gain(nonlinearity, a)
    return normal_(t, 0.0, gain / math.sqrt(_fan(t.shape, mode)), generator)


# ---------------------------------------------------------------- structured initialisers
# Drawn in numpy from the generator's stream (float64), then written in the tensor's dtype and
# on its device.


def _numpy(generator) -> np.random.Generator:
    return (generator or default_generator).numpy


def _write_array(t: Tensor, values: np.ndarray) -> Tensor:
    return _write(t, tensor(values.reshape(t.shape), dtype=t.dtype).to(t.device))


def orthogonal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (Saxe et al.): t viewed as (rows, the rest) has orthonormal
    rows or columns, whichever are fewer, times gain. QR of a normal matrix, its R's diagonal
    signs folded in so that the result is uniform over orthogonal matrices."""
    if t.ndim < 2:
        raise DomainError("Only tensors with 2 or more dimensions are supported")
    if t.size == 0:
        return t
    rows = t.shape[0]
    cols = t.size // rows
    flat = _numpy(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write_array(t, q * gain)


def _normal_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(
    t: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None
) -> Tensor:
    """Samples of normal(mean, std) restricted to [a, b] (redrawn until inside: exact, and
    fast unless [a, b] holds almost none of the distribution's mass)."""
    if not a < b:
        raise DomainError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    if not std > 0:
        raise DomainError(f"trunc_normal_: std must be > 0, got {std}")
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    if mass < 1e-6:
        raise DomainError(
            f"trunc_normal_: [{a}, {b}] holds {mass:.2g} of normal({mean}, {std})'s mass; "
            "move mean into (or next to) the interval"
        )
    gen = _numpy(generator)
    out = np.empty(t.size)
    missing = np.arange(t.size)
    while missing.size:
        draws = gen.normal(mean, std, missing.size)
        inside = (draws >= a) & (draws <= b)
        out[missing[inside]] = draws[inside]
        missing = missing[~inside]
    return _write_array(t, out)


def eye_(t: Tensor) -> Tensor:
    """The identity matrix (ones on the diagonal of a 2-D tensor, also a rectangular one)."""
    if t.ndim != 2:
        raise ShapeError("Only tensors with 2 dimensions are supported")
    return _write_array(t, np.eye(*t.shape))


def dirac_(t: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta of a 3-, 4- or 5-D convolution weight: the convolution keeps as many
    input channels as it can, per group (a 1 at the kernel's centre of weight[g*out + d, d])."""
    if t.ndim not in (3, 4, 5):
        raise ShapeError("Only tensors with 3, 4, or 5 dimensions are supported")
    if not isinstance(groups, int) or groups < 1 or t.shape[0] % groups:
        raise ShapeError(f"dim 0 ({t.shape[0]}) must be divisible by groups ({groups})")
    out_per_group = t.shape[0] // groups
    values = np.zeros(t.shape)
    centre = tuple(k // 2 for k in t.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, t.shape[1])):
            values[(g * out_per_group + d, d, *centre)] = 1.0
    return _write_array(t, values)


def sparse_(t: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A sparse 2-D matrix (Martens): normal(0, std) with ceil(sparsity * rows) zeros in each
    column, at rows drawn at random."""
    if t.ndim != 2:
        raise DomainError("Only tensors with 2 dimensions are supported")
    if not 0 <= sparsity <= 1:
        raise DomainError(f"sparsity must be in [0, 1], got {sparsity}")
    rows, cols = t.shape
    gen = _numpy(generator)
    values = gen.normal(0.0, std, (rows, cols))
    zeros = math.ceil(sparsity * rows)
    for col in range(cols):
        values[gen.permutation(rows)[:zeros], col] = 0.0
    return _write_array(t, values)
