"""Benchmarks of the streams chapter: the stream rules, pinned against pageable copies,
the pipelined vector add against its copy floor, the race, and a timeline.

Multi-stream work is timed with CUDA events on the legacy default stream: the streams
of ``cuda.stream()`` synchronise with it, so an event recorded there before the work
completes before any of it starts, and one recorded after completes after all of it.
Two such timings: ``harness.time_gpu`` queues the calls behind a spin kernel, so the
host's time to issue them is hidden (``queued_ms``: what the GPU needs); the
``harness.CUDATimer`` loop below starts the events with the GPU idle, so wherever the
GPU waits for Python to issue the next step, that wait is in the time (``time_ms``: what
a caller gets, and what the target is judged on). The pipelines of a sweep are timed
in turns, round after round, so that a slow spell of the machine cannot favour one.
"""

import numpy as np
from numba import cuda

from kernels import gridstride, harness, size
from kernels import streams as st
from kernels.harness import benchmark, row

CHUNKS = (1, 2, 4, 8, 16)
SHRINK = 0.6  # shrinking chunks: each 0.6 times the one before
SHRINK_CHUNKS = (2, 4, 6, 8, 12)
SHRINKS = (0.5, 0.6, 0.7, 0.8, 0.9)  # at SHRINK_AT chunks
SHRINK_AT = 8
DTYPE = np.int32
REPEATS = 30


def _time_events(fns, repeats=REPEATS):
    """Events on the legacy default stream around each call of each of `fns` (a dict of
    callables that queue work and return), started with the GPU idle: host delays are
    in the GPU time. The calls take turns, one round of all of them after another, so
    a slow spell of the machine spreads over all of them instead of skewing one.
    Returns a Timing per key."""
    gpu = {key: [] for key in fns}
    e2e = {key: [] for key in fns}
    for fn in fns.values():
        fn()
    cuda.synchronize()
    for _ in range(repeats):
        for key, fn in fns.items():
            with harness.CUDATimer() as t:
                fn()
            gpu[key].append(t.ms)
            e2e[key].append(t.e2e_ms)
    return {key: harness.Timing(gpu[key], e2e[key], cold=False) for key in fns}


def _issue_ms(fn, repeats=5):
    """Host time for `fn` to return (it queues work): the median of time_cpu."""
    t = harness.time_cpu(fn, repeats=repeats)
    cuda.synchronize()
    return t.ms


def _pinned(values):
    host = cuda.pinned_array(values.shape, values.dtype)
    host[:] = values
    return host


def _inputs(n):
    rng = np.random.default_rng(0)
    a = rng.integers(-2**30, 2**30, n, dtype=DTYPE)
    b = rng.integers(-2**30, 2**30, n, dtype=DTYPE)
    return a, b, a + b


@benchmark(st.busy, st.busy_kernel, st.busy_pair)
def rules():
    first, second = cuda.stream(), cuda.stream()
    seeds = np.array([1, 2, 3], np.int64)
    x = cuda.to_device(seeds)
    # Calibrate: steps for about 1 ms, whatever this GPU's speed.
    probe = 100_000
    t = harness.time_gpu(lambda: st.busy(x, probe))
    steps = int(probe * 1.0 / t.ms)
    one = harness.time_gpu(lambda: st.busy(x, steps, first))
    rows = [row("busy (one launch)", "kernel", one, steps=steps)]
    for schedule in st.SCHEDULES:
        x.copy_to_device(seeds)
        st.busy_pair(schedule, x, steps, (first, second))
        harness.check(x[:2], [st.busy_reference(s, steps) for s in seeds[:2]], name=schedule)
        t = harness.time_gpu(lambda: st.busy_pair(schedule, x, steps, (first, second)))
        rows.append(row(schedule, "kernel", t, steps=steps, launches=t.ms / one.ms))
    return {"description": "two one-thread busy kernels of about 1 ms each under the "
                           "stream rules (time in units of one launch)",
            "params": {"steps": steps}, "rows": rows}


@benchmark()  # Numba's copies only: none of the course's kernels
def pinned():
    n = size("streams_pipeline")
    values = _inputs(n)[0]
    memories = {"pageable": values.copy(), "pinned": _pinned(values)}
    d = cuda.device_array(n, DTYPE)
    s = cuda.stream()
    rows = []
    for memory, host in memories.items():
        copies = {"host to device": lambda: d.copy_to_device(host, stream=s),
                  "device to host": lambda: d.copy_to_host(host, stream=s)}
        for direction, copy in copies.items():
            t = _time_events({direction: copy})[direction]
            harness.check(d if direction == "host to device" else host, values,
                          name=f"{memory} {direction}")
            rows.append(row(f"{direction}, {memory}", "kernel", t, memory=memory,
                            direction=direction, gbps=host.nbytes / t.ms / 1e6,
                            issue_ms=_issue_ms(copy)))
    return {"description": f"one copy of {n:,} int32 ({values.nbytes / 1e6:.0f} MB) on a "
                           "stream, from pageable and from pinned host memory; issue_ms is "
                           "the host time until the call returns",
            "params": {"n": n, "bytes": values.nbytes}, "rows": rows}


def _floor(limits, bytes_in, bytes_out):
    return max(bytes_in / limits["h2d_gbps"], bytes_out / limits["d2h_gbps"]) / 1e6


PIPELINE_COVERS = (st.Pipeline, st.chunk_bounds, st.issue_pipeline, st._check_call,
                   st.copy_in_numba,
                   st.copy_out_numba, st.copy_in_driver, st.copy_out_driver,
                   *st.VERSIONS.values(), gridstride.vector_add_gridstride_kernel)


@benchmark(*PIPELINE_COVERS, st.vector_add_pipelined_shared_buffers)
def pipeline():
    n = size("streams_pipeline")
    a, b, expected = _inputs(n)
    a, b = _pinned(a), _pinned(b)
    out = cuda.pinned_array(n, DTYPE)
    bytes_in, bytes_out = a.nbytes + b.nbytes, out.nbytes

    # The limits, measured in this run: 256 MiB copies (harness), and this
    # benchmark's own buffers copied whole, one direction at a time and, timed in turns
    # with the pipelines below, both at once.
    limits = harness.measure_limits()
    d_a, d_b, d_out = (cuda.device_array(n, DTYPE) for _ in range(3))
    d_out.copy_to_device(expected)
    legacy, s_in, s_out = cuda.legacy_default_stream(), cuda.stream(), cuda.stream()
    t_in = harness.time_gpu(lambda: (d_a.copy_to_device(a, stream=legacy),
                                     d_b.copy_to_device(b, stream=legacy)))
    t_out = harness.time_gpu(lambda: d_out.copy_to_host(out, stream=legacy))
    own = {"h2d_gbps": bytes_in / t_in.ms / 1e6, "d2h_gbps": bytes_out / t_out.ms / 1e6}
    # The floor takes the best bandwidth measured in this run for each direction: one
    # slow measurement must not lower the bar.
    best = {k: max(limits[k], own[k]) for k in own}
    floor = _floor(best, bytes_in, bytes_out)

    stage = "vector_add_pipelined_stage_streams"
    configs = [(name, chunks, 1) for name in st.VERSIONS for chunks in CHUNKS]
    configs += [(stage, chunks, SHRINK) for chunks in SHRINK_CHUNKS]
    configs += [(stage, SHRINK_AT, shrink) for shrink in SHRINKS if shrink != SHRINK]
    both = "copy in and out at once, whole"
    runs = {both: lambda: (st.copy_in_driver(d_a, a, s_in), st.copy_in_driver(d_b, b, s_in),
                           st.copy_out_driver(d_out, out, s_out))}
    for name, chunks, shrink in configs:
        fn = st.VERSIONS[name]
        p = st.Pipeline(n, DTYPE, chunks, shrink=shrink)
        out[:] = -1
        harness.check(fn(a, b, out, p), expected,
                      name=f"{name}, {chunks} chunks, shrink {shrink}")
        runs[name, chunks, shrink] = lambda fn=fn, p=p: fn(a, b, out, p, wait=False)
    timings = _time_events(runs)
    t_both = timings.pop(both)
    del runs[both]
    rows = [row("copy a and b in, whole", "limit", t_in, gbps=own["h2d_gbps"]),
            row("copy out, whole", "limit", t_out, gbps=own["d2h_gbps"]),
            row(both, "limit", t_both, gbps=(bytes_in + bytes_out) / t_both.ms / 1e6),
            row("floor", "limit", None, floor_ms=floor, h2d_gbps=best["h2d_gbps"],
                d2h_gbps=best["d2h_gbps"], floor_limits_ms=_floor(limits, bytes_in, bytes_out),
                floor_own_buffers_ms=_floor(own, bytes_in, bytes_out))]
    for (name, chunks, shrink), run in runs.items():
        t = timings[name, chunks, shrink]
        rows.append(row(name, "kernel", t, chunks=chunks, shrink=shrink, memory="pinned",
                        queued_ms=harness.time_gpu(run).ms, issue_ms=_issue_ms(run),
                        floor_fraction=floor / t.ms))

    # Pageable memory: every copy makes the host wait, so nothing overlaps.
    pa, pb, pout = a.copy(), b.copy(), np.empty(n, DTYPE)
    p = st.Pipeline(n, DTYPE, 4)
    fn = st.vector_add_pipelined_driver_copies
    harness.check(fn(pa, pb, pout, p), expected, name="pageable")
    t = _time_events({"pageable": lambda: fn(pa, pb, pout, p, wait=False)},
                     repeats=5)["pageable"]
    rows.append(row("vector_add_pipelined_driver_copies", "kernel", t, chunks=4, shrink=1,
                    memory="pageable", floor_fraction=floor / t.ms))

    # The race of the popular version: count wrong elements, run after run.
    for chunks in CHUNKS[1:]:
        wrong = []
        for _ in range(5):
            out[:] = -1
            st.vector_add_pipelined_shared_buffers(a, b, out, chunks=chunks)
            wrong.append(int(np.count_nonzero(out != expected)))
        rows.append(row("vector_add_pipelined_shared_buffers", "kernel", None,
                        chunks=chunks, mismatches=wrong, n=n))
    return {"description": f"out = a + b, {n:,} int32 from pinned host memory and back "
                           f"({bytes_in / 1e6:.0f} MB in, {bytes_out / 1e6:.0f} MB out), "
                           "in chunks on streams",
            "params": {"n": n, "dtype": "int32", "chunks": list(CHUNKS),
                       "shrink": SHRINK, "shrink_chunks": list(SHRINK_CHUNKS),
                       "shrinks": list(SHRINKS), "shrink_at": SHRINK_AT,
                       "bytes_in": bytes_in, "bytes_out": bytes_out,
                       "timing": "events on the legacy default stream, GPU idle at the "
                                 "start (time_ms); queued behind a spin kernel "
                                 "(queued_ms)"},
            "rows": rows}


TIMELINES = (("vector_add_pipelined_driver_copies", 1, 1),
             ("vector_add_pipelined_driver_copies", 4, 1),
             ("vector_add_pipelined_driver_copies", 16, 1),
             ("vector_add_pipelined", 16, 1),
             ("vector_add_pipelined_stage_streams", 8, SHRINK))


@benchmark(*PIPELINE_COVERS, st.Timeline)
def timeline():
    n = size("streams_pipeline")
    a, b, expected = _inputs(n)
    a, b = _pinned(a), _pinned(b)
    out = cuda.pinned_array(n, DTYPE)
    rows = []
    for name, chunks, shrink in TIMELINES:
        fn = st.VERSIONS[name]
        p = st.Pipeline(n, DTYPE, chunks, shrink=shrink)
        fn(a, b, out, p)  # warm-up
        t = st.Timeline(p)
        out[:] = -1
        fn(a, b, out, p, timeline=t)
        harness.check(out, expected, name=f"{name}, {chunks} chunks")
        rows.append(row(name, "kernel", None, chunks=chunks, shrink=shrink,
                        bounds=p.bounds, steps=t.steps()))
    return {"description": f"CUDA events around every step of the pipelined add of {n:,} "
                           "int32, ms after a start event on the legacy default stream "
                           "(recording an event costs host time: see host_costs)",
            "params": {"n": n, "timelines": [list(t) for t in TIMELINES]}, "rows": rows}


@benchmark(st.copy_in_numba, st.copy_out_numba, st.copy_in_driver, st.copy_out_driver,
           gridstride.vector_add_gridstride_kernel)
def host_costs():
    n = size("streams_pipeline")
    p = st.Pipeline(n, DTYPE, 16)
    d_a, d_b, d_out = p.device[0]
    s, blocks = p.streams[0], p.blocks[0]
    lo, hi = p.bounds[0]
    host = _pinned(_inputs(hi - lo)[0])
    event = cuda.event()
    calls = {
        "copy_in_numba (copy_to_device)": lambda: st.copy_in_numba(d_a, host, s),
        "copy_in_driver": lambda: st.copy_in_driver(d_a, host, s),
        "kernel launch": lambda: gridstride.vector_add_gridstride_kernel[
            blocks, p.threads, s](d_a, d_b, d_out),
        "copy_out_numba (copy_to_host)": lambda: st.copy_out_numba(d_out, host, s),
        "copy_out_driver": lambda: st.copy_out_driver(d_out, host, s),
        "event record": lambda: event.record(s),
        "event wait": lambda: event.wait(s),
    }
    rows = []
    for name, call in calls.items():
        t = harness.time_cpu(call, repeats=50, warmup=3)
        cuda.synchronize()
        rows.append(row(name, "kernel", t, host_us=t.ms * 1e3))
    return {"description": f"host time of one call that queues work on a stream (one "
                           f"chunk of 16: {hi - lo:,} int32, pinned), median of 50",
            "params": {"elements": hi - lo}, "rows": rows}
