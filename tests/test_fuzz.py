"""Loading hostile files: the named seeds of tests/fuzz_seeds/ (tools/make_fuzz_seeds.py) each
give their exact typed error, loading never runs code, and under hypothesis (random and
mutated documents, bit flips and truncations of real saved programs and checkpoints) the only
outcomes are success or the loader's typed error. A program that loads also runs or raises an
nbflow error. The long campaign is tools/fuzz_campaign.py."""

import ast
import builtins
import contextlib
import copy
import importlib
import json
import os
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nbflow as nb
from nbflow import checkpoint
from nbflow.errors import CheckpointError, NbflowError, ProgramError
from nbflow.graph import serialize

SEEDS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz_seeds")
sys.path.insert(0, os.path.join(os.path.dirname(SEEDS_DIR), "..", "tools"))
import make_fuzz_seeds  # noqa: E402

P, C = ProgramError, CheckpointError
BAD_NAME = "is not a valid name (no '/', '\\' or control characters)"

# seed file -> (the error class, a fragment of its message)
SEEDS = {
    "attr_bad_dtype.json": (P, "op 17 (full): attribute 'dtype' must be a dtype name"),
    "attr_float_for_int.json": (P, "(cross_entropy): attribute 'ignore_index' must be int"),
    "attr_int_over_int64.json": (P, "'ignore_index': 18446744073709551616 is out of the int64"),
    "attr_nan_out_of_range.json": (P, "label_smoothing must be in [0, 1], got nan"),
    "attr_out_of_choices.json": (P, "attribute 'reduction' must be one of ('mean', 'sum'"),
    "attr_wrong_type.json": (P, "attribute 'ignore_index' must be int, got 'x'"),
    "backslash_name.json": (P, BAD_NAME),
    "backward_start_past_end.json": (P, "backward_start 1000000 is past the 24 ops"),
    "bad_utf8.json": (P, "not a valid JSON program document: 'utf-8' codec"),
    "bad_var_dtype.json": (P, "'float128' is not one of"),
    "control_char_name.json": (P, BAD_NAME),
    "deep_block_nesting.json": (P, "blocks nest more than 64 deep"),
    "deep_json_nesting.json": (P, "maximum recursion depth exceeded"),
    "duplicate_key.json": (P, "a JSON object in the document repeats a key"),
    "duplicate_var.json": (P, "block 0, var 'x' is declared twice"),
    "empty_file.json": (P, "not a valid JSON program document"),
    "float_dim.json": (P, "['shape'][1]: 4.0 is not of type 'integer'"),
    "float_overflow.json": (P, "the number 1e999 is out of range"),
    "huge_dim.json": (P, "4611686018427387904 is greater than the maximum of 1099511627776"),
    "huge_int.json": (P, "Exceeds the limit (4300 digits)"),
    "inplace_output_mismatch.json": (P, "(sub_): output 0 (%t0) of an in-place op must be its"),
    "json_list.json": (P, "a program document is a JSON object, got list"),
    "location_too_long.json": (P, "['location']: 'xxxxxxxx"),
    "missing_field.json": (P, "'dtype' is a required property"),
    "mutual_recursive_blocks.json": (P, "the block parents form a cycle (1 -> 2 -> 1)"),
    "nan_literal.json": (P, "NaN is not JSON"),
    "negative_dim.json": (P, "['shape'][1]: -5 is less than the minimum of -1"),
    "not_json.json": (P, "not a valid JSON program document"),
    "op_type_not_identifier.json": (P, "\"__import__('os')\" is not an identifier"),
    "params_digest_mismatch.json": (P, "is not the parameters file saved with this program"),
    "path_traversal_name.json": (P, "'../../etc/passwd' " + BAD_NAME),
    "self_recursive_block.json": (P, "block 1: the block parents form a cycle (1 -> 1)"),
    "shape_product_overflow.json": (P, "[1073741824, 1073741824, 1073741824] is over"),
    "too_few_inputs.json": (P, "(relu): relu() takes inputs (x), got 0"),
    "too_many_dims.json": (P, "is too long"),
    "total_elements_overflow.json": (P, "the vars hold 18691697672510 elements in all, over"),
    "truncated_program.json": (P, "not a valid JSON program document: Unterminated string"),
    "undefined_var.json": (P, "input %ghost is not a var of block 0"),
    "unknown_attr.json": (P, "(cross_entropy): unknown attribute 'evil'"),
    "unknown_field.json": (P, "Additional properties are not allowed ('code' was unexpected)"),
    "unknown_op.json": (P, "op type 'os_system' is not registered in nbflow"),
    "grad_of_unknown_op.json": (P, "grad_of names op type 'os_system', not registered"),
    "grad_of_not_an_object.json": (P, "'relu' is not of type 'object'"),
    "used_before_defined.json": (P, "is used before any op defines it"),
    "writes_data_var.json": (P, "output %x is a data var"),
    "written_twice.json": (P, "output %t0 is written twice"),
    "wrong_declared_shape.json": (P, "%t0 is declared f32[-1,9], the op's shape rule gives"),
    "wrong_format.json": (P, "not an nbflow program: format is 'onnx'"),
    "wrong_version.json": (P, "program format version 99 is not supported"),
    # parameter files (the document beside each records the damaged file's digest)
    "npz_compressed.json": (P, "member 'w1.npy' is compressed"),
    "npz_huge_declared_size.json": (P, "%w1 is stored as float32[1099511627776, 8]"),
    "npz_not_a_zip.json": (P, "damaged parameters file (File is not a zip file)"),
    "npz_object_dtype.json": (P, "%b1 is stored as object[8]"),
    "npz_overlapping_members.json": (P, "members 'b1.npy' and 'w1.npy' overlap"),
    "npz_path_traversal_member.json": (P, "'../../w1.npy' is not a persistable var"),
    "npz_truncated.json": (P, "damaged parameters file"),
    "npz_unknown_member.json": (P, "'evil.npy' is not a persistable var"),
    "npz_wrong_dtype.json": (P, "%w1 is stored as float64[4, 8], the program declares float32"),
    "npz_wrong_shape.json": (P, "%w1 is stored as float32[8, 4], the program declares"),
    # checkpoints
    "ckpt_bad_magic.ckpt": (C, "not an nbflow checkpoint (wrong magic bytes)"),
    "ckpt_bit_flip_in_data.ckpt": (C, "the data is corrupt (its sha256 does not match"),
    "ckpt_data_bytes_lie.ckpt": (C, "the manifest declares 256 + 1099511627776"),
    "ckpt_deep_nesting.ckpt": (C, "the manifest is nested too deep"),
    "ckpt_huge_size.ckpt": (C, "shape [1073741824, 1073741824] is over 1099511627776 elements"),
    "ckpt_manifest_length_past_file.ckpt": (C, "the manifest length 1099511627776 is over"),
    "ckpt_negative_dim.ckpt": (C, "a dim must be an int in [0, 1099511627776], got -4"),
    "ckpt_object_dtype.ckpt": (C, "dtype '|O' is not storable"),
    "ckpt_offset_past_end.ckpt": (C, "offsets [64, 80] are not [0, 16]"),
    "ckpt_overlapping_offsets.ckpt": (C, "tensors[1]: offsets [0, 16] are not [64, 80]"),
    "ckpt_path_traversal_field.ckpt": (C, "manifest fields: unknown ['file']"),
    "ckpt_pickle_tag.ckpt": (C, "bad tree node with keys ['pickle']"),
    "ckpt_truncated.ckpt": (C, "(truncated, extended or misaligned)"),
}


def load_any(path: str):
    """Load a seed the way a user would: a checkpoint, or a program with its parameters."""
    if path.endswith(".ckpt"):
        return nb.load_state(path)
    return nb.load(path, nb.Scope())


def test_seed_folder_holds_exactly_the_named_seeds():
    files = set(os.listdir(SEEDS_DIR))
    companions = {f for f in files if f.endswith(".npz")}
    assert files - companions == set(SEEDS)
    assert all(f[: -len(".npz")] in SEEDS for f in companions)
    assert len(SEEDS) >= 40


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_each_seed_raises_its_exact_error(name):
    cls, fragment = SEEDS[name]
    with pytest.raises(NbflowError) as e:
        load_any(os.path.join(SEEDS_DIR, name))
    assert type(e.value) is cls
    assert fragment in str(e.value)


def test_the_seed_generator_makes_every_seed_with_the_same_error_class(tmp_path):
    # the committed seeds are data and stay fixed; the generator that wrote them builds its
    # base program with today's gradient rules, so op indices may move, but each mutation
    # still breaks the same rule
    make_fuzz_seeds.write_all(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(os.listdir(SEEDS_DIR))
    for name in sorted(SEEDS):
        with pytest.raises(NbflowError) as e:
            load_any(str(tmp_path / name))
        assert type(e.value) is SEEDS[name][0], name


# ---------------------------------------------------------------- no code from files

LOADERS = (serialize, checkpoint)
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "getattr", "setattr", "globals"}
FORBIDDEN_MODULES = {"pickle", "marshal", "shelve", "importlib", "dill", "cloudpickle"}


@pytest.mark.parametrize("module", LOADERS, ids=lambda m: m.__name__)
def test_loaders_use_no_code_executing_facility(module):
    with open(module.__file__) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, (node.func.id, node.lineno)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            assert not FORBIDDEN_MODULES & {n.split(".")[0] for n in names}, node.lineno
        if isinstance(node, ast.keyword) and node.arg == "allow_pickle":
            assert isinstance(node.value, ast.Constant) and node.value.value is False


@pytest.fixture
def no_code_execution(monkeypatch, saved_pair, saved_ckpt):
    """eval, exec, pickle and new imports raise while loading (a new import would be one a
    file chose): loading must not need any of them."""
    nb.load(saved_pair[0], nb.Scope())  # nbflow's own lazy imports happen now
    nb.load_state(saved_ckpt[0])
    calls = []

    def forbidden(name):
        def refuse(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} called while loading")

        return refuse

    real_import = builtins.__import__

    def guarded_import(name, *args, **kwargs):
        if name not in sys.modules:
            calls.append(f"import {name}")
            raise AssertionError(f"import {name} while loading")
        return real_import(name, *args, **kwargs)

    for module, attr in [
        (builtins, "eval"),
        (builtins, "exec"),
        (pickle, "loads"),
        (pickle, "load"),
        (importlib, "import_module"),
        (np, "load"),
    ]:
        monkeypatch.setattr(module, attr, forbidden(f"{module.__name__}.{attr}"))
    monkeypatch.setattr(builtins, "__import__", guarded_import)
    yield calls


def test_loading_every_seed_runs_no_code(no_code_execution, saved_pair, saved_ckpt):
    for name in sorted(SEEDS):
        with contextlib.suppress(ProgramError, CheckpointError):
            load_any(os.path.join(SEEDS_DIR, name))
    nb.load(saved_pair[0], nb.Scope())  # the success path too
    nb.load_state(saved_ckpt[0])
    assert no_code_execution == []


# ---------------------------------------------------------------- hypothesis fuzzing


@pytest.fixture(scope="module")
def saved_pair(tmp_path_factory):
    """A real saved training program: (path, document bytes, .npz bytes)."""
    main, scope = make_fuzz_seeds.mlp_program()
    path = str(tmp_path_factory.mktemp("pair") / "mlp.json")
    nb.save(main, path, scope)
    with open(path, "rb") as f, open(path + ".npz", "rb") as g:
        return path, f.read(), g.read()


@pytest.fixture(scope="module")
def saved_ckpt(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ckpt") / "state.ckpt")
    with open(path, "wb") as f:
        f.write(make_fuzz_seeds.saved_checkpoint())
    with open(path, "rb") as f:
        return path, f.read()


def damage(data: bytes, cut: int, flips: list[int]) -> bytes:
    out = bytearray(data)
    for f in flips:
        out[f // 8 % len(out)] ^= 1 << (f % 8)
    return bytes(out[: cut % (len(out) + 1)])


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


def run_loaded(program: nb.Program, scope) -> bool:
    """Run a program that loaded, fed with zeros of its data vars' shapes: a result (True) or
    an nbflow error (False); a loaded program is as checked as a built one."""
    block = program.global_block()
    feed = {
        v.name: np.zeros([2 if n == -1 else n for n in v.shape], v.dtype)
        for v in block.vars.values()
        if v.is_data and all(n <= 8 for n in v.shape)
    }
    fetch = [v for v in block.vars.values() if not v.persistable][-1:]
    try:
        nb.Executor().run(program, feed, fetch, scope)
    except NbflowError:
        return False
    return True


def test_the_intact_program_runs(saved_pair):
    program = serialize.loads(saved_pair[1])
    assert run_loaded(program, serialize.load_params(saved_pair[0], program))


@settings(deadline=None)
@given(doc=JSON)
def test_fuzz_random_documents(doc):
    with contextlib.suppress(ProgramError):
        serialize.loads(json.dumps(doc))


@settings(deadline=None)
@given(
    where=st.lists(st.integers(0, 1000), min_size=1, max_size=6),
    value=JSON | st.sampled_from([-1, 0, 2**63, -(2**63), "nan", "inf", "f16", "../x", [2**40]]),
)
def test_fuzz_mutated_programs_load_and_run_or_raise(saved_pair, where, value):
    doc = json.loads(saved_pair[1])
    doc["params_sha256"] = None
    doc["sha256"] = None  # unsealed, so an edit that still makes a program gets loaded and run
    node, key = doc, None
    for w in where:  # walk down to a random field of the document
        if isinstance(node, dict) and node:
            key = sorted(node)[w % len(node)]
        elif isinstance(node, list) and node:
            key = w % len(node)
        else:
            break
        parent, node = node, node[key]
    parent[key] = copy.deepcopy(value)
    try:
        program = serialize.loads(json.dumps(doc))
        scope = serialize.load_params(saved_pair[0], program)
    except ProgramError:
        return
    run_loaded(program, scope)


@settings(deadline=None)
@given(
    cut=st.integers(0, 10**6),
    flips=st.lists(st.integers(0, 10**7), max_size=3),
    which=st.sampled_from(["document", "parameters"]),
)
def test_fuzz_damaged_program_files(saved_pair, tmp_path_factory, cut, flips, which):
    path, text, npz = saved_pair
    folder = tmp_path_factory.mktemp("damaged")
    target = str(folder / "mlp.json")
    with open(target, "wb") as f:
        f.write(damage(text, cut, flips) if which == "document" else text)
    with open(target + ".npz", "wb") as f:
        f.write(damage(npz, cut, flips) if which == "parameters" else npz)
    scope = nb.Scope()
    with contextlib.suppress(ProgramError):
        run_loaded(nb.load(target, scope), scope)


@settings(deadline=None)
@given(cut=st.integers(0, 10**6), flips=st.lists(st.integers(0, 10**7), max_size=3))
def test_fuzz_damaged_checkpoints(saved_ckpt, tmp_path_factory, cut, flips):
    path, data = saved_ckpt
    bad = damage(data, cut, flips)
    target = tmp_path_factory.mktemp("ckpt") / "state.ckpt"
    target.write_bytes(bad)
    try:
        state = nb.load_state(target)
    except CheckpointError:
        return
    assert bad == data  # every change is detected: only the intact file loads
    np.testing.assert_array_equal(state["w"], np.ones((2, 3), np.float32))
