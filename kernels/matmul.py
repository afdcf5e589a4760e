"""Matrix multiplication, c = a @ b in float32: shared-memory tiling and beyond.

Versions (VERSIONS maps each name to its host function):
    matmul_naive                    one thread per element of c, operands from global memory
    matmul_tiled                    16 x 16 tiles in shared memory, no bounds checks: the
                                    popular version, kept as an exhibit (drops k % 16 terms)
    matmul_tiled_bounded            the same tiles, padded with zeros: right for every shape
    matmul_thread_tile_1d           64 x 64 block tiles; each thread computes 8 elements of
                                    a column, reusing each value of b from a register
    matmul_thread_tile_2d           128 x 128 block tiles; each thread computes 8 x 8
                                    elements from register fragments (A tile transposed,
                                    128-bit shared-memory loads)
    matmul_thread_tile_2d_prefetch  the same, loading the next tiles into registers while
                                    it computes on the current ones
    matmul_warp_tile                the same, each warp's 32 threads arranged as an 8 x 4
                                    patch: fewer distinct shared-memory reads per warp
"""

import math

import numpy as np
from numba import cuda, float32, uint32

from kernels import SIMULATOR, validate

TILE = 16  # matmul_tiled*: a TILE x TILE block computes a TILE x TILE tile of c

# matmul_thread_tile_1d: a 64 x 64 tile of c per block of 64 x 8 threads
T1_BM, T1_BN, T1_BK = 64, 64, 8
T1_TM = 8  # elements of c per thread, down a column

# matmul_thread_tile_2d*: a 128 x 128 tile of c per block of 16 x 16 threads
BM, BN, BK = 128, 128, 8
TM, TN = 8, 8  # elements of c per thread: TM rows x TN columns
TX, TY = BN // TN, BM // TM  # threads per block along x (columns) and y (rows)
THREADS_2D = TX * TY
A_LOADS, B_LOADS = BM * BK // THREADS_2D, BK * BN // THREADS_2D  # per thread per tile
A_PAD = 4  # extra columns in the transposed A tile: conflict-free stores, 16-byte rows
A_TILE_COLS = BM + A_PAD

# 16-byte aligned shared tiles let the compiler merge 4 float loads into one 128-bit
# load; at most 128 registers per thread lets two 256-thread blocks share an SM. The
# simulator accepts neither option (and needs neither).
VECTOR_ALIGN = None if SIMULATOR else 16
BLOCKS_PER_SM_2D = 2  # the 2D kernels' blocks per SM, promised to the compiler
TWO_BLOCKS_PER_SM = {} if SIMULATOR else {"launch_bounds": (THREADS_2D, BLOCKS_PER_SM_2D)}

MAX_GRID_Y = 65_535

# ------------------------------------------------------------------ reference


def matmul_reference(a, b):
    """c = a @ b with NumPy (BLAS on the CPU), in the inputs' float32."""
    return np.matmul(a, b)


def matmul_float64(a, b):
    """c = a @ b computed in float64: the yardstick for every float32 result."""
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def tolerance(a, b):
    """(rtol, atol) within which a float32 a @ b must match the float64 product.

    Each element sums k rounded products, whose rounding errors add up like a random
    walk: rtol allows 4 * eps * sqrt(k) of the element, atol eps * k * max|a| * max|b|
    where terms cancel. Summed in any order, random data stays below a tenth of this, and
    a dropped product of median size is over 5 times more (k up to 4096)."""
    k = a.shape[1]
    eps = float(np.finfo(np.float32).eps)
    scale = float(np.abs(a).max()) * float(np.abs(b).max()) if a.size and b.size else 0.0
    return max(1e-5, 4 * eps * math.sqrt(k)), max(1e-6, eps * k * scale)


def relative_error(c, exact):
    """max |c - exact| / max |exact|: one number for a whole product's accuracy."""
    c, exact = np.asarray(c, dtype=np.float64), np.asarray(exact)
    return float(np.abs(c - exact).max() / max(np.abs(exact).max(), np.finfo(float).tiny))


# -------------------------------------------------------------------- kernels


@cuda.jit
def matmul_naive_kernel(a, b, c):
    col, row = cuda.grid(2)  # x along a row of c: a warp reads consecutive b[k, col]
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)  # float32: a bare 0.0 would make the sum float64
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


@cuda.jit
def matmul_tiled_kernel(a, b, c):
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    acc = float32(0.0)
    # BUG (kept on purpose): k // TILE whole tiles, so the last k % TILE terms are
    # never added; and no bounds checks, so rows or columns past the edge of a or b
    # would be read.
    for t in range(a.shape[1] // TILE):
        a_tile[ty, tx] = a[row, t * TILE + tx]
        b_tile[ty, tx] = b[t * TILE + ty, col]
        cuda.syncthreads()  # (1) the tiles are complete before anyone reads them
        for k in range(TILE):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()  # (2) everyone has read them before they are overwritten
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


@cuda.jit
def matmul_tiled_bounded_kernel(a, b, c):
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    col, row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    m, k_total = a.shape
    n = b.shape[1]
    acc = float32(0.0)
    for t in range((k_total + TILE - 1) // TILE):  # the last tile may be partial
        k = t * TILE + tx
        # Outside a or b, load a zero: it adds nothing to the sum. Threads outside c
        # still load, because their neighbours need the values they bring.
        a_tile[ty, tx] = a[row, k] if row < m and k < k_total else float32(0.0)
        k = t * TILE + ty
        b_tile[ty, tx] = b[k, col] if k < k_total and col < n else float32(0.0)
        cuda.syncthreads()  # (1) the tiles are complete before anyone reads them
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        cuda.syncthreads()  # (2) everyone has read them before they are overwritten
    if row < m and col < n:
        c[row, col] = acc


@cuda.jit
def matmul_thread_tile_1d_kernel(a, b, c):
    a_tile = cuda.shared.array((T1_BM, T1_BK), float32)
    b_tile = cuda.shared.array((T1_BK, T1_BN), float32)
    acc = cuda.local.array(T1_TM, float32)  # registers: the loops below unroll
    # uint32: the compiler then knows these indices are not negative and drops the
    # negative-index wraparound that Numba adds to every signed array index.
    tx = uint32(cuda.threadIdx.x)  # column of the tile, 0..63
    ty = uint32(cuda.threadIdx.y)  # owns rows ty * T1_TM ... ty * T1_TM + T1_TM - 1
    tid = ty * T1_BN + tx  # 0..511: which element of each tile this thread loads
    row0 = uint32(cuda.blockIdx.y) * T1_BM
    col0 = uint32(cuda.blockIdx.x) * T1_BN
    m, k_total = a.shape
    n = b.shape[1]
    for i in range(T1_TM):
        acc[i] = float32(0.0)
    for k0 in range(0, k_total, T1_BK):
        # 512 threads, 512 elements per tile: one load each, zero outside a or b
        r, kk = tid // T1_BK, tid % T1_BK
        inside = row0 + r < m and k0 + kk < k_total
        a_tile[r, kk] = a[row0 + r, k0 + kk] if inside else float32(0.0)
        kk, cc = tid // T1_BN, tid % T1_BN
        inside = k0 + kk < k_total and col0 + cc < n
        b_tile[kk, cc] = b[k0 + kk, col0 + cc] if inside else float32(0.0)
        cuda.syncthreads()
        for kk in range(T1_BK):
            b_value = b_tile[kk, tx]  # one shared load, used T1_TM times
            for i in range(T1_TM):
                acc[i] += a_tile[ty * T1_TM + i, kk] * b_value
        cuda.syncthreads()
    col = col0 + tx
    for i in range(T1_TM):
        row = row0 + ty * T1_TM + i
        if row < m and col < n:
            c[row, col] = acc[i]


@cuda.jit(device=True, inline=True)
def tile_row(ty, i):
    """Row of the block tile that holds a thread's i-th row of results.

    Rows come in groups of 4 consecutive ones (one 128-bit load), the groups
    4 * TY apart, so the threads of a warp read neighbouring groups."""
    return (i // 4) * (4 * TY) + ty * 4 + i % 4


@cuda.jit(device=True, inline=True)
def tile_col(tx, j):
    """Column of the block tile that holds a thread's j-th column of results."""
    return (j // 4) * (4 * TX) + tx * 4 + j % 4


@cuda.jit(device=True, inline=True)
def warp_position(tid):
    """(tx, ty) of thread `tid` (0..255) when each warp covers an 8 x 4 patch of
    thread positions and the 8 warps form 2 columns x 4 rows of patches.

    A warp then needs 8 groups of B and 4 of A per outer product, where 16 x 2
    rows of threads need 16 and 2: 12 distinct 16-byte reads instead of 18."""
    warp, lane = tid // 32, tid % 32
    return (warp % 2) * 8 + lane % 8, (warp // 2) * 4 + lane // 8


@cuda.jit(device=True, inline=True)
def fetch_tiles(a, b, a_regs, b_regs, row0, col0, k0, tid):
    """Load this thread's share of the next A and B tiles (zero outside) into registers.

    A tile: BM rows x BK columns, read along rows (8 consecutive floats per row);
    B tile: BK rows x BN columns, read along rows. Consecutive threads read
    consecutive addresses, so the loads coalesce."""
    m, k_total = a.shape
    n = b.shape[1]
    for p in range(A_LOADS):
        idx = p * THREADS_2D + tid
        r, kk = idx // BK, idx % BK
        inside = row0 + r < m and k0 + kk < k_total
        a_regs[p] = a[row0 + r, k0 + kk] if inside else float32(0.0)
    for p in range(B_LOADS):
        idx = p * THREADS_2D + tid
        kk, cc = idx // BN, idx % BN
        inside = k0 + kk < k_total and col0 + cc < n
        b_regs[p] = b[k0 + kk, col0 + cc] if inside else float32(0.0)


@cuda.jit(device=True, inline=True)
def stash_tiles(a_regs, b_regs, a_tile, b_tile, tid):
    """Store the fetched values into shared memory; the A tile is stored transposed,
    so that a thread's TM values of one column of A are contiguous."""
    for p in range(A_LOADS):
        idx = p * THREADS_2D + tid
        a_tile[idx % BK, idx // BK] = a_regs[p]
    for p in range(B_LOADS):
        idx = p * THREADS_2D + tid
        b_tile[idx // BN, idx % BN] = b_regs[p]


@cuda.jit(device=True, inline=True)
def outer_product(a_tile, b_tile, kk, acc, tx, ty):
    """acc += this thread's TM x TN part of (column kk of A) x (row kk of B).

    TM + TN shared loads (merged into four 128-bit loads) feed TM * TN = 64 fused
    multiply-adds on registers."""
    a_frag = cuda.local.array(TM, float32)
    b_frag = cuda.local.array(TN, float32)
    for i in range(TM):
        a_frag[i] = a_tile[kk, tile_row(ty, i)]
    for j in range(TN):
        b_frag[j] = b_tile[kk, tile_col(tx, j)]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] += a_frag[i] * b_frag[j]


@cuda.jit(device=True, inline=True)
def multiply_tiles(a_tile, b_tile, acc, tx, ty):
    """acc += this thread's part of a_tile.T @ b_tile: BK outer products.

    Two per iteration, so the loop's own counting and branching is paid once per
    128 multiply-adds instead of once per 64."""
    for half in range(BK // 2):
        outer_product(a_tile, b_tile, 2 * half, acc, tx, ty)
        outer_product(a_tile, b_tile, 2 * half + 1, acc, tx, ty)


@cuda.jit(device=True, inline=True)
def write_tile(c, acc, row0, col0, tx, ty):
    for i in range(TM):
        row = row0 + tile_row(ty, i)
        for j in range(TN):
            col = col0 + tile_col(tx, j)
            if row < c.shape[0] and col < c.shape[1]:
                c[row, col] = acc[i, j]


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_thread_tile_2d_kernel(a, b, c):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(A_LOADS, float32)
    b_regs = cuda.local.array(B_LOADS, float32)
    # uint32: the compiler then knows these indices are not negative and drops the
    # negative-index wraparound that Numba adds to every signed array index.
    tx = uint32(cuda.threadIdx.x)
    ty = uint32(cuda.threadIdx.y)
    tid = ty * TX + tx
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    for k0 in range(0, a.shape[1], BK):
        fetch_tiles(a, b, a_regs, b_regs, row0, col0, k0, tid)
        stash_tiles(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        multiply_tiles(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    write_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_thread_tile_2d_prefetch_kernel(a, b, c):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(A_LOADS, float32)
    b_regs = cuda.local.array(B_LOADS, float32)
    tx = uint32(cuda.threadIdx.x)
    ty = uint32(cuda.threadIdx.y)
    tid = ty * TX + tx
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    k_total = a.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles(a, b, a_regs, b_regs, row0, col0, 0, tid)
    for k0 in range(0, k_total, BK):
        stash_tiles(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        if k0 + BK < k_total:
            # Issue the next tiles' global loads now; they complete while this tile
            # is multiplied, and are only waited for at the next stash.
            fetch_tiles(a, b, a_regs, b_regs, row0, col0, k0 + BK, tid)
        multiply_tiles(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    write_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_warp_tile_kernel(a, b, c):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(A_LOADS, float32)
    b_regs = cuda.local.array(B_LOADS, float32)
    tid = uint32(cuda.threadIdx.x)  # a 1D block: the warps' layout is ours to choose
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    k_total = a.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles(a, b, a_regs, b_regs, row0, col0, 0, tid)
    for k0 in range(0, k_total, BK):
        stash_tiles(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        if k0 + BK < k_total:
            fetch_tiles(a, b, a_regs, b_regs, row0, col0, k0 + BK, tid)
        multiply_tiles(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    write_tile(c, acc, row0, col0, tx, ty)


# ------------------------------------------------------------ host functions


def _operands(a, b, out):
    """Check a (m x k) and b (k x n) and return out, m x n (new if None)."""
    validate.array("a", a, dtypes=np.float32, ndim=2)
    validate.array("b", b, dtypes=np.float32, ndim=2)
    validate.same_space(a=a, b=b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a is {a.shape[0]} x {a.shape[1]} and b is {b.shape[0]} x "
                         f"{b.shape[1]}: a @ b needs as many columns in a as rows in b")
    validate.nonempty("a", a)
    validate.nonempty("b", b)
    return validate.output("out", out, a, shape=(a.shape[0], b.shape[1]))


def _grid(m, n, rows_per_block, cols_per_block):
    """(x, y) blocks covering an m x n result, x along columns."""
    blocks = (math.ceil(n / cols_per_block), math.ceil(m / rows_per_block))
    if blocks[1] > MAX_GRID_Y:
        raise ValueError(f"a has {m} rows: that needs {blocks[1]} blocks along y, and a "
                         f"grid has at most {MAX_GRID_Y}")
    return blocks


def matmul_naive(a, b, out=None):
    """c = a @ b, one thread per element of c, in 16 x 16 blocks."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_naive_kernel[_grid(m, n, 16, 16), (16, 16)](a, b, out)
    return out


def matmul_tiled(a, b, out=None):
    """c = a @ b with the popular unbounded tiled kernel: a teaching exhibit.

    It is only right when k (a.shape[1]) is a multiple of TILE: otherwise it
    silently drops the last k % TILE terms of every sum. Shapes for which the
    kernel would read outside a or b (m or n not a multiple of TILE) are refused."""
    out = _operands(a, b, out)
    m, n = out.shape
    if m % TILE or n % TILE:
        raise ValueError(f"matmul_tiled reads rows and columns past the edge of a and b "
                         f"unless m and n are multiples of {TILE}; got m={m}, n={n}. "
                         "Use matmul_tiled_bounded, which is right for every shape")
    matmul_tiled_kernel[_grid(m, n, TILE, TILE), (TILE, TILE)](a, b, out)
    return out


def matmul_tiled_bounded(a, b, out=None):
    """c = a @ b with TILE x TILE shared-memory tiles, zero-padded at the edges."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_tiled_bounded_kernel[_grid(m, n, TILE, TILE), (TILE, TILE)](a, b, out)
    return out


def matmul_thread_tile_1d(a, b, out=None):
    """c = a @ b, 64 x 64 block tiles, 8 elements of c per thread (512 threads)."""
    out = _operands(a, b, out)
    m, n = out.shape
    blocks = _grid(m, n, T1_BM, T1_BN)
    matmul_thread_tile_1d_kernel[blocks, (T1_BN, T1_BM // T1_TM)](a, b, out)
    return out


def matmul_thread_tile_2d(a, b, out=None):
    """c = a @ b, 128 x 128 block tiles, 8 x 8 elements of c per thread (256 threads)."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_thread_tile_2d_kernel[_grid(m, n, BM, BN), (TX, TY)](a, b, out)
    return out


def matmul_thread_tile_2d_prefetch(a, b, out=None):
    """matmul_thread_tile_2d, fetching the next tiles while computing the current ones."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_thread_tile_2d_prefetch_kernel[_grid(m, n, BM, BN), (TX, TY)](a, b, out)
    return out


def matmul_warp_tile(a, b, out=None):
    """matmul_thread_tile_2d_prefetch with each warp's threads on an 8 x 4 patch."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_warp_tile_kernel[_grid(m, n, BM, BN), THREADS_2D](a, b, out)
    return out


VERSIONS = {
    "matmul_naive": matmul_naive,
    "matmul_tiled": matmul_tiled,
    "matmul_tiled_bounded": matmul_tiled_bounded,
    "matmul_thread_tile_1d": matmul_thread_tile_1d,
    "matmul_thread_tile_2d": matmul_thread_tile_2d,
    "matmul_thread_tile_2d_prefetch": matmul_thread_tile_2d_prefetch,
    "matmul_warp_tile": matmul_warp_tile,
}
