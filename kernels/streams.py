"""Streams and overlap: copies in, kernels and copies out at the same time.

Versions (VERSIONS maps each name to its host function):
    vector_add_pipelined   the vector add in chunks, each chunk's copy in, kernel and
                           copy out on its own stream, in its own slices of the device
                           buffers and of the output (one chunk: the serial version)
    vector_add_pipelined_driver_copies  the same, its copies queued without Numba's
                           per-copy checks: less Python time per chunk
    vector_add_pipelined_stage_streams  driver copies, with one stream per stage
                           (copy in, kernel, copy out) instead of one per chunk, and
                           events between them: each engine takes the chunks in order
Beside them:
    vector_add_pipelined_shared_buffers  the popular version: one chunk-sized set of
                           device buffers reused by every stream, a race
    Pipeline               the streams, events, chunk bounds and device buffers of a
                           pipelined call, made once, outside the timed region
    chunk_bounds           equal chunks, or chunks that shrink by a set ratio
    issue_pipeline         the loop of the first two versions, given how to copy
    Timeline               CUDA events around every copy and kernel of a pipelined call
    busy / busy_pair       one GPU thread that computes for a set number of steps, and
                           two of them under the stream rules
The kernel that adds a chunk is the grid-stride kernel of ``kernels.gridstride``.
"""

import math
from fractions import Fraction

import numpy as np
from numba import cuda
from numba.cuda.cudadrv import driver

from kernels import validate
from kernels.gridstride import default_blocks, vector_add_gridstride_kernel

DTYPES = (np.float32, np.float64, np.int32, np.int64)
STAGES = ("copy in", "kernel", "copy out")

# ------------------------------------------------------------------ reference


def vector_add_reference(a, b):
    return np.add(a, b)


def busy_reference(seed, steps):
    x = int(seed)
    for _ in range(steps):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


# -------------------------------------------------------------------- kernels


@cuda.jit
def busy_kernel(x, steps):
    # One thread, a chain of dependent steps: the run time grows with `steps`, and
    # the kernel leaves almost all of the GPU free for a kernel on another stream.
    value = x[0]
    for _ in range(steps):
        value = (value * 1103515245 + 12345) & 0x7FFFFFFF
    x[0] = value


# ------------------------------------------------------------ host functions


def chunk_bounds(n, chunks, shrink=1):
    """(lo, hi) of `chunks` contiguous pieces of range(n), each about `shrink` times the
    size of the one before: 1 gives equal sizes (differing by at most 1), 0.5 halves
    them chunk by chunk. Every chunk gets at least one element."""
    n = _count("n", n)
    chunks = _count("chunks", chunks, at_most=n)
    if isinstance(shrink, bool) or not isinstance(shrink, (int, float)) \
            or not 0 < shrink <= 1:
        raise ValueError(f"shrink must be a number in (0, 1], got {shrink!r}")
    # One element each, the rest shared in proportion to shrink**i; exact fractions, so
    # that equal weights round the same way every time.
    weights = [Fraction(shrink) ** i for i in range(chunks)]
    exact = [1 + (n - chunks) * w / sum(weights) for w in weights]
    sizes = [math.floor(x) for x in exact]
    # The chunks with the largest remainders take one more; on a tie, the earlier one.
    by_remainder = sorted(range(chunks), key=lambda i: (sizes[i] - exact[i], i))
    for i in by_remainder[:n - sum(sizes)]:
        sizes[i] += 1
    bounds, lo = [], 0
    for size in sizes:
        bounds.append((lo, lo + size))
        lo += size
    return bounds


def _count(name, value, *, at_least=1, at_most=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < at_least or (at_most is not None and value > at_most):
        limit = f"between {at_least} and {at_most}" if at_most is not None else \
            f"at least {at_least}"
        raise ValueError(f"{name} must be {limit}, got {value}")
    return int(value)


def _host_vectors(a, b, out):
    """Check a, b, out: 1-D host arrays of one dtype and size (the copies' ends)."""
    for name, x in (("a", a), ("b", b), ("out", out)):
        if not isinstance(x, np.ndarray):
            raise TypeError(f"{name} must be a NumPy array in host memory (ideally from "
                            f"cuda.pinned_array), got {type(x).__name__}: the pipeline "
                            "copies it to and from the device itself")
        validate.array(name, x, dtypes=DTYPES if name == "a" else a.dtype, ndim=1)
    validate.same_shape(a=a, b=b, out=out)
    validate.nonempty("a", a)


class Pipeline:
    """The streams, events, chunk bounds, device buffers and launches of a pipelined
    vector add.

    Making them costs allocations and driver calls (tens of microseconds each), so a
    Pipeline is made once, outside the timed region, and used for every call. Each
    chunk gets its own stream, its own slices of three full-size device buffers, and
    two events (its copy in is done; its kernel is done). Three more streams, one per
    stage, and an event for the end of a call serve vector_add_pipelined_stage_streams.
    `shrink` sets the chunk sizes (chunk_bounds): 1 for equal chunks.
    """

    def __init__(self, n, dtype, chunks, *, shrink=1, threads=256):
        n = _count("n", n)
        self.chunks = _count("chunks", chunks, at_most=n)
        _, self.threads = validate.launch(1, threads)
        self.dtype = np.dtype(dtype)
        if self.dtype not in [np.dtype(d) for d in DTYPES]:
            raise TypeError(f"dtype {self.dtype.name} is not accepted; accepted: "
                            + ", ".join(np.dtype(d).name for d in DTYPES))
        self.n = n
        self.shrink = shrink
        self.bounds = chunk_bounds(n, self.chunks, shrink)
        self.streams = [cuda.stream() for _ in range(self.chunks)]
        self.stage_streams = tuple(cuda.stream() for _ in STAGES)
        self.copied_in = [cuda.event() for _ in range(self.chunks)]
        self.added = [cuda.event() for _ in range(self.chunks)]
        self.done = cuda.event()
        buffers = [cuda.device_array(n, self.dtype) for _ in range(3)]
        self.device = [tuple(buf[lo:hi] for buf in buffers) for lo, hi in self.bounds]
        self.blocks = [min(default_blocks(), math.ceil((hi - lo) / self.threads))
                       for lo, hi in self.bounds]

    def synchronize(self):
        for stream in (*self.streams, *self.stage_streams):
            stream.synchronize()


def copy_in_numba(device, host, stream):
    device.copy_to_device(host, stream=stream)


def copy_out_numba(device, host, stream):
    device.copy_to_host(host, stream=stream)


def copy_in_driver(device, host, stream):
    # Numba's copy_to_device checks its arguments on every call and slices the device
    # array twice to do it: tens of microseconds of host time (streams.host_costs
    # measures it). This is the same driver call without the checks, which the
    # pipelined launchers make once per call instead.
    driver.host_to_device(device, host, host.nbytes, stream)


def copy_out_driver(device, host, stream):
    driver.device_to_host(host, device, host.nbytes, stream)


def _check_call(a, b, out, pipeline):
    _host_vectors(a, b, out)
    if a.size != pipeline.n or a.dtype != pipeline.dtype:
        raise ValueError(f"the pipeline was made for {pipeline.n} {pipeline.dtype.name} "
                         f"elements, got {a.size} {a.dtype.name}")


def issue_pipeline(a, b, out, pipeline, copy_in, copy_out, *, wait=True, timeline=None):
    """Queue every chunk's copies in, kernel and copy out on the chunk's stream.

    Checks a, b and out once, for the whole call, then queues: every copy in first
    (the host-to-device engine gets its whole queue at once instead of waiting while
    Python launches kernels), then the kernels, then the copies out. With wait=False
    it returns as soon as everything is queued: synchronize before reading out.
    `timeline` (a Timeline of this pipeline) records an event around every step.
    """
    _check_call(a, b, out, pipeline)
    chunks = list(zip(pipeline.bounds, pipeline.device, pipeline.streams, pipeline.blocks))
    if timeline is not None:
        timeline.start.record()  # on the legacy default stream: before every stream
    for i, ((lo, hi), (d_a, d_b, _), s, _) in enumerate(chunks):
        if timeline is not None:
            timeline.events[i][0].record(s)
        copy_in(d_a, a[lo:hi], s)
        copy_in(d_b, b[lo:hi], s)
        if timeline is not None:
            timeline.events[i][1].record(s)
    for i, (_, (d_a, d_b, d_out), s, blocks) in enumerate(chunks):
        vector_add_gridstride_kernel[blocks, pipeline.threads, s](d_a, d_b, d_out)
        if timeline is not None:
            timeline.events[i][2].record(s)
    for i, ((lo, hi), (_, _, d_out), s, _) in enumerate(chunks):
        copy_out(d_out, out[lo:hi], s)
        if timeline is not None:
            timeline.events[i][3].record(s)
    if wait:
        pipeline.synchronize()
    return out


def vector_add_pipelined(a, b, out, pipeline, *, wait=True, timeline=None):
    """out = a + b in `pipeline.chunks` chunks, each on its own stream, copied with
    Numba's copy_to_device and copy_to_host.

    a, b and out are host arrays; pinned ones (cuda.pinned_array) let the copies run
    while the host goes on, pageable ones make every copy wait for itself."""
    return issue_pipeline(a, b, out, pipeline, copy_in_numba, copy_out_numba, wait=wait,
                          timeline=timeline)


def vector_add_pipelined_driver_copies(a, b, out, pipeline, *, wait=True, timeline=None):
    """vector_add_pipelined with the copies queued by the driver functions that Numba
    itself calls, without Numba's per-copy checks: less host time per chunk."""
    return issue_pipeline(a, b, out, pipeline, copy_in_driver, copy_out_driver, wait=wait,
                          timeline=timeline)


def vector_add_pipelined_stage_streams(a, b, out, pipeline, *, wait=True, timeline=None):
    """out = a + b with one stream per stage: every copy in on the first stage stream,
    every kernel on the second, every copy out on the third, with driver copies.

    Events carry each chunk from stage to stage: its kernel waits for its copy in, its
    copy out for its kernel. Each stage's stream runs the chunks in order, so each copy
    engine moves one chunk at a time, first chunk first.
    """
    _check_call(a, b, out, pipeline)
    s_in, s_add, s_out = pipeline.stage_streams
    # The previous call's kernels and copies out read the buffers this call overwrites,
    # and nothing else orders them before this call's copies in.
    pipeline.done.wait(s_in)
    chunks = list(zip(pipeline.bounds, pipeline.device, pipeline.blocks,
                      pipeline.copied_in, pipeline.added))
    if timeline is not None:
        timeline.start.record()
    for i, ((lo, hi), (d_a, d_b, _), _, copied_in, _) in enumerate(chunks):
        if timeline is not None:
            timeline.events[i][0].record(s_in)
        copy_in_driver(d_a, a[lo:hi], s_in)
        copy_in_driver(d_b, b[lo:hi], s_in)
        copied_in.record(s_in)
        if timeline is not None:
            timeline.events[i][1].record(s_in)
    for i, (_, (d_a, d_b, d_out), blocks, copied_in, added) in enumerate(chunks):
        copied_in.wait(s_add)  # s_add runs nothing queued after this until it is done
        vector_add_gridstride_kernel[blocks, pipeline.threads, s_add](d_a, d_b, d_out)
        added.record(s_add)
        if timeline is not None:
            timeline.events[i][2].record(s_add)
    for i, ((lo, hi), (_, _, d_out), _, _, added) in enumerate(chunks):
        added.wait(s_out)
        copy_out_driver(d_out, out[lo:hi], s_out)
        if timeline is not None:
            timeline.events[i][3].record(s_out)
    pipeline.done.record(s_out)  # the last copy out: after every step of this call
    if wait:
        pipeline.synchronize()
    return out


def vector_add_pipelined_shared_buffers(a, b, out, *, chunks=4, threads=256):
    """The popular version, WRONG: every stream reuses one chunk-sized set of device
    buffers, so one stream's copy in can overwrite the input of another stream's
    kernel, and one stream's kernel the result another stream is copying out."""
    _host_vectors(a, b, out)
    bounds = chunk_bounds(a.size, _count("chunks", chunks, at_most=a.size))
    largest = bounds[0][1] - bounds[0][0]
    d_a, d_b, d_out = (cuda.device_array(largest, a.dtype) for _ in range(3))
    for lo, hi in bounds:
        s = cuda.stream()
        m = hi - lo
        d_a[:m].copy_to_device(a[lo:hi], stream=s)
        d_b[:m].copy_to_device(b[lo:hi], stream=s)
        blocks = min(default_blocks(), math.ceil(m / threads))
        vector_add_gridstride_kernel[blocks, threads, s](d_a[:m], d_b[:m], d_out[:m])
        d_out[:m].copy_to_host(out[lo:hi], stream=s)
    cuda.synchronize()
    return out


class Timeline:
    """CUDA events around every step of a pipelined call, read back as milliseconds.

    Pass it as ``vector_add_pipelined(..., timeline=t)``; after the call, ``t.steps()``
    lists each step with the time its stream reached it (``ready``) and the time it
    was done, both after a start event recorded on the legacy default stream. An event
    says when its stream got there, not when an engine began the work: a copy that
    waits for the copy engine shows that wait between ``ready`` and its start.
    """

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.start = cuda.event()
        self.events = [[cuda.event() for _ in range(len(STAGES) + 1)]
                       for _ in range(pipeline.chunks)]

    def steps(self):
        """[{"chunk", "step", "ready_ms", "done_ms"}], in milliseconds after the start."""
        self.pipeline.synchronize()
        found = []
        for chunk, marks in enumerate(self.events):
            times = [self.start.elapsed_time(m) for m in marks]
            for step, ready, done in zip(STAGES, times, times[1:]):
                found.append({"chunk": chunk, "step": step, "ready_ms": ready,
                              "done_ms": done})
        return found


def busy(x, steps, stream=0):
    """Run busy_kernel on one thread of `stream`: x[0] takes `steps` LCG steps."""
    validate.array("x", x, dtypes=np.int64, ndim=1)
    if not validate.on_device(x):
        raise TypeError("x must be a device array (cuda.to_device): a host array would be "
                        "copied and waited for, which is what this demonstration avoids")
    busy_kernel[1, 1, stream](x, _count("steps", steps, at_least=0))
    return x


SCHEDULES = ("one stream", "two streams", "two streams, default stream between")


def busy_pair(schedule, x, steps, streams):
    """Two busy launches of `steps` under one of SCHEDULES; x holds three seeds.

    one stream: in order, one after the other. two streams: no order between them,
    so they run at once. two streams with a tiny launch on the legacy default stream
    between: that launch waits for the first, and the second waits for it.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    first, second = streams
    busy(x[0:1], steps, first)
    if schedule == "one stream":
        busy(x[1:2], steps, first)
    else:
        if schedule == "two streams, default stream between":
            busy(x[2:3], 1, 0)
        busy(x[1:2], steps, second)
    return x


VERSIONS = {
    "vector_add_pipelined": vector_add_pipelined,
    "vector_add_pipelined_driver_copies": vector_add_pipelined_driver_copies,
    "vector_add_pipelined_stage_streams": vector_add_pipelined_stage_streams,
}
