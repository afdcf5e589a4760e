"""Correct answers to the mutex exercises, in other styles (locks of the student's own)."""

ANSWERS = {
    "mutex-ex-deadlock": [
        ("a lock of its own, thread 0 adds up its block", '''
import numpy as np
from numba import cuda, float32

SP_THREADS = 128


@cuda.jit(device=True)
def sp_acquire(m):
    while cuda.atomic.cas(m, 0, 0, 1) != 0:
        pass
    cuda.threadfence()


@cuda.jit(device=True)
def sp_release(m):
    cuda.threadfence()
    cuda.atomic.exch(m, 0, 0)


@cuda.jit
def sp_kernel(x, total, m):
    part = cuda.shared.array(SP_THREADS, float32)
    acc = float32(0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > 0:
            acc += x[i]
    part[cuda.threadIdx.x] = acc
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        s = float32(0)
        for j in range(SP_THREADS):
            s += part[j]
        sp_acquire(m)
        total[0] += s
        sp_release(m)


def sum_positive(x):
    total = cuda.to_device(np.zeros(1, np.float32))
    m = cuda.to_device(np.zeros(1, np.int32))
    sp_kernel[min(16, (x.size + SP_THREADS - 1) // SP_THREADS), SP_THREADS](
        cuda.to_device(x), total, m)
    return float(total.copy_to_host()[0])
'''),
        ("the course's lock and unlock, a float64 total", '''
import numpy as np
from numba import cuda, float64

from kernels.locks import MAX_SPINS, lock, unlock

SP2_THREADS = 256


@cuda.jit
def positive_total_kernel(x, total, m, gave_up, spins):
    tree = cuda.shared.array(SP2_THREADS, float64)
    t = cuda.threadIdx.x
    s = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        s += max(x[i], 0.0)
    tree[t] = s
    cuda.syncthreads()
    h = SP2_THREADS // 2
    while h > 0:
        if t < h:
            tree[t] += tree[t + h]
        cuda.syncthreads()
        h //= 2
    if t == 0:
        if lock(m, 0, spins):
            total[0] = total[0] + tree[0]
            unlock(m, 0)
        else:
            gave_up[0] = 1


def sum_positive(x):
    total = cuda.to_device(np.zeros(1))
    m = cuda.to_device(np.zeros(1, np.int32))
    gave_up = cuda.to_device(np.zeros(1, np.int32))
    positive_total_kernel[8, SP2_THREADS](cuda.to_device(x), total, m, gave_up, MAX_SPINS)
    if gave_up.copy_to_host()[0]:
        raise RuntimeError("a block gave up waiting for the lock")
    return total.copy_to_host()[0]
'''),
        ("a test-and-set lock taken with exchange", '''
import numpy as np
from numba import cuda, float32


@cuda.jit
def tas_sum_kernel(x, total, flag):
    part = cuda.shared.array(64, float32)
    acc = float32(0)
    i = cuda.grid(1)
    while i < x.size:
        v = x[i]
        if v > 0:
            acc += v
        i += cuda.gridsize(1)
    part[cuda.threadIdx.x] = acc
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        for j in range(1, 64):
            acc += part[j]
        while cuda.atomic.exch(flag, 0, 1) == 1:
            pass
        cuda.threadfence()
        total[0] += acc
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 0)


def sum_positive(x):
    total = cuda.to_device(np.zeros(1, np.float32))
    flag = cuda.to_device(np.zeros(1, np.int32))
    tas_sum_kernel[5, 64](cuda.to_device(x), total, flag)
    return total.copy_to_host()[0]
'''),
    ],
    "mutex-ex-argmax": [
        ("a lock of its own, thread 0 scans its block", '''
import math

import numpy as np
from numba import cuda, float32, int64

AX_THREADS = 128


@cuda.jit
def am_kernel(x, best_v, best_i, m):
    vs = cuda.shared.array(AX_THREADS, float32)
    ks = cuda.shared.array(AX_THREADS, int64)
    t = cuda.threadIdx.x
    v = -math.inf
    k = x.size
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > v or k == x.size:  # the first seen, even -inf
            v = x[i]
            k = i
    vs[t] = v
    ks[t] = k
    cuda.syncthreads()
    if t == 0:
        for j in range(1, AX_THREADS):
            if vs[j] > v or (vs[j] == v and ks[j] < k):
                v = vs[j]
                k = ks[j]
        while cuda.atomic.cas(m, 0, 0, 1) != 0:
            pass
        cuda.threadfence()
        if v > best_v[0] or (v == best_v[0] and k < best_i[0]):
            best_v[0] = v
            best_i[0] = k
        cuda.threadfence()
        cuda.atomic.exch(m, 0, 0)


def my_argmax(x):
    best_v = cuda.to_device(np.array([-np.inf], np.float32))
    best_i = cuda.to_device(np.array([x.size], np.int64))
    m = cuda.to_device(np.zeros(1, np.int32))
    am_kernel[12, AX_THREADS](cuda.to_device(x), best_v, best_i, m)
    return best_v.copy_to_host()[0], int(best_i.copy_to_host()[0])
'''),
        ("the course's lock; the pair kept in one record array of two", '''
import numpy as np
from numba import cuda, float64

from kernels.locks import MAX_SPINS, lock, unlock


@cuda.jit
def pair_kernel(x, best, m, failed, spins):
    v = -np.inf
    k = -1
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > v or k < 0:
            v = float64(x[i])
            k = i
    if k >= 0:
        if lock(m, 0, spins):
            if v > best[0] or (v == best[0] and k < best[1]):
                best[0] = v
                best[1] = k
            unlock(m, 0)
        else:
            failed[0] = 1


def my_argmax(x):
    best = cuda.to_device(np.array([-np.inf, x.size], np.float64))
    m = cuda.to_device(np.zeros(1, np.int32))
    failed = cuda.to_device(np.zeros(1, np.int32))
    pair_kernel[2, 32](cuda.to_device(x), best, m, failed, MAX_SPINS)
    if failed.copy_to_host()[0]:
        raise RuntimeError("lock timeout")
    v, k = best.copy_to_host()
    return np.float32(v), int(k)
'''),
        ("a test-and-set lock and a shared-memory tree", '''
import numpy as np
from numba import cuda, float32, int32

TS_THREADS = 64


@cuda.jit
def tas_argmax_kernel(x, out_v, out_i, flag):
    sv = cuda.shared.array(TS_THREADS, float32)
    si = cuda.shared.array(TS_THREADS, int32)
    t = cuda.threadIdx.x
    v = float32(-np.inf)
    k = x.size
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > v or k == x.size:
            v = x[i]
            k = i
    sv[t] = v
    si[t] = k
    cuda.syncthreads()
    step = TS_THREADS // 2
    while step > 0:
        if t < step:
            if sv[t + step] > sv[t] or (sv[t + step] == sv[t] and si[t + step] < si[t]):
                sv[t] = sv[t + step]
                si[t] = si[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        while cuda.atomic.exch(flag, 0, 1) != 0:
            pass
        cuda.threadfence()
        if sv[0] > out_v[0] or (sv[0] == out_v[0] and si[0] < out_i[0]):
            out_v[0] = sv[0]
            out_i[0] = si[0]
        cuda.threadfence()
        cuda.atomic.exch(flag, 0, 0)


def my_argmax(x):
    out_v = cuda.to_device(np.full(1, -np.inf, np.float32))
    out_i = cuda.to_device(np.full(1, x.size, np.int32))
    flag = cuda.to_device(np.zeros(1, np.int32))
    tas_argmax_kernel[7, TS_THREADS](cuda.to_device(x), out_v, out_i, flag)
    return out_v.copy_to_host()[0], int(out_i.copy_to_host()[0])
'''),
    ],
    "mutex-ex-bins": [
        ("locks of its own, one per bin", '''
import numpy as np
from numba import cuda


@cuda.jit(device=True)
def bp_take(locks, k):
    while cuda.atomic.cas(locks, k, 0, 1) != 0:
        pass
    cuda.threadfence()


@cuda.jit(device=True)
def bp_give(locks, k):
    cuda.threadfence()
    cuda.atomic.exch(locks, k, 0)


@cuda.jit
def bp_kernel(keys, values, prod, locks):
    for i in range(cuda.grid(1), keys.size, cuda.gridsize(1)):
        k = keys[i]
        bp_take(locks, k)
        prod[k] = prod[k] * values[i]
        bp_give(locks, k)


def my_bin_product(keys, values, nbins):
    prod = cuda.to_device(np.ones(nbins, np.float32))
    locks = cuda.to_device(np.zeros(nbins, np.int32))
    bp_kernel[6, 64](cuda.to_device(keys), cuda.to_device(values), prod, locks)
    return prod.copy_to_host()
'''),
        ("the course's lock, one thread per element", '''
import numpy as np
from numba import cuda

from kernels.locks import MAX_SPINS, lock, unlock


@cuda.jit
def per_element_kernel(keys, values, prod, locks, failed, spins):
    i = cuda.grid(1)
    if i < keys.size:
        if lock(locks, keys[i], spins):
            prod[keys[i]] *= values[i]
            unlock(locks, keys[i])
        else:
            failed[0] = 1


def my_bin_product(keys, values, nbins):
    prod = cuda.to_device(np.ones(nbins, np.float32))
    locks = cuda.to_device(np.zeros(nbins, np.int32))
    failed = cuda.to_device(np.zeros(1, np.int32))
    per_element_kernel[(keys.size + 127) // 128, 128](
        cuda.to_device(keys), cuda.to_device(values), prod, locks, failed, MAX_SPINS)
    if failed.copy_to_host()[0]:
        raise RuntimeError("a bin's lock timed out")
    return prod.copy_to_host()
'''),
        ("test-and-set locks, float64 products", '''
import numpy as np
from numba import cuda


@cuda.jit
def tas_bins_kernel(keys, values, prod, flags):
    for i in range(cuda.grid(1), keys.size, cuda.gridsize(1)):
        k = keys[i]
        while cuda.atomic.exch(flags, k, 1) == 1:
            pass
        cuda.threadfence()
        prod[k] *= values[i]
        cuda.threadfence()
        cuda.atomic.exch(flags, k, 0)


def my_bin_product(keys, values, nbins):
    prod = cuda.to_device(np.ones(nbins, np.float64))
    flags = cuda.to_device(np.zeros(nbins, np.int32))
    tas_bins_kernel[3, 96](cuda.to_device(keys), cuda.to_device(values), prod, flags)
    return prod.copy_to_host()
'''),
        ("keys and values in one transfer, with the course's lock and unlock", '''
import numpy as np
from numba import cuda

from kernels.locks import MAX_SPINS, lock, unlock


@cuda.jit
def packed_kernel(packed, n, prod, locks, failed, spins):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        k = int(packed[i])
        if lock(locks, k, spins):
            prod[k] *= packed[n + i]
            unlock(locks, k)
        else:
            failed[0] = 1


def my_bin_product(keys, values, nbins):
    packed = np.concatenate([keys.astype(np.float32), values])   # one copy, not two
    prod = cuda.to_device(np.ones(nbins, np.float32))
    locks = cuda.to_device(np.zeros(nbins, np.int32))
    failed = cuda.to_device(np.zeros(1, np.int32))
    packed_kernel[4, 128](cuda.to_device(packed), keys.size, prod, locks, failed, MAX_SPINS)
    return prod.copy_to_host()
'''),
    ],
}
