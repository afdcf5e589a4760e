"""A chapter's prose as another device's reader would see it.

The book renders its glued numbers from the committed recording (an H100). A reader
on Colab's T4, or one whose numbers come from the H200 recording, reads the same
sentences with other values; a sentence that states an H100 number as a general fact,
or computes a device number from the wrong device, shows only there. This renders
every {glue:text} value of a chapter against

* another recording (``--recording PATH``, e.g. the H200 run kept in
  book/_data/bench/history/), read in place of the book's, or
* a T4's published limits (``--t4``): the book's recording with its device and limits
  replaced by the T4's, so that every number computed from the device (threads per SM,
  SMs, peak, L2, link speeds) follows the T4. Its timings and launches (each entry's
  params, its SM count included) stay the recording's: read the device numbers from
  such a render, not the verdicts.

    python book/_tools/render_against.py CHAPTER (--recording PATH | --t4)

prints the chapter's prose (code cells left out) with every glued value in place.
"""

import argparse
import copy
import json
import pathlib
import re
import sys
import tempfile

import glue_values

# NVIDIA Tesla T4 (Turing, sm_75) as deviceQuery reports it: 40 SMs of 64 float32
# lanes, 1,590 MHz boost clock, 1,024 resident threads per SM, 4 MB of L2; memory
# 320 GB/s (256-bit GDDR6 at 5,001 MHz, both edges); PCIe 3 x16, about 12 GB/s
# each way in practice. The device copy counts bytes read + written, as the
# recordings' limits do, so its ceiling is the memory's peak.
T4_DEVICE = {"name": "Tesla T4", "compute_capability": [7, 5], "sm_count": 40,
             "clock_khz": 1_590_000, "simulator": False, "l2_bytes": 4 * 2**20}
T4_LIMITS = {"copy_gbps": 320.0, "h2d_gbps": 12.0, "d2h_gbps": 12.0,
             "fp32_tflops": 40 * 64 * 2 * 1.59e9 / 1e12,
             "note": "a T4's published limits (not measured), for render_against.py"}
GLUE = re.compile(r"\{glue:text\}`([^`]+)`")
FENCE = re.compile(r"^(```|~~~)")


def with_device(data, device, limits):
    """Recording `data` as if made on `device` with `limits`: the header's device and
    every limits replaced; the timings and each entry's params (the launches the rows
    were measured at) left as recorded."""
    data = copy.deepcopy(data)
    data["device"] = dict(device)
    data["limits"] = {**data["limits"], **limits}
    for entry in data["benchmarks"].values():
        entry["limits"] = {**entry.get("limits", data["limits"]), **limits}
    return data


def t4(data):
    """`data` (a recording) with a T4's published device facts and limits."""
    return with_device(data, T4_DEVICE, T4_LIMITS)


def book_recording(root):
    """The book's recording (the only file in book/_data/bench of checkout `root`)."""
    found = sorted((root / glue_values.BENCH).glob("*.json"))
    if len(found) != 1:
        raise ValueError(f"expected one recording in {glue_values.BENCH}, found {len(found)}")
    return json.loads(found[0].read_text())


def glued(root, name, data):
    """What chapter `name` (book/<name>.md of checkout `root`) glues when its recordings
    are `data` alone."""
    with tempfile.TemporaryDirectory() as bench:
        slug = re.sub(r"[^a-z0-9]+", "-", data["device"]["name"].lower()).strip("-")
        (pathlib.Path(bench) / f"{slug}.json").write_text(json.dumps(data))
        return glue_values.collect(root, f"book/{name}", bench, only_glue=True)["values"]


def prose(text, values):
    """The chapter's Markdown outside its fenced blocks, each glue role replaced by its
    value (a key nothing glued reads <<key?>>)."""
    kept, fence = [], None
    for line in text.split("\n"):
        mark = FENCE.match(line.strip())
        if fence is None and mark:
            fence = mark.group(1)
            continue
        if fence is not None:
            if line.strip() == fence:
                fence = None
            continue
        kept.append(GLUE.sub(lambda m: str(values.get(m.group(1), f"<<{m.group(1)}?>>")),
                             line))
    return "\n".join(kept)


def render(root, name, data):
    """Chapter `name`'s prose (book/<name>.md of checkout `root`) rendered against
    recording `data`."""
    root = pathlib.Path(root)
    return prose((root / "book" / f"{name}.md").read_text(), glued(root, name, data))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter", help="e.g. gridstride (book/gridstride.md)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--recording", type=pathlib.Path, help="a recording file")
    which.add_argument("--t4", action="store_true", help="a T4's published limits")
    args = parser.parse_args(argv)
    root = glue_values.TOOLS.parents[1]
    data = (t4(book_recording(root)) if args.t4
            else json.loads(args.recording.read_text()))
    print(render(root, args.chapter, data))


if __name__ == "__main__":
    main(sys.argv[1:])
