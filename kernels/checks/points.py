"""What an exercise's point looks like in a trace: the checks that an answer did what the
exercise asks, not only gave its numbers (a naive transpose gives a transpose's numbers).

Each point is a function of a Trace (kernels.trace) that returns "" when the trace
shows it, else what is missing, in words. A checker names the points its exercise
needs in its race case (kernels.checks.races: `needs=`), which runs them on the trace
it made, after the races.
"""

import numpy as np

from kernels.trace.model import HOST

__all__ = []  # used by the checkers, not called by readers


def shared_tile(t):
    """The kernel writes a shared-memory array and reads it back (a tile)."""
    for launch in t.launches:
        shared = [a for a in launch.accesses if a.space == "shared"]
        if {"write", "read"} <= {a.kind for a in shared}:
            return ""
    return ("the tracer saw no shared-memory array written and read back: the exercise "
            "asks to stage the data in a tile in shared memory (cuda.shared.array), so "
            "that the block reads and writes global memory along rows")


def shared_counters(t):
    """The kernels count with atomics on a shared-memory array (per-block counters)."""
    if any(a.space == "shared" and a.kind == "atomic"
           for launch in t.launches for a in launch.accesses):
        return ""
    return ("the tracer saw no atomic on a shared-memory array: the exercise asks for a "
            "per-block histogram in shared memory (cuda.shared.array, counted with "
            "cuda.atomic.add), merged into the global counts once per block")


def one_cooperative_launch(t):
    """One cooperative launch whose threads met at a grid barrier (beside it, launches
    that prepare its inputs may run)."""
    met = [launch.kernel for launch in t.launches
           if launch.cooperative and any(a.grid_epoch for a in launch.accesses)]
    if len(met) == 1:
        return ""
    made = (f"{len(met)} cooperative launches ({', '.join(sorted(set(met)))})" if met else
            f"{len(t.launches)} launch{'es' if len(t.launches) > 1 else ''} "
            f"({', '.join(sorted({launch.kernel for launch in t.launches}))}) whose threads "
            "never met at grid.sync()")
    return (f"your answer made {made}: the exercise asks for one cooperative launch whose "
            "threads wait for each other with grid.sync() between sweeps")


def on_the_given_stream(t):
    """Every copy and kernel on the stream the answer was given (stream 1), and the host
    waited for that stream, not the whole device."""
    elsewhere = sorted({op.stream for op in t.operations if op.stream not in (1, HOST)})
    if elsewhere:
        where = ", ".join("the legacy default stream" if s == 0 else f"stream {s}"
                          for s in elsewhere)
        return (f"some of your copies or kernels ran on {where}, not on the stream your "
                "function was given: the exercise asks for every step on that stream")
    if t.device_waits:
        return ("your function waited for the whole device (cuda.synchronize()): the "
                "exercise asks to wait for the given stream only (stream.synchronize())")
    return ""


def wide_counts(t):
    """The counts the kernels keep are in 32 bits or more, in global, shared or a
    thread's local memory. One kept in 8 or 16 bits is right at the sizes a trace can
    run and wraps past 127, 255 or 32,767, a count a GPU case reaches. A count is an
    element incremented by 1 up to 2 or more (a flag, only ever 0 or 1, may stay
    narrow), or a global array's element the kernels wrote past 1."""
    for launch in t.launches:
        for name, info in launch.arrays.items():
            largest = max(info.get("counted", 0), info.get("largest", 0)
                          if launch.of(name, ("write", "atomic")) else 0)
            if largest > 1:
                dtype = info["dtype"]
                where = {"shared": "a shared array", "local": "a thread's local array"
                         }.get(info["space"], "an array")
                return (f"{launch.kernel} keeps a count in {name}, {where} of {dtype}: it "
                        f"holds at most {np.iinfo(dtype).max:,}, and the exercise's counts go "
                        "further on larger inputs (a count reached "
                        f"{largest:,} here); keep counts in int32 or int64")
    return ""


POINTS = {f.__name__: f for f in (shared_tile, shared_counters, one_cooperative_launch,
                                  on_the_given_stream, wide_counts)}
