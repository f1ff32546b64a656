"""The static API: declare inputs and parameters, then call ordinary ops on them.

    main, startup = nbflow.Program(), nbflow.Program()
    with nbflow.program_guard(main, startup):
        x = nbflow.static.data("x", [-1, 4])
        w = nbflow.static.create_parameter("w", [4, 3])
        loss = nbflow.mean(x @ w)

Inside the guard, bind() records into `main`; parameters also get an initialising op in
`startup`, which an Executor runs once to fill the scope.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numpy as np

from ..core import REGISTRY, STATE, use_trace
from ..core import dtypes as dt
from ..core.errors import AttrError, ProgramError, ShapeError
from .program import GraphTrace, Program, Var, user_location


class _Startup(threading.local):
    """The startup program of this thread's program_guard, read as `STARTUP[0]`."""

    program: Program | None = None

    def __getitem__(self, index: int) -> Program | None:
        return self.program

    def __setitem__(self, index: int, program: Program | None):
        self.program = program


STARTUP = _Startup()


@contextmanager
def program_guard(main: Program, startup: Program | None = None):
    """Ops called inside record into `main` (block 0); parameters initialise in `startup`.
    The guard holds in this thread only (another thread's ops stay eager, as do new threads')."""
    prev = STARTUP[0]
    STARTUP[0] = startup
    try:
        with use_trace(GraphTrace(main.global_block())):
            yield main
    finally:
        STARTUP[0] = prev


def current_block():
    trace = STATE.trace
    if not trace.records:
        raise ProgramError("nbflow.static needs a program: use `with nbflow.program_guard(main):`")
    return trace.block


def _shape(shape) -> tuple[int, ...]:
    shape = tuple(shape)
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in shape):
        raise ShapeError(f"bad shape {shape}: dims are integers (sizes >= 0, or -1 for unknown)")
    shape = tuple(int(n) for n in shape)
    if any(n < -1 for n in shape):
        raise ShapeError(f"bad shape {shape}: dims are sizes >= 0, or -1 for unknown")
    return shape


def data(name: str, shape, dtype=dt.float32) -> Var:
    """An input fed at run time; -1 marks a dim known only then (e.g. the batch)."""
    v = current_block().create_var(name, _shape(shape), dt.as_dtype(dtype), stop_gradient=True)
    v.is_data = True
    v.location = user_location()
    return v


def create_parameter(name: str, shape, dtype=dt.float32, initializer=None, trainable=True) -> Var:
    """A persistable var of `main`, initialised by an op appended to the startup program.

    initializer: ("uniform", low, high), ("normal", mean, std) or ("constant", value);
    default: PyTorch's Linear range, uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    shape = _shape(shape)
    if -1 in shape:
        raise ShapeError(f"a parameter needs a known shape, got {shape}")
    dtype = dt.as_dtype(dtype)
    block = current_block()
    v = block.create_var(name, shape, dtype, persistable=True, stop_gradient=not trainable)
    v.location = user_location()
    startup = STARTUP[0]
    if startup is not None:
        op, attrs = _initializer(initializer, shape, dtype)
        target = startup.global_block().create_var(name, shape, dtype, persistable=True)
        startup.global_block().append(op, [], op.check_attrs(attrs), [target], v.location)
    return v


def _initializer(spec, shape, dtype):
    if spec is None:
        bound = 1.0 / np.sqrt(shape[0]) if shape and shape[0] > 0 else 1.0  # (empty: any)
        spec = ("uniform", -bound, bound)
    kind, *args = spec
    if kind == "uniform":
        return REGISTRY["uniform"], {
            "shape": shape,
            "low": args[0],
            "high": args[1],
            "dtype": dtype,
        }
    if kind == "normal":
        return REGISTRY["normal"], {"shape": shape, "mean": args[0], "std": args[1], "dtype": dtype}
    if kind == "constant":
        return REGISTRY["full"], {"shape": shape, "value": args[0], "dtype": dtype}
    raise AttrError(f"unknown initializer {kind!r} (uniform, normal or constant)")
