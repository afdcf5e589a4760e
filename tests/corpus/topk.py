"""Correct answers to the top-k exercise (fn(x, blocks)), in other styles."""

ANSWERS = {
    "reduction-ex-topk": [
        ("each thread's K in a local array, one thread selects from all of them", '''
import numpy as np
from numba import cuda, int32

TOP = 10
TK_THREADS = 128


@cuda.jit
def thread_tops_kernel(x, cand):
    mine = cuda.local.array(TOP, int32)
    for j in range(TOP):
        mine[j] = -2**31
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        if v > mine[TOP - 1]:
            j = TOP - 1
            while j > 0 and mine[j - 1] < v:
                mine[j] = mine[j - 1]
                j -= 1
            mine[j] = v
    base = cuda.grid(1) * TOP
    for j in range(TOP):
        cand[base + j] = mine[j]


@cuda.jit
def select_kernel(cand, out):
    if cuda.grid(1) == 0:
        for j in range(TOP):
            out[j] = -2**31
        for i in range(cand.size):
            v = cand[i]
            if v > out[TOP - 1]:
                j = TOP - 1
                while j > 0 and out[j - 1] < v:
                    out[j] = out[j - 1]
                    j -= 1
                out[j] = v


def topk(x, blocks):
    cand = cuda.device_array(blocks * TK_THREADS * TOP, np.int32)
    thread_tops_kernel[blocks, TK_THREADS](cuda.to_device(x), cand)
    out = cuda.device_array(TOP, np.int32)
    select_kernel[1, 1](cand, out)
    return out.copy_to_host()
'''),
        ("rounds of atomic.max below the last value found, launched from a host loop", '''
import numpy as np
from numba import cuda


@cuda.jit
def below_max_kernel(x, limit, best):
    m = np.int64(-2**62)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] < limit and x[i] > m:
            m = x[i]
    cuda.atomic.max(best, 0, m)


@cuda.jit
def count_equal_kernel(x, value, count):
    c = 0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == value:
            c += 1
    cuda.atomic.add(count, 0, c)


def topk(x, blocks, k=10):
    d_x = cuda.to_device(x)
    found = []
    limit = 2**31
    while len(found) < k:
        best = cuda.to_device(np.array([-2**62], np.int64))
        below_max_kernel[blocks, 64](d_x, limit, best)
        value = int(best.copy_to_host()[0])
        count = cuda.to_device(np.zeros(1, np.int64))
        count_equal_kernel[blocks, 64](d_x, value, count)
        found += [value] * int(count.copy_to_host()[0])
        limit = value
    return np.array(found[:k], np.int32)
'''),
        ("each block's thread 0 merges its threads' lists; again until one list is left", '''
import numpy as np
from numba import cuda, int32

KK = 10
MB_THREADS = 32


@cuda.jit
def block_top_kernel(x, out):
    lists = cuda.shared.array((MB_THREADS, KK), int32)
    t = cuda.threadIdx.x
    for j in range(KK):
        lists[t, j] = -2**31
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        j = KK - 1
        if v > lists[t, j]:
            while j > 0 and lists[t, j - 1] < v:
                lists[t, j] = lists[t, j - 1]
                j -= 1
            lists[t, j] = v
    cuda.syncthreads()
    if t == 0:
        for other in range(1, MB_THREADS):
            for q in range(KK):
                v = lists[other, q]
                j = KK - 1
                if v > lists[0, j]:
                    while j > 0 and lists[0, j - 1] < v:
                        lists[0, j] = lists[0, j - 1]
                        j -= 1
                    lists[0, j] = v
        for j in range(KK):
            out[cuda.blockIdx.x * KK + j] = lists[0, j]


def topk(x, blocks):
    data = cuda.to_device(x)
    while True:
        out = cuda.device_array(blocks * KK, np.int32)
        block_top_kernel[blocks, MB_THREADS](data, out)
        if blocks == 1:
            return out.copy_to_host()
        data, blocks = out, max(1, blocks // 8)
'''),
    ],
}
