"""Solutions to the cooperative-groups chapter's exercises."""

import math

import numpy as np
from numba import cuda

from kernels import cooperative, validate


@cuda.jit
def rotate_rows_kernel(m):
    grid = cuda.cg.this_grid()
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    rows, cols = m.shape
    for row in range(1, rows):
        for col in range(start, cols, stride):
            m[row, col] = m[row - 1, (col + 1) % cols]
        grid.sync()  # the next row reads a neighbour's column, maybe another block's


@cuda.jit
def normalize_by_max_kernel(x, out, peak):
    grid = cuda.cg.this_grid()
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    # Phase 1: each thread's largest value, then one atomic per thread. Starting
    # from x[0] keeps x's dtype and is never too large; peak[0] would not do: other
    # threads may be updating it at that moment (a plain read beside atomics races).
    largest = x[0]
    for i in range(start, x.size, stride):
        largest = max(largest, x[i])
    cuda.atomic.max(peak, 0, largest)
    grid.sync()  # every thread's atomic is done: peak[0] is the maximum of all of x
    # Phase 2: divide, reading the finished maximum.
    for i in range(start, x.size, stride):
        out[i] = x[i] / peak[0]


@cuda.jit
def jacobi_until_converged_kernel(u, out, scratch, deltas, tol, sweeps_done):
    grid = cuda.cg.this_grid()
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = u.size
    src = u
    sweeps = 0
    for step in range(deltas.size):
        if step % 2 == 0:
            dst = out
        else:
            dst = scratch
        change = 0.0
        for i in range(start, n, stride):
            if i == 0 or i == n - 1:
                value = src[i]
            else:
                value = (src[i - 1] + src[i + 1]) * 0.5
            change = max(change, abs(value - src[i]))
            dst[i] = value
        # One slot per sweep, zero at the start: no slot is reset while another
        # thread may still read it.
        cuda.atomic.max(deltas, step, change)
        grid.sync()
        src = dst
        sweeps += 1
        # Every thread reads the same finished value, so all leave together and
        # no thread waits at a grid.sync() that others skipped.
        if deltas[step] < tol:
            break
    if start == 0:
        sweeps_done[0] = sweeps
    if sweeps % 2 == 0:  # the last sweep wrote scratch; each thread copies its own points
        for i in range(start, n, stride):
            out[i] = scratch[i]


def jacobi_until_converged(u, tol, max_steps, *, threads=256):
    """Jacobi sweeps of `u` until a sweep changes no point by `tol` or more, at most
    `max_steps` sweeps, in one cooperative launch. Returns (result, sweeps done)."""
    validate.array("u", u, dtypes=np.float64, ndim=1)
    validate.nonempty("u", u)
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    out = validate.output("out", None, u)
    scratch = validate.output("scratch", None, u)
    deltas = cuda.to_device(np.zeros(max_steps, np.float64))
    sweeps_done = cuda.to_device(np.zeros(1, np.int64))
    args = (u, out, scratch, deltas, float(tol), sweeps_done)
    blocks, threads = cooperative.cooperative_blocks(
        jacobi_until_converged_kernel, args, None, threads,
        needed=math.ceil(u.size / threads))
    jacobi_until_converged_kernel[blocks, threads](*args)
    return out, int(sweeps_done.copy_to_host()[0])
