"""Write the named malformed seed files of tests/fuzz_seeds/ (programs, parameter files and
checkpoints that loading must refuse with a typed error). tests/test_fuzz.py says which error
and message each one must give; tools/fuzz_campaign.py mutates them.

    python tools/make_fuzz_seeds.py [folder]       # default: tests/fuzz_seeds

The files are made from a small saved training program and a small checkpoint, each damaged
in one way; regenerate them after a format change (zip timestamps differ between runs).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import struct
import sys
import tempfile
import zipfile

import numpy as np

import nbflow as nb
from nbflow import checkpoint as ck
from nbflow.graph import serialize

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FOLDER = os.path.join(os.path.dirname(HERE), "tests", "fuzz_seeds")


def mlp_program():
    """A small training program (data, parameters, matmul, relu, loss, backward, in-place
    updates) and an initialised scope."""
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
    scope = nb.Scope()
    nb.manual_seed(0)
    nb.Executor().run(startup, scope=scope)
    return main, scope


def saved_program() -> tuple[dict, bytes]:
    """The program document (parsed) and its .npz bytes."""
    main, scope = mlp_program()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp.json")
        serialize.save(main, path, scope)
        with open(path, "rb") as f:
            doc = json.loads(f.read())
        with open(path + ".npz", "rb") as f:
            npz = f.read()
    return doc, npz


def saved_checkpoint() -> bytes:
    state = {"w": nb.ones(2, 3), "step": 3, "rng": np.arange(4, dtype=np.int64)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state.ckpt")
        nb.save_state(state, path)
        with open(path, "rb") as f:
            return f.read()


# ---------------------------------------------------------------- program mutations


def op(doc, name):
    return next(o for o in doc["blocks"][0]["ops"] if o["type"] == name)


def grad_op(doc):
    """The first op of a gradient rule (it names the forward op it differentiates)."""
    return next(o for o in doc["blocks"][0]["ops"] if "grad_of" in o)


def var(doc, name):
    return next(v for v in doc["blocks"][0]["vars"] if v["name"] == name)


def blocks(*parents):
    return [{"idx": i, "parent": p, "vars": [], "ops": []} for i, p in enumerate(parents, 1)]


PROGRAM_MUTATIONS = {
    "negative_dim": lambda d: var(d, "x")["shape"].__setitem__(1, -5),
    "float_dim": lambda d: var(d, "x")["shape"].__setitem__(1, 4.0),
    "huge_dim": lambda d: var(d, "x")["shape"].__setitem__(1, 2**62),
    "shape_product_overflow": lambda d: var(d, "x").update(shape=[2**30, 2**30, 2**30]),
    "too_many_dims": lambda d: var(d, "x").update(shape=[1] * 40),
    "total_elements_overflow": lambda d: d["blocks"][0]["vars"].extend(
        {**var(d, "x"), "name": f"big{i}", "shape": [2**40], "is_data": True} for i in range(17)
    ),
    "unknown_op": lambda d: op(d, "relu").update(type="os_system"),
    "grad_of_unknown_op": lambda d: grad_op(d)["grad_of"].update(type="os_system"),
    "grad_of_not_an_object": lambda d: grad_op(d).update(grad_of="relu"),
    "op_type_not_identifier": lambda d: op(d, "relu").update(type="__import__('os')"),
    "unknown_attr": lambda d: op(d, "cross_entropy")["attrs"].update(evil=1),
    "attr_wrong_type": lambda d: op(d, "cross_entropy")["attrs"].update(ignore_index="x"),
    "attr_float_for_int": lambda d: op(d, "cross_entropy")["attrs"].update(ignore_index=1.5),
    "attr_out_of_choices": lambda d: op(d, "cross_entropy")["attrs"].update(reduction="max"),
    "attr_int_over_int64": lambda d: op(d, "cross_entropy")["attrs"].update(ignore_index=2**64),
    "attr_bad_dtype": lambda d: op(d, "full")["attrs"].update(dtype="f128"),
    "attr_nan_out_of_range": lambda d: op(d, "cross_entropy")["attrs"].update(
        label_smoothing="nan"
    ),
    "undefined_var": lambda d: op(d, "relu").update(inputs=["ghost"]),
    "used_before_defined": lambda d: d["blocks"][0]["ops"].reverse(),
    "duplicate_var": lambda d: d["blocks"][0]["vars"].append(dict(var(d, "x"))),
    "path_traversal_name": lambda d: var(d, "w1").update(name="../../etc/passwd"),
    "backslash_name": lambda d: var(d, "w1").update(name="..\\..\\w1"),
    "control_char_name": lambda d: var(d, "w1").update(name="w\n1"),
    "mutual_recursive_blocks": lambda d: d["blocks"].extend(blocks(2, 1)),
    "self_recursive_block": lambda d: d["blocks"].extend(blocks(1)),
    "deep_block_nesting": lambda d: d["blocks"].extend(blocks(*range(0, 80))),
    "bad_var_dtype": lambda d: var(d, "x").update(dtype="float128"),
    "wrong_declared_shape": lambda d: var(d, "t0").update(shape=[-1, 9]),
    "written_twice": lambda d: op(d, "relu").update(outputs=["t0"]),
    "writes_data_var": lambda d: op(d, "relu").update(outputs=["x"]),
    "inplace_output_mismatch": lambda d: op(d, "sub_").update(outputs=["t0"]),
    "too_few_inputs": lambda d: op(d, "relu").update(inputs=[]),
    "backward_start_past_end": lambda d: d.update(backward_start=10**6),
    "unknown_field": lambda d: d["blocks"][0]["ops"][0].update(code="import os"),
    "missing_field": lambda d: var(d, "x").pop("dtype"),
    "wrong_format": lambda d: d.update(format="onnx"),
    "wrong_version": lambda d: d.update(version=99),
    "location_too_long": lambda d: op(d, "relu").update(location="x" * 2000),
}

# raw text in place of the document
PROGRAM_TEXTS = {
    "not_json": b"\x00\x01\x02 not a program \xff",
    "bad_utf8": b'{"format": "nbflow.program\xff\xfe"}',
    "deep_json_nesting": b"[" * 5000 + b"]" * 5000,
    "nan_literal": b'{"format": "nbflow.program", "version": NaN}',
    "float_overflow": b'{"format": "nbflow.program", "version": 1e999}',
    "duplicate_key": b'{"format": "nbflow.program", "format": "nbflow.program"}',
    "huge_int": b'{"format": "nbflow.program", "version": ' + b"9" * 5000 + b"}",
    "json_list": b"[1, 2, 3]",
    "empty_file": b"",
}


# ---------------------------------------------------------------- parameter files


def npy(array: np.ndarray) -> bytes:
    f = io.BytesIO()
    np.lib.format.write_array(f, array, allow_pickle=False)
    return f.getvalue()


def npy_header_only(shape, dtype="<f4") -> bytes:
    """An .npy header declaring `shape` with (almost) no data after it."""
    f = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": tuple(shape)}
    np.lib.format.write_array_header_1_0(f, header)
    return f.getvalue() + bytes(16)


def zip_of(members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> bytes:
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return f.getvalue()


def overlapping_zip(npz: bytes) -> bytes:
    """The saved .npz with a second central directory entry pointing at the first member's
    bytes under another name (entries sharing bytes: the zip-bomb trick)."""
    zf = zipfile.ZipFile(io.BytesIO(npz))
    first = zf.infolist()[0]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as w:
        for info in zf.infolist():
            w.writestr(info, zf.read(info))
    data = bytearray(out.getvalue())
    # rewrite the second entry's local header offset in the central directory to the first's
    end = data.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack_from("<I", data, end + 16)[0]
    second = data.find(b"PK\x01\x02", cd_offset + 4)
    struct.pack_into("<I", data, second + 42, first.header_offset)
    return bytes(data)


def params_mutations(npz: bytes) -> dict[str, bytes]:
    w = np.zeros((4, 8), np.float32)
    b = np.zeros(8, np.float32)
    w2 = np.zeros((8, 3), np.float32)
    good = {"w1.npy": npy(w), "b1.npy": npy(b), "w2.npy": npy(w2)}
    return {
        "npz_wrong_shape": zip_of({**good, "w1.npy": npy(np.zeros((8, 4), np.float32))}),
        "npz_wrong_dtype": zip_of({**good, "w1.npy": npy(w.astype(np.float64))}),
        "npz_unknown_member": zip_of({**good, "evil.npy": npy(b)}),
        "npz_path_traversal_member": zip_of({**good, "../../w1.npy": npy(w)}),
        "npz_object_dtype": zip_of({**good, "b1.npy": npy_header_only([8], "|O")}),
        "npz_huge_declared_size": zip_of({**good, "w1.npy": npy_header_only([2**40, 8])}),
        "npz_compressed": zip_of(good, zipfile.ZIP_DEFLATED),
        "npz_overlapping_members": overlapping_zip(npz),
        "npz_not_a_zip": b"this is not a zip file" * 10,
        "npz_truncated": npz[: len(npz) // 2],
    }


# ---------------------------------------------------------------- checkpoints


def forge(manifest: dict, data: bytes = b"", raw: bytes | None = None) -> bytes:
    """A checkpoint with correct hashes around a hand-written manifest."""
    manifest = dict(manifest)
    manifest.setdefault("data_sha256", hashlib.sha256(data).hexdigest())
    manifest.setdefault("data_bytes", len(data))
    return ck.framed(raw if raw is not None else json.dumps(manifest).encode()) + data


def manifest(tree, tensors=()):
    return {"format": ck.FORMAT, "version": ck.VERSION, "tree": tree, "tensors": list(tensors)}


F32_4 = {"dtype": "<f4", "shape": [4], "offsets": [0, 16]}
DATA = np.arange(4, dtype=np.float32).tobytes() + bytes(48)


def checkpoint_seeds(good: bytes) -> dict[str, bytes]:
    flipped = bytearray(good)
    flipped[-20] ^= 0x10
    header = bytearray(good)
    header[8:16] = (1 << 40).to_bytes(8, "little")
    return {
        "ckpt_truncated": good[: len(good) - 10],
        "ckpt_bad_magic": b"PK\x03\x04" + good[4:],
        "ckpt_bit_flip_in_data": bytes(flipped),
        "ckpt_manifest_length_past_file": bytes(header),
        "ckpt_negative_dim": forge(manifest({"array": 0}, [{**F32_4, "shape": [-4]}]), DATA),
        "ckpt_huge_size": forge(
            manifest({"array": 0}, [{**F32_4, "shape": [1 << 30, 1 << 30]}]), DATA
        ),
        "ckpt_offset_past_end": forge(
            manifest({"array": 0}, [{**F32_4, "offsets": [64, 80]}]), DATA
        ),
        "ckpt_overlapping_offsets": forge(
            manifest({"list": [{"array": 0}, {"array": 1}]}, [F32_4, F32_4]), DATA
        ),
        "ckpt_object_dtype": forge(manifest({"array": 0}, [{**F32_4, "dtype": "|O"}]), DATA),
        "ckpt_pickle_tag": forge(manifest({"pickle": "cos\nsystem"})),
        "ckpt_path_traversal_field": forge({**manifest(None), "file": "../../etc/passwd"}),
        "ckpt_deep_nesting": forge({}, raw=b"[" * 5000 + b"]" * 5000),
        "ckpt_data_bytes_lie": forge({**manifest(None), "data_bytes": 1 << 40}),
    }


# ---------------------------------------------------------------- writing


def write_all(folder: str) -> list[str]:
    os.makedirs(folder, exist_ok=True)
    doc, npz = saved_program()
    written = []

    def write(name: str, data: bytes):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        written.append(name)

    for name, mutate in PROGRAM_MUTATIONS.items():
        bad = copy.deepcopy(doc)
        bad["params_sha256"] = None  # the document alone: validation is what stops it
        mutate(bad)
        write(f"{name}.json", json.dumps(bad).encode())
    for name, text in PROGRAM_TEXTS.items():
        write(f"{name}.json", text)
    text = json.dumps(doc).encode()
    write("truncated_program.json", text[: len(text) // 2])
    write("params_digest_mismatch.json", text)
    write("params_digest_mismatch.json.npz", npz[:-1] + bytes([npz[-1] ^ 1]))
    for name, data in params_mutations(npz).items():
        # the document records the damaged file's digest, so the member checks are reached
        write(f"{name}.json", json.dumps({**doc, "params_sha256": _sha(data)}).encode())
        write(f"{name}.json.npz", data)
    for name, data in checkpoint_seeds(saved_checkpoint()).items():
        write(f"{name}.ckpt", data)
    return written


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_FOLDER
    names = write_all(folder)
    print(f"wrote {len(names)} files to {folder}")
