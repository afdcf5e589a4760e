"""The process that grades one notebook; kernels.grading.runner starts it.

It reads its job from stdin (one JSON line: the notebook, the exercise labels, the
time limits, the result pipe's file descriptor, a nonce, its scratch folder, and in the
sandbox its limits and the user to become), then, in this order: drops to that user and
sets the limits; copies the notebook into scratch/work, its working folder; imports the
checkers and fingerprints them (tamper); runs the notebook's cells, with
checker calls inside them deferred (kernels.checks.core.DEFERRED), because printed
verdicts are never trusted; then calls each exercise's checker itself on the function
the exercise names, and sends each result over the pipe as soon as it has one, so a
later hang loses nothing already graded. Every message is a JSON line with the nonce.
A check whose kernel never returned, or that broke the CUDA context (an illegal address
is sticky), leaves the device unusable in this process, so the worker stops after it
and the runner starts a fresh one for the rest.
"""

import json
import os
import resource
import shutil
import sys

MAX_FILE_BYTES = 64 << 20  # any file the notebook writes, its output log included
MAX_REPORT_CHARS = 20_000


def _device_usable():
    """False if this process can no longer use the device (a sticky CUDA error)."""
    import numpy as np
    from numba import cuda

    try:
        cuda.to_device(np.zeros(1)).copy_to_host()
        cuda.synchronize()
    except Exception:
        return False
    return True


def _drop_editable_install():
    """An editable install of this package (`pip install -e`, as in the instructor's
    checkout) adds an import hook that finds any `kernels.*` module missing from the
    private copy in the instructor's tree, kernels.solutions included: remove it."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if "kernels" not in getattr(
        sys.modules.get(getattr(finder, "__module__", "")), "MAPPING", {})]


def _enter(job):
    """Become the sandbox's user, set its limits, and move into scratch/work with a
    copy of the notebook; returns the copy's path."""
    if job.get("user") is not None:  # root in the sandbox: become nobody in particular
        os.setgroups([])
        os.setresgid(job["user"], job["user"], job["user"])
        os.setresuid(job["user"], job["user"], job["user"])  # drops every capability
    limits = job.get("limits") or {}
    for name, value in (("NPROC", limits.get("processes")), ("DATA", limits.get("memory"))):
        if value:
            limit = getattr(resource, f"RLIMIT_{name}")
            resource.setrlimit(limit, (value, value))
    for name in ("home", "tmp", "work"):
        os.makedirs(os.path.join(job["scratch"], name), exist_ok=True)
    os.chdir(os.path.join(job["scratch"], "work"))
    return shutil.copyfile(job["notebook"], "submission.ipynb")


def main():
    _drop_editable_install()
    job = json.loads(sys.stdin.readline())
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    notebook_path = os.path.abspath(_enter(job))
    for stream in (sys.stdout, sys.stderr):  # the log: any text a notebook prints
        stream.reconfigure(encoding="utf-8", errors="replace")
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    channel = os.fdopen(job["fd"], "w", buffering=1)

    def send(event, **fields):
        channel.write(json.dumps({"nonce": job["nonce"], "event": event, **fields}) + "\n")
        channel.flush()

    import kernels
    from kernels import checks, harness, notebook_cells
    from kernels.checks import core, registry
    from kernels.grading import submissions, tamper

    core.TIME_LIMIT_S = min(core.TIME_LIMIT_S, job["check_seconds"])
    harness.live_or_recorded = harness.recorded  # timing cells show recordings: no benchmarks
    send("start", device=kernels.device()["name"])
    before = tamper.snapshot()
    notebook = submissions.read(notebook_path)
    namespace = {"__name__": "__main__"}
    core.DEFERRED = True
    try:
        notes = notebook_cells.run(notebook["cells"], namespace, job["seconds"],
                                   on_cell=lambda number: send("cell", number=number))
    except notebook_cells.NotebookTimeout:  # raised between two cells, outside their handler
        notes = ["the notebook was stopped at its time limit"]
    finally:
        core.DEFERRED = False
    send("notes", notes=notes)
    for label in job["labels"]:
        if changes := tamper.changed(before):
            send("tampered", names=changes[:10])
            break
        exercise = registry.EXERCISES[label]
        name = exercise.names[0]
        if missing := [n for n in exercise.names if n not in namespace]:
            send("exercise", label=label, passed=False,
                 report=f"Your notebook defines no `{missing[0]}`, a name the exercise asks "
                        "for (check its spelling, and that the cell defining it ran).")
            continue
        try:
            report = getattr(checks, exercise.check_name)(namespace[name])
        except Exception as err:  # the checker could not even set up the cases
            send("exercise", label=label, passed=False,
                 report=f"The checker could not run your `{name}`: "
                        f"{type(err).__name__}: {err}")
            continue
        if changes := tamper.changed(before):  # before the verdict it may have forged
            send("tampered", names=changes[:10])
            break
        send("exercise", label=label, passed=report.passed,
             report=str(report)[:MAX_REPORT_CHARS])
        if report.timed_out or not _device_usable():
            send("restart", label=label)
            break
    else:
        send("done")
    channel.close()
    os._exit(0)  # threads the notebook left running (or a stuck kernel) must not keep it


if __name__ == "__main__":
    main()
