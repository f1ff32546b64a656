"""Checkpoints: round trips, optimizer state, crash safety (SIGKILL during a save), and
damaged or hostile files raising CheckpointError."""

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import nbflow as nb
from nbflow import checkpoint as ck
from nbflow.errors import CheckpointError


def _state():
    return {
        "model": {"w": nb.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), "b": nb.zeros(3)},
        "trainable": nb.tensor([1.0, 2.0], requires_grad=True),
        "f64": nb.tensor(np.linspace(0, 1, 5)),
        "mask": nb.tensor([True, False, True]),
        "ints": nb.tensor(np.array([1, -2], np.int32)),
        "scalar": nb.tensor(np.array(7, np.int64)),
        "half": nb.tensor(np.array([0.5, 1.5], np.float16)),
        "empty": nb.zeros(0, 4),
        "raw": np.arange(4, dtype=np.uint8),
        "optim": {
            "state": {0: {"step": 3}, 1: {}},
            "param_groups": [{"lr": 0.1, "nesterov": True}],
        },
        "history": [1.5, math.inf, -math.inf, math.nan, None, "text", ("a", 2)],
        "big": 2**62,
        "../../etc/passwd": "a key is data, never a path",
    }


def _assert_same(a, b):
    assert type(a) is type(b), (a, b)
    if isinstance(a, nb.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert b.numpy().flags.writeable and b.numpy().flags.c_contiguous
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


def test_round_trip_of_nested_state(tmp_path):
    path = tmp_path / "state.ckpt"
    state = _state()
    nb.save_state(state, path)
    _assert_same(state, nb.load_state(path))
    nb.save_state(state["history"], str(path))  # any storable root; str paths too
    _assert_same(state["history"], nb.load_state(str(path)))
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_save_and_load_take_a_state_dict_or_a_program(tmp_path):
    model = nb.nn.Linear(3, 2)
    nb.save(model.state_dict(), tmp_path / "model.ckpt")  # as torch.save(model.state_dict())
    other = nb.nn.Linear(3, 2)
    other.load_state_dict(nb.load(tmp_path / "model.ckpt"))
    assert np.array_equal(other.weight.numpy(), model.weight.numpy())

    program = nb.Program()
    with nb.program_guard(program):
        out = model(nb.static.data("x", [-1, 3]))
    nb.save(program, tmp_path / "program.json")
    loaded = nb.load(tmp_path / "program.json")
    assert isinstance(loaded, nb.Program)
    x = np.ones((2, 3), np.float32)
    (got,) = nb.Executor().run(loaded, {"x": x}, [out.name])
    np.testing.assert_allclose(got, model(nb.tensor(x)).numpy(), rtol=1e-6)

    with pytest.raises(TypeError, match="scope= is for saving a Program"):
        nb.save(model.state_dict(), tmp_path / "x.ckpt", nb.Scope())
    with pytest.raises(TypeError, match="a checkpoint of state, not a Program"):
        nb.load(tmp_path / "model.ckpt", nb.Scope())
    with pytest.raises(CheckpointError):  # a checkpoint's own budget
        nb.load(tmp_path / "model.ckpt", max_param_bytes=16)
    assert not (tmp_path / "x.ckpt").exists()


def test_unstorable_values_are_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "x.ckpt"
    for bad in ({"f": lambda: 0}, {1.5: 2}, {"o": np.array([object()])}, {"i": 2**70}):
        with pytest.raises(CheckpointError):
            nb.save_state(bad, path)
    deep = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(CheckpointError):
        nb.save_state(deep, path)
    assert os.listdir(tmp_path) == []


def test_optimizer_state_round_trip_resumes_training_identically(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)

    def train(w, opt, sched, steps):
        for _ in range(steps):
            loss = nb.cross_entropy(nb.tensor(x) @ w, nb.tensor(y))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()

    w = nb.tensor(0.1 * rng.standard_normal((4, 2)).astype(np.float32), requires_grad=True)
    opt = nb.optim.AdamW([w], lr=0.1, amsgrad=True)
    sched = nb.optim.StepLR(opt, step_size=2, gamma=0.5)
    train(w, opt, sched, 3)
    nb.save_state({"w": w, "optim": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "c")
    train(w, opt, sched, 4)  # the uninterrupted run

    saved = nb.load_state(tmp_path / "c")
    w2 = saved["w"]
    opt2 = nb.optim.AdamW([w2], lr=1.0)
    opt2.load_state_dict(saved["optim"])
    sched2 = nb.optim.StepLR(opt2, step_size=2, gamma=0.5)
    sched2.load_state_dict(saved["sched"])
    train(w2, opt2, sched2, 4)  # the resumed run
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    assert opt2.state[0]["step"].item() == 7 and opt2.lr == opt.lr


# ---------------------------------------------------------------- crash safety

CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import nbflow as nb
    from nbflow import checkpoint

    path, mode = sys.argv[1], sys.argv[2]
    write = checkpoint._write_array
    if mode == "pause":  # stop in the middle of the data, then wait to be killed
        def paused(f, a, calls=[0]):
            calls[0] += 1
            if calls[0] == 3:
                f.flush()
                print("MID", flush=True)
                time.sleep(60)
            write(f, a)
        checkpoint._write_array = paused
    version = 0
    while True:
        big = np.full((4, 1 << 20), version, np.float32)  # 16 MiB per version
        nb.save_state({"version": version, "w": [big[0], big[1], big[2], big[3]]}, path)
        print("SAVED", version, flush=True)
        version += 1
    """
)


def _start(tmp_path, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    path = tmp_path / "model.ckpt"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), mode],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    return proc, path


def _check_complete(path):
    state = nb.load_state(path)
    v = state["version"]
    assert all(a.shape == (1 << 20,) and np.all(a == v) for a in state["w"])
    return v


def test_kill_during_save_leaves_the_previous_checkpoint(tmp_path):
    previous = {"version": -1, "w": [np.full(1 << 20, -1, np.float32)] * 4}
    nb.save_state(previous, tmp_path / "model.ckpt")
    proc, path = _start(tmp_path, "pause")
    try:
        assert proc.stdout.readline().strip() == "MID"  # the child is mid-way through writing
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    assert _check_complete(path) == -1
    leftovers = [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert len(leftovers) == 1  # the interrupted write: a temporary file, never read
    with pytest.raises(CheckpointError):
        nb.load_state(tmp_path / leftovers[0])  # half a file is detected as such


def test_kill_at_random_times_while_saving_in_a_loop(tmp_path):
    rng = np.random.default_rng(0)
    for trial in range(3):
        proc, path = _start(tmp_path, "loop")
        try:
            assert proc.stdout.readline().startswith("SAVED")  # one complete version exists
            time.sleep(float(rng.uniform(0.0, 0.3)))
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            proc.kill()
        assert _check_complete(path) >= 0, trial


# ---------------------------------------------------------------- damaged and hostile files


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "good.ckpt"
    nb.save_state({"w": nb.tensor(np.arange(100, dtype=np.float32)), "n": 5, "b": [True]}, path)
    return path, path.read_bytes()


def _raises(tmp_path, data: bytes, match=None):
    path = tmp_path / "bad.ckpt"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=match):
        nb.load_state(path)


def test_truncations_are_detected(tmp_path, saved):
    _, data = saved
    for n in [0, 1, 7, 8, 16, 47, 48, 60, len(data) // 2, len(data) - 64, len(data) - 1]:
        _raises(tmp_path, data[:n])
    _raises(tmp_path, data + b"\0" * 64)  # extended


def test_every_bit_flip_is_detected(tmp_path, saved):
    _, data = saved
    rng = np.random.default_rng(0)
    positions = list(range(64)) + list(rng.integers(0, len(data), 300))
    for pos in positions:
        for bit in (0, 7) if pos < 64 else (int(rng.integers(8)),):
            flipped = bytearray(data)
            flipped[pos] ^= 1 << bit
            _raises(tmp_path, bytes(flipped))


def test_garbage_and_other_files(tmp_path):
    _raises(tmp_path, b"PK\x03\x04" + bytes(100), "magic")
    _raises(tmp_path, os.urandom(4096))
    with pytest.raises(CheckpointError, match="regular file"):
        nb.load_state(tmp_path)
    with pytest.raises(FileNotFoundError):
        nb.load_state(tmp_path / "missing")


def test_nb_load_reports_a_checkpoint_with_damaged_magic_as_a_checkpoint(tmp_path, saved):
    _, data = saved
    path = tmp_path / "damaged.ckpt"
    for pos, bit in ((0, 0), (3, 5), (7, 1)):
        damaged = bytearray(data)
        damaged[pos] ^= 1 << bit
        path.write_bytes(bytes(damaged))
        with pytest.raises(CheckpointError, match="wrong magic bytes.*the file is damaged"):
            nb.load(path)  # was: ProgramError, not a valid JSON program document
    path.write_bytes(b"PK\x03\x04" + bytes(100))  # not a checkpoint at all: the program loader's
    with pytest.raises(nb.ProgramError, match="not a valid JSON program document"):
        nb.load(path)


def _forge(manifest: dict, data: bytes = b"", raw: bytes | None = None) -> bytes:
    """A file with correct hashes around a hand-written manifest: only validation stops it."""
    manifest = dict(manifest)
    manifest.setdefault("data_sha256", hashlib.sha256(data).hexdigest())
    manifest.setdefault("data_bytes", len(data))
    return ck.framed(raw if raw is not None else json.dumps(manifest).encode()) + data


def _manifest(tree, tensors=()):
    return {"format": ck.FORMAT, "version": ck.VERSION, "tree": tree, "tensors": list(tensors)}


F32_4 = {"dtype": "<f4", "shape": [4], "offsets": [0, 16]}
DATA = np.arange(4, dtype=np.float32).tobytes() + bytes(48)

HOSTILE = {
    "wrong_shape": (
        _manifest({"tensor": 0, "requires_grad": False}, [{**F32_4, "shape": [5]}]),
        DATA,
    ),
    "negative_dim": (_manifest({"array": 0}, [{**F32_4, "shape": [-4]}]), DATA),
    "float_dim": (_manifest({"array": 0}, [{**F32_4, "shape": [4.0]}]), DATA),
    "huge_size": (_manifest({"array": 0}, [{**F32_4, "shape": [1 << 30, 1 << 30]}]), DATA),
    "huge_dims": (_manifest({"array": 0}, [{**F32_4, "shape": [1] * 40}]), DATA),
    "offset_past_end": (_manifest({"array": 0}, [{**F32_4, "offsets": [64, 80]}]), DATA),
    "overlapping_offsets": (
        _manifest({"list": [{"array": 0}, {"array": 1}]}, [F32_4, F32_4]),
        DATA,
    ),
    "object_dtype": (_manifest({"array": 0}, [{**F32_4, "dtype": "|O"}]), DATA),
    "pickle_dtype": (_manifest({"array": 0}, [{**F32_4, "dtype": "V16"}]), DATA),
    "unsigned_tensor": (
        _manifest({"tensor": 0, "requires_grad": False}, [{**F32_4, "dtype": "<u4"}]),
        DATA,
    ),
    "int_requires_grad": (
        _manifest({"tensor": 0, "requires_grad": True}, [{**F32_4, "dtype": "<i4"}]),
        DATA,
    ),
    "unused_array": (_manifest(None, [F32_4]), DATA),
    "array_used_twice": (_manifest({"list": [{"array": 0}, {"array": 0}]}, [F32_4]), DATA),
    "missing_array": (_manifest({"array": 3}, [F32_4]), DATA),
    "path_traversal_field": ({**_manifest(None), "file": "../../etc/passwd"}, b""),
    "path_traversal_member": (_manifest({"array": 0}, [{**F32_4, "name": "../../x.npy"}]), DATA),
    "unknown_tag": (_manifest({"pickle": "cos\nsystem"}), b""),
    "bad_float": (_manifest({"float": "1e400"}), b""),
    "int_out_of_range": (_manifest(2**64), b""),
    "bool_dict_key": (_manifest({"dict": [[True, 1]]}), b""),
    "duplicate_dict_key": (_manifest({"dict": [["a", 1], ["a", 2]]}), b""),
    "bad_version": ({**_manifest(None), "version": 2}, b""),
    "bad_format": ({**_manifest(None), "format": "pickle"}, b""),
    "data_bytes_lie": ({**_manifest(None), "data_bytes": 1 << 40}, b""),
    "bad_digest": ({**_manifest(None), "data_sha256": "x" * 64}, b""),
    "bool_values": (
        _manifest({"array": 0}, [{"dtype": "|b1", "shape": [2], "offsets": [0, 2]}]),
        b"\x01\x05" + bytes(62),
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_manifests_raise_checkpoint_error(tmp_path, name):
    manifest, data = HOSTILE[name]
    _raises(tmp_path, _forge(manifest, data))


def test_forged_files_are_otherwise_valid(tmp_path):
    # the control: a hand-made file that follows the format loads
    path = tmp_path / "ok.ckpt"
    path.write_bytes(_forge(_manifest({"dict": [["w", {"array": 0}]]}, [F32_4]), DATA))
    np.testing.assert_array_equal(nb.load_state(path)["w"], [0, 1, 2, 3])


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100000 + b"]" * 100000,  # deep nesting
        b'{"format": 1, "format": 2}',  # duplicate key
        b'{"tree": NaN}',
        b"\xff\xfe not utf-8",
        b'{"tree": ' + b"9" * 5000 + b"}",  # int digit limit
        b"[]",
    ],
)
def test_malformed_json_raises_checkpoint_error(tmp_path, raw):
    _raises(tmp_path, _forge({}, raw=raw))


def test_size_budget_is_checked_before_reading(tmp_path, saved):
    path, data = saved
    with pytest.raises(CheckpointError, match="budget"):
        nb.load_state(path, max_bytes=len(data) - 1)
    header = bytearray(data[:48])
    header[8:16] = (1 << 40).to_bytes(8, "little")  # a manifest length past the file
    _raises(tmp_path, bytes(header) + data[48:], "manifest length")


def test_saved_files_get_the_mode_a_plain_write_gives(tmp_path):
    # (the temporary file the save renames is made 0600; the result must not stay so)
    umask = os.umask(0o027)
    try:
        path = tmp_path / "state.nbf"
        nb.save_state({"w": nb.ones(2)}, path)
        assert path.stat().st_mode & 0o777 == 0o640
        os.chmod(path, 0o604)  # overwriting keeps the file's own mode
        nb.save_state({"w": nb.zeros(2)}, path)
        assert path.stat().st_mode & 0o777 == 0o604
        program = tmp_path / "p.nbprog"
        main = nb.Program()
        with nb.program_guard(main):
            nb.static.data("x", [2])
        nb.save(main, program)
        assert program.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(umask)
