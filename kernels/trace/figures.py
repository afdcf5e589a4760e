"""The traced figures of the book, one function per figure, each returning a Figure.

Each traces the chapter's own kernels (through their host functions where the
chapter calls them that way) at a tiny launch, so the book build stays fast. The
inputs are random and their sizes do not divide the block size.
"""

import warnings

import numpy as np
from numba import cuda

from kernels import atomics, cooperative, gridstride, matmul, mutex, reduction, streams
from kernels.trace import analyses, hazards, pictures
from kernels.trace import launch as trace_launch
from kernels.trace import run as trace_run


def _rng():
    return np.random.default_rng(16)


def gridstride_coverage():
    """20 elements, 2 blocks of 4 threads: one per element misses 12, grid-stride none."""
    rng = _rng()
    a, b = rng.random(20, dtype=np.float32), rng.random(20, dtype=np.float32)
    out = np.full(20, np.nan, np.float32)
    per_element = trace_launch(gridstride.vector_add_one_per_element_kernel, (2, 4), a, b,
                               out)
    strided = trace_run(gridstride.vector_add_gridstride, a, b, blocks=2, threads=4)
    covs = [analyses.coverage(per_element, "out"), analyses.coverage(strided, "out")]
    return pictures.coverage_figure(covs, [
        "vector_add_one_per_element_kernel[2, 4]: " + covs[0].describe(),
        "vector_add_gridstride(blocks=2, threads=4): " + covs[1].describe()])


def gridstride_coverage_2d():
    """A 5 x 9 matrix added by 2 x 2 blocks of 3 x 2 threads: the 2D loop wraps both ways."""
    rng = _rng()
    a, b = rng.random((5, 9), dtype=np.float32), rng.random((5, 9), dtype=np.float32)
    t = trace_run(gridstride.matrix_add_gridstride_2d, a, b, blocks=(2, 2), threads=(3, 2))
    cov = analyses.coverage(t, "out")
    return pictures.coverage_figure([cov], [
        "matrix_add_gridstride_2d(blocks=(2, 2), threads=(3, 2)) on a 5 x 9 matrix: "
        + cov.describe()])


def gridstride_sectors():
    """One warp reading a 32 x 32 float32 matrix: along a row (4 sectors) or down a
    column (32 sectors), both with the course's 2D kernel, only the block shape differs.
    (32 columns: every lane runs the loop equally often, so lanes pair up exactly.)"""
    rng = _rng()
    a, b = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    counts = []
    for threads in ((32, 1), (1, 32)):
        t = trace_run(gridstride.matrix_add_gridstride_2d, a, b, blocks=(1, 1),
                      threads=threads)
        counts.append(analyses.sectors(t, "a"))
    return pictures.sectors_figure(counts, [
        "threads=(32, 1): a warp is 32 threads along x, a row of a",
        "threads=(1, 32): a warp is 32 threads along y, a column of a"])


def atomics_race():
    """The classic demo: 10 blocks of 16 threads add one to x[0]."""
    racy = trace_run(atomics.increment_racy, np.zeros(1, np.int64))
    atomic = trace_run(atomics.increment_atomic, np.zeros(1, np.int64))
    return pictures.timeline_figure([(racy, "counts", 0), (atomic, "counts", 0)],
                                    ["increment_racy: counts[0] = counts[0] + 1",
                                     "increment_atomic: cuda.atomic.add(counts, 0, 1)"],
                                    threads=4)


def reduction_tree():
    """partials[1] in the block tree, with and without its barriers (one block)."""
    x = _rng().integers(-100, 100, 300).astype(np.int32)
    fixed = trace_run(reduction.sum_shared_tree, x, blocks=1)
    with warnings.catch_warnings():
        # without its barriers the tree adds slots not yet written (garbage), and NumPy's
        # overflow warning would print under the figure, with a path, as if it had failed
        warnings.simplefilter("ignore", RuntimeWarning)
        broken = trace_run(reduction.sum_tree_no_syncthreads, x, blocks=1)
    return pictures.timeline_figure(
        [(broken, "partials", 1, "sum_tree_no_syncthreads_kernel"),
         (fixed, "partials", 1, "sum_shared_tree_kernel")],
        ["sum_tree_no_syncthreads: partials[1], written by thread 1, read by thread 0",
         "sum_shared_tree: the same element, with a barrier after every level"])


def mutex_queue():
    """add_one_mutex with 6 blocks of 8 threads: thread 0 of each block takes the lock."""
    t = trace_run(mutex.add_one_mutex, 6, 8)
    return pictures.locks_figure(t, "counter", "add_one_mutex_kernel")


def streams_race():
    """Three chunks of 37 int32 on three streams: shared buffers, then per-chunk ones."""
    rng = _rng()
    n = 37
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    shared = trace_run(_shared_buffers, a, b, 3)
    own = trace_run(_pipelined, a, b, np.zeros(n, np.int32), 3)
    return pictures.streams_figure([shared, own], [
        "vector_add_pipelined_shared_buffers(chunks=3): one set of device buffers",
        "vector_add_pipelined (3 chunks): each chunk its own slices of the buffers"])


def _shared_buffers(a, b, chunks):
    """vector_add_pipelined_shared_buffers into pinned memory, as the chapter runs it
    (made where the trace runs: pinned memory does not travel between processes). Into
    pageable memory each copy out would make the host wait, and the streams in turn."""
    out = cuda.pinned_array(a.shape, a.dtype)
    return streams.vector_add_pipelined_shared_buffers(a, b, out, chunks=chunks, threads=32)


def _pipelined(a, b, out, chunks):
    """vector_add_pipelined with a Pipeline made where it runs (on a GPU machine, in the
    tracer's process: streams and device buffers do not travel between processes)."""
    pipeline = streams.Pipeline(a.size, a.dtype, chunks, threads=32)
    return streams.vector_add_pipelined(a, b, out, pipeline)


def cooperative_rows():
    """rows_syncthreads on 3 blocks (cross-block reads race) and rows_grid_sync on 3
    blocks, which the tracer runs live so that grid.sync() waits for all of them."""
    rng = _rng()
    m = np.zeros((4, 40), np.int32)
    m[0] = rng.integers(0, 100, 40)
    block_barrier = trace_run(cooperative.rows_syncthreads, m.copy(), blocks=3, threads=16)
    grid_barrier = trace_run(cooperative.rows_grid_sync, m.copy(), blocks=3, threads=16)
    found = hazards.races(block_barrier)
    covs = [analyses.coverage(block_barrier, "m"), analyses.coverage(grid_barrier, "m")]
    return pictures.coverage_figure(covs, [
        f"rows_syncthreads, 3 blocks of 16 threads: {len(found)} elements (red) are read "
        "by a thread of another block with no barrier between",
        f"rows_grid_sync, 3 blocks of 16 threads, all live under the tracer: "
        f"{len(hazards.races(grid_barrier))} races"],
        mark=[[r.index for r in found], []],
        mark_label="read by another block, unordered")


def matmul_banks():
    """The transposed A tile of matmul_thread_tile_2d: one warp's stores, with the
    4 spare columns it has (rows of 132 words) and as if it had none (128)."""
    rng = _rng()
    a = rng.standard_normal((20, 8), dtype=np.float32)
    b = rng.standard_normal((8, 20), dtype=np.float32)
    t = trace_run(matmul.matmul_thread_tile_2d, a, b)
    padded = analyses.bank_conflicts(t, "a_tile", kinds=("write",))
    bare = analyses.bank_conflicts(t, "a_tile", kinds=("write",), row_length=matmul.BM)
    return pictures.banks_figure([padded, bare], which=0, titles=[
        f"a_tile as declared, rows of {matmul.A_TILE_COLS}: "
        f"{padded.worst.units} word per bank",
        f"the same stores, rows of {matmul.BM}: {bare.worst.units} words per bank"])


CHAPTERS = {
    "gridstride": (gridstride_coverage, gridstride_coverage_2d, gridstride_sectors),
    "atomics": (atomics_race,),
    "reduction": (reduction_tree,),
    "mutex": (mutex_queue,),
    "streams": (streams_race,),
    "cooperative": (cooperative_rows,),
    "matmul": (matmul_banks,),
}
