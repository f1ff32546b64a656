"""Generated kernels as real modules, so numba's on-disk cache works for them.

numba cannot cache a function built with `exec`, and a closure over another jitted function
misses the cache in every new process. So a template writes its source to a `.py` file in the
cache directory and imports it; the module name carries a hash of the source and of whatever it
calls (`salt`), because numba does not notice when a callee in another file changes.

Threads: a module is registered in `sys.modules` before it runs (numba's cache locator looks
it up there), so another thread could find it half made. `load` hands out only modules that
have finished running (`_LOADED`), and makes each under a lock of its own name: two threads
asking for one module at once make it once, and both get the finished module.
"""

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path

VERSION = "0.1.0"


def cache_dir() -> Path:
    """NBFLOW_CACHE_DIR, else $XDG_CACHE_HOME/nbflow, else ~/.cache/nbflow."""
    env = os.environ.get("NBFLOW_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nbflow"


def _writable_dir() -> Path:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except OSError:
        pass
    d = Path(tempfile.gettempdir()) / f"nbflow-{os.getuid()}"
    d.mkdir(parents=True, exist_ok=True)
    return d


_LOADED: dict = {}  # module name -> the module, once it has run to its end
_LOCKS: dict = {}  # module name -> the lock its making holds
_LOCKS_LOCK = threading.Lock()


def load(prefix: str, source: str, salt: str = ""):
    """Import `source` as module `<prefix>_<hash>`, writing the file once (atomically)."""
    digest = hashlib.sha1((VERSION + salt + source).encode()).hexdigest()[:16]
    name = f"{prefix}_{digest}"
    mod = _LOADED.get(name)
    if mod is not None:
        return mod
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(name, threading.Lock())
    with lock:  # one thread makes it; the others wait for the finished module
        mod = _LOADED.get(name)
        if mod is None:
            mod = _LOADED[name] = _import(name, source)
    return mod


def _import(name: str, source: str):
    path = _writable_dir() / f"{name}.py"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)  # another process may race us; both write the same text
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # before exec: numba's cache locator looks the module up by name
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(name, None)  # not left half made
        raise
    return mod


@functools.cache
def file_hash(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()
