"""What the benchmarks ran on: the CPU, the kernels numpy's OpenBLAS runs, and the rate of a
large GEMM on it (the ceiling the model rows are measured against)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time

# set by some environments for old OpenBLAS builds that misbehave on new CPUs; each changes
# the kernels of numpy's OpenBLAS (nbflow's GEMMs), not PyTorch's MKL and oneDNN nor JAX's
FORCING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def cpu() -> str:
    """The CPU as lscpu names it, cores, memory."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        info = {
            k.strip(): v.strip()
            for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)
        }
        line = f"{info.get('Model name', '?')} (family {info.get('CPU family')}, model "
        line += f"{info.get('Model')}), {info.get('CPU(s)')} CPUs, L3 {info.get('L3 cache', '?')}"
        if info.get("Hypervisor vendor"):
            line += f", {info['Hypervisor vendor']} guest"
    except OSError:
        line = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        line += f", {mem:.0f} GiB RAM"
    except (ValueError, OSError):
        pass
    return line


def openblas() -> str:
    """Which kernels numpy's OpenBLAS runs (threadpoolctl), and a warning where the
    environment chose them."""
    import numpy  # noqa: F401  (loads its OpenBLAS)
    import threadpoolctl

    found = [
        lib
        for lib in threadpoolctl.threadpool_info()
        if lib.get("internal_api") == "openblas" and "numpy" in lib.get("filepath", "")
    ]
    line = f"numpy's OpenBLAS runs its {found[0].get('architecture', '?')} kernels" if found else ""
    forced = [f"{k}={os.environ[k]}" for k in FORCING if k in os.environ]
    if forced:
        line += (
            f"; the environment forces them ({', '.join(forced)}), which slows nbflow's GEMMs "
            "and not PyTorch's or JAX's: unset both for the command "
            "(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/...) to compare as "
            "an unset machine runs"
        )
    return line


def gemm_rate(n: int = 2048, seconds: float = 1.0) -> float:
    """GFLOP/s of numpy's float32 n^3 matmul on all threads, the best of the calls made in
    `seconds`: the ceiling a model step's rate is a share of."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    best, end = float("inf"), time.perf_counter() + seconds
    a @ b
    while time.perf_counter() < end:
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def child():
    """gemm_rate in a fresh process (real_models.in_fresh_process reads what it prints)."""
    print(gemm_rate())


if __name__ == "__main__":
    print(cpu())
    print(openblas())
    if "--gemm" in sys.argv:
        print(f"{gemm_rate():.0f} GFLOP/s")
