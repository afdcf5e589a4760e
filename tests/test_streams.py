import re

import numpy as np
import pytest
from numba import cuda

import kernels
from kernels import checks
from kernels import streams as st
from kernels.gridstride import vector_add_gridstride_kernel
from kernels.harness import check
from answers import solution
from ptx import assert_compiles

sol = solution("streams")  # as a student hands it in: its launches count

PTX_SIGNATURES = {"busy_kernel": ["void(int64[::1], int64)"]}

CHUNKS = (1, 2, 4, 8, 16)
SHRINKS = (1, 0.6)


def vectors(rng, n, dtype=np.int32):
    a = rng.integers(-2**30, 2**30, n).astype(dtype)
    b = rng.integers(-2**30, 2**30, n).astype(dtype)
    return a, b, np.full(n, -7, dtype)


@pytest.mark.parametrize("version", sorted(st.VERSIONS))
@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("n", [16, 1001])  # 1001 is divisible by none of the chunk counts
@pytest.mark.parametrize("shrink", SHRINKS)
def test_pipelined_matches_numpy(version, chunks, n, shrink, rng):
    a, b, out = vectors(rng, n)
    p = st.Pipeline(n, np.int32, chunks, shrink=shrink, threads=32)
    check(st.VERSIONS[version](a, b, out, p), st.vector_add_reference(a, b))


@pytest.mark.parametrize("version", sorted(st.VERSIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_pipelined_dtypes_and_reuse(version, dtype, rng):
    p = st.Pipeline(101, dtype, 3, threads=32)
    for _ in range(2):  # one pipeline serves call after call
        a, b, out = vectors(rng, 101, dtype)
        check(st.VERSIONS[version](a, b, out, p), a + b)


def assert_partition(bounds, n, chunks):
    assert len(bounds) == chunks and bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(hi == lo2 for (_, hi), (lo2, _) in zip(bounds, bounds[1:]))
    sizes = [hi - lo for lo, hi in bounds]
    assert min(sizes) >= 1
    assert sizes == sorted(sizes, reverse=True)  # the largest chunk comes first
    return sizes


def test_every_element_in_exactly_one_chunk():
    for n in (1, 5, 16, 17, 1001):
        for chunks in range(1, min(n, 20) + 1):
            sizes = assert_partition(st.chunk_bounds(n, chunks), n, chunks)
            assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("shrink", [0.5, 0.6, 0.9])
def test_shrinking_chunks(shrink):
    for n in (7, 1001, 20_000_003):
        for chunks in range(1, min(n, 12) + 1):
            sizes = assert_partition(st.chunk_bounds(n, chunks, shrink), n, chunks)
            # One element each, the rest in proportion to shrink**i, rounded.
            weights = [shrink**i for i in range(chunks)]
            for size, w in zip(sizes, weights):
                assert abs(size - 1 - (n - chunks) * w / sum(weights)) < 1 + 1e-6


def test_shared_buffers_race_cannot_show_on_the_simulator(rng):
    """The simulator runs streams one after the other, so the popular version's race
    never shows there: its wrong results are recorded on a GPU instead."""
    a, b, out = vectors(rng, 1001)
    result = st.vector_add_pipelined_shared_buffers(a, b, out, chunks=4, threads=32)
    if kernels.SIMULATOR:
        check(result, a + b)


@pytest.mark.parametrize("version", sorted(st.VERSIONS))
def test_timeline_lists_every_step(version, rng):
    a, b, out = vectors(rng, 50)
    p = st.Pipeline(50, np.int32, 3, threads=32)
    t = st.Timeline(p)
    check(st.VERSIONS[version](a, b, out, p, timeline=t), a + b)
    steps = t.steps()
    assert [(s["chunk"], s["step"]) for s in steps] == [
        (c, step) for c in range(3) for step in st.STAGES]
    if kernels.SIMULATOR:
        assert all(s["ready_ms"] == -1.0 for s in steps)  # the simulator has no clock
    else:
        for s in steps:
            assert 0 <= s["ready_ms"] <= s["done_ms"]


@pytest.mark.parametrize("schedule", st.SCHEDULES)
def test_busy_pair(schedule):
    seeds = np.array([1, 2, 3], np.int64)
    x = cuda.to_device(seeds)
    st.busy_pair(schedule, x, 40, (cuda.stream(), cuda.stream()))
    cuda.synchronize()
    expected = [st.busy_reference(1, 40), st.busy_reference(2, 40),
                st.busy_reference(3, 1) if "default" in schedule else 3]
    check(x, np.array(expected, np.int64))


def host(rng):
    return vectors(rng, 21)


BAD_CALLS = {
    "device input": (lambda a, b, out, p: st.vector_add_pipelined(cuda.to_device(a), b, out, p),
                     TypeError, "host memory"),
    "list input": (lambda a, b, out, p: st.vector_add_pipelined(list(a), b, out, p),
                   TypeError, "NumPy array"),
    "wrong dtype": (lambda a, b, out, p: st.vector_add_pipelined(a, b.astype(np.int64), out, p),
                    TypeError, "dtype int64"),
    "unsupported dtype": (lambda a, b, out, p: st.vector_add_pipelined(
        a.astype(np.int8), b.astype(np.int8), out.astype(np.int8), p), TypeError, "accepted"),
    "mismatched shapes": (lambda a, b, out, p: st.vector_add_pipelined(a, b[:20], out, p),
                          ValueError, "shapes must match"),
    "2-D": (lambda a, b, out, p: st.vector_add_pipelined(a[:20].reshape(4, 5),
                                                         b[:20].reshape(4, 5),
                                                         out[:20].reshape(4, 5), p),
            ValueError, "1-D"),
    "non-contiguous": (lambda a, b, out, p: st.vector_add_pipelined(a[::2], b[::2], out[::2], p),
                       ValueError, "C-contiguous"),
    "empty": (lambda a, b, out, p: st.vector_add_pipelined(a[:0], b[:0], out[:0], p),
              ValueError, "empty"),
    "size not the pipeline's": (lambda a, b, out, p: st.vector_add_pipelined(
        a[:20], b[:20], out[:20], p), ValueError, "made for 21 int32"),
    "dtype not the pipeline's": (lambda a, b, out, p: st.vector_add_pipelined(
        a.astype(np.int64), b.astype(np.int64), out.astype(np.int64), p),
        ValueError, "made for 21 int32"),
    "pipeline: shrink 0": (lambda a, b, out, p: st.Pipeline(21, np.int32, 2, shrink=0),
                           ValueError, "shrink must be a number in (0, 1], got 0"),
    "pipeline: shrink above 1": (lambda a, b, out, p: st.Pipeline(21, np.int32, 2, shrink=1.5),
                                 ValueError, "shrink must be a number in (0, 1], got 1.5"),
    "chunk_bounds: shrink as text": (lambda a, b, out, p: st.chunk_bounds(21, 2, "0.6"),
                                     ValueError, "shrink must be a number in (0, 1]"),
    "chunk_bounds: more chunks than elements": (lambda a, b, out, p: st.chunk_bounds(3, 4),
                                                ValueError, "chunks must be between 1 and 3"),
    "pipeline: zero chunks": (lambda a, b, out, p: st.Pipeline(21, np.int32, 0), ValueError,
                              "chunks must be between 1 and 21"),
    "pipeline: more chunks than elements": (lambda a, b, out, p: st.Pipeline(21, np.int32, 22),
                                            ValueError, "chunks must be between 1 and 21"),
    "pipeline: float chunks": (lambda a, b, out, p: st.Pipeline(21, np.int32, 2.0), TypeError,
                               "chunks must be an int"),
    "pipeline: zero n": (lambda a, b, out, p: st.Pipeline(0, np.int32, 1), ValueError,
                         "n must be at least 1"),
    "pipeline: bad dtype": (lambda a, b, out, p: st.Pipeline(21, np.uint8, 1), TypeError,
                            "dtype uint8 is not accepted"),
    "pipeline: too many threads": (lambda a, b, out, p: st.Pipeline(21, np.int32, 1,
                                                                    threads=2048),
                                   ValueError, "at most 1024"),
    "shared buffers: too many chunks": (
        lambda a, b, out, p: st.vector_add_pipelined_shared_buffers(a, b, out, chunks=30),
        ValueError, "chunks must be between 1 and 21"),
    "busy: host array": (lambda a, b, out, p: st.busy(np.zeros(1, np.int64), 5), TypeError,
                         "device array"),
    "busy: negative steps": (lambda a, b, out, p: st.busy(cuda.to_device(np.zeros(1, np.int64)),
                                                          -1), ValueError, "at least 0"),
    "busy_pair: unknown schedule": (lambda a, b, out, p: st.busy_pair(
        "three streams", None, 1, (None, None)), ValueError, "schedule must be one of"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    a, b, out = vectors(rng, 21)
    p = st.Pipeline(21, np.int32, 2, threads=32)
    with pytest.raises(error, match=re.escape(words)):
        call(a, b, out, p)


# ------------------------------------------------------------------- exercises


def _no_copy_out(a, b, out, stream):
    d_out = cuda.device_array_like(out)
    vector_add_gridstride_kernel[4, 32, stream](cuda.to_device(a, stream=stream),
                                                cuda.to_device(b, stream=stream), d_out)
    stream.synchronize()
    return out  # forgot d_out.copy_to_host(out, stream=stream)


def _shared_output_slice(a, b, out, chunks):
    for lo, hi in st.chunk_bounds(a.size, chunks):
        m = hi - lo
        sol.stream_add(a[lo:hi], b[lo:hi], out[:m], cuda.stream())  # every chunk at the start
    return out


def _breadth_first_reuse(a, b, out, chunks, streams):
    """Buffers per stream, but every copy in queued first: on one stream, the second
    chunk's copy in lands before the first chunk's kernel has read the buffer."""
    bounds = st.chunk_bounds(a.size, chunks)
    largest = bounds[0][1] - bounds[0][0]
    lanes = [(cuda.stream(), *(cuda.device_array(largest, a.dtype) for _ in range(3)))
             for _ in range(min(streams, chunks))]
    plan = [(lo, hi, *lanes[i % len(lanes)]) for i, (lo, hi) in enumerate(bounds)]
    for lo, hi, s, d_a, d_b, _ in plan:
        d_a[:hi - lo].copy_to_device(a[lo:hi], stream=s)
        d_b[:hi - lo].copy_to_device(b[lo:hi], stream=s)
    for lo, hi, s, d_a, d_b, d_out in plan:
        vector_add_gridstride_kernel[4, 32, s](d_a[:hi - lo], d_b[:hi - lo], d_out[:hi - lo])
    for lo, hi, s, _, _, d_out in plan:
        d_out[:hi - lo].copy_to_host(out[lo:hi], stream=s)
    cuda.synchronize()
    return out


@pytest.mark.parametrize("checker,planted", [
    (checks.stream_add, _no_copy_out),
    (checks.chunked_streams_add, _shared_output_slice),
    (checks.bounded_streams_add, _breadth_first_reuse),
])
def test_planted_bugs_fail_their_checkers(checker, planted):
    report = checker(planted)
    assert not report.passed
    assert "FAIL" in str(report)


def test_compiles_to_ptx():
    assert_compiles("streams")


# ------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.parametrize("version", sorted(st.VERSIONS))
@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("n", [kernels.size("streams_pipeline"), 1_000_003])
@pytest.mark.parametrize("shrink", SHRINKS)
def test_full_size_on_gpu(version, chunks, n, shrink):
    rng = np.random.default_rng(chunks)
    a = cuda.pinned_array(n, np.int32)
    b = cuda.pinned_array(n, np.int32)
    out = cuda.pinned_array(n, np.int32)
    a[:], b[:], out[:] = rng.integers(-2**30, 2**30, n), rng.integers(-2**30, 2**30, n), -7
    p = st.Pipeline(n, np.int32, chunks, shrink=shrink)
    for _ in range(3):
        out[:] = -7
        check(st.VERSIONS[version](a, b, out, p), a + b)


@pytest.mark.gpu
@pytest.mark.parametrize("version", sorted(st.VERSIONS))
def test_calls_queued_back_to_back_do_not_race(version):
    """Calls with wait=False reuse one pipeline's device buffers: each call's copies in
    must not overwrite what the previous call's kernels and copies out still read."""
    n, calls = 4_000_003, 6
    rng = np.random.default_rng(1)
    p = st.Pipeline(n, np.int32, 8, shrink=0.6)
    host = [[cuda.pinned_array(n, np.int32) for _ in range(3)] for _ in range(calls)]
    for a, b, out in host:  # different inputs for every call
        a[:], b[:], out[:] = rng.integers(-2**30, 2**30, n), rng.integers(-2**30, 2**30, n), -7
    for a, b, out in host:
        st.VERSIONS[version](a, b, out, p, wait=False)
    p.synchronize()
    for a, b, out in host:
        check(out, a + b)


@pytest.mark.gpu
@pytest.mark.parametrize("version", sorted(st.VERSIONS))
def test_pageable_memory_is_correct_too(version, rng):
    n = 1_000_003
    a, b, out = vectors(rng, n)
    check(st.VERSIONS[version](a, b, out, st.Pipeline(n, np.int32, 4)), a + b)


@pytest.mark.gpu
def test_busy_pair_on_gpu():
    seeds = np.array([5, 6, 7], np.int64)
    x = cuda.to_device(seeds)
    st.busy_pair("two streams", x, 10_000, (cuda.stream(), cuda.stream()))
    cuda.synchronize()
    check(x[:2], np.array([st.busy_reference(s, 10_000) for s in (5, 6)], np.int64))
