"""Reductions: many values to one, with a tree in each block and one atomic per block.

Versions (VERSIONS maps each name to its host function):
    sum_global_atomics     every thread adds every element straight into the output
    sum_shared_tree        per-thread partials, a shared-memory tree, one atomic per block
    sum_unrolled           the same, its loop unrolled by hand: four independent loads
                           per trip (NVVM unrolls sum_shared_tree's loop as far itself)
    sum_warp_shuffle       the block's tree done with warp shuffles (GPU only)
    minmax_shared_tree     minimum and maximum fused in one pass, one atomic each per block
    sum_last_block         sum_unrolled with eight loads in flight and one launch: blocks
                           add into a total kept at zero between calls, and the last
                           block to finish hands it out (no zeroing launch first)
    minmax_last_block      minmax_shared_tree, likewise: eight loads, one launch
Exhibits (EXHIBITS; wrong on purpose, for the pitfalls):
    sum_tree_no_syncthreads  the shared-memory tree without its barriers
    minmax_zero_init         per-thread accumulators started at 0, not at the identity
"""

import numpy as np
from numba import cuda, int64

from kernels import SIMULATOR, scratch, validate
from kernels.gridstride import sm_count

DTYPES = (np.int32, np.int64)
THREADS = 256  # threads per block; the shared arrays have this many slots
BLOCKS_PER_SM = 8  # 8 x 256 = 2048 threads: a full H100 SM, all resident at once
WARP = 32
WARPS = THREADS // WARP  # warps per block
IN_FLIGHT = 8  # the last-block versions: loads each thread issues before it adds any
INT64_MIN, INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max

# ------------------------------------------------------------------ reference


def sum_reference(a):
    """[sum of a] as int64 (NumPy would use int32 on some platforms: say it)."""
    return np.array([np.sum(a, dtype=np.int64)])


def minmax_reference(a):
    """[min, max] of a."""
    return np.array([a.min(), a.max()], dtype=a.dtype)


# -------------------------------------------------------------------- kernels


@cuda.jit
def zero_kernel(out):
    # The atomics add into out, so it must start at 0, the identity of +.
    out[0] = 0


@cuda.jit
def first_element_kernel(a, out):
    # The atomics take min and max into out: start both at a value of the data.
    out[0] = a[0]
    out[1] = a[0]


@cuda.jit
def sum_global_atomics_kernel(a, out):
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        cuda.atomic.add(out, 0, int64(a[i]))  # every add waits its turn at one address


@cuda.jit
def sum_shared_tree_kernel(a, out):
    partials = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    acc = int64(0)  # int64: the sum of 10M int32 values can pass 2**31
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        acc += a[i]
    partials[tid] = acc
    cuda.syncthreads()  # every partial is written before any thread reads another's
    half = THREADS // 2
    while half > 0:
        if tid < half:
            partials[tid] += partials[tid + half]
        cuda.syncthreads()  # this level is complete before the next one reads it
        half //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partials[0])  # one atomic per block


@cuda.jit
def sum_unrolled_kernel(a, out):
    partials = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    acc = int64(0)
    while i + 3 * stride < a.size:
        # No load depends on another, so all four are in flight at once.
        x0, x1, x2, x3 = a[i], a[i + stride], a[i + 2 * stride], a[i + 3 * stride]
        acc += int64(x0) + int64(x1) + int64(x2) + int64(x3)  # widen before adding
        i += 4 * stride
    while i < a.size:
        acc += a[i]
        i += stride
    partials[tid] = acc
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            partials[tid] += partials[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partials[0])


@cuda.jit
def sum_warp_shuffle_kernel(a, out):
    warp_sums = cuda.shared.array(WARPS, int64)
    lane = cuda.threadIdx.x % WARP
    warp = cuda.threadIdx.x // WARP
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    acc = int64(0)
    while i + 3 * stride < a.size:
        x0, x1, x2, x3 = a[i], a[i + stride], a[i + 2 * stride], a[i + 3 * stride]
        acc += int64(x0) + int64(x1) + int64(x2) + int64(x3)
        i += 4 * stride
    while i < a.size:
        acc += a[i]
        i += stride
    offset = WARP // 2
    while offset > 0:  # register to register within a warp: no shared memory, no barrier
        acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
        offset //= 2
    if lane == 0:
        warp_sums[warp] = acc
    cuda.syncthreads()  # every warp's sum is written before warp 0 reads them
    if warp == 0:
        acc = warp_sums[lane] if lane < WARPS else int64(0)
        offset = WARP // 2
        while offset > 0:
            acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
            offset //= 2
        if lane == 0:
            cuda.atomic.add(out, 0, acc)


@cuda.jit
def sum_tree_no_syncthreads_kernel(a, out):
    # WRONG on purpose: sum_shared_tree_kernel without its two barriers.
    partials = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    acc = int64(0)
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        acc += a[i]
    partials[tid] = acc
    half = THREADS // 2
    while half > 0:
        if tid < half:
            partials[tid] += partials[tid + half]  # its writer may not have written it yet
        half //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partials[0])


@cuda.jit
def minmax_shared_tree_kernel(a, out):
    lows = cuda.shared.array(THREADS, int64)  # int64 holds int32 and int64 data
    highs = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    # Start at a value of the data: a thread with no elements then changes nothing.
    lo = a[0]
    hi = a[0]
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + 3 * stride < a.size:
        x0, x1, x2, x3 = a[i], a[i + stride], a[i + 2 * stride], a[i + 3 * stride]
        lo = min(lo, min(min(x0, x1), min(x2, x3)))
        hi = max(hi, max(max(x0, x1), max(x2, x3)))
        i += 4 * stride
    while i < a.size:
        lo = min(lo, a[i])
        hi = max(hi, a[i])
        i += stride
    lows[tid] = lo
    highs[tid] = hi
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:  # two trees in step: one barrier per level serves both
        if tid < half:
            lows[tid] = min(lows[tid], lows[tid + half])
            highs[tid] = max(highs[tid], highs[tid + half])
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.min(out, 0, lows[0])
        cuda.atomic.max(out, 1, highs[0])


@cuda.jit
def minmax_zero_init_kernel(a, out):
    # WRONG on purpose: each thread's min and max start at 0, not at a value of the data.
    lows = cuda.shared.array(THREADS, int64)  # int64 holds int32 and int64 data
    highs = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    lo = 0
    hi = 0
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        lo = min(lo, a[i])
        hi = max(hi, a[i])
    lows[tid] = lo
    highs[tid] = hi
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            lows[tid] = min(lows[tid], lows[tid + half])
            highs[tid] = max(highs[tid], highs[tid + half])
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.min(out, 0, lows[0])
        cuda.atomic.max(out, 1, highs[0])


@cuda.jit
def sum_last_block_kernel(a, total, ticket, out):
    partials = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    acc = int64(0)
    while i + (IN_FLIGHT - 1) * stride < a.size:
        # eight independent loads: 40 MB is read in a few round trips to memory
        x0, x1, x2, x3 = a[i], a[i + stride], a[i + 2 * stride], a[i + 3 * stride]
        x4, x5 = a[i + 4 * stride], a[i + 5 * stride]
        x6, x7 = a[i + 6 * stride], a[i + 7 * stride]
        acc += (int64(x0) + int64(x1) + int64(x2) + int64(x3)
                + int64(x4) + int64(x5) + int64(x6) + int64(x7))
        i += IN_FLIGHT * stride
    while i < a.size:
        acc += a[i]
        i += stride
    partials[tid] = acc
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            partials[tid] += partials[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.add(total, 0, partials[0])
    if scratch.is_last_block(ticket) and tid == 0:
        out[0] = cuda.atomic.exch(total, 0, 0)  # hand it out, and leave 0 for the next call
        ticket[0] = 0


@cuda.jit
def minmax_last_block_kernel(a, extremes, ticket, out):
    lows = cuda.shared.array(THREADS, int64)
    highs = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    lo = a[0]
    hi = a[0]
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + (IN_FLIGHT - 1) * stride < a.size:
        x0, x1, x2, x3 = a[i], a[i + stride], a[i + 2 * stride], a[i + 3 * stride]
        x4, x5 = a[i + 4 * stride], a[i + 5 * stride]
        x6, x7 = a[i + 6 * stride], a[i + 7 * stride]
        lo = min(lo, min(min(min(x0, x1), min(x2, x3)), min(min(x4, x5), min(x6, x7))))
        hi = max(hi, max(max(max(x0, x1), max(x2, x3)), max(max(x4, x5), max(x6, x7))))
        i += IN_FLIGHT * stride
    while i < a.size:
        lo = min(lo, a[i])
        hi = max(hi, a[i])
        i += stride
    lows[tid] = lo
    highs[tid] = hi
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            lows[tid] = min(lows[tid], lows[tid + half])
            highs[tid] = max(highs[tid], highs[tid + half])
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.min(extremes, 0, lows[0])
        cuda.atomic.max(extremes, 1, highs[0])
    if scratch.is_last_block(ticket) and tid == 0:
        # hand them out, and put back the identities of min and max for the next call
        out[0] = cuda.atomic.exch(extremes, 0, INT64_MAX)
        out[1] = cuda.atomic.exch(extremes, 1, INT64_MIN)
        ticket[0] = 0


# ------------------------------------------------------------ host functions


def default_blocks():
    """A few resident blocks per SM: enough to keep memory busy, one atomic each."""
    return BLOCKS_PER_SM * sm_count()


def _args(a, out, blocks, shape, dtype):
    validate.array("a", a, dtypes=DTYPES, ndim=1)
    validate.nonempty("a", a)
    out = validate.output("out", out, a, dtype=dtype, shape=shape)
    blocks, _ = validate.launch(default_blocks() if blocks is None else blocks, THREADS)
    return out, blocks


def _sum(kernel, a, out, blocks):
    out, blocks = _args(a, out, blocks, (1,), np.int64)
    zero_kernel[1, 1](out)
    kernel[blocks, THREADS](a, out)
    return out


def sum_global_atomics(a, out=None, *, blocks=None):
    """out[0] = sum of a (int64), one atomic add per element."""
    return _sum(sum_global_atomics_kernel, a, out, blocks)


def sum_shared_tree(a, out=None, *, blocks=None):
    """out[0] = sum of a (int64): partials, a shared-memory tree, one atomic per block."""
    return _sum(sum_shared_tree_kernel, a, out, blocks)


def sum_unrolled(a, out=None, *, blocks=None):
    """sum_shared_tree with four loads in flight per thread."""
    return _sum(sum_unrolled_kernel, a, out, blocks)


def sum_warp_shuffle(a, out=None, *, blocks=None):
    """sum_unrolled with the block's tree done by warp shuffles (needs a real GPU)."""
    if SIMULATOR:
        raise RuntimeError("sum_warp_shuffle uses warp shuffles (cuda.shfl_down_sync), "
                           "which the Numba CUDA simulator lacks; run it on a GPU, or use "
                           "sum_unrolled, which does the same with shared memory")
    return _sum(sum_warp_shuffle_kernel, a, out, blocks)


def sum_tree_no_syncthreads(a, out=None, *, blocks=None):
    """EXHIBIT: sum_shared_tree without its barriers; wrong on a GPU."""
    return _sum(sum_tree_no_syncthreads_kernel, a, out, blocks)


def _minmax(kernel, a, out, blocks):
    out, blocks = _args(a, out, blocks, (2,), a.dtype)
    first_element_kernel[1, 1](a, out)
    kernel[blocks, THREADS](a, out)
    return out


def minmax_shared_tree(a, out=None, *, blocks=None):
    """out = [min of a, max of a] in one pass over a."""
    return _minmax(minmax_shared_tree_kernel, a, out, blocks)


def minmax_zero_init(a, out=None, *, blocks=None):
    """EXHIBIT: per-thread accumulators start at 0; wrong unless a holds 0 or both signs."""
    return _minmax(minmax_zero_init_kernel, a, out, blocks)


def sum_last_block(a, out=None, *, blocks=None):
    """out[0] = sum of a (int64) in one launch: eight loads in flight per thread, and
    the last block to finish writes the total."""
    out, blocks = _args(a, out, blocks, (1,), np.int64)
    total = scratch.buffer("sum total", np.zeros(1, np.int64))
    ticket = scratch.buffer("sum ticket", np.zeros(1, np.int32))
    sum_last_block_kernel[blocks, THREADS](a, total, ticket, out)
    return out


def minmax_last_block(a, out=None, *, blocks=None):
    """out = [min of a, max of a] in one pass and one launch."""
    out, blocks = _args(a, out, blocks, (2,), a.dtype)
    extremes = scratch.buffer("minmax extremes", np.array([INT64_MAX, INT64_MIN]))
    ticket = scratch.buffer("minmax ticket", np.zeros(1, np.int32))
    minmax_last_block_kernel[blocks, THREADS](a, extremes, ticket, out)
    return out


SUM_VERSIONS = {
    "sum_global_atomics": sum_global_atomics,
    "sum_shared_tree": sum_shared_tree,
    "sum_unrolled": sum_unrolled,
    "sum_warp_shuffle": sum_warp_shuffle,
    "sum_last_block": sum_last_block,
}
MINMAX_VERSIONS = {"minmax_shared_tree": minmax_shared_tree,
                   "minmax_last_block": minmax_last_block}
VERSIONS = {**SUM_VERSIONS, **MINMAX_VERSIONS}
GPU_ONLY = ("sum_warp_shuffle",)  # the simulator lacks warp shuffles
EXHIBITS = {"sum_tree_no_syncthreads": sum_tree_no_syncthreads,
            "minmax_zero_init": minmax_zero_init}
