"""The race case: the answer run once at a small launch under the tracer.

On the simulator blocks run one after another and a lost update or a missing
barrier rarely shows in the results, so a checker that only compared results would
give full credit to an answer a GPU gets wrong. The checkers of exercises where
threads, blocks or streams can conflict therefore also trace the answer once
(kernels.trace; on a GPU machine in the tracer's own simulator process) and fail it
when two accesses conflict with nothing ordering them, naming them: which threads or
streams, which element, and what is missing between them. On the simulator an answer
that already failed is not traced (it earns nothing either way, and tracing is slow);
on a GPU it is, because there a race is often why it failed.
"""

import types

from kernels import SIMULATOR, trace
from kernels.checks import core
from kernels.trace import remote

__all__ = []  # used by the checkers, not called by readers
TIME_LIMIT_S = 120.0  # tracing is slower than running: every access is recorded
SHOWN = 2  # races described in full; the rest are counted


def host(report, fn, args, launch):
    """Add the race case for host function `fn` called as fn(*args) to `report`;
    `launch` says in words what the call runs (sizes, blocks)."""
    return _add(report, launch, trace.run, _travel(fn), *map(_travel, args))


def kernel(report, kernel, configuration, args, launch=None):
    """Add the race case for kernel[configuration](*args) to `report`."""
    blocks, threads = configuration[:2]
    launch = launch or f"[{blocks}, {threads}]"
    return _add(report, launch, trace.launch, kernel, configuration, *args)


def _travel(fn):
    """On a GPU machine the call runs in the tracer's process: a notebook's function
    travels as its source (kernels.trace.remote)."""
    if SIMULATOR or not isinstance(fn, types.FunctionType):
        return fn
    try:
        return remote.portable(fn)
    except trace.TraceError:
        return fn  # the tracer says why it cannot send it


def _add(report, launch, tracer, *args):
    if core.DEFERRED or report.timed_out:
        return report  # in the notebook the grader traces later; a hung kernel hangs
    if SIMULATOR and not report.passed:
        return report  # failed already; on a GPU the race may be why, so it is traced
    description = f"no race between threads, blocks or streams, traced at {launch}"
    try:
        t = core.call_with_time_limit(tracer, *args, seconds=TIME_LIMIT_S)
    except core.TimeLimitExceeded as err:
        report.cases.insert(0, core.Case(description, False,
                                         f"under the tracer your code {err}"))
        return report
    except Exception as err:  # the tracer cannot run it: the other cases say the rest
        report.cases.append(core.Case(
            f"{description}: not traced ({type(err).__name__}: {_first_line(err)})",
            True, ""))
        return report
    found = [r.describe() for r in trace.races(t)]
    found += [r.describe() for r in trace.stream_races(t)]
    if not found:
        report.cases.append(core.Case(description, True, ""))
        return report
    more = len(found) - SHOWN
    detail = ("the tracer ran your code on the simulator and found "
              + ("a race" if len(found) == 1 else f"{len(found)} races") + ": "
              + "; ".join(found[:SHOWN])
              + (f"; and {more} more like {'it' if more == 1 else 'them'}" if more > 0 else "")
              + ". A GPU runs these accesses in any order, so the result can change "
              "from run to run")
    report.cases.insert(0, core.Case(description, False, detail))
    return report


def _first_line(err):
    return (str(err).splitlines() or [""])[0]
