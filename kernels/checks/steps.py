"""The answer side of every checker: the steps that run beside the student's function.

A checker is written in two halves (kernels.checks.core). This module is the one
that runs the student's code: each step here takes the student's function (the
subject) and plain arguments (a case's inputs, a launch's configuration) and returns
plain data (the outputs, a trace as kernels.trace.wire makes it, an error's kind and
words). Under the grader it is the only part of the checkers that the answer process
(kernels.grading.answers) runs, and its copy of kernels.checks holds only this, the
launch record and the exercise table: no case, reference, tolerance or verdict is
there, so nothing the student's code finds in its process can tell it what the judge
expects. A race case's trace is recorded here and analysed in the judge
(kernels.checks.races).

Numba (and a topic module that needs it) is imported in the steps that use it, not at
the top: the judge imports this module for the time limits and the steps' names, and
runs no step, so a chapter whose checkers need no Numba spares the judge its import.
"""

import threading
import types

import numpy as np

from kernels import SIMULATOR, trace
from kernels.checks import launches, swaps
from kernels.harness import MismatchError
from kernels.trace import remote, wire

__all__ = []  # run by the checkers and the grader, not called by readers
STEPS = {}  # "name" -> step: what an answer process may be asked to run
# A trace's time limit (tracing is slower than running: every access is recorded), and
# a failing case's hint's (kernels.checks.hints); the grader lowers both
TRACE_TIME_LIMIT_S = 120.0
HINT_TIME_LIMIT_S = 30.0
GUARD = 64  # poisoned elements on each side of an output that a checker gives a kernel
NEW_STREAM = "new stream"  # a streams case's setting: a stream made beside the answer


def answer_step(step):
    """Mark step(subject, *args) as one that runs beside the student's function, given
    plain arguments; it returns plain data (arrays, numbers, tuples)."""
    STEPS[step.__name__] = step
    return step


class TimeLimitExceeded(RuntimeError):
    pass


def call_with_time_limit(fn, *args, seconds):
    """Run fn(*args) in a worker thread; raise TimeLimitExceeded if it does not return
    within `seconds`.

    A deadlocked kernel cannot be stopped from Python: the report says so, and that
    the runtime must be restarted, instead of freezing the notebook."""
    result = {}

    def target():
        try:
            result["value"] = fn(*args)
        except BaseException as err:  # reported, not lost in the thread
            result["error"] = err

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeLimitExceeded(
            f"did not finish within {seconds:.0f} s. A kernel that never returns is "
            "usually a deadlock (a lock that is never released, or threads waiting at a "
            "barrier some threads never reach). It may still be running: restart the "
            "runtime before going on.")
    if "error" in result:
        raise result["error"]
    return result["value"]


@answer_step
def call(fn, *args):
    """fn(*args): a host function's answer, as it returned it."""
    return fn(*args)


@answer_step
def unlaunched(subject, name, *args):
    """STEPS[name](subject, *args) with every launch of a kernel but Numba's own skipped
    (launches.skipped): what an answer returns when its kernels do nothing."""
    with launches.skipped():
        return STEPS[name](subject, *args)


@answer_step
def swapped(subject, name, alternates, *args):
    """(elements swapped, elements a kernel handed back unchanged (swaps.swapped.echoed:
    counted, and in all), the most threads of a launch, STEPS[name](subject, *args)),
    with every part of `args`' arrays found in a launched kernel's arrays swapped for
    the same part of `alternates`' (one per argument, or None): what an answer returns
    when its kernels read other data than its host holds (kernels.checks.swaps)."""
    with swaps.swapped(args, alternates) as swap:
        result = STEPS[name](subject, *args)
    return swap.found, *swap.echoed(), swap.threads, result


# ----------------------------------------------------------------- kernels' arrays

class DeviceOutput:
    """An array in device memory, for a kernel to write, with GUARD poisoned elements on
    each side: a kernel that writes past either end is caught, on a GPU too, where no
    bounds check stops it. Pass `.array` to the kernel; `read(name)` copies it back."""

    def __init__(self, values):
        from numba import cuda

        values = np.ascontiguousarray(values)
        self.shape = values.shape
        kind = values.dtype.kind
        poison = np.full(GUARD, -7.5e33 if kind == "f" else -123_456 if kind == "i" else 0xA5,
                         values.dtype)
        self.band = poison.view(np.uint8)
        self.buffer = cuda.to_device(np.concatenate([poison, values.ravel(), poison]))
        self.array = self.buffer[GUARD:GUARD + values.size].reshape(values.shape)

    def read(self, name):
        flat = self.buffer.copy_to_host()
        for side, band in (("before the start", flat[:GUARD]), ("past the end", flat[-GUARD:])):
            changed = int((band.view(np.uint8) != self.band).reshape(GUARD, -1).any(1).sum())
            if changed:
                raise MismatchError(f"your kernel wrote {side} of `{name}`: {changed} of the "
                                    f"{GUARD} elements there changed (a missing bounds check?)")
        return flat[GUARD:-GUARD].reshape(self.shape)


def guarded_input(values):
    """`values` in device memory for a kernel to read: a view of a larger array whose
    GUARD elements on each side hold a value that changes any result it enters (NaN; an
    integer type's largest), so that a kernel reading past either end gets a wrong result
    on a GPU too, where no bounds check stops it (the simulator's view raises IndexError,
    as its array would)."""
    from numba import cuda

    values = np.ascontiguousarray(values)
    kind = values.dtype.kind
    poison = np.full(GUARD, np.nan if kind in "fc" else np.iinfo(values.dtype).max
                     if kind in "iu" else 1, values.dtype)
    buffer = cuda.to_device(np.concatenate([poison, values.ravel(), poison]))
    return buffer[GUARD:GUARD + values.size].reshape(values.shape)


@answer_step
def launch_guarded(kernel, configuration, args, output, output_name):
    """kernel[configuration](*args) with the arrays in device memory, argument number
    `output` inside a DeviceOutput, the others inside guard bands (guarded_input); what
    the kernel wrote comes back checked for strays."""
    # said plainly, not as whatever the arrays' types make a host function raise
    launches.require_kernel(kernel, "this exercise")
    guarded = DeviceOutput(args[output])
    kernel[configuration](*[
        guarded.array if i == output else
        guarded_input(arg) if isinstance(arg, np.ndarray) else arg
        for i, arg in enumerate(args)])
    return guarded.read(output_name)


# ------------------------------------------------------------ cooperative launches

@answer_step
def cooperative_limit(kernel, args, threads, checker):
    """The most blocks of `threads` a cooperative launch of `kernel` may have."""
    from kernels import cooperative

    launches.require_kernel(kernel, checker)  # the grid's limit is asked of the kernel
    return int(cooperative.max_cooperative_blocks(kernel, args, threads))


@answer_step
def rotated(kernel, blocks, threads, m):
    """m after kernel[blocks, threads](m) on the device, inside a DeviceOutput."""
    work = DeviceOutput(m)
    kernel[blocks, threads](work.array)
    return work.read("m")


@answer_step
def normalized(kernel, blocks, threads, x):
    """out after kernel[blocks, threads](x, out, peak) on the device, peak = [-inf]."""
    from numba import cuda

    out = DeviceOutput(np.full_like(x, np.nan))
    kernel[blocks, threads](guarded_input(x), out.array,
                            cuda.to_device(np.full(1, -np.inf, np.float32)))
    return out.read("out")


# ----------------------------------------------------------------------- streams

def pinned(values):
    """A pinned copy: copies from a stream into it, or out of it, are asynchronous (on
    the simulator too, as the tracer models them: kernels.simulator_concurrency.page_locked)."""
    from numba import cuda

    host = cuda.pinned_array(values.shape, values.dtype)
    host[:] = values
    return host


def _given_stream():
    """A new stream for the answer; under the tracer, its stream 1 (on_the_given_stream)."""
    from numba import cuda

    stream = cuda.stream()
    if SIMULATOR:
        from kernels.trace import hooks

        hooks.given(stream)
    return stream


@answer_step
def added(fn, a, b, *setting):
    """out after fn(a, b, out, *setting) returned, read at once: pinned copies of a and
    b, out pinned and poisoned. A setting NEW_STREAM is a stream made here (where the
    tracer runs it)."""
    out = pinned(np.empty(a.size, np.int32))
    out[:] = -1
    setting = [_given_stream() if s == NEW_STREAM else s for s in setting]
    fn(pinned(a), pinned(b), out, *setting)
    return np.array(out)


# ------------------------------------------------------------------------- traces

def traced(tracer, *args, seconds=None):
    """("trace", the trace of tracer(*args), as kernels.trace.wire sends it), or
    ("failed", what stopped it, its words): "time" (past `seconds`, default
    TRACE_TIME_LIMIT_S), "nothing" (no kernel launched), "lock" (a lock that never came
    free), "too large", "ended" (the tracer's own process ended: kernels.trace.remote),
    "tracer" (it cannot trace this), "not a kernel", "raised" (the answer's own error).
    The judge decides what each means (kernels.checks.races)."""
    try:
        t = call_with_time_limit(tracer, *args, seconds=seconds or TRACE_TIME_LIMIT_S)
        return "trace", wire.encode(t)
    except TimeLimitExceeded as err:
        return "failed", "time", str(err)
    except trace.NothingLaunched:
        return "failed", "nothing", ""
    except trace.LockNeverFree as err:
        return "failed", "lock", first_line(err)
    except trace.TraceTooLarge as err:
        return "failed", "too large", f"{type(err).__name__}: {first_line(err)}"
    except trace.ProcessEnded as err:
        return "failed", "ended", first_line(err)
    except trace.TraceError as err:
        return "failed", "tracer", f"{type(err).__name__}: {first_line(err)}"
    except launches.NotAKernel as err:
        return "failed", "not a kernel", str(err)
    except Exception as err:  # the answer's own error, under the tracer
        return "failed", "raised", f"{type(err).__name__}: {first_line(err)}"


def first_line(err):
    return (str(err).splitlines() or [""])[0]


@answer_step
def traced_call(fn, args, via=None):
    """traced() of fn(*args), or of STEPS[via](fn, *args)."""
    call_ = (STEPS[via], _travel(fn)) if via else (_travel(fn),)
    return traced(trace.run, *call_, *map(_travel, args))


@answer_step
def traced_launch(kernel, configuration, args, output=None):
    """traced() of kernel[configuration](*args); with `output` (a position among args),
    (that, what the launch left in that argument), the latter None where the trace ran
    in a process of its own (on a GPU machine)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    outcome = traced(_launch_kernel, kernel, configuration, *args)
    if output is None:
        return outcome
    # the simulator copies a launch's host arrays back when it ends
    return outcome, args[output] if trace.LOCAL else None


@answer_step
def traced_hint(kernel, configuration, args):
    """traced() of kernel[configuration](*args), for a failing case's hint, within
    HINT_TIME_LIMIT_S."""
    return traced(_launch_kernel, kernel, configuration, *args, seconds=HINT_TIME_LIMIT_S)


def _launch_kernel(kernel, configuration, *args):
    launches.require_kernel(kernel, "this exercise")  # said plainly, before tracing
    return trace.launch(kernel, configuration, *args)


def _travel(fn):
    """On a GPU machine the call runs in the tracer's process: a notebook's function
    travels as its code (kernels.trace.remote)."""
    if trace.LOCAL or not isinstance(fn, types.FunctionType):
        return fn
    try:
        return remote.portable(fn)
    except trace.TraceError:
        return fn  # the tracer says why it cannot send it
