"""Correct answers to the reduction exercises (fn(x, blocks)), in other styles."""

ANSWERS = {
    "reduction-ex-mean-variance": [
        ("float64 atomics from every thread, no tree", '''
import numpy as np
from numba import cuda


@cuda.jit
def moments_kernel(x, out):
    s = 0.0
    s2 = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = np.float64(x[i])
        s += v
        s2 += v * v
    cuda.atomic.add(out, 0, s)
    cuda.atomic.add(out, 1, s2)


def mean_variance(x, blocks):
    out = cuda.to_device(np.zeros(2, np.float64))
    moments_kernel[blocks, 128](cuda.to_device(x), out)
    s, s2 = out.copy_to_host()
    mean = s / x.size
    return np.array([mean, max(s2 / x.size - mean * mean, 0.0)])
'''),
        ("Welford per thread, the threads' triples merged on the host", '''
import numpy as np
from numba import cuda


@cuda.jit
def welford_kernel(x, counts, means, m2s):
    t = cuda.grid(1)
    n = 0
    mean = 0.0
    m2 = 0.0
    for i in range(t, x.size, cuda.gridsize(1)):
        n += 1
        d = x[i] - mean
        mean += d / n
        m2 += d * (x[i] - mean)
    counts[t] = n
    means[t] = mean
    m2s[t] = m2


def mean_variance(x, blocks):
    threads = 64
    total = blocks * threads
    counts = cuda.device_array(total, np.int64)
    means = cuda.device_array(total, np.float64)
    m2s = cuda.device_array(total, np.float64)
    welford_kernel[blocks, threads](cuda.to_device(x), counts, means, m2s)
    c, m, q = counts.copy_to_host(), means.copy_to_host(), m2s.copy_to_host()
    n, mean, m2 = 0, 0.0, 0.0
    for cn, cm, cq in zip(c, m, q):
        if cn:
            d = cm - mean
            new = n + cn
            mean += d * cn / new
            m2 += cq + d * d * n * cn / new
            n = new
    return np.array([mean, m2 / n])
'''),
        ("dynamic shared memory holds both trees", '''
import numpy as np
from numba import cuda, float64

MV_THREADS = 128


@cuda.jit
def sums_tree_kernel(x, out):
    both = cuda.shared.array(0, float64)
    t = cuda.threadIdx.x
    a = 0.0
    b = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = float64(x[i])
        a += v
        b += v * v
    both[t] = a
    both[MV_THREADS + t] = b
    cuda.syncthreads()
    step = MV_THREADS // 2
    while step >= 1:
        if t < step:
            both[t] += both[t + step]
            both[MV_THREADS + t] += both[MV_THREADS + t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, both[0])
        cuda.atomic.add(out, 1, both[MV_THREADS])


def mean_variance(x, blocks):
    out = cuda.to_device(np.zeros(2))
    sums_tree_kernel[blocks, MV_THREADS, 0, 2 * MV_THREADS * 8](cuda.to_device(x), out)
    s, s2 = out.copy_to_host()
    mean = s / x.size
    return np.array([mean, max(s2 / x.size - mean ** 2, 0.0)])
'''),
    ],
    "reduction-ex-argmax": [
        ("atomic.max of the value, then atomic.min of its index", '''
import numpy as np
from numba import cuda


@cuda.jit
def max_value_kernel(x, best):
    m = x[0]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        m = max(m, x[i])
    cuda.atomic.max(best, 0, m)


@cuda.jit
def first_index_kernel(x, best, where):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] == best[0]:
            cuda.atomic.min(where, 0, i)
            break


def argmax(x, blocks):
    d_x = cuda.to_device(x)
    best = cuda.to_device(np.array([x[0]], np.int32))
    where = cuda.to_device(np.array([x.size], np.int64))
    max_value_kernel[blocks, 128](d_x, best)
    first_index_kernel[blocks, 128](d_x, best, where)
    return int(where.copy_to_host()[0])
'''),
        ("thread 0 scans its block's candidates, one thread scans the blocks'", '''
import numpy as np
from numba import cuda, int32, int64

AM_THREADS = 64


@cuda.jit
def block_candidates_kernel(x, values, indices):
    v = cuda.shared.array(AM_THREADS, int32)
    k = cuda.shared.array(AM_THREADS, int64)
    t = cuda.threadIdx.x
    best = x[0]
    at = x.size
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if x[i] > best or (x[i] == best and i < at):
            best = x[i]
            at = i
    v[t] = best
    k[t] = at
    cuda.syncthreads()
    if t == 0:
        for j in range(1, AM_THREADS):
            if v[j] > best or (v[j] == best and k[j] < at):
                best = v[j]
                at = k[j]
        values[cuda.blockIdx.x] = best
        indices[cuda.blockIdx.x] = at


@cuda.jit
def pick_kernel(values, indices, out):
    if cuda.grid(1) == 0:
        best = values[0]
        at = indices[0]
        for j in range(1, values.size):
            if values[j] > best or (values[j] == best and indices[j] < at):
                best = values[j]
                at = indices[j]
        out[0] = at


def argmax(x, blocks):
    values = cuda.device_array(blocks, np.int32)
    indices = cuda.device_array(blocks, np.int64)
    out = cuda.device_array(1, np.int64)
    block_candidates_kernel[blocks, AM_THREADS](cuda.to_device(x), values, indices)
    pick_kernel[1, 1](values, indices, out)
    return int(out.copy_to_host()[0])
'''),
        ("a packed key per thread, one atomic.max each, no shared memory", '''
import numpy as np
from numba import cuda, int64

MASK32 = 0xFFFFFFFF


@cuda.jit
def key_max_kernel(x, out):
    first = cuda.grid(1)
    if first < x.size:
        best = (int64(x[first]) << 32) | (MASK32 - first)
        for i in range(first, x.size, cuda.gridsize(1)):
            key = (int64(x[i]) << 32) | (MASK32 - i)
            if key > best:
                best = key
        cuda.atomic.max(out, 0, best)


def argmax(x, blocks):
    out = cuda.to_device(np.array([np.iinfo(np.int64).min], np.int64))
    key_max_kernel[blocks, 96](cuda.to_device(x), out)
    return MASK32 - (int(out.copy_to_host()[0]) & MASK32)
'''),
    ],
    "reduction-ex-kahan": [
        ("Kahan per thread, then thread 0 sums the block's partials with Kahan", '''
import numpy as np
from numba import cuda, float64

KS_THREADS = 256


@cuda.jit
def kahan_serial_kernel(x, out):
    part = cuda.shared.array(KS_THREADS, float64)
    s = 0.0
    c = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y = x[i] - c
        t = s + y
        c = (t - s) - y
        s = t
    part[cuda.threadIdx.x] = s
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        s = 0.0
        c = 0.0
        for j in range(KS_THREADS):
            y = part[j] - c
            t = s + y
            c = (t - s) - y
            s = t
        cuda.atomic.add(out, 0, s)


def kahan_sum(x, blocks):
    out = cuda.to_device(np.zeros(1))
    kahan_serial_kernel[blocks, KS_THREADS](cuda.to_device(x), out)
    return float(out.copy_to_host()[0])
'''),
        ("Neumaier's variant, a device function, the tree", '''
import numpy as np
from numba import cuda, float64

NM_THREADS = 256


@cuda.jit(device=True)
def neumaier_add(s, c, v):
    t = s + v
    if abs(s) >= abs(v):
        c += (s - t) + v
    else:
        c += (v - t) + s
    return t, c


@cuda.jit
def neumaier_kernel(x, out):
    tree = cuda.shared.array(NM_THREADS, float64)
    s = 0.0
    c = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        s, c = neumaier_add(s, c, x[i])
    tid = cuda.threadIdx.x
    tree[tid] = s + c
    cuda.syncthreads()
    half = NM_THREADS // 2
    while half > 0:
        if tid < half:
            tree[tid] += tree[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, tree[0])


def kahan_sum(x, blocks):
    out = cuda.to_device(np.zeros(1))
    neumaier_kernel[blocks, NM_THREADS](cuda.to_device(x), out)
    return out.copy_to_host()[0]
'''),
        ("partials in global memory, summed by one thread", '''
import numpy as np
from numba import cuda


@cuda.jit
def kahan_partials_kernel(x, partials):
    s = 0.0
    comp = 0.0
    g = cuda.grid(1)
    for i in range(g, x.size, cuda.gridsize(1)):
        y = x[i] - comp
        t = s + y
        comp = (t - s) - y
        s = t
    partials[g] = s - comp


@cuda.jit
def kahan_total_kernel(partials, out):
    if cuda.grid(1) == 0:
        s = 0.0
        comp = 0.0
        for j in range(partials.size):
            y = partials[j] - comp
            t = s + y
            comp = (t - s) - y
            s = t
        out[0] = s


def kahan_sum(x, blocks):
    partials = cuda.device_array(blocks * 128, np.float64)
    kahan_partials_kernel[blocks, 128](cuda.to_device(x), partials)
    out = cuda.device_array(1, np.float64)
    kahan_total_kernel[1, 1](partials, out)
    return out.copy_to_host()[0]
'''),
        ("three chunks, each copied and summed apart, the partial sums compensated on the host", '''
import numpy as np
from numba import cuda, float64

T = 256


@cuda.jit
def ks_kernel(x, out):
    p = cuda.shared.array(T, float64)
    tid = cuda.threadIdx.x
    s = 0.0
    c = 0.0
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        y = x[i] - c
        t = s + y
        c = (t - s) - y
        s = t
    p[tid] = s - c
    cuda.syncthreads()
    h = T // 2
    while h > 0:
        if tid < h:
            p[tid] += p[tid + h]
        cuda.syncthreads()
        h //= 2
    if tid == 0:
        out[cuda.blockIdx.x] = p[0]

def kahan_sum(x, blocks):
    total = 0.0
    comp = 0.0
    for chunk in np.array_split(x, 3):
        if chunk.size == 0:
            continue
        out = cuda.device_array(blocks, np.float64)
        ks_kernel[blocks, T](cuda.to_device(chunk.copy()), out)
        for p in out.copy_to_host():          # compensated on the host too
            y = p - comp
            t = total + y
            comp = (t - total) - y
            total = t
    return total
'''),
    ],
}
