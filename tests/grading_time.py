"""Time the grader on what students hand in: each chapter's notebook as the book
publishes it, with a correct answer in each exercise's cell.

    python tests/grading_time.py [--cores 0] [--rounds 3] [--base DIR] [CHAPTER ...]

Each notebook is graded alone (``python -m kernels grade --jobs 1``) on the cores given:
two, as GitHub Classroom grades one submission; one, as each of a class's notebooks is
when a laptop grades as many at once as it has cores. (Gradescope gives half a CPU unless
its settings give more: run this under such a CPU quota to see its times.)
The answer in each exercise's cell is the course's solution, pasted as tests/planted.py
pastes it; the cell's call to the checker stays. Beside it, for the same notebook:

* ``one process``: the notebook run and then each checker called on its function in
  that same process, as the grader did before the judge (b177899), but without its
  sandbox and its own grading process (so a little less than that design would take):
  what the trust seam adds is at most the difference;
* with ``--base DIR``, a checkout of another commit (``git worktree add DIR COMMIT``)
  grading its own chapter notebooks, with answers planted the same way, by its own
  grader: that commit's grading time per chapter, the before of a before/after.

The sides take turns, one notebook at a time (which side goes first changes every
round), so that a machine whose speed drifts slows each alike. It prints one line per
chapter and round, in milliseconds of wall time, and the median ratio per chapter.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def chapter_notebook(chapter):
    """(the chapter's notebook, as the book publishes it, with a correct answer in each
    exercise's cell, the number of answers put in cells added at its end): of the
    checkout whose package and tests this process imports. Each answer replaces the
    exercise's placeholder and keeps the placeholder's other statements (the call to its
    checker); an exercise with no cell of the chapter's (an older checkout's) gets one
    at the end, with its checker's call."""
    import ast

    import planted
    from kernels.checks import registry

    answer_cell = getattr(planted, "answer_cell", planted.module_cell)  # older checkouts
    holders = planted.placeholders()
    labels = [label for label, ex in registry.EXERCISES.items() if ex.chapter == chapter]
    nb = json.loads((planted.ROOT / "book" / f"{chapter}.ipynb").read_text())
    found = set()
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        label = next((la for la in labels if cell["cell_type"] == "code"
                      and source.strip() == holders.get(la, "").strip()), None)
        if label is None:
            continue
        name = registry.EXERCISES[label].names[0]
        kept = [s for s in ast.parse(source).body if name not in _bound(s)]
        topic = planted.topic(label)
        cell["source"] = (answer_cell(topic, planted.solution_source(topic), [label])
                          + "\n\n" + "\n".join(map(ast.unparse, kept)) + "\n")
        cell["outputs"] = []
        found.add(label)
    for label in labels:
        if label not in found:
            ex, topic = registry.EXERCISES[label], planted.topic(label)
            nb["cells"].append(planted.code_cell(
                answer_cell(topic, planted.solution_source(topic), [label])
                + f"\n\nprint(checks.{ex.check_name}({ex.names[0]}))\n"))
    return nb, len(labels) - len(found)


def build(out):
    """Write chapter_notebook of every chapter with exercises to out/<chapter>.ipynb."""
    from kernels.checks import registry

    for chapter in dict.fromkeys(ex.chapter for ex in registry.EXERCISES.values()):
        nb, added = chapter_notebook(chapter)
        (out / f"{chapter}.ipynb").write_text(json.dumps(nb))
        if added:
            print(f"{out.name} {chapter}: {added} answers in cells added at the end (the "
                  "chapter has no cell for them)")


def _bound(statement):
    """The names a placeholder's statement binds: its def, or its assignment's targets."""
    import ast

    if isinstance(statement, ast.FunctionDef):
        return {statement.name}
    if isinstance(statement, ast.Assign):
        return {t.id for t in statement.targets if isinstance(t, ast.Name)}
    return set()


def one_process(path):
    """Grade `path` as the grader did before the judge: run the notebook with checker
    calls deferred, then call each exercise's checker on its function, in this process."""
    from kernels import checks, harness, notebook_cells
    from kernels.checks import core, registry

    harness.live_or_recorded = harness.recorded
    notebook = json.loads(pathlib.Path(path).read_text())
    namespace = {"__name__": "__main__"}
    core.DEFERRED = True
    notebook_cells.run(notebook["cells"], namespace, 900)
    core.DEFERRED = False
    chapter = pathlib.Path(notebook["metadata"]["generated_from"]).stem
    passed = [getattr(checks, ex.check_name)(namespace.get(ex.names[0])).passed
              for ex in registry.by_chapter(chapter)]
    print(f"{sum(passed)} of {len(passed)} exercises passed")


def timed(argv, cwd, cores, env=None):
    """(milliseconds, the line where it says the points) of `argv` on `cores`, run in `cwd`."""
    start = time.monotonic()
    done = subprocess.run(["taskset", "--cpu-list", cores, *argv], cwd=cwd, env=env,
                          capture_output=True, text=True)
    ms = round((time.monotonic() - start) * 1000)
    said = [line for line in (done.stdout + done.stderr).splitlines()
            if " points, " in line or "exercises passed" in line]
    return ms, (said[-1].split(": ")[-1] if said else f"exit status {done.returncode}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="default: every chapter with exercises")
    parser.add_argument("--cores", default="0", help="taskset's list, e.g. 0 or 0,1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", type=pathlib.Path, help="a checkout of another commit")
    parser.add_argument("--max-processes", default="4096",
                        help="the grader's limit, for both sides (4096, today's default: "
                             "b177899's, 1024, ran out of threads on the atomics notebook)")
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="grading-time-"))
    roots = {"now": ROOT, **({"base": args.base.resolve()} if args.base else {})}
    for side, root in roots.items():
        (work / side).mkdir()
        subprocess.run([sys.executable, __file__, "--build", str(work / side)],
                       check=True, env=dict(os.environ, PYTHONPATH=f"{root}:{root / 'tests'}"))
    chapters = args.chapters or [p.stem for p in sorted((work / "now").glob("*.ipynb"))]
    sides = ["now", "one process", *(["base"] if args.base else [])]
    times = {}
    for r in range(args.rounds):
        for chapter in chapters:
            line = []
            for side in sides[r % len(sides):] + sides[:r % len(sides)]:
                root = roots.get(side, ROOT)
                notebook = work / ("now" if side == "one process" else side) / f"{chapter}.ipynb"
                argv = ([sys.executable, __file__, "--one-process", str(notebook)]
                        if side == "one process" else
                        [sys.executable, "-m", "kernels", "grade", "--jobs", "1",
                         "--max-processes", args.max_processes,
                         "--out", str(work / f"out-{side}-{chapter}-{r}"), str(notebook)])
                ms, said = timed(argv, root, args.cores, dict(os.environ, PYTHONPATH=str(root)))
                times.setdefault((chapter, side), []).append(ms)
                line.append(f"{side} {ms:,} ms ({said})")
            print(f"round {r + 1} {chapter}: " + "; ".join(line), flush=True)
    print(f"\nmedian ms on cores {args.cores}, {args.rounds} rounds:")
    for chapter in chapters:
        median = {side: statistics.median(times[chapter, side]) for side in sides}
        ratios = ", ".join(f"now / {side} {median['now'] / median[side]:.2f}"
                           for side in sides[1:])
        print(f"  {chapter:12} " + "  ".join(f"{side} {median[side]:8,.0f}" for side in sides)
              + f"   {ratios}")


if __name__ == "__main__":
    if sys.argv[1:2] in (["--build"], ["--one-process"]):
        sys.path.pop(0)  # this folder: the checkout's own (PYTHONPATH) comes first
    if sys.argv[1:2] == ["--build"]:
        build(pathlib.Path(sys.argv[2]))
    elif sys.argv[1:2] == ["--one-process"]:
        one_process(sys.argv[2])
    else:
        main()
