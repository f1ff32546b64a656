"""kl_divergence(p, q) with closed forms registered per pair of distribution types.

The lookup takes the most specific registration along both types' MROs, as PyTorch's does.
"""

import numpy as np

from .. import linalg, ops
from ..core.errors import ShapeError
from .continuous import Exponential, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .independent import Independent, _sum_rightmost
from .multivariate_normal import MultivariateNormal, batch_mahalanobis, half_log_det

_KL_REGISTRY: dict = {}
_INF = float("inf")


def register_kl(type_p, type_q):
    """Decorator registering fn(p, q) as the KL divergence of type_p from type_q."""

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the broadcast batch shape."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            fn = _KL_REGISTRY.get((tp, tq))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(
        f"No KL(p || q) is implemented for p type {type(p).__name__} and q type {type(q).__name__}"
    )


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).square()
    t1 = ((p.loc - q.loc) / q.scale).square()
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * ((-q.logits).softplus() - (-p.logits).softplus())
    t1 = ops.where(p.probs == 0, 0.0, ops.where(q.probs == 0, _INF, t1))
    t2 = (1 - p.probs) * (q.logits.softplus() - p.logits.softplus())
    t2 = ops.where(p.probs == 1, 0.0, ops.where(q.probs == 1, _INF, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    shape = np.broadcast_shapes(tuple(t.shape), tuple(q.probs.shape), tuple(p.probs.shape))
    t = ops.where(q.probs.broadcast_to(shape) == 0, _INF, t.broadcast_to(shape))
    t = ops.where(p.probs.broadcast_to(shape) == 0, 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return ops.where((q.low > p.low) | (q.high < p.high), _INF, result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rate_ratio.log()


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    """0.5 (tr(Sq^-1 Sp) + mahalanobis(q.loc - p.loc) - d) + log|Lq| - log|Lp|."""
    if p.event_shape != q.event_shape:
        raise ShapeError(
            "KL-divergence between two Multivariate Normals with different event shapes "
            "cannot be computed"
        )
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    d = p.event_shape[0]
    batch = np.broadcast_shapes(tuple(Lp.shape)[:-2], tuple(Lq.shape)[:-2])
    Lp, Lq = Lp.broadcast_to(batch + (d, d)), Lq.broadcast_to(batch + (d, d))
    term2 = linalg.solve_triangular(Lq, Lp, upper=False).square().sum((-2, -1))
    term3 = batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_log_det(Lq) - half_log_det(Lp) + 0.5 * (term2 + term3 - d)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted dims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
