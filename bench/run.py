"""nbflow's benchmark suite, P1-P7, against numpy, numba, PyTorch and JAX in one run.

    python bench/run.py            # the full table (a few minutes)
    python bench/run.py --quick    # a smoke run (fewer repeats, shorter loops)
    python bench/run.py --docs     # also write the table into docs/performance.md
    python bench/run.py --profile  # also profile nbflow's eager 1-element add

Times are the minimum over several repeats of a timeit loop sized like `Timer.autorange`, and
the peers' repeats are interleaved round by round, so that a slow minute on a shared machine
hits every peer alike. Compare the ratios; absolute times drift. The multi-threaded workloads
(P2, P4, P5) time each peer in its own fresh process, rounds interleaved, so that torch's and
XLA's spinning thread pools never compete with nbflow's; start-up rows run in fresh
subprocesses too. PyTorch and JAX columns are filled only when they import (`pip install
nbflow[bench]`). See bench/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import timeit
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # benchmark the working tree, installed or not

from machine import FORCING, cpu, openblas  # noqa: E402

import nbflow  # noqa: E402
from nbflow import nn  # noqa: E402

PEERS = ("nbflow", "numpy", "numba", "torch", "jax")
NOTES: list[str] = []


ONLY = os.environ.get("NBFLOW_BENCH_ONLY")  # set in child processes: import just this peer


def optional(name):
    if ONLY is not None and name != ONLY:
        return None
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
            self.timer.timeit(1)
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


def run_cases(cases, errors, repeats, target):
    times, errs = measure([c for c in cases if c is not None], repeats, target)
    errors.update(errs)
    return times


# ---------------------------------------------------------------- P1 eager overhead


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
    ta, tb = nbflow.tensor(x, requires_grad=grad), nbflow.tensor(y, requires_grad=grad)
    cases, errors = [Case("nbflow", "a + b", {"a": ta, "b": tb})], {}
    if not grad:
        cases.append(Case("numpy", "a + b", {"a": x.copy(), "b": y.copy()}))
        out = np.empty(1, np.float32)
        cases.append(Case("numba", "f(a, b, out)", {"f": numba_add(), "a": x, "b": y, "out": out}))
    if torch is not None:
        env = {"a": torch.tensor(x, requires_grad=grad), "b": torch.tensor(y, requires_grad=grad)}
        cases.append(Case("torch", "a + b", env))
    if jax is not None and not grad:  # JAX has no recorded-gradient eager mode
        cases.append(Case("jax", "a + b", {"a": jnp.asarray(x), "b": jnp.asarray(y)}))
    times = run_cases(cases, errors, repeats, target)
    return {k: None if v is None else v * 1e9 for k, v in times.items()}, errors


# ---------------------------------------------------------------- P2 elementwise chain


def chain_cases(n=1 << 22) -> dict:
    """y = tanh(x*w + b) * 0.5 + x on n float32: a Case builder per peer (each builds only
    its own peer's objects, so a child process imports only that peer)."""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(n).astype(np.float32) for _ in range(3))

    def checked(got, label):
        ref = np.tanh(x.astype(np.float64) * w + b) * 0.5 + x
        err = np.abs(np.asarray(got) - ref).max()
        if not err < 1e-5:
            raise RuntimeError(f"{label}: wrong result, max error {err:.1e}")

    def nbflow_eager():
        tx, tw, tb = (nbflow.from_numpy(a) for a in (x, w, b))
        checked((nbflow.tanh(tx * tw + tb) * 0.5 + tx).numpy(), "nbflow eager")
        env = {"nb": nbflow, "x": tx, "w": tw, "b": tb}
        return Case("nbflow eager", "nb.tanh(x * w + b) * 0.5 + x", env)

    def nbflow_graph():
        tx, tw, tb = (nbflow.from_numpy(a) for a in (x, w, b))

        @nbflow.jit
        def fused(x, w, b):
            return nbflow.tanh(x * w + b) * 0.5 + x

        checked(fused(tx, tw, tb).numpy(), "nbflow graph")
        return Case("nbflow graph", "f(x, w, b)", {"f": fused, "x": tx, "w": tw, "b": tb})

    def torch_case():
        env = {"t": torch, "x": torch.from_numpy(x), "w": torch.from_numpy(w)}
        env["b"] = torch.from_numpy(b)
        return Case("torch", "t.tanh(x * w + b) * 0.5 + x", env)

    def jax_case():
        f = jax.jit(lambda x, w, b: jnp.tanh(x * w + b) * 0.5 + x)
        env = {"f": f, "x": jnp.asarray(x), "w": jnp.asarray(w), "b": jnp.asarray(b)}
        return Case("jax", "f(x, w, b).block_until_ready()", env)

    return {
        "nbflow eager": nbflow_eager,
        "nbflow graph": nbflow_graph,
        "numpy": lambda: Case(
            "numpy", "np.tanh(x * w + b) * 0.5 + x", {"np": np, "x": x, "w": w, "b": b}
        ),
        "torch": torch_case,
        "jax": jax_case,
    }


# ---------------------------------------------------------------- P3 matmul


def matmul(dtype, n, repeats, target):
    """GFLOP/s of an n x n x n matmul, plus nbflow's relative error against numpy."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    ref = a @ b
    cases, errors = [Case("numpy", "a @ b", {"a": a, "b": b})], {}
    ta, tb = nbflow.from_numpy(a), nbflow.from_numpy(b)
    got = nbflow.matmul(ta, tb).numpy()
    err = np.abs(got - ref).max() / np.abs(ref).max()
    if got.shape != ref.shape or not err < (1e-4 if dtype == np.float32 else 1e-10):
        errors["nbflow"] = f"wrong result: shape {got.shape}, rel. error {err:.1e}"
    else:
        cases.append(Case("nbflow", "f(a, b)", {"f": nbflow.matmul, "a": ta, "b": tb}))
    from numba import njit

    @njit
    def dot(x, y, out):
        np.dot(x, y, out)

    out = np.empty_like(ref)
    cases.append(Case("numba", "f(a, b, out)", {"f": dot, "a": a, "b": b, "out": out}))
    if torch is not None:
        cases.append(Case("torch", "a @ b", {"a": torch.from_numpy(a), "b": torch.from_numpy(b)}))
    if jax is not None:
        env = {"f": jax.jit(jnp.matmul), "a": jnp.asarray(a), "b": jnp.asarray(b)}
        cases.append(Case("jax", "f(a, b).block_until_ready()", env))
    times = run_cases(cases, errors, repeats, target)
    return {k: None if v is None else 2 * n**3 / v / 1e9 for k, v in times.items()}, errors


# ---------------------------------------------------------------- P4, P5 training steps


MLP_SIZES = (784, 256, 256, 10)


def mlp_data(batch=128):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, MLP_SIZES[0])).astype(np.float32)
    return x, rng.integers(0, 10, batch).astype(np.int64)


def cnn_data():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return (x[:64] / 16).astype(np.float32).reshape(-1, 1, 8, 8), y[:64].astype(np.int64)


def nbflow_model(kind):
    g = nbflow.Generator(0)
    if kind == "mlp":
        layers = []
        for i, (n_in, n_out) in enumerate(zip(MLP_SIZES, MLP_SIZES[1:])):
            layers.append(nn.Linear(n_in, n_out, generator=g))
            if i < len(MLP_SIZES) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, generator=g),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 8 * 8, 10, generator=g),
    )


def nbflow_eager_step(kind, x, y, lr=0.01):
    model = nbflow_model(kind)
    optimizer = nbflow.optim.SGD(model.parameters(), lr=lr)
    x, y = nbflow.tensor(x), nbflow.tensor(y)

    def step():
        loss = nbflow.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def nbflow_graph_step(kind, x, y, lr=0.01, executor=None):
    model = nbflow_model(kind)
    optimizer = nbflow.optim.SGD(model.parameters(), lr=lr)
    x, y = nbflow.tensor(x), nbflow.tensor(y)

    @nbflow.jit
    def train(x, y):
        loss = nbflow.cross_entropy(model(x), y)
        optimizer.minimize(loss)
        return loss

    if executor is not None:
        train.executors["cpu"] = executor  # the executor @jit runs CPU programs with

    def step():
        with nbflow.no_grad():
            train(x, y)

    return step


def torch_step(kind, x, y, lr=0.01):
    torch.manual_seed(0)
    if kind == "mlp":
        layers = []
        for i, (n_in, n_out) in enumerate(zip(MLP_SIZES, MLP_SIZES[1:])):
            layers.append(torch.nn.Linear(n_in, n_out))
            if i < len(MLP_SIZES) - 2:
                layers.append(torch.nn.ReLU())
        model = torch.nn.Sequential(*layers)
    else:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(16 * 8 * 8, 10),
        )
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        loss = torch.nn.functional.cross_entropy(model(tx), ty)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def jax_step(kind, x, y, lr=0.01):
    """jit(value_and_grad + SGD) with the parameters donated, as a JAX user writes it."""
    rng = np.random.default_rng(0)

    def init(*shape):
        return jnp.asarray(rng.standard_normal(shape).astype(np.float32) * 0.05)

    if kind == "mlp":
        params = [(init(a, b), init(b)) for a, b in zip(MLP_SIZES, MLP_SIZES[1:])]

        def forward(params, x):
            for i, (w, b) in enumerate(params):
                x = x @ w + b
                if i < len(params) - 1:
                    x = jax.nn.relu(x)
            return x
    else:
        params = [(init(16, 1, 3, 3), init(16)), (init(16 * 8 * 8, 10), init(10))]

        def forward(params, x):
            (kc, bc), (w, b) = params
            h = jax.lax.conv_general_dilated(x, kc, (1, 1), ((1, 1), (1, 1)))
            h = jax.nn.relu(h + bc[None, :, None, None])
            return h.reshape(h.shape[0], -1) @ w + b

    def loss_fn(params, x, y):
        logits = forward(params, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def update(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss

    update_donated = jax.jit(update, donate_argnums=0)
    state = {"params": params}
    jx, jy = jnp.asarray(x), jnp.asarray(y.astype(np.int32))

    def step():
        state["params"], loss = update_donated(state["params"], jx, jy)
        loss.block_until_ready()

    return step


def training_cases(kind) -> dict:
    """ms per SGD step: a Case builder per peer."""
    x, y = mlp_data() if kind == "mlp" else cnn_data()
    makers = {
        "nbflow eager": lambda: nbflow_eager_step(kind, x, y),
        "nbflow graph": lambda: nbflow_graph_step(kind, x, y),
        "torch": lambda: torch_step(kind, x, y),
        "jax": lambda: jax_step(kind, x, y),
    }
    return {peer: (lambda m=m, p=peer: Case(p, "f()", {"f": m()})) for peer, m in makers.items()}


CHAIN_PEERS = ["nbflow eager", "nbflow graph", "numpy", "torch", "jax"]
TRAIN_PEERS = ["nbflow eager", "nbflow graph", "torch", "jax"]
WORKLOADS = {"chain": chain_cases, "mlp": lambda: training_cases("mlp")}
WORKLOADS["cnn"] = lambda: training_cases("cnn")
MODULE_OF = {"torch": "torch", "jax": "jax"}  # what a child process imports besides nbflow


def child_case(workload: str, peer: str, repeats: int, target: float):
    """In a child process: time one peer on one workload; prints its best seconds as JSON."""
    case = WORKLOADS[workload]()[peer]()
    best, errors = measure([case], repeats, target)
    if errors:
        raise RuntimeError(errors[peer])
    print(json.dumps(best[peer]))


def isolated(workload: str, peers, rounds: int, repeats: int, target: float):
    """ms per call of each peer, each timed in its own fresh process (so torch's and XLA's
    spinning thread pools never compete with nbflow's), the peers interleaved round by round;
    the minimum over rounds. Returns (ms by peer, errors by peer)."""
    best, errors = {}, {}
    for _ in range(rounds):
        for peer in peers:
            if peer in errors:
                continue
            module = MODULE_OF.get(peer, "")
            if module and globals()[module] is None:
                continue
            code = (
                "import sys; sys.argv = ['run.py']; "
                f"sys.path.insert(0, {str(ROOT / 'bench')!r}); import run; "
                f"run.child_case({workload!r}, {peer!r}, {repeats}, {target})"
            )
            try:
                t = run_child(code, child_env(NBFLOW_BENCH_ONLY=module))
                best[peer] = min(best.get(peer, t), t)
            except Exception as e:
                errors[peer] = str(e)[:120]
    return {k: v * 1e3 for k, v in best.items()}, errors


# ---------------------------------------------------------------- P6 start-up


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


# each peer's script imports only itself (not this module, which imports every peer)
STARTUP = """
import json, time
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
import numpy as np
rng = np.random.default_rng(0)
x = rng.standard_normal((128, 784)).astype(np.float32)
y = rng.integers(0, 10, 128).astype(np.int64)
{step}
t2 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "step": t2 - t1, "total": t2 - t0}}))
"""

STARTUP_STEPS = {
    "nbflow": (
        "import nbflow as nb",
        """
from nbflow import nn
g = nb.Generator(0)
model = nn.Sequential(nn.Linear(784, 256, generator=g), nn.ReLU(),
                      nn.Linear(256, 256, generator=g), nn.ReLU(), nn.Linear(256, 10, generator=g))
optimizer = nb.optim.SGD(model.parameters(), lr=0.01)
@nb.jit
def train(x, y):
    loss = nb.cross_entropy(model(x), y)
    optimizer.minimize(loss)
    return loss
with nb.no_grad():
    train(nb.tensor(x), nb.tensor(y))
""",
    ),
    "torch": (
        "import torch",
        """
model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
optimizer.zero_grad()
loss.backward()
optimizer.step()
""",
    ),
    "jax": (
        "import jax, jax.numpy as jnp",
        """
sizes = (784, 256, 256, 10)
params = [(jnp.asarray(rng.standard_normal((a, b)).astype(np.float32) * 0.05), jnp.zeros(b))
          for a, b in zip(sizes, sizes[1:])]
def loss_fn(params, x, y):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        x = jax.nn.relu(x) if i < len(params) - 1 else x
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(x), y[:, None], axis=1))
@jax.jit
def update(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), loss
params, loss = update(params, jnp.asarray(x), jnp.asarray(y.astype(np.int32)))
loss.block_until_ready()
""",
    ),
}


def startup(pairs, codes=None):
    """Seconds for import + the first MLP training step in a fresh process; nbflow with cold
    caches (new empty NBFLOW_CACHE_DIR and NUMBA_CACHE_DIR) and warm (the same dirs again).
    `codes` maps each peer to the script its child runs (default: STARTUP per peer). The
    result `best[f"{cache} {part}"][peer]`: the script's total, import and step seconds."""
    if codes is None:
        codes = {p: STARTUP.format(imports=i, step=s) for p, (i, s) in STARTUP_STEPS.items()}
    best, errors = {}, {}
    peers = [p for p in codes if p == "nbflow" or globals()[p] is not None]
    for _ in range(pairs):
        for peer in peers:
            with tempfile.TemporaryDirectory(prefix="nbflow-bench-") as d:
                env = child_env(
                    NBFLOW_CACHE_DIR=os.path.join(d, "nbflow"),
                    NUMBA_CACHE_DIR=os.path.join(d, "numba"),
                    NBFLOW_COMPILE_NOTICE="0",
                )
                # as an installed package: Python's bytecode cache on (the dev VMs turn it off)
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                try:
                    for cache in ("cold", "warm"):
                        times = run_child(codes[peer], env)
                        for part in ("total", "import", "step"):
                            row = best.setdefault(f"{cache} {part}", {})
                            row[peer] = min(row.get(peer, times[part]), times[part])
                except Exception as e:
                    errors[peer] = str(e)[:90]
    return best, errors


# the first call of one op, float32 tanh of 8 elements, in a fresh process: its kernel compiled
# (cold cache) or loaded from numba's disk cache (warm); the input is made before the clock
FIRST_OP = """
import json, time
import nbflow as nb
x = nb.ones(8)
t0 = time.perf_counter()
y = nb.tanh(x)
t1 = time.perf_counter()
print(json.dumps({"import": 0.0, "step": t1 - t0, "total": t1 - t0}))
"""


def scaled(values: dict, factor: float) -> dict:
    return {k: v * factor for k, v in values.items()}


# ---------------------------------------------------------------- P7 peak memory


def peak_bytes(reuse: bool) -> int:
    """Peak bytes numpy allocates during one graph-mode MLP training step (tracemalloc sees
    numpy's buffers), after a warm-up step; memory pass on or off (off: no value is released
    or written over, graph/rewrite.py). With the pass the measured step is the first to place
    its buffers in the arena the warm-up step planned (the arena is allocated in it); the
    buffer cache is emptied first, so that every allocation counts."""
    x, y = mlp_data()
    # the kernels each thread choice tries (kernels/cpu/threads.py) loaded by another executor
    # first: loading one is not the step's memory
    warm = nbflow_graph_step("mlp", x, y, executor=nbflow.Executor(reuse_memory=reuse))
    for _ in range(12):
        warm()
    executor = nbflow.Executor(fuse=True, reuse_memory=reuse)
    step = nbflow_graph_step("mlp", x, y, executor=executor)
    step()
    nbflow.empty_cache()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------- table


def fmt(v, unit):
    if v is None:
        return "n/a"
    if unit == "ns":
        return f"{v:,.0f}"
    if unit == "GF/s":
        return f"{v:.1f}"
    if unit == "MB":
        return f"{v:.2f}"
    if unit == "s":
        return f"{v:.2f}"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 1 else f"{v:.3f}"  # ms


class Table:
    def __init__(self):
        self.rows = []

    def add(self, label, unit, values, ratio=None, target=None, absolute=None):
        """`ratio` is (numerator peer, denominator peer), or (text, value) for a ratio
        computed elsewhere; `target` is ('<=' or '>=', bound) on the ratio; `absolute` is
        ('<=', bound) on nbflow's own value, in `unit`."""
        r, rtxt = None, "n/a"
        if ratio and isinstance(ratio[1], float):
            rtxt, r = f"{ratio[1]:.2f} ({ratio[0]})", ratio[1]
        elif ratio and values.get(ratio[0]) and values.get(ratio[1]):
            r = values[ratio[0]] / values[ratio[1]]
            rtxt = f"{r:.2f} ({ratio[0][:2]}/{ratio[1][:5]})"
        checked = r
        if absolute is not None:
            target, checked = absolute, values.get("nbflow")
            rtxt = "-" if r is None else rtxt
        if target is None:
            verdict, ttxt = "info", "-"
        else:
            ttxt = f"{target[0]} {target[1]}" + (f" {unit}" if absolute else "")
            if checked is None:
                verdict = "n/a"
            elif checked <= target[1] if target[0] == "<=" else checked >= target[1]:
                verdict = "PASS"
            else:
                verdict = "MISS"
        cells = [f"{label} [{unit}]"] + [fmt(values.get(p), unit) for p in PEERS]
        self.rows.append(cells + [rtxt, ttxt, verdict])
        print(f"  measured: {label}", file=sys.stderr, flush=True)

    def lines(self, markdown=False):
        head = ["row", *PEERS, "ratio", "target", "result"]
        if markdown:
            out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            return out + ["| " + " | ".join(map(str, r)) + " |" for r in self.rows]
        widths = [max(len(str(r[i])) for r in [head, *self.rows]) for i in range(len(head))]

        def line(row):
            cells = [str(c).rjust(w) for c, w in zip(row, widths, strict=True)]
            cells[0] = str(row[0]).ljust(widths[0])
            return "  ".join(cells)

        return [line(head), "  ".join("-" * w for w in widths)] + [line(r) for r in self.rows]


def versions() -> str:
    import numba

    vers = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    vers.append(f"numba {numba.__version__}")
    if torch is not None:
        vers.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    if jax is not None:
        vers.append(f"jax {jax.__version__}")
    return f"nbflow {nbflow.__version__} | " + ", ".join(vers)


def header():
    print(versions())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    print(f"{cpu()}, load {load:.2f}, {time.strftime('%Y-%m-%d %H:%M')}")
    print(openblas())
    if any(k in os.environ for k in FORCING):
        NOTES.append(openblas())
    if load > 0.5:
        NOTES.append(
            f"the machine was busy at the start (1-min load {load:.2f}): the 2-thread rows "
            "drop sharply when a core is taken; rerun when idle"
        )
    print()


def write_docs(table: Table, notes: list[str]):
    """Replace the block between the bench markers in docs/performance.md with this run's
    table."""
    path = ROOT / "docs" / "performance.md"
    text = path.read_text()
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    block = [
        begin,
        f"Measured with `python bench/run.py` on {time.strftime('%Y-%m-%d')}: {cpu()}.",
        f"{versions()}.",
        "",
        *table.lines(markdown=True),
        "",
        *[f"- {n}" for n in notes],
        end,
    ]
    if begin in text and end in text:
        text = re.sub(f"{begin}.*?{end}", "\n".join(block), text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n## Benchmarks\n\n" + "\n".join(block) + "\n"
    path.write_text(text)


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
    ap.add_argument(
        "--docs",
        "--readme",
        dest="docs",
        action="store_true",
        help="write the table into docs/performance.md (--readme: the old name)",
    )
    ap.add_argument("--profile", action="store_true", help="also cProfile nbflow's eager add")
    ap.add_argument("--n", type=int, default=1024, help="matmul size (default 1024)")
    args = ap.parse_args(argv)
    repeats, target = (3, 0.05) if args.quick else (7, 0.2)
    pairs = 1 if args.quick else 2
    rounds = 1 if args.quick else 3

    header()
    tab = Table()
    errors = {}

    vals, errors["P1"] = eager_add(True, repeats, target)
    tab.add("P1 eager a+b f32[1], grad recorded", "ns", vals, ("nbflow", "torch"), ("<=", 0.8))
    vals, errors["P1 no grad"] = eager_add(False, repeats, target)
    tab.add("P1 eager a+b f32[1], no grad", "ns", vals, ("nbflow", "numpy"), ("<=", 3.0))

    ms, errors["P2"] = isolated("chain", CHAIN_PEERS, rounds, repeats, target)
    label = "P2 tanh(x*w+b)*0.5+x f32[4M]"
    eager = {"nbflow": ms.get("nbflow eager"), "numpy": ms.get("numpy"), "torch": ms.get("torch")}
    graph = {"nbflow": ms.get("nbflow graph"), "numpy": ms.get("numpy"), "jax": ms.get("jax")}
    tab.add(f"{label}, eager", "ms", eager, ("nbflow", "torch"))
    tab.add(f"{label}, graph", "ms", graph, ("nbflow", "jax"), ("<=", 1.0))
    tab.add(f"{label}, graph", "ms", graph, ("nbflow", "numpy"), ("<=", 0.25))

    for _i, dtype in enumerate((np.float32, np.float64)):
        name = np.dtype(dtype).name
        vals, errors[f"P3 {name}"] = matmul(dtype, args.n, 3 if args.quick else 5, target)
        tab.add(f"P3 matmul {args.n}^3 {name}", "GF/s", vals, ("nbflow", "numpy"), (">=", 0.95))

    ms, errors["P4"] = isolated("mlp", TRAIN_PEERS, rounds, repeats, target)
    eager = {"nbflow": ms.get("nbflow eager"), "torch": ms.get("torch"), "jax": ms.get("jax")}
    graph = {"nbflow": ms.get("nbflow graph"), "torch": ms.get("torch"), "jax": ms.get("jax")}
    label = "P4 MLP 784-256-256-10 b128 SGD step"
    # (issue 37's targets on the fair basis, each framework in its own process)
    tab.add(f"{label}, graph", "ms", graph, ("nbflow", "torch"), ("<=", 0.9))
    tab.add(f"{label}, graph", "ms", graph, ("nbflow", "jax"), ("<=", 1.0))
    tab.add(f"{label}, eager", "ms", eager, ("nbflow", "torch"), ("<=", 1.1))
    ms, errors["P5"] = isolated("cnn", ["nbflow graph", "torch", "jax"], rounds, repeats, target)
    graph = {"nbflow": ms.get("nbflow graph"), "torch": ms.get("torch"), "jax": ms.get("jax")}
    tab.add(
        "P5 CNN conv3x3(16) 64x1x8x8 step, graph", "ms", graph, ("nbflow", "torch"), ("<=", 1.0)
    )

    best, errors["P6"] = startup(pairs)
    tab.add("P6 import + 1st MLP step, cold cache", "s", best["cold total"], absolute=("<=", 15.0))
    tab.add("P6 import + 1st MLP step, warm cache", "s", best["warm total"], absolute=("<=", 1.0))
    tab.add("P6 import alone, warm cache", "s", best["warm import"])
    first, errors["P6 first op"] = startup(pairs, {"nbflow": FIRST_OP})
    tab.add("P6 first tanh f32 call, cold cache", "ms", scaled(first["cold step"], 1e3))
    tab.add("P6 first tanh f32 call, warm cache", "ms", scaled(first["warm step"], 1e3))

    off, on = peak_bytes(False), peak_bytes(True)
    tab.add(
        "P7 peak bytes, MLP graph step, pass on",
        "MB",
        {"nbflow": on / 1e6},
        (f"on/off, off {off / 1e6:.2f} MB", on / off),
        ("<=", 0.7),
    )

    print()
    print("\n".join(tab.lines()))
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
    if args.docs:
        write_docs(tab, notes)
        print("docs/performance.md updated")
    if args.profile:
        profile_add()


if __name__ == "__main__":
    main()
