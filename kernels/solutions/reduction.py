"""Solutions to the reduction chapter's exercises.

Each host function launches its kernel with `blocks` blocks of THREADS threads, the
way the checkers call it: fn(x, blocks), x a NumPy array.
    mean_variance   sum and sum of squares in float64 in one pass; mean and variance from them
    argmax          (value, index) packed into one int64, so one atomic.max finds the first maximum
    kahan_sum       Kahan-compensated float64 partial per thread, then the shared-memory tree
    topk            each block's K largest, then the same kernel over the blocks' candidates
"""

import numpy as np
from numba import cuda, float64, int32, int64

from kernels.reduction import THREADS

K = 10  # top-k: how many of the largest values
LOW_BITS = 0xFFFFFFFF  # argmax: the low 32 bits of a key hold 2**32 - 1 - index


@cuda.jit
def mean_variance_kernel(x, out):
    sums = cuda.shared.array(THREADS, float64)
    squares = cuda.shared.array(THREADS, float64)
    tid = cuda.threadIdx.x
    s = 0.0
    s2 = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = float64(x[i])  # float32 sums of squares lose the variance to rounding
        s += v
        s2 += v * v
    sums[tid] = s
    squares[tid] = s2
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:  # two trees in step, as in minmax_shared_tree_kernel
        if tid < half:
            sums[tid] += sums[tid + half]
            squares[tid] += squares[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, sums[0])
        cuda.atomic.add(out, 1, squares[0])


def mean_variance(x, blocks):
    """[mean, population variance] of a float32 array, in one pass over it."""
    out = cuda.to_device(np.zeros(2))
    mean_variance_kernel[blocks, THREADS](cuda.to_device(x), out)
    s, s2 = out.copy_to_host()
    mean = s / x.size
    return np.array([mean, max(s2 / x.size - mean * mean, 0.0)])  # rounding can dip below 0


@cuda.jit
def argmax_kernel(x, out):
    keys = cuda.shared.array(THREADS, int64)
    tid = cuda.threadIdx.x
    # A larger value gives a larger key; for equal values, a smaller index does.
    best = (int64(x[0]) << 32) | LOW_BITS
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        best = max(best, (int64(x[i]) << 32) | (LOW_BITS - i))
    keys[tid] = best
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            keys[tid] = max(keys[tid], keys[tid + half])
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.max(out, 0, keys[0])


def argmax(x, blocks):
    """Index of the first maximum of an int32 array, like np.argmax."""
    first_key = (np.int64(x[0]) << 32) | LOW_BITS  # element 0: a key that is in the data
    out = cuda.to_device(np.array([first_key], dtype=np.int64))
    argmax_kernel[blocks, THREADS](cuda.to_device(x), out)
    return LOW_BITS - (int(out.copy_to_host()[0]) & LOW_BITS)


@cuda.jit
def kahan_sum_kernel(x, out):
    partials = cuda.shared.array(THREADS, float64)
    tid = cuda.threadIdx.x
    s = 0.0
    c = 0.0  # the part of the last addition that rounding dropped, negated
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y = x[i] - c
        t = s + y
        c = (t - s) - y  # zero in exact arithmetic: this is the rounding error
        s = t
    partials[tid] = s - c
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if tid < half:
            partials[tid] += partials[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partials[0])


def kahan_sum(x, blocks):
    """Sum of a float64 array with Kahan compensation in each thread's loop."""
    out = cuda.to_device(np.zeros(1))
    kahan_sum_kernel[blocks, THREADS](cuda.to_device(x), out)
    return out.copy_to_host()[0]


@cuda.jit
def topk_kernel(x, best_out):
    best = cuda.shared.array((THREADS, K), int32)  # each thread's K largest, descending
    merged = cuda.local.array(K, int32)
    tid = cuda.threadIdx.x
    for j in range(K):
        best[tid, j] = -2**31  # the identity: no int32 is smaller
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        if v > best[tid, K - 1]:  # most values stop here once the list has filled up
            j = K - 1
            while j > 0 and best[tid, j - 1] < v:
                best[tid, j] = best[tid, j - 1]
                j -= 1
            best[tid, j] = v
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:  # the tree again: each step merges two sorted lists, keeps K
        if tid < half:
            p = 0
            q = 0
            for j in range(K):
                if best[tid, p] >= best[tid + half, q]:
                    merged[j] = best[tid, p]
                    p += 1
                else:
                    merged[j] = best[tid + half, q]
                    q += 1
            for j in range(K):
                best[tid, j] = merged[j]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        for j in range(K):
            best_out[cuda.blockIdx.x * K + j] = best[0, j]


def topk(x, blocks):
    """The K largest values of an int32 array (x.size >= K), largest first."""
    candidates = cuda.device_array(blocks * K, np.int32)
    topk_kernel[blocks, THREADS](cuda.to_device(x), candidates)  # K per block
    result = cuda.device_array(K, np.int32)
    topk_kernel[1, THREADS](candidates, result)  # one block: K of all the candidates
    return result.copy_to_host()
