"""CUDA launchers that load lazily: importing this module needs no numba-cuda.

An elementwise op's scalar body becomes its CUDA kernel here (the same body the CPU loop runs);
the kernels themselves live in nbflow.kernels.cuda.skeletons, which imports numba.cuda and is loaded
on the first GPU launch.
"""

from numba.core.errors import NumbaError

from ...core.errors import KernelCompileError, UnsupportedError


def impl():
    """nbflow.kernels.cuda.skeletons (imported on first use: it needs numba-cuda)."""
    from . import skeletons

    return skeletons


class CudaElementwise:
    """The CUDA kernels of one elementwise op; calling it is the launcher
    `(*inputs, out, **attrs)`, like the CPU one. Inputs are GPU arrays of the compute dtype
    (float16 is computed in float16 on the GPU); they broadcast to `out`."""

    def __init__(self, name: str, body, n_inputs: int, params: tuple[str, ...], check=None):
        self.name, self.body, self.n_inputs, self.params = name, body, n_inputs, params
        self.check = check  # reads values: runs on host copies (only pow's integer check)
        self.mod = None

    def module(self):
        if self.mod is None:
            self.mod = impl().elementwise_module(
                self.name, self.body, self.n_inputs, len(self.params)
            )
        return self.mod

    def __call__(self, *arrays, **attrs):
        *ins, out = arrays
        params = tuple(_param(attrs[p], ins[0].dtype) for p in self.params)
        if self.check is not None:
            from ...runtime.device import to_host

            self.check(*[to_host(a) for a in ins])
        try:
            impl().run_elementwise(self.module(), ins, out, params)
        except NumbaError as e:  # compiling happens at the first launch for these dtypes
            names = [str(a.dtype) for a in ins]
            raise KernelCompileError(self.name, "cuda", names, str(out.dtype), e) from None


def _param(value, dtype):
    """A numeric attr as a scalar of the compute dtype, as on the CPU."""
    from ..cpu.templates import scalar_param

    return scalar_param(value, dtype)


def not_supported(reason: str):
    """A CUDA slot for an op that has no GPU kernel: it says why when called."""

    def launch(*args, **kwargs):
        raise UnsupportedError(reason)

    launch.cuda_unsupported = reason
    return launch
