"""kernels.grading.judge's stand-in for an answer process: what it counts when the
process fails (the judge stops using a shared certifying process after one failure)."""

import os
import subprocess

import pytest

from kernels.grading import judge


def _ended_at_once():
    """An answer process that ends without a reply."""
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    proc = subprocess.Popen(["true"], pass_fds=(requests_read, replies_write))
    os.close(requests_read)
    os.close(replies_write)
    return proc, requests_write, replies_read


def test_a_process_that_ends_without_a_reply_counts_as_a_failure():
    answer = judge.Answer(_ended_at_once, ["argmax"])
    assert answer.failures == 0
    with pytest.raises(judge.AnswerEnded, match="the process running your code ended"):
        answer.missing()
    assert answer.failures == 1
    with pytest.raises(judge.AnswerEnded):  # the next step starts a fresh one, which ends too
        answer.run("certify", ("void()",))
    assert answer.failures == 2
    answer.close()
