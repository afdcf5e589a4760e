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
