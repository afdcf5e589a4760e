"""Grade submissions in parallel, each in worker processes of its own, and collect results.

Each worker gets a private temporary folder (a fresh solution-free copy of the package,
the notebook, and a scratch folder for its home and work), a clean environment, and a
time limit for everything it runs. With a sandbox (kernels.grading.sandbox) it runs in
bwrap, sees only those and the Python installation, and the scratch folder is a tmpfs
inside; without one (--unsafe-no-sandbox) it runs as the grader's user. Its worker
reports over a pipe, and only messages that carry the submission's nonce count; they are
used once the worker and everything it started have ended. Whatever happens in one
submission, the others are graded.
"""

import concurrent.futures
import dataclasses
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import kernels
from kernels.checks import registry
from kernels.grading import package, sandbox, submissions

NOTEBOOK_SHARE = 0.6  # of the time left, for running the cells; the rest is for checks
MAX_CHANNEL_BYTES = 8 << 20
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
              "CUDA_VISIBLE_DEVICES", "NUMBA_CUDA_DRIVER")
# -I: no environment variables, no user site, no script folder on the path; the private
# package goes first, then the folders this interpreter imports libraries from, in its
# order (a numpy put first on PYTHONPATH stays first; a user site is included, and
# addsitedir runs their .pth files, numba-cuda's import hook among them).
WORKER = ("import json, site, sys; paths = json.loads(sys.argv[2]); "
          "sys.path[:] = [sys.argv[1]] + paths; [site.addsitedir(p) for p in paths]; "
          "from kernels.grading.worker import main; main()")


def library_paths():
    """This interpreter's import folders, less any that holds a `kernels` (a checkout)."""
    return [p for p in sys.path if p and os.path.isdir(p)
            and not os.path.exists(os.path.join(p, "kernels"))]


@dataclasses.dataclass
class Outcome:
    """What grading one submission found."""
    submission: submissions.Submission
    chapters: list = dataclasses.field(default_factory=list)
    device: str = ""
    results: dict = dataclasses.field(default_factory=dict)  # label -> (passed, report)
    notes: list = dataclasses.field(default_factory=list)  # lines for the student
    seconds: float = 0.0

    @property
    def exercises(self):
        return [ex for chapter in self.chapters for ex in registry.by_chapter(chapter)]

    def points(self, label):
        passed, _ = self.results.get(label, (False, ""))
        return registry.EXERCISES[label].points if passed else 0

    @property
    def total(self):
        return sum(self.points(ex.label) for ex in self.exercises)

    @property
    def possible(self):
        return sum(ex.points for ex in self.exercises)


def _environment(scratch):
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    home = os.path.join(scratch, "home")
    env.update(HOME=home, TMPDIR=os.path.join(scratch, "tmp"), MPLBACKEND="Agg",
               MPLCONFIGDIR=home, NUMBA_CACHE_DIR=home,
               NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    return env


def _read_channel(stream, nonce, messages, problems):
    size = 0
    for line in stream:
        size += len(line)
        if size > MAX_CHANNEL_BYTES:
            problems.append("the results channel carried far more than a report")
            break
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("nonce") != nonce:
            problems.append("the results channel received a message that the grader did "
                            "not send")
            continue
        messages.append(message)


def run_worker(notebook, labels, seconds, package_files, box=None):
    """Run one worker on `notebook` for `labels` within `seconds`: in `box` (a
    sandbox.Sandbox), or, with None, only in a process of its own.

    Returns (messages, problems, how it ended: None if it exited by itself, else the
    reason it was stopped), once every process it started has ended."""
    folder = tempfile.mkdtemp(prefix="kernels-grade-")
    try:
        path = package.write(package_files, os.path.join(folder, "package"))
        copy = shutil.copyfile(notebook, os.path.join(folder, "submission.ipynb"))
        nonce = secrets.token_hex(16)
        job = {"nonce": nonce, "labels": labels, "seconds": seconds * NOTEBOOK_SHARE,
               "check_seconds": max(seconds / 4, 5)}
        if box is None:
            scratch = os.path.join(folder, "scratch")
            os.makedirs(scratch)
            job.update(notebook=copy, scratch=scratch)
            argv = _worker_command(path)
        else:
            scratch = sandbox.SCRATCH
            argv, user = box.command(_worker_command(sandbox.PACKAGE), folder, library_paths())
            job.update(notebook=sandbox.NOTEBOOK, scratch=scratch, user=user,
                       limits={"processes": box.limits.processes, "memory": box.limits.memory})
            if user is not None:
                sandbox.readable(folder)
        read_end, write_end = os.pipe()
        job["fd"] = write_end
        with open(os.path.join(folder, "log"), "wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=log,
                                    cwd=folder if box else scratch,
                                    env=_environment(scratch), pass_fds=(write_end,),
                                    start_new_session=True)
        os.close(write_end)
        messages, problems = [], []
        with os.fdopen(read_end, encoding="utf-8", errors="replace") as stream:
            reader = threading.Thread(target=_read_channel,
                                      args=(stream, nonce, messages, problems), daemon=True)
            reader.start()
            try:
                proc.stdin.write((json.dumps(job) + "\n").encode())
                proc.stdin.close()
            except OSError:  # it died at once; its exit status says more
                pass
            stopped = None
            try:
                proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                stopped = f"it ran past the time limit of {seconds:.0f} s"
            if box is None:
                _kill_group(proc)
            else:
                _kill_sandbox(proc)
            if stopped is None and proc.returncode:
                stopped = _exit_reason(proc.returncode, box is not None)
            reader.join(timeout=5)
        return messages, problems, stopped
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _worker_command(package_path):
    return [sys.executable, "-I", "-c", WORKER, str(package_path), json.dumps(library_paths())]


def _kill_sandbox(proc):
    """End the sandbox: its init (bwrap's child, the PID namespace's first process) takes
    every process of the namespace with it, and bwrap exits once they are all gone."""
    if proc.poll() is None:
        for pid in _children(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # bwrap itself hung: it takes its child along
            proc.kill()
    proc.wait()


def _children(pid):
    """The processes whose parent is `pid` (from /proc: the sandbox cannot fake it)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rindex(b")") + 2:].split()  # after the name, which may hold spaces
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def _kill_group(proc):
    """The worker and anything the notebook started, whatever state they are in."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _exit_reason(code, sandboxed=False):
    if sandboxed and code > 128:  # bwrap reports a worker killed by a signal as 128 + it
        code = 128 - code
    if code < 0:
        return f"it was killed by signal {signal.Signals(-code).name}"
    return f"it exited with status {code} before the grader had finished"


def grade(submission, package_files, timeout, box=None):
    """Grade one submission within `timeout` seconds in all: an Outcome, never an error."""
    start = time.monotonic()
    outcome = Outcome(submission)
    try:
        notebook = submissions.read(submission.path)
    except (submissions.NotebookError, OSError) as err:
        outcome.notes.append(f"Not graded: {err}")
        return outcome
    outcome.chapters = submissions.chapters(notebook)
    if not outcome.chapters:
        outcome.notes.append("Not graded: the grader could not tell which chapter this "
                             "notebook is. It has no `generated_from` metadata (the chapter "
                             "notebooks have it) and defines none of the exercises' "
                             "functions. Hand in the chapter's notebook with your answers.")
        return outcome
    left = [ex.label for ex in outcome.exercises]
    reasons = {}
    while left:
        remaining = timeout - (time.monotonic() - start)
        if remaining < 1:
            reasons.update(dict.fromkeys(left, "not graded: the time limit of "
                                         f"{timeout:.0f} s for this notebook ran out"))
            break
        messages, problems, stopped = run_worker(submission.path, left, remaining,
                                                 package_files, box)
        events = {}
        for m in messages:
            events.setdefault(m.get("event"), []).append(m)
            if m.get("event") == "exercise" and m.get("label") in left:
                outcome.results[m["label"]] = (bool(m.get("passed")), str(m.get("report")))
        first_run = not outcome.device
        outcome.device = outcome.device or (events.get("start") or [{}])[0].get("device", "")
        if first_run:
            for m in events.get("notes", []):
                outcome.notes += [str(n) for n in m.get("notes", [])]
        if problems or "tampered" in events:
            names = [n for m in events.get("tampered", []) for n in m.get("names", [])]
            outcome.results.clear()
            outcome.notes.append(
                "Not graded: the notebook interfered with the grader "
                + (f"(it changed {', '.join(f'`{n}`' for n in names)})" if names else
                   f"({problems[0]})") + ". Every exercise counts as failed.")
            reasons = {ex.label: "not graded: the notebook interfered with the grader"
                       for ex in outcome.exercises}
            break
        left = [label for label in left if label not in outcome.results]
        if "restart" in events and not stopped:
            continue  # a fresh worker grades the rest: the device is usable again there
        if left:
            cell = (events.get("cell") or [{}])[-1].get("number")
            where = ("while checking your answers" if "notes" in events else
                     f"while running code cell {cell}" if cell else "before running the notebook")
            why = stopped or "it stopped without saying why"
            outcome.notes.append(f"The grading process was stopped {where}: {why}.")
            reasons.update(dict.fromkeys(left, f"not graded: the grading process was stopped "
                                         f"{where} ({why})"))
        break
    for label, why in reasons.items():
        outcome.results.setdefault(label, (False, why))
    outcome.seconds = time.monotonic() - start
    return outcome


def grade_all(subs, jobs=None, timeout=600.0, progress=None, box=None):
    """Outcomes of `subs`, in order, graded `jobs` at a time (default: the cores), each
    in `box` (a sandbox.Sandbox), or with None only in processes of their own."""
    files = package.files()  # read once: a notebook that rewrites them changes nothing

    def one(sub):
        try:
            outcome = grade(sub, files, timeout, box)
        except Exception as err:  # the grader's own failure (a full disk): the rest go on
            outcome = Outcome(sub, notes=[f"Not graded: the grader failed on this notebook "
                                          f"({type(err).__name__}: {err}); grade it again"])
        if progress:
            progress(outcome)
        return outcome

    with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(one, subs))
