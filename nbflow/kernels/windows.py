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
