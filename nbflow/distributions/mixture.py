"""MixtureSameFamily: a Categorical choice among the components of one batched distribution.

The rightmost batch dim of the component distribution indexes the components; log_prob is
the logsumexp over it of the component log densities plus the log mixture weights.
"""

from ..core.errors import DomainError, ShapeError
from .discrete import Categorical
from .distribution import Distribution, as_tensor
from .transformed import _any_param


class MixtureSameFamily(Distribution):
    """PyTorch's MixtureSameFamily(mixture_distribution, component_distribution)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise DomainError(
                "The Mixture distribution needs to be an instance of "
                "nbflow.distributions.Categorical"
            )
        if not isinstance(component_distribution, Distribution):
            raise DomainError(
                "The Component distribution needs to be an instance of "
                "nbflow.distributions.Distribution"
            )
        mdbs, cdbs = mixture_distribution.batch_shape, component_distribution.batch_shape[:-1]
        for m, c in zip(reversed(mdbs), reversed(cdbs)):
            if m != 1 and c != 1 and m != c:
                raise ShapeError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape`({cdbs})"
                )
        km = mixture_distribution.param_shape[-1]
        kc = (component_distribution.batch_shape or (None,))[-1]
        if km != kc:
            raise ShapeError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        batch_shape = tuple(batch_shape)
        comp = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._component_distribution = comp
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        return new

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)
    support = property(lambda self: self._component_distribution.support)

    def _pad(self, x):
        """x with a component dim, to broadcast against the components."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        """Mixture probs shaped to multiply the component batch (and event) dims."""
        cat_batch_ndims = len(self._mixture_distribution.batch_shape)
        pad = 0 if cat_batch_ndims == 1 else len(self._batch_shape) - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad + xs[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        """E[Var(X | k)] + Var(E[X | k]): the law of total variance."""
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        comp, axis = self._component_distribution, -1 - self._event_ndims
        mean_cond_var = (probs * comp.variance).sum(axis)
        var_cond_mean = (probs * (comp.mean - self._pad(self.mean)).square()).sum(axis)
        return mean_cond_var + var_cond_mean

    def _value(self, x):
        return as_tensor(x, _any_param(self._component_distribution))

    def cdf(self, x):
        x = self._value(x)
        cdf_x = self._component_distribution.cdf(self._pad(x))
        return (cdf_x * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        x = self._value(x)
        self._validate_sample(x)
        log_prob_x = self._component_distribution.log_prob(self._pad(x))
        log_mix_prob = self._mixture_distribution.logits.log_softmax(-1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape=(), generator=None):
        """A component index per draw, then that component's draw (gathered)."""
        sample_shape = tuple(sample_shape)
        gather_dim = len(sample_shape) + len(self._batch_shape)
        es = self._event_shape
        mix = self._mixture_distribution.sample(sample_shape, generator=generator)
        comp = self._component_distribution.sample(sample_shape, generator=generator)
        index = mix.reshape(tuple(mix.shape) + (1,) * (len(es) + 1))
        shape = tuple(comp.shape)
        index = index.broadcast_to(shape[:gather_dim] + (1,) + shape[gather_dim + 1 :])
        return comp.gather(gather_dim, index).squeeze(gather_dim)

    def __repr__(self):
        return (
            f"MixtureSameFamily(\n  {self._mixture_distribution},\n"
            f"  {self._component_distribution})"
        )


__all__ = ["MixtureSameFamily"]
