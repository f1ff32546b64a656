"""One progress line for long first compiles, instead of silence.

numba compiles each kernel on its first call for a new dtype, which can take seconds for a
model's first step. A listener on numba's "numba:compile" event (sent only for real compiles,
not for loads from the disk cache) starts a timer when an nbflow kernel starts compiling; if
compiling is still going after NBFLOW_COMPILE_NOTICE seconds (default 1), it prints one line
to stderr, once per process. NBFLOW_COMPILE_NOTICE=0 turns it off.
"""

from __future__ import annotations

import os
import sys
import threading

from numba.core import event

from . import codegen


class CompileNotice(event.Listener):
    def __init__(self, delay: float):
        self.delay = delay
        self.depth = 0  # nested compiles (a kernel compiling the bodies it calls)
        self.timer = None
        self.said = False
        self.lock = threading.Lock()

    def on_start(self, ev):
        with self.lock:
            self.depth += 1
            if self.depth > 1 or self.said:
                return
            name = _name(ev.data.get("dispatcher"))
            if name is None:
                return
            self.timer = threading.Timer(self.delay, self.say, (name,))
            self.timer.daemon = True
            self.timer.start()

    def on_end(self, ev):
        with self.lock:
            self.depth -= 1
            if self.depth == 0 and self.timer is not None:
                self.timer.cancel()
                self.timer = None

    def say(self, name: str):
        with self.lock:
            if self.said:
                return
            self.said = True
        print(
            f"nbflow: compiling kernels ({name}, ...) for their first use with these dtypes; "
            f"later runs load them from the cache in {codegen.cache_dir()} "
            "(`python -m nbflow.precompile` warms it)",
            file=sys.stderr,
            flush=True,
        )


def _name(dispatcher):
    """The kernel's name when it is nbflow's (generated modules are named nbflow_*)."""
    fn = getattr(dispatcher, "py_func", None)
    module = getattr(fn, "__module__", "") or ""
    if not module.startswith("nbflow"):
        return None
    return f"{module.split('.')[-1]}.{fn.__name__}"


def install() -> CompileNotice | None:
    try:
        delay = float(os.environ.get("NBFLOW_COMPILE_NOTICE", "1"))
    except ValueError:
        delay = 1.0
    if delay <= 0:
        return None
    listener = CompileNotice(delay)
    event.register("numba:compile", listener)
    return listener


NOTICE = install()
