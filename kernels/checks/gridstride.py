"""Checkers for the grid-stride chapter's exercises.

Each takes the reader's kernel and launches it with several grids, including a
single thread ([1, 1]) and grids smaller and larger than the data, on sizes that do
not divide the block size: a grid-stride kernel must be right for all of them. The
arrays are in device memory, each output inside a poisoned guard band (DeviceOutput).
A failure gets a line from the tracer (kernels.checks.hints) on what the threads did.
Each kernel is also traced once at a small launch: it fails on a race, or when one
thread does far more than its share of the writes (a loop run by one thread, or a
stride that leaves the other blocks idle), which no result would show.
"""

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, hints, races
from kernels.checks.core import launched_on_device, run_cases

__all__ = ["saxpy", "clip_2d", "reverse_inplace"]

SIZES = (1, 17, 1001) if SIMULATOR else (1, 17, 1001, 1_000_003)
LAUNCHES = ((1, 1), (3, 7), (4, 64))


def _traced_launch(rng):
    """The traced case's launch and size, drawn: races, and whether the threads share
    the work (kernels.checks.races), at a launch no kernel can single out, with at
    least two grid-stride rounds for every thread, reverse_inplace's pairs included (a
    race between rounds shows)."""
    blocks, threads = int(rng.integers(2, 4)), int(rng.integers(5, 10))
    grid = blocks * threads
    return (blocks, threads), core.drawn_size(rng, 4 * grid + 1, 5 * grid, 8)


def _traced_launch_2d(rng):
    """As _traced_launch, on both axes: two or more blocks on each (with one, a stride
    of the block's size on that axis is the grid's, and its race never shows)."""
    blocks = (int(rng.integers(2, 4)), int(rng.integers(2, 4)))
    threads = (int(rng.integers(2, 5)), int(rng.integers(2, 5)))
    grid = max(b * t for b, t in zip(blocks, threads))  # either axis may run along rows
    shape = (core.drawn_size(rng, 2 * grid + 1, 3 * grid, 4),
             core.drawn_size(rng, 2 * grid + 1, 3 * grid, 4))
    return (blocks, threads), shape


def launches_2d(rng):
    """A single thread, and two launches drawn for this run, one wider than tall (more
    threads in the grid along x than along y) and one taller than wide: a kernel that
    strides one axis by the other's gridsize leaves elements out in one of them."""
    while True:
        blocks = tuple(int(b) for b in rng.integers(1, 4, 2))
        threads = tuple(int(t) for t in rng.integers(2, 9, 2))
        x, y = (b * t for b, t in zip(blocks, threads))
        if x != y:
            break
    wide = (blocks, threads) if x > y else (blocks[::-1], threads[::-1])
    return (((1, 1), (1, 1)), wide, (wide[0][::-1], wide[1][::-1]))


def saxpy(kernel):
    """Check kernel[blocks, threads](a, x, y, out) computes out = a*x + y (float32)."""
    rng = core.rng(2024)
    cases = []
    for n in SIZES + (core.drawn_size(rng, 2, 2000),):
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        a = np.float32(rng.standard_normal())
        for blocks, threads in LAUNCHES:
            cases.append((f"n={n}, launched [{blocks}, {threads}]",
                          (blocks, threads, a, x, y), a * x + y))

    def launch(inputs):
        blocks, threads, a, x, y = inputs
        return kernel, (blocks, threads), (a, x, y, np.full_like(x, np.nan)), 3

    run = launched_on_device(launch, "out")
    traced, n = _traced_launch(rng)
    x, y = rng.standard_normal((2, n)).astype(np.float32)
    race = races.kernel(kernel, traced, (np.float32(2), x, y, np.full_like(x, np.nan)),
                        f"{list(traced)} on n={n}", shared=3, needs=("work_shared",),
                        expected=np.float32(2) * x + y, output=3)
    return hints.attach(run_cases("saxpy", cases, run, race=race), cases, launch,
                        gridstride=True)


def clip_2d(kernel):
    """Check kernel[blocks, threads](x, lo, hi, out) clips a 2D float64 array."""
    rng = core.rng(7)
    cases = []
    for shape in ((1, 1), (17, 33), (40, 9)):
        x = rng.standard_normal(shape) * 3
        for blocks, threads in launches_2d(rng):
            cases.append((f"shape {shape}, blocks {blocks}, threads {threads}",
                          (blocks, threads, x), np.clip(x, -1.0, 1.0)))

    def launch(inputs):
        blocks, threads, x = inputs
        return kernel, (blocks, threads), (x, -1.0, 1.0, np.full_like(x, np.nan)), 3

    run = launched_on_device(launch, "out")
    traced, shape = _traced_launch_2d(rng)
    x = rng.standard_normal(shape) * 3
    race = races.kernel(kernel, traced, (x, -1.0, 1.0, np.full_like(x, np.nan)),
                        f"blocks {traced[0]} of threads {traced[1]} on a "
                        f"{shape[0]} x {shape[1]} array", shared=3, needs=("work_shared",),
                        expected=np.clip(x, -1.0, 1.0), output=3)
    return hints.attach(run_cases("clip_2d", cases, run, race=race), cases, launch,
                        gridstride=True)


def reverse_inplace(kernel):
    """Check kernel[blocks, threads](x) reverses an int32 array in place."""
    rng = core.rng(11)
    cases = []
    for n in SIZES + (2, 1000, core.drawn_size(rng, 2, 2000)):
        x = rng.integers(-10**6, 10**6, n, dtype=np.int32)
        for blocks, threads in LAUNCHES:
            cases.append((f"n={n}, launched [{blocks}, {threads}]", (blocks, threads, x),
                          x[::-1].copy()))

    def launch(inputs):
        blocks, threads, x = inputs
        return kernel, (blocks, threads), (x.copy(),), 0

    run = launched_on_device(launch, "x")
    # in place: two threads touching one element is a race
    traced, n = _traced_launch(rng)
    x = rng.integers(-10**6, 10**6, n, dtype=np.int32)
    race = races.kernel(kernel, traced, (x,), f"{list(traced)} on n={n}", shared=0,
                        needs=("work_shared",),
                        expected=x[::-1].copy(), output=0)
    return hints.attach(run_cases("reverse_inplace", cases, run, race=race), cases, launch,
                        gridstride=True, every_element=False)
