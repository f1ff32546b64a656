"""PyTorch's torch.distributions for nbflow: densities, samplers and KL divergences.

Samples draw only from nbflow Generators (`generator=` or the default one reseeded by
`nbflow.manual_seed`). Gamma and Beta sample through numpy's gamma/beta samplers on the
Generator's own numpy stream and have no rsample.
"""

from . import constraints
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal

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
]
