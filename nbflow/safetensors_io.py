"""The safetensors format: state_dicts to and from PyTorch and Hugging Face tooling.

    nbflow.save(model.state_dict(), "model.safetensors")       # the suffix picks the format
    model.load_state_dict(nbflow.load("model.safetensors"))
    nbflow.save_safetensors(sd, path, metadata={"step": "100"})  # as safetensors.torch's
    sd = nbflow.load_safetensors(path)                          # save_file and load_file

A safetensors file holds a flat mapping of names to dense arrays (and an optional mapping of
strings to strings, `metadata`), which is what `torch.save(model.state_dict())` users and the
Hugging Face hub exchange: `safetensors.torch.load_file` reads what `save_safetensors` writes
and the other way round. The `safetensors` package (`pip install nbflow[safetensors]`) reads
and checks the header; nbflow adds:

- saving is atomic as `save_state`'s is (a temporary file in the same folder, fsynced, renamed
  over the path, the folder fsynced): a failed or killed save leaves the previous file;
- the values are nbflow Tensors or numpy arrays of a dtype both nbflow and the format have
  (bool, uint8, int8, int16, int32, int64, float16, float32, float64, complex64: the format
  has no complex128); anything else, or a name that is not a string, is refused before
  anything is written (CheckpointError). requires_grad is not stored (the format has
  no place for it): loaded tensors do not require grad, as with safetensors.torch;
- loading checks the file size against a budget before reading, reads the header through
  the safetensors library (a damaged or truncated file raises CheckpointError, never the
  library's own error), and refuses a dtype nbflow lacks by name (CheckpointError), except
  bfloat16, which `bfloat16="float32"` widens exactly to float32 (the usual dtype of
  Hugging Face weights; numpy has no bfloat16).

Nested state (an optimizer's, an epoch count) does not fit the format: `nbflow.save_state`
writes that, and `nbflow.save`/`nbflow.load` pick safetensors only for a `.safetensors` path
or `format="safetensors"`.
"""

from __future__ import annotations

import json
import os
import stat
import struct

import numpy as np

from .core import STATE
from .core.errors import CheckpointError, DomainError
from .eager.tensor import Tensor
from .graph.serialize import atomic_write

__all__ = ["SUFFIX", "is_safetensors_path", "load_safetensors", "save_safetensors"]

SUFFIX = ".safetensors"
MAX_FILE_BYTES = 1 << 36  # the default budget, as load_state's (64 GiB)
HEADER = struct.Struct("<Q")  # the format: header length (u64 LE) | JSON header | data

# safetensors' dtype names of the dtypes nbflow holds
_NAMES = {
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.uint8): "U8",
    np.dtype(np.int8): "I8",
    np.dtype(np.int16): "I16",
    np.dtype(np.int32): "I32",
    np.dtype(np.int64): "I64",
    np.dtype(np.float16): "F16",
    np.dtype(np.float32): "F32",
    np.dtype(np.float64): "F64",
    np.dtype(np.complex64): "C64",  # (the format has no complex128)
}
_HELD = set(_NAMES.values())


def is_safetensors_path(path) -> bool:
    """Whether `path` names a safetensors file by its suffix (as Hugging Face tools choose)."""
    return isinstance(path, (str, os.PathLike)) and os.fspath(path).endswith(SUFFIX)


def _library():
    try:
        import safetensors
        import safetensors.numpy
    except ImportError:
        raise CheckpointError(
            "the safetensors format needs the 'safetensors' package: pip install safetensors "
            "(or nbflow[safetensors])"
        ) from None
    return safetensors


def _array(key, value) -> np.ndarray:
    if isinstance(value, Tensor):
        a = value.numpy()
    elif isinstance(value, np.ndarray):
        a = value
    else:
        raise CheckpointError(
            f"save_safetensors: [{key!r}] is a {type(value).__name__}; the safetensors format "
            "holds tensors and arrays by name only (nbflow.save_state stores nested state)"
        )
    d = a.dtype.newbyteorder("=") if a.dtype.byteorder in "<>" else a.dtype
    if d not in _NAMES:
        raise CheckpointError(
            f"save_safetensors: [{key!r}] has dtype {a.dtype}, which the safetensors format "
            f"does not hold with nbflow (it holds {', '.join(str(x) for x in _NAMES)}; "
            "nbflow.save_state stores any dtype)"
        )
    return np.ascontiguousarray(a, dtype=d.newbyteorder("<")).reshape(a.shape)


def save_safetensors(state, path, metadata: dict | None = None) -> None:
    """Write `state` (a mapping of str names to Tensors or numpy arrays: a state_dict) to
    `path` in the safetensors format, atomically (module doc); `metadata`, str to str, goes
    into the header as safetensors.torch.save_file's does. Raises CheckpointError for
    anything the format cannot hold (nothing is written then)."""
    path = os.fspath(path)
    if not hasattr(state, "items"):
        raise CheckpointError(
            f"save_safetensors: expects a mapping of names to tensors, got {type(state).__name__}"
        )
    arrays = {}
    for key, value in state.items():
        if not isinstance(key, str):
            raise CheckpointError(f"save_safetensors: the key {key!r} is not a string")
        arrays[key] = _array(key, value)
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise CheckpointError("save_safetensors: metadata must map str to str")
    library = _library()
    try:
        data = library.numpy.save(arrays, metadata=metadata)
    except library.SafetensorError as e:
        raise CheckpointError(f"save_safetensors: {e}") from None
    atomic_write(path, lambda f: f.write(data))


def load_safetensors(
    path, max_bytes: int | None = None, bfloat16: str = "error", with_metadata: bool = False
):
    """The tensors of a safetensors file by name (a dict sorted by name), as nbflow
    Tensors; with `with_metadata`, (tensors, the header's metadata dict or {}). `max_bytes`:
    the largest file accepted (default: 64 GiB or the memory budget, the smaller).
    `bfloat16="float32"` loads bfloat16 tensors widened to float32 (exactly); by default
    they raise CheckpointError, as every dtype nbflow lacks does."""
    if bfloat16 not in ("error", "float32"):
        raise DomainError(f"load_safetensors: bfloat16 is 'error' or 'float32', not {bfloat16!r}")
    path = os.fspath(path)
    if max_bytes is None:
        max_bytes = min(MAX_FILE_BYTES, STATE.memory_budget)
    info = os.stat(path)  # a missing file: FileNotFoundError, as open() raises it
    if not stat.S_ISREG(info.st_mode):
        raise CheckpointError(f"{path} is not a regular file")
    if info.st_size > max_bytes:
        raise CheckpointError(f"{path} has {info.st_size} bytes, over the budget of {max_bytes}")
    library = _library()
    try:
        with library.safe_open(path, framework="numpy") as f:
            metadata = f.metadata() or {}
            names = list(f.keys())
            kinds = {name: f.get_slice(name).get_dtype() for name in names}
            for name in names:
                kind = kinds[name]
                if kind not in _HELD and not (kind == "BF16" and bfloat16 == "float32"):
                    hint = " (bfloat16='float32' widens it)" if kind == "BF16" else ""
                    raise CheckpointError(
                        f"{path}: [{name!r}] has dtype {kind}, which nbflow does not hold{hint}"
                    )
            arrays = {name: f.get_tensor(name) if kinds[name] in _HELD else None for name in names}
        if any(a is None for a in arrays.values()):
            arrays.update(_bfloat16_as_float32(path, [n for n, a in arrays.items() if a is None]))
    except CheckpointError:
        raise
    except library.SafetensorError as e:
        raise CheckpointError(f"{path}: not a valid safetensors file ({e})") from None
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:  # anything the library let through: still a typed error
        raise CheckpointError(f"{path}: damaged safetensors file ({type(e).__name__}: {e})") from e
    tensors = {name: Tensor(np.array(a, a.dtype.newbyteorder("="))) for name, a in arrays.items()}
    return (tensors, dict(metadata)) if with_metadata else tensors


def _bfloat16_as_float32(path: str, names) -> dict:
    """The named bfloat16 tensors as float32 (a bfloat16 is a float32's upper 16 bits), read
    at the offsets of the header that safe_open has just checked."""
    with open(path, "rb") as f:
        (n,) = HEADER.unpack(f.read(HEADER.size))
        header = json.loads(f.read(n))
        out = {}
        for name in names:
            entry = header[name]
            begin, end = entry["data_offsets"]
            f.seek(HEADER.size + n + begin)
            bits = np.frombuffer(f.read(end - begin), dtype="<u2").astype(np.uint32) << 16
            out[name] = bits.view(np.float32).reshape(entry["shape"])
    return out
