"""The race case: the answer run once at a small launch under the tracer.

On the simulator blocks run one after another and a lost update or a missing
barrier rarely shows in the results, so a checker that only compared results would
give full credit to an answer a GPU gets wrong. The checkers of exercises where
threads, blocks or streams can conflict therefore also trace the answer once
(kernels.trace; on a GPU machine in the tracer's own simulator process) and fail it
when two accesses conflict with nothing ordering them, naming them: which threads or
streams, which element, and what is missing between them; then the first race is
drawn in plain text (kernels.trace.diagrams), for the notebook, the grader's
feedback and Gradescope alike. The trace is recorded beside the answer
(kernels.checks.steps.traced) and comes back as plain data (kernels.trace.wire): every
finding, and every verdict, is made here, where under the grader no code of the
student's runs. On the simulator the race case runs first, and a race
ends the check: the other cases would pass there whatever a GPU gives. On a GPU it
runs last, after the cases a race may have made fail.
"""

import collections
import functools

import numpy as np

from kernels import trace
from kernels.checks import core, points, steps
from kernels.harness import check
from kernels.trace import diagrams, wire

__all__ = []  # used by the checkers, not called by readers
SHOWN = 2  # races described in full; the rest are counted; the first is drawn too
INDENT = " " * 8  # a detail's lines in a checker's report (kernels.checks.core.Report)


PREFIX = "the tracer ran your code on the simulator and found"


def two_rounds(rng, threads):
    """A race case's size, drawn: every thread of a grid of `threads` threads (or fewer)
    runs two grid-stride rounds, some a third, so that a race between rounds (no barrier
    before the next round overwrites a shared tile) shows; 32 does not divide it. Past
    two rounds by a quarter of the grid at most: tracing costs about as much per element."""
    return core.drawn_size(rng, 2 * threads + 1, 2 * threads + threads // 4)


def host(fn, args, launch, via=None, needs=()):
    """The race case for host function `fn` called as fn(*args), for run_cases(race=):
    a function that traces the call, beside `fn`, and returns its Case. `launch` says in
    words what the call runs (sizes, blocks); with `via` (an answer step), the call
    traced is via(fn, *args). `needs`: the names of the exercise's points the trace
    must show (kernels.checks.points)."""
    data = next((a for a in args if isinstance(a, np.ndarray)), None)
    return functools.partial(_host_case, fn, launch, args, via and via.__name__,
                             0 if data is None else data.nbytes, tuple(needs))


def _host_case(fn, launch, args, via, input_bytes, needs):
    outcome = core.answer_side(fn, steps.traced_call, args, via)
    return _case(launch, outcome, input_bytes=input_bytes, needs=needs)


def kernel(kernel, configuration, args, launch=None, shared=None, needs=(), expected=None,
           output=None, rtol=None, atol=None):
    """The race case for kernel[configuration](*args), for run_cases(race=). With
    `shared` (the position of the output among args), the case also fails unless the
    threads share the writes of that output (kernels.checks.races.unshared); `needs` as
    for `host`. With `expected`, the traced launch's output (argument number `output`)
    must also equal it, within rtol and atol as kernels.harness.check takes them: the
    traced launch may be one no value case can run (several blocks of a cooperative
    launch, on the simulator). Only the inputs travel to the answer's side; the trace
    and the output come back, and both are judged here."""
    blocks, threads = configuration[:2]
    launch = launch or f"[{blocks}, {threads}]"
    if shared is not None:  # its position among the array arguments, as the trace names them
        shared = [i for i, a in enumerate(args)
                  if isinstance(a, np.ndarray) and a.ndim > 0].index(shared)
    return functools.partial(_kernel_case, kernel, configuration, args, launch, shared,
                             tuple(needs), expected, output, rtol, atol)


def _kernel_case(kernel, configuration, args, launch, shared, needs, expected, output,
                 rtol, atol):
    """The race case of `kernel`; with `expected`, failed also where the traced launch's
    output (None where the tracer ran in a process of its own) differs from it."""
    if expected is None:
        outcome = core.answer_side(kernel, steps.traced_launch, configuration, args)
        return _case(launch, outcome, shared=shared, needs=needs)
    result = core.answer_side(kernel, steps.traced_launch, configuration, args, output)
    if not (isinstance(result, tuple) and len(result) == 2):
        result = (result, None)  # not of the step's form: _case says so
    outcome, got = result
    case = _case(launch, outcome, shared=shared, needs=needs)
    if not case.passed or got is None:
        return case
    try:
        check(got, expected, name="your result", rtol=rtol, atol=atol)
    except Exception as err:  # MismatchError, or an output that is no array
        # not always shown: wrong values end no check (the value cases run, and the
        # tracer's hint explains the first of them that fails: kernels.checks.hints)
        return core.Case(f"the values are right, traced at {launch}", False,
                         f"at {launch} the values are wrong: "
                         + str(err).replace("\n", "\n" + INDENT))
    return case


def decoded(outcome):
    """The Trace an answer step's outcome (kernels.checks.steps.traced) holds; or
    (what stopped it, its words) where it holds none, a malformed trace among them:
    ("malformed", why)."""
    if isinstance(outcome, tuple) and len(outcome) == 2 and outcome[0] == "trace":
        try:
            return wire.decode(outcome[1])
        except wire.WireError as err:
            return "malformed", str(err)
    if isinstance(outcome, tuple) and len(outcome) == 3 and outcome[0] == "failed" and \
            all(isinstance(v, str) for v in outcome[1:]):
        return outcome[1:]
    return "malformed", "what came back from your code's process is not a trace"


def _case(launch, outcome, *, input_bytes=0, shared=None, needs=()):
    """The race case (a core.Case) of the trace in `outcome` (kernels.checks.steps.
    traced), judged here. With `input_bytes`, the traced kernels must also have read at
    least that many distinct bytes of device memory: the first input's worth, so an
    answer whose kernels never read the data (an empty kernel, and the result computed
    on the host) fails. Every outcome without a trace fails (fail closed); the ones
    the student's code did not cause are flagged for the instructor (grader_limit)."""
    description = f"no race between threads, blocks or streams, traced at {launch}"
    t = decoded(outcome)
    if isinstance(t, tuple):
        kind, words = t
        if kind == "time":
            return core.Case(description, False, f"under the tracer your code {words}", True,
                             "", True)
        if kind == "not a kernel":  # the checker's complaint, not the answer's error
            return core.Case(description, False, words, True)
        if kind == "raised":
            return core.Case(description, False, f"under the tracer your code raised {words}",
                             True)
        if kind == "ended":  # as an answer process's end: the judge flags a kill
            return core.Case(description, False, f"{words} before its trace was written (a "
                             "sys.exit or os._exit in your code ends it so, as does a crash "
                             "or a limit of the grader's machine); so the grader cannot tell "
                             "whether it races, and this case fails", True)
        if kind == "nothing":
            return core.Case(description, False, "no kernel of yours was launched under "
                             "the tracer: the answer must do its work in kernels on the "
                             "device")
        if kind == "lock":  # the likely cause, in the answer's words
            return core.Case(description, False, f"the tracer could not finish: {words}. So "
                             "the grader cannot tell whether it races; this case fails, and "
                             "your instructor is told to look", True,
                             "the race case could not run (a lock that never became free)")
        why = words if kind in ("tracer", "too large", "malformed") else f"{kind}: {words}"
        return core.Case(description, False,
                         f"the tracer could not run your code ({why}), so the grader cannot "
                         "tell whether it races; this case fails, and your instructor is "
                         "told to look", True, f"the race case could not run ({why})")
    return core.Case(*_judged(t, launch, description, input_bytes, shared, needs))


def _judged(t, launch, description, input_bytes, shared, needs):
    """(description, passed, detail, always shown) of the race case of trace `t`."""
    found = trace.races(t) + trace.stream_races(t)
    apart = trace.barriers(t)
    if apart:  # the threads' order past such a barrier is not a GPU's: races after it too
        more = f" (and {len(apart) - 1} more like it)" if len(apart) > 1 else ""
        return (description, False, f"{PREFIX} threads that do not meet at one barrier: "
                f"{apart[0]}{more}. Every thread of a block must reach every "
                "cuda.syncthreads(): put it where no branch, and no return, skips it. On a "
                "GPU this is undefined: it may hang, or let threads through early", True)
    if not found:
        alone = unshared(t, shared) if shared is not None else ""
        if alone:
            return (f"the threads share the work, traced at {launch}", False, alone, True)
        missing = next(filter(None, (points.POINTS[name](t) for name in needs)), "")
        if missing:
            return (f"your code does what the exercise asks, traced at {launch}", False,
                    missing, True)
        read = _bytes_read(t)
        if read >= input_bytes:
            return description, True, "", False
        return (f"your kernels read the input, traced at {launch}", False,
                f"the tracer saw your kernels read {read:,} bytes of device memory, fewer "
                f"than the input's {input_bytes:,}: the answer must be computed by kernels "
                "on the device (a result computed on the host does not count, even after "
                "a kernel ran)", True)
    more = len(found) - SHOWN
    detail = (f"{PREFIX} " + ("a race" if len(found) == 1 else f"{len(found)} races") + ": "
              + "; ".join(r.describe() for r in found[:SHOWN])
              + (f"; and {more} more like {'it' if more == 1 else 'them'}" if more > 0 else "")
              + ". A GPU runs these accesses in any order, so the result can change "
              "from run to run")
    picture = diagrams.text(t, found[0])  # lines of diagrams.WIDTH, indented as the detail
    return description, False, detail + "".join(
        f"\n{INDENT}{line}" for line in picture.splitlines()), True


def unshared(t, position):
    """Why the threads did not share the writes of array argument number `position` of
    the traced launch (one thread wrote far more than its share), or ""."""
    launch = t.launch()
    arrays = [n for n, a in launch.arrays.items() if a["space"] == "global"]
    if position >= len(arrays):  # a kernel of fewer arguments: the cases say so
        return ""
    name = arrays[position]
    per_thread = collections.Counter(
        (a.block, a.thread) for a in launch.of(name, ("write", "atomic")))
    threads = int(np.prod(launch.grid)) * launch.threads_per_block
    total = sum(per_thread.values())
    share = -(-total // threads)  # each thread's share, rounded up
    most = max(per_thread.values(), default=0)
    if threads < 2 or most <= 2 * share + 1:
        return ""
    busiest, _ = per_thread.most_common(1)[0]
    who = next(a for a in launch.of(name, ("write", "atomic"))
               if (a.block, a.thread) == busiest).who()
    return (f"{who} made {most} of the {total} writes to {name}, with {threads} threads "
            f"launched (a share is about {share}): the work must be spread over the grid, "
            "each thread taking every gridsize-th element, as a grid-stride loop does")


def _bytes_read(t):
    """Bytes of global memory the traced kernels read: distinct within each launch,
    summed over launches (a buffer reused for the next chunk holds new data)."""
    total = 0
    for op in t.operations:
        if op.what.startswith("kernel "):
            end = None
            for start, stop in sorted(op.reads):
                if end is None or start >= end:
                    total, end = total + stop - start, stop
                elif stop > end:
                    total, end = total + stop - end, stop
    return total
