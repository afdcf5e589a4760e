"""Matrix multiplication with 8 x 16 results per thread: a step past
matmul_narrow_tiles (kernels.matmul_narrow).

    matmul_wide_thread_tiles  where matmul_narrow_tiles runs matmul_pipelined_fragments
                              (the 128 x 128 tiles are at least as many as the SMs),
                              its k-step on block tiles twice as wide, BM x WBN =
                              128 x 256, each computed by 256 threads of TM x WTN = 8 x 16
                              results, compiled for one block per SM; elsewhere (small
                              matrices) matmul_narrow_tiles itself

Why: on an H100 a float32 SGEMM is limited by issuing instructions. Each SM's
schedulers can issue one instruction per cycle each, and the float32 lanes need a
multiply-add in every one of those slots; every other instruction takes one. With 8 x 8
results a thread's k-step is 512 multiply-adds and about 67 other instructions (shared
loads of the fragments, the tile's global loads and shared stores, address arithmetic,
the barrier, the loop): 88% multiply-adds. With 8 x 16 it is 1024 multiply-adds and
about 83 others, 92 to 93%: the A fragment (8 values) now serves 16 columns, and the
tile's loads, stores, barrier and loop serve twice the multiply-adds. Each thread holds
128 sums (cuBLAS's kernel for these sizes holds 128 too) and fragments twice as wide:
246 registers for sm_90 and no spills, so only one block of 256 threads fits on an SM.

The thread layout is matmul's (warp_position, 16 x 16 thread positions), so tile_row
and tile_col place the results: tile_col(tx, j) for j = 0 .. 15 covers 256 columns in
groups of 4 consecutive ones, 64 apart.

At n = 1000 (a 132-SM H100) the wide tiles are 32, and splitting their sum over k to
fill the SMs was slower than the narrow tiles (book/matmul.md), hence the hand-over.
"""

from numba import cuda, float32, uint32

from kernels import matmul_narrow as mn
from kernels.float4 import WIDE, load_float4_at
from kernels.gridstride import sm_count
from kernels.matmul import (A_TILE_COLS, BK, BM, BN, THREADS_2D, TM, TN, TX, VECTOR_ALIGN,
                            _grid, _operands, tile_col, tile_row, warp_position)
from kernels.matmul_fast import ONE_BLOCK_PER_SM, _shares, rows_aligned, zero_kernel
from kernels.matmul_tuned import offsets

WBN, WTN = 2 * BN, 2 * TN  # columns of c per block (256) and per thread (16)
NTHREADS = THREADS_2D  # 256: 8 warps, one block per SM
B_QUADS = WBN // WIDE  # 128-bit groups in a row of the B tile: 64
B_LOADS_WIDE = BK * WBN // (WIDE * NTHREADS)  # 128-bit loads per thread of a B tile
B_REGS = B_LOADS_WIDE * WIDE  # the floats of a B tile each thread fetches
B_ROWS = NTHREADS // B_QUADS  # rows of the B tile that one such load covers, all threads
# each thread fetches 4 consecutive floats of one row of the A tile (as in matmul_tuned)
# and B_LOADS_WIDE groups of 4 of the B tile, B_ROWS rows apart; tile_col's layout spans
# the wide tile with the same TX thread positions along a row
assert BM * BK == WIDE * NTHREADS and B_LOADS_WIDE == 2 and B_ROWS == 4 and BK == 8
assert WBN // WTN == TX and NTHREADS == (WBN // WTN) * (BM // TM)

# -------------------------------------------------------------------- kernels


@cuda.jit(device=True, inline=True)
def wide_offsets(a, b, row0, col0, k_begin, tid):
    """(a_off, b_off): the element offsets, from a[0, 0] and b[0, 0], of the first 4
    floats this thread fetches of the tiles at k_begin: of a, as matmul_tuned.offsets,
    and of row k_begin + tid // 64 of b, column col0 + tid % 64 * 4 on (its second
    group is B_ROWS rows further). Columns past the edge of b are clamped to the last."""
    a_off, _ = offsets(a, b, row0, col0, k_begin, tid)
    b_col = min(col0 + tid % B_QUADS * WIDE, max(b.shape[1] - WIDE, 0))
    return a_off, (k_begin + tid // B_QUADS) * b.shape[1] + b_col


@cuda.jit(device=True, inline=True)
def fetch_wide_tiles_until(a, b, a_regs, b_regs, row0, col0, k0, k_end, tid):
    """The values the 128-bit loads fetch, one by one, zero outside a and b and from
    k_end on: for edge tiles, and rows not on 16-byte boundaries."""
    m = a.shape[0]
    n = b.shape[1]
    row, k = row0 + tid // 2, k0 + tid % 2 * WIDE
    for j in range(WIDE):
        a_regs[j] = a[row, k + j] if row < m and k + j < k_end else float32(0.0)
    col = col0 + tid % B_QUADS * WIDE
    for p in range(B_LOADS_WIDE):
        k = k0 + p * B_ROWS + tid // B_QUADS
        for j in range(WIDE):
            inside = k < k_end and col + j < n
            b_regs[p * WIDE + j] = b[k, col + j] if inside else float32(0.0)


@cuda.jit(device=True, inline=True)
def fetch_wide_tiles_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k, k_end, fast,
                        tid):
    """The tiles at k into registers: with one 128-bit load from a and two from b at
    the offsets where `fast` (whole tiles, rows on 16-byte boundaries), one by one
    (fetch_wide_tiles_until) otherwise, none from k_end on."""
    if fast:
        a_regs[0], a_regs[1], a_regs[2], a_regs[3] = load_float4_at(a, a_off)
        b_regs[0], b_regs[1], b_regs[2], b_regs[3] = load_float4_at(b, b_off)
        b_regs[4], b_regs[5], b_regs[6], b_regs[7] = load_float4_at(
            b, b_off + B_ROWS * b.shape[1])
    elif k < k_end:
        fetch_wide_tiles_until(a, b, a_regs, b_regs, row0, col0, k, k_end, tid)


@cuda.jit(device=True, inline=True)
def stash_wide_tiles(a_regs, b_regs, a_tile, b_tile, tid):
    """The fetched values into shared memory: A transposed (a warp's stores land in
    32 different banks), B as 128-bit stores."""
    row, k = tid // 2, tid % 2 * WIDE
    for j in range(WIDE):
        a_tile[k + j, row] = a_regs[j]
    col = tid % B_QUADS * WIDE
    for p in range(B_LOADS_WIDE):
        k = p * B_ROWS + tid // B_QUADS
        for j in range(WIDE):
            b_tile[k, col + j] = b_regs[p * WIDE + j]


@cuda.jit(device=True, inline=True)
def load_wide_fragments(a_tile, b_tile, kk, a_frag, b_frag, tx, ty):
    """This thread's TM values of column kk of A and WTN of row kk of B, into
    registers: 2 and 4 128-bit shared loads."""
    for i in range(TM):
        a_frag[i] = a_tile[kk, tile_row(ty, i)]
    for j in range(WTN):
        b_frag[j] = b_tile[kk, tile_col(tx, j)]


@cuda.jit(device=True, inline=True)
def multiply_wide_fragments(a_frag, b_frag, acc):
    """acc += a_frag x b_frag: 128 multiply-adds on registers."""
    for i in range(TM):
        for j in range(WTN):
            acc[i, j] += a_frag[i] * b_frag[j]


@cuda.jit(device=True, inline=True)
def wide_products(a_now, b_now, f0_a, f0_b, f1_a, f1_b, acc, tx, ty):
    """The outer products of columns 0 to 6 (column 0's fragments already in f0),
    each one's multiply-adds running while the next one's fragments load; ends with
    column 7's fragments in f1 (as matmul_tuned.multiply_loading_next)."""
    load_wide_fragments(a_now, b_now, 1, f1_a, f1_b, tx, ty)
    multiply_wide_fragments(f0_a, f0_b, acc)
    load_wide_fragments(a_now, b_now, 2, f0_a, f0_b, tx, ty)
    multiply_wide_fragments(f1_a, f1_b, acc)
    load_wide_fragments(a_now, b_now, 3, f1_a, f1_b, tx, ty)
    multiply_wide_fragments(f0_a, f0_b, acc)
    load_wide_fragments(a_now, b_now, 4, f0_a, f0_b, tx, ty)
    multiply_wide_fragments(f1_a, f1_b, acc)
    load_wide_fragments(a_now, b_now, 5, f1_a, f1_b, tx, ty)
    multiply_wide_fragments(f0_a, f0_b, acc)
    load_wide_fragments(a_now, b_now, 6, f0_a, f0_b, tx, ty)
    multiply_wide_fragments(f1_a, f1_b, acc)
    load_wide_fragments(a_now, b_now, 7, f1_a, f1_b, tx, ty)
    multiply_wide_fragments(f0_a, f0_b, acc)


@cuda.jit(device=True, inline=True)
def wide_step(a, b, a_regs, b_regs, a_now, b_now, a_next, b_next, f0_a, f0_b, f1_a, f1_b,
              acc, a_off, b_off, row0, col0, k, k_end, aligned, tid, tx, ty):
    """matmul_tuned.pipelined_step on wide tiles: the k-step at k on (a_now, b_now),
    the registers stored into (a_next, b_next) and the tiles at k + 2 BK fetched
    before the one barrier, the next tiles' first fragments loaded after it, while
    the last outer product runs."""
    wide_products(a_now, b_now, f0_a, f0_b, f1_a, f1_b, acc, tx, ty)
    if k + BK < k_end:  # the same for every thread of the block
        stash_wide_tiles(a_regs, b_regs, a_next, b_next, tid)
    fetch_wide_tiles_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k + 2 * BK, k_end,
                        aligned and k + 3 * BK <= k_end, tid)
    cuda.syncthreads()  # (a_next, b_next) complete; (a_now, b_now) read by everyone
    load_wide_fragments(a_next, b_next, 0, f0_a, f0_b, tx, ty)
    multiply_wide_fragments(f1_a, f1_b, acc)


@cuda.jit(device=True, inline=True)
def put_wide_tile(c, acc, row0, col0, tx, ty):
    """This thread's results into c: stored, or added atomically where other blocks
    add their shares of the sum over k to the same tile (split-k)."""
    split = cuda.gridDim.z > 1
    for i in range(TM):
        row = row0 + tile_row(ty, i)
        for j in range(WTN):
            col = col0 + tile_col(tx, j)
            if row < c.shape[0] and col < c.shape[1]:
                if split:
                    cuda.atomic.add(c, (row, col), acc[i, j])
                else:
                    c[row, col] = acc[i, j]


# one block per SM: the compiler may give each thread up to 255 registers; two blocks
# would allow 128, fewer than the 128 sums and their 48 fragment values need
@cuda.jit(**ONE_BLOCK_PER_SM)
def matmul_wide_thread_tiles_kernel(a, b, c, k_chunk, aligned):
    a_tile0 = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile0 = cuda.shared.array((BK, WBN), float32, alignment=VECTOR_ALIGN)
    a_tile1 = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile1 = cuda.shared.array((BK, WBN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, WTN), float32)
    a_regs = cuda.local.array(WIDE, float32)
    b_regs = cuda.local.array(B_REGS, float32)
    f0_a = cuda.local.array(TM, float32)
    f0_b = cuda.local.array(WTN, float32)
    f1_a = cuda.local.array(TM, float32)
    f1_b = cuda.local.array(WTN, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * WBN
    k_begin = uint32(cuda.blockIdx.z) * k_chunk
    k_end = min(k_begin + k_chunk, a.shape[1])
    a_off, b_off = wide_offsets(a, b, row0, col0, k_begin, tid)
    b_step = BK * b.shape[1]
    for i in range(TM):
        for j in range(WTN):
            acc[i, j] = float32(0.0)
    fetch_wide_tiles_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    stash_wide_tiles(a_regs, b_regs, a_tile0, b_tile0, tid)
    a_off += BK
    b_off += b_step
    fetch_wide_tiles_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k_begin + BK, k_end,
                        aligned and k_begin + 2 * BK <= k_end, tid)
    cuda.syncthreads()
    load_wide_fragments(a_tile0, b_tile0, 0, f0_a, f0_b, tx, ty)
    # two k-steps per trip, one from each buffer; at its start a_off and b_off are
    # the offsets of the tiles at k0 + BK
    for k0 in range(k_begin, k_end, 2 * BK):
        wide_step(a, b, a_regs, b_regs, a_tile0, b_tile0, a_tile1, b_tile1, f0_a, f0_b, f1_a,
                  f1_b, acc, a_off + BK, b_off + b_step, row0, col0, k0, k_end, aligned, tid,
                  tx, ty)
        if k0 + BK < k_end:
            wide_step(a, b, a_regs, b_regs, a_tile1, b_tile1, a_tile0, b_tile0, f0_a, f0_b,
                      f1_a, f1_b, acc, a_off + 2 * BK, b_off + 2 * b_step, row0, col0,
                      k0 + BK, k_end, aligned, tid, tx, ty)
        a_off += 2 * BK
        b_off += 2 * b_step
    put_wide_tile(c, acc, row0, col0, tx, ty)


# ------------------------------------------------------------ host functions


def launch_wide(a, b, out, splits):
    """The wide tiles' launch on (a, b, out): unsplit unless `splits` says otherwise
    (they run where the 128 x 128 tiles fill the SMs, so the wide ones fill at least
    half), split-k with a zeroing kernel first where it is above 1."""
    m, n = out.shape
    splits, k_chunk = _shares(m, n, a.shape[1], 1 if splits is None else splits)
    blocks = _grid(m, n, BM, WBN)
    if splits > 1:
        zero_kernel[_grid(m, n, 16, 16), (16, 16)](out)
    matmul_wide_thread_tiles_kernel[(*blocks, splits), NTHREADS](
        a, b, out, k_chunk, rows_aligned(a) and rows_aligned(b))
    return out


def matmul_wide_thread_tiles(a, b, out=None, *, splits=None):
    """matmul_narrow_tiles; where it runs matmul_pipelined_fragments (enough 128 x 128
    tiles for the SMs), 128 x 256 tiles of 256 threads with 8 x 16 results each."""
    out = _operands(a, b, out)
    m, n = out.shape
    if mn.few_tiles(m, n, sm_count()):
        return mn.matmul_narrow_tiles(a, b, out, splits=splits)
    return launch_wide(a, b, out, splits)


def default_splits(version, m, n, k, sms):
    """How many blocks share each tile's sum over k in VERSIONS[version] by default."""
    if mn.few_tiles(m, n, sms):
        return mn.default_splits("matmul_narrow_tiles", m, n, k, sms)
    return 1


VERSIONS = {"matmul_wide_thread_tiles": matmul_wide_thread_tiles}
