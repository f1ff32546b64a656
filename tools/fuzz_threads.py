"""The concurrency campaign of tools/fuzz_campaign.py (--campaign threads). One trial is a fresh
process (forked from one that has imported nbflow and run nothing, so every kernel, plan and
trace is used there for the first time) where 2-8 threads start together, each with its own
baseline mode (gradients on, no_grad, inference_mode, autocast, the NaN/Inf check or anomaly
mode, held for the thread's whole life) and 1-3 tasks drawn at random:

- train: a small MLP trained eagerly with Adam, with no_grad, inference_mode, autocast and
  set_grad_enabled(False) evaluations between the steps (gradients-on threads only);
- ops: eager ops of random dtypes, most used for the first time in the process;
- jit: a @jit function shared by every thread of the trial, at shapes none has traced yet
  (first-use tracing races; the trace cache);
- program: one static Program and one Executor shared by every thread, each feeding its own
  data (the executor's plan cache).

After the threads, each (task, seed, baseline) runs again alone in the main thread. Outcomes:
ok; mismatch (a thread's result differs from the single-threaded one, bit for bit); leak (a
thread saw modes it did not set: another grad mode, autocast, check or trace, or a graph value
from an eager op); error (a thread raised); hang (a thread still running after the time limit);
crash (the trial's process died).
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading

import numpy as np

BASELINES = ("grad", "no_grad", "inference_mode", "autocast", "nan_check", "anomaly")
TASKS = ("train", "ops", "jit", "program")
UNARY = ("exp", "tanh", "sigmoid", "abs", "sin", "cos", "relu", "floor", "neg", "square")
BINARY = ("add", "mul", "sub", "maximum", "minimum", "atan2", "hypot", "fmod")
REDUCE = ("sum", "mean", "amax", "cumsum", "softmax", "logsumexp", "argmax", "prod")
DTYPES = ("float32", "float64", "float16", "int32", "int64")
JIT_SHAPES = ((3, 4), (5, 2), (1, 7), (6, 6), (2, 9), (4, 1))


def baseline_context(nb, baseline: str):
    return {
        "grad": contextlib.nullcontext,
        "no_grad": nb.no_grad,
        "inference_mode": nb.inference_mode,
        "autocast": nb.autocast,
        "nan_check": nb.check_nan_inf,
        "anomaly": nb.autograd.detect_anomaly,
    }[baseline]()


def modes(nb) -> dict:
    """The modes this thread sees, and whether an eager op gives an eager tensor."""
    from nbflow.eager.checking import nan_inf_checking

    return {
        "grad": nb.is_grad_enabled(),
        "autocast": nb.is_autocast_enabled(),
        "nan_check": nan_inf_checking(),
        "anomaly": nb.is_anomaly_enabled(),
        "eager": type(nb.ones(1) + 1.0) is nb.Tensor,
    }


def expected_modes(baseline: str) -> dict:
    return {
        "grad": baseline not in ("no_grad", "inference_mode"),
        "autocast": baseline == "autocast",
        "nan_check": baseline == "nan_check",
        "anomaly": baseline == "anomaly",
        "eager": True,
    }


class Leak(AssertionError):
    pass


def check_modes(nb, baseline: str, where: str) -> None:
    seen, want = modes(nb), expected_modes(baseline)
    if seen != want:
        raise Leak(f"{where}: modes {seen}, this thread set {want}")


class Shared:
    """What the threads of one trial share: the @jit function and the program."""

    def __init__(self, nb):
        self.nb = nb

        @nb.jit
        def fused(a, b):
            return nb.tanh(a * b + 0.5) * 2.0 - nb.exp(-a) / 3.0 + nb.sum(a, axis=0)

        self.fused = fused
        self.program = nb.Program()
        with nb.program_guard(self.program):
            x = nb.static.data("x", [-1, 6])
            w = nb.static.create_parameter("w", [6, 3])
            self.fetch = nb.softmax(nb.tanh(x @ w) * 2.0, axis=1)
        self.scope = nb.Scope()
        self.scope["w"] = nb.tensor(np.linspace(-1, 1, 18, dtype=np.float32).reshape(6, 3))
        self.executor = nb.Executor()


def run_task(nb, shared: Shared, task: str, seed: int, baseline: str) -> list[np.ndarray]:
    """One task; its results as arrays (bit-exact on a rerun in any thread)."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    if task == "train":
        from nbflow import nn, optim

        gen = nb.Generator().manual_seed(seed)
        model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 3))
        for p in model.parameters():  # initialised from the task's own generator
            with nb.no_grad():
                p.copy_(nb.randn(*p.shape, generator=gen) * 0.3)
        opt = optim.Adam(model.parameters(), lr=0.01)
        picks = random.Random(seed)
        for _ in range(12):
            x = nb.tensor(rng.standard_normal((8, 6)).astype(np.float32))
            y = nb.tensor(rng.integers(0, 3, 8))
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            out.append(loss.numpy())
            mode = picks.choice(("none", "no_grad", "inference_mode", "autocast", "off"))
            block = {
                "none": contextlib.nullcontext,
                "no_grad": nb.no_grad,
                "inference_mode": nb.inference_mode,
                "autocast": nb.autocast,
                "off": lambda: nb.set_grad_enabled(False),
            }[mode]()
            with block:
                evaluation = model(x)
                if mode in ("no_grad", "inference_mode", "off") and evaluation.requires_grad:
                    raise Leak(f"train: an evaluation under {mode} requires grad")
                out.append(evaluation.numpy())
            check_modes(nb, baseline, f"train, after a {mode} evaluation")
        out += [p.numpy() for p in model.parameters()]
    elif task == "ops":
        picks = random.Random(seed)
        for _ in range(10):
            dtype = picks.choice(DTYPES)
            a = nb.tensor((rng.standard_normal((3, 4)) * 3).astype(dtype))
            b = nb.tensor((rng.standard_normal((3, 4)) * 3 + 0.5).astype(dtype))
            kind = picks.randrange(3)
            if kind == 0:
                name = picks.choice(UNARY)
                r = getattr(nb, name)(a if dtype[0] == "f" else a.float())
            elif kind == 1:
                r = getattr(nb, picks.choice(BINARY))(a, b)
            else:
                name = picks.choice(REDUCE)
                exact = dtype[0] == "f" or name in ("sum", "amax", "argmax", "cumsum")
                x = a if exact else a.float()
                r = getattr(nb, name)(x, axis=picks.choice((0, 1)))
            out.append(r.numpy())
    elif task == "jit":
        picks = random.Random(seed)
        for _ in range(4):
            shape = picks.choice(JIT_SHAPES)
            a = nb.tensor(rng.standard_normal(shape).astype(np.float32))
            b = nb.tensor(rng.standard_normal(shape).astype(np.float32))
            out.append(shared.fused(a, b).numpy())
    else:
        for _ in range(3):
            feed = {"x": rng.standard_normal((int(rng.integers(1, 6)), 6)).astype(np.float32)}
            (r,) = shared.executor.run(shared.program, feed, [shared.fetch], shared.scope)
            out.append(np.asarray(r))
    check_modes(nb, baseline, f"after task {task}")
    return out


def plan_trial(rng: random.Random) -> list[tuple[str, list[tuple[str, int]]]]:
    """Per thread: (baseline, [(task, seed), ...])."""
    threads = []
    for _ in range(rng.randint(2, 8)):
        baseline = rng.choice(BASELINES)
        tasks = [t for t in TASKS if t != "train" or baseline == "grad"]
        threads.append(
            (baseline, [(rng.choice(tasks), rng.randrange(1000)) for _ in range(rng.randint(1, 3))])
        )
    return threads


def run_trial(seed: int, trial: int, timeout: float = 120.0) -> dict:
    """One trial, in the calling process (the campaign forks one per trial)."""
    import nbflow as nb

    sys.setswitchinterval(1e-6)  # switch threads every few bytecodes
    rng = random.Random(f"{seed}:{trial}")
    plan = plan_trial(rng)
    shared = Shared(nb)
    results: list = [None] * len(plan)
    problems: list[dict] = []
    start = threading.Barrier(len(plan))

    def work(i, baseline, tasks):
        try:
            start.wait(60)
            with baseline_context(nb, baseline):
                check_modes(nb, baseline, "at the start")
                results[i] = [run_task(nb, shared, t, s, baseline) for t, s in tasks]
            if modes(nb) != expected_modes("grad"):
                raise Leak(f"after the thread's {baseline} block: modes {modes(nb)}")
        except Leak as e:
            problems.append({"outcome": "leak", "thread": i, "error": str(e)[:300]})
        except BaseException as e:
            problems.append({"outcome": "error", "thread": i, "error": _message(e)})

    threads = [
        threading.Thread(target=work, args=(i, b, tasks), daemon=True)
        for i, (b, tasks) in enumerate(plan)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    report = {"threads": len(plan), "tasks": sum(len(t) for _, t in plan), "plan": plan}
    if any(t.is_alive() for t in threads):
        return dict(report, outcome="hang", problems=problems)
    if problems:
        return dict(report, outcome=problems[0]["outcome"], problems=problems)
    sys.setswitchinterval(0.005)
    for i, (baseline, tasks) in enumerate(plan):
        with baseline_context(nb, baseline):
            for (task, s), got in zip(tasks, results[i]):
                want = run_task(nb, shared, task, s, baseline)
                same = len(got) == len(want) and all(
                    g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
                    for g, w in zip(got, want)
                )
                if not same:
                    problem = {"outcome": "mismatch", "thread": i, "task": task, "seed": s}
                    return dict(report, outcome="mismatch", problems=[problem])
    return dict(report, outcome="ok", problems=[])


def _message(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 300 else text[:297] + "..."
