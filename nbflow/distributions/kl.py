"""kl_divergence(p, q) with closed forms registered per pair of distribution types.

The lookup takes the most specific registration along both types' MROs, as PyTorch's does.
"""

import numpy as np

from .. import linalg, ops
from ..core.errors import ShapeError
from .continuous import Cauchy, Dirichlet, Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from .distribution import traced
from .gamma import Beta, Gamma
from .independent import Independent, _sum_rightmost
from .multivariate_normal import MultivariateNormal, batch_mahalanobis, half_log_det
from .transformed import Gumbel, HalfNormal, Pareto, TransformedDistribution

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


_EULER = 0.57721566490153286060


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    total_p = p.concentration1 + p.concentration0
    total_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + total_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + total_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (total_q - total_p) * total_p.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """Infinite where p has more trials than q; q with more trials is not implemented."""
    n_p, n_q = p.total_count, q.total_count
    if not (traced(n_p) or traced(n_q)) and np.any(n_p.detach().numpy() < n_q.detach().numpy()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = n_p * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return ops.where(n_p > n_q, _INF, kl)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p, sum_q = p.concentration.sum(-1), q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + q.concentration.lgamma() + q.concentration * _EULER - (1 + _EULER)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * _EULER
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + _EULER)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    """Infinite where p puts mass below q's support (p.scale < q.scale)."""
    scale_ratio, alpha_ratio = p.scale / q.scale, q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return ops.where(p.scale < q.scale, _INF, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).square() + (p.loc - q.loc).square()).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    """KL is invariant under one bijection applied to both: that of the bases."""
    if p.transforms != q.transforms:
        raise NotImplementedError("KL between TransformedDistributions of different transforms")
    if p.event_shape != q.event_shape:
        raise NotImplementedError("KL between TransformedDistributions of different events")
    return kl_divergence(p.base_dist, q.base_dist)
