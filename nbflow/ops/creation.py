"""Creation ops: constants, ranges, identity, *_like and empty_*, and seeded random through a
Generator.

The ops in REGISTRY take their shape and dtype as attrs; the functions exported here add the
PyTorch-style signatures (`zeros(2, 3)` or `zeros((2, 3))`, `dtype=` defaulting to float32).
"""

import math

import numpy as np

from ..argcheck import flag, integers, shown
from ..core import Attr, Op, Spec
from ..core import dtypes as dt
from ..core.errors import ArgumentError, AttrError, DomainError, ShapeError, UnsupportedError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _fill_cpu(out, value):
    for i in range(out.size):
        out[i] = value


@njit(**JIT)
def _arange_cpu(out, start, step):
    for i in range(out.size):
        out[i] = start + i * step


@njit(**JIT)
def _linspace_cpu(out, start, stop):
    n = out.size
    if n <= 1:  # note: out[n - 1] below would write out of bounds when n == 0
        if n == 1:
            out[0] = start
        return
    step = (stop - start) / (n - 1)
    for i in range(n):
        out[i] = start + i * step
    out[n - 1] = stop


@njit(**JIT)
def _eye_cpu(out):
    out[:] = 0
    for i in range(min(out.shape[0], out.shape[1])):
        out[i, i] = 1


@njit(**JIT)
def _uniform_cpu(gen, out, low, high):
    for i in range(out.size):
        out[i] = low + (high - low) * gen.random()


@njit(**JIT)
def _normal_cpu(gen, out, mean, std):
    for i in range(out.size):
        out[i] = mean + std * gen.standard_normal()


@njit(**JIT)
def _randint_cpu(gen, out, low, high):
    for i in range(out.size):
        out[i] = gen.integers(low, high)


# ---------------------------------------------------------------- shape/dtype rules


def _check_shape(shape):
    if any(n < 0 for n in shape):
        raise ShapeError(f"negative dimension in shape {shape}")
    return shape


def _const_spec(shape, dtype, **kw):
    return Spec(_check_shape(shape), dtype)


def _like_spec(x, dtype=None, **kw):
    return Spec(x.shape, x.dtype if dtype is None else dtype)


SHAPE_DTYPE = {"shape": Attr("ints"), "dtype": Attr("dtype", dt.DEFAULT)}


def _declare(name, spec, launch, ref, attrs, inputs=(), dtypes=dt.ALL + dt.COMPLEX, doc=""):
    return Op(
        name=name,
        inputs=inputs,
        outputs=("out",),
        spec=spec,
        kernels={"cpu": launch, "cuda": None},
        dtypes=dtypes,
        ref=ref,
        differentiable=False,
        attrs=attrs,
        promote=(),
        doc=doc,
    )


full_op = _declare(
    "full",
    _const_spec,
    lambda out, shape, value, dtype: _fill_cpu(out.reshape(-1), dt.scalar(value, out.dtype)),
    lambda shape, value, dtype: np.full(shape, value, dtype),
    {**SHAPE_DTYPE, "value": Attr("value")},
    doc="A tensor of `shape` filled with `value`.",
)

full_like_op = _declare(
    "full_like",
    _like_spec,
    lambda x, out, value, dtype: _fill_cpu(out.reshape(-1), dt.scalar(value, out.dtype)),
    lambda x, value, dtype=None: np.full_like(x, value, dtype=dtype),
    {"value": Attr("value"), "dtype": Attr("dtype", None, optional=True)},
    inputs=("x",),
    doc="A tensor like x filled with `value`.",
)
full_like_op.shape_only = ("x",)


fill_op = Op(
    name="fill_",
    inputs=("x",),
    outputs=("out",),
    spec=lambda x, value: Spec(x.shape, x.dtype),
    kernels={
        "cpu": lambda x, out, value: _fill_cpu(out.reshape(-1), dt.scalar(value, out.dtype)),
        "cuda": None,
    },
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, value: np.full_like(x, value),
    grad=lambda g, out, x, value: (None,),  # the old values no longer matter
    attrs={"value": Attr("value")},
    inplace={0: 0},
    promote=(),
    doc="Fill x with `value` in place.",
)


def _arange_spec(start, stop, step, dtype):
    if step == 0:
        raise AttrError("step must not be zero")
    if any(isinstance(v, int) and not -(2**63) <= v < 2**63 for v in (start, stop, step)):
        raise AttrError(f"start, stop and step must fit in int64, got {start}, {stop}, {step}")
    if not all(np.isfinite(v) for v in (start, stop, step)):
        raise AttrError(f"start, stop and step must be finite, got {start}, {stop}, {step}")
    return Spec((max(0, int(np.ceil((stop - start) / step))),), dtype)


arange_op = _declare(
    "arange",
    _arange_spec,
    lambda out, start, stop, step, dtype: _arange_cpu(out, start, step),
    lambda start, stop, step, dtype: np.arange(start, stop, step, dtype=dtype),
    {
        "start": Attr("value", 0),
        "stop": Attr("value"),
        "step": Attr("value", 1),
        "dtype": Attr("dtype", dt.DEFAULT_INT),
    },
    dtypes=dt.NUMERIC,
    doc="Values from start (inclusive) to stop (exclusive) by step.",
)


def _linspace_spec(start, stop, num, dtype):
    if num < 0:
        raise AttrError(f"linspace: num must be >= 0, got {num}")
    return Spec((num,), dtype)


linspace_op = _declare(
    "linspace",
    _linspace_spec,
    lambda out, start, stop, num, dtype: _linspace_cpu(out, float(start), float(stop)),
    lambda start, stop, num, dtype: np.linspace(start, stop, num, dtype=dtype),
    {"start": Attr("float"), "stop": Attr("float"), "num": Attr("int"), **SHAPE_DTYPE},
    dtypes=dt.FLOATS,
    doc="`num` evenly spaced values from start to stop, both included.",
)
del linspace_op.attrs["shape"]

eye_op = _declare(
    "eye",
    lambda n, m, dtype: Spec(_check_shape((n, n if m is None else m)), dtype),
    lambda out, n, m, dtype: _eye_cpu(out),
    lambda n, m, dtype: np.eye(n, m, dtype=dtype),
    {"n": Attr("int"), "m": Attr("int", None, optional=True), "dtype": SHAPE_DTYPE["dtype"]},
    doc="The n x m identity matrix.",
)


def _entropy(seed):
    """A seed as numpy's entropy, checked as PyTorch checks it: an int in [-2**63, 2**64),
    a negative one remapped to 2**64 - 1 + seed (numpy takes neither a str nor a negative)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"a seed is an int, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise DomainError(f"a seed must be in [-2**63, 2**64), got {seed}")
    return seed if seed >= 0 else 2**64 - 1 + seed


class Generator:
    """A seeded random stream (numpy's PCG64), passed to the random ops explicitly."""

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self.numpy = np.random.Generator(np.random.PCG64(_entropy(seed)))

    def manual_seed(self, seed: int) -> "Generator":
        self.__init__(seed)
        return self

    def initial_seed(self):
        return self.seed

    def get_state(self) -> np.ndarray:
        """The stream's position, an opaque int64 array (a checkpoint stores it): set_state
        with it makes the same draws again, as PyTorch's get_state / set_state."""
        s = self.numpy.bit_generator.state
        words = (s["state"]["state"], s["state"]["inc"], s["has_uint32"], s["uinteger"])
        raw = b"".join(int(w).to_bytes(16, "little") for w in words)
        return np.frombuffer(raw, np.int64).copy()

    def set_state(self, state) -> "Generator":
        """Go back to a position from get_state (a Tensor or an array)."""
        a = np.asarray(state)
        if a.shape != (8,) or a.dtype != np.int64:
            raise AttrError(
                f"set_state: needs an int64 array of 8 from get_state, got {a.dtype}{list(a.shape)}"
            )
        raw = a.astype("<i8").tobytes()
        state, inc, has_uint32, uinteger = (
            int.from_bytes(raw[i : i + 16], "little") for i in range(0, 64, 16)
        )
        if has_uint32 > 1 or uinteger >= 1 << 32 or inc % 2 == 0:
            raise AttrError("set_state: not a state from get_state")
        self.numpy.bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": inc},
            "has_uint32": has_uint32,
            "uinteger": uinteger,
        }
        return self

    def __repr__(self) -> str:
        return f"Generator(seed={self.seed})"


default_generator = Generator(0)


def manual_seed(seed: int) -> Generator:
    """Reseed the default generator (used when no generator is passed)."""
    return default_generator.manual_seed(seed)


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.seed


def get_rng_state() -> np.ndarray:
    """The default generator's position (Generator.get_state)."""
    return default_generator.get_state()


def set_rng_state(state) -> None:
    """Put the default generator back to a position from get_rng_state."""
    default_generator.set_state(state)


def _random_op(name, kernel, sample, bounds, check, dtypes, default_dtype, doc, parts=None):
    """A random op: `kernel(gen, out, lo, hi)` draws in order; `sample(gen, n, lo, hi)` is the
    numpy reference drawing the same stream (numba's Generator support shares numpy's);
    `check(lo, hi, dtype)` raises DomainError for parameters the draw cannot take. A complex
    tensor's real and imaginary parts are drawn in turn, each with `parts(lo, hi)` (PyTorch's
    rule: a complex normal's parts have std / sqrt(2))."""
    (lo_name, lo), (hi_name, hi) = bounds.items()

    def drawn(out, kw):
        """The real array drawn into (a complex one's parts) and the bounds."""
        flat, low, high = out.reshape(-1), kw[lo_name], kw[hi_name]
        if flat.dtype.kind != "c":
            return flat, low, high
        return (flat.view(dt.to_real(flat.dtype)), *parts(low, high))

    def launch(out, shape, dtype, generator, **kw):
        gen = (generator or default_generator).numpy
        kernel(gen, *drawn(out, kw))

    def ref(shape, dtype, generator, **kw):
        out = np.empty(shape, dtype)
        flat, low, high = drawn(out, kw)
        gen = (generator or default_generator).numpy
        flat[...] = np.asarray(sample(gen, flat.size, low, high)).astype(flat.dtype)
        return out

    def spec(shape, dtype, generator, **kw):
        if generator is not None and not isinstance(generator, Generator):
            raise AttrError(f"{name}: generator must be an nbflow.Generator")
        check(kw[lo_name], kw[hi_name], dtype)
        return Spec(_check_shape(shape), dtype)

    attrs = {
        "shape": Attr("ints"),
        lo_name: lo,
        hi_name: hi,
        "dtype": Attr("dtype", default_dtype),
        "generator": Attr("any", None, optional=True),
    }
    return _declare(name, spec, launch, ref, attrs, dtypes=dtypes, doc=doc)


def _check_uniform(low, high, dtype):
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise DomainError(f"needs finite low <= high, got low={low}, high={high}")


def _check_normal(mean, std, dtype):
    if not (math.isfinite(mean) and std >= 0 and math.isfinite(std)):
        raise DomainError(f"needs a finite mean and std >= 0, got mean={mean}, std={std}")


def _check_randint(low, high, dtype):
    info = np.iinfo(dtype)
    if not low < high:
        raise DomainError(f"high must be greater than low, got low={low}, high={high}")
    if low < info.min or high - 1 > info.max:
        raise DomainError(f"[{low}, {high}) does not fit {np.dtype(dtype).name}")


uniform_op = _random_op(
    "uniform",
    _uniform_cpu,
    lambda g, n, low, high: low + (high - low) * g.random(n),
    {"low": Attr("float", 0.0), "high": Attr("float", 1.0)},
    _check_uniform,
    dt.FLOATS + dt.COMPLEX,
    dt.DEFAULT,
    "Uniform samples in [low, high) (a complex tensor's parts each).",
    parts=lambda low, high: (low, high),
)
normal_op = _random_op(
    "normal",
    _normal_cpu,
    lambda g, n, mean, std: mean + std * g.standard_normal(n),
    {"mean": Attr("float", 0.0), "std": Attr("float", 1.0)},
    _check_normal,
    dt.FLOATS + dt.COMPLEX,
    dt.DEFAULT,
    "Normal samples with the given mean and standard deviation (a complex tensor's parts: "
    "the mean each, std / sqrt(2) each, so that its variance is std**2, as PyTorch's).",
    parts=lambda mean, std: (mean, std / math.sqrt(2)),
)
randint_op = _random_op(
    "randint",
    _randint_cpu,
    lambda g, n, low, high: [g.integers(low, high) for _ in range(n)],
    {"low": Attr("int", 0), "high": Attr("int")},
    _check_randint,
    dt.INTS,
    dt.DEFAULT_INT,
    "Integer samples in [low, high).",
)


# ---------------------------------------------------------------- public functions


def on_device(t, device, requires_grad=False):
    """A new tensor on `device` (creation ops run on the CPU; the result is copied once),
    requiring grad when asked (PyTorch's `requires_grad=`). In graph mode the executor places
    values, so `device` is ignored there, and a graph value's gradient is appended_backward's."""
    to = getattr(t, "to", None)  # a Tensor; a graph Var has no device
    t = t if device is None or to is None else to(device)
    if flag(requires_grad, "requires_grad"):
        if to is None:
            raise UnsupportedError(
                "requires_grad=True on a graph value: append_backward differentiates "
                "with respect to parameters (static.create_parameter)"
            )
        t.requires_grad_(True)
    return t


# PyTorch's memory formats, by name: nbflow's kernels take any strides and nbflow tensors have
# no user-set layout, so each gives the same values (the argument is checked, then unused)
MEMORY_FORMATS = ("preserve_format", "contiguous_format", "channels_last", "channels_last_3d")
preserve_format, contiguous_format, channels_last, channels_last_3d = MEMORY_FORMATS


def check_memory_format(name, memory_format):
    """memory_format= as PyTorch takes it: None, a name of MEMORY_FORMATS (nbflow's
    `nbflow.channels_last` ...) or PyTorch's own object (torch.channels_last, whose str() is
    "torch.channels_last"); anything else raises DomainError naming `name`."""
    if memory_format is None:
        return
    text = memory_format if isinstance(memory_format, str) else str(memory_format)
    if text.removeprefix("torch.") not in MEMORY_FORMATS:
        raise DomainError(
            f"{name}: memory_format must be one of {', '.join(MEMORY_FORMATS)}, "
            f"got {shown(memory_format)}"
        )


def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def fill_value(value):
    """A fill value for the ops' "value" attr: a bool as the int it is (True is 1), which the
    attr, a number, does not take; the dtype, chosen apart, makes it True again."""
    return int(value) if isinstance(value, (bool, np.bool_)) else value


def full(shape, value, dtype=None, device=None, requires_grad=False):
    """A tensor of `shape` filled with `value` (dtype from the value when not given: a bool
    gives a bool tensor)."""
    if dtype is None:
        dtype = dt.scalar_dtype(value)
    shape = integers(shape, "full: size")
    t = full_op(shape=shape, value=fill_value(value), dtype=dtype)
    return on_device(t, device, requires_grad)


def zeros(*shape, dtype=None, device=None, requires_grad=False):
    return on_device(full_op(shape=_shape(shape), value=0, dtype=dtype), device, requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False):
    return on_device(full_op(shape=_shape(shape), value=1, dtype=dtype), device, requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad=False):
    """PyTorch's empty, filled with zeros: nbflow does not hand out uninitialised memory."""
    return zeros(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(x, value, dtype=None, requires_grad=False, *, device=None, memory_format=None):
    check_memory_format("full_like", memory_format)
    t = full_like_op(x, value=fill_value(value), dtype=dtype)
    return on_device(t, device, requires_grad)


def fill_(x, value):
    return fill_op(x, value=fill_value(value))


def zero_(x):
    return fill_op(x, value=0)


def zeros_like(x, dtype=None, requires_grad=False, *, device=None, memory_format=None):
    check_memory_format("zeros_like", memory_format)
    return on_device(full_like_op(x, value=0, dtype=dtype), device, requires_grad)


def ones_like(x, dtype=None, requires_grad=False, *, device=None, memory_format=None):
    check_memory_format("ones_like", memory_format)
    return on_device(full_like_op(x, value=1, dtype=dtype), device, requires_grad)


def arange(start, stop=None, step=1, dtype=None, device=None, requires_grad=False):
    """arange(stop) or arange(start, stop, step); float dtype if any bound is a float."""
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = dt.promote([], [dt.scalar_dtype(v) for v in (start, stop, step)])
    return on_device(
        arange_op(start=start, stop=stop, step=step, dtype=dtype), device, requires_grad
    )


def endpoint(name, arg, value):
    """A range's endpoint: a number, or a 0-d tensor's value (PyTorch's tensor overloads of
    linspace and logspace); a tensor of more dims raises ShapeError."""
    if getattr(value, "ndim", None) is None:
        return value
    if value.ndim != 0:
        raise ShapeError(f"{name}: {arg} must be a number or a 0-d tensor, got shape {value.shape}")
    return value.item()


def linspace(start, stop, num, dtype=None, device=None, requires_grad=False):
    """num numbers from start to stop, evenly spaced (start and stop may be 0-d tensors); an
    integer dtype holds the float64 values truncated toward zero, as PyTorch's. Complex ends
    (or a complex dtype) give complex numbers, in the default complex dtype unless given."""
    start, stop = endpoint("linspace", "start", start), endpoint("linspace", "stop", stop)
    if is_complex_range(start, stop, dtype):
        return on_device(_complex_linspace(start, stop, num, dtype), device, requires_grad)
    if dtype is not None and dt.as_dtype(dtype) in dt.INTS:
        t = linspace_op(start=start, stop=stop, num=num, dtype=dt.float64).astype(dtype)
        return on_device(t, device, requires_grad)
    t = linspace_op(start=start, stop=stop, num=num, dtype=dtype)
    return on_device(t, device, requires_grad)


def is_complex_range(start, end, dtype) -> bool:
    """Whether linspace or logspace gives complex numbers: a complex dtype, or complex ends
    with no dtype (with a real dtype, they are refused as a real range's)."""
    if dtype is not None:
        return dt.is_complex(dt.as_dtype(dtype))
    return any(isinstance(v, (complex, np.complexfloating)) for v in (start, end))


def _complex_linspace(start, stop, num, dtype):
    # PyTorch's complex step (stop - start) / (num - 1) is the parts' steps: each part's range
    from .complex_parts import complex as from_parts  # (complex_parts imports this module)

    dtype = dt.to_complex(dt.default_float()) if dtype is None else dt.as_dtype(dtype)
    start, stop = complex(start), complex(stop)
    parts = (start.real, stop.real), (start.imag, stop.imag)
    real, imag = (linspace_op(start=a, stop=b, num=num, dtype=dt.to_real(dtype)) for a, b in parts)
    return from_parts(real, imag)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    return on_device(eye_op(n=n, m=m, dtype=dtype), device, requires_grad)


def uniform(
    *shape,
    low=0.0,
    high=1.0,
    dtype=None,
    generator=None,
    device=None,
    requires_grad=False,
):
    t = uniform_op(shape=_shape(shape), low=low, high=high, dtype=dtype, generator=generator)
    return on_device(t, device, requires_grad)


def rand(*shape, dtype=None, generator=None, device=None, requires_grad=False):
    return uniform(
        *shape, dtype=dtype, generator=generator, device=device, requires_grad=requires_grad
    )


def normal(
    *shape,
    mean=0.0,
    std=1.0,
    dtype=None,
    generator=None,
    device=None,
    requires_grad=False,
    size=None,
    layout=None,
):
    """Normal draws: normal(*shape, mean=, std=) (numpy's style), or PyTorch's overloads
    normal(mean, std) with a tensor mean or std (one draw per element of their broadcast
    shape) and normal(mean, std, size) with numbers. `layout` is PyTorch's: strided only."""
    check_layout("normal", layout)
    if size is not None:
        if len(shape) != 2:
            raise ArgumentError("normal: size= goes with normal(mean, std, size=...)")
        shape = (*shape, size)
    if _pytorch_normal(shape):
        return _normal_of(
            *shape, dtype=dtype, generator=generator, device=device, requires_grad=requires_grad
        )
    t = normal_op(shape=_shape(shape), mean=mean, std=std, dtype=dtype, generator=generator)
    return on_device(t, device, requires_grad)


def _pytorch_normal(args) -> bool:
    """Whether normal's positional arguments are PyTorch's (mean, std[, size]): a tensor
    among the first two, or a size after two numbers."""
    if any(hasattr(a, "shape") and not isinstance(a, np.ndarray) for a in args[:2]):
        return True
    return len(args) == 3 and isinstance(args[2], (list, tuple))


def _normal_of(mean, std=1.0, size=None, *, dtype, generator, device, requires_grad):
    """PyTorch's normal(mean, std[, size]): mean + std * a standard normal draw, so that the
    gradients reach a tensor mean (1) and std (the draw), as PyTorch's do."""
    tensors = [v for v in (mean, std) if hasattr(v, "shape")]
    if not tensors:
        if size is None:
            raise ArgumentError("normal(mean, std, size): numbers need a size")
        shape = integers(size, "normal: size")
        t = normal_op(shape=shape, mean=mean, std=std, dtype=dtype, generator=generator)
        return on_device(t, device, requires_grad)
    if size is not None or dtype is not None:
        raise ArgumentError("normal(mean, std): the tensors give the size and the dtype")
    try:
        shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    except ValueError:
        shapes = " and ".join(str(tuple(t.shape)) for t in tensors)
        raise ShapeError(f"normal: mean and std of shapes {shapes} do not broadcast") from None
    kind = dt.promote([t.dtype for t in tensors], [])
    draw = normal_op(shape=shape, mean=0.0, std=1.0, dtype=kind, generator=generator)
    return on_device(mean + std * on_device(draw, getattr(tensors[0], "device", None)), device)


def check_layout(name, layout):
    """layout= as PyTorch takes it: None or strided (nbflow's only layout; PyTorch's
    torch.strided is taken too); anything else raises UnsupportedError naming `name`."""
    if layout is not None and str(layout).removeprefix("torch.") != "strided":
        raise UnsupportedError(f"{name}: layout must be strided (dense tensors), got {layout!r}")


def randn(*shape, dtype=None, generator=None, device=None, requires_grad=False):
    return normal(
        *shape, dtype=dtype, generator=generator, device=device, requires_grad=requires_grad
    )


def randint(
    low,
    high=None,
    shape=None,
    dtype=dt.DEFAULT_INT,
    generator=None,
    device=None,
    *,
    size=None,
    requires_grad=False,
):
    """Integers in [low, high) of the given shape: randint(low, high, shape) or, as PyTorch,
    randint(high, size) (from 0); a float dtype holds the integers drawn (PyTorch's)."""
    if shape is None:
        shape = size
    if shape is None and isinstance(high, (tuple, list)):
        low, high, shape = 0, low, high  # randint(high, size)
    if high is None or shape is None:
        raise ArgumentError("randint needs high and a shape: randint([low,] high, size)")
    shape = integers(shape, "randint: size")
    dtype = dt.as_dtype(dtype)
    draw = dtype if dtype in dt.INTS else dt.int64
    out = randint_op(shape=shape, low=low, high=high, dtype=draw, generator=generator)
    if draw != dtype:
        out = out.astype(dtype)
    if requires_grad:
        out.requires_grad_(True)
    return on_device(out, device)


# ---------------------------------------------------------------- empty_like, _permuted, _strided


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of input's shape, filled with zeros (nbflow hands out no uninitialised
    memory), in input's dtype unless given."""
    check_memory_format("empty_like", memory_format)
    return on_device(zeros_like(input, dtype=dtype), device, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, device=None, requires_grad=False):
    """PyTorch's empty_permuted: a tensor of `size` (filled with zeros, as empty) whose memory
    PyTorch lays out in the order `physical_layout`, a permutation of the dims: checked, and
    every layout gives the same tensor (nbflow's kernels take any strides)."""
    size = integers(size, "empty_permuted: size")
    layout = integers(physical_layout, "empty_permuted: physical_layout")
    if sorted(layout) != list(range(len(size))):
        raise DomainError(
            f"empty_permuted: physical_layout {layout} is not a permutation of {len(size)} dims"
        )
    return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """PyTorch's empty_strided: a tensor of `size` (filled with zeros, as empty); `stride`,
    one int per dim, is checked, and the tensor is laid out contiguously (nbflow's tensors
    have no user-set strides; their values are the same)."""
    size = integers(size, "empty_strided: size")
    stride = integers(stride, "empty_strided: stride")
    if len(stride) != len(size):
        raise ShapeError(f"empty_strided: {len(stride)} strides for {len(size)} dims")
    return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad)


__all__ = [
    "Generator",
    "default_generator",
    "manual_seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "full",
    "zeros",
    "ones",
    "empty",
    "full_like",
    "zeros_like",
    "preserve_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "fill_",
    "zero_",
    "ones_like",
    "arange",
    "linspace",
    "eye",
    "uniform",
    "rand",
    "normal",
    "randn",
    "randint",
    "empty_like",
    "empty_permuted",
    "empty_strided",
]
