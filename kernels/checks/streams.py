"""Checkers for the streams chapter's exercises.

Each calls the reader's function on pinned host arrays (so that the copies really are
asynchronous) with sizes that chunk counts do not divide, and reads the output as soon
as the function returns: a function that forgets to wait for its streams fails on a
GPU. The simulator runs every stream synchronously, so the results there say nothing
of a race between streams: the race case (kernels.checks.races) traces one call, the
same way, and fails work on two streams that shares memory unordered, and a result the
host reads before the copy into it is waited for.
"""

import numpy as np

from kernels import SIMULATOR
from kernels.checks import core, races, steps
from kernels.checks.core import answer_side, run_cases
from kernels.checks.steps import NEW_STREAM

__all__ = ["stream_add", "chunked_streams_add", "bounded_streams_add"]

SIZES = (1, 17, 1001) if SIMULATOR else (1, 17, 1001, 1_000_003, 20_000_003)
RACE_SIZES = (40, 64)  # the race case's n, drawn for the run: a few small chunks


def _race_inputs(rng):
    """a and b of the race case, of a size drawn for the run: the traced call is not
    told apart from the others by its size."""
    n = core.drawn_size(rng, *RACE_SIZES)
    return tuple(rng.integers(-2**30, 2**30, n, dtype=np.int32) for _ in range(2))


def _cases(rng, settings):
    """(description, (a, b, *setting), a + b) for every size and each setting."""
    cases = []
    for n in SIZES + (core.drawn_size(rng, 17, 2000),):
        a = rng.integers(-2**30, 2**30, n, dtype=np.int32)
        b = rng.integers(-2**30, 2**30, n, dtype=np.int32)
        for setting, label in settings(n):
            cases.append((f"n={n:,}{label}", (a, b, *setting), a + b))
    return cases


def _run(fn):
    return lambda inputs: answer_side(fn, steps.added, *inputs)


def stream_add(fn):
    """Check fn(a, b, out, stream) writes a + b into out (int32) and waits for it."""
    rng = core.rng(61)
    cases = _cases(rng, lambda n: [((NEW_STREAM,), "")])
    a, b = _race_inputs(rng)
    return run_cases("stream_add", cases, _run(fn), race=races.host(
        fn, (a, b, NEW_STREAM), f"n={a.size}", via=steps.added,
        needs=("on_the_given_stream",)))


def chunked_streams_add(fn):
    """Check fn(a, b, out, chunks) writes a + b into out (int32) and waits for it."""
    rng = core.rng(62)
    cases = _cases(rng, lambda n: [((c,), f", {c} chunks") for c in (1, 3, 4, 16) if c <= n])
    a, b = _race_inputs(rng)
    return run_cases("chunked_streams_add", cases, _run(fn), race=races.host(
        fn, (a, b, 3), f"n={a.size}, 3 chunks", via=steps.added))


def bounded_streams_add(fn):
    """Check fn(a, b, out, chunks, streams) writes a + b into out (int32) and waits."""
    rng = core.rng(63)
    settings = ((1, 1), (5, 2), (8, 3), (16, 4), (3, 4))
    cases = _cases(rng, lambda n: [((c, s), f", {c} chunks on {s} streams")
                                   for c, s in settings if c <= n])
    a, b = _race_inputs(rng)
    return run_cases("bounded_streams_add", cases, _run(fn), race=races.host(
        fn, (a, b, 5, 2), f"n={a.size}, 5 chunks on 2 streams", via=steps.added))
