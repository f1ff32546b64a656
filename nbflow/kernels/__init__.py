"""numba kernels: the CPU ones in cpu/, the CUDA ones in cuda/, and what both share (codegen,
the row sort, the pooling windows, the compile progress line)."""

from . import progress  # noqa: F401  (one line for long first compiles)
