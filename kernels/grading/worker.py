"""The process that runs one notebook, top to bottom, for its notes; the runner starts it.

It decides nothing about the grade. It reads its job from stdin (one JSON line: the
notebook, the time limit and how it was shared, the notes pipe's file descriptor, a
nonce, its scratch folder, and in the sandbox its limits and the user to become),
enters the sandbox (kernels.grading.confine), copies the notebook into scratch/work,
runs its cells (kernels.notebook_cells) with checker calls inside them deferred
(kernels.checks.core.DEFERRED: the judge checks every answer itself), and sends what
went wrong in them (a cell that raised, a syntax error, the time limit) for the
student's feedback. Messages are JSON lines with the nonce; the grader treats them as
notes only, whatever they say.
"""

import json
import os
import shutil
import sys
import time

from kernels.grading import confine


def main():
    confine.drop_editable_install()
    job = json.loads(sys.stdin.readline())
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    confine.enter(job)
    notebook_path = os.path.abspath(shutil.copyfile(job["notebook"], "submission.ipynb"))
    for stream in (sys.stdout, sys.stderr):  # the log: any text a notebook prints
        stream.reconfigure(encoding="utf-8", errors="replace")
    channel = os.fdopen(job["fd"], "w", buffering=1)

    def send(event, **fields):
        channel.write(json.dumps({"nonce": job["nonce"], "event": event, **fields}) + "\n")
        channel.flush()

    from kernels import harness, notebook_cells
    from kernels.checks import core
    from kernels.grading import submissions

    harness.live_or_recorded = harness.recorded  # timing cells show recordings: no benchmarks
    send("start")
    notebook = submissions.read(notebook_path)
    core.DEFERRED = True
    try:
        notes = notebook_cells.run(notebook["cells"], {"__name__": "__main__"},
                                   max(job["deadline"] - time.monotonic(), 1.0),
                                   on_cell=lambda number: send("cell", number=number),
                                   limit=job.get("limit"),
                                   explain=lambda err: confine.limit_reached(
                                       err, job.get("limits")))
    except notebook_cells.NotebookTimeout:  # raised between two cells, outside their handler
        limit = job.get("limit") or f"of {job['seconds']:.0f} s"
        notes = [f"the notebook was stopped: it ran past its time limit {limit}"]
    send("notes", notes=notes)
    channel.close()
    os._exit(0)  # threads the notebook left running (or a stuck kernel) must not keep it


if __name__ == "__main__":
    main()
