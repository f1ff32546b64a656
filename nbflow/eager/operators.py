"""Python operators and op-mirroring methods, shared by eager Tensors and graph Vars.

`x + y` is bind(add, x, y) for both: the trace decides whether it runs or is recorded, so a
gradient rule written with operators serves eager mode and graph mode alike.
"""

import math

import numpy as np

from .. import ops, special
from ..argcheck import flag, integer, integers, shown
from ..core import STATE, Value, bind
from ..core import dtypes as dt
from ..core.errors import (
    ArgumentError,
    DomainError,
    DTypeError,
    ShapeError,
    UnsupportedError,
)


class Size(int):
    """A tensor's `size`: numpy's element count (an int) that is also PyTorch's size() when
    called: `t.size == 6`, `t.size() == (2, 3)`, `t.size(1) == 3` for a 2x3 tensor."""

    def __new__(cls, shape):
        self = super().__new__(cls, -1 if -1 in shape else math.prod(shape))
        self.shape = tuple(shape)
        return self

    def __call__(self, axis=None, *, dim=None):
        axis = dim if axis is None else axis
        return self.shape if axis is None else self.shape[axis]


class Operators(Value):
    """Mixin: the operators and methods below call the ops through bind()."""

    __slots__ = ()

    def __pos__(self):
        return self

    def __getitem__(self, key):
        return ops.getitem(self, key)

    def __setitem__(self, key, value):
        ops.setitem(self, key, value)

    # -------------------------------------------------------------- PyTorch's spellings

    def view(self, *shape):
        """PyTorch's view: reshape (a copy only where the layout needs one)."""
        return ops.reshape(self, *shape)

    def expand(self, *sizes):
        """PyTorch's expand: broadcast_to, where -1 keeps a dim's size."""
        sizes = integers(ops.shape.dims(sizes), "expand: sizes")
        new = len(sizes) - self.ndim
        if new < 0:
            raise ShapeError(f"expand: {len(sizes)} sizes for a tensor of {self.ndim} dims")
        shape = tuple(
            self.shape[i - new] if s == -1 and i >= new else s for i, s in enumerate(sizes)
        )
        return ops.broadcast_to(self, shape)

    def repeat(self, *sizes, axis=None):
        """PyTorch's Tensor.repeat: `x.repeat(2, 3)` tiles x 2 times along dim 0 and 3 along
        dim 1 (`tile`; more sizes than dims add leading dims). With `axis=`, numpy's
        element repeat (`x.repeat(2, axis=1)`, as `nb.repeat` and `repeat_interleave`)."""
        if axis is not None:
            return ops.repeat(self, *sizes, axis=axis)
        sizes = integers(ops.shape.dims(sizes), "repeat: sizes")
        if len(sizes) < self.ndim:
            raise ShapeError(
                f"repeat: {len(sizes)} sizes for a tensor of {self.ndim} dims (PyTorch's "
                "repeat tiles, one size per dim; nb.repeat(x, n) or x.repeat_interleave(n) "
                "repeats each element)"
            )
        return ops.tile(self, sizes)

    # torch.special's functions and two of F's, as PyTorch's methods (F's imported when
    # called: nn is built on the tensors)
    def polygamma(self, n):
        """PyTorch's x.polygamma(n): the n-th derivative of digamma at x."""
        return special.polygamma(n, self)

    def igamma(self, other):
        """PyTorch's x.igamma(a): the regularized lower incomplete gamma P(x, a)."""
        return special.gammainc(self, other)

    def igammac(self, other):
        """PyTorch's x.igammac(a): the regularized upper incomplete gamma Q(x, a)."""
        return special.gammaincc(self, other)

    def mvlgamma(self, p):
        """PyTorch's x.mvlgamma(p): the multivariate log-gamma of dimension p."""
        return special.multigammaln(self, p)

    def hardshrink(self, lambd=0.5):
        from ..nn import functional

        return functional.hardshrink(self, lambd)

    def prelu(self, weight):
        from ..nn import functional

        return functional.prelu(self, weight)

    def masked_fill(self, mask, value):
        """`value` where mask is True (mask broadcasts), in this tensor's dtype."""
        return ops.where(mask, ops.full_like(self, value), self)

    def masked_fill_(self, mask, value):
        return written_back(self, Operators.masked_fill, mask, value)

    def type_as(self, other):
        if not isinstance(other, (Value, np.ndarray)):
            raise ArgumentError(f"type_as: other must be a tensor, got {shown(other)}")
        return ops.astype(self, other.dtype)

    def float(self, memory_format=None):
        ops.creation.check_memory_format("float", memory_format)
        return ops.astype(self, dt.float32)

    def double(self, memory_format=None):
        ops.creation.check_memory_format("double", memory_format)
        return ops.astype(self, dt.float64)

    def half(self, memory_format=None):
        ops.creation.check_memory_format("half", memory_format)
        return ops.astype(self, dt.float16)

    def int(self, memory_format=None):
        ops.creation.check_memory_format("int", memory_format)
        return ops.astype(self, dt.int32)

    def short(self, memory_format=None):
        ops.creation.check_memory_format("short", memory_format)
        return ops.astype(self, dt.int16)

    def char(self, memory_format=None):
        ops.creation.check_memory_format("char", memory_format)
        return ops.astype(self, dt.int8)

    def byte(self, memory_format=None):
        ops.creation.check_memory_format("byte", memory_format)
        return ops.astype(self, dt.uint8)

    def long(self, memory_format=None):
        ops.creation.check_memory_format("long", memory_format)
        return ops.astype(self, dt.int64)

    def cfloat(self, memory_format=None):
        ops.creation.check_memory_format("cfloat", memory_format)
        return ops.astype(self, dt.complex64)

    def cdouble(self, memory_format=None):
        ops.creation.check_memory_format("cdouble", memory_format)
        return ops.astype(self, dt.complex128)

    def bool(self, memory_format=None):
        ops.creation.check_memory_format("bool", memory_format)
        return ops.astype(self, dt.bool_)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        if -1 in self.shape:  # a graph value's unknown dim
            raise UnsupportedError(f"numel() of a value of shape {self.shape}: a dim is unknown")
        return math.prod(self.shape)

    def t(self):
        """PyTorch's t(): a 2-D tensor transposed (0-D and 1-D ones as they are)."""
        if self.ndim > 2:
            raise ShapeError(f"t() takes a tensor of at most 2 dims, got {self.ndim}: use mT")
        return self if self.ndim < 2 else ops.matrix_transpose(self)

    @property
    def T(self):
        """The dims reversed (numpy's and PyTorch's T)."""
        return self.permute(tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dims swapped (PyTorch's mT)."""
        return ops.matrix_transpose(self)

    def new_full(self, size, fill_value, dtype=None, requires_grad=False, *, device=None):
        """A new tensor of `size` filled with fill_value, on this one's device and in its dtype
        by default."""
        size = integers(size, "new_full: size")
        dtype = self.dtype if dtype is None else dtype
        device = getattr(self, "device", None) if device is None else device
        t = ops.full(size, fill_value, dtype=dtype, device=device)
        return t.requires_grad_(True) if flag(requires_grad, "new_full: requires_grad") else t

    def new_zeros(self, *size, dtype=None, requires_grad=False, device=None):
        return self.new_full(ops.shape.dims(size), 0, dtype, requires_grad, device=device)

    def new_ones(self, *size, dtype=None, requires_grad=False, device=None):
        return self.new_full(ops.shape.dims(size), 1, dtype, requires_grad, device=device)

    new_empty = new_zeros

    def new_empty_strided(self, size, stride, dtype=None, requires_grad=False, *, device=None):
        """PyTorch's new_empty_strided: new_empty of `size`; `stride` is checked and the
        tensor laid out contiguously (nbflow's tensors have no user-set strides)."""
        size = integers(size, "new_empty_strided: size")
        strides = integers(stride, "new_empty_strided: stride")
        if len(strides) != len(size):
            raise ShapeError(f"new_empty_strided: {len(strides)} strides for {len(size)} dims")
        return self.new_full(size, 0, dtype, requires_grad, device=device)

    def contiguous(self):
        """Itself: kernels take any strides (an eager Tensor copies a strided buffer)."""
        return self

    def is_contiguous(self, memory_format=None) -> bool:
        """True: kernels take any strides, so every value counts as contiguous (as
        contiguous() returns it unchanged)."""
        return True

    def is_floating_point(self) -> bool:
        return dt.is_float(self.dtype)

    def is_complex(self) -> bool:
        return dt.is_complex(self.dtype)

    def is_signed(self) -> bool:
        return np.dtype(self.dtype).kind in "ifc"

    @property
    def is_cpu(self) -> bool:
        return getattr(self, "device", "cpu") == "cpu"

    @property
    def is_cuda(self) -> bool:
        return str(getattr(self, "device", "cpu")).startswith("cuda")

    def get_device(self) -> int:
        """-1 on the CPU, else the GPU's index (PyTorch's answer)."""
        device = str(getattr(self, "device", "cpu"))
        return -1 if device == "cpu" else int(device.partition(":")[2] or 0)

    def element_size(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def itemsize(self) -> int:
        return self.element_size()

    @property
    def nbytes(self) -> int:
        return self.numel() * self.element_size()

    def nelement(self) -> int:
        return self.numel()

    def ndimension(self) -> int:
        return self.ndim

    def ravel(self):
        return ops.reshape(self, -1)

    def where(self, condition, other):
        """PyTorch's x.where(condition, y): x where condition holds, else y."""
        return ops.where(condition, self, other)

    def moveaxis(self, source, destination):
        return ops.movedim(self, source, destination)

    def swapdims(self, dim0, dim1):
        return ops.swapaxes(self, dim0, dim1)

    def type(self, dtype=None):
        """PyTorch's type(): with no dtype, the type's name ("nbflow.FloatTensor"); else this
        tensor cast to `dtype`."""
        if dtype is None:
            cuda = ".cuda" if str(getattr(self, "device", "cpu")).startswith("cuda") else ""
            return f"nbflow{cuda}.{_TYPE_NAMES[np.dtype(self.dtype)]}"
        return ops.astype(self, dt.as_dtype(dtype))

    @property
    def H(self):
        """The conjugate transpose of a matrix (real dtypes: its transpose)."""
        if self.ndim > 2:
            raise ShapeError(f"H takes a tensor of at most 2 dims, got {self.ndim}: use mH")
        return ops.conj(self.t())

    @property
    def mH(self):
        """The conjugate transpose of the last two dims (real dtypes: mT)."""
        return ops.conj(ops.matrix_transpose(self))

    @property
    def real(self):
        """The real part (a new tensor, not a view); a real tensor itself."""
        return ops.real(self)

    @property
    def imag(self):
        """The imaginary part of a complex tensor (a new tensor, not a view)."""
        return ops.imag(self)

    def unfold(self, dimension, size, step):
        """PyTorch's Tensor.unfold: the slices of `size` along `dimension`, `step` apart, as
        a new last dim (that dim's length becomes (n - size) // step + 1). Gathered by
        index_select, so it differentiates: a copy, where PyTorch's is a view."""
        a = ops.shape.axis_of(dimension, self.ndim)
        size, step = integer(size, "unfold: size"), integer(step, "unfold: step")
        n = self.shape[a] if self.ndim else 1
        if n == -1:
            raise UnsupportedError("unfold: the dim to unfold has an unknown (-1) size")
        if size < 0 or size > n or step <= 0:
            raise DomainError(
                f"unfold: size {size} must be in [0, {n}] (dim {a}'s length) and step {step} > 0"
            )
        count = (n - size) // step + 1
        windows = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size)[None, :]
        if not self.ndim:  # (PyTorch's: a 0-d tensor gives its value `size` times, 0 or 1)
            return ops.index_select(ops.reshape(self, (1,)), 0, windows.reshape(-1))
        return ops.movedim(ops.index_select(self, a, windows), a + 1, -1)

    def sum_to_size(self, *size):
        """PyTorch's sum_to_size: summed down to `size`, which this tensor's shape must
        broadcast from (a gradient summed back to its input's shape)."""
        size = integers(ops.shape.dims(size), "sum_to_size: size")
        lead = self.ndim - len(size)
        if lead < 0 or any(s not in (1, n) for s, n in zip(size, self.shape[lead:])):
            raise ShapeError(f"sum_to_size: size {size} is not expandable to {self.shape}")
        out = ops.sum(self, axis=tuple(range(lead))) if lead else self
        kept = tuple(i for i, (s, n) in enumerate(zip(size, out.shape)) if s == 1 and n != 1)
        return ops.sum(out, axis=kept, keepdims=True) if kept else out

    def fill_diagonal_(self, fill_value, wrap=False):
        """PyTorch's fill_diagonal_: the main diagonal (entries whose indices are all equal;
        every dim of one length beyond 2-D) set to fill_value; `wrap` restarts it every
        (columns + 1) rows of a tall matrix."""
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise ShapeError(
                f"fill_diagonal_: needs 2 dims, or more of one length; got shape {self.shape}"
            )
        mask = np.zeros(self.shape, bool)
        rows = self.shape[0] if wrap and self.ndim == 2 else min(self.shape)
        i = np.arange(rows)
        if self.ndim == 2:
            i = i[i % (self.shape[1] + 1) < self.shape[1]]
            mask[i, i % (self.shape[1] + 1)] = True
        else:
            mask[(i,) * self.ndim] = True
        return written_back(self, Operators.masked_fill, mask, fill_value)

    # (eager-only functions of nbflow/eager/values.py, which imports this module)
    def nonzero(self, as_tuple=False):
        from .values import nonzero

        return nonzero(self, as_tuple)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        from .values import unique

        return unique(self, sorted, return_inverse, return_counts, dim)

    def allclose(self, other, rtol=1e-5, atol=1e-8, equal_nan=False):
        from .values import allclose

        return allclose(self, other, rtol, atol, equal_nan)

    def equal(self, other):
        from .values import equal

        return equal(self, other)


# type()'s names, PyTorch's
_TYPE_NAMES = {
    dt.float16: "HalfTensor",
    dt.float32: "FloatTensor",
    dt.float64: "DoubleTensor",
    dt.complex64: "ComplexFloatTensor",
    dt.complex128: "ComplexDoubleTensor",
    dt.uint8: "ByteTensor",
    dt.int8: "CharTensor",
    dt.int16: "ShortTensor",
    dt.int32: "IntTensor",
    dt.int64: "LongTensor",
    dt.bool_: "BoolTensor",
}


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


def as_method(fn):
    """fn(self, ...) as a method of the tensors and graph values."""

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
    "and": ops.bitwise_and,  # bit by bit on integers, logical on bools (PyTorch)
    "or": ops.bitwise_or,
    "xor": ops.bitwise_xor,
    "matmul": ops.matmul,
}
COMPARISONS = {"eq": ops.eq, "ne": ops.ne, "lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge}
UNARY = {"neg": ops.neg, "abs": ops.abs, "invert": ops.bitwise_not}
INPLACE = {"iadd": ops.add_, "isub": ops.sub_, "imul": ops.mul_, "itruediv": ops.div_}

# methods that mirror ops: x.exp() is ops.exp(x); x.sum(axis=1) is ops.sum(x, axis=1)
METHODS = """
add sub mul div floor_div mod pow neg abs sign exp log log1p expm1 sqrt rsqrt sin cos tanh erf
sigmoid relu leaky_relu gelu softplus maximum minimum clip clamp cast astype clone
eq ne lt le gt ge logical_and logical_or logical_xor logical_not isnan isinf isfinite
add_ sub_ mul_ div_ clip_ clamp_ fill_ zero_ copy_ zeros_like ones_like full_like
sum mean prod max min argmax argmin var std logsumexp all any cumsum matmul addmm addmm_
reshape transpose permute broadcast_to squeeze unsqueeze flatten split gather take_along_axis
index_select scatter_add pad flip tile softmax log_softmax norm chunk sort argsort topk
swapaxes movedim roll tril triu diag isclose lerp amax amin mm bmm dot outer median
floor ceil trunc round square reciprocal tan asin acos atan atan2 log2 log10
sinh cosh asinh acosh atanh exp2 logit xlogy hypot logaddexp logaddexp2 fmod remainder copysign
heaviside sinc deg2rad rad2deg frac nan_to_num float_power signbit sgn erfinv lgamma digamma
divide clamp_min clamp_max positive fix arcsin arccos arctan arctan2 arcsinh arccosh arctanh
absolute negative multiply subtract true_divide greater greater_equal less less_equal not_equal
scatter scatter_ scatter_reduce index_add index_add_ index_copy index_fill take take_along_dim
narrow unbind split_with_sizes tensor_split hsplit vsplit dsplit repeat_interleave diagonal
diag_embed trace rot90 fliplr flipud expand_as reshape_as view_as unflatten nansum nanmean
count_nonzero aminmax cumprod cummax cummin logcumsumexp diff cross kron inner vdot mv addmv addr
addcmul addcdiv addcmul_ addcdiv_ baddbmm addbmm matrix_power kthvalue quantile nanquantile
det slogdet logdet inverse
uniform_ normal_ log_normal_ exponential_ cauchy_ geometric_ bernoulli_ random_
bernoulli multinomial bincount histc histogram cov corrcoef dist renorm diagflat erfc i0 gcd lcm
fmax fmin frexp ldexp nextafter floor_divide isneginf isposinf isreal
bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift
index_put index_put_ index_reduce put select select_scatter slice_scatter diagonal_scatter
masked_scatter msort mode nanmedian argwhere adjoint ger is_nonzero is_same_size
unsafe_chunk unsafe_split unsafe_split_with_sizes
lu lu_solve matrix_exp orgqr
conj conj_physical resolve_conj resolve_neg angle
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
    setattr(Operators, _name, as_method(getattr(ops, _name)))


def written_back(x, fn, *args, **kwargs):
    """x.copy_(fn(x, ...)): an in-place op made of its out-of-place form. Where autograd
    records it, fn reads a clone of x, as PyTorch keeps the original input: fn's gradient
    may read its input, which the write then overwrites (x.relu_() after a Linear)."""
    source = x.clone() if x.requires_grad and STATE.grad_enabled else x
    result = fn(source, *args, **kwargs)
    if not np.can_cast(result.dtype, x.dtype, "same_kind"):  # (tanh_ of an int tensor)
        name = getattr(fn, "name", None) or fn.__name__
        raise DTypeError(
            f"{name}_: the result's dtype {result.dtype} cannot be written into a tensor of "
            f"dtype {x.dtype} in place (it would be truncated; PyTorch refuses too): use "
            f"x.{name}(), or x.float().{name}_()"
        )
    return x.copy_(result)


def _written_back(op, name=None):
    name = name or getattr(op, "name", None) or op.__name__

    def method(self, *args, **kwargs):
        return written_back(self, op, *args, **kwargs)

    method.__name__ = f"{name}_"
    method.__doc__ = f"{name} in place: computed, then written into this tensor by copy_."
    return method


# PyTorch's in-place unary methods (x.relu_()): the op's result written back by copy_ (a
# temporary, then one copy), so autograd and the version counter follow as for copy_
IN_PLACE_UNARY = """
abs neg exp log log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu floor ceil trunc round
square reciprocal
sinh cosh asinh acosh atanh exp2 sinc deg2rad rad2deg frac erfinv lgamma digamma sign sgn fix
arcsin arccos arctan arcsinh arccosh arctanh absolute negative asin acos atan log2 log10 erf
logical_not erfc i0 bitwise_not
""".split()
# and those taking more arguments (x.fmod_(y), x.index_fill_(0, index, 1.0))
IN_PLACE_MORE = """
fmod remainder hypot copysign xlogy logit nan_to_num float_power heaviside atan2 arctan2
multiply divide subtract true_divide clamp_min clamp_max index_copy index_fill scatter_reduce
pow lerp maximum minimum eq ne lt le gt ge greater greater_equal less less_equal not_equal
logical_and logical_or logical_xor cumsum cumprod tril triu
gcd lcm ldexp nextafter floor_divide bitwise_and bitwise_or bitwise_xor bitwise_left_shift
bitwise_right_shift masked_scatter index_reduce put renorm scatter_add
""".split()
for _name in IN_PLACE_UNARY + IN_PLACE_MORE:
    setattr(Operators, f"{_name}_", _written_back(getattr(ops, _name), _name))
for _name in ("polygamma", "igamma", "igammac", "mvlgamma"):
    setattr(Operators, f"{_name}_", _written_back(getattr(Operators, _name), _name))


# PyTorch's augmented assignments beyond + - * /: `x **= 2` writes into x, as x.pow_(2)
for _name in ("pow", "mod", "floordiv", "and", "or", "xor"):
    setattr(Operators, f"__i{_name}__", _written_back(REFLECTED[_name], f"__i{_name}__"))


def _check_shape_change(x, name: str):
    from .tensor import Tensor

    if not isinstance(x, Tensor):
        raise UnsupportedError(
            f"{name} in a program: a var's shape is fixed; use x = x.{name[:-1]}(...)"
        )
    if x.requires_grad or (x._view is not None and x._view.base.requires_grad):
        raise UnsupportedError(
            f"{name}: changes a tensor's shape in place, which nbflow's autograd does not "
            f"follow for a tensor that requires grad (or a view of one); use "
            f"x = x.{name[:-1]}(...)"
        )


def _takes_shape(x, out):
    """x becomes `out` (a view of x's old self, or new memory) in place: its shape, strides
    and view record; its version goes up, so that a gradient saved with its old shape
    refuses, as after any in-place write."""
    from .tensor import version_counter

    x._data, x._sig, x._view, x._base = out._data, None, out._view, out._base
    version_counter(x)[0] += 1
    return x


def _old_self(x):
    """A tensor standing for x as it is now (its memory, view record and version counter):
    what an in-place view op takes its view of, so that x's new view record leads back to
    x's old shape rather than to x itself."""
    old = x.detach()
    old._view, old._base = x._view, x._base
    return old


def _view_in_place(name: str):
    def method(self, *args, **kwargs):
        _check_shape_change(self, f"{name}_")
        return _takes_shape(self, getattr(_old_self(self), name)(*args, **kwargs))

    method.__name__ = f"{name}_"
    method.__doc__ = (
        f"{name} in place (PyTorch's {name}_): this tensor becomes its {name} view, the same "
        "memory with another shape; not for a tensor that requires grad."
    )
    return method


for _name in ("squeeze", "unsqueeze", "t", "transpose", "swapdims", "swapaxes"):
    setattr(Operators, f"{_name}_", _view_in_place(_name))


def _resize_(self, *sizes):
    """PyTorch's resize_: this tensor takes the shape `sizes` in C order; with the element
    count unchanged it is reshaped (a view of the same memory where the layout allows), else
    new memory holding the old elements first and zeros after them (PyTorch leaves those
    uninitialised)."""
    _check_shape_change(self, "resize_")
    shape = integers(ops.shape.dims(sizes), "resize_: sizes")
    if any(n < 0 for n in shape):
        raise DomainError(f"resize_: sizes must be non-negative, got {shape}")
    old = _old_self(self)
    n = math.prod(shape)
    if n == self.numel():
        return _takes_shape(self, old.reshape(shape))
    flat = old.reshape(-1)[:n]
    out = ops.pad(flat, (0, n - flat.shape[0])).reshape(shape)  # (new memory)
    return _takes_shape(self, out)


Operators.resize_ = _resize_


def _resize_as_(self, other):
    if not hasattr(other, "shape"):  # (AttributeError from other.shape)
        raise ArgumentError(f"resize_as_: other must be a tensor, got {type(other).__name__}")
    return self.resize_(other.shape)


Operators.resize_as_ = _resize_as_
