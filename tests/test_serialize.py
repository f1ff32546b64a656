"""Saving and loading Programs: round trips (text, training in a fresh process, index keys,
every op's forward and backward program) and hostile documents and parameter files, which
must raise ProgramError and nothing else."""

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_all_ops import SAMPLES

import nbflow as nb
from nbflow import testing as nt
from nbflow.errors import ProgramError
from nbflow.graph import serialize
from nbflow.graph.serialize import (
    dumps,
    load,
    load_params,
    load_program,
    loads,
    save,
)
from nbflow.ops.creation import Generator


def mlp():
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 4])
        y = nb.static.data("y", [-1], dtype="int64")
        w1 = nb.static.create_parameter("w1", [4, 8])
        b1 = nb.static.create_parameter("b1", [8], initializer=("constant", 0.0))
        w2 = nb.static.create_parameter("w2", [8, 3])
        loss = nb.cross_entropy(nb.relu(x @ w1 + b1) @ w2, y)
        for p, g in nb.append_backward(loss):
            nb.sub_(p, g * 0.5)
    return main, startup, loss


def data(n=32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)


def initialised():
    main, startup, loss = mlp()
    scope = nb.Scope()
    nb.manual_seed(0)
    nb.Executor().run(startup, scope=scope)
    return main, loss, scope


def train(program, loss_name, scope, steps=5):
    x, y = data()
    exe = nb.Executor()
    fetch = [loss_name, "w1", "b1", "w2"]  # the updated params keep the update ops
    return [float(exe.run(program, {"x": x, "y": y}, fetch, scope)[0]) for _ in range(steps)]


@pytest.fixture
def saved(tmp_path):
    """An initialised MLP training program saved to tmp_path/mlp.json (+ .npz)."""
    main, loss, scope = initialised()
    path = str(tmp_path / "mlp.json")
    save(main, path, scope)
    return path, main, loss, scope


# ---------------------------------------------------------------- round trips


def test_round_trip_prints_the_same_program_and_values(saved, tmp_path):
    path, main, _, scope = saved
    assert sorted(os.listdir(tmp_path)) == ["mlp.json", "mlp.json.npz"]  # no temp files left
    loaded_scope = nb.Scope()
    loaded = load(path, loaded_scope)
    assert str(loaded) == str(main)
    assert "  %w1!: f32[4,8] = sub_(%w1, " in str(loaded)
    assert sorted(loaded_scope) == ["b1", "w1", "w2"]
    for name in loaded_scope:
        np.testing.assert_array_equal(loaded_scope.value(name), scope.value(name))
    assert str(load_program(path)) == str(main)


def test_startup_program_round_trips_and_random_ops_lose_their_generator():
    _, startup, _ = mlp()
    assert str(loads(dumps(startup))) == str(startup)
    program = nb.Program()
    with nb.program_guard(program):
        nb.uniform(2, 3, generator=Generator(5))
    doc = json.loads(dumps(program))
    assert doc["blocks"][0]["ops"][0]["attrs"]["generator"] is None
    assert loads(dumps(program)).global_block().ops[0].attrs["generator"] is None
    doc["blocks"][0]["ops"][0]["attrs"]["generator"] = 5
    with pytest.raises(ProgramError, match="'generator' can only be null"):
        loads(json.dumps(doc))


def test_fresh_process_trains_like_the_original(saved, tmp_path):
    path, main, loss, scope = saved
    x, y = data()
    np.savez(tmp_path / "data.npz", x=x, y=y)
    code = (
        "import json, sys\n"
        "import numpy as np\n"
        "import nbflow as nb\n"
        "from nbflow.graph.serialize import load\n"
        "path, data, loss = sys.argv[1:]\n"
        "scope = nb.Scope()\n"
        "program = load(path, scope)\n"
        "d = np.load(data)\n"
        "exe = nb.Executor()\n"
        "feed = {'x': d['x'], 'y': d['y']}\n"
        "out = [float(exe.run(program, feed, [loss, 'w1', 'b1', 'w2'], scope)[0])\n"
        "       for _ in range(5)]\n"
        "print(json.dumps(out))\n"
    )
    args = [sys.executable, "-c", code, path, str(tmp_path / "data.npz"), loss.name]
    root = os.path.dirname(os.path.dirname(os.path.abspath(nb.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        args, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    fresh = json.loads(result.stdout.splitlines()[-1])
    original = train(main, loss, scope)
    assert fresh == original
    assert original[-1] < original[0]


def test_without_a_scope_parameters_travel_with_the_program(saved):
    path, main, loss, scope = saved
    loaded = load(path)
    assert sorted(loaded.captured) == ["b1", "w1", "w2"]
    assert train(loaded, loss.name, nb.Scope()) == train(main, loss, scope)


def test_saving_without_a_scope_takes_captured_tensors(tmp_path):
    w = nb.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    program = nb.Program()
    with nb.program_guard(program):
        x = nb.static.data("x", [-1, 2])
        y = x @ w
    path = str(tmp_path / "p.json")
    save(program, path)
    loaded = load(path)
    (name,) = loaded.captured
    np.testing.assert_array_equal(loaded.captured[name].numpy(), w.numpy())
    feed = {"x": np.ones((3, 2), np.float32)}
    (out,) = nb.Executor().run(loaded, feed, [y.name], nb.Scope())
    np.testing.assert_array_equal(out, np.ones((3, 2)) @ w.numpy())


def test_getitem_with_slices_and_index_arrays_round_trips():
    program = nb.Program()
    with nb.program_guard(program):
        x = nb.static.data("x", [-1, 4, 5])
        i = nb.static.data("i", [3], dtype="int64")
        a = x[1:, ::-2, None, ...]
        b = x[:, i, 1:4]
        c = x[..., i]
        d = x[0, -1]
        e = nb.setitem(x * 1, (slice(None), i), 2.5)
        outs = [a, b, c, d, e]
    loaded = loads(dumps(program))
    assert str(loaded) == str(program)
    key = loaded.global_block().ops[1].attrs["key"]
    assert key == (("slice", None, None, None), ("array", 0), ("slice", 1, 4, None))
    feed = {"x": np.arange(60, dtype=np.float32).reshape(3, 4, 5), "i": np.array([0, 3, -1])}
    exe = nb.Executor()
    want = exe.run(program, feed, outs, nb.Scope())
    got = exe.run(loaded, feed, [v.name for v in outs], nb.Scope())
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


def test_non_finite_constants_round_trip():
    program = nb.Program()
    with nb.program_guard(program):
        x = nb.static.data("x", [3])
        y = nb.where(x > 0, x + float("inf"), float("nan"))
        nb.fill_(x * 1, float("-inf"))
    text = dumps(program)
    assert '"inf"' in text and '"nan"' in text and "NaN" not in text
    loaded = loads(text)
    assert str(loaded) == str(program)
    (out,) = nb.Executor().run(loaded, {"x": np.array([1, -1, 2], np.float32)}, [y.name])
    np.testing.assert_array_equal(out, [np.inf, np.nan, np.inf])


def test_a_loaded_program_takes_append_backward():
    def forward():
        program = nb.Program()
        with nb.program_guard(program):
            x = nb.static.data("x", [-1, 3])
            w = nb.static.create_parameter("w", [3, 2])
            b = nb.static.create_parameter("b", [2])
            h = nb.mul_(x @ w, b)  # b's gradient reads the old target: a saved copy
            loss = nb.mean(h * h)
        return program, loss

    original, loss = forward()
    loaded = loads(dumps(original))
    loaded_loss = loaded.global_block().var(loss.name)
    pairs = nb.append_backward(loaded_loss)
    nb.append_backward(loss)
    assert str(loaded) == str(original)
    feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    params = {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), "b": np.ones(2, "f4")}

    def grads(program):
        scope = nb.Scope({k: nb.tensor(v) for k, v in params.items()})
        return nb.Executor().run(program, feed, ["w@GRAD", "b@GRAD"], scope)

    for want, got in zip(grads(original), grads(loaded)):
        np.testing.assert_array_equal(got, want)
    assert [p.name for p, _ in pairs] == ["w", "b"]


def test_gradient_edges_survive_a_write_that_changed_stop_gradient():
    def build():
        program = nb.Program()
        with nb.program_guard(program):
            x = nb.static.data("x", [3])
            w = nb.static.create_parameter("w", [3])
            t = x * 1.0
            y = nb.exp(t)  # reads t while t carries no gradient
            nb.add_(t, w)  # from here on t carries w's gradient
            loss = nb.sum(t * y)
        return program, loss

    original, loss = build()
    loaded = loads(dumps(original))
    nb.append_backward(loss)
    nb.append_backward(loaded.global_block().var(loss.name))
    assert str(loaded) == str(original)


def test_sub_blocks_round_trip_and_read_enclosing_vars():
    program = nb.Program()
    with nb.program_guard(program):
        x = nb.static.data("x", [-1, 3])
        y = nb.relu(x)
    inner = program.create_block(parent=0)
    with nb.core.use_trace(nb.graph.GraphTrace(inner)):
        nb.exp(y * 2.0)  # reads %t0 of block 0
    loaded = loads(dumps(program))
    assert str(loaded) == str(program)
    assert "block 1 (parent 0)() {\n  %t1: f32[] = full()" in str(loaded)
    assert "  %t2: f32[-1,3] = mul(%t0, %t1)" in str(loaded)
    doc = json.loads(dumps(program))
    doc["blocks"][0]["ops"][0]["inputs"] = [doc["blocks"][1]["vars"][0]["name"]]
    with pytest.raises(ProgramError, match="not a var of block 0 or the blocks enclosing it"):
        loads(json.dumps(doc))


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_op_forward_and_backward_program_round_trips(name):
    fn, make_inputs, attrs = SAMPLES[name]
    program = nb.Program()
    with nb.program_guard(program):
        xs = []
        for i, t in enumerate(make_inputs()):
            v = nb.static.data(f"in{i}", t.shape, t.dtype)
            v.stop_gradient = False
            xs.append(v)
        outs = [o for o in _as_tuple(fn(*xs, **attrs)) if not o.stop_gradient]
        loss = nb.add_n(*[nb.sum(o * 2.0) for o in outs])
        nb.append_backward(loss, parameter_list=xs)
    assert str(loads(dumps(program))) == str(program)


def _written_through_a_view():
    program = nb.Program()
    with nb.program_guard(program):
        x = nb.static.data("x", [3, 4])
        w = nb.static.create_parameter("w", [3, 4])
        v = nb.static.create_parameter("v", [3, 3])
        h = x * w
        h.T[1:].div_(v)  # div_'s gradient reads its output: the write-back must keep it current
        loss = nb.sum(h * h)
    return program, loss


def test_a_loaded_program_with_writes_through_views_differentiates_like_the_original():
    original, loss = _written_through_a_view()
    doc = json.loads(dumps(original))
    marked = [op["type"] for op in doc["blocks"][0]["ops"] if op.get("write_back")]
    assert marked == ["index_put_", "copy_"]  # the slice's, then the transpose's
    loaded = loads(json.dumps(doc))
    nb.append_backward(loss)
    nb.append_backward(loaded.global_block().var(loss.name))
    assert str(loaded) == str(original)
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((3, 4)).astype(np.float32)}
    params = {"w": rng.standard_normal((3, 4)), "v": rng.uniform(1, 2, (3, 3))}

    def grads(program):
        scope = nb.Scope({k: nb.tensor(p.astype(np.float32)) for k, p in params.items()})
        return nb.Executor().run(program, feed, ["w@GRAD", "v@GRAD"], scope)

    # the closed form: h[:, 1:] is (x w / v^T) there, h = x w elsewhere
    hx = feed["x"] * params["w"]
    vt = params["v"].T
    want_w = 2 * hx * feed["x"]
    want_w[:, 1:] /= vt**2
    want_v = (-2 * hx[:, 1:] ** 2 / vt**3).T
    for got, want in zip(grads(loaded), (want_w, want_v)):
        nt.assert_close(got, want.astype(np.float32), rtol=1e-4, atol=1e-5)
    for want, got in zip(grads(original), grads(loaded)):
        np.testing.assert_array_equal(got, want)


def test_a_write_back_mark_on_a_real_write_is_refused():
    original, _ = _written_through_a_view()
    doc = json.loads(dumps(original))
    _op(doc, "div_")["write_back"] = True  # would hide the write from version checks
    with pytest.raises(ProgramError, match=r"div_\) is marked write_back but is no write-back"):
        loads(json.dumps(doc))
    doc = json.loads(dumps(original))
    _op(doc, "index_put_")["attrs"]["key"] = [["slice", 0, 3, None]]  # not the view's region
    with pytest.raises(ProgramError, match="marked write_back"):
        loads(json.dumps(doc))
    doc = json.loads(dumps(original))
    _op(doc, "index_put_")["attrs"]["accumulate"] = True
    with pytest.raises(ProgramError, match="marked write_back"):
        loads(json.dumps(doc))


def test_a_version_1_document_still_loads():
    original = mlp()[0]
    doc = json.loads(dumps(original))
    doc["version"] = 1
    del doc["sha256"]  # version 1 (and 2) had no content hash
    assert str(loads(json.dumps(doc))) == str(original)


def _doubling(tmp_path):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        x = nb.static.data("x", [-1, 3])
        y = x * 2.0
    path = str(tmp_path / "double.json")
    save(main, path)
    return path, y.name


def test_an_edited_or_damaged_program_file_is_refused_naming_the_file(tmp_path):
    path, out = _doubling(tmp_path)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(nb.Executor().run(load(path), {"x": x}, [out])[0], 2 * x)
    with open(path) as f:
        text = f.read()
    assert text.count('"value": 2.0') == 1
    with open(path, "w") as f:  # one bit: '2' is 0x32, '3' is 0x33
        f.write(text.replace('"value": 2.0', '"value": 3.0'))
    for read in (load, load_program, nb.load):
        with pytest.raises(ProgramError, match=f"{path} is corrupt or was edited"):
            read(path)
    with pytest.raises(ProgramError, match="the program document is corrupt or was edited"):
        loads(text.replace('"value": 2.0', '"value": 3.0'))
    doc = json.loads(text)
    doc["sha256"] = "0" * 64  # a damaged hash is refused too
    with pytest.raises(ProgramError, match="corrupt or was edited"):
        loads(json.dumps(doc))
    doc["sha256"] = None  # an unsealed document (hand-written, or edited on purpose) loads
    doc["blocks"][0]["ops"][0]["attrs"]["value"] = 3.0
    assert loads(json.dumps(doc)).global_block().ops[0].attrs["value"] == 3.0


def test_the_content_hash_does_not_depend_on_the_layout(tmp_path):
    path, out = _doubling(tmp_path)
    with open(path) as f:
        doc = json.load(f)
    with open(path, "w") as f:  # re-indented, keys reordered: the same content
        json.dump(dict(reversed(doc.items())), f, indent=7)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(nb.Executor().run(load(path), {"x": x}, [out])[0], 2 * x)


def _loop_program(max_iterations):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3])
        nb.while_loop(lambda h: nb.sum(h) < 10.0, lambda h: h + 1.0, x, max_iterations)
    return dumps(main)


def test_require_loop_bounds_caps_max_iterations(tmp_path):
    huge = _loop_program(2**62)
    loads(huge)  # fine unless asked
    with pytest.raises(ProgramError, match=r"max_iterations=4611686018427387904 is over the 1048"):
        loads(huge, require_loop_bounds=True)
    path = tmp_path / "loop.json"
    path.write_text(huge)
    for read in (load, load_program, nb.load):
        with pytest.raises(ProgramError, match="is over the 1048576 iterations"):
            read(path, require_loop_bounds=True)
    assert serialize.MAX_LOOP_ITERATIONS == 1 << 20
    loads(_loop_program(1 << 20), require_loop_bounds=True)  # at the cap
    loads(_loop_program(100), require_loop_bounds=100)  # a bound of the caller's
    with pytest.raises(ProgramError, match="max_iterations=101 is over the 100 iterations"):
        loads(_loop_program(101), require_loop_bounds=100)
    with pytest.raises(TypeError, match="require_loop_bounds"):
        loads(_loop_program(1), require_loop_bounds=-1)


def test_a_small_npz_declaring_a_huge_parameter_is_refused_before_allocating(tmp_path):
    main, startup = nb.Program(), nb.Program()
    with nb.program_guard(main, startup):
        nb.static.create_parameter("w", [40000, 40000])  # 6.4 GB declared
    path = str(tmp_path / "huge.json")
    save(main, path)  # no values: no member
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (40000, 40000)}
    )
    with zipfile.ZipFile(path + ".npz", "w") as zf:
        zf.writestr("w.npy", header.getvalue() + bytes(16))
    assert os.path.getsize(path + ".npz") < 1000
    message = r"%w declares float32\[40000, 40000\] \(6400000000 bytes\), but its member holds"
    with pytest.raises(ProgramError, match=message):
        serialize.load_params(path, main, max_bytes=1 << 40)
    with open(path) as f:
        doc = json.load(f)
    with open(path + ".npz", "rb") as f:
        doc["params_sha256"] = serialize._sha256(f)
    doc["sha256"] = None
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(ProgramError, match=message):
        nb.load(path, max_param_bytes=1 << 40)


def _recursing(depth: int, f):
    return f() if depth == 0 else _recursing(depth - 1, f)


@pytest.mark.parametrize("frames", [0, 600])  # called at the top, or deep in a caller's stack
def test_a_deeply_nested_document_raises_program_error(frames):
    program = nb.Program()
    with nb.program_guard(program):
        nb.static.data("x", [3]) * 2.0
    text = dumps(program)
    for depth in (64, 400, 990, 5000):
        deep = text.replace('"value": 2.0', '"value": ' + "[" * depth + "]" * depth)
        with pytest.raises(ProgramError) as e:  # was a bare RecursionError from 380 deep
            _recursing(frames, lambda deep=deep: loads(deep))
        # too deep for the checker, or (past Python's recursion limit) for the JSON parser
        assert "nests more than 64 deep" in str(e.value) or "recursion depth" in str(e.value)
        if depth == 64:
            assert "nests more than 64 deep" in str(e.value)
    fine = text.replace('"value": 2.0', '"value": ' + "[" * 50 + "]" * 50)
    with pytest.raises(ProgramError, match="bad program document at"):  # the usual error
        _recursing(frames, lambda: loads(fine))


def test_loading_a_missing_file_a_fifo_or_a_folder(tmp_path):
    missing = tmp_path / "missing.json"
    for read in (load, load_program, nb.load):
        with pytest.raises(FileNotFoundError, match="missing.json"):
            read(missing)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for read in (load, load_program, nb.load):  # refused at once (open would block)
        for path in (fifo, tmp_path):
            with pytest.raises(ProgramError, match="is not a regular file"):
                read(path)
    path, _ = _doubling(tmp_path)
    os.replace(path + ".npz", tmp_path / "moved")
    os.mkfifo(path + ".npz")
    with pytest.raises(ProgramError, match="the parameters file .* is not a regular file"):
        load(path)


def test_an_executor_can_bound_the_loops_of_a_loaded_program(tmp_path):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [3])
        out = nb.while_loop(lambda h: nb.sum(h) > -1.0, lambda h: h + 1.0, x)  # never ends
    path = tmp_path / "forever.json"
    save(main, path)
    loaded, feed = load(path), {"x": np.zeros(3, np.float32)}
    with pytest.raises(nb.LoopLimitError, match="still runs after max_iterations=50"):
        nb.Executor(max_loop_iterations=50).run(loaded, feed, [out.name])
    with nb.program_guard(main):
        y = nb.while_loop(lambda h: nb.sum(h) < 30.0, lambda h: h + 1.0, x, 1000)
    exe = nb.Executor(max_loop_iterations=10)  # a loop's own bound above the executor's
    np.testing.assert_array_equal(exe.run(main, feed, [y])[0], [10.0] * 3)
    with pytest.raises(nb.LoopLimitError, match="max_iterations=9"):
        nb.Executor(max_loop_iterations=9).run(main, feed, [y])
    assert nb.Executor().max_loop_iterations is None  # off by default


# ---------------------------------------------------------------- hostile documents


@pytest.fixture(scope="module")
def doc():
    main, _, _ = mlp()
    return json.loads(dumps(main))


def _op(d, name):
    return next(op for op in d["blocks"][0]["ops"] if op["type"] == name)


def _var(d, name):
    return next(v for v in d["blocks"][0]["vars"] if v["name"] == name)


def _set(path, value):
    """A mutation setting d[path...] = value."""

    def mutate(d):
        target = d
        for p in path[:-1]:
            target = target[p]
        target[path[-1]] = value

    return mutate


def _chain_blocks(n):
    def mutate(d):
        d["blocks"] += [{"idx": i, "parent": i - 1, "vars": [], "ops": []} for i in range(1, n)]

    return mutate


def _cycle(d):
    d["blocks"] += [
        {"idx": 1, "parent": 2, "vars": [], "ops": []},
        {"idx": 2, "parent": 1, "vars": [], "ops": []},
    ]


def _swap_first_ops(d):
    ops = d["blocks"][0]["ops"]
    ops[0], ops[1] = ops[1], ops[0]


HOSTILE = {
    "unknown op": (
        lambda d: _op(d, "relu").update(type="os_system"),
        "op type 'os_system' is not registered",
    ),
    "unknown attr": (
        lambda d: _op(d, "cross_entropy")["attrs"].update(evil=1),
        r"cross_entropy.*unknown attribute 'evil'",
    ),
    "wrong attr type": (
        lambda d: _op(d, "cross_entropy")["attrs"].update(ignore_index="x"),
        r"cross_entropy.*'ignore_index' must be int",
    ),
    "float for an int attr": (
        lambda d: _op(d, "cross_entropy")["attrs"].update(ignore_index=1.5),
        "'ignore_index' must be int",
    ),
    "attr out of choices": (
        lambda d: _op(d, "cross_entropy")["attrs"].update(reduction="max"),
        "'reduction' must be one of",
    ),
    "bad dtype attr": (
        lambda d: _op(d, "full")["attrs"].update(dtype="f128"),
        r"full.*'dtype' must be a dtype name",
    ),
    "int attr over int64": (
        lambda d: _op(d, "cross_entropy")["attrs"].update(ignore_index=2**64),
        "out of the int64 range",
    ),
    "list for an int attr": (
        lambda d: _op(d, "cross_entropy")["attrs"].update(ignore_index=[1, 2]),
        "'ignore_index' must be int",
    ),
    "used before defined": (_swap_first_ops, "input %t0 is used before any op defines it"),
    "undefined var": (lambda d: _op(d, "relu").update(inputs=["ghost"]), "%ghost is not a var"),
    "cyclic blocks": (_cycle, r"cycle \(1 -> 2 -> 1\)"),
    "deep blocks": (_chain_blocks(80), "nest more than 64 deep"),
    "negative dim": (_set(["blocks", 0, "vars", 0, "shape", 0], -2), r"\['shape'\]\[0\]"),
    "huge dim": (_set(["blocks", 0, "vars", 0, "shape", 0], 2**62), r"\['shape'\]\[0\]"),
    "overflowing shape": (
        _set(["blocks", 0, "vars", 0, "shape"], [2**30, 2**30, 2**30]),
        "var 'x': shape .* elements",
    ),
    "float dim": (_set(["blocks", 0, "vars", 0, "shape", 0], 4.0), "is not of type"),
    "bad dtype": (_set(["blocks", 0, "vars", 0, "dtype"], "float128"), r"\['dtype'\]"),
    "slash in a name": (
        _set(["blocks", 0, "vars", 0, "name"], "../x"),
        r"\['name'\]: '../x' is not a valid name \(no '/'",
    ),
    "duplicate var": (
        lambda d: d["blocks"][0]["vars"].append(dict(d["blocks"][0]["vars"][0])),
        "var 'x' is declared twice",
    ),
    "wrong declared shape": (
        lambda d: _var(d, "t0").update(shape=[-1, 9]),
        r"matmul\).*%t0 is declared f32\[-1,9\].*gives f32\[-1,8\]",
    ),
    "wrong declared dtype": (lambda d: _var(d, "t0").update(dtype="f64"), "%t0 is declared f64"),
    "in-place output": (
        lambda d: _op(d, "sub_").update(outputs=["t0"]),
        "output 0 .* of an in-place op must be its input 0",
    ),
    "written twice": (
        lambda d: _op(d, "relu").update(outputs=["t0"]),
        "output %t0 is written twice",
    ),
    "writes a data var": (lambda d: _op(d, "relu").update(outputs=["x"]), "%x is a data var"),
    "too few inputs": (lambda d: _op(d, "relu").update(inputs=[]), r"relu\(\) takes inputs"),
    "grad_edges": (
        lambda d: _op(d, "relu").update(grad_edges=[True, False]),
        "grad_edges has 2 flags for 1 inputs",
    ),
    "backward_start": (_set(["backward_start"], 10**6), "backward_start"),
    "unknown field": (_set(["blocks", 0, "ops", 0, "code"], "import os"), "Additional properties"),
    "missing field": (lambda d: d["blocks"][0]["vars"][0].pop("dtype"), "'dtype' is a required"),
    "wrong format": (_set(["format"], "onnx"), "not an nbflow program"),
    "wrong version": (_set(["version"], 99), "version 99 is not supported"),
    "block order": (_set(["blocks", 0, "idx"], 3), "block 0 is numbered 3"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_document_raises_program_error(doc, case):
    mutate, message = HOSTILE[case]
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises(ProgramError, match=message):
        loads(json.dumps(bad))


@pytest.mark.parametrize(
    "text, message",
    [
        ("[]", "a program document is a JSON object, got list"),
        ('"program"', "JSON object"),
        ('{"format": "nbflow.program", "version": 1, "blocks": [', "not a valid JSON"),
        (b"\xff\xfe{}", "not a valid JSON"),
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": 1e999}', "out of range"),
        ('{"a": 1, "a": 2}', "repeats a key"),
        ("[" * 100_000, "not a valid JSON"),
        ("1" * 5000, "not a valid JSON"),
    ],
)
def test_malformed_text_raises_program_error(text, message):
    with pytest.raises(ProgramError, match=message):
        loads(text)


def test_truncated_saved_program_raises_program_error(saved):
    path, *_ = saved
    with open(path, "rb") as f:
        text = f.read()
    for n in (0, 1, len(text) // 3, len(text) - 3):
        with open(path, "wb") as f:
            f.write(text[:n])
        with pytest.raises(ProgramError):
            load(path)


# ---------------------------------------------------------------- hostile parameter files


def _rewrite_npz(path, arrays, pickled=False):
    with zipfile.ZipFile(path + ".npz", "w") as zf:
        for name, a in arrays.items():
            with zf.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, a, allow_pickle=pickled)


def test_truncated_npz_raises_program_error(saved):
    path, main, *_ = saved
    with open(path + ".npz", "rb") as f:
        blob = f.read()
    with open(path + ".npz", "wb") as f:
        f.write(blob[: len(blob) // 2])
    with pytest.raises(ProgramError, match="not the parameters file saved with this program"):
        load(path)
    with pytest.raises(ProgramError, match="damaged parameters file"):
        load_params(path, main)


def test_npz_with_wrong_shape_raises_program_error(saved):
    path, main, *_ = saved
    _rewrite_npz(path, {"w1": np.zeros((4, 9), np.float32)})
    with pytest.raises(ProgramError, match="sha256"):
        load(path)
    with pytest.raises(ProgramError, match=r"%w1 is stored as float32\[4, 9\].*\[4, 8\]"):
        load_params(path, main)


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"w1": np.zeros((4, 8), np.float64)}, "%w1 is stored as float64"),
        ({"x": np.zeros((2, 4), np.float32)}, "'x.npy' is not a persistable var"),
        ({"../w1": np.zeros((4, 8), np.float32)}, "not a persistable var"),
        ({"w1": np.array([None] * 32, dtype=object).reshape(4, 8)}, "stored as object"),
    ],
)
def test_npz_members_are_checked_before_loading(saved, arrays, message):
    path, main, *_ = saved
    _rewrite_npz(path, arrays, pickled=True)
    with pytest.raises(ProgramError, match=message):
        load_params(path, main)


def test_oversized_npz_and_budget_raise_program_error(saved):
    path, main, *_ = saved
    with pytest.raises(ProgramError, match="budget"):
        load(path, max_param_bytes=16)
    with open(path + ".npz", "ab") as f:
        f.write(b"\0" * 100_000)
    with pytest.raises(ProgramError, match="more than its program's parameters"):
        load_params(path, main)
    os.remove(path + ".npz")
    with pytest.raises(ProgramError, match="cannot read the parameters file"):
        load(path)


def test_npz_that_is_not_a_zip_or_repeats_a_member_raises_program_error(saved):
    path, main, *_ = saved
    np.save(path + ".npz.npy", np.zeros((4, 8), np.float32))
    os.replace(path + ".npz.npy", path + ".npz")
    with pytest.raises(ProgramError, match="damaged parameters file"):
        load_params(path, main)
    with pytest.warns(UserWarning, match="Duplicate name"):
        _rewrite_npz(path, {"w1": np.zeros((4, 8), np.float32)})
        with zipfile.ZipFile(path + ".npz", "a") as zf:
            zf.writestr("w1.npy", b"")
    with pytest.raises(ProgramError, match="%w1 is stored twice"):
        load_params(path, main)


def test_a_failed_save_leaves_the_previous_files(saved, tmp_path, monkeypatch):
    path, main, *_ = saved
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}

    def crash(f, values):
        f.write(b"PK half an archive")
        raise OSError("disk full")

    monkeypatch.setattr(serialize, "_write_npz", crash)
    with pytest.raises(OSError, match="disk full"):
        save(main, path, nb.Scope())
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before
    assert str(load(path)) == str(main)


def test_save_refuses_what_could_not_be_loaded(tmp_path):
    program = nb.Program()
    with nb.program_guard(program):
        nb.relu(nb.static.data("layer/x", [2]))
    with pytest.raises(ProgramError, match="'layer/x' is not a valid name"):
        save(program, str(tmp_path / "p.json"))
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- fuzzing

FUZZ_EXAMPLES = max(50, settings.default.max_examples)  # the "dev" profile runs more

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["f32", "x", "t0", "relu", "sub_", "inf", "", "a/b"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


def _walk(d, choices):
    """Follow the choices down the document; returns (container, key) of one spot."""
    container, key = None, None
    node = d
    for c in choices:
        if isinstance(node, dict) and node:
            key = sorted(node)[c % len(node)]
        elif isinstance(node, list) and node:
            key = c % len(node)
        else:
            break
        container, node = node, node[key]
    return container, key


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    choices=st.lists(st.integers(0, 1000), min_size=1, max_size=8),
    action=st.sampled_from(["delete", "replace", "duplicate"]),
    value=JSON_VALUES,
)
def test_fuzz_mutated_documents_load_or_raise_program_error(doc, choices, action, value):
    bad = copy.deepcopy(doc)
    container, key = _walk(bad, choices)
    if container is None:
        bad = value
    elif action == "delete":
        del container[key]
    elif action == "replace":
        container[key] = value
    elif isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
    with contextlib.suppress(ProgramError):
        loads(json.dumps(bad))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(cut=st.integers(0, 10**6), flips=st.lists(st.integers(0, 10**7), max_size=4))
def test_fuzz_damaged_bytes_load_or_raise_program_error(doc, cut, flips):
    data = bytearray(json.dumps(doc).encode())
    for f in flips:
        data[f // 8 % len(data)] ^= 1 << (f % 8)
    with contextlib.suppress(ProgramError):
        loads(bytes(data[: max(1, cut % (len(data) + 1))]))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(cut=st.integers(0, 10**6), flips=st.lists(st.integers(0, 10**7), max_size=4))
def test_fuzz_damaged_npz_loads_or_raises_program_error(npz_case, cut, flips):
    path, main, blob = npz_case
    data = bytearray(blob)
    for f in flips:
        data[f // 8 % len(data)] ^= 1 << (f % 8)
    with open(path + ".npz", "wb") as f:
        f.write(bytes(data[: cut % (len(data) + 1)]))
    with contextlib.suppress(ProgramError):
        load_params(path, main)


@pytest.fixture(scope="module")
def npz_case(tmp_path_factory):
    main, _, scope = initialised()
    path = str(tmp_path_factory.mktemp("npz") / "mlp.json")
    save(main, path, scope)
    with open(path + ".npz", "rb") as f:
        return path, main, f.read()


def test_values_after_load_match_eager(saved):
    path, main, loss, scope = saved
    loaded_scope = nb.Scope()
    loaded = load(path, loaded_scope)
    x, y = data()
    w1, b1, w2 = (scope.value(n) for n in ("w1", "b1", "w2"))
    logits = nb.relu(nb.tensor(x) @ nb.tensor(w1) + nb.tensor(b1)) @ nb.tensor(w2)
    eager = nb.cross_entropy(logits, nb.tensor(y)).numpy()
    (got,) = nb.Executor().run(loaded, {"x": x, "y": y}, [loss.name], loaded_scope)
    nt.assert_close(got, eager)


def test_a_program_with_complex_inputs_and_constants_round_trips(tmp_path):
    main = nb.static.Program()
    with nb.static.program_guard(main, nb.static.Program()):
        x = nb.static.data("x", [2], dtype="complex128")
        out = nb.real(x * nb.tensor(np.array([1 + 2j, 3 - 1j])) * (0.5 - 1j))
    path = str(tmp_path / "complex.json")
    save(main, path)
    feed = {"x": np.array([1 + 1j, 2 - 0.5j])}
    want = np.real(feed["x"] * np.array([1 + 2j, 3 - 1j]) * (0.5 - 1j))
    (got,) = nb.Executor().run(load(path), feed, [out.name])
    np.testing.assert_allclose(got, want, rtol=1e-15)
