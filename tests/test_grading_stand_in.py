"""kernels.grading.stand_in: a process that ended is started afresh at the next step (the
notebook's certifying process, which compiles the host functions' kernels, after a
kernel crashed it); a reply must answer the request it follows."""

import os
import subprocess
import threading

import pytest

from kernels.grading import answers, channel, stand_in


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

    answer = stand_in.Answer(ends_at_once, ["argmax"])
    with pytest.raises(stand_in.AnswerEnded, match="the process running your code ended"):
        answer.missing()
    assert len(starts) == 1
    with pytest.raises(stand_in.AnswerEnded):
        answer.run("certify", ("void()",))
    assert len(starts) == 2
    answer.close()


def test_a_reply_that_does_not_carry_the_request_s_number_is_refused():
    """A frame written onto the reply pipe by other code than the answer process's loop
    (which does not know the number the judge drew) does not count as a reply."""
    def forged():  # an answer process whose reply frame is well formed but forged
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        proc = subprocess.Popen(["sleep", "30"], start_new_session=True)  # its own group,
        # as the answer processes are: closing the stand-in ends it at once

        def reply():
            channel.Reader(requests_read).read()
            channel.write(replies_write, ("ok", ([], []), [], 12345))

        threading.Thread(target=reply, daemon=True).start()
        return proc, requests_write, replies_read

    answer = stand_in.Answer(forged, ["argmax"])
    with pytest.raises(stand_in.AnswerEnded, match="a reply to no request"):
        answer.run(answers.LOAD, ())
    answer.close()
