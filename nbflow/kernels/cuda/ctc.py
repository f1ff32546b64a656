"""ctc_loss and its gradient on the GPU: ctc.py's alpha and beta recursions in log space, one
thread block per sample.

The threads of a block share the extended target's positions s (a blank before, between and
after the labels: 2 L + 1 of them); each time step reads the previous row and writes the next,
then the block synchronises, so a step sees the whole row before. The rows live in global
memory in float64, as on the CPU (the recursion adds thousands of log terms): two rows, used
in turn, for the loss; all T rows of alpha and of beta for the gradient, which then gives each
(t, class) one thread (the first position s holding that class sums every position holding
it, so no two threads write one output). The op's launchers (ops/ctc.py) check lengths and
labels on the host first, as on the CPU.

Importing this module needs no numba-cuda: the kernels are built on the first GPU launch.
"""

import functools
import math

from .loader import impl

# numba.cuda once kernels() has run. A module global, not a local: the CUDA simulator runs a
# kernel by swapping its module's globals that are numba.cuda for its own fake module.
cuda = None


@functools.cache
def kernels(*rules):
    """(forward, backward): the loss and the gradient kernels, built on the op's scalar rules
    (logaddexp, label, skips: the CPU kernels' @njit functions, compiled for the GPU too)."""
    global cuda
    from numba import cuda

    logaddexp, label, skips = (cuda.jit(device=True)(rule.py_func) for rule in rules)

    @cuda.jit(device=True)
    def nll_of(lp, b, targets, start, length, steps, blank, alpha):
        """-log p of sample b, from the alpha rows (row t at t % rows); every thread of the
        block calls it and returns the same value."""
        tid, tpb = cuda.threadIdx.x, cuda.blockDim.x
        if steps == 0:  # no frame: only the empty target has an alignment
            return 0.0 if length == 0 else math.inf
        width, rows = 2 * length + 1, alpha.shape[1]
        for s in range(tid, width, tpb):
            a = -math.inf
            if s == 0:
                a = float(lp[0, b, blank])
            elif s == 1:
                a = float(lp[0, b, targets[start]])
            alpha[b, 0, s] = a
        cuda.syncthreads()
        for t in range(1, steps):
            before, now = (t - 1) % rows, t % rows
            for s in range(tid, width, tpb):
                a = alpha[b, before, s]
                if s > 0:
                    a = logaddexp(a, alpha[b, before, s - 1])
                if skips(targets, start, s):
                    a = logaddexp(a, alpha[b, before, s - 2])
                alpha[b, now, s] = a + float(lp[t, b, label(targets, start, s, blank)])
            cuda.syncthreads()
        last = (steps - 1) % rows
        if width == 1:
            return -alpha[b, last, 0]
        return -logaddexp(alpha[b, last, width - 1], alpha[b, last, width - 2])

    @cuda.jit(device=True)
    def betas(lp, b, targets, start, length, steps, blank, beta):
        """log beta[b, t, s]: the paths from (t, s) to the end, the emission at t included."""
        tid, tpb = cuda.threadIdx.x, cuda.blockDim.x
        width, end = 2 * length + 1, steps - 1
        for s in range(tid, width, tpb):
            a = -math.inf
            if s == width - 1:
                a = float(lp[end, b, blank])
            elif s == width - 2:
                a = float(lp[end, b, targets[start + length - 1]])
            beta[b, end, s] = a
        cuda.syncthreads()
        for t in range(steps - 2, -1, -1):
            for s in range(tid, width, tpb):
                a = beta[b, t + 1, s]
                if s + 1 < width:
                    a = logaddexp(a, beta[b, t + 1, s + 1])
                if s + 2 < width and skips(targets, start, s + 2):
                    a = logaddexp(a, beta[b, t + 1, s + 2])
                beta[b, t, s] = a + float(lp[t, b, label(targets, start, s, blank)])
            cuda.syncthreads()

    @cuda.jit(device=True)
    def first_holder(targets, start, s, blank):
        """Whether s is the first extended position holding its symbol."""
        c = label(targets, start, s, blank)
        for r in range(s):  # noqa: SIM110 (a loop: no generators in CUDA kernels)
            if label(targets, start, r, blank) == c:
                return False
        return True

    @cuda.jit
    def forward(
        lp, targets, starts, input_lengths, target_lengths, blank, zero_infinity, alpha, out
    ):
        for b in range(cuda.blockIdx.x, lp.shape[1], cuda.gridDim.x):
            nll = nll_of(
                lp, b, targets, starts[b], target_lengths[b], input_lengths[b], blank, alpha
            )
            if cuda.threadIdx.x == 0:
                out[b] = 0.0 if zero_infinity and nll == math.inf else nll

    @cuda.jit
    def backward(
        g,
        lp,
        targets,
        starts,
        input_lengths,
        target_lengths,
        blank,
        zero_infinity,
        alpha,
        beta,
        out,
    ):
        """out[t, b, c] = -g[b] * (the posterior probability that a path is at class c at t);
        out zeroed first."""
        tid, tpb, classes = cuda.threadIdx.x, cuda.blockDim.x, lp.shape[2]
        for b in range(cuda.blockIdx.x, lp.shape[1], cuda.gridDim.x):
            start, length, steps = starts[b], target_lengths[b], input_lengths[b]
            nll = nll_of(lp, b, targets, start, length, steps, blank, alpha)
            if steps == 0 or (nll == math.inf and zero_infinity):
                continue
            if nll == math.inf:  # no alignment: 0 / 0, as in PyTorch
                for e in range(tid, steps * classes, tpb):
                    out[e // classes, b, e % classes] = math.nan
                continue
            betas(lp, b, targets, start, length, steps, blank, beta)
            scale = -float(g[b])
            width = 2 * length + 1
            for e in range(tid, steps * width, tpb):
                t, s = e // width, e % width
                if not first_holder(targets, start, s, blank):
                    continue
                c = label(targets, start, s, blank)
                occupied = -math.inf
                for r in range(s, width):
                    if label(targets, start, r, blank) == c:
                        occupied = logaddexp(occupied, alpha[b, t, r] + beta[b, t, r])
                if occupied != -math.inf:  # (alpha and beta both hold lp[t, c]: once out)
                    out[t, b, c] = scale * math.exp(occupied + nll - float(lp[t, b, c]))

    return forward, backward


def launch(kernel, lp, width, *args):
    """One block per sample (grid-stride beyond the grid limit), threads over the width."""
    cuda_impl = impl()
    threads = min(cuda_impl.TPB, -(-width // 32) * 32)
    kernel[min(lp.shape[1], cuda_impl.MAX_BLOCKS), threads](*args)
