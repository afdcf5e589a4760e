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


def test_outside_the_build_and_tests_an_unreadable_figure_is_shown_with_a_warning(
        monkeypatch):
    """A student's run draws other data (another GPU, a live timing): a label that runs
    long then costs a warning, not the figure."""
    monkeypatch.setenv(plots.STRICT_ENV, "0")
    fig, ax = plots.figure(2)
    ax.set_xlabel("a label far too long for the column " * 4)
    with pytest.warns(plots.FigureWarning, match="cut at the figure's edge"):
        data = plots.png(fig)
    assert plots.facts(data)["width_px"] > 0


def test_png_refuses_text_the_figure_edge_cuts():
    fig, ax = plots.figure(2)
    ax.set_xlabel("a label far too long for the column " * 4)
    assert plots.cut_texts(fig) == [ax.get_xlabel()]
    with pytest.raises(ValueError, match="cut at the figure's edge.*'a label far too long"):
        plots.png(fig)
    ax.set_xlabel("a label that fits")
    assert plots.cut_texts(fig) == []


def test_png_refuses_text_of_several_lines_that_the_edge_cuts():
    """Matplotlib draws a text of several lines a line at a time, without naming the
    text: the streams chapter's two-line x-label ran past the edge unseen."""
    fig, ax = plots.figure(2)
    ax.set_xlabel("time (ms)\nthe PCIe speeds recorded on the device, " + "not a measurement " * 4)
    assert plots.cut_texts(fig) == [ax.get_xlabel()]
    with pytest.raises(ValueError, match="cut at the figure's edge"):
        plots.png(fig)
    ax.set_xlabel(plots.wrap(ax.get_xlabel(), plots.WIDTH_IN - 1))
    assert plots.cut_texts(fig) == []


def test_wrap_measures_the_words_in_the_font():
    text = "sum_tree_no_syncthreads: partials[1], written by thread 1, read by thread 0"
    assert plots.wrap(text, 6) == text  # 75 characters, 5.3 in at 10 pt
    assert plots.wrap(text, 3).split("\n") == ["sum_tree_no_syncthreads: partials[1],",
                                               "written by thread 1, read by thread 0"]
    assert plots.wrap("a\nb c", 6) == "a\nb c"  # given line breaks are kept


def test_panel_titles_wrap_to_the_width_their_panel_is_laid_out_at():
    """A panel's title takes the panel's whole width: a guess of it in characters
    wrapped the trace figures' titles at 66, well short of their panels."""
    fig, (top, bottom) = plots.figure(3, 2, 1)
    top.set_yticks([0, 1], ["block 0 thread 0", "block 0 thread 1"])
    title = "sum_tree_no_syncthreads: partials[1], written by thread 1, read by thread 0"
    plots.panel_title(top, title + "\nrace: block 0 thread 0 (a read) and block 0 thread 1 "
                      "(a write) both touch partials[1] with no block barrier")
    plots.panel_title(bottom, "short")
    plots.fit_titles(fig)
    lines = top.get_title(loc="left").split("\n")
    width = top.bbox.width / fig.dpi
    assert plots.wrap(top.get_title(loc="left"), width) == top.get_title(loc="left")
    assert " ".join(lines[:2]) == title and len(lines[0]) > 66  # not wrapped at 66
    assert lines[2].startswith("race:") and len(lines) == 4  # the given break is kept
    assert bottom.get_title(loc="left") == "short"
    assert plots.cut_texts(fig) == [] and plots.colliding_texts(fig) == []


def test_png_refuses_tick_labels_that_run_into_each_other():
    """The matmul chapter's names broken in two at a 60 degree slant: the second line
    of one ran into the next name (the boxes of turned text are turned too)."""
    names = ["one_block_per_sm", "cupy.matmul (cuBLAS)", "torch.matmul (cuBLAS)",
             "numpy.matmul (CPU)"] * 4
    fig, ax = plots.figure(4)
    ax.bar(range(len(names)), range(len(names)))
    ax.set_xticks(range(len(names)), [s.replace(" (", "\n(") for s in names], rotation=60,
                  ha="right", rotation_mode="anchor")
    assert ("cupy.matmul\n(cuBLAS)", "torch.matmul\n(cuBLAS)") in plots.colliding_texts(fig)
    with pytest.raises(ValueError, match="run into each other"):
        plots.png(fig)
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", rotation_mode="anchor")
    assert plots.colliding_texts(fig) == []
    ax.set_title("overlapping")
    ax.text(0.5, 1.0, "a note on the title", transform=ax.transAxes, va="bottom")
    assert {frozenset(p) for p in plots.colliding_texts(fig)} == {
        frozenset(("overlapping", "a note on the title"))}


def test_png_refuses_a_note_that_a_line_runs_through():
    """The atomics chapter's note on the racy kernel sat across the atomic kernel's line;
    a label on an opaque bar drawn over a line is not crossed by it."""
    fig, ax = plots.figure(2.5)
    ax.plot([0, 10], [0, 10], label="rising")
    note = ax.annotate("a note across the line", (1, 1), xytext=(3, 5))
    assert plots.texts_over_lines(fig) == [("a note across the line", "rising")]
    with pytest.raises(ValueError, match="line runs through"):
        plots.png(fig)
    note.set_position((5, 1))  # below the line
    assert plots.texts_over_lines(fig) == []
    ax.axvline(2, zorder=0.5, label="under")
    ax.barh([1], [4], height=1, zorder=1)
    ax.text(1.5, 1, "on a bar", va="center")
    assert plots.texts_over_lines(fig) == []


def test_png_refuses_a_label_that_the_frame_runs_through():
    """The reduction chapter's longest bars had their time written past the frame's
    right edge, which crossed the words; inside the frame, or inside its bar, a label
    is not crossed."""
    fig, ax = plots.figure(2.5)
    ax.barh([0, 1], [9, 2])
    ax.set_xlim(0, 10)
    label = ax.text(9, 0, " 9.0 us, a long label", va="center")
    assert plots.texts_over_lines(fig) == [(" 9.0 us, a long label", "the frame's right edge")]
    with pytest.raises(ValueError, match="a frame or plotted line runs through"):
        plots.png(fig)
    label.set_horizontalalignment("right")  # inside its bar
    assert plots.texts_over_lines(fig) == []
    ax.spines["right"].set_visible(False)
    label.set_horizontalalignment("left")
    assert plots.texts_over_lines(fig) == []  # no frame line there to cross it


def test_png_refuses_an_arrow_across_a_label():
    """The cooperative chapter's arc from cell 1,6 to cell 2,1 bowed through the labels
    of row 1; a straight arrow between the rows crosses none, and an annotation's arrow
    is not counted against its own text."""
    fig, ax = plots.figure(2.5)
    ax.axis("off")
    ax.set_xlim(0, 8)
    ax.set_ylim(-3, 1)
    for c in range(8):
        for r in range(3):
            ax.text(c + 0.5, -r + 0.5, f"{r},{c}", ha="center", va="center")
    ax.annotate("", xy=(1.5, -1.2), xytext=(6.5, -0.8),
                arrowprops={"arrowstyle": "->", "connectionstyle": "arc3,rad=0.15"})
    assert ("1,4", "arrow") in plots.marks_over_texts(fig)
    with pytest.raises(ValueError, match="an arrow runs through"):
        plots.png(fig)
    ax.texts[-1].remove()
    ax.annotate("", xy=(1.5, -1.2), xytext=(6.5, -0.8), arrowprops={"arrowstyle": "->"})
    ax.annotate("its own note", xy=(3.2, -2.0), xytext=(4.2, -2.0),
                arrowprops={"arrowstyle": "->"}, va="center")
    assert plots.marks_over_texts(fig) == []


def test_png_refuses_a_mark_that_leaves_its_panel():
    """The reduction chapter's race arc, bowed with the distance it spans, ran out of
    its timeline through the next panel's title."""
    fig, (top, bottom) = plots.figure(3, 2, 1)
    top.set_xlim(-0.5, 14.5)
    top.set_ylim(1.5, -0.5)
    top.annotate("", (14, 0), (0, 1), arrowprops={"arrowstyle": "-",
                                                  "connectionstyle": "arc3,rad=0.25"})
    assert [kind for kind, _ in plots.escaping_marks(fig)] == ["FancyArrowPatch"]
    with pytest.raises(ValueError, match="leave their panel"):
        plots.png(fig)
    top.texts[0].remove()
    top.annotate("", (14, 0), (0, 1), arrowprops={"arrowstyle": "-",
                                                  "connectionstyle": "arc3,rad=0.02"})
    assert plots.escaping_marks(fig) == []


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
