"""Reference solutions to the exercises of the atomics and histogram chapter."""

import numpy as np
from numba import cuda

from kernels.gridstride import sm_count

WORD_BINS = 32


# ------------------------------------------------ exercise: a 256-bin byte histogram


@cuda.jit
def histogram_256_kernel(data, hist):
    local = cuda.shared.array(256, np.int32)
    t = cuda.threadIdx.x
    for b in range(t, 256, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(local, data[i], 1)  # every byte value has a bin: no check needed
    cuda.syncthreads()
    for b in range(t, 256, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])


def histogram_256(data):
    hist = cuda.to_device(np.zeros(256, np.int64))
    histogram_256_kernel[4 * sm_count(), 128](cuda.to_device(data), hist)
    return hist.copy_to_host()


# ------------------------------------------------ exercise: word lengths


@cuda.jit(device=True)
def is_letter(c):
    return (c >= 65 and c <= 90) or (c >= 97 and c <= 122)


@cuda.jit
def word_lengths_kernel(data, hist):
    local = cuda.shared.array(WORD_BINS, np.int32)
    t = cuda.threadIdx.x
    for b in range(t, WORD_BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        # the thread at a word's first letter measures the whole word
        if is_letter(data[i]) and (i == 0 or not is_letter(data[i - 1])):
            end = i + 1
            while end < data.size and is_letter(data[end]):
                end += 1
            cuda.atomic.add(local, min(end - i, WORD_BINS - 1), 1)
    cuda.syncthreads()
    for b in range(t, WORD_BINS, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])


def word_length_histogram(data):
    hist = cuda.to_device(np.zeros(WORD_BINS, np.int64))
    word_lengths_kernel[4 * sm_count(), 128](cuda.to_device(data), hist)
    return hist.copy_to_host()


# ------------------------------------------------ exercise: positions of a value


@cuda.jit
def positions_of_kernel(data, value, positions, count):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        if data[i] == value:
            slot = cuda.atomic.add(count, 0, 1)  # the old value: a slot no one else gets
            positions[slot] = i


def positions_of(data, value):
    positions = cuda.device_array(data.size, np.int64)
    count = cuda.to_device(np.zeros(1, np.int32))
    positions_of_kernel[4 * sm_count(), 128](cuda.to_device(data), value, positions, count)
    return positions[:int(count.copy_to_host()[0])].copy_to_host()
