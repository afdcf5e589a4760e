"""The process where a student's functions run for the judge: one per exercise.

This is the untrusted side of the grader's trust seam. kernels.grading.judge starts,
in the OS sandbox, a process that enters it (kernels.grading.confine: its user, limits
and scratch folder), imports what every answer process needs, and then forks one
fresh answer process for each exercise the judge orders (main); each of those:

1. gets the names the exercise asks for and the two pipes to the judge, and a working
   folder of its own;
2. runs only the notebook's statements that those names need (kernels.grading.extract),
   in a fresh namespace: never the whole notebook, so nothing the notebook did at top
   level for any other reason is here;
3. answers the judge's requests, one frame each (kernels.grading.channel): a request
   names a checker's answer step (kernels.checks.steps), gives its plain
   arguments (a case's inputs) and names the student's function it runs beside; the
   reply is the step's plain result, or the error it raised, with the kernel launches
   it made (kernels.checks.launches).

One process answers one exercise, except that the kernel exercises of a notebook share
one: their definitions run no code of the student's (kernels.grading.extract.
kernel_only), so nothing one of them does at load can reach another.

On the simulator the same program also certifies kernels for the judge, with Numba
targeting a GPU: a kernel exercise's kernel, loaded as above, or a kernel a host
function launched, made again from its description alone in a process where no code
of the student's ran (that one, or one that loads nothing of the notebook: `copies` in
its job; kernels.grading.copies).

Nothing here knows a case's expected value, its tolerance, the list of cases, the
grading run's secret, which exercise's label it answers or how the judge reports: this
process imports a copy of the package whose kernels.checks holds only the answer steps,
the launch record and the exercise table (kernels.grading.package.answer_side), so
there is nothing here to read of what decides. A race case's trace is recorded here and sent back as plain
data (kernels.trace.wire); the judge finds the races in it. What the student's code can
change in this process is the evidence of how an answer worked (its launch counts, its
trace), never the comparison or the reading of the trace: book/instructors.md says so.
"""

import ast
import contextlib
import ctypes
import gc
import json
import linecache
import os
import signal
import socket
import sys
import time

from kernels.grading import confine, targets

LOAD = "load"  # the first request: run the needed statements, say what is missing
MAX_MESSAGE = 2000  # characters of an error's message sent back


CERTIFY = "certify"  # for a kernel: compile it for a GPU, where Numba targets one


def time_limits(seconds):
    """The answer steps' time limits under the grader, from its budget for one check: a
    trace's (tracing is slower) and a hint's. The judge sets the same ones, and its own
    for a case (kernels.grading.judge.time_limits)."""
    from kernels.checks import steps

    steps.TRACE_TIME_LIMIT_S = min(steps.TRACE_TIME_LIMIT_S, 2 * seconds)
    steps.HINT_TIME_LIMIT_S = min(steps.HINT_TIME_LIMIT_S, seconds)


def load(notebook, names, kernel_only=False):
    """A namespace with the notebook's statements that `names` need, run in order;
    and the errors of those that raised, as lines. With `kernel_only`, only the
    statements that bind a needed name run (the judge has checked that they run no code
    of the student's: kernels.grading.extract.kernel_only)."""
    from kernels.grading import extract

    found, sources = extract.statements(notebook["cells"])
    namespace = {"__name__": "__main__"}
    for number, code in sources.items():  # tracebacks and the tracer's messages
        filename = f"<code cell {number}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    errors = []
    for statement in extract.needed(found, names, changes=not kernel_only):
        code = ast.Module(body=[statement.node], type_ignores=[])
        try:
            exec(compile(code, f"<code cell {statement.cell}>", "exec"), namespace)
        except BaseException as err:  # exit() included
            line = statement.node.lineno
            errors.append(f"code cell {statement.cell}, line {line}: "
                          f"{type(err).__name__}: {str(err)[:200]}")
    return namespace, errors


def _host(value):
    """`value` with device arrays copied to the host, for the channel."""
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    return value


MAX_LAUNCHED = 32  # kernels' signatures reported in one reply: more is not an answer's


_REPORTED = set()  # (key, signature) of the kernels this process has reported


def _launched():
    """["launched", the qualified name of a kernel of yours launched since the last
    reply, the launch's signature ("" if it cannot be said), the kernel's description as
    it was at that launch] for each (kernels.checks.launches) not reported before: a
    certifying process makes the kernel again from the description alone
    (kernels.grading.copies)."""
    from kernels.checks import launches

    found = []
    for (key, signature), (qualname, description) in launches.launched().items():
        if (key, signature) not in _REPORTED:
            _REPORTED.add((key, signature))
            found.append(["launched", qualname, signature, description])
    if len(found) > MAX_LAUNCHED:  # the judge must not pass what it was not sent
        found[MAX_LAUNCHED:] = [["launched", "(more kernels)", "", [
            "opaque", f"more than {MAX_LAUNCHED} kernels or signatures in one step"]]]
    return found


# What every answer process imports: imported once, by the process that forks them
# (kernels first, which decides the simulator before numba.cuda loads)
PRELOADED = ("kernels.checks.steps", "numba.cuda", "kernels.grading.channel",
             "kernels.grading.copies", "kernels.grading.extract", "kernels.grading.submissions")


def prepare(job):
    """What every answer process of the job's kind does before it loads an answer: done
    once, in the process that forks them (main)."""
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    import kernels
    from kernels.checks import launches
    from kernels.grading import copies

    time_limits(job["check_seconds"])
    targets.jit_as_a_gpu_takes()
    if job.get("certify"):
        targets.compile_without_device()
    elif kernels.SIMULATOR:  # the judge has the kernels it launches compiled for a GPU
        launches.record_launched(copies.describe, copies.runnable, copies.library)


def serve(job, requests, replies):
    """Answer the judge's requests on the two pipes until it stops asking."""
    import kernels
    from kernels.checks import launches, steps
    from kernels.grading import channel, copies, submissions

    order = contextlib.nullcontext
    if kernels.SIMULATOR:
        from kernels import simulator

        order = simulator.blocks_shuffled
    reader = channel.Reader(requests)
    namespace = None
    while True:
        try:
            name, args, subject, request = reader.read()
            if subject not in job["names"]:
                break
        except (EOFError, channel.ChannelError, ValueError, TypeError):
            break
        before = launches.counts()
        try:
            if name == LOAD and job.get("copies"):  # it compiles descriptions only
                namespace, errors = {}, []
                reply = ("ok", ([], []))
            elif name == LOAD:
                namespace, errors = load(submissions.read(job["notebook"]), job["names"],
                                         job.get("kernel_only", False))
                reply = ("ok", ([n for n in job["names"] if n not in namespace], errors))
            elif name == CERTIFY:  # (signature[, a kernel's description])
                kernel = copies.rebuild(args[1]) if len(args) == 2 else namespace[subject]
                reply = ("ok", targets.certify(kernel, args[0]))
            else:
                step = steps.STEPS[name]
                # as answer_side runs a step in a notebook; on the simulator, the blocks
                # of each launch in a shuffled order, as a GPU promises none
                with launches.poisoned(), order():
                    reply = ("ok", _host(step(namespace[subject], *args)))
        except BaseException as err:  # the student's code raised
            reply = ("error", type(err).__name__, str(err)[:MAX_MESSAGE])
        made = launches.counts() - before
        made = [[origin, made[origin]] for origin in made] + _launched()
        try:
            frame = channel.encode((*reply, made, request))
        except channel.ChannelError as err:  # it returned something else than plain data
            frame = channel.encode(("error", "TypeError", f"your function returned {err}, "
                                    "which the grader cannot read", made, request))
        try:
            channel.send(replies, frame)
        except OSError:
            break


def fork(job, control, order, fds):
    """Start an answer process for `order` (the names it answers, how it loads them) on
    the pipes `fds`: a fork of this process, which has run no code of the student's.
    It gets a process group (the judge ends it by that) and a working folder of its own
    (a name no other can know), never the control socket, and ends when this process
    ends."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:
        control.close()
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: it ends with it
        if os.getppid() != parent:  # it ended before that
            os._exit(0)
        os.setsid()
        import tempfile

        os.chdir(tempfile.mkdtemp(prefix="answers-", dir=job["scratch"]))
        import numpy as np

        np.random.seed()  # the legacy global stream, as a fresh process has it
        task = dict(job, names=order["names"], kernel_only=order["kernel_only"],
                    copies=order["copies"])
        serve(task, *fds)
    finally:
        os._exit(0)  # threads the student's code left running must not keep the process


def _end(pid):
    """SIGKILL to process `pid`'s group, and to it where it has no group yet."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _emptied(folder):
    """Remove what is in `folder`, whatever its modes (the student's code may have
    made a folder unreadable): best effort, as nothing of the grader's is there."""
    import shutil

    def opened(retry, path, _):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            retry(path)
        except OSError:
            pass

    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=opened)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


class Forker:
    """main's state: the answer processes it forked, by the judge's numbers, and how
    those that ended ended."""

    def __init__(self, job, control):
        self.job, self.control = job, control
        self.children, self.ended = {}, {}

    def status(self, number, block=False):
        """None while answer process `number` runs, else its exit status; -9 for a
        number this process never forked (it replaces one that ended)."""
        pid = self.children.get(number)
        if pid is None:
            return -9
        if number not in self.ended:
            try:
                done, code = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                done, code = pid, 0
            if done:
                self.ended[number] = os.waitstatus_to_exitcode(code)
        return self.ended.get(number)

    def purge(self):
        """End every process of the sandbox but this one, and empty the scratch folder:
        between two exercises, so that nothing one exercise's code left (a process
        that detached itself, threads counted against the limit, files) meets the
        next one's. Only in the sandbox's own PID namespace (where this process is 1
        or 2) does kill(-1) mean that; without the sandbox, its own forks only."""
        if self.job.get("sandboxed") and os.getpid() <= 2:
            for _ in range(100):  # a process forked while the last signal went round
                try:
                    os.kill(-1, signal.SIGKILL)  # all but this one and the init
                except ProcessLookupError:
                    break
                self._reap()
                time.sleep(0.01)
        for number, pid in self.children.items():
            if number not in self.ended:  # a reaped one's pid may be another's now
                _end(pid)
        self._reap()
        _emptied(self.job["scratch"])
        confine.into_scratch(self.job["scratch"], "answers")

    def _reap(self):
        for number in self.children:
            self.status(number, block=True)

    def serve(self):
        """The judge's orders, one at a time, until it closes the socket."""
        while True:
            try:
                message, fds, _, _ = socket.recv_fds(self.control, 1 << 16, 2)
                order = json.loads(message)
            except (OSError, ValueError):
                break
            if not message:
                break
            number = order.get("number")
            if order.get("start") and len(fds) == 2:
                self.children[number] = fork(self.job, self.control, order, fds)
                reply = {"started": number}
            elif order.get("end") and number in self.children:
                if number not in self.ended:
                    _end(self.children[number])
                reply = {"status": self.status(number, block=True)}
            elif order.get("purge"):
                self.purge()
                reply = {"purged": True}
            else:
                reply = {"status": self.status(number)}
            for fd in fds:
                os.close(fd)
            try:
                self.control.send(json.dumps(reply).encode())
            except OSError:
                break


def main():
    """The process that forks the answer processes of one grading (one per exercise, or
    one for a notebook's kernels), in the sandbox: it enters the sandbox, imports and
    sets up what they all need once, then serves the judge's orders on its control
    socket (kernels.grading.stand_in.Forks): start one (its names, and its two pipes,
    passed with the order), say whether one ended, end one, and between two exercises
    end every other process of the sandbox and empty its scratch folder (Forker.purge).
    It runs no code of the student's, and none of theirs can reach it: it is not
    dumpable (no process of the sandbox's user may trace it or read its memory), and
    its answer processes close the control socket first. A fork costs about a
    millisecond where a fresh process spends about 0.4 s of CPU importing Numba."""
    confine.drop_editable_install()
    job = json.loads(sys.stdin.readline())
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # what the student's code prints goes nowhere
        os.dup2(devnull, fd)
    confine.enter(job, "answers")
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE: 0, kept by its forks
    prepare(job)
    # What it imported lives as long as its forks: kept out of their garbage collections,
    # which would otherwise walk it all again in each (and copy the pages they touch)
    gc.freeze()
    Forker(job, socket.socket(fileno=job["control"])).serve()
    os._exit(0)


if __name__ == "__main__":
    main()
