"""Mutex locks built from atomics, memory fences, and the dot product.

Versions (VERSIONS maps each name to its host function; all compute a . b):
    dot_partial     one partial sum per block, summed on the host
    dot_mutex       each block adds its partial to the total under a mutex
    dot_atomic      each block adds its partial with one float32 atomic add
    dot_last_block  dot_atomic with eight loads in flight per thread and, given a total
                    to reuse (into=), one launch: the
                    blocks add into a total kept at zero between calls, and the last
                    block to finish (a ticket taken after a memory fence) hands it out
Beside them:
    add_one_mutex   every thread adds one to a counter; one lock holder per block
    product_mutex   a product, with the multiply (which has no atomic) under a mutex
Exhibits (EXHIBITS), the bugs of a popular version, kept to be shown and tested:
    dot_mutex_tid_plus_one     the tree step adds s_block[tid + 1], not s_block[tid + i]
    dot_mutex_unzeroed_mutex   the mutex comes from cuda.device_array, never zeroed
    sum_positive_early_return  a path that returns holding the lock (an exercise)

The lock itself, its bounded spin and the DeviceTotal the launchers return live in
kernels.locks: a thread that gives up on a lock sets a flag, and reading the result
then raises LockTimeout instead of the GPU hanging for ever.
"""

import contextlib
import math
from unittest import mock

import numpy as np
from numba import cuda, float32

from kernels import scratch, validate
from kernels.gridstride import sm_count
from kernels.locks import MAX_SPINS, DeviceTotal, lock, unlock

MAX_THREADS = 1024  # the shared-memory tree holds one value per thread of a block
IN_FLIGHT = 4  # dot_last_block: elements of each vector a thread loads before it adds
THREADS = 256
# ------------------------------------------------------------------ reference


def dot_reference(a, b):
    """a . b in float64, the reference every float32 version is compared with."""
    return np.dot(a.astype(np.float64), b.astype(np.float64))


def dot_tolerance(a, b, *, blocks=None, threads=THREADS):
    """Absolute tolerance for a . b summed in float32 by `blocks` x `threads` threads.

    Each float32 operation rounds by at most u = eps/2 of its result, so the error is at most
    u * (sum of |a_i b_i| + sum of |every partial sum the kernels form|): summation_rounding."""
    blocks, threads = _dot_args(a, b, blocks, threads)
    # float32 x float32 is exact in float64 (24-bit significands, 53 bits of room)
    terms = a.astype(np.float64) * b.astype(np.float64)
    # dot_last_block adds its products in groups of four, (p0 + p1) + (p2 + p3), before
    # they reach the running sum (whose sums after each group are among those the model
    # counts): two more roundings per term, each at most u times its group's sum of
    # |terms|
    u = float(np.finfo(np.float32).eps) / 2
    return summation_rounding(terms, blocks, threads) + 2 * u * np.abs(terms).sum()


def summation_rounding(terms, blocks, threads):
    """Bound on the error of a float32 sum of `terms` (float64) added as the kernels do.

    Each thread adds its grid-stride slice in order, each block folds its threads' sums
    in the halving tree, and the blocks' partials are added in any order (atomics, a
    mutex, or NumPy on the host). Each addition rounds by at most u times its result:
    the bound is u * (sum of |terms| + sum of |running sums and tree nodes| + sum over
    j of the j largest |partials|, which bounds any running total of j partials in any
    order), plus a second-order term for the rounding carried inside those sums."""
    u = float(np.finfo(np.float32).eps) / 2
    n, width = terms.size, blocks * threads
    rows = -(-n // width)
    depth = rows + math.log2(threads) + blocks  # roundings one term passes through, at most
    if depth * u >= 0.5:
        raise ValueError(f"a float32 sum {depth:.0f} additions deep has no useful error bound: "
                         "use more threads")
    grid = np.zeros(rows * width)
    grid[:n] = terms
    running = np.cumsum(grid.reshape(rows, width), axis=0)  # [k, g]: thread g after k+1 terms
    # Element k * width + g is thread g's term k: its sums after a second term exist below n.
    magnitudes = np.abs(running.ravel()[width:n]).sum()
    tree = running[-1].reshape(blocks, threads)
    while tree.shape[1] > 1:
        half = tree.shape[1] // 2
        tree = tree[:, :half] + tree[:, half:]
        magnitudes += np.abs(tree).sum()
    partials = np.sort(np.abs(tree[:, 0]))[::-1]
    magnitudes += np.cumsum(partials)[1:].sum()
    scale = np.abs(terms).sum()
    return u * (scale + magnitudes) + (depth * u) ** 2 / (1 - depth * u) * scale


def product_reference(x):
    return np.prod(x.astype(np.float64))


# -------------------------------------------------------------------- kernels


@cuda.jit
def add_one_mutex_kernel(counter, mutex, failed, max_spins):
    # Every thread adds one. The block counts its ones at a barrier, and thread 0
    # alone adds the count under the lock: one lock holder per block.
    ones = cuda.syncthreads_count(1)
    if cuda.threadIdx.x == 0:
        if lock(mutex, 0, max_spins):
            counter[0] += ones  # a plain read-modify-write: safe only under the lock
            unlock(mutex, 0)
        else:
            failed[0] = 1


@cuda.jit
def add_one_atomic_kernel(counter):
    # The same count with one atomic add per block: the baseline for the lock's cost.
    ones = cuda.syncthreads_count(1)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(counter, 0, ones)


@cuda.jit(device=True)
def thread_dot(a, b):
    """This thread's share of a . b, over a grid-stride loop."""
    acc = float32(0)
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        acc += a[i] * b[i]
    return acc


@cuda.jit(device=True)
def block_sum(s_block):
    """Sum s_block[:blockDim.x] (a power of two) into s_block[0], halving each step."""
    tid = cuda.threadIdx.x
    i = cuda.blockDim.x // 2
    while i > 0:
        if tid < i:
            s_block[tid] += s_block[tid + i]
        cuda.syncthreads()
        i //= 2


@cuda.jit
def dot_partial_kernel(a, b, partials):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    s_block[tid] = thread_dot(a, b)
    cuda.syncthreads()
    block_sum(s_block)
    if tid == 0:
        partials[cuda.blockIdx.x] = s_block[0]


@cuda.jit
def dot_mutex_kernel(a, b, total, mutex, failed, max_spins):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    s_block[tid] = thread_dot(a, b)
    cuda.syncthreads()
    block_sum(s_block)
    if tid == 0:
        if lock(mutex, 0, max_spins):
            total[0] += s_block[0]
            unlock(mutex, 0)
        else:
            failed[0] = 1


@cuda.jit
def dot_atomic_kernel(a, b, total):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    s_block[tid] = thread_dot(a, b)
    cuda.syncthreads()
    block_sum(s_block)
    if tid == 0:
        cuda.atomic.add(total, 0, s_block[0])


@cuda.jit
def dot_last_block_kernel(a, b, scratch_total, ticket, total):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    stride = cuda.gridsize(1)
    i = cuda.grid(1)
    acc = float32(0)
    while i + (IN_FLIGHT - 1) * stride < a.size:
        # eight independent loads (four of each vector) before the first multiply
        a0, a1, a2, a3 = a[i], a[i + stride], a[i + 2 * stride], a[i + 3 * stride]
        b0, b1, b2, b3 = b[i], b[i + stride], b[i + 2 * stride], b[i + 3 * stride]
        acc += (a0 * b0 + a1 * b1) + (a2 * b2 + a3 * b3)
        i += IN_FLIGHT * stride
    while i < a.size:
        acc += a[i] * b[i]
        i += stride
    s_block[tid] = acc
    cuda.syncthreads()
    block_sum(s_block)
    if tid == 0:
        cuda.atomic.add(scratch_total, 0, s_block[0])
    if scratch.is_last_block(ticket) and tid == 0:
        # atomic read: the adds of other blocks live in L2, not in this SM's cache
        total[0] = cuda.atomic.add(scratch_total, 0, float32(0))
        scratch_total[0] = 0  # ready for the next call, which starts after this one ends
        ticket[0] = 0


@cuda.jit(device=True)
def block_sum_tid_plus_one(s_block):
    # The popular version's bug: s_block[tid + 1] where s_block[tid + i] belongs.
    tid = cuda.threadIdx.x
    i = cuda.blockDim.x // 2
    while i > 0:
        if tid < i:
            s_block[tid] += s_block[tid + 1]
        cuda.syncthreads()
        i //= 2


@cuda.jit
def dot_mutex_tid_plus_one_kernel(a, b, total, mutex, failed, max_spins):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    s_block[tid] = thread_dot(a, b)
    cuda.syncthreads()
    block_sum_tid_plus_one(s_block)
    if tid == 0:
        if lock(mutex, 0, max_spins):
            total[0] += s_block[0]
            unlock(mutex, 0)
        else:
            failed[0] = 1


@cuda.jit(device=True)
def block_product(s_block):
    """Multiply s_block[:blockDim.x] (a power of two) into s_block[0]."""
    tid = cuda.threadIdx.x
    i = cuda.blockDim.x // 2
    while i > 0:
        if tid < i:
            s_block[tid] *= s_block[tid + i]
        cuda.syncthreads()
        i //= 2


@cuda.jit
def product_mutex_kernel(x, total, mutex, failed, max_spins):
    s_block = cuda.shared.array(MAX_THREADS, float32)
    tid = cuda.threadIdx.x
    acc = float32(1)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        acc *= x[i]
    s_block[tid] = acc
    cuda.syncthreads()
    block_product(s_block)
    if tid == 0:
        # Any read-modify-write fits between lock and unlock; there is no atomic multiply.
        if lock(mutex, 0, max_spins):
            total[0] *= s_block[0]
            unlock(mutex, 0)
        else:
            failed[0] = 1


@cuda.jit
def sum_positive_early_return_kernel(x, total, mutex, failed, max_spins):
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
        if s_block[0] == 0:
            return  # nothing to add
        total[0] += s_block[0]
        unlock(mutex, 0)


# ------------------------------------------------------------ host functions


class BlockPartials:
    """One partial sum per block in device memory; ``value()`` sums them on the host."""

    def __init__(self, blocks):
        self.partials = cuda.device_array(blocks, np.float32)

    def value(self):
        return self.partials.copy_to_host().sum(dtype=np.float32)


def _threads(threads):
    _, threads = validate.launch(1, threads, max_threads=MAX_THREADS)
    if threads & (threads - 1):
        raise ValueError(f"threads must be a power of two (the tree halves it), got {threads}")
    return threads


def _max_spins(max_spins):
    max_spins = MAX_SPINS if max_spins is None else max_spins
    if isinstance(max_spins, bool) or not isinstance(max_spins, (int, np.integer)):
        raise TypeError(f"max_spins must be an int, got {type(max_spins).__name__}")
    if max_spins < 1:
        raise ValueError(f"max_spins must be at least 1, got {max_spins}")
    return int(max_spins)


def _into(into, dtype):
    if into is None:
        return DeviceTotal(dtype)
    if not isinstance(into, DeviceTotal) or into.dtype != np.dtype(dtype):
        raise TypeError(f"into must be a DeviceTotal of {np.dtype(dtype).name}, got {into!r}")
    return into


def default_blocks(n, threads):
    """Four blocks per SM, or fewer if the data needs fewer: at most one per `threads` elements."""
    return min(4 * sm_count(), math.ceil(n / threads))


def _dot_args(a, b, blocks, threads):
    validate.array("a", a, dtypes=np.float32, ndim=1)
    validate.array("b", b, dtypes=np.float32, ndim=1)
    validate.same_shape(a=a, b=b)
    validate.same_space(a=a, b=b)
    validate.nonempty("a", a)
    threads = _threads(threads)
    blocks = default_blocks(a.size, threads) if blocks is None else blocks
    blocks, _ = validate.launch(blocks, threads, max_threads=MAX_THREADS)
    return blocks, threads


def dot_partial(a, b, *, blocks=None, threads=THREADS, into=None):
    """Queue a . b as one partial per block; return a BlockPartials (``.value()``)."""
    blocks, threads = _dot_args(a, b, blocks, threads)
    if into is None:
        into = BlockPartials(blocks)
    elif not isinstance(into, BlockPartials) or into.partials.size != blocks:
        raise TypeError(f"into must be a BlockPartials for {blocks} blocks, got {into!r}")
    dot_partial_kernel[blocks, threads](a, b, into.partials)
    return into


def _dot_locked(kernel, a, b, blocks, threads, max_spins, into):
    blocks, threads = _dot_args(a, b, blocks, threads)
    total = _into(into, np.float32).reset()
    kernel[blocks, threads](a, b, total.total, total.mutex, total.failed, _max_spins(max_spins))
    return total


def dot_mutex(a, b, *, blocks=None, threads=THREADS, max_spins=None, into=None):
    """Queue a . b with each block's partial added under a mutex; return a DeviceTotal."""
    return _dot_locked(dot_mutex_kernel, a, b, blocks, threads, max_spins, into)


def dot_atomic(a, b, *, blocks=None, threads=THREADS, into=None):
    """Queue a . b with each block's partial added by a float32 atomic; return a DeviceTotal."""
    blocks, threads = _dot_args(a, b, blocks, threads)
    total = _into(into, np.float32).reset()
    dot_atomic_kernel[blocks, threads](a, b, total.total)
    return total


def dot_last_block(a, b, *, blocks=None, threads=THREADS, into=None):
    """Queue a . b: the last block writes the total, so with `into` it is one launch
    (the total needs no zeroing first); without it, a new DeviceTotal is zeroed by one
    launch before. Return a DeviceTotal."""
    blocks, threads = _dot_args(a, b, blocks, threads)
    total = _into(into, np.float32) if into is not None else DeviceTotal(np.float32).reset()
    sums = scratch.buffer("dot total", np.zeros(1, np.float32))
    ticket = scratch.buffer("dot ticket", np.zeros(1, np.int32))
    dot_last_block_kernel[blocks, threads](a, b, sums, ticket, total.total)
    return total


def dot_mutex_tid_plus_one(a, b, *, blocks=None, threads=THREADS, max_spins=None, into=None):
    """EXHIBIT: dot_mutex with the popular version's wrong tree step."""
    return _dot_locked(dot_mutex_tid_plus_one_kernel, a, b, blocks, threads, max_spins, into)


def dot_mutex_unzeroed_mutex(a, b, *, blocks=None, threads=THREADS, max_spins=None):
    """EXHIBIT: dot_mutex with a mutex fresh from cuda.device_array, never zeroed."""
    blocks, threads = _dot_args(a, b, blocks, threads)
    total = DeviceTotal(np.float32).reset()
    total.mutex = cuda.device_array(1, np.int32)  # the bug: holds whatever was there
    dot_mutex_kernel[blocks, threads](a, b, total.total, total.mutex, total.failed,
                                      _max_spins(max_spins))
    return total


def add_one_mutex(blocks=10, threads=16, *, max_spins=None, into=None):
    """Queue the lock demo: every thread adds one, so the count is blocks * threads."""
    blocks, threads = validate.launch(blocks, threads)
    counter = _into(into, np.int64).reset()
    add_one_mutex_kernel[blocks, threads](counter.total, counter.mutex, counter.failed,
                                          _max_spins(max_spins))
    return counter


def add_one_atomic(blocks=10, threads=16, *, into=None):
    """Queue the same count with one atomic add per block; return a DeviceTotal."""
    blocks, threads = validate.launch(blocks, threads)
    counter = _into(into, np.int64).reset()
    add_one_atomic_kernel[blocks, threads](counter.total)
    return counter


def _reduce_locked(kernel, x, start, blocks, threads, max_spins, into):
    validate.array("x", x, dtypes=np.float32, ndim=1)
    validate.nonempty("x", x)
    threads = _threads(threads)
    blocks = default_blocks(x.size, threads) if blocks is None else blocks
    blocks, _ = validate.launch(blocks, threads, max_threads=MAX_THREADS)
    total = _into(into, np.float32).reset(start)
    kernel[blocks, threads](x, total.total, total.mutex, total.failed, _max_spins(max_spins))
    return total


def product_mutex(x, *, blocks=None, threads=THREADS, max_spins=None, into=None):
    """Queue the product of x's float32 values (an atomic multiply under a lock)."""
    return _reduce_locked(product_mutex_kernel, x, 1, blocks, threads, max_spins, into)


def sum_positive_early_return(x, *, blocks=None, threads=THREADS, max_spins=None, into=None):
    """EXHIBIT: the sum of x's positive values, with a path that keeps the lock."""
    return _reduce_locked(sum_positive_early_return_kernel, x, 0, blocks, threads, max_spins,
                          into)


@contextlib.contextmanager
def stale_device_memory(value):
    """Within the block, cuda.device_array hands out memory filled with `value`.

    cuda.device_array never clears memory: it holds what its last user left there.
    A fresh GPU and the simulator often hand out zeros, hiding an un-zeroed mutex;
    this makes the leftover explicit, so the bug shows every time."""
    def leftover(shape, dtype=np.float64, *args, **kwargs):
        return cuda.to_device(np.full(shape, value, dtype=dtype))

    with mock.patch.object(cuda, "device_array", leftover):
        yield


# Versions whose result the host completes (it adds dot_partial's partials): they solve
# part of the problem a GPU peer solves, so no comparison with one counts them.
HOST_FINISHED = ("dot_partial",)

VERSIONS = {
    "dot_partial": dot_partial,
    "dot_mutex": dot_mutex,
    "dot_atomic": dot_atomic,
    "dot_last_block": dot_last_block,
}

EXHIBITS = {
    "dot_mutex_tid_plus_one": dot_mutex_tid_plus_one,
    "dot_mutex_unzeroed_mutex": dot_mutex_unzeroed_mutex,
    "sum_positive_early_return": sum_positive_early_return,
}
