"""The book builds with every chapter executed (simulator here) and no warnings."""

import pathlib
import re
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import myst  # noqa: E402

pytestmark = pytest.mark.book

CHAPTERS = ["intro", "setup", "gridstride", "cooperative", "reduction", "streams", "mutex", "matmul",
            "atomics", "performance", "status"]


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
