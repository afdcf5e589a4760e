"""Benchmarks of the histogram chapter, on Shakespeare's Complete Works (5.6 MB).

The input fits in the H100's 50 MB L2, so every GPU time is taken cold (L2 flushed
before each repeat); the size sweep (the text repeated from 64 KB to 512 MB, for the
performance page) also times the one-launch versions warm, and the breakdown times
histogram_bin_tickets stopped after each stage (kernels.histogram_stages). The text comes from kernels.text: the copy carried to a lent
GPU in .gpu/ when it is there, else a download, else the labelled substitute (the
description then says so). Two benchmarks test what the chapter explains: private_rows
times histogram_lean_count against the same kernel with one counter row per block
(kernels.histogram_rows), and placement times histogram_global_atomics with its output
at several places in device memory.
"""

import functools
import pathlib

import numpy as np
from numba import cuda

from kernels import gridstride, harness, scratch, size, text
from kernels import histogram as h
from kernels import histogram_floors as hf
from kernels import histogram_rows as hr
from kernels import histogram_stages as hs
from kernels.benchmarks import optional
from kernels.harness import benchmark, row

SWEEP_BLOCKS_PER_SM = (1, 2, 4, 8, 16, 32, 64)
CARRIED_COPY = pathlib.Path(__file__).resolve().parents[2] / ".gpu" / "pg100.txt.gz"
COMMON = (h.clear_kernel, h._args, h._words, h.default_launch)
ALL_VERSIONS = COMMON + (
    h.histogram_global_atomics, h.histogram_global_atomics_kernel,
    h.histogram_shared_atomics, h.histogram_shared_atomics_kernel,
    h.histogram_shared_wide_loads, h.histogram_shared_wide_loads_kernel,
    h.histogram_lane_private, h.histogram_lane_private_kernel,
    h.histogram_last_block, h.histogram_last_block_kernel, h.count_word, scratch.buffer,
    scratch.is_last_block, h.histogram_bin_tickets, h.histogram_bin_tickets_kernel,
    h.count_word_spare, h.histogram_lean_count, h.histogram_lean_count_kernel,
    h.count_word_lean,
)
SWEEP_BYTES = [64 << 10 << 2 * k for k in range(7)] + [512 << 20]  # 64 KB, x4, 256 MB, 512 MB
SWEEP_VERSIONS = ("histogram_last_block", "histogram_bin_tickets", "histogram_lean_count")
PRIVATE_ROWS_BLOCKS_PER_SM = (1, 2)  # the default launch of histogram_lean_count, and twice
PLACEMENT_OFFSETS = (0, 128, 1 << 10, 4 << 10, 64 << 10, 1 << 20, 16 << 20)  # bytes
PLACEMENT_FRESH = 3  # outputs in allocations of their own, besides the offsets


def _text():
    found = text.shakespeare(local_copy=CARRIED_COPY if CARRIED_COPY.exists() else None)
    return found, found.data[:size("histogram_text")]


def _described(found, data):
    what = ("SUBSTITUTE text (Gutenberg unreachable)" if found.substitute
            else "Shakespeare's Complete Works (Project Gutenberg #100)")
    return f"{what}, {data.size:,} bytes, 128 bins; GPU times cold (L2 flushed)"


def _time_versions(versions, d_data, expected, **fields):
    rows = []
    out = cuda.device_array(h.BINS, np.int64)
    for name, fn in versions.items():
        harness.check(fn(d_data, out), expected, name=name)
        t = harness.time_gpu(lambda: fn(d_data, out), cold=True)
        rows.append(row(name, "kernel", t, gbps=d_data.size / t.ms / 1e6, **fields))
    return rows


BLOCKING = "CUDATimer per call (the call may synchronise)"


def _library_peers(data):
    """{name: call} of the GPU libraries' histograms of `data` (bytes, on the host or
    the device) over the BINS byte values, as their users call them; each call returns
    the counts on the device (see _host)."""
    peers = {}
    if (cupy := optional("cupy")) is not None:
        c = cupy.asarray(data)
        peers["cupy.histogram"] = lambda: cupy.histogram(c, bins=h.BINS,
                                                         range=(-0.5, h.BINS - 0.5))[0]
        peers["cupy.bincount"] = lambda: cupy.bincount(c, minlength=256)[:h.BINS]
    if (torch := optional("torch")) is not None:
        t = torch.as_tensor(np.asarray(data) if isinstance(data, np.ndarray) else
                            data.copy_to_host(), device="cuda")
        peers["torch.bincount"] = lambda: torch.bincount(t, minlength=256)[:h.BINS]
        # histc counts floats: bins of width 1 centred on the byte values
        peers["torch.histc"] = lambda: torch.histc(t.float(), bins=h.BINS, min=-0.5,
                                                   max=h.BINS - 0.5)
    return peers


def _host(counts):
    """A library's counts (CuPy array or PyTorch tensor) on the host, as int64 (torch.histc
    counts in float32, exact below 2**24, beyond which the check would catch it)."""
    counts = counts.get() if hasattr(counts, "get") else counts.cpu().numpy()
    return counts.astype(np.int64)


@benchmark(*ALL_VERSIONS, h.histogram_cpu_loop, hf.read_only, hf.read_only_kernel,
           hf.read_only_wide, hf.read_only_wide_kernel)
def versions():
    found, data = _text()
    expected = h.histogram_reference(data)
    n = data.size
    d_data = cuda.to_device(data)
    rows = _time_versions(h.VERSIONS, d_data, expected)
    out = cuda.device_array(h.BINS, np.int64)
    t = harness.time_gpu(lambda: hf.read_only(d_data, out), cold=True)
    rows.append(row("read_only (read the text, count nothing)", "limit", t,
                    gbps=n / t.ms / 1e6))
    t = harness.time_gpu(lambda: hf.read_only_wide(d_data, out), cold=True)
    rows.append(row("read_only_wide (read as histogram_last_block does, one launch)",
                    "limit", t, gbps=n / t.ms / 1e6))
    t = harness.time_gpu(lambda: h.clear_kernel[1, h.BINS](out))
    rows.append(row("clear_kernel alone (one tiny launch)", "limit", t))
    cpu = {
        "Python loop (CPU)": lambda: h.histogram_cpu_loop(data),
        "numpy.histogram (CPU)": lambda: np.histogram(data, bins=h.BINS,
                                                      range=(-0.5, h.BINS - 0.5))[0],
        "numpy.bincount (CPU)": lambda: np.bincount(data, minlength=256)[:h.BINS],
    }
    for name, fn in cpu.items():
        harness.check(fn(), expected, name=name)
        t = harness.time_cpu(fn, repeats=3 if "loop" in name else 10)
        rows.append(row(name, "peer", t, gbps=n / t.ms / 1e6))
    for name, fn in _library_peers(data).items():
        harness.check(_host(fn()), expected, name=name)
        t = harness.time_blocking(fn, cold=True)
        rows.append(row(name, "peer", t, gbps=n / t.ms / 1e6, timed=BLOCKING))
    return {"description": _described(found, data),
            "params": {"bytes": n, "bins": h.BINS, "text_source": found.source,
                       "sm_count": gridstride.sm_count(),
                       "launch": {v: list(h.default_launch(v)) for v in h.VERSIONS}},
            "rows": rows}


@benchmark(*ALL_VERSIONS)
def inputs():
    """Where the time goes: the same versions on uniform bytes, text, and one hot bin."""
    found, data = _text()
    n = data.size
    rng = np.random.default_rng(0)
    cases = {
        "uniform over 128 bins": rng.integers(0, h.BINS, n, dtype=np.uint8),
        "Shakespeare": data,
        "all spaces": np.full(n, ord(" "), dtype=np.uint8),
    }
    rows = []
    for label, bytes_ in cases.items():
        rows += _time_versions(h.VERSIONS, cuda.to_device(bytes_),
                               h.histogram_reference(bytes_), input=label)
    return {"description": _described(found, data) + "; the same size of uniform random "
                           "bytes and of spaces only",
            "params": {"bytes": n, "inputs": list(cases), "text_source": found.source},
            "rows": rows}


@benchmark(*ALL_VERSIONS)
def blocks_sweep():
    found, data = _text()
    expected = h.histogram_reference(data)
    d_data = cuda.to_device(data)
    out = cuda.device_array(h.BINS, np.int64)
    sms = gridstride.sm_count()
    rows = []
    for name, fn in h.VERSIONS.items():
        threads = h.default_launch(name)[1]
        for per_sm in SWEEP_BLOCKS_PER_SM:
            blocks = per_sm * sms
            harness.check(fn(d_data, out, blocks=blocks), expected, name=f"{name} {blocks}")
            t = harness.time_gpu(lambda: fn(d_data, out, blocks=blocks), cold=True)
            rows.append(row(name, "kernel", t, blocks=blocks, blocks_per_sm=per_sm,
                            threads=threads, gbps=data.size / t.ms / 1e6))
    return {"description": _described(found, data) + f"; blocks = k x {sms} SMs, each "
                           "version with its default threads per block",
            "params": {"bytes": data.size, "sm_count": sms, "text_source": found.source},
            "rows": rows}


@benchmark(*COMMON, h.histogram_shared_atomics, h.histogram_shared_atomics_kernel,
           h.histogram_shared_atomics_int64, h.histogram_shared_atomics_int64_kernel)
def counter_width():
    """32-bit vs 64-bit shared counters: the same kernel, only the counter type differs."""
    found, data = _text()
    rng = np.random.default_rng(1)
    rows = []
    same_launch = {"blocks": h.default_launch("histogram_shared_atomics")[0]}
    for label, bytes_ in {"Shakespeare": data,
                          "uniform over 128 bins": rng.integers(0, h.BINS, data.size,
                                                                dtype=np.uint8)}.items():
        rows += _time_versions(
            {"int32 counters": lambda d, o: h.histogram_shared_atomics(d, o, **same_launch),
             "int64 counters": lambda d, o: h.histogram_shared_atomics_int64(d, o,
                                                                             **same_launch)},
            cuda.to_device(bytes_), h.histogram_reference(bytes_), input=label)
    return {"description": _described(found, data) + "; histogram_shared_atomics with int32 "
                           "and with int64 shared counters, same launch",
            "params": {"bytes": data.size, "text_source": found.source, **same_launch},
            "rows": rows}


@benchmark(*ALL_VERSIONS, hf.read_only_wide, hf.read_only_wide_kernel)
def size_sweep():
    """How the cost grows with size: the text repeated to 64 KB ... 512 MB."""
    found, data = _text()
    big = np.resize(data, SWEEP_BYTES[-1])  # the text over and over
    d_big = cuda.to_device(big)
    out = cuda.device_array(h.BINS, np.int64)
    rows = []
    for n in SWEEP_BYTES:
        d_data = d_big[:n]
        expected = h.histogram_reference(big[:n])
        for name in SWEEP_VERSIONS:
            fn = h.VERSIONS[name]
            harness.check(fn(d_data, out), expected, name=f"{name}, {n:,} bytes")
            for cold in (True, False):
                t = harness.time_gpu(lambda: fn(d_data, out), cold=cold)
                rows.append(row(name, "kernel", t, bytes=n, gbps=n / t.ms / 1e6))
        t = harness.time_gpu(lambda: hf.read_only_wide(d_data, out), cold=True)
        rows.append(row("read_only_wide", "limit", t, bytes=n, gbps=n / t.ms / 1e6))
        for name, fn in _library_peers(d_data).items():
            if "bincount" in name:  # the faster library call of each
                harness.check(_host(fn()), expected, name=f"{name}, {n:,} bytes")
                t = harness.time_blocking(fn, cold=True, repeats=10)
                rows.append(row(name, "peer", t, bytes=n, gbps=n / t.ms / 1e6,
                                timed=BLOCKING))
    return {"description": _described(found, data).split(",")[0] + " repeated to each size "
                           "(64 KB to 512 MB), 128 bins; each version timed cold (L2 "
                           "flushed) and warm (the input left in L2 by the repeat before)",
            "params": {"sizes": SWEEP_BYTES, "text_source": found.source,
                       "launch": {v: list(h.default_launch(v)) for v in SWEEP_VERSIONS}},
            "rows": rows}


@benchmark(*COMMON, h.count_word_spare, hs.histogram_stages, hs.histogram_stages_kernel,
           scratch.buffer)
def breakdown():
    """Where histogram_bin_tickets spends its time: the kernel stopped after each stage,
    on the whole text and on its first 64 KB (where almost only the fixed costs remain)."""
    found, data = _text()
    out = cuda.device_array(h.BINS, np.int64)
    rows = []
    for n in (data.size, 64 << 10):
        d_data = cuda.to_device(data[:n])
        harness.check(hs.histogram_stages(d_data, "merge", out),
                      h.histogram_reference(data[:n]), name=f"all stages, {n:,} bytes")
        for stage in hs.STAGES:
            t = harness.time_gpu(lambda: hs.histogram_stages(d_data, stage, out), cold=True)
            rows.append(row(f"up to {stage}", "kernel", t, stage=stage, bytes=n))
    return {"description": _described(found, data) + "; histogram_bin_tickets stopped after "
                           "each stage (read, clear, count, merge), on the whole text and "
                           "on its first 64 KB",
            "params": {"bytes": data.size, "stages": list(hs.STAGES),
                       "launch": h.default_launch("histogram_bin_tickets"),
                       "text_source": found.source},
            "rows": rows}


def _text_and_uniform(data):
    """The text and as many random bytes uniform over the 128 bins (the `inputs`
    benchmark's, from the same seed)."""
    rng = np.random.default_rng(0)
    return {"Shakespeare": data,
            "uniform over 128 bins": rng.integers(0, h.BINS, data.size, dtype=np.uint8)}


@benchmark(*COMMON, scratch.buffer, h.histogram_lean_count, h.histogram_lean_count_kernel,
           h.count_word_lean, hr.histogram_lean_count_one_row,
           hr.histogram_lean_count_one_row_kernel, hr.count_word_row, summarised=False)
def private_rows():
    """What the lane-private counter rows buy the later versions: histogram_lean_count
    (one row of counters per warp lane) and the same kernel with one row per block, at
    the same launches, on the text, uniform bytes and spaces only (every lane of a warp
    on one counter)."""
    found, data = _text()
    cases = {**_text_and_uniform(data), "all spaces": np.full(data.size, ord(" "), np.uint8)}
    sms = gridstride.sm_count()
    threads = h.default_launch("histogram_lean_count")[1]
    rows = []
    for label, bytes_ in cases.items():
        d_data, expected = cuda.to_device(bytes_), h.histogram_reference(bytes_)
        for per_sm in PRIVATE_ROWS_BLOCKS_PER_SM:
            launch = {"blocks": per_sm * sms, "threads": threads}
            for lane_private, one_row in hr.ONE_ROW.items():
                for name, fn, counter_rows in ((lane_private, h.VERSIONS[lane_private],
                                                h.WARP),
                                               (one_row.__name__, one_row, 1)):
                    rows += _time_versions({name: functools.partial(fn, **launch)}, d_data,
                                           expected, input=label, blocks_per_sm=per_sm,
                                           counter_rows=counter_rows, **launch)
    return {"description": _described(found, data) + "; the same size of uniform random "
                           "bytes and of spaces only; histogram_lean_count with a counter "
                           f"row per warp lane ({h.WARP} per block) and with one row per "
                           "block, same launches",
            "params": {"bytes": data.size, "inputs": list(cases), "sm_count": sms,
                       "threads": threads, "blocks_per_sm": list(PRIVATE_ROWS_BLOCKS_PER_SM),
                       "text_source": found.source},
            "rows": rows}


def _address(array):
    """The device address of `array`, or None where there is none (the simulator)."""
    interface = getattr(array, "__cuda_array_interface__", None)
    return None if interface is None else interface["data"][0]


def _placed_outputs():
    """[(where, offset in bytes or None, output array)]: BINS int64 counters at each of
    PLACEMENT_OFFSETS inside one device allocation, in PLACEMENT_FRESH allocations of
    their own, and at offset 0 again last (a change within the run shows there)."""
    width = np.dtype(np.int64).itemsize
    pool = cuda.device_array((PLACEMENT_OFFSETS[-1] + (4 << 10)) // width, np.int64)
    placed = [(f"offset {offset:,} B of one allocation", offset,
               pool[offset // width:offset // width + h.BINS]) for offset in PLACEMENT_OFFSETS]
    placed += [(f"allocation of its own {k + 1}", None, cuda.device_array(h.BINS, np.int64))
               for k in range(PLACEMENT_FRESH)]
    return placed + [("offset 0 B of one allocation, again", 0, placed[0][2])]


@benchmark(*COMMON, h.histogram_global_atomics, h.histogram_global_atomics_kernel,
           _placed_outputs, summarised=False)
def placement():
    """Whether where version 1's output sits in memory sets its time (its recorded
    times sit on two levels across runs): histogram_global_atomics, every byte an atomic
    on its 128 counters, with the counters at offsets inside one device allocation and
    in allocations of their own, on the text and on uniform bytes."""
    found, data = _text()
    outputs = _placed_outputs()
    rows = []
    for label, bytes_ in _text_and_uniform(data).items():
        d_data, expected = cuda.to_device(bytes_), h.histogram_reference(bytes_)
        for order, (where, offset, out) in enumerate(outputs):
            harness.check(h.histogram_global_atomics(d_data, out), expected,
                          name=f"histogram_global_atomics, {label}, output at {where}")
            t = harness.time_gpu(lambda: h.histogram_global_atomics(d_data, out), cold=True)
            rows.append(row("histogram_global_atomics", "kernel", t, input=label,
                            output=where, offset_bytes=offset, address=_address(out),
                            order=order, gbps=data.size / t.ms / 1e6))
    return {"description": _described(found, data) + "; the same size of uniform random "
                           "bytes; histogram_global_atomics with its output at offsets "
                           f"inside one allocation and in {PLACEMENT_FRESH} allocations of "
                           "their own, timed in the order of the rows' `order`",
            "params": {"bytes": data.size, "inputs": ["Shakespeare", "uniform over 128 bins"],
                       "offsets_bytes": list(PLACEMENT_OFFSETS),
                       "fresh_allocations": PLACEMENT_FRESH,
                       "launch": list(h.default_launch("histogram_global_atomics")),
                       "text_source": found.source},
            "rows": rows}
