"""Optimizer update ops: one in-place op per parameter update (no gradient).

`sgd_update_(param, grad, velocity)` writes param (and velocity) in place, so in graph mode the
update is annotated in the IR (`%w!: ... = sgd_update_(...)`) rather than copied. Likewise
`adam_update_` (Adam, and AdamW with `decoupled_weight_decay`) writes param, exp_avg,
exp_avg_sq, max_exp_avg_sq and its int64 step counter (incremented by the op itself, so a
graph-mode step counter is a persistable var that stays right across runs), and
`rmsprop_update_` writes param, square_avg, grad_avg and momentum_buffer.

A state an option leaves unused (SGD's velocity without momentum, RMSProp's grad_avg when not
centered) is passed as a stand-in (the gradient, as the optimizers do): the kernel then writes
back the value it read, so the stand-in is unchanged (also through float16's float32 copies).
"""

import numpy as np
from numba import prange

from ..core import UNKNOWN, Attr, Op, Spec
from ..core import dtypes as dt
from ..core.errors import DTypeError, ShapeError, UnsupportedError
from ..kernels.cpu import blas, jit, threads
from ..kernels.cpu.blas import NO_TRANS, TRANS, cblas_product
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..kernels.cuda.loader import not_supported
from . import linalg

# The kernels update their arrays in place, each taking the array it writes once: given a
# separate output that is the input itself, LLVM's overlap check fails and the loop runs
# scalar. The scalars are cast to the
# array's dtype, so float32 parameters are stepped in float32 arithmetic (as PyTorch and numpy
# do), not widened element by element.


@njit(**JIT)
def _sgd_plain_kernel(p, g, lr, weight_decay):
    lr, weight_decay = p.dtype.type(lr), p.dtype.type(weight_decay)
    for i in range(p.size):
        p[i] = p[i] - lr * (g[i] + weight_decay * p[i])


@njit(**JIT)
def _sgd_plain_kernel_2d(p, g, lr, weight_decay):
    # g strided (a transposed gradient): read in place rather than copied first
    lr, weight_decay = p.dtype.type(lr), p.dtype.type(weight_decay)
    for i in range(p.shape[0]):
        for j in range(p.shape[1]):
            p[i, j] = p[i, j] - lr * (g[i, j] + weight_decay * p[i, j])


@njit(**JIT)
def _sgd_kernel(p, g, v, lr, momentum, dampening, weight_decay, nesterov):
    t = p.dtype.type
    lr, momentum, weight_decay = t(lr), t(momentum), t(weight_decay)
    keep = t(1 - dampening)
    for i in range(p.size):
        d = g[i] + weight_decay * p[i]
        vi = momentum * v[i] + keep * d
        v[i] = vi
        d = d + momentum * vi if nesterov else vi
        p[i] = p[i] - lr * d


def _sgd_spec(p, g, v, **attrs):
    _check_states(p, grad=g, velocity=v)
    return Spec(p.shape, p.dtype), Spec(v.shape, v.dtype)


def _sgd_cpu(p, g, v, p_out, v_out, lr, momentum, dampening, weight_decay, nesterov):
    # without momentum the velocity is neither read nor written (it may be the gradient)
    if not p_out.flags.c_contiguous or (momentum and not v_out.flags.c_contiguous):
        raise UnsupportedError("sgd_update_: parameters must be contiguous")
    if not momentum:  # a plain step: the velocity stand-in only keeps its value
        if v_out is not v:
            np.copyto(v_out, v)  # (a float16 target is written back from this buffer)
        g = _readable(g, p_out)
        if p_out is not p:
            np.copyto(p_out, p)
        if g.ndim == 2 and not g.flags.c_contiguous:
            _sgd_plain_kernel_2d(p_out, g, lr, weight_decay)
        else:
            _sgd_plain_kernel(p_out.reshape(-1), g.ravel(), lr, weight_decay)
        return
    g = _readable(g, p_out, v_out)
    for src, dst in ((p, p_out), (v, v_out)):
        if dst is not src:
            np.copyto(dst, src)
    flat = [np.ravel(a) for a in (p_out, g, v_out)]  # views of contiguous buffers
    _sgd_kernel(*flat, lr, momentum, dampening, weight_decay, nesterov)


def _readable(g, *written):
    """The gradient, copied if it shares memory with a buffer the kernel writes (the
    in-place kernels read each element before writing it only at the same index)."""
    if any(np.may_share_memory(g, w) for w in written):
        return g.copy()
    return g


def _sgd_ref(p, g, v, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    d = g + weight_decay * p
    if momentum:
        v = momentum * v + (1 - dampening) * d
        d = d + momentum * v if nesterov else v
    return p - lr * d, v


sgd_update_ = Op(
    name="sgd_update_",
    inputs=("param", "grad", "velocity"),
    outputs=("param_out", "velocity_out"),
    spec=_sgd_spec,
    kernels={"cpu": _sgd_cpu, "cuda": None},
    dtypes=dt.FLOATS,
    ref=_sgd_ref,
    differentiable=False,
    attrs={
        "lr": Attr("float"),
        "momentum": Attr("float", 0.0),
        "dampening": Attr("float", 0.0),
        "weight_decay": Attr("float", 0.0),
        "nesterov": Attr("bool", False),
    },
    inplace={0: 0, 1: 2},
    doc="SGD step in place: d = g + wd p; v = m v + (1 - dampening) d; p -= lr (d + m v if "
    "nesterov else v) (PyTorch's SGD; velocity unused when momentum is 0).",
)


def _same(n, m) -> bool:
    """Whether two dims agree (an unknown one agrees with any)."""
    return n == m or UNKNOWN in (n, m)


def _sgd_matmul_spec(p, a, b, **attrs):
    if not (a.ndim == b.ndim == p.ndim == 2 and _same(a.shape[1], b.shape[0])):
        raise ShapeError("needs 2-D a and b whose product has the 2-D parameter's shape")
    if not (_same(p.shape[0], a.shape[0]) and _same(p.shape[1], b.shape[1])):
        raise ShapeError(f"a @ b has shape ({a.shape[0]}, {b.shape[1]}), not the parameter's")
    return Spec(p.shape, p.dtype)


def _sgd_matmul(device: str):
    """The kernel on `device`: addmm's, with the step's scalars."""

    def launch(p, a, b, p_out, lr, momentum, dampening, weight_decay, nesterov):
        if momentum:
            raise UnsupportedError(
                "sgd_matmul_update_: momentum needs the gradient itself (sgd_update_ keeps it)"
            )
        # p - lr (a @ b + wd p) = (1 - lr wd) p - lr (a @ b): one GEMM adds the product into p
        addmm = linalg.addmm.kernels[device]
        addmm(p, a, b, p_out, beta=1.0 - lr * weight_decay, alpha=-lr)

    return launch


def _sgd_matmul_ref(p, a, b, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    return _sgd_ref(p, np.matmul(a, b), p, lr, 0.0, dampening, weight_decay)[0]


sgd_matmul_update_ = Op(
    name="sgd_matmul_update_",
    inputs=("param", "a", "b"),
    outputs=("param_out",),
    spec=_sgd_matmul_spec,
    kernels={"cpu": _sgd_matmul("cpu"), "cuda": _sgd_matmul("cuda")},
    dtypes=dt.FLOATS,
    ref=_sgd_matmul_ref,
    differentiable=False,
    attrs=sgd_update_.attrs,
    inplace={0: 0},
    doc="An SGD step without momentum whose gradient is the product a @ b (a weight "
    "gradient), in place: p = (1 - lr wd) p - lr (a @ b), one GEMM adding the product into "
    "the parameter, so the gradient is never stored. Graph mode folds sgd_update_ into it "
    "(graph/rewrite.py); the attrs are sgd_update_'s, and momentum must be 0.",
)


def _sgd_sum_spec(p, grads, **attrs):
    lead = grads.ndim - p.ndim
    if lead < 1 or any(
        n != m and UNKNOWN not in (n, m) for n, m in zip(grads.shape[lead:], p.shape)
    ):
        raise ShapeError(
            f"grads{tuple(grads.shape)} must be the parameter's shape {tuple(p.shape)} "
            "after one or more leading axes (the axes its gradient sums over)"
        )
    return Spec(p.shape, p.dtype)


@njit(**JIT)
def _sgd_sum_kernel(p, rows, lr, weight_decay):
    # the column sums as sum_cols makes them (float64, row by row), each rounded to p's dtype
    # as the sum op's output is, then _sgd_plain_kernel's arithmetic: the unfolded result
    acc = np.zeros(p.size, np.float64)
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            acc[j] += rows[i, j]
    t = p.dtype.type
    lr, weight_decay = t(lr), t(weight_decay)
    for j in range(p.size):
        p[j] = p[j] - lr * (t(acc[j]) + weight_decay * p[j])


def _sgd_sum_cpu(p, grads, p_out, lr, momentum, dampening, weight_decay, nesterov):
    if momentum:
        raise UnsupportedError(
            "sgd_sum_update_: momentum needs the gradient itself (sgd_update_ keeps it)"
        )
    if not p_out.flags.c_contiguous:
        raise UnsupportedError("sgd_sum_update_: parameters must be contiguous")
    rows = _readable(np.ascontiguousarray(grads).reshape(-1, max(p.size, 1)), p_out)
    if p_out is not p:
        np.copyto(p_out, p)
    _sgd_sum_kernel(p_out.reshape(-1), rows, lr, weight_decay)


def _sgd_sum_ref(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    g = grads.sum(axis=tuple(range(grads.ndim - p.ndim)), dtype=np.float64).astype(p.dtype)
    return _sgd_ref(p, g, p, lr, 0.0, dampening, weight_decay)[0]


sgd_sum_update_ = Op(
    name="sgd_sum_update_",
    inputs=("param", "grads"),
    outputs=("param_out",),
    spec=_sgd_sum_spec,
    kernels={
        "cpu": _sgd_sum_cpu,
        "cuda": not_supported(
            "sgd_sum_update_ is made by a CPU graph-mode rewrite; on a GPU the bias gradient's "
            "sum and sgd_update_ run as two ops"
        ),
    },
    dtypes=dt.FLOATS,
    ref=_sgd_sum_ref,
    differentiable=False,
    attrs=sgd_update_.attrs,
    inplace={0: 0},
    doc="An SGD step without momentum whose gradient is `grads` summed over its leading axes "
    "(a bias gradient: the batch's rows), in place: p = p - lr (sum + wd p) in one pass over "
    "the rows, the gradient never stored. Graph mode folds sgd_update_ into it "
    "(graph/rewrite.py); the attrs are sgd_update_'s, and momentum must be 0.",
)


# ---------------------------------------------------------------- SGD through a ReLU layer


def _sgd_matmul_relu_spec(p, out, grad, weight_layout="out_in", **attrs):
    if not p.ndim == out.ndim == grad.ndim == 2:
        raise ShapeError("needs a 2-D parameter, out and grad")
    if not (p.dtype == out.dtype == grad.dtype and dt.is_float(p.dtype)):
        raise DTypeError(
            f"needs a float parameter, out and grad of one dtype, got {p.dtype}, {out.dtype} "
            f"and {grad.dtype}"
        )
    n_next, n = p.shape if weight_layout == "out_in" else p.shape[::-1]
    if not (_same(out.shape[1], n) and _same(grad.shape[1], n_next)):
        raise ShapeError(
            f"out{tuple(out.shape)} and grad{tuple(grad.shape)} must be the input and output "
            f"gradient's shapes of a layer with weight{tuple(p.shape)} ({weight_layout})"
        )
    if not _same(out.shape[0], grad.shape[0]):
        raise ShapeError(f"out and grad must have the same rows, got {out.shape} and {grad.shape}")
    return Spec(p.shape, p.dtype), Spec(out.shape, out.dtype)


# the blocks of out's columns the gradient is made in, and how many are made at once (each in
# its own scratch, on its own thread): the scratch is half of out's size
_BLOCKS, _LANES = 4, 2


@njit(cache=True, nogil=True, error_model="numpy")
def _sgd_matmul_relu_blocks(gemm, w, out, grad, scratch, in_out, alpha, beta, one, zero):
    """relu_grad(out, grad @ w') over out, w' being w (in_out: w.T), and w = beta w + alpha
    (grad.T @ out) (in_out: out.T @ grad) in blocks of out's columns: each block's product
    reads the weight's part before its update, which reads the block of out before the
    gradient is written over it. The lanes' loop is a prange: its twin runs the lanes on
    numba's threads (jit.threaded)."""
    n = out.shape[1]
    lanes, width = scratch.shape[0], scratch.shape[2]
    blocks = -(-n // width)
    for lane in prange(lanes):
        for block in range(lane, blocks, lanes):
            lo, hi = block * width, min(block * width + width, n)
            product, part = scratch[lane, :, : hi - lo], out[:, lo:hi]
            if in_out:  # w (n, j): its rows lo:hi
                cblas_product(gemm, grad, w[lo:hi], product, NO_TRANS, TRANS, one, zero)
                cblas_product(gemm, part, grad, w[lo:hi], TRANS, NO_TRANS, alpha, beta)
            else:  # w (j, n): its columns lo:hi
                cblas_product(gemm, grad, w[:, lo:hi], product, NO_TRANS, NO_TRANS, one, zero)
                cblas_product(gemm, grad, part, w[:, lo:hi], TRANS, NO_TRANS, alpha, beta)
            linalg.mask_over(part, product)


def _sgd_matmul_relu_cpu(p, out, grad, p_out, input_grad, weight_layout, **attrs):
    if attrs["momentum"]:
        raise UnsupportedError(
            "sgd_matmul_relu_grad_: momentum needs the gradient itself (sgd_update_ keeps it)"
        )
    if not p_out.flags.c_contiguous:
        raise UnsupportedError("sgd_matmul_relu_grad_: parameters must be contiguous")
    if p_out is not p:
        np.copyto(p_out, p)
    lr, in_out = attrs["lr"], weight_layout == "in_out"
    alpha, beta = -lr, 1.0 - lr * attrs["weight_decay"]
    gemm = blas.cblas_gemm(p.dtype) if p.dtype.char in "fd" else None
    if input_grad is not out or gemm is None or not out.flags.c_contiguous or 0 in out.shape:
        # (a float16 layer, written through float32 copies; no CBLAS to call)
        if np.may_share_memory(input_grad, out):
            out = out.copy()
        linalg.matmul_relu_grad.kernels["cpu"](out, grad, p_out.T if in_out else p_out, input_grad)
        a, b = (out.T, grad) if in_out else (grad.T, out)
        linalg.addmm.kernels["cpu"](p_out, a, b, p_out, beta, alpha)
        return
    m, n = out.shape
    scratch = np.empty((_LANES, m, -(-n // _BLOCKS)), out.dtype)
    scalar = p.dtype.type
    args = (gemm, p_out, out, np.ascontiguousarray(grad), scratch, in_out, scalar(alpha))
    args += (scalar(beta), scalar(1), scalar(0))

    def run(threaded):
        (jit.threaded(_sgd_matmul_relu_blocks) if threaded else _sgd_matmul_relu_blocks)(*args)

    threads.stacked_call((out.shape, grad.shape, p.dtype.char, "sgd_matmul_relu"), run)


def _sgd_matmul_relu_ref(p, out, grad, lr, weight_layout="out_in", weight_decay=0.0, **attrs):
    w = p.T if weight_layout == "in_out" else p
    input_grad = linalg.matmul_relu_grad.ref(out, grad, w)
    step = out.T @ grad if weight_layout == "in_out" else grad.T @ out
    return _sgd_ref(p, step, p, lr, 0.0, 0.0, weight_decay)[0], input_grad


sgd_matmul_relu_grad_ = Op(
    name="sgd_matmul_relu_grad_",
    inputs=("param", "out", "grad"),
    outputs=("param_out", "input_grad"),
    spec=_sgd_matmul_relu_spec,
    kernels={
        "cpu": _sgd_matmul_relu_cpu,
        "cuda": not_supported(
            "sgd_matmul_relu_grad_ is made by a CPU graph-mode rewrite; on a GPU the layer's "
            "input gradient and its weight's step run as separate ops"
        ),
    },
    dtypes=dt.FLOATS,
    ref=_sgd_matmul_relu_ref,
    differentiable=False,
    attrs={
        **sgd_update_.attrs,
        "weight_layout": Attr("str", "out_in", choices=("out_in", "in_out")),
    },
    inplace={0: 0, 1: 1},
    doc="The backward of a linear layer whose input `out` is a ReLU's output, with the SGD "
    "step (without momentum) of its weight, from the gradient `grad` reaching the layer's "
    "output, both in place: out = relu_grad(out, grad @ weight) (the layer's input gradient, "
    "over the values it is masked by) and weight -= lr (grad.T @ out + wd weight), nn.Linear's "
    "layout; weight_layout='in_out', a layer out @ weight: grad @ weight.T and out.T @ grad. "
    "The gradient is made a block of out's columns at a time: the block's product reads the "
    "weight's part before its step, which reads the block of out before the gradient is "
    "written over it. Graph mode folds matmul_relu_grad and the weight's sgd_matmul_update_ "
    "into it (graph/rewrite.py); the attrs are sgd_update_'s, and momentum must be 0.",
)


def _check_states(p, **states):
    """The gradient and the optimizer's states: of the parameter's shape, and floats (the
    kernels write float steps into them; a bool or integer gradient would fail inside numpy's
    casts)."""
    for name, s in states.items():
        if s.shape != p.shape:
            raise ShapeError(f"{name} must have the parameter's shape")
        if not dt.is_float(s.dtype):
            raise DTypeError(f"{name} must be a float tensor, got {s.dtype}")


# ---------------------------------------------------------------- Adam / AdamW


@njit(**JIT)
def _adam_kernel(
    p, g, m, v, vmax, step,
    lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize,
):  # fmt: skip
    # in place, like the SGD kernels (each written array passed once; vmax is written only
    # with amsgrad), in the parameter's dtype
    t = step[0] + 1
    step[0] = t
    c = p.dtype.type
    step_size = c(lr / (1.0 - beta1**t))
    root_bc2 = c(np.sqrt(1.0 - beta2**t))
    decay = c(1.0 - lr * weight_decay)
    b1, b2, wd, e = c(beta1), c(beta2), c(weight_decay), c(eps)
    rest1, rest2 = c(1.0 - beta1), c(1.0 - beta2)
    for i in range(p.size):
        pi = p[i]
        gi = -g[i] if maximize else g[i]
        if decoupled:
            pi = pi * decay
        else:
            gi = gi + wd * pi
        mi = b1 * m[i] + rest1 * gi
        vi = b2 * v[i] + rest2 * gi * gi
        m[i] = mi
        v[i] = vi
        if amsgrad:
            vi = max(vmax[i], vi)
            vmax[i] = vi
        p[i] = pi - step_size * mi / (np.sqrt(vi) / root_bc2 + e)


def _adam_spec(p, g, m, v, vmax, step, **attrs):
    _check_states(p, grad=g, exp_avg=m, exp_avg_sq=v, max_exp_avg_sq=vmax)
    if step.shape != () or step.dtype.kind not in "iu":
        raise ShapeError(f"step must be a 0-d integer tensor, got {step}")
    return Spec(p.shape, p.dtype), Spec(m.shape, m.dtype), Spec(v.shape, v.dtype), \
        Spec(vmax.shape, vmax.dtype), Spec((), step.dtype)  # fmt: skip


def _adam_cpu(p, g, m, v, vmax, step, p_out, m_out, v_out, vmax_out, step_out, **attrs):
    outs = (p_out, m_out, v_out, vmax_out, step_out)
    if not all(a.flags.c_contiguous for a in outs):
        raise UnsupportedError("adam_update_: parameters and their state must be contiguous")
    amsgrad = attrs["amsgrad"]
    g = _readable(g, *outs)
    for src, dst in zip((p, m, v, vmax, step), outs):
        if dst is not src and (amsgrad or src is not vmax):
            np.copyto(dst, src)
    flat = [a.reshape(-1) for a in (p_out, m_out, v_out, vmax_out if amsgrad else v_out)]
    names = ("lr", "beta1", "beta2", "eps", "weight_decay", "decoupled_weight_decay")
    _adam_kernel(*flat[:1], g.ravel(), *flat[1:], step_out.reshape(-1),
                 *(attrs[n] for n in names), amsgrad, attrs["maximize"])  # fmt: skip
    if not amsgrad and vmax_out is not v_out:
        np.copyto(vmax_out, v_out)  # the stand-in (exp_avg_sq) keeps exp_avg_sq's value


def _adam_ref(
    p, g, m, v, vmax, step, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
    decoupled_weight_decay=False, amsgrad=False, maximize=False,
):  # fmt: skip
    t = int(step) + 1
    g = -g if maximize else g
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    vmax = np.maximum(vmax, v) if amsgrad else v
    denom = np.sqrt(vmax) / np.sqrt(1 - beta2**t) + eps
    return p - lr / (1 - beta1**t) * m / denom, m, v, vmax, np.asarray(t, step.dtype)


adam_update_ = Op(
    name="adam_update_",
    inputs=("param", "grad", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
    outputs=("param_out", "exp_avg_out", "exp_avg_sq_out", "max_exp_avg_sq_out", "step_out"),
    spec=_adam_spec,
    kernels={"cpu": _adam_cpu, "cuda": None},
    dtypes=dt.FLOATS,
    ref=_adam_ref,
    differentiable=False,
    promote=(0, 1, 2, 3, 4),  # the step counter keeps its integer dtype
    attrs={
        "lr": Attr("float"),
        "beta1": Attr("float", 0.9),
        "beta2": Attr("float", 0.999),
        "eps": Attr("float", 1e-8),
        "weight_decay": Attr("float", 0.0),
        "decoupled_weight_decay": Attr("bool", False),
        "amsgrad": Attr("bool", False),
        "maximize": Attr("bool", False),
    },
    inplace={0: 0, 1: 2, 2: 3, 3: 4, 4: 5},
    doc="Adam step in place (PyTorch's Adam/AdamW): t += 1; g += wd p (or p *= 1 - lr wd when "
    "decoupled: AdamW); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; vmax = max(vmax, v) "
    "with amsgrad; p -= lr / (1 - b1^t) m / (sqrt(vmax or v) / sqrt(1 - b2^t) + eps). Without "
    "amsgrad pass exp_avg_sq itself as max_exp_avg_sq.",
)


# ---------------------------------------------------------------- RMSProp


@njit(**JIT)
def _rmsprop_kernel(
    p, g, sq, ga, buf,
    lr, alpha, eps, weight_decay, momentum, centered, maximize,
):  # fmt: skip
    # in place, like the SGD kernels: ga is written only when centered, buf only with momentum
    c = p.dtype.type
    lr, a, rest, e, wd, mom = c(lr), c(alpha), c(1.0 - alpha), c(eps), c(weight_decay), c(momentum)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        gi = gi + wd * p[i]
        si = a * sq[i] + rest * gi * gi
        sq[i] = si
        if centered:
            ai = a * ga[i] + rest * gi
            ga[i] = ai
            avg = np.sqrt(si - ai * ai) + e
        else:
            avg = np.sqrt(si) + e
        if momentum > 0:
            bi = mom * buf[i] + gi / avg
            buf[i] = bi
            p[i] = p[i] - lr * bi
        else:
            p[i] = p[i] - lr * gi / avg


def _rmsprop_spec(p, g, sq, ga, buf, **attrs):
    _check_states(p, grad=g, square_avg=sq, grad_avg=ga, momentum_buffer=buf)
    return Spec(p.shape, p.dtype), Spec(sq.shape, sq.dtype), Spec(ga.shape, ga.dtype), \
        Spec(buf.shape, buf.dtype)  # fmt: skip


def _rmsprop_cpu(p, g, sq, ga, buf, p_out, sq_out, ga_out, buf_out, **attrs):
    outs = (p_out, sq_out, ga_out, buf_out)
    centered, momentum = attrs["centered"], attrs["momentum"] > 0
    written = [p_out, sq_out] + [ga_out] * centered + [buf_out] * momentum
    # (an unused state's stand-in may be the gradient, a strided view under minimize)
    if not all(a.flags.c_contiguous for a in written):
        raise UnsupportedError("rmsprop_update_: parameters and their state must be contiguous")
    g = _readable(g, *written)
    for src, dst in zip((p, sq, ga, buf), outs):
        if dst is not src:  # (an unused stand-in keeps its value through this copy)
            np.copyto(dst, src)
    # an unused state is passed as the written-nowhere stand-in of an array that is written
    flat = [a.reshape(-1) for a in (p_out, sq_out, ga_out if centered else sq_out,
                                     buf_out if momentum else sq_out)]  # fmt: skip
    names = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize")
    _rmsprop_kernel(flat[0], g.ravel(), *flat[1:], *(attrs[n] for n in names))


def _rmsprop_ref(
    p, g, sq, ga, buf, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
    centered=False, maximize=False,
):  # fmt: skip
    g = (-g if maximize else g) + weight_decay * p
    sq = alpha * sq + (1 - alpha) * g * g
    if centered:
        ga = alpha * ga + (1 - alpha) * g
        avg = np.sqrt(sq - ga * ga) + eps
    else:
        avg = np.sqrt(sq) + eps
    if momentum > 0:
        buf = momentum * buf + g / avg
        return p - lr * buf, sq, ga, buf
    return p - lr * g / avg, sq, ga, buf


rmsprop_update_ = Op(
    name="rmsprop_update_",
    inputs=("param", "grad", "square_avg", "grad_avg", "momentum_buffer"),
    outputs=("param_out", "square_avg_out", "grad_avg_out", "momentum_buffer_out"),
    spec=_rmsprop_spec,
    kernels={"cpu": _rmsprop_cpu, "cuda": None},
    dtypes=dt.FLOATS,
    ref=_rmsprop_ref,
    differentiable=False,
    attrs={
        "lr": Attr("float"),
        "alpha": Attr("float", 0.99),
        "eps": Attr("float", 1e-8),
        "weight_decay": Attr("float", 0.0),
        "momentum": Attr("float", 0.0),
        "centered": Attr("bool", False),
        "maximize": Attr("bool", False),
    },
    inplace={0: 0, 1: 2, 2: 3, 3: 4},
    doc="RMSProp step in place (PyTorch's): g += wd p; s = a s + (1 - a) g^2; centered: "
    "ga = a ga + (1 - a) g, avg = sqrt(s - ga^2) + eps, else avg = sqrt(s) + eps; with momentum "
    "b = m b + g / avg, p -= lr b, else p -= lr g / avg. grad_avg (not centered) and "
    "momentum_buffer (momentum 0) are unused stand-ins, left unchanged.",
)

# ---------------------------------------------------------------- Adagrad


@njit(**JIT)
def _adagrad_kernel(p, g, s, step, lr, lr_decay, weight_decay, eps, initial, maximize):
    # in place, like the other kernels; s holds the sum of squared gradients, and the initial
    # accumulator value is added where it is read (so a zero-initialised state serves)
    t = step[0] + 1
    step[0] = t
    c = p.dtype.type
    clr = c(lr / (1.0 + (t - 1) * lr_decay))
    wd, e, init = c(weight_decay), c(eps), c(initial)
    for i in range(p.size):
        gi = -g[i] if maximize else g[i]
        gi = gi + wd * p[i]
        si = s[i] + gi * gi
        s[i] = si
        p[i] = p[i] - clr * gi / (np.sqrt(si + init) + e)


def _adagrad_spec(p, g, s, step, **attrs):
    _check_states(p, grad=g, state_sum=s)
    if step.shape != () or step.dtype.kind not in "iu":
        raise ShapeError(f"step must be a 0-d integer tensor, got {step}")
    return Spec(p.shape, p.dtype), Spec(s.shape, s.dtype), Spec((), step.dtype)


def _adagrad_cpu(p, g, s, step, p_out, s_out, step_out, **attrs):
    outs = (p_out, s_out, step_out)
    if not all(a.flags.c_contiguous for a in outs):
        raise UnsupportedError("adagrad_update_: parameters and their state must be contiguous")
    g = _readable(g, *outs)
    for src, dst in zip((p, s, step), outs):
        if dst is not src:
            np.copyto(dst, src)
    names = ("lr", "lr_decay", "weight_decay", "eps", "initial_accumulator_value", "maximize")
    _adagrad_kernel(p_out.reshape(-1), g.ravel(), s_out.reshape(-1), step_out.reshape(-1),
                    *(attrs[n] for n in names))  # fmt: skip


def _adagrad_ref(
    p, g, s, step, lr, lr_decay=0.0, weight_decay=0.0, eps=1e-10,
    initial_accumulator_value=0.0, maximize=False,
):  # fmt: skip
    t = int(step) + 1
    g = (-g if maximize else g) + weight_decay * p
    s = s + g * g
    clr = lr / (1 + (t - 1) * lr_decay)
    return (
        p - clr * g / (np.sqrt(s + initial_accumulator_value) + eps),
        s,
        np.asarray(t, step.dtype),
    )


adagrad_update_ = Op(
    name="adagrad_update_",
    inputs=("param", "grad", "state_sum", "step"),
    outputs=("param_out", "state_sum_out", "step_out"),
    spec=_adagrad_spec,
    kernels={"cpu": _adagrad_cpu, "cuda": None},
    dtypes=dt.FLOATS,
    ref=_adagrad_ref,
    differentiable=False,
    promote=(0, 1, 2),  # the step counter keeps its integer dtype
    attrs={
        "lr": Attr("float"),
        "lr_decay": Attr("float", 0.0),
        "weight_decay": Attr("float", 0.0),
        "eps": Attr("float", 1e-10),
        "initial_accumulator_value": Attr("float", 0.0),
        "maximize": Attr("bool", False),
    },
    inplace={0: 0, 1: 2, 2: 3},
    doc="Adagrad step in place (PyTorch's Adagrad): t += 1; g += wd p; s += g^2; p -= lr / (1 + "
    "(t - 1) lr_decay) g / (sqrt(s + initial_accumulator_value) + eps). state_sum holds the "
    "squared gradients' sum alone (the initial value is added where it is read).",
)

# ---------------------------------------------------------------- ordering


def _depend_spec(x, *deps):
    return Spec(x.shape, x.dtype)


def _depend_kernel(x, *rest):
    """depend_'s kernel, on any device: the value is there already, unless the output is a
    compute-dtype copy of it (float16 on the CPU)."""
    out = rest[-1]
    if out is not x:
        out[...] = x


depend_ = Op(
    name="depend_",
    inputs=("x", "*deps"),
    outputs=("out",),
    spec=_depend_spec,
    kernels={"cpu": _depend_kernel, "cuda": _depend_kernel},
    dtypes=dt.ALL + dt.COMPLEX,
    ref=lambda x, *deps: x,
    differentiable=False,
    inplace={0: 0},
    promote=(0,),
    doc="x unchanged, once the deps are written: in a program, a run that needs x keeps the "
    "in-place writes to the deps too, which target-driven pruning would drop where nothing "
    "reads them in this run (a composed optimizer's state, read by the next step).",
)


__all__ = [
    "adagrad_update_",
    "depend_",
    "adam_update_",
    "rmsprop_update_",
    "sgd_matmul_update_",
    "sgd_matmul_relu_grad_",
    "sgd_sum_update_",
    "sgd_update_",
]
