"""The column layout of a convolution's matmuls, and the loops that run a batch through it.

A chunk of images at a time, a numba kernel unfolds them into columns (one row per (channel,
kernel row, kernel column)), one GEMM per group multiplies the weights by them, and the input
gradient folds the columns back (the adjoint); the weight gradient sums columns times output
gradient. A 2-D convolution unfolds from a zero-padded copy of each image, split into its
stride's planes (so that every column row is one contiguous run), and its whole loop over the
batch is one numba kernel (`_forward_images`, `_input_grad_images`, `_weight_grad_images`)
that calls CBLAS's GEMM by address, in turn or over numba's threads in parts of the batch
(each part its own buffers): a Python loop of numpy matmuls, with the batch split over Python
threads, spent its time on the GIL and on hand-offs. The forward and the input gradient of
most layers use no columns: shifted products (below) read the planes at each tap's offset.
A batch smaller than numba's threads (inference at batch 1) splits each
forward product's columns over them instead (`_forward_split`). conv3d (its own im2col) and a
BLAS without CBLAS symbols run the Python loop.
"""

import functools
import math

import numpy as np
from numba import prange

from ..kernels.cpu import blas, threads
from ..kernels.cpu.jit import njit, threaded
from ..kernels.cpu.templates import JIT
from ..runtime import buffers

ROW_MAJOR, NO_TRANS, TRANS = blas.ROW_MAJOR, blas.NO_TRANS, blas.TRANS

# ---------------------------------------------------------------- column kernels


@njit(**JIT)
def _unfold_rows(x, padded, cols, shifts, sh, sw, ph, pw, plane_h, oh, width):
    """A chunk of images' columns from a zero-padded copy of each, split into planes
    (Columns): image b of x (B, C, H, W) goes into padded (C, its planes + tail, the rest
    zero), and column row (c, t) of cols (C * taps, B * oh * width), from column b * oh *
    width on, is the run of padded[c] from tap t's shift."""
    n_images, channels = x.shape[:2]
    taps, m = shifts.shape[0], oh * width
    for b in range(n_images):
        _planes(x[b : b + 1], padded, shifts, sh, sw, ph, pw, plane_h, width, 0, True)
        for c in range(channels):
            for t in range(taps):
                run, dst = padded[c, shifts[t] : shifts[t] + m], cols[c * taps + t, b * m :]
                for q in range(m):
                    dst[q] = run[q]


@njit(**JIT)
def _fold_rows(cols, padded, dx, shifts, sh, sw, ph, pw, plane_h, oh, width):
    """The adjoint of _unfold_rows: for each image b of dx (B, C, H, W), each column row added
    into padded (zeroed first) where it was read, then the planes' interior copied to
    dx[b]."""
    n_images, channels = dx.shape[:2]
    taps, m = shifts.shape[0], oh * width
    for b in range(n_images):
        for c in range(channels):
            padded[c] = 0
            for t in range(taps):
                run, src = padded[c, shifts[t] : shifts[t] + m], cols[c * taps + t, b * m :]
                for q in range(m):
                    run[q] += src[q]
        _planes(dx[b : b + 1], padded, shifts, sh, sw, ph, pw, plane_h, width, 0, False)


@njit(**JIT)
def _planes(x, padded, shifts, sh, sw, ph, pw, plane_h, width, image, to_padded):
    """Each image b of x (B, C, H, W) and its zero-padded copy in padded[:, b * image:] (C,
    image entries an image), split into sh * sw planes of plane_h rows of `width`: padded
    position (r, s) lies in plane (r % sh, s % sw) at row r // sh, column s // sw, so that
    every tap of a strided convolution reads one contiguous run, from shifts[t] (Columns; at
    stride 1 the one plane is the padded image). Only the planes some tap reads take part (a
    1x1 convolution at stride 2 reads one of four): x is copied into them (to_padded; the
    rest is left as it is, zero), or their interior back to x, the rest of x zeroed (the
    adjoint's crop). The loops run plane by plane, so no row divides by the stride, and
    strides 1 and 2 have loops of their own: a constant stride vectorizes (2.3x on a 32x32
    image's planes)."""
    n_images, channels, height, w = x.shape
    plane = plane_h * width
    read = np.zeros(sh * sw, np.bool_)
    for t in range(shifts.shape[0]):
        read[shifts[t] // plane] = True
    # a loop, not read.all(): loading all's cached code imports numba's lowering registries,
    # which a warm process otherwise never loads (tests/test_startup.py)
    if not to_padded:
        for q in range(sh * sw):
            if not read[q]:
                x[...] = 0
                break
    for b in range(n_images):
        for c in range(channels):
            for qy in range(sh):
                y0 = (qy - ph) % sh  # the first row of x in plane row qy
                for q in range(sw):
                    if not read[qy * sw + q]:
                        continue
                    first = (q - pw) % sw  # the first entry of a row of x in plane column q
                    count = (w - first + sw - 1) // sw
                    at = b * image + (qy * sw + q) * plane + (y0 + ph) // sh * width
                    at += (first + pw) // sw
                    for y in range(y0, height, sh):
                        run, line = padded[c, at : at + count], x[b, c, y, first:]
                        at += width
                        if to_padded:
                            if sw == 1:
                                for u in range(count):
                                    run[u] = line[u]
                            elif sw == 2:
                                for u in range(count):
                                    run[u] = line[2 * u]
                            else:
                                for u in range(count):
                                    run[u] = line[sw * u]
                        elif sw == 1:
                            for u in range(count):
                                line[u] = run[u]
                        elif sw == 2:
                            for u in range(count):
                                line[2 * u] = run[u]
                        else:
                            for u in range(count):
                                line[sw * u] = run[u]


@njit(**JIT)
def _place_rows(product, out, bias, width, image):
    """out[b, o, y, t] = product[o, b * image + y * width + t] (+ bias[o] when bias has any
    entries): a chunk's products (O, B * image) into its images (B, O, oh, ow)."""
    n_images, channels, oh, ow = out.shape
    for b in range(n_images):
        for o in range(channels):
            for y in range(oh):
                at = b * image + y * width
                src, dst = product[o, at : at + ow], out[b, o, y]
                if bias.size:
                    for t in range(ow):
                        dst[t] = src[t] + bias[o]
                else:
                    for t in range(ow):
                        dst[t] = src[t]


@njit(**JIT)
def _gather_rows(g, g_cols, width, image):
    """g_cols[o, b * image + y * width + t] = g[b, o, y, t], and 0 for t from ow to width and
    for the rows from oh to image / width: the adjoint layout of _place_rows."""
    n_images, channels, oh, ow = g.shape
    for b in range(n_images):
        for o in range(channels):
            for y in range(oh):
                at = b * image + y * width
                src, dst = g[b, o, y], g_cols[o, at : at + width]
                for t in range(ow):
                    dst[t] = src[t]
                for t in range(ow, width):
                    dst[t] = 0
            g_cols[o, b * image + oh * width : (b + 1) * image] = 0


@njit(**JIT)
def _gather_columns(g, g_t, width):
    """g_t[b * oh * width + y * width + t, o] = g[b, o, y, t], and 0 for t from ow to width:
    _gather_rows's layout transposed, a position a row."""
    n_images, channels, oh, ow = g.shape
    for b in range(n_images):
        for o in range(channels):  # (g read in order: its channels lie 4 KiB or more apart)
            for y in range(oh):
                at = b * oh * width + y * width
                src = g[b, o, y]
                for t in range(ow):
                    g_t[at + t, o] = src[t]
                for t in range(ow, width):
                    g_t[at + t, o] = 0


@njit(**JIT)
def _columns(flat, rows, m):
    """A matrix at the start of a flat buffer for rows of m columns: (rows, m) or, where m
    columns are a multiple of 4 KiB, 64 bytes wider: OpenBLAS's GEMM lost a third of its
    speed to cache conflicts on such rows (a 32x288 by 288x1024 float32 product: 66 against
    87 GFLOP/s)."""
    step = m + 64 // flat.itemsize if (m * flat.itemsize) % 4096 == 0 else m
    return flat[: rows * step].reshape((rows, step))


# ---------------------------------------------------------------- conv2d's batch loops
# Each runs the batch in cols.shape[0] parts, part p taking images [n p / parts, n (p + 1) /
# parts), a chunk at a time, with its own row of each buffer (cols, padded, products, g_cols,
# totals); its jit.threaded twin runs the parts over numba's threads. `gemm` is CBLAS's GEMM,
# `one` and `zero` of its scalar type; the geometry ends with the output's height and the
# columns' width (Columns).


@njit(**JIT)
def _forward_images(
    gemm, x, taps, out, bias, cols, padded, products, groups, chunk,
    shifts, sh, sw, ph, pw, plane_h, oh, width, small, one, zero,
):  # fmt: skip
    """out = the convolution of x (N, C, H, W) by taps, plus bias[o] where bias has entries:
    shifted (below; taps (kh * kw, O, C / groups)) when cols has no entries, else from the
    columns (taps (1, O, C / groups * kh * kw))."""
    n, parts, o = x.shape[0], padded.shape[0], taps.shape[1]
    image = sh * sw * plane_h * width if cols.shape[1] == 0 else oh * width
    geometry = (shifts, sh, sw, ph, pw, plane_h, oh, width)
    for p in prange(parts):
        stop = n * (p + 1) // parts
        for a in range(n * p // parts, stop, chunk):
            b = min(a + chunk, stop)
            m = (b - a - 1) * image + oh * width
            src = _source(x[a:b], cols[p], padded[p], groups * taps.shape[2], m, image, geometry)
            product = _columns(products[p], o, (b - a) * image)
            args = (groups, shifts, False, small, one, zero)
            _tap_products(gemm, taps, src, product, 0, m, *args)
            _place_rows(product, out[a:b], bias, width, image)


@njit(**JIT)
def _source(x, cols, padded, k, m, image, geometry):
    """The forward's right operand for a chunk of images x: their zero-padded planes end to
    end (shifted: cols has no entries), else their columns (k rows of m)."""
    shifts, sh, sw, ph, pw, plane_h, oh, width = geometry
    if cols.size == 0:
        _planes(x, padded, shifts, sh, sw, ph, pw, plane_h, width, image, True)
        return padded
    c = _columns(cols, k, m)
    _unfold_rows(x, padded, c, *geometry)
    return c


@njit(**JIT)
def _input_grad_images(
    gemm, g, w2, dx, cols, padded, g_cols, groups, chunk,
    shifts, sh, sw, ph, pw, plane_h, oh, width, small, one, zero,
):  # fmt: skip
    """dx = the gradient of the convolution by w2 (O, C / groups * taps) with respect to its
    input, from the output gradient g: the transposed weights times g's columns, folded
    back."""
    n, parts = dx.shape[0], cols.shape[0]
    o, k = w2.shape
    og = o // groups
    for p in prange(parts):
        stop = n * (p + 1) // parts
        for a in range(n * p // parts, stop, chunk):
            b = min(a + chunk, stop)
            m = (b - a) * oh * width
            gc = _columns(g_cols[p], o, m)
            _gather_rows(g[a:b], gc, width, oh * width)
            c = _columns(cols[p], groups * k, m)
            for grp in range(groups):
                rows, taps = slice(grp * og, (grp + 1) * og), slice(grp * k, (grp + 1) * k)
                blas.cblas_product_small(
                    gemm, w2[rows], gc[rows, :m], c[taps, :m], TRANS, one, zero, small
                )
            _fold_rows(c, padded[p], dx[a:b], shifts, sh, sw, ph, pw, plane_h, oh, width)


@njit(**JIT)
def _weight_grad_images(
    gemm, x, g, totals, cols, padded, g_cols, groups, chunk,
    shifts, sh, sw, ph, pw, plane_h, oh, width, small, one, zero,
):  # fmt: skip
    """totals[p] (groups, C / groups * taps, O / groups), zeroed first, += part p's columns
    times its output gradient (the weight gradient transposed: OpenBLAS runs that form
    faster): the gradient gathered a position a row where the product splits into blocks
    for OpenBLAS's small-matrix kernels (blas.small_blocks), which need it so, else as it
    lies, for one product."""
    n, parts = x.shape[0], cols.shape[0]
    k, og = totals.shape[2], totals.shape[3]
    o = groups * og
    for p in prange(parts):
        stop = n * (p + 1) // parts
        for a in range(n * p // parts, stop, chunk):
            b = min(a + chunk, stop)
            m = (b - a) * oh * width
            c = _columns(cols[p], groups * k, m)
            _unfold_rows(x[a:b], padded[p], c, shifts, sh, sw, ph, pw, plane_h, oh, width)
            blocks = blas.small_blocks(k, og, m, small)[0] != -1
            g_t, gc = _columns(g_cols[p], m, o), _columns(g_cols[p], o, m)  # (one buffer)
            if blocks:
                _gather_columns(g[a:b], g_t, width)
            else:
                _gather_rows(g[a:b], gc, width, oh * width)
            for grp in range(groups):
                rows, taps = slice(grp * og, (grp + 1) * og), slice(grp * k, (grp + 1) * k)
                total, cg = totals[p, grp], c[taps, :m]
                if blocks:
                    blas.cblas_product_small(
                        gemm, cg, g_t[:, rows], total, NO_TRANS, one, one, small
                    )
                else:
                    blas.cblas_product(gemm, cg, gc[rows, :m], total, NO_TRANS, TRANS, one, one)


# ---------------------------------------------------------------- shifted products
# A 2-D convolution needs no columns: on a chunk's zero-padded images laid end to end, each
# split into its stride's planes (`image` entries each; one plane, the padded image, at stride
# 1), output position q of the grid reads input q + shift[t] at tap t (Columns.shifts), so
# the output is the sum over taps of the tap's weights (O, C) times the planes shifted by that
# offset, each a GEMM on a view of one buffer. The grid carries a plane's width - ow columns
# more per output row and the rest of the image's planes more per image (dropped; their
# gradient is zero). Unfolding wrote and read 9x the input per 3x3 layer; the weight gradient
# keeps it, as its shifted products (O x C, the positions inner) ran slower than one of the
# columns (docs/performance.md, the tenth round).


@njit(**JIT)
def _tap_products(gemm, taps, src, dst, start, stop, groups, shifts, adjoint, small, one, zero):
    """For each tap t, its shift s = shifts[t] and each group's rows (of O) and channels
    (of C), over the columns q = start:stop: dst[rows, q] (+)= taps[t][rows] @
    src[channels, q + s] (the first tap stores), or, adjoint, dst[channels, q + s] +=
    taps[t][rows].T @ src[rows, q]. One tap of all the weights against the columns is the
    column layout's product. Each product runs in blocks of columns for OpenBLAS's
    small-matrix kernels (`small`: blas.cblas_product_small's), which do not pack the
    columns as its GEMM does."""
    n_taps, o, cg = taps.shape
    og = o // groups
    for t in range(n_taps):
        a = start + shifts[t]
        b = a + stop - start
        for grp in range(groups):
            rows, chans = slice(grp * og, (grp + 1) * og), slice(grp * cg, (grp + 1) * cg)
            w = taps[t, rows]
            if adjoint:
                shifted = dst[chans, a:b]
                blas.cblas_product_small(
                    gemm, w, src[rows, start:stop], shifted, TRANS, one, one, small
                )
            else:
                out, beta = dst[rows, start:stop], one if t else zero
                blas.cblas_product_small(gemm, w, src[chans, a:b], out, NO_TRANS, one, beta, small)


@njit(**JIT)
def _input_grad_shifted(
    gemm, g, taps, dx, padded, g_grid, groups, chunk,
    shifts, sh, sw, ph, pw, plane_h, oh, width, small, one, zero,
):  # fmt: skip
    """dx = the gradient of the convolution by taps (kh * kw, O, C / groups) with respect to
    its input, from the output gradient g: each tap's transposed weights times g, added in at
    the tap's shift, then cropped."""
    n, parts, o = dx.shape[0], padded.shape[0], taps.shape[1]
    image = sh * sw * plane_h * width
    for p in prange(parts):
        stop = n * (p + 1) // parts
        for a in range(n * p // parts, stop, chunk):
            b = min(a + chunk, stop)
            grid = _columns(g_grid[p], o, (b - a) * image)
            _gather_rows(g[a:b], grid, width, image)
            padded[p] = 0
            m = (b - a - 1) * image + oh * width
            args = (groups, shifts, True, small, one, zero)
            _tap_products(gemm, taps, grid, padded[p], 0, m, *args)
            _planes(dx[a:b], padded[p], shifts, sh, sw, ph, pw, plane_h, width, image, False)


@njit(**JIT)
def _forward_split(
    gemm, x, taps, out, bias, cols, padded, products, groups, chunk,
    shifts, sh, sw, ph, pw, plane_h, oh, width, small, one, zero,
):  # fmt: skip
    """_forward_images for a batch smaller than numba's threads (inference at batch 1): each
    chunk's product in as many ranges of its columns as the buffers have parts, one a thread
    (the first part's buffers serve them all)."""
    n, o, splits = x.shape[0], taps.shape[1], padded.shape[0]
    image = sh * sw * plane_h * width if cols.shape[1] == 0 else oh * width
    geometry = (shifts, sh, sw, ph, pw, plane_h, oh, width)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        m = (b - a - 1) * image + oh * width
        src = _source(x[a:b], cols[0], padded[0], groups * taps.shape[2], m, image, geometry)
        product = _columns(products[0], o, (b - a) * image)
        for s in prange(splits):
            start, stop = m * s // splits, m * (s + 1) // splits
            args = (groups, shifts, False, small, one, zero)
            _tap_products(gemm, taps, src, product, start, stop, *args)
        _place_rows(product, out[a:b], bias, width, image)


THREADED_WORK = 1 << 22  # multiply-adds from which a convolution's batch is split over threads

# the output positions of one chunk of images, unfolded and multiplied at once: as many images as
# fit (one for the large layers, many for 8x8 digits). OpenBLAS ran the CNN's 3-channel stem at
# 90 GFLOP/s on one image a product (1088 columns), 69 on eight.
CHUNK_COLUMNS = 1024
# shifted products take fewer: each image of a chunk carries its padding in the grid, and its
# product is cut into blocks for OpenBLAS's small-matrix kernels anyway. A 16x16 layer of 64
# channels runs faster one image a chunk (288 columns, 256 used) than three (936, 768 used):
# docs/performance.md, the fifteenth round
SHIFTED_CHUNK_COLUMNS = 512

# input channels a group from which a 2-D convolution runs shifted products (each tap's product
# has this inner dimension; from 8 they beat unfolding)
SHIFTED_CHANNELS = 8

# output columns an image (its output rows at the planes' width) from which a strided 2-D
# convolution runs shifted products: they take one image a chunk, as the grid between two
# images' outputs spans the rest of the first one's planes (3/4 of them at stride 2)
SHIFTED_STRIDED_COLUMNS = 256


@functools.lru_cache(maxsize=256)
def tap_shifts(kernel, stride, dilation, plane_h, width):
    """Where each tap (i, j)'s run starts in an image's planes (Columns): kernel row i reads
    padded rows y sh + i dh, those of plane row i dh % sh from row i dh // sh on, and likewise
    for the columns. Kept per geometry: building it took 3 us of every convolution call (the
    kernels only read it)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    plane = plane_h * width
    return np.array(
        [
            ((i * dh % sh) * sw + j * dw % sw) * plane + (i * dh // sh) * width + j * dw // sw
            for i in range(kh)
            for j in range(kw)
        ],
        np.int64,
    )


class Columns:
    """The column layout of a convolution's matmuls, a chunk of images at a time: images
    [start, stop) unfold to (G, C/G * taps, (stop - start) * L), whose product with the (G,
    O/G, C/G * taps) weights is their output as (G, O/G, (stop - start) * L). A 2-D convolution
    unfolds from a zero-padded copy of each image split into the stride's sh * sw planes
    (_planes: padded position (r, s) in plane (r % sh, s % sw), each plane_h rows of `width`;
    at stride 1 the one plane is the padded image), so that no tap checks a bound and each
    column row is one contiguous run of the planes, from the tap's shift (tap_shifts): L = oh *
    width, the products carrying width - ow columns more per output row, cropped off (their
    gradient columns are zeros). conv3d uses its own im2col (L = the output positions). With
    `shift` (CBLAS's GEMM to call), a 2-D convolution of SHIFTED_CHANNELS or more input
    channels a group runs shifted products instead (above; strided, one image a chunk, from
    SHIFTED_STRIDED_COLUMNS): a chunk's planes end to end, `image` entries each."""

    def __init__(self, conv, x_shape, dtype, shift=False):
        self.conv, self.dtype = conv, dtype
        channels = x_shape[1]
        self.k = channels // conv.groups * math.prod(conv.kernel)
        self.from_padded = conv.dims == 2
        self.shifted = False
        if not self.from_padded:
            self.length = self.image = math.prod(conv.out_hw)
            self.chunk = max(1, min(x_shape[0], CHUNK_COLUMNS // self.image))
            return
        (ph, pw), (sh, sw) = conv.padding, conv.stride
        self.plane_h, self.width = -(-(x_shape[2] + 2 * ph) // sh), -(-(x_shape[3] + 2 * pw) // sw)
        self.length = conv.out_hw[0] * self.width
        self.shifts = tap_shifts(conv.kernel, conv.stride, conv.dilation, self.plane_h, self.width)
        planes = sh * sw * self.plane_h * self.width
        strided = conv.stride != (1, 1)
        self.shifted = (
            shift
            and channels // conv.groups >= SHIFTED_CHANNELS
            and (not strided or self.length >= SHIFTED_STRIDED_COLUMNS)
        )
        self.image = planes if self.shifted else self.length
        per_chunk = SHIFTED_CHUNK_COLUMNS if self.shifted else CHUNK_COLUMNS
        self.chunk = max(1, min(x_shape[0], per_chunk // self.image))
        if self.shifted and strided:
            self.chunk = 1
        tail = max(0, int(self.shifts.max()) + self.length - planes)  # the last run's reach
        images = self.chunk if self.shifted else 1
        self.padded_shape = (channels, images * planes + tail)

    def run(self, kernel, loop, n, out_channels, split=None):
        """loop(kernel, parts) runs a batch loop (above) over a batch of n: small convolutions
        in turn (parts=1, OpenBLAS's threads inside each GEMM), the others over numba's threads
        (its threaded twin, each thread's GEMMs on one BLAS thread), in parts of the batch or,
        for a batch smaller than the threads, by `split` where given (in ranges of columns)."""
        workers = threads.get_num_threads()
        parts = min(n, workers)
        if n * out_channels * self.k * self.length < THREADED_WORK or workers == 1:
            loop(kernel, 1)
            return
        if parts < workers and split is not None:
            kernel, parts = split, workers
        elif parts == 1:
            loop(kernel, 1)
            return
        with threads.one_blas_thread():
            loop(threaded(kernel), parts)

    def loop_space(self, parts):
        """Each part's buffers for a batch loop (recycled): the columns, the zero-padded
        image."""
        rows = 0 if self.shifted else self.conv.groups * self.k
        cols = buffers.empty((parts, rows * self._row()), self.dtype)
        return cols, self.loop_padded(parts)

    def loop_padded(self, parts):
        """Each part's zero-padded image (or, shifted, images) for a batch loop (recycled)."""
        return buffers.zeros((parts, *self.padded_shape), self.dtype)

    def loop_products(self, parts, channels):
        """Each part's buffer for a chunk's products or output gradient (recycled)."""
        return buffers.empty((parts, channels * self._row()), self.dtype)

    def _row(self):
        """A batch loop's buffer row for one chunk (_columns may widen it by 64 bytes)."""
        return self.chunk * self.image + 64 // self.dtype.itemsize

    def loop_args(self):
        """A batch loop's arguments after its buffers."""
        one = self.dtype.type
        small = blas.small_product_limit()
        return (self.conv.groups, self.chunk, *self._rows_args(), small, one(1), one(0))

    def split(self, part, n, out_channels):
        """part(start, stop) over a batch of n, on threads when its work pays for them (a
        hand-off costs tens of microseconds: the digits' 8x8 convolutions run whole)."""
        if n * out_channels * self.k * self.length < THREADED_WORK:
            return [part(0, n)]
        return threads.split_range(part, n)

    def chunks(self, start, stop):
        return [(a, min(a + self.chunk, stop)) for a in range(start, stop, self.chunk)]

    def space(self):
        """One thread's buffers (recycled): the columns (flat), the zero-padded image."""
        cols = buffers.empty((self.conv.groups * self.k * self.chunk * self.length,), self.dtype)
        padded = buffers.zeros(self.padded_shape, self.dtype) if self.from_padded else None
        return cols, padded

    def unfold(self, x, start, stop, space):
        """Images [start, stop) of x (contiguous) in the column layout."""
        flat, padded = space
        cols = _view(flat, (self.conv.groups, self.k, (stop - start) * self.length))
        conv = self.conv
        if self.from_padded:
            rows = cols.reshape(-1, cols.shape[2])
            _unfold_rows(x[start:stop], padded, rows, *self._rows_args())
        else:
            conv.im2col(x[start:stop], cols, *conv.args(*conv.out_hw))
        return cols

    def fold(self, cols, space, dx, start, stop):
        """dx[start:stop] = the adjoint of unfold applied to cols (dx contiguous)."""
        conv = self.conv
        if self.from_padded:
            _fold_rows(
                cols.reshape(-1, cols.shape[2]), space[1], dx[start:stop], *self._rows_args()
            )
        else:
            dx[start:stop] = 0
            conv.col2im(cols, dx[start:stop], *conv.args(*conv.out_hw))

    def _rows_args(self):
        (sh, sw), (ph, pw) = self.conv.stride, self.conv.padding
        return (self.shifts, sh, sw, ph, pw, self.plane_h, self.conv.out_hw[0], self.width)

    def grad_buffer(self, channels, dtype):
        """A thread's buffer for `grad` (zeros in the cropped columns)."""
        return buffers.zeros((channels * self.chunk * self.length,), dtype)

    def grad(self, g, start, stop, buffer):
        """Images [start, stop) of the output gradient g (N, O, ...) as (G, O/G, (stop -
        start) * L)."""
        groups, o = self.conv.groups, g.shape[1]
        g_cols = _view(buffer, (o, (stop - start) * self.length))
        if self.from_padded:
            _gather_rows(g[start:stop], g_cols, self.width, self.image)
        else:
            g_cols.reshape(o, stop - start, -1)[...] = (
                g[start:stop].reshape(stop - start, o, -1).swapaxes(0, 1)
            )
        return g_cols.reshape(groups, o // groups, -1)

    def place(self, product, out, start, stop, bias):
        """out[start:stop] = the chunk's products (G, O/G, (stop - start) * L) at their output
        positions, plus bias (O,) unless it is None."""
        if self.from_padded:
            bias = np.empty(0, out.dtype) if bias is None else bias
            product = product.reshape(out.shape[1], -1)
            _place_rows(product, out[start:stop], bias, self.width, self.image)
            return
        result = product.reshape(out.shape[1], stop - start, *out.shape[2:]).swapaxes(0, 1)
        if bias is None:
            out[start:stop] = result
        else:
            np.add(result, bias.reshape(-1, *(1,) * self.conv.dims), out=out[start:stop])


def _cblas(conv, *arrays):
    """CBLAS's GEMM for the batch loops (a 2-D convolution, arrays of one float32 or float64
    dtype), or None: the Python loop runs."""
    dtype = arrays[0].dtype
    if conv.dims != 2 or dtype.char not in "fd" or any(a.dtype != dtype for a in arrays):
        return None
    return blas.cblas_gemm(dtype)


def _taps(w):
    """The weights (O, C/G, kh, kw) as (kh * kw, O, C/G), a tap's weights a matrix."""
    return np.ascontiguousarray(w.transpose(2, 3, 0, 1)).reshape(-1, *w.shape[:2])


def _view(flat, shape):
    """The first prod(shape) entries of a flat buffer, as a contiguous array of `shape`."""
    return flat[: math.prod(shape)].reshape(shape)


def _grouped(w, groups):
    """The weights (O, C/G, *kernel) as (G, O/G, C/G * taps)."""
    return np.ascontiguousarray(w).reshape(groups, w.shape[0] // groups, -1)


def _add_products(acc, a, b):
    """acc[i] += a[i] @ b[i].T for each group i (on BLAS, adding in place where it can)."""
    for i in range(acc.shape[0]):
        if not blas.gemm(a[i], b[i].T, acc[i], 1.0, 1.0):
            acc[i] += a[i] @ b[i].T


def forward(conv, x, w, out, bias=None):
    """out = the convolution `conv` of x by w, plus bias (O,) unless None."""
    x = np.ascontiguousarray(x)
    if _pointwise(conv, x, out):
        _pointwise_forward(conv, x, w, out, bias)
        return
    gemm = _cblas(conv, x, w, out, *(() if bias is None else (bias,)))
    columns = Columns(conv, x.shape, x.dtype, shift=gemm is not None)
    if gemm is not None:
        bias = np.empty(0, out.dtype) if bias is None else bias
        taps = _taps(w) if columns.shifted else np.ascontiguousarray(w).reshape(1, len(w), -1)

        def loop(kernel, parts):
            cols, padded = columns.loop_space(parts)
            products = columns.loop_products(parts, out.shape[1])
            kernel(gemm, x, taps, out, bias, cols, padded, products, *columns.loop_args())

        columns.run(_forward_images, loop, x.shape[0], out.shape[1], _forward_split)
        return
    w3 = _grouped(w, conv.groups)

    def part(start, stop):
        space = columns.space()
        products = buffers.empty((out.shape[1] * columns.chunk * columns.length,), out.dtype)
        for a, b in columns.chunks(start, stop):
            product = _view(products, (*w3.shape[:2], (b - a) * columns.length))
            np.matmul(w3, columns.unfold(x, a, b, space), out=product)
            columns.place(product, out, a, b, bias)

    columns.split(part, x.shape[0], out.shape[1])


def _pointwise(conv, x, out) -> bool:
    """Whether `conv` is a 1x1 convolution of one group without padding on floats, which
    needs no columns (each image's output is the weights times its strided positions), of a
    batch too small to split over the threads (inference): a larger one runs faster as the
    columns' loop splits it, each thread's products on one BLAS thread."""
    return (
        (x.shape[0] == 1 or x.shape[0] < threads.get_num_threads())
        and conv.groups == 1
        and all(k == 1 for k in conv.kernel)
        and not any(conv.padding)
        and x.dtype.kind == "f"
        and out.flags.c_contiguous
    )


def _pointwise_forward(conv, x, w, out, bias):
    """out[b] = w (O, C) @ x[b]'s positions at the stride (C, positions): one BLAS product
    an image, from x itself at stride 1, else from a copy of the positions it reads."""
    rows = x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in conv.stride)]
    rows = buffers.contiguous(rows).reshape(x.shape[0], x.shape[1], -1)
    weights = np.ascontiguousarray(w).reshape(len(w), -1)
    product = out.reshape(out.shape[0], out.shape[1], -1)
    key = ("pointwise", rows.shape, weights.shape, out.dtype)
    threads.blas_call(key, np.matmul, weights, rows, out=product)
    if bias is not None:
        product += bias[:, None]


def input_grad(conv, g, w, out):
    """out = the gradient of the convolution `conv` with respect to its input: a chunk of
    images at a time, the transposed weights times the output gradient, folded back."""
    gemm = _cblas(conv, g, w, out)
    columns = Columns(conv, out.shape, out.dtype, shift=gemm is not None)
    if gemm is not None:
        g = np.ascontiguousarray(g)

        def loop(kernel, parts):
            g_cols = columns.loop_products(parts, g.shape[1])
            if columns.shifted:
                padded = columns.loop_padded(parts)
                kernel(gemm, g, _taps(w), out, padded, g_cols, *columns.loop_args())
                return
            cols, padded = columns.loop_space(parts)
            w2 = np.ascontiguousarray(w).reshape(w.shape[0], -1)
            kernel(gemm, g, w2, out, cols, padded, g_cols, *columns.loop_args())

        kernel = _input_grad_shifted if columns.shifted else _input_grad_images
        columns.run(kernel, loop, out.shape[0], g.shape[1])
        return
    w3t = _grouped(w, conv.groups).transpose(0, 2, 1)

    def part(start, stop):
        space = columns.space()
        buffer = columns.grad_buffer(g.shape[1], g.dtype)
        for a, b in columns.chunks(start, stop):
            product = _view(space[0], (conv.groups, columns.k, (b - a) * columns.length))
            np.matmul(w3t, columns.grad(g, a, b, buffer), out=product)
            columns.fold(product, space, out, a, b)

    columns.split(part, out.shape[0], g.shape[1])


def weight_grad(conv, x, g, out):
    """out = the gradient of the convolution `conv` with respect to its weight: each part of
    the batch sums its chunks' products (columns times output gradient, giving the gradient
    transposed: OpenBLAS runs that form faster), then the parts' sums add."""
    x = np.ascontiguousarray(x)
    columns = Columns(conv, x.shape, x.dtype)
    shape = (conv.groups, columns.k, g.shape[1] // conv.groups)
    gemm = _cblas(conv, x, g, out)

    def store(total):  # (G, C/G * taps, O/G) -> out (O, C/G, *kernel)
        np.copyto(out.reshape(shape[0], shape[2], shape[1]), total.transpose(0, 2, 1))

    if gemm is not None:
        g = np.ascontiguousarray(g)

        def loop(kernel, parts):
            cols, padded = columns.loop_space(parts)
            g_cols = columns.loop_products(parts, g.shape[1])
            totals = np.zeros((parts, *shape), out.dtype)
            kernel(gemm, x, g, totals, cols, padded, g_cols, *columns.loop_args())
            store(totals.sum(0))

        columns.run(_weight_grad_images, loop, x.shape[0], g.shape[1])
        return

    def part(start, stop):
        space = columns.space()
        buffer = columns.grad_buffer(g.shape[1], g.dtype)
        total = np.zeros(shape, out.dtype)
        for a, b in columns.chunks(start, stop):
            _add_products(total, columns.unfold(x, a, b, space), columns.grad(g, a, b, buffer))
        return total

    store(sum(columns.split(part, x.shape[0], g.shape[1])))
