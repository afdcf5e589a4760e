"""Benchmarks of the cooperative-groups chapter: the row example (right and wrong,
the cooperative limit, the refused launch) and Jacobi sweeps in one launch vs one
launch per sweep."""

import math

import numpy as np
from numba import cuda

from kernels import cooperative as c
from kernels import harness, size
from kernels.gridstride import sm_count
from kernels.harness import benchmark, row

THREADS = 256
SYNCTHREADS_RUNS = 5  # the wrong result differs from run to run: count each
JACOBI_STEPS = 32  # x 10 repeats = 320 launches queued behind time_gpu's spin kernel
JACOBI_SHIFTS = (10, 6, 2, 0)  # n = size("jacobi") >> shift


def _error_text(call):
    """What `call()` raised, as 'Type: message', or a note that it did not raise."""
    try:
        call()
    except Exception as err:  # recorded, whatever layer refused it
        return f"{type(err).__name__}: {err}"
    return "no error was raised"


@benchmark(c.rows_grid_sync, c.rows_grid_sync_kernel, c.rows_syncthreads,
           c.rows_syncthreads_kernel, c.cooperative_blocks, c.max_cooperative_blocks)
def rows():
    rows_, cols = size("cooperative_rows")
    rng = np.random.default_rng(5)
    m0 = np.full((rows_, cols), -1, np.int32)  # rows 1.. start as -1: stale reads show
    m0[0] = rng.integers(0, 1000, cols)
    expected = c.rows_reference(m0)
    dm = cuda.to_device(m0)
    limit = c.max_cooperative_blocks(c.rows_grid_sync_kernel, (dm,), THREADS)
    blocks = min(limit, math.ceil(cols / THREADS))

    harness.check(c.rows_grid_sync(dm, blocks=blocks, threads=THREADS), expected,
                  name="rows_grid_sync")
    t_grid = harness.time_gpu(lambda: c.rows_grid_sync(dm, blocks=blocks, threads=THREADS),
                              repeats=10)

    wrong, wrong_rows, first_wrong_row = [], [], []
    for _ in range(SYNCTHREADS_RUNS):
        dm.copy_to_device(m0)
        got = c.rows_syncthreads(dm, blocks=blocks, threads=THREADS).copy_to_host()
        bad = got != expected
        bad_rows = np.flatnonzero(bad.any(axis=1))
        wrong.append(int(bad.sum()))
        wrong_rows.append(int(bad_rows.size))
        first_wrong_row.append(int(bad_rows[0]) if bad_rows.size else None)
    t_block = harness.time_gpu(lambda: c.rows_syncthreads(dm, blocks=blocks, threads=THREADS),
                               repeats=10)

    # One block more than the limit: first as a raw launch (what CUDA says), then
    # through the host function (what the course says, before launching).
    dm.copy_to_device(m0)
    raw = _error_text(lambda: c.rows_grid_sync_kernel[limit + 1, THREADS](dm))
    cuda.synchronize()
    ours = _error_text(lambda: c.rows_grid_sync(dm, blocks=limit + 1, threads=THREADS))
    per_row = 1e3 / (rows_ - 1)  # ms of the whole kernel -> us per row
    return {
        "description": f"{rows_} x {cols} int32 matrix built row by row, each row from "
                       f"the opposite elements of the row above; {blocks} blocks of "
                       f"{THREADS} threads",
        "params": {"shape": [rows_, cols], "threads": THREADS, "blocks": blocks,
                   "max_cooperative_blocks": limit, "sm_count": sm_count(),
                   "too_large_raw_launch": raw, "too_large_host_function": ours},
        "rows": [
            row("rows_grid_sync", "kernel", t_grid, blocks=blocks, wrong_elements=[0],
                us_per_row=t_grid.ms * per_row),
            # no time_ms: a wrong version must not rank as the fastest one
            row("rows_syncthreads", "kernel", blocks=blocks, wrong_elements=wrong,
                wrong_rows=wrong_rows, first_wrong_row=first_wrong_row,
                elements=rows_ * cols, us_per_row=t_block.ms * per_row),
        ],
    }


@benchmark(c.jacobi_launch_per_step, c.jacobi_step_kernel, c.jacobi_grid_sync,
           c.jacobi_grid_sync_kernel, c.cooperative_blocks, c.max_cooperative_blocks)
def jacobi():
    rng = np.random.default_rng(6)
    rows_ = []
    limit = None
    for shift in JACOBI_SHIFTS:
        n = size("jacobi") >> shift
        u = rng.random(n, dtype=np.float32)
        expected = c.jacobi_reference(u, JACOBI_STEPS)
        du, dout = cuda.to_device(u), cuda.device_array(n, np.float32)
        # allocated once: freeing inside the timed loop would synchronise the GPU
        dscratch = cuda.device_array(n, np.float32)
        limit = c.max_cooperative_blocks(c.jacobi_grid_sync_kernel,
                                         (du, dout, dout, JACOBI_STEPS), THREADS)
        needed = math.ceil(n / THREADS)
        grids = {"jacobi_launch_per_step": needed, "jacobi_grid_sync": min(limit, needed)}
        for name, fn in c.VERSIONS.items():
            def call():
                return fn(du, JACOBI_STEPS, dout, scratch=dscratch, threads=THREADS)

            harness.check(call(), expected, name=name)
            t = harness.time_gpu(call, repeats=10, cold=True)
            rows_.append(row(
                name, "kernel", t, n=n, blocks=grids[name],
                us_per_step=t.ms * 1e3 / JACOBI_STEPS,
                us_per_step_e2e=float(np.median(t.e2e_ms)) * 1e3 / JACOBI_STEPS,
                gbps=2 * 4 * n * JACOBI_STEPS / t.ms / 1e6,
                # what must cross DRAM: the points read once, the result written once;
                # the sweeps between stay in L2 where the arrays fit (a float: a
                # measure, not a setting)
                dram_bytes=float(2 * 4 * n)))
    return {
        "description": f"{JACOBI_STEPS} Jacobi sweeps of n float32 points, {THREADS} "
                       "threads per block; L2 flushed before each repeat (later sweeps "
                       "find the arrays in L2 where they fit, in both versions)",
        "params": {"steps": JACOBI_STEPS, "threads": THREADS,
                   "sizes": [size("jacobi") >> s for s in JACOBI_SHIFTS],
                   "max_cooperative_blocks": limit, "sm_count": sm_count()},
        "rows": rows_,
    }
