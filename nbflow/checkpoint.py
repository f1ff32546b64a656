"""Checkpoints: `save_state(obj, path)` / `load_state(path)` for nested state, without pickle.

    nbflow.save_state({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, p)
    state = nbflow.load_state(p)

What can be stored: dicts (str or int keys), lists and tuples, nested up to MAX_DEPTH deep,
whose leaves are nbflow Tensors (dtype and requires_grad kept), numpy arrays (bool, int8-64,
uint8-64, float16/32/64, complex64/128), None, bools, ints in the int64 range, floats (NaN and
infinities too) and strings. A tensor stored twice is loaded as two copies. Anything else is
refused.

The file, one piece (like safetensors, with the manifest checked before any array exists):

    magic (8 bytes) | manifest length N (u64, little-endian) | sha256 of the manifest (32)
    | the manifest: N bytes of JSON, space-padded so the data starts on a 64-byte boundary
    | the data: each array's bytes (C order, little-endian) at a 64-byte aligned offset

The manifest is `{"format": "nbflow.checkpoint", "version": 1, "tree": ..., "tensors": [...],
"data_bytes": n, "data_sha256": hex}`: `tree` is the object with every container tagged
(`{"dict": [[key, value], ...]}`, `{"list": [...]}`, `{"tuple": [...]}`, `{"tensor": i,
"requires_grad": b}`, `{"array": i}`, `{"float": "nan"}`), `tensors[i]` is `{"dtype": "<f4",
"shape": [...], "offsets": [begin, end]}` relative to the start of the data.

Saving is atomic: the file is written to a temporary file in the same folder, flushed and
fsynced, renamed over `path` (os.replace) and the folder fsynced, so a crash at any moment
leaves either the previous checkpoint or the new one at `path` (a killed save can leave a
`.NAME.XXXXXXXX.tmp` file behind in the folder; it is never read, and the next save to `path`
removes it).

Loading treats every byte as hostile: the file must be a regular file within `max_bytes`
(checked before reading); then the magic, the manifest length (at most MAX_MANIFEST_BYTES and
within the file) and the manifest's sha256; the JSON (no duplicate keys, no NaN literals,
depth and node count bounded) against the exact layout above (no unknown fields; dtypes from
a fixed list, never `np.dtype(text)`; shapes non-negative with bounded rank and element
count; offsets exactly the canonical aligned layout, so in range and non-overlapping; every
array used exactly once; the file size exactly manifest plus data). Only then are arrays
allocated (their total is at most the file size) and read, and the data's sha256 and bool
values are checked. Any failure raises CheckpointError (a ValueError) saying what is wrong;
a file that cannot be opened raises the OSError (FileNotFoundError, ...) as open() does.
No pickle, eval, exec or import is driven by the file.

`nbflow.save(obj, path)` / `nbflow.load(path)` are the front door, as `torch.save` and
`paddle.save` take a model's state as well as a program: a Program goes to the program format
(graph/serialize.py), anything else to a checkpoint; loading tells the two apart by the
checkpoint's magic. A `.safetensors` path (or `format="safetensors"`) goes to the safetensors
format instead (safetensors_io.py), the one PyTorch and Hugging Face tools exchange.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import struct

import numpy as np

from .core import STATE
from .core import dtypes as dt
from .core.errors import ArgumentError, CheckpointError, DomainError
from .eager.tensor import Tensor
from .graph import serialize
from .graph.program import Program
from .graph.serialize import atomic_write
from .safetensors_io import is_safetensors_path, load_safetensors, save_safetensors

__all__ = ["FORMAT", "MAGIC", "VERSION", "load", "load_state", "save", "save_state"]

FORMAT = "nbflow.checkpoint"
VERSION = 1
MAGIC = b"\x89nbflow\n"
PREFIX = struct.Struct("<8sQ32s")  # magic, manifest length, manifest sha256
ALIGN = 64

MAX_FILE_BYTES = 1 << 36  # default budget for load_state (64 GiB)
MAX_MANIFEST_BYTES = 64 << 20
MAX_DEPTH = 64
MAX_NODES = 1 << 20
MAX_ARRAYS = 1 << 20
MAX_NDIM = 32
MAX_ELEMENTS = 1 << 40
INT64 = (-(1 << 63), (1 << 63) - 1)

# the only dtypes a checkpoint holds, by numpy's dtype.str (little-endian)
DTYPES = {
    np.dtype(t).newbyteorder("<").str: np.dtype(t).newbyteorder("<")
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
}
TENSOR_DTYPES = {d.newbyteorder("<").str for d in dt.SHORT}  # what a Tensor may hold
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
TAGS = ("dict", "list", "tuple", "tensor", "array", "float")


def save(obj, path, scope=None, format: str | None = None) -> None:
    """Save a Program with its parameters (from `scope`, or its captured tensors), or any other
    state a checkpoint holds (`model.state_dict()`, nested dicts of tensors: save_state).
    A path ending in `.safetensors`, or `format="safetensors"`, writes a state_dict in the
    safetensors format instead (safetensors_io.py: for PyTorch and Hugging Face tools)."""
    if _safetensors(path, format, "save"):
        if isinstance(obj, Program) or scope is not None:
            raise ArgumentError("save: the safetensors format holds a state_dict, not a Program")
        save_safetensors(obj, path)
        return
    if isinstance(obj, Program):
        serialize.save(obj, path, scope)
        return
    if scope is not None:
        raise ArgumentError(f"save: scope= is for saving a Program, not a {type(obj).__name__}")
    save_state(obj, path)


def load(
    path,
    scope=None,
    max_param_bytes: int | None = None,
    require_loop_bounds=False,
    format: str | None = None,
):
    """What `save` wrote: the state of a checkpoint, or a Program (graph/serialize.py's load,
    its parameters into `scope` or captured). max_param_bytes: the largest checkpoint, or the
    most a program's parameters may take. A `.safetensors` path, or `format="safetensors"`,
    reads a safetensors file's tensors by name (safetensors_io.load_safetensors)."""
    if _safetensors(path, format, "load"):
        if scope is not None or require_loop_bounds:
            raise ArgumentError("load: a safetensors file holds tensors, not a Program")
        return load_safetensors(path, max_param_bytes)
    if _is_checkpoint(path):
        if scope is not None or require_loop_bounds:
            raise ArgumentError(
                f"load: {path} is a checkpoint of state, not a Program: scope= and "
                "require_loop_bounds= are for programs"
            )
        return load_state(path, max_param_bytes)
    if _damaged_magic(path):
        raise CheckpointError(
            f"{path}: not an nbflow checkpoint (wrong magic bytes), though the rest of its "
            "header is a checkpoint's: the file is damaged"
        )
    return serialize.load(path, scope, max_param_bytes, require_loop_bounds)


def _safetensors(path, format, what: str) -> bool:
    """Whether save/load use the safetensors format: format="safetensors", or a `.safetensors`
    path with no format given ("nbflow": nbflow's own whatever the suffix)."""
    if format not in (None, "nbflow", "safetensors"):
        raise DomainError(f"{what}: format is 'nbflow' or 'safetensors', not {format!r}")
    return format == "safetensors" or (format is None and is_safetensors_path(path))


def _is_checkpoint(path) -> bool:
    """Whether `path` is a regular file starting with the checkpoint's magic (anything else
    goes to the program loader, whose checks and errors it then gets)."""
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(len(MAGIC)) == MAGIC


def _damaged_magic(path) -> bool:
    """Whether `path` is a regular file whose magic is not the checkpoint's but whose header
    is: the manifest length and sha256 that follow the magic fit the manifest after them."""
    if not os.path.isfile(path):  # (before opening: a FIFO would block)
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(PREFIX.size)
            if len(head) < PREFIX.size:
                return False
            _, n, digest = PREFIX.unpack(head)
            if n > MAX_MANIFEST_BYTES:
                return False
            return hashlib.sha256(f.read(n)).digest() == digest
    except OSError:
        return False  # the program loader reports it


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


# ---------------------------------------------------------------- saving


def save_state(obj, path) -> None:
    """Write `obj` (nested dicts/lists/tuples of tensors, arrays and JSON scalars) to `path`
    atomically; raises CheckpointError for something it cannot store (nothing is written)."""
    path = os.fspath(path)
    arrays: list[np.ndarray] = []
    tree = _encode(obj, arrays, 0, "the state")
    entries, end = [], 0
    data_hash = hashlib.sha256()
    for a in arrays:
        begin = _align(end)
        data_hash.update(bytes(begin - end))
        data_hash.update(_bytes(a))
        end = begin + a.nbytes
        entries.append({"dtype": a.dtype.str, "shape": list(a.shape), "offsets": [begin, end]})
    data_bytes = _align(end)
    data_hash.update(bytes(data_bytes - end))
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "tree": tree,
        "tensors": entries,
        "data_bytes": data_bytes,
        "data_sha256": data_hash.hexdigest(),
    }
    head = framed(json.dumps(manifest, allow_nan=False, separators=(",", ":")).encode())
    if len(head) - PREFIX.size > MAX_MANIFEST_BYTES:
        raise CheckpointError(
            f"save_state: the manifest would be {len(head) - PREFIX.size} bytes, over "
            f"{MAX_MANIFEST_BYTES} (too many objects; store large collections as arrays)"
        )

    def write(f):
        f.write(head)
        pos = 0
        for a, entry in zip(arrays, entries):
            begin, end = entry["offsets"]
            f.write(bytes(begin - pos))
            _write_array(f, a)
            pos = end
        f.write(bytes(data_bytes - pos))

    atomic_write(path, write)


def _bytes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint8)  # a is C-contiguous: a view of its bytes


def framed(text: bytes) -> bytes:
    """A file's start: the prefix (magic, manifest length and hash), then the manifest text
    padded with spaces so that the data begins aligned."""
    text += b" " * (_align(PREFIX.size + len(text)) - PREFIX.size - len(text))
    return PREFIX.pack(MAGIC, len(text), hashlib.sha256(text).digest()) + text


def _write_array(f, a: np.ndarray) -> None:
    f.write(_bytes(a).data)


def _encode(x, arrays: list, depth: int, where: str):
    if depth > MAX_DEPTH:
        raise CheckpointError(f"save_state: {where} is nested more than {MAX_DEPTH} deep")
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        if not INT64[0] <= int(x) <= INT64[1]:
            raise CheckpointError(f"save_state: {where} = {x} is out of the int64 range")
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isfinite(x):
            return x
        return {"float": "nan" if math.isnan(x) else str(x)}
    if isinstance(x, dict):
        items = []
        for k, v in x.items():
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, (str, int, np.integer)):
                raise CheckpointError(f"save_state: {where} has key {k!r}: keys are str or int")
            key = k if isinstance(k, str) else _encode(k, arrays, depth + 1, where)
            items.append([key, _encode(v, arrays, depth + 1, f"{where}[{k!r}]")])
        return {"dict": items}
    if isinstance(x, (list, tuple)):
        tag = "list" if isinstance(x, list) else "tuple"
        return {tag: [_encode(v, arrays, depth + 1, f"{where}[{i}]") for i, v in enumerate(x)]}
    if isinstance(x, Tensor):
        arrays.append(_storable(x.numpy(), where))
        return {"tensor": len(arrays) - 1, "requires_grad": bool(x.requires_grad)}
    if isinstance(x, np.ndarray):
        arrays.append(_storable(x, where))
        return {"array": len(arrays) - 1}
    raise CheckpointError(
        f"save_state: {where} is a {type(x).__name__}; a checkpoint holds dicts, lists, tuples, "
        "tensors, numpy arrays, None, bools, ints, floats and strings"
    )


def _storable(a: np.ndarray, where: str) -> np.ndarray:
    d = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    if d.str not in DTYPES:
        raise CheckpointError(f"save_state: {where} has dtype {a.dtype}, which is not storable")
    return np.asarray(a, dtype=DTYPES[d.str], order="C")  # (ascontiguousarray: 0-d -> 1-d)


# ---------------------------------------------------------------- loading


def load_state(path, max_bytes: int | None = None):
    """Read a checkpoint written by save_state (checked as the module doc says). Tensors come
    back as nbflow Tensors, arrays as numpy arrays, tuples as tuples. max_bytes: the largest
    file accepted (default: MAX_FILE_BYTES or the memory budget, the smaller)."""
    path = os.fspath(path)
    if max_bytes is None:
        max_bytes = min(MAX_FILE_BYTES, STATE.memory_budget)
    try:
        info = os.stat(path)
    except OSError:
        info = None  # open() below raises the usual error
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise CheckpointError(f"{path} is not a regular file")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise CheckpointError(f"{path} has {size} bytes, over the budget of {max_bytes}")
        try:
            return _load(f, size)
        except CheckpointError as e:
            e.args = (f"{path}: {e}",)
            raise
        except (MemoryError, KeyboardInterrupt):
            raise
        except Exception as e:  # a check missed something: still a typed error, never a crash
            raise CheckpointError(f"{path}: damaged checkpoint ({type(e).__name__}: {e})") from e


def _read_exact(f, n: int, what: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise CheckpointError(f"truncated file: {what} needs {n} bytes, found {len(data)}")
    return data


def _load(f, size: int):
    if size < PREFIX.size:
        raise CheckpointError(f"truncated or not a checkpoint ({size} bytes)")
    magic, n, digest = PREFIX.unpack(_read_exact(f, PREFIX.size, "the header"))
    if magic != MAGIC:
        raise CheckpointError("not an nbflow checkpoint (wrong magic bytes)")
    if n > MAX_MANIFEST_BYTES or PREFIX.size + n > size:
        raise CheckpointError(
            f"the manifest length {n} is over the file size {size} (truncated?) or the "
            f"limit of {MAX_MANIFEST_BYTES} bytes"
        )
    text = _read_exact(f, n, "the manifest")
    if hashlib.sha256(text).digest() != digest:
        raise CheckpointError("the manifest is corrupt (its sha256 does not match)")
    manifest = _parse(text)
    data_start = PREFIX.size + n
    entries = _check_manifest(manifest, data_start, size)
    used: set[int] = set()
    plan = _check_tree(manifest["tree"], entries, used, 0, [0])
    if len(used) != len(entries):
        raise CheckpointError(f"{len(entries) - len(used)} stored arrays are not in the tree")
    arrays = _read_arrays(f, entries, manifest)
    return _build(plan, arrays)


def _parse(text: bytes) -> dict:
    def pairs(items):
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise CheckpointError("the manifest has a duplicate key in an object")
        return dict(items)

    def no_constant(name):
        raise CheckpointError(f"the manifest has a bare {name} (not JSON)")

    try:
        doc = json.loads(text.decode("utf-8"), object_pairs_hook=pairs, parse_constant=no_constant)
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError("the manifest is nested too deep") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, int digit limit
        raise CheckpointError(f"the manifest is not valid JSON ({str(e)[:200]})") from None
    if not isinstance(doc, dict):
        raise CheckpointError("the manifest is not a JSON object")
    return doc


def _int(x, what: str, lo: int = 0, hi: int = INT64[1]) -> int:
    if type(x) is not int or not lo <= x <= hi:
        raise CheckpointError(f"{what} must be an int in [{lo}, {hi}], got {str(x)[:60]}")
    return x


def _check_manifest(m: dict, data_start: int, size: int) -> list:
    fields = {"format", "version", "tree", "tensors", "data_bytes", "data_sha256"}
    if set(m) != fields:
        extra, missing = sorted(set(m) - fields), sorted(fields - set(m))
        raise CheckpointError(f"manifest fields: unknown {extra[:5]}, missing {missing}")
    if m["format"] != FORMAT or m["version"] != VERSION:
        raise CheckpointError(
            f"format {str(m['format'])[:40]!r} version {str(m['version'])[:20]}: "
            f"this nbflow reads {FORMAT!r} version {VERSION}"
        )
    digest = m["data_sha256"]
    if not (
        isinstance(digest, str) and len(digest) == 64 and set(digest) <= set("0123456789abcdef")
    ):
        raise CheckpointError("data_sha256 is not a sha256 digest (64 lowercase hex digits)")
    data_bytes = _int(m["data_bytes"], "data_bytes")
    if data_start % ALIGN or data_start + data_bytes != size:
        raise CheckpointError(
            f"the file has {size} bytes; the manifest declares {data_start} + {data_bytes} "
            "(truncated, extended or misaligned)"
        )
    tensors = m["tensors"]
    if not isinstance(tensors, list) or len(tensors) > MAX_ARRAYS:
        raise CheckpointError(f"tensors must be a list of at most {MAX_ARRAYS} entries")
    entries, end = [], 0
    for i, e in enumerate(tensors):
        where = f"tensors[{i}]"
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "offsets"}:
            raise CheckpointError(f"{where} must have exactly dtype, shape and offsets")
        dtype = DTYPES.get(e["dtype"]) if isinstance(e["dtype"], str) else None
        if dtype is None:
            raise CheckpointError(f"{where}: dtype {str(e['dtype'])[:40]!r} is not storable")
        shape = e["shape"]
        if not isinstance(shape, list) or len(shape) > MAX_NDIM:
            raise CheckpointError(f"{where}: shape must be a list of at most {MAX_NDIM} dims")
        count = 1
        for d in shape:
            count *= _int(d, f"{where}: a dim", 0, MAX_ELEMENTS)
            if count > MAX_ELEMENTS:
                raise CheckpointError(f"{where}: shape {shape} is over {MAX_ELEMENTS} elements")
        offsets = e["offsets"]
        begin = _align(end)
        end = begin + count * dtype.itemsize
        if offsets != [begin, end]:
            raise CheckpointError(
                f"{where}: offsets {str(offsets)[:60]} are not [{begin}, {end}] (its shape and "
                "dtype, packed after the previous array)"
            )
        if end > data_bytes:
            raise CheckpointError(f"{where}: its data ends at {end}, past the data ({data_bytes})")
        entries.append((dtype, tuple(shape), begin, end))
    if _align(end) != data_bytes:
        raise CheckpointError(f"data_bytes {data_bytes} is not the arrays' extent {_align(end)}")
    return entries


def _check_tree(x, entries, used: set, depth: int, nodes: list):
    """Validate the tree (nothing allocated yet); returns a plan _build turns into objects."""
    nodes[0] += 1
    if nodes[0] > MAX_NODES:
        raise CheckpointError(f"the tree has more than {MAX_NODES} nodes")
    if depth > MAX_DEPTH:
        raise CheckpointError(f"the tree is nested more than {MAX_DEPTH} deep")
    if x is None or isinstance(x, (bool, str, float)):
        return x
    if isinstance(x, int):
        return _int(x, "an int in the tree", *INT64)
    if not isinstance(x, dict) or not x:
        raise CheckpointError(f"bad tree node of type {type(x).__name__}")
    tag = next(iter(x))
    if tag not in TAGS or set(x) != ({"tensor", "requires_grad"} if tag == "tensor" else {tag}):
        raise CheckpointError(f"bad tree node with keys {sorted(x)[:5]}")
    v = x[tag]
    if tag == "float":
        if v not in NON_FINITE:
            raise CheckpointError(f"bad float {str(v)[:20]!r} (only 'nan', 'inf', '-inf')")
        return NON_FINITE[v]
    if tag in ("tensor", "array"):
        i = _int(v, f"{tag} index", 0, max(len(entries) - 1, 0))
        if i >= len(entries) or i in used:
            raise CheckpointError(f"{tag} {i} is not stored, or used twice")
        used.add(i)
        if tag == "tensor":
            if entries[i][0].str not in TENSOR_DTYPES:
                raise CheckpointError(f"tensor {i} has dtype {entries[i][0]}, not a tensor dtype")
            if not isinstance(x["requires_grad"], bool):
                raise CheckpointError(f"tensor {i}: requires_grad must be a bool")
            if x["requires_grad"] and entries[i][0].kind not in "fc":
                raise CheckpointError(f"tensor {i}: only float or complex tensors require grad")
            return ("tensor", i, x["requires_grad"])
        return ("array", i)
    if not isinstance(v, list):
        raise CheckpointError(f"a {tag} node must hold a list")
    if tag != "dict":
        return (tag, [_check_tree(y, entries, used, depth + 1, nodes) for y in v])
    items, keys = [], set()
    for pair in v:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise CheckpointError("a dict item must be a [key, value] pair")
        k = pair[0]
        if isinstance(k, bool) or not isinstance(k, (str, int)):
            raise CheckpointError(f"dict key {str(k)[:40]!r}: keys are str or int")
        if isinstance(k, int):
            _int(k, "a dict key", *INT64)
        if k in keys:
            raise CheckpointError(f"dict key {str(k)[:40]!r} appears twice")
        keys.add(k)
        items.append((k, _check_tree(pair[1], entries, used, depth + 1, nodes)))
    return ("dict", items)


def _read_arrays(f, entries, manifest) -> list:
    digest = hashlib.sha256()
    arrays, pos = [], 0
    for i, (dtype, shape, begin, end) in enumerate(entries):
        digest.update(_read_exact(f, begin - pos, "padding"))
        a = np.empty(shape, dtype)
        view = memoryview(_bytes(a))
        filled = 0
        while filled < len(view):
            n = f.readinto(view[filled:])
            if not n:
                raise CheckpointError(f"truncated file: array {i} is cut short")
            filled += n
        digest.update(view)
        if dtype.kind == "b" and a.size and _bytes(a).max() > 1:
            raise CheckpointError(f"array {i}: bool values other than 0 and 1")
        arrays.append(a)
        pos = end
    digest.update(_read_exact(f, manifest["data_bytes"] - pos, "padding"))
    if f.read(1):
        raise CheckpointError("the file grew while it was read")
    if digest.hexdigest() != manifest["data_sha256"]:
        raise CheckpointError("the data is corrupt (its sha256 does not match the manifest)")
    return arrays


def _build(plan, arrays):
    if not isinstance(plan, tuple):
        return plan
    tag = plan[0]
    if tag == "tensor":
        t = Tensor(arrays[plan[1]])
        t.requires_grad = plan[2]
        return t
    if tag == "array":
        return arrays[plan[1]]
    if tag == "dict":
        return {k: _build(v, arrays) for k, v in plan[1]}
    items = [_build(v, arrays) for v in plan[1]]
    return items if tag == "list" else tuple(items)
