"""PyTorch's torch.distributions for nbflow: densities, samplers and KL divergences.

Samples draw only from nbflow Generators (`generator=` or the default one reseeded by
`nbflow.manual_seed`). Gamma and Beta sample through numpy's gamma/beta samplers on the
Generator's own numpy stream and have no rsample.
"""

from . import constraints, transforms
from .continuous import (
    Cauchy,
    Chi2,
    Dirichlet,
    Exponential,
    FisherSnedecor,
    Laplace,
    Normal,
    StudentT,
    Uniform,
    VonMises,
)
from .discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Geometric,
    Multinomial,
    NegativeBinomial,
    OneHotCategorical,
    Poisson,
)
from .distribution import Distribution
from .gamma import Beta, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .transformed import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
    LogNormal,
    Pareto,
    TransformedDistribution,
    Weibull,
)
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)

__all__ = [
    "Bernoulli",
    "Beta",
    "Categorical",
    "Distribution",
    "Exponential",
    "Gamma",
    "Independent",
    "Laplace",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
    "AbsTransform",
    "AffineTransform",
    "ComposeTransform",
    "ExpTransform",
    "PowerTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
    "Binomial",
    "Cauchy",
    "Chi2",
    "Dirichlet",
    "FisherSnedecor",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "InverseGamma",
    "Kumaraswamy",
    "LogNormal",
    "LogisticNormal",
    "MixtureSameFamily",
    "Multinomial",
    "NegativeBinomial",
    "Pareto",
    "Poisson",
    "StudentT",
    "TransformedDistribution",
    "VonMises",
    "Weibull",
    "transforms",
]
