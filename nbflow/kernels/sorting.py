"""The row sort shared by the CPU (@njit) and GPU (@cuda.jit(device=True)) sort kernels: plain
Python, compiled by each target where it is used, so the order is written once.

A stable bottom-up merge sort of one row's indices, ping-ponging between work[0] and work[1]
(work: (2, rows, n) int64). PyTorch's order: ascending puts NaN last, descending puts NaN
first; equal values keep their order (stable) either way."""


def sort_row(x, row, work, descending):
    """Sort the indices of x[row, :] into work[s, row, :]; returns s (0 or 1)."""
    n = x.shape[1]
    for j in range(n):
        work[0, row, j] = j
    s = 0
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            for k in range(lo, hi):
                right = False
                if j < hi:
                    if i >= mid:
                        right = True
                    else:
                        a = x[row, work[s, row, i]]
                        b = x[row, work[s, row, j]]
                        # the right element goes first only when strictly before the left
                        if descending:
                            right = b > a or (b != b and a == a)
                        else:
                            right = b < a or (a != a and b == b)
                if right:
                    work[1 - s, row, k] = work[s, row, j]
                    j += 1
                else:
                    work[1 - s, row, k] = work[s, row, i]
                    i += 1
        s = 1 - s
        width *= 2
    return s
