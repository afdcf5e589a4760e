"""Command line: ``python -m kernels info | bench | merge | grade | grade-setup | grade-passed``."""

import argparse
import json
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kernels")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="say what the kernels run on")
    bench = sub.add_parser("bench", help="run benchmarks on a GPU and record them")
    bench.add_argument("topic", nargs="?", help="one topic (default: all)")
    bench.add_argument("--out", help="recording file (default: book/_data/bench/<device>.json)")
    merge = sub.add_parser("merge", help="merge a recording made on another machine")
    merge.add_argument("file")
    grade = sub.add_parser("grade", help="grade submitted chapter notebooks")
    grade.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                       help="a notebook (.ipynb) or a folder of them")
    grade.add_argument("--out", required=True, help="folder for grades.csv and feedback/")
    grade.add_argument("--jobs", type=int, help="notebooks graded at once (default: the cores)")
    grade.add_argument("--timeout", type=float, default=900,
                       help="seconds for one notebook, cells and checks (default: 900)")
    grade.add_argument("--gradescope", action="store_true",
                       help="also write Gradescope's results.json (for one student's upload)")
    setup = sub.add_parser("grade-setup", help="write a Gradescope or GitHub Classroom set-up")
    setup.add_argument("service", choices=["gradescope", "classroom"])
    setup.add_argument("--out", required=True, help="folder to write it into")
    setup.add_argument("--chapter", help="classroom: the chapter the assignment is")
    setup.add_argument("--package", help="classroom: what pip installs for the grader, e.g. "
                       "git+https://github.com/you/course-student@main")
    setup.add_argument("--notebook", help="classroom: the notebook's path in the student's "
                       "repository (default: CHAPTER.ipynb)")
    passed = sub.add_parser("grade-passed", help="exit 0 if every row of a grades.csv "
                            "earned an exercise's points (for GitHub Classroom)")
    passed.add_argument("grades")
    passed.add_argument("label")
    args = parser.parse_args(argv)
    if args.command in ("grade", "grade-setup", "grade-passed"):
        from kernels.grading import cli

        return cli.run(args, parser)

    import kernels
    from kernels import harness

    if args.command == "info":
        print(json.dumps(harness.environment(), indent=1))
        return 0
    if args.command == "merge":
        print(f"merged into {harness.merge_recording(args.file)}")
        return 0
    if args.topic is not None and args.topic not in harness.TOPICS:
        parser.error(f"unknown topic {args.topic!r}; topics: {', '.join(harness.TOPICS)}")
    if kernels.SIMULATOR:
        print("python -m kernels bench needs a CUDA GPU, and this process runs on the "
              f"Numba CUDA simulator ({kernels.REASON}). Simulated times mean nothing, so "
              "nothing was recorded. Run it on a machine with an NVIDIA GPU.",
              file=sys.stderr)
        return 2
    from tqdm import tqdm

    keys = sorted(harness.load_benchmarks(args.topic))
    limits = harness.measure_limits()
    entries = {}
    for key in (bar := tqdm(keys, unit="benchmark")):
        bar.set_description(key)
        entries[key] = harness.run_benchmark(key)
    path = harness.write_recording(entries, limits, args.out)
    print(f"recorded {len(entries)} benchmarks in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
