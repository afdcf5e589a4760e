"""kernels.trace analyses against hand-worked cases and the course's own kernels."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import atomics, cooperative, gridstride, histogram, matmul, mutex, reduction
from kernels import streams, trace

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="records on the simulator")


@cuda.jit
def gridstride_off_by_one_kernel(a, out):
    # WRONG on purpose: the stride is one more than the grid.
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1) + 1):
        out[i] = a[i]


@cuda.jit
def copy_kernel(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]


@cuda.jit
def copy_shifted_kernel(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i + 1]


@cuda.jit
def gather_stride_32_kernel(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[32 * i]


@cuda.jit
def column_read_kernel(x, out):
    # A 32 x 32 tile filled along rows, then read down a column: lane t reads row t.
    tile = cuda.shared.array((32, 32), np.float32)
    t = cuda.threadIdx.x
    for c in range(32):
        tile[t, c] = x[t, c]
    cuda.syncthreads()
    out[t] = tile[t, 5]


@cuda.jit
def column_read_padded_kernel(x, out):
    tile = cuda.shared.array((32, 33), np.float32)  # one spare column
    t = cuda.threadIdx.x
    for c in range(32):
        tile[t, c] = x[t, c]
    cuda.syncthreads()
    out[t] = tile[t, 5]


# ------------------------------------------------------------------ coverage


def test_gridstride_coverage_is_thread_i_mod_grid(rng):
    n = 37
    a = rng.random(n, dtype=np.float32)
    t = trace.run(gridstride.vector_add_gridstride, a, a, blocks=2, threads=8)
    cov = trace.coverage(t, "out")
    np.testing.assert_array_equal(cov.thread, np.arange(n) % 16)
    np.testing.assert_array_equal(cov.block, (np.arange(n) % 16) // 8)
    assert cov.missed == [] and cov.repeated == []
    assert cov.describe() == "every element of out was written by exactly one thread"


def test_one_per_element_with_too_small_a_grid_misses_the_tail(rng):
    a = rng.random(20, dtype=np.float32)
    out = np.full(20, np.nan, np.float32)
    t = trace.launch(gridstride.vector_add_one_per_element_kernel, (2, 4), a, a, out)
    cov = trace.coverage(t, "out")
    np.testing.assert_array_equal(cov.thread[:8], np.arange(8))
    assert cov.missed == [(i,) for i in range(8, 20)]
    assert cov.describe() == "12 elements of out were never written: 8-19"


def test_missed_elements_are_named_as_runs_and_a_count():
    from kernels.trace.analyses import _some
    assert _some([(i,) for i in (1, 2, 3, 4, 7, 9, 10, 12, 14, 15, 16)]) == \
        "1-4, 7, 9, 10, 12 and 3 more"
    assert _some([(0, 1), (0, 2), (1, 0), (2, 2), (3, 3), (4, 4)]) == \
        "(0, 1), (0, 2), (1, 0), (2, 2) and 2 more"


def test_2d_gridstride_coverage(rng):
    a = rng.random((5, 9), dtype=np.float32)
    t = trace.run(gridstride.matrix_add_gridstride_2d, a, a, blocks=(2, 2), threads=(3, 2))
    cov = trace.coverage(t, "out")
    # x (columns) strides by 2 * 3 = 6, y (rows) by 2 * 2 = 4
    rows, cols = np.indices((5, 9))
    gx, gy = cols % 6, rows % 4
    block = gx // 3 + 2 * (gy // 2)
    assert (cov.block == block).all()
    assert cov.labels[4, 8] == "2,0" and cov.labels[3, 7] == "1,3"
    assert cov.missed == [] and cov.repeated == []


def test_an_off_by_one_stride_misses_every_ninth_element(rng):
    # 8 threads stepping by 9: thread t covers t, t + 9, t + 18, t + 27
    a = rng.random(30, dtype=np.float32)
    out = np.full(30, np.nan, np.float32)
    t = trace.launch(gridstride_off_by_one_kernel, (2, 4), a, out)
    cov = trace.coverage(t, "out")
    assert cov.missed == [(8,), (17,), (26,)]
    assert cov.thread[9] == 0 and cov.thread[29] == 2


def test_elements_written_by_several_threads_are_counted():
    # The racy increment: 10 blocks x 16 threads all write counts[0].
    t = trace.run(atomics.increment_racy, np.zeros(1, np.int64))
    cov = trace.coverage(t, "counts")
    assert int(cov.writers[0]) == 160 and cov.repeated == [(0,)]


# ------------------------------------------------------------------- sectors


def test_contiguous_float32_loads_touch_4_sectors_per_warp(rng):
    src = rng.random(100, dtype=np.float32)
    dst = np.zeros(64, np.float32)
    t = trace.launch(copy_kernel, (1, 64), src, dst)
    count = trace.sectors(t, "src")
    assert [w.units for w in count.warp_accesses] == [4, 4]
    assert [w.lanes for w in count.warp_accesses] == [32, 32]
    assert trace.sectors(t, "dst", kind="write").mean == 4


def test_a_load_shifted_by_one_element_touches_5_sectors(rng):
    src = rng.random(100, dtype=np.float32)
    t = trace.launch(copy_shifted_kernel, (1, 64), src, np.zeros(64, np.float32))
    count = trace.sectors(t, "src")
    assert [(w.units, w.ideal) for w in count.warp_accesses] == [(5, 4), (5, 4)]


def test_stride_32_float32_loads_touch_32_sectors_per_warp(rng):
    src = rng.random(32 * 40, dtype=np.float32)
    t = trace.launch(gather_stride_32_kernel, (1, 40), src, np.zeros(40, np.float32))
    count = trace.sectors(t, "src")
    assert [w.units for w in count.warp_accesses] == [32, 8]  # 32 lanes, then 8
    assert count.describe() == ("loads of src touch 20 sectors of 32 bytes per warp where "
                                "2.5 would do")


def test_sectors_of_a_shared_array_are_refused(rng):
    t = trace.run(reduction.sum_shared_tree, np.ones(40, np.int32), blocks=1)
    with pytest.raises(ValueError, match="partials is a shared array: sectors are for "
                                         "global memory; use bank_conflicts"):
        trace.sectors(t, "partials", kernel="sum_shared_tree_kernel")


# ------------------------------------------------------------ bank conflicts


def test_a_column_of_a_32_wide_tile_is_a_32_way_conflict_and_padding_removes_it(rng):
    x = rng.random((32, 32), dtype=np.float32)
    naive = trace.launch(column_read_kernel, (1, 32), x, np.zeros(32, np.float32))
    padded = trace.launch(column_read_padded_kernel, (1, 32), x, np.zeros(32, np.float32))
    assert trace.bank_conflicts(naive, "tile", kinds=("read",)).worst.units == 32
    assert trace.bank_conflicts(padded, "tile", kinds=("read",)).worst.units == 1
    # The row-wise stores: every lane on its own row, same column, also 32-way unpadded
    assert trace.bank_conflicts(naive, "tile", kinds=("write",)).mean == 32
    assert trace.bank_conflicts(padded, "tile", kinds=("write",)).mean == 1
    # And the naive tile's reads as if its rows were 33 long
    assert trace.bank_conflicts(naive, "tile", kinds=("read",), row_length=33).worst.units == 1


def test_matmul_tiles_without_and_with_padding(rng):
    a = rng.standard_normal((20, 8), dtype=np.float32)
    b = rng.standard_normal((8, 20), dtype=np.float32)
    t = trace.run(matmul.matmul_thread_tile_2d, a, b)
    padded = trace.bank_conflicts(t, "a_tile", kinds=("write",))
    bare = trace.bank_conflicts(t, "a_tile", kinds=("write",), row_length=matmul.BM)
    assert {w.units for w in padded.warp_accesses} == {1}
    assert {w.units for w in bare.warp_accesses} == {8}  # 32 lanes in 4 banks
    # The 16 x 16 tiled kernel: b_tile[k, tx] and a_tile[ty, k] both take one pass
    t = trace.run(matmul.matmul_tiled_bounded, a[:16], np.ascontiguousarray(b[:, :16]))
    for tile in ("a_tile", "b_tile"):
        assert trace.bank_conflicts(t, tile, kinds=("read",)).worst.units == 1


def test_lane_private_histogram_has_no_bank_conflicts_where_one_histogram_has_32():
    data = np.full(1003, ord("e"), np.uint8)  # every lane counts the same byte
    private = trace.run(histogram.histogram_lane_private, data, blocks=1, threads=64)
    shared = trace.run(histogram.histogram_shared_atomics, data, blocks=1, threads=64)
    assert trace.bank_conflicts(private, "local", kinds=("atomic",)).worst.units == 1
    assert trace.bank_conflicts(shared, "local", kinds=("atomic",)).worst.units == 32


def test_bank_conflicts_of_a_global_array_are_refused(rng):
    t = trace.run(reduction.sum_shared_tree, np.ones(40, np.int32), blocks=1)
    with pytest.raises(ValueError, match="a is not a shared array of sum_shared_tree_kernel;"
                                         " its shared arrays: partials"):
        trace.bank_conflicts(t, "a", kernel="sum_shared_tree_kernel")


# --------------------------------------------------------------------- races


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
