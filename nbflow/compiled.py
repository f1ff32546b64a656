"""PyTorch's torch.compile, as nbflow.jit: a function comes back jitted, a Module comes back
as an OptimizedModule whose forward runs jitted.

    model = nbflow.compile(model)          # or @nbflow.compile on a function
    loss = loss_fn(model(x), y)            # traced once per input signature, then a Program
    loss.backward()

PyTorch's options are accepted where nbflow's tracing already does what they ask for: it
traces a whole function (fullgraph), once per input shape and dtype (dynamic=False; -1 dims
are for the static API), and has one backend, so "inductor" (the default) and the modes only
name it; backend="eager" gives the function or module back as it is, as disable=True does.
"""

from __future__ import annotations

from .core.errors import ArgumentError, UnsupportedError
from .graph.jit import jit
from .nn.modules.module import Module

__all__ = ["OptimizedModule", "compile"]

BACKENDS = ("inductor", "aot_eager", "cudagraphs", "nbflow", "eager")
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class OptimizedModule(Module):
    """A Module whose forward is `nbflow.jit(module)`: the original is `_orig_mod` (so the
    state_dict's keys start with `_orig_mod.`, as PyTorch's), and attributes it has that this
    wrapper has not are read from it (model.fc, model.config, ...)."""

    def __init__(self, mod: Module):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_jitted"] = jit(mod)  # (not a submodule: a JitFunction of _orig_mod)

    def forward(self, *args, **kwargs):
        return self._jitted(*args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__") or "_orig_mod" not in self.__dict__:
            raise AttributeError(name)  # (copy and pickle probe before __init__ ran)
        return getattr(self.__dict__["_orig_mod"], name)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def _checked(backend, mode, dynamic):
    if callable(backend):
        raise UnsupportedError("compile: a callable backend; nbflow has its own only")
    if backend not in (*BACKENDS, "eager"):
        raise ArgumentError(
            f"compile: backend must be one of {BACKENDS + ('eager',)}, got {backend!r}"
        )
    if mode not in MODES:
        raise ArgumentError(f"compile: mode must be one of {MODES}, got {mode!r}")
    if dynamic:
        raise UnsupportedError(
            "compile(dynamic=True): nbflow traces once per input shape; for unknown dims "
            "build a Program with -1 dims (nbflow.static)"
        )


def compile(  # (PyTorch's name, the builtin's too)
    model=None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend="inductor",
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
):
    """torch.compile's signature: the jitted function, or an OptimizedModule (module doc).
    Called without `model`, a decorator with these options."""
    _checked(backend, mode, dynamic)
    if model is None:
        return lambda fn: compile(
            fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
            options=options, disable=disable,
        )  # fmt: skip
    if not callable(model):
        raise ArgumentError(f"compile: needs a function or a Module, got {type(model).__name__}")
    if disable or backend == "eager":
        return model
    if isinstance(model, Module):
        return OptimizedModule(model)
    return jit(model)
