"""The notebooks on a fresh Google Colab runtime, emulated (tests/colab_runtime.py).

Each chapter runs in a runtime of its own, as each Colab notebook does: Colab's
Python and preinstalled packages, nothing of the course, the book's repository
redirected to a snapshot of this tree. Its first cell must install the course,
keep the numpy and numba the runtime started with (or say so), find no GPU here and
fall back to the simulator with its note, and every cell must run, in one runtime
that never restarts. `make test` runs two chapters and one of the student edition;
`make colab` runs every chapter of both (COLAB_CHAPTERS=all).
"""

import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import colab_runtime

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import notebooks  # noqa: E402
import student  # noqa: E402

OWNER, REPO, BRANCH = notebooks.book_settings(ROOT)
STUDENT_REPOSITORY = f"https://github.com/{OWNER}/{REPO}-student"
ALL = os.environ.get("COLAB_CHAPTERS") == "all"
CHAPTERS = notebooks.chapters(ROOT) if ALL else ["book/gridstride", "book/atomics"]
STUDENT_CHAPTERS = notebooks.chapters(ROOT) if ALL else ["book/mutex"]


def run_edition(tmp, tree, repository, names):
    """Generate the notebooks of the book at `tree`, run `names` in fresh runtimes:
    {name: (returncode, log, executed notebook or None)} and the snapshot's commit."""
    commit = colab_runtime.prepare(tmp, tree, repository, BRANCH)
    generated = notebooks.generated(tree)
    python = colab_runtime.colab_python()[0]

    def one(name):
        out = tmp / name.replace("/", "-")
        out.mkdir()
        path = out / f"{pathlib.Path(name).name}.ipynb"
        path.write_text(generated[tree / f"{name}.ipynb"])
        runtime = colab_runtime.fresh_runtime(out / "runtime", python)
        env = colab_runtime.kernel_env(runtime, tmp / "gitconfig", tmp / "home")
        proc = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "colab_runtime.py"), str(path), str(runtime),
             str(out / "executed")], capture_output=True, text=True, timeout=1500,
            env=dict(os.environ, COLAB_KERNEL_ENV=json.dumps(env)), cwd=out)
        executed = out / "executed" / path.name
        nb = json.loads(executed.read_text()) if executed.exists() else None
        return name, (proc.returncode, proc.stdout + proc.stderr, nb)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, names)), commit


@pytest.fixture(scope="module")
def book_runs(tmp_path_factory):
    return run_edition(tmp_path_factory.mktemp("colab"), ROOT,
                       f"https://github.com/{OWNER}/{REPO}", CHAPTERS)


@pytest.fixture(scope="module")
def student_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("colab-student")
    src = tmp / "student-src"
    student.copy_sources(ROOT, src, repository=STUDENT_REPOSITORY, branch=BRANCH)
    return run_edition(tmp, src, STUDENT_REPOSITORY, STUDENT_CHAPTERS)


def check_run(name, result, repository, commit):
    code, log, nb = result
    assert code == 0 and nb is not None, f"{name} failed on the emulated Colab runtime:\n{log[-5000:]}"
    seen = colab_runtime.probes(nb)
    first = seen["first_cell"]
    # the install happened, from the (redirected) repository, at the tree under test
    assert f"Installing numba-cuda[cu12]=={notebooks.numba_cuda_version(ROOT)}" in first, first
    assert f"git+{repository}@{BRANCH}" in first, first
    source = seen["after"]["kernels_from"]
    assert source["url"] == repository and source["vcs_info"]["commit_id"] == commit, source
    assert seen["after"]["numba_cuda"] == notebooks.numba_cuda_version(ROOT)
    # numpy and numba: as the runtime started, on disk and in memory, or the student is told
    for package, before in seen["before"]["disk"].items():
        after = seen["after"]["disk"][package]
        told = "Restart session" in first
        assert after == before or told, f"{name}: the first cell changed {package} {before} " \
            f"-> {after} under the running kernel without telling the student:\n{first}"
        loaded = seen["after"]["loaded"].get(package)
        assert loaded in (None, after) or told, f"{name}: {package} {loaded} in memory, " \
            f"{after} on disk"
    # no GPU here: the first kernel launch fails, and the first cell says so plainly
    assert "This runtime has no GPU." in first and "T4 GPU" in first, first
    assert "simulator" in first and "Traceback" not in first, first
    assert seen["after"]["simulator"] is True
    assert seen["end"]["same_runtime"], f"{name}: the runtime restarted: the student's place is lost"


@pytest.mark.colab
@pytest.mark.needs("jupytext", "nbformat", "nbclient", "ipykernel")
@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_runs_on_a_fresh_colab_runtime(book_runs, name):
    runs, commit = book_runs
    check_run(name, runs[name], f"https://github.com/{OWNER}/{REPO}", commit)


@pytest.mark.colab
@pytest.mark.needs("jupytext", "nbformat", "nbclient", "ipykernel")
@pytest.mark.parametrize("name", STUDENT_CHAPTERS)
def test_student_chapter_runs_on_a_fresh_colab_runtime(student_runs, name):
    runs, commit = student_runs
    check_run(name, runs[name], STUDENT_REPOSITORY, commit)
    text = json.dumps(runs[name][2])
    assert "Solution to Exercise" not in text, f"{name}: the student notebook shows a solution"



GPU_RECORD = ROOT / "book" / "_data" / "colab" / "gpu.json"


def test_gpu_record_covers_this_book():
    """The Colab install run on a GPU (tests/colab/gpu_check.py), shown on the status
    page: for this book's numba-cuda, every chapter, every kernel module, by nvJitLink."""
    record = json.loads(GPU_RECORD.read_text())
    again = "; run tests/colab/gpu_check.py on a GPU again (its docstring says how)"
    versions = record["stack"]["versions"]
    assert versions["numba-cuda"] == notebooks.numba_cuda_version(ROOT), "numba-cuda changed" + again
    assert versions["cuda-bindings"].startswith("12.") and record["stack"]["libraries"][
        "nvJitLink"]["path"].endswith("libnvJitLink.so.12"), "not the CUDA 12 stack Colab gets"
    assert record["probe"]["ok"] and record["probe"]["linker"] == "nvJitLink"
    topics = sorted(p.stem[5:] for p in (ROOT / "tests").glob("test_*.py")
                    if re.search(r"^PTX_SIGNATURES = ", p.read_text(), re.M))
    compiled = record["kernels_sm_75"]
    assert sorted(compiled["topics"]) == topics, "kernel modules changed" + again
    assert all(t["ok"] and t["cubins_sm_75"] > 0 for t in compiled["topics"].values())
    assert compiled["linked_by"] == ["nvJitLink"]
    chapters = sorted(pathlib.Path(n).name for n in notebooks.chapters(ROOT))
    assert sorted(record["notebooks"]) == chapters, "chapters changed" + again
    failed = [n for n, run in record["notebooks"].items() if not run["ok"]]
    assert not failed, f"failed on the GPU: {failed}"


# ---------------------------------------------------------- the checks can fail

GOOD_FIRST_CELL = (f"Installing numba-cuda[cu12]=={notebooks.numba_cuda_version(ROOT)}, "
                   f"git+https://github.com/o/r@{BRANCH} ...\nNo GPU here: This runtime has no "
                   "GPU.\nTo use a GPU: choose Runtime > Change runtime type > T4 GPU.\nUntil "
                   "then the kernels run on the Numba CUDA simulator.\n")


def fake_run(first=GOOD_FIRST_CELL, numpy_after="2.1.3", commit="abc", same_runtime=True):
    """What run_edition returns for one chapter, made up: (returncode, log, notebook)."""
    def cell(source, printed):
        return {"cell_type": "code", "source": source, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": printed}]}

    before = {"pid": 1, "disk": {"numpy": "2.1.3", "numba": "0.61.2"}}
    after = {"disk": {"numpy": numpy_after, "numba": "0.61.2"}, "loaded": {"numpy": "2.1.3"},
             "numba_cuda": notebooks.numba_cuda_version(ROOT), "simulator": True,
             "kernels_from": {"url": "https://github.com/o/r", "vcs_info": {"commit_id": commit}}}
    tag = colab_runtime.PROBE_TAG
    nb = {"cells": [cell(tag, json.dumps(before) + "\n"), cell("setup(...)", first),
                    cell(tag, json.dumps(after) + "\n"),
                    cell(tag, json.dumps({"same_runtime": same_runtime}) + "\n")]}
    return 0, "", nb


@pytest.mark.parametrize("run, complaint", [
    (fake_run(numpy_after="2.3.0"), "changed numpy 2.1.3 -> 2.3.0 under the running kernel"),
    (fake_run(same_runtime=False), "the runtime restarted"),
    (fake_run(commit="elsewhere"), "commit_id"),
    (fake_run(first=GOOD_FIRST_CELL.replace("This runtime has no GPU.", "")), "no GPU"),
    ((1, "CellExecutionError: boom", None), "failed on the emulated Colab runtime"),
])
def test_a_bad_run_fails_the_check(run, complaint):
    check_run("book/x", fake_run(), "https://github.com/o/r", "abc")  # a good one passes
    with pytest.raises(AssertionError, match=re.escape(complaint) if complaint != "no GPU"
                       else "This runtime has no GPU"):
        check_run("book/x", run, "https://github.com/o/r", "abc")


def test_a_changed_numpy_passes_only_when_the_student_is_told():
    told = GOOD_FIRST_CELL + "The install changed numpy: Runtime > Restart session, then ...\n"
    check_run("book/x", fake_run(first=told, numpy_after="2.3.0"), "https://github.com/o/r", "abc")
