"""Correct answers to the shared-memory tiling exercises, in other styles."""

ANSWERS = {
    "matmul-ex-choose-tile": [
        ("powers of two counted down", '''
def choose_tile(shared_bytes, max_threads, itemsize=4):
    tile = 1 << 15
    while tile > 1 and (2 * tile * tile * itemsize > shared_bytes or tile * tile > max_threads):
        tile //= 2
    return tile
'''),
        ("from logarithms, then checked", '''
import math


def choose_tile(shared_bytes, max_threads, itemsize=4):
    by_memory = math.isqrt(max(shared_bytes // (2 * itemsize), 1))
    by_threads = math.isqrt(max(max_threads, 1))
    tile = 1 << (max(min(by_memory, by_threads), 1).bit_length() - 1)
    return tile
'''),
        ("every candidate tried", '''
def choose_tile(shared_bytes, max_threads, itemsize=4):
    best = 1
    for k in range(1, 16):
        t = 2 ** k
        if 2 * t * t * itemsize <= shared_bytes and t * t <= max_threads:
            best = t
    return best
'''),
    ],
    "matmul-ex-transpose": [
        ("a 16 x 17 tile, sizes from blockDim", '''
from numba import cuda, float32

T_DIM = 16
T_PAD = 17  # a shared array's shape must be constants: T_DIM + 1 would not compile


@cuda.jit
def transpose_tiled_kernel(a, out):
    tile = cuda.shared.array((T_DIM, T_PAD), float32)
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if y < a.shape[0] and x < a.shape[1]:
        tile[cuda.threadIdx.y, cuda.threadIdx.x] = a[y, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.x
    y = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.y
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y]
'''),
        ("cuda.grid(2) for the read, a flat shared tile", '''
from numba import cuda, float32

FLAT_TILE = 16
FLAT_CELLS = 256  # FLAT_TILE ** 2, written out: a shared array's size must be a constant


@cuda.jit
def transpose_tiled_kernel(a, out):
    buf = cuda.shared.array(FLAT_CELLS, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        buf[ty * FLAT_TILE + tx] = a[row, col]
    cuda.syncthreads()
    out_row = cuda.blockIdx.x * FLAT_TILE + ty
    out_col = cuda.blockIdx.y * FLAT_TILE + tx
    if out_row < out.shape[0] and out_col < out.shape[1]:
        out[out_row, out_col] = buf[tx * FLAT_TILE + ty]
'''),
        ("eager signature, corner of the block first", '''
from numba import cuda, float32

SIDE = 16
SIDE_PADDED = 17


@cuda.jit("void(float32[:, ::1], float32[:, ::1])")
def transpose_tiled_kernel(a, out):
    t = cuda.shared.array((SIDE, SIDE_PADDED), float32)
    r0 = cuda.blockIdx.y * SIDE
    c0 = cuda.blockIdx.x * SIDE
    i = cuda.threadIdx.y
    j = cuda.threadIdx.x
    if r0 + i < a.shape[0] and c0 + j < a.shape[1]:
        t[i, j] = a[r0 + i, c0 + j]
    cuda.syncthreads()
    if c0 + i < out.shape[0] and r0 + j < out.shape[1]:
        out[c0 + i, r0 + j] = t[j, i]
'''),
    ],
    "matmul-ex-matvec": [
        ("the chunk as long as the block", '''
from numba import cuda, float32

MV_CHUNK = 64


@cuda.jit
def matvec_tiled_kernel(a, x, y):
    xs = cuda.shared.array(MV_CHUNK, float32)
    t = cuda.threadIdx.x
    row = cuda.blockIdx.x * cuda.blockDim.x + t
    total = float32(0)
    base = 0
    while base < x.size:
        if base + t < x.size:
            xs[t] = x[base + t]
        cuda.syncthreads()
        if row < a.shape[0]:
            for k in range(min(cuda.blockDim.x, x.size - base)):
                total += a[row, base + k] * xs[k]
        cuda.syncthreads()
        base += cuda.blockDim.x
    if row < y.size:
        y[row] = total
'''),
        ("chunks of 32, each thread loads by a block stride", '''
from numba import cuda, float32

PIECE = 32


@cuda.jit
def matvec_tiled_kernel(a, x, y):
    piece = cuda.shared.array(PIECE, float32)
    row = cuda.grid(1)
    acc = float32(0)
    for start in range(0, x.size, PIECE):
        for k in range(cuda.threadIdx.x, PIECE, cuda.blockDim.x):
            piece[k] = x[start + k] if start + k < x.size else float32(0)
        cuda.syncthreads()
        if row < a.shape[0]:
            for k in range(PIECE):
                if start + k < x.size:
                    acc += a[row, start + k] * piece[k]
        cuda.syncthreads()
    if row < a.shape[0]:
        y[row] = acc
'''),
        ("a device function for the partial dot product", '''
from numba import cuda, float32

SEG = 64


@cuda.jit(device=True)
def partial_dot(a, row, start, seg, count):
    s = float32(0)
    for k in range(count):
        s += a[row, start + k] * seg[k]
    return s


@cuda.jit
def matvec_tiled_kernel(a, x, y):
    seg = cuda.shared.array(SEG, float32)
    row = cuda.grid(1)
    acc = float32(0)
    for start in range(0, x.size, SEG):
        i = start + cuda.threadIdx.x
        seg[cuda.threadIdx.x] = x[i] if i < x.size else float32(0)
        cuda.syncthreads()
        if row < a.shape[0]:
            acc += partial_dot(a, row, start, seg, min(SEG, x.size - start))
        cuda.syncthreads()
    if row < a.shape[0]:
        y[row] = acc
'''),
    ],
}
