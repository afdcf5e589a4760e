"""Solutions to the grid-stride chapter's exercises."""

from numba import cuda


@cuda.jit
def saxpy_kernel(a, x, y, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.size, stride):
        out[i] = a * x[i] + y[i]


@cuda.jit
def clip_2d_kernel(x, lo, hi, out):
    col0, row0 = cuda.grid(2)
    col_stride, row_stride = cuda.gridsize(2)
    for row in range(row0, x.shape[0], row_stride):
        for col in range(col0, x.shape[1], col_stride):
            out[row, col] = min(max(x[row, col], lo), hi)


@cuda.jit
def reverse_inplace_kernel(x):
    n = x.size
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    # Only the first half: each swap moves two elements, so going to n would have
    # a second thread swap each pair back, racing with the first (on a GPU the
    # result then depends on timing: neither reversed nor reliably unchanged).
    for i in range(start, n // 2, stride):
        j = n - 1 - i
        x[i], x[j] = x[j], x[i]
