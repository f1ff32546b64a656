"""Fuzz and stress campaigns against nbflow (--campaign):

- loaders (the default): programs (the JSON document and its .npz) and checkpoints. Reports
  inputs tried, crashes (a worker process died: segfault, abort, OOM kill), hangs (an input
  over one second) and untyped exceptions (anything but an NbflowError);
- threads: 2-8 threads at once in a fresh process training eagerly, calling a shared @jit
  function and a shared program, using ops first, each in its own grad mode, autocast or
  check; results must equal single-threaded ones and no mode may leak (tools/fuzz_threads.py);
- kill-save: nb.save of a Program, a state_dict and a .safetensors file SIGKILLed at random
  moments; the path must load the previous or the new version (tools/fuzz_kill_save.py);
- api: random arguments of wrong types, shapes and dtypes to nbflow's public functions, ops,
  Tensor methods, layers and optimizers; a result or a typed nbflow error with a clear message
  are the only outcomes allowed (tools/fuzz_api.py).

    python tools/fuzz_campaign.py                       # 100,000 inputs on 2 workers
    python tools/fuzz_campaign.py --inputs 10000 --workers 1 --seed 3 --json report.json
    python tools/fuzz_campaign.py --campaign api --inputs 20000 --seed 1
    python tools/fuzz_campaign.py --campaign threads --inputs 200 --chunk-size 10
    python tools/fuzz_campaign.py --campaign kill-save --inputs 600 --chunk-size 50

The loaders campaign's inputs, in turn:
- bytes: a seed file of tests/fuzz_seeds/ or the valid program, with bit flips, byte
  insertions and deletions, truncation, a chunk spliced in from another seed, or a digit run
  swapped for a huge number; loaded with nbflow.graph.serialize.loads;
- tree: the valid program document with one field replaced by an interesting value (huge,
  negative, wrong type, traversal name, ...); when it still loads, its parameters are read
  and the program is run on zeros (a program that passes the loader must run or raise a
  typed error);
- random: a random JSON value as a document;
- npz: the valid parameters file with bytes damaged, read by load_params;
- ckpt: a valid checkpoint or a checkpoint seed with bytes damaged, read by load_state;
  one that loads must be byte for byte the valid checkpoint (checkpoints are hashed).

Each worker handles chunks of inputs whose random generator is seeded by (seed, chunk), so a
chunk that crashed is reproduced with `--chunk N`. Workers run under an address-space limit
(RLIMIT_AS, --memory-limit-gib) so an allocation a check missed fails with MemoryError
(counted as untyped) instead of the kernel's OOM killer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SEEDS_DIR = os.path.join(ROOT, "tests", "fuzz_seeds")
KINDS = ("bytes", "tree", "random", "npz", "ckpt")
HANG_SECONDS = 1.0
KILL_SECONDS = 20  # an input still running then is abandoned (counted as a hang)

INTERESTING = [
    None, True, False, 0, -1, -2, 1, 2**31, 2**32 + 1, 2**62, 2**63, -(2**63), 2**64, 1.5,
    -0.0, 1e308, "", "nan", "inf", "-inf", "f16", "f64", "i64", "bool", "x", "../x", "a/b",
    "..\\x", "\x00", "t0", "w1", "x" * 300, [], [0], [-1], [2**40, 2**40], [1] * 40, {},
    {"a": 1}, [[0, 1]], [None], [[1, 2], [3]],
]  # fmt: skip


class _Timeout(Exception):
    pass


class SilentCorruption(Exception):
    """A damaged input accepted where damage must be detected (counted as untyped)."""


def _alarm(signum, frame):
    raise _Timeout


# ---------------------------------------------------------------- the corpus (per worker)


class Corpus:
    def __init__(self, folder: str):
        sys.path.insert(0, HERE)
        import make_fuzz_seeds as seeds

        import nbflow as nb
        from nbflow.graph import serialize

        self.nb, self.serialize = nb, serialize
        main, scope = seeds.mlp_program()
        self.folder = folder
        self.path = os.path.join(folder, "valid.json")
        serialize.save(main, self.path, scope)
        with open(self.path, "rb") as f:
            self.program_text = f.read()
        with open(self.path + ".npz", "rb") as f:
            self.npz = f.read()
        self.doc = json.loads(self.program_text)
        self.doc["params_sha256"] = None
        self.doc["sha256"] = None  # unsealed: a mutated tree that still checks out is run
        self.ckpt = seeds.saved_checkpoint()
        self.texts, self.ckpts = [self.program_text], [self.ckpt]
        for name in sorted(os.listdir(SEEDS_DIR)):
            with open(os.path.join(SEEDS_DIR, name), "rb") as f:
                data = f.read()
            if name.endswith(".json"):
                self.texts.append(data)
            elif name.endswith(".ckpt"):
                self.ckpts.append(data)
        self.scratch = os.path.join(folder, "input")
        self.program = serialize.loads(self.program_text)
        self.run(self.program, serialize.load_params(self.path, self.program))  # warm kernels

    def run(self, program, scope):
        block = program.global_block()
        feed = {}
        for v in block.vars.values():
            if v.is_data:
                shape = [2 if n == -1 else n for n in v.shape]
                if any(n > 64 for n in shape):
                    return
                feed[v.name] = self.nb.zeros(*shape, dtype=v.dtype).numpy()
        fetch = [v for v in block.vars.values() if not v.persistable][-1:]
        self.nb.Executor().run(program, feed, fetch, scope)


# ---------------------------------------------------------------- mutations


def mutate_bytes(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(7)
        n = len(out)
        if choice == 0 and n:
            for _ in range(rng.randint(1, 8)):
                out[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif choice == 1:
            out[rng.randint(0, n) : rng.randint(0, n)] = b""
        elif choice == 2:
            out.insert(rng.randint(0, n), rng.randrange(256))
        elif choice == 3:
            del out[rng.randint(0, n) :]
        elif choice == 4 and others:
            src = rng.choice(others)
            a = rng.randint(0, len(src))
            chunk = src[a : a + rng.randint(1, 200)]
            at = rng.randint(0, n)
            out[at:at] = chunk
        elif choice == 5:
            digits = [i for i in range(n) if 48 <= out[i] <= 57]
            if digits:
                at = rng.choice(digits)
                out[at : at + 1] = str(rng.choice([2**63, 2**64, 10**30, -1, 0])).encode()
        elif n:
            at = rng.randrange(n)
            out[at:at] = out[at : at + rng.randint(1, 64)]
    return bytes(out)


def interesting(rng: random.Random):
    """One of INTERESTING, copied (the campaign mutates what it puts in a document)."""
    return json.loads(json.dumps(rng.choice(INTERESTING)))


def random_json(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth > 4 or r < 0.4:
        if rng.random() < 0.7:
            return interesting(rng)
        return rng.random() * 10 ** rng.randint(0, 20)
    if r < 0.7:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["format", "version", "blocks", "vars", "ops", "name", "shape", "idx", "parent", "x"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def mutate_tree(rng: random.Random, doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 3)):
        node, parent, key = doc, None, None
        for _ in range(rng.randint(1, 8)):
            if isinstance(node, dict) and node:
                parent, key = node, rng.choice(sorted(node))
            elif isinstance(node, list) and node:
                parent, key = node, rng.randrange(len(node))
            else:
                break
            node = parent[key]
        if parent is None:
            continue
        action = rng.randrange(4)
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))
        else:
            parent[key] = interesting(rng) if action == 2 else random_json(rng)
    return doc


# ---------------------------------------------------------------- one input


def one_input(corpus: Corpus, rng: random.Random, kind: str):
    nb, serialize = corpus.nb, corpus.serialize
    if kind == "bytes":
        # the valid program half the time: its damaged copies get furthest into the checks
        base = corpus.program_text if rng.random() < 0.5 else rng.choice(corpus.texts)
        text = mutate_bytes(rng, base, corpus.texts)
        serialize.loads(text)
    elif kind == "random":
        serialize.loads(json.dumps(random_json(rng)))
    elif kind == "tree":
        program = serialize.loads(json.dumps(mutate_tree(rng, corpus.doc)))
        corpus.run(program, serialize.load_params(corpus.path, program))
    elif kind == "npz":
        with open(corpus.scratch + ".npz", "wb") as f:
            f.write(mutate_bytes(rng, corpus.npz, [corpus.npz]))
        serialize.load_params(corpus.scratch, corpus.program)
    else:
        data = mutate_bytes(rng, rng.choice(corpus.ckpts), corpus.ckpts)
        with open(corpus.scratch, "wb") as f:
            f.write(data)
        nb.load_state(corpus.scratch)
        if data != corpus.ckpt:  # hashed end to end: a changed file must never load
            raise SilentCorruption("a damaged checkpoint loaded")


_CORPUS: Corpus | None = None


def _init(memory_limit_gib: float):
    global _CORPUS
    if memory_limit_gib > 0:
        import resource

        limit = int(memory_limit_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _CORPUS = Corpus(tempfile.mkdtemp(prefix="nbflow-fuzz-"))
    signal.signal(signal.SIGALRM, _alarm)


def run_chunk(seed: int, chunk: int, count: int) -> dict:
    from nbflow.errors import NbflowError

    rng = random.Random(f"{seed}:{chunk}")
    result = {"inputs": 0, "typed": 0, "ok": 0, "hangs": [], "untyped": [], "by_kind": {}}
    for i in range(count):
        kind = KINDS[(chunk * count + i) % len(KINDS)]
        start = time.perf_counter()
        signal.alarm(KILL_SECONDS)
        try:
            one_input(_CORPUS, rng, kind)
            outcome = "ok"
        except NbflowError:
            outcome = "typed"
        except _Timeout:
            outcome = "killed"
        except (Exception, RecursionError, MemoryError) as e:
            outcome = "untyped"
            error = f"{type(e).__name__}: {e}"[:300]
            result["untyped"].append({"chunk": chunk, "input": i, "kind": kind, "error": error})
        finally:
            signal.alarm(0)
        took = time.perf_counter() - start
        if took > HANG_SECONDS or outcome == "killed":
            result["hangs"].append({"chunk": chunk, "input": i, "kind": kind, "seconds": took})
        result["inputs"] += 1
        if outcome in ("ok", "typed"):
            result[outcome] += 1
        per = result["by_kind"].setdefault(kind, {"inputs": 0, "ok": 0})
        per["inputs"] += 1
        per["ok"] += outcome == "ok"
    return result


# ---------------------------------------------------------------- the campaign


def campaign(inputs: int, workers: int, seed: int, chunk_size: int, memory: float, only=None):
    chunks = [only] if only is not None else list(range(-(-inputs // chunk_size)))
    totals = {"inputs": 0, "ok": 0, "typed": 0, "crashes": [], "hangs": [], "untyped": []}
    totals["by_kind"] = {}
    start = time.time()
    broken = _run_pool(chunks, workers, seed, chunk_size, memory, totals, start)
    # a dead worker breaks the whole pool: rerun the unfinished chunks one by one, so each
    # crash is pinned to its chunk
    for c in broken:
        if _run_pool([c], 1, seed, chunk_size, memory, totals, start):
            totals["crashes"].append({"chunk": c})
    print(file=sys.stderr)
    totals["seconds"] = round(time.time() - start, 1)
    return totals


def _run_pool(chunks, workers, seed, chunk_size, memory, totals, start) -> list[int]:
    """Run the chunks on a pool of workers, adding to totals; returns the chunks that did
    not finish because a worker died."""
    broken = []
    with ProcessPoolExecutor(workers, initializer=_init, initargs=(memory,)) as pool:
        futures = {c: pool.submit(run_chunk, seed, c, chunk_size) for c in chunks}
        for c, fut in futures.items():
            try:
                r = fut.result()
            except BrokenProcessPool:
                broken.append(c)
                continue
            for key in ("inputs", "ok", "typed"):
                totals[key] += r[key]
            totals["hangs"] += r["hangs"]
            totals["untyped"] += r["untyped"]
            for kind, per in r["by_kind"].items():
                k = totals["by_kind"].setdefault(kind, {"inputs": 0, "ok": 0})
                k["inputs"] += per["inputs"]
                k["ok"] += per["ok"]
            elapsed = time.time() - start
            print(f"\r{totals['inputs']} inputs, {elapsed:.0f} s", end="", file=sys.stderr)
    return broken


# ---------------------------------------------------------------- threads, kill-save, api

STRESS = ("threads", "kill-save", "api")
# per campaign: the outcomes that pass (anything else is a defect the campaign found)
PASSING = {
    "threads": ("ok",),
    "kill-save": ("previous", "new", "missing"),
    "api": ("ok", "typed", "binding"),
}
TRIAL_SECONDS = {"threads": 300, "kill-save": 120}
API_HANG_SECONDS = 60  # a call still running then is a hang (a first use compiles for seconds)
_API = None


def _init_stress(name: str, memory_limit_gib: float):
    """A worker: nbflow imported, nothing run (each threads trial forks a fresh process from
    it); the api campaign's worker under an address-space limit, with its targets."""
    global _API
    sys.path.insert(0, HERE)
    import nbflow  # noqa: F401

    if name == "api":
        import fuzz_api

        if memory_limit_gib > 0:
            import resource

            limit = int(memory_limit_gib * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        _API = fuzz_api.ApiFuzzer()
        signal.signal(signal.SIGALRM, _alarm)


def _forked(fn, args, seconds: float) -> dict:
    """fn(*args) in a forked child; its dict, or a crash or hang outcome."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            data = json.dumps(fn(*args)).encode()
        except BaseException as e:
            data = json.dumps({"outcome": "error", "error": f"{type(e).__name__}: {e}"[:300]})
            data = data.encode()
        with os.fdopen(write, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(write)
    import selectors

    chunks, deadline = [], time.monotonic() + seconds
    with os.fdopen(read, "rb") as f, selectors.DefaultSelector() as sel:
        sel.register(f, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"outcome": "hang", "error": f"still running after {seconds} s"}
            data = os.read(f.fileno(), 1 << 16)
            if not data:
                break
            chunks.append(data)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        return {"outcome": "crash", "error": f"wait status {status}"}
    return json.loads(b"".join(chunks))


def run_stress_chunk(name: str, seed: int, chunk: int, count: int) -> dict:
    """count trials (threads, kill-save) or calls (api) of chunk; outcome counts by kind and
    the inputs that did not pass."""
    result = {"inputs": 0, "outcomes": {}, "by_kind": {}, "problems": []}
    if name == "api":
        import fuzz_api

        rng = random.Random(f"{seed}:{chunk}")
    for i in range(count):
        trial = chunk * count + i
        if name == "threads":
            import fuzz_threads

            r = _forked(fuzz_threads.run_trial, (seed, trial), TRIAL_SECONDS[name])
            kind = f"{r.get('threads', '?')} threads"
        elif name == "kill-save":
            import fuzz_kill_save

            r = _forked(fuzz_kill_save.run_trial, (seed, trial), TRIAL_SECONDS[name])
            kind = r.get("kind", "?")
            if r.get("leftovers"):
                r = dict(r, outcome="leftovers", error=f"left behind: {r['leftovers']}")
        else:
            kind = rng.choice(_API.names)
            r = {"outcome": "ok"}
            signal.alarm(API_HANG_SECONDS)
            try:
                _API.call(kind, rng)
            except _Timeout:
                r = {"outcome": "hang", "error": f"over {API_HANG_SECONDS} s"}
            except (Exception, RecursionError, MemoryError) as e:
                r = {"outcome": fuzz_api.classify(e), "error": fuzz_api.message(e)}
                r["at"] = fuzz_api.where(e)
            finally:
                signal.alarm(0)
            r["target"], kind = kind, kind.split(".")[0]
        outcome = r["outcome"]
        result["inputs"] += 1
        result["outcomes"][outcome] = result["outcomes"].get(outcome, 0) + 1
        per = result["by_kind"].setdefault(kind, {})
        per[outcome] = per.get(outcome, 0) + 1
        if outcome not in PASSING[name]:
            result["problems"].append(dict(r, chunk=chunk, input=i))
    return result


def stress_campaign(name, inputs, workers, seed, chunk_size, memory, only=None) -> dict:
    chunks = [only] if only is not None else list(range(-(-inputs // chunk_size)))
    totals = {"inputs": 0, "outcomes": {}, "by_kind": {}, "problems": [], "crashes": []}
    start = time.time()
    with ProcessPoolExecutor(workers, initializer=_init_stress, initargs=(name, memory)) as pool:
        futures = {c: pool.submit(run_stress_chunk, name, seed, c, chunk_size) for c in chunks}
        for c, fut in futures.items():
            try:
                r = fut.result()
            except BrokenProcessPool:  # an api worker died: the chunk is the crash's
                totals["crashes"].append({"chunk": c})
                continue
            totals["inputs"] += r["inputs"]
            for outcome, n in r["outcomes"].items():
                totals["outcomes"][outcome] = totals["outcomes"].get(outcome, 0) + n
            for kind, per in r["by_kind"].items():
                k = totals["by_kind"].setdefault(kind, {})
                for outcome, n in per.items():
                    k[outcome] = k.get(outcome, 0) + n
            totals["problems"] += r["problems"]
            elapsed = time.time() - start
            print(f"\r{totals['inputs']} inputs, {elapsed:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    if totals["crashes"]:
        totals["outcomes"]["crash"] = len(totals["crashes"])
    totals["seconds"] = round(time.time() - start, 1)
    return totals


def _print_stress(name: str, report: dict, seed: int) -> None:
    print(f"{name}: {report['inputs']} inputs ({report['seconds']} s, seed {seed})")
    for outcome, n in sorted(report["outcomes"].items(), key=lambda kv: -kv[1]):
        verdict = "" if outcome in PASSING[name] else "   <- defect"
        print(f"  {outcome:10s} {n:7d}{verdict}")
    for kind, per in sorted(report["by_kind"].items()):
        counts = ", ".join(f"{o} {n}" for o, n in sorted(per.items(), key=lambda kv: -kv[1]))
        print(f"  {kind:12s} {counts}")
    for item in (report["crashes"] + report["problems"])[:30]:
        print("  ", {k: v for k, v in item.items() if v is not None})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk-size", type=int, default=500)
    parser.add_argument("--chunk", type=int, default=None, help="rerun one chunk only")
    parser.add_argument("--memory-limit-gib", type=float, default=4.0)
    parser.add_argument("--json", help="write the full report here")
    parser.add_argument("--campaign", choices=("loaders",) + STRESS, default="loaders")
    args = parser.parse_args(argv)
    if args.campaign != "loaders":
        report = stress_campaign(
            args.campaign, args.inputs, args.workers, args.seed, args.chunk_size,
            args.memory_limit_gib, args.chunk,
        )  # fmt: skip
        _print_stress(args.campaign, report, args.seed)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        return 1 if report["problems"] or report["crashes"] else 0
    report = campaign(
        args.inputs, args.workers, args.seed, args.chunk_size, args.memory_limit_gib, args.chunk
    )
    seeds = len([n for n in os.listdir(SEEDS_DIR) if not n.endswith(".npz")])
    print(f"inputs tried:        {report['inputs']}  ({report['seconds']} s, seed {args.seed})")
    print(f"  loaded/ran fine:   {report['ok']}")
    print(f"  typed errors:      {report['typed']}")
    print(f"crashes:             {len(report['crashes'])}")
    print(f"hangs over {HANG_SECONDS:.0f} s:     {len(report['hangs'])}")
    print(f"untyped exceptions:  {len(report['untyped'])}")
    print(f"seed files:          {seeds}")
    for kind, per in sorted(report["by_kind"].items()):
        print(f"  {kind:7s} {per['inputs']:7d} inputs, {per['ok']:6d} accepted")
    for item in (report["crashes"] + report["hangs"] + report["untyped"])[:20]:
        print("  ", item)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    bad = report["crashes"] or report["hangs"] or report["untyped"]
    return 1 if bad else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
