"""Checkers for the reduction chapter's exercises.

Each calls your host function as fn(x, blocks) with a NumPy array x: it must launch
your kernel with `blocks` blocks of kernels.reduction.THREADS (256) threads and return
the answer on the host. The sizes do not divide the block size, and the grids range
from one block to more blocks than the data fill.
"""

import math

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, races
from kernels.checks.core import calling, run_cases

__all__ = ["mean_variance", "argmax", "kahan_sum", "topk"]

# (n, blocks): small on the simulator, which runs every CUDA thread in Python
LAUNCHES = ((1, 1), (255, 3), (257, 2), (10_001, 3))
if not SIMULATOR:
    LAUNCHES += ((1_000_003, 264), (4_000_037, 1056))
TOPK = 10
# What each tolerance lets through and what it catches: tests/test_tolerances.py.
# mean_variance: float64 sums in any order are within 5e-12 on these cases; float32
# accumulators (8e-4 to 9e-3 off at mean 100 and n = 1,000,003), one lost value and
# np.var(ddof=1) are caught.
MEAN_VARIANCE_RTOL, MEAN_VARIANCE_ATOL = 1e-8, 1e-12
# kahan_sum, random cases: a tolerance of 1e-12 of the sum of magnitudes, not of the sum.
# Where values cancel, the partials' tree (or atomics) rounds to about 1e-16 of the
# largest partial, however well each thread compensates: [3e8, -3e8, 2364.7] summed by a
# tree is 2e-8 off, 1e-11 of the sum. A lost value larger than 1e-12 of the magnitudes
# is caught.
KAHAN_OF_MAGNITUDES = 1e-12
# On the chains a plain float64 loop is 4.0e-15 off and a compensated one exact: the
# tolerance leaves room for the tree's rounding only.
KAHAN_CHAIN_RTOL = 1.5e-15


RACE_BLOCKS = 2  # the race case's blocks (of 256 threads)


def _race_size(rng):
    """The race case's n: two grid-stride rounds or more for every thread."""
    from kernels.reduction import THREADS

    return races.two_rounds(rng, RACE_BLOCKS * THREADS)


def _race(fn, x):
    return races.host(fn, (x, RACE_BLOCKS), f"n={x.size}, blocks={RACE_BLOCKS}")


def _launches(rng, low=2):
    """LAUNCHES and one of this run's own: (n >= low, 2 blocks)."""
    return LAUNCHES + ((core.drawn_size(rng, low, 700), 2),)


def mean_variance(fn):
    """Check fn(x, blocks) returns [mean, variance] (population, as np.var) of float32 x."""
    rng = core.rng(31)
    cases = []
    spreads = [(3, 2), (-5, 1), (100, 1), (3, 2), (100, 1), (0, 1)][:len(LAUNCHES)]
    for (n, blocks), (mean, std) in zip(_launches(rng), spreads + [(-2, 3)]):
        x = rng.normal(mean, std, n).astype(np.float32)
        expected = np.array([x.mean(dtype=np.float64), x.var(dtype=np.float64)])
        cases.append((f"n={n:,}, mean {mean}, standard deviation {std}, blocks={blocks}",
                      (x, blocks), expected))
    return run_cases("mean_variance", cases, calling(fn), rtol=MEAN_VARIANCE_RTOL,
                     atol=MEAN_VARIANCE_ATOL,
                     race=_race(fn, rng.normal(3, 2, _race_size(rng)).astype(np.float32)))


def argmax(fn):
    """Check fn(x, blocks) returns the index of the first maximum of int32 x (np.argmax)."""
    rng = core.rng(37)
    cases = []
    for n, blocks in _launches(rng):
        x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        cases.append((f"n={n:,}, random int32, blocks={blocks}", (x, blocks), np.argmax(x)))
    n, blocks = LAUNCHES[-1]
    ties = rng.integers(0, 50, n).astype(np.int32)  # the maximum occurs about n/50 times
    cases.append((f"n={n:,}, the maximum repeated: the first one wins", (ties, blocks),
                  np.argmax(ties)))
    last = -rng.integers(1, 1000, n).astype(np.int32)
    last[-1] = -1
    last[-2] = -1
    cases.append((f"n={n:,}, all negative, the maximum among the last two", (last, blocks),
                  np.argmax(last)))
    far = core.beyond_16_bits(rng)
    cases.append((f"n={far.size:,}, the maximum past index 65,535 (an index packed into 16 "
                  "bits loses it)", (far, 2), np.argmax(far)))
    return run_cases("argmax", cases, calling(fn),
                     race=_race(fn, rng.integers(0, 50, _race_size(rng)).astype(np.int32)))


def _chain_case(blocks, per_thread=40):
    """Every thread's first element is 1.0, the rest 1e-16: a plain float64 sum drops
    every 1e-16 (1 + 1e-16 rounds to 1), a compensated one keeps them."""
    from kernels.reduction import THREADS

    threads = blocks * THREADS
    x = np.full(threads * per_thread, 1e-16)
    x[:threads] = 1.0
    return (f"blocks={blocks}, each thread's grid-stride slice starts with 1.0 and "
            f"goes on with {per_thread - 1} values of 1e-16", (x, blocks), math.fsum(x))


def kahan_sum(fn):
    """Check fn(x, blocks) sums float64 x with compensation (against math.fsum)."""
    rng = core.rng(41)
    report = None
    parts = _launches(rng)
    # one part is run again without its kernels and swapped (kernels.checks.provenance):
    # of one element, the answer's input copied back is its sum, with no kernel
    checked_n = min(n for n, _ in parts if n >= 255)
    for n, blocks in parts:  # one call each: each case has its own tolerance
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
        case = (f"n={n:,}, magnitudes 1e-8 to 1e8, blocks={blocks}", (x, blocks),
                math.fsum(x))
        race = _race(fn, rng.standard_normal(_race_size(rng))) if report is None else None
        part = run_cases("kahan_sum", [case], calling(fn), rtol=0, race=race,
                         atol=KAHAN_OF_MAGNITUDES * math.fsum(np.abs(x)),
                         provenance_cases=n == checked_n)
        if report is None:
            report = part
            if core.DEFERRED or report.cases[0].detail.startswith(races.PREFIX):
                return report  # the grader checks it, or the race case ended the check
        else:
            report.cases += part.cases
            report.timed_out |= part.timed_out
    chains = [_chain_case(1), _chain_case(2)]
    part = run_cases("kahan_sum", chains, calling(fn), rtol=KAHAN_CHAIN_RTOL, atol=0,
                     provenance_cases=False)
    report.cases += part.cases
    report.timed_out |= part.timed_out
    return report


def topk(fn):
    """Check fn(x, blocks) returns the 10 largest values of int32 x, largest first."""
    rng = core.rng(43)
    cases = []
    # more values than the answer returns in every case but the first (n = TOPK): a
    # drawn n below TOPK would ask for fewer values than the exercise's 10
    for n, blocks in ((TOPK, 1),) + _launches(rng, low=TOPK + 1)[1:]:
        x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        cases.append((f"n={n:,}, random int32, blocks={blocks}", (x, blocks),
                      np.sort(x)[::-1][:TOPK]))
    n, blocks = LAUNCHES[-1]
    dups = rng.integers(0, 12, n).astype(np.int32)  # few distinct values, many repeats
    cases.append((f"n={n:,}, values 0 to 11 repeated", (dups, blocks),
                  np.sort(dups)[::-1][:TOPK]))
    low = np.full(n, -2**31, dtype=np.int32)  # the smallest int32 is a valid answer too
    low[-3:] = (-5, -2**31 + 1, -7)
    cases.append((f"n={n:,}, almost all -2**31, three larger values at the end",
                  (low, blocks), np.sort(low)[::-1][:TOPK]))
    return run_cases("topk", cases, calling(fn), race=_race(fn, rng.integers(
        -2**31, 2**31, _race_size(rng), dtype=np.int64).astype(np.int32)))
