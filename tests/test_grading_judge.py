"""kernels.grading.judge's stand-in for an answer process: a process that ended is
started afresh at the next step (the notebook's certifying process, which compiles the
host functions' kernels, after a kernel crashed it)."""

import os
import subprocess

import pytest

from kernels.grading import judge


def test_a_process_that_ends_without_a_reply_is_started_afresh_at_the_next_step():
    starts = []

    def ends_at_once():  # an answer process that ends without a reply
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        proc = subprocess.Popen(["true"], pass_fds=(requests_read, replies_write))
        os.close(requests_read)
        os.close(replies_write)
        starts.append(proc)
        return proc, requests_write, replies_read

    answer = judge.Answer(ends_at_once, ["argmax"])
    with pytest.raises(judge.AnswerEnded, match="the process running your code ended"):
        answer.missing()
    assert len(starts) == 1
    with pytest.raises(judge.AnswerEnded):
        answer.run("certify", ("void()",))
    assert len(starts) == 2
    answer.close()


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
