"""Random ops whose parameters are tensors: `standard_gamma`, `poisson`, `binomial`.

Each draws element by element, in C order, from an nbflow Generator's numpy stream (PCG64)
inside an `@njit` kernel: numba's Generator methods run numpy's own algorithms on the same
bit stream, so a seed gives the same draws as numpy (`ref`) and as eager or graph mode. Draws
are float64, then rounded to the parameters' dtype. Parameters are checked when the kernel
runs (so a program checks them at run time), raising DomainError.

On a GPU the draws are made on the host from the same Generator and copied over (as dropout's
mask is): a seeded run gives the same values on either device.

`standard_gamma` is differentiable by implicit reparameterization (PyTorch's
_standard_gamma_grad): a sample x with CDF level P(alpha, x) held fixed moves as
dx/dalpha = -(dP/dalpha) / (dP/dx), computed by `standard_gamma_grad`.
"""

import math

import numpy as np
from numba.extending import register_jitable

from ..core import Attr, Op, Spec, broadcast_shapes
from ..core import dtypes as dt
from ..core.errors import AttrError, DomainError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..kernels.cuda.loader import impl
from ..runtime import device as devices
from . import special
from ._define import elementwise
from .creation import Generator, default_generator

FLOATS = dt.FLOATS
GENERATOR = {"generator": Attr("any", None, optional=True)}
POISSON_MAX_RATE = 1e18  # numpy's sampler refuses rates near 2^63 (its counts are int64)

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _gamma_cpu(gen, alpha, out):
    for i in range(out.size):
        out[i] = gen.standard_gamma(alpha[i])


@njit(**JIT)
def _poisson_cpu(gen, rate, out):
    for i in range(out.size):
        out[i] = gen.poisson(rate[i])


@njit(**JIT)
def _binomial_cpu(gen, count, prob, out):
    for i in range(out.size):
        out[i] = gen.binomial(count[i], prob[i])


def _stream(generator) -> np.random.Generator:
    if generator is not None and not isinstance(generator, Generator):
        raise AttrError("generator must be an nbflow.Generator")
    return (generator or default_generator).numpy


def _flat(a, shape, dtype) -> np.ndarray:
    """a broadcast to shape, as a contiguous 1-D array of dtype (the kernels index flat)."""
    return np.ascontiguousarray(np.broadcast_to(a, shape), dtype).reshape(-1)


def _check(name, ok, what, values):
    if not np.all(ok):
        bad = np.asarray(values)[~np.asarray(ok)].reshape(-1)[:3]
        raise DomainError(f"{name}: {what}, got {', '.join(repr(float(v)) for v in bad)}")


def _write(out, draws):
    out[...] = draws.reshape(out.shape).astype(out.dtype)  # (numpy rounds to float16 too)


def _on_host(cpu_launch):
    """A GPU launcher drawing on the host with the CPU launcher (the same Generator, so the
    same values as on the CPU) and copying the draws into the GPU output."""

    def launch(*arrays, **attrs):
        *ins, out = arrays
        host = np.empty(tuple(out.shape), out.dtype)
        cpu_launch(*[devices.to_host(a) for a in ins], host, **attrs)
        impl().copy_into(devices.to_device(host, devices.device_of(out)), out)

    return launch


def _spec(*specs, generator=None):
    """The parameters' broadcast shape, in the last one's dtype (binomial's prob)."""
    _stream(generator)
    return Spec(broadcast_shapes(*(s.shape for s in specs)), specs[-1].dtype)


def _random_op(name, inputs, launch, ref, grad=None, doc=""):
    return Op(
        name=name,
        inputs=inputs,
        outputs=("out",),
        spec=_spec,
        kernels={"cpu": launch, "cuda": _on_host(launch)},
        dtypes=FLOATS,
        ref=ref,
        grad=grad,
        differentiable=grad is not None,  # poisson's and binomial's draws are counts
        attrs=GENERATOR,
        promote=(len(inputs) - 1,),  # binomial's dtype is its prob's; its count is any number
        doc=doc,
    )


# ---------------------------------------------------------------- standard_gamma


def _gamma_launch(concentration, out, generator=None):
    a = _flat(concentration, out.shape, np.float64)
    _check("standard_gamma", np.isfinite(a) & (a > 0), "needs finite concentration > 0", a)
    draws = np.empty(a.size)
    _gamma_cpu(_stream(generator), a, draws)
    _write(out, np.maximum(draws, np.finfo(out.dtype).tiny))  # PyTorch's clamp away from 0


def _gamma_ref(concentration, generator=None):
    a = np.asarray(concentration, np.float64)
    draws = _stream(generator).standard_gamma(a)
    return np.maximum(draws, np.finfo(concentration.dtype).tiny).astype(concentration.dtype)


standard_gamma = _random_op(
    "standard_gamma",
    ("concentration",),
    _gamma_launch,
    _gamma_ref,
    grad=lambda g, out, a, generator=None: (g * standard_gamma_grad(a, out),),
    doc="Gamma(concentration, 1) samples, at least the dtype's smallest normal number; "
    "differentiable in concentration by implicit reparameterization.",
)


# P(a, x) and Q(a, x) = 1 - P(a, x): the scalar bodies of nbflow.special's gammainc and
# gammaincc (float64 Cephes), callable from another body
_lower = register_jitable(special.gammainc.scalar_body)
_upper = register_jitable(special.gammaincc.scalar_body)


@register_jitable
def _cdf(a, x, upper):
    """P(a, x), or -Q(a, x) = P(a, x) - 1 where P is above 1/2 (so its differences in a keep
    the digits that 1 - Q would cancel)."""
    return -_upper(a, x) if upper else _lower(a, x)


@register_jitable
def _dlower_da(a, x):
    """dP(a, x)/da by the 7-point central difference (error O(h^6)). h is 1e-2 of the scale
    on which P varies in a: a for small a, sqrt(a) for large a, 1 / |log(x / a)| far in a
    tail (P ~ x^a / Gamma(a + 1) there). A large step keeps the rounding of P (1e-16, but
    1e-10 at a = 1e6, where its exponent a log x - x - lgamma(a) cancels) from growing much
    when divided by h."""
    h = 1e-2 * min(a, math.sqrt(a), 1.0 / max(abs(math.log(x / a)), 1e-300))
    upper = _lower(a, x) > 0.5
    d1 = _cdf(a + h, x, upper) - _cdf(a - h, x, upper)
    d2 = _cdf(a + 2.0 * h, x, upper) - _cdf(a - 2.0 * h, x, upper)
    d3 = _cdf(a + 3.0 * h, x, upper) - _cdf(a - 3.0 * h, x, upper)
    return (45.0 * d1 - 9.0 * d2 + d3) / (60.0 * h)


def _gamma_grad_ref(concentration, sample):
    """The kernel's formula on scipy's gammainc / gammaincc (tests/test_random_params.py
    checks the gradient against a plain difference of scipy's too)."""
    from scipy import special as sc

    a, x = np.broadcast_arrays(np.asarray(concentration, np.float64), np.asarray(sample))
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        h = 1e-2 * np.minimum(np.minimum(a, np.sqrt(a)), 1 / np.abs(np.log(x / a)))
        upper = sc.gammainc(a, x) > 0.5

        def d(k):
            lower = sc.gammainc(a + k * h, x) - sc.gammainc(a - k * h, x)
            return np.where(upper, sc.gammaincc(a - k * h, x) - sc.gammaincc(a + k * h, x), lower)

        dp_da = (45 * d(1) - 9 * d(2) + d(3)) / (60 * h)
        density = np.exp((a - 1) * np.log(x) - x - sc.gammaln(a))
        ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        out = np.where(ok, np.where(dp_da == 0, 0.0, -dp_da / density), np.nan)
        dtype = np.result_type(concentration, sample)
        return out.astype(dtype if dtype.kind == "f" else np.float32)


@elementwise(
    dtypes=FLOATS,
    ref=_gamma_grad_ref,
    to_float=True,
    no_derivative="the second derivative of a Gamma sample is not implemented (nor in PyTorch)",
)
def standard_gamma_grad(concentration, sample):
    """d sample / d concentration of a Gamma(concentration, 1) sample whose CDF level is held
    fixed: -(dP/da) / (dP/dx), dP/dx = x^(a-1) e^-x / Gamma(a) (NaN off a > 0, x > 0)."""
    a, x = special._f64(concentration), special._f64(sample)
    if not (a > 0.0 and x > 0.0 and a < math.inf and x < math.inf):
        return math.nan
    d = _dlower_da(a, x)
    if d == 0.0:
        return 0.0
    log_density = (a - 1.0) * math.log(x) - x - math.lgamma(a)
    # |d| / density in logs: both underflow together far in a tail
    return -math.copysign(math.exp(math.log(abs(d)) - log_density), d)


# ---------------------------------------------------------------- poisson


def _poisson_launch(rate, out, generator=None):
    lam = _flat(rate, out.shape, np.float64)
    ok = (lam >= 0) & (lam <= POISSON_MAX_RATE)
    _check("poisson", ok, f"needs a rate in [0, {POISSON_MAX_RATE:g}]", lam)
    draws = np.empty(lam.size, np.int64)
    _poisson_cpu(_stream(generator), lam, draws)
    _write(out, draws)


def _poisson_ref(rate, generator=None):
    return _stream(generator).poisson(np.asarray(rate, np.float64)).astype(rate.dtype)


poisson = _random_op(
    "poisson",
    ("rate",),
    _poisson_launch,
    _poisson_ref,
    doc="Poisson(rate) counts, in rate's float dtype.",
)


# ---------------------------------------------------------------- binomial


def _counts(count, shape):
    n = _flat(count, shape, np.float64)
    ok = (n >= 0) & (n == np.floor(n)) & (n < 2.0**63)
    _check("binomial", ok, "needs a count that is a non-negative integer", n)
    return n.astype(np.int64)


def _binomial_launch(count, prob, out, generator=None):
    n, p = _counts(count, out.shape), _flat(prob, out.shape, np.float64)
    _check("binomial", (p >= 0) & (p <= 1), "needs a probability in [0, 1]", p)
    draws = np.empty(n.size, np.int64)
    _binomial_cpu(_stream(generator), n, p, draws)
    _write(out, draws)


def _binomial_ref(count, prob, generator=None):
    shape = np.broadcast_shapes(np.shape(count), np.shape(prob))
    n = np.broadcast_to(count, shape).astype(np.int64)
    draws = _stream(generator).binomial(n, np.broadcast_to(prob, shape).astype(np.float64))
    return draws.astype(prob.dtype)


binomial = _random_op(
    "binomial",
    ("count", "prob"),
    _binomial_launch,
    _binomial_ref,
    doc="Binomial(count, prob) successes (count broadcast with prob), in prob's float dtype.",
)

__all__ = ["standard_gamma", "standard_gamma_grad", "poisson", "binomial"]
