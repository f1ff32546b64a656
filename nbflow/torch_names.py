"""torch's top-level names that nbflow keeps in its namespaces: the legacy linear-algebra
functions (svd, qr, cholesky, ...: torch.linalg's under their old signatures, Tensor methods too,
and chain_matmul) and the nn functions torch also has at the top level with their own signatures
(reduction codes for the losses). nbflow/__init__.py re-exports them; F's functions whose torch.*
signature is F's own it imports from nn.functional directly."""

import warnings
from collections import namedtuple

import numpy as np

from . import linalg
from .argcheck import flag, known_size, number, shown, tensor_args
from .core import public
from .core.errors import AttrError, ShapeError
from .eager.operators import Operators, as_method
from .nn import functional
from .ops.creation import zeros
from .ops.elementwise import astype, clone
from .ops.shape import broadcast_to, swapaxes

# ---------------------------------------------------------------- linear algebra


SVD = namedtuple("SVD", ["U", "S", "V"])
TriangularSolve = namedtuple("TriangularSolve", ["solution", "cloned_coefficient"])


def chain_matmul(*matrices):
    """The product of the matrices (deprecated in PyTorch: linalg.multi_dot)."""
    warnings.warn("chain_matmul is deprecated: use linalg.multi_dot", UserWarning, stacklevel=3)
    xs = tensor_args("chain_matmul", matrices)
    if any(x.ndim != 2 for x in xs) or not xs:
        raise ShapeError(f"chain_matmul needs 2-D matrices, got {[tuple(x.shape) for x in xs]}")
    return xs[0] if len(xs) == 1 else linalg.multi_dot(list(xs))


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with input = U diag(S) V^T (V, not linalg.svd's Vh); some=False gives the
    full U and V; compute_uv=False gives zero U and V of the full shapes, as PyTorch."""
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
    return linalg.qr(input, "reduced" if some else "complete")


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse, singular values below rcond times the largest taken as 0."""
    return linalg.pinv(input, rtol=number("pinverse", "rcond", rcond))


def cholesky(input, upper=False):
    """The Cholesky factor (lower, or upper with upper=True): linalg.cholesky."""
    return linalg.cholesky(input, upper=upper)


def cholesky_solve(B, L, upper=False):
    """X with A X = B, A given by its Cholesky factor L (A = L L^T, or U^T U with upper)."""
    solve = linalg.solve_triangular
    if flag(upper, "cholesky_solve: upper"):
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
    coefficient = swapaxes(A, -1, -2) if flag(transpose, "triangular_solve: transpose") else A
    x = linalg.solve_triangular(
        coefficient, b, upper=upper != bool(transpose), unitriangular=unitriangular
    )
    return TriangularSolve(x, clone(A))


# ---------------------------------------------------------------- nn ops at the top level


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
    return functional.kl_div(input, target, reduction=r, log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.cosine_embedding_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("cosine_embedding_loss", reduction)
    return functional.cosine_embedding_loss(input1, input2, target, margin, reduction=r)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """F.margin_ranking_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("margin_ranking_loss", reduction)
    return functional.margin_ranking_loss(input1, input2, target, margin, reduction=r)


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """F.hinge_embedding_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("hinge_embedding_loss", reduction)
    return functional.hinge_embedding_loss(input, target, margin, reduction=r)


def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=0
):
    """F.triplet_margin_loss with a reduction code (0: none, 1: mean, 2: sum)."""
    r = _reduction("triplet_margin_loss", reduction)
    return functional.triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, reduction=r
    )


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """F.poisson_nll_loss with every argument given and a reduction code."""
    r = _reduction("poisson_nll_loss", reduction)
    return functional.poisson_nll_loss(
        input, target, log_input=log_input, full=full, eps=eps, reduction=r
    )


def instance_norm(
    input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled
):
    """F.instance_norm in torch.instance_norm's argument order (cudnn_enabled is ignored)."""
    return functional.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def alpha_dropout(input, p, train):
    """F.alpha_dropout(input, p, training=train)."""
    return functional.alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input, p, train):
    """F.feature_alpha_dropout(input, p, training=train)."""
    return functional.feature_alpha_dropout(input, p, training=train)


def adaptive_max_pool1d(input, output_size):
    """(values, indices) of F.adaptive_max_pool1d (torch's top-level one returns both)."""
    return tuple(functional.adaptive_max_pool1d(input, output_size, return_indices=True))


__all__ = [
    "chain_matmul",
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

# as users call them (core.public); the legacy linear-algebra names are Tensor methods too
globals().update({name: public(globals()[name]) for name in __all__})
for _name in "cholesky cholesky_inverse cholesky_solve triangular_solve pinverse qr svd".split():
    setattr(Operators, _name, as_method(globals()[_name]))
