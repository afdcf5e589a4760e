"""The tracer's line in the checkers' reports (kernels.checks.hints)."""

import math

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import checks
from kernels.checks import hints

import answers

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")


@cuda.jit
def saxpy_stride_plus_one_kernel(a, x, y, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1) + 1):  # WRONG: one too far
        out[i] = a * x[i] + y[i]


@cuda.jit
def saxpy_wrong_sign_kernel(a, x, y, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a * x[i] - y[i]  # WRONG: minus


@cuda.jit
def saxpy_without_y_kernel(a, x, y, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a * x[i]  # WRONG: y is never added


@cuda.jit
def reverse_every_thread_swaps_kernel(x):
    n = x.size
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):  # WRONG: should stop at n // 2
        j = n - 1 - i
        x[i], x[j] = x[j], x[i]


@cuda.jit
def clip_rows_by_column_stride_kernel(x, lo, hi, out):
    col0, row0 = cuda.grid(2)
    col_stride, row_stride = cuda.gridsize(2)
    for row in range(row0, out.shape[0], col_stride):  # WRONG: the column stride
        for col in range(col0, out.shape[1], col_stride):
            out[row, col] = min(max(x[row, col], lo), hi)


@cuda.jit
def matvec_last_row_missing_kernel(a, x, y):
    chunk = cuda.shared.array(64, np.float32)
    row = cuda.grid(1)
    acc = np.float32(0.0)
    for start in range(0, x.size, 64):
        i = start + cuda.threadIdx.x
        chunk[cuda.threadIdx.x] = x[i] if i < x.size else np.float32(0.0)
        cuda.syncthreads()
        if row < a.shape[0]:
            for j in range(min(64, x.size - start)):
                acc += a[row, start + j] * chunk[j]
        cuda.syncthreads()
    if row < a.shape[0] - 1:  # WRONG: the last row is never stored
        y[row] = acc


@cuda.jit
def transpose_no_barrier_kernel(a, out):
    tile = cuda.shared.array((16, 17), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * 16 + ty, cuda.blockIdx.x * 16 + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx] = a[row, col]
    # WRONG: no cuda.syncthreads() here
    row, col = cuda.blockIdx.x * 16 + ty, cuda.blockIdx.y * 16 + tx
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = tile[tx, ty]


@cuda.jit
def saxpy_chunked_wrong_sign_kernel(a, x, y, out):
    # Each thread a contiguous chunk: lanes 32 elements apart at every step.
    per_thread = out.size // cuda.gridsize(1)
    start = cuda.grid(1) * per_thread
    for i in range(start, start + per_thread):
        out[i] = a * x[i] - y[i]  # WRONG: minus


def _tracer_lines(report):
    return [line.strip() for line in str(report).splitlines() if "the tracer:" in line]


def test_a_missed_element_is_explained_by_its_thread_and_stride():
    report = checks.saxpy(saxpy_stride_plus_one_kernel)
    assert not report.passed
    (line,) = _tracer_lines(report)
    # The first failing case: n=17 on [1, 1], one thread stepping by 2
    assert line == ("the tracer: 8 elements were never written (out[1], out[3], out[5], "
                    "out[7] and 4 more). With 1 thread, a grid-stride loop gives out[1] to "
                    "the thread at cuda.grid() = 0, which wrote out[0], out[2], out[4], "
                    "out[6] ...")


def test_right_coverage_and_no_race_points_at_the_arithmetic():
    (line,) = _tracer_lines(checks.saxpy(saxpy_wrong_sign_kernel))
    assert ("every element of out was written once, by one thread, and no two threads race, "
            "so check the arithmetic") in line


def test_uncoalesced_loads_are_counted(rng):
    x, y = rng.random(1024, dtype=np.float32), rng.random(1024, dtype=np.float32)
    out = np.zeros(1024, np.float32)
    line = hints.kernel_hint(saxpy_chunked_wrong_sign_kernel, (1, 32),
                             (np.float32(2), x, y, out), 3)
    assert line == ("your loads of x touch 32 sectors of 32 bytes per warp where 4 would "
                    "do")


def test_an_input_never_read_is_named():
    (line,) = _tracer_lines(checks.saxpy(saxpy_without_y_kernel))
    assert line == "the tracer: no thread read y[0], so out cannot depend on it"


def test_a_race_is_named_with_its_threads_and_element(rng):
    # On the simulator the race case runs first and ends the check, naming the race
    (case,) = checks.reverse_inplace(reverse_every_thread_swaps_kernel).cases
    assert not case.passed and "both touch x[" in case.detail
    assert _tracer_lines(checks.Report("reverse_inplace", [case])) == []  # said once
    # On [1, 1], one thread swaps every pair twice: no race, but writes twice
    x = np.arange(17, dtype=np.int32)
    line = hints.kernel_hint(reverse_every_thread_swaps_kernel, (1, 1), (x,), 0,
                             every_element=False)
    assert line == ("17 elements of x were written more than once, x[0] 2 times "
                    "by block 0 thread 0: each element needs exactly one final write")
    # On [3, 7] threads i and 16 - i both swap x[i] and x[16 - i]
    x = rng.integers(0, 100, 17).astype(np.int32)
    line = hints.kernel_hint(reverse_every_thread_swaps_kernel, (3, 7), (x,), 0)
    assert "both touch x[" in line and "(15 more elements like it)" in line


def test_a_2d_miss_names_the_thread_that_owns_it(rng):
    # (the checker's traced case finds the rows written twice first: a race)
    x = rng.standard_normal((17, 33))
    line = hints.kernel_hint(clip_rows_by_column_stride_kernel, ((2, 3), (8, 4)),
                             (x, -1.0, 1.0, np.full_like(x, np.nan)), 3, gridstride=True)
    # blocks (2, 3) x threads (8, 4): 16 x 12 threads; rows step by 16, not 12, so row 12
    # is never reached: it belongs to the thread at cuda.grid() = (0, 0).
    assert "out[12, 0]" in line and "cuda.grid() = 0, 0, which wrote out[0, 0]" in line


def test_matvec_failure_names_the_row_never_stored():
    (line,) = _tracer_lines(checks.tiled_matvec(matvec_last_row_missing_kernel))
    # The first case: a is 1 x 1, so its only row is the last one
    assert line == "the tracer: y[0] was never written"


def test_transpose_without_a_barrier_is_a_race_on_the_tile(rng):
    a = rng.standard_normal((15, 17)).astype(np.float32)
    out = np.full((17, 15), np.nan, np.float32)
    blocks = (math.ceil(17 / 16), math.ceil(15 / 16))
    line = hints.kernel_hint(transpose_no_barrier_kernel, (blocks, (16, 16)), (a, out), 1)
    assert "both touch tile[" in line and "put cuda.syncthreads() between them" in line


def test_no_line_for_a_passing_answer():
    report = checks.saxpy(answers.solution("gridstride").saxpy_kernel)
    assert report.passed and _tracer_lines(report) == []


@cuda.jit
def reverse_untouched_kernel(x):
    pass  # the book's starter


def test_a_kernel_that_writes_nothing_is_said_to():
    """An in-place exercise reports no element missed (one may rightly stay), so a kernel
    that wrote nothing is said plainly, not sent to check its arithmetic."""
    (line,) = _tracer_lines(checks.reverse_inplace(reverse_untouched_kernel))
    assert line == "the tracer: no thread wrote to x: your kernel left it as it was"
