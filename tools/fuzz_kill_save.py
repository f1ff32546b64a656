"""The kill-during-save campaign of tools/fuzz_campaign.py (--campaign kill-save). One trial:
save version 0 of a thing to a path (or nothing, one trial in five: the kill then lands in the
first save ever), fork a child that saves versions first, first + 1, ... to the same path
without end, SIGKILL it at a random moment, then load the path. Half the trials wait for the
child to report one completed save before the random wait (up to a save and a half), so that
both the previous and the new version are seen however slow the machine's fork is:

- previous: the version saved before the kill loads, whole;
- new: a version the killed child saved loads, whole;
- missing: no file, FileNotFoundError (only where nothing was saved before the kill);
- refused: a typed error (nbflow.errors) refuses the file: the previous version is lost;
- broken: anything else: an untyped error, a mix of versions, an older version, or no file
  where one was saved before.

Then a save that completes must load, and leave no temporary file behind (leftovers).
Kinds: a Program with its parameters (nb.save(program, path, scope)), a Module's state_dict
(nb.save(model.state_dict(), path), a checkpoint) and the same as a .safetensors file.
"""

from __future__ import annotations

import os
import random
import select
import signal
import tempfile
import time

import numpy as np

KINDS = ("program", "state_dict", "safetensors")
FILES = {
    "program": ["model.json", "model.json.npz"],
    "state_dict": ["model.ckpt"],
    "safetensors": ["model.safetensors"],
}


class Thing:
    """Saving and loading one kind at one parameter size, a version in every part of it."""

    def __init__(self, kind: str, rows: int):
        import nbflow as nb

        self.nb, self.kind, self.rows = nb, kind, rows
        self.name = FILES[kind][0]

    def save(self, path: str, version: int) -> None:
        nb = self.nb
        full = np.full((self.rows, 64), version, np.float32)
        if self.kind == "program":
            main = nb.Program()
            with nb.program_guard(main):
                x = nb.static.data("x", [-1, self.rows])
                w = nb.static.create_parameter("w", [self.rows, 64])
                b = nb.static.create_parameter("b", [64])
                nb.sum(x @ w + b) * float(version)
            scope = nb.Scope()
            scope["w"] = nb.tensor(full)
            scope["b"] = nb.tensor(np.full(64, version, np.float32))
            nb.save(main, path, scope)
            return
        model = nb.nn.Linear(self.rows, 64)
        with nb.no_grad():
            model.weight.copy_(nb.tensor(full.T.copy()))
            model.bias.fill_(float(version))
        nb.save(model.state_dict(), path)

    def version(self, path: str) -> int:
        """The version loaded from path; AssertionError when its parts disagree."""
        nb = self.nb
        if self.kind == "program":
            scope = nb.Scope()
            program = nb.load(path, scope)
            values = {float(v) for n in ("w", "b") for v in np.unique(scope.value(n))}
            ops = program.global_block().ops
            values |= {float(n.attrs["value"]) for n in ops if n.op.name == "full"}
        else:
            state = nb.load(path)
            values = {float(v) for t in state.values() for v in np.unique(np.asarray(t))}
        assert len(values) == 1, f"a mix of versions {sorted(values)[:5]}"
        return int(values.pop())


def _killed_saver(thing: Thing, path: str, first: int, after_save: bool, seconds: float) -> None:
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(done_read)
            version = first
            while True:
                thing.save(path, version)
                os.write(done_write, b"s")
                version += 1
        finally:
            os._exit(1)
    os.close(done_write)
    # the wait for a completed save is bounded: a child that died early reads as end of file
    if after_save:
        select.select([done_read], [], [], 60.0)
    time.sleep(seconds)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(done_read)


def run_trial(seed: int, trial: int) -> dict:
    """One kill; {"kind", "outcome", "leftovers", "error"}."""
    from nbflow.errors import NbflowError

    rng = random.Random(f"{seed}:{trial}")
    kind = KINDS[trial % len(KINDS)]
    thing = Thing(kind, rng.choice((16, 256, 1024, 4096)))
    folder = tempfile.mkdtemp(prefix="nbflow-kill-")
    path = os.path.join(folder, thing.name)
    fresh = rng.random() < 0.2
    thing.save(path, 0)  # the first save in a process is slower: time the second
    started = time.perf_counter()
    thing.save(path, 0)
    one_save = time.perf_counter() - started
    if fresh:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
    first = 1000 * (trial + 1)
    after_save = rng.random() < 0.5
    _killed_saver(thing, path, first, after_save, rng.uniform(0, 1.5 * one_save))
    report = {"kind": kind, "fresh": fresh, "after_save": after_save, "error": None}
    try:
        version = thing.version(path)
        if not fresh and version == 0:
            report["outcome"] = "previous"
        elif version >= first:
            report["outcome"] = "new"
        else:
            report["outcome"] = "broken"
            report["error"] = f"version {version} loaded"
    except FileNotFoundError as e:
        report["outcome"] = "missing" if fresh else "broken"
        report["error"] = f"{type(e).__name__}: {e}"[:300]
    except NbflowError as e:
        report["outcome"] = "refused"
        report["error"] = f"{type(e).__name__}: {e}"[:300]
    except BaseException as e:
        report["outcome"] = "broken"
        report["error"] = f"{type(e).__name__}: {e}"[:300]
    thing.save(path, 7)  # a save that completes loads, and tidies what killed saves left
    left = sorted(os.listdir(folder))
    report["leftovers"] = [n for n in left if n not in FILES[kind]]
    if thing.version(path) != 7 or sorted(FILES[kind]) != [n for n in left if n in FILES[kind]]:
        report["outcome"], report["error"] = "broken", f"the save after the kill: {left}"
    for name in left:
        os.remove(os.path.join(folder, name))
    os.rmdir(folder)
    return report
