"""Benchmarks of the reduction chapter: sum and min/max of 10M int32 against NumPy and
CuPy, the blocks sweep, the exhibits run on a GPU, the cost of moving the data, top-k,
and the size sweep of the sum from 1e5 to 1e9 elements (for the performance page).

Every version is checked against the reference before it is timed. The 40 MB input
fits in the H100's 50 MB L2, so the kernels are timed cold (L2 flushed each repeat).
"""

import numpy as np
from numba import cuda

from kernels import harness, scratch, size
from kernels import reduction as r
from kernels import reduction_floors as rf
from kernels.benchmarks import optional
from kernels.harness import benchmark, row

try:
    from kernels.solutions import reduction as solutions
except ModuleNotFoundError as err:  # the student edition has no solutions: no live top-k
    if err.name != "kernels.solutions":
        raise
    solutions = None

SWEEP_BLOCKS_PER_SM = (1, 2, 4, 8, 16, 32)
EXHIBIT_RUNS = 20



def _data(n, seed=0):
    """The whole int32 range: an int32 accumulator would wrap around many times."""
    rng = np.random.default_rng(seed)
    return rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)


def _timed(name, kind, fn, nbytes, **fields):
    t = harness.time_gpu(fn, cold=True)
    return row(name, kind, t, gbps=nbytes / t.ms / 1e6, **fields)


READ_ONLY = "read_only (read the array, compute nothing)"


def _read_only(da, nbytes):
    """The floor row: da read with the versions' default launch, nothing computed."""
    out = cuda.device_array(1, np.int32)
    return _timed(READ_ONLY, "limit",
                  lambda: rf.read_only(da, out=out, blocks=r.default_blocks(),
                                       threads=r.THREADS), nbytes,
                  blocks=r.default_blocks(), threads=r.THREADS)


@benchmark(r.zero_kernel, r._args, r._sum, r.default_blocks, *r.SUM_VERSIONS.values(),
           r.sum_global_atomics_kernel, r.sum_shared_tree_kernel, r.sum_unrolled_kernel,
           r.sum_warp_shuffle_kernel, r.sum_last_block_kernel, scratch.buffer,
           scratch.is_last_block, rf.read_only, rf.read_one_kernel)
def sum_int32():
    n = size("reduction")
    a = _data(n)
    da, out = cuda.to_device(a), cuda.device_array(1, np.int64)
    expected = r.sum_reference(a)
    rows = []
    for name, fn in r.SUM_VERSIONS.items():
        harness.check(fn(da, out), expected, name=name)
        if name == "sum_global_atomics":  # milliseconds: a few repeats say enough
            t = harness.time_gpu(lambda: fn(da, out), repeats=5, warmup=1, cold=True)
            rows.append(row(name, "kernel", t, gbps=a.nbytes / t.ms / 1e6))
        else:
            rows.append(_timed(name, "kernel", lambda: fn(da, out), a.nbytes))
    rows.append(_read_only(da, a.nbytes))
    t = harness.time_cpu(lambda: np.sum(a, dtype=np.int64), repeats=10)
    rows.append(row("numpy.sum (CPU)", "peer", t, gbps=a.nbytes / t.ms / 1e6))
    cupy = optional("cupy")
    if cupy is not None:
        ca = cupy.asarray(a)
        harness.check(np.array([int(cupy.sum(ca, dtype=cupy.int64))]), expected,
                      name="cupy.sum")
        rows.append(_timed("cupy.sum", "peer", lambda: cupy.sum(ca, dtype=cupy.int64),
                           a.nbytes))
    torch = optional("torch")
    if torch is not None:
        ta = torch.as_tensor(a, device="cuda")
        harness.check(np.array([int(torch.sum(ta, dtype=torch.int64))]), expected,
                      name="torch.sum")
        rows.append(_timed("torch.sum", "peer", lambda: torch.sum(ta, dtype=torch.int64),
                           a.nbytes))
    return {"description": f"sum of {n:,} int32 ({a.nbytes / 1e6:.0f} MB) into int64, data "
                           "on the device, L2 flushed before each repeat",
            "params": {"n": n, "dtype": "int32", "threads": r.THREADS,
                       "blocks": r.default_blocks()},
            "rows": rows}


@benchmark(r.first_element_kernel, r._args, r._minmax, r.default_blocks,
           *r.MINMAX_VERSIONS.values(), r.minmax_shared_tree_kernel,
           r.minmax_last_block_kernel, scratch.buffer, scratch.is_last_block, rf.read_only,
           rf.read_one_kernel)
def minmax_int32():
    n = size("reduction")
    a = _data(n, seed=1)
    da, out = cuda.to_device(a), cuda.device_array(2, np.int32)
    rows = []
    for name, fn in r.MINMAX_VERSIONS.items():
        harness.check(fn(da, out), r.minmax_reference(a), name=name)
        rows.append(_timed(name, "kernel", lambda: fn(da, out), a.nbytes))
    rows.append(_read_only(da, a.nbytes))
    t = harness.time_cpu(lambda: (a.min(), a.max()), repeats=10)
    rows.append(row("numpy.min + numpy.max (CPU)", "peer", t, gbps=2 * a.nbytes / t.ms / 1e6))
    cupy = optional("cupy")
    if cupy is not None:
        ca = cupy.asarray(a)
        harness.check(np.array([int(ca.min()), int(ca.max())]), r.minmax_reference(a),
                      name="cupy.min, cupy.max")
        # each alone solves half the problem: shown, but no peer for the whole of it
        rows.append(_timed("cupy.min", "peer", lambda: cupy.min(ca), a.nbytes,
                           part="the min only"))
        rows.append(_timed("cupy.max", "peer", lambda: cupy.max(ca), a.nbytes,
                           part="the max only"))
        rows.append(_timed("cupy.min + cupy.max", "peer",
                           lambda: (cupy.min(ca), cupy.max(ca)), 2 * a.nbytes))
    torch = optional("torch")
    if torch is not None:  # one pass for both, as minmax_last_block
        ta = torch.as_tensor(a, device="cuda")
        harness.check(np.array([int(v) for v in torch.aminmax(ta)]), r.minmax_reference(a),
                      name="torch.aminmax")
        rows.append(_timed("torch.aminmax", "peer", lambda: torch.aminmax(ta), a.nbytes))
    return {"description": f"min and max of {n:,} int32 ({a.nbytes / 1e6:.0f} MB), data on "
                           "the device, L2 flushed before each repeat; gbps counts the bytes "
                           "each does read (twice the array for two separate passes)",
            "params": {"n": n, "dtype": "int32", "threads": r.THREADS,
                       "blocks": r.default_blocks()},
            "rows": rows}


@benchmark(r.zero_kernel, r._args, r._sum, r.sum_shared_tree, r.sum_shared_tree_kernel,
           r.sum_unrolled, r.sum_unrolled_kernel)
def blocks_sweep():
    n = size("reduction")
    a = _data(n)
    da, out = cuda.to_device(a), cuda.device_array(1, np.int64)
    sms = r.sm_count()
    rows = []
    for name in ("sum_shared_tree", "sum_unrolled"):
        fn = r.VERSIONS[name]
        for per_sm in SWEEP_BLOCKS_PER_SM:
            blocks = per_sm * sms
            harness.check(fn(da, out, blocks=blocks), r.sum_reference(a), name=name)
            rows.append(_timed(name, "kernel", lambda: fn(da, out, blocks=blocks), a.nbytes,
                               blocks=blocks, blocks_per_sm=per_sm))
    return {"description": f"sum of {n:,} int32, {r.THREADS} threads per block, "
                           f"blocks = k x {sms} SMs, L2 flushed before each repeat",
            "params": {"n": n, "threads": r.THREADS, "sm_count": sms},
            "rows": rows}


@benchmark(r.zero_kernel, r.first_element_kernel, r._args, r._sum, r._minmax,
           r.default_blocks, r.sum_shared_tree, r.sum_shared_tree_kernel,
           r.sum_tree_no_syncthreads, r.sum_tree_no_syncthreads_kernel,
           r.minmax_shared_tree, r.minmax_shared_tree_kernel, r.minmax_zero_init,
           r.minmax_zero_init_kernel)
def exhibits():
    """The wrong kernels on a GPU: the values they gave, next to the right ones."""
    n = size("reduction")
    a = _data(n)
    da, out = cuda.to_device(a), cuda.device_array(1, np.int64)
    expected = int(r.sum_reference(a)[0])
    rows = []
    for name in ("sum_tree_no_syncthreads", "sum_shared_tree"):
        fn = r.EXHIBITS.get(name) or r.VERSIONS[name]
        values = np.array([int(fn(da, out).copy_to_host()[0]) for _ in range(EXHIBIT_RUNS)])
        rows.append(row(name, "kernel", problem="sum", runs=EXHIBIT_RUNS, expected=expected,
                        wrong=int((values != expected).sum()),
                        distinct=len(set(values.tolist())),
                        values=values[:5].tolist()))
    rng = np.random.default_rng(2)
    datasets = {"all positive": rng.integers(1, 2**31, n, dtype=np.int64).astype(np.int32)}
    datasets["all negative"] = -datasets["all positive"]
    datasets["mixed signs"] = _data(n, seed=3)
    for data_name, data in datasets.items():
        dd, pair = cuda.to_device(data), cuda.device_array(2, np.int32)
        expected_pair = r.minmax_reference(data).tolist()
        for name in ("minmax_zero_init", "minmax_shared_tree"):
            fn = r.EXHIBITS.get(name) or r.VERSIONS[name]
            got = fn(dd, pair).copy_to_host().tolist()
            rows.append(row(name, "kernel", problem="minmax", data=data_name, value=got,
                            expected=expected_pair, wrong=got != expected_pair))
    return {"description": f"the exhibits of the pitfalls at {n:,} int32: the shared-memory "
                           f"tree without syncthreads ({EXHIBIT_RUNS} runs) and min/max "
                           "started at 0, each beside its correct version",
            "params": {"n": n, "runs": EXHIBIT_RUNS, "blocks": r.default_blocks()},
            "rows": rows}


@benchmark(r.zero_kernel, r._args, r._sum, r.default_blocks, r.sum_unrolled,
           r.sum_unrolled_kernel)
def travel():
    """The trip to the GPU: the same sum, with the data where the caller has it."""
    n = size("reduction")
    a = _data(n)
    expected = r.sum_reference(a)
    da, out = cuda.to_device(a), cuda.device_array(1, np.int64)
    rows = [row("numpy.sum (CPU)", "peer", harness.time_cpu(lambda: np.sum(a, dtype=np.int64),
                                                            repeats=10),
                where="host")]

    def on_device():
        return r.sum_unrolled(da, out).copy_to_host()

    def pageable():
        da.copy_to_device(a)
        return on_device()

    pinned = cuda.pinned_array(n, np.int32)
    pinned[:] = a

    def from_pinned():
        da.copy_to_device(pinned)
        return on_device()

    for name, fn in (("on the device already", on_device), ("copied from pageable memory",
                                                            pageable),
                     ("copied from pinned memory", from_pinned)):
        harness.check(fn(), expected, name=name)
        rows.append(row(f"sum_unrolled, data {name}", "kernel",
                        harness.time_cpu(fn, repeats=10), where=name))
    managed = cuda.managed_array(n, np.int32)
    gpu, e2e = [], []
    for _ in range(11):
        managed[:] = a  # the host writes the data, so its pages live in host memory
        with harness.CUDATimer() as t:
            got = r.sum_unrolled(managed, out).copy_to_host()
        harness.check(got, expected, name="sum_unrolled on a managed array")
        gpu.append(t.ms)
        e2e.append(t.e2e_ms)
    rows.append(row("sum_unrolled, data in managed memory written by the host", "kernel",
                    harness.Timing(e2e[1:], e2e[1:], cold=False), where="managed",
                    events_ms=float(np.median(gpu[1:]))))
    return {"description": f"sum of {n:,} int32 ({a.nbytes / 1e6:.0f} MB) as a caller sees "
                           "it: wall-clock time from the call until the answer is on the "
                           "host, with the data on the host, on the device, or in managed "
                           "memory last written by the host",
            "params": {"n": n, "bytes": a.nbytes, "blocks": r.default_blocks()},
            "rows": rows}


def topk():
    n = size("reduction")
    a = _data(n, seed=4)
    k = solutions.K
    expected = np.sort(a)[::-1][:k]
    harness.check(solutions.topk(a, r.default_blocks()), expected, name="topk")
    blocks = r.default_blocks()
    da = cuda.to_device(a)
    candidates = cuda.device_array(blocks * k, np.int32)
    result = cuda.device_array(k, np.int32)

    def on_device():
        solutions.topk_kernel[blocks, r.THREADS](da, candidates)
        solutions.topk_kernel[1, r.THREADS](candidates, result)

    rows = [_timed("topk (solution)", "kernel", on_device, a.nbytes)]
    t = harness.time_cpu(lambda: np.sort(np.partition(a, n - k)[n - k:])[::-1])
    rows.append(row("numpy.partition + sort (CPU)", "peer", t, gbps=a.nbytes / t.ms / 1e6))
    cupy = optional("cupy")
    if cupy is not None:
        ca = cupy.asarray(a)
        harness.check(cupy.sort(cupy.partition(ca, n - k)[n - k:])[::-1].get(), expected,
                      name="cupy.partition")
        rows.append(_timed("cupy.partition + sort", "peer",
                           lambda: cupy.sort(cupy.partition(ca, n - k)[n - k:])[::-1],
                           a.nbytes))
    return {"description": f"the {k} largest of {n:,} int32, data on the device, L2 flushed "
                           "before each repeat",
            "params": {"n": n, "k": k, "blocks": blocks, "threads": r.THREADS},
            "rows": rows}


if solutions is not None:  # times the solution; without it, the chapter shows the recording
    benchmark(solutions.topk_kernel, solutions.topk)(topk)


SWEEP_N = [int(m * 10**e) for e in range(5, 9) for m in (1, 3)] + [10**9]  # 1e5 ... 1e9


@benchmark(r._args, r.default_blocks, r.sum_last_block, r.sum_last_block_kernel,
           scratch.buffer, scratch.is_last_block)
def size_sweep():
    """How the cost grows with size: sum_last_block from 1e5 to 1e9 int32 (4 GB)."""
    # the whole int32 range, drawn as int32 (a 1e9 int64 draw would take 8 GB)
    a = np.random.default_rng(2).integers(-2**31, 2**31, SWEEP_N[-1], dtype=np.int32)
    da, out = cuda.to_device(a), cuda.device_array(1, np.int64)
    cupy = optional("cupy")
    rows = []
    for n in SWEEP_N:
        part = da[:n]
        harness.check(r.sum_last_block(part, out), r.sum_reference(a[:n]),
                      name=f"sum_last_block, n={n:,}")
        for cold in (True, False):
            t = harness.time_gpu(lambda: r.sum_last_block(part, out), cold=cold)
            rows.append(row("sum_last_block", "kernel", t, n=n, gbps=4 * n / t.ms / 1e6))
        if cupy is not None:
            ca = cupy.asarray(part)
            rows.append(_timed("cupy.sum", "peer", lambda: cupy.sum(ca, dtype=cupy.int64),
                               4 * n, n=n))
    return {"description": "sum of n int32 into int64, n = 1e5 to 1e9 (4 GB), data on the "
                           "device; sum_last_block timed cold (L2 flushed) and warm (the "
                           "input left in L2 by the repeat before), cupy.sum (CUB) cold",
            "params": {"sizes": SWEEP_N, "dtype": "int32", "threads": r.THREADS,
                       "blocks": r.default_blocks()},
            "rows": rows}
