"""The grading subcommands of ``python -m kernels``: grade, grade-setup, grade-passed."""

import os
import pathlib
import re
import sys

import kernels
from kernels.grading import autograders, machine, reports, runner, sandbox, submissions

SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGT]?)i?B?", re.I)


def run(args, parser):
    """Run grading sub-command args.command; `parser` is that sub-command's own, so an
    error shows its usage."""
    if args.command == "grade":
        return grade(args, parser)
    if args.command == "grade-passed":
        try:
            ok, message = reports.passed(args.grades, args.label)
        except ValueError as err:
            parser.error(str(err))
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
    jobs = args.jobs or machine.cores()
    # side by side (runner.alongside), a notebook's two processes may peak at once
    memory = (size(args.max_memory, "--max-memory", parser) if args.max_memory else
              sandbox.default_memory(2 * jobs if runner.alongside(jobs, True) else jobs))
    limits = sandbox.Limits(sandbox.Limits.processes if args.max_processes is None
                            else args.max_processes, memory,
                            size(args.max_disk, "--max-disk", parser))
    if limits.processes < 64:
        parser.error(f"--max-processes must be at least 64 (Python, NumPy and the "
                     f"simulator start threads), got {limits.processes}")
    out = pathlib.Path(args.out)
    if out.exists() and not out.is_dir():
        parser.error(f"--out {args.out}: a file of that name is there; --out names the "
                     "folder to write grades.csv and feedback/ into")
    try:
        subs = submissions.collect(args.submissions)
    except submissions.SubmissionError as err:
        if args.gradescope:  # the student sees this on Gradescope
            out.mkdir(parents=True, exist_ok=True)
            reports.write_gradescope([], out / "results.json", note=str(err))
        parser.error(str(err))
    box = containment(args, limits, parser)
    # only now, when grading starts: a command that failed leaves no empty folder behind
    out.mkdir(parents=True, exist_ok=True)
    print(f"grading {len(subs)} notebook{'s' if len(subs) > 1 else ''}, each within "
          f"{runner.split(args.timeout, runner.alongside(jobs, box))}", file=sys.stderr,
          flush=True)

    def progress(o):
        print(f"{o.submission.name}: {o.total} of {o.possible} points"
              f"{f' ({len(o.notes)} notes)' if o.notes else ''}, {o.seconds:.0f} s",
              file=sys.stderr, flush=True)

    outcomes = runner.grade_all(subs, jobs, args.timeout, progress, box)
    # Every worker, and every process it started, has ended: only now is the gradebook written.
    reports.write_grades(outcomes, out / "grades.csv")
    reports.write_feedback(outcomes, out / "feedback")
    if args.gradescope:
        reports.write_gradescope(outcomes, out / "results.json")
    print(f"graded {len(outcomes)} notebook{'s' if len(outcomes) > 1 else ''}: "
          f"{out / 'grades.csv'}, feedback in {out / 'feedback'}")
    return 0


def size(text, option, parser):
    """Bytes from `text` such as 512M, 4G or 1.5GiB (powers of 1024)."""
    m = SIZE.fullmatch(text.strip())
    if not m or float(m[1]) <= 0:
        parser.error(f"{option}: {text!r} is not a size; give a number of bytes with K, M, G "
                     "or T, e.g. 4G or 512M")
    return int(float(m[1]) * 1024 ** " KMGT".index(m[2].upper() or " "))


def containment(args, limits, parser):
    """The sandbox.Sandbox to grade in, or None where submissions run without it: said
    plainly, before grading starts; without a sandbox only when asked, or where a
    service isolates each submission already (sandbox.ISOLATED_BY)."""
    if args.unsafe_no_sandbox:
        print("grading WITHOUT the OS sandbox (--unsafe-no-sandbox): each notebook runs as "
              "your user and can read and change whatever you can", file=sys.stderr)
        return None
    try:
        return sandbox.find(limits, runner.library_paths(), gpu=not kernels.SIMULATOR)
    except sandbox.Unavailable as err:
        why = str(err)
    service = os.environ.get(sandbox.ISOLATED_BY)
    if service:
        print(f"the OS sandbox cannot run here: {why}. {service} runs each submission on a "
              f"machine of its own ({sandbox.ISOLATED_BY}={service}), so grading goes on "
              "without it", file=sys.stderr)
        return None
    parser.error(f"the OS sandbox cannot run here: {why}. Without it, a notebook could read "
                 "other students' notebooks, rewrite grades.csv and change files in your home "
                 "folder, so nothing was graded. Install bubblewrap on a Linux machine that "
                 "allows user namespaces (book/instructors.md, 'The sandbox'), or grade where "
                 "each submission is isolated (Gradescope, GitHub Classroom), or, knowing the "
                 "risk, pass --unsafe-no-sandbox")

