"""Support and parameter constraints, checked eagerly on host values.

PyTorch raises ValueError when a parameter or a value violates its constraint; the checks run in
numpy on the tensor's values because they only decide whether to raise, never enter the graph.
"""

import numpy as np


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


class Constraint:
    """A predicate over values; `event_dim` says how many rightmost dims form one check."""

    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__.lstrip("_")


class _Real(Constraint):
    def check(self, value):
        v = _np(value)
        return v == v  # not NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound, strict=True):
        self.lower_bound, self.strict = lower_bound, strict

    def check(self, value):
        v, lo = _np(value), _np(self.lower_bound)
        return v > lo if self.strict else v >= lo


class _Interval(Constraint):
    """lower <= value <= upper (half_open: value < upper), bounds broadcasting as tensors."""

    def __init__(self, lower, upper, half_open=False):
        self.lower, self.upper, self.half_open = lower, upper, half_open

    def check(self, value):
        v, lo, hi = _np(value), _np(self.lower), _np(self.upper)
        return (lo <= v) & ((v < hi) if self.half_open else (v <= hi))


class _Boolean(Constraint):
    def check(self, value):
        v = _np(value)
        return (v == 0) | (v == 1)


class _IntegerInterval(Constraint):
    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def check(self, value):
        v, lo, hi = _np(value), _np(self.lower), _np(self.upper)
        return (v % 1 == 0) & (lo <= v) & (v <= hi)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        v = _np(value)
        return np.all(v >= 0, axis=-1) & (np.abs(v.sum(-1) - 1) < 1e-6)


class _OneHot(Constraint):
    event_dim = 1

    def check(self, value):
        v = _np(value)
        return np.all((v == 0) | (v == 1), axis=-1) & (v.sum(-1) == 1)


class _RealVector(Constraint):
    event_dim = 1

    def check(self, value):
        v = _np(value)
        return np.all(v == v, axis=-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        v = _np(value)
        lower = np.all(np.triu(v, 1) == 0, axis=(-2, -1))
        return lower & np.all(np.diagonal(v, axis1=-2, axis2=-1) > 0, axis=-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value):
        v = _np(value).astype(np.float64)
        sym = np.all(np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6), axis=(-2, -1))
        return sym & np.all(np.linalg.eigvalsh(v) > 0, axis=-1)


class _IndependentConstraint(Constraint):
    """A base constraint whose rightmost `n` dims are reinterpreted as one event."""

    def __init__(self, base, n):
        self.base, self.n = base, n
        self.event_dim = base.event_dim + n

    def check(self, value):
        ok = self.base.check(value)
        return np.all(ok, axis=tuple(range(-self.n, 0))) if self.n else ok


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return _np(value) < _np(self.upper_bound)


class _IntegerGreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        v = _np(value)
        return (v % 1 == 0) & (v >= self.lower_bound)


class _Multinomial(Constraint):
    """Non-negative count vectors summing to at most `upper_bound` (PyTorch's check)."""

    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        v = _np(value)
        return np.all(v >= 0, axis=-1) & (v.sum(-1) <= self.upper_bound)


def greater_than(lower_bound):
    return _GreaterThan(lower_bound)


def greater_than_eq(lower_bound):
    return _GreaterThan(lower_bound, strict=False)


def half_open_interval(lower, upper):
    """lower <= value < upper, the support of Uniform."""
    return _Interval(lower, upper, half_open=True)


real = _Real()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThan(0.0, strict=False)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
simplex = _Simplex()
one_hot = _OneHot()
real_vector = _RealVector()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
interval = _Interval
less_than = _LessThan
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
multinomial = _Multinomial
integer_interval = _IntegerInterval
independent = _IndependentConstraint
