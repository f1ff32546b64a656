"""nbflow.special: PyTorch's torch.special on nbflow's ops.

The functions nbflow has under other names are re-exported here under PyTorch's (expit is
sigmoid, gammaln is lgamma, psi is digamma, ...); the others are elementwise ops declared in
nbflow/ops/special.py (one scalar body each, so they fuse in graph mode and run on the GPU),
or compositions of ops (multigammaln, the shifted Chebyshev polynomials, softmax with a
dtype). Everything runs eagerly and under @nbflow.jit, with PyTorch's gradients: none for the
Bessel functions of PyTorch's that have none, the Airy function and the polynomials, and a
GradientError for the first argument of zeta, gammainc and gammaincc, as PyTorch raises.
nbflow's modified_bessel_i0 and modified_bessel_i1 are i0 and i1, so they do differentiate.
"""

import math

from .argcheck import tensors
from .core import dtypes as dt
from .core import is_int, public
from .core.errors import DomainError, UnsupportedError
from .ops.elementwise import (
    astype,
    erf,
    erfinv,
    exp2,
    expm1,
    log1p,
    logit,
    round,
    sigmoid,
    sinc,
    xlogy,
)
from .ops.floating import erfc, i0
from .ops.gamma import digamma, lgamma, polygamma
from .ops.nn import log_softmax as _log_softmax
from .ops.nn import softmax as _softmax
from .ops.reduce import logsumexp as _logsumexp
from .ops.select import eager_values
from .ops.special import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    entr,
    erfcx,
    gammainc,
    gammaincc,
    hermite_polynomial_h,
    hermite_polynomial_he,
    i0e,
    i1,
    i1e,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    log_ndtr,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    ndtri,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
    xlog1py,
    zeta,
)

# PyTorch's torch.special names for nbflow's ops
expit, gammaln, psi = sigmoid, lgamma, digamma
modified_bessel_i0, modified_bessel_i1 = i0, i1


def _with_dtype(input, dtype):
    return input if dtype is None else astype(input, dt.as_dtype(dtype))


def softmax(input, dim, *, dtype=None):
    """exp(input) / sum(exp(input)) along dim; with dtype, input is cast to it first."""
    return _softmax(_with_dtype(input, dtype), axis=dim)


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(input)) along dim, computed stably; with dtype, input is cast first."""
    return _log_softmax(_with_dtype(input, dtype), axis=dim)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, shifted by the max so it cannot overflow."""
    return _logsumexp(input, axis=dim, keepdims=keepdim)


MULTIGAMMALN_MAX_P = 4096


def multigammaln(input, p):
    """The log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum_j lgamma(input - j / 2), j = 0 .. p - 1.
    Every element must exceed (p - 1) / 2 (PyTorch raises otherwise; checked here where the
    values are known, that is eagerly)."""
    if not is_int(p) or not 1 <= p <= MULTIGAMMALN_MAX_P:  # one lgamma op per j: 2**63 hung
        raise DomainError(f"multigammaln: p must be an int in [1, {MULTIGAMMALN_MAX_P}], got {p!r}")
    p = int(p)
    try:
        values = eager_values("multigammaln", "input", input)
    except UnsupportedError:  # a graph value: its values are not known yet
        values = None
    if values is not None and not (values > (p - 1) / 2).all():
        raise DomainError(
            f"multigammaln: all elements must be greater than (p-1)/2 = {(p - 1) / 2}"
        )
    total = lgamma(input)
    for j in range(1, p):
        total = total + lgamma(input - j / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


def _shifted(polynomial):
    def shifted(input, n):
        tensors(name, input=input)  # (a list would be repeated by * 2)
        return polynomial(input * 2 - 1, n)

    name = polynomial.name.replace("chebyshev", "shifted_chebyshev")
    shifted.__name__ = shifted.__qualname__ = name
    shifted.__doc__ = f"{polynomial.name}(2 x - 1, n): the polynomial shifted onto [0, 1]."
    return shifted


shifted_chebyshev_polynomial_t = _shifted(chebyshev_polynomial_t)
shifted_chebyshev_polynomial_u = _shifted(chebyshev_polynomial_u)
shifted_chebyshev_polynomial_v = _shifted(chebyshev_polynomial_v)
shifted_chebyshev_polynomial_w = _shifted(chebyshev_polynomial_w)

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]

globals().update({name: public(globals()[name]) for name in __all__})
