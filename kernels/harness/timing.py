"""GPU timing with CUDA events, and the device's physical limits, measured.

``time_gpu`` times a GPU callable after a warm-up, as the median and spread of repeats.
The timed launches are queued behind a spin kernel, so the 11-28 us of host time a
Numba launch costs is not in the GPU time; the end-to-end time (launch + run +
synchronise, as a Python caller sees it) is reported beside it, and so is the
device-busy time from the profiler (kernels.harness.profiler): the one measure that
is the same for a library call that synchronises inside. ``cold=True`` flushes
the L2 cache before every repeat, for memory-bound kernels whose input would otherwise
stay cached (the H100's L2 holds 50 MB). ``CUDATimer`` times one block in a chapter;
``measure_limits`` measures the copy bandwidths, the smallest kernel and the FP32 rate.
"""

import dataclasses
import time

import numpy as np
from numba import cuda, float32

from kernels import SIMULATOR, device
from kernels.harness import profiler


@cuda.jit
def _spin_kernel(microseconds):
    # Keeps the GPU busy while the host queues the timed launches behind it.
    for _ in range(microseconds):
        cuda.nanosleep(1000)


@cuda.jit
def _flush_kernel(buf, sink):
    # Reads only: a flush that wrote would leave dirty lines in L2 whose write-back
    # would then compete with the timed kernel's own traffic.
    total = 0
    for i in range(cuda.grid(1), buf.size, cuda.gridsize(1)):
        total += buf[i]
    if total != 0:  # never true (buf is zeros), but the loads cannot be dropped
        sink[0] = total


@cuda.jit
def _empty_kernel():
    # The smallest kernel: its time is the floor under any one launch.
    pass


FMA_CHAINS = 12  # independent accumulators per thread: more than the FMA latency needs
FMA_UNROLL = 8  # chain steps per loop trip, so the loop's own instructions are few
FMA_STEPS = 256


@cuda.jit
def _fma_kernel(x, out):
    # FMA_CHAINS independent multiply-add chains per thread on registers only, each
    # adding a product of two loop-invariant values into its own accumulator (as a
    # matmul's inner loop does): the float32 rate with no memory traffic to wait for.
    # (Sixteen chains and no unrolling reached 47 TFLOP/s on the H100: 70% of its peak.)
    a = x[0] + float32(cuda.threadIdx.x) * float32(1e-7)  # float32: an int would widen it
    b = x[1]
    e = a + b
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = c10 = c11 = float32(0)
    for _ in range(FMA_STEPS):
        for _ in range(FMA_UNROLL):  # a constant trip count: the compiler unrolls it
            c0 = cuda.fma(a, b, c0)
            c1 = cuda.fma(a, e, c1)
            c2 = cuda.fma(e, b, c2)
            c3 = cuda.fma(e, e, c3)
            c4 = cuda.fma(a, b, c4)
            c5 = cuda.fma(a, e, c5)
            c6 = cuda.fma(e, b, c6)
            c7 = cuda.fma(e, e, c7)
            c8 = cuda.fma(a, b, c8)
            c9 = cuda.fma(a, e, c9)
            c10 = cuda.fma(e, b, c10)
            c11 = cuda.fma(e, e, c11)
    total = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11
    if total == x[3]:  # never true for these inputs: the chains cannot be dropped
        out[0] = total


_flush_buffers = None


def flush_l2():
    """Evict the L2 cache by reading a buffer twice its size (queued, not waited)."""
    global _flush_buffers
    if _flush_buffers is None:
        l2 = getattr(cuda.get_current_device(), "L2_CACHE_SIZE", 0) or 64 << 20
        buf = cuda.device_array(2 * l2 // 4, dtype=np.int32)
        buf[:] = 0
        _flush_buffers = (buf, cuda.device_array(1, dtype=np.int32))
    _flush_kernel[1024, 256](*_flush_buffers)


def _stats(ms):
    a = np.asarray(ms, dtype=float)
    return {"median": float(np.median(a)), "p10": float(np.percentile(a, 10)),
            "p90": float(np.percentile(a, 90)), "min": float(a.min()), "repeats": len(a)}


@dataclasses.dataclass
class Timing:
    """GPU time (CUDA events), end-to-end host time and, where the profiler runs,
    device-busy time (kernels.harness.profiler) of repeated calls, in ms."""

    gpu_ms: list
    e2e_ms: list
    cold: bool
    busy: tuple | None = None  # (device-busy ms per call, kernels run), from the profiler

    @property
    def ms(self):
        return float(np.median(self.gpu_ms))

    def to_dict(self):
        d = {"time_ms": _stats(self.gpu_ms), "e2e_ms": _stats(self.e2e_ms),
             "l2": "flushed before each repeat" if self.cold else "warm"}
        if self.busy is not None:
            d["busy_ms"] = _stats(self.busy[0])
            d["kernels"] = self.busy[1]
        return d


def _busy(fn, repeats, cold):
    return profiler.busy_times(fn, repeats=repeats, before=flush_l2 if cold else None,
                               ignore=("_flush_kernel",))


def require_gpu(what):
    if SIMULATOR:
        raise RuntimeError(
            f"{what} needs a CUDA GPU: this process runs on the Numba CUDA simulator, "
            "whose times mean nothing. Run it on a machine with an NVIDIA GPU (or a "
            "Colab GPU runtime).")


def time_gpu(fn, *, repeats=20, warmup=3, cold=False):
    """Time `fn()` (which launches work on the default stream) on the GPU.

    GPU time: CUDA events around each call, with every call queued behind a spin
    kernel that outlasts the host's queueing, so launch overhead is hidden. The
    spin is lengthened and the run repeated until that holds. End-to-end time:
    wall clock around call + synchronise. ``cold`` flushes L2 before each repeat.
    """
    require_gpu("time_gpu")
    for _ in range(warmup):
        fn()
    cuda.synchronize()
    spin_us = 2000
    for _attempt in range(5):
        before, after = cuda.event(), cuda.event()
        starts = [cuda.event() for _ in range(repeats)]
        ends = [cuda.event() for _ in range(repeats)]
        t0 = time.perf_counter()
        before.record()
        _spin_kernel[1, 1](spin_us)
        after.record()
        for start, end in zip(starts, ends):
            if cold:
                flush_l2()
            start.record()
            fn()
            end.record()
        host_ms = (time.perf_counter() - t0) * 1e3
        ends[-1].synchronize()
        spun_ms = cuda.event_elapsed_time(before, after)
        if spun_ms > host_ms:
            break
        spin_us = int(spin_us * 2 * host_ms / max(spun_ms, 1e-3))
    else:
        raise RuntimeError(
            "could not queue the timed calls behind the spin kernel: the callable blocks "
            "the host (a synchronous copy or a synchronize?). Time stream-ordered, "
            "asynchronous work, e.g. copies with stream=cuda.legacy_default_stream().")
    gpu = [cuda.event_elapsed_time(s, e) for s, e in zip(starts, ends)]
    e2e = []
    for _ in range(repeats):
        if cold:
            flush_l2()
        cuda.synchronize()
        t = time.perf_counter()
        fn()
        cuda.synchronize()
        e2e.append((time.perf_counter() - t) * 1e3)
    return Timing(gpu, e2e, cold, _busy(fn, repeats, cold))


def time_blocking(fn, *, repeats=20, warmup=1, cold=False):
    """GPU time of a call that synchronises inside (CuPy's histogram does), so it
    cannot be queued behind time_gpu's spin kernel: CUDATimer around each call.
    Host gaps between the call's own kernels count in, so this can only overstate."""
    require_gpu("time_blocking")
    for _ in range(warmup):
        fn()
    gpu, e2e = [], []
    for _ in range(repeats):
        if cold:
            flush_l2()
        with CUDATimer() as t:
            fn()
        gpu.append(t.ms)
        e2e.append(t.e2e_ms)
    return Timing(gpu, e2e, cold, _busy(fn, repeats, cold))


def time_cpu(fn, *, repeats=5, warmup=1):
    """Wall-clock time of a CPU callable, as a Timing (gpu_ms holds the CPU time)."""
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1e3)
    return Timing(ms, ms, False)


class CUDATimer:
    """Time a block: ``with CUDATimer() as t: ...`` then ``t.ms`` (GPU, by CUDA
    events) and ``t.e2e_ms`` (wall clock). On the simulator ``t.ms`` is None:
    simulated time says nothing about a GPU."""

    def __enter__(self):
        self.ms = None
        if not SIMULATOR:
            self._start, self._end = cuda.event(), cuda.event()
            self._start.record()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if not SIMULATOR:
            self._end.record()
            self._end.synchronize()
            self.ms = cuda.event_elapsed_time(self._start, self._end)
        self.e2e_ms = (time.perf_counter() - self._t0) * 1e3
        return False


def measure_limits():
    """The device's physical limits, measured: copy bandwidths in GB/s."""
    require_gpu("measure_limits")
    n = 256 << 20  # bytes
    d_a = cuda.device_array(n, dtype=np.uint8)
    d_b = cuda.device_array(n, dtype=np.uint8)
    d_a[:] = 1
    host = cuda.pinned_array(n, dtype=np.uint8)
    host[:] = 2
    # Asynchronous copies on the legacy default stream: a synchronous copy would
    # block the host and could not be queued behind the spin kernel.
    stream = cuda.legacy_default_stream()
    # A limit is the fastest the device did: the quickest repeat, not the median, so a
    # benchmark's median cannot beat it by the noise between repeats.
    d2d = min(time_gpu(lambda: d_b.copy_to_device(d_a, stream=stream), repeats=10,
                       cold=True).gpu_ms)
    h2d = min(time_gpu(lambda: d_a.copy_to_device(host, stream=stream), repeats=10).gpu_ms)
    d2h = min(time_gpu(lambda: d_a.copy_to_host(host, stream=stream), repeats=10).gpu_ms)
    empty = min(time_gpu(lambda: _empty_kernel[1, 1](), repeats=50).gpu_ms)
    x = cuda.to_device(np.array([0.1, 0.999, 0.0, -1.0], dtype=np.float32))
    sink = cuda.device_array(1, dtype=np.float32)
    blocks, threads = 16 * device()["sm_count"], 1024
    fma = min(time_gpu(lambda: _fma_kernel[blocks, threads](x, sink), repeats=10).gpu_ms)
    flops = 2 * FMA_CHAINS * FMA_UNROLL * FMA_STEPS * blocks * threads
    return {
        "copy_gbps": 2 * n / d2d / 1e6,  # read + write
        "h2d_gbps": n / h2d / 1e6,
        "d2h_gbps": n / d2h / 1e6,
        "kernel_ms": empty,
        "fp32_tflops": flops / fma / 1e9,
        "note": "fastest of the repeats; 256 MiB copies; device copy counts bytes read + "
                "written; host memory pinned; kernel_ms: an empty kernel of one thread "
                "(launch overhead hidden); fp32_tflops: float32 fused multiply-adds on "
                "registers, 2 flops each",
    }
