"""The projected gradient check (HIPS/autograd's check_vjp) that nbflow.testing offers and
nbflow.autograd.gradcheck(fast_mode=True) runs: a vjp against central finite differences
along random directions."""

from __future__ import annotations

import numpy as np

from ..core import no_grad
from ..eager.tensor import Tensor, tensor
from .backprop import grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(AssertionError):
    pass


def _evaluate(fn, inputs):
    out = fn(*inputs)  # with grad enabled: fn may itself take gradients (gradgradcheck)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o._data, dtype=np.float64) for o in outs]


def gradcheck(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-7, directions=3, seed=0):
    """Check reverse-mode gradients of `fn` against central finite differences.

    Random projection (HIPS/autograd's check_vjp): for a random output cotangent u and random
    input directions v, <vjp(u), v> must match (f(x + eps v) - f(x - eps v)) . u / (2 eps).
    Inputs should be float64 tensors with requires_grad=True. Every float output counts: one
    that does not require grad has a zero analytic gradient, so a function whose gradient is
    constant passes gradgradcheck, and an output that lost its graph fails (as PyTorch's).
    Raises GradcheckError with the worst mismatch."""
    rng = np.random.default_rng(seed)
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    cots = [tensor(rng.standard_normal(o.shape), dtype=o.dtype) for o in outs]
    live = [(o, u) for o, u in zip(outs, cots) if o.requires_grad]
    grads = [None] * len(diff)
    if live:
        grads = grad([o for o, _ in live], diff, [u for _, u in live], True, allow_unused=True)
    for x, g in zip(diff, grads):
        if g is not None and g.shape != x.shape:
            raise GradcheckError(f"gradient shape {g.shape} != input shape {x.shape}")
    worst = None
    for _ in range(directions):
        vs = [rng.standard_normal(x.shape) for x in diff]
        analytic = sum(
            float(np.sum(np.asarray(g._data, np.float64) * v))
            for g, v in zip(grads, vs)
            if g is not None
        )

        def shifted(sign, vs=vs):
            moved = list(inputs)
            k = 0
            for i, x in enumerate(inputs):
                if isinstance(x, Tensor) and x.requires_grad:
                    moved[i] = tensor(x._data + sign * eps * vs[k], x.dtype, requires_grad=True)
                    k += 1
            res = _evaluate(fn, moved)
            return sum(
                float(np.sum(r * np.asarray(u._data, np.float64)))
                for r, u, o in zip(res, cots, outs)
                if o.dtype.kind == "f"
            )

        numeric = (shifted(1) - shifted(-1)) / (2 * eps)
        err = abs(analytic - numeric)
        if worst is None or err > worst[0]:
            worst = (err, analytic, numeric)
        if not err <= atol + rtol * abs(numeric):
            raise GradcheckError(
                f"gradient mismatch: analytic {analytic!r} vs finite differences {numeric!r} "
                f"(|diff| {err:.3g}, eps {eps})"
            )
    return worst


def gradgradcheck(fn, inputs, **kw):
    """gradcheck of the gradient itself: checks second derivatives (create_graph=True)."""
    rng = np.random.default_rng(kw.get("seed", 0) + 1)
    with no_grad():
        out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    cots = [tensor(rng.standard_normal(o.shape), dtype=o.dtype) for o in outs]
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_grad(*xs):
        res = fn(*xs)
        res = res if isinstance(res, (tuple, list)) else (res,)
        diff = [xs[i] for i in diff_idx]
        gs = grad(list(res), diff, cots, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grad, inputs, **kw)
