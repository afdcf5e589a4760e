"""The OS sandbox (kernels.grading.sandbox), end to end: one grading run of the notebooks
of tests/hostile.escapes, aimed at real targets on this machine, with a correct
grid-stride notebook in the same run; then what each attempt left behind, on the host.
Also the refusal to grade where the sandbox cannot run.
"""

import os
import pathlib
import secrets
import socket
import subprocess
import sys
import time

import pytest

import hostile
import kernels
import planted
from kernels.checks import registry
from test_grading import ROOT, grade

TIMEOUT_S = 20  # for one notebook: the detached process sleeps past it
# Small, so that the fork bomb, the hoard and the flood reach them soon on two cores
LIMITS = ("--max-processes", "200", "--max-memory", "1500M", "--max-disk", "256M")


def correct_gridstride():
    labels = [ex.label for ex in registry.by_chapter("gridstride")]
    return planted.notebook([planted.answer_cell("gridstride", planted.solution_source(
        "gridstride"), labels)], "gridstride")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Grade the hostile notebooks with a correct one: what they aimed at, and what the
    grader wrote, read as soon as it had finished."""
    folder = tmp_path_factory.mktemp("sandbox")
    (folder / "in").mkdir()
    home = folder / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the instructor's")
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    listener.setblocking(False)
    out = folder / "out"
    targets = {"other": str(planted.write(correct_gridstride(), folder / "in" / "correct.ipynb")),
               "out": str(out), "secret": str(home / "secret.txt"),
               "answers": str(ROOT / "kernels" / "solutions"),
               "port": listener.getsockname()[1], "sleep": TIMEOUT_S + 2,
               "marker": f"hostile{secrets.token_hex(4)}"}
    cases = hostile.escapes(targets)
    for name, (nb, _, _) in cases.items():
        planted.write(nb, folder / "in" / f"{name}.ipynb")
    start = time.monotonic()
    rows, feedback = grade([folder / "in"], out, "--jobs", "2", "--timeout", str(TIMEOUT_S),
                           *LIMITS, env={"HOME": str(home)})
    written = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    yield {"rows": rows, "feedback": feedback, "cases": cases, "targets": targets,
           "out": out, "written": written, "start": start, "listener": listener}
    listener.close()


@pytest.mark.parametrize("name", list(hostile.escapes(dict.fromkeys(hostile.TARGETS, 0))))
def test_each_attempt_fails_and_the_feedback_notes_it(run, name):
    _, points, lines = run["cases"][name]
    assert run["rows"][name]["total"] == str(points), run["feedback"][name]
    for line in lines:
        assert line in run["feedback"][name], (line, run["feedback"][name])


def test_the_other_submission_is_graded_as_if_alone(run):
    row, text = run["rows"]["correct"], run["feedback"]["correct"]
    assert (row["total"], row["possible"]) == ("6", "6"), text
    assert "Notes on your notebook" not in text, text


def test_nothing_outside_the_sandbox_was_touched(run):
    with pytest.raises(BlockingIOError):  # no connection reached the grader's machine
        run["listener"].accept()
    assert not (pathlib.Path(sys.prefix) / "hostile.txt").exists()


def test_detached_processes_end_with_the_sandbox(run):
    """No process of the sandbox outlives it: the one that slept past the time limit is
    gone when grading ends, and the gradebook stays as the grader wrote it."""
    marker = run["targets"]["marker"]
    names = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            names.append(pathlib.Path(f"/proc/{entry}/comm").read_text().strip())
        except OSError:
            continue
    assert marker not in names
    time.sleep(max(0.0, run["start"] + run["targets"]["sleep"] + 2 - time.monotonic()))
    after = {p: p.read_bytes() for p in run["out"].rglob("*") if p.is_file()}
    assert after == run["written"]


def test_without_a_sandbox_the_grader_refuses_unless_told(tmp_path):
    """Where bwrap cannot run, grading stops before it starts and says why; the unsafe
    flag, or a service that isolates each submission, lets it go on."""
    path = tmp_path / "broken.ipynb"  # graded at once: no notebook to run
    path.write_text("{")
    missing = {"KERNELS_BWRAP": str(tmp_path / "no-bwrap")}
    env = dict(os.environ, **missing, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    proc = subprocess.run([sys.executable, "-m", "kernels", "grade", str(path), "--out",
                           str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "the OS sandbox cannot run here" in proc.stderr
    assert "--unsafe-no-sandbox" in proc.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()
    for extra in (["--unsafe-no-sandbox"], []):
        service = {} if extra else {"KERNELS_ISOLATED_BY": "gradescope"}
        rows, feedback = grade([path], tmp_path / f"out{len(extra)}", *extra,
                               env={**missing, **service})
        assert "not valid JSON" in feedback["broken"]


@pytest.mark.parametrize("option, value, said", [
    ("--max-memory", "lots", "'lots' is not a size"),
    ("--max-disk", "0", "'0' is not a size"),
    ("--max-processes", "10", "--max-processes must be at least 64")])
def test_bad_limits_are_refused_with_what_is_accepted(tmp_path, option, value, said):
    proc = subprocess.run([sys.executable, "-m", "kernels", "grade", str(tmp_path), "--out",
                           str(tmp_path / "out"), option, value], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
