"""Command line: ``python -m kernels info | bench | merge | grade | grade-setup | grade-passed``."""

import argparse
import json
import os
import sys


DESCRIPTION = """\
The command line of the Numba CUDA course: what the kernels run on, GPU benchmarks
and their recordings, and grading of the exercises. Without a CUDA GPU the kernels
run on the Numba CUDA simulator (said once, on stderr)."""

EXAMPLES = """\
examples:
  python -m kernels info | jq .device     what the kernels run on, as JSON
  python -m kernels bench histogram       time one topic on a GPU and record it
  python -m kernels merge h100.json       add a recording made on another machine
  python -m kernels grade submissions/ --out graded
                                          grade every notebook in submissions/
  python -m kernels grade-setup gradescope --out autograder
                                          the autograder to upload to Gradescope
  python -m kernels grade-passed graded/grades.csv atomics-ex-256
                                          exit 0 if every student passed that exercise

python -m kernels COMMAND --help says more about each command."""


def build_parser():
    from kernels.harness.recording import TOPICS

    parser = argparse.ArgumentParser(prog="python -m kernels", description=DESCRIPTION,
                                     epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name, text):  # the list's one line is also the command's own --help
        command = sub.add_parser(name, help=text, description=f"{text[0].upper()}{text[1:]}.")
        command.set_defaults(command_parser=command)  # its errors show its own usage
        return command

    command("info", "say what the kernels run on, as JSON on stdout")
    bench = command("bench", "run benchmarks on a GPU and record them")
    bench.add_argument("topic", nargs="?", choices=TOPICS, metavar="TOPIC",
                       help=f"one topic of {', '.join(TOPICS)} (default: all of them)")
    bench.add_argument("--out", help="recording file (default: book/_data/bench/<device>.json)")
    merge = command("merge", "merge a recording made on another machine")
    merge.add_argument("file", metavar="FILE",
                       help="a recording (.json) that `python -m kernels bench` wrote")
    grade = command("grade", "grade submitted chapter notebooks")
    grade.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                       help="a notebook (.ipynb) or a folder of them")
    grade.add_argument("--out", required=True, help="folder for grades.csv and feedback/")
    grade.add_argument("--jobs", type=int, help="notebooks graded at once (default: the cores)")
    grade.add_argument("--timeout", type=float, default=900,
                       help="seconds for one notebook in all (default: 900): most of it "
                       "to check its exercises, the rest to run it for the feedback's "
                       "notes (grade says how it splits)")
    grade.add_argument("--gradescope", action="store_true",
                       help="also write Gradescope's results.json (for one student's upload)")
    grade.add_argument("--max-processes", type=int, metavar="N",
                       help="processes and threads of one notebook (default: 4096, the "
                       "simulator's largest launches and room to spare)")
    grade.add_argument("--max-memory", metavar="SIZE", help="memory of each of its "
                       "processes, e.g. 6G (default: the machine's / jobs, 4G to 16G)")
    grade.add_argument("--max-disk", default="1G", metavar="SIZE",
                       help="bytes in its scratch folder, e.g. 512M (default: 1G)")
    grade.add_argument("--unsafe-no-sandbox", action="store_true",
                       help="grade without the OS sandbox: notebooks can read and change "
                       "anything you can (book/instructors.md)")
    setup = command("grade-setup", "write a Gradescope or GitHub Classroom set-up")
    setup.add_argument("service", choices=["gradescope", "classroom"],
                       help="the service to set up: gradescope or classroom")
    setup.add_argument("--out", required=True, help="folder to write it into")
    setup.add_argument("--chapter", help="classroom: the chapter the assignment is")
    setup.add_argument("--package", help="classroom: what pip installs for the grader, e.g. "
                       "git+https://github.com/you/course-student@main")
    setup.add_argument("--notebook", help="classroom: the notebook's path in the student's "
                       "repository (default: CHAPTER.ipynb)")
    passed = command("grade-passed", "exit 0 if every row of a grades.csv "
                            "earned an exercise's points (for GitHub Classroom)")
    passed.add_argument("grades", metavar="GRADES", help="the grades.csv that grade wrote")
    passed.add_argument("label", metavar="LABEL",
                        help="an exercise's label, e.g. atomics-ex-256 (shown under each "
                        "exercise's heading in the book)")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in ("grade", "grade-setup", "grade-passed"):
        from kernels.grading import cli

        return cli.run(args, args.command_parser)

    import kernels
    from kernels import harness

    if args.command == "info":
        print(json.dumps(harness.environment(), indent=1))
        return 0
    if args.command == "merge":
        try:
            print(f"merged into {harness.merge_recording(args.file)}")
        except ValueError as err:  # said plainly, as argparse says a bad argument
            print(f"{parser.prog} merge: error: {err}", file=sys.stderr)
            return 2
        return 0
    if kernels.SIMULATOR:
        print("python -m kernels bench needs a CUDA GPU, and this process runs on the "
              f"Numba CUDA simulator ({kernels.REASON}). Simulated times mean nothing, so "
              "nothing was recorded. Run it on a machine with an NVIDIA GPU.",
              file=sys.stderr)
        return 2
    from tqdm import tqdm

    from kernels.harness import profiler

    profiler.ENABLED = True  # device-busy times beside the events' (like for like)
    keys = sorted(harness.load_benchmarks(args.topic))
    limits = harness.measure_limits()
    entries = {}
    for key in (bar := tqdm(keys, unit="benchmark")):
        bar.set_description(key)
        entries[key] = harness.run_benchmark(key)
    path = harness.write_recording(entries, limits, args.out)
    print(f"recorded {len(entries)} benchmarks in {path}", flush=True)
    if profiler.unavailable() is None:  # see kernels.harness.profiler: exit, no teardown
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
