"""Saving and loading Programs: a versioned JSON document, parameters in an .npz beside it.

    save(program, "model.json", scope)      # writes model.json and model.json.npz
    program = load("model.json", scope)     # a checked Program; parameters go into scope

API:
- `save(program, path, scope=None)`: the program as JSON at `path`, and the values of its
  persistable vars at `path + ".npz"`, taken from `scope` (falling back to the program's
  captured tensors) or, without a scope, from `program.captured`. Persistable vars with no
  value yet (not initialised by a startup program run) are left out of the .npz.
- `load(path, scope=None) -> Program`: the program, and its saved parameters: into `scope`
  when one is given, else attached to the program as captured tensors (as for a traced
  program), which an Executor copies into whatever scope it runs with.
- `load_program(path)`, `load_params(path, program, scope=None) -> Scope`: the two halves.
- `dumps(program) -> str`, `loads(text) -> Program`: the document alone, in memory.
- `SCHEMA`: the JSON Schema of the document; `FORMAT`, `VERSION`.

The document: `{"format": "nbflow.program", "version": 3, "blocks": [...], "backward_start",
"next_name", "params_sha256", "sha256"}`; a block has `idx`, `parent`, `vars` (name, shape,
dtype short name, persistable, stop_gradient, is_data, location) and `ops` (type, input and
output var names in slot order, attrs, location, `grad_edges` (which inputs pass a gradient
back, fixed when the op was built), `rule_inputs` when an in-place op's gradient reads a saved
copy of its target, and `grad_of` for an op of a gradient rule: the type and location of the
forward op it differentiates, which a NaN/Inf check names), and `write_back: true` for the op
that gives a base the history of a write through one of its views (nbflow/views.py: it changes
no value, so it is no new version; since version 2). A sub-block (control flow) also lists its
`inputs` and `outputs` by name, and ops refer to sub-blocks by index (attr kind "block").
Attrs are stored by their declared kind: dtypes by short name, non-finite floats as "inf",
"-inf" or "nan" (JSON has no such numbers), a complex fill value as [real, imaginary] (a
loader before it refuses such a program), index keys as lists of lists. A random op's
`generator` is stored as null: a loaded program draws from the default generator (seed it with
nbflow.manual_seed). The in-place map is implied by the op type.

Loading is validation, never code: the text is parsed by `json` (no pickle, eval, exec or
import driven by the file), checked against SCHEMA, then semantically: op types from the
registry only, attrs decoded by kind and re-checked by the op's own `check_attrs`, every input
defined before use (in its block or an enclosing one), block parents acyclic with bounded
nesting, shapes and element counts bounded, in-place outputs equal to their target, and each
op's shape rule re-run and compared with the declared output vars. The .npz is read with
allow_pickle=False after every array header (name, dtype, shape) was checked against the
program and the total size against a budget. Any failure raises ProgramError naming the field,
op or var; the document records a digest of its .npz so a mismatched pair is detected, and
(since version 3) the sha256 of its own content (`sha256`: canonical JSON of every other field),
checked after everything else, so a document damaged or edited after saving (a `2.0` made
`3.0`) is refused with a ProgramError naming the file; a document whose `sha256` is null (or
older than version 3) is not sealed.
Sub-blocks: each is run by exactly one op of its parent block (so no block runs itself or an
enclosing block: no recursion), writes only its own vars, and fits its op's inputs and
outputs; `load(..., require_loop_bounds=True)` also rejects a while loop without
max_iterations or with more than MAX_LOOP_ITERATIONS (`require_loop_bounds=N`: more than N).

Crash safety: a save killed at any moment (or a power loss) leaves the previous program or
the new one loadable, never neither. The document is the manifest, written last: it names the
sha256 of its parameters, which `load` finds either under `path + ".npz"` or, when a save was
cut short between its steps, under `path + ".npz." + sha256[:16]`. A save (1) writes the new
parameters there (old document and old .npz untouched), (2) replaces the document, (3) renames
the staged parameters over `path + ".npz"`. Every file is written to a temporary sibling
(`.NAME.XXXXXXXX.tmp`), fsynced and renamed over its target (os.replace), and the folder is
fsynced after each rename, so the steps reach the disk in this order. The next save to the
same path removes what killed saves left (temporary files, staged parameters no document
names any more); one process at a time should save to a path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import stat
import tempfile
import warnings
import zipfile
from functools import lru_cache

import numpy as np

from ..core import REGISTRY, STATE, Spec
from ..core import dtypes as dt
from ..core.errors import ArgumentError, CheckpointError, ProgramError
from ..core.views import is_write_back
from ..eager.tensor import Tensor
from .executor import Scope, compatible
from .program import Block, Program

__all__ = [
    "FORMAT",
    "SCHEMA",
    "VERSION",
    "dumps",
    "from_document",
    "load",
    "load_params",
    "load_program",
    "loads",
    "save",
]

FORMAT = "nbflow.program"
VERSION = 3
# version 1 had no write_back mark (a write-back counted as a new version); version 2 no sha256
READABLE = (1, 2, 3)

# Bounds on what a loaded document may declare (a saved program may come from anyone).
MAX_FILE_BYTES = 256 << 20
MAX_BLOCKS = 1024
MAX_DEPTH = 64  # block nesting
MAX_VARS = 1 << 20  # per block
MAX_OPS = 1 << 20  # per block
MAX_ARGS = 4096  # inputs or outputs of one op
MAX_NDIM = 32
MAX_ELEMENTS = 1 << 40  # per var (unknown dims count as 1)
MAX_TOTAL_ELEMENTS = 1 << 44  # all vars together
MAX_NAME = 256
MAX_LOCATION = 1024
MAX_PARAM_BYTES = 1 << 34  # default budget for the parameters read from an .npz
INT64 = (-(1 << 63), (1 << 63) - 1)  # range of every int in an attr
_NONBLOCK = os.O_NONBLOCK if os.name == "posix" else 0  # opening a FIFO does not wait
MAX_NESTING = 64  # JSON arrays and objects inside each other (a real document: under 10)
MAX_LOOP_ITERATIONS = 1 << 20  # the bound on a loop's max_iterations with require_loop_bounds

DTYPES = {short: d for d, short in dt.SHORT.items()}
NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
NO_VALUE_ATTRS = ("generator",)  # process objects: stored as null

# ---------------------------------------------------------------- schema

_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_NAME,
    "pattern": r"^[^/\\\x00-\x1f\x7f]+$",  # no path separators or control characters
}
_IDENT = {"type": "string", "maxLength": 64, "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"}
_LOCATION = {"type": ["string", "null"], "maxLength": MAX_LOCATION}
_NAMES = {"type": "array", "maxItems": MAX_ARGS, "items": _NAME}
_SCALAR = {"type": ["null", "boolean", "number", "string"], "maxLength": MAX_NAME}


def _list_of(items: dict, max_items: int) -> dict:
    """A scalar or a list of `items`."""
    return {
        "type": [*items["type"], "array"],
        "maxLength": MAX_NAME,
        "maxItems": max_items,
        "items": items,
    }


# an attr value: a scalar, a list of them (split sizes), or a list of short lists (an index key)
_ATTR = _list_of(_list_of(_SCALAR, 16), MAX_ARGS)

_VAR = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "shape", "dtype", "persistable", "stop_gradient", "is_data", "location"],
    "properties": {
        "name": _NAME,
        "shape": {
            "type": "array",
            "maxItems": MAX_NDIM,
            "items": {"type": "integer", "minimum": -1, "maximum": MAX_ELEMENTS},
        },
        "dtype": {"enum": sorted(DTYPES)},
        "persistable": {"type": "boolean"},
        "stop_gradient": {"type": "boolean"},
        "is_data": {"type": "boolean"},
        "location": _LOCATION,
    },
}

_OP = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type", "inputs", "outputs", "attrs", "location"],
    "properties": {
        "type": _IDENT,
        "inputs": _NAMES,
        "outputs": _NAMES,
        "rule_inputs": {"anyOf": [{"type": "null"}, _NAMES]},
        "grad_edges": {"type": "array", "maxItems": MAX_ARGS, "items": {"type": "boolean"}},
        "write_back": {"const": True},
        "grad_of": {
            "type": "object",
            "additionalProperties": False,
            "required": ["type", "location"],
            "properties": {"type": _IDENT, "location": _LOCATION},
        },
        "attrs": {
            "type": "object",
            "maxProperties": 64,
            "propertyNames": _IDENT,
            "additionalProperties": _ATTR,
        },
        "location": _LOCATION,
    },
}

_BLOCK = {
    "type": "object",
    "additionalProperties": False,
    "required": ["idx", "parent", "vars", "ops"],
    "properties": {
        "idx": {"type": "integer", "minimum": 0, "maximum": MAX_BLOCKS},
        "parent": {"type": "integer", "minimum": -1, "maximum": MAX_BLOCKS},
        "vars": {"type": "array", "maxItems": MAX_VARS, "items": _VAR},
        "ops": {"type": "array", "maxItems": MAX_OPS, "items": _OP},
        "inputs": _NAMES,  # a sub-block's parameters and results (control flow)
        "outputs": _NAMES,
    },
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "nbflow program",
    "type": "object",
    "additionalProperties": False,
    "required": ["format", "version", "blocks", "backward_start"],
    "properties": {
        "format": {"const": FORMAT},
        "version": {"enum": list(READABLE)},
        "blocks": {"type": "array", "minItems": 1, "maxItems": MAX_BLOCKS, "items": _BLOCK},
        "backward_start": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_OPS},
        "next_name": {"type": "integer", "minimum": 0, "maximum": 1 << 40},
        "params_sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
        "sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
    },
}


_PATTERNS = {
    _NAME["pattern"]: "is not a valid name (no '/', '\\' or control characters)",
    _IDENT["pattern"]: "is not an identifier",
    SCHEMA["properties"]["params_sha256"]["pattern"]: "is not a sha256 digest (64 hex digits)",
}


@lru_cache(maxsize=1)
def _validator():
    import jsonschema  # imported on first load only: `import nbflow` stays fast

    # JSON Schema counts 1.0 as an integer; a shape or an index must be a true int
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool)
    )
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    return cls(SCHEMA)


def _check_schema(doc: dict):
    import jsonschema

    errors = list(_islice(_validator().iter_errors(doc), 20))
    if errors:
        e = jsonschema.exceptions.best_match(errors)
        where = "".join(f"[{p!r}]" for p in e.absolute_path) or "the document root"
        message = e.message
        if e.validator == "pattern":  # say what the regular expression means
            what = _PATTERNS.get(e.validator_value, "does not have the expected form")
            message = f"{_short(repr(e.instance), 80)} {what}"
        raise ProgramError(f"bad program document at {where}: {_short(message)}")


def _islice(it, n):
    for i, x in enumerate(it):
        if i >= n:
            return
        yield x


def _short(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "..."


# ---------------------------------------------------------------- saving


def dumps(program: Program) -> str:
    """The program as a JSON document (without parameters), sealed with its sha256."""
    doc = _document(program)
    doc["sha256"] = _content_sha256(doc)
    return _dump(doc).decode()


def _content_sha256(doc: dict) -> str:
    """The sha256 of a document's content: every field but `sha256` itself, as canonical JSON
    (sorted keys, no spaces), so it does not depend on the layout of the text."""
    content = {k: v for k, v in doc.items() if k != "sha256"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _check_content(doc: dict, name: str):
    """The document's recorded sha256 against its content (checked after every other check,
    so a document edited into something invalid gets the error that says what is wrong)."""
    recorded = doc.get("sha256")
    if recorded is not None and recorded != _content_sha256(doc):
        raise ProgramError(
            f"{name} is corrupt or was edited: its content does not match the sha256 it records"
        )


def _dump(doc: dict) -> bytes:
    """JSON with one var or op per line, so two saved programs diff line by line."""

    def one_line(x) -> str:
        return json.dumps(x, allow_nan=False)

    def items(xs) -> str:
        return "[\n" + ",\n".join("    " + one_line(x) for x in xs) + "\n   ]"

    def signature(b) -> str:  # a sub-block's inputs and outputs
        if "inputs" not in b:
            return ""
        return f',\n   "inputs": {one_line(b["inputs"])}, "outputs": {one_line(b["outputs"])}'

    blocks = ",\n".join(
        f'  {{"idx": {b["idx"]}, "parent": {b["parent"]}{signature(b)},\n'
        f'   "vars": {items(b["vars"])},\n   "ops": {items(b["ops"])}}}'
        for b in doc["blocks"]
    )
    fields = [f" {one_line(k)}: {one_line(v)}" for k, v in doc.items() if k != "blocks"]
    return ("{\n" + ",\n".join([*fields, f' "blocks": [\n{blocks}\n ]']) + "\n}\n").encode()


def save(program: Program, path, scope=None) -> None:
    """Write the program to `path` and its persistable values to `path + ".npz"`, crash-safe
    (the module's docstring: the previous program or this one loads, whenever it stops)."""
    path = os.fspath(path)
    doc = _document(program)
    from_document(_parse(_dump(doc)))  # never write a file that would not load
    values = _param_values(program, scope)
    params = path + ".npz"
    tmp, digest = _written_temp(params, lambda f: _write_npz(f, values))
    staged = _publish(tmp, _staged_name(params, digest))  # (1) beside the old parameters
    doc["params_sha256"] = digest
    doc["sha256"] = _content_sha256(doc)
    text = _dump(doc)
    atomic_write(path, lambda f: f.write(text))  # (2) the new document names them
    _publish(staged, params)  # (3) under their usual name
    _remove_staged(params)  # what earlier saves cut short left


def _staged_name(params: str, digest: str) -> str:
    """Where a save puts the parameters before its document names them."""
    return f"{params}.{digest[:16]}"


def _remove_staged(params: str):
    """Remove the staged parameters of saves cut short (none is named by the document now
    at the path: it names the parameters at `params`)."""
    folder, name = os.path.split(os.path.abspath(params))
    staged = re.compile(re.escape(name) + r"\.[0-9a-f]{16}")
    for entry in _entries(folder):
        if staged.fullmatch(entry):
            _unlink_quietly(os.path.join(folder, entry))


def _remove_temporaries(path: str):
    """Remove the temporary files that killed saves to `path` left (`.NAME.XXXXXXXX.tmp`:
    mkstemp's names, so those of another file's saves never match)."""
    folder, name = os.path.split(os.path.abspath(path))
    temporary = re.compile(r"\." + re.escape(name) + r"\.[a-z0-9_]{8}\.tmp")
    for entry in _entries(folder):
        if temporary.fullmatch(entry):
            _unlink_quietly(os.path.join(folder, entry))


def _entries(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _unlink_quietly(path: str):
    with contextlib.suppress(OSError):  # gone already, or not ours to remove: the save goes on
        os.unlink(path)


def _document(program: Program) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "blocks": [_block_doc(b) for b in program.blocks],
        "backward_start": program.backward_start,
        "next_name": program._names,  # so names made after loading match the original's
        "params_sha256": None,
        "sha256": None,
    }


def _block_doc(block: Block) -> dict:
    doc = {
        "idx": block.idx,
        "parent": block.parent,
        "vars": [_var_doc(v) for v in block.vars.values()],
        "ops": [_op_doc(block, i, node) for i, node in enumerate(block.ops)],
    }
    if block.idx > 0:
        where = f"block {block.idx}"
        doc["inputs"] = [_ref(block, v, where) for v in block.inputs]
        doc["outputs"] = [_ref(block, v, where) for v in block.outputs]
    return doc


def _var_doc(v) -> dict:
    return {
        "name": v.name,
        "shape": list(v.shape),
        "dtype": dt.SHORT[v.dtype],
        "persistable": bool(v.persistable),
        "stop_gradient": bool(v.stop_gradient),
        "is_data": bool(v.is_data),
        "location": v.location,
    }


def _op_doc(block: Block, i: int, node) -> dict:
    where = f"block {block.idx}, op {i} ({node.op.name})"
    doc = {
        "type": node.op.name,
        "inputs": [_ref(block, v, where) for v in node.inputs],
        "outputs": [_ref(block, v, where) for v in node.outputs],
        "attrs": {
            name: _encode_attr(node.op.attrs[name].kind, name, value, where)
            for name, value in node.attrs.items()
        },
        "location": node.location,
    }
    if node.rule_inputs is not None:
        doc["rule_inputs"] = [_ref(block, v, where) for v in node.rule_inputs]
    if node.edges is not None:
        # which inputs pass a gradient back, as decided when the op was built: an in-place
        # write may since have changed a var's stop_gradient (the saved, final value)
        doc["grad_edges"] = [e is not None for e in node.edges]
    if node.write_back:
        doc["write_back"] = True
    if node.grad_of is not None:
        doc["grad_of"] = {"type": node.grad_of.op.name, "location": node.grad_of.location}
    return doc


class ForwardOp:
    """What a loaded gradient op knows of the forward op it differentiates (a built program
    has the forward Node itself): its op and the line that defined it."""

    __slots__ = ("op", "location")

    def __init__(self, op, location):
        self.op, self.location = op, location


def _ref(block: Block, v, where: str) -> str:
    """The name of v, which must be what the name means in the block (else loading breaks)."""
    try:
        found = block.var(v.name)
    except KeyError:
        found = None
    if found is not v:
        raise ProgramError(f"save: {where} uses %{v.name}, which is not a var of its block")
    return v.name


def _encode_attr(kind: str, name: str, value, where: str):
    if value is None:
        return None
    if kind == "dtype":
        return dt.SHORT[value]
    if kind == "ints":
        return [int(n) for n in value]
    if kind == "float" or (kind == "value" and isinstance(value, float)):
        return _encode_float(value)
    if kind == "value" and isinstance(value, complex):  # (JSON has no complex numbers)
        return [_encode_float(value.real), _encode_float(value.imag)]
    if kind == "any":
        return None if name in NO_VALUE_ATTRS else _encode_any(value, name, where)
    return value


def _encode_float(x: float):
    return float(x) if math.isfinite(x) else ("nan" if math.isnan(x) else str(x))


def _encode_any(value, name: str, where: str):
    """A structured attr as JSON: tuples become lists; only JSON-representable leaves."""
    if isinstance(value, (tuple, list)):
        return [_encode_any(v, name, where) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value):
        return float(value)
    raise ProgramError(f"save: {where}: attribute '{name}' holds {value!r}, not storable as JSON")


def _param_values(program: Program, scope) -> dict[str, np.ndarray]:
    """Values of the persistable vars, checked against their vars."""
    values = {}
    for block in program.blocks:
        for v in block.vars.values():
            if not v.persistable:
                continue
            t = scope.get(v.name) if scope is not None else None
            t = program.captured.get(v.name) if t is None else t
            if t is None:
                continue  # not initialised yet: the startup program will do it
            a = np.asarray(t.numpy() if isinstance(t, Tensor) else t, order="C")  # keeps 0-d
            if a.dtype != v.dtype or not compatible(v.shape, a.shape):
                raise ProgramError(
                    f"save: the value of %{v.name} is {a.dtype}{list(a.shape)}, "
                    f"the var is {v.dtype}{list(v.shape)}"
                )
            values[v.name] = a
    return values


def _write_npz(f, values: dict[str, np.ndarray]):
    # np.savez's own keyword parameters (file, allow_pickle) would clash with var names of
    # the same spelling, so the archive is written the way np.savez writes it
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, a in values.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)


def atomic_write(path: str, write) -> str:
    """Write a file through a temporary sibling and os.replace; returns its sha256. Killed at
    any moment, it leaves the old file or the new one at `path` (and maybe a temporary file,
    which the next write to `path` removes)."""
    tmp, digest = _written_temp(path, write)
    _publish(tmp, path)
    return digest


def _written_temp(path: str, write) -> tuple[str, str]:
    """A temporary sibling of `path` holding what `write` wrote, on disk (fsynced), with the
    mode `path` has or would get; and its sha256. The temporary files of earlier writes to
    `path` that were killed are removed first."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CheckpointError(f"cannot save to {path!r}: the folder {folder!r} does not exist")
    _remove_temporaries(path)
    prefix = "." + os.path.basename(path) + "."
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    except OSError as e:  # (named by the user's path, not the temporary file's)
        raise CheckpointError(f"cannot save to {path!r}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w+b") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            f.seek(0)
            digest = _sha256(f)
        os.chmod(tmp, _file_mode(path))
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp, digest


def _publish(tmp: str, path: str) -> str:
    """Rename `tmp` over `path` (atomic) and fsync the folder, so that the rename is on disk
    before whatever the caller writes next; returns path."""
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))
    return path


def _file_mode(path: str) -> int:
    """The mode of the file replaced, else what open() would give (0666 less the umask):
    mkstemp makes its file 0600, which a plain write would not."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)  # (the only way to read it: set and put back at once)
        os.umask(umask)
        return 0o666 & ~umask


def _sha256(f) -> str:
    h = hashlib.sha256()  # hashlib.file_digest needs Python 3.11
    while chunk := f.read(1 << 20):
        h.update(chunk)
    return h.hexdigest()


def _fsync_dir(folder: str):
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not possible on every platform (Windows); the rename still happened
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------- loading: the document


def load(
    path, scope=None, max_param_bytes: int | None = None, require_loop_bounds: bool = False
) -> Program:
    """Load a saved program and its parameters (into `scope`, or as captured tensors).
    max_param_bytes: the most the parameters may take (default: MAX_PARAM_BYTES or the
    memory budget, the smaller). require_loop_bounds: reject a while loop without
    max_iterations or with more than MAX_LOOP_ITERATIONS (a number: more than that many), for
    programs from untrusted sources, which could otherwise loop (all but) forever."""
    path = os.fspath(path)
    max_param_bytes = _param_budget(max_param_bytes)
    doc = _parse(_read_bounded(path, MAX_FILE_BYTES))
    program = from_document(doc, require_loop_bounds)
    _check_content(doc, path)
    digest = doc.get("params_sha256")
    if digest is not None:  # null: saved without a parameters file (dumps)
        values = _read_params(path + ".npz", program, max_param_bytes, digest)
        target = program.captured if scope is None else scope
        target.update((name, Tensor(a)) for name, a in values.items())
    return program


def load_program(path, require_loop_bounds: bool = False) -> Program:
    """Load only the program document (checked); no parameters."""
    path = os.fspath(path)
    doc = _parse(_read_bounded(path, MAX_FILE_BYTES))
    program = from_document(doc, require_loop_bounds)
    _check_content(doc, path)
    return program


def loads(text: str | bytes, require_loop_bounds: bool = False) -> Program:
    """A Program from a JSON document (str or bytes), checked as `load` checks it."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if len(text) > MAX_FILE_BYTES:
        raise ProgramError(f"a program document is at most {MAX_FILE_BYTES} bytes")
    doc = _parse(text)
    program = from_document(doc, require_loop_bounds)
    _check_content(doc, "the program document")
    return program


def _read_bounded(path: str, limit: int) -> bytes:
    """The file's bytes: a missing file raises FileNotFoundError (as open does), anything but
    a regular file ProgramError (opened without blocking: a FIFO would wait for a writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except FileNotFoundError:
        raise  # (names the path)
    except OSError as e:
        raise ProgramError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ProgramError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb") as f:
            fd = None
            data = f.read(limit + 1)
    except OSError as e:
        raise ProgramError(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        if fd is not None:
            os.close(fd)
    if len(data) > limit:
        raise ProgramError(f"{path} is larger than the {limit} bytes a program may have")
    return data


def _parse(data: bytes):
    try:
        text = data.decode("utf-8")
        return json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_unique_keys,
        )
    except ProgramError:
        raise
    except (ValueError, RecursionError) as e:  # JSONDecodeError, bad UTF-8, too deep, long int
        raise ProgramError(f"not a valid JSON program document: {_short(str(e))}") from None


def _reject_constant(name: str):
    raise ProgramError(f"{name} is not JSON (non-finite floats are stored as strings)")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ProgramError(f"the number {_short(text, 40)} is out of range")
    return x


def _unique_keys(pairs) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise ProgramError("a JSON object in the document repeats a key")
    return d


def from_document(doc, require_loop_bounds: bool = False) -> Program:
    """Check a parsed document and build its Program."""
    loop_cap = _loop_cap(require_loop_bounds)
    if not isinstance(doc, dict):
        raise ProgramError(f"a program document is a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise ProgramError(f"not an nbflow program: format is {_short(repr(doc.get('format')))}")
    version = doc.get("version")
    if version not in READABLE or not isinstance(version, int) or isinstance(version, bool):
        raise ProgramError(
            f"program format version {_short(repr(version))} is not supported "
            f"(this nbflow reads versions {', '.join(map(str, READABLE))})"
        )
    _check_nesting(doc)
    _check_schema(doc)
    _check_blocks(doc["blocks"])
    program = Program()
    program.blocks = [Block(program, b["idx"], b["parent"]) for b in doc["blocks"]]
    total = 0
    for block, b in zip(program.blocks, doc["blocks"]):
        total += _load_vars(block, b["vars"])
    if total > MAX_TOTAL_ELEMENTS:
        raise ProgramError(f"the vars hold {total} elements in all, over {MAX_TOTAL_ELEMENTS}")
    defined = {id(v) for b in program.blocks for v in b.vars.values() if v.is_data or v.persistable}
    for block, b in zip(program.blocks, doc["blocks"]):
        _load_signature(block, b)
        defined.update(id(v) for v in block.inputs)
    written: set[int] = set()
    users: dict[int, str] = {}  # sub-block index -> the op that runs it
    for block, b in zip(program.blocks, doc["blocks"]):
        for i, op in enumerate(b["ops"]):
            _load_op(block, i, op, defined, written)
            _check_sub_blocks(block, block.ops[-1], users, loop_cap)
    for block in program.blocks[1:]:
        for v in block.outputs:
            if id(v) not in defined:
                raise ProgramError(f"block {block.idx}: output %{v.name} is never computed")
    start = doc["backward_start"]
    if start is not None and start > len(program.blocks[0].ops):
        raise ProgramError(f"backward_start {start} is past the {len(program.blocks[0].ops)} ops")
    program.backward_start = start
    program._names = doc.get("next_name", 0)
    return program


def _check_nesting(doc):
    """Refuse a document nested deeper than MAX_NESTING (the schema check and the content
    hash recurse through it: a deep one would end in a RecursionError), without recursing."""
    stack = [(doc, 0)]
    while stack:
        x, depth = stack.pop()
        items = x.values() if isinstance(x, dict) else x
        for item in items:
            if isinstance(item, (dict, list)):
                if depth + 1 >= MAX_NESTING:
                    raise ProgramError(f"the document nests more than {MAX_NESTING} deep")
                stack.append((item, depth + 1))


def _check_blocks(blocks: list):
    """Blocks in order, block 0 the only root, parents acyclic, nesting bounded."""
    n = len(blocks)
    for i, b in enumerate(blocks):
        if b["idx"] != i:
            raise ProgramError(f"block {i} is numbered {b['idx']}: blocks are stored in order")
        if (i == 0) != (b["parent"] == -1):
            raise ProgramError(f"block {i}: parent {b['parent']} (only block 0 has none, -1)")
        if b["parent"] >= n:
            raise ProgramError(f"block {i}: parent {b['parent']} does not exist ({n} blocks)")
    for i in range(n):
        seen, j = [], i
        while j != -1:
            if j in seen:
                chain = " -> ".join(map(str, [*seen, j]))
                raise ProgramError(f"block {i}: the block parents form a cycle ({chain})")
            if len(seen) > MAX_DEPTH:
                raise ProgramError(f"block {i}: blocks nest more than {MAX_DEPTH} deep")
            seen.append(j)
            j = blocks[j]["parent"]
    for i, b in enumerate(blocks[1:], 1):
        if b["parent"] >= i:  # so enclosing blocks are loaded before the blocks they hold
            raise ProgramError(f"block {i}: its parent {b['parent']} must come before it")


def _load_vars(block: Block, docs: list) -> int:
    """Create the block's vars; returns their element count."""
    total = 0
    for d in docs:
        name = d["name"]
        where = f"block {block.idx}, var '{name}'"
        if name in block.vars:
            raise ProgramError(f"{where} is declared twice")
        if name in (".", ".."):
            raise ProgramError(f"{where}: not a usable var name")
        total += _elements(d["shape"], where)
        v = block.create_var(name, d["shape"], DTYPES[d["dtype"]], persistable=d["persistable"])
        v.stop_gradient = d["stop_gradient"]  # as saved, even where the default differs
        v.is_data = d["is_data"]
        v.location = d["location"]
    return total


def _elements(shape, where: str) -> int:
    """The element count of a shape (-1 counts as 1), bounded so sizes never overflow."""
    n = 1
    for d in shape:
        if not isinstance(d, int) or d < -1 or d > MAX_ELEMENTS:
            raise ProgramError(f"{where}: bad dim {_short(repr(d), 40)} in its shape")
        n *= max(d, 1)
    if n > MAX_ELEMENTS or len(shape) > MAX_NDIM:
        raise ProgramError(f"{where}: shape {list(shape)} is over {MAX_ELEMENTS} elements")
    return n


# ---------------------------------------------------------------- loading: ops


def _load_op(block: Block, i: int, d: dict, defined: set, written: set):
    name = d["type"]
    where = f"block {block.idx}, op {i} ({name})"
    op = REGISTRY.get(name)
    if op is None:
        raise ProgramError(f"{where}: op type '{name}' is not registered in nbflow")
    attrs = _decode_attrs(op, d["attrs"], where)
    inputs = [_use(block, n, defined, where, "input") for n in d["inputs"]]
    outputs = [_output(block, n, where, "output") for n in d["outputs"]]
    _check_outputs(op, inputs, outputs, where, written)
    if hasattr(op, "check"):  # a control flow op: its sub-blocks must fit it
        _check_control(op, block, inputs, outputs, attrs, where)
    else:
        _check_infer(op, inputs, outputs, attrs, where)
    rule_inputs = d.get("rule_inputs")
    if rule_inputs is not None:
        rule_inputs = _rule_inputs(block, rule_inputs, inputs, defined, where)
    edges = _edges(inputs, d.get("grad_edges"), where)  # before append moves the targets on
    grad_of = _grad_of(d.get("grad_of"), where)
    write_back = d.get("write_back", False)
    if write_back and not is_write_back(op, inputs, attrs):
        raise ProgramError(f"{where} is marked write_back but is no write-back through a view")
    node = block.append(op, inputs, attrs, outputs, d["location"] or "?", write_back)
    node.rule_inputs = rule_inputs
    node.grad_of = grad_of
    if edges is not None:
        node.edges = edges
    for v in outputs:
        defined.add(id(v))
        written.add(id(v))


def _grad_of(d, where: str):
    if d is None:
        return None
    op = REGISTRY.get(d["type"])
    if op is None:
        raise ProgramError(f"{where}: grad_of names op type '{d['type']}', not registered")
    return ForwardOp(op, d["location"])


def _resolve(block: Block, name: str, where: str, what: str):
    try:
        v = block.var(name)
    except KeyError:
        raise ProgramError(
            f"{where}: {what} %{name} is not a var of block {block.idx} or the blocks enclosing it"
        ) from None
    return v


def _output(block: Block, name: str, where: str, what: str):
    """A var an op of the block writes: a sub-block may read enclosing vars, never write them."""
    v = _resolve(block, name, where, what)
    if v.block is not block:
        raise ProgramError(f"{where}: {what} %{name} is not a var of sub-block {block.idx}")
    return v


def _load_signature(block: Block, d: dict):
    """A sub-block's inputs (its own vars, set by the op that runs it) and outputs (none for a
    block saved without them)."""
    if block.idx == 0:
        if "inputs" in d or "outputs" in d:
            raise ProgramError("block 0 has no inputs or outputs (only sub-blocks do)")
        return
    where = f"block {block.idx}"
    block.inputs = [_output(block, n, where, "input") for n in d.get("inputs", ())]
    block.outputs = [_output(block, n, where, "output") for n in d.get("outputs", ())]
    for v in block.inputs:
        if v.is_data or v.persistable or sum(v is u for u in block.inputs) > 1:
            raise ProgramError(f"{where}: input %{v.name} is data, persistable or listed twice")


def _check_sub_blocks(block: Block, node, users: dict, loop_cap: int | None):
    """Block references: each sub-block is run by one op of its parent block, so none can
    run itself (recursion); loops are bounded by loop_cap when it is not None."""
    where = f"block {block.idx}, op {len(block.ops) - 1} ({node.op.name})"
    for name in (n for n, attr in node.op.attrs.items() if attr.kind == "block"):
        idx = node.attrs[name]
        user = users.setdefault(idx, f"{where}'s {name}")
        if user != f"{where}'s {name}":
            raise ProgramError(f"{where}: {name} {idx} is already run by {user}")
    if loop_cap is None or "max_iterations" not in node.op.attrs:
        return
    limit = node.attrs["max_iterations"]
    if limit is None:
        raise ProgramError(
            f"{where}: a loop without max_iterations (the loader was asked for bounds)"
        )
    if limit > loop_cap:
        raise ProgramError(
            f"{where}: max_iterations={limit} is over the {loop_cap} iterations the loader "
            "allows (require_loop_bounds=N sets another bound)"
        )


def _loop_cap(require_loop_bounds) -> int | None:
    """The most iterations a loop may declare: None (no bound) for require_loop_bounds=False,
    MAX_LOOP_ITERATIONS for True, and a number (>= 0) itself."""
    if require_loop_bounds is False or require_loop_bounds is None:
        return None
    if require_loop_bounds is True:
        return MAX_LOOP_ITERATIONS
    if isinstance(require_loop_bounds, int) and require_loop_bounds >= 0:
        return require_loop_bounds
    raise ArgumentError(
        "require_loop_bounds: True, False or a number of iterations >= 0, "
        f"got {require_loop_bounds!r}"
    )


def _check_control(op, block: Block, inputs, outputs, attrs, where: str):
    program = block.program
    for name in op.block_attrs:
        idx = attrs[name]
        b = block
        while b is not None:  # the op's own block or one enclosing it
            if b.idx == idx:
                raise ProgramError(
                    f"{where}: {name} {idx} is the op's own block or encloses it (recursion)"
                )
            b = program.blocks[b.parent] if b.parent >= 0 else None
    try:
        op.check(block, inputs, outputs, attrs)
    except Exception as e:  # a hostile document may fail the check any way: never escapes
        raise ProgramError(f"{where}: {_short(str(e), 400)}") from None


def _use(block: Block, name: str, defined: set, where: str, what: str):
    v = _resolve(block, name, where, what)
    if id(v) not in defined:
        raise ProgramError(f"{where}: {what} %{name} is used before any op defines it")
    return v


def _check_outputs(op, inputs, outputs, where: str, written: set):
    """In-place outputs are their targets; every other output is a fresh, single write."""
    for i, v in enumerate(outputs):
        j = op.inplace.get(i)
        if j is not None:
            if j >= len(inputs) or inputs[j] is not v:
                raise ProgramError(
                    f"{where}: output {i} (%{v.name}) of an in-place op must be its input {j}"
                )
            continue
        if v.is_data:
            raise ProgramError(f"{where}: output %{v.name} is a data var (fed, never computed)")
        if id(v) in written:
            raise ProgramError(f"{where}: output %{v.name} is written twice")
        if any(v is x for x in inputs) or sum(v is o for o in outputs) > 1:
            raise ProgramError(f"{where}: output %{v.name} is also an input or another output")


def _check_infer(op, inputs, outputs, attrs, where: str):
    """Re-run the op's shape rule: the declared outputs must agree, and a kernel must exist."""
    specs = [Spec(v.shape, v.dtype) for v in inputs]
    try:
        with warnings.catch_warnings():  # the user saw the rule's warnings when building
            warnings.simplefilter("ignore")
            out_specs = op.infer(specs, attrs)
        key = op.key_dtype(specs) if specs else None
        op.kernel("cpu", out_specs[0].dtype if key is None else key)
    except Exception as e:  # an op's rule on hostile attrs may fail any way: never escapes
        raise ProgramError(f"{where}: {_short(str(e), 400)}") from None
    if len(out_specs) != len(outputs):
        raise ProgramError(f"{where}: {len(outputs)} outputs, the op makes {len(out_specs)}")
    for v, s in zip(outputs, out_specs):
        _elements(s.shape, f"{where}: output %{v.name}")
        fits = len(s.shape) == len(v.shape) and all(
            a == b or -1 in (a, b) for a, b in zip(s.shape, v.shape)
        )
        if not fits or s.dtype != v.dtype:
            raise ProgramError(
                f"{where}: output %{v.name} is declared {Spec(v.shape, v.dtype)}, "
                f"the op's shape rule gives {s}"
            )


def _rule_inputs(block: Block, names: list, inputs: list, defined: set, where: str):
    """The values an in-place op's gradient rule reads: saved copies standing in for inputs."""
    if len(names) != len(inputs):
        raise ProgramError(f"{where}: rule_inputs has {len(names)} vars for {len(inputs)} inputs")
    rule = [_use(block, n, defined, where, "rule input") for n in names]
    for r, v in zip(rule, inputs):
        if r.dtype != v.dtype or r.shape != v.shape:
            raise ProgramError(f"{where}: rule input %{r.name} does not match input %{v.name}")
    return rule


def _edges(inputs: list, flags, where: str):
    """The gradient edges the saved flags ask for: where each flagged input's gradient goes
    now (its producing op, or the var itself for a leaf), as Block.append would find it."""
    if flags is None:
        return None
    if len(flags) != len(inputs):
        raise ProgramError(f"{where}: grad_edges has {len(flags)} flags for {len(inputs)} inputs")
    return [
        ((v._node, v._index) if v._node is not None else v) if flag else None
        for v, flag in zip(inputs, flags)
    ]


def _decode_attrs(op, raw: dict, where: str) -> dict:
    attrs = {}
    for name, value in raw.items():
        a = op.attrs.get(name)
        if a is None:
            raise ProgramError(
                f"{where}: unknown attribute '{name}' (the op has {', '.join(op.attrs) or 'none'})"
            )
        _check_ints(value, f"{where}: attribute '{name}'")
        attrs[name] = _decode_attr(a.kind, name, value, where)
    try:
        return op.check_attrs(attrs)
    except Exception as e:  # AttrError, or a converter failing on an odd value
        message = str(e).removeprefix(f"{op.name}: ")
        raise ProgramError(f"{where}: {_short(message, 400)}") from None


def _decode_attr(kind: str, name: str, value, where: str):
    if value is None:
        return None
    if kind == "dtype":
        if not isinstance(value, str) or value not in DTYPES:
            raise ProgramError(
                f"{where}: attribute '{name}' must be a dtype name "
                f"({', '.join(DTYPES)}), got {_short(repr(value), 60)}"
            )
        return DTYPES[value]
    if kind in ("float", "value") and isinstance(value, str):
        if value not in NON_FINITE:
            raise ProgramError(f"{where}: attribute '{name}' must be a number, got '{value}'")
        return NON_FINITE[value]
    if kind == "value" and isinstance(value, list):  # a complex number's [real, imaginary]
        if len(value) != 2 or not all(type(v) in (int, float, str) for v in value):
            raise ProgramError(f"{where}: attribute '{name}' must be a number or [re, im]")
        return complex(*(_decode_attr("float", name, v, where) for v in value))
    if kind == "any" and name in NO_VALUE_ATTRS:
        raise ProgramError(f"{where}: attribute '{name}' can only be null in a saved program")
    return _tuples(value)


def _tuples(value):
    """JSON lists as the tuples attrs hold (an index key is a tuple of tuples)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _check_ints(value, where: str):
    """Every int in an attr fits int64 (kernels and numpy take them as such)."""
    if isinstance(value, list):
        for v in value:
            _check_ints(v, where)
    elif isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        raise ProgramError(f"{where}: {_short(str(value), 40)} is out of the int64 range")


# ---------------------------------------------------------------- loading: parameters


def _param_budget(max_bytes: int | None) -> int:
    return min(MAX_PARAM_BYTES, STATE.memory_budget) if max_bytes is None else max_bytes


def load_params(path, program: Program, scope=None, max_bytes: int | None = None) -> Scope:
    """Read `path + ".npz"` into `scope` (a new Scope by default) after checking every array
    against the program's persistable vars; returns the scope. Arrays missing from the file
    are left alone (a startup program initialises them)."""
    values = _read_params(os.fspath(path) + ".npz", program, _param_budget(max_bytes), None)
    scope = Scope() if scope is None else scope
    scope.update((name, Tensor(a)) for name, a in values.items())
    return scope


def _read_params(path: str, program: Program, max_bytes: int, digest) -> dict:
    persistable = {v.name: v for b in program.blocks for v in b.vars.values() if v.persistable}
    path = _check_file(path, persistable, max_bytes, digest)
    try:
        # the zip opened directly rather than by np.load, which would read a bare .npy (or
        # refuse a pickle) only after allocating it; members are read with allow_pickle=False
        with zipfile.ZipFile(path) as zf:
            members = _check_members(path, zf, persistable, max_bytes)
            return {name: _read_array(zf, info) for name, info in members.items()}
    except ProgramError:
        raise
    except Exception as e:  # zipfile, zlib and numpy fail in many ways on a damaged file
        raise ProgramError(f"{path}: damaged parameters file ({_short(str(e))})") from None


def _check_file(path: str, persistable: dict, max_bytes: int, digest) -> str:
    """The file holding the parameters, checked: `path`, or where a save cut short between
    its steps left the parameters its document names (the staged name, see save)."""
    candidates = [path] if digest is None else [path, _staged_name(path, str(digest))]
    first = None
    for candidate in candidates:
        try:
            _check_size(candidate, persistable, max_bytes)
        except ProgramError as e:
            first = first or e
            continue
        if digest is None:
            return candidate
        with open(candidate, "rb") as f:
            if _sha256(f) == digest:
                return candidate
        first = first or ProgramError(
            f"{path} is not the parameters file saved with this program "
            "(its sha256 differs from the one the program records)"
        )
    raise first


def _check_size(path: str, persistable: dict, max_bytes: int):
    try:
        info = os.stat(path)
    except OSError as e:
        raise ProgramError(f"cannot read the parameters file {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the reads below
        raise ProgramError(f"the parameters file {path} is not a regular file")
    size = info.st_size
    declared = sum(_nbytes(v.shape, v.dtype) for v in persistable.values())
    allowed = min(declared, max_bytes) + 4096 * (len(persistable) + 1)  # headers, directory
    if size > allowed:
        raise ProgramError(
            f"{path} has {size} bytes, more than its program's parameters "
            f"({declared} bytes) or the budget ({max_bytes} bytes) allow"
        )


def _nbytes(shape, dtype) -> int:
    return math.prod(max(n, 1) for n in shape) * dtype.itemsize


def _check_members(path: str, zf, persistable: dict, max_bytes: int) -> dict:
    """Each member's name, dtype and shape against its var, its size against the bytes the
    member holds (so a small file cannot make the loader reserve a huge array), and the total
    against the budget, read from the .npy headers before any array is allocated."""
    members, total = {}, 0
    _check_layout(path, zf)
    for info in zf.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        v = persistable.get(name)
        if v is None:
            raise ProgramError(f"{path}: '{_short(info.filename, 80)}' is not a persistable var")
        if name in members:
            raise ProgramError(f"{path}: %{name} is stored twice")
        with zf.open(info) as f:
            shape, dtype = _header(f)
        if dtype != v.dtype or not compatible(v.shape, shape):
            raise ProgramError(
                f"{path}: %{name} is stored as {dtype}{list(shape)}, "
                f"the program declares {v.dtype}{list(v.shape)}"
            )
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > info.file_size:  # what the header declares must be in the file
            raise ProgramError(
                f"{path}: %{name} declares {dtype}{list(shape)} ({nbytes} bytes), but its "
                f"member holds {info.file_size} bytes"
            )
        total += _nbytes(shape, dtype)
        if total > max_bytes:
            raise ProgramError(f"{path}: the parameters exceed the budget of {max_bytes} bytes")
        members[name] = info
    return members


def _check_layout(path: str, zf):
    """Members stored uncompressed (as save writes them: no zip bombs), each inside the file
    and none overlapping another (a zip whose entries share bytes is forged)."""
    size = zf.fp.seek(0, os.SEEK_END)
    spans = []
    for info in zf.infolist():
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise ProgramError(f"{path}: member '{_short(info.filename, 80)}' is compressed")
        # a local header is 30 bytes plus the name; its extra field may add to that
        begin = info.header_offset
        end = begin + 30 + len(info.filename.encode()) + info.compress_size
        if begin < 0 or end > size:
            raise ProgramError(f"{path}: member '{_short(info.filename, 80)}' lies past the end")
        spans.append((begin, end, info.filename))
    spans.sort()
    for (_, end, a), (begin, _, b) in zip(spans, spans[1:]):
        if begin < end:
            raise ProgramError(f"{path}: members '{_short(a, 80)}' and '{_short(b, 80)}' overlap")


def _header(f):
    version = np.lib.format.read_magic(f)
    read = {
        (1, 0): np.lib.format.read_array_header_1_0,
        (2, 0): np.lib.format.read_array_header_2_0,
    }.get(version)
    if read is None:
        raise ProgramError(f"unsupported .npy format version {version}")
    shape, _, dtype = read(f)
    return tuple(shape), dtype


def _read_array(zf, info) -> np.ndarray:
    with zf.open(info) as f:
        a = np.lib.format.read_array(f, allow_pickle=False)
    return np.require(a, requirements=["C", "W", "O"])  # kernels write parameters in place
