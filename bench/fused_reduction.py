"""Graph mode's fused trailing reductions (graph/fusion.py) against the same program unfused,
eager nbflow, numpy, PyTorch and JAX (each when it imports), timed in one process with the
peers' repeats interleaved round by round (bench/run.py's Case and measure).

    python bench/fused_reduction.py [--n N]

Workloads on float32: a mean of squared errors over N elements, a sum of tanh(x*w+b) over N
elements, row sums of exp(x - 1) and column sums of x*y over (N/1024, 1024). Prints each
peer's milliseconds and the ratio fused / unfused and fused / numpy.
"""

from __future__ import annotations

import argparse

import numpy as np
import run as B

nb, torch, jax = B.nbflow, B.torch, B.jax
jnp = B.jnp if jax is not None else None

# name -> (function of a module (nbflow, torch or jax.numpy) and two arrays of it, the numpy
# version, "flat" (N elements) or "rows" (N/1024 rows of 1024))
WORKLOADS = {
    "mean((p - y)**2)": (
        lambda m, p, y: m.mean((p - y) * (p - y)),
        lambda p, y: np.mean((p - y) * (p - y)),
        "flat",
    ),
    "sum(tanh(p * y + 1))": (
        lambda m, p, y: m.sum(m.tanh(p * y + 1.0)),
        lambda p, y: np.sum(np.tanh(p * y + 1.0)),
        "flat",
    ),
    "sum(exp(p - 1), axis=-1)": (
        lambda m, p, y: m.sum(m.exp(p - 1.0), axis=-1),
        lambda p, y: np.sum(np.exp(p - 1.0), axis=-1),
        "rows",
    ),
    "sum(p * y, axis=0)": (
        lambda m, p, y: m.sum(p * y, axis=0),
        lambda p, y: np.sum(p * y, axis=0),
        "rows",
    ),
}


def graph_case(peer, fn, p, y, fuse):
    main = nb.Program()
    with nb.program_guard(main):
        a, b = nb.static.data("p", list(p.shape)), nb.static.data("y", list(y.shape))
        out = fn(nb, a, b)
    exe = nb.Executor(fuse=fuse)
    feed = {"p": nb.from_numpy(p), "y": nb.from_numpy(y)}
    env = {"run": exe.run, "main": main, "feed": feed, "out": [out], "scope": nb.Scope()}
    return B.Case(peer, "run(main, feed, out, scope)", env)


def cases(fn, np_fn, p, y):
    out = [
        graph_case("fused", fn, p, y, True),
        graph_case("unfused", fn, p, y, False),
        B.Case("eager", "f(nb, p, y)", {"f": fn, "nb": nb, "p": nb.tensor(p), "y": nb.tensor(y)}),
        B.Case("numpy", "f(p, y)", {"f": np_fn, "p": p, "y": y}),
    ]
    if torch is not None:
        env = {"f": fn, "t": torch, "p": torch.from_numpy(p), "y": torch.from_numpy(y)}
        out.append(B.Case("torch", "f(t, p, y)", env))
    if jax is not None:
        jitted = jax.jit(lambda p, y: fn(jnp, p, y))
        env = {"f": jitted, "p": jnp.asarray(p), "y": jnp.asarray(y)}
        out.append(B.Case("jax", "f(p, y).block_until_ready()", env))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    for name, (fn, np_fn, kind) in WORKLOADS.items():
        shape = (args.n,) if kind == "flat" else (args.n // 1024, 1024)
        p, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        times, errors = B.measure(cases(fn, np_fn, p, y), args.repeats, 0.05)
        cells = "  ".join(f"{k} {v * 1e3:6.2f}" for k, v in times.items() if v)
        ratio = times["fused"] / times["unfused"], times["fused"] / times["numpy"]
        print(f"{name:26s} ms: {cells}  | fused/unfused {ratio[0]:.2f}, fused/numpy {ratio[1]:.2f}")
        for peer, error in errors.items():
            print(f"  {peer}: {error}")


if __name__ == "__main__":
    main()
