"""Testing tools nbflow uses on itself: tolerances, assert_close, make_tensor (PyTorch's),
finite-difference gradient checks, and hypothesis strategies for tensors (hypothesis is
imported only when used)."""

from __future__ import annotations

import inspect
import math

import numpy as np

from .autograd.backprop import grad
from .autograd.projection import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
from .core import Spec
from .core import dtypes as dt
from .core.errors import ArgumentError, DomainError, ShapeError
from .eager.tensor import Tensor, tensor

# default (rtol, atol) per dtype: float16 is computed in float32 but stored with 11 bits
TOLERANCE = {
    dt.float16: (1e-2, 1e-2),
    dt.float32: (1e-5, 1e-6),
    dt.float64: (1e-10, 1e-12),
    dt.complex64: (1e-5, 1e-6),
    dt.complex128: (1e-10, 1e-12),
}


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, msg=""):
    """Shapes equal, dtypes equal (optional), values close; NaNs and infs must match."""
    a = np.asarray(actual._data if isinstance(actual, Tensor) else actual)
    e = np.asarray(expected._data if isinstance(expected, Tensor) else expected)
    assert a.shape == e.shape, f"{msg} shape {a.shape} != expected {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"{msg} dtype {a.dtype} != expected {e.dtype}"
    if a.dtype.kind in "fc" or e.dtype.kind in "fc":
        d = a.dtype if a.dtype.kind in "fc" else e.dtype
        r, t = TOLERANCE.get(d, (1e-5, 1e-6))
        wide = np.complex128 if "c" in (a.dtype.kind, e.dtype.kind) else np.float64
        np.testing.assert_allclose(
            a.astype(wide),
            e.astype(wide),
            rtol=r if rtol is None else rtol,
            atol=t if atol is None else atol,
            equal_nan=True,
            err_msg=msg,
        )
    else:
        np.testing.assert_array_equal(a, e, err_msg=msg)


def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], list | tuple):
        shape = tuple(shape[0])
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in shape):
        raise ShapeError(f"make_tensor: the shape must be non-negative ints, got {shape!r}")
    return tuple(shape)


def _bounds(dtype, low, high):
    """[low, high) within what dtype holds, PyTorch's defaults -9 and 9 (0 for unsigned)."""
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    low = (0 if dtype.kind == "u" else -9) if low is None else low
    high = 9 if high is None else high
    if np.isnan(low) or np.isnan(high):
        raise DomainError(f"make_tensor: low and high must not be NaN, got {low} and {high}")
    if low > high:
        raise DomainError(f"make_tensor: low {low} must be at most high {high}")
    return max(low, info.min), min(high, info.max)


def make_tensor(
    *shape,
    dtype,
    device=None,
    low=None,
    high=None,
    requires_grad=False,
    noncontiguous=False,
    exclude_zero=False,
    generator=None,
):
    """PyTorch's torch.testing.make_tensor: a tensor of `shape` (ints, or one sequence) with
    values uniform in [low, high) (defaults [-9, 9), clipped to the dtype's range; bools are
    either), from `generator` or nbflow's default generator. noncontiguous=True gives a
    strided view holding the same kind of values; exclude_zero replaces zeros by 1 (integers)
    or the dtype's smallest normal number (floats)."""
    from .ops.creation import default_generator

    shape, dtype = _shape(shape), dt.as_dtype(dtype)
    rng = (generator or default_generator).numpy
    if dtype == dt.bool_:
        a = rng.integers(0, 2, shape).astype(bool)
    elif dtype.kind == "f":
        low, high = _bounds(dtype, low, high)
        a = rng.uniform(low, high, shape).astype(dtype)
    else:
        low, high = (math.ceil(v) for v in _bounds(dtype, low, high))
        a = rng.integers(low, max(high, low + 1), shape).astype(dtype)  # (low == high: low)
    if exclude_zero and dtype != dt.bool_:
        a[a == 0] = 1 if dtype.kind != "f" else np.finfo(dtype).tiny
    if noncontiguous and a.size > 1:
        a = _relayout(a, "strided")
    t = Tensor(a) if noncontiguous else tensor(a, dtype=dtype)
    if device is not None:
        t = t.to(device)
    return t.requires_grad_(True) if requires_grad else t


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
    if dtype.kind in "iu":  # (clipped to the dtype's range: an unsigned one has no negatives)
        info = np.iinfo(dtype)
        return st.integers(max(int(np.ceil(low)), info.min), min(int(np.floor(high)), info.max))
    if dtype.kind == "c":  # both parts in [low, high]
        part = elements(dt.to_real(dtype), low, high)
        return st.builds(complex, part, part)
    # round to the dtype (bounds like 0.1 are not representable in float16), then keep the
    # rounded value inside the bounds (0.1 rounds to 0.09998 in float16)
    lo, hi = _inside(dtype, low, 1), _inside(dtype, high, -1)
    return st.floats(low, high, allow_nan=False, allow_infinity=False).map(
        lambda v: float(min(max(dtype.type(v), lo), hi))
    )


def _inside(dtype, bound: float, direction: int):
    """The dtype's value nearest `bound` on the inside (direction 1: at or above it)."""
    v = dtype.type(bound)
    # compared in float64 (numpy compares a float16 with a Python float in float16)
    if (float(v) < bound) if direction > 0 else (float(v) > bound):
        v = np.nextafter(v, dtype.type(np.inf * direction))
    return v


def arrays(dtype, shape, low=-3.0, high=3.0, noncontiguous=None):
    """numpy arrays of `dtype` and `shape`; some are non-contiguous views (strided or
    transposed) when `noncontiguous` is None (drawn), all of them when True (but a 0-d
    array, and one of a size numpy calls contiguous in any layout)."""
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
    if layout == "transposed" and a.ndim == 1:  # (a vector has no transpose: strided)
        return _relayout(a, "strided")
    return a


# ---------------------------------------------------------------- modes, devices, op property tests


def _leaves(inputs):
    """Fresh leaf tensors with the inputs' values: a Tensor keeps its requires_grad, a float
    numpy array requires grad; other values pass through."""
    out = []
    for x in inputs:
        if not isinstance(x, (Tensor, np.ndarray)):
            out.append(x)
            continue
        data = np.array(x.numpy() if isinstance(x, Tensor) else x)
        rg = x.requires_grad if isinstance(x, Tensor) else data.dtype.kind == "f"
        out.append(tensor(data, data.dtype, requires_grad=rg))
    return out


def _run_with_grads(fn, inputs, seed):
    outs = fn(*inputs)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    live = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    grads = []
    if diff and live:
        rng = np.random.default_rng(seed)
        cots = [tensor(rng.standard_normal(o.shape), o.dtype, device=o.device) for o in live]
        grads = grad(live, diff, cots, retain_graph=True, allow_unused=True)
    return outs, grads


def check_modes(fn, *inputs, rtol=None, atol=None, seed=0):
    """Eager `fn(*inputs)` and `nbflow.jit(fn)(*inputs)` agree on every output and on the
    gradients of a random cotangent with respect to every input that requires grad (float
    numpy inputs count as requiring grad). Returns {"outputs": n, "gradients": m}, the
    counts compared; raises AssertionError listing each disagreement."""
    from .graph import jit

    eager_outs, eager_grads = _run_with_grads(fn, _leaves(inputs), seed)
    jit_outs, jit_grads = _run_with_grads(jit(fn), _leaves(inputs), seed)
    problems = []
    pairs = [(f"output {i}", a, b) for i, (a, b) in enumerate(zip(jit_outs, eager_outs))]
    pairs += [(f"gradient {i}", a, b) for i, (a, b) in enumerate(zip(jit_grads, eager_grads))]
    if len(jit_outs) != len(eager_outs) or len(jit_grads) != len(eager_grads):
        problems.append(
            f"jit gives {len(jit_outs)} outputs and {len(jit_grads)} gradients, "
            f"eager {len(eager_outs)} and {len(eager_grads)}"
        )
    for what, a, b in pairs:
        if (a is None) != (b is None):
            problems.append(f"{what}: jit {'None' if a is None else 'a tensor'}, eager the other")
            continue
        if a is None:
            continue
        try:
            assert_close(a, b, rtol=rtol, atol=atol, msg=f"{what} (jit vs eager):")
        except AssertionError as e:
            problems.append(str(e).strip())
    if problems:
        name = getattr(fn, "__name__", repr(fn))
        raise AssertionError(
            f"check_modes({name}): eager and jit disagree:\n" + "\n".join(problems)
        )
    return {"outputs": len(eager_outs), "gradients": sum(g is not None for g in eager_grads)}


def check_devices(fn, *inputs, skip=True, rtol=None, atol=None, seed=0, device="cuda"):
    """CPU and CUDA agree on `fn(*inputs)`: every output, and the gradients of a random
    cotangent with respect to every input that requires grad (float numpy inputs count as
    requiring grad). Runs on a GPU, or on numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1 set
    before numba is imported). Returns {"status": "compared", "outputs": n, "gradients": m};
    raises AssertionError listing each disagreement. With no CUDA device, under pytest (with
    skip=True) it skips the calling test with the reason; otherwise it returns
    {"status": "skipped", "reason": ...}."""
    import os
    import sys

    from .core.errors import UnsupportedError
    from .runtime import device as devices

    try:
        devices.cuda()
    except UnsupportedError as e:
        reason = f"skipped: {e}"
        if skip and "pytest" in sys.modules and os.environ.get("PYTEST_CURRENT_TEST"):
            import pytest

            pytest.skip(reason)
        return {"status": "skipped", "reason": reason}
    cpu_inputs = _leaves(inputs)
    gpu_inputs = [x.to(device) if isinstance(x, Tensor) else x for x in cpu_inputs]
    cpu_outs, cpu_grads = _run_with_grads(fn, cpu_inputs, seed)
    gpu_outs, gpu_grads = _run_with_grads(fn, gpu_inputs, seed)
    problems = []
    pairs = [(f"output {i}", a, b) for i, (a, b) in enumerate(zip(gpu_outs, cpu_outs))]
    pairs += [(f"gradient {i}", a, b) for i, (a, b) in enumerate(zip(gpu_grads, cpu_grads))]
    for what, a, b in pairs:
        if (a is None) != (b is None):
            problems.append(f"{what}: cuda {'None' if a is None else 'a tensor'}, cpu the other")
            continue
        if a is None:
            continue
        if isinstance(a, Tensor) and a.device == "cpu":
            problems.append(f"{what}: the CUDA run gave a CPU tensor")
            continue
        try:
            a = a.numpy() if isinstance(a, Tensor) else a
            assert_close(a, b, rtol=rtol, atol=atol, msg=f"{what} (cuda vs cpu):")
        except AssertionError as e:
            problems.append(str(e).strip())
    if problems:
        name = getattr(fn, "__name__", repr(fn))
        raise AssertionError(
            f"check_devices({name}): CPU and CUDA disagree:\n" + "\n".join(problems)
        )
    return {
        "status": "compared",
        "outputs": len(cpu_outs),
        "gradients": sum(g is not None for g in cpu_grads),
    }


_any_shape = shapes  # op_property_test's `shapes` parameter hides the strategy

CHECKS = ("forward", "gradients", "modes", "devices")


def op_property_test(
    op,
    ref=None,
    domain=(-3, 3),
    dtypes=None,
    max_examples=None,
    attrs=None,
    shapes=None,
    grad_tolerance=(1e-5, 1e-6),
):
    """The standard property tests of an op, as one pytest test parametrized over CHECKS:

        test_my_op = nbflow.testing.op_property_test(my_op)

    - forward: for every dtype (`dtypes`, default the op's), hypothesis-drawn inputs (0-d,
      size-0, broadcastable shapes for an elementwise op, non-contiguous views, values in
      `domain`): the output's shape and dtype equal the shape rule's, then its values equal
      `ref` (default op.ref) cast to the output dtype, within the dtype's tolerance;
    - gradients: float64 gradcheck (random projection) when the op is differentiable;
    - modes: check_modes (eager vs nbflow.jit, outputs and gradients);
    - devices: check_devices (CPU vs CUDA; skips without a GPU or the CUDA simulator).

    `attrs` is a list of attr dicts to draw from (default [{}]); `shapes` a hypothesis
    strategy of input-shape tuples, needed for a non-elementwise op with several inputs (one
    input: any shape). Called directly, `test()` runs every check (devices is reported as
    skipped without a GPU); `test("forward")` runs one. Failures raise AssertionError
    (GradcheckError for
    gradients) with hypothesis' smallest failing example."""
    ref = ref if ref is not None else op.ref
    dtypes = tuple(dt.as_dtype(d) for d in (dtypes or op.dtypes))
    attr_sets = list(attrs or [{}])
    low, high = domain
    n = len(op.inputs)
    if shapes is None and n > 1 and not hasattr(op, "scalar_body"):
        raise ArgumentError(f"op_property_test({op.name}): pass shapes= for a structured op")

    def shape_strategy():
        if shapes is not None:
            return shapes
        if n == 1:
            return _any_shape().map(lambda s: (s,))
        return broadcastable_shapes(n)

    def given(body, examples):
        from hypothesis import given as hgiven
        from hypothesis import settings
        from hypothesis import strategies as st

        count = max_examples if max_examples is not None else settings().max_examples
        wrapped = settings(max_examples=min(count, examples), deadline=None)(
            hgiven(st.data())(body)
        )
        wrapped()

    def draw(data, dtype):
        from hypothesis import strategies as st

        in_shapes = data.draw(shape_strategy(), label="shapes")
        xs = [
            data.draw(arrays(dtype, s, low, high), label=f"input {i}")
            for i, s in enumerate(in_shapes)
        ]
        kw = data.draw(st.sampled_from(attr_sets), label="attrs")
        return xs, kw

    def forward():
        if ref is None:
            raise AssertionError(f"{op.name}: no numpy reference (pass ref=)")
        for dtype in dtypes:
            given(_forward_body(dtype), 1000)

    def _forward_body(dtype):
        def body(data):
            xs, kw = draw(data, dtype)
            out = op(*[tensor(a, a.dtype) for a in xs], **kw)
            outs = out if isinstance(out, tuple) else (out,)
            specs = op.infer([Spec(a.shape, a.dtype) for a in xs], op.check_attrs(dict(kw)))
            for o, s in zip(outs, specs):
                assert (o.shape, o.dtype) == (tuple(s.shape), s.dtype), (
                    f"{op.name}: output {o.shape} {o.dtype} but the shape rule says "
                    f"{s.shape} {s.dtype}"
                )
            expected = ref(*xs, **kw)
            expected = expected if isinstance(expected, tuple) else (expected,)
            for o, e in zip(outs, expected):
                assert_close(o, np.asarray(e).astype(o.dtype), msg=f"{op.name} {dtype}:")

        return body

    def gradients():
        if not op.differentiable or op.no_derivative:
            return
        if dt.float64 not in dtypes:
            raise AssertionError(f"{op.name}: gradients are checked in float64, not declared")
        rtol, atol = grad_tolerance

        def body(data):
            xs, kw = draw(data, dt.float64)
            leaves = [tensor(a, dt.float64, requires_grad=True) for a in xs]
            gradcheck(lambda *a: op(*a, **kw), leaves, rtol=rtol, atol=atol)

        given(body, 8)

    def modes():
        dtype = dt.float64 if dt.float64 in dtypes else dtypes[0]

        def body(data):
            xs, kw = draw(data, dtype)
            check_modes(lambda *a: op(*a, **kw), *xs)

        given(body, 4)

    def devices(skip=True):
        from .core.errors import UnsupportedError
        from .runtime import device

        try:
            device.cuda()
        except UnsupportedError:
            return check_devices(op, skip=skip)  # skips, saying why
        dtype = dt.float32 if dt.float32 in dtypes else dtypes[0]

        def body(data):
            xs, kw = draw(data, dtype)
            check_devices(lambda *a: op(*a, **kw), *xs)

        given(body, 4)
        return {"status": "compared"}

    runs = {"forward": forward, "gradients": gradients, "modes": modes}

    def test(check="all"):
        if check == "devices":
            return devices()
        if check != "all":
            return runs[check]()
        for run in runs.values():
            run()
        return devices(skip=False)

    test.__name__ = f"test_{op.name}_properties"
    test.__doc__ = f"Property tests of op {op.name}: {', '.join(CHECKS)}."
    try:
        import pytest
    except ImportError:
        return test
    # pytest parametrizes `check` (it refuses a parameter with a default); a direct call may
    # still leave it out
    test.__signature__ = inspect.Signature(
        [inspect.Parameter("check", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    )
    return pytest.mark.parametrize("check", CHECKS)(test)
