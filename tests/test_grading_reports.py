"""What grading writes, and the Gradescope and GitHub Classroom set-ups."""

import csv
import pathlib
import stat
import subprocess
import zipfile

import pytest
import yaml

from kernels.checks import registry
from kernels.grading import autograders, reports
from kernels.grading.runner import Outcome
from kernels.grading.submissions import Submission


def outcome(name, results, chapters=("gridstride",), notes=()):
    return Outcome(Submission(name, pathlib.Path(f"/in/{name}.ipynb")), list(chapters),
                   "simulator", results, list(notes), 1.0)


SOME = outcome("alice", {"gridstride-ex-saxpy": (True, "saxpy: all 9 checks passed."),
                         "gridstride-ex-clip": (False, "clip_2d: 1 of 6 checks failed.")},
               notes=["code cell 3 (`1 / 0`) raised ZeroDivisionError"])
NONE = outcome("bob", {}, chapters=(), notes=["Not graded: the file is not a notebook"])


def test_grades_csv_has_a_column_per_exercise_graded_and_the_totals(tmp_path):
    reports.write_grades([SOME, NONE], tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as f:
        alice, bob = csv.DictReader(f)
    # the chapters graded only: a gridstride assignment's gradebook has its 3 exercises
    assert list(alice)[3:-5] == [ex.label for ex in registry.by_chapter("gridstride")]
    assert (alice["gridstride-ex-saxpy"], alice["gridstride-ex-clip"],
            alice["gridstride-ex-reverse"]) == ("1", "0", "0")
    assert (alice["total"], alice["possible"], alice["device"], alice["notes"]) == (
        "1", "6", "simulator", "1")
    assert (bob["total"], bob["possible"], bob["chapters"], bob["gridstride-ex-saxpy"]) == (
        "0", "0", "", "")
    carol = outcome("carol", {"mutex-ex-argmax": (True, "lock_argmax: all 4 checks passed.")},
                    chapters=("mutex",))
    reports.write_grades([carol, SOME], tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as f:
        carol, alice = csv.DictReader(f)
    assert list(alice)[3:-5] == [ex.label for ex in registry.EXERCISES.values()
                                 if ex.chapter in ("gridstride", "mutex")]  # book order
    assert (carol["mutex-ex-argmax"], carol["gridstride-ex-saxpy"], alice["mutex-ex-bins"]) \
        == ("2", "", "")


def test_feedback_gives_each_verdict_with_its_explanation():
    text = reports.feedback(SOME)
    assert "Score: **1 of 6 points**" in text and "ZeroDivisionError" in text
    assert "## gridstride-ex-saxpy: PASS, 1 of 1 point (easy)" in text
    assert "## gridstride-ex-clip: FAIL, 0 of 2 points (medium)" in text
    assert "clip_2d: 1 of 6 checks failed." in text
    assert "## gridstride-ex-reverse: FAIL, 0 of 3 points (harder)" in text


def test_gradescope_results(tmp_path):
    results = reports.gradescope([SOME])
    assert results["score"] == 1 and len(results["tests"]) == 3
    assert results["test_output_format"] == "text"  # a report's lines kept as written
    assert results["tests"][0] == {"name": "gridstride-ex-saxpy (easy)", "score": 1,
                                   "max_score": 1, "status": "passed",
                                   "output": "saxpy: all 9 checks passed.",
                                   "visibility": "visible"}
    empty = reports.gradescope([], note="x.txt: not a notebook (.ipynb)")
    assert empty["score"] == 0 and empty["tests"] == []
    assert empty["output"].startswith("x.txt: not a notebook")


def test_grade_passed_reads_the_csv(tmp_path):
    reports.write_grades([SOME], tmp_path / "grades.csv")
    assert reports.passed(tmp_path / "grades.csv", "gridstride-ex-saxpy")[0]
    ok, message = reports.passed(tmp_path / "grades.csv", "gridstride-ex-clip")
    assert not ok and "alice: 0" in message
    ok, message = reports.passed(tmp_path / "grades.csv", "atomics-ex-256")  # not graded
    assert not ok and "no notebook graded in" in message and "atomics chapter" in message
    with pytest.raises(ValueError, match="'saxpy' is not an exercise's label"):
        reports.passed(tmp_path / "grades.csv", "saxpy")


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.csv", "there is no such file"),
    (lambda p: p, "is a folder"),
    (lambda p: (p / "a.ipynb").write_text('{"cells": []}') and p / "a.ipynb",
     "it has no `submission` column"),
    (lambda p: (p / "b.csv").write_bytes(b"\xff\xfe\x00") and p / "b.csv", "could not be read"),
])
def test_grade_passed_says_what_is_wrong_with_the_file(tmp_path, make, message):
    with pytest.raises(ValueError, match=message) as err:
        reports.passed(make(tmp_path), "gridstride-ex-saxpy")
    assert "give the grades.csv that `python -m kernels grade` wrote" in str(err.value)


def test_gradescope_autograder_zip_has_the_scripts_and_no_solutions(tmp_path):
    with zipfile.ZipFile(autograders.gradescope(tmp_path)) as z:
        names = z.namelist()
        for script in ("setup.sh", "run_autograder"):
            assert z.getinfo(script).external_attr >> 16 & stat.S_IXUSR
        run = z.read("run_autograder").decode()
        assert "--gradescope" in run and "/autograder/results/results.json" in run
        assert "export KERNELS_ISOLATED_BY=gradescope\n" in run  # no sandbox needed there
        assert "numba-cuda[cu13]==" in z.read("requirements.txt").decode()
    assert "kernels/checks/core.py" in names and "kernels/grading/worker.py" in names
    assert not [n for n in names if "solutions" in n or n.endswith(".pyc")]
    assert any(n.startswith("kernels/recordings/") for n in names)


@pytest.mark.parametrize("notebooks, each", [
    (["a.ipynb"], autograders.GRADESCOPE_TIMEOUT_S),
    (["a.ipynb", "x/b.ipynb", "x/.ipynb_checkpoints/b-checkpoint.ipynb", "notes.txt"],
     autograders.GRADESCOPE_TIMEOUT_S // 2),
    ([f"n{i}.ipynb" for i in range(100)], 10)])
def test_gradescope_s_run_gives_the_upload_s_notebooks_a_share_each(tmp_path, notebooks, each):
    """Together within Gradescope's default limit for a run, with time to spare for what
    the grader does past each notebook's --timeout (autograders.GRADESCOPE_TIMEOUT_S)."""
    assert autograders.GRADESCOPE_TIMEOUT_S + 60 < autograders.GRADESCOPE_S
    for name in notebooks:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    script = autograders.RUN_AUTOGRADER.replace("/autograder/submission", str(tmp_path))
    share = script[script.index("n=$("):script.index("PYTHONPATH=")] + 'echo "$timeout"\n'
    said = subprocess.run(["bash", "-c", share], capture_output=True, text=True, check=True)
    assert int(said.stdout) == each
    assert '--timeout "$timeout"' in script


def test_the_instructors_page_gives_the_gradescope_limit_the_autograder_sets():
    """instructors.md: "Gradescope ... stops it after 10 minutes. The autograder gives the
    notebooks of an upload 8 minutes together"."""
    page = " ".join((pathlib.Path(__file__).resolve().parents[1] / "book" /
                     "instructors.md").read_text().split())
    limit = autograders.GRADESCOPE_TIMEOUT_S
    assert limit % 60 == 0
    assert f"stops it after {autograders.GRADESCOPE_S // 60} minutes" in page
    assert f"gives the notebooks of an upload {limit // 60} minutes together" in page


def test_classroom_workflow_has_one_test_per_exercise(tmp_path):
    path = autograders.classroom(tmp_path, "reduction", "git+https://github.com/u/course-student")
    flow = yaml.safe_load(path.read_text())
    steps = flow["jobs"]["grade"]["steps"]
    tests = [s for s in steps if s.get("uses", "").startswith(
        "classroom-resources/autograding-command-grader")]
    assert [t["id"] for t in tests] == [ex.label for ex in registry.by_chapter("reduction")]
    assert sum(t["with"]["max-score"] for t in tests) == 8
    assert all("grade-passed grades/grades.csv" in t["with"]["command"] for t in tests)
    grading, = [s for s in steps if "python -m kernels grade \"reduction.ipynb\"" in s.get("run", "")]
    assert grading["env"]["KERNELS_ISOLATED_BY"] == "github-classroom"  # no sandbox needed
    reporter = steps[-1]
    assert reporter["with"]["runners"] == ",".join(t["id"] for t in tests)
    assert set(reporter["env"]) == {f"{t['id'].upper()}_RESULTS" for t in tests}
    with pytest.raises(ValueError, match="chapters with exercises: atomics"):
        autograders.classroom(tmp_path, "intro", "x")
