"""The course's figures, drawn for the book's content column.

* ``figure(height, ...)``: ``plt.subplots`` at the column's width (``WIDTH_IN``), laid
  out so that every label stays inside the figure;
* ``title(ax, what, result)``: what the figure shows, and where its numbers come from;
* ``wrap(text, width_in)``, ``panel_title(ax, text)``: text broken to a width measured in
  the font; a panel's title wrapped to the panel's width as laid out (``fit_titles``);
* ``png(fig)``: the figure as PNG at ``DPI``, with its smallest text and its width in
  the PNG's ``course-figure`` text field; it refuses text smaller than ``MIN_PT``, text
  cut by the figure's edge (``cut_texts``), texts that run into each other
  (``colliding_texts``), a note a plotted line or the frame runs through
  (``texts_over_lines``), text an arrow runs through (``marks_over_texts``) and a mark
  that leaves its panel (``escaping_marks``);
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
import os
import warnings
import weakref

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyArrowPatch
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.textpath import text_to_path
from PIL import Image

WIDTH_IN = 6.6     # the content column (about 690 px at a 1280 px window)
DPI = 200          # sharp on a high-density screen, where 690 CSS px are 1380 pixels
MIN_PT = 9         # the smallest text a course figure may hold
# Set by the book build and the tests: a figure a reader could not read fails them. A
# student's run (other data, another GPU) gets the figure and a FigureWarning instead.
STRICT_ENV = "COURSE_STRICT_FIGURES"
MIN_PX = 10        # the smallest text a reader should see on screen, in CSS px
KEY = "course-figure"  # the PNG text field that carries the figure's facts

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
    # from 1% of the width in, with as much margin on the right
    fig.suptitle(wrap(text, 0.98 * WIDTH_IN), x=0.01, ha="left",
                 fontsize=matplotlib.rcParams["axes.titlesize"])


def wrap(text, width_in, size=None):
    """`text` with each of its lines broken between words into lines no wider than
    `width_in` inches at `size` points (default: the axes' title size), as measured in
    the font, not counted in characters."""
    prop = FontProperties(size=size or matplotlib.rcParams["axes.titlesize"])
    limit = width_in * 72

    def fits(line):
        return text_to_path.get_text_width_height_descent(line, prop, ismath=False)[0] <= limit

    lines = []
    for given in text.split("\n"):
        line = ""
        for word in given.split(" "):
            if line and not fits(f"{line} {word}"):
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "\n".join(lines)


_PANEL_TITLES = weakref.WeakKeyDictionary()  # Axes -> its title as given, by panel_title


def panel_title(ax, text, columns=1):
    """Title the panel `ax` at its left with `text`, wrapped by ``fit_titles(fig)`` (which
    ``png`` calls) to the panel's width once the figure is laid out; until then, to a
    guess of it: the column less its tick labels, shared by `columns` panels."""
    _PANEL_TITLES[ax] = text
    ax.set_title(wrap(text, (WIDTH_IN - 1.5) / columns), loc="left")


def fit_titles(fig):
    """Wrap each title set by panel_title to the width its panel was laid out at, so it
    uses the whole width (a title no longer wraps at a guess of it)."""
    fig.draw_without_rendering()
    for ax in fig.axes:
        if ax in _PANEL_TITLES:
            ax.set_title(wrap(_PANEL_TITLES[ax], ax.bbox.width / fig.dpi), loc="left")


def _drawn_texts(fig):
    """(Text artist, size in points, corners) of every non-empty line of text drawn
    when `fig` is drawn (a tick label outside the view, or an invisible one, is not
    drawn): the corners (4 x 2, display px, y up) of the line's box, turned with it."""
    drawn, drawing = [], []
    renderer = fig.canvas.get_renderer()
    height = renderer.get_canvas_width_height()[1]

    def draw_text(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s.strip():
            # a text of several lines draws each with mtext None: its artist is the
            # Text being drawn
            artist = mtext if mtext is not None else drawing[-1] if drawing else None
            # the box of the words, not of spaces that pad them away from a line
            words = s.strip()
            width, tall, descent = renderer.get_text_width_height_descent(words, prop, ismath)
            lead = s[:len(s) - len(s.lstrip())]
            start = renderer.get_text_width_height_descent(lead, prop, ismath)[0] if lead else 0
            turn = np.radians(angle)
            rotate = np.array([[np.cos(turn), np.sin(turn)], [-np.sin(turn), np.cos(turn)]])
            box = np.array([[0, -descent], [width, -descent], [width, tall - descent],
                            [0, tall - descent]]) + (start, 0)
            # Agg draws top down: (x, y) is the line's baseline start, y from the top
            corners = box @ rotate + (x, height - y if renderer.flipy() else y)
            drawn.append((artist, prop.get_size_in_points(), corners))
        return type(renderer).draw_text(renderer, gc, x, y, s, prop, angle, ismath, mtext)

    def draw_artist(self, renderer):
        drawing.append(self)
        try:
            return text_draw(self, renderer)
        finally:
            drawing.pop()

    text_draw = Text.draw
    renderer.draw_text = draw_text  # for this one draw
    Text.draw = draw_artist  # Annotation.draw calls Text.draw: it is found here too
    try:
        fig.draw(renderer)
    finally:
        Text.draw = text_draw
        del renderer.draw_text
    return drawn


def smallest_text_pt(fig, drawn=None):
    """The size in points of the smallest text drawn in `fig`, or None if it has none.
    (`drawn`: _drawn_texts(fig), where the caller has it.)"""
    sizes = [size for _, size, _ in drawn or _drawn_texts(fig)]
    return min(sizes) if sizes else None


def cut_texts(fig, drawn=None):
    """The drawn texts, of one line or several, that reach past the figure's edge,
    where the PNG cuts them."""
    edge = fig.bbox.padded(1)

    def inside(corners):
        (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
        return edge.x0 <= x0 and x1 <= edge.x1 and edge.y0 <= y0 and y1 <= edge.y1

    cut = []
    for t, _, corners in drawn or _drawn_texts(fig):
        if t is not None and not inside(corners) and t.get_text() not in cut:
            cut.append(t.get_text())
    return cut


def _gap(a, b):
    """The distance between convex polygons `a` and `b` (corners in order), negative
    where they overlap: the widest gap along the normal of any of their edges (the
    separating axis test)."""
    widest = -np.inf
    for poly in (a, b):
        for p, q in zip(poly, np.roll(poly, -1, axis=0)):
            normal = np.array([q[1] - p[1], p[0] - q[0]])
            normal = normal / (np.hypot(*normal) or 1)
            pa, pb = a @ normal, b @ normal
            widest = max(widest, pb.min() - pa.max(), pa.min() - pb.max())
    return widest


def colliding_texts(fig, drawn=None):
    """Pairs of drawn texts whose lines overlap or nearly touch (tick labels run into
    each other, a label over a title), by the boxes of their lines as drawn, turned
    ones included. Closer than a quarter of their size, two texts read as one: the
    lines of one text stand further apart."""
    lines = [(t, size, corners) for t, size, corners in drawn or _drawn_texts(fig)
             if t is not None]
    if len(lines) < 2:
        return []
    least = np.array([size for _, size, _ in lines]) * 0.25 * fig.dpi / 72  # px
    low = np.array([c.min(axis=0) for _, _, c in lines]) - least[:, None]
    high = np.array([c.max(axis=0) for _, _, c in lines])
    # pairs whose upright boxes come that close, then measured as turned (a figure may
    # hold hundreds of labels)
    near = np.triu((low[:, None] < high[None]).all(-1) & (low[None] < high[:, None]).all(-1), 1)
    found = []
    for i, j in zip(*np.nonzero(near)):
        (t, _, a), (u, _, b) = lines[i], lines[j]
        pair = (t.get_text(), u.get_text())
        if u is not t and pair not in found and _gap(a, b) < min(least[i], least[j]):
            found.append(pair)
    return found


def _covers(text, mark):
    """Whether `text` is drawn on an opaque box of its own (bbox) above `mark`, which
    that box hides where they cross."""
    box = text.get_bbox_patch()
    return box is not None and box.get_fill() and box.get_facecolor()[3] == 1 and \
        text.get_zorder() > mark.get_zorder()


def texts_over_lines(fig, drawn=None):
    """(text, line label) for each text placed in a plot (ax.text, ax.annotate) that a
    plotted line or its panel's frame runs through (a bar's label past the frame's
    edge), where the line hides the words; a line drawn under an opaque box that holds
    the text (a label on a bar) is hidden there."""
    renderer = fig.canvas.get_renderer()
    found = []
    for t, _, corners in drawn or _drawn_texts(fig):
        ax = getattr(t, "axes", None)
        if ax is None or t not in ax.texts:
            continue
        box = Path(corners, closed=False)
        (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
        grounds = [p for p in ax.patches if p.get_visible() and p.get_fill() and
                   p.get_facecolor()[3] == 1 and p.get_window_extent(renderer).contains(x0, y0)
                   and p.get_window_extent(renderer).contains(x1, y1)]
        lines = [(line, line.get_label()) for line in ax.get_lines()
                 if line.get_linestyle() not in ("None", "", " ")]
        lines += [(spine, f"the frame's {side} edge") for side, spine in ax.spines.items()
                  if ax.axison and spine.get_linewidth() > 0]
        for line, label in lines:
            if not line.get_visible() or _covers(t, line) or \
                    any(p.get_zorder() > line.get_zorder() for p in grounds):
                continue
            path = line.get_transform().transform_path(line.get_path())
            if path.intersects_path(box, filled=True) and (t.get_text(), label) not in found:
                found.append((t.get_text(), label))
    return found


def _arrows(ax):
    """The arrows of panel `ax`: annotations' and those added as patches."""
    return [t.arrow_patch for t in ax.texts if getattr(t, "arrow_patch", None)] + \
        [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def marks_over_texts(fig, drawn=None):
    """(text, "arrow") for each drawn text that an arrow runs through (an arc across
    the labels of the cells it joins), where the arrow hides the words; an
    annotation's arrow is not counted against its own text."""
    drawn = drawn or _drawn_texts(fig)
    found = []
    for ax in fig.axes:
        for mark in _arrows(ax):
            path = mark.get_transform().transform_path(mark.get_path())
            for t, _, corners in drawn:
                if t is None or getattr(t, "arrow_patch", None) is mark or \
                        _covers(t, mark) or (t.get_text(), "arrow") in found:
                    continue
                if path.intersects_path(Path(corners, closed=False), filled=True):
                    found.append((t.get_text(), "arrow"))
    return found


def escaping_marks(fig):
    """Arrows, and lines drawn unclipped, that leave their panel (an arc bowing out of
    its timeline through the next panel's title), as (kind, its panel's title)."""
    fig.draw_without_rendering()
    found = []
    for ax in fig.axes:
        marks = [t.arrow_patch for t in ax.texts if getattr(t, "arrow_patch", None)]
        marks += [a for a in (*ax.patches, *ax.lines) if not a.get_clip_on()]
        frame = ax.bbox.padded(2)
        for mark in marks:
            # the path as drawn, in display px (its curves' true extents)
            drawn = mark.get_transform().transform_path(mark.get_path()).get_extents()
            if not (frame.x0 <= drawn.x0 and drawn.x1 <= frame.x1 and
                    frame.y0 <= drawn.y0 and drawn.y1 <= frame.y1):
                found.append((type(mark).__name__, ax.get_title(loc="left")[:60]))
    return found


def png(fig):
    """`fig` as PNG bytes at DPI, its facts (smallest text in points, width in inches,
    dpi) in the PNG text field KEY, its panel titles first wrapped to their width
    (fit_titles). Text under MIN_PT, and what a reader could not read (text that the
    figure's edge cuts, texts that run into each other, a text a plotted line or the
    frame runs through, a text an arrow runs through, a mark that leaves its panel)
    raise ValueError where STRICT_ENV is "1" (the book build, the tests), else give a
    FigureWarning."""
    fit_titles(fig)
    drawn = _drawn_texts(fig)
    smallest = smallest_text_pt(fig, drawn)
    for problem in _unreadable(fig, drawn, smallest):
        if os.environ.get(STRICT_ENV) == "1":
            raise ValueError(problem)
        warnings.warn(problem, FigureWarning, stacklevel=2)
    facts = {"smallest_pt": smallest, "width_in": fig.get_figwidth(), "dpi": DPI}
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={KEY: json.dumps(facts)})
    return out.getvalue()


class FigureWarning(UserWarning):
    """A figure a reader may not read well (png() outside the book build and tests)."""


def _unreadable(fig, drawn, smallest):
    """What png() finds a reader could not read, one sentence each."""
    if smallest is not None and smallest < MIN_PT:
        small = sorted({repr(t.get_text()[:40]) for t in fig.findobj(Text)
                        if t.get_text().strip() and t.get_fontsize() < MIN_PT})
        yield (f"figure text of {smallest:g} pt, under the course's {MIN_PT} pt "
               f"(it would show under {MIN_PX} px in the book): {', '.join(small)}")
    for found, what in ((cut_texts(fig, drawn), "figure text cut at the figure's edge "
                         "(shorten or wrap it)"),
                        (colliding_texts(fig, drawn), "figure texts that run into each "
                         "other (space or shorten them)"),
                        (texts_over_lines(fig, drawn), "figure text that a frame or plotted "
                         "line runs through (move it off the lines)"),
                        (escaping_marks(fig), "marks that leave their panel (keep them "
                         "inside it)"),
                        (marks_over_texts(fig, drawn), "figure text that an arrow runs "
                         "through (route the arrow between the words)")):
        if found:
            yield f"{what}: " + ", ".join(repr(f[:60]) if isinstance(f, str) else
                                          repr(tuple(x[:40] for x in f)) for f in found[:6])


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
