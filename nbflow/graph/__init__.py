"""Graph mode: Programs built with the same ops as eager mode, appended backward, an executor
that runs only what the fetch targets need."""

from . import control  # noqa: F401  (registers cond and while, which loaded programs use)
from .backward import append_backward
from .draw import GraphvizNotFoundError, to_dot, to_svg
from .executor import Executor, Scope, compatible, global_scope, needed_ops, prune
from .jit import jit, trace
from .passes import explain, verify
from .printer import format_program
from .program import Block, GraphTrace, Program, Var
from .serialize import load, save
from .static import create_parameter, data, program_guard

__all__ = [
    "Block",
    "Executor",
    "GraphvizNotFoundError",
    "GraphTrace",
    "Program",
    "Scope",
    "Var",
    "append_backward",
    "compatible",
    "create_parameter",
    "data",
    "explain",
    "format_program",
    "global_scope",
    "jit",
    "load",
    "needed_ops",
    "program_guard",
    "prune",
    "save",
    "to_dot",
    "to_svg",
    "trace",
    "verify",
]
