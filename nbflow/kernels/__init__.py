"""numba kernels and the templates that build them (CPU here; CUDA in a later module)."""
