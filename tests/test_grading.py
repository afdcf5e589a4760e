"""The grader, end to end: planted and hostile submissions through `python -m kernels grade`.

Two grading runs, shared by the tests below and started together (the simulator keeps
both cores busy): the planted answers to all 22 exercises (correct, with a classic
bug, computed on the host, the book's empty placeholders, with a race), and the
broken or hostile grid-stride notebooks of tests/hostile.py with the book's own
unsolved gridstride.ipynb. On a GPU machine the same runs grade them on the GPU.
"""

import concurrent.futures
import csv
import hashlib
import itertools
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import cheats
import cores
import grading_time
import hostile
import kernels
import planted
from kernels.checks import races, registry

ROOT = pathlib.Path(__file__).resolve().parent.parent
KINDS = ("correct", "buggy", "host", "empty")
HOSTILE_TIMEOUT_S = 60
# The planted answers' verdicts are what these tests check, not the grader's time: a
# limit far past what a loaded machine needs (six notebooks took 150 s on two cores)
PLANTED_TIMEOUT_S = 1800
# Grading jobs of each of the three runs below, by this machine's cores: on two (CI) the
# runs' four jobs fill them; on the GPU machine's sixteen, one job each did not finish
# the hostile run's 43 notebooks in nine minutes
JOBS = max(1, len(cores.ALL) // 4)
# The infinite loop and the hung kernel cost a part of theirs (the hung kernel's trace
# waits out about half of the checking share): the other exercises' checks need the
# rest even on a loaded machine. On a GPU machine a trace runs in a child of the answer
# process (kernels.trace.remote), so the answer that stops its parent stops its own
# process there and waits out a step's limit too, beside the forking process's reply
WAITS_TIMEOUT_S = 120 if kernels.SIMULATOR else 180


def grade(paths, out, *options, timeout=900, env=None):
    """Run the grader as an instructor would (with `env` added to the environment);
    {submission: row}, feedback."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0", **env or {})
    # every core: the grader keeps each of its processes to one itself
    proc = subprocess.run(cores.spread([sys.executable, "-m", "kernels", "grade",
                                        *map(str, paths), "--out", str(out), *options]),
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    feedback = {name: (out / "feedback" / f"{name}.md").read_text() for name in rows}
    return rows, feedback


def section(text, label):
    """The feedback's section on exercise `label`."""
    start = text.index(f"## {label}:")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def planted_notebooks(folder, kinds=KINDS, races=False):
    makers = {"correct": planted.correct_notebook, "buggy": planted.buggy_notebook,
              "host": planted.host_only_notebook, "empty": planted.empty_notebook,
              "races": lambda: planted.buggy_notebook(planted.RACES)}
    return [planted.write(makers[k](), folder / f"{k}.ipynb")
            for k in kinds + (("races",) if races else ())]


@pytest.fixture(scope="module")
def grading_runs(tmp_path_factory):
    """Both grading runs, under way at once: {"planted": future, "hostile": future}."""
    planted_in = tmp_path_factory.mktemp("planted")
    hostile_in = tmp_path_factory.mktemp("hostile")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        yield {"planted": pool.submit(grade, planted_notebooks(planted_in, races=True),
                                      planted_in / "out", "--jobs", str(2 * JOBS), "--timeout",
                                      str(PLANTED_TIMEOUT_S), timeout=3 * PLANTED_TIMEOUT_S),
               "hostile": pool.submit(grade_hostile, hostile_in)}


@pytest.fixture(scope="module")
def planted_grades(grading_runs):
    return grading_runs["planted"].result()


def expected_points(kind, label):
    ex = registry.EXERCISES[label]
    if kind == "correct" or (kind == "host" and label in planted.HOST_ONLY_PASSES):
        return ex.points
    return 0


@pytest.mark.parametrize("kind", KINDS)
def test_planted_answers_get_the_right_verdict(planted_grades, kind):
    rows, feedback = planted_grades
    row, text = rows[kind], feedback[kind]
    wrong = {label: row[label] for label in registry.EXERCISES
             if row[label] != str(expected_points(kind, label))}
    assert not wrong, f"{kind}: wrong points {wrong}\n{text}"
    assert row["device"] == ("simulator" if kernels.SIMULATOR else row["device"])
    for label, ex in registry.EXERCISES.items():
        part = section(text, label)
        if kind == "host" and ex.launch is not None:  # failed for the right reason
            assert ("was launched" in part or "is not a CUDA kernel" in part
                    or "Not graded automatically: the definition of" in part), part
        if kind == "buggy":  # the bug was caught, not a missing launch
            assert "was launched" not in part and "FAIL" in part, part
        if kind == "empty" and label not in planted.placeholders():
            assert f"defines no `{ex.names[0]}`" in part, part
    assert int(row["total"]) == sum(expected_points(kind, label) for label in registry.EXERCISES)
    assert row["possible"] == str(sum(ex.points for ex in registry.EXERCISES.values()))


def test_planted_races_earn_nothing_and_the_race_is_named(planted_grades):
    """The simulator gives the race verdicts a GPU gives: each racy answer fails its
    race case, which names the two accesses and what is missing between them, and
    draws them (kernels.trace.diagrams) in the feedback's text block."""
    rows, feedback = planted_grades
    row, text = rows["races"], feedback["races"]
    assert row["total"] == "0", text
    for label in planted.RACES:
        part = section(text, label)
        assert "the tracer ran your code on the simulator and found" in part, part
        assert "both touch" in part or "both use" in part, part
        block = part[part.index("```text\n"):part.rindex("```")]
        # the picture: the race case's detail lines after its sentence, to the next case
        # (on a GPU the race case runs last, and kahan's chain cases come after it)
        after = block[block.index("from run to run\n"):].splitlines()[1:]
        drawn = list(itertools.takewhile(lambda line: line.startswith(races.INDENT), after))
        assert drawn and all(len(line) <= 80 for line in drawn), part
        racing = re.compile(r"\[([RWA]+|in|K|out)\]")
        assert sum(bool(racing.search(line)) for line in drawn) == 2, part
        assert any(line.strip().startswith("missing: ") for line in drawn), part


def test_correct_answers_pass_their_race_case(planted_grades):
    """No false alarm: every solution, as a student's answer, is race-free under the
    tracer."""
    _, feedback = planted_grades
    for label in planted.RACES:
        part = section(feedback["correct"], label)
        assert "PASS  no race between threads, blocks or streams, traced at" in part, part


# The notebooks that wait for a time limit, asleep: graded in a run of their own beside
# the others, so their waits overlap the others' work instead of following it.
WAIT_FOR_A_LIMIT = ("infinite-loop", "deadlocked-kernel", "stops-the-process-that-forks-answers",
                    "stops-every-other-process", "leaves-a-process-holding-every-thread")


def grade_hostile(folder):
    """({name: row}, {name: feedback}, Gradescope's results.json, the names it covers):
    two runs at once, --jobs 1 each (the notes run beside the judge, as for one upload)."""
    core = ROOT / "kernels" / "checks" / "core.py"
    before = hashlib.sha256(core.read_bytes()).hexdigest()
    paths = {"rest": [], "waits": []}
    for name, (nb, _, _) in {**hostile.CASES, **cheats.CASES}.items():
        run = "waits" if name in WAIT_FOR_A_LIMIT else "rest"
        path = folder / run / f"{name}.ipynb"
        path.parent.mkdir(exist_ok=True)
        path.write_text(nb if isinstance(nb, str) else json.dumps(nb))
        paths[run].append(path)
    book = folder / "rest" / "book-gridstride.ipynb"
    book.write_bytes((ROOT / "book" / "gridstride.ipynb").read_bytes())
    solved, added = grading_time.chapter_notebook("gridstride")
    assert not added  # each exercise has its cell in the chapter
    (folder / "rest" / "book-gridstride-solved.ipynb").write_text(json.dumps(solved))
    paths["rest"] += [book, folder / "rest" / "book-gridstride-solved.ipynb"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = {run: pool.submit(grade, found, folder / f"out-{run}", "--jobs", str(JOBS),
                                 "--gradescope", "--timeout", str(
                                     WAITS_TIMEOUT_S if run == "waits" else HOSTILE_TIMEOUT_S))
                for run, found in paths.items()}
        (rows, feedback), (waits_rows, waits_feedback) = (runs["rest"].result(),
                                                          runs["waits"].result())
    assert hashlib.sha256(core.read_bytes()).hexdigest() == before  # the grader's own files
    results = json.loads((folder / "out-rest" / "results.json").read_text())
    return {**rows, **waits_rows}, {**feedback, **waits_feedback}, results, set(rows)


@pytest.fixture(scope="module")
def hostile_grades(grading_runs):
    return grading_runs["hostile"].result()


@pytest.mark.parametrize("name", list(hostile.CASES))
def test_broken_and_hostile_notebooks_are_contained(hostile_grades, name):
    rows, feedback, *_ = hostile_grades
    _, points, lines = hostile.CASES[name]
    assert rows[name]["total"] == str(points), feedback[name]
    for line in lines:
        assert line in feedback[name], (line, feedback[name])


def check_cheat(rows, feedback, name):
    """The cheat earns nothing for the exercise it cheats on; the notebook's correct
    answer to another exercise keeps its points."""
    _, points, label = cheats.CASES[name]
    row, text = rows[name], feedback[name]
    assert row["total"] == str(points), text
    assert row[label] == "0", text
    part = section(text, label)
    assert part.startswith(f"## {label}: FAIL") and "defines no" not in part, part
    assert "the grader's judge failed" not in text, text  # no cheat stops the judge


@pytest.mark.parametrize("name", list(cheats.CASES))
def test_a_cheat_earns_nothing_for_its_exercise(hostile_grades, name):
    rows, feedback, *_ = hostile_grades
    check_cheat(rows, feedback, name)


def test_a_kernel_is_checked_only_when_its_definition_runs_no_code_of_the_students(
        hostile_grades):
    """A kernel made by a decorator of the student's (where every kernel trick sits)
    is not run: it fails, and the row is flagged for the instructor."""
    rows, feedback, *_ = hostile_grades
    for name in cheats.KERNEL_TRICKS:
        text = feedback[name]
        assert "Not graded automatically: " in section(text, "gridstride-ex-reverse"), text
        assert "Flagged for your instructor" in text, text
        assert rows[name]["flags"] == "gridstride-ex-reverse"


def test_a_kernel_that_only_python_can_run_fails_on_the_simulator(hostile_grades):
    """The simulator runs a kernel's body as Python; the grader compiles it for a GPU
    (a kernel exercise's first, a host function's kernels with the types it launched
    them with), so a body that a GPU cannot run (NumPy on the host, a 16-bit atomic)
    fails there. One that walks the interpreter's frames is refused before it runs
    (test_answers_that_use_introspection_are_not_graded_automatically)."""
    rows, feedback, *_ = hostile_grades
    for name in cheats.KERNEL_BODIES:
        text = feedback[name]
        if name == "a-kernel-that-walks-frames":
            assert "Not graded automatically: its code uses _getframe" in text, text
            continue
        if name == "a-bare-decorator-turns-off-the-compile":  # its decorator never runs
            assert ("the definition of `reverse_inplace_kernel` runs code of yours when it "
                    "is loaded" in text), text
            assert rows[name]["flags"] == "gridstride-ex-reverse", text
            continue
        if kernels.SIMULATOR:
            assert "your `reverse_inplace_kernel` does not compile for a GPU" in text, text
        assert not rows[name]["flags"], text
    for name in cheats.HOST_KERNEL_BODIES:  # a kernel a host function launches, as well
        text = feedback[name]
        if kernels.SIMULATOR:
            assert "your kernel `_first_kernel`, as your `argmax` launches it, does not " \
                   "compile for a GPU" in text, text
        assert not rows[name]["flags"], text


def test_answers_that_use_introspection_are_not_graded_automatically(hostile_grades):
    rows, feedback, *_ = hostile_grades
    text = feedback["reads-expected-from-the-checkers-frame"]
    assert "Not graded automatically: its code uses _current_frames, f_back, f_locals" \
        in text, text
    assert "reduction-ex-argmax" in rows["reads-expected-from-the-checkers-frame"]["flags"]


def test_an_unsolved_chapter_notebook_earns_nothing(hostile_grades):
    rows, feedback, *_ = hostile_grades
    row = rows["book-gridstride"]
    assert (row["chapters"], row["total"], row["possible"]) == ("gridstride", "0", "6")
    assert "reduction-ex-argmax" not in feedback["book-gridstride"]  # other chapters: not graded
    # its column is there only if another notebook of the run answers the chapter
    assert row.get("reduction-ex-argmax", "") == ""


def test_a_chapter_notebook_with_its_answers_written_in_gets_full_marks(hostile_grades):
    """The chapter as published, each exercise's cell holding a correct answer beside its
    call to the checker, as a student hands it in: full marks, and no note (every cell of
    the chapter's ran)."""
    rows, feedback, *_ = hostile_grades
    row = rows["book-gridstride-solved"]
    assert (row["chapters"], row["total"], row["possible"], row["notes"]) == (
        "gridstride", "6", "6", "0"), feedback["book-gridstride-solved"]


def test_gradescope_results_follow_its_format(hostile_grades):
    rows, _, results, covered = hostile_grades
    rows = {name: row for name, row in rows.items() if name in covered}
    assert results["score"] == sum(int(r["total"]) for r in rows.values())
    graded = [r for r in rows.values() if r["chapters"]]
    assert len(results["tests"]) == sum(len(r["chapters"].split()) * (
        4 if r["chapters"] == "reduction" else 3) for r in graded)
    for test in results["tests"]:
        assert set(test) == {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] in ("passed", "failed")
        assert test["score"] == (test["max_score"] if test["status"] == "passed" else 0)
    assert "not valid JSON" in results["output"]
