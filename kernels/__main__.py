"""Command line: ``python -m kernels info`` and ``python -m kernels bench [TOPIC]``."""

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
    args = parser.parse_args(argv)

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
