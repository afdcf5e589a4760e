"""The recordings the claims tests read, and the fixture that runs each claim on each.

A claim about recorded measurements must hold on every recording kept, not on the one
the book happens to show: a sentence true of one run only states noise as a finding.
The recordings kept are

* every recording the book reads (``book/_data/bench/*.json``), and
* every file in ``book/_data/bench/history/``: earlier runs of this repository (one
  file per ``python -m kernels bench`` session, holding the benchmarks that session
  ran) and runs on other devices. Adding one is dropping a file there; a file named
  for a device the book has a recording of is read on top of that recording (its
  benchmarks replace the book's), otherwise on its own.

Each is read as it was recorded and perturbed: every timing moved at random (seeded)
inside its own p10-p90 band, with the rates and per-item times derived from it moved
alike, so a claim that holds only for the median of one run fails.

A benchmark entry whose kernels changed since it was recorded (its source hash differs
from the code's) says nothing about the code as it is: a claim that reads one is
skipped for that recording, and says so.

Use: ``from claims import rec, med, recording  # noqa: F401`` in a claims test module;
the autouse fixture ``recording`` runs every test once per recording, with
``harness.recorded`` answering from that recording (so ``kernels.performance`` and
``kernels.sweeps`` read it too).
"""

import copy
import dataclasses
import json
import pathlib
import random

import pytest

from kernels import compare, harness

BENCH = pathlib.Path(__file__).resolve().parents[1] / "book" / "_data" / "bench"
HISTORY = BENCH / "history"
SEEDS = (1, 2)  # perturbed copies of each recording

# Fields a row derives from its median GPU time: moved with it.
PER_TIME = ("ns_per_increment", "ns_per_block", "us_per_block", "us_per_row", "us_per_step")
PER_RATE = ("gbps", "tflops", "pct_cublas", "pct_peak", "floor_fraction")
PER_E2E = ("us_per_step_e2e",)


@dataclasses.dataclass
class Recording:
    name: str
    data: dict   # as written by harness.write_recording: header, limits, benchmarks

    def result(self, key):
        """`key`'s entry as harness.recorded would return it from this recording."""
        if key not in self.data["benchmarks"]:
            raise LookupError(f"{self.name} has no recording of {key!r}")
        bench = harness.load_benchmarks(key.split(".")[0]).get(key)
        entry = self.data["benchmarks"][key]
        env = {k: v for k, v in self.data.items() if k not in ("benchmarks", "limits")}
        return harness.Result(key, entry, env, entry.get("limits", self.data["limits"]),
                              live=False, stale=bench is not None
                              and entry["source_hash"] != bench.source_hash())


def _read(path):
    return json.loads(path.read_text())


def kept():
    """Every recording kept, as read (not perturbed), the book's first."""
    books = {p.stem: _read(p) for p in sorted(BENCH.glob("*.json"))}
    found = [Recording(stem, data) for stem, data in books.items()]
    for path in sorted(HISTORY.glob("*.json")):
        run = _read(path)
        base = books.get(harness.slug(run["device"]["name"]))
        if base is None:
            found.append(Recording(path.stem, run))
            continue
        # the run's current benchmarks in place of the book's (a stale one would only
        # hide the book's); a run that changes none is the book's recording again
        changed = {k: e for k, e in run["benchmarks"].items()
                   if base["benchmarks"].get(k, {}).get("date") != e["date"]
                   and not Recording(path.stem, run).result(k).stale}
        if changed:
            found.append(Recording(path.stem, {**base, "benchmarks": {
                **base["benchmarks"], **changed}}))
    return found


def _move(band, rng):
    """A new median drawn inside `band`'s p10-p90 range; the factor it moved by."""
    lo, hi = band["p10"], band["p90"]
    new = rng.uniform(lo, hi) if hi > lo else band["median"]
    factor = new / band["median"]
    band["median"] = new
    return factor


def perturbed(recording, seed):
    """`recording` with every timed row's median (GPU, device-busy and end-to-end) moved
    at random inside its own p10-p90 band, and the fields derived from it moved alike."""
    data = copy.deepcopy(recording.data)
    rng = random.Random(f"{recording.name}/{seed}")
    # device-busy times draw from a generator of their own: the other draws stay as
    # they were before recordings had them
    busy_rng = random.Random(f"{recording.name}/{seed}/busy")
    for entry in data["benchmarks"].values():
        for row in entry["rows"]:
            if "busy_ms" in row and "p10" in row["busy_ms"]:
                _move(row["busy_ms"], busy_rng)
            if "e2e_ms" in row and "p10" in row["e2e_ms"]:
                f = _move(row["e2e_ms"], rng)
                for k in PER_E2E:
                    if k in row:
                        row[k] *= f
            if "time_ms" in row and "p10" in row["time_ms"]:
                f = _move(row["time_ms"], rng)
                for k in PER_TIME:
                    if k in row:
                        row[k] *= f
                for k in PER_RATE:
                    if k in row:
                        row[k] /= f
    return Recording(f"{recording.name}~{seed}", data)


def all_recordings():
    """What the claims run on: each recording kept, and its perturbed copies."""
    found = kept()
    return found + [perturbed(r, s) for r in found for s in SEEDS]


RECORDINGS = all_recordings()


@pytest.fixture(autouse=True, params=RECORDINGS, ids=[r.name for r in RECORDINGS])
def recording(request, monkeypatch):
    """Run the test on one recording: ``harness.recorded`` answers from it."""
    monkeypatch.setattr(harness, "recorded", request.param.result)
    return request.param


def rec(key):
    """The current recording's entry for `key`; the test is skipped where it has none,
    or where the kernels changed since it was recorded."""
    try:
        result = harness.recorded(key)
    except LookupError as err:
        pytest.skip(str(err))
    if result.stale:
        pytest.skip(f"{key}: recorded {result.entry['date'][:10]}, kernels changed since")
    return result


def med(row):
    return compare.ms(row)


def agrees(said, mine, theirs):
    """Whether a glued comparison's words (compare.phrase: "12% faster than ...",
    "about as fast ...", "1.5 times slower ...") go the way two medians, read from the
    rows by the test itself, go: "faster" only where ours is the shorter time."""
    return ("slower" not in said or theirs < mine) and ("faster" not in said or theirs > mine)


def fair_ms(row, other):
    """A row's median time measured as `other`'s (read here without kernels.compare, to
    check it): device-busy where one of them waits for the GPU inside (its row says how
    it was `timed`) and both have one, else the CUDA-event time."""
    blocking = "timed" in row or "timed" in other
    key = "busy_ms" if blocking and "busy_ms" in row and "busy_ms" in other else "time_ms"
    return row[key]["median"]


def measure_words(*rows):
    """How a sentence comparing `rows` alike must name its times: the start of
    kernels.compare.MEASURED's entry for them."""
    blocking = any("timed" in r for r in rows)
    if blocking and all("busy_ms" in r for r in rows):
        return "device-busy"
    return "CUDA events, which count" if blocking else "CUDA-event times"


def render(chapter, marker, **names):
    """Run the lines of `chapter`'s code cell from the one that holds `marker` to the
    cell's end, with `names` defined and ``glue`` recording: the glued values, as the
    page would print them for those inputs (another device's, a perturbed recording)."""
    import re
    text = (BENCH.parents[1] / f"{chapter}.md").read_text()
    cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, flags=re.S)
    found = [c for c in cells if marker in c]
    if len(found) != 1:
        raise LookupError(f"{chapter}.md: {len(found)} code cells hold {marker!r}")
    code = found[0][found[0].index(marker):]
    glued = {}
    names = {"glue": lambda key, value, display=True: glued.__setitem__(key, value), **names}
    exec(compile(code, f"{chapter}.md", "exec"), names)
    return glued
