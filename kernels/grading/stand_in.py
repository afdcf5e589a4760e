"""The judge's stand-in for a student's function: an answer process, spoken to over the
channel.

The judge (kernels.grading.judge) calls each checker on an `Answer` (or, where several
kernel exercises share one process, a `Subject` of it): a checker's answer step becomes
a request, (the step's name, its plain arguments, the name of the student's function,
a number drawn for the request), written to the answer process (kernels.grading.
answers, forked in the sandbox: Forks), and the reply, plain data that must
carry the number back, becomes the step's result, or the error the student's code
raised there, said as that error. Launch counts and the kernels launched come back
with each reply and are counted here (kernels.checks.launches), as the checkers read
them. A step that does not reply in time ends the process; the next starts a fresh one.
"""

import json
import os
import secrets
import socket
import subprocess
import tempfile
import threading
import time

from kernels.checks import core, launches, steps
from kernels.grading import answers, channel, compiled

STEP_MARGIN_S = 10.0  # beyond the checkers' own limits, for a reply to come back
FORKS_REPLY_S = (60.0, 15.0)  # the first reply (after its imports), the later ones


class AnswerEnded(RuntimeError):
    """The answer process ended before it replied (killed by a limit, or it exited)."""


class Raised(Exception):
    """An error the student's code raised in the answer process, by its type's name."""


def _raised(kind, message):
    from kernels.harness import MismatchError

    kind, message = str(kind), str(message)[:2000]
    known = {"MismatchError": MismatchError, "TimeLimitExceeded": core.TimeLimitExceeded,
             "NotAKernel": launches.NotAKernel}  # the checkers' words, said as they are
    if kind in known:
        return known[kind](message)
    if not kind.isidentifier():
        kind = "Exception"
    return type(kind, (Raised,), {})(message)


class Answer(core.Elsewhere):
    """The student's function for one exercise, in an answer process started by `start`
    (a function that returns the process, as a Forked: poll, wait, end; the fd to write
    requests to and the fd to read replies from). A step that does not reply within its
    time ends the process; the next step starts a fresh one."""

    def __init__(self, start, names):
        self.start, self.names = start, names
        self.lock = threading.Lock()
        self.proc = None
        self.loaded = None
        # (qualified name, signature, digest) -> description of each kernel it launched
        self.kernels = {}

    def begin(self):
        """Start the process and ask it to load the answer, without waiting: processes
        start and import while the judge is busy with the exercise before."""
        with self.lock:
            if self.proc is None:
                self._start()
        return self

    def _start(self):
        self.proc, self.requests, replies = self.start()
        self.reader = channel.Reader(replies)
        self.loaded = None
        self._send(answers.LOAD, (), self.names[0])

    def _open(self):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        if self.loaded is None:
            self.loaded = self._reply(max(core.TIME_LIMIT_S, 60.0))

    def close(self):
        """End the answer process (without waiting for a step under way); a later step
        starts a fresh one."""
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.end()
            for fd in (self.requests, self.reader.fd):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def missing(self):
        """([names the notebook does not define], [errors of the statements they need])."""
        with self.lock:
            self._open()
            missing, errors = self.loaded
            return [str(n) for n in missing], [str(e) for e in errors]

    def run(self, name, args, subject=None):
        """Run step `name` with `args` beside `subject` (a name the process loaded;
        default: the first)."""
        with self.lock:
            self._open()
            self._send(name, args, subject or self.names[0])
            return self._reply(max(core.TIME_LIMIT_S + core.COMPILE_S,
                                   steps.TRACE_TIME_LIMIT_S) + STEP_MARGIN_S)

    def of(self, names):
        """The stand-in for the function names[0], in this (shared) process."""
        return Subject(self, names)

    def _send(self, name, args, subject):
        # a number the reply must carry back: a frame the student's code writes onto the
        # reply pipe blindly does not count (code that reads the request pipe can learn
        # it: book/instructors.md says so)
        self.request = secrets.randbits(62)
        try:
            channel.write(self.requests, (name, tuple(args), subject, self.request))
        except OSError:  # it ended: the reply says how
            pass

    def _reply(self, deadline):
        try:
            reply = self.reader.read(time.monotonic() + deadline)
        except TimeoutError:
            self.close()
            raise core.TimeLimitExceeded(
                f"did not finish within {deadline:.0f} s (its process was ended)") from None
        except (EOFError, OSError):
            why = _ended(self.proc)
            self.close()
            raise AnswerEnded(f"the process running your code ended ({why})") from None
        except channel.ChannelError as err:
            self.close()
            raise AnswerEnded(f"the process running your code sent back {err}") from None
        shape = {"ok": 4, "error": 5}
        if not (isinstance(reply, tuple) and reply and shape.get(reply[0]) == len(reply)
                and isinstance(reply[-2], list)):
            self.close()
            raise AnswerEnded("the process running your code sent back something else "
                              "than a reply")
        if reply[-1] != self.request:
            self.close()
            raise AnswerEnded("the process running your code sent back a reply to no "
                              "request of the grader's (written onto its channel?)")
        made = {}
        self.kernels.update(filter(None, map(compiled.launched, reply[-2])))
        for pair in reply[-2]:
            if (isinstance(pair, list) and len(pair) == 2 and pair[0] in launches.ORIGINS
                    and isinstance(pair[1], int) and pair[1] >= 0):
                made[pair[0]] = pair[1]
        launches.add(made)
        if reply[0] == "error":
            raise _raised(reply[1], reply[2])
        return reply[1]


class Subject(core.Elsewhere):
    """One exercise's function in a process that answers for several (a notebook's
    kernels): its steps run beside names[0], and it is missing what the process lacks
    of its own names."""

    def __init__(self, answer, names):
        self.answer, self.names = answer, list(names)

    def run(self, name, args):
        return self.answer.run(name, args, self.names[0])

    def missing(self):
        missing, errors = self.answer.missing()
        return [n for n in missing if n in self.names], errors

    def close(self):
        """End the shared process: the next exercise starts a fresh one."""
        self.answer.close()


def _ended(proc):
    code = proc.wait() if proc is not None else None
    if code is None:
        return "no process"
    if code < 0 or code > 128:
        import signal

        number = -code if code < 0 else code - 128
        try:
            return f"killed by signal {signal.Signals(number).name}; a limit of the " \
                   "sandbox (memory, processes) or a crash of the kernel"
        except ValueError:
            pass
    return f"exit status {code}"


class Forked:
    """An answer process forked by the sandbox's answer process (kernels.grading.answers.
    main), as the judge sees it: a `number` it asks its Forks about, and the read end of
    its replies' pipe."""

    def __init__(self, forks, number, replies):
        self.forks, self.number, self.replies = forks, number, replies

    def poll(self):
        """None while it runs, else its exit status (negative: killed by that signal;
        -9 where the process that forked it is gone, and it with it). Read from its
        pipe, which ends with it: the forking process is asked only once it ended."""
        import select

        watch = select.poll()
        watch.register(self.replies, select.POLLHUP)
        ended = any(event & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                    for _, event in watch.poll(0))
        return self.wait() if ended else None

    def wait(self):
        """Its exit status, once it ended (ended now, if it still ran)."""
        return self.end()

    def end(self):
        return self.forks.ask({"number": self.number, "end": True})


class Forks:
    """The judge's end of one sandboxed process that forks the answer processes of one
    kind (a notebook's, or, with `gpu_target`, those where Numba compiles for a GPU)
    for `job` (the runner's: its folder, sandbox, limits, environment). Started at the
    first start, ended by close."""

    def __init__(self, job, gpu_target=False):
        self.job, self.gpu_target = job, gpu_target
        self.lock = threading.Lock()
        self.proc = self.control = None
        self.count = 0

    def starter(self, names, kernel_only, copies=False):
        """A start() for Answer: a fresh answer process for `names`."""
        order = {"start": True, "names": list(names), "kernel_only": kernel_only,
                 "copies": copies}

        def start():
            request_read, request_write = os.pipe()
            reply_read, reply_write = os.pipe()
            with self.lock:
                self.count += 1
                number = self.count
                self._ask(dict(order, number=number), (request_read, reply_write))
            os.close(request_read)
            os.close(reply_write)
            return Forked(self, number, reply_read), request_write, reply_read
        return start

    def purge(self):
        """Between two exercises: every process it did not fork and every answer
        process ended, its scratch folder emptied (kernels.grading.answers.Forker.purge);
        ended itself where it does not say it did."""
        with self.lock:
            if self.proc is not None and not self._said({"purge": True}, ()):
                self.close()

    def ask(self, order):
        with self.lock:
            reply = self._ask(order)
        return reply.get("status") if reply else -9

    def _ask(self, order, fds=()):
        if fds and (self.proc is None or self.proc.poll() is not None):
            self._begin()  # a start: a fresh one where it ended
        reply = self._said(order, fds)
        if fds and reply is None:  # it was ending as it was asked: once more, afresh
            self._begin()
            reply = self._said(order, fds)
        return reply

    def _said(self, order, fds):
        if self.control is None:
            return None
        try:
            socket.send_fds(self.control, [json.dumps(order).encode()], list(fds))
            reply = json.loads(self.control.recv(1 << 16) or b"null")
            self.control.settimeout(FORKS_REPLY_S[1])
            return reply
        except (OSError, ValueError):  # it ended or stopped (a student's process may
            self.close()  # do either): ended with what it forked, replaced at a start
            return None

    def _begin(self):
        from kernels.grading import runner, sandbox

        self.close()
        job = self.job
        box = sandbox.Sandbox(sandbox.Limits(**job["limits"]), job["gpu"], job["as_root"]) \
            if job["sandboxed"] else None
        scratch = None
        if box is None:  # a scratch folder of its own
            scratch = tempfile.mkdtemp(prefix="answers-", dir=job["folder"])
            os.chmod(scratch, 0o1777)
        argv, task, cwd = runner.student_process("answers", job["folder"], box, scratch)
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # a reply takes a fork or a kill; the first waits for its imports. Longer, it
        # was stopped (a student's process may): the next start replaces it
        self.control.settimeout(FORKS_REPLY_S[0])
        task.update(certify=self.gpu_target, check_seconds=job["check_seconds"],
                    control=theirs.fileno(), sandboxed=box is not None)
        env = runner.environment(task["scratch"])
        if self.gpu_target:  # Numba compiles for a GPU there (none need be present)
            env["NUMBA_ENABLE_CUDASIM"] = "0"
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                                     pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        try:
            self.proc.stdin.write((json.dumps(task) + "\n").encode())
            self.proc.stdin.close()
        except OSError:
            pass

    def close(self):
        """End it, and every answer process it forked."""
        from kernels.grading import runner

        proc, self.proc = self.proc, None
        if self.control is not None:
            self.control.close()
            self.control = None
        if proc is not None:
            runner.kill_sandbox(proc) if self.job["sandboxed"] else runner.kill_group(proc)
