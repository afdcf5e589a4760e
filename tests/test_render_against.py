"""book/_tools/render_against.py: the chapters' glued prose against another device's
data, with the numbers computed from the device following that device (issue 35,
item 4: "8 blocks of 256 = 2,048 threads" is 1,024 threads per SM on a T4)."""

import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import glue_values  # noqa: E402
import render_against  # noqa: E402

H200 = ROOT / "book" / "_data" / "bench" / "history" / "nvidia-h200-2026-11-26-ace625c.json"


@pytest.fixture(scope="module")
def book():
    return render_against.book_recording(ROOT)


def test_t4_replaces_the_device_and_limits_not_the_timings(book):
    t4 = render_against.t4(book)
    assert t4["device"]["name"] == "Tesla T4" and t4["device"]["sm_count"] == 40
    for key, entry in t4["benchmarks"].items():
        assert entry["limits"]["h2d_gbps"] == 12.0, key
        assert entry["rows"] == book["benchmarks"][key]["rows"], key
        assert entry["params"] == book["benchmarks"][key]["params"], key
    assert book["device"]["name"] != "Tesla T4"  # the book's recording is left alone


def test_prose_drops_code_and_fills_every_role():
    text = ("One {glue:text}`a` and {glue:text}`b`.\n```{code-cell} ipython3\n"
            "glue('c', 1)  # {glue:text}`c`\n```\nafter\n")
    assert render_against.prose(text, {"a": "1,024"}) == "One 1,024 and <<b?>>.\nafter\n"


@pytest.mark.needs("jupytext")  # the chapter's code cells run to glue its numbers
def test_gridstride_saturation_follows_the_t4(book):
    said = render_against.glued(ROOT, "gridstride", render_against.t4(book))
    assert (said["sweep_device"], said["sm_threads"], said["sm_full_blocks"]) == \
        ("Tesla T4", "1,024", "4")


@pytest.mark.needs("jupytext")  # the chapter's code cells run to glue its numbers
def test_gridstride_saturation_follows_the_h200_recording():
    said = render_against.glued(ROOT, "gridstride", json.loads(H200.read_text()))
    assert (said["sweep_device"], said["sm_threads"], said["sm_full_blocks"]) == \
        ("NVIDIA H200", "2,048", "8")


@pytest.mark.needs("jupytext")  # the chapter's code cells run to glue its numbers
def test_matmul_on_a_t4_says_no_sm_is_idle(book):
    """With 64 tiles for 40 SMs no SM is idle: the page said "0% of the SMs get no tile
    at all" after "there are only 64 block tiles"."""
    said = render_against.glued(ROOT, "matmul", render_against.t4(book))
    assert (said["sms"], said["lanes"], said["gpu"]) == ("40", "64", "Tesla T4")
    assert said["tiles_idle"].startswith("every SM gets a tile")
    text = render_against.prose((ROOT / "book" / "matmul.md").read_text(), said)
    assert "only 8 × 8" not in text and "<<" not in text


def cells(*sources):
    return [{"cell_type": "code", "source": source} for source in sources]


def test_only_the_cells_glued_values_need_run():
    chapter = cells(
        "import numpy as np\nfrom myst_nb import glue",  # kept: glue and np are read
        "n = 3\nunused = 4",  # kept: binds n
        "print(np.arange(n))",  # skipped: prints, binds nothing
        "parts = []\nfig = None",  # kept: parts is changed below
        "parts.append(n)",  # kept: changes parts, which a glued value reads
        "for k in range(9):\n    fig = k",  # skipped: binds k and fig, which no one reads
        "for n in range(9):\n    pass",  # kept: leaves the n that the next cell reads
        "n = n + 1",  # kept: reads n before it binds it
        "def total():\n    return sum(parts) + n\nnp.random.seed(0)",  # kept: total
        "glue('total', total(), display=False)")
    kept = glue_values.glue_cells(chapter)
    assert [chapter.index(c) for c in kept] == [0, 1, 3, 4, 6, 7, 8, 9]


def test_a_cell_that_does_not_parse_is_kept():
    chapter = cells("%timeit 1", "glue('x', 1)")
    assert glue_values.glue_cells(chapter) == chapter


@pytest.mark.needs("jupytext")  # the chapter's code cells run to glue its numbers
@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / glue_values.STORE).glob("*.json")))
def test_the_cells_glue_needs_glue_what_the_whole_chapter_glues(name):
    """render_against runs only the cells glued values need: they glue, in the same
    order, every value the whole chapter glued (its store, which test_book compares with
    the book build's)."""
    got = glue_values.collect(ROOT, f"book/{name}", only_glue=True)
    stored = glue_values.stored(ROOT, f"book/{name}")
    assert (got["values"], got["order"]) == (stored["values"], stored["order"])
