"""Lane-private counters or one row per block: histogram_lean_count both ways.

histogram_lean_count (version 7 of kernels.histogram) counts into WARP lane-private
copies of its counter row (ROWS_ALL x WARP int32 in shared memory, 32 KiB a block), so
no two lanes of a warp ever add to the same counter. The version here is the same
kernel, line for line, with ONE row of ROWS_ALL counters per block (1 KiB): lanes that
read the same byte value then add to the same shared counter. Timing the two side by
side, at the same launch, measures what the lane-private copies buy in the later
versions (the benchmark histogram.private_rows).

Versions (ONE_ROW maps the lane-private version's name to its one-row variant):
    histogram_lean_count_one_row   histogram_lean_count with one counter row per block

The reference is kernels.histogram.histogram_reference; the launch, the input checks
and the word view are histogram_lean_count's own (kernels.histogram._args, _words).
"""

import numpy as np
from numba import cuda, int64, uint32, uint64

from kernels import scratch
from kernels.histogram import BINS, FIRST_LOADS, IN_FLIGHT, ROWS_ALL, _args, _words

# -------------------------------------------------------------------- kernels


@cuda.jit(device=True, inline=True)
def count_word_row(local, w):
    """count_word_lean into one row of counters: the byte value is the index."""
    for half in range(2):
        h32 = uint32(w >> uint64(32 * half))
        for k in range(4):
            cuda.atomic.add(local, uint32(uint32(h32 >> uint32(8 * k)) & uint32(0xFF)), 1)


@cuda.jit
def histogram_lean_count_one_row_kernel(words, data, totals, out):
    # histogram_lean_count_kernel with the lane column dropped from every index
    local = cuda.shared.array(ROWS_ALL, np.int32)  # one counter per byte value
    t = cuda.threadIdx.x
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    first = cuda.local.array(FIRST_LOADS, uint64)
    for k in range(FIRST_LOADS):
        j = i + k * stride
        first[k] = words[j] if j < words.size else uint64(0)
    for b in range(t, ROWS_ALL, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for k in range(FIRST_LOADS):
        if i + k * stride < words.size:
            count_word_row(local, first[k])
    i += FIRST_LOADS * stride
    while i + (IN_FLIGHT - 1) * stride < words.size:
        w0, w1, w2, w3 = words[i], words[i + stride], words[i + 2 * stride], words[i + 3 * stride]
        count_word_row(local, w0)
        count_word_row(local, w1)
        count_word_row(local, w2)
        count_word_row(local, w3)
        i += IN_FLIGHT * stride
    while i < words.size:
        count_word_row(local, words[i])
        i += stride
    for j in range(8 * words.size + cuda.grid(1), data.size, stride):
        cuda.atomic.add(local, uint32(data[j]), 1)
    cuda.syncthreads()
    last = uint64(cuda.gridDim.x - 1)
    for b in range(t, BINS, cuda.blockDim.x):
        total = local[b]  # (no lane copies to sum)
        old = cuda.atomic.add(totals, b, (uint64(1) << uint64(32)) + uint64(total))
        if old >> uint64(32) == last:
            out[b] = int64((old & uint64(0xFFFFFFFF)) + uint64(total))
            totals[b] = 0


# ------------------------------------------------------------ host functions


def histogram_lean_count_one_row(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: histogram_lean_count with one shared counter row per
    block instead of one per warp lane; its default launch is histogram_lean_count's."""
    out, blocks, threads = _args("histogram_lean_count", data, out, blocks, threads,
                                 clear=False)
    totals = scratch.buffer("histogram lean count one row", np.zeros(BINS, np.uint64))
    histogram_lean_count_one_row_kernel[blocks, threads](*_words(data, np.uint64), totals,
                                                         out)
    return out


ONE_ROW = {"histogram_lean_count": histogram_lean_count_one_row}
