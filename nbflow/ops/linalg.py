"""Linear algebra: matmul (numpy/PyTorch semantics, on BLAS) and matrix_transpose.

matmul takes 1-D and N-D operands: a 1-D left operand is a row vector and a 1-D right operand
a column vector, the added dim is removed from the result, and the batch dims (all but the last
two) broadcast. On the CPU the launcher calls numpy's matmul, which lands on BLAS for float32
and float64 (float16 is computed in float32); integers use numpy's own loop.
"""

import math

import numpy as np

from ..core import UNKNOWN, Attr, Op, Spec, broadcast_shapes, needs_grad
from ..core import dtypes as dt
from ..core.errors import DomainError, DTypeError, ShapeError
from ..kernels.cpu import blas, threads
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import BODIES, JIT
from ..kernels.cuda.loader import not_supported
from ..runtime import buffers
from ._define import inplace_variant
from .activations import ACTIVATION, relu, relu_grad
from .broadcast import broadcast_to_like
from .complex_math import conj
from .elementwise import abs as abs_
from .elementwise import astype, isfinite, sqrt, where
from .reduce import amax, amin, expand_reduced, reduced_axes
from .reduce import sum as reduce_sum
from .shape import flatten, movedim, reshape, unsqueeze

# ---------------------------------------------------------------- matrix_transpose


def _matrix_transpose_spec(x):
    if x.ndim < 2:
        raise ShapeError("needs at least 2 dims")
    return Spec(x.shape[:-2] + (x.shape[-1], x.shape[-2]), x.dtype)


def _swap_last(x):
    return np.swapaxes(x, -1, -2)


matrix_transpose = Op(
    name="matrix_transpose",
    inputs=("x",),
    outputs=("out",),
    spec=_matrix_transpose_spec,
    kernels={"cpu": _swap_last, "cuda": None},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=_swap_last,
    view=True,
    doc="Swap the last two axes (a view, no copy): PyTorch's x.mT, numpy's matrix_transpose.",
)

matrix_transpose.defgrad(lambda g, out, x: (matrix_transpose(g),))

# ---------------------------------------------------------------- matmul


def _matmul_spec(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("operands need at least 1 dim (use mul for scalars)")
    a_mat = a.shape if a.ndim > 1 else (1,) + a.shape
    b_mat = b.shape if b.ndim > 1 else b.shape + (1,)
    inner_a, inner_b = a_mat[-1], b_mat[-2]
    if inner_a != inner_b and UNKNOWN not in (inner_a, inner_b):
        raise ShapeError(
            f"the inner dims differ: a{tuple(a.shape)} has {inner_a} columns, "
            f"b{tuple(b.shape)} has {inner_b} rows"
        )
    shape = broadcast_shapes(a_mat[:-2], b_mat[:-2])
    if a.ndim > 1:
        shape += (a_mat[-2],)
    if b.ndim > 1:
        shape += (b_mat[-1],)
    return Spec(shape, dt.promote([a.dtype, b.dtype]))


# multiply-adds from which a float matmul chooses its BLAS threads by measurement
# (kernels/cpu/threads.py); below, OpenBLAS's own choice stands (it runs small products on one)
THREAD_CHOICE_MIN_WORK = 1 << 20


@njit(**JIT)
def _outer(a, b, out):
    for i in range(out.shape[0]):
        ai = a[i, 0]
        for j in range(out.shape[1]):
            out[i, j] = ai * b[0, j]


def _matmul_cpu(a, b, out):
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == 1 and out.dtype.kind == "f":
        # an outer product (a batch-1 weight gradient): numpy's matmul does not pass an inner
        # dim of 1 to BLAS, and its own loop is far slower than this one
        _outer(a, b, out)
        return
    if out.dtype.kind != "f" or a.ndim < 2 or b.ndim < 2:
        np.matmul(a, b, out=out)
    elif out.size * a.shape[-1] < THREAD_CHOICE_MIN_WORK:
        np.matmul(a, b, out=out)  # small: OpenBLAS runs it on one thread
    elif b.ndim == 2 and a.ndim > 2 and out.flags.c_contiguous:
        # stacked rows times one matrix (a linear layer on (B, T, K)): one GEMM over the
        # flattened rows; numpy's matmul would loop over the stack, or leave BLAS altogether
        # for an operand whose stack is strided (a batch_first/sequence-first transpose)
        rows = buffers.contiguous(a).reshape(-1, a.shape[-1])
        _gemm(rows, b, out.reshape(-1, out.shape[-1]))
    elif out.ndim > 2 and out.shape[0] > 1 and (stack := blas.stack_call(a, b, out)):
        # a stack of products (attention's heads), each small for OpenBLAS's threads: the
        # stack may be split over numba's threads instead
        key = ("stacked", a.shape, b.shape, a.strides, b.strides, out.dtype)
        threads.stacked_call(key, stack)
    else:
        _gemm(a, b, out)


def _gemm(a, b, out):
    """out = a @ b on BLAS, on OpenBLAS's threads or on one, whichever measured faster."""
    key = (a.shape, b.shape, a.strides, b.strides, out.dtype)
    threads.blas_call(key, np.matmul, a, b, out=out)


def _matmul_ref(a, b):
    d = dt.promote([a.dtype, b.dtype])
    if dt.is_float(d):
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(d)
    return np.matmul(a.astype(d), b.astype(d))


matmul = Op(
    name="matmul",
    inputs=("a", "b"),
    outputs=("out",),
    spec=_matmul_spec,
    kernels={"cpu": _matmul_cpu, "cuda": None},
    dtypes=dt.NUMERIC + dt.COMPLEX,
    ref=_matmul_ref,
    doc="Matrix product with numpy's matmul semantics: a 1-D operand is a vector (its added "
    "dim is dropped from the result), batch dims broadcast. Floats run on BLAS.",
)


@matmul.defgrad
def _matmul_grad(g, out, a, b):
    if a.ndim == 1 and b.ndim == 1:  # dot product: g is 0-d
        return g * conj(b), g * conj(a)
    if a.ndim == 1:
        # out[..., j] = sum_i a[i] b[..., i, j]; g has b's batch dims
        g_cols = expand_reduced(g, b, axis=-2)  # g[..., j] at [..., i, j]
        a_rows = matrix_transpose(broadcast_to_like(a, matrix_transpose(b)))  # a[i] there
        return reduce_sum(conj(b) * g_cols, axis=-1), conj(a_rows) * g_cols
    if b.ndim == 1:
        # out[..., i] = sum_j a[..., i, j] b[j]; g has a's batch dims
        g_rows = expand_reduced(g, a, axis=-1)
        return g_rows * conj(b), reduce_sum(conj(a) * g_rows, axis=-2)
    # the driver sums broadcast batch dims back to each operand's shape
    # (complex: the conjugate transposes, a^H and b^H; conj is nothing for real dtypes)
    ga = matmul(g, conj(matrix_transpose(b))) if needs_grad(a) else None
    gb = None
    if needs_grad(b):
        if _transposed(b):
            # b is a transposed view (a linear layer's x @ W.T): (g.T @ a).T computes the
            # product in W's layout, so W's gradient comes out contiguous, not as a view the
            # optimizer or backward() would copy (graph mode: transpose folding, rewrite.py)
            gb = matrix_transpose(matmul(matrix_transpose(g), conj(a)))
        else:
            gb = matmul(conj(matrix_transpose(a)), g)
    return ga, gb


def _transposed(x) -> bool:
    """Whether x is an eager 2-D value stored transposed (a graph Var has no layout)."""
    data = getattr(x, "_data", None)
    return (
        isinstance(data, np.ndarray)
        and data.ndim == 2
        and data.flags.f_contiguous
        and not data.flags.c_contiguous
    )


# ---------------------------------------------------------------- addmm


def _addmm_spec(x, a, b, beta, alpha):
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"needs 2-D a and b, got a{tuple(a.shape)} and b{tuple(b.shape)}")
    product = _matmul_spec(a, b)
    fits = x.ndim <= 2 and all(
        n == 1 or UNKNOWN in (n, m) or n == m for n, m in zip(x.shape[::-1], product.shape[::-1])
    )
    if not fits:
        raise ShapeError(
            f"input{tuple(x.shape)} does not broadcast to the product's shape {product.shape}"
        )
    d = dt.promote([x.dtype, product.dtype])
    scales_complex = isinstance(beta, complex) or isinstance(alpha, complex)
    if scales_complex and not dt.is_complex(d):  # (PyTorch's rule too)
        raise DTypeError(f"complex beta or alpha ({beta}, {alpha}) needs complex tensors, not {d}")
    return Spec(product.shape, d)


@njit(**JIT)
def _scale_add(out, product, alpha, beta):
    """out = beta * out + alpha * product, in place (beta 0: out is not read, as in BLAS)."""
    alpha, beta = out.dtype.type(alpha), out.dtype.type(beta)
    if beta == 0:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = alpha * product[i, j]
    else:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = beta * out[i, j] + alpha * product[i, j]


def _addmm_cpu(x, a, b, out, beta, alpha):
    if out is not x and beta != 0:  # out of place (or a float16 target's float32 copy)
        np.copyto(out, x)
    # one GEMM adding into `out` saves the product's buffer and a pass over it, but calling
    # BLAS directly costs more per call than numpy's matmul (pointers, checks): large
    # products only
    if out.size * a.shape[1] >= THREAD_CHOICE_MIN_WORK:
        key = (a.shape, b.shape, a.strides, b.strides, out.strides, "addmm")
        if threads.blas_call(key, blas.gemm, a, b, out, alpha, beta):
            return
    product = np.matmul(a, b)  # complete before out is written (a or b may be out)
    _scale_add(out, product, alpha, beta)


def _addmm_ref(x, a, b, beta=1.0, alpha=1.0):
    d = dt.promote([x.dtype, a.dtype, b.dtype])
    product = alpha * np.matmul(a.astype(np.float64), b.astype(np.float64))
    return (product if beta == 0 else beta * x.astype(np.float64) + product).astype(d)


addmm = Op(
    name="addmm",
    inputs=("input", "a", "b"),
    outputs=("out",),
    spec=_addmm_spec,
    kernels={"cpu": _addmm_cpu, "cuda": None},
    dtypes=dt.NUMERIC + dt.COMPLEX,
    ref=_addmm_ref,
    attrs={"beta": Attr("value", 1.0), "alpha": Attr("value", 1.0)},
    doc="PyTorch's addmm: beta * input + alpha * (a @ b) for 2-D a and b, input broadcast to "
    "the product's shape (beta 0: input is not read, its NaNs do not propagate); beta and "
    "alpha complex for complex tensors. One GEMM call on BLAS, which adds the product into "
    "the result.",
)


@addmm.defgrad
def _addmm_grad(g, out, x, a, b, beta, alpha):
    beta, alpha = beta.conjugate(), alpha.conjugate()  # (Wirtinger: conj of a complex scale)
    gx = g * beta if needs_grad(x) else None  # the driver sums it back to input's shape
    ga = matmul(g, conj(matrix_transpose(b))) * alpha if needs_grad(a) else None
    gb = matmul(conj(matrix_transpose(a)), g) * alpha if needs_grad(b) else None
    return gx, ga, gb


# in place, into a (rows, cols) input: the form an SGD step folded into its weight gradient's
# product takes in graph mode (graph/rewrite.py)
addmm_ = inplace_variant(addmm, "addmm_")

# ---------------------------------------------------------------- linear


def _linear_spec(x, w, *bias, activation="none"):
    if x.ndim == 0 or w.ndim != 2:
        raise ShapeError(
            f"needs x with at least 1 dim and a 2-D weight (out_features, in_features), got "
            f"x{tuple(x.shape)} and weight{tuple(w.shape)}"
        )
    n_out, n_in = w.shape
    if UNKNOWN not in (x.shape[-1], n_in) and x.shape[-1] != n_in:
        raise ShapeError(
            f"x{tuple(x.shape)} has {x.shape[-1]} features, weight{tuple(w.shape)} takes {n_in}"
        )
    for b in bias:
        if b.ndim != 1 or (UNKNOWN not in (b.shape[0], n_out) and b.shape[0] != n_out):
            raise ShapeError(f"bias{tuple(b.shape)} must have shape ({n_out},)")
    d = dt.promote([x.dtype, w.dtype, *(b.dtype for b in bias)])
    if activation == "relu" and dt.is_complex(d):
        raise DTypeError("activation='relu' takes real tensors (a ReLU orders its input)")
    return Spec(x.shape[:-1] + (n_out,), d)


_relu_body = BODIES["relu"]


@njit(**JIT)
def _add_bias(out, bias, relu):
    """out += bias (a row per output row), then relu(out) with relu's own scalar body (NaN
    stays NaN) when asked: one pass over out, in place."""
    if relu:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = _relu_body(out[i, j] + bias[j])
    else:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] += bias[j]


def _linear_cpu(x, w, *rest, activation="none"):
    # one op for x @ w.T + b (and a ReLU): a layer's forward and backward make fewer ops than
    # with matrix_transpose, matmul, add and relu, each of which costs its dispatch and a pass
    *bias, out = rest
    _matmul_cpu(x, w.T, out)  # BLAS takes the transposed weight as it is
    if bias and out.dtype.kind == "c":
        out += bias[0]  # (no ReLU for complex numbers: the spec refuses it)
    elif bias:
        if out.size:  # (out is fresh: contiguous)
            _add_bias(out.reshape(-1, out.shape[-1]), bias[0], activation == "relu")
    elif activation == "relu":
        relu.kernel("cpu", out.dtype)(out, out)


def _linear_ref(x, w, *bias, activation="none"):
    d = dt.promote([x.dtype, w.dtype, *(b.dtype for b in bias)])
    y = np.matmul(x.astype(np.float64), w.astype(np.float64).T)
    y = y + bias[0] if bias else y
    return (np.where(y < 0, 0.0, y) if activation == "relu" else y).astype(d)


linear_op = Op(
    name="linear",
    inputs=("x", "weight", "*bias"),
    outputs=("out",),
    spec=_linear_spec,
    kernels={"cpu": _linear_cpu, "cuda": None},
    dtypes=dt.NUMERIC + dt.COMPLEX,
    ref=_linear_ref,
    attrs={"activation": ACTIVATION},
    doc="PyTorch's F.linear: x @ weight.T + bias, x (..., in_features), weight (out_features, "
    "in_features), optional bias (out_features,) -> (..., out_features). On BLAS. "
    "activation='relu' applies a ReLU in the bias's pass (nn.Sequential's Linear, ReLU).",
)


@linear_op.defgrad
def _linear_grad(g, out, x, w, *bias, activation):
    if activation == "relu":  # out > 0 exactly where the ReLU's input was > 0
        g = relu_grad(out, g)
    gx = matmul(g, conj(w)) if needs_grad(x) else None
    gw = None
    if needs_grad(w):  # (out, in), contiguous in the weight's layout
        if x.ndim == 2:
            gw = matmul(matrix_transpose(g), conj(x))
        else:  # the leading dims of x are rows (a 1-D x is one row)
            rows_g, rows_x = flatten(unsqueeze(g, 0), 0, -2), flatten(unsqueeze(x, 0), 0, -2)
            gw = matmul(matrix_transpose(rows_g), conj(rows_x))
    gb = None
    if bias and needs_grad(bias[0]):
        gb = reduce_sum(g, axis=tuple(range(g.ndim - 1))) if g.ndim > 1 else g
    return (gx, gw, gb) if bias else (gx, gw)


def linear(x, weight, bias=None, activation="none"):
    """PyTorch's F.linear: x @ weight.T + bias (bias None: no bias); activation="relu" adds a
    ReLU in the same pass as the bias (and its gradient reads the output)."""
    args = (x, weight) if bias is None else (x, weight, bias)
    return linear_op(*args, activation=activation)


# ---------------------------------------------------------------- matmul_relu_grad

_relu_grad_body = BODIES["relu_grad"]


def _matmul_relu_grad_spec(r, a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"needs 2-D a and b, got a{tuple(a.shape)} and b{tuple(b.shape)}")
    product = _matmul_spec(a, b)
    if r.ndim != 2 or any(n != m and UNKNOWN not in (n, m) for n, m in zip(r.shape, product.shape)):
        raise ShapeError(f"out{tuple(r.shape)} must have the product's shape {product.shape}")
    return Spec(product.shape, dt.promote([r.dtype, product.dtype]))


@njit(**JIT)
def _mask_by_relu(out, r):
    """out = relu_grad(r, out), in place, with relu_grad's own scalar body."""
    for i in range(out.shape[0]):
        row, mask = out[i], r[i]
        for j in range(out.shape[1]):
            row[j] = _relu_grad_body(mask[j], row[j])


@njit(**JIT)
def mask_over(r, product):
    """r = relu_grad(r, product), in place over r (each r[i, j] read before it is written).
    Row by row through 1-D slices, as _mask_by_relu: numba then sees plain 1-D loops."""
    for i in range(r.shape[0]):
        row, g = r[i], product[i]
        for j in range(r.shape[1]):
            row[j] = _relu_grad_body(row[j], g[j])


def _matmul_relu_grad_cpu(r, a, b, out):
    _matmul_cpu(a, b, out)
    _mask_by_relu(out, r)  # while the product is still in the cache


def _matmul_relu_grad_ref(r, a, b):
    product = _matmul_ref(a, b)
    masked = np.where(r <= 0, 0, product)  # relu_grad's rule: 0 under the mask, g at a NaN r
    return masked.astype(dt.promote([r.dtype, product.dtype]))


matmul_relu_grad = Op(
    name="matmul_relu_grad",
    inputs=("out", "a", "b"),
    outputs=("grad",),
    spec=_matmul_relu_grad_spec,
    kernels={
        "cpu": _matmul_relu_grad_cpu,
        "cuda": not_supported(
            "matmul_relu_grad is made by a CPU graph-mode rewrite; on a GPU the product and "
            "relu_grad run as two ops"
        ),
    },
    dtypes=dt.FLOATS,
    ref=_matmul_relu_grad_ref,
    differentiable=False,
    doc="relu_grad(out, a @ b) for 2-D a and b: the gradient reaching a ReLU layer's output "
    "`out` from the next layer (g @ W), masked where out <= 0 in the product's own step. "
    "Graph mode folds that matmul and relu_grad into it (graph/rewrite.py).",
)


# ---------------------------------------------------------------- PyTorch's fixed-rank products


def _ranks(name, want, *xs):
    if any(x.ndim != want for x in xs):
        shapes = " and ".join(str(tuple(x.shape)) for x in xs)
        raise ShapeError(f"{name} needs {want}-D tensors, got {shapes} (matmul takes any)")


def mm(a, b):
    """a @ b for 2-D a and b (PyTorch's mm)."""
    _ranks("mm", 2, a, b)
    return matmul(a, b)


def bmm(a, b):
    """Batched a @ b for 3-D a and b (PyTorch's bmm)."""
    _ranks("bmm", 3, a, b)
    return matmul(a, b)


def dot(a, b):
    """The inner product of two 1-D tensors (PyTorch's dot)."""
    _ranks("dot", 1, a, b)
    return matmul(a, b)


def outer(a, b):
    """out[i, j] = a[i] * b[j] for 1-D a and b."""
    _ranks("outer", 1, a, b)
    return unsqueeze(a, 1) * unsqueeze(b, 0)


# ---------------------------------------------------------------- vector norms


def norm(x, p=2, axis=None, keepdims=False):
    """PyTorch's norm: the vector p-norm over `axis` (every element when None) of a float
    tensor; p is 2 ("fro" too), 1, inf, -inf, 0 (the count of nonzeros) or another positive
    number. The gradient at the zero vector is 0 (a subgradient), not NaN, and for p < 1 it
    is 0 at each zero element (PyTorch's), not infinite."""
    if not dt.differentiable(x.dtype):
        raise DTypeError(f"norm needs a float or complex tensor, got {x.dtype}")
    if isinstance(p, str) and p == "nuc":
        return _nuclear_norm(x, axis, keepdims)
    if dt.is_complex(x.dtype):  # a vector norm of complex numbers is that of their moduli
        x = abs_(x)
    p = 2 if isinstance(p, str) and p == "fro" else p
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0 and p != -math.inf:
        raise DomainError(f"norm: p must be a number >= 0, inf, -inf or 'fro', got {p!r}")
    if p == 2:
        s = reduce_sum(x * x, axis=axis, keepdims=keepdims)
        nonzero = s != 0  # (a NaN stays NaN)
        # sqrt at 0 has an infinite slope: the inner where keeps it out of the gradient
        return where(nonzero, sqrt(where(nonzero, s, 1.0)), 0.0)
    a = abs_(x)
    if p == math.inf:
        return amax(a, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return amin(a, axis=axis, keepdims=keepdims)
    if p == 0:
        count = reduce_sum(astype(a != 0, x.dtype), axis=axis, keepdims=keepdims)
        # PyTorch's count is differentiable with a zero gradient (it requires grad where x
        # does): adding a zero computed from x's finite values keeps it in x's graph
        zero = reduce_sum(where(isfinite(x), x, 0.0) * 0.0, axis=axis, keepdims=keepdims)
        return count + zero
    if p == 1:
        return reduce_sum(a, axis=axis, keepdims=keepdims)
    # a**p has an infinite slope at a = 0 for p < 1, and s**(1/p) at s = 0 for p > 1: the
    # inner wheres keep both out of the gradient, which is 0 there (PyTorch's)
    nonzero = a != 0
    s = reduce_sum(where(nonzero, where(nonzero, a, 1.0) ** p, 0.0), axis=axis, keepdims=keepdims)
    nonzero = s != 0
    return where(nonzero, where(nonzero, s, 1.0) ** (1.0 / p), 0.0)


def _nuclear_norm(x, axis, keepdims):
    """The sum of the singular values of the matrices in the two dims `axis` (all of a 2-D
    x when None), as PyTorch's norm(x, "nuc", dim)."""
    from .decomp import svd  # (decomp is built on these products)

    axes = tuple(range(x.ndim)) if axis is None else reduced_axes(axis, x.ndim)
    if len(axes) != 2:
        raise ShapeError(f"norm: p='nuc' needs two dims, got {x.ndim if axis is None else axis}")
    matrices = movedim(x, axes, (x.ndim - 2, x.ndim - 1))
    values = reduce_sum(svd(matrices, full_matrices=False)[1], axis=-1)
    if not keepdims:
        return values
    return reshape(values, tuple(1 if d in axes else n for d, n in enumerate(x.shape)))


__all__ = [
    "norm",
    "addmm",
    "addmm_",
    "bmm",
    "dot",
    "linear",
    "linear_op",
    "matmul",
    "matmul_relu_grad",
    "matrix_transpose",
    "mm",
    "outer",
]
