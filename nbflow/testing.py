"""Testing tools nbflow uses on itself: tolerances, assert_close, finite-difference gradient
checks, and hypothesis strategies for tensors (hypothesis is imported only when used)."""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .autograd import grad
from .core import no_grad
from .tensor import Tensor, tensor

# default (rtol, atol) per dtype: float16 is computed in float32 but stored with 11 bits
TOLERANCE = {
    dt.float16: (1e-2, 1e-2),
    dt.float32: (1e-5, 1e-6),
    dt.float64: (1e-10, 1e-12),
}


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, msg=""):
    """Shapes equal, dtypes equal (optional), values close; NaNs and infs must match."""
    a = np.asarray(actual.data if isinstance(actual, Tensor) else actual)
    e = np.asarray(expected.data if isinstance(expected, Tensor) else expected)
    assert a.shape == e.shape, f"{msg} shape {a.shape} != expected {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"{msg} dtype {a.dtype} != expected {e.dtype}"
    if a.dtype.kind == "f" or e.dtype.kind == "f":
        d = a.dtype if a.dtype.kind == "f" else e.dtype
        r, t = TOLERANCE.get(d, (1e-5, 1e-6))
        np.testing.assert_allclose(
            a.astype(np.float64),
            e.astype(np.float64),
            rtol=r if rtol is None else rtol,
            atol=t if atol is None else atol,
            equal_nan=True,
            err_msg=msg,
        )
    else:
        np.testing.assert_array_equal(a, e, err_msg=msg)


class GradcheckError(AssertionError):
    pass


def _evaluate(fn, inputs):
    out = fn(*inputs)  # with grad enabled: fn may itself take gradients (gradgradcheck)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(o.data, dtype=np.float64) for o in outs]


def gradcheck(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-7, directions=3, seed=0):
    """Check reverse-mode gradients of `fn` against central finite differences.

    Random projection (HIPS/autograd's check_vjp): for a random output cotangent u and random
    input directions v, <vjp(u), v> must match (f(x + eps v) - f(x - eps v)) . u / (2 eps).
    Inputs should be float64 tensors with requires_grad=True. Raises GradcheckError with the
    worst mismatch."""
    rng = np.random.default_rng(seed)
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    cots = [tensor(rng.standard_normal(o.shape), dtype=o.dtype) for o in outs]
    live = [(o, u) for o, u in zip(outs, cots) if o.requires_grad]
    if not live:
        raise GradcheckError("no output requires grad")
    grads = grad([o for o, _ in live], diff, [u for _, u in live], allow_unused=True)
    for x, g in zip(diff, grads):
        if g is not None and g.shape != x.shape:
            raise GradcheckError(f"gradient shape {g.shape} != input shape {x.shape}")
    worst = None
    for _ in range(directions):
        vs = [rng.standard_normal(x.shape) for x in diff]
        analytic = sum(
            float(np.sum(np.asarray(g.data, np.float64) * v))
            for g, v in zip(grads, vs)
            if g is not None
        )

        def shifted(sign, vs=vs):
            moved = list(inputs)
            k = 0
            for i, x in enumerate(inputs):
                if isinstance(x, Tensor) and x.requires_grad:
                    moved[i] = tensor(x.data + sign * eps * vs[k], x.dtype, requires_grad=True)
                    k += 1
            res = _evaluate(fn, moved)
            return sum(
                float(np.sum(r * np.asarray(u.data, np.float64)))
                for r, u, o in zip(res, cots, outs)
                if o.requires_grad
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


# ---------------------------------------------------------------- hypothesis strategies


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes including 0-d and size-0."""
    from hypothesis.extra import numpy as hnp

    return hnp.array_shapes(
        min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    )


def broadcastable_shapes(n=2, min_dims=0, max_dims=3, max_side=4):
    """n shapes that broadcast together (some dims 1, some missing)."""
    from hypothesis.extra import numpy as hnp

    return hnp.mutually_broadcastable_shapes(
        num_shapes=n, min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side
    ).map(lambda bs: bs.input_shapes)


def elements(dtype, low=-3.0, high=3.0):
    """Values of `dtype` in [low, high] (floats without NaN/inf unless asked)."""
    from hypothesis import strategies as st

    dtype = np.dtype(dtype)
    if dtype == dt.bool_:
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(int(np.ceil(low)), int(np.floor(high)))
    # round to the dtype (bounds like 0.1 are not representable in float16)
    return st.floats(low, high, allow_nan=False, allow_infinity=False).map(
        lambda v: float(dtype.type(v))
    )


def arrays(dtype, shape, low=-3.0, high=3.0, noncontiguous=None):
    """numpy arrays of `dtype` and `shape`; some are non-contiguous views (strided or
    transposed) when `noncontiguous` is None (drawn) or True."""
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    base = hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, low, high))
    if noncontiguous is False:
        return base
    layouts = (
        st.sampled_from(["c", "strided", "transposed"])
        if noncontiguous is None
        else st.sampled_from(["strided", "transposed"])
    )
    return st.tuples(base, layouts).map(lambda p: _relayout(*p))


def _relayout(a: np.ndarray, layout: str) -> np.ndarray:
    """The same values in another memory layout (a view that is not C-contiguous)."""
    if layout == "strided" and a.ndim > 0:
        big = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    if layout == "transposed" and a.ndim > 1:
        return np.ascontiguousarray(a.T).T
    return a
