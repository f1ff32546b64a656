"""GEMM with alpha and beta on numpy's own BLAS: `c = alpha a @ b + beta c`, in place.

numpy's matmul does not expose GEMM's scalars, and adding a product into an existing matrix
with them saves a pass over it: a graph-mode SGD step folded into its weight-gradient product
(graph/rewrite.py) never stores the gradient (the step of a 256x784 weight: 285 -> 262 us).
The library is the OpenBLAS that numpy loaded, found through threadpoolctl (as
kernels/cpu/threads.py finds it to switch its thread count), so no second BLAS and no second thread
pool join the process. Where that fails (another BLAS, no cblas symbols, an operand BLAS
cannot take as it is), `gemm` returns False and the caller computes the same with numpy.

`stack_call` runs a stack of products (attention's heads) as one numba loop calling GEMM by
address for each matrix, serially or over numba's threads: numpy's matmul makes a Python-level
call per matrix, and a hand-off of parts of the stack to Python threads costs tens of
microseconds where numba's threads take a few.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import prange

from .jit import njit, threaded

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # CBLAS's enum values

_LIB = None  # threadpoolctl's controller for numpy's OpenBLAS; False: none found
_GEMM: dict = {}  # dtype char -> ctypes function, or None


def numpy_openblas():
    """threadpoolctl's controller of the OpenBLAS numpy uses, or None. Finding it first
    makes its parallel jobs run on numba's threads (shared_pool)."""
    global _LIB
    if _LIB is None:
        _LIB = False
        try:
            import threadpoolctl

            found = threadpoolctl.ThreadpoolController().select(internal_api="openblas")
            libs = [c for c in found.lib_controllers if "numpy" in c.filepath]
            _LIB = libs[0] if libs else False
        except Exception:  # threadpoolctl cannot read the library: no direct calls
            _LIB = False
        if _LIB:
            from .shared_pool import install

            install(_LIB.dynlib)  # its threaded calls on numba's threads from now on
    return _LIB or None


def symbol(dll, name):
    """`name` under the prefixes and suffixes OpenBLAS builds use (numpy's wheels export
    scipy_cblas_sgemm64_), with whether its integers are 64-bit; (None, False) if absent."""
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            fn = getattr(dll, f"{prefix}{name}{suffix}", None)
            if fn is not None:
                return fn, prefix, suffix
    return None, "", ""


def _int64_interface(dll, prefix, suffix) -> bool | None:
    """Whether the library's BLAS integers are 64-bit, from its build configuration; None
    when it does not say (then nothing is called: a wrong guess would crash)."""
    config = getattr(dll, f"{prefix}openblas_get_config{suffix}", None)
    if config is None:
        return None
    config.restype = ctypes.c_char_p
    text = (config() or b"").decode(errors="replace")
    return "USE64BITINT" in text


def cblas_gemm(dtype):
    """numpy's OpenBLAS's cblas_sgemm (float32) or cblas_dgemm (float64) as a ctypes
    function, which numba kernels can call too; None where there is none to call."""
    return _function(np.dtype(dtype).char)


def _function(char: str):
    """The ctypes cblas_sgemm (char "f") or cblas_dgemm ("d"), or None."""
    if char in _GEMM:
        return _GEMM[char]
    _GEMM[char] = None
    lib = numpy_openblas()
    if lib is None:
        return None
    try:
        fn, prefix, suffix = symbol(lib.dynlib, "cblas_" + {"f": "sgemm", "d": "dgemm"}[char])
        wide = _int64_interface(lib.dynlib, prefix, suffix) if fn is not None else None
    except (OSError, AttributeError, ValueError):
        return None
    if wide is None:
        return None
    n = ctypes.c_int64 if wide else ctypes.c_int32
    scalar = ctypes.c_float if char == "f" else ctypes.c_double
    enum, ptr = ctypes.c_int, ctypes.c_void_p
    fn.argtypes = [enum, enum, enum, n, n, n, scalar, ptr, n, ptr, n, scalar, ptr, n]
    fn.restype = None
    _GEMM[char] = fn
    return fn


def _operand(x: np.ndarray):
    """(transpose flag, leading dimension) of a 2-D operand BLAS reads as it is: rows or
    columns contiguous; None otherwise."""
    item = x.itemsize
    rows, cols = x.shape
    s0, s1 = x.strides
    if s1 == item and s0 % item == 0 and s0 // item >= max(1, cols):
        return NO_TRANS, s0 // item
    if s0 == item and s1 % item == 0 and s1 // item >= max(1, rows):
        return TRANS, s1 // item
    return None


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha: float, beta: float) -> bool:
    """c = alpha * a @ b + beta * c in place (beta 0: c is not read), for 2-D float32 or
    float64 operands of one dtype. False, with nothing written, where BLAS cannot run it as
    it is: the caller computes it another way."""
    if c.ndim != 2 or a.ndim != 2 or b.ndim != 2 or c.dtype.char not in "fd":
        return False
    if a.dtype != c.dtype or b.dtype != c.dtype or not c.flags.writeable or 0 in a.shape:
        return False
    if c.shape != (a.shape[0], b.shape[1]) or a.shape[1] != b.shape[0] or 0 in c.shape:
        return False
    if not (a.flags.aligned and b.flags.aligned and c.flags.aligned):
        return False
    if np.may_share_memory(c, a) or np.may_share_memory(c, b):
        return False  # BLAS would read what it has already written
    out = _operand(c)
    if out is None:
        return False
    if out[0] == TRANS:  # c stored by columns: compute c.T = alpha b.T @ a.T + beta c.T
        a, b, c = b.T, a.T, c.T
        out = (NO_TRANS, out[1])
    ta, tb = _operand(a), _operand(b)
    fn = _function(c.dtype.char)
    if ta is None or tb is None or fn is None:
        return False
    m, n = c.shape
    k = a.shape[1]
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    fn(ROW_MAJOR, ta[0], tb[0], m, n, k, alpha, pa, ta[1], pb, tb[1], beta, pc, out[1])
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def cblas_product(gemm, a, b, c, trans_a, trans_b, alpha, beta):
    """c = alpha a' @ b' + beta c on CBLAS's `gemm` (cblas_gemm), a' being a or, with trans_a
    == TRANS, a.T (b' likewise), for numba kernels: 2-D views whose rows are contiguous (their
    row strides CBLAS's leading dims)."""
    m, n = c.shape
    k = a.shape[0] if trans_a == TRANS else a.shape[1]
    item = c.itemsize
    lda, ldb, ldc = a.strides[0] // item, b.strides[0] // item, c.strides[0] // item
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    gemm(ROW_MAJOR, trans_a, trans_b, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc)


# OpenBLAS's SkylakeX kernels (Cooperlake's and SapphireRapids' too) run a product of at
# most 100^3 multiply-adds on small-matrix kernels that pack nothing, unless b is read
# transposed; a larger one packs b on every call
SMALL_PRODUCT = 100**3
SMALL_BLOCK = 16  # the fewest rows or columns a block of a product is split into
_SMALL_KERNELS = ("SkylakeX", "Cooperlake", "SapphireRapids")


def small_product_limit() -> int:
    """SMALL_PRODUCT where numpy's OpenBLAS has its small-matrix kernels, else 0."""
    lib = numpy_openblas()
    return SMALL_PRODUCT if getattr(lib, "architecture", None) in _SMALL_KERNELS else 0


@njit(cache=True, nogil=True, error_model="numpy")
def small_blocks(m, n, k, small, rows=True):
    """How cblas_product_small splits an (m, k) by (k, n) product: (axis, size), blocks of
    at most `size` of c's columns (axis 1), of its rows (axis 0; not unless `rows`) or of the
    inner dimension (axis 2), each of at most `small` multiply-adds and at least SMALL_BLOCK
    wide; (-1, 0) for one call."""
    if small == 0 or m * n * k <= small:
        return -1, 0
    for axis, rest in ((1, m * k), (0, n * k), (2, m * n)):
        if small // rest >= SMALL_BLOCK and (axis != 0 or rows):
            return axis, small // rest
    return -1, 0


@njit(cache=True, nogil=True, error_model="numpy")
def cblas_product_small(gemm, a, b, c, trans_a, one, beta, small):
    """c = a' @ b + beta c (b not transposed; `one` 1 of c's scalar type) as cblas_product's
    of blocks (small_blocks) of at most `small` multiply-adds each (small_product_limit()),
    so that each runs on OpenBLAS's small-matrix kernels, which pack neither operand."""
    m, n = c.shape
    transposed = trans_a == TRANS
    k = a.shape[0] if transposed else a.shape[1]
    axis, width = small_blocks(m, n, k, small, not transposed)
    if axis == -1:
        cblas_product(gemm, a, b, c, trans_a, NO_TRANS, one, beta)
        return
    size = (m, n, k)[axis]
    blocks = -(-size // width)
    for i in range(blocks):
        lo, hi = size * i // blocks, size * (i + 1) // blocks
        if axis == 1:
            cblas_product(gemm, a, b[:, lo:hi], c[:, lo:hi], trans_a, NO_TRANS, one, beta)
        elif axis == 0:
            cblas_product(gemm, a[lo:hi], b, c[lo:hi], NO_TRANS, NO_TRANS, one, beta)
        else:  # each block adds its part of the sum over the inner dim
            part = a[lo:hi] if transposed else a[:, lo:hi]
            cblas_product(gemm, part, b[lo:hi], c, trans_a, NO_TRANS, one, beta if i == 0 else one)


@njit(cache=True, nogil=True, error_model="numpy")
def _stack(gemm, a, b, out, trans_a, lda, trans_b, ldb, one, zero):
    """out[i, j] = a[i, j] @ b[i, j] for each (i, j) of the 4-D stacks (a and b laid out for
    BLAS as their flags and leading dims say, the same for every matrix; `gemm` the CBLAS
    function, one and zero of its scalar type). The loop is a prange: its twin runs it over
    numba's threads (jit.threaded)."""
    d0, d1, m, n = out.shape
    k = a.shape[3]
    ldc = out.strides[2] // out.itemsize
    for p in prange(d0 * d1):
        i, j = p // d1, p % d1
        pa, pc = a[i, j].ctypes.data, out[i, j].ctypes.data
        if trans_b == TRANS:
            # stored by columns: copied out by rows first, as OpenBLAS's small-matrix
            # kernels run that form at about half the speed
            rows = np.empty((k, n), out.dtype)
            rows[:] = b[i, j]
            pb = rows.ctypes.data
            gemm(ROW_MAJOR, trans_a, NO_TRANS, m, n, k, one, pa, lda, pb, n, zero, pc, ldc)
        else:
            pb = b[i, j].ctypes.data
            gemm(ROW_MAJOR, trans_a, trans_b, m, n, k, one, pa, lda, pb, ldb, zero, pc, ldc)


def stack_call(a: np.ndarray, b: np.ndarray, out: np.ndarray):
    """A function run(threaded) computing out = a @ b for 3-D or 4-D stacks (batch dims that
    broadcast to out's) by GEMM per matrix, over numba's threads when `threaded`; None where
    BLAS cannot take the operands as they are (the caller computes them with numpy)."""
    fn = _function(out.dtype.char) if out.dtype.char in "fd" else None
    if fn is None or out.ndim not in (3, 4) or a.ndim < 2 or b.ndim < 2 or 0 in out.shape:
        return None
    if a.dtype != out.dtype or b.dtype != out.dtype or out.strides[-1] != out.itemsize:
        return None
    if np.may_share_memory(out, a) or np.may_share_memory(out, b) or a.shape[-1] == 0:
        return None
    batch = out.shape[:-2]
    stacks = [np.broadcast_to(x, batch + x.shape[-2:]) for x in (a, b)]
    flags = [_operand(x[(0,) * len(batch)]) for x in stacks]
    if None in flags or out.strides[-2] < out.shape[-1] * out.itemsize:
        return None
    a4, b4, out4 = (x.reshape((1,) * (4 - x.ndim) + x.shape) for x in (*stacks, out))
    scalar = out.dtype.type
    args = (fn, a4, b4, out4, *flags[0], *flags[1], scalar(1), scalar(0))
    return lambda threads: (threaded(_stack) if threads else _stack)(*args)
