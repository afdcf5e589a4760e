"""Matrix multiplication, steps past matmul_one_block_per_sm (kernels.matmul_fast).

Versions (VERSIONS maps each name to its host function), each adding one thing to
the one before it; both keep 128 x 128 block tiles 8 deep in k, 8 x 8 results per
thread in the warp-shaped layout, 128-bit loads with clamped edges, split-k where
the tiles are too few, and one block per SM where the grid fits:
    matmul_flat_offsets         interior tiles are fetched at element offsets from
                                the start of a and b, kept in registers and advanced
                                by a constant each k-step (before: index maths on row,
                                column and strides, redone every k-step)
    matmul_pipelined_fragments  two shared buffers per tile, used in turn, and one
                                barrier per k-step, placed before its last outer
                                product: the next tiles' first fragments load from
                                shared memory while that product runs, so no warp
                                starts a k-step waiting for shared memory

Profiled on an H100 (Nsight Compute, n = 4096), matmul_one_block_per_sm's warps
waited most at barriers. With flat offsets a k-step issues fewer instructions and
waits less at barriers, but more for shared memory: fewer instructions now stand
between the barrier and the first multiply-adds, which need the fragments loaded
after it. matmul_pipelined_fragments loads them while multiply-adds of the k-step
before still run. (Two shared buffers with the barrier at the end of the k-step, as
usually written, and tiles 16 deep in k, were both slower there.)
"""

from numba import cuda, float32, uint32

from kernels import matmul_fast as mf
from kernels.float4 import WIDE, load_float4_at
from kernels.gridstride import sm_count
from kernels.matmul import (A_TILE_COLS, BK, BM, BN, TM, TN, TWO_BLOCKS_PER_SM, VECTOR_ALIGN,
                            _operands, tile_col, tile_row, warp_position, write_tile)
from kernels.matmul_fast import (add_tile, compiled_for_one_block_per_sm,
                                 fetch_tiles_wide_until, multiply_tiles_unrolled,
                                 stash_tiles_wide)

assert BK == 8, "multiply_loading_next and pipelined_step write out exactly BK = 8 steps"

# -------------------------------------------------------------------- kernels


@cuda.jit(device=True, inline=True)
def offsets(a, b, row0, col0, k_begin, tid):
    """(a_off, b_off): the element offsets, from a[0, 0] and b[0, 0], of the first 4
    floats this thread fetches of the tiles at k_begin: of row row0 + tid // 2 of a,
    k_begin + tid % 2 * 4 on, and of row k_begin + tid // 32 of b, column
    col0 + tid % 32 * 4 on. Rows and columns past the edges of a and b are clamped
    to the last ones, as in matmul_clamped_edges."""
    a_row = min(row0 + tid // 2, a.shape[0] - 1)
    b_col = min(col0 + tid % 32 * WIDE, max(b.shape[1] - WIDE, 0))  # fetched where n >= 4
    return (a_row * a.shape[1] + k_begin + tid % 2 * WIDE,
            (k_begin + tid // 32) * b.shape[1] + b_col)


@cuda.jit(device=True, inline=True)
def fetch_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k, k_end, fast, tid):
    """The tiles at k into registers: with one 128-bit load from a and one from b at
    the offsets where `fast` (the tiles are whole and rows start on 16-byte
    boundaries), one by one and zero outside a and b otherwise, none from k_end on."""
    if fast:
        a_regs[0], a_regs[1], a_regs[2], a_regs[3] = load_float4_at(a, a_off)
        b_regs[0], b_regs[1], b_regs[2], b_regs[3] = load_float4_at(b, b_off)
    elif k < k_end:
        fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k, k_end, tid)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_flat_offsets_kernel(a, b, c, k_chunk, aligned):
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
    a_off, b_off = offsets(a, b, row0, col0, k_begin, tid)
    b_step = BK * b.shape[1]  # from one k-step's B tile to the next
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    for k0 in range(k_begin, k_end, BK):
        stash_tiles_wide(a_regs, b_regs, a_tile, b_tile, tid)
        cuda.syncthreads()
        k_next = k0 + BK
        a_off += BK
        b_off += b_step
        fetch_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k_next, k_end,
                 aligned and k_next + BK <= k_end, tid)
        multiply_tiles_unrolled(a_tile, b_tile, acc, tx, ty)
        cuda.syncthreads()
    if cuda.gridDim.z == 1:
        write_tile(c, acc, row0, col0, tx, ty)
    else:
        add_tile(c, acc, row0, col0, tx, ty)


@cuda.jit(device=True, inline=True)
def load_fragments(a_tile, b_tile, kk, a_frag, b_frag, tx, ty):
    """This thread's TM values of column kk of A and TN of row kk of B, from shared
    memory into registers (outer_product's loads, as a step of their own)."""
    for i in range(TM):
        a_frag[i] = a_tile[kk, tile_row(ty, i)]
    for j in range(TN):
        b_frag[j] = b_tile[kk, tile_col(tx, j)]


@cuda.jit(device=True, inline=True)
def multiply_fragments(a_frag, b_frag, acc):
    """acc += a_frag x b_frag: outer_product's multiply-adds, on registers only."""
    for i in range(TM):
        for j in range(TN):
            acc[i, j] += a_frag[i] * b_frag[j]


@cuda.jit(device=True, inline=True)
def multiply_loading_next(a_now, b_now, f0_a, f0_b, f1_a, f1_b, acc, tx, ty):
    """The outer products of columns 0 to 6 (column 0's fragments already in f0),
    each one's multiply-adds running while the next one's fragments load; ends with
    column 7's fragments in f1."""
    load_fragments(a_now, b_now, 1, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)
    load_fragments(a_now, b_now, 2, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)
    load_fragments(a_now, b_now, 3, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)
    load_fragments(a_now, b_now, 4, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)
    load_fragments(a_now, b_now, 5, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)
    load_fragments(a_now, b_now, 6, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)
    load_fragments(a_now, b_now, 7, f1_a, f1_b, tx, ty)
    multiply_fragments(f0_a, f0_b, acc)


@cuda.jit(device=True, inline=True)
def pipelined_step(a, b, a_regs, b_regs, a_now, b_now, a_next, b_next, f0_a, f0_b, f1_a,
                   f1_b, acc, a_off, b_off, row0, col0, k, k_end, aligned, tid, tx, ty):
    """The k-step at k on the tiles in (a_now, b_now), whose column 0 fragments are in
    f0. Before the last outer product, the registers (the tiles at k + BK) are stored
    into (a_next, b_next), the tiles at k + 2 BK fetched, and the block waits at its
    one barrier; then the next tiles' first fragments load while the last outer
    product of these runs, so no warp starts a k-step waiting for shared memory."""
    multiply_loading_next(a_now, b_now, f0_a, f0_b, f1_a, f1_b, acc, tx, ty)
    if k + BK < k_end:  # the same for every thread of the block
        stash_tiles_wide(a_regs, b_regs, a_next, b_next, tid)
    fetch_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k + 2 * BK, k_end,
             aligned and k + 3 * BK <= k_end, tid)
    # (a_next, b_next) complete, and nobody reads (a_now, b_now) again (the step
    # after this one stores into them)
    cuda.syncthreads()
    load_fragments(a_next, b_next, 0, f0_a, f0_b, tx, ty)
    multiply_fragments(f1_a, f1_b, acc)


@cuda.jit(**TWO_BLOCKS_PER_SM)
def matmul_pipelined_fragments_kernel(a, b, c, k_chunk, aligned):
    # two buffers per tile, as separate arrays (not one 3D array indexed by the step):
    # the compiler then keeps every address a constant offset in shared memory
    a_tile0 = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile0 = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    a_tile1 = cuda.shared.array((BK, A_TILE_COLS), float32, alignment=VECTOR_ALIGN)
    b_tile1 = cuda.shared.array((BK, BN), float32, alignment=VECTOR_ALIGN)
    acc = cuda.local.array((TM, TN), float32)
    a_regs = cuda.local.array(WIDE, float32)
    b_regs = cuda.local.array(WIDE, float32)
    f0_a = cuda.local.array(TM, float32)
    f0_b = cuda.local.array(TN, float32)
    f1_a = cuda.local.array(TM, float32)
    f1_b = cuda.local.array(TN, float32)
    tid = uint32(cuda.threadIdx.x)
    tx, ty = warp_position(tid)
    row0 = uint32(cuda.blockIdx.y) * BM
    col0 = uint32(cuda.blockIdx.x) * BN
    k_begin = uint32(cuda.blockIdx.z) * k_chunk
    k_end = min(k_begin + k_chunk, a.shape[1])
    a_off, b_off = offsets(a, b, row0, col0, k_begin, tid)
    b_step = BK * b.shape[1]
    for i in range(TM):
        for j in range(TN):
            acc[i, j] = float32(0.0)
    # the first tiles into buffer 0 and their first fragments into f0, the second
    # tiles into the registers
    fetch_tiles_wide_until(a, b, a_regs, b_regs, row0, col0, k_begin, k_end, tid)
    stash_tiles_wide(a_regs, b_regs, a_tile0, b_tile0, tid)
    a_off += BK
    b_off += b_step
    fetch_at(a, b, a_regs, b_regs, a_off, b_off, row0, col0, k_begin + BK, k_end,
             aligned and k_begin + 2 * BK <= k_end, tid)
    cuda.syncthreads()
    load_fragments(a_tile0, b_tile0, 0, f0_a, f0_b, tx, ty)
    # two k-steps per iteration, one from each buffer; at its start a_off and b_off
    # are the offsets of the tiles at k0 + BK
    for k0 in range(k_begin, k_end, 2 * BK):
        pipelined_step(a, b, a_regs, b_regs, a_tile0, b_tile0, a_tile1, b_tile1, f0_a, f0_b,
                       f1_a, f1_b, acc, a_off + BK, b_off + b_step, row0, col0, k0, k_end,
                       aligned, tid, tx, ty)
        if k0 + BK < k_end:
            pipelined_step(a, b, a_regs, b_regs, a_tile1, b_tile1, a_tile0, b_tile0, f0_a,
                           f0_b, f1_a, f1_b, acc, a_off + 2 * BK, b_off + 2 * b_step, row0,
                           col0, k0 + BK, k_end, aligned, tid, tx, ty)
        a_off += 2 * BK
        b_off += 2 * b_step
    if cuda.gridDim.z == 1:
        write_tile(c, acc, row0, col0, tx, ty)
    else:
        add_tile(c, acc, row0, col0, tx, ty)


matmul_flat_offsets_one_block_kernel = compiled_for_one_block_per_sm(matmul_flat_offsets_kernel)
matmul_pipelined_fragments_one_block_kernel = compiled_for_one_block_per_sm(
    matmul_pipelined_fragments_kernel)

# ------------------------------------------------------------ host functions


def _launch(kernels, a, b, out, splits):
    """As matmul_one_block_per_sm launches its kernels: kernels[1] (compiled for one
    block per SM) where the grid fits one block per SM, kernels[0] elsewhere."""
    out = _operands(a, b, out)
    m, n = out.shape
    if mf.fits_one_block_per_sm(m, n, a.shape[1], sm_count()):
        return mf._launch_wide(kernels[1], a, b, out, splits, blocks_per_sm=1)
    return mf._launch_wide(kernels[0], a, b, out, splits)


def matmul_flat_offsets(a, b, out=None, *, splits=None):
    """matmul_one_block_per_sm, fetching interior tiles at flat offsets advanced by a
    constant each k-step."""
    return _launch((matmul_flat_offsets_kernel, matmul_flat_offsets_one_block_kernel), a, b,
                   out, splits)


def matmul_pipelined_fragments(a, b, out=None, *, splits=None):
    """matmul_flat_offsets with two shared buffers per tile and one barrier per k-step,
    before its last outer product, while which the next k-step's first fragments load."""
    return _launch((matmul_pipelined_fragments_kernel,
                    matmul_pipelined_fragments_one_block_kernel), a, b, out, splits)


def default_splits(version, m, n, k, sms):
    """How many blocks share each tile's sum over k in VERSIONS[version] by default:
    as in matmul_one_block_per_sm, whose launch they share."""
    return mf.default_splits("matmul_one_block_per_sm", m, n, k, sms)


VERSIONS = {
    "matmul_flat_offsets": matmul_flat_offsets,
    "matmul_pipelined_fragments": matmul_pipelined_fragments,
}
