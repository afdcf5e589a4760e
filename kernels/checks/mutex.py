"""Checkers for the mutex chapter's exercises.

Each takes the reader's host function, calls it on random float32 data of sizes that
do not divide the block size, each call under the time limit. A lock that is never
released shows as a LockTimeout (the course's bounded spin) or, with an unbounded
spin, as a time limit exceeded: either way a message, not a frozen notebook.
"""

import math

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, races
from kernels.checks.core import calling, run_cases
from kernels.gridstride import sm_count
from kernels.harness import to_host
from kernels.mutex import THREADS, default_blocks, summation_rounding

__all__ = ["lock_sum_positive", "lock_argmax", "lock_bin_product"]

# 600: three blocks of THREADS (not a power of two)
SIZES = (1, 17, 600, 1001) if SIMULATOR else (1, 17, 600, 1001, 1_000_003)
# The largest value's index past 16 bits, even packed unsigned beside its value: on the
# simulator a grid-stride launch costs about what n=3,001 does (starting its threads is
# most of it)
PAST_16_BITS = 70_001
# Three blocks of THREADS: the fewest where a block past the first two has nothing
FEW_BLOCKS = 600
EPS32 = float(np.finfo(np.float32).eps)
# The race case's grid: the course's launch on the simulator (default_blocks: four
# blocks of THREADS on its one SM), and any fixed grid of as many threads or fewer
RACE_THREADS = 4 * THREADS


def loops():
    """A size past twice what the course's launches cover (four blocks of THREADS per
    SM, kernels.mutex.default_blocks), so every thread loops and sees ties of its own:
    3,001 on the simulator (one SM), about 270,000 on a GPU of 132 SMs, from this
    device. (1,000,003 before: a correct answer that takes a lock per element, launched
    with 3 blocks of 96 threads, ran past the 20 s a case has on a busy GPU.)"""
    return 3001 if SIMULATOR else 2 * 4 * sm_count() * THREADS + 1


def lock_sum_positive(fn):
    """Check fn(x) returns the sum of the positive values of a float32 array."""
    rng = core.rng(5)
    cases = []
    for n in SIZES + (core.drawn_size(rng, 2, 2000),):
        x = rng.standard_normal(n).astype(np.float32)
        cases.append((f"n={n}, mixed signs", x))
    cases.append((f"n={FEW_BLOCKS}, all negative: every block has nothing to add",
                  -rng.random(FEW_BLOCKS).astype(np.float32) - 0.5))
    # every thread loops, and the positives reach one block, in its last round
    n = loops()
    cases.append((f"n={n:,}, only the last 100 values positive",
                  np.where(np.arange(n) >= n - 100, 1.0, -1.0).astype(np.float32)))
    cases = [(what, x, x[x > 0].astype(np.float64).sum()) for what, x in cases]

    answer = calling(fn)

    def run(x):
        return np.float64(answer(x))

    # Every term is positive, so a bound relative to the sum holds for every case.
    rtol = max(sum_positive_rounding(x) / expected for _, x, expected in cases if expected)
    x = rng.standard_normal(races.two_rounds(rng, RACE_THREADS)).astype(np.float32)
    return run_cases("lock_sum_positive", cases, run, rtol=rtol, atol=0,
                     race=races.host(fn, (x,), f"n={x.size}"))


def sum_positive_rounding(x, blocks=None):
    """Bound on the float32 rounding of the sum of x's positive values, added as the
    solution adds them: `blocks` (default_blocks) x THREADS threads, partials in any order.

    A lost block moves the sum by its partial, far more (1/528 of the sum at n=1,000,003
    on an H100, against a relative bound of 1.7e-5); a lost value shows at small n only."""
    blocks = default_blocks(x.size, THREADS) if blocks is None else blocks
    return summation_rounding(np.where(x > 0, x, 0).astype(np.float64), blocks, THREADS)


def lock_argmax(fn):
    """Check fn(x) returns (largest value, index of its first occurrence)."""
    rng = core.rng(8)
    cases = []
    for n in SIZES + (core.drawn_size(rng, 2, 2000),):
        cases.append((f"n={n}, distinct values", rng.standard_normal(n).astype(np.float32)))
    n = loops()
    cases.append((f"n={n:,}, many ties: values 0..4 (the first 4 must win)",
                  rng.integers(0, 5, n).astype(np.float32)))
    n = FEW_BLOCKS if SIMULATOR else SIZES[-1]
    cases.append((f"n={n:,}, all negative", -1 - rng.random(n).astype(np.float32)))
    cases.append((f"n={loops():,}, all -inf: the largest value is -inf, first at index 0",
                  np.full(loops(), -np.inf, np.float32)))
    for n in (600, max(loops(), PAST_16_BITS)):  # an odd block count; an index of 17 bits
        last = rng.random(n).astype(np.float32)
        last[-1] = 2
        cases.append((f"n={n:,}, the largest value last", last))
    cases = [(what, x, np.array([x.max(), np.argmax(x)], np.float64)) for what, x in cases]

    answer = calling(fn)

    def run(x):
        value, index = answer(x)
        return np.array([value, index], np.float64)

    x = rng.standard_normal(races.two_rounds(rng, RACE_THREADS)).astype(np.float32)
    return run_cases("lock_argmax", cases, run, rtol=0, atol=0,
                     race=races.host(fn, (x,), f"n={x.size}"))


def lock_bin_product(fn):
    """Check fn(keys, values, nbins) returns the product of the values of each bin."""
    rng = core.rng(13)
    shapes = [(1, 1), (17, 7), (1001, 1), (1001, 7), (1001, 64), (loops(), 64)]
    if not SIMULATOR:  # one bin is one lock for all: keep its queue short
        shapes += [(20_001, 1), (100_003, 64), (100_003, 1024)]
    cases = []
    for n, nbins in shapes:
        keys = rng.integers(0, nbins, n).astype(np.int32)
        values = rng.uniform(0.9, 1.1, n).astype(np.float32)
        expected = np.ones(nbins)
        np.multiply.at(expected, keys, values.astype(np.float64))
        cases.append((f"n={n}, {nbins} bins", (keys, values, nbins), expected))

    answer = calling(fn)

    def run(inputs):
        return np.asarray(to_host(answer(inputs)), np.float64)  # a device array is fine too

    largest = max(np.bincount(c[1][0]).max() for c in cases)
    # 16 bins: each lock wanted by many threads of a block, and a spin short enough to
    # trace (with 3 bins the threads' spins made 2.4 times the accesses)
    n = races.two_rounds(rng, RACE_THREADS)
    keys = rng.integers(0, 16, n).astype(np.int32)
    values = rng.uniform(0.9, 1.1, n).astype(np.float32)
    return run_cases("lock_bin_product", cases, run, rtol=bin_product_rtol(largest), atol=0,
                     race=races.host(fn, (keys, values, 16), f"n={n}, 16 bins"))


def bin_product_rtol(k):
    """Relative tolerance for a float32 product of k factors multiplied in any order.

    Each multiply rounds by at most u = eps/2, up or down alike, so over k factors the
    errors add like a random walk: about 0.4 * sqrt(k) * u (measured on random orders).
    8 * sqrt(k) * u allows twenty times that; the worst case, (k - 1) * u with every
    rounding leaning the same way, does not occur on random factors. Losing or doubling
    a factor further than this from 1 fails (at k = 20,001: outside 1 +- 6.7e-5)."""
    return 4 * math.sqrt(k) * EPS32
