"""nbflow.errors: the exceptions nbflow raises (they live in nbflow/core/errors.py)."""

from .core.errors import *  # noqa: F403
