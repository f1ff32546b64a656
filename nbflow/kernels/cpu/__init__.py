"""The CPU kernels: templates that make @njit loops of scalar bodies, reductions, vectorisable
math, BLAS and the thread chooser."""
