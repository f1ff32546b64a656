"""Scalar helpers shared by the CPU (@njit) and GPU (@cuda.jit(device=True)) pooling kernels:
plain Python, compiled by each target where it is used, so the rule is written once."""


def avg_window(y, t, kh, kw, sh, sw, ph, pw, height, width, include_pad, divisor):
    """(h0, h1, w0, w1, divisor) of output (y, t): the window clipped to the input, and what
    its sum is divided by (PyTorch's rules; divisor > 0 overrides)."""
    h0 = y * sh - ph
    w0 = t * sw - pw
    h1 = min(h0 + kh, height + ph)
    w1 = min(w0 + kw, width + pw)
    pool = (h1 - h0) * (w1 - w0)
    h0 = max(h0, 0)
    w0 = max(w0, 0)
    h1 = min(h1, height)
    w1 = min(w1, width)
    if divisor > 0:
        d = divisor
    elif include_pad:
        d = pool
    else:
        d = (h1 - h0) * (w1 - w0)
    return h0, h1, w0, w1, d


def max_window(x, p, y, t, kh, kw, sh, sw, ph, pw, dh, dw):
    """(max, flat index in the plane) of the window of output (y, t) in plane p of x; index -1
    when the window holds only padding (the max is then meaningless). A NaN wins, as in
    PyTorch."""
    height, width = x.shape[1], x.shape[2]
    best = x[p, 0, 0]  # (x's dtype on both targets; replaced by the first element in reach)
    k = -1
    for i in range(kh):
        hy = y * sh - ph + i * dh
        if hy < 0 or hy >= height:
            continue
        for j in range(kw):
            wx = t * sw - pw + j * dw
            if wx < 0 or wx >= width:
                continue
            v = x[p, hy, wx]
            if k < 0 or (best == best and (v > best or v != v)):
                best = v
                k = hy * width + wx
    return best, k


def adaptive_bin(i, length, bins):
    """[start, stop) of bin i of `bins` over `length`: [floor(i m / n), ceil((i + 1) m / n))."""
    return (i * length) // bins, ((i + 1) * length + bins - 1) // bins
