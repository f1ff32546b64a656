"""Python operators and op-mirroring methods, shared by eager Tensors and graph Vars.

`x + y` is bind(add, x, y) for both: the trace decides whether it runs or is recorded, so a
gradient rule written with operators serves eager mode and graph mode alike.
"""

from . import ops
from .core import STATE, bind


class Operators:
    """Mixin: the operators and methods below call the ops through bind()."""

    __slots__ = ()

    def __pos__(self):
        return self

    def __getitem__(self, key):
        return ops.getitem(self, key)

    def __setitem__(self, key, value):
        ops.setitem(self, key, value)


def _binary(op, reflected=False):
    # straight to the trace: operators are the hottest path of eager mode
    if reflected:
        return lambda self, other: STATE.trace.binary(op, other, self)
    return lambda self, other: STATE.trace.binary(op, self, other)


def _unary(op):
    return lambda self: bind(op, self)


def _inplace(op):
    def method(self, other):
        op(self, other)
        return self

    return method


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = getattr(fn, "__name__", getattr(fn, "name", "method"))
    method.__doc__ = getattr(fn, "doc", None) or getattr(fn, "__doc__", None)
    return method


REFLECTED = {
    "add": ops.add,
    "sub": ops.sub,
    "mul": ops.mul,
    "truediv": ops.div,
    "floordiv": ops.floor_div,
    "mod": ops.mod,
    "pow": ops.pow,
    "and": ops.logical_and,
    "or": ops.logical_or,
    "xor": ops.logical_xor,
    "matmul": ops.matmul,
}
COMPARISONS = {"eq": ops.eq, "ne": ops.ne, "lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge}
UNARY = {"neg": ops.neg, "abs": ops.abs, "invert": ops.logical_not}
INPLACE = {"iadd": ops.add_, "isub": ops.sub_, "imul": ops.mul_, "itruediv": ops.div_}

# methods that mirror ops: x.exp() is ops.exp(x); x.sum(axis=1) is ops.sum(x, axis=1)
METHODS = """
add sub mul div floor_div mod pow neg abs sign exp log log1p expm1 sqrt rsqrt sin cos tanh erf
sigmoid relu leaky_relu gelu softplus maximum minimum clip clamp cast astype clone
eq ne lt le gt ge logical_and logical_or logical_xor logical_not isnan isinf isfinite
add_ sub_ mul_ div_ clip_ clamp_ fill_ zero_ copy_ zeros_like ones_like full_like
sum mean prod max min argmax argmin var std logsumexp all any matmul addmm addmm_
reshape transpose permute broadcast_to squeeze unsqueeze flatten split gather take_along_axis
index_select scatter_add pad flip tile repeat softmax log_softmax
""".split()

for _name, _op in REFLECTED.items():
    setattr(Operators, f"__{_name}__", _binary(_op))
    setattr(Operators, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in COMPARISONS.items():
    setattr(Operators, f"__{_name}__", _binary(_op))
for _name, _op in UNARY.items():
    setattr(Operators, f"__{_name}__", _unary(_op))
for _name, _op in INPLACE.items():
    setattr(Operators, f"__{_name}__", _inplace(_op))
for _name in METHODS:
    setattr(Operators, _name, _method(getattr(ops, _name)))
