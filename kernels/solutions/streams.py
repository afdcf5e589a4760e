"""Solutions to the streams chapter's exercises."""

import math

from numba import cuda

from kernels.gridstride import vector_add_gridstride_kernel
from kernels.streams import chunk_bounds

THREADS = 256


def _add(d_a, d_b, d_out, stream):
    blocks = min(1024, math.ceil(d_out.size / THREADS))
    vector_add_gridstride_kernel[blocks, THREADS, stream](d_a, d_b, d_out)


def stream_add(a, b, out, stream):
    """out = a + b with both copies in, the kernel and the copy out on `stream`."""
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_out = cuda.device_array_like(out, stream=stream)
    _add(d_a, d_b, d_out, stream)
    d_out.copy_to_host(out, stream=stream)
    stream.synchronize()  # the copy out is only queued: wait for it, and only for it
    return out


def chunked_streams_add(a, b, out, chunks):
    """The popular version, fixed: each chunk has its own slices of full-size buffers."""
    d_a, d_b, d_out = (cuda.device_array(a.size, a.dtype) for _ in range(3))
    streams = []
    for lo, hi in chunk_bounds(a.size, chunks):
        s = cuda.stream()
        streams.append(s)
        d_a[lo:hi].copy_to_device(a[lo:hi], stream=s)
        d_b[lo:hi].copy_to_device(b[lo:hi], stream=s)
        _add(d_a[lo:hi], d_b[lo:hi], d_out[lo:hi], s)
        d_out[lo:hi].copy_to_host(out[lo:hi], stream=s)
    for s in streams:
        s.synchronize()
    return out


def bounded_streams_add(a, b, out, chunks, streams):
    """Device memory for `streams` chunks only: chunk i runs on stream i % streams and
    reuses that stream's buffers. Safe because a stream runs its work in the order it
    was queued, and each chunk is queued whole (copy in, kernel, copy out) before the
    next: the next chunk's copy in on the same stream waits for this copy out."""
    bounds = chunk_bounds(a.size, chunks)
    largest = bounds[0][1] - bounds[0][0]
    lanes = [(cuda.stream(), *(cuda.device_array(largest, a.dtype) for _ in range(3)))
             for _ in range(min(streams, chunks))]
    for i, (lo, hi) in enumerate(bounds):
        s, d_a, d_b, d_out = lanes[i % len(lanes)]
        m = hi - lo
        d_a[:m].copy_to_device(a[lo:hi], stream=s)
        d_b[:m].copy_to_device(b[lo:hi], stream=s)
        _add(d_a[:m], d_b[:m], d_out[:m], s)
        d_out[:m].copy_to_host(out[lo:hi], stream=s)
    for s, *_ in lanes:
        s.synchronize()
    return out
