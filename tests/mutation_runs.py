"""Grade the mutants of tests/mutant_set.py through the real grader; keep the results.

A notebook can hold one answer per exercise (the names would collide), so the mutants
go in rounds: round r holds the r-th mutant of every exercise that has one, each in a
cell of its own, and is graded as a student's notebook (``python -m kernels grade``,
the sandbox, the judge, a secret of its own). A round's exercises are checked one by
one, each against its own answer process, so one mutant's verdict never depends on
another's.

``make mutants`` (``python tests/mutation_runs.py``) grades every round on the
simulator and writes RESULTS and the table on book/instructors.md; tests/test_mutants.py
grades a sample again and checks that both still match the mutants and the checkers.
"""

import argparse
import csv
import datetime
import json
import os
import re
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import cores  # noqa: E402
import mutant_set  # noqa: E402
import planted  # noqa: E402
from kernels.checks import registry  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "tests" / "mutation_results.json"
PAGE = ROOT / "book" / "instructors.md"
BEGIN = "<!-- mutants table: written by `make mutants` (tests/mutation_runs.py) -->"
END = "<!-- end of the mutants table -->"
TIMEOUT_S = 600  # the grader's limit for one round's notebook (a loaded machine is slow)


def rounds(mutants):
    """[[mutant, ...], ...]: round r holds the r-th mutant of each exercise."""
    by_label = {}
    for m in mutants:
        by_label.setdefault(m.label, []).append(m)
    depth = max(map(len, by_label.values()), default=0)
    return [[ms[r] for ms in by_label.values() if r < len(ms)] for r in range(depth)]


def round_notebook(mutants):
    return planted.notebook([planted.answer_cell(planted.topic(m.label), m.source, [m.label])
                             for m in mutants])


def section(text, label):
    start = text.find(f"## {label}:")
    if start < 0:
        return ""
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def evidence(text):
    """The first failed check's line of a feedback section (why it was killed)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("FAIL") or line.startswith("Not graded") \
                or line.startswith("Your notebook defines no"):
            return line[:200]
    return text.splitlines()[1].strip()[:200] if text.count("\n") else ""


def flag_of(text, label):
    """Why the grader flagged exercise `label` for the instructor (its feedback's note)."""
    m = re.search(rf"Flagged for your instructor, who will look at it: .*?{re.escape(label)}: "
                  r"(.*?)(?:; [a-z]+-ex-[a-z0-9-]+: |\.\n|\.$)", text, re.S)
    return m[1].strip() if m else "flagged"


def verdict_of(name, points, flag=""):
    """killed (0 points), survived (the points), equivalent (a right answer, listed in
    EQUIVALENT, with the points), equivalent-rejected (listed, and 0 points), or
    not-graded: 0 points because the grader ran out of time (a slow machine proves
    nothing; grade it again). A 0 for a check that could not run, flagged, is a kill:
    the grader fails closed by design."""
    if "time limit" in flag and "grader" in flag:
        return "not-graded"
    if name in mutant_set.EQUIVALENT:
        return "equivalent" if points else "equivalent-rejected"
    return "survived" if points else "killed"


def run_grader(paths, out, jobs=2, timeout=TIMEOUT_S):
    """Grade notebooks `paths` as an instructor would (python -m kernels grade, on the
    simulator unless NUMBA_ENABLE_CUDASIM=0): ({submission: grades.csv row},
    {submission: feedback text})."""
    out = pathlib.Path(out)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM=os.environ.get("NUMBA_ENABLE_CUDASIM", "1"))
    # every core: the grader keeps each of its processes to one itself
    proc = subprocess.run(cores.spread([sys.executable, "-m", "kernels", "grade",
                                        *map(str, paths), "--out", str(out), "--jobs",
                                        str(jobs), "--timeout", str(timeout)]),
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stdout + proc.stderr)
    with open(out / "grades.csv", newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    return rows, {name: (out / "feedback" / f"{name}.md").read_text() for name in rows}


def grade(mutants, folder, jobs=2, timeout=TIMEOUT_S):
    """{mutant name: its result record}, every round graded in one grader run."""
    folder = pathlib.Path(folder)
    (folder / "in").mkdir(parents=True, exist_ok=True)
    groups = rounds(mutants)
    paths = [planted.write(round_notebook(g), folder / "in" / f"round-{r:02d}.ipynb")
             for r, g in enumerate(groups)]
    rows, feedback = run_grader(paths, folder / "out", jobs, timeout)
    found = {}
    for r, group in enumerate(groups):
        row, text = rows[f"round-{r:02d}"], feedback[f"round-{r:02d}"]
        flagged = row["flags"].split()
        for m in group:
            points = int(row[m.label] or 0)
            flag = flag_of(text, m.label) if m.label in flagged else ""
            found[m.name] = {"label": m.label, "operator": m.operator, "why": m.why,
                             "digest": m.digest, "points": points,
                             "verdict": verdict_of(m.name, points, flag),
                             "device": row["device"], "flag": flag,
                             "evidence": evidence(section(text, m.label))}
    return found


def counts(results):
    """{label: {"mutants", "killed", "equivalent", "survived"}} in registry order;
    a correct mutant the grader rejects counts as survived: the checker is wrong."""
    table = {label: dict.fromkeys(("mutants", "killed", "equivalent", "survived"), 0)
             for label in registry.EXERCISES}
    for name, record in results["mutants"].items():
        row = table[record["label"]]
        row["mutants"] += 1
        kind = verdict_of(name, record["points"], record.get("flag", ""))
        kind = {"equivalent-rejected": "survived", "not-graded": "survived"}.get(kind, kind)
        row[kind] += 1
    return table


def table(results):
    """The markdown table for the instructors page."""
    lines = ["| Exercise | Checker | Mutants | Killed | Equivalent | Survived |",
             "|---|---|--:|--:|--:|--:|"]
    total = dict.fromkeys(("mutants", "killed", "equivalent", "survived"), 0)
    for label, row in counts(results).items():
        lines.append(f"| `{label}` | `checks.{registry.EXERCISES[label].check_name}` | "
                     f"{row['mutants']} | {row['killed']} | {row['equivalent']} | "
                     f"{row['survived']} |")
        for key in total:
            total[key] += row[key]
    lines.append(f"| all {len(registry.EXERCISES)} | | {total['mutants']} | {total['killed']} "
                 f"| {total['equivalent']} | {total['survived']} |")
    when = f"Graded on the {results['device']}, {results['date']}, in {results['seconds']:.0f} s."
    return "\n".join(lines) + "\n\n" + when


def page_table(text=None):
    """The table as the instructors page has it (between BEGIN and END)."""
    text = PAGE.read_text() if text is None else text
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:end].strip()


def write_table(results):
    text = PAGE.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    PAGE.write_text(text[:start] + "\n" + table(results) + "\n" + text[end:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--label", action="append", help="only this exercise (repeatable); "
                        "its rows in the results file are replaced, the others kept")
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS,
                        help="where to write the results (another path, e.g. a GPU run's, "
                        "leaves the committed file and the instructors page alone)")
    parser.add_argument("--verdicts", action="store_true", help="grade nothing: give the "
                        "recorded points the verdicts of EQUIVALENT as it is now, and "
                        "rewrite the results file and the table")
    args = parser.parse_args(argv)
    if args.verdicts:
        results = json.loads(RESULTS.read_text())
        for name, record in results["mutants"].items():
            record["verdict"] = verdict_of(name, record["points"], record.get("flag", ""))
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
        write_table(results)
        return 0
    everything = mutant_set.all_mutants()
    mutants = [m for m in everything if not args.label or m.label in args.label]
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutants-") as folder:
        found = grade(mutants, folder, args.jobs)
    seconds = time.monotonic() - start
    results = {"mutants": {}, "seconds": seconds}
    if args.label and args.results.exists():  # a partial run keeps the full run's time
        results = json.loads(args.results.read_text())
    kept = {k: v for k, v in results["mutants"].items() if v["label"] not in args.label} \
        if args.label else {}
    results["mutants"] = {m.name: {**kept, **found}[m.name] for m in everything
                          if m.name in kept or m.name in found}
    results.update(device=" and ".join(sorted({v["device"] for v in found.values()})),
                   date=datetime.date.today().isoformat(), seconds=round(results.get("seconds", seconds)))
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    if args.results == RESULTS:
        write_table(results)
    survivors = [k for k, v in found.items() if v["verdict"] in ("survived", "not-graded",
                                                                 "equivalent-rejected")]
    print(f"{len(found)} mutants graded in {seconds:.0f} s; {len(survivors)} survived or "
          "not graded:",
          *survivors, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
