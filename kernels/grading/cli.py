"""The grading subcommands of ``python -m kernels``: grade, grade-setup, grade-passed."""

import pathlib
import sys

from kernels.grading import autograders, reports, runner, submissions


def run(args, parser):
    if args.command == "grade":
        return grade(args, parser)
    if args.command == "grade-passed":
        try:
            ok, message = reports.passed(args.grades, args.label)
        except (OSError, ValueError, KeyError) as err:
            parser.error(f"grade-passed: {err}")
        print(message)
        return 0 if ok else 1
    if args.service == "gradescope":
        path = autograders.gradescope(args.out)
        print(f"wrote {path}: upload it as the Gradescope assignment's autograder")
        return 0
    if not (args.chapter and args.package):
        parser.error("grade-setup classroom needs --chapter and --package")
    try:
        path = autograders.classroom(args.out, args.chapter, args.package, args.notebook)
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {path}: commit it to the assignment's starter repository")
    return 0


def grade(args, parser):
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.timeout < 10:
        parser.error(f"--timeout is the time for one whole notebook, at least 10 s; got "
                     f"{args.timeout:g}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        subs = submissions.collect(args.submissions)
    except submissions.SubmissionError as err:
        if args.gradescope:  # the student sees this on Gradescope
            reports.write_gradescope([], out / "results.json", note=str(err))
        parser.error(str(err))

    def progress(o):
        print(f"{o.submission.name}: {o.total} of {o.possible} points"
              f"{f' ({len(o.notes)} notes)' if o.notes else ''}, {o.seconds:.0f} s",
              file=sys.stderr, flush=True)

    outcomes = runner.grade_all(subs, args.jobs, args.timeout, progress)
    reports.write_grades(outcomes, out / "grades.csv")
    reports.write_feedback(outcomes, out / "feedback")
    if args.gradescope:
        reports.write_gradescope(outcomes, out / "results.json")
    print(f"graded {len(outcomes)} notebook{'s' if len(outcomes) > 1 else ''}: "
          f"{out / 'grades.csv'}, feedback in {out / 'feedback'}")
    return 0
