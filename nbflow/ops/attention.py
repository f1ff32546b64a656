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
from . import reduce as _reduce
from .linalg import matmul, matrix_transpose
from .nn import _softmax_grad_rows, _softmax_rows, softmax, softmax_grad
from .shape import concat, permute, reshape, split

NO_TRANS, TRANS = blas.NO_TRANS, blas.TRANS
ATTRS = {"heads": Attr("int"), "scale": Attr("float")}


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
def _head(t, b, first, d):
    """The (L, d) block of t[b] whose columns start at `first`: one head's q, k, v or output."""
    return t[b, :, first : first + d]


@njit(**JIT)
def _by_rows(t, rows):
    """t.T copied into rows (d, L): a right operand read by rows. OpenBLAS's SkylakeX kernels
    pack a transposed right operand on every call and run small products of it at about
    half speed (blas.stack_call copies likewise)."""
    for j in range(t.shape[1]):
        row = rows[j]
        for i in range(t.shape[0]):
            row[i] = t[i, j]
    return rows


@njit(**JIT)
def _pairs(gemm, qkv, out, scores, heads, scale, one, zero):
    """out[b, :, head's columns] = softmax(q k^T scale) v for each (batch, head) pair, the
    pairs cut into as many parts as `scores` has (L, L) buffers, a part a thread in the
    threaded twin."""
    batch, length, e = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    d = e // heads
    parts, pairs = scores.shape[0], batch * heads
    for p in prange(parts):
        s = scores[p]
        rows = np.empty((d, length), qkv.dtype)
        for pair in range(pairs * p // parts, pairs * (p + 1) // parts):
            b, c = pair // heads, pair % heads * d
            q, k, v = _head(qkv, b, c, d), _head(qkv, b, e + c, d), _head(qkv, b, 2 * e + c, d)
            blas.cblas_product(gemm, q, _by_rows(k, rows), s, NO_TRANS, NO_TRANS, scale, zero)
            _softmax_rows(s, s, False)
            blas.cblas_product(gemm, s, v, _head(out, b, c, d), NO_TRANS, NO_TRANS, one, zero)


@njit(**JIT)
def _pair_grads(gemm, g, qkv, g_qkv, scores, heads, scale, one, zero):
    """The gradient of _pairs' out (g) -> g_qkv, pair by pair as _pairs goes, `scores` two
    (L, L) buffers a part: the weights P (recomputed) and dP = g v^T, then the scores'
    gradient in dP's place; dq = dS k scale, dk = dS^T q scale, dv = P^T g."""
    batch, length, e = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    d = e // heads
    parts, pairs = scores.shape[0], batch * heads
    for p in prange(parts):
        w, gw = scores[p, 0], scores[p, 1]
        rows = np.empty((d, length), qkv.dtype)
        for pair in range(pairs * p // parts, pairs * (p + 1) // parts):
            b, c = pair // heads, pair % heads * d
            q, k, v = _head(qkv, b, c, d), _head(qkv, b, e + c, d), _head(qkv, b, 2 * e + c, d)
            g_out = _head(g, b, c, d)
            blas.cblas_product(gemm, q, _by_rows(k, rows), w, NO_TRANS, NO_TRANS, scale, zero)
            _softmax_rows(w, w, False)
            blas.cblas_product(gemm, g_out, _by_rows(v, rows), gw, NO_TRANS, NO_TRANS, one, zero)
            _softmax_grad_rows(gw, w, gw, False)
            blas.cblas_product(gemm, gw, k, _head(g_qkv, b, c, d), NO_TRANS, NO_TRANS, scale, zero)
            blas.cblas_product(gemm, gw, q, _head(g_qkv, b, e + c, d), TRANS, NO_TRANS, scale, zero)
            blas.cblas_product(
                gemm, w, g_out, _head(g_qkv, b, 2 * e + c, d), TRANS, NO_TRANS, one, zero
            )


def _attention_cpu(qkv, out, heads, scale):
    _launch(_pairs, qkv, out, (qkv,), (), heads, scale)


def _attention_grad_cpu(g, qkv, g_qkv, heads, scale):
    _launch(_pair_grads, qkv, g_qkv, (g, qkv), (2,), heads, scale)


def _launch(kernel, qkv, out, inputs, buffer_shape, heads, scale):
    """kernel(gemm, *inputs, out, scores, ...) over numba's threads, the (batch, head) pairs
    cut into a part a thread, each part with its (*buffer_shape, L, L) scores buffers; numpy's
    products (the reference) where CBLAS has no routine for the dtype."""
    if out.size == 0:
        return
    gemm = blas.cblas_gemm(out.dtype) if out.dtype.char in "fd" else None
    if gemm is None:
        ref = _attention_ref if kernel is _pairs else _attention_grad_ref
        np.copyto(out, ref(*inputs, heads, scale), casting="unsafe")
        return
    batch, length = qkv.shape[:2]
    parts = max(1, min(batch * heads, threads.get_num_threads()))
    scores = buffers.empty((parts, *buffer_shape, length, length), out.dtype)
    one = out.dtype.type
    arrays = tuple(np.ascontiguousarray(a) for a in inputs)
    args = (gemm, *arrays, out, scores, heads, one(scale), one(1), one(0))
    with threads.one_blas_thread():
        (kernel if parts == 1 else threaded(kernel))(*args)


def _attention_ref(qkv, heads, scale):
    q, k, v = _split_heads(qkv, heads)
    weights = _weights_ref(q, k, scale)
    return _heads_back(weights @ v, qkv)


def _attention_grad_ref(g, qkv, heads, scale):
    q, k, v = _split_heads(qkv, heads)
    weights = _weights_ref(q, k, scale)
    g_out = _heads_of(g.astype(np.float64), heads)
    g_weights = g_out @ np.swapaxes(v, -1, -2)
    g_scores = weights * (g_weights - (g_weights * weights).sum(-1, keepdims=True)) * scale
    grads = (g_scores @ k, np.swapaxes(g_scores, -1, -2) @ q, np.swapaxes(weights, -1, -2) @ g_out)
    return np.concatenate([_heads_back(t, g) for t in grads], axis=-1)


def _split_heads(qkv, heads):
    return [_heads_of(t, heads) for t in np.split(qkv.astype(np.float64), 3, axis=-1)]


def _weights_ref(q, k, scale):
    scores = q @ np.swapaxes(k, -1, -2) * scale
    weights = np.exp(scores - scores.max(-1, keepdims=True, initial=-np.inf))
    return weights / weights.sum(-1, keepdims=True)


def _heads_back(t, like):
    """numpy: (B, heads, L, d) -> (B, L, heads d) in like's dtype."""
    t = np.swapaxes(t, 1, 2)
    return t.reshape(t.shape[0], t.shape[1], -1).astype(like.dtype)


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
    attrs=ATTRS,
    doc="Multi-head self-attention from the in-projection's output qkv (B, L, 3E), q, k and v "
    "side by side, each E columns of `heads` heads: softmax(q k^T * scale) v for each head, "
    "the heads side by side again -> (B, L, E). One kernel, two BLAS products a head.",
)


@self_attention.defgrad
def _attention_grad(g, out, qkv, heads, scale):
    return (self_attention_grad(g, qkv, heads=heads, scale=scale),)


def _grad_spec(g, qkv, heads, scale):
    spec = _spec(qkv, heads, scale)
    if len(g.shape) != 3 or not all(
        UNKNOWN in (a, b) or a == b for a, b in zip(g.shape, spec.shape)
    ):
        raise ShapeError(
            f"g of shape {tuple(g.shape)} should be self_attention's output's, {tuple(spec.shape)}"
        )
    return Spec(tuple(qkv.shape), dt.promote([g.dtype, qkv.dtype]))


self_attention_grad = Op(
    name="self_attention_grad",
    inputs=("g", "qkv"),
    outputs=("g_qkv",),
    spec=_grad_spec,
    kernels={
        "cpu": _attention_grad_cpu,
        "cuda": not_supported("self_attention_grad runs on the CPU, as self_attention does"),
    },
    dtypes=dt.FLOATS,
    ref=_attention_grad_ref,
    attrs=ATTRS,
    doc="The gradient of self_attention: its output's gradient g (B, L, E) and its input qkv "
    "-> qkv's gradient (B, L, 3E), q's, k's and v's side by side. One kernel, the weights "
    "recomputed, five BLAS products a head.",
)


@self_attention_grad.defgrad
def _attention_second_grad(u, g_qkv, g, qkv, heads, scale):
    """The gradients of <u, g_qkv> for g and qkv, in ops (so they have gradients too). Per
    head, with P = softmax(q k^T s), dP = g v^T, r = rowsum(dP P) and A = s (u_q k^T + q u_k^T):
    g_qkv is dq = s P(dP - r) k, dk = s (P(dP - r))^T q, dv = P^T g; and so
    d/dg = P u_v + E v, d/dv = E^T g with E = softmax_grad(A, P) (dP's gradient), and
    d/dq, d/dk come through A's q and k and through P, whose gradient is
    g u_v^T + A (dP - r) - rowsum(P A) dP."""
    batch, length, width = qkv.shape
    e = width // 3

    def heads_of(t):
        return permute(reshape(t, batch, length, heads, e // heads), 0, 2, 1, 3)

    def heads_back(t):
        return reshape(permute(t, 0, 2, 1, 3), batch, length, e)

    q, k, v = (heads_of(t) for t in split(qkv, e, axis=-1))
    u_q, u_k, u_v = (heads_of(t) for t in split(u, e, axis=-1))
    g_out = heads_of(g)
    weights = softmax(matmul(q, matrix_transpose(k)) * scale, axis=-1)
    g_weights = matmul(g_out, matrix_transpose(v))
    g_scores = softmax_grad(g_weights, weights, axis=-1, log=False) * scale  # dS s
    a = (matmul(u_q, matrix_transpose(k)) + matmul(q, matrix_transpose(u_k))) * scale
    g_dp = softmax_grad(a, weights, axis=-1, log=False)
    centred = g_weights - _reduce.sum(g_weights * weights, axis=-1, keepdims=True)
    d_weights = (
        matmul(g_out, matrix_transpose(u_v))
        + a * centred
        - _reduce.sum(weights * a, axis=-1, keepdims=True) * g_weights
    )
    d_scores = softmax_grad(d_weights, weights, axis=-1, log=False) * scale
    d_q = matmul(g_scores, u_k) + matmul(d_scores, k)
    d_k = matmul(matrix_transpose(g_scores), u_q) + matmul(matrix_transpose(d_scores), q)
    d_v = matmul(matrix_transpose(g_dp), g_out)
    d_g = matmul(weights, u_v) + matmul(g_dp, v)
    return heads_back(d_g), concat(heads_back(d_q), heads_back(d_k), heads_back(d_v), axis=-1)


__all__ = ["self_attention", "self_attention_grad"]
