"""Which files are submissions, what they are called, and which chapter each answers."""

import json

import pytest

from kernels.grading import submissions
from planted import notebook, write


def test_collect_names_files_and_folders_uniquely(tmp_path):
    for who in ("alice", "bob"):
        (tmp_path / "class" / who).mkdir(parents=True)
        write(notebook(["x = 1"]), tmp_path / "class" / who / "gridstride.ipynb")
    (tmp_path / "class" / "alice" / ".ipynb_checkpoints").mkdir()
    write(notebook(["x = 1"]), tmp_path / "class" / "alice" / ".ipynb_checkpoints" / "a.ipynb")
    (tmp_path / "class" / "notes.txt").write_text("not graded")
    single = write(notebook(["x = 1"]), tmp_path / "alice gridstride.ipynb")
    found = submissions.collect([tmp_path / "class", single, single])
    assert [s.name for s in found] == ["alice", "bob", "alice_gridstride",
                                       "alice_gridstride-2"]


def test_a_notebook_named_for_its_chapter_is_named_by_its_folder(tmp_path):
    """Every student's copy is gridstride.ipynb: passed as files or as a folder, each is
    named by the folder that holds it; one student's two chapters keep the file's name."""
    for who in ("alice", "bob", "carol"):
        (tmp_path / "class" / who).mkdir(parents=True)
        write(notebook(["x = 1"]), tmp_path / "class" / who / "gridstride.ipynb")
    write(notebook(["x = 1"]), tmp_path / "class" / "alice" / "atomics.ipynb")
    write(notebook(["x = 1"]), tmp_path / "class" / "carol" / "Copy of gridstride (1).ipynb")
    files = [tmp_path / "class" / who / "gridstride.ipynb" for who in ("alice", "bob")]
    assert [s.name for s in submissions.collect(files)] == ["alice", "bob"]
    assert [s.name for s in submissions.collect([tmp_path / "class"])] == [
        "alice-atomics", "alice-gridstride", "bob", "carol-Copy_of_gridstride_1_",
        "carol-gridstride"]
    assert [s.name for s in submissions.collect([tmp_path / "class" / "bob"])] == ["bob"]


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.ipynb", "no such file or folder"),
    (lambda p: p, "holds no notebook"),
    (lambda p: (p / "a.py").write_text("x") and p / "a.py", "not a notebook (.ipynb)"),
])
def test_collect_says_what_is_wrong_and_what_is_accepted(tmp_path, make, message):
    with pytest.raises(submissions.SubmissionError) as err:
        submissions.collect([make(tmp_path)])
    assert message in str(err.value) and submissions.ACCEPTED in str(err.value)


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe", "not text"),
    (b"{oops", "not valid JSON (line 1, column 2"),
    (b"[1, 2]", "not a Jupyter notebook"),
    (b'{"cells": [{"source": 3}]}', "not a Jupyter notebook"),
])
def test_read_explains_a_broken_notebook(tmp_path, content, message):
    path = tmp_path / "x.ipynb"
    path.write_bytes(content)
    with pytest.raises(submissions.NotebookError, match=message.replace("(", r"\(")):
        submissions.read(path)


def test_chapters_from_metadata_else_from_the_code():
    assert submissions.chapters(notebook(["pass"], "mutex")) == ["mutex"]
    by_code = notebook(["def topk(x, blocks):\n    pass",
                        "print(checks.saxpy(k))",
                        "matvec_tiled_kernel = make()"])
    assert submissions.chapters(by_code) == ["gridstride", "reduction", "matmul"]
    assert submissions.chapters(notebook(["topk_value = 3\nx == topk"])) == []
    unknown = json.loads(json.dumps(notebook(["def topk(): pass"], "intro")))
    assert submissions.chapters(unknown) == ["reduction"]  # no exercises there: the code says
