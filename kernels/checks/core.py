"""The machinery every checker shares: cases, repeats, a time limit, a plain report.

Every case must also launch the kernels its exercise demands (the registry's launch
rule, counted by kernels.checks.launches): an answer computed on the host fails.

A checker is written in two halves, so that the grader can keep them in separate
processes. The half that decides (the cases, drawn from `rng`; the references; the
tolerances; the comparison in `run_cases`) never calls the student's function itself:
every step that does is one of kernels.checks.steps, called as
``answer_side(subject, step, *plain_arguments)``. In a reader's notebook the subject is
their own function and the step runs right there. Under the grader the subject is an
`Elsewhere`: kernels.grading.judge runs the deciding half, and each step travels as
its name and plain arguments (arrays and numbers, kernels.grading.channel) to
kernels.grading.answers, the only process where the student's function runs for the
judge, which has kernels.checks.steps and none of the deciding half, and sends back the
step's plain result. The student's code therefore meets a case's inputs and nothing
else of the checker.
"""

import dataclasses
import os

import numpy as np

from kernels import SIMULATOR
from kernels.checks import launches, provenance, registry, steps
from kernels.checks.steps import (TimeLimitExceeded, call, call_with_time_limit,
                                  launch_guarded)
from kernels.harness import MismatchError, check

TIME_LIMIT_S = 60.0 if SIMULATOR else 20.0  # read at each call: the grader may lower it
# On a GPU a checker's first case also waits for Numba to compile the answer's kernels
# (at their first launch): seconds, and far more on a grading machine whose every core
# compiles at once; a correct answer must not fail its first case for that. So the
# first case gets this much more (a deadlock there is reported that much later).
COMPILE_S = 0.0 if SIMULATOR else 60.0
REPEATS = 1 if SIMULATOR else 5  # blocks run one at a time on the simulator: no races
SHOW_FAILURES = 3  # details of the first few failures; the rest are listed by input
# With its kernels skipped a host function has little to do: one that runs this long
# waits for kernels that never ran (kernels.checks.provenance.unlaunched); a swapped run
# has three times as long
UNLAUNCHED_LIMIT_S = 10.0
# Set to "1" by the book build (book/_tools/checker_summary.py): the built pages show
# each report as one line; whoever runs the cell gets the full report.
SUMMARY_SETTING = "KERNELS_CHECK_SUMMARY"
# True while the grader runs a notebook's cells: checker calls in them return at once,
# because the grader checks every answer itself, in its judge (kernels.grading.judge).
DEFERRED = False
# None where a reader runs a checker: each checker's cases are the same on every run, to
# debug against. The grader's judge sets a secret of its own for each grading run, and
# every case is drawn from it (rng): no notebook can know them in advance.
SECRET = None


def rng(seed):
    """The random source of a checker's cases: from `seed` alone for a reader, from
    `seed` and the grading run's SECRET under the grader."""
    return np.random.default_rng(seed if SECRET is None else [SECRET, seed])


def drawn_size(rng, low, high, block=32):
    """A size of this run's own (the grading run's, under the grader) in [low, high],
    that `block` does not divide: a case no earlier report printed."""
    n = int(rng.integers(low, high))
    return n + 1 if n % block == 0 else n


def beyond_16_bits(rng, dtype=np.int32):
    """Random values, more than 2**16 of them, whose largest (one, repeated nowhere)
    lies past index 65,535: an answer that keeps an index in 16 bits gets it wrong, at a
    size the simulator can afford."""
    n = drawn_size(rng, 2**16 + 1_000, 2**16 + 9_000)
    x = (rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64) if dtype == np.int32 else
         rng.standard_normal(n)).astype(dtype)
    x[int(rng.integers(2**16, n))] = np.iinfo(np.int32).max if dtype == np.int32 else 9.5
    return x



class Elsewhere:
    """A student's function that lives in another process (the grader's stand-in,
    kernels.grading.stand_in): `run(name, args)` runs the named step beside it there."""

    def run(self, name, args):
        raise NotImplementedError


def answer_side(subject, step, *args):
    """step(subject, *args), beside the subject: here, or in the subject's process; while
    run_cases asks what the answer gives without its kernels, run as `unlaunched`; while
    it asks whether the result follows what the kernels read, run as `swapped`
    (kernels.checks.provenance)."""
    if provenance.WITHOUT_KERNELS.on:
        step, args = steps.unlaunched, (step.__name__, *args)
    elif provenance.SWAPPING.pairs is not None:
        step, args = steps.swapped, (step.__name__, provenance.SWAPPING.next(args), *args)
    if isinstance(subject, Elsewhere):
        result = subject.run(step.__name__, args)
    else:
        with launches.poisoned():
            result = step(subject, *args)
    if step is steps.swapped:
        *counts, result = result
        provenance.SWAPPING.add(*counts)
    return result


def calling(fn):
    """run(inputs) for run_cases: the student's host function called with the case's
    inputs (a tuple, or one value), beside it."""
    def run(inputs):
        return answer_side(fn, call, *(inputs if isinstance(inputs, tuple) else (inputs,)))
    return run


class launched_on_device:
    """A kernel checker's run(inputs), from its launch(inputs) -> (kernel, configuration,
    host arguments, position of the output): see launch_guarded. `given(inputs)` is the
    output as the kernel receives it, so run_cases can tell a case that a kernel doing
    nothing passes (an in-place reverse of one element).
    The tracer (kernels.checks.hints) replays the same launch with the host arrays."""

    def __init__(self, launch, output_name):
        self.launch, self.output_name = launch, output_name

    def __call__(self, inputs):
        kernel, configuration, args, output = self.launch(inputs)
        return answer_side(kernel, launch_guarded, configuration, args, output,
                           self.output_name)

    def given(self, inputs):
        _, _, args, output = self.launch(inputs)
        return args[output]


@dataclasses.dataclass
class Case:
    description: str
    passed: bool
    detail: str
    always_shown: bool = False  # a detail no other case gives (the tracer's race): never elided
    grader_limit: str = ""  # why the grader could not check it: the instructor is told
    hung: bool = False  # it was stopped at its time limit: the code may still be running
    # an answer that does nothing passes it too (the race case; a case whose expected
    # output is the output as the answer receives it): its pass alone is no progress
    trivial: bool = False


@dataclasses.dataclass
class Report:
    exercise: str
    cases: list
    timed_out: bool = False  # a call never returned: its kernel may still hold the device

    @property
    def hung(self):
        """A call or a trace never returned: the process that ran it is not clean."""
        return self.timed_out or any(c.hung for c in self.cases)

    @property
    def passed(self):
        return bool(self.cases) and all(c.passed for c in self.cases)

    @property
    def grader_limits(self):
        """What the grader could not check, case by case (a failed case, not a pass), for
        the instructor to look at: only where it decides the verdict. An answer that fails
        a case by its own fault scores 0 whatever the unchecked case would have shown (a
        kernel that does not compile for a GPU cannot be traced either)."""
        if any(not c.passed and not c.grader_limit for c in self.cases):
            return []
        return [c.grader_limit for c in self.cases if c.grader_limit]

    @property
    def started(self):
        """Whether a case passed that an answer doing nothing fails: the untouched
        starter of an exercise has not (it passes the race case, at most)."""
        return any(c.passed and not c.trivial for c in self.cases)

    def head(self, summary=False):
        """The report's first line: the verdict, with counts only where they mean
        something (a starter's passed race case is no progress)."""
        n_ok, n = sum(c.passed for c in self.cases), len(self.cases)
        if self.passed:
            return f"{self.exercise}: " + ("its one check passed." if n == 1 else
                                           f"all {n} checks passed.")
        if not self.started:
            return f"{self.exercise}: not solved yet."
        if summary:
            return f"{self.exercise}: not solved yet ({n_ok} of {n} checks pass)."
        return f"{self.exercise}: {n - n_ok} of {n} checks failed."

    def __str__(self):
        if os.environ.get(SUMMARY_SETTING) == "1":
            return self.head(summary=True) + (
                "" if self.passed else " Run this cell with your answer for the full report.")
        lines = [self.head()]
        shown = 0
        for c in self.cases:
            detail = ""
            if not c.passed and (c.always_shown or shown < SHOW_FAILURES):
                detail, shown = f"\n        {c.detail}", shown + (not c.always_shown)
            lines.append(f"  {'PASS' if c.passed else 'FAIL'}  {c.description}{detail}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle):
        printer.text(str(self))


def _no_launch(rule, before, after):
    """Why a case fails the exercise's launch rule, or "" if it does not."""
    made = after - before
    mine = made[launches.YOURS] + (made[launches.COURSE] if rule != launches.YOURS else 0)
    if rule is None or mine:
        return ""
    if made[launches.SOLUTION]:
        return ("it ran only kernels from kernels.solutions, the course's reference "
                "answers: they are not your work, so they do not count")
    if rule == launches.YOURS:
        return ("no kernel of yours was launched: the answer must run a @cuda.jit kernel "
                "that you wrote (a result computed on the host, or by the course's or "
                "Numba's own kernels, does not count)")
    return ("no kernel was launched: the answer must do its work on the device (a result "
            "computed on the host does not count)")


def _launch_rule(exercise):
    entry = registry.by_check_name(exercise)
    return entry.launch if entry is not None else None


def run_cases(exercise, cases, run, *, rtol=None, atol=None, repeats=REPEATS, race=None,
              provenance_cases=True):
    """Check `run(inputs)` against each case's expected output.

    `cases` is a list of (description, inputs, expected). Every case runs `repeats`
    times under the time limit and must make the launches the exercise's launch rule
    demands; the first failure of a case is reported. `race` (kernels.checks.races)
    makes the race case: on the simulator it runs first and a race ends the check
    (the cases would pass there whatever a GPU gives; wrong values under the tracer do
    not: the value cases run, and the race case is reported last); on a GPU it runs
    last. A host function that passes them all is run again as kernels.checks.provenance
    says (without its kernels, and with other data in its kernels' arrays), unless
    `provenance_cases` is False: a checker that calls this for each of several parts of
    one exercise asks for that once, on a part where the cases tell."""
    if DEFERRED:
        return Report(exercise, [Case("not run inside the notebook: the grader runs this "
                                      "check itself once the notebook has finished", True,
                                      "")])
    first = race() if race is not None and SIMULATOR else None  # None: no race case yet
    if first is not None and not first.passed and first.always_shown:  # a race, not values
        return Report(exercise, [first])
    rule = _launch_rule(exercise)
    given = getattr(run, "given", None)  # the output as a kernel receives it (launched_on_device)
    results, timed_out = [], False
    for description, inputs, expected in cases:
        detail, passed = "", True
        trivial = given is not None and _same(given(inputs), expected)
        for attempt in range(repeats):
            before = launches.counts()
            try:
                got = call_with_time_limit(run, inputs, seconds=TIME_LIMIT_S + (
                    COMPILE_S if not results and not attempt else 0))
                detail = _no_launch(rule, before, launches.counts())
                if detail:
                    passed = False
                else:
                    check(got, expected, name="your result", rtol=rtol, atol=atol)
            except TimeLimitExceeded as err:
                passed, detail, timed_out = False, f"your code {err}", True
            except MismatchError as err:
                passed, detail = False, str(err).replace("\n", "\n        ")
                if repeats > 1:
                    detail = f"run {attempt + 1} of {repeats}: {detail}"
            except launches.NotAKernel as err:  # the checker's own complaint, as it said it
                passed, detail = False, str(err)
            except Exception as err:  # the reader's code raised: say what and where
                passed, detail = False, f"your code raised {type(err).__name__}: {err}"
                if missing := _no_launch(rule, before, launches.counts()):
                    detail += f"; and {missing}"
            if not passed:
                break
        results.append(Case(description, passed, detail, trivial=trivial))
        if timed_out:
            break  # the GPU may be hung; further cases would hang too
    # A host function that passed: does it give a case's output with its kernels skipped?
    if provenance_cases and rule is not None and given is None and all(
            c.passed for c in results):
        seconds = min(TIME_LIMIT_S, UNLAUNCHED_LIMIT_S)
        results.append(Case(**provenance.unlaunched(run, cases, rtol, atol, seconds)))
        host = registry.by_check_name(exercise)  # a kernel exercise's host is the checker's
        if results[-1].passed and host is not None and not host.kernel and (
                swap := provenance.swapped(run, cases, rtol, atol, 3 * seconds, rng(7919))):
            results.append(Case(**swap))
    if race is not None and not SIMULATOR and not timed_out:
        first = race()
    if first is not None:  # a kernel that writes nothing races with nothing either
        results.append(dataclasses.replace(first, trivial=True))
    return Report(exercise, results, timed_out)


def _same(given, expected):
    """Whether an output left as given is the expected one (NaN equal to NaN)."""
    given, expected = np.asarray(given), np.asarray(expected)
    return given.shape == expected.shape and np.array_equal(
        given, expected, equal_nan=given.dtype.kind in "fc" and expected.dtype.kind in "fc")
