"""Typed errors. Each also subclasses the builtin a Python user would catch."""


class NbflowError(Exception):
    """Base of every error nbflow raises on purpose."""


class ShapeError(NbflowError, ValueError):
    """Shapes that do not fit an op (names the op, the arguments and their shapes)."""


class DTypeError(NbflowError, TypeError):
    """A dtype an op cannot take (names the op and the dtypes)."""


class AttrError(NbflowError, TypeError):
    """An attribute of the wrong type or out of range."""


class OutOfRangeError(NbflowError, IndexError):
    """An index outside its axis (checked before a kernel runs: numba does not bounds-check)."""


class DomainError(NbflowError, ValueError):
    """Input values outside what an op accepts (checked before the kernel runs)."""


class LoopLimitError(DomainError):
    """A while_loop still running after its max_iterations (names the loop's line)."""


class UnsupportedError(NbflowError, NotImplementedError):
    """Something nbflow does not do (yet)."""


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
    dtypes and numba's reason): raised at the first call, in place of numba's TypingError."""


class ProgramError(NbflowError, ValueError):
    """A program that cannot be built, run or loaded: names the op or var at fault."""


class CheckpointError(NbflowError, ValueError):
    """A checkpoint that cannot be saved or loaded (corrupt, truncated, hostile or too big)."""


class GradientError(NbflowError, RuntimeError):
    """Backward cannot run: a saved tensor changed in place, or nothing requires grad."""
