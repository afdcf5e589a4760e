"""Solutions to the mutex chapter's exercises: each host function returns its answer."""

import math

import numpy as np
from numba import cuda, float32, int64

from kernels.locks import MAX_SPINS, DeviceTotal, LockTimeout, lock, unlock
from kernels.mutex import MAX_THREADS, THREADS, block_sum, default_blocks


@cuda.jit
def sum_positive_kernel(x, total, mutex, failed, max_spins):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    acc = float32(0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > 0:
            acc += x[i]
    s_block[tid] = acc
    cuda.syncthreads()
    block_sum(s_block)
    if tid == 0:
        if not lock(mutex, 0, max_spins):
            failed[0] = 1
            return
        # Every path from lock to the end of the kernel passes through unlock.
        if s_block[0] != 0:
            total[0] += s_block[0]
        unlock(mutex, 0)


def sum_positive(x):
    total = DeviceTotal(np.float32).reset()
    blocks = default_blocks(x.size, THREADS)
    sum_positive_kernel[blocks, THREADS](x, total.total, total.mutex, total.failed, MAX_SPINS)
    return total.value()


@cuda.jit
def argmax_mutex_kernel(x, best_value, best_index, mutex, failed, max_spins):
    s_value = cuda.shared.array(MAX_THREADS, float32)
    s_index = cuda.shared.array(MAX_THREADS, int64)
    tid = cuda.threadIdx.x
    value = -math.inf
    index = x.size  # larger than any index: loses every tie
    # Indices only grow along the loop, so '>' keeps the first of equal values; the
    # first one seen is taken whatever it is (all -inf has a largest value too).
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > value or index == x.size:
            value = x[i]
            index = i
    s_value[tid] = value
    s_index[tid] = index
    cuda.syncthreads()
    i = cuda.blockDim.x // 2
    while i > 0:
        if tid < i:
            v, j = s_value[tid + i], s_index[tid + i]
            if v > s_value[tid] or (v == s_value[tid] and j < s_index[tid]):
                s_value[tid] = v
                s_index[tid] = j
        cuda.syncthreads()
        i //= 2
    if tid == 0:
        # Two words change together: no single atomic can do this, a lock can.
        if lock(mutex, 0, max_spins):
            v, j = s_value[0], s_index[0]
            if v > best_value[0] or (v == best_value[0] and j < best_index[0]):
                best_value[0] = v
                best_index[0] = j
            unlock(mutex, 0)
        else:
            failed[0] = 1


def argmax_mutex(x):
    """(largest value, index of its first occurrence) of a float32 array."""
    best_value = cuda.to_device(np.full(1, -np.inf, np.float32))
    best_index = cuda.to_device(np.full(1, x.size, np.int64))
    mutex = cuda.to_device(np.zeros(1, np.int32))
    failed = cuda.to_device(np.zeros(1, np.int32))
    blocks = default_blocks(x.size, THREADS)
    argmax_mutex_kernel[blocks, THREADS](x, best_value, best_index, mutex, failed, MAX_SPINS)
    if failed.copy_to_host()[0]:
        raise LockTimeout("a thread gave up waiting for the lock")
    return best_value.copy_to_host()[0], int(best_index.copy_to_host()[0])


@cuda.jit
def bin_product_kernel(keys, values, products, locks, failed, max_spins):
    for i in range(cuda.grid(1), keys.size, cuda.gridsize(1)):
        k = keys[i]
        # One lock per bin: threads with different bins never wait for each other.
        if lock(locks, k, max_spins):
            products[k] *= values[i]
            unlock(locks, k)
        else:
            failed[0] = 1


def bin_product(keys, values, nbins):
    products = cuda.to_device(np.ones(nbins, np.float32))
    locks = cuda.to_device(np.zeros(nbins, np.int32))
    failed = cuda.to_device(np.zeros(1, np.int32))
    blocks = default_blocks(keys.size, THREADS)
    bin_product_kernel[blocks, THREADS](keys, values, products, locks, failed, MAX_SPINS)
    if failed.copy_to_host()[0]:
        raise LockTimeout("a thread gave up waiting for a bin's lock")
    return products.copy_to_host()
