"""Checkers for the matmul chapter's exercises.

choose_tile calls your function; tiled_transpose and tiled_matvec launch your kernel
themselves, with the launch configuration the exercise states, on shapes that do
not divide the tile (1 x 1 included), with the arrays in device memory and each
output inside a poisoned guard band (DeviceOutput). A failing kernel gets a line from
the tracer (kernels.checks.hints) on what its threads did.
"""

import math

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, hints, races
from kernels.checks.core import calling, launched_on_device, run_cases

__all__ = ["choose_tile", "tiled_transpose", "tiled_matvec"]

TRANSPOSE_TILE = 16
DRAWN_TILE_CASES = 8
MATVEC_THREADS = 64
# Each y[i] sums up to 3,000 float32 products of median size 0.4: rounding in either
# order stays below 3e-4, and one lost product of median size is over 20 times the
# tolerance (tests/test_tolerances.py).
MATVEC_RTOL, MATVEC_ATOL = 1e-4, 1e-3

TRANSPOSE_SHAPES = ((1, 1), (15, 17), (33, 20), (16, 48))
MATVEC_SHAPES = ((1, 1), (17, 33), (70, 130), (5, 200))
if not SIMULATOR:
    TRANSPOSE_SHAPES += ((1000, 777), (4096, 2049))
    MATVEC_SHAPES += ((1000, 3000), (20_000, 1001))


def choose_tile(fn):
    """Check fn(shared_bytes, max_threads) returns the largest power-of-two TILE such
    that two TILE x TILE float32 tiles fit in shared_bytes and TILE x TILE threads fit
    in one block."""
    cases = [
        ("48 KiB, 1024 threads (a typical default)", (49_152, 1024), 32),
        ("227 KiB, 1024 threads (an H100 block that opts in)", (232_448, 1024), 32),
        ("4 KiB, 1024 threads: shared memory decides", (4096, 1024), 16),
        ("2048 bytes: two 16 x 16 tiles fill it exactly", (2048, 1024), 16),
        ("2047 bytes: one byte short of that", (2047, 1024), 8),
        ("48 KiB, 256 threads: the thread limit decides", (49_152, 256), 16),
        ("48 KiB, 255 threads", (49_152, 255), 8),
        ("8 bytes: room for two 1 x 1 tiles only", (8, 1024), 1),
    ]
    cases = [(d, args, np.int64(tile)) for d, args, tile in cases]
    rng = core.rng(70)  # and cases no report prints, new in each grading run
    for number in range(1, DRAWN_TILE_CASES + 1):
        args = (int(rng.integers(8, 300_000)), int(rng.integers(1, 1025)))
        cases.append((f"a drawn case ({number} of {DRAWN_TILE_CASES})", args,
                      np.int64(largest_tile(*args))))
    return run_cases("choose_tile", cases, calling(fn), repeats=1)


def largest_tile(shared_bytes, max_threads):
    """The reference: the largest power of two TILE with 2 * TILE**2 float32 values in
    shared_bytes and TILE**2 threads in max_threads (1 if none larger fits)."""
    tile = 1
    while 2 * (2 * tile) ** 2 * 4 <= shared_bytes and (2 * tile) ** 2 <= max_threads:
        tile *= 2
    return tile


def tiled_transpose(kernel):
    """Check kernel[(ceil(cols / 16), ceil(rows / 16)), (16, 16)](a, out) writes
    out = a.T for a float32 a of shape rows x cols."""
    rng = core.rng(71)
    cases = []
    drawn = (core.drawn_size(rng, 2, 40, 16), core.drawn_size(rng, 2, 40, 16))
    for shape in TRANSPOSE_SHAPES + (drawn,):
        a = rng.standard_normal(shape).astype(np.float32)
        cases.append((f"a is {shape[0]} x {shape[1]}", a, a.T.copy()))

    def launch(a):
        rows, cols = a.shape
        out = np.full((cols, rows), np.nan, dtype=np.float32)
        blocks = (math.ceil(cols / TRANSPOSE_TILE), math.ceil(rows / TRANSPOSE_TILE))
        return kernel, (blocks, (TRANSPOSE_TILE, TRANSPOSE_TILE)), (a, out), 1

    run = launched_on_device(launch, "out")
    a = rng.standard_normal((16, core.drawn_size(rng, 17, 31, 16))).astype(np.float32)
    race = races.kernel(*launch(a)[:3], f"2 blocks of 16 x 16 on a 16 x {a.shape[1]} matrix",
                        needs=("shared_tile",), expected=a.T.copy(), output=1)
    return hints.attach(run_cases("tiled_transpose", cases, run, race=race), cases, launch)


def tiled_matvec(kernel):
    """Check kernel[ceil(m / 64), 64](a, x, y) writes y = a @ x for a float32 m x n
    matrix a and vector x."""
    rng = core.rng(73)
    cases = []
    drawn = (core.drawn_size(rng, 2, 80, 64), core.drawn_size(rng, 2, 150, 64))
    for m, n in MATVEC_SHAPES + (drawn,):
        a = rng.standard_normal((m, n)).astype(np.float32)
        x = rng.standard_normal(n).astype(np.float32)
        cases.append((f"a is {m} x {n}", (a, x), a.astype(np.float64) @ x))

    def launch(inputs):
        a, x = inputs
        y = np.full(a.shape[0], np.nan, dtype=np.float32)
        return kernel, (math.ceil(a.shape[0] / MATVEC_THREADS), MATVEC_THREADS), (a, x, y), 2

    run = launched_on_device(launch, "y")
    m, n = core.drawn_size(rng, 65, 80, 64), core.drawn_size(rng, 100, 140, 64)
    a = rng.standard_normal((m, n)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    race = races.kernel(*launch((a, x))[:3], f"2 blocks of 64 on a {m} x {n} matrix",
                        needs=("shared_tile",), expected=a.astype(np.float64) @ x,
                        output=2, rtol=MATVEC_RTOL, atol=MATVEC_ATOL)
    return hints.attach(run_cases("tiled_matvec", cases, run, rtol=MATVEC_RTOL,
                                  atol=MATVEC_ATOL, race=race), cases, launch)
