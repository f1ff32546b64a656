"""Symbolic dims: what a traced Program's sizes are in terms of the dynamic input dims.

A Program traced by @jit holds the example's sizes: `reshape(x) [shape=(2, 8, 8)]` for a batch
of 2. To export it with a dynamic batch, the exporter traces the model again with each dynamic
dim one larger (and each set of them, for products such as batch x time), and compares the
traces: a size that changes with a dim is a polynomial in the dynamic dims (multilinear: each
dim to the first power), fitted from the traces and checked on one more trace. `Dim` is such a
polynomial; `merge` walks the attrs and shapes of the traces together.
"""

from __future__ import annotations

import itertools
import math

from nbflow import UnsupportedError


class Dim:
    """A size that depends on the dynamic dims: sum of coef * product of symbols, as
    `terms` {(symbol, ...): coef} (the empty tuple is the constant term)."""

    def __init__(self, terms: dict):
        self.terms = {k: c for k, c in terms.items() if c}

    def value(self, sizes: dict) -> int:
        """The size for the dynamic dims' sizes {symbol: size}."""
        return sum(c * math.prod(sizes[s] for s in mono) for mono, c in self.terms.items())

    @property
    def symbol(self) -> str | None:
        """The symbol when the dim is exactly one dynamic dim, else None."""
        if len(self.terms) == 1:
            ((mono, coef),) = self.terms.items()
            if len(mono) == 1 and coef == 1:
                return mono[0]
        return None

    def __add__(self, other: int) -> Dim:
        terms = dict(self.terms)
        terms[()] = terms.get((), 0) + other
        return Dim(terms)

    def __repr__(self) -> str:
        parts = [" * ".join([str(c)] * (c != 1 or not m) + list(m)) for m, c in self.terms.items()]
        return " + ".join(parts) or "0"


def is_static(value) -> bool:
    return not isinstance(value, Dim) and value is not None


def subsets(symbols) -> list[tuple]:
    """Every subset of `symbols` (as sorted tuples), the empty one first."""
    symbols = sorted(symbols)
    return [c for n in range(len(symbols) + 1) for c in itertools.combinations(symbols, n)]


def fit(values: dict, base: dict) -> int | Dim:
    """The multilinear polynomial through values {subset: value}, where `subset` names the
    dims that were one larger than `base` {symbol: size} in that trace."""
    delta = {}  # coefficients in (size - base) per dim, by Moebius inversion
    for s in values:
        delta[s] = sum((-1) ** (len(s) - len(t)) * values[t] for t in subsets(s))
    terms: dict = {}
    for s, coef in delta.items():
        for t in subsets(s):  # expand prod(size - base) into monomials of the sizes
            rest = [-base[x] for x in s if x not in t]
            terms[t] = terms.get(t, 0) + coef * math.prod(rest)
    dim = Dim(terms)
    return dim.terms.get((), 0) if set(dim.terms) <= {()} else dim


class Mismatch(UnsupportedError):
    """The traces of a model at two sizes differ in a way no dim polynomial explains."""


def merge(values: list, keys: list, base: dict, check_value, check_sizes: dict, what: str):
    """One value for the same attr or shape seen in every trace: the value itself where the
    traces agree, a Dim (fitted on `keys`, checked against `check_value` at `check_sizes`)
    for an int that changes with the dynamic dims, the same structure for tuples and lists.
    Anything else that changes raises Mismatch naming `what`."""
    first = values[0]
    if all(_same(v, first) for v in values[1:]) and _same(check_value, first):
        return first
    if all(_is_int(v) for v in values) and _is_int(check_value):
        dim = fit(dict(zip(keys, values)), base)
        got = dim.value(check_sizes) if isinstance(dim, Dim) else dim
        if got != check_value:
            raise Mismatch(
                f"{what} is {values[0]} in the example's trace and changes with the dynamic "
                f"dims in a way the exporter cannot write as a size (not a product of them)"
            )
        return dim
    if (
        isinstance(first, (tuple, list))
        and all(type(v) is type(first) and len(v) == len(first) for v in values)
        and type(check_value) is type(first)
        and len(check_value) == len(first)
    ):
        items = [
            merge([v[i] for v in values], keys, base, check_value[i], check_sizes, what)
            for i in range(len(first))
        ]
        return type(first)(items)
    raise Mismatch(
        f"{what} is {first!r} in the example's trace and changes with the dynamic dims "
        f"(to {values[-1]!r}): only integer sizes may depend on them"
    )


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b
