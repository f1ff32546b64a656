"""Linear algebra: matmul (numpy/PyTorch semantics, on BLAS) and matrix_transpose.

matmul takes 1-D and N-D operands: a 1-D left operand is a row vector and a 1-D right operand
a column vector, the added dim is removed from the result, and the batch dims (all but the last
two) broadcast. On the CPU the launcher calls numpy's matmul, which lands on BLAS for float32
and float64 (float16 is computed in float32); integers use numpy's own loop.
"""

import numpy as np

from .. import dtypes as dt
from ..core import UNKNOWN, Op, Spec, broadcast_shapes, needs_grad
from ..errors import ShapeError
from ..kernels import threads
from .broadcast import broadcast_to_like
from .reduce import expand_reduced
from .reduce import sum as reduce_sum

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
    dtypes=dt.ALL,
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
# (kernels/threads.py); below, OpenBLAS's own choice stands (it runs small products on one)
THREAD_CHOICE_MIN_WORK = 1 << 20


def _matmul_cpu(a, b, out):
    # numpy runs float32/float64 on BLAS, strided operands too (measured: same GFLOP/s)
    if out.dtype.kind == "f" and a.ndim > 1 and out.size * a.shape[-1] >= THREAD_CHOICE_MIN_WORK:
        key = (a.shape, b.shape, a.strides, b.strides, out.dtype)
        threads.blas_call(key, np.matmul, a, b, out=out)
    else:
        np.matmul(a, b, out=out)


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
    dtypes=dt.NUMERIC,
    ref=_matmul_ref,
    doc="Matrix product with numpy's matmul semantics: a 1-D operand is a vector (its added "
    "dim is dropped from the result), batch dims broadcast. Floats run on BLAS.",
)


@matmul.defgrad
def _matmul_grad(g, out, a, b):
    if a.ndim == 1 and b.ndim == 1:  # dot product: g is 0-d
        return g * b, g * a
    if a.ndim == 1:
        # out[..., j] = sum_i a[i] b[..., i, j]; g has b's batch dims
        g_cols = expand_reduced(g, b, axis=-2)  # g[..., j] at [..., i, j]
        a_rows = matrix_transpose(broadcast_to_like(a, matrix_transpose(b)))  # a[i] there
        return reduce_sum(b * g_cols, axis=-1), a_rows * g_cols
    if b.ndim == 1:
        # out[..., i] = sum_j a[..., i, j] b[j]; g has a's batch dims
        g_rows = expand_reduced(g, a, axis=-1)
        return g_rows * b, reduce_sum(a * g_rows, axis=-2)
    # the driver sums broadcast batch dims back to each operand's shape
    ga = matmul(g, matrix_transpose(b)) if needs_grad(a) else None
    gb = None
    if needs_grad(b):
        if _transposed(b):
            # b is a transposed view (a linear layer's x @ W.T): (g.T @ a).T computes the
            # product in W's layout, so W's gradient comes out contiguous, not as a view the
            # optimizer or backward() would copy (graph mode: transpose folding, rewrite.py)
            gb = matrix_transpose(matmul(matrix_transpose(g), a))
        else:
            gb = matmul(matrix_transpose(a), g)
    return ga, gb


def _transposed(x) -> bool:
    """Whether x is an eager 2-D value stored transposed (a graph Var has no layout)."""
    data = getattr(x, "data", None)
    return (
        isinstance(data, np.ndarray)
        and data.ndim == 2
        and data.flags.f_contiguous
        and not data.flags.c_contiguous
    )


__all__ = ["matmul", "matrix_transpose"]
