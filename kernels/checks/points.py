"""What an exercise's point looks like in a trace: the checks that an answer did what the
exercise asks, not only gave its numbers (a naive transpose gives a transpose's numbers).

Each point is a function of a Trace (kernels.trace) that returns "" when the trace
shows it, else what is missing, in words. A checker names the points its exercise
needs in its race case (kernels.checks.races: `needs=`), which runs them on the trace
it made, after the races.
"""

import collections

import numpy as np

from kernels.trace.model import HOST, index_text

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


def work_shared(t):
    """The threads share each launch's writes: no element of a global array written by
    two threads or more between two grid barriers, beyond the odd one (a flag every
    thread may set). With the stride of one block, say, every block does all the work:
    the values come out right, every element written by one thread of each block."""
    for launch in t.launches:
        writers = collections.defaultdict(set)  # between two grid barriers: one phase
        for a in launch.accesses:
            if a.space == "global" and a.kind == "write":
                writers[(a.array, a.grid_epoch, a.index)].add((a.block, a.tid))
        for name, phase in sorted({(array, epoch) for array, epoch, _ in writers}):
            written = {ix: w for (array, epoch, ix), w in writers.items()
                       if (array, epoch) == (name, phase)}
            repeated = sorted(ix for ix, w in written.items() if len(w) > 1)
            if len(repeated) >= 2 and 2 * len(repeated) >= len(written):
                first = repeated[0]
                return (f"{launch.kernel} wrote {len(repeated)} of the {len(written)} "
                        f"elements of {name} it wrote from two threads or more "
                        f"({name}[{index_text(first)}] from {len(written[first])}): each "
                        "element should be computed once, by one thread, the work shared "
                        "over the grid (a grid-stride loop steps by cuda.gridsize(1), not "
                        "by the block's size)")
    return ""


def _narrow(launch, name, info, what):
    dtype = info["dtype"]
    where = {"shared": "a shared array", "local": "a thread's local array"
             }.get(info["space"], "an array")
    return (f"{launch.kernel} keeps {what} in {name}, {where} of {dtype}: it holds at most "
            f"{np.iinfo(dtype).max:,}, and the exercise's counts go further on larger "
            "inputs; keep counts in int32 or int64")


def wide_counts(t):
    """The counts the kernels keep are in 32 bits or more, in global, shared or a
    thread's local memory. One kept in 8 or 16 bits is right at the sizes a trace can
    run and wraps past 127, 255 or 32,767, a count a GPU case reaches. A count is an
    element a thread adds 1 to (it reads it, then writes back one more) up to 2 or more,
    not bytes staged from the input or a flag set from 0 to 1."""
    for launch in t.launches:
        for name, info in launch.arrays.items():
            if info.get("counted", 0) > 1:  # 0 to 1: a flag
                return _narrow(launch, name, info, "a count")
    return ""


def wide_results(t):
    """Integers the kernels write to global memory are kept in 32 bits or more where
    they go past 1: one kept in 16 bits (a count of sweeps stored at the end) is right
    at the sizes a trace can run and wraps past 32,767, which a GPU case can reach."""
    for launch in t.launches:
        for name, info in launch.arrays.items():
            largest = info.get("largest", 0)
            if largest > 1 and launch.of(name, ("write", "atomic")):
                return _narrow(launch, name, info, f"a result that reached {largest:,}")
    return ""


POINTS = {f.__name__: f for f in (shared_tile, shared_counters, one_cooperative_launch,
                                  on_the_given_stream, work_shared, wide_counts,
                                  wide_results)}
