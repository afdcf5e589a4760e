"""kernels.grading.stand_in: a process that ended is started afresh at the next step (the
notebook's certifying process, which compiles the host functions' kernels, after a
kernel crashed it); a reply must answer the request it follows."""

import os
import subprocess
import threading

import pytest

from kernels.grading import answers, channel, runner, stand_in


class Process:
    """A plain process as the stand-in sees an answer process (stand_in.Forked)."""

    def __init__(self, argv, **options):
        self.popen = subprocess.Popen(argv, start_new_session=True, **options)

    def poll(self):
        return self.popen.poll()

    def wait(self):
        return self.popen.wait()

    def end(self):
        runner.kill_group(self.popen)
        return self.popen.returncode


def test_a_process_that_ends_without_a_reply_is_started_afresh_at_the_next_step():
    starts = []

    def ends_at_once():  # an answer process that ends without a reply
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        proc = Process(["true"], pass_fds=(requests_read, replies_write))
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
        proc = Process(["sleep", "30"])

        def reply():
            channel.Reader(requests_read).read()
            channel.write(replies_write, ("ok", ([], []), [], 12345))

        threading.Thread(target=reply, daemon=True).start()
        return proc, requests_write, replies_read

    answer = stand_in.Answer(forged, ["argmax"])
    with pytest.raises(stand_in.AnswerEnded, match="a reply to no request"):
        answer.run(answers.LOAD, ())
    answer.close()


# A host function that tells what its process sees: whether an earlier answer process
# left a mark in a library module, which of its descriptors are sockets, and whether it
# can read the memory of the process that forked it
SEES = '''\
import os
import numpy


def argmax(x):
    if x == "mark":
        seen = getattr(numpy, "_left_by_an_answer", False)
        numpy._left_by_an_answer = True
        return seen
    if x == "sockets":
        found = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                found += [fd] * os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
            except OSError:  # the listing's own
                pass
        return found
    if x == "parent":
        try:
            with open(f"/proc/{os.getppid()}/mem", "rb"):
                return "read"
        except OSError as err:
            return type(err).__name__
    if x == "end parent":
        os.kill(os.getppid(), 9)
        return "ended"
    if isinstance(x, str) and x.startswith("alive "):
        try:
            os.kill(int(x.split()[1]), 0)
            return True
        except OSError:
            return False
    if x == "leave a process":
        import subprocess
        import sys

        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                start_new_session=True).pid
    if x == "leave a file":
        open(os.path.join(os.environ["HOME"], "left"), "w").close()
        return os.path.exists(os.path.join(os.environ["HOME"], "left"))
    if x == "file left":
        return os.path.exists(os.path.join(os.environ["HOME"], "left"))
    if x == "stop parent":
        os.kill(os.getppid(), 19)
        return "stopped"
'''


@pytest.fixture(params=["sandboxed", "unsandboxed"])
def forks(request):
    """Forks as the judge makes them, in the sandbox and without, for a notebook of SEES."""
    import dataclasses
    import shutil
    import tempfile

    from planted import notebook, write

    from kernels.grading import package, sandbox

    job = {"sandboxed": False, "check_seconds": 60}
    if request.param == "sandboxed":
        try:
            box = sandbox.find(sandbox.Limits(), runner.library_paths(), gpu=False)
        except sandbox.Unavailable as err:
            pytest.skip(str(err))
        job.update(sandboxed=True, limits=dataclasses.asdict(box.limits), gpu=False,
                   as_root=box.as_root)
    folder = tempfile.mkdtemp(prefix="kernels-grade-")  # one the student's user can pass
    package.write(package.answer_side(package.files()),
                  os.path.join(folder, runner.PACKAGE_OF["answers"]))
    write(notebook([SEES], "reduction"), os.path.join(folder, "submission.ipynb"))
    sandbox.readable(folder)
    made = stand_in.Forks(dict(job, folder=folder))
    yield made
    made.close()
    shutil.rmtree(folder, ignore_errors=True)


def _asked(forks, question):
    answer = stand_in.Answer(forks.starter(["argmax"], False), ["argmax"])
    try:
        return answer.run("call", (question,))
    except stand_in.AnswerEnded:  # it ended with the process that forked it
        return "ended"
    finally:
        answer.close()


def _as_root(forks):
    """Whether the student's code runs as root: without the sandbox, where the grader is
    root and no other user can run its Python (--unsafe-no-sandbox says it is unsafe)."""
    return not forks.job["sandboxed"] and os.geteuid() == 0 and not runner.unprivileged_user()


def test_each_answer_process_is_forked_fresh_from_one_that_ran_no_student_code(forks):
    """What one exercise's code changes in its process is absent from the next one's,
    though both are forks of the same process; and neither holds the socket the judge
    orders forks on, nor may read that process's memory."""
    assert _asked(forks, "mark") is False
    assert _asked(forks, "mark") is False
    assert _asked(forks, "sockets") == []
    if not _as_root(forks):
        assert _asked(forks, "parent") == "PermissionError"


def test_an_answer_that_ends_the_forking_process_ends_only_its_own_answers(forks):
    """The student's code can end the process that forks it (same user): the next answer
    process comes from a fresh one, and answers."""
    assert _asked(forks, "end parent") == "ended"
    assert _asked(forks, "mark") is False


def test_an_answer_that_stops_the_forking_process_costs_the_judge_a_wait_not_a_hang(
        forks, monkeypatch):
    """Stopped (SIGSTOP), the forking process does not reply: the judge waits
    FORKS_REPLY_S for it, ends it, and the next answer process comes from a fresh one."""
    monkeypatch.setattr(stand_in, "FORKS_REPLY_S", (60.0, 3.0))
    assert _asked(forks, "stop parent") == "stopped"
    assert _asked(forks, "mark") is False


def test_between_two_exercises_what_one_left_is_gone(forks):
    """A process that detached itself (a new session, out of its answer process's
    group) and a file in the scratch folder do not outlive the purge between two
    exercises; before it, they are there."""
    pid = _asked(forks, "leave a process")
    assert _asked(forks, f"alive {pid}") is True
    assert _asked(forks, "leave a file") is True
    forks.purge()
    if forks.job["sandboxed"]:  # without the sandbox only its own forks are ended
        assert _asked(forks, f"alive {pid}") is False
    else:
        os.kill(pid, 9)
    assert _asked(forks, "file left") is False
