"""conv3d on the GPU: conv2d's im2col pipeline (skeletons.conv2d and its gradients: one tiled
matmul per group, the bias added while the result is laid out) run with two column kernels
of rank 3, vol2col and col2vol, the GPU twins of conv3d.py's CPU kernels.

One thread per column entry (a grid-stride loop over the (G, C/G * kd * kh * kw,
N * od * oh * ow) columns): vol2col reads the voxel the entry holds, or 0 in the padding;
col2vol adds the entry back into that voxel with an atomic add, because taps that overlap
(stride < kernel) send several entries to one voxel. float16 folds into a float32 buffer
(skeletons.fold: no float16 atomics).

Importing this module needs no numba-cuda (nbflow/ops/conv3d.py imports it on the CPU path
too): the kernels are built on the first GPU launch, by conv3d's launchers in ops/conv3d.py.
"""

import functools

# numba.cuda once kernels() has run. A module global, not a local: the CUDA simulator runs a
# kernel by swapping its module's globals that are numba.cuda for its own fake module.
cuda = None


@functools.cache
def kernels():
    """(vol2col, col2vol): the column kernels, the pair skeletons.conv2d takes as `columns`."""
    global cuda
    from numba import cuda

    @cuda.jit(device=True)
    def source(q, k, m, cg, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow):
        """Column entry q (flat over (G, k, m)): its (g, row, col), and the input voxel it
        holds, (n, channel, z, y, x), which may lie in the padding."""
        g, r = q // (k * m), q % (k * m)
        row, col = r // m, r % m
        c, tap = row // (kd * kh * kw), row % (kd * kh * kw)
        a, ij = tap // (kh * kw), tap % (kh * kw)
        i, j = ij // kw, ij % kw
        n, voxel = col // (od * oh * ow), col % (od * oh * ow)
        z, yt = voxel // (oh * ow), voxel % (oh * ow)
        y, t = yt // ow, yt % ow
        return (
            g,
            row,
            col,
            n,
            g * cg + c,
            z * sd - pd + a * dd,
            y * sh - ph + i * dh,
            t * sw - pw + j * dw,
        )

    @cuda.jit
    def vol2col(x, cols, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow):
        depth, height, width = x.shape[2], x.shape[3], x.shape[4]
        k, m, cg = cols.shape[1], cols.shape[2], x.shape[1] // cols.shape[0]
        for q in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
            g, row, col, n, ch, dz, hy, wx = source(
                q, k, m, cg, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow
            )
            if 0 <= dz < depth and 0 <= hy < height and 0 <= wx < width:
                cols[g, row, col] = x[n, ch, dz, hy, wx]
            else:
                cols[g, row, col] = 0

    @cuda.jit
    def col2vol(cols, dx, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow):
        """dx[input voxel] += the column entries taken from it (dx zeroed first; atomics)."""
        depth, height, width = dx.shape[2], dx.shape[3], dx.shape[4]
        k, m, cg = cols.shape[1], cols.shape[2], dx.shape[1] // cols.shape[0]
        for q in range(cuda.grid(1), cols.size, cuda.gridsize(1)):
            g, row, col, n, ch, dz, hy, wx = source(
                q, k, m, cg, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od, oh, ow
            )
            if 0 <= dz < depth and 0 <= hy < height and 0 <= wx < width:
                cuda.atomic.add(dx, (n, ch, dz, hy, wx), cols[g, row, col])

    return vol2col, col2vol
