"""The machinery every checker shares: cases, repeats, a time limit, a plain report."""

import dataclasses
import threading

from kernels import SIMULATOR
from kernels.harness import MismatchError, check

TIME_LIMIT_S = 60.0 if SIMULATOR else 20.0
REPEATS = 1 if SIMULATOR else 5  # blocks run one at a time on the simulator: no races
SHOW_FAILURES = 3  # details of the first few failures; the rest are listed by input


class TimeLimitExceeded(RuntimeError):
    pass


def call_with_time_limit(fn, *args, seconds=TIME_LIMIT_S):
    """Run fn(*args) in a worker thread; raise TimeLimitExceeded if it does not return.

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


@dataclasses.dataclass
class Case:
    description: str
    passed: bool
    detail: str


@dataclasses.dataclass
class Report:
    exercise: str
    cases: list

    @property
    def passed(self):
        return bool(self.cases) and all(c.passed for c in self.cases)

    def __str__(self):
        n_ok = sum(c.passed for c in self.cases)
        head = (f"{self.exercise}: all {n_ok} checks passed." if self.passed else
                f"{self.exercise}: {len(self.cases) - n_ok} of {len(self.cases)} checks failed.")
        lines = [head]
        shown = 0
        for c in self.cases:
            detail = ""
            if not c.passed and shown < SHOW_FAILURES:
                detail, shown = f"\n        {c.detail}", shown + 1
            lines.append(f"  {'PASS' if c.passed else 'FAIL'}  {c.description}{detail}")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle):
        printer.text(str(self))


def run_cases(exercise, cases, run, *, rtol=None, atol=None, repeats=REPEATS):
    """Check `run(inputs)` against each case's expected output.

    `cases` is a list of (description, inputs, expected). Every case runs `repeats`
    times under the time limit; the first failure of a case is reported."""
    results = []
    for description, inputs, expected in cases:
        detail, passed = "", True
        for attempt in range(repeats):
            try:
                got = call_with_time_limit(run, inputs)
                check(got, expected, name="your result", rtol=rtol, atol=atol)
            except TimeLimitExceeded as err:
                passed, detail = False, f"your code {err}"
            except MismatchError as err:
                passed, detail = False, str(err).replace("\n", "\n        ")
                if repeats > 1:
                    detail = f"run {attempt + 1} of {repeats}: {detail}"
            except Exception as err:  # the reader's code raised: say what and where
                passed, detail = False, f"your code raised {type(err).__name__}: {err}"
            if not passed:
                break
        results.append(Case(description, passed, detail))
        if detail.startswith("your code did not finish"):
            break  # the GPU may be hung; further cases would hang too
    return Report(exercise, results)
