"""kernels.grading.judge: a limit of the sandbox is the grader's, and what an answer's
process holds or changes cannot decide a verdict (the judge's check, against answer
processes started as the grader starts them)."""

import pathlib
import shutil
import tempfile

import pytest

from kernels.grading import judge, stand_in


def test_a_case_stopped_by_the_sandbox_s_limit_is_the_grader_s_not_the_student_s():
    from kernels.checks import core

    report = core.Report("histogram_256", [
        core.Case("n=1,000", True, ""),
        core.Case("no race, traced at 300 bytes", False,
                  "under the tracer your code raised RuntimeError: can't start new thread")])
    judge.limits_reached(report)
    assert report.grader_limits == ["a limit of the sandbox (--max-processes, --max-memory) "
                                    "was reached: no race, traced at 300 bytes"]
    assert "the grader's limit on threads or memory" in report.cases[1].detail
    wrong = core.Report("histogram_256", [core.Case("n=17", False, "expected 3, got 4")])
    judge.limits_reached(wrong)
    assert wrong.grader_limits == [] and wrong.cases[0].detail == "expected 3, got 4"


HISTOGRAM = '''\
import numpy as np
from numba import cuda


@cuda.jit
def _hist(data, hist):
    s = cuda.shared.array(256, np.int32)
    t = cuda.threadIdx.x
    for j in range(t, 256, cuda.blockDim.x):
        s[j] = 0
        cuda.atomic.add(s, j, 0)
    cuda.syncthreads()
    for i in range(cuda.grid(1), data.size, cuda.gridsize(1)):
        {count}
    cuda.syncthreads()
    for j in range(t, 256, cuda.blockDim.x):
        cuda.atomic.add(hist, j, s[j])


def histogram_256(data):
{before}
    d = cuda.to_device(data)
    h = cuda.to_device(np.zeros(256, np.int32))
    _hist[8, 128](d, h)
    return h.copy_to_host().astype(np.int64)
'''
# What the answer's process could see of the checker's deciding half, if it were there:
# a correct answer that gives wrong counts wherever it finds any of it
LOOKS_FOR_THE_CHECKER = '''\
    import importlib.util
    for name in ("core", "histogram", "races", "points", "hints"):
        if importlib.util.find_spec("kernels.checks." + name) is not None:
            return np.zeros(256, np.int64)'''
# A racy answer (a plain += on shared counters) that makes the tracer's analyses, in
# its own process, find nothing
BLINDS_THE_ANALYSES = '''\
    import kernels.trace as tracer
    from kernels.trace import hazards
    tracer.races = tracer.stream_races = tracer.barriers = lambda *a, **k: []
    hazards.races = hazards.stream_races = hazards.barriers = lambda *a, **k: []'''


@pytest.fixture
def folder():
    """A submission's folder as the runner makes one: under the system's temporary
    folder, which the answer process's user (another one, where the grader is root) can
    pass through (a pytest tmp_path's parent is root's own)."""
    path = tempfile.mkdtemp(prefix="kernels-grade-")
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def _checked(tmp_path, before, count):
    """judge.check of atomics-ex-256 on a notebook of HISTOGRAM, in an answer process
    started as the grader starts one (without the sandbox, and without the static
    reading, which would refuse these answers before they run: what is tested is what
    the answer's process can do)."""
    from kernels.checks import registry
    from kernels.grading import package, runner, sandbox
    from planted import notebook, write

    runner_files = package.files()
    package.write(package.answer_side(runner_files), tmp_path / runner.PACKAGE_OF["answers"])
    write(notebook([HISTOGRAM.format(before=before, count=count)], "atomics"),
          tmp_path / "submission.ipynb")
    sandbox.readable(tmp_path)
    job = {"folder": str(tmp_path), "sandboxed": False, "names": ["histogram_256"],
           "kernel_only": False, "check_seconds": 60}
    forks = stand_in.Forks(job)
    answer = stand_in.Answer(forks.starter(["histogram_256"], False), ["histogram_256"])
    try:
        return judge.check(registry.EXERCISES["atomics-ex-256"], answer)
    finally:
        answer.close()
        forks.close()


def test_the_answer_s_process_holds_no_deciding_half_of_the_checkers(folder):
    passed, report, flag = _checked(folder, LOOKS_FOR_THE_CHECKER,
                                    "cuda.atomic.add(s, data[i], 1)")
    assert passed, report


def test_what_the_answer_changes_in_its_process_cannot_change_the_race_verdict(folder):
    passed, report, _ = _checked(folder, BLINDS_THE_ANALYSES, "s[data[i]] += 1")
    assert not passed
    assert "lost update" in report, report


@pytest.mark.parametrize("end, flagged", [
    ("os.kill(os.getpid(), signal.SIGKILL)", True),  # as the OOM killer ends a process
    ("os._exit(3)", False)])
def test_an_answer_process_killed_as_a_full_memory_kills_it_is_flagged(folder, end, flagged):
    """SIGKILL is how the kernel's OOM killer ends a process where the machine or the
    container runs out of memory (Gradescope gives 768 MB): the grader's limit, flagged
    for the instructor; an answer that exits by itself is the student's. On the simulator
    the race case runs first and ends the check; on a GPU each case fails, and the race
    case's own simulator process ends as the answer's did."""
    passed, report, flag = _checked(folder, f"    import os, signal\n    {end}",
                                    "cuda.atomic.add(s, data[i], 1)")
    assert not passed
    assert "the process running your code ended" in report, report
    assert bool(flag) is flagged, (flag, report)
    assert ("your instructor will look at it" in report) is flagged, report


def test_an_exercise_the_notebook_does_not_answer_gets_no_answer_process():
    """The judge starts no process for an exercise whose names no statement binds (the
    answer process would run nothing there), and says so as that process would; a name
    bound where the reading cannot tell (a star import) still gets its process."""
    from kernels.checks import registry
    from kernels.grading import extract

    gridstride = [ex for ex in registry.EXERCISES.values() if ex.chapter == "gridstride"]
    cells = [{"cell_type": "code", "source": s} for s in (
        "from numba import cuda\n\n@cuda.jit\ndef saxpy_kernel(a, x, y, out):\n    pass\n",
        "globals()['clip_2d_kernel'] = saxpy_kernel\n",
        "reverse_inplace_kernel = None\nreverse_inplace_kernel = saxpy_kernel\n")]
    assert [list(ex.names) for ex in gridstride] == [
        ["saxpy_kernel"], ["clip_2d_kernel"], ["reverse_inplace_kernel"]]
    found, _ = extract.statements(cells)
    assert [ex.label for ex in judge.unanswered(found, gridstride)] == ["gridstride-ex-clip"]
    found, _ = extract.statements(cells + [{"cell_type": "code", "source": "from os import *"}])
    assert judge.unanswered(found, gridstride) == []
    assert judge.not_defined("clip_2d_kernel").startswith(
        "Your notebook defines no `clip_2d_kernel`, a name the exercise asks for")


BINDINGS = [  # ways a notebook binds (or seems to bind) an exercise's name
    "reverse_inplace_kernel = saxpy_kernel",
    "(reverse_inplace_kernel := saxpy_kernel)",
    "for reverse_inplace_kernel in [saxpy_kernel]:\n    pass",
    "import math as reverse_inplace_kernel",
    "from math import sqrt as reverse_inplace_kernel",
    "with open(__file__ if '__file__' in dir() else '/dev/null') as reverse_inplace_kernel:\n"
    "    pass",
    "try:\n    1 / 0\nexcept ZeroDivisionError as reverse_inplace_kernel:\n    keep = 1",
    "globals()['reverse_inplace_kernel'] = saxpy_kernel",
    "exec('reverse_inplace_kernel = saxpy_kernel')",
    "def make():\n    global reverse_inplace_kernel\n    reverse_inplace_kernel = 1\nmake()",
    "class reverse_inplace_kernel:\n    pass",
    "reverse_inplace_kernel = 1\ndel reverse_inplace_kernel",
    "if False:\n    reverse_inplace_kernel = saxpy_kernel",
    "from os.path import *",
]


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_exercise_skipped_as_unanswered_is_one_its_answer_process_finds_missing(binding):
    """The judge's skip (unanswered) never costs an answer its grade: wherever it skips an
    exercise, loading the notebook as the answer process does finds its names missing."""
    from kernels.checks import registry
    from kernels.grading import answers, extract

    cells = [{"cell_type": "code", "source": s} for s in (
        "from numba import cuda\n\n@cuda.jit\ndef saxpy_kernel(a, x, y, out):\n    pass\n",
        binding)]
    found, _ = extract.statements(cells)
    for ex in registry.EXERCISES.values():
        if ex in judge.unanswered(found, [ex]):
            namespace, _ = answers.load({"cells": cells}, list(ex.names), ex.kernel)
            assert not set(ex.names) & set(namespace), (ex.label, binding)
    if binding.startswith("from os.path import *"):  # it could bind anything: not skipped
        assert not judge.unanswered(found, list(registry.EXERCISES.values()))
