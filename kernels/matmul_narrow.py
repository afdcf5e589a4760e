"""Matrix multiplication on block tiles of 4 warps: a step past
matmul_pipelined_fragments (kernels.matmul_tuned).

    matmul_narrow_tiles  where matmul_pipelined_fragments' 128 x 128 tiles are fewer
                         than the SMs (it splits the sum over k there), its k-step on
                         block tiles half as tall, NBM x NBN = 64 x 128, each computed
                         by 128 threads (4 warps) of 8 x 8 results: at n = 1000, 128
                         blocks for an H100's 132 SMs and no split (no zeroing kernel,
                         no atomic adds); elsewhere matmul_pipelined_fragments itself

The layout helpers of kernels.matmul (tile_row, tile_col, warp_position) are
written for 128 x 128 tiles of 256 threads; this module has its own, for NBM x NBN.

On an H100 (book/matmul.md) narrow tiles beat the split at n = 1000 when compiled for
one block per SM (161 registers), not when compiled for four (128 registers, 40 bytes
spilled); used at every size, they were slower at n = 2048 and 4096, hence the
hand-over.
"""

import math

import numpy as np
from numba import cuda, float32, uint32

from kernels import SIMULATOR, matmul_tuned as mt
from kernels.float4 import WIDE, load_float4_at
from kernels.gridstride import sm_count
from kernels.matmul import A_PAD, BK, BM, BN, TM, TN, VECTOR_ALIGN, _grid, _operands
from kernels.matmul_fast import SPLIT_MIN_K, rows_aligned, zero_kernel
from kernels.matmul_tuned import multiply_fragments

NBM, NBN = 64, 128  # rows and columns of c per block
NTX, NTY = NBN // TN, NBM // TM  # threads along a row and a column of the tile: 16 x 8
NTHREADS = NTX * NTY  # 128: 4 warps
WARPS_X = NTX // 8  # warps side by side along a row; each covers 8 x 4 thread positions
NA_COLS = NBM + A_PAD  # the transposed A tile's row: conflict-free stores, 16-byte rows
B_LOADS_WIDE = BK * NBN // (WIDE * NTHREADS)  # 128-bit loads per thread of a B tile
B_REGS = B_LOADS_WIDE * WIDE  # the floats of a B tile each thread fetches
B_ROWS = NTHREADS * WIDE // NBN  # rows of the B tile that one such load covers, all threads
# each thread fetches 4 consecutive floats of one row of the A tile, and B_LOADS_WIDE
# groups of 4 of the B tile, B_ROWS rows apart
assert NBM * BK == WIDE * NTHREADS and B_LOADS_WIDE == 2 and BK == 8
# at most 128 registers per thread: four blocks of 128 threads per SM
FOUR_BLOCKS_PER_SM = {} if SIMULATOR else {"launch_bounds": (NTHREADS, 4)}
ONE_BLOCK_PER_SM = {} if SIMULATOR else {"launch_bounds": (NTHREADS, 1)}

# -------------------------------------------------------------------- kernels


@cuda.jit(device=True, inline=True)
def narrow_position(tid):
    """(tx, ty) of thread tid (0..127): each warp covers an 8 x 4 patch of thread
    positions, as in matmul.warp_position, the 4 warps 2 x 2 patches."""
    warp, lane = tid // 32, tid % 32
    return (warp % WARPS_X) * 8 + lane % 8, (warp // WARPS_X) * 4 + lane // 8


@cuda.jit(device=True, inline=True)
def narrow_row(ty, i):
    """Row of the block tile holding a thread's i-th row of results (as tile_row)."""
    return (i // 4) * (4 * NTY) + ty * 4 + i % 4


@cuda.jit(device=True, inline=True)
def narrow_col(tx, j):
    """Column of the block tile holding a thread's j-th column of results."""
    return (j // 4) * (4 * NTX) + tx * 4 + j % 4


@cuda.jit(device=True, inline=True)
def narrow_offsets(a, b, row0, col0, k_begin, tid):
    """(a_off, b_off): the element offsets, from a[0, 0] and b[0, 0], of the first 4
    floats this thread fetches of the tiles at k_begin: of row row0 + tid // 2 of a,
    k_begin + tid % 2 * 4 on, and of row k_begin + tid // 32 of b, column
    col0 + tid % 32 * 4 on (its second group of b is B_ROWS rows further). Rows and
    columns past the edges of a and b are clamped to the last ones."""
    a_row = min(row0 + tid // 2, a.shape[0] - 1)
    b_col = min(col0 + tid % (NBN // WIDE) * WIDE, max(b.shape[1] - WIDE, 0))
    return (a_row * a.shape[1] + k_begin + tid % 2 * WIDE,
            (k_begin + tid // (NBN // WIDE)) * b.shape[1] + b_col)


@cuda.jit(device=True, inline=True)
def fetch_narrow_until(a, b, a_regs, b_regs, row0, col0, k0, k_end, tid):
    """The values the 128-bit loads fetch, one by one, zero outside a and b and from
    k_end on: for edge tiles, and rows not on 16-byte boundaries."""
    m = a.shape[0]
    n = b.shape[1]
    row, k = row0 + tid // 2, k0 + tid % 2 * WIDE
    for j in range(WIDE):
        a_regs[j] = a[row, k + j] if row < m and k + j < k_end else float32(0.0)
    col = col0 + tid % (NBN // WIDE) * WIDE
    for p in range(B_LOADS_WIDE):
        k = k0 + p * B_ROWS + tid // (NBN // WIDE)
        for j in range(WIDE):
            inside = k < k_end and col + j < n
            b_regs[p * WIDE + j] = b[k, col + j] if inside else float32(0.0)


@cuda.jit(device=True, inline=True)
def fetch_narrow_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k, k_end, fast, tid):
    """The tiles at k into registers: with one 128-bit load from a and two from b at
    the offsets where `fast` (whole tiles, rows on 16-byte boundaries), one by one
    (fetch_narrow_until) otherwise, none from k_end on."""
    if fast:
        a_regs[0], a_regs[1], a_regs[2], a_regs[3] = load_float4_at(a, a_off)
        b_regs[0], b_regs[1], b_regs[2], b_regs[3] = load_float4_at(b, b_off)
        b_regs[4], b_regs[5], b_regs[6], b_regs[7] = load_float4_at(
            b, b_off + B_ROWS * b.shape[1])
    elif k < k_end:
        fetch_narrow_until(a, b, a_regs, b_regs, row0, col0, k, k_end, tid)


@cuda.jit(device=True, inline=True)
def stash_narrow(a_regs, b_regs, a_tile, b_tile, tid):
    """The fetched values into shared memory: A transposed (a warp's stores land in
    32 different banks), B as 128-bit stores."""
    row, k = tid // 2, tid % 2 * WIDE
    for j in range(WIDE):
        a_tile[k + j, row] = a_regs[j]
    col = tid % (NBN // WIDE) * WIDE
    for p in range(B_LOADS_WIDE):
        k = p * B_ROWS + tid // (NBN // WIDE)
        for j in range(WIDE):
            b_tile[k, col + j] = b_regs[p * WIDE + j]


@cuda.jit(device=True, inline=True)
def load_narrow_fragments(a_tile, b_tile, kk, a_frag, b_frag, tx, ty):
    """This thread's TM values of column kk of A and TN of row kk of B, into registers."""
    for i in range(TM):
        a_frag[i] = a_tile[kk, narrow_row(ty, i)]
    for j in range(TN):
        b_frag[j] = b_tile[kk, narrow_col(tx, j)]


@cuda.jit(device=True, inline=True)
def narrow_products(a_now, b_now, f0_a, f0_b, f1_a, f1_b, acc, tx, ty):
    """The outer products of columns 0 to 6 (column 0's fragments already in f0),
    each one's multiply-adds running while the next one's fragments load; ends with
    column 7's fragments in f1 (as matmul_tuned.multiply_loading_next)."""
    load_narrow_fragments(a_now, b_now, 1, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)
    load_narrow_fragments(a_now, b_now, 2, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)
    load_narrow_fragments(a_now, b_now, 3, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)
    load_narrow_fragments(a_now, b_now, 4, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)
    load_narrow_fragments(a_now, b_now, 5, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)
    load_narrow_fragments(a_now, b_now, 6, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)
    load_narrow_fragments(a_now, b_now, 7, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)


@cuda.jit(device=True, inline=True)
def narrow_step(a, b, a_regs, b_regs, a_now, b_now, a_next, b_next, f0_a, f0_b, f1_a, f1_b,
                acc, a_off, b_off, row0, col0, k, k_end, aligned, tid, tx, ty):
    """matmul_tuned.pipelined_step on narrow tiles: the k-step at k on (a_now, b_now),
    the registers stored into (a_next, b_next) and the tiles at k + 2 BK fetched
    before the one barrier, the next tiles' first fragments loaded after it, while
    the last outer product runs."""
    narrow_products(a_now, b_now, f0_a, f0_b, f1_a, f1_b, acc, tx, ty)
    if k + BK < k_end:  # the same for every thread of the block
        stash_narrow(a_regs, b_regs, a_next, b_next, tid)
    fetch_narrow_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k + 2 * BK, k_end,
                    aligned and k + 3 * BK <= k_end, tid)
    cuda.syncthreads()  # (a_next, b_next) complete; (a_now, b_now) read by everyone
    load_narrow_fragments(a_next, b_next, 0, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)


@cuda.jit(device=True, inline=True)
def put_narrow_tile(c, acc, row0, col0, tx, ty):
    """This thread's results into c: stored, or added atomically where other blocks
    add their shares of the sum over k to the same tile (split-k)."""
    split = cuda.gridDim.z > 1
    for i in range(TM):
        row = row0 + narrow_row(ty, i)
        for j in range(TN):
            col = col0 + narrow_col(tx, j)
            if row < c.shape[0] and col < c.shape[1]:
                if split:
                    cuda.atomic.add(c, (row, col), acc[i, j])
                else:
                    c[row, col] = acc[i, j]


@cuda.jit(**FOUR_BLOCKS_PER_SM)
def matmul_narrow_tiles_kernel(a, b, c, k_chunk, aligned):
    a_tile0 = cuda.shared.array((BK, NA_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile0 = cuda.shared.array((BK, NBN), float32, alignment=VECTOR_ALIGN)
    a_tile1 = cuda.shared.array((BK, NA_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile1 = cuda.shared.array((BK, NBN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(WIDE, float32)
    b_regs = cuda.local.array(B_REGS, float32)
    f0_a = cuda.local.array(TM, float32)
    f0_b = cuda.local.array(TN, float32)
    f1_a = cuda.local.array(TM, float32)
    f1_b = cuda.local.array(TN, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = narrow_position(tid)
    row0 = uint32(cuda.blockIdx.y) * NBM
    col0 = uint32(cuda.blockIdx.x) * NBN
    k_begin = uint32(cuda.blockIdx.z) * k_chunk
    k_end = min(k_begin + k_chunk, a.shape[1])
    a_off, b_off = narrow_offsets(a, b, row0, col0, k_begin, tid)
    b_step = BK * b.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_narrow_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    stash_narrow(a_regs, b_regs, a_tile0, b_tile0, tid)
    a_off += BK
    b_off += b_step
    fetch_narrow_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k_begin + BK, k_end,
                    aligned and k_begin + 2 * BK <= k_end, tid)
    cuda.syncthreads()
    load_narrow_fragments(a_tile0, b_tile0, 0, f0_a, f0_b, tx, ty)
    # two k-steps per trip, one from each buffer; at its start a_off and b_off are
    # the offsets of the tiles at k0 + BK
    for k0 in range(k_begin, k_end, 2 * BK):
        narrow_step(a, b, a_regs, b_regs, a_tile0, b_tile0, a_tile1, b_tile1, f0_a, f0_b,
                    f1_a, f1_b, acc, a_off + BK, b_off + b_step, row0, col0, k0, k_end,
                    aligned, tid, tx, ty)
        if k0 + BK < k_end:
            narrow_step(a, b, a_regs, b_regs, a_tile1, b_tile1, a_tile0, b_tile0, f0_a, f0_b,
                        f1_a, f1_b, acc, a_off + 2 * BK, b_off + 2 * b_step, row0, col0,
                        k0 + BK, k_end, aligned, tid, tx, ty)
        a_off += 2 * BK
        b_off += 2 * b_step
    put_narrow_tile(c, acc, row0, col0, tx, ty)


# where the grid is at most one block per SM: the compiler may use up to 255 registers
matmul_narrow_tiles_one_block_kernel = cuda.jit(**ONE_BLOCK_PER_SM)(
    matmul_narrow_tiles_kernel.py_func)

# ------------------------------------------------------------ host functions


def narrow_splits(m, n, k, sms):
    """How many blocks share each narrow tile's sum over k: none unless the tiles
    are fewer than half the SMs, then enough for about one block per SM, each summing
    over SPLIT_MIN_K or more values of k."""
    tiles = math.ceil(m / NBM) * math.ceil(n / NBN)
    return max(1, min(sms // tiles, k // SPLIT_MIN_K))


def few_tiles(m, n, sms):
    """True when an m x n product has fewer 128 x 128 tiles than the GPU has SMs:
    there matmul_pipelined_fragments splits the sum over k, and narrow tiles are used."""
    return math.ceil(m / BM) * math.ceil(n / BN) < sms


def launch_narrow(a, b, out, splits):
    """The narrow tiles' launch on (a, b, out): split-k (a zeroing kernel first) where
    `splits` (by default narrow_splits) is above 1, compiled for one block per SM
    where the grid is at most one block per SM."""
    m, n = out.shape
    k = a.shape[1]
    splits = narrow_splits(m, n, k, sm_count()) if splits is None else splits
    if isinstance(splits, bool) or not isinstance(splits, (int, np.integer)) or splits < 1:
        raise ValueError(f"splits must be a positive int, got {splits!r}")
    k_chunk = math.ceil(math.ceil(k / splits) / BK) * BK  # whole k-steps per share
    splits = math.ceil(k / k_chunk)  # none left empty
    blocks = _grid(m, n, NBM, NBN)
    if splits > 1:
        zero_kernel[_grid(m, n, 16, 16), (16, 16)](out)
    one = blocks[0] * blocks[1] * splits <= sm_count()
    kernel = matmul_narrow_tiles_one_block_kernel if one else matmul_narrow_tiles_kernel
    kernel[(*blocks, splits), NTHREADS](a, b, out, k_chunk, rows_aligned(a) and rows_aligned(b))
    return out


def matmul_narrow_tiles(a, b, out=None, *, splits=None):
    """matmul_pipelined_fragments; where its 128 x 128 tiles are fewer than the SMs
    (it would split the sum over k), 64 x 128 tiles of 4 warps instead: at n = 1000,
    128 blocks for 132 SMs with no split."""
    out = _operands(a, b, out)
    m, n = out.shape
    if not few_tiles(m, n, sm_count()):
        return mt.matmul_pipelined_fragments(a, b, out, splits=splits)
    return launch_narrow(a, b, out, splits)


def default_splits(version, m, n, k, sms):
    """How many blocks share each tile's sum over k in VERSIONS[version] by default."""
    if few_tiles(m, n, sms):
        return narrow_splits(m, n, k, sms)
    return mt.default_splits("matmul_pipelined_fragments", m, n, k, sms)


VERSIONS = {"matmul_narrow_tiles": matmul_narrow_tiles}
