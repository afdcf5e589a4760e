"""Ready-made grading set-ups: a Gradescope autograder and a GitHub Classroom workflow.

    python -m kernels grade-setup gradescope --out DIR
    python -m kernels grade-setup classroom --chapter CHAPTER --package SPEC --out DIR

Gradescope: DIR/autograder.zip (upload it as the assignment's autograder) holding
setup.sh, run_autograder, requirements.txt and this package without its solutions.
GitHub Classroom: DIR/.github/workflows/classroom.yml for the assignment's starter
repository: on every push it installs SPEC (the student edition's package), grades
the chapter's notebook, and reports one test per exercise with its points.
"""

import importlib.metadata
import pathlib
import zipfile

from kernels.checks import registry
from kernels.grading import package, sandbox

TIMEOUT_S = 1200  # one notebook on the simulator: a chapter runs in a few minutes
# Gradescope stops a run of the autograder at 10 minutes, and gives it half a virtual CPU
# and 768 MB, unless the assignment's settings give more (its documentation:
# gradescope-autograders.readthedocs.io, Troubleshooting). The upload's notebooks share
# 8 minutes: a notebook runs past its --timeout by up to about 17 s (the judge's 2 s of
# grace and the waits for its output, the notes run's 5 s and the wait for its output),
# and the grader starts slowly at half a CPU, so that a notebook that never ends still
# gets its grade and feedback rather than a run Gradescope stopped.
GRADESCOPE_S = 600
GRADESCOPE_TIMEOUT_S = 480

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder's image.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -q -r /autograder/source/requirements.txt
"""

RUN_AUTOGRADER = f"""\
#!/usr/bin/env bash
# Gradescope runs this for every submission: the notebook(s) the student uploaded are
# in /autograder/submission. Gradescope has no GPU: the kernels run on the simulator,
# where the checkers' race case (the tracer) finds races a GPU would show.
# Gradescope gives every submission a container of its own, so the grader needs no OS
# sandbox here ({sandbox.ISOLATED_BY}): it uses one only where the container allows it.
# The upload's notebooks (as the grader finds them) share {GRADESCOPE_TIMEOUT_S} s: Gradescope
# stops a run at {GRADESCOPE_S // 60} minutes unless its settings allow more.
cd /autograder/source
export {sandbox.ISOLATED_BY}=gradescope
n=$(find /autograder/submission -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | wc -l)
timeout=$(( {GRADESCOPE_TIMEOUT_S} / (n > 1 ? n : 1) ))
[ "$timeout" -ge 10 ] || timeout=10
PYTHONPATH=/autograder/source NUMBA_ENABLE_CUDASIM=1 /autograder/venv/bin/python \\
  -m kernels grade /autograder/submission --out /autograder/grades --gradescope \\
  --jobs 1 --timeout "$timeout"
cp /autograder/grades/results.json /autograder/results/results.json
"""


def requirements():
    """What the grader needs, numba-cuda pinned to the version this package runs with,
    with its CUDA compiler (the grader compiles each kernel answer for a GPU, even on the
    simulator: kernels.grading.judge)."""
    return "\n".join([f"numba-cuda[cu13]=={importlib.metadata.version('numba-cuda')}",
                      "numpy>=1.24,<2.5", "matplotlib", "requests", "tqdm", ""])


def gradescope(out):
    """Write out/autograder.zip; return its path."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "autograder.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER),
                           ("requirements.txt", requirements())):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable, as Gradescope runs them
            z.writestr(info, text)
        for rel, data in package.files().items():
            z.writestr(str(rel), data)
    return path


def _step(ex):
    return f"""\
      - name: {ex.label} ({ex.difficulty})
        id: {ex.label}
        if: always()  # a notebook that could not be graded scores 0, it does not stop here
        uses: classroom-resources/autograding-command-grader@v1
        with:
          test-name: {ex.label}
          command: python -m kernels grade-passed grades/grades.csv {ex.label}
          timeout: 1
          max-score: {ex.points}
"""


def classroom(out, chapter, spec, notebook=None):
    """Write out/.github/workflows/classroom.yml for `chapter`; return its path."""
    exercises = registry.by_chapter(chapter)
    if not exercises:
        chapters = sorted({ex.chapter for ex in registry.EXERCISES.values()})
        raise ValueError(f"no exercises in a chapter called {chapter!r}; chapters with "
                         f"exercises: {', '.join(chapters)}")
    notebook = notebook or f"{chapter}.ipynb"
    runners = ",".join(ex.label for ex in exercises)
    results = "".join(f'          {ex.label.upper()}_RESULTS: '
                      f'"${{{{steps.{ex.label}.outputs.result}}}}"\n' for ex in exercises)
    text = f"""\
# GitHub Classroom autograding for the {chapter} chapter (python -m kernels grade-setup).
# Runs on GitHub's CPU runners: the kernels run on the Numba CUDA simulator, where the
# checkers' race case (the tracer) finds races a GPU would show. Each push
# gets a fresh runner of its own, so the grader needs no OS sandbox here
# ({sandbox.ISOLATED_BY}): it uses one only where the runner allows it.
name: Autograding
on: [push, repository_dispatch, workflow_dispatch]
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  grade:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: {TIMEOUT_S // 60 + 10}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install the course's package (the student edition has no solutions)
        run: pip install "{spec}" "numba-cuda[cu13]=={importlib.metadata.version('numba-cuda')}"
      - name: Grade {notebook}
        env:
          NUMBA_ENABLE_CUDASIM: "1"
          {sandbox.ISOLATED_BY}: github-classroom
        run: python -m kernels grade "{notebook}" --out grades --timeout {TIMEOUT_S}
      - name: Keep the feedback
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: feedback
          path: grades/
{"".join(_step(ex) for ex in exercises)}\
      - name: Autograding Reporter
        if: always()
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
{results}\
        with:
          runners: {runners}
"""
    path = pathlib.Path(out) / ".github" / "workflows" / "classroom.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
