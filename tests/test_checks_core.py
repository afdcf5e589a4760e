"""The machinery checkers share: the guard band around outputs, the time limit, and the
deferred checks of a notebook being graded."""

import threading
import time

import numpy as np
import pytest

from numba import cuda

from kernels.checks import core, steps
from kernels.harness import MismatchError


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("where", [0, -1])
def test_a_write_past_either_end_of_an_output_is_caught(dtype, where):
    values = np.arange(12, dtype=dtype).reshape(3, 4)
    out = steps.DeviceOutput(values)
    assert out.array.shape == (3, 4)
    assert (out.read("out") == values).all()  # untouched: read back as it was
    band = out.buffer.copy_to_host()
    band[where] = 3  # what a kernel without a bounds check does, on a GPU
    out.buffer.copy_to_device(band)
    side = "before the start" if where == 0 else "past the end"
    with pytest.raises(MismatchError, match=f"wrote {side} of `out`: 1 of the 64"):
        out.read("out")


def test_the_time_limit_is_read_at_each_call(monkeypatch):
    monkeypatch.setattr(core, "TIME_LIMIT_S", 0.2)
    monkeypatch.setattr(core, "COMPILE_S", 0.0)  # on a GPU, a first case's allowance
    start = time.monotonic()
    report = core.run_cases("saxpy", [("n=1", 60, 0)], time.sleep)  # far longer, however loaded
    assert "did not finish within 0 s" in report.cases[0].detail and report.timed_out
    assert time.monotonic() - start < 30
    with pytest.raises(steps.TimeLimitExceeded, match="did not finish within 0 s"):
        steps.call_with_time_limit(time.sleep, 60, seconds=0.2)
    assert steps.call_with_time_limit(lambda: 7, seconds=5) == 7


def test_deferred_checks_run_nothing(monkeypatch):
    monkeypatch.setattr(core, "DEFERRED", True)
    calls = []
    report = core.run_cases("saxpy", [("a case", 1, 1)], calls.append)
    assert calls == [] and "the grader runs this check itself" in str(report)


def test_a_timed_out_case_stops_the_report(monkeypatch):
    monkeypatch.setattr(core, "TIME_LIMIT_S", 0.1)
    monkeypatch.setattr(core, "COMPILE_S", 0.0)  # (a GPU's first case has more)
    report = core.run_cases("sleepy", [("slow", 60, 1), ("never run", 1, 1)],
                            lambda seconds: time.sleep(seconds))
    assert report.timed_out and not report.passed and len(report.cases) == 1


def test_only_a_checker_s_first_case_has_time_to_compile(monkeypatch):
    """On a GPU the first case also compiles the answer's kernels: it gets COMPILE_S
    more; every later case has the plain limit."""
    monkeypatch.setattr(core, "TIME_LIMIT_S", 0.3)
    monkeypatch.setattr(core, "COMPILE_S", 30.0)
    first = [("compiles first", 1.0, np.float64(1.0)), ("then quick", 0.0, np.float64(0.0))]

    def run(seconds):
        time.sleep(seconds)
        return np.float64(seconds)

    assert core.run_cases("sleepy", first, run, repeats=1).passed
    assert not core.run_cases("sleepy", first, run, repeats=2).passed  # it compiled once
    report = core.run_cases("sleepy", [("quick", 0.0, np.float64(0.0)),
                                       ("slow later", 1.0, np.float64(1.0))], run, repeats=1)
    assert report.timed_out and [c.passed for c in report.cases] == [True, False]


def test_a_kernel_checker_says_when_it_is_given_no_kernel():
    from kernels import checks

    class HostKernel:  # kernel[blocks, threads](...) syntax, NumPy inside
        def __getitem__(self, launch):
            return lambda a, x, y, out: out.__setitem__(slice(None), a * x + y)

    def host_function(a, x, y, out):
        out[:] = a * x + y

    for answer, kind in ((HostKernel(), "HostKernel"), (host_function, "function")):
        report = checks.saxpy(answer)
        assert not report.passed
        assert f"got {kind}, which is not a CUDA kernel" in str(report), str(report)


def test_the_book_build_shows_a_report_in_one_line(monkeypatch):
    cases = [core.Case("n=1", True, ""), core.Case("n=37", False, "your result: 3 of 37 "
                                                   "values differ\n  at 5: got 0")]
    failing, passing = core.Report("saxpy", cases), core.Report("saxpy", cases[:1])
    monkeypatch.delenv(core.SUMMARY_SETTING, raising=False)
    full = str(failing)  # the reader running the cell: every case, failures explained
    assert "FAIL  n=37" in full and "3 of 37 values differ" in full
    monkeypatch.setenv(core.SUMMARY_SETTING, "1")  # as book/_tools/checker_summary.py sets
    line = str(failing)
    assert "\n" not in line and "not solved yet" in line and "1 of 2 checks pass" in line
    assert str(passing) == "saxpy: its one check passed."
    assert str(core.Report("saxpy", cases[:1] * 3)) == "saxpy: all 3 checks passed."


@steps.answer_step
def _left_as_given(kernel, configuration, args, output, output_name):
    return args[output]  # what a kernel that writes nothing gives back


def test_an_untouched_starter_is_not_solved_yet_with_no_count(monkeypatch):
    """A starter passes what an answer that does nothing passes: the race case, and a
    case whose expected output is the output as given (reversing one element in place).
    Its report says "not solved yet", never "1 of 7 checks pass"; a partial answer's
    report counts."""
    monkeypatch.setattr(core, "launch_guarded", _left_as_given)

    def launch(inputs):
        return "a kernel", (1, 1), (np.array(inputs, np.int32),), 0

    run = core.launched_on_device(launch, "x")
    cases = [("n=1", [5], np.array([5])), ("n=2", [1, 2], np.array([2, 1]))]
    race = lambda: core.Case("no race between threads", True, "")  # noqa: E731
    report = core.run_cases("reverse", cases, run, race=race)
    assert [(c.passed, c.trivial) for c in report.cases] == [(True, True), (False, False),
                                                              (True, True)]
    assert not report.started and str(report).startswith("reverse: not solved yet.\n")
    monkeypatch.setenv(core.SUMMARY_SETTING, "1")
    assert str(report) == ("reverse: not solved yet. Run this cell with your answer for the "
                           "full report.")
    partial = core.Report("reverse", [core.Case("n=3", True, "")] + report.cases)
    assert partial.started and "(3 of 4 checks pass)" in str(partial)


def test_a_checker_s_complaint_is_not_an_error_of_the_answer():
    """Given no kernel, a kernel checker says so in its own words, not as "your code
    raised" (the grader's judge passes the complaint on as the same error)."""
    from kernels.checks import launches

    def launch(inputs):
        return (lambda: None), (1, 1), (np.zeros(3, np.float32),), 0

    report = core.run_cases("saxpy", [("n=3", 0, np.zeros(3))],
                            core.launched_on_device(launch, "out"))
    detail = report.cases[0].detail
    assert detail.startswith("this exercise needs a CUDA kernel") and "raised" not in detail
    with pytest.raises(launches.NotAKernel):
        launches.require_kernel(print, "saxpy")


def test_a_race_found_is_explained_even_after_other_failures():
    """On a GPU the race case runs after the others: its explanation, which no GPU run
    gives, is shown however many cases failed before it; other details stay capped."""
    failed = [core.Case(f"case {i}", False, f"detail {i}") for i in range(core.SHOW_FAILURES + 2)]
    race = core.Case("no race between threads", False, "the tracer found a race", True)
    text = str(core.Report("ex", failed + [race]))
    assert "the tracer found a race" in text
    assert f"detail {core.SHOW_FAILURES - 1}" in text and f"detail {core.SHOW_FAILURES}" not in text


def test_cases_are_the_reader_s_own_each_run_and_the_grader_s_are_secret(monkeypatch):
    """A reader gets the same cases on every run (to debug against); under the grader
    every case is drawn from the grading run's secret, so no notebook knows them."""
    first = core.rng(5).integers(0, 2**31, 8)
    np.testing.assert_array_equal(first, core.rng(5).integers(0, 2**31, 8))
    drawn = []
    for secret in (1, 2):
        monkeypatch.setattr(core, "SECRET", secret)
        drawn.append(core.rng(5).integers(0, 2**31, 8))
    assert not np.array_equal(drawn[0], first) and not np.array_equal(drawn[0], drawn[1])


def test_a_step_runs_beside_the_subject_here_or_elsewhere():
    """answer_side runs a step on a reader's own function here, and hands it, by name and
    with its plain arguments, to a subject that lives elsewhere (the grader's stand-in)."""
    asked = []

    class Remote(core.Elsewhere):
        def run(self, name, args):
            asked.append((name, args))
            return 42

    assert core.answer_side(lambda a, b: a + b, steps.call, 2, 3) == 5
    assert core.answer_side(Remote(), steps.call, 2, 3) == 42
    assert asked == [("call", (2, 3))]
    assert steps.STEPS["launch_guarded"] is steps.launch_guarded


@cuda.jit
def _partial_sums(x, out):  # a kernel that does real work, which the cheat then ignores
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])


def _doubled(x):
    d_out = cuda.to_device(np.zeros(1))
    _partial_sums[(x.size + 31) // 32, 32](cuda.to_device(x), d_out)
    return d_out.copy_to_host()[0] * 2.0


def test_a_result_that_does_not_come_from_the_kernels_fails(monkeypatch):
    """A host function's result must come from its kernels: run with its kernels skipped,
    it must be wrong. An answer whose kernel runs but whose result is NumPy's fails; one
    whose result its kernel computed passes, even when an earlier call of the same case
    left that result in memory (arrays made then are poisoned); and so does one that
    waits for its kernels, which never returns with them skipped."""
    monkeypatch.setattr(core, "_launch_rule", lambda exercise: core.launches.YOURS)
    rng = np.random.default_rng(3)
    cases = [(f"n={n}", rng.standard_normal(n), None) for n in (5, 33, 70)]
    cases = [(d, x, 2.0 * x.sum()) for d, x, _ in cases]

    def numpy_after_a_kernel(x):
        _doubled(x)  # the kernel ran, and read every element...
        return 2.0 * np.sum(x)  # ...but the result is the host's

    report = core.run_cases("doubled", cases, core.calling(numpy_after_a_kernel),
                            rtol=1e-9, atol=1e-12)
    assert not report.passed
    failed = [c for c in report.cases if not c.passed]
    assert [c.description for c in failed] == [
        "the result comes from your kernels (with them skipped, it is wrong)"]
    assert "computed on the host" in failed[0].detail
    for _ in range(2):  # the second run finds the first's results in freed memory
        report = core.run_cases("doubled", cases, core.calling(_doubled), rtol=1e-9,
                                atol=1e-12)
        assert report.passed and len(report.cases) == 4, str(report)

    done, waiting = threading.Event(), []

    def waits_for_its_kernel(x):
        waiting.append(threading.current_thread())
        d_out = cuda.to_device(np.zeros(1))
        _partial_sums[(x.size + 31) // 32, 32](cuda.to_device(x), d_out)
        end = time.monotonic() + 3  # (a test's bound)
        while time.monotonic() < end and not done.is_set():  # until the total is there
            total = d_out.copy_to_host()[0]
            if total != 0:
                return 2.0 * total
            time.sleep(0.01)
        return np.nan

    monkeypatch.setattr(core, "UNLAUNCHED_LIMIT_S", 1.0)
    report = core.run_cases("doubled", cases, core.calling(waits_for_its_kernel),
                            rtol=1e-9, atol=1e-12)
    # the thread left waiting copies from the device: a later test's trace would record
    # its copies as that test's (on the legacy default stream)
    done.set()
    for thread in waiting:
        thread.join(timeout=10)
    assert report.passed and report.hung, str(report)


def test_the_instructor_is_told_what_went_unchecked_only_where_it_decides_the_verdict():
    unchecked = core.Case("race case", False, "", grader_limit="the tracer could not run it")
    passed, failed = core.Case("n=17", True, ""), core.Case("n=17", False, "wrong")
    assert core.Report("x", [passed, unchecked]).grader_limits == \
        ["the tracer could not run it"]
    assert core.Report("x", [failed, unchecked]).grader_limits == []  # 0 either way
