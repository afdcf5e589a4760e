"""kernels.plots: figures for the column, their PNG facts, and the CSS that keeps a
figure's smallest text at 10 px on a phone."""

import base64
import io
import pathlib
import re

import matplotlib
import pytest
from PIL import Image

from kernels import plots

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_figure_is_the_column_width_and_carries_its_facts():
    fig, ax = plots.figure(2.5)
    ax.plot([1, 2, 3])
    ax.set_title("a title")
    data = plots.png(fig)
    with Image.open(io.BytesIO(data)) as image:
        # constrained layout, no tight bounding box: the PNG is exactly the figure
        assert image.size == (round(plots.WIDTH_IN * plots.DPI), round(2.5 * plots.DPI))
    found = plots.facts(data)
    assert found["smallest_pt"] == plots.MIN_PT  # the tick labels
    assert found["dpi"] == plots.DPI and found["width_px"] == plots.WIDTH_IN * plots.DPI
    # at the 688 px column of a 1280 px window
    assert plots.rendered_px(found, 688) == pytest.approx(plots.MIN_PT / 72 * 688 / 6.6)
    assert plots.rendered_px(found, 688) > plots.MIN_PX


def test_smallest_text_counts_only_text_that_is_drawn():
    fig, ax = plots.figure(2)
    ax.plot([0, 1], [0, 1])
    ax.set_title("title", fontsize=14)
    ax.text(0.5, 0.5, "hidden", fontsize=5, visible=False)
    ax.text(0.5, 0.5, "   ", fontsize=5)  # blank: nothing drawn
    ax.tick_params(labelsize=11)
    assert plots.smallest_text_pt(fig) == 11
    ax.annotate("small", (0.2, 0.2), fontsize=7.5)
    assert plots.smallest_text_pt(fig) == 7.5


def test_png_refuses_text_under_the_minimum_and_names_it():
    fig, ax = plots.figure(2)
    ax.legend(handles=[plt.Line2D([], [], label="tiny legend")], fontsize=6)
    with pytest.raises(ValueError, match=r"6 pt, under the course's 9 pt.*'tiny legend'"):
        plots.png(fig)


def test_png_refuses_text_the_figure_edge_cuts():
    fig, ax = plots.figure(2)
    ax.set_xlabel("a label far too long for the column " * 4)
    assert plots.cut_texts(fig) == [ax.get_xlabel()]
    with pytest.raises(ValueError, match="cut at the figure's edge.*'a label far too long"):
        plots.png(fig)
    ax.set_xlabel("a label that fits")
    assert plots.cut_texts(fig) == []


def test_png_of_a_figure_without_text():
    fig, ax = plots.figure(1)
    ax.axis("off")
    found = plots.facts(plots.png(fig))
    assert found["smallest_pt"] is None and plots.rendered_px(found, 600) is None


def test_facts_of_a_png_not_made_by_the_course():
    fig, ax = plt.subplots()
    out = io.BytesIO()
    fig.savefig(out, format="png")
    assert plots.facts(out.getvalue()) is None


def test_bad_height_is_refused():
    for height in (0, 0.1, 40):
        with pytest.raises(ValueError, match="give 0.5 to 16 inches"):
            plots.figure(height)


def test_title_names_what_and_where_from():
    class Recording:
        caption = "NVIDIA H100 80GB HBM3, recorded 2026-11-24, numba-cuda 0.30.4"

    fig, ax = plots.figure(2)
    plots.title(ax, "Time per increment", Recording())
    assert fig.get_suptitle() == f"Time per increment\n{Recording.caption}"
    assert fig._suptitle.get_horizontalalignment() == "left"


def test_css_opens_figures_at_their_narrowest_legible_width():
    """figures.css's --course-readable: the width below which a tap opens a figure
    full size (course.js), and the width it opens at."""
    css = (ROOT / "book" / "_static" / "figures.css").read_text()
    widths = re.findall(r"--course-readable:\s*(\d+)px", css)
    assert widths == [f"{plots.narrowest_px():.0f}"]
    assert plots.narrowest_px() * plots.MIN_PT / 72 / plots.WIDTH_IN >= plots.MIN_PX


def test_ipython_shows_course_figures_through_png():
    shell = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell.instance()
    plots._show_in_ipython()
    fig, ax = plots.figure(1.5)
    ax.set_title("shown")
    data, _ = shell.display_formatter.format(fig)
    png = data["image/png"]
    raw = base64.b64decode(png) if isinstance(png, str) else png
    assert plots.facts(raw)["smallest_pt"] == plots.MIN_PT
