"""The claims machinery (tests/claims.py) and the book's text outside its glue.

The claims themselves are tested per chapter (tests/test_claims_<chapter>.py), on
every recording kept and on copies perturbed inside their noise; these tests check
that those recordings are what the claims need: more than one run, a second device,
perturbations that stay inside each row's own band.
"""

import pathlib
import re

import claims
from kernels import harness

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_claims_read_several_runs_and_a_second_device():
    """Claims run on the book's recording, earlier runs and a second device."""
    kept = claims.kept()
    assert len(kept) >= 3, [r.name for r in kept]
    assert len({r.data["device"]["name"] for r in kept}) >= 2
    assert len(list(claims.HISTORY.glob("*.json"))) >= 5


def test_a_history_run_replaces_the_books_entries_and_keeps_the_rest():
    """A run of the book's device is read on top of the book's recording: its current
    benchmarks replace the book's, the others are the book's."""
    books = {p.stem: harness_data(p) for p in claims.BENCH.glob("*.json")}
    for r in claims.kept():
        base = books.get(harness.slug(r.data["device"]["name"]))
        if base is None or r.name in books:
            continue
        run = claims.Recording(r.name, harness_data(claims.HISTORY / f"{r.name}.json"))
        own = run.data["benchmarks"]
        for key, entry in r.data["benchmarks"].items():
            current = key in own and not run.result(key).stale
            expected = own[key] if current else base["benchmarks"][key]
            assert entry["date"] == expected["date"], (r.name, key)


def harness_data(path):
    import json
    return json.loads(path.read_text())


def test_perturbed_timings_stay_in_their_band_and_derived_fields_follow():
    """Each perturbed median lies in its row's p10-p90 band, the copies differ from the
    recording and from each other, and a rate moves inversely to its time."""
    rec = claims.kept()[0]
    a, b = (claims.perturbed(rec, s) for s in claims.SEEDS)
    moved = 0
    for key, entry in rec.data["benchmarks"].items():
        for i, row in enumerate(entry["rows"]):
            if "p10" not in row.get("time_ms", {}):
                continue
            new = a.data["benchmarks"][key]["rows"][i]
            t, t2 = row["time_ms"], new["time_ms"]
            assert t["p10"] <= t2["median"] <= t["p90"], (key, row["name"])
            moved += t2["median"] != t["median"]
            assert t2["median"] != b.data["benchmarks"][key]["rows"][i]["time_ms"][
                "median"] or t["p10"] == t["p90"]
            if "gbps" in row:
                assert abs(new["gbps"] * t2["median"] / (row["gbps"] * t["median"]) - 1) < 1e-9
    assert moved > 100


def test_a_stale_entry_is_skipped_not_read():
    """An entry whose kernels changed since it was recorded is no claims data."""
    import pytest
    rec = claims.kept()[0]
    key = next(iter(rec.data["benchmarks"]))
    stale = claims.Recording("stale", {**rec.data, "benchmarks": {
        key: {**rec.data["benchmarks"][key], "source_hash": "0" * 12}}})
    assert stale.result(key).stale
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness, "recorded", stale.result)
        with pytest.raises(pytest.skip.Exception):
            claims.rec(key)


def test_intro_lists_every_page_of_the_book_in_toc_order():
    """intro.md: the chapter table ("chapter rows: one per chapter, in _toc.yml order")
    names every page of the table of contents, setup and instructors included."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[1]
    toc = re.findall(r"- file: book/(\S+)", (root / "_toc.yml").read_text())
    intro = (root / "book" / "intro.md").read_text()
    rows = re.findall(r"^\| \{doc\}`([^`]+)` \|", intro, flags=re.M)
    assert rows == toc
