"""The connectionist temporal classification loss (Graves et al., 2006), as PyTorch's ctc_loss
computes it: the forward (alpha) and backward (beta) recursions in log space over the target
with a blank between labels, one sample at a time.

The op, `ctc_loss_op`, gives the per-sample negative log-likelihoods (N,) of batched (T, N, C)
log-probabilities; `ctc_loss` (PyTorch's F.ctc_loss) adds the unbatched layout, int-sequence
lengths and the reductions on top, with ordinary ops. Its gradient, `ctc_loss_grad`, is the
true derivative of the loss with respect to log_probs: minus the posterior occupation of each
(time, class). PyTorch's adds exp(log_probs) to it (the gradient it would pass if a
log_softmax followed inside the loss), which cancels in the gradient of the logits when
log_probs come from log_softmax, as they should; taken alone, it is not the derivative of the
loss. The backward pass recomputes alpha rather than keep it: the forward op stays one output.
"""

import math

import numpy as np

from ..argcheck import choice, integers
from ..core import Attr, Op, Spec, known
from ..core import dtypes as dt
from ..core.errors import AttrError, DTypeError, OutOfRangeError, ShapeError
from ..kernels.cpu.jit import njit
from ..kernels.cpu.templates import JIT
from ..kernels.cuda import ctc as cuda_ctc
from ..kernels.cuda.loader import impl
from ..runtime import device as devices
from . import reduce as _reduce
from . import shape as _shape
from .elementwise import cast, maximum

REDUCTIONS = ("mean", "sum", "none")

# ---------------------------------------------------------------- kernels


@njit(**JIT)
def _logaddexp(a, b):
    if a < b:
        a, b = b, a
    if a == -math.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@njit(**JIT)
def _label(targets, start, s, blank):
    """The extended target's s-th symbol: blanks at even s, the labels between them."""
    return blank if s % 2 == 0 else targets[start + s // 2]


@njit(**JIT)
def _skips(targets, start, s):
    """Whether a path may jump from s - 2 to s (a label differing from the one before)."""
    return s % 2 == 1 and s > 1 and targets[start + s // 2] != targets[start + s // 2 - 1]


@njit(**JIT)
def _alpha(lp, b, targets, start, length, steps, blank, alpha):
    """log alpha[t, s] for t < steps, s < 2 length + 1; returns the sample's -log p."""
    width = 2 * length + 1
    for s in range(width):
        alpha[0, s] = -math.inf
    alpha[0, 0] = lp[0, b, blank]
    if length > 0:
        alpha[0, 1] = lp[0, b, targets[start]]
    for t in range(1, steps):
        for s in range(width):
            a = alpha[t - 1, s]
            if s > 0:
                a = _logaddexp(a, alpha[t - 1, s - 1])
            if _skips(targets, start, s):
                a = _logaddexp(a, alpha[t - 1, s - 2])
            alpha[t, s] = a + lp[t, b, _label(targets, start, s, blank)]
    last = alpha[steps - 1, width - 1]
    return -(_logaddexp(last, alpha[steps - 1, width - 2]) if width > 1 else last)


@njit(**JIT)
def _beta(lp, b, targets, start, length, steps, blank, beta):
    """log beta[t, s]: the paths from (t, s) to the end, the emission at t included."""
    width = 2 * length + 1
    for s in range(width):
        beta[steps - 1, s] = -math.inf
    beta[steps - 1, width - 1] = lp[steps - 1, b, blank]
    if length > 0:
        beta[steps - 1, width - 2] = lp[steps - 1, b, targets[start + length - 1]]
    for t in range(steps - 2, -1, -1):
        for s in range(width):
            a = beta[t + 1, s]
            if s + 1 < width:
                a = _logaddexp(a, beta[t + 1, s + 1])
            if s + 2 < width and _skips(targets, start, s + 2):
                a = _logaddexp(a, beta[t + 1, s + 2])
            beta[t, s] = a + lp[t, b, _label(targets, start, s, blank)]


@njit(**JIT)
def _nll(lp, b, targets, start, length, steps, blank, alpha):
    if steps == 0:  # no frame: only the empty target has an alignment
        return 0.0 if length == 0 else math.inf
    return _alpha(lp, b, targets, start, length, steps, blank, alpha)


@njit(**JIT)
def _ctc_forward(lp, targets, starts, input_lengths, target_lengths, blank, zero_infinity, out):
    alpha = np.empty((lp.shape[0], 2 * max(target_lengths.max(), 0) + 1))
    for b in range(lp.shape[1]):
        nll = _nll(lp, b, targets, starts[b], target_lengths[b], input_lengths[b], blank, alpha)
        out[b] = 0.0 if zero_infinity and nll == math.inf else nll


@njit(**JIT)
def _ctc_backward(g, lp, targets, starts, input_lengths, target_lengths, blank, zero_infinity, out):
    """out[t, b, c] = -g[b] * (the posterior probability that a path is at class c at t)."""
    width = 2 * max(target_lengths.max(), 0) + 1
    alpha = np.empty((lp.shape[0], width))
    beta = np.empty((lp.shape[0], width))
    occupied = np.empty(lp.shape[2])
    out[...] = 0.0
    for b in range(lp.shape[1]):
        start, length, steps = starts[b], target_lengths[b], input_lengths[b]
        nll = _nll(lp, b, targets, start, length, steps, blank, alpha)
        if steps == 0 or (nll == math.inf and zero_infinity):
            continue
        if nll == math.inf:  # no alignment: 0 / 0, as in PyTorch
            out[:steps, b, :] = math.nan
            continue
        _beta(lp, b, targets, start, length, steps, blank, beta)
        scale = -float(g[b])
        for t in range(steps):
            occupied[:] = -math.inf
            for s in range(2 * length + 1):
                c = _label(targets, start, s, blank)
                occupied[c] = _logaddexp(occupied[c], alpha[t, s] + beta[t, s])
            for c in range(lp.shape[2]):
                if occupied[c] != -math.inf:  # (alpha and beta both hold lp[t, c]: once out)
                    out[t, b, c] = scale * math.exp(occupied[c] + nll - lp[t, b, c])


# ---------------------------------------------------------------- checks and layout


def _check_specs(log_probs, targets, input_lengths, target_lengths, blank):
    if not dt.is_float(log_probs.dtype):
        raise DTypeError(f"log_probs must be float, got {log_probs.dtype}")
    if log_probs.ndim != 3:
        raise ShapeError(
            f"log_probs of shape {tuple(log_probs.shape)} must be (T, N, C) (F.ctc_loss also "
            "takes an unbatched (T, C))"
        )
    if 0 in log_probs.shape:
        raise ShapeError(f"log_probs of shape {tuple(log_probs.shape)} must not be empty")
    _, batch, classes = log_probs.shape
    for what, s in (("targets", targets), ("input_lengths", input_lengths)):
        if s.dtype not in dt.INTS:
            raise DTypeError(f"{what} must be int32 or int64, got {s.dtype}")
    if target_lengths.dtype not in dt.INTS:
        raise DTypeError(f"target_lengths must be int32 or int64, got {target_lengths.dtype}")
    if targets.ndim not in (1, 2) or (
        targets.ndim == 2 and targets.shape[0] != batch and known(targets.shape[0], batch)
    ):
        raise ShapeError(
            f"targets of shape {tuple(targets.shape)} must be padded (N, S) with N = {batch}, "
            "or the concatenated 1-D sum(target_lengths)"
        )
    for what, s in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if s.ndim != 1 or (s.shape[0] != batch and known(s.shape[0], batch)):
            raise ShapeError(
                f"{what} of shape {tuple(s.shape)} must be of size batch_size ({batch},)"
            )
    if known(classes) and not 0 <= blank < classes:
        raise OutOfRangeError(f"blank {blank} must be in the label range [0, {classes})")


def _starts(log_probs, targets, input_lengths, target_lengths):
    """Checks the values (PyTorch's run-time checks, and labels in range, which PyTorch reads
    unchecked); returns the flat targets and where each sample's labels start."""
    steps, batch, classes = log_probs.shape
    for what, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if batch and lengths.min() < 0:
            raise OutOfRangeError(
                f"{what} must be >= 0, got {int(lengths.min())} (sample {int(lengths.argmin())})"
            )
    if batch and input_lengths.max() > steps:
        raise OutOfRangeError(
            f"input_lengths must be at most T = {steps}, got {int(input_lengths.max())} "
            f"(sample {int(input_lengths.argmax())})"
        )
    lengths = target_lengths.astype(np.int64)
    if targets.ndim == 2:
        width = targets.shape[1]
        if batch and lengths.max() > width:
            raise OutOfRangeError(
                f"target_lengths must be at most the padded targets' S = {width}, got "
                f"{int(lengths.max())} (sample {int(lengths.argmax())})"
            )
        starts = np.arange(batch, dtype=np.int64) * width
        used = np.arange(width) < lengths[:, None]
    else:
        if lengths.sum() != targets.shape[0]:
            raise ShapeError(
                f"concatenated targets hold {targets.shape[0]} labels but target_lengths sum "
                f"to {int(lengths.sum())}"
            )
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        used = np.ones(targets.shape[0], bool)
    flat = np.ascontiguousarray(targets).reshape(-1).astype(np.int64)
    bad = used.reshape(-1) & ((flat < 0) | (flat >= classes))
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), targets.shape)
        raise OutOfRangeError(
            f"target label {int(flat[np.argmax(bad)])} at {tuple(int(i) for i in where)} is "
            f"outside [0, {classes})"
        )
    return flat, starts


def _lengths(a):
    return np.ascontiguousarray(a, dtype=np.int64)


# ---------------------------------------------------------------- ctc_loss


def _ctc_spec(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    _check_specs(log_probs, targets, input_lengths, target_lengths, blank)
    return Spec((log_probs.shape[1],), log_probs.dtype)


def _ctc_cpu(lp, targets, input_lengths, target_lengths, out, blank, zero_infinity):
    flat, starts = _starts(lp, targets, input_lengths, target_lengths)
    il, tl = _lengths(input_lengths), _lengths(target_lengths)
    if lp.shape[1]:
        _ctc_forward(lp, flat, starts, il, tl, blank, zero_infinity, out)


def _gpu_inputs(lp, targets, input_lengths, target_lengths):
    """The checked integer inputs on lp's GPU (flat targets, starts, input and target lengths
    as int64; checked on host copies, as on the CPU) and the extended targets' widest width."""
    il, tl = (devices.to_host(a) for a in (input_lengths, target_lengths))
    flat, starts = _starts(lp, devices.to_host(targets), il, tl)
    il, tl = _lengths(il), _lengths(tl)
    ints = [impl().upload(a, lp) for a in (flat, starts, il, tl)]
    return ints, 2 * max(int(tl.max()), 0) + 1


def _gpu_kernels():
    return cuda_ctc.kernels(_logaddexp, _label, _skips)


def _ctc_cuda(lp, targets, input_lengths, target_lengths, out, blank, zero_infinity):
    # (log_probs is never empty: the spec refuses it)
    ints, width = _gpu_inputs(lp, targets, input_lengths, target_lengths)
    lp = impl().contiguous(lp)
    alpha = devices.empty((lp.shape[1], 2, width), np.float64, devices.device_of(lp))
    forward, _ = _gpu_kernels()
    cuda_ctc.launch(forward, lp, width, lp, *ints, blank, zero_infinity, alpha, out)


def _ctc_grad_cuda(g, lp, targets, input_lengths, target_lengths, out, blank, zero_infinity):
    ints, width = _gpu_inputs(lp, targets, input_lengths, target_lengths)
    impl().fill(out, 0)  # (0 from t = input_lengths[b] on)
    lp = impl().contiguous(lp)
    rows = (lp.shape[1], lp.shape[0], width)
    alpha, beta = (devices.empty(rows, np.float64, devices.device_of(lp)) for _ in range(2))
    _, backward = _gpu_kernels()
    args = (impl().contiguous(g), lp, *ints, blank, zero_infinity, alpha, beta, out)
    cuda_ctc.launch(backward, lp, width, *args)


def _ref_paths(lp, labels, blank):
    """numpy alpha and beta of one sample (lp: (steps, C)), as lists of rows."""
    ext = [blank]
    for c in labels:
        ext += [int(c), blank]
    width, steps = len(ext), lp.shape[0]

    def sources(s, step):  # the states a path can come from (step -1) or go to (step +1)
        out = [s, s + step]
        if ext[s] != blank and 0 <= s + 2 * step < width and ext[s + 2 * step] != ext[s]:
            out.append(s + 2 * step)
        return [r for r in out if 0 <= r < width]

    alpha = np.full((steps, width), -np.inf)
    alpha[0, : min(2, width)] = [lp[0, c] for c in ext[:2]]
    for t in range(1, steps):
        for s in range(width):
            alpha[t, s] = np.logaddexp.reduce(alpha[t - 1, sources(s, -1)]) + lp[t, ext[s]]
    beta = np.full((steps, width), -np.inf)
    beta[-1, max(width - 2, 0) :] = [lp[-1, c] for c in ext[max(width - 2, 0) :]]
    for t in range(steps - 2, -1, -1):
        for s in range(width):
            beta[t, s] = np.logaddexp.reduce(beta[t + 1, sources(s, +1)]) + lp[t, ext[s]]
    return ext, alpha, beta


def _ref_samples(log_probs, targets, input_lengths, target_lengths):
    """(sample, its (steps, C) log-probabilities, its labels), in float64."""
    lp = log_probs.astype(np.float64)
    offset = 0
    for b in range(lp.shape[1]):
        n = int(target_lengths[b])
        if targets.ndim == 2:
            labels = targets[b, :n]
        else:
            labels, offset = targets[offset : offset + n], offset + n
        yield b, lp[: int(input_lengths[b]), b], labels


def _ctc_ref(log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
    out = np.zeros(log_probs.shape[1])
    for b, lp, labels in _ref_samples(log_probs, targets, input_lengths, target_lengths):
        if lp.shape[0] == 0:
            out[b] = 0.0 if len(labels) == 0 else np.inf
            continue
        _, alpha, _ = _ref_paths(lp, labels, blank)
        out[b] = -np.logaddexp.reduce(alpha[-1, -2:])
    if zero_infinity:
        out[np.isinf(out)] = 0.0
    return out.astype(log_probs.dtype)


ATTRS = {"blank": Attr("int", 0), "zero_infinity": Attr("bool", False)}

ctc_loss_op = Op(
    name="ctc_loss",
    inputs=("log_probs", "targets", "input_lengths", "target_lengths"),
    outputs=("out",),
    spec=_ctc_spec,
    kernels={"cpu": _ctc_cpu, "cuda": _ctc_cuda},
    dtypes=dt.FLOATS,
    ref=_ctc_ref,
    attrs=ATTRS,
    promote=(0,),
    doc=(
        "The CTC loss of each sample, -log p(target | log_probs) summed over the alignments "
        "(PyTorch's ctc_loss with reduction='none'): log_probs (T, N, C), int targets padded "
        "(N, S) or concatenated (sum(target_lengths),), int input_lengths and target_lengths "
        "(N,); inf where no alignment fits (0 with zero_infinity). Lengths out of range, a "
        "blank outside [0, C) or a used label outside [0, C) raise OutOfRangeError."
    ),
)


# ---------------------------------------------------------------- ctc_loss_grad


def _ctc_grad_spec(g, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    _check_specs(log_probs, targets, input_lengths, target_lengths, blank)
    if not dt.is_float(g.dtype) or g.ndim != 1:
        raise ShapeError(f"g of shape {tuple(g.shape)} must be a float (N,), one per sample")
    return Spec(tuple(log_probs.shape), log_probs.dtype)


def _ctc_grad_cpu(g, lp, targets, input_lengths, target_lengths, out, blank, zero_infinity):
    flat, starts = _starts(lp, targets, input_lengths, target_lengths)
    il, tl = _lengths(input_lengths), _lengths(target_lengths)
    if lp.shape[1]:
        _ctc_backward(g, lp, flat, starts, il, tl, blank, zero_infinity, out)
    else:
        out[...] = 0


def _ctc_grad_ref(
    g, log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False
):
    out = np.zeros(log_probs.shape)
    nll = _ctc_ref(log_probs.astype(np.float64), targets, input_lengths, target_lengths, blank)
    for b, lp, labels in _ref_samples(log_probs, targets, input_lengths, target_lengths):
        if lp.shape[0] == 0 or (np.isinf(nll[b]) and zero_infinity):
            continue
        ext, alpha, beta = _ref_paths(lp, labels, blank)
        with np.errstate(invalid="ignore"):
            post = np.exp(alpha + beta + nll[b])  # through (t, s), times exp(lp[t, ext[s]])
        for s, c in enumerate(ext):
            out[: lp.shape[0], b, c] -= post[:, s] / np.exp(lp[:, c]) * g[b]
    return out.astype(log_probs.dtype)


ctc_loss_grad = Op(
    name="ctc_loss_grad",
    inputs=("g", "log_probs", "targets", "input_lengths", "target_lengths"),
    outputs=("out",),
    spec=_ctc_grad_spec,
    kernels={"cpu": _ctc_grad_cpu, "cuda": _ctc_grad_cuda},
    dtypes=dt.FLOATS,
    ref=_ctc_grad_ref,
    attrs=ATTRS,
    promote=(1,),
    no_derivative="ctc_loss has no second derivative (nor in PyTorch)",
    doc=(
        "ctc_loss's gradient with respect to log_probs, g[b] times -(the posterior probability "
        "of class c at time t), 0 from t = input_lengths[b] on; NaN for a sample with no "
        "alignment, 0 with zero_infinity."
    ),
)


@ctc_loss_op.defgrad
def _ctc_vjp(g, out, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    grad = ctc_loss_grad(
        g,
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank=blank,
        zero_infinity=zero_infinity,
    )
    return grad, None, None, None


# ---------------------------------------------------------------- PyTorch's F.ctc_loss


def _as_lengths(lengths, what):
    """A tensor as it is; ints and int sequences as an int64 array (an input of the op)."""
    if hasattr(lengths, "shape"):
        return lengths
    values = integers(lengths, f"ctc_loss: {what}")
    for i, v in enumerate(values):
        if not 0 <= v < 2**63:  # (numpy's OverflowError named neither the argument nor the value)
            raise OutOfRangeError(
                f"ctc_loss: {what} must be >= 0 and fit int64, got {v} (sample {i})"
            )
    return np.asarray(values, dtype=np.int64)


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank=0,
    reduction="mean",
    zero_infinity=False,
):
    """PyTorch's F.ctc_loss: log_probs (T, N, C) or unbatched (T, C), targets padded (N, S)
    or concatenated (sum(target_lengths),) (unbatched: (S,)), lengths as tensors or ints.
    'mean' divides each loss by its target length (at least 1), then averages the batch."""
    choice(reduction, REDUCTIONS, "ctc_loss: reduction", AttrError)
    input_lengths = _as_lengths(input_lengths, "input_lengths")
    target_lengths = _as_lengths(target_lengths, "target_lengths")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = _shape.unsqueeze(log_probs, 1)
        targets = _shape.unsqueeze(targets, 0) if targets.ndim == 1 else targets
        input_lengths = _shape.reshape(input_lengths, -1)
        target_lengths = _shape.reshape(target_lengths, -1)
    losses = ctc_loss_op(
        log_probs,
        targets,
        input_lengths,
        target_lengths,
        blank=blank,
        zero_infinity=zero_infinity,
    )
    if reduction == "mean":
        per_label = losses / maximum(cast(target_lengths, dtype=losses.dtype), 1)
        return _reduce.mean(per_label)
    if reduction == "sum":
        return _reduce.sum(losses)
    return _shape.squeeze(losses, 0) if unbatched else losses


__all__ = ["ctc_loss", "ctc_loss_grad", "ctc_loss_op"]
