"""Grade submissions in parallel, each with processes of its own, and collect results.

Each submission gets a private temporary folder (a fresh solution-free copy of the
package and the notebook) and two jobs, one after the other:

* the judge (kernels.grading.judge), outside the sandbox and from the grader's own
  package, which checks each exercise against an answer process of its own
  (kernels.grading.answers, in the sandbox) and prints the verdicts;
* the notebook, top to bottom, in a worker (kernels.grading.worker) in the sandbox, for
  the notes in the student's feedback (a cell that raised, the time limit); nothing it
  does or says changes the grade.

With a sandbox (kernels.grading.sandbox) the student's code runs in bwrap, sees only
the package copy, the notebook and the Python installation, and has a tmpfs of its own;
without one (--unsafe-no-sandbox) it runs as the grader's user, or as another user where
the grader is root (unprivileged_user). The worker's notes come
over a pipe with a nonce; the verdicts come from the judge's stdout, which no code of
the student's can reach. Whatever happens in one submission, the others are graded.

On the simulator, each process that runs a student's code keeps to the core it started
on (kernels.grading.confine.keep_to_this_core): the simulator runs every CUDA thread as
an OS thread, and one process's threads spread over several cores fight for Python's
lock.
"""

import concurrent.futures
import dataclasses
import json
import os
import random
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import kernels
from kernels.checks import registry
from kernels.grading import machine, package, sandbox, submissions

# Of the time limit, for checking the exercises; the notebook's run for notes then has
# the rest. One after the other where cores are short: two simulator processes on one
# core slow each other far more than they take apart. Side by side where every
# notebook graded at once has a spare core (alongside) and each runs in a sandbox of its
# own, which no process of the other can see.
JUDGE_SHARE = 0.7
MAX_CHANNEL_BYTES = 8 << 20
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
              "CUDA_VISIBLE_DEVICES", "NUMBA_CUDA_DRIVER")
# -I: no environment variables, no user site, no script folder on the path; the private
# package goes first, then the folders this interpreter imports libraries from, in its
# order (a numpy put first on PYTHONPATH stays first; a user site is included, and
# addsitedir runs their .pth files, numba-cuda's import hook among them).
STUDENT = ("import json, site, sys; paths = json.loads(sys.argv[2]); "
           "sys.path[:] = [sys.argv[1]] + paths; [site.addsitedir(p) for p in paths]; "
           "from kernels.grading.{} import main; main()")
# The copy of the package each student's process imports, in the submission's folder:
# the answer processes get the one without the checkers' deciding half
# (kernels.grading.package.answer_side)
PACKAGE_OF = {"worker": "package", "answers": "answer-package"}
# The judge imports the grader's own package, from where this process found it.
JUDGE = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from kernels.grading.judge import main; main()")


def alongside(jobs, box):
    """Whether each notebook's run for notes goes beside its checking: in a sandbox (no
    process of one sees the other's), with two cores or more for each of the `jobs`
    notebooks graded at once (kernels.grading.machine.cores)."""
    return box is not None and machine.cores() >= 2 * jobs


def split(timeout, side_by_side=False):
    """How the time limit of one notebook is shared, said with the limit as given."""
    judge = timeout * JUDGE_SHARE
    if side_by_side:
        return (f"the time limit of {timeout:g} s per notebook (--timeout): up to "
                f"{judge:.0f} s ({JUDGE_SHARE:.0%}) to check its exercises, and, on "
                "another core meanwhile, the whole limit to run it for the feedback's notes")
    return (f"the time limit of {timeout:g} s per notebook (--timeout): up to {judge:.0f} "
            f"s ({JUDGE_SHARE:.0%}) to check its exercises, then what is left, at least "
            f"{timeout - judge:.0f} s, to run it for the feedback's notes")


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
    flags: dict = dataclasses.field(default_factory=dict)  # label -> what the grader could not check

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


def plain_text(value):
    """str(value) as UTF-8 can hold it: text from a student's process may carry lone
    surrogates ("\\udcff" in JSON), which no report file can be written with."""
    return str(value).encode("utf-8", "replace").decode("utf-8")


def unprivileged_user():
    """Without a sandbox, a user id for the student's processes when the grader runs as
    root (Gradescope's containers): as root they could read or rewrite the judge's
    memory; as another user they cannot. None where the grader is not root (the judge
    then makes its memory unreadable to its own user: judge.main), or where another
    user could not run this Python (an installation in root's home)."""
    if os.geteuid() != 0 or not all(map(_open_to_all, [sys.prefix, sys.base_prefix,
                                                        *library_paths()])):
        return None
    return random.SystemRandom().randrange(*sandbox.PRIVATE_UIDS)


def _open_to_all(path):
    """True if any user may read folder `path` and pass through every folder above it."""
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    while path != os.path.dirname(path):
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        path = os.path.dirname(path)
    return True


def environment(scratch):
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


def run_worker(folder, seconds, box=None, timeout=None, side_by_side=False):
    """Run the notebook in `folder` (kernels.grading.worker) within `seconds`: in `box`
    (a sandbox.Sandbox), or, with None, only in a process of its own. `timeout`: the
    notebook's whole time limit, of which `seconds` is what is left for this run, which
    goes beside the checking with `side_by_side`.

    Returns (messages, problems, how it ended: None if it exited by itself, else the
    reason it was stopped), once every process it started has ended."""
    nonce = secrets.token_hex(16)
    argv, job, cwd = student_process("worker", folder, box, os.path.join(folder, "scratch"))
    # said after "time limit": the limit as the instructor gave it, and this run's share
    limit = (f"of {seconds:.0f} s" if not timeout else
             f"(the grader gives each notebook {timeout:g} s, and ran it for these notes "
             "while it checked the exercises)" if side_by_side else
             f"(the grader gives each notebook {timeout:g} s: up to "
             f"{timeout * JUDGE_SHARE:.0f} s to check its exercises, and what is left, here "
             f"{seconds:.0f} s, to run it for these notes)")
    # The worker's limit ends at this moment on the machine's monotonic clock (one for
    # every process, the sandbox's too), not `seconds` after its own start: its start-up
    # is slow on a busy machine, and it must stop itself, with its note, before the
    # grader stops it below
    deadline = time.monotonic() + seconds
    job.update(nonce=nonce, seconds=seconds, deadline=deadline, limit=limit)
    read_end, write_end = os.pipe()
    job["fd"] = write_end
    with open(os.path.join(folder, "log"), "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=log,
                                cwd=cwd, env=environment(job["scratch"]),
                                pass_fds=(write_end,), start_new_session=True)
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
            proc.wait(timeout=max(deadline - time.monotonic(), 0) + 5)
        except subprocess.TimeoutExpired:
            stopped = f"it ran past the time limit {limit}"
        if box is None:
            kill_group(proc)
        else:
            kill_sandbox(proc)
        if stopped is None and proc.returncode:
            stopped = _exit_reason(proc.returncode, box is not None)
        reader.join(timeout=5)
    return messages, problems, stopped


def start_judge(folder, labels, seconds, box=None):
    """The judge (kernels.grading.judge) for `labels` of the notebook in `folder`, started."""
    job = {"labels": labels, "seconds": seconds, "check_seconds": max(seconds / 4, 5),
           "folder": folder, "sandboxed": box is not None,
           "limits": dataclasses.asdict(box.limits) if box else {},
           "gpu": bool(box and box.gpu), "as_root": bool(box and box.as_root)}
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    with open(os.path.join(folder, "judge.log"), "wb") as log:
        proc = subprocess.Popen([sys.executable, "-I", "-c", JUDGE, json.dumps(sys.path)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                env=env, start_new_session=True)
    proc.stdin.write((json.dumps(job) + "\n").encode())
    proc.stdin.close()
    return proc


def finish_judge(proc, seconds, timeout=None):
    """The judge's lines ({"device"} first, then one per exercise) within `seconds` (its
    share of `timeout`, the notebook's time limit), and why it was stopped (None if it
    finished)."""
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    stopped = None
    try:
        proc.wait(timeout=max(seconds, 1))
    except subprocess.TimeoutExpired:
        stopped = ("the time for checking the exercises ran out" + (
            f": {timeout * JUDGE_SHARE:.0f} s ({JUDGE_SHARE:.0%}) of the time limit of "
            f"{timeout:g} s per notebook" if timeout else f" ({seconds:.0f} s)"))
    kill_group(proc)
    reader.join(timeout=5)
    if stopped is None and proc.returncode:
        stopped = f"the grader's judge failed ({_exit_reason(proc.returncode)})"
    return [json.loads(line) for line in lines if line.strip()], stopped


def student_process(module, folder, box, scratch):
    """(argv, the job's fields, working folder) of a process that runs a student's code,
    kernels.grading.<module>, with `folder`'s package and notebook: in `box` (a
    sandbox.Sandbox), or with None in the folder `scratch`, as another user where the
    grader is root (unprivileged_user)."""
    def command(package_path):
        return [sys.executable, "-I", "-c", STUDENT.format(module), str(package_path),
                json.dumps(library_paths())]

    copy = PACKAGE_OF[module]
    if box is None:
        return command(os.path.join(folder, copy)), {
            "notebook": os.path.join(folder, "submission.ipynb"), "scratch": scratch,
            "user": unprivileged_user()}, scratch
    argv, user = box.command(command(sandbox.PACKAGE), folder, library_paths(), copy)
    return argv, {"notebook": sandbox.NOTEBOOK, "scratch": sandbox.SCRATCH, "user": user,
                  "limits": {"processes": box.limits.processes,
                             "memory": box.limits.memory}}, folder


def kill_sandbox(proc):
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


def kill_group(proc):
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


def grade(submission, package_files, timeout, box=None, side_by_side=False):
    """Grade one submission within `timeout` seconds in all: an Outcome, never an error.
    With `side_by_side` (see alongside), the notebook runs for its notes while its
    exercises are checked."""
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
    labels = [ex.label for ex in outcome.exercises]
    folder = tempfile.mkdtemp(prefix="kernels-grade-")
    try:
        package.write(package_files, os.path.join(folder, PACKAGE_OF["worker"]))
        package.write(package.answer_side(package_files),
                      os.path.join(folder, PACKAGE_OF["answers"]))
        shutil.copyfile(submission.path, os.path.join(folder, "submission.ipynb"))
        if box is None or box.as_root:  # the student's processes run as another user
            sandbox.readable(folder)
        if box is None:
            os.makedirs(os.path.join(folder, "scratch"))
            os.chmod(os.path.join(folder, "scratch"), 0o1777)
        judge = start_judge(folder, labels, timeout * JUDGE_SHARE, box)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            notes = pool.submit(run_worker, folder, timeout - (time.monotonic() - start),
                                box, timeout, True) if side_by_side else None
            verdicts, judge_stopped = finish_judge(judge, timeout * JUDGE_SHARE + 2, timeout)
            messages, problems, stopped = notes.result() if notes else run_worker(
                folder, max(timeout - (time.monotonic() - start),
                            timeout * (1 - JUDGE_SHARE)), box, timeout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for m in messages:
        if m.get("event") == "notes":
            outcome.notes += [plain_text(n) for n in m.get("notes", [])]
    if stopped:
        cell = next((m.get("number") for m in reversed(messages) if m.get("event") == "cell"),
                    None)
        where = f"while running code cell {cell}" if cell else "before running the notebook"
        outcome.notes.append(f"Running your notebook was stopped {where}: {stopped}. "
                             "Each exercise was checked on its own all the same.")
    if problems:
        outcome.notes.append(f"Your notebook wrote to the grader's notes channel "
                             f"({problems[0]}); that was ignored: it cannot change a grade.")
    for v in verdicts:
        if "device" in v:
            outcome.device = plain_text(v["device"])
        elif v.get("label") in labels:
            outcome.results[v["label"]] = (bool(v.get("passed")), plain_text(v.get("report")))
            if v.get("flag"):
                outcome.flags[v["label"]] = plain_text(v["flag"])
    for label in labels:
        if label not in outcome.results:
            why = judge_stopped or "the grader's judge stopped without saying why"
            outcome.results[label] = (False, f"not graded: {why}")
            outcome.flags[label] = why
    if outcome.flags:
        outcome.notes.append("Flagged for your instructor, who will look at it: "
                             + "; ".join(f"{k}: {v}" for k, v in outcome.flags.items()) + ".")
    outcome.seconds = time.monotonic() - start
    return outcome


def grade_all(subs, jobs=None, timeout=600.0, progress=None, box=None):
    """Outcomes of `subs`, in order, graded `jobs` at a time (default: the cores), each
    in `box` (a sandbox.Sandbox), or with None only in processes of their own."""
    # read once: a notebook that rewrites them changes nothing
    files = package.with_bytecode(package.files())
    jobs = jobs or machine.cores()
    side_by_side = alongside(jobs, box)

    def one(sub):
        try:
            outcome = grade(sub, files, timeout, box, side_by_side)
        except Exception as err:  # the grader's own failure (a full disk): the rest go on
            outcome = Outcome(sub, notes=[f"Not graded: the grader failed on this notebook "
                                          f"({type(err).__name__}: {err}); grade it again"])
        if progress:
            progress(outcome)
        return outcome

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, subs))
