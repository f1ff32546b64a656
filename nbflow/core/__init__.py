"""The core layer: the op declaration and its one dispatch point (op.py), with errors, dtypes,
views and hooks beside it. It imports nothing of nbflow above it."""

from .op import *  # noqa: F403  (the face: Spec, Attr, Op, Node, Trace, bind, STATE, ...)
