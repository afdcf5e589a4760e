"""kernels.trace.wire: a trace as plain data, across the grader's channel and back."""

import os
import threading

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import cooperative, mutex, streams, trace
from kernels.grading import channel
from kernels.trace import wire

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")


@cuda.jit
def racy_shared_kernel(data, hist):
    s = cuda.shared.array(16, np.int32)
    t = cuda.threadIdx.x
    if t < 16:
        s[t] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        s[data[i]] += 1  # a lost update between the threads of a block
    cuda.syncthreads()
    if t < 16:
        cuda.atomic.add(hist, t, s[t])


@cuda.jit
def matrix_kernel(a, out):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        out[c, r] = a[r, c]


@cuda.jit
def four_dimensions_kernel(x, out):
    i = cuda.grid(1)
    if i < x.size:
        a, rest = divmod(i, x.shape[1] * x.shape[2] * x.shape[3])
        b, rest = divmod(rest, x.shape[2] * x.shape[3])
        c, d = divmod(rest, x.shape[3])
        out[a, b, c, d] = 2 * x[a, b, c, d]


def across(value):
    """`value` as the judge reads it from the answer's process."""
    read, write = os.pipe()
    sender = threading.Thread(target=channel.write, args=(write, value))
    sender.start()
    try:
        return channel.Reader(read).read()
    finally:
        sender.join()
        os.close(read)
        os.close(write)


def traces(rng):
    data = rng.integers(0, 16, 300).astype(np.int32)
    yield trace.launch(racy_shared_kernel, (2, 64), data, np.zeros(16, np.int64))
    a = rng.standard_normal((13, 7)).astype(np.float32)
    yield trace.launch(matrix_kernel, ((2, 1), (8, 8)), a, np.full((7, 13), np.nan, np.float32))
    x = rng.standard_normal(200).astype(np.float32)
    yield trace.run(mutex.dot_mutex, x, x, blocks=3, threads=32)
    a, b = rng.integers(0, 9, 500, np.int32), rng.integers(0, 9, 500, np.int32)
    yield trace.run(streams.vector_add_pipelined_shared_buffers, a, b, np.empty_like(a),
                    chunks=3, threads=64)
    m = np.full((3, 40), -1, np.int32)
    m[0] = rng.integers(0, 100, 40)
    yield trace.run(cooperative.rows_grid_sync, m, blocks=3, threads=16)
    # an array of four dimensions
    x = rng.standard_normal((2, 3, 2, 5)).astype(np.float32)
    yield trace.launch(four_dimensions_kernel, (2, 32), x, np.full_like(x, np.nan))


def test_a_trace_comes_back_equal_and_analysed_alike(rng):
    for t in traces(rng):
        back = wire.decode(across(wire.encode(t)))
        assert back == t
        assert [r.describe() for r in trace.races(back)] == [
            r.describe() for r in trace.races(t)]
        assert [r.describe() for r in trace.stream_races(back)] == [
            r.describe() for r in trace.stream_races(t)]
        assert trace.barriers(back) == trace.barriers(t)


def test_the_racy_kernel_races_after_the_trip(rng):
    data = rng.integers(0, 16, 300).astype(np.int32)
    t = trace.launch(racy_shared_kernel, (2, 64), data, np.zeros(16, np.int64))
    assert trace.races(wire.decode(across(wire.encode(t))))


def _tampered(data, rng):
    """Each way of breaking one part of an encoded trace."""
    tag, launches, table, words, clocks, locks, operations, regions, waits = data
    table, indices = table
    bad_table = table.copy()
    bad_table[int(rng.integers(len(table))), wire._COLUMNS.index("clock")] = 10**9
    for bad in ((bad_table, indices), (table[:, :-1], indices), (table, indices[:-1]),
                (table.astype(np.float64), indices), table):
        yield (tag, launches, bad, words, clocks, locks, operations, regions, waits)
    table = (table, indices)
    yield (tag, launches, table, words[:1], clocks, locks, operations, regions, waits)
    launch = list(launches[0])
    launch[7] = len(table[0]) + 1  # more accesses than there are
    yield (tag, [tuple(launch)], table, words, clocks, locks, operations, regions, waits)
    launch = list(launches[0])
    launch[1] = 3  # a kernel's name that is no word
    yield (tag, [tuple(launch)], table, words, clocks, locks, operations, regions, waits)
    yield (tag, launches, table, words, clocks, locks, operations, regions, "1")
    yield ("pickle", launches, table, words, clocks, locks, operations, regions, waits)
    yield data[:-1]


def test_what_is_not_a_trace_is_refused(rng):
    data = rng.integers(0, 16, 300).astype(np.int32)
    t = trace.launch(racy_shared_kernel, (2, 64), data, np.zeros(16, np.int64))
    for bad in _tampered(across(wire.encode(t)), rng):
        with pytest.raises(wire.WireError, match="malformed"):
            wire.decode(bad)


def test_a_trace_of_threads_that_take_locks_fits_a_frame_with_room(rng):
    """Every clock of threads that take locks knows of most threads (over a million
    entries for the bin-product race case): at 48 bytes an entry such a trace grew past
    the channel's largest frame on a clean-clone run, and a correct answer failed."""
    from kernels.checks import mutex as checked
    from kernels.checks import races
    from kernels.solutions import mutex as solved

    n = races.two_rounds(rng, checked.RACE_THREADS)
    keys = rng.integers(0, 16, n).astype(np.int32)
    values = rng.uniform(0.9, 1.1, n).astype(np.float32)
    t = trace.run(solved.bin_product, keys, values, 16)
    assert sum(len(c.threads) for c in {id(a.clock): a.clock for launch in t.launches
                                        for a in launch.accesses}.values()) > 500_000
    assert len(channel.encode(wire.encode(t))) < channel.MAX_FRAME_BYTES / 8


def test_equal_clock_tables_are_sent_once_and_tables_alike_in_sum_are_not_mixed():
    """A thread's table of clocks travels once however many clocks hold it, as the same
    dict or an equal one; one of the same length and sum but other entries is its own."""
    from kernels.trace.order import Clock

    a, b = ((0, 0, 0), 0), ((0, 0, 0), 1)
    table = {a: 1, b: 2}
    clocks = [Clock(0, {}, table), Clock(1, {}, dict(table)), Clock(0, {}, {a: 2, b: 1}),
              Clock(2, {}, table)]
    grid, _, threads, entries = wire._clocks(clocks)
    assert grid.tolist() == [[0, 0], [1, 0], [0, 1], [2, 0]]
    assert len(entries) == 4
    back = wire._decode_clocks((grid, np.zeros((0, 5), np.int64), threads, entries))
    assert [c.threads for c in back] == [c.threads for c in clocks]
