"""nbflow.dtypes: the dtypes and their promotion rules (they live in nbflow/core/dtypes.py)."""

from .core.dtypes import *  # noqa: F403
