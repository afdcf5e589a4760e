"""kernels.checks.points: an answer that gives the right numbers without doing what the
exercise asks (no shared tile, no shared counters, a loop of launches, another stream,
a wait for the whole device) fails its checker, and says what is missing."""

import math

import numba
import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import checks

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")


def _failed(report):
    assert not report.passed
    return " ".join(c.detail for c in report.cases if not c.passed)


@cuda.jit
def naive_transpose_kernel(a, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


@cuda.jit
def naive_matvec_kernel(a, x, y):
    row = cuda.grid(1)
    if row < a.shape[0]:
        total = 0.0
        for j in range(a.shape[1]):
            total += a[row, j] * x[j]
        y[row] = total


def test_a_transpose_or_mat_vec_without_a_shared_tile_fails():
    for checker, kernel in ((checks.tiled_transpose, naive_transpose_kernel),
                            (checks.tiled_matvec, naive_matvec_kernel)):
        assert "no shared-memory array written and read back" in _failed(checker(kernel))


@cuda.jit
def global_counts_kernel(data, counts):
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        cuda.atomic.add(counts, data[i], 1)


def global_histogram_256(data):
    counts = cuda.to_device(np.zeros(256, np.int64))
    global_counts_kernel[4, 128](cuda.to_device(data), counts)
    return counts.copy_to_host()


def test_a_histogram_without_shared_counters_fails():
    assert "no atomic on a shared-memory array" in _failed(
        checks.histogram_256(global_histogram_256))


@cuda.jit
def sweep_kernel(src, dst, change):
    for i in range(cuda.grid(1), src.size, cuda.gridsize(1)):
        value = src[i] if i == 0 or i == src.size - 1 else (src[i - 1] + src[i + 1]) * 0.5
        dst[i] = value
        cuda.atomic.max(change, 0, abs(value - src[i]))


def jacobi_by_launches(u, tol, max_steps):
    """Right values, one launch per sweep: the host loop the exercise replaces."""
    src, dst = cuda.to_device(u), cuda.device_array_like(u)
    for sweep in range(1, max_steps + 1):
        change = cuda.to_device(np.zeros(1))
        sweep_kernel[math.ceil(u.size / 128), 128](src, dst, change)
        src, dst = dst, src
        if change.copy_to_host()[0] < tol:
            break
    return src.copy_to_host(), sweep


def test_a_host_loop_of_launches_fails_the_one_cooperative_launch():
    assert "the exercise asks for one cooperative launch" in _failed(
        checks.jacobi_until_converged(jacobi_by_launches))


def histogram_counting_in(space, count_type):
    """A histogram with per-block shared counters, where each thread first counts its
    bytes in `space` ("local": its own array of 256; "shared": its row of a shared
    table) of `count_type`: right while a thread counts at most the type's largest of
    one byte, which the trace's few rounds per thread never pass."""
    @cuda.jit
    def counting(data, counts):
        block = cuda.shared.array(256, numba.int32)
        table = cuda.shared.array((64, 256), count_type)
        t = cuda.threadIdx.x
        for b in range(256):
            if b % cuda.blockDim.x == t:
                block[b] = 0
        mine = cuda.local.array(256, count_type) if space == "local" else table[t]
        for b in range(256):
            mine[b] = 0
        cuda.syncthreads()
        for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
            mine[data[i]] += 1
        for b in range(256):
            if mine[b]:
                cuda.atomic.add(block, b, numba.int32(mine[b]))
        cuda.syncthreads()
        for b in range(256):
            if b % cuda.blockDim.x == t:
                cuda.atomic.add(counts, b, block[b])

    def histogram_256(data):
        counts = cuda.to_device(np.zeros(256, np.int64))
        counting[4, 64](cuda.to_device(data), counts)
        return counts.copy_to_host()
    return histogram_256


@cuda.jit
def _tile_histogram(data, counts):
    """Right: the block stages its bytes in a uint8 tile (the text, not counts), then
    counts them in int32 shared counters."""
    tile = cuda.shared.array(64, numba.uint8)
    block = cuda.shared.array(256, numba.int32)
    t = cuda.threadIdx.x
    for b in range(t, 256, 64):
        block[b] = 0
    cuda.syncthreads()
    for start in range(cuda.blockIdx.x * 64, data.size, cuda.gridDim.x * 64):
        if start + t < data.size:
            tile[t] = data[start + t]
        cuda.syncthreads()
        if start + t < data.size:
            cuda.atomic.add(block, tile[t], 1)
        cuda.syncthreads()
    for b in range(t, 256, 64):
        cuda.atomic.add(counts, b, block[b])


def test_a_tile_of_the_text_in_8_bits_is_no_count(rng):
    def histogram_256(data):
        counts = cuda.to_device(np.zeros(256, np.int64))
        _tile_histogram[5, 64](cuda.to_device(data), counts)
        return counts.copy_to_host()
    assert checks.histogram_256(histogram_256).passed


@pytest.mark.parametrize("space", ["local", "shared"])
def test_a_histogram_counting_in_8_bits_fails_and_in_32_bits_passes(space):
    where = {"local": "a thread's local array", "shared": "a shared array"}[space]
    name = "mine" if space == "local" else "table"
    assert f"keeps a count in {name}, {where} of uint8: it holds at most 255" in (
        _failed(checks.histogram_256(histogram_counting_in(space, numba.uint8))))
    assert checks.histogram_256(histogram_counting_in(space, numba.int32)).passed


@cuda.jit
def jacobi_kernel(u, out, scratch, deltas, tol, sweeps_done, stopped):
    """One cooperative launch; `sweeps_done` counts the sweeps, `stopped` is a 0/1 flag
    (1: it converged before max_steps)."""
    grid = cuda.cg.this_grid()
    start, stride = cuda.grid(1), cuda.gridsize(1)
    src, sweeps = u, 0
    for step in range(deltas.size):
        dst = out if step % 2 == 0 else scratch
        change = 0.0
        for i in range(start, u.size, stride):
            value = src[i] if i == 0 or i == u.size - 1 else (src[i - 1] + src[i + 1]) * 0.5
            change = max(change, abs(value - src[i]))
            dst[i] = value
        cuda.atomic.max(deltas, step, change)
        grid.sync()
        src, sweeps = dst, sweeps + 1
        if deltas[step] < tol:
            if start == 0:
                stopped[0] = 1
            break
    if start == 0:
        sweeps_done[0] = sweeps
    if sweeps % 2 == 0:
        for i in range(start, u.size, stride):
            out[i] = scratch[i]


def jacobi_counting_in(count_dtype):
    def jacobi(u, tol, max_steps):
        out, scratch = cuda.device_array_like(u), cuda.device_array_like(u)
        sweeps = cuda.to_device(np.zeros(1, count_dtype))
        jacobi_kernel[1, 256](cuda.to_device(u), out, scratch,
                              cuda.to_device(np.zeros(max_steps)), tol, sweeps,
                              cuda.to_device(np.zeros(1, np.int8)))
        return out.copy_to_host(), int(sweeps.copy_to_host()[0])
    return jacobi


def test_a_count_kept_in_16_bits_fails_and_a_narrow_flag_does_not():
    """The sweeps counted in int16 are right up to 32,767 sweeps, more than the
    simulator's cases run; the trace finds the count in 16 bits. The int8 flag beside
    it (0 or 1) is no count."""
    assert ("keeps a result that reached 2 in sweeps_done, an array of int16: it holds at "
            "most 32,767") in (
        _failed(checks.jacobi_until_converged(jacobi_counting_in(np.int16))))
    assert checks.jacobi_until_converged(jacobi_counting_in(np.int32)).passed


@cuda.jit
def add_kernel(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[i] + b[i]


def _add_on(a, b, out, stream):
    d_a, d_b = cuda.to_device(a, stream=stream), cuda.to_device(b, stream=stream)
    d_out = cuda.device_array_like(d_a, stream=stream)
    add_kernel[4, 32, stream](d_a, d_b, d_out)
    d_out.copy_to_host(out, stream=stream)


def on_a_stream_of_its_own(a, b, out, stream):
    mine = cuda.stream()
    _add_on(a, b, out, mine)
    mine.synchronize()


def waiting_for_the_device(a, b, out, stream):
    _add_on(a, b, out, stream)
    cuda.synchronize()


def test_stream_add_must_use_the_given_stream_and_wait_for_it_only():
    assert "not on the stream your function was given" in _failed(
        checks.stream_add(on_a_stream_of_its_own))
    assert "waited for the whole device" in _failed(checks.stream_add(waiting_for_the_device))

    def right(a, b, out, stream):
        _add_on(a, b, out, stream)
        stream.synchronize()

    assert checks.stream_add(right).passed


@cuda.jit
def saxpy_by_the_blocks_stride(a, x, y, out):
    """Wrong: strides by the block, so every block computes every element (the values
    are right; each element is written once by each block)."""
    for i in range(cuda.threadIdx.x, x.size, cuda.blockDim.x):
        out[i] = a * x[i] + y[i]


def test_a_grid_stride_loop_that_strides_by_the_block_fails_work_shared():
    said = _failed(checks.saxpy(saxpy_by_the_blocks_stride))
    assert "from two threads or more" in said and "cuda.gridsize(1)" in said
