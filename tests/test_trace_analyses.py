"""kernels.trace.analyses (coverage, sectors, bank conflicts) against hand-worked cases and the course's own kernels."""

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import atomics, gridstride, histogram, matmul, reduction, trace

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
