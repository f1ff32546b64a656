"""PyTorch's top-level products and norms (tensordot, chain_matmul, dist, renorm, vander),
nanmedian and mode, the legacy linear-algebra names (svd, qr, cholesky, ...: torch.linalg's
functions under their old signatures) and the nn functions torch also has at the top level
with their own signatures (reduction codes for the losses)."""

import warnings
from collections import namedtuple

import numpy as np

from ..argcheck import known_size, number, shown, tensor_args
from ..core import UNKNOWN
from ..core import dtypes as dt
from ..core.errors import (
    AttrError,
    DomainError,
    DTypeError,
    ShapeError,
)
from .creation import full_like, zeros
from .einsum import einsum
from .elementwise import (
    abs,
    astype,
    clone,
    eq,
    floor_div,
    isnan,
    logical_not,
    maximum,
    where,
)
from .index import take_along_axis
from .index_more import _dim
from .reduce import ValuesIndices, amax, amin, norm
from .reduce import sum as reduce_sum
from .select import (
    _highest,
    _int,
)
from .shape import (
    axis_of,
    broadcast_to,
    movedim,
    reshape,
    squeeze,
    stack,
    swapaxes,
    unsqueeze,
)
from .sorting import median, sort_op

# ---------------------------------------------------------------- products, norms


def tensordot(a, b, dims=2):
    """The sum of products over a's last `dims` dims and b's first (or over the dim lists
    dims=(dims_a, dims_b)), composed as an einsum; a contracted dim of size 1 broadcasts
    against the other's, as in PyTorch."""
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        k = _int("tensordot", "dims", dims, low=0)
        if k > a.ndim or k > b.ndim:
            raise ShapeError(f"tensordot: dims={k} exceeds the dims of {a.shape} or {b.shape}")
        da, db = list(range(a.ndim - k, a.ndim)), list(range(k))
    else:
        try:
            da, db = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
        except (TypeError, ValueError):
            raise AttrError(f"tensordot: dims must be an int or two lists, got {dims!r}") from None
    if len(da) != len(db):
        raise ShapeError(f"tensordot: {len(da)} dims of a against {len(db)} of b")
    da, db = [axis_of(d, a.ndim) for d in da], [axis_of(d, b.ndim) for d in db]
    a, b = _contracted_sizes_matched(a, b, da, db)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa, sb = [next(letters) for _ in range(a.ndim)], [None] * b.ndim
    for i, j in zip(da, db):
        if UNKNOWN not in (a.shape[i], b.shape[j]) and a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: dim {i} of {a.shape} and dim {j} of {b.shape} differ")
        sb[j] = sa[i]
    sb = [s or next(letters) for s in sb]
    kept = [s for i, s in enumerate(sa) if i not in da] + [
        s for j, s in enumerate(sb) if j not in db
    ]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(kept)}", a, b)


def _contracted_sizes_matched(a, b, da, db):
    """a and b with a contracted dim of size 1 against a longer one summed on the other side
    (kept as size 1): PyTorch's tensordot broadcasts such dims."""
    for i, j in zip(da, db):
        if a.shape[i] == 1 and b.shape[j] not in (1, UNKNOWN):
            b = reduce_sum(b, axis=j, keepdims=True)
        elif b.shape[j] == 1 and a.shape[i] not in (1, UNKNOWN):
            a = reduce_sum(a, axis=i, keepdims=True)
    return a, b


def chain_matmul(*matrices):
    """The product of the matrices (deprecated in PyTorch: linalg.multi_dot)."""
    warnings.warn("chain_matmul is deprecated: use linalg.multi_dot", UserWarning, stacklevel=3)
    xs = tensor_args("chain_matmul", matrices)
    if any(x.ndim != 2 for x in xs) or not xs:
        raise ShapeError(f"chain_matmul needs 2-D matrices, got {[tuple(x.shape) for x in xs]}")
    return xs[0] if len(xs) == 1 else _linalg().multi_dot(list(xs))


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), over every element."""
    for x in (input, other):
        if not dt.is_float(x.dtype):
            raise DTypeError(f"dist: inputs must be float tensors, got {x.dtype}")
    return norm(input - other, number("dist", "p", p))


def renorm(input, p, dim, maxnorm):
    """input with each slice along `dim` whose p-norm exceeds maxnorm scaled down to norm
    maxnorm (by maxnorm / (norm + 1e-7), as PyTorch)."""
    if not dt.is_float(input.dtype):
        raise DTypeError(f"renorm: input must be a float tensor, got {input.dtype}")
    p, maxnorm = number("renorm", "p", p), number("renorm", "maxnorm", maxnorm)
    if not p > 0 or not maxnorm >= 0:
        raise DomainError(f"renorm: p must be > 0 and maxnorm >= 0, got p={p}, maxnorm={maxnorm}")
    a = axis_of(dim, input.ndim)
    rest = tuple(d for d in range(input.ndim) if d != a)
    size = norm(input, p, axis=rest, keepdims=True) if rest else abs(input)
    return input * where(size > maxnorm, maxnorm / (size + 1e-7), 1.0)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: columns x**(N-1), ..., x**0 (x**0 first with
    increasing); integers (and bools) in int64, as PyTorch."""
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be 1-D, got shape {x.shape}")
    n = known_size("vander", x, 0) if N is None else _int("vander", "N", N, low=0)
    if not dt.is_float(x.dtype):
        x = astype(x, dt.int64)
    if n == 0:
        return zeros(known_size("vander", x, 0), 0, dtype=x.dtype)
    columns = [full_like(x, 1)]
    for _ in range(n - 1):  # products, not powers: pow's gradient at 0 would be 0 * inf
        columns.append(columns[-1] * x)
    return stack(columns if increasing else columns[::-1], axis=1)


# ---------------------------------------------------------------- medians and modes


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaN: the lower median of the numbers (NaN where there are none); with
    dim, (values, indices) along it."""
    if dim is None:
        return nanmedian(reshape(input, (-1,)), 0).values
    if not dt.is_float(input.dtype):
        return median(input, dim, keepdim)
    if input.ndim == 0:  # one element (PyTorch's): dim 0 or -1 of a 0-d tensor
        _dim("nanmedian", reshape(input, (1,)), dim)
        values, indices = nanmedian(reshape(input, (1,)), 0)
        return ValuesIndices(reshape(values, ()), reshape(indices, ()))
    a, n = _dim("nanmedian", input, dim)
    if n == 0:
        raise ShapeError(f"nanmedian of an empty dim (input of shape {input.shape})")
    values, indices = sort_op(input, axis=a)  # NaN sorts last, stably
    numbers = reduce_sum(logical_not(isnan(input)), axis=a, keepdims=True)
    k = floor_div(maximum(numbers - 1, 0), 2)
    value, index = take_along_axis(values, k, a), take_along_axis(indices, k, a)
    if not keepdim:
        value, index = squeeze(value, a), squeeze(index, a)
    return ValuesIndices(value, index)


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along `dim` (the smallest of equally
    frequent ones) and the last index where it occurs, as PyTorch's CPU mode. Compares every
    pair along dim (memory numel * n)."""
    if input.ndim == 0:
        values, indices = mode(reshape(input, (1,)), 0, keepdim=False)
        return ValuesIndices(values, indices)
    a, n = _dim("mode", input, dim)
    if n == 0:
        raise ShapeError(f"mode of an empty dim (input of shape {input.shape})")
    x = movedim(input, a, -1)
    key = astype(x, dt.int64) if x.dtype == dt.bool_ else x
    counts = reduce_sum(eq(unsqueeze(key, -1), unsqueeze(key, -2)), axis=-1)
    top = eq(counts, amax(counts, axis=-1, keepdims=True))
    best = amin(where(top, key, _highest(key.dtype)), axis=-1, keepdims=True)
    index = amax(where(eq(key, best), np.arange(n), -1), axis=-1, keepdims=True)
    value = take_along_axis(x, index, -1)  # the gradient goes to that one element
    if keepdim:
        return ValuesIndices(movedim(value, -1, a), movedim(index, -1, a))
    return ValuesIndices(squeeze(value, -1), squeeze(index, -1))


# ---------------------------------------------------------------- linear algebra


SVD = namedtuple("SVD", ["U", "S", "V"])
TriangularSolve = namedtuple("TriangularSolve", ["solution", "cloned_coefficient"])


def _linalg():
    from .. import linalg  # (lazily: nbflow.linalg imports the ops)

    return linalg


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^T (V, not linalg.svd's Vh); some=False gives the
    full U and V; compute_uv=False gives zero U and V of the full shapes, as PyTorch."""
    linalg = _linalg()
    for arg, v in (("some", some), ("compute_uv", compute_uv)):
        if not isinstance(v, (bool, np.bool_)):
            raise AttrError(f"svd: {arg} must be a bool, got {shown(v)}")
    if not compute_uv:
        m, n = (known_size("svd", input, d) for d in (-2, -1))
        batch = tuple(input.shape[:-2])
        u, v = (zeros(*batch, k, k, dtype=input.dtype) for k in (m, n))
        return SVD(u, linalg.svdvals(input), v)
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return SVD(u, s, swapaxes(vh, -1, -2))


def qr(input, some=True):
    """(Q, R): linalg.qr in mode "reduced" (some) or "complete"."""
    if not isinstance(some, (bool, np.bool_)):
        raise AttrError(f"qr: some must be a bool, got {shown(some)}")
    return _linalg().qr(input, "reduced" if some else "complete")


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse, singular values below rcond times the largest taken as 0."""
    return _linalg().pinv(input, rtol=number("pinverse", "rcond", rcond))


def cholesky(input, upper=False):
    """The Cholesky factor (lower, or upper with upper=True): linalg.cholesky."""
    return _linalg().cholesky(input, upper=upper)


def cholesky_solve(B, L, upper=False):
    """X with A X = B, A given by its Cholesky factor L (A = L L^T, or U^T U with upper)."""
    solve = _linalg().solve_triangular
    if upper:
        return solve(L, solve(swapaxes(L, -1, -2), B, upper=False), upper=True)
    return solve(swapaxes(L, -1, -2), solve(L, B, upper=False), upper=True)


def cholesky_inverse(L, upper=False):
    """The inverse of A from its Cholesky factor L (A = L L^T, or U^T U with upper)."""
    n = known_size("cholesky_inverse", L, -1)
    identity = broadcast_to(astype(np.eye(n), L.dtype), tuple(L.shape))
    return cholesky_solve(identity, L, upper)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """(solution, cloned_coefficient): X with A X = b (A^T X = b with transpose), A
    triangular (deprecated in PyTorch: linalg.solve_triangular)."""
    coefficient = swapaxes(A, -1, -2) if transpose else A
    x = _linalg().solve_triangular(
        coefficient, b, upper=upper != bool(transpose), unitriangular=unitriangular
    )
    return TriangularSolve(x, clone(A))


# ---------------------------------------------------------------- nn ops at the top level
# (those whose torch.* signature is F's are imported by nbflow/__init__.py; these differ)


def _functional():
    from ..nn import functional  # (lazily: nn is built on the ops)

    return functional


_REDUCTION_CODES = {0: "none", 1: "mean", 2: "sum"}


def _reduction(name, reduction):
    """The top-level losses take torch's reduction codes (0 none, 1 mean, 2 sum); a name is
    passed on as it is."""
    if isinstance(reduction, str):
        return reduction
    if not isinstance(reduction, (int, np.integer)) or isinstance(reduction, bool):
        raise AttrError(f"{name}: reduction must be 0, 1, 2 or a name, got {shown(reduction)}")
    if reduction not in _REDUCTION_CODES:
        raise AttrError(f"{name}: reduction must be 0, 1, 2 or a name, got {reduction!r}")
    return _REDUCTION_CODES[int(reduction)]


# torch.kl_div and the others below default to no reduction (what torch 2.x's top-level
# functions do when reduction is left out), unlike F's "mean"
def kl_div(input, target, reduction=0, *, log_target=False):
    """F.kl_div with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("kl_div", reduction)
    return _functional().kl_div(input, target, reduction=r, log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.cosine_embedding_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("cosine_embedding_loss", reduction)
    return _functional().cosine_embedding_loss(input1, input2, target, margin, reduction=r)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.margin_ranking_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("margin_ranking_loss", reduction)
    return _functional().margin_ranking_loss(input1, input2, target, margin, reduction=r)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """F.hinge_embedding_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("hinge_embedding_loss", reduction)
    return _functional().hinge_embedding_loss(input, target, margin, reduction=r)


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0
):
    """F.triplet_margin_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("triplet_margin_loss", reduction)
    return _functional().triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=r
    )


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """F.poisson_nll_loss with every argument given and a reduction code."""
    r = _reduction("poisson_nll_loss", reduction)
    return _functional().poisson_nll_loss(
        input, target, log_input=log_input, full=full, eps=eps, reduction=r
    )


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    """F.instance_norm in torch.instance_norm's argument order (cudnn_enabled is ignored)."""
    return _functional().instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def alpha_dropout(input, p, train):
    """F.alpha_dropout(input, p, training=train)."""
    return _functional().alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input, p, train):
    """F.feature_alpha_dropout(input, p, training=train)."""
    return _functional().feature_alpha_dropout(input, p, training=train)


def adaptive_max_pool1d(input, output_size):
    """(values, indices) of F.adaptive_max_pool1d (torch's top-level one returns both)."""
    return tuple(_functional().adaptive_max_pool1d(input, output_size, return_indices=True))


__all__ = [
    "tensordot",
    "chain_matmul",
    "dist",
    "renorm",
    "vander",
    "nanmedian",
    "mode",
    "svd",
    "qr",
    "pinverse",
    "cholesky",
    "cholesky_solve",
    "cholesky_inverse",
    "triangular_solve",
    "kl_div",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "triplet_margin_loss",
    "poisson_nll_loss",
    "instance_norm",
    "alpha_dropout",
    "feature_alpha_dropout",
    "adaptive_max_pool1d",
]
