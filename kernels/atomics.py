"""Atomics: why `x[i] = x[i] + 1` from many threads loses updates, and how to fix it.

Versions (VERSIONS maps each name to its host function):
    increment_racy    read, add one, write back: concurrent threads overwrite each other
    increment_atomic  cuda.atomic.add: the read-modify-write is one indivisible step

Both spread `increments` additions of one over the counters round-robin (addition i
goes to counter i % counters.size). With one counter this is the classic demo:
10 blocks of 16 threads each add one to x[0].
"""

import numpy as np
from numba import cuda

from kernels import validate

DTYPES = (np.int32, np.int64)
RACE_LAUNCH = (10, 16)  # blocks, threads of the classic demo: 160 increments

# ------------------------------------------------------------------ reference


def increment_reference(increments, counters):
    """What the counters hold after `increments` round-robin additions from zero."""
    return np.bincount(np.arange(increments) % counters, minlength=counters).astype(np.int64)


# -------------------------------------------------------------------- kernels


@cuda.jit
def increment_racy_kernel(counts, increments):
    start = cuda.grid(1)
    for i in range(start, increments, cuda.gridsize(1)):
        j = i % counts.size
        counts[j] = counts[j] + 1  # another thread may write between this read and write


@cuda.jit
def increment_atomic_kernel(counts, increments):
    start = cuda.grid(1)
    for i in range(start, increments, cuda.gridsize(1)):
        cuda.atomic.add(counts, i % counts.size, 1)


# ------------------------------------------------------------ host functions


def _args(counts, increments, blocks, threads):
    validate.array("counts", counts, dtypes=DTYPES, ndim=1)
    validate.nonempty("counts", counts)
    blocks, threads = validate.launch(blocks, threads)
    if increments is None:
        increments = blocks * threads
    if isinstance(increments, bool) or not isinstance(increments, (int, np.integer)):
        raise TypeError(f"increments must be an int, got {type(increments).__name__}")
    if increments < 0:
        raise ValueError(f"increments must be at least 0, got {increments}")
    return int(increments), blocks, threads


def increment_racy(counts, increments=None, *, blocks=RACE_LAUNCH[0], threads=RACE_LAUNCH[1]):
    """Add one `increments` times (default: once per thread) to `counts`, round-robin,
    with a plain read-modify-write. On a GPU some additions are lost."""
    increments, blocks, threads = _args(counts, increments, blocks, threads)
    increment_racy_kernel[blocks, threads](counts, increments)
    return counts


def increment_atomic(counts, increments=None, *, blocks=RACE_LAUNCH[0], threads=RACE_LAUNCH[1]):
    """Add one `increments` times (default: once per thread) to `counts`, round-robin,
    with cuda.atomic.add. No addition is lost."""
    increments, blocks, threads = _args(counts, increments, blocks, threads)
    increment_atomic_kernel[blocks, threads](counts, increments)
    return counts


# Racy by design: the chapter's demonstration of a lost update (tests skip it where
# they require every book kernel to be race-free, and require it to race).
RACY_BY_DESIGN = ("increment_racy",)

VERSIONS = {
    "increment_racy": increment_racy,
    "increment_atomic": increment_atomic,
}
