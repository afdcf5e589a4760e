"""The exercise registry and the book's exercise text describe the same exercises."""

import importlib
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
    # the judge imports only this module for it (kernels.grading.judge.check)
    assert ex.check_name in importlib.import_module(f"kernels.checks.{ex.topic}").__all__


CODE_CELL = re.compile(r"^```\{code-cell\} ipython3\n(.*?)^```$", re.M | re.S)


@pytest.mark.parametrize("label", sorted(registry.EXERCISES))
def test_every_exercise_has_a_starter_cell(label):
    """Under each exercise, before the next one, a code cell to start from: it defines
    the name the exercise asks for and calls its checker."""
    ex = registry.EXERCISES[label]
    text = (BOOK / f"{ex.chapter}.md").read_text()
    block = next(b for b in re.split(r"(?=^```\{exercise\})", text, flags=re.M)
                 if f":label: {label}\n" in b)
    starters = [code for code in CODE_CELL.findall(block)
                if re.search(rf"^(def|class) {ex.names[0]}\b", code, re.M)
                and f"checks.{ex.check_name}(" in code]
    assert starters, f"{label}: no code cell under the exercise defines {ex.names[0]} and " \
        f"calls checks.{ex.check_name}"


def test_points_follow_difficulty():
    assert {ex.points for ex in registry.EXERCISES.values()} == {1, 2, 3}
    assert registry.by_chapter("gridstride")[0].label == "gridstride-ex-saxpy"
