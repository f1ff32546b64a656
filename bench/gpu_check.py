"""The device check for a machine with an NVIDIA GPU (meant to finish in under five minutes).

    pip install -e ".[cuda]"
    python bench/gpu_check.py            # on the GPU machine
    NUMBA_ENABLE_CUDASIM=1 python bench/gpu_check.py --smoke   # the script itself, no GPU

1. CPU == CUDA parity: the simulator test's cases (tests/cuda_sim_cases.py) with larger shapes,
   compiled for the real GPU;
2. the MLP training step (784-256-256-10, batch 128, SGD) in graph mode with
   Executor(device="cuda"): losses equal the CPU's, time per step;
3. elementwise bandwidth (add, float32) as a fraction of the device's memory bandwidth (the
   nominal figure from the device's clock and bus width, and a device-to-device copy);
4. matmul GFLOP/s (float32, the tiled shared-memory kernel) against the device's fp32
   (non-tensor-core) peak from its SM count and clock;
5. DLPack and `__cuda_array_interface__` on the device (issue 40): tests/dlpack_sim_check.py's
   checks on the real GPU, and, when a CUDA PyTorch is installed, a GPU tensor shared both ways
   with it (same device pointer, a write on one side seen on the other).

Prints each figure as it goes and a JSON summary on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import nbflow as nb  # noqa: E402
from nbflow import device as devices  # noqa: E402

FP32_LANES_PER_SM = 128  # Hopper, Ada, Ampere (GA10x): FP32 units per SM


def log(*args):
    print(*args, flush=True)


def sync():
    devices.cuda().synchronize()


def timed(fn, repeat):
    fn()  # compile and warm up
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - start) / repeat


def device_facts() -> dict:
    """Name, SMs, clocks and the nominal memory bandwidth and fp32 peak."""
    if devices.simulator():
        return {"name": "CUDA simulator"}
    dev = devices.cuda().get_current_device()
    facts = {"name": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)}
    try:
        sms = dev.MULTIPROCESSOR_COUNT
        clock_khz = dev.CLOCK_RATE
        facts.update(sms=sms, clock_mhz=clock_khz / 1e3, cc=list(dev.compute_capability))
        facts["fp32_peak_gflops"] = sms * FP32_LANES_PER_SM * 2 * clock_khz / 1e6
        mem_khz, bus_bits = dev.MEMORY_CLOCK_RATE, dev.GLOBAL_MEMORY_BUS_WIDTH
        facts["nominal_bandwidth_gbs"] = 2 * mem_khz * 1e3 * bus_bits / 8 / 1e9
    except AttributeError as e:  # an attribute this numba-cuda does not expose
        facts["missing"] = str(e)
    return facts


def parity(large: bool) -> dict:
    """The simulator cases on the real GPU (a subprocess: its own numba state)."""
    args = [sys.executable, os.path.join(ROOT, "tests", "cuda_sim_cases.py")]
    if large:
        args += ["--size", "large"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.time()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=240)
    if proc.returncode != 0:
        return {"ok": False, "error": proc.stderr[-2000:]}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    bad = [
        f"{r['op']} [{r['case']}]: {r['detail'][:200]}" for r in result["results"] if not r["ok"]
    ]
    for line in bad:
        log("  MISMATCH", line)
    return {
        "ok": not bad,
        "cases": len(result["results"]),
        "mismatches": len(bad),
        "ops": len(result["covered"]),
        "seconds": round(time.time() - start, 1),
    }


def mlp_step(sizes, batch, steps) -> dict:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from cuda_sim_cases import build_mlp  # the same model the simulator test trains

    rng = np.random.default_rng(0)
    feed = {
        "x": rng.standard_normal((batch, sizes[0])).astype(np.float32),
        "y": rng.integers(0, sizes[-1], batch),
    }
    result = {}
    for device in ("cpu", "cuda"):
        main, startup, targets = build_mlp(sizes, lr=0.01)
        exe, scope = nb.Executor(device), nb.Scope()
        nb.manual_seed(0)
        exe.run(startup, scope=scope)
        losses = [float(exe.run(main, feed, targets, scope=scope)[0]) for _ in range(3)]
        on_device = nb.tensor(feed["x"], device=device) if device != "cpu" else None
        gpu_feed = dict(feed, x=on_device) if on_device is not None else feed

        def step(exe=exe, main=main, scope=scope, gpu_feed=gpu_feed, targets=targets):
            exe.run(main, gpu_feed, targets, scope=scope, return_numpy=False)

        seconds = timed(step, steps) if device != "cpu" else _cpu_time(step, steps)
        result[device] = {"losses": losses, "ms_per_step": round(seconds * 1e3, 3)}
    cpu, gpu = result["cpu"]["losses"], result["cuda"]["losses"]
    result["losses_match"] = bool(np.allclose(cpu, gpu, rtol=1e-3))
    return result


def _cpu_time(fn, repeat):
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def bandwidth(n: int, facts: dict) -> dict:
    """add of two float32 vectors: 12 bytes per element moved."""
    from nbflow.kernels.cuda import skeletons as cuda_impl

    cuda = devices.cuda()
    a = cuda.to_device(np.ones(n, np.float32))
    b = cuda.to_device(np.ones(n, np.float32))
    out = cuda.device_array(n, np.float32)
    add = nb.ops.add.kernels["cuda"]
    seconds = timed(lambda: add(a, b, out), 20)
    gbs = 3 * 4 * n / seconds / 1e9
    copy_seconds = timed(lambda: out.copy_to_device(a), 20)
    copy_gbs = 2 * 4 * n / copy_seconds / 1e9
    result = {"elements": n, "add_gbs": round(gbs, 1), "device_copy_gbs": round(copy_gbs, 1)}
    result["fraction_of_copy"] = round(gbs / copy_gbs, 3)
    if "nominal_bandwidth_gbs" in facts:
        result["fraction_of_nominal"] = round(gbs / facts["nominal_bandwidth_gbs"], 3)
    result["threads_per_block"] = cuda_impl.TPB
    return result


def matmul(n: int, facts: dict) -> dict:
    cuda = devices.cuda()
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((n, n)).astype(np.float32)
    b_host = rng.standard_normal((n, n)).astype(np.float32)
    a, b = cuda.to_device(a_host), cuda.to_device(b_host)
    out = cuda.device_array((n, n), np.float32)
    kernel = nb.ops.matmul.kernels["cuda"]
    seconds = timed(lambda: kernel(a, b, out), 5)
    gflops = 2 * n**3 / seconds / 1e9
    expected = a_host[:64].astype(np.float64) @ b_host.astype(np.float64)
    error = float(np.max(np.abs(out.copy_to_host()[:64] - expected)))
    result = {"n": n, "gflops": round(gflops, 1), "max_abs_error_first_rows": error}
    if "fp32_peak_gflops" in facts:
        result["fraction_of_fp32_peak"] = round(gflops / facts["fp32_peak_gflops"], 3)
    return result


def dlpack_gpu() -> dict:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import dlpack_sim_check

    dlpack_sim_check.main()  # raises on a failed check
    result = {"checks": "ok"}
    try:
        import torch
    except ImportError:
        return {**result, "torch": "not installed"}
    if not torch.cuda.is_available():
        return {**result, "torch": "no CUDA build"}
    t = nb.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)).cuda()
    x = torch.as_tensor(t, device="cuda")  # by __cuda_array_interface__
    same = x.data_ptr() == t.data_ptr()
    x[0, 0] = 42.0
    torch.cuda.synchronize()
    seen = t.numpy()[0, 0] == 42.0
    z = torch.from_dlpack(t)  # by nbflow's own capsule
    torch_reads_capsule = z.data_ptr() == t.data_ptr() and z[0, 0].item() == 42.0
    y = torch.arange(4.0, device="cuda")
    u = nb.from_dlpack(y)
    y[1] = -1.0
    torch.cuda.synchronize()
    return {
        **result,
        "torch_shares_nbflow": bool(same and seen),
        "torch_from_dlpack": bool(torch_reads_capsule),
        "nbflow_shares_torch": bool(u.device == "cuda:0" and u.numpy()[1] == -1.0),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (the simulator)")
    args = parser.parse_args()
    if devices.simulator() and not args.smoke:
        sys.exit("gpu_check: NUMBA_ENABLE_CUDASIM is set; pass --smoke to check the script")
    facts = device_facts()
    log("device:", facts)
    summary = {"device": facts}
    start = time.time()
    steps = [
        ("parity", lambda: parity(large=not args.smoke)),
        ("mlp_step", lambda: mlp_step((16, 8, 4) if args.smoke else (784, 256, 256, 10),
                                      8 if args.smoke else 128, 2 if args.smoke else 50)),
        ("bandwidth", lambda: bandwidth(1 << 8 if args.smoke else 1 << 26, facts)),
        ("matmul", lambda: matmul(16 if args.smoke else 4096, facts)),
        ("dlpack", dlpack_gpu),
    ]  # fmt: skip
    for name, run in steps:
        t = time.time()
        try:
            summary[name] = run()
        except Exception as e:  # report and go on: every figure counts
            summary[name] = {"error": f"{type(e).__name__}: {e}"[:1000]}
        log(f"{name} ({time.time() - t:.1f} s):", summary[name])
    summary["seconds"] = round(time.time() - start, 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
