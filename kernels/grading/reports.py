"""What grading writes: grades.csv, feedback/<submission>.md and Gradescope's results.json."""

import csv
import json
import pathlib

from kernels.checks import registry


def write_grades(outcomes, path):
    """One row per submission, one column per exercise of the chapters graded (points
    earned; empty where the submission's chapter does not have it), the total, the
    possible, the device, the number of notes, and the flags: the exercises the grader
    could not check itself, for the instructor to look at."""
    graded = {chapter for o in outcomes for chapter in o.chapters}
    labels = [label for label, ex in registry.EXERCISES.items() if ex.chapter in graded]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "file", "chapters", *labels, "total", "possible",
                         "device", "notes", "flags"])
        for o in outcomes:
            graded = {ex.label for ex in o.exercises}
            writer.writerow([o.submission.name, str(o.submission.path), " ".join(o.chapters),
                             *(o.points(label) if label in graded else "" for label in labels),
                             o.total, o.possible, o.device or "not run", len(o.notes),
                             " ".join(o.flags)])


def feedback(outcome):
    """The feedback a student reads, in Markdown."""
    o = outcome
    lines = [f"# Feedback on {o.submission.path.name}", ""]
    if o.chapters:
        lines.append(f"Chapter{'s' if len(o.chapters) > 1 else ''}: {', '.join(o.chapters)}. "
                     f"Score: **{o.total} of {o.possible} points**. "
                     f"Ran on: {o.device or 'nothing (the notebook was not run)'}.")
    lines += ["", "The grader ran your notebook from top to bottom for the notes below "
              "and checked each exercise on its own, on cases drawn for this grading "
              "run: it ran only the code the function the exercise names needs, in a "
              "fresh process. What your notebook printed does not count.", ""]
    if o.notes:
        lines += ["## Notes on your notebook", ""] + [f"* {n}" for n in o.notes] + [""]
    for ex in o.exercises:
        passed, report = o.results.get(ex.label, (False, "not graded"))
        verdict = "PASS" if passed else "FAIL"
        lines += [f"## {ex.label}: {verdict}, {o.points(ex.label)} of {ex.points} "
                  f"point{'s' if ex.points > 1 else ''} ({ex.difficulty})", "",
                  f"Checked: `checks.{ex.check_name}({ex.names[0]})`", "",
                  "```text", report.replace("```", "'''"), "```", ""]
    return "\n".join(lines)


def write_feedback(outcomes, folder):
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for o in outcomes:
        (folder / f"{o.submission.name}.md").write_text(feedback(o))


def gradescope(outcomes, note=None):
    """Gradescope's autograder results (results.json) for the notebooks of one upload,
    with `note` first in its output (why nothing was graded, say)."""
    tests = []
    several = len(outcomes) > 1
    for o in outcomes:
        for ex in o.exercises:
            passed, report = o.results.get(ex.label, (False, "not graded"))
            name = f"{ex.label} ({ex.difficulty})"
            tests.append({"name": f"{o.submission.name}: {name}" if several else name,
                          "score": o.points(ex.label), "max_score": ex.points,
                          "status": "passed" if passed else "failed",
                          "output": report, "visibility": "visible"})
    notes = [note] if note else []
    notes += [f"{o.submission.name}: {n}" if several else n for o in outcomes for n in o.notes]
    if not any(o.chapters for o in outcomes):
        notes.append("No chapter notebook was graded: upload the chapter's .ipynb file.")
    # Reports are plain text, shown as written: the tracer's race pictures keep their
    # columns (Gradescope's other formats, simple_format and md, reflow the lines).
    return {"score": sum(o.total for o in outcomes),
            "output": "\n".join(notes) or "Your notebook ran; each exercise is below.",
            "visibility": "visible", "stdout_visibility": "hidden",
            "test_output_format": "text", "tests": tests}


def write_gradescope(outcomes, path, note=None):
    pathlib.Path(path).write_text(json.dumps(gradescope(outcomes, note), indent=1))


def passed(grades_csv, label):
    """(True, message) if every submission in grades.csv earned exercise `label`'s
    points, else (False, message); ValueError, said in a sentence, if the file is not a
    grades.csv or the label no exercise's."""
    if label not in registry.EXERCISES:
        raise ValueError(f"{label!r} is not an exercise's label; the labels are "
                         f"{', '.join(registry.EXERCISES)}")
    what = "give the grades.csv that `python -m kernels grade` wrote into its --out folder"
    try:
        with open(grades_csv, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows, columns = list(reader), reader.fieldnames or []
    except FileNotFoundError:
        raise ValueError(f"{grades_csv}: there is no such file; {what}") from None
    except IsADirectoryError:
        raise ValueError(f"{grades_csv} is a folder; {what}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"{grades_csv} could not be read as a grades.csv ({err}); "
                         f"{what}") from None
    if "submission" not in columns:
        raise ValueError(f"{grades_csv} is not a grades.csv that grading wrote: it has no "
                         f"`submission` column; {what}")
    ex = registry.EXERCISES[label]
    if label not in columns:
        return False, (f"{label}: not passed: no notebook graded in {grades_csv} answers the "
                       f"{ex.chapter} chapter, so it has no column for this exercise")
    points = ex.points
    earned = [(row["submission"], row.get(label) or "") for row in rows]
    if not earned or any(e != str(points) for _, e in earned):
        shown = ", ".join(f"{s}: {e or 'not graded'}" for s, e in earned) or "no submission"
        return False, f"{label}: not passed ({shown}; {points} needed)"
    return True, f"{label}: passed ({points} point{'s' if points > 1 else ''})"
