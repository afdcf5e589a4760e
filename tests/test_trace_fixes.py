"""kernels.trace.fixes: each kind of race gets the fix that fits it, not one list."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import trace
from kernels.trace import fixes

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")


@cuda.jit
def count_kernel(counts):
    counts[0] += 1  # every thread, no atomic


@cuda.jit
def two_bin_histogram_kernel(data, counts):
    # several elements per thread, two bins: two threads share both bins, one at a time
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        counts[data[i]] += 1


@cuda.jit
def reverse_to_n_kernel(x):
    n = x.size
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):  # to n: every pair swapped twice
        j = n - 1 - i
        x[i], x[j] = x[j], x[i]


@cuda.jit
def neighbour_kernel(x, out):
    tile = cuda.shared.array(16, np.float32)
    t = cuda.threadIdx.x
    tile[t] = x[t]
    # no cuda.syncthreads() here
    out[t] = tile[(t + 1) % 16]


@cuda.jit
def across_blocks_kernel(a, out):
    i = cuda.grid(1)
    a[i] = i
    out[i] = a[(i + 4) % a.size]  # another block's element, in the same launch


@cuda.jit
def running_max_kernel(x, best):
    if cuda.threadIdx.x == 0 and x[cuda.blockIdx.x] > best[0]:  # a check, then an update
        best[0] = x[cuda.blockIdx.x]


@cuda.jit
def same_element_kernel(out):
    out[0] = cuda.threadIdx.x


@cuda.jit
def sum_then_read_kernel(x, total, out):
    i = cuda.threadIdx.x
    cuda.atomic.add(total, 0, x[i])
    out[i] = total[0]  # no cuda.syncthreads() between the atomics and the read


@cuda.jit
def plain_reset_kernel(x, total):
    i = cuda.threadIdx.x
    if i == 0:
        total[0] = 0  # a plain write beside the others' atomics
    else:
        cuda.atomic.add(total, 0, x[i])


@cuda.jit
def announce_without_fence_kernel(x, partials, ticket, out):
    if cuda.threadIdx.x == 0:
        partials[cuda.blockIdx.x] = x[cuda.blockIdx.x]
        # no cuda.threadfence() before the ticket that announces the partial
        if cuda.atomic.add(ticket, 0, 1) == cuda.gridDim.x - 1:
            out[0] = partials[0] + partials[1]


def _first(kernel, configuration, *args):
    found = trace.races(trace.launch(kernel, configuration, *args))
    assert found, "no race found"
    return found[0]


def test_a_lost_update_is_made_atomic():
    for configuration in ((1, 4), (2, 1)):  # in one block and across blocks
        race = _first(count_kernel, configuration, np.zeros(1, np.int32))
        assert "each reads it, then writes it back" in race.why and "a lost update" in race.why
        assert "cuda.atomic.add" in race.why and "barrier" not in race.why
        assert race.missing.startswith("an atomic update")


def test_a_histogram_whose_threads_share_two_bins_is_a_lost_update_not_a_swap():
    data = np.array([0, 1, 0, 1, 1, 0, 0, 1], np.int32)
    race = _first(two_bin_histogram_kernel, (1, 2), data, np.zeros(2, np.int32))
    assert "a lost update" in race.why and "pair" not in race.why


def test_a_pair_swapped_by_two_threads_needs_the_loop_s_bound():
    race = _first(reverse_to_n_kernel, (2, 4), np.arange(8, dtype=np.int32))
    assert "swap the same pair" in race.why and "n // 2" in race.why
    assert f"{race.array}[{7 - race.index[0]}]" in race.why  # the element it pairs with
    assert race.missing == "one thread per pair (the loop's bound)"


def test_a_read_of_another_thread_s_write_needs_the_block_barrier():
    race = _first(neighbour_kernel, (1, 16), np.ones(16, np.float32), np.zeros(16, np.float32))
    assert "put cuda.syncthreads() between them" in race.why and "atomic" not in race.why
    assert race.missing == fixes.SYNCTHREADS


def test_across_blocks_the_launch_must_end_or_the_grid_wait():
    race = _first(across_blocks_kernel, (2, 4), np.zeros(8, np.int32), np.zeros(8, np.int32))
    assert race.why.startswith("from different blocks") and "end the launch" in race.why
    assert "grid.sync()" in race.missing


def test_a_check_then_update_needs_a_lock_or_one_atomic():
    x = np.array([5, 3], np.float32)  # the first block's update, the second's check only
    race = _first(running_max_kernel, (2, 1), x, np.zeros(1, np.float32))
    assert "decide whether to write it" in race.why and "under a lock" in race.why
    assert "cuda.atomic.max" in race.why


def test_two_writers_of_one_element_need_one():
    race = _first(same_element_kernel, (1, 3), np.zeros(1, np.int32))
    assert "both write it" in race.why and race.missing == "one writer per element"


@cuda.jit
def flag_then_read_kernel(flag, out):
    flag[0] = cuda.threadIdx.x  # every thread its own value, then each reads it after the
    # barrier (writes of one value would be no race)
    cuda.syncthreads()
    out[cuda.threadIdx.x] = flag[0]


def test_writers_that_read_only_after_a_barrier_are_two_writers_not_a_lost_update():
    race = _first(flag_then_read_kernel, (1, 3), np.zeros(1, np.int32), np.zeros(3, np.int32))
    assert "both write it" in race.why and "lost update" not in race.why


def test_beside_atomics_a_read_waits_and_a_write_is_made_atomic():
    x = np.arange(4, dtype=np.int32)
    read = _first(sum_then_read_kernel, (1, 4), x, np.zeros(1, np.int32), np.zeros(4, np.int32))
    assert "between the atomic and the read" in read.why and read.missing == fixes.SYNCTHREADS
    write = _first(plain_reset_kernel, (1, 4), x, np.zeros(1, np.int32))
    assert "make it atomic too" in write.why and write.missing == "an atomic for both"


def test_a_write_announced_by_an_atomic_without_a_fence_needs_the_fence():
    race = _first(announce_without_fence_kernel, (2, 1), np.arange(2, dtype=np.int64),
                  np.zeros(2, np.int64), np.zeros(1, np.int32), np.zeros(1, np.int64))
    assert "put cuda.threadfence() between the write and that atomic" in race.why
    assert "and another between the reading thread's atomic and its read" in race.why
    assert race.missing == ("a fence (cuda.threadfence()) before the atomic, and one after "
                            "the reader's")


@cuda.jit
def lock_fences_kernel(total, mutex, fences):
    # fences: 1, a fence after taking the lock; 2, one before releasing it; 3, both
    if cuda.threadIdx.x == 0:
        while cuda.atomic.cas(mutex, 0, 0, 1) != 0:
            pass
        if fences & 1:
            cuda.threadfence()
        total[0] += 1.0
        if fences & 2:
            cuda.threadfence()
        cuda.atomic.exch(mutex, 0, 0)


@pytest.mark.parametrize("fences, missing, said", [
    (2, "a fence after taking the lock (cuda.threadfence())",
     "the later holder did not fence after taking it"),
    (1, "a fence before releasing the lock (cuda.threadfence())",
     "the earlier holder released it without a fence"),
    (0, "a fence (cuda.threadfence()) on each side of the lock",
     "before the atomic that releases the lock, and after the one that takes it"),
])
def test_a_lock_missing_a_fence_names_the_fence_it_misses(fences, missing, said):
    race = _first(lock_fences_kernel, (3, 1), np.zeros(1), np.zeros(1, np.int32), fences)
    assert race.missing == missing and said in race.why
