"""kernels.trace.hazards against hand-worked cases and the course's own kernels: races
between threads and between streams are found, and what orders accesses (barriers,
atomics, locks with their fences) is honoured."""

import numba
import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import atomics, cooperative, mutex, reduction, streams, trace
from kernels.trace import hazards

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="records on the simulator")


def test_the_x0_plus_1_race_is_found_and_the_atomic_is_not():
    racy = trace.races(trace.run(atomics.increment_racy, np.zeros(1, np.int64)))
    assert len(racy) == 1 and racy[0].array == "counts" and racy[0].index == (0,)
    assert "both touch counts[0]" in racy[0].describe()
    assert trace.races(trace.run(atomics.increment_atomic, np.zeros(1, np.int64))) == []


def test_the_tree_without_syncthreads_races_and_the_tree_with_them_does_not(rng):
    a = rng.integers(-100, 100, 300).astype(np.int32)
    broken = trace.races(trace.run(reduction.sum_tree_no_syncthreads, a, blocks=1))
    assert {r.array for r in broken} == {"partials"}
    # every slot but the last is read by another thread at some level: 255 of them
    assert len(broken) == 255
    assert all("with no block barrier (cuda.syncthreads()) between the write and the read"
               in r.describe()
               for r in broken)
    assert trace.races(trace.run(reduction.sum_shared_tree, a, blocks=2)) == []


def test_the_streams_shared_buffer_race_is_found_and_the_pipelines_are_not(rng):
    n = 37
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    out = cuda.pinned_array(n, np.int32)  # into pageable memory the host waits for a copy
    shared = trace.run(streams.vector_add_pipelined_shared_buffers, a, a, out, chunks=3,
                       threads=32)
    found = trace.stream_races(shared)
    assert found and all(r.first.stream != r.second.stream for r in found)
    assert any(r.first.what == "copy in" and r.second.what.startswith("kernel")
               for r in found)
    pipeline = streams.Pipeline(n, np.int32, 3, threads=32)
    for version in (streams.vector_add_pipelined, streams.vector_add_pipelined_stage_streams):
        t = trace.run(version, a, a, out, pipeline)
        assert len(t.operations) == 12  # 3 chunks x (2 copies in, kernel, copy out)
        assert trace.stream_races(t) == []
        assert trace.races(t) == []


def test_a_lock_orders_the_accesses_it_guards():
    t = trace.run(mutex.add_one_mutex, 4, 8)
    assert trace.races(t) == []
    order = trace.lock_order(t)
    assert [c for _, c in order] == ["take", "release"] * 4
    assert sorted(a.block[0] for a, c in order if c == "take") == [0, 1, 2, 3]


@cuda.jit
def add_under_a_lock_without_fences_kernel(total, mutex):
    if cuda.threadIdx.x == 0:
        while cuda.atomic.cas(mutex, 0, 0, 1) != 0:
            pass
        total[0] += 1.0  # WRONG on purpose: no fence before the release below
        cuda.atomic.exch(mutex, 0, 0)


def test_a_lock_without_fences_orders_nothing():
    """compare-and-swap and exch are atomics on the lock's word only: without
    cuda.threadfence() before the release, the next holder may not see the last one's
    write (a GPU loses updates), and the race says which fence is missing."""
    found = trace.races(trace.launch(add_under_a_lock_without_fences_kernel, (3, 2),
                                     np.zeros(1), np.zeros(1, np.int32)))
    assert found and all(r.first.locks and r.first.locks == r.second.locks for r in found)
    assert "put cuda.threadfence() before the atomic that releases the lock" in \
        found[0].describe()


def test_blocks_reading_each_others_rows_race_unless_there_is_one_block(rng):
    m = np.zeros((4, 40), np.int32)
    m[0] = rng.integers(0, 100, 40)
    found = trace.races(trace.run(cooperative.rows_syncthreads, m.copy(), blocks=3,
                                  threads=16))
    assert found and all(r.first.block != r.second.block for r in found)
    assert all("from different blocks, with no atomic and no lock" in r.why
               and "end the launch between the write and the read" in r.why for r in found)
    assert trace.races(trace.run(cooperative.rows_syncthreads, m.copy(), blocks=1,
                                 threads=16)) == []
    assert trace.races(trace.run(cooperative.rows_grid_sync, m.copy(), threads=16)) == []


def test_the_mutex_chapters_tid_plus_one_exhibit_races_in_shared_memory(rng):
    x = rng.random(300, dtype=np.float32)
    found = trace.races(trace.run(mutex.dot_mutex_tid_plus_one, x, x, blocks=2, threads=64))
    assert found and {r.array for r in found} == {"s_block"}
    assert trace.races(trace.run(mutex.dot_mutex, x, x, blocks=2, threads=64)) == []


@cuda.jit
def fence_only_after_taking_the_lock_kernel(total, mutex):
    if cuda.threadIdx.x == 0:
        while cuda.atomic.cas(mutex, 0, 0, 1) != 0:
            pass
        cuda.threadfence()  # the taking side's fence...
        total[0] += 1.0
        cuda.atomic.exch(mutex, 0, 0)  # WRONG on purpose: ...but none before the release


def test_a_fence_before_the_writes_does_not_release_them():
    found = trace.races(trace.launch(fence_only_after_taking_the_lock_kernel, (3, 2),
                                     np.zeros(1), np.zeros(1, np.int32)))
    assert found and "before the atomic that releases the lock" in found[0].describe()


# Three ways to take a lock, each with the fence before its release, and with the fence
# after taking it only when `acquire` is set.
@cuda.jit
def cas_lock_kernel(total, mutex, acquire):
    if cuda.threadIdx.x == 0:
        while cuda.atomic.cas(mutex, 0, 0, 1) != 0:
            pass
        if acquire:
            cuda.threadfence()
        total[0] += 1.0
        cuda.threadfence()
        cuda.atomic.exch(mutex, 0, 0)


@cuda.jit
def cas_loop_lock_kernel(total, mutex, acquire):
    # the critical section inside the loop iteration whose compare-and-swap succeeded
    if cuda.threadIdx.x == 0:
        done = False
        while not done:
            if cuda.atomic.cas(mutex, 0, 0, 1) == 0:
                if acquire:
                    cuda.threadfence()
                total[0] += 1.0
                cuda.threadfence()
                cuda.atomic.exch(mutex, 0, 0)
                done = True


@cuda.jit
def exch_lock_kernel(total, mutex, acquire):
    if cuda.threadIdx.x == 0:
        while cuda.atomic.exch(mutex, 0, 1) != 0:  # test-and-set
            pass
        if acquire:
            cuda.threadfence()
        total[0] += 1.0
        cuda.threadfence()
        cuda.atomic.exch(mutex, 0, 0)


@pytest.mark.parametrize("kernel", [cas_lock_kernel, cas_loop_lock_kernel, exch_lock_kernel])
def test_a_lock_orders_its_data_only_with_a_fence_after_taking_it(kernel):
    """The releasing side's fence is not enough: without cuda.threadfence() after the
    atomic that takes the lock, a GPU may read the guarded data before the lock is the
    thread's, or from a stale copy; the race names the fence after taking the lock."""
    def traced(acquire):
        total = np.zeros(1)
        found = trace.races(trace.launch(kernel, (4, 2), total, np.zeros(1, np.int32),
                                         acquire))
        assert total[0] == 4
        return found
    assert traced(1) == []
    found = traced(0)
    assert found and {r.array for r in found} == {"total"}
    assert "a fence after taking the lock" in found[0].describe()


@cuda.jit
def _spin_on_never_zeroed_lock_kernel(out, locks):
    done = False
    while not done:
        if cuda.atomic.cas(locks, 0, 0, 1) == 0:
            cuda.threadfence()
            out[0] += 1
            cuda.threadfence()
            cuda.atomic.exch(locks, 0, 0)
            done = True


def test_a_trace_that_grows_too_large_spinning_on_a_lock_says_the_lock_never_came_free(
        monkeypatch):
    from kernels.trace import record

    monkeypatch.setattr(record, "MAX_ACCESSES", 5_000)  # the spin reaches it sooner

    def count(out):
        locks = cuda.to_device(np.full(1, 7, np.int32))  # WRONG on purpose: never 0
        _spin_on_never_zeroed_lock_kernel[1, 4](out, locks)

    with pytest.raises(trace.LockNeverFree, match=r"the locks in locks never became free "
                       r"\(locks\[0\] among them\): 2,000 of the last 2,000 accesses"):
        trace.run(count, np.zeros(1, np.int32))
    # a trace that took no lock is nothing of the kind
    t = trace.run(atomics.increment_atomic, np.zeros(1, np.int64))
    assert trace.hazards.stuck_lock(t.launches[0]) == ""


def test_spins_while_locks_are_taken_and_freed_are_no_stuck_lock():
    """Slow under contention is not stuck: where the last accesses are mostly tries on
    the locks, but locks were taken and freed among them, no lock is blamed."""
    import dataclasses

    from kernels.solutions import mutex as solution

    keys = np.zeros(500, np.int32)  # one bin: one lock for every thread
    launch = trace.run(solution.bin_product, keys, np.ones(500, np.float32), 1).launches[0]
    tries = [a for a in launch.accesses if a.kind == "atomic" and a.array == "locks"]
    assert len(tries) > 100 and len(launch.lock_events) > 10
    spinning = dataclasses.replace(launch, accesses=tries)  # the tail: tries alone
    assert trace.hazards.stuck_lock(spinning) == ""
    spinning.lock_events = []  # the same tries, none taking or freeing one: stuck
    assert "the locks in locks never became free" in trace.hazards.stuck_lock(spinning)



@cuda.jit
def _flag_set(x, found, value_of_index):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0:
        found[0] = i if value_of_index else 1


def test_threads_that_all_write_one_value_do_not_race_and_different_values_do(rng):
    x = rng.integers(-3, 4, 100).astype(np.int64)
    x[[5, 70]] = 1  # two blocks' threads at least set the flag
    one = trace.launch(_flag_set, (4, 32), x, np.zeros(1, np.int64), False)
    assert trace.races(one) == []
    assert {a.value for a in one.launch().of("found", ("write",))} == {1}
    index = trace.launch(_flag_set, (4, 32), x, np.zeros(1, np.int64), True)
    assert [r.array for r in trace.races(index)] == ["found"]


@cuda.jit
def add_under_a_block_fenced_lock_kernel(total, mutex, in_shared):
    """Every thread adds 1 under a lock fenced with cuda.threadfence_block(): a lock in
    shared memory (one per block, its sum then added atomically) or one in global
    memory, which the block-scoped fences order only within a block."""
    lock = cuda.shared.array(1, numba.int32)
    block_total = cuda.shared.array(1, numba.float64)
    if cuda.threadIdx.x == 0:
        lock[0] = 0
        block_total[0] = 0.0
    cuda.syncthreads()
    done = False
    while not done:
        if cuda.atomic.cas(lock if in_shared else mutex, 0, 0, 1) == 0:
            cuda.threadfence_block()
            if in_shared:
                block_total[0] += 1.0
            else:
                total[0] += 1.0
            cuda.threadfence_block()
            cuda.atomic.exch(lock if in_shared else mutex, 0, 0)
            done = True
    cuda.syncthreads()
    if in_shared and cuda.threadIdx.x == 0:
        cuda.atomic.add(total, 0, block_total[0])


def test_a_block_scoped_fence_orders_a_lock_within_its_block_only():
    """cuda.threadfence_block() releases to the threads of its block: enough for a lock
    in shared memory, not for one that threads of several blocks take."""
    def traced(in_shared):
        return trace.launch(add_under_a_block_fenced_lock_kernel, (3, 4), np.zeros(1),
                            np.zeros(1, np.int32), in_shared)
    assert trace.races(traced(True)) == []
    across = trace.races(traced(False))
    assert across and all(r.first.block != r.second.block for r in across)


@cuda.jit
def _read_between_two_writes(x, out):
    """Thread 0 writes x[0]; after a barrier thread 1 reads it; thread 0 writes it again
    with no barrier between that read and the second write: a race."""
    if cuda.threadIdx.x == 0:
        x[0] = 1.0
    cuda.syncthreads()
    if cuda.threadIdx.x == 1:
        out[0] = x[0]
    if cuda.threadIdx.x == 0:
        x[0] = 2.0  # WRONG on purpose: thread 1 may not have read it yet


@cuda.jit
def _a_later_write_at_an_earlier_line(x):
    """Thread 0 writes x[0] (second branch), thread 1 after the barrier, then thread 0
    again from the loop's first branch, a line above, with no barrier since thread 1's
    write: a race that only the order in which the writes ran shows."""
    for k in range(2):
        if cuda.threadIdx.x == 0 and k == 1:
            x[0] = 3.0  # WRONG on purpose: thread 1 wrote it since the last barrier
        if cuda.threadIdx.x == 0 and k == 0:
            x[0] = 1.0
        cuda.syncthreads()
        if cuda.threadIdx.x == 1 and k == 0:
            x[0] = 2.0


@cuda.jit
def _leaves_before_the_barrier(x, flag):
    """Block 0's thread 0 writes x[0] and publishes it; block 1's thread 1 acquires it,
    writes x[0] and leaves before the barrier its block's thread 0 waits at, then writes
    x[0]: thread 0 knows thread 1's write by the barrier's epoch, but not block 0's,
    which only thread 1 knew of (a race)."""
    if cuda.blockIdx.x == 0:
        if cuda.threadIdx.x == 0:
            x[0] = 1
            cuda.threadfence()
            cuda.atomic.exch(flag, 0, 1)
        return
    if cuda.threadIdx.x == 1:
        cuda.atomic.add(flag, 0, 0)
        cuda.threadfence()
        x[0] = 2
        return
    cuda.syncthreads()
    x[0] = 3  # WRONG on purpose: nothing orders it after block 0's write


def _pairwise_races(t, monkeypatch):
    """trace.races(t) found by the pairwise search alone, without hazards._all_ordered."""
    with monkeypatch.context() as m:
        m.setattr(hazards, "_all_ordered", lambda accesses: False)
        return trace.races(t)


def test_the_ordered_shortcut_finds_the_race_a_read_makes_with_a_later_write(monkeypatch):
    """The shortcut checks each write against the reads since the last write, not only
    against that write: here the second write follows the first in its own thread."""
    t = trace.launch(_read_between_two_writes, (1, 4), np.zeros(1), np.zeros(1))
    found = trace.races(t)
    assert [(r.array, r.first.kind, r.second.kind) for r in found] == [("x", "write", "read")]
    assert found == _pairwise_races(t, monkeypatch)


def test_the_ordered_shortcut_reads_a_thread_s_accesses_in_the_order_they_ran(monkeypatch):
    """Program order is the order the accesses ran, not the order of their lines."""
    t = trace.launch(_a_later_write_at_an_earlier_line, (1, 2), np.zeros(1))
    found = trace.races(t)
    assert [(r.array, r.first.kind, r.second.kind) for r in found] == [("x", "write", "write")]
    assert found == _pairwise_races(t, monkeypatch)


def test_the_ordered_shortcut_does_not_chain_through_a_barrier_a_thread_left(monkeypatch):
    """A block barrier's epoch stands for the threads that arrived at it: knowledge that a
    thread which left before it held does not pass through it (found by an outside
    review of the shortcut)."""
    t = trace.launch(_leaves_before_the_barrier, (2, 2), np.zeros(1, np.int32),
                     np.zeros(1, np.int32))
    found = trace.races(t)
    assert [(r.first.block[0], r.second.block[0]) for r in found] == [(0, 1)]
    assert found == _pairwise_races(t, monkeypatch)


def _traces(rng):
    """Traces of the course's kernels, with and without races: barriers, atomics, locks
    taken in turns by thousands of tries, grid barriers and shared memory."""
    a = rng.integers(-100, 100, 300).astype(np.int32)
    x = rng.random(300, dtype=np.float32)
    m = np.zeros((4, 40), np.int32)
    m[0] = rng.integers(0, 100, 40)
    flags = rng.integers(-3, 4, 100).astype(np.int64)
    yield trace.run(reduction.sum_tree_no_syncthreads, a, blocks=1)
    yield trace.run(reduction.sum_shared_tree, a, blocks=2)
    yield trace.run(atomics.increment_racy, np.zeros(1, np.int64))
    yield trace.run(mutex.add_one_mutex, 4, 8)
    yield trace.run(mutex.dot_mutex, x, x, blocks=2, threads=64)
    yield trace.run(mutex.dot_mutex_tid_plus_one, x, x, blocks=2, threads=64)
    yield trace.run(cooperative.rows_syncthreads, m.copy(), blocks=3, threads=16)
    yield trace.run(cooperative.rows_grid_sync, m.copy(), threads=16)
    for value_of_index in (False, True):
        yield trace.launch(_flag_set, (4, 32), flags, np.zeros(1, np.int64), value_of_index)
    for kernel in (add_under_a_lock_without_fences_kernel, fence_only_after_taking_the_lock_kernel):
        yield trace.launch(kernel, (3, 2), np.zeros(1), np.zeros(1, np.int32))
    yield trace.launch(_read_between_two_writes, (1, 4), np.zeros(1), np.zeros(1))
    yield trace.launch(_a_later_write_at_an_earlier_line, (1, 2), np.zeros(1))
    yield trace.launch(_leaves_before_the_barrier, (2, 2), np.zeros(1, np.int32),
                       np.zeros(1, np.int32))


def test_the_ordered_shortcut_changes_no_verdict(rng, monkeypatch):
    """hazards._all_ordered only skips the pairwise search where it would find nothing:
    on every element of every trace, where it says all is ordered the search finds no
    race, and the races found (which pair, in which words) are the search's own."""
    shortcuts = searched = 0
    for t in _traces(rng):
        for launch in t.launches:
            for accesses in hazards._elements(launch):
                if hazards._all_ordered(accesses):
                    shortcuts += 1
                    with monkeypatch.context() as m:
                        m.setattr(hazards, "_all_ordered", lambda accesses: False)
                        assert hazards._first_race(accesses) is None
                else:
                    searched += 1
        assert [r.describe() for r in trace.races(t)] == \
            [r.describe() for r in _pairwise_races(t, monkeypatch)]
    assert shortcuts > 100 and searched > 100  # both ways taken, many times
