"""The course's figures, drawn for the book's content column.

* ``figure(height, ...)``: ``plt.subplots`` at the column's width (``WIDTH_IN``), laid
  out so that every label stays inside the figure;
* ``title(ax, what, result)``: what the figure shows, and where its numbers come from;
* ``png(fig)``: the figure as PNG at ``DPI``, with its smallest text and its width in
  the PNG's ``course-figure`` text field; it refuses text smaller than ``MIN_PT`` and
  text cut by the figure's edge;
* ``facts(png_bytes)`` and ``rendered_px(facts, shown_width)``: what the site test reads
  back: how tall the smallest text of a figure is on screen at the width it is shown.

Sizes: the column is about 690 CSS px wide at a 1280 px window, and a 6.6 in figure
shown there keeps 1.45 px per point, so text of ``MIN_PT`` = 9 pt renders at 13 px. A
narrow (phone) screen shows a figure narrower than ``narrowest_px()``, where that text
is 10 px, whole, and a tap opens it at that width (book/_static/figures.css, course.js).

Importing this module sets matplotlib's default font sizes to the course's (9-11 pt),
and, inside IPython, shows every figure made by ``figure()`` through ``png()``.
"""

import io
import json
import textwrap

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

WIDTH_IN = 6.6     # the content column (about 690 px at a 1280 px window)
DPI = 200          # sharp on a high-density screen, where 690 CSS px are 1380 pixels
MIN_PT = 9         # the smallest text a course figure may hold
MIN_PX = 10        # the smallest text a reader should see on screen, in CSS px
KEY = "course-figure"  # the PNG text field that carries the figure's facts
TITLE_CHARS = 84   # characters of 10 pt text across the column, with a margin

STYLE = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10,
         "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9,
         "legend.title_fontsize": 9, "figure.titlesize": 11, "figure.dpi": 100}
matplotlib.rcParams.update(STYLE)


class CourseFigure(Figure):
    """A Figure made by ``figure()``: IPython shows it through ``png()``."""


def figure(height, nrows=1, ncols=1, **kwargs):
    """A figure `height` inches tall at the column's width, and its axes, as
    ``plt.subplots(nrows, ncols, **kwargs)`` returns them. Constrained layout keeps
    titles, labels and legends inside the figure, so what is drawn is what is shown."""
    # 16 in: the summary of every benchmark on the performance page, a row each
    if not 0.5 <= height <= 16:
        raise ValueError(f"figure height {height!r} in: give 0.5 to 16 inches")
    kwargs.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=(WIDTH_IN, height), FigureClass=CourseFigure,
                        **kwargs)


def title(target, what, result=None):
    """Title the figure of `target` (a Figure or one of its Axes) with what it shows
    and, on a second line, where its numbers come from: a recording's device, date and
    numba-cuda version (``harness.Result.caption``). Aligned with the figure's left
    edge, where long lines have the whole width."""
    fig = target if isinstance(target, Figure) else target.figure
    text = what if result is None else f"{what}\n{result.caption}"
    lines = [part for line in text.split("\n") for part in textwrap.wrap(line, TITLE_CHARS)]
    fig.suptitle("\n".join(lines), x=0.01, ha="left",
                 fontsize=matplotlib.rcParams["axes.titlesize"])


def _drawn_texts(fig):
    """(Text artist, size in points) of every non-empty text drawn when `fig` is drawn
    (a tick label outside the view, or an invisible one, is not drawn)."""
    drawn = []
    renderer = fig.canvas.get_renderer()

    def draw_text(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            drawn.append((mtext, prop.get_size_in_points()))
        return type(renderer).draw_text(renderer, gc, x, y, s, prop, angle, ismath, mtext)

    renderer.draw_text = draw_text  # for this one draw
    try:
        fig.draw(renderer)
    finally:
        del renderer.draw_text
    return drawn


def smallest_text_pt(fig):
    """The size in points of the smallest text drawn in `fig`, or None if it has none."""
    sizes = [size for _, size in _drawn_texts(fig)]
    return min(sizes) if sizes else None


def cut_texts(fig):
    """The drawn texts that reach past the figure's edge, where the PNG cuts them."""
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox.padded(1)

    def inside(box):
        return edge.x0 <= box.x0 and box.x1 <= edge.x1 and edge.y0 <= box.y0 and box.y1 <= edge.y1

    return [t.get_text() for t, _ in _drawn_texts(fig)
            if t is not None and not inside(t.get_window_extent(renderer))]


def png(fig):
    """`fig` as PNG bytes at DPI, its facts (smallest text in points, width in inches,
    dpi) in the PNG text field KEY. Raises ValueError on text under MIN_PT, or on text
    that the figure's edge cuts."""
    smallest = smallest_text_pt(fig)
    if smallest is not None and smallest < MIN_PT:
        small = sorted({repr(t.get_text()[:40]) for t in fig.findobj(Text)
                        if t.get_text().strip() and t.get_fontsize() < MIN_PT})
        raise ValueError(f"figure text of {smallest:g} pt, under the course's {MIN_PT} pt "
                         f"(it would show under {MIN_PX} px in the book): {', '.join(small)}")
    cut = cut_texts(fig)
    if cut:
        raise ValueError("figure text cut at the figure's edge (shorten or wrap it): "
                         + ", ".join(repr(t[:60]) for t in cut))
    facts = {"smallest_pt": smallest, "width_in": fig.get_figwidth(), "dpi": DPI}
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={KEY: json.dumps(facts)})
    return out.getvalue()


def facts(data):
    """The facts png() stored in a PNG (bytes or a path), or None if it has none."""
    with Image.open(io.BytesIO(data) if isinstance(data, bytes) else data) as image:
        text = image.info.get(KEY)
        return None if text is None else dict(json.loads(text), width_px=image.width)


def rendered_px(found, shown_width):
    """CSS px of the smallest text of a figure with `found` facts shown `shown_width`
    CSS px wide."""
    if found["smallest_pt"] is None:
        return None
    return found["smallest_pt"] / 72 * found["dpi"] * shown_width / found["width_px"]


def narrowest_px(width_in=WIDTH_IN):
    """The narrowest a figure `width_in` wide may be shown with MIN_PT text at MIN_PX."""
    return MIN_PX * 72 * width_in / MIN_PT


def _show_in_ipython():
    # A printer for CourseFigure itself: the inline backend re-registers its own for
    # Figure whenever it is configured, but a subclass's printer is looked up first.
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(CourseFigure, png)


_show_in_ipython()
