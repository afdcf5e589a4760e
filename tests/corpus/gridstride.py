"""Correct answers to the grid-stride exercises, in styles other than the solutions'."""

ANSWERS = {
    "gridstride-ex-saxpy": [
        ("while loop, indices by hand", '''
from numba import cuda


@cuda.jit
def saxpy_kernel(a, x, y, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    step = cuda.blockDim.x * cuda.gridDim.x
    while i < out.shape[0]:
        out[i] = a * x[i] + y[i]
        i += step
'''),
        ("eager signature and a device function", '''
from numba import cuda


@cuda.jit(device=True)
def axpy(a, xi, yi):
    return a * xi + yi


@cuda.jit("void(float32, float32[::1], float32[::1], float32[::1])")
def saxpy_kernel(a, x, y, out):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = axpy(a, x[i], y[i])
'''),
        ("stride from gridDim, bound from len", '''
from numba import cuda


@cuda.jit
def saxpy_kernel(a, x, y, out):
    first = cuda.grid(1)
    every = cuda.gridDim.x * cuda.blockDim.x
    n = len(out)
    for i in range(first, n, every):
        out[i] = y[i] + x[i] * a
'''),
        ("compiled once and cached on disk (cache=True)", '''
from numba import cuda


@cuda.jit(cache=True)
def saxpy_kernel(a, x, y, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a * x[i] + y[i]
'''),
    ],
    "gridstride-ex-clip": [
        ("rows from the grid's y, columns from x, by hand", '''
from numba import cuda


@cuda.jit
def clip_2d_kernel(x, lo, hi, out):
    r0 = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    c0 = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    r = r0
    while r < x.shape[0]:
        c = c0
        while c < x.shape[1]:
            v = x[r, c]
            if v < lo:
                v = lo
            elif v > hi:
                v = hi
            out[r, c] = v
            c += cuda.blockDim.x * cuda.gridDim.x
        r += cuda.blockDim.y * cuda.gridDim.y
'''),
        ("line numbers for the profiler (lineinfo), min and max", '''
from numba import cuda


@cuda.jit(lineinfo=True)
def clip_2d_kernel(x, lo, hi, out):
    rows, cols = cuda.grid(2)
    drows, dcols = cuda.gridsize(2)
    for r in range(rows, x.shape[0], drows):
        for c in range(cols, x.shape[1], dcols):
            out[r, c] = min(max(x[r, c], lo), hi)
'''),
        ("one flat index over the 2D grid's threads", '''
from numba import cuda


@cuda.jit
def clip_2d_kernel(x, lo, hi, out):
    gx, gy = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    rows, cols = x.shape
    for k in range(gy * sx + gx, rows * cols, sx * sy):
        r = k // cols
        c = k % cols
        out[r, c] = min(hi, max(lo, x[r, c]))
'''),
        ("device helper, columns outer", '''
from numba import cuda


@cuda.jit(device=True)
def clamp(v, lo, hi):
    return lo if v < lo else (hi if v > hi else v)


@cuda.jit
def clip_2d_kernel(x, lo, hi, out):
    j0, i0 = cuda.grid(2)
    dj, di = cuda.gridsize(2)
    for j in range(j0, x.shape[1], dj):
        for i in range(i0, x.shape[0], di):
            out[i, j] = clamp(x[i, j], lo, hi)
'''),
    ],
    "gridstride-ex-reverse": [
        ("while loop over the first half", '''
from numba import cuda


@cuda.jit
def reverse_inplace_kernel(x):
    n = x.shape[0]
    i = cuda.grid(1)
    while i < n // 2:
        tmp = x[i]
        x[i] = x[n - 1 - i]
        x[n - 1 - i] = tmp
        i += cuda.gridsize(1)
'''),
        ("a device function swaps", '''
from numba import cuda


@cuda.jit(device=True)
def swap(arr, i, j):
    t = arr[i]
    arr[i] = arr[j]
    arr[j] = t


@cuda.jit
def reverse_inplace_kernel(x):
    half = x.size // 2
    for i in range(cuda.grid(1), half, cuda.gridsize(1)):
        swap(x, i, x.size - 1 - i)
'''),
        ("pairs counted from the end", '''
from numba import cuda


@cuda.jit("void(int32[::1])")
def reverse_inplace_kernel(x):
    n = x.size
    stride = cuda.blockDim.x * cuda.gridDim.x
    for j in range(n - 1 - cuda.grid(1), (n - 1) // 2, -stride):
        i = n - 1 - j
        x[i], x[j] = x[j], x[i]
'''),
        ("a register limit, by a name bound to the decorator", '''
from numba import cuda

few_registers = cuda.jit(max_registers=32)


@few_registers
def reverse_inplace_kernel(x):
    n = x.size
    for i in range(cuda.grid(1), n // 2, cuda.gridsize(1)):
        x[i], x[n - 1 - i] = x[n - 1 - i], x[i]
'''),
    ],
}
