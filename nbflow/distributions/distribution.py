"""The Distribution base class and the helpers the concrete distributions share.

Parameters are nbflow Tensors broadcast to one batch shape, so every density is ordinary
differentiable nbflow arithmetic; randomness comes only from an nbflow Generator (the explicit
`generator=` or nbflow's default one that `nbflow.manual_seed` reseeds).
"""

import numpy as np

from ..core import dtypes as dt
from ..core import no_grad
from ..core.errors import ShapeError
from ..eager.tensor import Tensor, tensor
from ..ops import creation
from ..ops.queries import is_tensor
from . import constraints


def traced(value):
    """Whether `value` is a graph value (under nbflow.jit): it has no data to validate."""
    return is_tensor(value) and not isinstance(value, Tensor)


def broadcast_all(*values):
    """Tensors of one broadcast shape: numbers take the dtype of the first floating tensor
    among `values` (float32 when none is) and the device of the first tensor, as
    torch.distributions.utils.broadcast_all does."""
    dtype = next(
        (v.dtype for v in values if is_tensor(v) and v.dtype.kind == "f"),
        dt.default_float(),
    )
    device = next((v.device for v in values if isinstance(v, Tensor)), None)
    ts = [v if is_tensor(v) else tensor(float(v), dtype, device=device) for v in values]
    shape = np.broadcast_shapes(*(t.shape for t in ts))
    return [t if tuple(t.shape) == shape else t.broadcast_to(shape) for t in ts]


def as_tensor(value, like):
    """`value` as a tensor of `like`'s dtype and device (numbers and arrays as sample
    values)."""
    if is_tensor(value):
        return value
    return tensor(np.asarray(value, dtype=like.dtype), device=like.device)


def numpy_generator(generator):
    """The numpy stream of an nbflow Generator, for samplers nbflow has no kernel for."""
    return (generator or creation.default_generator).numpy


class Distribution:
    """PyTorch's torch.distributions.Distribution: shapes, sampling, densities, validation."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None
    _validate_default = True
    _params: tuple = ()  # the tensor attributes `expand` broadcasts

    @staticmethod
    def set_default_validate_args(value):
        Distribution._validate_default = bool(value)

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        self._validate_args = self._validate_default if validate_args is None else validate_args
        if self._validate_args:
            for name, constraint in self.arg_constraints.items():
                value = self.__dict__.get(name)
                if value is None or traced(value):  # derived (probs from logits), or traced
                    continue
                if not np.all(constraint.check(value)):
                    raise ShapeError(
                        f"Expected parameter {name} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}"
                    )

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None):
        """A view with a larger batch shape: the parameters broadcast, nothing copied."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        batch_shape, n = tuple(batch_shape), len(self._batch_shape)
        for name in self._params:
            value = self.__dict__.get(name)
            if value is not None:
                new.__dict__[name] = value.broadcast_to(batch_shape + tuple(value.shape)[n:])
        new._batch_shape = batch_shape
        return new

    def sample(self, sample_shape=(), generator=None):
        """A sample without gradient; the reparameterized one when there is one."""
        with no_grad():
            return self.rsample(sample_shape, generator=generator).detach()

    def rsample(self, sample_shape=(), generator=None):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler")

    def sample_n(self, n, generator=None):
        return self.sample((n,), generator=generator)

    def log_prob(self, value):
        raise NotImplementedError

    def prob(self, value):
        return self.log_prob(value).exp()

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _validate_sample(self, value):
        """PyTorch's check: the value broadcasts with the batch and lies in the support."""
        if not self._validate_args:
            return
        shape = tuple(value.shape) if is_tensor(value) else np.shape(value)
        event = self._event_shape
        if len(shape) < len(event) or shape[len(shape) - len(event) :] != event:
            raise ShapeError(f"The right-most size of value must match event_shape: {event}")
        try:
            np.broadcast_shapes(shape, self._batch_shape + event)
        except ValueError:
            raise ShapeError(
                f"Value of shape {shape} is not broadcastable with batch_shape+event_shape: "
                f"{self._batch_shape + event}"
            ) from None
        if traced(value) or _has_traced(self):
            return
        if self.support is not None and not np.all(self.support.check(value)):
            raise ShapeError(
                f"Expected value argument ({type(value).__name__} of shape {shape}) to be within "
                f"the support ({self.support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def __repr__(self):
        names = [k for k in self.arg_constraints if self.__dict__.get(k) is not None]
        args = ", ".join(f"{k}: {_brief(self.__dict__[k])}" for k in names)
        return f"{type(self).__name__}({args})"


def _has_traced(dist):
    """Whether a parameter is a graph value (a support bounded by it cannot be checked)."""
    return any(traced(dist.__dict__.get(name)) for name in dist._params)


def _brief(t):
    return t.detach().numpy().item() if t.numel() == 1 else f"size {tuple(t.shape)}"


__all__ = ["Distribution", "broadcast_all", "constraints"]
