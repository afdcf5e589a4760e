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


# Words that compare or quantify what a figure measured. A caption cannot be glued, so
# it says what the figure shows and leaves the comparison to the glued text beside it.
# (Not "lower" or "later": a schematic's lower half, the later blocks in a queue.)
COMPARISON = re.compile(
    r"\b(faster|slower|quicker|cheaper|dearer|costlier|better|worse|more|less|fewer|than"
    r"|longer|shorter|higher|larger|smaller|bigger|greater|earlier|wider|narrower|heavier"
    r"|beats?|outperforms?|approach(es)?|close to|near|far (above|below|left|right|the)"
    r"|tallest|shortest|just (under|over)|twice|sharply|steeply|nearly flat|stays flat"
    r"|levels? off|levelling off|too (few|many)|reach(es|ed)?|parallel to|helps|dominates?"
    r"|hundreds of|thousands of|dozens of|a few (nano|micro|milli)?seconds"
    r"|\w+fold|orders? of magnitude"
    # what a figure of the input shows, compared in words ("far from uniform", "e the most
    # frequent", "e, t and o stand highest", "five or six lanes", "bars around 5 to 6")
    r"|far from|most frequent|stands? highest"
    r"|(one|two|three|four|five|six|seven|eight|nine) or (two|three|four|five|six|seven|eight"
    r"|nine|ten)|around \d+( to \d+)?)\b"
    r"|\d\s*(ns|µs|ms|GB/s|TFLOP/s)(?!\w)", re.I)


def captions_and_alt_text():
    """(where, text) of every caption and alt text in the chapters: a code cell's
    ``caption:`` or ``alt:`` (folded or on one line) and a directive's ``:alt:``."""
    found = []
    for md in sorted((ROOT / "book").glob("*.md")):
        lines = md.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(\s*):?(caption|alt):\s*(.*)$", line)
            if not m:
                continue
            indent, text = len(m.group(1)), m.group(3)
            if text in (">-", ">", "|", "|-", ""):
                block = []
                for nxt in lines[i + 1:]:
                    if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                        break
                    block.append(nxt.strip())
                text = " ".join(block)
            found.append((f"{md.name}:{i + 1} {m.group(2)}", text.strip()))
    return found


def test_captions_and_alt_text_hold_no_comparisons():
    """DESIGN: "Captions and alt text state what a figure shows, never a comparison":
    a comparison in a caption cannot follow the recording, so it drifts with the next."""
    found = captions_and_alt_text()
    assert len(found) > 40  # the parser still finds the book's captions
    said = {where: COMPARISON.search(text).group(0) for where, text in found
            if COMPARISON.search(text)}
    assert not said, said


def test_the_caption_scan_catches_a_comparison():
    for text in ("each version is faster than the one before", "the lock costs hundreds "
                 "of nanoseconds", "it reaches 61 TFLOP/s", "close to cuBLAS",
                 "they differ a hundredfold", "two orders of magnitude apart",
                 "the dashed line is the target; the best versions reach it",
                 "on the right the time runs parallel to the floor", "the L2 helps",
                 "the copies end earlier", "its bar is longer", "a larger grid",
                 "the distribution is far from uniform", "e the most frequent letter",
                 "e, t and o stand highest", "the text crowds five or six lanes",
                 "the text's bars sit around 5 to 6"):
        assert COMPARISON.search(text), text
    assert not COMPARISON.search("Every histogram version, fastest first, on the text")


def glued_prose():
    """(chapter, sentence with the book's glued values put in) for every sentence of
    the chapters that glues a value, from the stores `make notebooks` keeps
    (book/_data/glue: what the chapters glued from the book's recordings)."""
    import json
    found = []
    for store in sorted((ROOT / "book" / "_data" / "glue").glob("*.json")):
        values = json.loads(store.read_text())["values"]
        text = (ROOT / "book" / f"{store.stem}.md").read_text()
        for para in re.split(r"\n\s*\n", text):
            if "{glue:text}" not in para:
                continue
            found.append((store.stem, re.sub(r"\{glue:text\}`([^`]+)`",
                                             lambda m: str(values.get(m.group(1), "?")),
                                             " ".join(para.split()))))
    return found


def test_glued_prose_says_no_empty_range_no_negative_cost_and_no_zero_difference():
    """Item 3 of issue 35, on the prose as the book renders it: no "from 1,488 to 1,488
    µs", no cost below zero, no "0% faster"."""
    found = glued_prose()
    assert len(found) > 50  # the stores and the chapters were found
    bad = []
    for chapter, said in found:
        for a, b in re.findall(r"from ([\d.,]+) (?:µs |ms )?to ([\d.,]+)", said):
            if a == b:
                bad.append((chapter, f"from {a} to {b}", said[:160]))
        for m in re.finditer(r"(?<![\w.])-\d[\d.,]* ?(µs|ms|ns)\b", said):
            bad.append((chapter, m.group(0), said[:160]))
        for m in re.finditer(r"(?<![\d.])0% (faster|slower)", said):
            bad.append((chapter, m.group(0), said[:160]))
    assert not bad, bad
