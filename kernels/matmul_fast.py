"""Matrix multiplication, further steps past matmul_warp_tile (kernels.matmul).

Versions (VERSIONS maps each name to its host function), each adding one thing to
the one before it; all use matmul's 128 x 128 block tiles and 8 x 8 results per
thread, in the warp-shaped layout:
    matmul_unrolled_k          the eight outer products of a k-step written out, so
                               the compiler can load the next fragments from shared
                               memory while it multiplies the current ones
    matmul_unchecked_interior  blocks whose tiles lie wholly inside a and b load them
                               without bounds checks (edge blocks keep them)
    matmul_split_k             when the tiles of c are too few to fill every SM, the
                               sum over k is split between blocks, whose partial
                               tiles are added into c with atomics
    matmul_wide_loads          each thread fetches its share of a tile with one
                               128-bit load from a and one from b, where rows start
                               on 16-byte boundaries (four 32-bit loads each before)
    matmul_clamped_edges       edge blocks load 128 bits at a time too, reading the last
                               row of a or column of b where a tile runs past it
    matmul_one_block_per_sm    where the grid fits one block per SM (small matrices),
                               the same kernel compiled for one block per SM, so that
                               the compiler may give each thread more registers
"""

import math

import numpy as np
from numba import cuda, float32, uint32

from kernels import SIMULATOR
from kernels.float4 import WIDE, load_float4
from kernels.gridstride import sm_count
from kernels.matmul import (A_LOADS, A_TILE_COLS, B_LOADS, BK, BM, BN, TM, TN, THREADS_2D,
                            TWO_BLOCKS_PER_SM, VECTOR_ALIGN, _grid, _operands, fetch_tiles,
                            outer_product, stash_tiles, tile_col, tile_row, warp_position,
                            write_tile)

assert BK == 8, "multiply_tiles_unrolled writes out exactly BK = 8 outer products"
SPLIT_MIN_K = 4 * BK  # a split-k block sums over at least this many k
# matmul_wide_loads: each thread fetches 4 consecutive floats of a row of the A tile
# and 4 of a row of the B tile, so that 256 threads fetch 128 x 8 and 8 x 128 values
assert A_LOADS == B_LOADS == WIDE, "one 128-bit load per thread from a and from b"
ONE_BLOCK_PER_SM = {} if SIMULATOR else {"launch_bounds": (THREADS_2D, 1)}

# -------------------------------------------------------------------- kernels


@cuda.jit(device=True, inline=True)
def multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty):
    """acc += this thread's part of a_tile.T @ b_tile, the BK = 8 outer products
    written out: one straight run of 512 multiply-adds and 32 shared loads, which the
    compiler may interleave (a loop would wait for each step's loads)."""
    outer_product(a_tile, b_tile, 0, acc, tx, ty)
    outer_product(a_tile, b_tile, 1, acc, tx, ty)
    outer_product(a_tile, b_tile, 2, acc, tx, ty)
    outer_product(a_tile, b_tile, 3, acc, tx, ty)
    outer_product(a_tile, b_tile, 4, acc, tx, ty)
    outer_product(a_tile, b_tile, 5, acc, tx, ty)
    outer_product(a_tile, b_tile, 6, acc, tx, ty)
    outer_product(a_tile, b_tile, 7, acc, tx, ty)


@cuda.jit(device=True, inline=True)
def fetch_tiles_unchecked(a, b, a_regs, b_regs, row0, col0, k0, tid):
    """fetch_tiles for tiles known to lie inside a and b: no compare, no select."""
    for p in range(A_LOADS):
        idx = p * THREADS_2D + tid
        a_regs[p] = a[row0 + idx // BK, k0 + idx % BK]
    for p in range(B_LOADS):
        idx = p * THREADS_2D + tid
        b_regs[p] = b[k0 + idx // BN, col0 + idx % BN]


@cuda.jit(device=True, inline=True)
def fetch_tiles_until(a, b, a_regs, b_regs, row0, col0, k0, k_end, tid):
    """fetch_tiles with the sum over k ending at k_end (a split's end), zero beyond."""
    m = a.shape[0]
    n = b.shape[1]
    for p in range(A_LOADS):
        idx = p * THREADS_2D + tid
        r, kk = idx // BK, idx % BK
        inside = row0 + r < m and k0 + kk < k_end
        a_regs[p] = a[row0 + r, k0 + kk] if inside else float32(0.0)
    for p in range(B_LOADS):
        idx = p * THREADS_2D + tid
        kk, cc = idx // BN, idx % BN
        inside = k0 + kk < k_end and col0 + cc < n
        b_regs[p] = b[k0 + kk, col0 + cc] if inside else float32(0.0)


@cuda.jit(device=True, inline=True)
def add_tile(c, acc, row0, col0, tx, ty):
    """write_tile for a partial sum: atomic adds, as other blocks add to the same tile."""
    for i in range(TM):
        row = row0 + tile_row(ty, i)
        for j in range(TN):
            col = col0 + tile_col(tx, j)
            if row < c.shape[0] and col < c.shape[1]:
                cuda.atomic.add(c, (row, col), acc[i, j])


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_unrolled_k_kernel(a, b, c):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(A_LOADS, float32)
    b_regs = cuda.local.array(B_LOADS, float32)
    tid = uint32(cuda.threadIdx.x)
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
        multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    write_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_unchecked_interior_kernel(a, b, c):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(A_LOADS, float32)
    b_regs = cuda.local.array(B_LOADS, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    k_total = a.shape[1]
    # the same for every thread of the block, so the branch below never diverges
    interior = row0 + BM <= a.shape[0] and col0 + BN <= b.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles(a, b, a_regs, b_regs, row0, col0, 0, tid)
    for k0 in range(0, k_total, BK):
        stash_tiles(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        k_next = k0 + BK
        if interior and k_next + BK <= k_total:
            fetch_tiles_unchecked(a, b, a_regs, b_regs, row0, col0, k_next, tid)
        elif k_next < k_total:
            fetch_tiles(a, b, a_regs, b_regs, row0, col0, k_next, tid)
        multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    write_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_split_k_kernel(a, b, c, k_chunk):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(A_LOADS, float32)
    b_regs = cuda.local.array(B_LOADS, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    # blockIdx.z picks this block's share of the sum over k: k_begin <= k < k_end
    k_begin = uint32(cuda.blockIdx.z) * k_chunk
    k_end = min(k_begin + k_chunk, a.shape[1])
    interior = row0 + BM <= a.shape[0] and col0 + BN <= b.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    for k0 in range(k_begin, k_end, BK):
        stash_tiles(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        k_next = k0 + BK
        if interior and k_next + BK <= k_end:
            fetch_tiles_unchecked(a, b, a_regs, b_regs, row0, col0, k_next, tid)
        elif k_next < k_end:
            fetch_tiles_until(a, b, a_regs, b_regs, row0, col0, k_next, k_end, tid)
        multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    if cuda.gridDim.z == 1:
        write_tile(c, acc, row0, col0, tx, ty)
    else:
        add_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(device=True, inline=True)
def fetch_tiles_wide(a, b, a_regs, b_regs, a_row, b_col, k0, tid):
    """fetch_tiles_unchecked with 128-bit loads: thread tid fetches 4 consecutive
    floats of row tid // 2 of the A tile (row a_row of a) and 4 of row tid // 32 of
    the B tile (columns b_col to b_col + 3 of b)."""
    a_regs[0], a_regs[1], a_regs[2], a_regs[3] = load_float4(a, a_row, k0 + tid % 2 * WIDE)
    b_regs[0], b_regs[1], b_regs[2], b_regs[3] = load_float4(b, k0 + tid // 32, b_col)


@cuda.jit(device=True, inline=True)
def fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k0, k_end, tid):
    """The values fetch_tiles_wide fetches, one by one, zero outside a and b and
    beyond k_end: for edge tiles, and rows not on 16-byte boundaries."""
    m = a.shape[0]
    n = b.shape[1]
    row, k = row0 + tid // 2, k0 + tid % 2 * WIDE
    for j in range(WIDE):
        a_regs[j] = a[row, k + j] if row < m and k + j < k_end else float32(0.0)
    k, col = k0 + tid // 32, col0 + tid % 32 * WIDE
    for j in range(WIDE):
        b_regs[j] = b[k, col + j] if k < k_end and col + j < n else float32(0.0)


@cuda.jit(device=True, inline=True)
def stash_tiles_wide(a_regs, b_regs, a_tile, b_tile, tid):
    """stash_tiles for the values fetch_tiles_wide fetched: A transposed (a warp's
    stores land in 32 different banks), B as one 128-bit store."""
    row, k = tid // 2, tid % 2 * WIDE
    for j in range(WIDE):
        a_tile[k + j, row] = a_regs[j]
    k, col = tid // 32, tid % 32 * WIDE
    for j in range(WIDE):
        b_tile[k, col + j] = b_regs[j]


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_wide_loads_kernel(a, b, c, k_chunk, aligned):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(WIDE, float32)
    b_regs = cuda.local.array(WIDE, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    k_begin = uint32(cuda.blockIdx.z) * k_chunk
    k_end = min(k_begin + k_chunk, a.shape[1])
    # aligned: the host checked that every row of a and b starts on a 16-byte boundary
    interior = aligned and row0 + BM <= a.shape[0] and col0 + BN <= b.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    for k0 in range(k_begin, k_end, BK):
        stash_tiles_wide(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        k_next = k0 + BK
        if interior and k_next + BK <= k_end:
            fetch_tiles_wide(a, b, a_regs, b_regs, row0 + tid // 2, col0 + tid % 32 * WIDE,
                             k_next, tid)
        elif k_next < k_end:
            fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k_next, k_end, tid)
        multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    if cuda.gridDim.z == 1:
        write_tile(c, acc, row0, col0, tx, ty)
    else:
        add_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_clamped_edges_kernel(a, b, c, k_chunk, aligned):
    a_tile = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(WIDE, float32)
    b_regs = cuda.local.array(WIDE, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    k_begin = uint32(cuda.blockIdx.z) * k_chunk
    k_end = min(k_begin + k_chunk, a.shape[1])
    # Past the last row of a or the last column of b, read the last one instead: those
    # values only reach elements of c past its edges, which are never written.
    a_row = min(row0 + tid // 2, a.shape[0] - 1)
    b_col = min(col0 + tid % 32 * WIDE, b.shape[1] - WIDE)
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    for k0 in range(k_begin, k_end, BK):
        stash_tiles_wide(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        k_next = k0 + BK
        if aligned and k_next + BK <= k_end:
            fetch_tiles_wide(a, b, a_regs, b_regs, a_row, b_col, k_next, tid)
        elif k_next < k_end:
            fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k_next, k_end, tid)
        multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    if cuda.gridDim.z == 1:
        write_tile(c, acc, row0, col0, tx, ty)
    else:
        add_tile(c, acc, row0, col0, tx, ty)


def compiled_for_one_block_per_sm(kernel):
    """kernel compiled with launch bounds of one block per SM: the compiler may then
    give each thread up to 255 registers, and only one block fits on an SM."""
    return cuda.jit(**ONE_BLOCK_PER_SM)(kernel.py_func)


matmul_one_block_per_sm_kernel = compiled_for_one_block_per_sm(matmul_clamped_edges_kernel)


@cuda.jit
def zero_kernel(c):
    # split-k adds its partial tiles into c: it must start at zero
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = float32(0.0)


# ------------------------------------------------------------ host functions


def matmul_unrolled_k(a, b, out=None):
    """matmul_warp_tile with each k-step's eight outer products written out."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_unrolled_k_kernel[_grid(m, n, BM, BN), THREADS_2D](a, b, out)
    return out


def matmul_unchecked_interior(a, b, out=None):
    """matmul_unrolled_k, loading interior tiles without bounds checks."""
    out = _operands(a, b, out)
    m, n = out.shape
    matmul_unchecked_interior_kernel[_grid(m, n, BM, BN), THREADS_2D](a, b, out)
    return out


def split_k(m, n, k, sms, blocks_per_sm=2):
    """How many blocks share each tile's sum over k: enough for about blocks_per_sm
    blocks per SM (as many as fit at once), while each still sums over SPLIT_MIN_K or
    more values of k."""
    tiles = math.ceil(m / BM) * math.ceil(n / BN)
    return max(1, min(blocks_per_sm * sms // tiles, k // SPLIT_MIN_K))


def _shares(m, n, k, splits, blocks_per_sm=2):
    """(splits, k_chunk): how many blocks share each tile's sum over k (by default
    split_k()), and how many values of k each sums over, a whole number of k-steps."""
    splits = split_k(m, n, k, sm_count(), blocks_per_sm) if splits is None else splits
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"splits must be a positive int, got {splits!r}")
    k_chunk = math.ceil(math.ceil(k / splits) / BK) * BK  # whole k-steps per split
    return math.ceil(k / k_chunk), k_chunk  # none left empty


def rows_aligned(x):
    """True when every row of the C-contiguous 2D array x starts on a 16-byte
    boundary, so that 128-bit loads may read it. (A host array is copied into a new
    device allocation, which does; its own address is checked all the same, as the
    simulator runs on it.)"""
    interface = (getattr(x, "__cuda_array_interface__", None)
                 or getattr(x, "__array_interface__"))
    return x.shape[1] % WIDE == 0 and interface["data"][0] % (4 * WIDE) == 0


def matmul_split_k(a, b, out=None, *, splits=None):
    """matmul_unchecked_interior, splitting the sum over k between `splits` blocks per
    tile (by default split_k()) when the tiles alone would leave SMs idle."""
    out = _operands(a, b, out)
    m, n = out.shape
    splits, k_chunk = _shares(m, n, a.shape[1], splits)
    blocks = _grid(m, n, BM, BN)
    if splits > 1:
        zero_kernel[_grid(m, n, 16, 16), (16, 16)](out)
    matmul_split_k_kernel[(*blocks, splits), THREADS_2D](a, b, out, k_chunk)
    return out


def _launch_wide(kernel, a, b, out, splits, blocks_per_sm=2):
    """Launch a kernel of the form of matmul_wide_loads_kernel on (a, b, out)."""
    out = _operands(a, b, out)
    m, n = out.shape
    splits, k_chunk = _shares(m, n, a.shape[1], splits, blocks_per_sm)
    blocks = _grid(m, n, BM, BN)
    if splits > 1:
        zero_kernel[_grid(m, n, 16, 16), (16, 16)](out)
    aligned = rows_aligned(a) and rows_aligned(b)
    kernel[(*blocks, splits), THREADS_2D](a, b, out, k_chunk, aligned)
    return out


def matmul_wide_loads(a, b, out=None, *, splits=None):
    """matmul_split_k, fetching interior tiles with 128-bit loads where every row of
    a and b starts on a 16-byte boundary (k and n multiples of 4)."""
    return _launch_wide(matmul_wide_loads_kernel, a, b, out, splits)


def matmul_clamped_edges(a, b, out=None, *, splits=None):
    """matmul_wide_loads, edge blocks too: they read the last row of a or column of b
    where their tiles run past it."""
    return _launch_wide(matmul_clamped_edges_kernel, a, b, out, splits)


def fits_one_block_per_sm(m, n, k, sms):
    """True when the tiles of an m x n product, split over k for one block per SM,
    make a grid of at most one block per SM: small matrices."""
    tiles = math.ceil(m / BM) * math.ceil(n / BN)
    return tiles * split_k(m, n, k, sms, blocks_per_sm=1) <= sms


def matmul_one_block_per_sm(a, b, out=None, *, splits=None):
    """matmul_clamped_edges; where the grid fits one block per SM (small matrices),
    compiled for one block per SM, so that each thread may use more registers."""
    out = _operands(a, b, out)
    m, n = out.shape
    if fits_one_block_per_sm(m, n, a.shape[1], sm_count()):
        return _launch_wide(matmul_one_block_per_sm_kernel, a, b, out, splits, blocks_per_sm=1)
    return _launch_wide(matmul_clamped_edges_kernel, a, b, out, splits)


def default_splits(version, m, n, k, sms):
    """How many blocks share each tile's sum over k in VERSIONS[version] by default."""
    if version not in SPLITTING:
        return 1
    one = version == "matmul_one_block_per_sm" and fits_one_block_per_sm(m, n, k, sms)
    return split_k(m, n, k, sms, blocks_per_sm=1 if one else 2)


# the versions that split the sum over k where the tiles are too few
SPLITTING = ("matmul_split_k", "matmul_wide_loads", "matmul_clamped_edges",
             "matmul_one_block_per_sm")

VERSIONS = {
    "matmul_unrolled_k": matmul_unrolled_k,
    "matmul_unchecked_interior": matmul_unchecked_interior,
    "matmul_split_k": matmul_split_k,
    "matmul_wide_loads": matmul_wide_loads,
    "matmul_clamped_edges": matmul_clamped_edges,
    "matmul_one_block_per_sm": matmul_one_block_per_sm,
}
