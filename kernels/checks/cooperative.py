"""Checkers for the cooperative-groups chapter's exercises.

The kernel checkers launch the reader's kernel with grids that fit a cooperative
launch: on a GPU the largest grid allowed and a small one of 3 blocks, on the
simulator one block (all it can run with grid.sync()). Sizes do not divide the
block size, so a grid-stride loop and its guards are always exercised. The arrays are
in device memory, each output inside a poisoned guard band (DeviceOutput). The race
case (kernels.checks.races) runs 3 blocks at once under the tracer, where a block
barrier in place of a grid barrier leaves conflicts between blocks; the kernel
checkers compare that launch's values too, the only case on the simulator where
blocks other than the first take part.
"""

import numpy as np

import kernels
from kernels import SIMULATOR, hardware
from kernels.checks import core, launches, provenance, races, steps
from kernels.checks.core import answer_side, calling, run_cases
from kernels.harness import MismatchError

__all__ = ["rotate_rows", "normalize_by_max", "jacobi_until_converged"]

THREADS = 32 if SIMULATOR else 256
RACE_LAUNCH = (3, 16)  # blocks, threads: the race case, every block live


def _grids(kernel, args, checker):
    """(blocks, threads) launches for `kernel`: the largest cooperative grid, and 3."""
    limit = answer_side(kernel, steps.cooperative_limit, args, THREADS, checker)
    if not isinstance(limit, int) or limit < 1:  # said by the answer's process
        raise ValueError(f"the largest cooperative grid came back as {limit!r}")
    return sorted({(limit, THREADS), (min(3, limit), THREADS)})


def _not_a_kernel(exercise, err):
    """The report on an answer that is no kernel: the checker's words, not an error the
    answer raised."""
    return core.Report(exercise, [core.Case("your answer is a CUDA kernel", False, str(err))])


def rotate_rows(kernel):
    """Check kernel[blocks, threads](m) fills rows 1.. of an int32 matrix in place,
    each row the row above rotated left by one: m[r, c] = m[r - 1, (c + 1) % cols]."""
    rng = core.rng(31)
    shapes = ((6, 45), (4, 1), (3, 70)) if SIMULATOR else ((64, 100_003), (200, 4_097),
                                                          (5, 1))
    cases = []
    for shape in shapes:
        m = np.full(shape, -1, np.int32)
        m[0] = rng.integers(0, 10**6, shape[1])
        expected = m.copy()
        for row in range(1, shape[0]):
            expected[row] = np.roll(expected[row - 1], -1)
        try:
            grids = _grids(kernel, (m,), "rotate_rows")
        except launches.NotAKernel as err:
            return _not_a_kernel("rotate_rows", err)
        for blocks, threads in grids:
            cases.append((f"shape {shape}, launched [{blocks}, {threads}]",
                          (blocks, threads, m), expected))

    def run(inputs):
        return answer_side(kernel, steps.rotated, *inputs)

    # two grid-stride rounds or more per thread, at a width drawn for the run
    cols = core.drawn_size(rng, 97, 120)
    m = np.full((3, cols), -1, np.int32)
    m[0] = rng.integers(0, 10**6, cols)
    expected = m.copy()
    for row in range(1, 3):
        expected[row] = np.roll(expected[row - 1], -1)
    # several blocks live, where the value cases on the simulator run one: values too
    return run_cases("rotate_rows", cases, run, race=races.kernel(
        kernel, RACE_LAUNCH, (m,), f"[3, 16] on a 3 x {cols} matrix", expected=expected,
        output=0, needs=("work_shared",)))


def normalize_by_max(kernel):
    """Check kernel[blocks, threads](x, out, peak) writes out = x / max(x) for
    float32 x, with peak a one-element float32 array that holds -inf on entry."""
    rng = core.rng(32)
    sizes = ((1, 17, 1_001) if SIMULATOR else (1, 17, 1_001, 5_000_003)) + (
        core.drawn_size(rng, 2, 1500),)
    cases = []
    for k, n in enumerate(sizes):
        x = rng.uniform(-50, 100, n).astype(np.float32)
        # the maximum, somewhere in the array; last in the last size's
        x[n - 1 if k == len(sizes) - 1 else rng.integers(n)] = 100.5
        args = (x, np.empty_like(x), np.full(1, -np.inf, np.float32))
        try:
            grids = _grids(kernel, args, "normalize_by_max")
        except launches.NotAKernel as err:
            return _not_a_kernel("normalize_by_max", err)
        for blocks, threads in grids:
            cases.append((f"n={n}, launched [{blocks}, {threads}]", (blocks, threads, x),
                          x / x.max()))

    def run(inputs):
        return answer_side(kernel, steps.normalized, *inputs)

    # 2 rounds or more per thread, at a size drawn for the run
    x = rng.uniform(-50, 100, core.drawn_size(rng, 97, 120)).astype(np.float32)
    # the maximum in one block's share only: a block that divides by its own maximum
    # gets its values wrong
    x[int(rng.integers(x.size))] = 100.5
    return run_cases("normalize_by_max", cases, run, race=races.kernel(
        kernel, RACE_LAUNCH, (x, np.full_like(x, np.nan), np.full(1, -np.inf, np.float32)),
        f"[3, 16] on n={x.size}", expected=x / x.max(), output=1, needs=("work_shared",)))


def _sweep(v):
    """One Jacobi sweep of `v`: (the new values, the largest change)."""
    new = v.copy()
    new[1:-1] = (v[:-2] + v[2:]) * 0.5
    return new, np.abs(new - v).max()


def _jacobi_until_converged_reference(u, tol, max_steps):
    v = u.copy()
    for sweep in range(1, max_steps + 1):
        v, change = _sweep(v)
        if change < tol:
            return v, sweep
    return v, max_steps


def _past_one_grid():
    """More points than a cooperative grid can have threads, so that one point per thread
    cannot cover them: every thread must loop. On a GPU: its SMs x the threads each can
    hold (the device's SM count; its compute capability's resident threads per SM); on
    the simulator, whose cooperative grid is one block: more than a block's 1,024."""
    if SIMULATOR:
        return 1_100
    device = kernels.device()
    return (device["sm_count"] * hardware.max_threads_per_sm(device["compute_capability"])
            + 1_003)


def _third_change(u):
    """The largest change of the third Jacobi sweep of `u`, exactly."""
    v = u.copy()
    for _ in range(3):
        v, change = _sweep(v)
    return float(change)


def jacobi_until_converged(fn):
    """Check fn(u, tol, max_steps) -> (result, sweeps): Jacobi sweeps of float64 `u`
    until a sweep changes no point by `tol` or more, or `max_steps` sweeps."""
    rng = core.rng(33)
    sizes = (1, 2, 17, 70) if SIMULATOR else (1, 2, 17, 70, 100_003)
    cases, counts = [], {}  # counts: (the case's u, tol, max_steps) -> its sweeps
    for n in sizes + (_past_one_grid(),):
        u = np.sin(np.linspace(0, 3 * np.pi, n)) + rng.uniform(-0.1, 0.1, n)
        # converges after 11 (n=17) and 46 (n=70) sweeps, more than the other case's
        # 40: few enough for the simulator's grid syncs
        # n = 17 also: one sweep only, and a tol that one sweep's largest change equals
        # exactly (a sweep that changes no point by tol or more stops: that one does not)
        settings = ((5e-2, 400), (1e-12, 40)) + (
            ((1e-12, 1), (_third_change(u), 40)) if n == 17 else ())
        if n not in sizes:  # more points than one cooperative grid has threads: 2 sweeps
            settings = ((1e-12, 2),)
        elif n == 17 and not SIMULATOR:  # more sweeps than 16 bits count (tol 0: all of
            settings += ((0.0, 33_000),)  # them); on the simulator, whose grid syncs cannot
            # afford them, the race case's trace looks for counts kept in 16 bits instead
        for tol, max_steps in settings:
            v, sweeps = _jacobi_until_converged_reference(u, tol, max_steps)
            how = "converges" if sweeps < max_steps else "stops at max_steps"
            cases.append((f"n={n}, tol={tol:g}, max_steps={max_steps} ({how}): the number "
                          "of sweeps and the values", (u, tol, max_steps), v))
            counts[id(u), tol, max_steps] = sweeps

    answer = calling(fn)

    def run(inputs):
        """The values, once the number of sweeps is right: both parts of one call. Not
        the number where provenance runs the answer without its kernels, or swapped, or
        on other data: there the values tell where the result came from, and a count
        that a kernel kept would tell nothing of the values."""
        u, tol, max_steps = inputs
        result, sweeps = answer((u.copy(), tol, max_steps))
        ours = not (provenance.WITHOUT_KERNELS.on or provenance.SWAPPING.pairs is not None)
        expected = counts.get((id(u), tol, max_steps)) if ours else None
        if expected is not None and int(sweeps) != expected:
            raise MismatchError(f"the number of sweeps: got {sweeps}, expected {expected}")
        return result

    # two rounds for 3 blocks of 256 threads (the most the tracer offers a cooperative
    # launch of 256-thread blocks)
    n = races.two_rounds(rng, 3 * 256)
    u = np.sin(np.linspace(0, 3 * np.pi, n)) + rng.uniform(-0.1, 0.1, n)
    return run_cases("jacobi_until_converged", cases, run, race=races.host(
        fn, (u, 1e-12, 2), f"n={n}, 2 sweeps, up to 3 blocks",
        needs=("one_cooperative_launch", "work_shared", "wide_results")))
