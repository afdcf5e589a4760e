"""The one harness every topic uses: check, time, record.

* ``check``: compare a result with its reference (exact for integers, a tolerance
  by dtype for floats) and name the first mismatches.
* ``time_gpu``: time a GPU callable with CUDA events after a warm-up, as the median
  and spread of repeats. The timed launches are queued behind a spin kernel, so the
  11-28 us of host time a Numba launch costs is not in the GPU time; the end-to-end
  time (launch + run + synchronise, as a Python caller sees it) is reported beside
  it. ``cold=True`` flushes the L2 cache before every repeat, for memory-bound
  kernels whose input would otherwise stay cached (the H100's L2 holds 50 MB).
* ``CUDATimer``: a context manager for one timed block in a chapter.
* ``benchmark`` / ``recorded``: the registry of benchmarks and their recordings
  in ``book/_data/bench/<device>.json``, stamped with the source hash of the
  kernels each one ran, so a changed kernel makes its recording stale.
"""

import dataclasses
import datetime
import hashlib
import importlib
import inspect
import json
import pathlib
import platform
import re
import time

import numpy as np
from numba import cuda, float32

from kernels import SIMULATOR, device

# In a checkout the recordings live with the book; an installed package (as on
# Colab) carries a copy of them as kernels/recordings (see pyproject.toml).
_HERE = pathlib.Path(__file__).resolve().parent
_CHECKOUT_BENCH_DIR = _HERE.parent / "book" / "_data" / "bench"
BENCH_DIR = _CHECKOUT_BENCH_DIR if _CHECKOUT_BENCH_DIR.is_dir() else _HERE / "recordings"
TOPICS = ("gridstride", "atomics", "histogram", "reduction", "mutex", "streams",
          "cooperative", "matmul")
SCHEMA = 1

# --------------------------------------------------------------------------- check


class MismatchError(AssertionError):
    """A result differs from its reference."""


def default_tolerance(dtype):
    """(rtol, atol) for comparing one float result of `dtype` with its reference."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return 1e-3, 1e-3
    if dtype == np.float32:
        return 1e-5, 1e-6
    return 1e-12, 1e-14


def to_host(a):
    """A NumPy array from a NumPy array, a Numba device array, or a scalar."""
    if hasattr(a, "copy_to_host"):
        return a.copy_to_host()
    return np.asarray(a)


def check(got, expected, *, name="result", rtol=None, atol=None, show=5):
    """Raise MismatchError unless `got` equals `expected` (within tolerance for floats).

    Integers and booleans must match exactly; floats within ``rtol``/``atol``
    (by default from ``default_tolerance``). Returns a one-line summary.
    """
    got, expected = to_host(got), np.asarray(expected)
    if got.shape != expected.shape:
        raise MismatchError(f"{name}: shape {got.shape}, expected {expected.shape}")
    if np.issubdtype(expected.dtype, np.floating):
        d_rtol, d_atol = default_tolerance(got.dtype if np.issubdtype(got.dtype, np.floating)
                                           else expected.dtype)
        rtol = d_rtol if rtol is None else rtol
        atol = d_atol if atol is None else atol
        bad = ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        how = f"within rtol={rtol:g}, atol={atol:g}"
    else:
        bad = got != expected
        how = "exactly"
    bad = np.atleast_1d(bad)
    n_bad = int(bad.sum())
    if n_bad:
        g, e = np.atleast_1d(got), np.atleast_1d(expected)
        where = np.argwhere(bad)[:show]
        lines = [f"  at {tuple(int(i) for i in w) if got.ndim > 1 else int(w[0])}: "
                 f"got {g[tuple(w)]}, expected {e[tuple(w)]}" for w in where]
        raise MismatchError(
            f"{name}: {n_bad} of {bad.size} values differ from the reference ({how});"
            f" first {len(lines)}:\n" + "\n".join(lines))
    return f"{name}: all {bad.size:,} values match the reference {how}"


# -------------------------------------------------------------------------- timing


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
    """GPU time (CUDA events) and end-to-end host time of repeated calls, in ms."""

    gpu_ms: list
    e2e_ms: list
    cold: bool

    @property
    def ms(self):
        return float(np.median(self.gpu_ms))

    def to_dict(self):
        return {"time_ms": _stats(self.gpu_ms), "e2e_ms": _stats(self.e2e_ms),
                "l2": "flushed before each repeat" if self.cold else "warm"}


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
    return Timing(gpu, e2e, cold)


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
    return Timing(gpu, e2e, cold)


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


# ---------------------------------------------------------------------- recordings


@dataclasses.dataclass
class Benchmark:
    key: str          # "<topic>.<name>"
    fn: object        # () -> entry dict with "description", "params", "rows"
    covers: tuple     # the kernels and launchers it runs, for the source hash

    def source_hash(self):
        return source_hash(*self.covers)


BENCHMARKS = {}


def benchmark(*covers):
    """Register a benchmark of ``kernels.benchmarks.<topic>`` that runs `covers`."""
    def register(fn):
        topic = fn.__module__.rsplit(".", 1)[-1]
        key = f"{topic}.{fn.__name__}"
        BENCHMARKS[key] = Benchmark(key, fn, covers)
        return fn
    return register


def load_benchmarks(topic=None):
    """Import the benchmark modules (all, or one topic's) and return the registry."""
    for t in TOPICS if topic is None else (topic,):
        try:
            importlib.import_module(f"kernels.benchmarks.{t}")
        except ModuleNotFoundError as err:
            if err.name != f"kernels.benchmarks.{t}":
                raise
    return {k: b for k, b in BENCHMARKS.items() if topic is None or k.startswith(topic + ".")}


def _source(obj):
    """Source of a function or kernel, decorators included, followed by the lines
    that assign the module constants it reads (a tile size is part of the kernel).
    The assignment's text, not its value: `X = 16 if SIMULATOR else 128` hashes
    the same on the simulator as on a GPU."""
    py = getattr(obj, "py_func", None) or getattr(obj, "fn", None) or obj
    if inspect.isclass(py):
        return inspect.getsource(py)
    module_lines = inspect.getsource(inspect.getmodule(py)).splitlines()
    assignments = []
    for name in sorted(py.__code__.co_names):
        value = py.__globals__.get(name, _source)
        if value is _source or callable(value) or inspect.ismodule(value):
            continue
        assignments += [line for line in module_lines
                        if re.match(rf"{name}\s*(:[^=]*)?=[^=]", line)]
    return inspect.getsource(py) + "\n".join(assignments)


def source_hash(*objs):
    """A short hash of the source of kernels and functions and the constants they read."""
    h = hashlib.sha256()
    for obj in objs:
        h.update(_source(obj).encode())
    return h.hexdigest()[:12]


def row(name, kind, timing=None, **fields):
    """One result row: a version (kind "kernel"), a "peer" or a "limit"."""
    r = {"name": name, "kind": kind}
    if timing is not None:
        r.update(timing.to_dict())
    r.update(fields)
    return r


def run_benchmark(key):
    """Run one registered benchmark now, on the GPU; return its entry."""
    require_gpu("a benchmark")
    bench = load_benchmarks(key.split(".")[0])[key]
    entry = bench.fn()
    entry.update(source_hash=bench.source_hash(),
                 date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    return entry


def environment():
    """Device and software versions, for a recording's header."""
    import numba_cuda

    env = {"device": device(), "numba_cuda": numba_cuda.__version__,
           "numpy": np.__version__, "python": platform.python_version()}
    if not SIMULATOR:
        env["device"]["l2_bytes"] = cuda.get_current_device().L2_CACHE_SIZE
        env["driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
        try:
            import cupy
            env["cupy"] = cupy.__version__
        except ImportError:
            env["cupy"] = None
    return env


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def write_recording(entries, limits, path=None, env=None):
    """Merge `entries` ({key: entry}) into a device's recording file."""
    env = env or environment()
    path = pathlib.Path(path or BENCH_DIR / f"{slug(env['device']['name'])}.json")
    data = json.loads(path.read_text()) if path.exists() else {"benchmarks": {}}
    data.update(env, schema=SCHEMA, limits=limits)
    # each entry keeps the limits measured in its own run: its floor is built from them
    data["benchmarks"].update({k: {**e, "limits": e.get("limits", limits)}
                               for k, e in entries.items()})
    data["benchmarks"] = dict(sorted(data["benchmarks"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def merge_recording(src):
    """Merge a recording file made elsewhere (e.g. on a lent GPU) into BENCH_DIR.

    A file that is missing, unreadable, not JSON or not a recording raises ValueError
    saying which; nothing is written then."""
    what = "a recording (.json) that `python -m kernels bench` wrote"
    try:
        data = json.loads(pathlib.Path(src).read_text())
    except FileNotFoundError:
        raise ValueError(f"no file {src}: give {what}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read {src} ({err}): give {what}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{src} is not JSON ({err}): give {what}") from None
    missing = [k for k in ("device", "numba_cuda", "benchmarks", "limits")
               if not isinstance(data, dict) or k not in data]
    if missing:
        raise ValueError(f"{src} is not {what}: it has no {', '.join(missing)}")
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{src} is a recording of schema {data.get('schema')}, this "
                         f"package reads schema {SCHEMA}: record it again with this version")
    env = {k: v for k, v in data.items() if k not in ("benchmarks", "limits", "schema")}
    return write_recording(data["benchmarks"], data["limits"], env=env)


def recordings():
    """Every recording file, as {path: data}."""
    return {p: json.loads(p.read_text()) for p in sorted(BENCH_DIR.glob("*.json"))}


@dataclasses.dataclass
class Result:
    """A benchmark entry with where it came from: run live, or recorded."""

    key: str
    entry: dict
    env: dict
    limits: dict
    live: bool
    stale: bool

    def rows(self, kind=None, **params):
        """Rows of this kind whose fields equal `params`."""
        return [r for r in self.entry["rows"]
                if (kind is None or r["kind"] == kind)
                and all(r.get(k) == v for k, v in params.items())]

    def get(self, name, **params):
        found = self.rows(name=name, **params)
        if len(found) != 1:
            raise KeyError(f"{self.key}: {len(found)} rows named {name!r} with {params}")
        return found[0]

    @property
    def caption(self):
        dev = self.env["device"]["name"]
        date = self.entry["date"][:10]
        how = "measured live" if self.live else "recorded"
        text = f"{dev}, {how} {date}, numba-cuda {self.env['numba_cuda']}"
        if self.stale:
            text += " - STALE: the kernels changed since this recording"
        return text


def recorded(key):
    """The recorded entry of benchmark `key`, newest across devices, staleness checked.

    A recording whose benchmark is not in this package (the student edition cannot time
    the solutions) is returned as recorded, its staleness unknown."""
    bench = load_benchmarks(key.split(".")[0]).get(key)
    found = [(data["benchmarks"][key]["date"], data) for data in recordings().values()
             if key in data["benchmarks"]]
    if bench is None and not found:
        raise KeyError(f"no benchmark named {key!r}")
    if not found:
        raise LookupError(f"no recording of {key!r} in {BENCH_DIR}: run "
                          f"`python -m kernels bench {key.split('.')[0]}` on a GPU")
    _, data = max(found, key=lambda f: f[0])
    entry = data["benchmarks"][key]
    env = {k: v for k, v in data.items() if k not in ("benchmarks", "limits")}
    return Result(key, entry, env, entry.get("limits", data["limits"]), live=False,
                  stale=bench is not None and entry["source_hash"] != bench.source_hash())


def live_or_recorded(key):
    """Run benchmark `key` now on a GPU; on the simulator, or where this package cannot
    run it (the student edition and the top-k solution), return its recording."""
    if SIMULATOR or key not in load_benchmarks(key.split(".")[0]):
        return recorded(key)
    return Result(key, run_benchmark(key), environment(), measure_limits(), live=True,
                  stale=False)
