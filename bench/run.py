"""nbflow against numpy, numba, PyTorch and JAX, side by side in one run.

    python bench/run.py            # the full table (about a minute)
    python bench/run.py --quick    # a smoke run (fewer repeats, shorter loops)
    python bench/run.py --profile  # also profile nbflow's eager 1-element add

Times are the minimum over several repeats of a timeit loop sized like `Timer.autorange`, and
the peers' repeats are interleaved round by round, so that a slow minute on a shared machine
hits every peer alike. Compare the ratios; absolute times drift. Import and first-call compile
times are measured in fresh subprocesses. PyTorch and JAX columns are filled only when they
import. See bench/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

import nbflow  # noqa: E402

PEERS = ("nbflow", "numpy", "numba", "torch", "jax")
NOTES: list[str] = []


def optional(name):
    try:
        return __import__(name)
    except Exception as e:  # ImportError, or a broken install
        NOTES.append(f"{name} not importable ({type(e).__name__}: {e}): its column is skipped")
        return None


torch = optional("torch")
jax = optional("jax")
if jax is not None:
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # for the float64 matmul; dtypes are explicit


# ---------------------------------------------------------------- timing


class Case:
    """One timed statement: `stmt` run in `env` by a timeit.Timer."""

    def __init__(self, peer, stmt, env, setup="pass"):
        self.peer = peer
        self.timer = timeit.Timer(stmt, setup=setup, globals=env)
        self.loops = 0
        self.best = float("inf")
        self.error = None

    def size(self, target):
        """Pick the loop count like Timer.autorange (1, 2, 5, 10, ...), for `target` seconds."""
        try:
            self.timer.timeit(1)  # warm-up (first-call compiles, caches)
            for scale in (10**k for k in range(10)):
                for m in (1, 2, 5):
                    n = m * scale
                    if self.timer.timeit(n) >= target:
                        self.loops = n
                        return
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}".splitlines()[0][:90]

    def once(self):
        if self.loops:
            self.best = min(self.best, self.timer.timeit(self.loops) / self.loops)


def measure(cases, repeats, target):
    """Min-of-repeats seconds per call, with the cases' repeats interleaved round by round."""
    for c in cases:
        c.size(target)
    for _ in range(repeats):
        for c in cases:
            c.once()
    return {c.peer: (c.best if c.loops else None) for c in cases}, {
        c.peer: c.error for c in cases if c.error
    }


# ---------------------------------------------------------------- workloads


def numba_add():
    from numba import njit

    @njit(error_model="numpy")
    def add(x, y, out):
        for i in range(out.size):
            out[i] = x[i] + y[i]

    return add


def eager_add(grad, repeats, target):
    """ns per 1-element float32 `a + b`, with or without gradient recording."""
    x, y = np.ones(1, np.float32), np.full(1, 2.0, np.float32)
    cases = [
        Case(
            "nbflow",
            "a + b",
            {
                "a": nbflow.tensor(x, requires_grad=grad),
                "b": nbflow.tensor(y, requires_grad=grad),
            },
        )
    ]
    if not grad:
        cases.append(Case("numpy", "a + b", {"a": x.copy(), "b": y.copy()}))
        out = np.empty(1, np.float32)
        cases.append(Case("numba", "f(a, b, out)", {"f": numba_add(), "a": x, "b": y, "out": out}))
    if torch is not None:
        ta = torch.tensor(x, requires_grad=grad)
        tb = torch.tensor(y, requires_grad=grad)
        cases.append(Case("torch", "a + b", {"a": ta, "b": tb}))
    if jax is not None and not grad:  # JAX has no recorded-gradient eager mode
        cases.append(Case("jax", "a + b", {"a": jnp.asarray(x), "b": jnp.asarray(y)}))
    times, errors = measure(cases, repeats, target)
    return {k: None if v is None else v * 1e9 for k, v in times.items()}, errors


def matmul(dtype, n, repeats, target):
    """GFLOP/s of an n x n x n matmul, plus nbflow's relative error against numpy."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    ref = a @ b
    cases, errors = [Case("numpy", "a @ b", {"a": a, "b": b})], {}
    fn = getattr(nbflow, "matmul", None)
    if fn is None:
        errors["nbflow"] = "nbflow.matmul does not exist yet"
    else:
        ta, tb = nbflow.from_numpy(a), nbflow.from_numpy(b)
        try:
            got = np.asarray(fn(ta, tb).numpy())
            err = np.abs(got - ref).max() / np.abs(ref).max()
            if got.shape != ref.shape or not err < (1e-4 if dtype == np.float32 else 1e-10):
                errors["nbflow"] = f"wrong result: shape {got.shape}, rel. error {err:.1e}"
            else:
                cases.append(Case("nbflow", "f(a, b)", {"f": fn, "a": ta, "b": tb}))
        except Exception as e:
            errors["nbflow"] = f"{type(e).__name__}: {e}".splitlines()[0][:90]
    try:
        from numba import njit

        @njit
        def dot(x, y, out):
            np.dot(x, y, out)

        out = np.empty_like(ref)
        cases.append(Case("numba", "f(a, b, out)", {"f": dot, "a": a, "b": b, "out": out}))
    except Exception as e:
        errors["numba"] = f"{type(e).__name__}: {e}"
    if torch is not None:
        env = {"a": torch.from_numpy(a), "b": torch.from_numpy(b)}
        cases.append(Case("torch", "a @ b", env))
    if jax is not None:
        f = jax.jit(jnp.matmul)
        env = {"f": f, "a": jnp.asarray(a), "b": jnp.asarray(b)}
        cases.append(Case("jax", "f(a, b).block_until_ready()", env))
    times, errs = measure(cases, repeats, target)
    errors.update(errs)
    return {k: None if v is None else 2 * n**3 / v / 1e9 for k, v in times.items()}, errors


def child_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def run_child(code, env):
    p = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT
    )
    if p.returncode:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed")
    return json.loads(p.stdout.strip().splitlines()[-1])


IMPORTS = {
    "nbflow": "import nbflow",
    "numpy": "import numpy",
    "numba": "import numba",
    "torch": "import torch",
    "jax": "import jax, jax.numpy",
}

IMPORT_CODE = """
import json, time
t = time.perf_counter()
{}
print(json.dumps(time.perf_counter() - t))
"""


def import_times(runs):
    """Seconds for `import X` in a fresh interpreter (min over `runs` processes)."""
    peers = [p for p in IMPORTS if p in ("nbflow", "numpy", "numba") or globals()[p] is not None]
    best, errors = dict.fromkeys(peers), {}
    for _ in range(runs):  # interleaved, like the in-process cases
        for p in peers:
            try:
                t = run_child(IMPORT_CODE.format(IMPORTS[p]), child_env())
                best[p] = t if best[p] is None else min(best[p], t)
            except Exception as e:
                errors[p] = str(e)[:90]
    return best, errors


COMPILE = """
import json, time
import numpy as np
import nbflow
x = nbflow.tensor(np.linspace(-2, 2, 1000, dtype=np.float32))
t0 = time.perf_counter(); nbflow.tanh(x); t1 = time.perf_counter()
nbflow.tanh(x); t2 = time.perf_counter()
nbflow.exp(x); t3 = time.perf_counter()
print(json.dumps({"tanh": t1 - t0, "again": t2 - t1, "exp": t3 - t2}))
"""


def compile_times(pairs):
    """First calls in fresh processes: cold (empty cache dirs), then warm (same dirs)."""
    runs = {"cold": [], "warm": []}
    for _ in range(pairs):
        with tempfile.TemporaryDirectory(prefix="nbflow-bench-") as d:
            env = child_env(
                NBFLOW_CACHE_DIR=os.path.join(d, "nbflow"), NUMBA_CACHE_DIR=os.path.join(d, "numba")
            )
            runs["cold"].append(run_child(COMPILE, env))
            runs["warm"].append(run_child(COMPILE, env))
    return {k: {f: min(r[f] for r in v) for f in v[0]} for k, v in runs.items()}


# ---------------------------------------------------------------- table


def fmt(v, unit):
    if v is None:
        return "n/a"
    if unit == "ns":
        return f"{v:,.0f}"
    if unit == "GF/s":
        return f"{v:.1f}"
    ms = v * 1e3  # unit "ms": the value is in seconds
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 1 else f"{ms:.3f}"


class Table:
    def __init__(self):
        self.rows = []

    def add(self, label, unit, values, ratio=None, target=None):
        """`ratio` is (numerator peer, denominator peer); `target` is ('<=' or '>=', bound)."""
        r = None
        if ratio and values.get(ratio[0]) and values.get(ratio[1]):
            r = values[ratio[0]] / values[ratio[1]]
        rtxt = f"{r:.2f} ({ratio[0][:2]}/{ratio[1][:5]})" if r is not None else "n/a"
        if target is None:
            verdict, ttxt = "info", "-"
        else:
            ttxt = f"{target[0]} {target[1]}"
            if r is None:
                verdict = "n/a"
            elif r <= target[1] if target[0] == "<=" else r >= target[1]:
                verdict = "PASS"
            else:
                verdict = "MISS"
        cells = [f"{label} [{unit}]"] + [fmt(values.get(p), unit) for p in PEERS]
        self.rows.append(cells + [rtxt, ttxt, verdict])
        print(f"  measured: {label}", file=sys.stderr, flush=True)

    def print(self):
        head = ["row", *PEERS, "ratio", "target", "result"]
        widths = [max(len(str(r[i])) for r in [head, *self.rows]) for i in range(len(head))]

        def line(row):
            cells = [str(c).rjust(w) for c, w in zip(row, widths, strict=True)]
            cells[0] = str(row[0]).ljust(widths[0])
            return "  ".join(cells)

        print(line(head))
        print("  ".join("-" * w for w in widths))
        for r in self.rows:
            print(line(r))


def header():
    vers = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    import numba

    vers.append(f"numba {numba.__version__}")
    if torch is not None:
        vers.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    if jax is not None:
        vers.append(f"jax {jax.__version__}")
    print(f"nbflow {getattr(nbflow, '__version__', '?')} | " + ", ".join(vers))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, load {load:.2f}, {time.strftime('%c')}")
    if load > 0.5:
        NOTES.append(
            f"the machine was busy at the start (1-min load {load:.2f}): the 2-thread matmul "
            "rows drop sharply when a core is taken; rerun when idle"
        )
    print()


def profile_add(seconds=1.0):
    """cProfile of nbflow's eager `a + b` with gradient recording, by own time."""
    import cProfile
    import pstats

    a = nbflow.tensor(np.ones(1, np.float32), requires_grad=True)
    b = nbflow.tensor(np.ones(1, np.float32), requires_grad=True)
    a + b
    n = max(1000, int(seconds / 10e-6))
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        a + b
    pr.disable()
    print(f"\ncProfile of {n:,} eager `a + b` (requires_grad=True), sorted by own time:")
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, shorter loops")
    ap.add_argument("--profile", action="store_true", help="also cProfile nbflow's eager add")
    ap.add_argument("--n", type=int, default=1024, help="matmul size (default 1024)")
    args = ap.parse_args(argv)
    repeats, target = (3, 0.05) if args.quick else (7, 0.2)
    mm_repeats = 3 if args.quick else 5
    procs = 2 if args.quick else 5
    pairs = 1 if args.quick else 3

    header()
    tab = Table()
    errors = {}

    vals, errors["eager +grad"] = eager_add(True, repeats, target)
    tab.add("1 eager a+b f32[1], requires_grad", "ns", vals, ("nbflow", "torch"), ("<=", 0.8))
    vals, errors["eager"] = eager_add(False, repeats, target)
    tab.add("2 eager a+b f32[1], no grad", "ns", vals, ("nbflow", "numpy"), ("<=", 3))
    for i, dtype in enumerate((np.float32, np.float64)):
        name = np.dtype(dtype).name
        vals, errors[f"matmul {name}"] = matmul(dtype, args.n, mm_repeats, target)
        label = f"3{'ab'[i]} matmul {args.n}^3 {name}"
        tab.add(label, "GF/s", vals, ("nbflow", "numpy"), (">=", 0.95))
    vals, errors["import"] = import_times(procs)
    tab.add(f"4 import, fresh process, min of {procs}", "ms", vals, ("nbflow", "numba"))
    try:
        ct = compile_times(pairs)
        for cache in ("cold", "warm"):
            tab.add(f"5 tanh f32 1st call, {cache} cache", "ms", {"nbflow": ct[cache]["tanh"]})
            tab.add(f"5 exp f32 1st call after tanh, {cache}", "ms", {"nbflow": ct[cache]["exp"]})
        tab.add("5 tanh f32 2nd call", "ms", {"nbflow": ct["warm"]["again"]})
    except Exception as e:
        errors["compile"] = {"nbflow": str(e)[:90]}

    print()
    tab.print()
    notes = list(NOTES)
    for row, errs in errors.items():
        notes += [f"{row}, {peer}: {msg}" for peer, msg in errs.items()]
    if notes:
        print("\nnotes:")
        for n in notes:
            print(f"  - {n}")
    verdicts = [r[-1] for r in tab.rows]
    print(
        f"\n{verdicts.count('PASS')} PASS, {verdicts.count('MISS')} MISS, "
        f"{verdicts.count('n/a')} n/a of {len(verdicts) - verdicts.count('info')} targeted rows"
    )
    if args.profile:
        profile_add()


if __name__ == "__main__":
    main()
