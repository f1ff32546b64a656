"""numba kernels and the templates that build them (CPU here; CUDA in a later module)."""

from . import progress  # noqa: F401  (one line for long first compiles)
