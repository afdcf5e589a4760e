"""The exercise registry and the book's exercise text describe the same exercises."""

import pathlib
import re

import pytest

from kernels import checks
from kernels.checks import registry

BOOK = pathlib.Path(__file__).resolve().parent.parent / "book"
EXERCISE = re.compile(r"^(`{3,})\{exercise\} (?P<title>[^\n]*)\n:label: (?P<label>\S+)\n"
                      r"(?P<text>.*?)^\1$", re.M | re.S)


def book_exercises():
    found = {}
    for md in sorted(BOOK.glob("*.md")):
        for m in EXERCISE.finditer(md.read_text()):
            found[m["label"]] = (md.stem, m["title"], m["text"])
    return found


def test_every_book_exercise_is_registered_and_nothing_else():
    assert sorted(book_exercises()) == sorted(registry.EXERCISES)


@pytest.mark.parametrize("label", sorted(registry.EXERCISES))
def test_exercise_text_matches_its_entry(label):
    chapter, title, text = book_exercises()[label]
    ex = registry.EXERCISES[label]
    assert ex.chapter == chapter
    assert title.endswith(f"({ex.difficulty})"), title
    for name in ex.names:  # the text names every function the grader will look for
        assert f"`{name}" in text, f"{label}: the text never names {name}"
    assert re.search(rf"checks\.{ex.check_name}\b", text), f"{label}: the text never names its checker"
    assert getattr(checks, ex.check_name).__name__ == ex.check_name


def test_points_follow_difficulty():
    assert {ex.points for ex in registry.EXERCISES.values()} == {1, 2, 3}
    assert registry.by_chapter("gridstride")[0].label == "gridstride-ex-saxpy"
