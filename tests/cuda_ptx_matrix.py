"""Compile every CUDA kernel of nbflow to PTX for every dtype it takes, with no GPU.

`cuda.compile_ptx` runs numba-cuda's real typing and lowering and NVVM (from the
`numba-cuda[cu13]` wheels), so it catches what the simulator accepts but the compiler rejects
(float16 atomics, numpy functions CUDA lacks). Run by tests/test_ptx.py in a subprocess: a
kernel calling a device function asks the driver for the current device's compute capability,
and this script (only) answers that question itself, for sm_90, because no driver is here.
Prints one JSON line: {"compiled": n, "failures": [...]} or {"skip": reason}.
"""

import json
import sys
import time

import numpy as np


def patch_current_device():
    """Kernels that call device functions look up the current device's compute capability;
    without a driver, answer for an H100/H200 (sm_90)."""
    import numba.cuda.dispatcher as dispatcher

    class Device:
        compute_capability = (9, 0)

    dispatcher.get_current_device = lambda: Device()


def main():
    from numba import cuda, typeof, types
    from numba.np.numpy_support import from_dtype

    patch_current_device()
    try:
        cuda.compile_ptx(lambda a: None, (types.float32[::1],), cc=(9, 0))
    except Exception as e:  # no NVVM: numba-cuda[cu13] is not installed
        print(json.dumps({"skip": f"cuda.compile_ptx does not work here: {e}"[:500]}))
        return

    import nbflow as nb
    from nbflow import dtypes as dt
    from nbflow.core import REGISTRY, Spec
    from nbflow.core.errors import DTypeError
    from nbflow.kernels.cuda import conv3d as cuda_conv3d
    from nbflow.kernels.cuda import ctc as cuda_ctc
    from nbflow.kernels.cuda import skeletons as cuda_impl
    from nbflow.kernels.cuda.loader import _param
    from nbflow.ops import ctc

    compiled, failures = 0, []
    start = time.time()

    def compile_one(what, pyfunc, argtypes):
        nonlocal compiled
        try:
            cuda.compile_ptx(pyfunc, tuple(argtypes), cc=(9, 0))
            compiled += 1
        except Exception as e:  # every compiler error is a finding
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            failures.append(f"{what}: {type(e).__name__}: {' | '.join(lines[:3])[:300]}")

    def array(d, ndim=1, layout="C"):
        return types.Array(from_dtype(np.dtype(d)), ndim, layout)

    attrs = {"clip": {"min": -0.5, "max": 0.5}, "leaky_relu": {"negative_slope": 0.1}}
    attrs["nan_to_num"] = {"nan": 0.0, "posinf": 1e4, "neginf": -1e4}
    for name in sorted(nb.ops.BUILTIN):
        op = REGISTRY[name]
        gpu = op.kernels.get("cuda")
        if not hasattr(op, "scalar_body") or gpu is None or hasattr(gpu, "cuda_unsupported"):
            continue
        mod = gpu.module()
        for d in (d for d in op.dtypes if d.kind != "c"):  # (complex: CPU only so far)
            outs = [dt.as_dtype(o) for o in dt.ALL] if name == "cast" else [None]
            for out in outs:
                specs = [Spec((4,), d)] * len(op.inputs)
                kw = op.check_attrs({"dtype": out} if name == "cast" else attrs.get(name, {}))
                out_dtype = op.infer(specs, kw)[0].dtype
                try:
                    params = [typeof(_param(kw[p], d)) for p in gpu.params]
                except DTypeError:  # (an attribute the dtype cannot hold: the op refuses it)
                    continue
                ins = [array(d)] * len(op.inputs)
                what = f"{name} {d}" + (f"->{out_dtype}" if name == "cast" else "")
                flat, strided = (mod.flat, mod.strided)
                if out_dtype == dt.bool_:  # the launcher's choice for bool outputs
                    flat, strided = (mod.flat_bool, mod.strided_bool)
                compile_one(what + " flat", flat.py_func, ins + [array(out_dtype)] + params)
                nd = [array(d, 6, "A")] * len(op.inputs) + [array(out_dtype, 6, "A")]
                compile_one(what + " strided", strided.py_func, nd + params)

    # the structured skeletons, for each accumulator and storage dtype they are used with
    for d in (dt.float16, dt.float32, dt.float64, dt.int32, dt.int64, dt.bool_):
        compile_one(f"copy {d}", cuda_impl._copy6.py_func, [array(d, 6, "A"), array(d, 6, "A")])
        scalar = from_dtype(d)
        compile_one(f"fill {d}", cuda_impl._fill.py_func, [array(d), scalar])
        for kind in ("sum", "mean", "prod", "max", "min", "all", "any"):
            acc = cuda_impl._acc_dtype(d)
            if kind in ("max", "min", "all", "any") and np.dtype(acc).kind != "f":
                acc = np.float64
            kernel = cuda_impl._row_kernel(kind, acc)
            out = d if kind not in ("all", "any") else dt.bool_
            args = [array(d, 2), array(out), types.float64]
            compile_one(f"reduce {kind} {d}", kernel.py_func, args)
    for d in (dt.float16, dt.float32, dt.float64):
        acc = cuda_impl._acc_dtype(d)
        for mode in (0, 1, 2):
            kernel = cuda_impl._softmax_kernel(acc, mode)
            compile_one(f"softmax mode {mode} {d}", kernel.py_func, [array(d, 2), array(d, 2)])
    for d in (dt.float16, dt.float32, dt.float64, dt.int32, dt.int64):
        kernel = cuda_impl._matmul_kernel(cuda_impl._acc_dtype(d))
        args = [array(d, 3, "A"), array(d, 3, "A"), array(d, 3)]
        compile_one(f"matmul {d}", kernel.py_func, args)
    loss_rows, grad_rows = cuda_impl._ce_kernels()
    for d in (dt.float16, dt.float32, dt.float64):
        for labels in (dt.int32, dt.int64):
            f64 = types.float64
            args = [array(d, 2), array(labels), types.int64, f64, array(dt.float64)]
            compile_one(f"cross_entropy rows {d} {labels}", loss_rows.py_func, args)
            args = [array(d, 2), array(labels), array(dt.float64), f64, types.int64, f64]
            compile_one(
                f"cross_entropy grad rows {d} {labels}", grad_rows.py_func, args + [array(d, 2)]
            )
        scalar = [array(dt.float64, 0), array(dt.float64, 0), array(d, 0)]
        compile_one(f"scale {d}", cuda_impl._mul_scalar.py_func, scalar)
    f64, b1 = types.float64, types.boolean
    for d in (dt.float16, dt.float32, dt.float64):
        arrays = [array(d)] * 5
        compile_one(f"sgd {d}", cuda_impl._sgd.py_func, arrays + [f64] * 4 + [b1])
        args = [array(d)] * 5 + [array(dt.int64)] + [array(d)] * 4 + [f64] * 5 + [b1] * 3
        compile_one(f"adam {d}", cuda_impl._adam.py_func, args)
        args = [array(d)] * 9 + [f64] * 5 + [b1] * 2
        compile_one(f"rmsprop {d}", cuda_impl._rmsprop.py_func, args)
    args = [array(dt.int64), array(dt.int64)]
    compile_one("adam step", cuda_impl._increment.py_func, args)
    i64 = types.int64
    for d in dt.ALL:
        args = [array(d, 2), array(dt.int64), b1]
        compile_one(f"argmax rows {d}", cuda_impl._argmax_rows.py_func, args)
    for d in (dt.float16, dt.float32, dt.float64):
        args = [array(d, 2), array(d), i64, b1]
        compile_one(f"var rows {d}", cuda_impl._var_rows.py_func, args)
        for name, body in cuda_impl.LOSS_BODIES.items():
            n_in = 4 if name == "bce" else 2
            mod = cuda_impl.elementwise_module(f"_loss_{name}", body, n_in, 0)
            for out in (d, dt.float64):
                args = [array(d)] * n_in + [array(out)]
                compile_one(f"loss {name} {d}->{out}", mod.flat.py_func, args)
                nd = [array(d, 6, "A")] * n_in + [array(out, 6, "A")]
                compile_one(f"loss {name} {d}->{out} strided", mod.strided.py_func, nd)
        for labels in (dt.int32, dt.int64):
            args = [array(d, 2), array(labels), array(d), i64, array(dt.float64), array(dt.float64)]
            compile_one(f"nll rows {d} {labels}", cuda_impl._nll.py_func, args)
        args = [array(dt.float64, 0), array(dt.float64, 0), array(d, 0)]
        compile_one(f"divide {d}", cuda_impl._divide.py_func, args)
    i64a = array(dt.int64)
    for d in dt.ALL:
        args = [array(d, 6, "A"), array(d, 6, "C"), i64a]
        compile_one(f"flip {d}", cuda_impl._flip6.py_func, args)
    for d in dt.ALL:
        compile_one(f"gather {d}", cuda_impl._gather3.py_func, [array(d, 3), i64a, array(d, 3)])
        for layout in ("C", "A"):
            args = [array(d, 3, layout), i64a, array(d, 3)]
            compile_one(f"put {d} {layout}", cuda_impl._put3.py_func, args)
        args = [array(d, 3), array(dt.int64, 3), array(d, 3)]
        compile_one(f"gather along {d}", cuda_impl._gather_axis3.py_func, args)
    for d in cuda_impl.ATOMIC_DTYPES:
        args = [array(d, 3), i64a, array(d, 3)]
        compile_one(f"add rows {np.dtype(d)}", cuda_impl._add3.py_func, args)
        args = [array(d, 3), array(dt.int64, 3), array(d, 3)]
        compile_one(f"scatter add {np.dtype(d)}", cuda_impl._scatter_axis3.py_func, args)
        args = [array(d, 2), i64a, array(d, 2), i64]
        compile_one(f"embedding backward {np.dtype(d)}", cuda_impl._add_rows_skip.py_func, args)
    for d in (dt.float16, dt.float32, dt.float64):
        geometry = [i64] * 10
        args = [array(d, 4), array(d, 3)] + geometry
        compile_one(f"im2col {d}", cuda_impl._im2col.py_func, args)
        f3 = [array(d, 3), array(d, 3)]
        compile_one(
            f"max pool {d}", cuda_impl._max_pool.py_func, f3 + [array(dt.int64, 3)] + [i64] * 8
        )
        compile_one(f"avg pool {d}", cuda_impl._avg_pool.py_func, f3 + [i64] * 6 + [b1, i64])
        compile_one(f"adaptive pool {d}", cuda_impl._adaptive.py_func, f3)
    for d in (dt.float32, dt.float64):  # the atomic targets (float16 goes through float32)
        args = [array(d, 3), array(d, 4)] + [i64] * 10
        compile_one(f"col2im {d}", cuda_impl._col2im.py_func, args)
        args = [array(d, 2), array(dt.int64, 2), array(d, 2)]
        compile_one(f"max pool back {d}", cuda_impl._scatter_planes.py_func, args)
        f3 = [array(d, 3), array(d, 3)]
        compile_one(
            f"avg pool back {d}", cuda_impl._avg_pool_back.py_func, f3 + [i64] * 6 + [b1, i64]
        )
        compile_one(f"adaptive pool back {d}", cuda_impl._adaptive_back.py_func, f3)
    vol2col, col2vol = cuda_conv3d.kernels()
    for d in (dt.float16, dt.float32, dt.float64):
        compile_one(f"vol2col {d}", vol2col.py_func, [array(d, 5), array(d, 3)] + [i64] * 15)
    for d in (dt.float32, dt.float64):  # the atomic targets, as col2im
        compile_one(f"col2vol {d}", col2vol.py_func, [array(d, 3), array(d, 5)] + [i64] * 15)
    ctc_forward, ctc_backward = cuda_ctc.kernels(ctc._logaddexp, ctc._label, ctc._skips)
    ints, rows = [i64a] * 4, array(dt.float64, 3)  # flat targets, starts, lengths; alpha, beta
    for d in (dt.float16, dt.float32, dt.float64):
        args = [array(d, 3), *ints, i64, b1, rows, array(d)]
        compile_one(f"ctc forward {d}", ctc_forward.py_func, args)
        args = [array(d), array(d, 3), *ints, i64, b1, rows, rows, array(d, 3)]
        compile_one(f"ctc backward {d}", ctc_backward.py_func, args)
    normalize, moments = cuda_impl._norm_kernels()
    for d in (dt.float16, dt.float32, dt.float64):
        compile_one(f"normalize {d}", normalize.py_func, [array(d, 2), array(d, 2), f64])
        args = [array(d, 2), array(dt.float64), array(dt.float64)]
        compile_one(f"moments {d}", moments.py_func, args)
        args = [array(d), array(d), array(dt.float64), array(dt.float64), i64, f64]
        compile_one(f"running stats {d}", cuda_impl._update_running.py_func, args + [array(d)] * 2)
    for labels in (dt.int32, dt.int64):
        for out in dt.ALL:
            args = [array(labels), i64, b1, array(out, 2)]
            compile_one(f"one_hot {labels}->{out}", cuda_impl._one_hot.py_func, args)
    seconds = time.time() - start
    result = {"compiled": compiled, "failures": failures, "seconds": seconds}
    result["canary_rejected"] = canary_rejected(cuda, array)
    print(json.dumps(result))


def canary_rejected(cuda, array) -> bool:
    """The real compiler rejects a float16 atomic add (the simulator runs it): proof that
    this matrix can fail."""

    def atomic_sum(x, out):
        cuda.atomic.add(out, 0, x[cuda.grid(1)])

    try:
        cuda.compile_ptx(atomic_sum, (array("float16"), array("float16")), cc=(9, 0))
    except Exception:  # any rejection will do
        return True
    return False


if __name__ == "__main__":
    sys.exit(main())
