"""Cooperative groups: a barrier across the whole grid, inside one kernel launch.

Versions (VERSIONS maps each name to its host function), Jacobi sweeps of a 1D
Laplace problem, several steps that each need every value of the step before:
    jacobi_launch_per_step  one kernel launch per sweep; the launch boundary is the barrier
    jacobi_grid_sync        every sweep in one cooperative launch, grid.sync() between sweeps
Beside them (ROWS), the row-by-row example, each row built from the row above it:
    rows_syncthreads        cuda.syncthreads() between rows: right in one block only
    rows_grid_sync          cuda.cg.this_grid().sync() between rows: right in any grid

A grid that calls grid.sync() must have all its blocks on the GPU at once, so a
cooperative launch has a size limit: ``max_cooperative_blocks`` asks for it, and
the host functions refuse a larger grid before CUDA does. The Numba CUDA simulator
runs a cooperative grid of one block only (its limit is 1).
"""

import math

import numpy as np
from numba import cuda

from kernels import SIMULATOR, validate

ROW_DTYPES = (np.int32, np.int64)
FLOATS = (np.float32, np.float64)

# ------------------------------------------------------------------ reference


def rows_reference(m):
    """Row r is row r - 1 read backwards, plus one; row 0 is the input."""
    out = np.array(m, copy=True)
    for row in range(1, out.shape[0]):
        out[row] = out[row - 1, ::-1] + 1
    return out


def jacobi_reference(u, steps):
    """`steps` Jacobi sweeps: each inner point becomes the mean of its two
    neighbours in the previous sweep; the two end points stay fixed."""
    v = np.array(u, copy=True)
    for _ in range(steps):
        new = v.copy()
        new[1:-1] = (v[:-2] + v[2:]) * v.dtype.type(0.5)
        v = new
    return v


# -------------------------------------------------------------------- kernels


@cuda.jit
def rows_syncthreads_kernel(m):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    rows, cols = m.shape
    for row in range(1, rows):
        for col in range(start, cols, stride):
            m[row, col] = m[row - 1, cols - 1 - col] + 1
        # Waits for this block only: the opposite column may belong to another
        # block, which may not have written its part of this row yet.
        cuda.syncthreads()


@cuda.jit
def rows_grid_sync_kernel(m):
    grid = cuda.cg.this_grid()
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    rows, cols = m.shape
    for row in range(1, rows):
        for col in range(start, cols, stride):
            m[row, col] = m[row - 1, cols - 1 - col] + 1
        # Every thread of every block waits here until the whole row is written
        # and visible. No thread may skip it (no early return above).
        grid.sync()


@cuda.jit
def jacobi_step_kernel(src, dst):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = src.size
    for i in range(start, n, stride):
        if i == 0 or i == n - 1:
            dst[i] = src[i]
        else:
            # 0.5 in the array's own type: a bare 0.5 is float64, so Numba would type the
            # float32 sweep in float64 and rely on NVVM to narrow it back (halving is exact)
            dst[i] = (src[i - 1] + src[i + 1]) * src.dtype.type(0.5)


@cuda.jit
def jacobi_grid_sync_kernel(u, out, scratch, steps):
    grid = cuda.cg.this_grid()
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = u.size
    src = u
    for step in range(steps):
        # Sweeps alternate between out and scratch, counted back from the last
        # sweep so that it lands in out.
        if (steps - step) % 2 == 1:
            dst = out
        else:
            dst = scratch
        for i in range(start, n, stride):
            if i == 0 or i == n - 1:
                dst[i] = src[i]
            else:
                dst[i] = (src[i - 1] + src[i + 1]) * src.dtype.type(0.5)
        grid.sync()  # the next sweep reads neighbours written by other blocks
        src = dst


# ------------------------------------------------------------ host functions


def max_cooperative_blocks(kernel, args, threads):
    """The most blocks of `threads` threads a cooperative launch of `kernel` with
    `args` may have on this GPU: as many as can be resident on all SMs at once.

    The limit depends on the compiled kernel (its registers and shared memory), so
    it is asked of the overload for these argument types, compiled here if needed.
    The simulator's stand-in overload answers 1 for any types."""
    if SIMULATOR:
        return kernel.overloads[()].max_cooperative_grid_blocks(threads)
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    kernel.compile(argtypes)
    return kernel.overloads[argtypes].max_cooperative_grid_blocks(threads)


def cooperative_blocks(kernel, args, blocks, threads, needed):
    """Blocks for a cooperative launch: `blocks` checked against the limit, or, if
    None, as many as the work needs (`needed`) up to the limit."""
    _, threads = validate.launch(1, threads)
    limit = max_cooperative_blocks(kernel, args, threads)
    if limit < 1:
        raise ValueError(f"{kernel.py_func.__name__} cannot run even one block of {threads} "
                         "threads on an SM (too many registers or too much shared memory "
                         "per block): use fewer threads per block")
    if blocks is None:
        return min(limit, needed), threads
    blocks, threads = validate.launch(blocks, threads)
    if blocks > limit:
        where = "the simulator" if SIMULATOR else "this GPU"
        raise ValueError(
            f"blocks={blocks} is too many for a cooperative launch of "
            f"{kernel.py_func.__name__} with {threads} threads per block: on {where} at "
            f"most {limit} block{'s' if limit > 1 else ''} can be resident at once, and "
            "grid.sync() needs every block resident (CUDA would refuse the launch with "
            f"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE). Pass blocks <= {limit}: the "
            "grid-stride loop covers any size with fewer blocks.")
    return blocks, threads


def _rows_args(m):
    validate.array("m", m, dtypes=ROW_DTYPES, ndim=2)
    validate.nonempty("m", m)
    return m


def rows_syncthreads(m, *, blocks=None, threads=256):
    """Fill rows 1.. of `m` in place from row 0, with only a block barrier between
    rows. Right with one block; with more, a row can read the row above before
    another block has written it. Shown as the bug it is."""
    _rows_args(m)
    if blocks is None:
        blocks = math.ceil(m.shape[1] / threads)
    blocks, threads = validate.launch(blocks, threads)
    rows_syncthreads_kernel[blocks, threads](m)
    return m


def rows_grid_sync(m, *, blocks=None, threads=256):
    """Fill rows 1.. of `m` in place: row r = row r - 1 backwards, plus one.

    One cooperative launch with a grid barrier between rows; `blocks` defaults to
    one column per thread, capped at the cooperative limit (ValueError above it)."""
    _rows_args(m)
    blocks, threads = cooperative_blocks(rows_grid_sync_kernel, (m,), blocks, threads,
                                         needed=math.ceil(m.shape[1] / threads))
    rows_grid_sync_kernel[blocks, threads](m)
    return m


def _jacobi_args(u, steps, out, scratch):
    validate.array("u", u, dtypes=FLOATS, ndim=1)
    validate.nonempty("u", u)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"steps must be an int, got {type(steps).__name__}")
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    return validate.output("out", out, u), validate.output("scratch", scratch, u)


def jacobi_launch_per_step(u, steps, out=None, *, scratch=None, blocks=None, threads=256):
    """`steps` Jacobi sweeps of `u` into `out`, one kernel launch per sweep.

    Kernels launched one after another on a stream run one after another, so each
    launch sees all of the previous sweep. `scratch` (like `u`) holds every other
    sweep; pass one to reuse it across calls. Pass device arrays: NumPy arrays would
    be copied to the GPU and back at every launch."""
    out, scratch = _jacobi_args(u, steps, out, scratch)
    if blocks is None:
        blocks = math.ceil(u.size / threads)
    blocks, threads = validate.launch(blocks, threads)
    src = u
    for step in range(steps):
        dst = out if (steps - step) % 2 == 1 else scratch  # the last sweep lands in out
        jacobi_step_kernel[blocks, threads](src, dst)
        src = dst
    return out


def jacobi_grid_sync(u, steps, out=None, *, scratch=None, blocks=None, threads=256):
    """`steps` Jacobi sweeps of `u` into `out` in one cooperative launch.

    `scratch` as in jacobi_launch_per_step. `blocks` defaults to one point per
    thread, capped at the cooperative limit (ValueError above it); the grid-stride
    loop covers the rest."""
    out, scratch = _jacobi_args(u, steps, out, scratch)
    args = (u, out, scratch, int(steps))
    blocks, threads = cooperative_blocks(jacobi_grid_sync_kernel, args, blocks, threads,
                                         needed=math.ceil(u.size / threads))
    jacobi_grid_sync_kernel[blocks, threads](*args)
    return out


VERSIONS = {
    "jacobi_launch_per_step": jacobi_launch_per_step,
    "jacobi_grid_sync": jacobi_grid_sync,
}

# Racy by design: the pitfall of a block barrier where the grid must wait (tests skip
# it where they require every book kernel to be race-free, and require it to race).
RACY_BY_DESIGN = ("rows_syncthreads",)

ROWS = {
    "rows_syncthreads": rows_syncthreads,
    "rows_grid_sync": rows_grid_sync,
}
