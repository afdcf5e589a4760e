"""Device-busy time of a call from the profiler: the same measure for our kernels and
for a library's, whatever the call does on the host.

CUDA events around a call (``time_gpu``, ``time_blocking``) time what the GPU did
between them, and a call that synchronises inside (``cupy.histogram`` reads a value
back) leaves host gaps between its kernels in that interval: events then compare our
GPU time with a peer's GPU-plus-host time. CUPTI, NVIDIA's profiling interface, records
the start and end of every kernel, copy and memset the process runs, whichever
library launched it. ``busy_times`` takes the time covered by those per call:
device-busy time, gaps left out, on both sides alike. It reads CUPTI through ``torch.profiler`` (PyTorch ships it
and Colab has it); without PyTorch it returns None and says why.

It runs only where ``ENABLED`` is set: in ``python -m kernels bench``, whose recordings
the book reads. A process that profiled beside Numba crashed at exit, after its work,
in about one run of three (double free, on the lent H100 and H200, CUDA 13, with or
without Kineto's CUPTI teardown), so the bench command leaves by ``os._exit`` once
its recording is written, and chapters timing live do not profile (their rows compare
by CUDA events, and say so).
"""

import json
import os
import tempfile
import time

import numpy as np
from numba import cuda

ENABLED = False  # set by the bench command (see above)
GAP_US = 1500  # idle time left between two profiled calls, so their records separate
DEVICE_WORK = ("kernel", "gpu_memcpy", "gpu_memset")  # trace categories of device work
NAME_CHARS = 70


def unavailable():
    """Why busy_times cannot run here, or None."""
    if not ENABLED:
        return "profiling is on in `python -m kernels bench` only"
    try:
        import torch
    except ImportError:
        return "PyTorch, whose profiler reads CUPTI, is not installed"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None


def _work(events, ignore, categories=DEVICE_WORK):
    """The trace's records of device work of `categories`, by start, less those whose
    name holds a string of `ignore`."""
    return sorted((e for e in events if e.get("cat") in categories
                   and not any(s in e.get("name", "") for s in ignore)),
                  key=lambda e: e["ts"])


def split_calls(events, ignore=()):
    """Per-call device-busy ms from Chrome-trace events of calls run one by one with
    idle gaps of GAP_US between them: records of device work are grouped where the
    device idled longer than half a gap, and each group's busy time is the length of
    the union of its records' intervals (kernels of several streams that overlap count
    once: the device was busy, not twice as busy). Records whose name contains a string
    of `ignore` (the L2 flush between calls) are dropped."""
    calls, end = [], None
    for e in _work(events, ignore):
        start, stop = e["ts"], e["ts"] + e["dur"]
        if end is None or start - end > GAP_US / 2:
            calls.append(0.0)
            end = start
        calls[-1] += max(0.0, stop - max(start, end)) / 1e3  # the part not yet covered
        end = max(end, stop)
    return calls


def kernel_names(events, ignore=()):
    """The distinct kernels of the trace, in order of first launch, each name cut to
    NAME_CHARS (a C++ template's name runs to hundreds): what the library ran."""
    return list(dict.fromkeys(e["name"][:NAME_CHARS]
                              for e in _work(events, ignore, categories=("kernel",))))


def busy_times(fn, *, repeats, before=None, ignore=()):
    """(device-busy ms of each of `repeats` calls of `fn()`, the kernels they ran), each
    call after `before()` (e.g. an L2 flush whose kernel `ignore` names); or None where
    the profiler is unavailable or did not see every call (a call that launched
    nothing)."""
    if unavailable():
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            if before is not None:
                before()
            cuda.synchronize()
            time.sleep(GAP_US / 1e6)
            fn()
            cuda.synchronize()
            time.sleep(GAP_US / 1e6)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    finally:
        os.unlink(path)
    calls = split_calls(events, ignore)
    if len(calls) != repeats or not np.all(np.isfinite(calls)):
        return None
    return calls, kernel_names(events, ignore)
