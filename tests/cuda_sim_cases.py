"""CPU == CUDA over every op that has a CUDA kernel, on tiny shapes.

Run by tests/test_cuda_sim.py in a subprocess with NUMBA_ENABLE_CUDASIM=1 (the simulator must
be chosen before numba is imported), or directly on a machine with a GPU (bench/gpu_check.py
runs it with `--size large`). Prints one JSON line: the results per case and the ops covered.
The CPU path is the reference: its kernels are separate code (numba CPU loops, BLAS, numpy).
"""

import json
import sys
import time

import numpy as np

import nbflow as nb
from nbflow import dtypes as dt
from nbflow.core import REGISTRY

RNG = np.random.default_rng(0)
LARGE = "--size" in sys.argv and sys.argv[sys.argv.index("--size") + 1] == "large"
N = 64 if LARGE else 1  # scales the shapes of the structured cases

# attrs for elementwise ops whose body takes some
EW_ATTRS = {
    "clip": {"min": -0.5, "max": 0.5},
    "clip_": {"min": -0.5, "max": 0.5},
    "leaky_relu": {"negative_slope": 0.1},
    "cast": {"dtype": "float64"},
    "logit": {"eps": 0.2},
    "nan_to_num": {"nan": 1.0, "posinf": 9.0, "neginf": -9.0},
}
TOLERANCE = {dt.float16: 2e-2, dt.float32: 2e-5, dt.float64: 1e-12}


def values(shape, dtype, positive=False):
    if dtype == dt.bool_:
        return RNG.random(shape) > 0.5
    if dt.is_float(dtype):
        low = 0.25 if positive else -2.0
        return RNG.uniform(low, 2.0, shape).astype(dtype)
    return RNG.integers(1 if positive else -3, 4, shape).astype(dtype)


def on(device, arrays):
    return [nb.tensor(a, dtype=a.dtype, device=device) for a in arrays]


def host(x):
    if isinstance(x, (tuple, list)):
        return [host(v) for v in x]
    return np.asarray(x.numpy())


def compare(cpu, gpu, tol):
    if isinstance(cpu, list):
        return all(compare(a, b, tol) for a, b in zip(cpu, gpu)) and len(cpu) == len(gpu)
    if cpu.shape != gpu.shape or cpu.dtype != gpu.dtype:
        return False
    if cpu.dtype.kind == "f":
        return np.allclose(cpu, gpu, rtol=tol, atol=tol, equal_nan=True)
    return np.array_equal(cpu, gpu)


def run_case(fn, arrays, tol):
    """fn on CPU tensors and on GPU tensors; (ok, detail)."""
    try:
        expected = host(fn(*on("cpu", arrays)))
    except nb.NbflowError:
        return None, "cpu refuses"
    got = host(fn(*on("cuda", arrays)))
    ok = compare(expected, got, tol)
    return ok, "" if ok else f"cpu {expected} != cuda {got}"


# ---------------------------------------------------------------- the cases


def elementwise_cases():
    for name, op in REGISTRY.items():
        if not hasattr(op, "scalar_body") or name not in nb.ops.BUILTIN:
            continue
        if hasattr(op.kernels.get("cuda"), "cuda_unsupported"):  # (complex's: CPU only)
            continue
        attrs = EW_ATTRS.get(name, {})
        n = len(op.inputs)
        shapes = [(2 * N, 3), (3,), (2 * N, 1)][:n] if n > 1 else [(2 * N, 3)]
        for d in (d for d in op.dtypes if d.kind != "c"):  # (complex: CPU only so far)
            positive = name in ("pow", "floor_div", "mod", "fmod")  # no zero divisors, no x ** -1
            arrays = [values(s, d, positive) for s in shapes]
            if name == "where":
                arrays[0] = values(shapes[0], dt.bool_)
            if name == "binary_cross_entropy_pointwise":  # probabilities, both ends included
                arrays[0] = np.clip(arrays[0] / 2, 0, 1)
            if name == "gaussian_nll_variance":  # variances, 0 (below eps) included
                arrays[0] = np.abs(arrays[0])
            yield name, str(d), (lambda *xs, op=op, attrs=attrs: op(*xs, **attrs)), arrays
        # a strided (transposed) input, and a weak Python scalar
        if dt.float32 in op.dtypes:
            arrays = [values((3, 2 * N), dt.float32) for _ in range(n)]
            if name == "gaussian_nll_variance":
                arrays[0] = np.abs(arrays[0])
            yield (
                name,
                "f32 strided",
                (lambda *xs, op=op, a=attrs: op(*[x.T for x in xs], **a)),
                arrays,
            )
            if n == 2:
                yield name, "f32 scalar", (lambda x, y, op=op: op(x, 0.5)), arrays
    # in-place variants write into the first input
    for name in ("add_", "sub_", "mul_", "div_"):
        op = REGISTRY[name]
        arrays = [values((2 * N, 3), dt.float32), values((3,), dt.float32)]
        yield name, "f32", (lambda x, y, op=op: op(x, y)), arrays
    # an input overlapping the target (a shifted view, a row of it) is read as it was
    yield "add_", "overlap shifted", _shifted_add, [values((2 * N, 3), dt.float32)]
    yield "mul_", "overlap row", _row_mul, [values((2 * N, 3), dt.float32)]
    clip_ = REGISTRY["clip_"]
    yield "clip_", "f32", (lambda x: clip_(x, min=-0.5, max=0.5)), [values((2 * N, 3), dt.float32)]


def _shifted_add(x):
    y = x + 0  # a computed tensor: written in place
    y[1:] += y[:-1]
    return y


def _row_mul(x):
    y = x + 0
    y *= y[1]
    return y


def structured_cases():
    x3 = values((2 * N, 3, 4), dt.float32)
    xi = values((2 * N, 3, 4), dt.int64)
    for name in ("sum", "mean", "prod", "max", "min", "logsumexp", "all", "any"):
        op = REGISTRY[name]
        for axis in (None, 1, (0, 2), -1):
            for keep in (False, True):
                fn = lambda x, op=op, a=axis, k=keep: op(x, axis=a, keepdims=k)
                yield name, f"f32 axis={axis} keepdims={keep}", fn, [x3]
        yield name, "f64", (lambda x, op=op: op(x, axis=1)), [x3.astype(np.float64)]
        yield name, "f16", (lambda x, op=op: op(x, axis=1)), [x3.astype(np.float16)]
        yield name, "i64", (lambda x, op=op: op(x, axis=(1, 2))), [xi]
    nan = x3.copy()
    nan[1, 1, 1] = np.nan
    for name in ("argmax", "argmin"):
        op = REGISTRY[name]
        for axis in (None, 1, -1):
            yield name, f"axis={axis}", (lambda x, op=op, a=axis: op(x, axis=a)), [x3]
        yield name, "keepdims i64", (lambda x, op=op: op(x, axis=2, keepdims=True)), [xi]
        yield name, "nan f16", (lambda x, op=op: op(x, axis=1)), [nan.astype(np.float16)]
    for name in ("var", "std"):
        op = REGISTRY[name]
        for axis, correction in ((None, 1), (1, 0), ((0, 2), 1), (0, 2 * N)):
            fn = lambda x, op=op, a=axis, c=correction: op(x, axis=a, correction=c)
            yield name, f"axis={axis} correction={correction}", fn, [x3]
        fn = lambda x, op=op: op(x, axis=-1, keepdims=True)
        yield name, "f64 keepdims", fn, [x3.astype(np.float64)]
    cumsum = REGISTRY["cumsum"]
    for axis in (0, 1, -1):
        yield "cumsum", f"f32 axis={axis}", (lambda x, a=axis: cumsum(x, axis=a)), [x3]
    yield "cumsum", "i64", (lambda x: cumsum(x, axis=2)), [xi]
    yield "cumsum", "f16", (lambda x: cumsum(x, axis=0)), [x3.astype(np.float16)]
    yield "cumsum", "bool 0-d", (lambda x: cumsum(x, axis=0)), [np.array(True)]
    sort = REGISTRY["sort"]
    ties = np.round(x3 * 2) / 2  # equal values: the stable order must agree
    ties[0, 1, 2] = ties[1, 0, 0] = np.nan
    for axis, desc in ((0, False), (1, True), (-1, False), (-1, True)):
        fn = lambda x, a=axis, d=desc: sort(x, axis=a, descending=d)
        yield "sort", f"f32 axis={axis} descending={desc}", fn, [ties]
    yield "sort", "i64", (lambda x: sort(x, axis=1, descending=True)), [xi]
    yield "sort", "f16 0-d", (lambda x: sort(x, axis=0)), [np.array(1.5, np.float16)]
    for name in ("softmax", "log_softmax"):
        op = REGISTRY[name]
        for axis in (0, 1, -1):
            yield name, f"f32 axis={axis}", (lambda x, op=op, a=axis: op(x, axis=a)), [x3]
        yield name, "f16", (lambda x, op=op: op(x, axis=-1)), [x3.astype(np.float16)]
        yield name, "f64", (lambda x, op=op: op(x, axis=-1)), [x3.astype(np.float64)]
    grad = REGISTRY["softmax_grad"]
    probabilities = np.exp(x3) / np.exp(x3).sum(axis=1, keepdims=True)
    for log, out in ((False, probabilities), (True, np.log(probabilities))):
        fn = lambda g, o, lg=log: grad(g, o, axis=1, log=lg)
        yield "softmax_grad", f"f32 axis=1 log={log}", fn, [x3, out.astype(np.float32)]
    ops = nb.ops
    a, b = values((5 * N, 7), dt.float32), values((7, 3 * N), dt.float32)
    for d in (dt.float32, dt.float64, dt.float16, dt.int64):
        yield "matmul", str(d), ops.matmul, [a.astype(d), b.astype(d)]
    yield (
        "matmul",
        "batched",
        ops.matmul,
        [values((2, 1, 3, 4), dt.float32), values((3, 4, 2), dt.float32)],
    )
    yield "matmul", "vector", ops.matmul, [values((4,), dt.float32), values((2, 4, 3), dt.float32)]
    yield "matmul", "transposed", (lambda a, b: ops.matmul(a.T, b)), [a.T.copy(), b]
    w, bias = values((3 * N, 7), dt.float32), values((3 * N,), dt.float32)
    for d in (dt.float32, dt.float64, dt.float16):
        yield "linear", str(d), ops.linear, [a.astype(d), w.astype(d), bias.astype(d)]
    yield "linear", "no bias, 3-D x", ops.linear, [values((2, N, 7), dt.float32), w]
    yield "linear", "1-D x", ops.linear, [values((7,), dt.float32), w, bias]
    fn = lambda x, w, b: ops.linear(x, w, b, activation="relu")
    yield "linear", "relu", fn, [a, w, bias]
    c = values((5 * N, 3 * N), dt.float32)
    for d in (dt.float32, dt.float64):
        fn = lambda x, a, b: ops.addmm(x, a, b, beta=0.5, alpha=-2.0)
        yield "addmm", str(d), fn, [c.astype(d), a.astype(d), b.astype(d)]
    yield "addmm", "row input, beta 0", (lambda x, a, b: ops.addmm(x, a, b, beta=0.0)), [c[0], a, b]
    i64 = [values(a.shape, dt.int64), values(w.shape, dt.int64), values(bias.shape, dt.int64)]
    yield "linear", "int64", ops.linear, i64
    fn = lambda x, a, b: ops.addmm(x, a, b, beta=2, alpha=-3)
    yield "addmm", "int64", fn, [values(c.shape, dt.int64), i64[0], values(b.shape, dt.int64)]
    fn = lambda x, a, b: ops.addmm_(x, a.T, b, alpha=0.5)
    yield "addmm_", "transposed a", fn, [c, a.T.copy(), b]
    fn = lambda p, a, b: ops.sgd_matmul_update_(p, a, b, lr=0.1, weight_decay=0.01)
    yield "sgd_matmul_update_", "f32", fn, [c, a, b]
    like = values((3, 1), dt.float32)
    yield "sum_to_like", "f32", ops.sum_to_like, [x3, like]
    yield "broadcast_to_like", "f32", ops.broadcast_to_like, [like, x3]
    g = values((2 * N, 4), dt.float32)
    fn = lambda g, x: ops.expand_reduced(g, x, axis=1)
    yield "expand_reduced", "f32", fn, [g, x3]
    yield "reduced_count", "f32", (lambda x: ops.reduced_count(x, axis=(0, 2))), [x3]
    yield "full_like", "f32", (lambda x: ops.full_like(x, 2.5)), [x3]
    yield "full_like", "i32", (lambda x: ops.full_like(x, 7, dtype="int32")), [x3]
    fill_ = REGISTRY["fill_"]
    yield "fill_", "f32", (lambda x: fill_(x, value=3.0)), [x3]
    yield "copy_", "f32<-i64", (lambda x, s: ops.copy_(x, s)), [x3, xi[:1]]
    yield "add_n", "f32", ops.add_n, [x3, x3[:1], values((4,), dt.float32)]
    yield "depend_", "f32, i64", (lambda x, d: REGISTRY["depend_"](x, d)), [x3, xi[:1]]
    yield "concat", "axis1", (lambda p, q: ops.concat(p, q, axis=1)), [x3, x3[:, :2]]
    yield "stack", "axis0", (lambda p, q: ops.stack(p, q, axis=2)), [x3, x3 * 2]
    yield "reshape", "f32", (lambda x: ops.reshape(x, 4, -1)), [x3]
    yield "reshape", "strided", (lambda x: ops.reshape(x.T, -1)), [x3]
    yield "reshape_like", "f32", (lambda x, y: ops.reshape_like(x, y)), [x3, x3.reshape(-1)]
    yield "transpose", "f32", (lambda x: ops.transpose(x, 0, 2)), [x3]
    yield "permute", "f32", (lambda x: ops.permute(x, 2, 0, 1) * 1), [x3]
    yield (
        "broadcast_to",
        "f32",
        (lambda x: ops.broadcast_to(x, (2, 3, 4))),
        [values((3, 1), dt.float32)],
    )
    yield "squeeze", "f32", (lambda x: ops.squeeze(x)), [values((3, 1, 2), dt.float32)]
    yield "unsqueeze", "f32", (lambda x: ops.unsqueeze(x, 1)), [x3]
    yield "flatten", "f32", (lambda x: ops.flatten(x, 1)), [x3]
    yield "split", "f32", (lambda x: ops.split(x, 2, axis=2)), [x3]
    yield (
        "split_like",
        "f32",
        (lambda x, p, q: ops.split_like(x, p, q, axis=1)),
        [x3, x3[:, :1], x3[:, 1:]],
    )
    yield "slice", "f32", (lambda x: x[1:, ::2, None, -1] + 0), [x3]
    yield "matrix_transpose", "f32", (lambda x: ops.matrix_transpose(x) + 0), [x3]
    pad = REGISTRY["pad"]
    yield "pad", "f32", (lambda x: pad(x, pad_width=(1, 0, 0, 2, 1, 1), value=-1.5)), [x3]
    yield "pad", "i64 strided", (lambda x: pad(x.T, pad_width=(0, 1, 2, 0, 0, 0))), [xi]
    yield "tile", "f32", (lambda x: ops.tile(x, 2, 1, 1, 3)), [x3]
    yield "tile", "bool", (lambda x: ops.tile(x, 2)), [values((3, 2), dt.bool_)]
    rep = REGISTRY["repeat"]
    yield "repeat", "axis=1", (lambda x: rep(x, repeats=2, axis=1)), [x3]
    yield "repeat", "flat", (lambda x: rep(x, repeats=3)), [xi]
    yield "flip", "axis=(0, 2)", (lambda x: ops.flip(x, axis=(0, 2)) * 1), [x3]
    yield "flip", "all f16", (lambda x: ops.flip(x.T) * 1), [x3.astype(np.float16)]


def index_cases():
    ops = nb.ops
    x = values((4, 5, 3), dt.float32)
    i = np.array([[0, 3], [-1, 2]])
    yield "index", "one array", (lambda x, i: x[:, i]), [x, i]
    yield "index", "two arrays", (lambda x, i: x[i, 1:, i % 3]), [x, i]
    yield "index", "f16 int", (lambda x: x[[1, 0, 1], ..., 2]), [x.astype(np.float16)]
    put = REGISTRY["index_put"]
    key = (("slice", None, None, None), ("array", 0))
    for accumulate in (False, True):
        fn = lambda x, v, i, a=accumulate: put(x, v, i, key=key, accumulate=a)
        yield "index_put", f"accumulate={accumulate}", fn, [x, values((4, 2, 2, 3), dt.float32), i]
    dup = np.array([1, 1, 2])
    fn = lambda x, v, i: put(x, v, i, key=(("array", 0),), accumulate=True)
    yield (
        "index_put",
        "repeated f16",
        fn,
        [x.astype(np.float16), values((3, 5, 3), dt.float16), dup],
    )
    yield "index_put", "repeated i64", fn, [x.astype(np.int64), values((3, 5, 3), dt.int64), dup]
    fn = lambda x, v: put(x, v, key=(("slice", 1, None, None),))
    yield "index_put", "basic key", fn, [x, values((5, 3), dt.float32)]

    def setitem(x, v):
        x = x + 0  # a computed tensor: written in place
        x[1:3, 0] = v
        return x

    yield "index_put_", "setitem", setitem, [x, values((3,), dt.float32)]
    yield "index_select", "axis=1", (lambda x, i: ops.index_select(x, 1, i)), [x, i]
    idx = RNG.integers(-5, 5, (4, 2, 3))
    yield "take_along_axis", "axis=1", (lambda x, i: ops.take_along_axis(x, i, 1)), [x, idx]
    idx_b = RNG.integers(0, 4, (2, 1, 3))
    yield "take_along_axis", "broadcast", (lambda x, i: ops.take_along_axis(x, i, 0)), [x, idx_b]
    checked = lambda i: ops.checked_range(i, low=0, high=3, what="i")
    yield "checked_range", "i64", checked, [idx_b]
    scatter = REGISTRY["scatter_add"]
    src = values((4, 2, 3), dt.float32)
    yield "scatter_add", "axis=1", (lambda x, i, s: scatter(x, i, s, axis=1)), [x, idx, src]
    yield (
        "scatter_add",
        "f16",
        (lambda x, i, s: scatter(x, i, s, axis=1)),
        [x.astype(np.float16), idx, src.astype(np.float16)],
    )
    yield (
        "scatter_add",
        "i32",
        (lambda x, i, s: scatter(x, i, s, axis=1)),
        [x.astype(np.int32), idx, src.astype(np.int32)],
    )
    emb = REGISTRY["embedding"]
    weight = values((6, 4), dt.float32)
    words = RNG.integers(0, 6, (3, 5))
    yield "embedding", "f32", (lambda t, w: emb(t, w)), [words, weight]
    back = REGISTRY["embedding_backward"]
    fn = lambda g, t, w: back(g, t, w, padding_idx=2)
    yield "embedding_backward", "padding", fn, [values((3, 5, 4), dt.float32), words, weight]
    ln = REGISTRY["layer_norm"]
    yield "layer_norm", "last", (lambda x: ln(x, normalized_shape=(3,))), [x]
    yield (
        "layer_norm",
        "two dims f64",
        (lambda x: ln(x, normalized_shape=(5, 3), eps=1e-3)),
        [x.astype(np.float64)],
    )
    ln_grad = REGISTRY["layer_norm_grad"]
    fn = lambda g, y, x: ln_grad(g, y, x, normalized_shape=(3,))
    yield (
        "layer_norm_grad",
        "last",
        fn,
        [values(x.shape, dt.float32), values(x.shape, dt.float32), x],
    )
    ln_affine = REGISTRY["layer_norm_affine"]
    w3, b3 = values((5, 3), dt.float32), values((5, 3), dt.float32)
    fn = lambda x, w, b: ln_affine(x, w, b, normalized_shape=(5, 3))
    yield "layer_norm_affine", "two dims", fn, [x, w3, b3]
    ln_affine_grad = REGISTRY["layer_norm_affine_grad"]
    fn = lambda g, x, w: ln_affine_grad(g, x, w, normalized_shape=(5, 3))
    yield "layer_norm_affine_grad", "two dims", fn, [values(x.shape, dt.float32), x, w3]
    bn = REGISTRY["batch_norm_train"]
    yield "batch_norm_train", "NCS", (lambda x: bn(x, eps=1e-5)), [x]
    yield "batch_norm_train", "NC", (lambda x: bn(x, eps=1e-5)), [values((6, 3), dt.float32)]
    bn_grad = REGISTRY["batch_norm_train_grad"]
    fn = lambda g, y, x: bn_grad(g, y, x, eps=1e-5)
    shape = x.shape
    yield (
        "batch_norm_train_grad",
        "NCS",
        fn,
        [values(shape, dt.float32), values(shape, dt.float32), x],
    )
    per_channel = (values((shape[1],), dt.float32), values((shape[1],), dt.float32))
    bn_affine = REGISTRY["batch_norm_train_affine"]
    fn = lambda x, w, b: bn_affine(x, w, b, eps=1e-5)
    yield "batch_norm_train_affine", "NCS", fn, [x, *per_channel]
    fn = lambda x, w, b: bn_affine(x, w, b, eps=1e-5, activation="relu")
    yield "batch_norm_train_affine", "NCS, relu", fn, [x, *per_channel]
    bn_affine_grad = REGISTRY["batch_norm_train_affine_grad"]
    fn = lambda g, x, w: bn_affine_grad(g, x, w, eps=1e-5)
    yield "batch_norm_train_affine_grad", "NCS", fn, [values(shape, dt.float32), x, per_channel[0]]
    fn = lambda g, x, w, mask: bn_affine_grad(g, x, w, mask, eps=1e-5)
    args = [values(shape, dt.float32), x, per_channel[0], values(shape, dt.float32)]
    yield "batch_norm_train_affine_grad", "NCS, masked", fn, args
    affine = REGISTRY["channel_affine"]
    yield "channel_affine", "NCS", (lambda y, w, b: affine(y, w, b)), [x, *per_channel]
    affine_grad = REGISTRY["channel_affine_grad"]
    fn = lambda g, y, w: affine_grad(g, y, w)
    yield "channel_affine_grad", "NCS", fn, [values(shape, dt.float32), x, per_channel[0]]
    upd = REGISTRY["batch_norm_update_stats_"]
    fn = lambda m, v, x: upd(m, v, x, momentum=0.1)
    yield (
        "batch_norm_update_stats_",
        "f32",
        fn,
        [values((5,), dt.float32), values((5,), dt.float32, True), x],
    )

    def dropout(x):
        nb.manual_seed(3)
        return REGISTRY["dropout_mask"](x, p=0.3)

    yield "dropout_mask", "seeded", dropout, [x]
    # draws with tensor parameters: on the host from the same Generator, so CPU == CUDA
    rp = nb.ops.random_params
    positive = np.linspace(0.3, 4.0, 12, dtype=np.float32).reshape(3, 4)  # (RNG left as it was)
    seeded = lambda op: lambda *xs: op(*xs, generator=nb.Generator(3))
    yield "standard_gamma", "seeded", seeded(rp.standard_gamma), [positive]
    yield "poisson", "seeded", seeded(rp.poisson), [positive]
    yield "binomial", "seeded", seeded(rp.binomial), [np.full((3, 4), 5.0), positive / 4]


def conv_cases():
    x = values((2, 4, 6, 5), dt.float32)
    w = values((6, 2, 3, 3), dt.float32)  # groups=2: 4 input channels, 2 per group
    b = values((6,), dt.float32)
    geometries = [
        {"stride": (1,), "padding": (0,), "dilation": (1,), "groups": 2},
        {"stride": (2, 1), "padding": (1,), "dilation": (1, 2), "groups": 2},
    ]
    conv = REGISTRY["conv2d"]
    ig, wg = REGISTRY["conv2d_input_grad"], REGISTRY["conv2d_weight_grad"]
    for geo in geometries:
        yield "conv2d", f"bias {geo}", (lambda x, w, b, g=geo: conv(x, w, b, **g)), [x, w, b]
        out = conv(nb.tensor(x), nb.tensor(w), **geo)
        gy = values(out.shape, dt.float32)
        yield "conv2d_input_grad", str(geo), (lambda g, w, x, k=geo: ig(g, w, x, **k)), [gy, w, x]
        yield "conv2d_weight_grad", str(geo), (lambda x, g, w, k=geo: wg(x, g, w, **k)), [x, gy, w]
    yield (
        "conv2d",
        "f64 no bias",
        (lambda x, w: conv(x, w, groups=2)),
        [x.astype(np.float64), w.astype(np.float64)],
    )
    yield (
        "conv2d",
        "f16",
        (lambda x, w: conv(x, w, groups=2)),
        [x.astype(np.float16), w.astype(np.float16)],
    )
    xi, wi = values(x.shape, dt.int64), values(w.shape, dt.int64)
    geo = geometries[1]
    yield "conv2d", "int64", (lambda x, w: conv(x, w, **geo)), [xi, wi]
    gi = values(conv(nb.tensor(xi), nb.tensor(wi), **geo).shape, dt.int64)
    yield "conv2d_input_grad", "int64", (lambda g, w, x: ig(g, w, x, **geo)), [gi, wi, xi]
    pools = {"kernel_size": (3,), "stride": (2,), "padding": (1,)}
    yield "max_pool2d", "int64", (lambda x: REGISTRY["max_pool2d"](x, **pools)), [xi]
    yield "avg_pool2d", "int64", (lambda x: REGISTRY["avg_pool2d"](x, **pools)), [xi]
    yield from conv3d_cases()
    mp = REGISTRY["max_pool2d"]
    mpb = REGISTRY["max_pool2d_backward"]
    for attrs in (
        {"kernel_size": (2,)},
        {"kernel_size": (3,), "stride": (2,), "padding": (1,), "ceil_mode": True},
    ):
        yield "max_pool2d", str(attrs), (lambda x, a=attrs: mp(x, **a)), [x]
        _, idx = mp(nb.tensor(x), **attrs)
        gy = values(idx.shape, dt.float32)
        yield "max_pool2d_backward", str(attrs), mpb, [gy, idx.numpy(), x]
    ap, apb = REGISTRY["avg_pool2d"], REGISTRY["avg_pool2d_backward"]
    for attrs in (
        {"kernel_size": (2,)},
        {"kernel_size": (3,), "stride": (2,), "padding": (1,), "count_include_pad": False},
    ):
        yield "avg_pool2d", str(attrs), (lambda x, a=attrs: ap(x, **a)), [x]
        gy = values(ap(nb.tensor(x), **attrs).shape, dt.float32)
        yield "avg_pool2d_backward", str(attrs), (lambda g, x, a=attrs: apb(g, x, **a)), [gy, x]
    yield (
        "avg_pool2d_backward",
        "f16",
        (lambda g, x: apb(g, x, kernel_size=(2,))),
        [values((2, 4, 3, 2), dt.float16), x.astype(np.float16)],
    )
    ad, adb = REGISTRY["adaptive_avg_pool2d"], REGISTRY["adaptive_avg_pool2d_backward"]
    yield "adaptive_avg_pool2d", "(4, 3)", (lambda x: ad(x, output_size=(4, 3))), [x]
    fn = lambda g, x: adb(g, x, output_size=(4, 3))
    yield "adaptive_avg_pool2d_backward", "(4, 3)", fn, [values((2, 4, 4, 3), dt.float32), x]


def conv3d_cases():
    """vol2col / col2vol and the column matmuls (nbflow/kernels/cuda/conv3d.py)."""
    x = values((2, 2, 3, 4, 3), dt.float32)
    w = values((4, 1, 2, 2, 2), dt.float32)  # groups=2: one input channel per group
    b = values((4,), dt.float32)
    conv, ig = REGISTRY["conv3d"], REGISTRY["conv3d_input_grad"]
    wg = REGISTRY["conv3d_weight_grad"]
    geometries = [
        {"groups": 2},
        {"stride": (1, 2, 1), "padding": (1, 0, 1), "dilation": (1, 1, 2), "groups": 2},
    ]
    for geo in geometries:
        yield "conv3d", f"bias {geo}", (lambda x, w, b, g=geo: conv(x, w, b, **g)), [x, w, b]
        gy = values(conv(nb.tensor(x), nb.tensor(w), **geo).shape, dt.float32)
        yield "conv3d_input_grad", str(geo), (lambda g, w, x, k=geo: ig(g, w, x, **k)), [gy, w, x]
        yield "conv3d_weight_grad", str(geo), (lambda x, g, w, k=geo: wg(x, g, w, **k)), [x, gy, w]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    yield "conv3d", "f64 no bias", (lambda x, w: conv(x, w, groups=2)), [x64, w64]
    x16, w16 = x.astype(np.float16), w.astype(np.float16)
    yield "conv3d", "f16", (lambda x, w: conv(x, w, groups=2)), [x16, w16]
    xi, wi = values(x.shape, dt.int64), values(w.shape, dt.int64)
    yield "conv3d", "int64", (lambda x, w: conv(x, w, groups=2)), [xi, wi]
    gy = values(conv(nb.tensor(x), nb.tensor(w), groups=2).shape, dt.float16)
    fn = lambda g, w, x: ig(g, w, x, groups=2)  # (folds through a float32 atomic target)
    yield "conv3d_input_grad", "f16", fn, [gy, w16, x16]

    def backward(x, w, b):
        for t in (x, w, b):
            t.requires_grad_(True)
        loss = nb.sum(nb.tanh(nb.conv3d(x, w, b, padding="same")))
        loss.backward()
        return [loss, x.grad, w.grad, b.grad]

    w1 = values((3, 2, 3, 1, 2), dt.float32)
    yield "conv3d", "F.conv3d 'same', backward", backward, [x, w1, values((3,), dt.float32)]
    yield "conv3d", "jit, backward", _jit_grads(_jit_conv3d), [x[:1], w1]


@nb.jit
def _jit_conv3d(x, w):
    return nb.sum(nb.conv3d(x, w, stride=(1, 2, 1), padding=1) ** 2)


@nb.jit
def _jit_ctc(lp, *integers):
    return nb.nn.functional.ctc_loss(lp, *integers, reduction="sum", zero_infinity=True)


def _jit_grads(fn):
    """A case running jitted `fn` (the Executor) and the gradient of its first input."""

    def case(first, *rest):
        first.requires_grad_(True)
        out = fn(first, *rest)
        out.backward()
        return [out, first.grad]

    return case


def ctc_inputs(dtype, blank=0, padded=True):
    """(log_probs (T, N, C), targets, input_lengths, target_lengths): samples that fit, one too
    short for its target (an infinite loss), an empty target, repeated labels (the skip rule);
    the extended targets are wider than the simulator's 8 threads."""
    steps, batch, classes, longest = (10, 4, 4, 5) if not LARGE else (40, 4 * N, 6, 20)
    lp = RNG.standard_normal((steps, batch, classes))
    lp -= np.log(np.exp(lp).sum(axis=2, keepdims=True))
    labels = np.array([c for c in range(classes) if c != blank])
    targets = labels[RNG.integers(0, len(labels), (batch, longest))]
    targets[0, 1] = targets[0, 0]  # a repeat: the path needs a blank between them
    target_lengths = RNG.integers(0, longest + 1, batch)
    target_lengths[:4] = (longest, 2, 0, 3)
    input_lengths = RNG.integers(steps // 2, steps + 1, batch)
    input_lengths[:4] = (steps, 1, steps // 2, steps - 3)  # sample 1: two labels in one frame
    if not padded:
        targets = np.concatenate([t[:n] for t, n in zip(targets, target_lengths)])
    return [lp.astype(dtype), targets, input_lengths, target_lengths]


def ctc_cases():
    """One thread block per sample, threads over the extended target (kernels/cuda/ctc.py)."""
    loss, grad = REGISTRY["ctc_loss"], REGISTRY["ctc_loss_grad"]
    cases = [
        ("f32 padded", dt.float32, 0, True, False),
        ("f64 concatenated, blank 3, zero_infinity", dt.float64, 3, False, True),
        ("f16 padded", dt.float16, 0, True, False),
    ]
    for what, d, blank, padded, zero in cases:
        args = ctc_inputs(d, blank, padded)
        fn = lambda *a, k=blank, z=zero: loss(*a, blank=k, zero_infinity=z)
        yield "ctc_loss", what, fn, args
        if d == dt.float16:
            continue
        g = values((args[0].shape[1],), d)
        fn = lambda *a, k=blank, z=zero: grad(*a, blank=k, zero_infinity=z)
        yield "ctc_loss_grad", what, fn, [g, *args]
    short = ctc_inputs(dt.float32)
    short[2][2] = 0  # a sample with no frame (and an empty target): loss 0, gradient 0
    yield "ctc_loss", "a sample with no frame", loss, short
    g = values((short[0].shape[1],), dt.float32)
    yield "ctc_loss_grad", "a sample with no frame", grad, [g, *short]

    def mean_backward(lp, targets, input_lengths, target_lengths):
        lp.requires_grad_(True)
        out = nb.nn.functional.ctc_loss(lp, targets, input_lengths, target_lengths, 0, "mean", True)
        out.backward()
        return [out, lp.grad]

    yield "ctc_loss", "jit, backward", _jit_grads(_jit_ctc), ctc_inputs(dt.float32)
    yield (
        "ctc_loss",
        "F.ctc_loss mean, zero_infinity: backward",
        mean_backward,
        ctc_inputs(dt.float64),
    )


def loss_cases():
    logits3 = values((2 * N, 4, 3), dt.float32)  # (N, C, d1): the class axis is 1
    labels = RNG.integers(0, 4, (2 * N, 3))
    labels[0, 0] = -100  # ignored
    ce = nb.ops.cross_entropy
    for reduction in ("mean", "sum", "none"):
        for smoothing in (0.0, 0.1):
            fn = lambda x, t, r=reduction, s=smoothing: ce(x, t, reduction=r, label_smoothing=s)
            yield "cross_entropy", f"{reduction} smoothing={smoothing}", fn, [logits3, labels]

            def grad(g, x, t, r=reduction, s=smoothing):
                return REGISTRY["cross_entropy_grad"](g, x, t, reduction=r, label_smoothing=s)

            g = values(labels.shape if reduction == "none" else (), dt.float32)
            yield (
                "cross_entropy_grad",
                f"{reduction} smoothing={smoothing}",
                grad,
                [g, logits3, labels],
            )
    for name in ("mse_loss", "l1_loss"):
        op = REGISTRY[name]
        for reduction in ("mean", "sum", "none"):
            fn = lambda x, y, op=op, r=reduction: op(x, y, reduction=r)
            pair = [values((2 * N, 3), dt.float32), values((2 * N, 3), dt.float32)]
            yield name, reduction, fn, pair
        yield name, "f16", op, [values((4,), dt.float16), values((4,), dt.float16)]
    bce = REGISTRY["binary_cross_entropy_with_logits"]
    x, y = values((2 * N, 3), dt.float32), values((2 * N, 3), dt.float32, positive=True) / 2
    w, pw = values((3,), dt.float32), values((2 * N, 1), dt.float32, positive=True)
    for reduction in ("mean", "sum", "none"):
        fn = lambda x, y, w, pw, r=reduction: bce(x, y, w, pw, reduction=r)
        yield "binary_cross_entropy_with_logits", reduction, fn, [x, y, w, pw]
    fn = lambda x, y: bce(x, y, 1.0, 2.0)
    yield "binary_cross_entropy_with_logits", "scalars", fn, [x, y]
    nll = REGISTRY["nll_loss"]
    logp = values((2 * N, 4, 3), dt.float32)
    for reduction in ("mean", "sum", "none"):
        fn = lambda x, t, w, r=reduction: nll(x, t, w, reduction=r)
        yield "nll_loss", reduction, fn, [logp, labels, values((4,), dt.float32, positive=True)]
    yield "nll_loss", "no weight", (lambda x, t: nll(x, t, 1.0)), [logp, labels]
    oh = REGISTRY["one_hot"]
    yield "one_hot", "axis=-1", (lambda t: oh(t, num_classes=4)), [RNG.integers(0, 4, (2 * N, 3))]
    fn = lambda t: oh(t, num_classes=4, axis=1, ignore_index=-100, dtype="float32")
    yield "one_hot", "axis=1 ignore", fn, [labels]
    logits2 = values((3 * N, 5), dt.float64)
    labels2 = RNG.integers(0, 5, 3 * N).astype(np.int32)
    yield "cross_entropy", "f64 2-D", ce, [logits2, labels2]
    yield "cross_entropy", "f16 1-D", ce, [values((5,), dt.float16), np.array(2)]


def optimizer_cases():
    p, g = values((3 * N, 4), dt.float32), values((3 * N, 4), dt.float32)
    sq = values((3 * N, 4), dt.float32, positive=True)
    sgd = REGISTRY["sgd_update_"]
    for momentum, nesterov in ((0.0, False), (0.9, False), (0.9, True)):
        fn = lambda p, g, v, m=momentum, n=nesterov: sgd(
            p, g, v, lr=0.1, momentum=m, nesterov=n, weight_decay=0.01
        )
        yield "sgd_update_", f"momentum={momentum} nesterov={nesterov}", fn, [p, g, sq]
    adam = REGISTRY["adam_update_"]
    for amsgrad, decoupled in ((False, False), (True, True)):

        def step(p, g, m, v, vmax, t, a=amsgrad, d=decoupled):
            return adam(
                p, g, m, v, vmax, t, lr=0.01, weight_decay=0.1, amsgrad=a,
                decoupled_weight_decay=d,
            )  # fmt: skip

        args = [p, g, g * 0.1, sq, sq * 1.5, np.array(3)]
        yield "adam_update_", f"amsgrad={amsgrad} decoupled={decoupled}", step, args
    adagrad = REGISTRY["adagrad_update_"]
    fn = lambda p, g, s, t: adagrad(
        p, g, s, t, lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.2
    )
    yield "adagrad_update_", "lr_decay weight_decay", fn, [p, g, sq, np.array(4)]
    rms = REGISTRY["rmsprop_update_"]
    for centered, momentum in ((False, 0.0), (True, 0.9)):
        fn = lambda p, g, s, a, b, c=centered, m=momentum: rms(
            p, g, s, a, b, lr=0.01, centered=c, momentum=m, weight_decay=0.1
        )
        yield "rmsprop_update_", f"centered={centered}", fn, [p, g, sq, g * 0.1, g * 0.5]


def gradient_cases():
    """An MLP loss and its gradients: the tape runs on the GPU like on the CPU."""

    def mlp(x, w1, w2, labels):
        tensors = [w1, w2]
        for t in tensors:
            t.requires_grad_(True)
        h = nb.relu(nb.matmul(x, w1))
        loss = nb.mean(nb.log_softmax(nb.matmul(h, w2), axis=1) * labels) + nb.sum(nb.tanh(h))
        loss.backward()
        return [loss] + [t.grad for t in tensors]

    labels = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 4 * N)]
    arrays = [values((4 * N, 5), dt.float32), values((5, 6), dt.float32)]
    arrays += [values((6, 3), dt.float32), labels]
    yield "backward", "mlp f32", mlp, arrays


def _stale_view(h):
    row = h[1]  # taken before the write: re-taken when read
    h.mul_(3.0)
    return row * row


def _write_through_a_slice(h):
    h[1].mul_(3.0)
    return h * h


def _write_through_a_transposed_slice(h):
    h.T[1:].mul_(h[0:1, :3] * 0.5 + 1.0)  # a view of a view, the factor read from h first
    return h * h


def _sibling_views(h):
    top, low = h[0:2], h[1:3]
    top.mul_(2.0)  # low overlaps top's row 1
    return low * low


def _write_through_a_reshape_view(h):
    h.reshape(-1)[3:6].mul_(h.reshape(-1)[0:3])
    return h * h


def _copy_into_a_buffer(h):
    buf = nb.zeros(3, 4, device=h.device)
    buf[1].copy_(h[0] * 2.0)
    return buf * h


def view_write_cases():
    """In-place writes through views under autograd (nbflow/core/views.py): the gradients on the
    GPU follow the writes as on the CPU (whose gradients tests/test_views_autograd.py checks
    against closed forms)."""
    cases = (_stale_view, _write_through_a_slice, _write_through_a_transposed_slice)
    cases += (_sibling_views, _write_through_a_reshape_view, _copy_into_a_buffer)
    for case in cases:

        def fn(a, case=case):
            a.requires_grad_(True)
            out = case(a * 1.0)
            (g,) = nb.grad(nb.sum(out * out), [a])
            return [out, g]

        yield (
            "view writes",
            case.__name__.strip("_").replace("_", " "),
            fn,
            [values((3, 4), dt.float64)],
        )


def _saved_target(x, y):
    x, y = x.requires_grad_(), y.requires_grad_()
    h = x * 1.0
    h.mul_(y)  # mul_'s rule reads the target's old value: a copy of it is saved first
    return [h, *nb.grad(nb.sum(h * h), [x, y])]


def dispatch_cases():
    """What the eager sequence converts on the way to a kernel (tensor.py's EagerTrace.apply,
    which runs GPU plans too): an input cast to the promoted dtype, weak scalars, an in-place
    write with a cast input, a target saved for the gradient."""
    f32, f64 = values((2, 3), dt.float32), values((2, 3), dt.float64)
    yield "add", "f32 + f64 (a cast)", (lambda x, y: x + y), [f32, f64]
    yield "mul", "i64 * 0.5 (a float scalar)", (lambda x: x * 0.5), [values((2, 3), dt.int64)]
    yield "add", "f16 + 1.5", (lambda x: x + 1.5), [f32.astype(np.float16)]
    yield "add_", "f64 += f32 (a cast input)", (lambda x, y: x.add_(y)), [f64, f32]
    yield "mul_", "a target saved for the gradient", _saved_target, [f32, f32 * 2]


# ---------------------------------------------------------------- GPU-path fixes, end to end


def _masked_write(x):
    y = x.clone()
    y[x > 0] = 0.0  # a mask on the tensor's device: its true positions come to the host
    return y


@nb.jit
def _jit_cond(x):
    return nb.cond(x.sum() > 0, lambda a: a, lambda a: a * 2.0, [x])  # the input returned


@nb.jit
def _jit_while(x):  # the condition fails at once: zero iterations return the input
    return nb.while_loop(lambda a: a.sum() > 100.0, lambda a: a * 2.0, [x])[0]


def _embedding_bag(idx, mode="mean", offsets=None):
    from nbflow import nn

    nb.manual_seed(0)  # the weight is made on the CPU, then moved
    return nn.EmbeddingBag(5, 2, mode=mode).to(idx.device)(idx, offsets)


def _packed_lstm(a, b):
    from nbflow import nn
    from nbflow.nn.utils import rnn

    nb.manual_seed(0)
    layer = nn.LSTM(2, 3).to(a.device)
    out, (h, c) = layer(rnn.pack_sequence([b, a], enforce_sorted=False))
    return [*rnn.pad_packed_sequence(out), h, c]


def _sequences(a, b):
    from nbflow.nn.utils import rnn

    packed = rnn.pack_padded_sequence(rnn.pad_sequence([a, b]), [3, 1])
    padded, lengths = rnn.pad_packed_sequence(packed, padding_value=-1.0)
    return [rnn.pad_sequence([b, a], True, 9.0, "left"), packed.data, packed.batch_sizes, padded]


def _spectral_norm(x):
    from nbflow import nn
    from nbflow.nn.utils import parametrizations

    # one power iteration at registration, not 15 (each costs ~0.4 s in the simulator)
    power_method = parametrizations._SpectralNorm._power_method
    parametrizations._SpectralNorm._power_method = lambda self, mat, n: power_method(self, mat, 1)
    try:
        nb.manual_seed(0)
        layer = parametrizations.spectral_norm(nn.Linear(2, 3).to(x.device))
    finally:
        parametrizations._SpectralNorm._power_method = power_method
    return [layer(x), layer.parametrizations.weight[0]._u]


def _concat_backward(p, q):
    p, q = p.requires_grad_(), q.requires_grad_()
    return nb.grad(nb.sum(nb.cat([p, q], -1) ** 2), [p, q])  # split_like with axis -1


def device_fix_cases():
    import nbflow.distributions as D
    from nbflow import func
    from nbflow.autograd.functional import hessian, jacobian

    x, v = np.array([[1.0, -2.0], [3.0, -4.0]], np.float32), np.array([0.5, 1.0], np.float32)
    yield "mask", "getitem", (lambda x: x[x > 0]), [x]
    yield "mask", "setitem", _masked_write, [x]
    cond = nb.cond
    yield "cond", "eager", (lambda x: cond(x.sum() < 0, lambda a: a * 2, lambda a: -a, [x])), [x]
    loop = nb.while_loop
    yield "while_loop", "eager", (lambda v: loop(lambda a: a.sum() < 10, lambda a: a * 2, v)), [v]
    yield "cond", "jit, an input returned", _jit_cond, [v]
    yield "while_loop", "jit, zero iterations", _jit_while, [v]
    yield "jacobian", "tanh", (lambda v: jacobian(nb.tanh, v)), [v]
    yield "hessian", "sum tanh", (lambda v: hessian(lambda a: nb.sum(nb.tanh(a)), v)), [v]
    yield "func.jacrev", "sin", (lambda v: func.jacrev(nb.sin)(v)), [v]
    bags = np.array([[0, 1], [2, 3]], np.int64)
    yield "EmbeddingBag", "mean", _embedding_bag, [bags]
    fn = _embedding_bag
    yield "EmbeddingBag", "max, 1-D", (lambda i: fn(i.reshape(-1), "max", offsets=[0, 1])), [bags]
    seqs = [values((3, 2), dt.float32), values((1, 2), dt.float32)]
    yield "rnn utils", "pad, pack, pad_packed", _sequences, seqs
    yield "LSTM", "packed, unsorted", _packed_lstm, seqs
    yield "spectral_norm", "module on the device", _spectral_norm, [v]
    yield "Normal", "number scale", (lambda v: D.Normal(v, 1.0).log_prob(v)), [v]
    fn = lambda v: D.Normal(v, v).log_prob(np.zeros(2, np.float32))
    yield "Normal", "numpy value", fn, [v]
    fn = lambda v: D.Normal(v, 1.0).rsample(generator=nb.Generator(0))
    yield "Normal", "rsample", fn, [v]
    fn = lambda v: D.kl_divergence(D.Normal(v, 1.0), D.Normal(v * 2, 2.0))
    yield "kl_divergence", "number scales", fn, [v]
    yield "Gamma", "number rate", (lambda v: D.Gamma(v, 1.0).log_prob(v)), [v]
    yield "Categorical", "int value", (lambda v: D.Categorical(v).log_prob(1)), [v]
    yield "split_like", "axis=-1 (cat backward)", _concat_backward, [x[:, :1], x]
    rows = np.array([[-np.inf, -np.inf], [1.0, 2.0]], np.float32)
    for name in ("softmax", "log_softmax"):
        op = REGISTRY[name]
        yield name, "an all -inf row", (lambda x, op=op: op(x, axis=1)), [rows]
        yield name, "an all -inf row f16", (lambda x, op=op: op(x, axis=1)), [rows.astype("f2")]


def build_mlp(sizes=(12, 16, 16, 4), lr=0.1):
    """A static-graph MLP training step: forward, append_backward, in-place SGD updates."""
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        h = nb.static.data("x", [-1, sizes[0]])
        y = nb.static.data("y", [-1], dtype="int64")
        for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            w = nb.static.create_parameter(f"w{i}", [n_in, n_out])
            b = nb.static.create_parameter(f"b{i}", [n_out], initializer=("constant", 0.0))
            h = h @ w + b
            if i < len(sizes) - 2:
                h = nb.relu(h)
        loss = nb.cross_entropy(h, y)
        for p, g in nb.append_backward(loss):
            nb.sub_(p, g * lr)
    targets = [loss] + [f"{k}{i}" for i in range(len(sizes) - 1) for k in "wb"]
    return main, startup, targets


def train_losses(device, feed, steps=4):
    main, startup, targets = build_mlp()
    exe, scope = nb.Executor(device), nb.Scope()
    nb.manual_seed(0)
    exe.run(startup, scope=scope)
    losses = [float(exe.run(main, feed, targets, scope=scope)[0]) for _ in range(steps)]
    return losses, scope


def eager_training(device, steps=3):
    """nn layers moved with Module.to, Adam, cross-entropy: the losses of a few steps."""
    from nbflow import nn, optim

    nb.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.LayerNorm(8), nn.Linear(8, 3))
    model.to(device)
    opt = optim.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    x = nb.tensor(rng.standard_normal((16, 6)), dtype="float32", device=device)
    y = nb.tensor(rng.integers(0, 3, 16), device=device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nb.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {p.device for p in model.parameters()}


def state_round_trip():
    """A GPU model's state saved (host copies) and loaded into another GPU model."""
    import os
    import tempfile

    from nbflow import nn

    nb.manual_seed(0)
    a = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).to("cuda")
    nb.manual_seed(1)
    b = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).to("cuda")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "state.nbf")
        nb.save_state(a.state_dict(), path)
        b.load_state_dict(nb.load_state(path))
    same = all(
        np.array_equal(x.numpy(), y.numpy()) and y.device == "cuda:0"
        for x, y in zip(a.state_dict().values(), b.state_dict().values())
    )
    return same


def jit_training(name, device, jit=True, steps=3):
    """A linear model trained by optimizer `name`, eager or by a jitted minimize(); then one
    eager step, which reads the state the program wrote (a scalar state stays on the CPU)."""
    from nbflow import optim

    rng = np.random.default_rng(1)
    x, y, w, b = (rng.standard_normal(s) for s in ((6, 4), (6, 3), (3, 4), (3,)))
    x, y = nb.tensor(x, device=device), nb.tensor(y, device=device)
    w = nb.tensor(w, device=device, requires_grad=True)
    b = nb.tensor(b, device=device, requires_grad=True)
    opt = getattr(optim, name)([w, b], lr=0.05)

    def loss():
        return ((x @ w.T + b - y) ** 2).mean()

    @nb.jit
    def train():
        opt.minimize(loss())

    for _ in range(steps):
        if jit:
            with nb.no_grad():
                train()
        else:
            opt.zero_grad()
            loss().backward()
            opt.step()
    opt.zero_grad()
    loss().backward()
    opt.step()
    state = {k: np.asarray(v.numpy(), float) for k, v in opt.state[0].items()}
    return w.numpy(), state


def graph_checks():
    """Graph mode on the GPU: an Executor training loop and @jit, against the CPU."""
    feed = {"x": values((8 * N, 12), dt.float32), "y": RNG.integers(0, 4, 8 * N)}
    cpu, _ = train_losses("cpu", feed)
    gpu, scope = train_losses("cuda", feed)
    ok = np.allclose(cpu, gpu, rtol=1e-4) and gpu[-1] < gpu[0]
    yield "executor training", ok, f"cpu {cpu} cuda {gpu}"
    on_device = all(t.device == "cuda:0" for t in scope.values())
    yield "persistables stay on the device", on_device, str({k: t.device for k, t in scope.items()})

    @nb.jit
    def f(x, w):
        return nb.sum(nb.tanh(x @ w), axis=1)

    x, w = values((4, 12), dt.float32), values((12, 3), dt.float32)
    results = {}
    for device in ("cpu", "cuda"):
        wt = nb.tensor(w, device=device, requires_grad=True)
        out = f(nb.tensor(x, device=device), wt)
        nb.sum(out * out).backward()
        results[device] = (out.numpy(), wt.grad.numpy(), out.device, wt.grad.device)
    same = all(
        np.allclose(a, b, rtol=1e-5, atol=1e-5)
        for a, b in zip(results["cpu"][:2], results["cuda"][:2])
    )
    yield "jit on the GPU", same and results["cuda"][2:] == ("cuda:0", "cuda:0"), ""
    yield "state_dict save/load on the GPU", state_round_trip(), ""
    for name in ("SGD", "Adamax", "ASGD"):  # SGD: the gradient of w.T is a transposed view
        want, want_state = jit_training(name, "cpu", jit=False)
        got, state = jit_training(name, "cuda")
        ok = np.allclose(got, want, rtol=1e-8) and state.keys() == want_state.keys()
        ok = ok and all(np.allclose(state[k], want_state[k], rtol=1e-8) for k in state)
        yield f"{name} minimize under jit on the GPU (state back in the optimizer)", ok, ""
    cpu, _ = eager_training("cpu")
    gpu, where = eager_training("cuda")
    ok = np.allclose(cpu, gpu, rtol=1e-4) and where == {"cuda:0"} and gpu[-1] < gpu[0]
    yield "eager training (Module.to, Adam)", ok, f"cpu {cpu} cuda {gpu} {where}"
    try:
        runs = [control_flow_program(device) for device in ("cpu", "cuda")]
        ok = all(np.allclose(a, b) for a, b in zip(*runs)) and len(runs[1]) == 4
        yield "cond and while_loop in an Executor on the GPU", ok, str(runs)
    except Exception as e:  # reported, as the others
        yield "cond and while_loop in an Executor on the GPU", False, f"{type(e).__name__}: {e}"


def control_flow_program(device):
    """A cond and a while_loop on a fed predicate, both branches; each runs zero times once
    (the loop var returned as it came in)."""
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [2])
        flag = nb.static.data("flag", [], dtype="bool")
        y = nb.cond(flag, lambda a: a * 2.0, lambda a: a, [x])
        z = nb.while_loop(lambda a: nb.sum(a) < 5.0, lambda a: a * 2.0, [x])[0]
    exe, x = nb.Executor(device), np.array([0.5, 1.0], np.float32)
    out = []
    for flag, scale in ((True, 1.0), (False, 10.0)):
        out += exe.run(main, {"x": x * scale, "flag": np.bool_(flag)}, [y, z])
    return [np.asarray(t) for t in out]


def device_checks():
    """Placement semantics; each returns (name, ok, detail)."""
    x = nb.tensor([1.0, 2.0], device="cuda")
    yield "device name", x.device == "cuda:0" and x.cpu().device == "cpu", x.device
    yield (
        "cuda array interface",
        hasattr(x.data, "__cuda_array_interface__") or hasattr(x.data, "__cuda_ndarray__"),
        type(x.data).__name__,
    )
    try:
        x + nb.tensor([1.0, 2.0])
        yield "mixed devices", False, "no error"
    except nb.NbflowError as e:
        yield "mixed devices", "cuda:0" in str(e) and "cpu" in str(e), str(e)
    c = nb.tensor([1 + 2j, 3j]).cuda()  # complex tensors move, and their ops say CPU only
    try:
        c * c
        yield "complex refused", False, "no error"
    except nb.errors.KernelNotFoundError as e:
        yield "complex refused", "CPU only" in str(e), str(e)
    yield "complex moves back", np.array_equal(c.cpu().numpy(), [1 + 2j, 3j]), ""
    y = nb.tensor([1.0, 2.0]).cuda()
    yield "cuda()", np.array_equal(y.numpy(), [1.0, 2.0]) and y.device == "cuda:0", ""
    yield "to() same device", y.to("cuda") is y, ""
    z = nb.zeros(2, 3, device="cuda")
    yield "zeros(device=)", z.device == "cuda:0" and z.numpy().sum() == 0, z.device
    r = nb.ops.arange(5, device="cuda")
    yield "arange(device=)", r.device == "cuda:0" and r.tolist() == [0, 1, 2, 3, 4], r.device
    try:
        x[::-1]
        yield "negative slice step", False, "no error"
    except nb.UnsupportedError as e:
        yield "negative slice step", "flip" in str(e), str(e)
    try:
        nb.broadcast_to(x, (3, 2)).add_(1.0)  # its threads would race on one element
        yield "write into a broadcast view", False, "no error"
    except nb.UnsupportedError as e:
        yield "write into a broadcast view", "read-only" in str(e) and x.tolist() == [1, 2], str(e)
    leaf = nb.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda", requires_grad=True)
    try:
        leaf[1].mul_(2.0)
        yield "write through a view of a leaf", False, "no error"
    except nb.GradientError as e:
        yield "write through a view of a leaf", "leaf" in str(e), str(e)
    try:
        nb.split(leaf * 1.0, 2, axis=1)[0].mul_(2.0)
        yield "write through a split view", False, "no error"
    except nb.UnsupportedError as e:
        yield "write through a split view", "split view" in str(e), str(e)
    a = nb.tensor([[0.5, -1.0], [2.0, 0.1]], requires_grad=True)
    (g,) = nb.grad(nb.sum(nb.square((a * 2.0).cuda())), [a])  # the move is on the tape
    yield "gradient through a move", g.device == "cpu" and np.allclose(g.numpy(), 8 * a.numpy()), ""
    from nbflow import nn

    cpu_model, gpu_model = nn.Linear(3, 2), nn.Linear(3, 2).to("cuda")
    cpu_model.load_state_dict(gpu_model.state_dict())  # copy_ from the GPU into CPU tensors
    same = np.array_equal(cpu_model.weight.numpy(), gpu_model.weight.numpy())
    yield "a GPU state_dict loaded into a CPU model", same and cpu_model.weight.device == "cpu", ""
    src = nb.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    target = nb.zeros(2) * 1.0
    target.copy_(src * 3.0)
    (g,) = nb.grad(nb.sum(target * target), [src])
    yield "copy_ into a CPU tensor differentiates", np.allclose(g.numpy(), [18.0, 36.0]), ""
    y = nb.zeros(2, 2, device="cuda")
    y[0] = nb.tensor([7.0, 8.0])  # a CPU value written into a GPU tensor
    y[1, 1] = nb.tensor(2.0)
    yield "CPU values assigned into a GPU tensor", y.tolist() == [[7, 8], [0, 2]], str(y.tolist())
    data = nb.data.TensorDataset(nb.ones(4, 2, device="cuda"), nb.tensor([0, 1, 2, 3]))
    (xb, yb), *_ = nb.data.DataLoader(data, batch_size=2)
    where = (data[0][0].device, xb.device, yb.device)
    yield (
        "a dataset of GPU tensors gives GPU batches",
        where == ("cuda:0",) * 2 + ("cpu",),
        str(where),
    )
    try:
        nb.jit(lambda p, q: (p * q).sum())(nb.ones(2), x)
        yield "jit with arguments on two devices", False, "no error"
    except nb.DeviceError as e:
        yield "jit with arguments on two devices", "cpu and cuda:0" in str(e), str(e)
    b = nb.tensor([[0.5, -1.0], [2.0, 0.1]], device="cuda", requires_grad=True)
    (g,) = nb.grad(nb.sum(nb.square(nb.tanh(b).cpu())), [b], create_graph=True)
    (gg,) = nb.grad(nb.sum(g), [b])  # through the moves back and forth again
    t = np.tanh(b.numpy())
    ok = np.allclose(g.numpy(), 2 * t * (1 - t * t)) and g.device == gg.device == "cuda:0"
    yield (
        "second order through a move",
        ok and np.allclose(gg.numpy(), (2 - 6 * t * t) * (1 - t * t)),
        "",
    )
    with nb.no_grad():
        moved = (a * 1.0).cuda()
    yield "a move without grad", not moved.requires_grad and moved._node is None, ""
    try:
        nb.tensor([1.0], device="cuda:1")
        yield "one GPU", False, "no error"
    except nb.UnsupportedError as e:
        yield "one GPU", "cuda:1" in str(e), str(e)
    try:
        nb.tensor([1.0], device="gpu")
        yield "bad device name", False, "no error"
    except ValueError as e:
        yield "bad device name", "gpu" in str(e), str(e)
    errors = []
    for device in ("cpu", "cuda"):
        m = nb.tensor([[1.0, 2.0]], device=device)
        try:
            m[nb.tensor([True, False, True], device=device)]
            errors.append("no error")
        except nb.OutOfRangeError as e:
            errors.append(str(e).split(" (defined at")[0])
    yield "a wrong-shape GPU mask", errors[0] == errors[1] != "no error", str(errors)
    errors = []
    for device in ("cpu", "cuda"):
        try:
            nb.checked_range(nb.tensor([0, 5], device=device), low=0, high=3, what="i")
            errors.append("no error")
        except nb.OutOfRangeError as e:
            errors.append(str(e).split(" (defined at")[0])
    yield "checked_range out of range", errors[0] == errors[1] != "no error", str(errors)


def main():
    covered, results = set(), []
    start = time.time()
    families = (elementwise_cases, structured_cases, index_cases, conv_cases, loss_cases)
    families += (ctc_cases,)
    families += (optimizer_cases, gradient_cases, view_write_cases, dispatch_cases)
    families += (device_fix_cases,)
    for family in families:
        for name, what, fn, arrays in family():
            tol = max(TOLERANCE.get(np.dtype(a.dtype), 0) for a in arrays) or 1e-5
            tol = 5e-2 if "f16" in what or "float16" in what else (1e-3 if LARGE else tol)
            try:
                ok, detail = run_case(fn, arrays, tol)
            except Exception as e:  # reported, so one failure shows all the others too
                ok, detail = False, f"{type(e).__name__}: {e}"
            if ok is None:
                continue
            covered.add(name)
            results.append({"op": name, "case": what, "ok": bool(ok), "detail": detail[:300]})
    for name, ok, detail in list(device_checks()) + list(graph_checks()):
        results.append({"op": "device", "case": name, "ok": bool(ok), "detail": detail})
    print(
        json.dumps({"results": results, "covered": sorted(covered), "seconds": time.time() - start})
    )


if __name__ == "__main__":
    main()
