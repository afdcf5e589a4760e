"""The grading sub-commands' command line (kernels.grading.cli): errors said in a
sentence under the sub-command's own usage, and nothing left behind by a command that
failed."""

import pytest

from kernels.__main__ import main
from kernels.grading import runner
from planted import ROOT, notebook, write


def _error(capsys, argv):
    """(usage line, error line) of a command that fails as argparse fails: exit 2."""
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    return lines[0], lines[-1]


@pytest.mark.parametrize("argv, usage, message", [
    (["grade", "--out", "{out}", "{tmp}/missing.ipynb"], "grade",
     "missing.ipynb: no such file or folder; the grader takes notebooks (.ipynb)"),
    (["grade", "--out", "{out}", "--jobs", "0", "{tmp}"], "grade", "--jobs must be at least 1"),
    (["grade", "--out", "{out}", "--timeout", "5", "{tmp}"], "grade",
     "--timeout is the time for one whole notebook, at least 10 s; got 5"),
    (["grade-passed", "{tmp}/grades.csv", "gridstride-ex-saxpy"], "grade-passed",
     "grades.csv: there is no such file; give the grades.csv that `python -m kernels grade` "
     "wrote into its --out folder"),
    (["grade-passed", "{tmp}", "saxpy"], "grade-passed", "'saxpy' is not an exercise's label"),
    (["grade-setup", "classroom", "--out", "{out}"], "grade-setup",
     "grade-setup classroom needs --chapter and --package"),
])
def test_an_error_shows_the_sub_command_s_usage_and_leaves_no_folder(tmp_path, capsys, argv,
                                                                     usage, message):
    out = tmp_path / "graded"
    argv = [a.format(out=out, tmp=tmp_path) for a in argv]
    first, last = _error(capsys, argv)
    assert first.startswith(f"usage: python -m kernels {usage} "), first
    assert last.startswith(f"python -m kernels {usage}: error: ") and message in last, last
    assert not out.exists()


def test_an_out_that_is_a_file_is_refused(tmp_path, capsys):
    nb = write(notebook(["x = 1"], "gridstride"), tmp_path / "gridstride.ipynb")
    (tmp_path / "graded").write_text("not a folder")
    _, last = _error(capsys, ["grade", "--out", str(tmp_path / "graded"), str(nb)])
    assert "a file of that name is there; --out names the folder" in last


def test_gradescope_is_told_why_nothing_was_graded(tmp_path, capsys):
    out = tmp_path / "graded"
    _error(capsys, ["grade", "--gradescope", "--out", str(out), str(tmp_path / "x.txt")])
    assert "no such file or folder" in (out / "results.json").read_text()


def test_the_time_limit_is_said_as_given_with_its_split():
    text = runner.split(60)
    share = round(60 * runner.JUDGE_SHARE)
    assert text.startswith("the time limit of 60 s per notebook (--timeout): ")
    assert f"up to {share} s ({runner.JUDGE_SHARE:.0%}) to check its exercises" in text
    assert f"what is left, at least {60 - share} s, to run it for the feedback's notes" in text


def test_side_by_side_the_notes_run_has_the_whole_limit(monkeypatch):
    text = runner.split(60, side_by_side=True)
    assert f"up to {round(60 * runner.JUDGE_SHARE)} s ({runner.JUDGE_SHARE:.0%}) to check" in text
    assert "on another core meanwhile, the whole limit to run it" in text


@pytest.mark.parametrize("cores, jobs, box, side", [
    (2, 1, True, True), (4, 2, True, True), (2, 2, True, False), (1, 1, True, False),
    (8, 1, False, False)])
def test_notes_run_beside_the_checks_only_in_a_sandbox_with_a_spare_core(
        monkeypatch, cores, jobs, box, side):
    """Without a sandbox the notebook's code could reach the answer processes (the same
    user, the same process namespace): it runs only once the judge has finished."""
    monkeypatch.setattr(runner.machine, "cores", lambda: cores)
    assert runner.alongside(jobs, object() if box else None) is side


def test_the_instructors_page_gives_the_split_the_runner_makes():
    page = (ROOT / "book" / "instructors.md").read_text()
    assert f"within {runner.JUDGE_SHARE:.0%} of the time" in page
    assert f"never less than {1 - runner.JUDGE_SHARE:.0%} of it" in page
