"""Saves killed at random moments (issue 42): a Program's save (a document and its .npz) and a
checkpoint's leave the previous or the new version loadable whenever the process dies, never
neither and never a mix, and the next save to the path removes what killed saves left."""

import os
import random
import signal
import time

import numpy as np
import pytest

import nbflow as nb

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked saver")

KILLS = 40
SHAPE = (512, 256)  # 0.5 MiB a parameter: a save takes some milliseconds


def _program(version: int):
    """A program whose document and parameters both say `version`."""
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, SHAPE[0]])
        w = nb.static.create_parameter("w", SHAPE)
        b = nb.static.create_parameter("b", [SHAPE[1]])
        nb.sum(x @ w + b) * float(version)
    scope = nb.Scope()
    scope["w"] = nb.tensor(np.full(SHAPE, version, np.float32))
    scope["b"] = nb.tensor(np.full(SHAPE[1], version, np.float32))
    return main, scope


def _loaded_version(path: str) -> int:
    scope = nb.Scope()
    program = nb.load(path, scope)
    versions = {float(a) for name in ("w", "b") for a in np.unique(scope.value(name))}
    constants = [n.attrs["value"] for n in program.global_block().ops if n.op.name == "full"]
    assert len(versions) == 1 and constants == list(versions), (versions, constants)
    return int(versions.pop())


def _kill_while_saving(path: str, save, first: int, seconds: float) -> None:
    """Fork a child saving versions first, first + 1, ... to path; kill it after `seconds`."""
    pid = os.fork()
    if pid == 0:  # the child: save until killed
        try:
            version = first
            while True:
                save(path, version)
                version += 1
        finally:
            os._exit(1)
    time.sleep(seconds)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _killed_saves(tmp_path, name, save, loaded_version):
    path = str(tmp_path / name)
    save(path, 0)
    started = time.perf_counter()
    save(path, 0)
    one_save = time.perf_counter() - started
    rng = random.Random(42)
    last = 0
    for kill in range(KILLS):
        first = 1000 * (kill + 1)  # each child's versions above every earlier one's
        _kill_while_saving(path, save, first, rng.uniform(0, 3 * one_save))
        version = loaded_version(path)  # raises when neither version loads
        assert version == last or version >= first, (kill, version, last)
        last = version
    save(path, 7)  # a save that completes removes the leftovers of killed ones
    assert loaded_version(path) == 7
    return sorted(os.listdir(tmp_path))


def _save_program(path: str, version: int):
    main, scope = _program(version)
    nb.save(main, path, scope)


def test_a_program_save_killed_at_random_moments_leaves_a_loadable_program(tmp_path):
    files = _killed_saves(tmp_path, "model.json", _save_program, _loaded_version)
    assert files == ["model.json", "model.json.npz"]


def _save_checkpoint(path: str, version: int):
    nb.save({"w": nb.tensor(np.full(SHAPE, version, np.float32)), "version": version}, path)


def _checkpoint_version(path: str) -> int:
    state = nb.load(path)
    assert np.all(state["w"].numpy() == state["version"])
    return state["version"]


def test_a_checkpoint_save_killed_at_random_moments_leaves_a_loadable_checkpoint(tmp_path):
    files = _killed_saves(tmp_path, "model.ckpt", _save_checkpoint, _checkpoint_version)
    assert files == ["model.ckpt"]


def test_a_save_cut_short_before_its_last_rename_loads_the_new_program(tmp_path, monkeypatch):
    """The document is replaced, the parameters are still under their staged name: the new
    program loads (its document finds them by their hash), and the next save tidies up."""
    from nbflow.graph import serialize

    path = str(tmp_path / "model.json")
    _save_program(path, 1)
    publish = serialize._publish

    def stop_before_last(tmp, target):
        if target == path + ".npz":
            raise KeyboardInterrupt  # as a kill there would
        return publish(tmp, target)

    monkeypatch.setattr(serialize, "_publish", stop_before_last)
    with pytest.raises(KeyboardInterrupt):
        _save_program(path, 2)
    monkeypatch.setattr(serialize, "_publish", publish)
    assert len(os.listdir(tmp_path)) == 3  # the staged parameters beside the old ones
    assert _loaded_version(path) == 2
    _save_program(path, 3)
    assert sorted(os.listdir(tmp_path)) == ["model.json", "model.json.npz"]
    assert _loaded_version(path) == 3
