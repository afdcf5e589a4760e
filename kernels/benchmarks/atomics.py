"""Benchmarks of the atomics chapter: lost updates counted, and the price of contention."""

import numpy as np
from numba import cuda

from kernels import atomics as a
from kernels import gridstride, harness, size
from kernels.harness import benchmark, row

RACE_LAUNCHES = (a.RACE_LAUNCH, (1024, 256))
RACE_RUNS = 200
CONTENTION_COUNTERS = (1, 2, 8, 32, 128, 1024, 8192, 65536, 1 << 20)
THREADS = 256


@benchmark(a.increment_racy, a.increment_racy_kernel, a.increment_atomic,
           a.increment_atomic_kernel)
def race():
    """Each launch's final count, RACE_RUNS times: the value is what was recorded."""
    counter = cuda.device_array(1, np.int32)
    zero = np.zeros(1, np.int32)
    rows = []
    for blocks, threads in RACE_LAUNCHES:
        expected = blocks * threads
        for name, fn in a.VERSIONS.items():
            values = []
            for _ in range(RACE_RUNS):
                counter.copy_to_device(zero)
                fn(counter, blocks=blocks, threads=threads)
                values.append(int(counter.copy_to_host()[0]))
            if name == "increment_atomic":
                harness.check(np.array(values), np.full(RACE_RUNS, expected), name=name)
            values = np.array(values)
            rows.append(row(name, "kernel", blocks=blocks, threads=threads,
                            increments=expected, value=int(np.median(values)),
                            min=int(values.min()), max=int(values.max()),
                            lost_fraction=float(1 - values.mean() / expected),
                            values=values.tolist()))
    return {"description": f"x[0] = x[0] + 1 (racy) vs cuda.atomic.add, one increment per "
                           f"thread, each launch run {RACE_RUNS} times; value = median count",
            "params": {"launches": [list(la) for la in RACE_LAUNCHES], "runs": RACE_RUNS},
            "rows": rows}


@benchmark(a.increment_racy, a.increment_racy_kernel, a.increment_atomic,
           a.increment_atomic_kernel, gridstride.default_blocks)
def contention():
    """Time of `n` increments spread round-robin over k counters, k from 1 up."""
    n = size("atomic_increments")
    blocks = gridstride.default_blocks()
    rows = []
    for k in CONTENTION_COUNTERS:
        expected = a.increment_reference(n, k)
        counts = cuda.device_array(k, np.int64)
        for name, fn in a.VERSIONS.items():
            counts.copy_to_device(np.zeros(k, np.int64))
            got = fn(counts, n, blocks=blocks, threads=THREADS).copy_to_host()
            if name == "increment_atomic":
                harness.check(got, expected, name=f"{name}, {k} counters")
            # the timed calls keep adding to the same counters: no reset in the timing
            t = harness.time_gpu(lambda: fn(counts, n, blocks=blocks, threads=THREADS))
            rows.append(row(name, "kernel", t, counters=k,
                            lost_fraction=float(1 - got.sum() / n),
                            ns_per_increment=t.ms * 1e6 / n))
    return {"description": f"{n:,} increments of int64 counters, addition i to counter i % k; "
                           f"{blocks} blocks of {THREADS} threads (grid-stride)",
            "params": {"increments": n, "blocks": blocks, "threads": THREADS,
                       "counters": list(CONTENTION_COUNTERS)},
            "rows": rows}
