"""Correct answers to the atomics and histogram exercises, in other styles."""

ANSWERS = {
    "atomics-ex-256": [
        ("one bin per thread of a 256-thread block, a fixed grid", '''
import numpy as np
from numba import cuda


@cuda.jit
def bytes_kernel(data, hist):
    bins = cuda.shared.array(256, np.int32)
    t = cuda.threadIdx.x
    bins[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    while i < data.size:
        cuda.atomic.add(bins, data[i], 1)
        i += cuda.gridsize(1)
    cuda.syncthreads()
    cuda.atomic.add(hist, t, bins[t])


def histogram_256(data):
    d_hist = cuda.to_device(np.zeros(256, np.int32))
    bytes_kernel[32, 256](cuda.to_device(data), d_hist)
    return d_hist.copy_to_host()
'''),
        ("dynamic shared memory, sized at the launch", '''
import numpy as np
from numba import cuda, int32


@cuda.jit
def dyn_hist_kernel(data, hist):
    counts = cuda.shared.array(0, int32)
    for b in range(cuda.threadIdx.x, 256, cuda.blockDim.x):
        counts[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(counts, data[i], 1)
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, 256, cuda.blockDim.x):
        cuda.atomic.add(hist, b, counts[b])


def histogram_256(data):
    hist = cuda.to_device(np.zeros(256, np.int64))
    threads = 96
    blocks = max(1, min(64, (data.size + threads - 1) // threads))
    dyn_hist_kernel[blocks, threads, 0, 256 * 4](cuda.to_device(data), hist)
    return hist.copy_to_host()
'''),
        ("the histogram zeroed by a kernel on the default stream", '''
import numpy as np
from numba import cuda


@cuda.jit
def zero_bins_kernel(h):
    i = cuda.grid(1)
    if i < h.size:
        h[i] = 0


@cuda.jit
def block_bytes_kernel(data, h):
    s = cuda.shared.array(256, np.uint32)
    for b in range(cuda.threadIdx.x, 256, cuda.blockDim.x):
        s[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(s, data[i], np.uint32(1))
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, 256, cuda.blockDim.x):
        if s[b] > 0:
            cuda.atomic.add(h, b, s[b])


def histogram_256(data):
    h = cuda.device_array(256, np.uint32)
    zero_bins_kernel[1, 256](h)
    block_bytes_kernel[20, 160](cuda.to_device(data), h)
    return h.copy_to_host().astype(np.int64)
'''),
    ],
    "atomics-ex-words": [
        ("the thread at a word's last letter measures it", '''
import numpy as np
from numba import cuda


@cuda.jit(device=True)
def letter(c):
    return (65 <= c <= 90) or (97 <= c <= 122)


@cuda.jit
def word_ends_kernel(text, counts):
    bins = cuda.shared.array(32, np.int32)
    if cuda.threadIdx.x < 32:
        bins[cuda.threadIdx.x] = 0
    cuda.syncthreads()
    n = text.size
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        if letter(text[i]) and (i == n - 1 or not letter(text[i + 1])):
            start = i
            while start > 0 and letter(text[start - 1]):
                start -= 1
            cuda.atomic.add(bins, min(i - start + 1, 31), 1)
    cuda.syncthreads()
    if cuda.threadIdx.x < 32:
        cuda.atomic.add(counts, cuda.threadIdx.x, bins[cuda.threadIdx.x])


def word_length_histogram(data):
    counts = cuda.to_device(np.zeros(32, np.int64))
    word_ends_kernel[16, 64](cuda.to_device(data), counts)
    return counts.copy_to_host()
'''),
        ("global atomics, a grid from the size", '''
import math

import numpy as np
from numba import cuda


@cuda.jit
def word_starts_kernel(data, hist):
    i = cuda.grid(1)
    if i < data.size:
        c = data[i]
        is_l = (c >= 65 and c <= 90) or (c >= 97 and c <= 122)
        p = data[i - 1] if i > 0 else 32
        prev_l = (p >= 65 and p <= 90) or (p >= 97 and p <= 122)
        if is_l and not prev_l:
            j = i
            while j < data.size and ((data[j] >= 65 and data[j] <= 90)
                                     or (data[j] >= 97 and data[j] <= 122)):
                j += 1
            cuda.atomic.add(hist, min(j - i, 31), 1)


def word_length_histogram(data):
    hist = cuda.to_device(np.zeros(32, np.int32))
    word_starts_kernel[math.ceil(data.size / 128), 128](cuda.to_device(data), hist)
    return hist.copy_to_host()
'''),
        ("a lookup table of letters in shared memory", '''
import numpy as np
from numba import cuda


@cuda.jit
def words_table_kernel(data, hist):
    is_letter = cuda.shared.array(256, np.uint8)
    local = cuda.shared.array(32, np.int32)
    for c in range(cuda.threadIdx.x, 256, cuda.blockDim.x):
        is_letter[c] = 1 if (65 <= c <= 90 or 97 <= c <= 122) else 0
    for b in range(cuda.threadIdx.x, 32, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        if is_letter[data[i]] == 1 and (i == 0 or is_letter[data[i - 1]] == 0):
            k = i
            while k < data.size and is_letter[data[k]] == 1:
                k += 1
            cuda.atomic.add(local, min(k - i, 31), 1)
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, 32, cuda.blockDim.x):
        cuda.atomic.add(hist, b, local[b])


def word_length_histogram(data):
    hist = cuda.to_device(np.zeros(32, np.int64))
    words_table_kernel[8, 256](cuda.to_device(data), hist)
    return hist.copy_to_host()
'''),
        ("chunks copied with the byte before and the letters after, each chunk's words counted once", '''
import numpy as np
from numba import cuda, int32


@cuda.jit(device=True)
def letter(c):
    return (c >= 65 and c <= 90) or (c >= 97 and c <= 122)


@cuda.jit
def wc_kernel(data, first, own, hist):
    # counts the words that START in data[first:first + own]; data has context around
    local = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    for b in range(t, 32, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(first + cuda.grid(1), first + own, cuda.gridsize(1)):
        if letter(data[i]) and (i == 0 or not letter(data[i - 1])):
            end = i + 1
            while end < data.size and letter(data[end]):
                end += 1
            cuda.atomic.add(local, min(end - i, 31), 1)
    cuda.syncthreads()
    for b in range(t, 32, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])


CH = 1000


def word_length_histogram(data):
    hist = cuda.to_device(np.zeros(32, np.int64))
    for lo in range(0, data.size, CH):
        a = max(0, lo - 1)
        b = min(data.size, lo + CH + 64)
        piece = np.array(data[a:b])            # a copy with one byte before, 64 after
        # (word lengths past 31 all count as 31, so 64 bytes of look-ahead is not enough
        #  in general; extend until a non-letter)
        while b < data.size and (65 <= piece[-1] <= 90 or 97 <= piece[-1] <= 122):
            b = min(data.size, b + 64)
            piece = np.array(data[a:b])
        wc_kernel[4, 128](cuda.to_device(piece), lo - a, min(CH, data.size - lo), hist)
    return hist.copy_to_host()
'''),
    ],
    "atomics-ex-positions": [
        ("one thread per element, a 64-bit counter", '''
import numpy as np
from numba import cuda


@cuda.jit
def find_kernel(data, value, out, n_found):
    i = cuda.grid(1)
    if i < data.size and data[i] == value:
        out[cuda.atomic.add(n_found, 0, 1)] = i


def positions_of(data, value):
    out = cuda.device_array(max(data.size, 1), np.int64)
    n_found = cuda.to_device(np.zeros(1, np.int64))
    find_kernel[(data.size + 255) // 256, 256](cuda.to_device(data), value, out, n_found)
    k = int(n_found.copy_to_host()[0])
    return out.copy_to_host()[:k]
'''),
        ("atomic.inc on an unsigned counter, a grid-stride loop", '''
import numpy as np
from numba import cuda


@cuda.jit
def claim_kernel(data, value, out, count):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        if data[i] == value:
            slot = cuda.atomic.inc(count, 0, np.uint32(0xFFFFFFFF))
            out[slot] = i


def positions_of(data, value):
    out = cuda.device_array(data.size, np.int32)
    count = cuda.to_device(np.zeros(1, np.uint32))
    claim_kernel[8, 128](cuda.to_device(data), np.uint8(value), out, count)
    return out.copy_to_host()[:int(count.copy_to_host()[0])]
'''),
        ("flags, then a serial scan by one thread", '''
import numpy as np
from numba import cuda


@cuda.jit
def flag_kernel(data, value, flags):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        flags[i] = 1 if data[i] == value else 0


@cuda.jit
def compact_kernel(flags, out, total):
    if cuda.grid(1) == 0:
        k = 0
        for i in range(flags.size):
            if flags[i]:
                out[k] = i
                k += 1
        total[0] = k


def positions_of(data, value):
    flags = cuda.device_array(data.size, np.int8)
    flag_kernel[4, 128](cuda.to_device(data), value, flags)
    out = cuda.device_array(data.size, np.int64)
    total = cuda.device_array(1, np.int64)
    compact_kernel[1, 1](flags, out, total)
    return out.copy_to_host()[:total.copy_to_host()[0]]
'''),
        ("the output sized by a count of the matches made on the host", '''
import numpy as np
from numba import cuda


@cuda.jit
def pos_kernel(data, value, out, count):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        if data[i] == value:
            slot = cuda.atomic.add(count, 0, 1)
            if slot < out.size:
                out[slot] = i


def positions_of(data, value):
    k = int(np.count_nonzero(data == value))   # exactly as many slots as matches
    out = cuda.device_array(max(k, 1), np.int64)
    count = cuda.to_device(np.zeros(1, np.int32))
    pos_kernel[8, 128](cuda.to_device(data), np.uint8(value), out, count)
    return out.copy_to_host()[:k]
'''),
    ],
}
