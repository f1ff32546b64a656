"""The LSTM recurrence as one op: `lstm_sequence` runs every step of one layer and direction in
one numba kernel (per step a CBLAS product h W_hh^T, called by address, and the gates, the
cell and the hidden state), and `lstm_sequence_grad` runs the steps back the same way, then
takes the recurrent weight's gradient as one GEMM over all steps, where the step-by-step ops
made one small product and one accumulation per step. The batch's rows never meet in the
recurrence, so each part of them runs all its steps on a numba thread of its own, with
OpenBLAS on one thread (threads.one_blas_thread); the weight's gradient is split by gates. A
step's product is made in blocks of columns that OpenBLAS runs on its small-matrix kernels
(blas.cblas_product_small), which do not pack the weight again every step. The input
projection x W_ih^T + b_ih of every step is one GEMM before the op (nn.LSTM), so the op reads
its result, `xw`.

Gates are stacked as PyTorch's: input, forget, cell, output.
"""

import numpy as np
from numba import prange

from ..core import Attr, Op, Spec, needs_grad
from ..core import dtypes as dt
from ..core.errors import ShapeError
from ..kernels.cpu import blas, threads
from ..kernels.cpu.jit import njit, threaded
from ..kernels.cpu.templates import JIT
from ..kernels.cpu.vecmath import sigmoid, tanh
from ..kernels.cuda.loader import not_supported
from ..runtime import buffers
from .creation import full

FLOATS = dt.FLOATS
NO_TRANS, TRANS = blas.NO_TRANS, blas.TRANS


@njit(**JIT)
def _cell(pre, xw, bias, c_prev, gates, c, h):
    """One step for each row b: pre (B, 4H), the product h W_hh^T, plus xw and the bias, are
    the gate pre-activations; gates gets the activated gates, c and h the new state."""
    n = c.shape[1]
    for b in range(pre.shape[0]):
        p, x, q = pre[b], xw[b], gates[b]
        for j in range(4 * n):
            q[j] = p[j] + x[j] + bias[j]
        i, f, g, o = q[:n], q[n : 2 * n], q[2 * n : 3 * n], q[3 * n :]
        cp, cn, hn = c_prev[b], c[b], h[b]
        for j in range(n):  # (one loop a gate kind: branch-free, so it vectorises)
            i[j] = sigmoid(i[j])
            f[j] = sigmoid(f[j])
            g[j] = tanh(g[j])
            o[j] = sigmoid(o[j])
            cj = f[j] * cp[j] + i[j] * g[j]
            cn[j] = cj
            hn[j] = o[j] * tanh(cj)


@njit(**JIT)
def _cell_grad(dh, dh_next, dc, dc_next, dgates, gates, c, c_prev, dpre, dc_prev):
    """One step back for each row b: dh + dh_next reach h, dc + dc_next reach c (dc_next and
    dh_next: from the step after), dgates the gates themselves; dpre gets the gradient of the
    gate pre-activations and dc_prev the one reaching the previous cell state."""
    n = c.shape[1]
    for b in range(c.shape[0]):
        q, dq, dp = gates[b], dgates[b], dpre[b]
        i, f, g, o = q[:n], q[n : 2 * n], q[2 * n : 3 * n], q[3 * n :]
        di, df, dg, do = dq[:n], dq[n : 2 * n], dq[2 * n : 3 * n], dq[3 * n :]
        pi, pf, pg, po = dp[:n], dp[n : 2 * n], dp[2 * n : 3 * n], dp[3 * n :]
        h1, h2, c1, c2, cp, cn, out = (
            dh[b],
            dh_next[b],
            dc[b],
            dc_next[b],
            c_prev[b],
            c[b],
            dc_prev[b],
        )
        for j in range(n):
            t = tanh(cn[j])
            grad_h = h1[j] + h2[j]
            grad_c = c1[j] + c2[j] + grad_h * o[j] * (1 - t * t)
            pi[j] = (grad_c * g[j] + di[j]) * i[j] * (1 - i[j])
            pf[j] = (grad_c * cp[j] + df[j]) * f[j] * (1 - f[j])
            pg[j] = (grad_c * i[j] + dg[j]) * (1 - g[j] * g[j])
            po[j] = (grad_h * t + do[j]) * o[j] * (1 - o[j])
            out[j] = grad_c * f[j]


def _steps(n, reverse):
    return range(n - 1, -1, -1) if reverse else range(n)


def _check(xw, w_hh, b_hh, h0, c0, fn="lstm_sequence", first="xw", states=()):
    """(steps, batch, hidden) from `first` (steps, batch, 4 * hidden) (xw, or the gradient's
    gates), after checking the other inputs' shapes against it (b_hh None: none; states: the
    (name, value) pairs of shape (steps, batch, hidden))."""
    if len(xw.shape) != 3:
        raise ShapeError(f"{fn}: {first} of shape {tuple(xw.shape)} must be (steps, batch, 4H)")
    steps, batch, gates = xw.shape
    hidden = w_hh.shape[1] if len(w_hh.shape) == 2 else -1
    want = {
        "w_hh": (w_hh, (gates, hidden)),
        "h0": (h0, (batch, hidden)),
        "c0": (c0, (batch, hidden)),
    }
    if b_hh is not None:
        want["b_hh"] = (b_hh, (gates,))
    want.update((name, (a, (steps, batch, hidden))) for name, a in states)
    for name, (a, shape) in want.items():
        if tuple(a.shape) != shape or gates != 4 * hidden:
            raise ShapeError(
                f"{fn}: {name} of shape {tuple(a.shape)} does not fit {first} of shape "
                f"{tuple(xw.shape)} (want {shape}, gates = 4 * hidden)"
            )
    return steps, batch, hidden


def _lstm_spec(xw, w_hh, b_hh, h0, c0, reverse):
    steps, batch, hidden = _check(xw, w_hh, b_hh, h0, c0)
    d = dt.promote([a.dtype for a in (xw, w_hh, b_hh, h0, c0)])
    return (
        Spec((steps, batch, hidden), d),
        Spec((steps, batch, hidden), d),
        Spec((steps, batch, 4 * hidden), d),
    )


def _lstm_cpu(xw, w_hh, b_hh, h0, c0, hs, cs, gates, reverse):
    d = hs.dtype
    xw, b_hh = (np.ascontiguousarray(a, d) for a in (xw, b_hh))
    w_t = buffers.empty(w_hh.shape[::-1], d)  # (OpenBLAS: h @ W.T slower through a view)
    np.copyto(w_t, w_hh.T)
    h0, c0 = np.ascontiguousarray(h0, d), np.ascontiguousarray(c0, d)
    gemm = blas.cblas_gemm(d)
    if gemm is None:  # a BLAS without CBLAS symbols: the Python loop
        pre, h, c = np.empty(gates.shape[1:], d), h0, c0
        for t in _steps(xw.shape[0], reverse):
            np.matmul(h, w_t, out=pre)
            _cell(pre, xw[t], b_hh, c, gates[t], cs[t], hs[t])
            h, c = hs[t], cs[t]
        return
    pre = buffers.empty((_parts(gates.shape[1]), *gates.shape[1:]), d)
    small = blas.small_product_limit()
    args = (gemm, xw, w_t, b_hh, h0, c0, hs, cs, gates, pre, reverse, small, d.type(1), d.type(0))
    _row_parts(_forward_rows, args, len(pre))


def _parts(batch):
    """The parts of the batch's rows, one a numba thread."""
    return max(1, min(batch, threads.get_num_threads()))


def _row_parts(kernel, args, parts):
    """kernel(*args) in turn (one part) or over numba's threads (its threaded twin), with
    OpenBLAS on one thread."""
    with threads.one_blas_thread():
        (kernel if parts == 1 else threaded(kernel))(*args)


@njit(**JIT)
def _forward_rows(gemm, xw, w_t, b_hh, h0, c0, hs, cs, gates, pre, reverse, small, one, zero):
    """Every step for part p of the batch's rows, pre[p] its pre-activations; `small`:
    blas.cblas_product_small's."""
    steps, batch = xw.shape[0], xw.shape[1]
    parts = pre.shape[0]
    for p in prange(parts):
        lo, hi = batch * p // parts, batch * (p + 1) // parts
        rows = pre[p, : hi - lo]
        for s in range(steps):
            t = steps - 1 - s if reverse else s
            if s == 0:
                h, c = h0[lo:hi], c0[lo:hi]
            else:
                before = t + 1 if reverse else t - 1
                h, c = hs[before, lo:hi], cs[before, lo:hi]
            blas.cblas_product_small(gemm, h, w_t, rows, NO_TRANS, one, zero, small)
            _cell(rows, xw[t, lo:hi], b_hh, c, gates[t, lo:hi], cs[t, lo:hi], hs[t, lo:hi])


def _lstm_ref(xw, w_hh, b_hh, h0, c0, reverse=False):
    xw, w_hh, b_hh, h, c = (a.astype(np.float64) for a in (xw, w_hh, b_hh, h0, c0))
    n = h.shape[1]
    hs, cs, gates = np.zeros(xw.shape[:2] + (n,)), np.zeros(xw.shape[:2] + (n,)), np.zeros(xw.shape)
    for t in _steps(xw.shape[0], reverse):
        pre = xw[t] + h @ w_hh.T + b_hh
        act = 1 / (1 + np.exp(-pre))
        act[:, 2 * n : 3 * n] = np.tanh(pre[:, 2 * n : 3 * n])
        i, f, g, o = np.split(act, 4, axis=1)
        c = f * c + i * g
        h = o * np.tanh(c)
        hs[t], cs[t], gates[t] = h, c, act
    d = dt.promote([xw.dtype, w_hh.dtype])
    return hs.astype(d), cs.astype(d), gates.astype(d)


lstm_sequence = Op(
    name="lstm_sequence",
    inputs=("xw", "w_hh", "b_hh", "h0", "c0"),
    outputs=("hs", "cs", "gates"),
    spec=_lstm_spec,
    kernels={
        "cpu": _lstm_cpu,
        "cuda": not_supported("lstm_sequence runs on the CPU; nn.LSTM steps op by op on a GPU"),
    },
    dtypes=FLOATS,
    ref=_lstm_ref,
    attrs={"reverse": Attr("bool", False)},
    materialize_grads=False,
    doc=(
        "An LSTM layer's recurrence over all steps: xw (T, B, 4H) the input projections "
        "(x W_ih^T + b_ih), w_hh (4H, H), b_hh (4H,), initial state h0, c0 (B, H) -> every "
        "step's h and c (T, B, H) and activated gates (T, B, 4H; input, forget, cell, output), "
        "from the last step back with reverse=True. One BLAS product and one kernel a step."
    ),
)


@lstm_sequence.defgrad
def _lstm_sequence_grad(g, outs, xw, w_hh, b_hh, h0, c0, reverse):
    # an output nobody used (the cell states, the gates: nn.LSTM reads neither) comes as None
    # (materialize_grads=False) and goes in as a 0-d zero: no (steps, batch, 4H) zeros made
    hs, cs, gates = outs
    g_hs, g_cs, g_gates = (full((), 0.0, dtype=hs.dtype) if d is None else d for d in g)
    dxw, dw, db, dh0, dc0 = lstm_sequence_grad(
        g_hs, g_cs, g_gates, hs, cs, gates, w_hh, h0, c0, reverse=reverse
    )
    wanted = (xw, w_hh, b_hh, h0, c0)
    return tuple(d if needs_grad(a) else None for d, a in zip((dxw, dw, db, dh0, dc0), wanted))


def _lstm_grad_spec(g_hs, g_cs, g_gates, hs, cs, gates, w_hh, h0, c0, reverse):
    fn, states = "lstm_sequence_grad", (("hs", hs), ("cs", cs))
    _check(gates, w_hh, None, h0, c0, fn, "gates", states)  # (the kernel indexes them so)
    for name, a, b in (("g_hs", g_hs, hs), ("g_cs", g_cs, cs), ("g_gates", g_gates, gates)):
        if tuple(a.shape) not in ((), tuple(b.shape)):
            raise ShapeError(
                f"lstm_sequence_grad: {name} of shape {tuple(a.shape)} should be {tuple(b.shape)}"
                " (or 0-d: zero)"
            )
    d = dt.promote([a.dtype for a in (g_hs, g_cs, g_gates, gates, w_hh)])
    return (
        Spec(tuple(gates.shape), d),
        Spec(tuple(w_hh.shape), d),
        Spec((w_hh.shape[0],), d),
        Spec(tuple(h0.shape), d),
        Spec(tuple(c0.shape), d),
    )


def _per_step(g, like, d):
    """g in C order as `like`'s steps; a 0-d g (zero) as one zero step, (1, *like's step),
    which _step reads for every step. (A zero step repeated by a 0 stride made the kernels
    compile for strided arrays, and the cell's gradient ran unvectorised.)"""
    if g.ndim == 0:
        return np.zeros((1,) + like.shape[1:], d)
    return np.ascontiguousarray(g, d)


@njit(**JIT)
def _step(g, t):
    """Step t of a per-step gradient from _per_step (its one zero step if it has one)."""
    return g[t] if g.shape[0] > 1 else g[0]


def _lstm_grad_cpu(
    g_hs, g_cs, g_gates, hs, cs, gates, w_hh, h0, c0, dxw, dw, db, dh0, dc0, reverse
):
    d = dxw.dtype
    w, c0 = np.ascontiguousarray(w_hh, d), np.ascontiguousarray(c0, d)
    g_hs, g_cs, g_gates = (
        _per_step(a, b, d) for a, b in ((g_hs, hs), (g_cs, cs), (g_gates, gates))
    )
    # what reaches h and c from the step after; the cell's gradient for the step before
    dh, dc, dc_prev = np.zeros(h0.shape, d), np.zeros(c0.shape, d), np.empty(c0.shape, d)
    h_prev = _previous_states(hs, h0, reverse)
    gemm = blas.cblas_gemm(d) if dxw.size else None
    if gemm is None:  # a BLAS without CBLAS symbols (or nothing to do): the Python loop
        steps = gates.shape[0]
        for t in _steps(steps, not reverse):
            before = t + 1 if reverse else t - 1
            c_prev = cs[before] if 0 <= before < steps else c0
            g_h, g_c, g_g = _step(g_hs, t), _step(g_cs, t), _step(g_gates, t)
            _cell_grad(g_h, dh, g_c, dc, g_g, gates[t], cs[t], c_prev, dxw[t], dc_prev)
            np.matmul(dxw[t], w, out=dh)
            dc, dc_prev = dc_prev, dc
        rows = dxw.reshape(-1, dxw.shape[2])
        np.matmul(rows.T, h_prev.reshape(-1, h_prev.shape[2]), out=dw)
        np.sum(rows, axis=0, out=db)
    else:
        parts = _parts(gates.shape[1])
        args = (gemm, g_hs, g_cs, g_gates, cs, gates, w, c0, dxw, dh, dc, dc_prev, h_prev, dw, db)
        small = blas.small_product_limit()
        _row_parts(_backward_rows, (*args, reverse, parts, small, d.type(1), d.type(0)), parts)
    dh0[...] = dh
    dc0[...] = dc


@njit(**JIT)
def _backward_rows(
    gemm, g_hs, g_cs, g_gates, cs, gates, w, c0, dxw, dh, dc, dc_prev, h_prev, dw, db,
    reverse, parts, small, one, zero,
):  # fmt: skip
    """Every step back for each of `parts` parts of the batch's rows: dxw gets the gate
    pre-activations' gradients, dh and dc what reaches h0 and c0; then, a part of the gates
    each, the weight's gradient dw (one GEMM of dxw's rows against h_prev's, each step's state
    before it) and the bias's db."""
    steps, batch, n_gates = gates.shape
    for p in prange(parts):
        lo, hi = batch * p // parts, batch * (p + 1) // parts
        dh_p, dc_p, prev_p = dh[lo:hi], dc[lo:hi], dc_prev[lo:hi]
        for s in range(steps):
            t = s if reverse else steps - 1 - s
            before = t + 1 if reverse else t - 1
            c_prev = cs[before, lo:hi] if 0 <= before < steps else c0[lo:hi]
            rows = dxw[t, lo:hi]
            _cell_grad(
                _step(g_hs, t)[lo:hi], dh_p, _step(g_cs, t)[lo:hi], dc_p, _step(g_gates, t)[lo:hi],
                gates[t, lo:hi], cs[t, lo:hi], c_prev, rows, prev_p,
            )  # fmt: skip
            blas.cblas_product_small(gemm, rows, w, dh_p, NO_TRANS, one, zero, small)
            dc_p, prev_p = prev_p, dc_p
        if steps % 2:  # the last step's cell gradient went to dc_prev
            dc[lo:hi] = dc_prev[lo:hi]
    rows = dxw.reshape(steps * batch, n_gates)
    states = h_prev.reshape(steps * batch, h_prev.shape[2])
    for p in prange(parts):
        cols = slice(n_gates * p // parts, n_gates * (p + 1) // parts)
        blas.cblas_product(gemm, rows[:, cols], states, dw[cols], TRANS, NO_TRANS, one, zero)
        total = db[cols]
        total[:] = 0
        for r in range(steps * batch):
            row = rows[r, cols]
            for j in range(total.size):
                total[j] += row[j]


def _previous_states(hs, h0, reverse):
    """Each step's h before it (h0 for the first), stacked as the steps are."""
    h_prev = buffers.empty(hs.shape, hs.dtype)
    if hs.shape[0]:
        inner = slice(1, None) if not reverse else slice(None, -1)
        h_prev[inner] = hs[:-1] if not reverse else hs[1:]
        h_prev[0 if not reverse else -1] = h0
    return h_prev


def _lstm_grad_ref(g_hs, g_cs, g_gates, hs, cs, gates, w_hh, h0, c0, reverse=False):
    # the forward's derivative by hand, in float64
    g_hs, g_cs, g_gates = (
        np.broadcast_to(a, b.shape) for a, b in zip((g_hs, g_cs, g_gates), (hs, cs, gates))
    )
    g_hs, g_cs, g_gates, hs, cs, gates, w_hh, h0, c0 = (
        a.astype(np.float64) for a in (g_hs, g_cs, g_gates, hs, cs, gates, w_hh, h0, c0)
    )
    steps = gates.shape[0]
    dxw = np.zeros(gates.shape)
    dh, dc = np.zeros(h0.shape), np.zeros(c0.shape)
    for t in _steps(steps, not reverse):
        before = t + 1 if reverse else t - 1
        c_prev = cs[before] if 0 <= before < steps else c0
        i, f, g, o = np.split(gates[t], 4, axis=1)
        di, df, dg, do = np.split(g_gates[t], 4, axis=1)
        tc = np.tanh(cs[t])
        grad_h = g_hs[t] + dh
        grad_c = g_cs[t] + dc + grad_h * o * (1 - tc**2)
        dxw[t] = np.concatenate(
            [
                (grad_c * g + di) * i * (1 - i),
                (grad_c * c_prev + df) * f * (1 - f),
                (grad_c * i + dg) * (1 - g**2),
                (grad_h * tc + do) * o * (1 - o),
            ],
            axis=1,
        )
        dh, dc = dxw[t] @ w_hh, grad_c * f
    h_prev = (
        np.concatenate([h0[None], hs[:-1]]) if not reverse else np.concatenate([hs[1:], h0[None]])
    )
    dw = np.einsum("tbg,tbh->gh", dxw, h_prev)
    d = dt.promote([g_hs.dtype, w_hh.dtype])
    return tuple(a.astype(d) for a in (dxw, dw, dxw.sum(axis=(0, 1)), dh, dc))


lstm_sequence_grad = Op(
    name="lstm_sequence_grad",
    inputs=("g_hs", "g_cs", "g_gates", "hs", "cs", "gates", "w_hh", "h0", "c0"),
    outputs=("dxw", "dw_hh", "db_hh", "dh0", "dc0"),
    spec=_lstm_grad_spec,
    kernels={
        "cpu": _lstm_grad_cpu,
        "cuda": not_supported("lstm_sequence_grad runs on the CPU, as lstm_sequence does"),
    },
    dtypes=FLOATS,
    ref=_lstm_grad_ref,
    attrs={"reverse": Attr("bool", False)},
    no_derivative=(
        "second derivatives through nn.LSTM's fused recurrence are not implemented; build "
        "the LSTM from nn.LSTMCell steps for higher-order gradients"
    ),
    doc=(
        "The gradient of lstm_sequence: the output gradients g_hs, g_cs, g_gates and the "
        "forward's hs, cs, gates -> the gradients of xw, w_hh, b_hh, h0 and c0. The steps run "
        "back one kernel and one BLAS product each; w_hh's gradient is one GEMM over all steps."
    ),
)


__all__ = ["lstm_sequence", "lstm_sequence_grad"]
