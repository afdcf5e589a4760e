"""The one harness every topic uses: check, time, record.

* ``check`` (kernels.harness.checking): compare a result with its reference (exact
  for integers, a tolerance by dtype for floats) and name the first mismatches.
* ``time_gpu``, ``time_blocking``, ``time_cpu``, ``CUDATimer``, ``measure_limits``
  (kernels.harness.timing): GPU time by CUDA events after a warm-up, launch overhead
  hidden, L2 flushed on request; the device's physical limits, measured.
* ``benchmark`` / ``recorded`` / ``live_or_recorded`` (kernels.harness.recording): the
  registry of benchmarks and their recordings in ``book/_data/bench/<device>.json``,
  stamped with the source hash of the kernels each one ran, so a changed kernel makes
  its recording stale.

Chapters and topics call the functions and classes from here (``harness.check``).
Module data (``BENCH_DIR``, ``TOPICS``, ``SCHEMA``, ``BENCHMARKS``) is read, and set
by tests, in the module that holds it: ``harness.recording.BENCH_DIR``.
"""

import importlib

# Each name's module. Loaded on first use (PEP 562), so that a process that only reads
# recordings (the grader's command line) does not import Numba for the timers.
_HOME = {**dict.fromkeys(["MismatchError", "check", "default_tolerance", "matching",
                          "to_host"], "checking"),
         **dict.fromkeys(["CUDATimer", "Timing", "flush_l2", "measure_limits", "require_gpu",
                          "time_blocking", "time_cpu", "time_gpu"], "timing"),
         **dict.fromkeys(["Benchmark", "Result", "benchmark", "environment",
                          "live_or_recorded", "load_benchmarks", "merge_recording",
                          "recorded", "recordings", "row", "run_benchmark", "slug",
                          "source_hash", "write_recording"], "recording")}
__all__ = list(_HOME)


def __getattr__(name):
    if name in _HOME:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    elif name in set(_HOME.values()) | {"profiler"}:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
