"""Correct answers to the streams exercises, in other styles."""

ANSWERS = {
    "streams-ex-one-stream": [
        ("an event recorded after the copy out, waited for", '''
from numba import cuda


@cuda.jit
def add_one_stream_kernel(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[i] + b[i]


def stream_add(a, b, out, stream):
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_out = cuda.device_array(out.size, out.dtype, stream=stream)
    add_one_stream_kernel[32, 128, stream](d_a, d_b, d_out)
    d_out.copy_to_host(out, stream=stream)
    done = cuda.event()
    done.record(stream)
    done.synchronize()
    return out
'''),
        ("auto_synchronize around the stream's work", '''
from numba import cuda

from kernels.gridstride import vector_add_gridstride_kernel


def stream_add(a, b, out, stream):
    with stream.auto_synchronize():
        d_a = cuda.to_device(a, stream=stream)
        d_b = cuda.to_device(b, stream=stream)
        d_out = cuda.device_array_like(out, stream=stream)
        vector_add_gridstride_kernel[64, 256, stream](d_a, d_b, d_out)
        d_out.copy_to_host(out, stream=stream)
    return out
'''),
        ("a one-thread-per-element kernel, the stream passed by keyword", '''
import math

from numba import cuda


@cuda.jit
def add_each_kernel(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def stream_add(a, b, out, stream):
    d_a = cuda.to_device(a, stream=stream)
    d_b = cuda.to_device(b, stream=stream)
    d_out = cuda.device_array_like(d_a, stream=stream)
    add_each_kernel[math.ceil(a.size / 64), 64, stream](d_a, d_b, d_out)
    d_out.copy_to_host(ary=out, stream=stream)
    stream.synchronize()
    return out
'''),
    ],
    "streams-ex-chunked": [
        ("a fresh device allocation per chunk", '''
import numpy as np
from numba import cuda


@cuda.jit
def chunk_add_kernel(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[i] + b[i]


def chunked_streams_add(a, b, out, chunks):
    edges = np.linspace(0, a.size, chunks + 1).astype(int)
    streams = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        s = cuda.stream()
        d_a = cuda.to_device(a[lo:hi], stream=s)
        d_b = cuda.to_device(b[lo:hi], stream=s)
        d_out = cuda.device_array(int(hi - lo), a.dtype, stream=s)  # a GPU takes no np.int64
        chunk_add_kernel[8, 128, s](d_a, d_b, d_out)
        d_out.copy_to_host(out[lo:hi], stream=s)
        streams.append(s)
    for s in streams:
        s.synchronize()
    return out
'''),
        ("an event per chunk, waited for at the end", '''
import numpy as np
from numba import cuda

from kernels.gridstride import vector_add_gridstride_kernel


def chunked_streams_add(a, b, out, chunks):
    d_a = cuda.device_array_like(a)
    d_b = cuda.device_array_like(b)
    d_out = cuda.device_array_like(a)
    done = []
    for part in np.array_split(np.arange(a.size), chunks):
        lo, hi = int(part[0]), int(part[-1]) + 1
        s = cuda.stream()
        d_a[lo:hi].copy_to_device(a[lo:hi], stream=s)
        d_b[lo:hi].copy_to_device(b[lo:hi], stream=s)
        vector_add_gridstride_kernel[4, 256, s](d_a[lo:hi], d_b[lo:hi], d_out[lo:hi])
        d_out[lo:hi].copy_to_host(out[lo:hi], stream=s)
        ev = cuda.event()
        ev.record(s)
        done.append(ev)
    for ev in done:
        ev.synchronize()
    return out
'''),
        ("buffers allocated per chunk up front, then queued", '''
import math

import numpy as np
from numba import cuda


@cuda.jit
def piece_add_kernel(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def chunked_streams_add(a, b, out, chunks):
    size = math.ceil(a.size / chunks)
    jobs = []
    for c in range(chunks):
        lo, hi = c * size, min((c + 1) * size, a.size)
        if lo < hi:
            jobs.append((lo, hi, cuda.stream(), cuda.device_array(hi - lo, a.dtype),
                         cuda.device_array(hi - lo, a.dtype),
                         cuda.device_array(hi - lo, a.dtype)))
    for lo, hi, s, x, y, z in jobs:
        x.copy_to_device(a[lo:hi], stream=s)
        y.copy_to_device(b[lo:hi], stream=s)
        piece_add_kernel[math.ceil((hi - lo) / 128), 128, s](x, y, z)
        z.copy_to_host(out[lo:hi], stream=s)
    for job in jobs:
        job[2].synchronize()
    return out
'''),
    ],
    "streams-ex-bounded": [
        ("the host waits for a lane before it reuses it", '''
import math

import numpy as np
from numba import cuda


@cuda.jit
def lane_add_kernel(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a[i] + b[i]


def bounded_streams_add(a, b, out, chunks, streams):
    size = math.ceil(a.size / chunks)
    lanes = []
    for _ in range(min(streams, chunks)):
        lanes.append([cuda.stream()] + [cuda.device_array(size, a.dtype) for _ in range(3)])
    for c in range(chunks):
        lo, hi = c * size, min(a.size, (c + 1) * size)
        if lo >= hi:
            continue
        s, x, y, z = lanes[c % len(lanes)]
        if c >= len(lanes):
            s.synchronize()
        n = hi - lo
        x[:n].copy_to_device(a[lo:hi], stream=s)
        y[:n].copy_to_device(b[lo:hi], stream=s)
        lane_add_kernel[16, 64, s](x[:n], y[:n], z[:n])
        z[:n].copy_to_host(out[lo:hi], stream=s)
    for lane in lanes:
        lane[0].synchronize()
    return out
'''),
        ("events mark each lane's last chunk", '''
import numpy as np
from numba import cuda

from kernels.gridstride import vector_add_gridstride_kernel
from kernels.streams import chunk_bounds


def bounded_streams_add(a, b, out, chunks, streams):
    bounds = chunk_bounds(a.size, chunks)
    width = max(hi - lo for lo, hi in bounds)
    k = min(streams, len(bounds))
    pool = [(cuda.stream(), cuda.device_array(width, a.dtype), cuda.device_array(width, a.dtype),
             cuda.device_array(width, a.dtype)) for _ in range(k)]
    last = [None] * k
    for c, (lo, hi) in enumerate(bounds):
        s, x, y, z = pool[c % k]
        n = hi - lo
        x[:n].copy_to_device(a[lo:hi], stream=s)
        y[:n].copy_to_device(b[lo:hi], stream=s)
        vector_add_gridstride_kernel[8, 128, s](x[:n], y[:n], z[:n])
        z[:n].copy_to_host(out[lo:hi], stream=s)
        last[c % k] = cuda.event()
        last[c % k].record(s)
    for ev in last:
        if ev is not None:
            ev.synchronize()
    return out
'''),
        ("output buffers zeroed on the default stream first", '''
import math

import numpy as np
from numba import cuda


@cuda.jit
def fill_zero_kernel(z):
    for i in range(cuda.grid(1), z.size, cuda.gridsize(1)):
        z[i] = 0


@cuda.jit
def ring_add_kernel(a, b, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] += a[i] + b[i]


def bounded_streams_add(a, b, out, chunks, streams):
    edges = [round(c * a.size / chunks) for c in range(chunks + 1)]
    width = max(edges[c + 1] - edges[c] for c in range(chunks))
    ring = []
    for _ in range(min(streams, chunks)):
        ring.append((cuda.stream(), cuda.device_array(width, a.dtype),
                     cuda.device_array(width, a.dtype), cuda.device_array(width, a.dtype)))
    for c in range(chunks):
        lo, hi = edges[c], edges[c + 1]
        if hi == lo:
            continue
        s, x, y, z = ring[c % len(ring)]
        n = hi - lo
        fill_zero_kernel[4, 64](z[:n])
        x[:n].copy_to_device(a[lo:hi], stream=s)
        y[:n].copy_to_device(b[lo:hi], stream=s)
        ring_add_kernel[4, 64, s](x[:n], y[:n], z[:n])
        z[:n].copy_to_host(out[lo:hi], stream=s)
    for s, *_ in ring:
        s.synchronize()
    return out
'''),
        ("a chunk's a and b staged together: one copy in per chunk", '''
import numpy as np
from numba import cuda


@cuda.jit
def add_halves_kernel(ab, m, out):
    for i in range(cuda.grid(1), m, cuda.gridsize(1)):
        out[i] = ab[i] + ab[m + i]


def bounded_streams_add(a, b, out, chunks, streams):
    n = a.size
    size = -(-n // chunks)
    lanes = [(cuda.stream(), cuda.device_array(2 * size, np.int32),
              cuda.device_array(size, np.int32)) for _ in range(min(streams, chunks))]
    k = 0
    for lo in range(0, n, size):
        hi = min(n, lo + size)
        m = hi - lo
        s, d_ab, d_o = lanes[k % len(lanes)]
        k += 1
        staged = np.concatenate([a[lo:hi], b[lo:hi]])     # one copy in per chunk
        d_ab[:2 * m].copy_to_device(staged, stream=s)
        add_halves_kernel[4, 128, s](d_ab, m, d_o)
        d_o[:m].copy_to_host(out[lo:hi], stream=s)
    for s, _, _ in lanes:
        s.synchronize()
    return out
'''),
    ],
}
