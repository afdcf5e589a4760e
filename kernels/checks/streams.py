"""Checkers for the streams chapter's exercises.

Each calls the reader's function on host arrays (pinned ones on a GPU, so that the
copies really are asynchronous) with sizes that chunk counts do not divide, and reads
the output as soon as the function returns: a function that forgets to wait for its
streams fails on a GPU. The simulator runs every stream synchronously, so the results
there say nothing of a race between streams: the race case (kernels.checks.races)
traces one call and fails work on two streams that shares device memory unordered.
"""

import numpy as np
from numba import cuda

from kernels import SIMULATOR
from kernels.checks import races
from kernels.checks.core import run_cases

__all__ = ["stream_add", "chunked_streams_add", "bounded_streams_add"]

SIZES = (1, 17, 1001) if SIMULATOR else (1, 17, 1001, 1_000_003, 20_000_003)
RACE_SIZE = 50  # the race case: a few small chunks


def _race_inputs(rng):
    a, b = (rng.integers(-2**30, 2**30, RACE_SIZE, dtype=np.int32) for _ in range(2))
    return a, b, np.zeros(RACE_SIZE, np.int32)


def on_a_new_stream(fn, a, b, out):
    """fn(a, b, out, stream) on a stream made here (where the tracer runs it)."""
    return fn(a, b, out, cuda.stream())


def _host(values):
    """A pinned copy on a GPU (asynchronous copies); the array itself on the simulator."""
    if SIMULATOR:
        return values
    host = cuda.pinned_array(values.shape, values.dtype)
    host[:] = values
    return host


def _cases(rng, settings):
    """(description, (a, b, *setting), a + b) for every size and each setting."""
    cases = []
    for n in SIZES:
        a = _host(rng.integers(-2**30, 2**30, n, dtype=np.int32))
        b = _host(rng.integers(-2**30, 2**30, n, dtype=np.int32))
        for setting, label in settings(n):
            cases.append((f"n={n:,}{label}", (a, b, *setting), a + b))
    return cases


def _poisoned(n):
    out = _host(np.empty(n, np.int32))
    out[:] = -1
    return out


def stream_add(fn):
    """Check fn(a, b, out, stream) writes a + b into out (int32) and waits for it."""
    rng = np.random.default_rng(61)
    cases = _cases(rng, lambda n: [((cuda.stream(),), "")])

    def run(inputs):
        a, b, stream = inputs
        out = _poisoned(a.size)
        fn(a, b, out, stream)
        return out

    return run_cases("stream_add", cases, run, race=races.host(
        on_a_new_stream, (fn, *_race_inputs(rng)), f"n={RACE_SIZE}"))


def chunked_streams_add(fn):
    """Check fn(a, b, out, chunks) writes a + b into out (int32) and waits for it."""
    rng = np.random.default_rng(62)
    cases = _cases(rng, lambda n: [((c,), f", {c} chunks") for c in (1, 3, 4, 16) if c <= n])

    def run(inputs):
        a, b, chunks = inputs
        out = _poisoned(a.size)
        fn(a, b, out, chunks)
        return out

    return run_cases("chunked_streams_add", cases, run, race=races.host(
        fn, (*_race_inputs(rng), 3), f"n={RACE_SIZE}, 3 chunks"))


def bounded_streams_add(fn):
    """Check fn(a, b, out, chunks, streams) writes a + b into out (int32) and waits."""
    rng = np.random.default_rng(63)
    settings = ((1, 1), (5, 2), (8, 3), (16, 4), (3, 4))
    cases = _cases(rng, lambda n: [((c, s), f", {c} chunks on {s} streams")
                                   for c, s in settings if c <= n])

    def run(inputs):
        a, b, chunks, streams = inputs
        out = _poisoned(a.size)
        fn(a, b, out, chunks, streams)
        return out

    return run_cases("bounded_streams_add", cases, run, race=races.host(
        fn, (*_race_inputs(rng), 5, 2), f"n={RACE_SIZE}, 5 chunks on 2 streams"))
