"""explain() tells the whole plan (graph/plan_report.py): the memory plan of the memory-reuse
pass, checked against the Arena a real run packs and against lifetimes read off the program,
and each kernel's compile status before and after a run, in this process and from numba's
disk cache in fresh ones."""

import subprocess
import sys
import textwrap

import numpy as np
from numba import njit

import nbflow as nb


def _chain(layers=6, width=64):
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1, width])
        h = x
        for i in range(layers):
            h = nb.matmul(h, nb.static.create_parameter(f"w{i}", [width, width]))
            h = nb.exp(h) * 0.5
        out = nb.sum(h)
    scope = nb.Scope()
    for i in range(layers):
        scope[f"w{i}"] = nb.tensor(np.full((width, width), 0.01, np.float32))
    return main, out, scope


def test_memory_plan_matches_the_arena_a_run_packs():
    main, out, scope = _chain()
    feed = {"x": np.ones((32, 64), np.float32)}
    result = nb.graph.explain(main, [out], feed_shapes={"x": (32, 64)}, structured=True)
    plan = result.memory
    assert not plan.assumed_dims
    # a chain: the pass keeps a few buffers of one layer's size; without it every value lives
    layer = 32 * 64 * 4
    assert plan.peak_bytes <= plan.peak_bytes_without
    # 6 matmuls, 5 fused exp*0.5 outputs (the last group ends in the sum)
    assert plan.peak_bytes_without >= 11 * layer
    assert plan.peak_bytes <= 3 * layer + 64
    # the executor's own arena, recorded by a real run, is what explain() planned
    exe = nb.Executor()
    for _ in range(2):
        exe.run(main, feed, [out], scope)
    ((_, arena),) = exe._arenas.values()
    assert arena.sizes == [b.nbytes for b in plan.buffers]
    assert arena.offsets == [b.offset for b in plan.buffers]
    assert arena.total == plan.arena_bytes
    # the text form says the same
    text = result.text
    assert f"memory: peak {plan.peak_bytes} bytes with memory reuse, " in text
    assert f"{plan.peak_bytes_without} without" in text
    assert f"%{out.name}" in text and "kept (fetched)" in text


def test_shared_buffers_hold_values_with_disjoint_lifetimes():
    main, out, _ = _chain()
    plan = nb.graph.explain(main, [out], feed_shapes={"x": (8, 64)}, structured=True).memory
    ops = main.global_block().ops
    made = {v.name: i for i, n in enumerate(ops) for v in n.outputs}
    last_read = {}
    for i, n in enumerate(ops):
        for v in n.inputs:
            last_read[v.name] = i
    shared = [b for b in plan.buffers if len(b.values) > 1]
    assert shared, "a chain reuses buffers"
    pairs = 0
    for b in shared:
        names = sorted(b.values, key=made.get)
        for first, second in zip(names, names[1:]):
            # (read off the program: the earlier value's last reader runs no later than the
            # op making the next; equal when an elementwise op writes over its dying input)
            assert last_read[first] <= made[second], (first, second)
            assert plan.value(first).freed_after is not None
            pairs += 1
    assert pairs >= 4
    # values sharing arena bytes (another buffer at an overlapping offset) never live at once
    placed = [b for b in plan.buffers if b.offset is not None]
    for i, a in enumerate(placed):
        for b in placed[i + 1 :]:
            overlap = a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes
            if overlap:
                assert a.last < b.first or b.last < a.first


def test_memory_plan_without_feed_shapes_and_off():
    main, out, _ = _chain(layers=2)
    plan = nb.graph.explain(main, [out], structured=True).memory
    assert plan.assumed_dims  # the -1 batch dim taken as 1
    assert "[-1 dims taken as 1" in nb.graph.explain(main, [out])
    assert nb.graph.explain(main, [out], reuse_memory=False, structured=True).memory is None
    assert "memory:" not in nb.graph.explain(main, [out], memory=False)


@njit
def _double_rows_kernel(x, out):  # (no cache: compiled in this process only)
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i]


user_double_rows = nb.Op(
    name="user_double_rows_explain",
    inputs=("x",),
    outputs=("out",),
    spec=lambda x: x,
    kernels={"cpu": _double_rows_kernel, "cuda": None},
    dtypes=(nb.float32, nb.float64),
    ref=lambda x: 2 * x,
)


def _status(main, out, op_name):
    result = nb.graph.explain(main, [out], structured=True)
    (status,) = [k for k in result.kernels if k.op == op_name]
    return status, result.text


def test_kernel_compile_status_in_this_process():
    main = nb.Program()
    with nb.program_guard(main):
        x = nb.static.data("x", [-1], "float64")
        out = user_double_rows(x)
    before, text = _status(main, out, "user_double_rows_explain")
    assert before.status == "to compile" and before.cache_path is None
    assert "(user_double_rows_explain, cpu, float64): to compile" in text
    assert _double_rows_kernel.signatures == []  # as numba says
    (got,) = nb.Executor().run(main, {"x": np.arange(3.0)}, [out])
    np.testing.assert_array_equal(got, [0.0, 2.0, 4.0])
    after, text = _status(main, out, "user_double_rows_explain")
    assert after.status == "compiled" and "): compiled" in text
    assert len(_double_rows_kernel.signatures) == 1
    # float32 is another signature: still to compile
    main32 = nb.Program()
    with nb.program_guard(main32):
        out32 = user_double_rows(nb.static.data("x", [-1], "float32"))
    assert _status(main32, out32, "user_double_rows_explain")[0].status == "to compile"


_SCRIPT = """
import json, sys
import numpy as np
import nbflow as nb
sys.path.insert(0, sys.argv[1])
import cached_op

main = nb.Program()
with nb.program_guard(main):
    out = cached_op.op(nb.static.data("x", [-1], "float64"))

def status():
    result = nb.graph.explain(main, [out], structured=True)
    (k,) = [k for k in result.kernels if k.op == "user_cached_triple"]
    return k.status, k.cache_path

before = status()
nb.Executor().run(main, {"x": np.arange(3.0)}, [out])
print(json.dumps([before, status()]))
"""

_MODULE = """
import nbflow as nb
from numba import njit

@njit(cache=True)
def triple(x, out):
    for i in range(x.shape[0]):
        out[i] = 3.0 * x[i]

op = nb.Op(name="user_cached_triple", inputs=("x",), outputs=("out",), spec=lambda x: x,
           kernels={"cpu": triple, "cuda": None}, dtypes=(nb.float64,), ref=lambda x: 3 * x)
"""


def test_kernel_compile_status_from_the_disk_cache(tmp_path):
    """A fresh process compiles the kernel and writes numba's cache; the next one finds it
    there before the run and loads it from there."""
    (tmp_path / "cached_op.py").write_text(textwrap.dedent(_MODULE))
    import json

    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    (first_before, first_after), (second_before, second_after) = runs
    cache = str(tmp_path / "__pycache__")
    assert first_before == ["to compile", cache]
    assert first_after == ["compiled", cache]
    assert second_before == ["on disk cache", cache]
    assert second_after == ["loaded from disk cache", cache]
