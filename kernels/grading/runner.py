"""Grade submissions in parallel, each in worker processes of its own, and collect results.

Each submission gets a private temporary folder (its working directory, home and a
fresh solution-free copy of the package), a clean environment, and a time limit for
everything it runs; its worker reports over a pipe, and only messages that carry the
submission's nonce count. Whatever happens in one submission, the others are graded.
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
from kernels.grading import package, submissions

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


def _library_paths():
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


def _environment(home):
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env.update(HOME=home, TMPDIR=home, MPLBACKEND="Agg", MPLCONFIGDIR=home,
               NUMBA_CACHE_DIR=home,
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


def run_worker(notebook, labels, seconds, package_files):
    """Run one worker on `notebook` for `labels` within `seconds`.

    Returns (messages, problems, how it ended: None if it exited by itself, else the
    reason it was stopped)."""
    folder = tempfile.mkdtemp(prefix="kernels-grade-")
    try:
        home, work = os.path.join(folder, "home"), os.path.join(folder, "work")
        os.makedirs(home)
        os.makedirs(work)
        path = package.write(package_files, os.path.join(folder, "package"))
        copy = shutil.copy(notebook, os.path.join(work, "submission.ipynb"))
        read_end, write_end = os.pipe()
        nonce = secrets.token_hex(16)
        job = {"nonce": nonce, "notebook": copy, "labels": labels, "fd": write_end,
               "seconds": seconds * NOTEBOOK_SHARE, "check_seconds": max(seconds / 4, 5)}
        with open(os.path.join(folder, "log"), "wb") as log:
            proc = subprocess.Popen([sys.executable, "-I", "-c", WORKER, str(path),
                                     json.dumps(_library_paths())],
                                    stdin=subprocess.PIPE, stdout=log, stderr=log, cwd=work,
                                    env=_environment(home), pass_fds=(write_end,),
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
            _kill_group(proc)
            if stopped is None and proc.returncode:
                stopped = _exit_reason(proc.returncode)
            reader.join(timeout=5)
        return messages, problems, stopped
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _kill_group(proc):
    """The worker and anything the notebook started, whatever state they are in."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _exit_reason(code):
    if code < 0:
        return f"it was killed by signal {signal.Signals(-code).name}"
    return f"it exited with status {code} before the grader had finished"


def grade(submission, package_files, timeout):
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
                                                 package_files)
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


def grade_all(subs, jobs=None, timeout=600.0, progress=None):
    """Outcomes of `subs`, in order, graded `jobs` at a time (default: the cores)."""
    files = package.files()  # read once: a notebook that rewrites them changes nothing

    def one(sub):
        try:
            outcome = grade(sub, files, timeout)
        except Exception as err:  # the grader's own failure (a full disk): the rest go on
            outcome = Outcome(sub, notes=[f"Not graded: the grader failed on this notebook "
                                          f"({type(err).__name__}: {err}); grade it again"])
        if progress:
            progress(outcome)
        return outcome

    with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(one, subs))
