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
"""

import math

import numpy as np
from numba import cuda, float32, uint32

from kernels import validate
from kernels.gridstride import sm_count
from kernels.matmul import (A_LOADS, A_TILE_COLS, B_LOADS, BK, BM, BN, TM, TN, THREADS_2D,
                            TWO_BLOCKS_PER_SM, VECTOR_ALIGN, _grid, _operands, fetch_tiles,
                            outer_product, stash_tiles, tile_col, tile_row, warp_position,
                            write_tile)

assert BK == 8, "multiply_tiles_unrolled writes out exactly BK = 8 outer products"
SPLIT_MIN_K = 4 * BK  # a split-k block sums over at least this many k

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


def split_k(m, n, k, sms):
    """How many blocks share each tile's sum over k: enough for about two blocks per
    SM (two fit at once), while each still sums over SPLIT_MIN_K or more."""
    tiles = math.ceil(m / BM) * math.ceil(n / BN)
    return max(1, min(2 * sms // tiles, k // SPLIT_MIN_K))


def matmul_split_k(a, b, out=None, *, splits=None):
    """matmul_unchecked_interior, splitting the sum over k between `splits` blocks per
    tile (by default split_k()) when the tiles alone would leave SMs idle."""
    out = _operands(a, b, out)
    m, n = out.shape
    k = a.shape[1]
    splits = split_k(m, n, k, sm_count()) if splits is None else splits
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"splits must be a positive int, got {splits!r}")
    k_chunk = math.ceil(math.ceil(k / splits) / BK) * BK  # whole k-steps per split
    splits = math.ceil(k / k_chunk)  # none left empty
    blocks = _grid(m, n, BM, BN)
    if splits > 1:
        zero_kernel[_grid(m, n, 16, 16), (16, 16)](out)
    matmul_split_k_kernel[(*blocks, splits), THREADS_2D](a, b, out, k_chunk)
    return out


VERSIONS = {
    "matmul_unrolled_k": matmul_unrolled_k,
    "matmul_unchecked_interior": matmul_unchecked_interior,
    "matmul_split_k": matmul_split_k,
}
