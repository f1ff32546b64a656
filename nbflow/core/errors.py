"""Typed errors. Each also subclasses the builtin a Python user would catch."""

from __future__ import annotations

import os
import re
import sys


class NbflowError(Exception):
    """Base of every error nbflow raises on purpose.

    `location`: "file.py:LINE" of the user's line that created the failing op, when known."""

    location: str | None = None


class ShapeError(NbflowError, ValueError):
    """Shapes that do not fit an op (names the op, the arguments and their shapes)."""


class DTypeError(NbflowError, TypeError):
    """A dtype an op cannot take (names the op and the dtypes)."""


class AttrError(NbflowError, TypeError):
    """An attribute of the wrong type or out of range."""


class ArgumentError(NbflowError, TypeError):
    """An argument of the wrong kind: a non-tensor where a function takes a tensor."""


class OutOfRangeError(NbflowError, IndexError):
    """An index outside its axis (checked before a kernel runs: numba does not bounds-check)."""


class DomainError(NbflowError, ValueError):
    """Input values outside what an op accepts (checked before the kernel runs)."""


class LinAlgError(DomainError):
    """A matrix a decomposition cannot take: singular (inv, solve), not positive-definite
    (cholesky), or one LAPACK could not converge on (torch.linalg.LinAlgError's role)."""


class LoopLimitError(DomainError):
    """A while_loop still running after its max_iterations (names the loop's line)."""


class UnsupportedError(NbflowError, NotImplementedError):
    """Something nbflow does not do (yet)."""


class TracedValueError(UnsupportedError):
    """A Python value (bool, len, an array) asked of a graph value, which has none until the
    program runs (under jit: Python control flow on a traced value)."""


class KernelNotFoundError(UnsupportedError, DTypeError):
    """No kernel for an (op, device, dtype) key."""

    def __init__(self, op: str, device: str, dtype: str, supported: tuple = ()):
        known = ", ".join(supported) or "none"
        super().__init__(
            f"{op}: no kernel for device '{device}' and dtype {dtype} (supported dtypes: {known})"
        )
        self.key = (op, device, dtype)


class KernelCompileError(UnsupportedError, DTypeError):
    """numba cannot compile an op's kernel for the dtypes it was called with (names the op, the
    device, the dtypes and numba's reason): raised at the first call, in place of numba's
    TypingError. `key` is (op, device, input dtypes), as KernelNotFoundError's."""

    def __init__(self, op: str, device: str, inputs, out: str, numba_error: Exception):
        super().__init__(
            f"{op}: numba cannot compile the scalar body for device '{device}' and inputs "
            f"({', '.join(inputs)}) -> {out}: {_numba_reason(numba_error)}"
        )
        self.key = (op, device, tuple(inputs))
        self.numba_error = numba_error  # the full numba report, for debugging


def _numba_reason(error: Exception) -> str:
    """The first line of numba's report that says what failed, without the terminal colours
    numba adds when colorama is installed."""
    lines = [_ANSI.sub("", ln).strip() for ln in str(error).splitlines()]
    return next((ln for ln in lines if ln and not ln.startswith("Failed in")), "")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ProgramError(NbflowError, ValueError):
    """A program that cannot be built, run or loaded: names the op or var at fault."""


class CheckpointError(NbflowError, ValueError):
    """A checkpoint that cannot be saved or loaded (corrupt, truncated, hostile or too big)."""


class GradientError(NbflowError, RuntimeError):
    """Backward cannot run: a saved tensor changed in place, or nothing requires grad."""


class DistributedError(NbflowError, RuntimeError):
    """A collective that cannot run: no MPI, no process group, or ranks that disagree."""


class NumericalError(NbflowError, FloatingPointError):
    """A NaN or infinity produced by an op while the NaN/Inf check is on (names the op, the
    output, the counts and where the op was defined; see nbflow.check_nan_inf)."""


class ResourceExhaustedError(NbflowError, MemoryError):
    """An allocation above the memory budget, refused before anything is allocated (see
    nbflow.set_memory_budget)."""


# ---------------------------------------------------------------- locations and tracebacks
#
# Errors raised from an op say where the user created it, and nbflow's own frames are left
# out of their tracebacks. Both are computed only on the error path: the hot path of an op
# call pays nothing for them.

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# NBFLOW_FULL_TRACEBACK=1 keeps nbflow's frames in tracebacks (for debugging nbflow itself)
FULL_TRACEBACK = os.environ.get("NBFLOW_FULL_TRACEBACK", "0") not in ("", "0")


def is_internal(path: str) -> bool:
    """Whether a source file belongs to the nbflow package."""
    return os.path.abspath(path).startswith(PACKAGE_DIR + os.sep)


def user_frame(frame=None):
    """The innermost frame outside nbflow (the user's), or None."""
    frame = frame or sys._getframe(1)
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_location(frame=None) -> str:
    """file.py:LINE of the innermost frame outside nbflow (the user's line), or "?"."""
    frame = user_frame(frame or sys._getframe(1))
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def locate(error: NbflowError, location: str | None) -> NbflowError:
    """Append `defined at LOCATION` to an error's message, once (the innermost op wins)."""
    if location and getattr(error, "location", None) is None:
        error.location = location
        error.args = (f"{error} (defined at {location})", *error.args[1:])
    return error


def filter_traceback(tb):
    """The traceback without nbflow's own frames (unless NBFLOW_FULL_TRACEBACK is set)."""
    if FULL_TRACEBACK:
        return tb
    kept = [t for t in _walk(tb) if not is_internal(t.tb_frame.f_code.co_filename)]
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    if kept:
        kept[-1].tb_next = None
    return kept[0] if kept else None


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next
