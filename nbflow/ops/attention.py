"""Multi-head self-attention as one op: `self_attention` reads each head's query, key and
value from the in-projection's output (B, L, 3E) where they lie, and writes each head's
output into its columns of (B, L, E). Op by op, a layer split the projection, reshaped and
permuted q, k and v into heads, scaled the scores, took their softmax and permuted and
reshaped the heads back: eleven ops, most of them copies. Here each (batch, head) pair is two
CBLAS products by address around a softmax in place, in one numba kernel over numba's
threads. The gradient is the same computation in ops (so it has its own gradient).
"""

import numpy as np
from numba import prange

from ..core import UNKNOWN, Attr, Op, Spec
from ..core import dtypes as dt
from ..core.errors import ShapeError
from ..kernels.cpu import blas, threads
from ..kernels.cpu.jit import njit, threaded
from ..kernels.cpu.templates import JIT
from ..kernels.cuda.loader import not_supported
from ..runtime import buffers
from .linalg import matmul, matrix_transpose
from .nn import _softmax_rows, softmax, softmax_grad
from .shape import concat, permute, reshape, split

NO_TRANS, TRANS = blas.NO_TRANS, blas.TRANS


def _spec(qkv, heads, scale):
    if qkv.ndim != 3:
        raise ShapeError(f"self_attention: qkv must be (batch, length, 3 E), got {qkv.shape}")
    if heads < 1:
        raise ShapeError(f"self_attention: heads must be positive, got {heads}")
    width = qkv.shape[2]
    if width != UNKNOWN and width % (3 * heads):
        raise ShapeError(
            f"self_attention: qkv's last dim {width} must be 3 E with E a multiple of {heads} heads"
        )
    return Spec(
        (qkv.shape[0], qkv.shape[1], UNKNOWN if width == UNKNOWN else width // 3), qkv.dtype
    )


@njit(**JIT)
def _pairs(gemm, qkv, out, scores, heads, scale, one, zero):
    """out[b, :, head's columns] = softmax(q k^T scale) v for each (batch, head) pair, the
    pairs cut into as many parts as `scores` has (L, L) buffers, a part a thread in the
    threaded twin."""
    batch, length, width = qkv.shape
    e = width // 3
    d = e // heads
    parts, pairs = scores.shape[0], batch * heads
    for p in prange(parts):
        s = scores[p]
        for pair in range(pairs * p // parts, pairs * (p + 1) // parts):
            b, h = pair // heads, pair % heads
            q, k = qkv[b, :, h * d : (h + 1) * d], qkv[b, :, e + h * d : e + (h + 1) * d]
            v = qkv[b, :, 2 * e + h * d : 2 * e + (h + 1) * d]
            blas.cblas_product(gemm, q, k, s, NO_TRANS, TRANS, scale, zero)
            _softmax_rows(s, s, False)
            blas.cblas_product(
                gemm, s, v, out[b, :, h * d : (h + 1) * d], NO_TRANS, NO_TRANS, one, zero
            )


def _attention_cpu(qkv, out, heads, scale):
    if out.size == 0:
        return
    gemm = blas.cblas_gemm(out.dtype) if out.dtype.char in "fd" else None
    if gemm is None:  # (no CBLAS to call: numpy's products)
        np.copyto(out, _attention_ref(qkv, heads, scale), casting="unsafe")
        return
    batch, length = out.shape[:2]
    parts = max(1, min(batch * heads, threads.get_num_threads()))
    scores = buffers.empty((parts, length, length), out.dtype)
    one = out.dtype.type
    args = (gemm, np.ascontiguousarray(qkv), out, scores, heads, one(scale), one(1), one(0))
    with threads.one_blas_thread():
        (_pairs if parts == 1 else threaded(_pairs))(*args)


def _attention_ref(qkv, heads, scale):
    q, k, v = (_heads_of(t, heads) for t in np.split(qkv.astype(np.float64), 3, axis=-1))
    scores = q @ np.swapaxes(k, -1, -2) * scale
    weights = np.exp(scores - scores.max(-1, keepdims=True, initial=-np.inf))
    weights /= weights.sum(-1, keepdims=True)
    out = np.swapaxes(weights @ v, 1, 2)  # (B, L, heads, d)
    return out.reshape(qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3).astype(qkv.dtype)


def _heads_of(t, heads):
    """numpy: (B, L, E) -> (B, heads, L, E / heads)."""
    return np.swapaxes(t.reshape(t.shape[0], t.shape[1], heads, t.shape[2] // heads), 1, 2)


self_attention = Op(
    name="self_attention",
    inputs=("qkv",),
    outputs=("out",),
    spec=_spec,
    kernels={
        "cpu": _attention_cpu,
        "cuda": not_supported(
            "self_attention runs on the CPU; nn.MultiheadAttention runs op by op on a GPU"
        ),
    },
    dtypes=dt.FLOATS,
    ref=_attention_ref,
    attrs={"heads": Attr("int"), "scale": Attr("float")},
    doc="Multi-head self-attention from the in-projection's output qkv (B, L, 3E), q, k and v "
    "side by side, each E columns of `heads` heads: softmax(q k^T * scale) v for each head, "
    "the heads side by side again -> (B, L, E). One kernel, two BLAS products a head.",
)


@self_attention.defgrad
def _attention_grad(g, out, qkv, heads, scale):
    batch, length, width = qkv.shape
    e = width // 3

    def heads_of(t):
        return permute(reshape(t, batch, length, heads, e // heads), 0, 2, 1, 3)

    def heads_back(t):
        return reshape(permute(t, 0, 2, 1, 3), batch, length, e)

    q, k, v = (heads_of(t) for t in split(qkv, e, axis=-1))
    weights = softmax(matmul(q, matrix_transpose(k)) * scale, axis=-1)
    g_out = heads_of(g)
    g_weights = matmul(g_out, matrix_transpose(v))
    g_scores = softmax_grad(g_weights, weights, axis=-1, log=False) * scale
    g_q, g_k = matmul(g_scores, k), matmul(matrix_transpose(g_scores), q)
    g_v = matmul(matrix_transpose(weights), g_out)
    return (concat(heads_back(g_q), heads_back(g_k), heads_back(g_v), axis=-1),)


__all__ = ["self_attention"]
