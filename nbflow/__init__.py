"""nbflow: a deep-learning framework whose kernels are numba functions.

One op declaration serves eager mode (tensors with a tape) and graph mode (a Program).
"""

import numpy as _np

from . import (
    core,
    data,
    dtypes,
    fft,
    graph,
    linalg,
    masked,
    nn,
    ops,
    optim,
    signal,
    special,
)
from .autograd import backward, grad
from .checkpoint import load, load_state, save, save_state
from .control import cond, while_loop
from .core import (
    REGISTRY,
    Attr,
    Op,
    Spec,
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .device import DeviceError
from .dlpack import DLPackDTypeError, DLPackError, from_dlpack
from .dtypes import (
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)  # fmt: skip
from .eager.checking import check_nan_inf, get_memory_budget, set_memory_budget
from .eager.values import allclose, equal, masked_select, nonzero, unique, unique_consecutive
from .errors import (
    ArgumentError,
    AttrError,
    DistributedError,
    DomainError,
    DTypeError,
    GradientError,
    KernelNotFoundError,
    LinAlgError,
    LoopLimitError,
    NbflowError,
    NumericalError,
    OutOfRangeError,
    ProgramError,
    ResourceExhaustedError,
    ShapeError,
    TracedValueError,
    UnsupportedError,
)
from .graph import (
    Executor,
    Program,
    Scope,
    append_backward,
    global_scope,
    jit,
    program_guard,
    static,
    trace,
)
from .kernels.cpu.threads import get_num_threads, set_num_threads

# PyTorch's top-level names of the nn ops whose torch.* signature is F's (the others, and the
# legacy linear-algebra names, are in torch_names.py)
from .nn.functional import (
    adaptive_avg_pool1d,
    avg_pool1d,
    bilinear,
    celu,
    channel_shuffle,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_similarity,
    hardshrink,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool3d,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    prelu,
    rms_norm,
    rrelu,
    selu,
    threshold,
)
from .ops import *  # noqa: F403  (the ops are the public functions)
from .ops._define import elementwise  # declare your own ops as nbflow does
from .runtime.buffers import empty_cache
from .safetensors_io import load_safetensors, save_safetensors
from .tensor import Tensor, from_numpy, tensor
from .torch_names import *  # noqa: F403  (torch's legacy names, losses with reduction codes)

__version__ = "0.1.0"

inference_mode = no_grad  # PyTorch's name for a scope without gradient recording

# PyTorch's dtype names (after everything above: `float`, `int` and `bool` shadow the
# builtins from here on in this module)
long, double, half, short = int64, float64, float16, int16
cfloat, cdouble = complex64, complex128
float, int, bool = float32, int32, bool_
range = ops.ranges.inclusive_range  # PyTorch's deprecated torch.range (end included)

# PyTorch's top-level in-place functions: torch.exp_(x) is x.exp_(), torch.celu_(x) F's
_IN_PLACE_METHODS = """
abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_
ceil_ clamp_max_ clamp_min_ cos_ cosh_ deg2rad_ detach_ erf_ erfc_ exp2_ exp_ expm1_ fix_
floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_
rad2deg_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_
trunc_ xlogy_
""".split()


def _in_place_function(name):
    def function(input, *args, **kwargs):
        if not isinstance(input, Tensor):  # an in-place update needs a tensor to update
            raise ArgumentError(
                f"{name}: argument 'input' must be a tensor, got {type(input).__name__}"
            )
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"PyTorch's torch.{name}(input, ...): input.{name}(...)."
    return function


for _name in _IN_PLACE_METHODS:
    globals()[_name] = _in_place_function(_name)
from .nn.functional import celu_, rrelu_, selu_, threshold_  # noqa: E402

igamma, igammac = special.gammainc, special.gammaincc  # PyTorch's top-level names
mvlgamma = special.multigammaln
stft, istft = fft.stft, fft.istft  # PyTorch's torch.stft and torch.istft

# PyTorch's top-level aten forms of F's functions (native_layer_norm, constant_pad_nd, ...)
from .nn.functional import aten_forms as _aten_forms  # noqa: E402

globals().update({n: core.public(getattr(_aten_forms, n)) for n in _aten_forms.__all__})

from . import func  # noqa: E402  (PyTorch's torch.func)
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: E402  (torch.amp)
from .compiled import compile  # noqa: E402  (PyTorch's torch.compile; the builtin's name)

vmap = func.vmap  # PyTorch's torch.vmap

from . import utils  # noqa: E402  (PyTorch's torch.utils: data, checkpoint)

# PyTorch's printing and anomaly switches, dtype class and typename
from .autograd import is_anomaly_enabled  # noqa: E402
from .autograd import set_detect_anomaly as set_anomaly_enabled  # noqa: E402
from .eager.printing import get_printoptions, set_printoptions  # noqa: E402

dtype = _np.dtype  # nbflow's dtypes are numpy's: isinstance(x.dtype, nbflow.dtype) holds


def typename(obj) -> str:
    """PyTorch's typename: a tensor's type() ("nbflow.FloatTensor"), else the qualified name
    of obj's type."""
    if isinstance(obj, Tensor):
        return obj.type()
    kind = type(obj)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def __getattr__(name):
    """nbflow.distributions, nbflow.distributed, nbflow.testing and nbflow.onnx on first use,
    so that `import nbflow` stays cheap."""
    if name in ("distributions", "distributed", "testing", "onnx"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
