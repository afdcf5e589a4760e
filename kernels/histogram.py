"""Histograms of text: counting the bytes of a text into 128 ASCII bins with atomics.

Versions (VERSIONS maps each name to its host function), each a step from the last:
    histogram_global_atomics    one atomic add in global memory per byte (grid-stride)
    histogram_shared_atomics    a per-block histogram in shared memory, then one
                                global atomic per bin per block
    histogram_shared_wide_loads the same, reading 4 bytes per load (a uint32 view)
    histogram_lane_private      4-byte loads into 32 private copies of the block's
                                histogram, one per warp lane: no two lanes of a warp
                                ever touch the same counter or the same memory bank
    histogram_last_block        the same counters, 8-byte loads four at a time, and one
                                launch: blocks add into a total kept at zero between
                                calls, and the last block to finish hands it out
    histogram_bin_tickets       the same, with one ticket per bin instead of one per
                                block: each bin's total carries, in its upper 32 bits,
                                how many blocks have added to it, so the block that
                                adds last writes that bin out (no fence, no second
                                round trip); bytes >= 128 go to a spare row, no branch
    histogram_lean_count        the same tickets, each byte counted in five machine
                                instructions instead of about eleven: 32-bit
                                arithmetic, loops the compiler unrolls, a counter row
                                for every byte value (no comparison); the first loads
                                issued before the counters are cleared
Beside them, histogram_shared_atomics_int64: histogram_shared_atomics with 64-bit
shared counters, the same work many times slower. The read-only passes that time the
floor under the versions are in kernels.histogram_floors.

Every version counts byte values 0-127 and skips bytes >= 128 (the lead and
continuation bytes of UTF-8 characters), so none can write past its 128 bins.
The counts are int64, as np.bincount gives them.
"""

import numpy as np
from numba import cuda, int32, int64, uint32, uint64

from kernels import scratch, validate
from kernels.gridstride import sm_count

BINS = 128   # ASCII
WARP = 32    # lanes of a warp: the lane-private copies, and the shared memory banks
MAX_BYTES = 2**31 - 1  # shared counters are int32: no block may count more than this
IN_FLIGHT = 4  # histogram_last_block: loads each thread issues before it counts any
ROWS_SPARE = BINS + 1  # histogram_bin_tickets: the 128 bins and a spare row for bytes >= 128
ROWS_ALL = 256  # histogram_lean_count: a row for every byte value, so no byte is compared
COUNTERS_ALL = ROWS_ALL * WARP  # (a shared array's size must be one constant)
FIRST_LOADS = 8  # histogram_lean_count: words each thread requests before clearing

# ------------------------------------------------------------------ reference


def histogram_reference(data):
    """Counts of byte values 0-127 in `data` (uint8); bytes >= 128 are not counted."""
    return np.bincount(data, minlength=256)[:BINS].astype(np.int64)


def histogram_cpu_loop(data):
    """The same counts with a plain Python loop: the CPU baseline of the chapter."""
    counts = [0] * 256
    for byte in data.tobytes():
        counts[byte] += 1
    return np.array(counts[:BINS], dtype=np.int64)


# -------------------------------------------------------------------- kernels


@cuda.jit
def clear_kernel(hist):
    for i in range(cuda.grid(1), hist.size, cuda.gridsize(1)):
        hist[i] = 0


@cuda.jit
def histogram_global_atomics_kernel(data, hist):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        c = data[i]
        if c < BINS:
            cuda.atomic.add(hist, c, 1)


@cuda.jit
def histogram_shared_atomics_kernel(data, hist):
    local = cuda.shared.array(BINS, np.int32)
    t = cuda.threadIdx.x
    for b in range(t, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        c = data[i]
        if c < BINS:
            cuda.atomic.add(local, c, 1)
    cuda.syncthreads()  # every thread of the block has counted
    for b in range(t, BINS, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])


@cuda.jit
def histogram_shared_atomics_int64_kernel(data, hist):
    local = cuda.shared.array(BINS, np.int64)
    t = cuda.threadIdx.x
    for b in range(t, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        c = data[i]
        if c < BINS:
            cuda.atomic.add(local, c, 1)
    cuda.syncthreads()
    for b in range(t, BINS, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])


@cuda.jit
def histogram_shared_wide_loads_kernel(words, data, hist):
    local = cuda.shared.array(BINS, np.int32)
    t = cuda.threadIdx.x
    for b in range(t, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), words.size, cuda.gridsize(1)):
        w = words[i]  # 4 bytes in one load; byte k sits in bits 8k..8k+7
        for k in range(4):
            c = (w >> (8 * k)) & 0xFF
            if c < BINS:
                cuda.atomic.add(local, c, 1)
    # the last size % 4 bytes, not in any word (a loop: the grid may be tiny)
    for i in range(4 * words.size + cuda.grid(1), data.size, cuda.gridsize(1)):
        if data[i] < BINS:
            cuda.atomic.add(local, data[i], 1)
    cuda.syncthreads()
    for b in range(t, BINS, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])


@cuda.jit
def histogram_lane_private_kernel(words, data, hist):
    # local[c, lane]: lane l of every warp counts into column l. Lanes of one warp
    # never share a counter, and column l lies in memory bank l, so the 32 atomics
    # of a warp instruction all go to different banks.
    local = cuda.shared.array((BINS, WARP), np.int32)
    t = cuda.threadIdx.x
    lane = t % WARP
    for b in range(t, BINS, cuda.blockDim.x):
        for l in range(WARP):
            local[b, (l + b) % WARP] = 0  # rotated like the sum below: no bank conflicts
    cuda.syncthreads()
    for i in range(cuda.grid(1), words.size, cuda.gridsize(1)):
        w = words[i]
        for k in range(4):
            c = (w >> (8 * k)) & 0xFF
            if c < BINS:
                cuda.atomic.add(local, (c, lane), 1)
    for i in range(4 * words.size + cuda.grid(1), data.size, cuda.gridsize(1)):
        if data[i] < BINS:
            cuda.atomic.add(local, (data[i], lane), 1)
    cuda.syncthreads()
    for b in range(t, BINS, cuda.blockDim.x):
        total = 0
        for l in range(WARP):
            # start each bin's sum at a different column: neighbouring threads
            # then read different banks at every step
            total += local[b, (l + b) % WARP]
        if total != 0:
            cuda.atomic.add(hist, b, total)


@cuda.jit(device=True, inline=True)
def count_word(local, w, lane):
    """Count the 8 bytes of the uint64 `w` (byte k in bits 8k..8k+7) into column `lane`."""
    for k in range(8):
        c = int32((w >> uint64(8 * k)) & uint64(0xFF))  # uint64 throughout: no float
        if c < BINS:
            cuda.atomic.add(local, (c, lane), 1)


@cuda.jit
def histogram_last_block_kernel(words, data, totals, ticket, out):
    local = cuda.shared.array((BINS, WARP), np.int32)
    t = cuda.threadIdx.x
    lane = t % WARP
    for b in range(t, BINS * WARP, cuda.blockDim.x):
        local[b // WARP, b % WARP] = 0
    cuda.syncthreads()
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + (IN_FLIGHT - 1) * stride < words.size:
        # four independent loads issued before the first is used: the text is read
        # in one or two round trips to memory instead of one trip per load
        w0, w1, w2, w3 = words[i], words[i + stride], words[i + 2 * stride], words[i + 3 * stride]
        count_word(local, w0, lane)
        count_word(local, w1, lane)
        count_word(local, w2, lane)
        count_word(local, w3, lane)
        i += IN_FLIGHT * stride
    while i < words.size:
        count_word(local, words[i], lane)
        i += stride
    for i in range(8 * words.size + cuda.grid(1), data.size, stride):
        if data[i] < BINS:
            cuda.atomic.add(local, (data[i], lane), 1)
    cuda.syncthreads()
    for b in range(t, BINS, cuda.blockDim.x):
        total = 0
        for l in range(WARP):
            total += local[b, (l + b) % WARP]
        if total != 0:
            cuda.atomic.add(totals, b, total)
    if scratch.is_last_block(ticket):  # every other block has added: hand the totals out
        for b in range(t, BINS, cuda.blockDim.x):
            out[b] = cuda.atomic.exch(totals, b, 0)  # read, and leave 0 for the next call
        if t == 0:
            ticket[0] = 0


@cuda.jit(device=True, inline=True)
def count_word_spare(local, w, lane):
    """count_word without a branch: a byte >= 128 is counted in the spare row BINS."""
    for half in (w & uint64(0xFFFFFFFF), w >> uint64(32)):
        h32 = uint32(half)  # 32-bit shifts: one instruction each
        for k in range(4):
            c = int32((h32 >> uint32(8 * k)) & uint32(0xFF))
            cuda.atomic.add(local, (min(c, BINS), lane), 1)


@cuda.jit
def histogram_bin_tickets_kernel(words, data, totals, out):
    local = cuda.shared.array((ROWS_SPARE, WARP), np.int32)
    t = cuda.threadIdx.x
    lane = t % WARP
    for b in range(t, ROWS_SPARE * WARP, cuda.blockDim.x):
        local[b // WARP, b % WARP] = 0
    cuda.syncthreads()
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    while i + (IN_FLIGHT - 1) * stride < words.size:
        w0, w1, w2, w3 = words[i], words[i + stride], words[i + 2 * stride], words[i + 3 * stride]
        count_word_spare(local, w0, lane)
        count_word_spare(local, w1, lane)
        count_word_spare(local, w2, lane)
        count_word_spare(local, w3, lane)
        i += IN_FLIGHT * stride
    while i < words.size:
        count_word_spare(local, words[i], lane)
        i += stride
    for i in range(8 * words.size + cuda.grid(1), data.size, stride):
        cuda.atomic.add(local, (min(int32(data[i]), BINS), lane), 1)
    cuda.syncthreads()
    last = uint64(cuda.gridDim.x - 1)
    for b in range(t, BINS, cuda.blockDim.x):
        total = 0
        for l in range(WARP):
            total += local[b, (l + b) % WARP]
        # Upper 32 bits: one more block has added bin b; lower 32 bits: its count (no
        # bin reaches 2**31, so the count never carries into the ticket).
        old = cuda.atomic.add(totals, b, (uint64(1) << uint64(32)) + uint64(total))
        if old >> uint64(32) == last:  # every other block has added this bin
            out[b] = int64((old & uint64(0xFFFFFFFF)) + uint64(total))
            totals[b] = 0  # no block of this launch adds to bin b again


@cuda.jit(device=True, inline=True)
def count_word_lean(local, w, lane):
    """Count the 8 bytes of `w` into the flat counters `local` (row = byte value, 32
    columns), column `lane` (uint32). Every value is cast back to uint32 after each
    operation: Numba widens integer arithmetic to 64 bits, which the GPU does in two or
    three instructions. range() loops with constant bounds are unrolled by the compiler
    (a loop over a tuple is not)."""
    for half in range(2):
        h32 = uint32(w >> uint64(32 * half))
        for k in range(4):
            c = uint32(uint32(h32 >> uint32(8 * k)) & uint32(0xFF))
            cuda.atomic.add(local, uint32(uint32(c << uint32(5)) | lane), 1)


@cuda.jit
def histogram_lean_count_kernel(words, data, totals, out):
    local = cuda.shared.array(COUNTERS_ALL, np.int32)  # flat: [byte value, lane]
    t = cuda.threadIdx.x
    lane = uint32(t) % uint32(WARP)
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    # Request the first words before clearing the counters: their trip to memory
    # overlaps the clear and the barrier. For a text of a few MB at the default launch
    # they are all a thread reads.
    first = cuda.local.array(FIRST_LOADS, uint64)
    for k in range(FIRST_LOADS):
        j = i + k * stride
        first[k] = words[j] if j < words.size else uint64(0)
    for b in range(t, COUNTERS_ALL, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for k in range(FIRST_LOADS):
        if i + k * stride < words.size:
            count_word_lean(local, first[k], lane)
    i += FIRST_LOADS * stride
    while i + (IN_FLIGHT - 1) * stride < words.size:
        w0, w1, w2, w3 = words[i], words[i + stride], words[i + 2 * stride], words[i + 3 * stride]
        count_word_lean(local, w0, lane)
        count_word_lean(local, w1, lane)
        count_word_lean(local, w2, lane)
        count_word_lean(local, w3, lane)
        i += IN_FLIGHT * stride
    while i < words.size:
        count_word_lean(local, words[i], lane)
        i += stride
    for j in range(8 * words.size + cuda.grid(1), data.size, stride):
        cuda.atomic.add(local, uint32(uint32(uint32(data[j]) << uint32(5)) | lane), 1)
    cuda.syncthreads()
    last = uint64(cuda.gridDim.x - 1)
    for b in range(t, BINS, cuda.blockDim.x):
        row = uint32(uint32(b) << uint32(5))
        total = 0
        for l in range(WARP):  # rotated start column, as before; 32-bit index arithmetic
            total += local[row | uint32(uint32(l + b) & uint32(WARP - 1))]
        old = cuda.atomic.add(totals, b, (uint64(1) << uint64(32)) + uint64(total))
        if old >> uint64(32) == last:
            out[b] = int64((old & uint64(0xFFFFFFFF)) + uint64(total))
            totals[b] = 0


# ------------------------------------------------------------ host functions


def default_launch(version):
    """(blocks, threads) of `version`'s default launch, in blocks per SM: the best of the
    blocks sweep recorded on the H100 on 2026-11-23 (histogram.blocks_sweep in
    book/_data/bench; global atomics: 32 per SM, within 1% of 64), and for
    histogram_bin_tickets and histogram_lean_count exploratory sweeps on the same H100
    (1 x 1,024 fastest; for histogram_lean_count on 2026-11-25, 2 x 512 was 10% slower).
    More blocks mean more final global atomics (BINS per block, on the same few cache
    lines); fewer leave each thread a longer chain of loads to wait for."""
    per_sm, threads = {
        "histogram_global_atomics": (32, 256),
        "histogram_shared_atomics": (4, 256),
        "histogram_shared_atomics_int64": (8, 256),
        "histogram_shared_wide_loads": (4, 256),
        "histogram_lane_private": (2, 512),
        "read_only": (2, 512),
        "histogram_last_block": (2, 512),
        "histogram_bin_tickets": (1, 1024),
        "histogram_lean_count": (1, 1024),
        "read_only_wide": (2, 512),
    }[version]
    return per_sm * sm_count(), threads


def _args(version, data, out, blocks, threads, clear=True):
    validate.array("data", data, dtypes=np.uint8, ndim=1)
    validate.nonempty("data", data)
    if data.size > MAX_BYTES:
        raise ValueError(f"data has {data.size:,} bytes; at most {MAX_BYTES:,} are accepted "
                         "(the per-block counters are int32)")
    default_blocks, default_threads = default_launch(version)
    blocks, threads = validate.launch(default_blocks if blocks is None else blocks,
                                      default_threads if threads is None else threads)
    out = validate.output("out", out, data, dtype=np.int64, shape=(BINS,))
    if clear and validate.on_device(out):  # (the one-launch versions write every bin)
        clear_kernel[1, BINS](out)
    elif clear:
        out[:] = 0
    return out, blocks, threads


def _words(data, word=np.uint32):
    """`data` on the device and its first bytes seen as whole words of type `word`.

    Returns (words, data) for kernels that take both. A host array is copied to the
    device once here: passed twice to a kernel, Numba would copy it twice (and back)."""
    if not validate.on_device(data):
        data = cuda.to_device(data)
    size = np.dtype(word).itemsize
    interface = getattr(data, "__cuda_array_interface__", None)
    if interface is not None and interface["data"][0] % size != 0:
        raise ValueError(f"data must start at an address divisible by {size} to be read as "
                         f"{size}-byte words (a device array sliced at an odd offset was "
                         "given); copy it into a new device array")
    return data[:data.size // size * size].view(word), data


def histogram_global_atomics(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127 in `data` (uint8): one global atomic per byte."""
    out, blocks, threads = _args("histogram_global_atomics", data, out, blocks, threads)
    histogram_global_atomics_kernel[blocks, threads](data, out)
    return out


def histogram_shared_atomics(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: per-block shared histogram, then global atomics."""
    out, blocks, threads = _args("histogram_shared_atomics", data, out, blocks, threads)
    histogram_shared_atomics_kernel[blocks, threads](data, out)
    return out


def histogram_shared_atomics_int64(data, out=None, *, blocks=None, threads=None):
    """histogram_shared_atomics with 64-bit shared counters (a pitfall, kept to measure it)."""
    out, blocks, threads = _args("histogram_shared_atomics_int64", data, out, blocks, threads)
    histogram_shared_atomics_int64_kernel[blocks, threads](data, out)
    return out


def histogram_shared_wide_loads(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: per-block shared histogram, 4 bytes per load."""
    out, blocks, threads = _args("histogram_shared_wide_loads", data, out, blocks, threads)
    histogram_shared_wide_loads_kernel[blocks, threads](*_words(data), out)
    return out


def histogram_lane_private(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: 4 bytes per load, one shared histogram per warp lane."""
    out, blocks, threads = _args("histogram_lane_private", data, out, blocks, threads)
    histogram_lane_private_kernel[blocks, threads](*_words(data), out)
    return out


def histogram_last_block(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: lane-private counters, 8-byte loads, one launch (no
    clearing launch: the last block writes every bin of `out`)."""
    out, blocks, threads = _args("histogram_last_block", data, out, blocks, threads,
                                 clear=False)
    totals = scratch.buffer("histogram totals", np.zeros(BINS, np.int32))
    ticket = scratch.buffer("histogram ticket", np.zeros(1, np.int32))
    histogram_last_block_kernel[blocks, threads](*_words(data, np.uint64), totals,
                                                 ticket, out)
    return out


def histogram_bin_tickets(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: histogram_last_block with one ticket per bin (the block
    that adds last to a bin writes it out) and no branch per byte."""
    out, blocks, threads = _args("histogram_bin_tickets", data, out, blocks, threads,
                                 clear=False)
    totals = scratch.buffer("histogram bin tickets", np.zeros(BINS, np.uint64))
    histogram_bin_tickets_kernel[blocks, threads](*_words(data, np.uint64), totals, out)
    return out


def histogram_lean_count(data, out=None, *, blocks=None, threads=None):
    """Counts of bytes 0-127: histogram_bin_tickets with fewer instructions per byte
    (32-bit arithmetic, unrolled loops, a counter row for every byte value) and its
    first loads issued before the counters are cleared."""
    out, blocks, threads = _args("histogram_lean_count", data, out, blocks, threads,
                                 clear=False)
    totals = scratch.buffer("histogram lean count", np.zeros(BINS, np.uint64))
    histogram_lean_count_kernel[blocks, threads](*_words(data, np.uint64), totals, out)
    return out


VERSIONS = {
    "histogram_global_atomics": histogram_global_atomics,
    "histogram_shared_atomics": histogram_shared_atomics,
    "histogram_shared_wide_loads": histogram_shared_wide_loads,
    "histogram_lane_private": histogram_lane_private,
    "histogram_last_block": histogram_last_block,
    "histogram_bin_tickets": histogram_bin_tickets,
    "histogram_lean_count": histogram_lean_count,
}
