"""Where histogram_bin_tickets spends its time: the same kernel stopped after each stage.

STAGES, in the kernel's order (each includes the ones before it):
    read    the text read as histogram_bin_tickets reads it, nothing counted
    clear   + the block's counters cleared in shared memory
    count   + every byte counted into them (the shared-memory atomics)
    merge   + each block's counts added to the totals, and each bin handed out by the
            block that adds to it last: the whole of histogram_bin_tickets
Timing each stage and subtracting the one before gives what that stage costs. An
instrument for the chapter's measurements, not a version: only ``merge`` counts.
"""

import numpy as np
from numba import cuda, int32, int64, uint64

from kernels import scratch
from kernels.histogram import (BINS, IN_FLIGHT, ROWS_SPARE, WARP, _args, _words,
                               count_word_spare)

STAGES = {"read": 1, "clear": 2, "count": 3, "merge": 4}
CLEAR, COUNT, MERGE = STAGES["clear"], STAGES["count"], STAGES["merge"]
ALL_ONES = 0xFFFFFFFFFFFFFFFF

# -------------------------------------------------------------------- kernels


@cuda.jit
def histogram_stages_kernel(words, data, totals, out, stages):
    local = cuda.shared.array((ROWS_SPARE, WARP), np.int32)
    t = cuda.threadIdx.x
    lane = t % WARP
    if stages >= CLEAR:
        for b in range(t, ROWS_SPARE * WARP, cuda.blockDim.x):
            local[b // WARP, b % WARP] = 0
    cuda.syncthreads()
    count = stages >= COUNT
    seen = uint64(0)  # what the read-only stages fold the words into, so the loads stay
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + (IN_FLIGHT - 1) * stride < words.size:
        w0, w1, w2, w3 = words[i], words[i + stride], words[i + 2 * stride], words[i + 3 * stride]
        if count:
            count_word_spare(local, w0, lane)
            count_word_spare(local, w1, lane)
            count_word_spare(local, w2, lane)
            count_word_spare(local, w3, lane)
        else:
            seen |= w0 | w1 | w2 | w3
        i += IN_FLIGHT * stride
    while i < words.size:
        if count:
            count_word_spare(local, words[i], lane)
        else:
            seen |= words[i]
        i += stride
    for i in range(8 * words.size + cuda.grid(1), data.size, stride):
        if count:
            cuda.atomic.add(local, (min(int32(data[i]), BINS), lane), 1)
        else:
            seen |= data[i]
    if seen == uint64(ALL_ONES):  # depends on the data: the loads cannot be dropped
        out[0] = 0
    if stages < MERGE:
        return
    cuda.syncthreads()
    last = uint64(cuda.gridDim.x - 1)
    for b in range(t, BINS, cuda.blockDim.x):
        total = 0
        for l in range(WARP):
            total += local[b, (l + b) % WARP]
        old = cuda.atomic.add(totals, b, (uint64(1) << uint64(32)) + uint64(total))
        if old >> uint64(32) == last:
            out[b] = int64((old & uint64(0xFFFFFFFF)) + uint64(total))
            totals[b] = 0


# ------------------------------------------------------------ host functions


def histogram_stages(data, stage, out=None, *, blocks=None, threads=None):
    """Run histogram_bin_tickets on `data` up to and including `stage` (a name of
    STAGES). Only "merge" leaves the counts in `out`; the others leave it meaningless."""
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}")
    out, blocks, threads = _args("histogram_bin_tickets", data, out, blocks, threads,
                                 clear=False)
    totals = scratch.buffer("histogram stages totals", np.zeros(BINS, np.uint64))
    histogram_stages_kernel[blocks, threads](*_words(data, np.uint64), totals, out,
                                             STAGES[stage])
    return out

