"""The book builds with every chapter executed (simulator here) and no warnings."""

import pathlib
import re
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import glue_values  # noqa: E402
import myst  # noqa: E402

pytestmark = pytest.mark.book

CHAPTERS = ["intro", "setup", "first_kernel", "gridstride", "cooperative", "reduction", "streams",
            "mutex", "matmul", "atomics", "performance", "status", "glossary"]


def test_every_chapter_built(built_book):
    for name in CHAPTERS:
        assert (built_book / "book" / f"{name}.html").exists(), name


def test_gridstride_shows_module_kernels_and_plots(built_book):
    html = (built_book / "book" / "gridstride.html").read_text()
    # the kernel source comes from the module, not a pasted copy
    assert "vector_add_gridstride_kernel" in html and "cuda.gridsize" in html
    assert "match the reference" in html
    images = re.findall(r'<img[^>]+src="([^"]+\.png)"', html)
    assert len(images) >= 3, images
    for src in images:
        assert (built_book / "book" / src).stat().st_size > 5000, src
    assert "Traceback" not in html


@pytest.mark.parametrize("name", CHAPTERS)
def test_cell_options_are_valid_yaml(name):
    """A code cell's `---` options block is YAML; a caption with ': ' in a plain scalar
    stops myst-nb ("Invalid options format"). Checked here in a second, before a build."""
    for block in myst.split((ROOT / "book" / f"{name}.md").read_text()):
        if getattr(block, "name", None) == "code-cell":
            try:
                block.options_and_content()
            except yaml.YAMLError as err:
                pytest.fail(f"book/{name}.md line {block.line}: the cell's options are not "
                            f"YAML ({str(err).splitlines()[0]}); write a long caption or alt "
                            "text as a block scalar (caption: >-)")


MARKDOWN = re.compile(r"`|\*\*|(?<![\w*])\*(?=\S)|\]\(|(?<!\w)_(?=\w[^_]*_(?!\w))")


@pytest.mark.parametrize("name", CHAPTERS)
def test_glued_text_holds_no_markdown(name):
    """{glue:text} shows a value as plain text: the backticks of a glued kernel name
    showed on the page as backticks (gridstride). The values the chapter glues into
    its prose, as the store keeps them (book/_data/glue), hold none."""
    text = (ROOT / "book" / f"{name}.md").read_text()
    keys = set(re.findall(r"\{glue:text\}`([^`]+)`", text))
    store = glue_values.stored(ROOT, f"book/{name}") if keys else None
    if not keys or store is None:
        return  # no glue, or no store: test_notebooks_quote_the_numbers_this_build_glued
    marked = {k: store["values"][k] for k in keys & set(store["values"])
              if isinstance(store["values"][k], str) and MARKDOWN.search(store["values"][k])}
    assert not marked, f"book/{name}.md glues Markdown as text (shown as written): {marked}"


def test_notebooks_quote_the_numbers_this_build_glued(built_book):
    """The Colab notebooks take their numbers from book/_data/glue, kept fresh against
    the chapters' code cells and the recordings; a change in the package that changes
    a glued number shows here, as a difference from what the build glued."""
    import json

    import kernels

    if not kernels.SIMULATOR:
        pytest.skip("on a GPU the build glues live numbers, the notebooks recorded ones")
    executed = built_book.parent / "jupyter_execute" / "book"
    for name in CHAPTERS:
        path = executed / f"{name}.glue.json"
        if not path.exists():
            continue
        built = {k: v["data"]["text/plain"] for k, v in json.loads(path.read_text()).items()}
        stored = glue_values.stored(ROOT, f"book/{name}")
        assert stored, f"book/{name}.md glues numbers but has no store: run `make notebooks`"
        differ = {k: (v, repr(stored["values"].get(k))) for k, v in built.items()
                  if repr(stored["values"].get(k)) != v}
        assert not differ, (f"book/_data/glue/{name}.json differs from what the book glued "
                            f"(built, stored): {differ}; delete it and run `make notebooks`")
