"""The built site as a reader sees it, in headless Chromium (tests/browser.py).

Against the book built once per session (conftest's ``built_book``), served on
localhost: every page of _toc.yml loads without console errors, its images load
and are not empty, no cell output holds a Python traceback, each notebook page's
Colab button opens a generated notebook that exists, exercise solutions start
collapsed, and the navigation reaches every page. At a laptop's 1280 px and a
phone's 400 px: no page wider than the window, no table, output, code or word of the
prose cut or scrolled inside the column (text in columns, a printed table, keeps its
lines and scrolls in its own box), no code listing cut inside a name, figures no wider
than their frame and, on a phone, a tap opens each at a size where its text is
readable; the menu and contents buttons work.
Screenshots of two pages are saved to _build/site-test/. Every internal link of the
built HTML must resolve; external links are checked when a network is there and
skipped with a note if not. Math is MathML, with no script from a CDN.
"""

import concurrent.futures
import functools
import http.server
import json
import pathlib
import re
import socket
import sys
import threading
import urllib.parse
import warnings

import pytest
import requests

# the lent GPU machine has neither: the whole module skips there, and says why
pytest.importorskip("bs4", reason="needs bs4 (BeautifulSoup), which this machine does not have")
pytest.importorskip("selenium", reason="needs selenium, which this machine does not have")
from bs4 import BeautifulSoup  # noqa: E402
from PIL import Image  # noqa: E402

from browser import (CONTENTS_CODE_JS, CUED_JS, OVERFLOW_JS, PAGE_FIT_JS,  # noqa: E402
                     SCROLLING_JS, Browser, find_chromium)

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import notebooks  # noqa: E402  (the one reader of _toc.yml and _config.yml's repository)

pytestmark = pytest.mark.book

PAGES = notebooks.toc_files(ROOT)            # e.g. "book/intro", "book/setup", ...
NOTEBOOK_PAGES = notebooks.chapters(ROOT)    # the pages with a Colab button
OWNER, REPO, BRANCH = notebooks.book_settings(ROOT)
COLAB_PREFIX = f"{notebooks.COLAB}/{OWNER}/{REPO}/blob/{BRANCH}/"
REPOSITORY = f"https://github.com/{OWNER}/{REPO}"
ARTIFACTS = ROOT / "_build" / "site-test"
SCREENSHOTS = ("book/intro", "book/performance")
WIDTHS = (1280, 400)  # a laptop's window and a phone: tables and outputs fit both
TRACEBACK = "Traceback (most recent call last)"
EXTERNAL = re.compile(r"\(https?://(?!127\.0\.0\.1[:/])")  # a failed load from another host


FIRST_SOLUTION_SHOWN_JS = """
[...document.querySelector('.solution').children].some((c) =>
  !c.matches('.admonition-title') && c.checkVisibility({checkOpacity: true,
  checkVisibilityCSS: true}) && c.getBoundingClientRect().height > 0)
"""

# Exercise and solution headings as shown (whitespace squeezed), with the exercise's id.
HEADINGS_JS = """({
  exercises: [...document.querySelectorAll('div.exercise')].map((e) => ({id: e.id,
    title: e.querySelector('.admonition-title').textContent.replace(/\\s+/g, ' ').trim()})),
  solution_titles: [...document.querySelectorAll('div.solution > .admonition-title')]
    .map((t) => t.textContent.replace(/\\s+/g, ' ').trim()),
})"""


# Every image of the main column: its alt text, its figure's caption, the width it is
# shown at and the width of the frame it sits in (CSS px), with the page laid out at
# the browser's current width; and the text of any captioned figure that holds no image
# (a cell's other output, captioned).
FIGURES_JS = r"""
(() => {
  const article = document.querySelector("article.bd-article") || document.body;
  return {images: [...article.querySelectorAll("img")].map((i) => {
    const figure = i.closest("figure");
    const caption = figure && figure.querySelector("figcaption");
    return {src: i.currentSrc || i.src, alt: i.getAttribute("alt") || "",
            caption: caption ? caption.textContent.trim() : "",
            shown: i.getBoundingClientRect().width,
            frame: (figure || i.parentElement).getBoundingClientRect().width};
  }), imageless: [...article.querySelectorAll("figure")].filter((f) => !f.querySelector("img"))
    .map((f) => f.textContent.trim().slice(0, 160))};
})()
"""
FIGURE_WIDTHS = (1280, 400)  # a laptop's window and a phone

# The search fields and buttons a reader can see.
SEARCHES_JS = r"""
[...document.querySelectorAll(".search-button-field, .search-button")].filter((s) =>
  s.checkVisibility({checkVisibilityCSS: true}) && s.getBoundingClientRect().width > 0)
  .length
"""

# The previous and next links at the page's foot: how many lines each title takes.
PAGER_JS = r"""
[...document.querySelectorAll(".prev-next-area a .prev-next-title")].map((t) => ({
  title: t.textContent.trim(),
  lines: Math.round(t.getBoundingClientRect().height /
                    parseFloat(getComputedStyle(t).lineHeight))}))
"""

# After a tap on a figure (course.js): the figure as the open dialog shows it, and
# whether the dialog stays inside the window (it scrolls inside, the page does not).
ZOOMED_JS = r"""
(() => {
  const dialog = [...document.querySelectorAll("dialog")].find((d) => d.open);
  if (!dialog) return null;
  const img = dialog.querySelector("img"), box = dialog.getBoundingClientRect();
  return {src: img.currentSrc || img.src, shown: img.getBoundingClientRect().width,
          inside: box.right <= document.documentElement.clientWidth + 1 && box.left >= -1};
})()
"""
TAP_FIGURE_JS = """
const img = document.querySelectorAll("article.bd-article img")[arguments[0]];
img.scrollIntoView({block: "center"});
return img;
"""
PATH_LIKE = re.compile(r"^\S*[/\\]\S*$|\.(png|jpe?g|svg|gif)\b|_images/", re.IGNORECASE)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_book):
    """The built HTML on http://127.0.0.1:<port>, as a static host serves it."""
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(built_book)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


def _settled_scrolling(browser, seconds=5.0):
    """SCROLLING_JS once the page's ResizeObserver has drawn its cues: on a loaded
    machine that can take longer than the fixed wait after a resize; a box that stays
    without a cue for `seconds` is a defect."""
    import time

    end = time.monotonic() + seconds
    found = browser.evaluate(SCROLLING_JS)
    while any(not b["cued"] for b in found) and time.monotonic() < end:
        browser.wait(0.5)
        found = browser.evaluate(SCROLLING_JS)
    return found


@pytest.fixture(scope="module")
def site(server, tmp_path_factory):
    """Every toc page visited once in Chromium: {page: facts}, plus "/" (the front door)."""
    executable = find_chromium()
    if executable is None:
        pytest.fail("no Chromium found: `make test` installs Debian's chromium "
                    "(apt-get); or point $CHROMIUM at a Chromium or Chrome binary")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser = Browser(executable, tmp_path_factory.mktemp("chromium-profile"))
    try:
        facts = {"/": browser.visit(server + "/", settle=1.0)}
        facts["/"]["landed"] = browser.evaluate("location.pathname")
        for name in PAGES:
            facts[name] = browser.visit(f"{server}/{name}.html")
            if name in SCREENSHOTS:
                browser.screenshot(ARTIFACTS / f"{name.rsplit('/', 1)[-1]}.png")
            facts[name].update(browser.evaluate(HEADINGS_JS))
            for kind in ("overflow", "fit", "pager", "searches", "scrolling", "contents"):
                facts[name][kind] = {}
            for width in WIDTHS:  # the same page laid out again at each width
                browser.resize(width)
                browser.wait(0.3)
                facts[name]["overflow"][width] = browser.evaluate(OVERFLOW_JS)
                facts[name]["fit"][width] = browser.evaluate(PAGE_FIT_JS)
                facts[name]["pager"][width] = browser.evaluate(PAGER_JS)
                facts[name]["searches"][width] = browser.evaluate(SEARCHES_JS)
                facts[name]["scrolling"][width] = _settled_scrolling(browser)
                facts[name]["contents"][width] = browser.evaluate(CONTENTS_CODE_JS)
            browser.resize(WIDTHS[0])
            if facts[name]["solutions"] and "opened" not in facts:
                # a collapsed solution must still open: click its toggle
                browser.evaluate("document.querySelector('.solution .toggle-button').click()")
                browser.wait(0.8)
                facts["opened"] = browser.evaluate(FIRST_SOLUTION_SHOWN_JS)
    finally:
        browser.close()
    return facts


@pytest.fixture(scope="module")
def figures_seen(server, built_book, tmp_path_factory):
    """{(page, width): FIGURES_JS's facts} for every toc page at each of FIGURE_WIDTHS,
    with each image's PNG facts (kernels.plots.facts: None if not drawn by kernels.plots)."""
    from kernels import plots

    browser = Browser(find_chromium(), tmp_path_factory.mktemp("chromium-figures"))
    seen = {}
    try:
        for width in FIGURE_WIDTHS:
            browser.resize(width)
            for name in PAGES:
                browser.visit(f"{server}/{name}.html", settle=0.2)
                seen[name, width] = browser.evaluate(FIGURES_JS)
                for k, img in enumerate(seen[name, width]["images"]):
                    # tapped as a reader would: what opens, if anything
                    browser.driver.execute_script(TAP_FIGURE_JS, k).click()
                    browser.wait(0.1)
                    img["zoomed"] = browser.evaluate(ZOOMED_JS)
                    browser.evaluate("document.querySelectorAll('dialog[open]')"
                                     ".forEach((d) => d.close())")
    finally:
        browser.close()
    for found in seen.values():
        for img in found["images"]:
            path = urllib.parse.unquote(urllib.parse.urlsplit(img["src"]).path)[1:]
            file = built_book / path
            img["file"] = path
            img["png"] = plots.facts(str(file)) if file.suffix == ".png" else None
    return seen


def _errors(facts):
    """The page's console errors, less two that are not the site's fault."""
    errors = []
    for e in facts["console_errors"]:
        if "/favicon.ico" in e:
            continue  # the browser's own request, not the page's: a static host has none
        if EXTERNAL.search(e) and not _network():
            # e.g. a script from another host: loads for a reader, cannot load here
            warnings.warn(f"{facts['url']}: not checked without a network: {e}")
            continue
        errors.append(e)
    return errors


def _page_of(url, server):
    """'book/setup' from http://127.0.0.1:port/book/setup.html."""
    path = urllib.parse.urlsplit(url).path
    return path[len(urllib.parse.urlsplit(server).path) + 1:].removesuffix(".html")


# ------------------------------------------------------------------ in the browser


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_without_console_errors(site, name):
    errors = _errors(site[name])
    assert not errors, f"{name}: the browser console shows errors:\n" + "\n".join(errors)


@pytest.mark.parametrize("name", PAGES)
def test_every_image_loads_and_is_not_empty(site, server, built_book, name):
    for img in site[name]["images"]:
        assert img["complete"] and img["width"] > 0 and img["height"] > 0, \
            f"{name}: image {img['src']} did not load (broken or empty)"
        if img["src"].startswith(server):
            file = built_book / urllib.parse.unquote(urllib.parse.urlsplit(img["src"]).path)[1:]
            assert file.stat().st_size > 0, f"{name}: {file} is empty"


@pytest.mark.parametrize("name", PAGES)
def test_no_cell_output_holds_a_traceback(site, name):
    bad = [o["text"][:800] for o in site[name]["outputs"]
           if o["traceback"] or TRACEBACK in o["text"]]
    assert not bad, f"{name}: a cell output shows a Python traceback:\n" + "\n---\n".join(bad)


# A negative duration, as printed: "-1.000 ms" (the simulator's events give -1.0)
NEGATIVE_TIME = re.compile(r"(?<![\w.\-\u2212])[-\u2212]\d[\d,]*(?:\.\d+)?\s*(?:ms|µs|us|ns|s)\b")


@pytest.mark.parametrize("name", PAGES)
def test_no_cell_output_shows_a_negative_time(site, name):
    """A time is never negative: on the simulator, whose CUDA events time nothing,
    `elapsed_time` gives -1.0, which the streams chapter printed as the kernel's time."""
    bad = [o["text"][max(0, m.start() - 80):m.end()] for o in site[name]["outputs"]
           for m in NEGATIVE_TIME.finditer(o["text"])]
    assert not bad, f"{name}: a cell output shows a negative time:\n" + "\n---\n".join(bad)


@pytest.mark.parametrize("name", PAGES)
def test_tables_and_outputs_fit_the_column(site, name):
    """No table or cell output is wider than the main column, or scrolled or clipped
    inside it, at 1280 px or at a phone's 400 px; text in columns (a printed table) may
    scroll in its own box only where it shows that it does (browser.CUED_JS): two
    outputs cut at 1280 px passed a check that let any such text scroll."""
    bad = [f"{width} px: {o['element']} {o['width']} px wide in a {o['column']} px column "
           f"(spills {o['spill']} px, {o['hidden']} px hidden inside): {o['text'][:80]!r}"
           for width, found in site[name]["overflow"].items() for o in found]
    assert not bad, f"{name}: tables or outputs do not fit the column:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", PAGES)
def test_pages_are_no_wider_than_the_window(site, name):
    bad = {w: f["page"] for w, f in site[name]["fit"].items() if f["page"] > f["window"]}
    assert not bad, f"{name} scrolls sideways as a whole: " + ", ".join(
        f"{page} px wide in a {w} px window" for w, page in bad.items())


@pytest.mark.parametrize("name", PAGES)
def test_code_fits_the_column(site, name):
    """No inline code runs past the column or is cut by the edge of its box (an
    exercise's `checks.xxx(...)` call) or broken inside its `...`, no command-line
    option is broken after its hyphens ('--' / 'timeout'), no word of the prose
    (a long name as plain text, a path) does, and no code listing hides the end of its
    lines (course.js wraps them to the column)."""
    bad = [f"{w} px: inline code cut by {c['cut']} px: {c['text']!r}"
           for w, f in site[name]["fit"].items() for c in f["code"]]
    bad += [f"{w} px: text cut by {c['cut']} px: {c['text']!r}"
            for w, f in site[name]["fit"].items() for c in f["words"]]
    bad += [f"{w} px: a listing scrolls {c['hidden']} px sideways: {c['text']!r}"
            for w, f in site[name]["fit"].items() for c in f["listings"]]
    bad += [f"{w} px: inline code broken inside its '...': {text!r}"
            for w, f in site[name]["fit"].items() for text in f["ellipsis"]]
    bad += [f"{w} px: a command-line option broken over two lines: {text!r}"
            for w, f in site[name]["fit"].items() for text in f["options"]]
    assert not bad, f"{name}: code does not fit the column:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", PAGES)
def test_previous_and_next_titles_read_on_two_lines_at_most(site, name):
    """On a phone the previous and next links do not share the row (course.css): side
    by side, each got under half the column and a chapter title ran to six or seven
    lines of two words. (At 1280 px, side by side, the longest takes three.)"""
    phone = min(WIDTHS)
    bad = [f"{phone} px: {t['title']!r} on {t['lines']} lines"
           for t in site[name]["pager"][phone] if t["lines"] > 2]
    assert not bad, f"{name}: previous/next titles squeezed:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", PAGES)
def test_one_search_field_at_each_width(site, name):
    """One search, not two: at 1280 px the theme's header showed a second search field
    above the sidebar's, in an otherwise empty band (course.css hides that header
    while the sidebar is shown)."""
    assert site[name]["searches"] == {w: 1 for w in WIDTHS}, \
        f"{name}: search fields shown at each width: {site[name]['searches']}"


@pytest.mark.parametrize("name", PAGES)
def test_text_in_columns_keeps_its_lines(site, name):
    """A printed table or the grader's race picture keeps each line whole, so its
    columns line up, scrolling inside its own box where the column is narrower
    (course.js: keepTextArt); wrapped like code, its columns no longer line up."""
    bad = [f"{w} px: {a['written']} lines drawn as {a['drawn']}: {a['text']!r}"
           for w, f in site[name]["fit"].items() for a in f["art"]]
    assert not bad, f"{name}: text in columns is wrapped:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", PAGES)
def test_boxes_that_scroll_sideways_show_it(site, name):
    """A box that scrolls inside the column (text in columns, a table or formula wider
    than a phone's column) shows a shade at each edge past which some of it is hidden
    (course.js: cueScrolling): a phone draws no scrollbar until one scrolls, and the
    matmul chapter's tables, cut at the column's edge, looked whole."""
    bad = [f"{w} px: {b['hidden']} px hidden past a {b['width']} px box, no cue: {b['text']!r}"
           for w, found in site[name]["scrolling"].items() for b in found if not b["cued"]]
    assert not bad, f"{name}: boxes scroll sideways without showing it:\n" + "\n".join(bad)


# Boxes of the column that scroll sideways at the current width, and where they show it.
SCROLL_CUES_JS = "return (() => {" + CUED_JS + """
  return [...document.querySelectorAll("article.bd-article div.highlight > pre")]
    .filter((box) => box.scrollWidth - box.clientWidth > 1).map((box) => {
      const r = box.getBoundingClientRect();
      const at = (x) => [...document.querySelectorAll(".course-more")].some((c) => {
        const q = c.getBoundingClientRect();
        return c.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) &&
          q.left <= x && x <= q.right && q.top <= r.top + 2 && q.bottom >= r.bottom - 2;
      });
      return {left: at(r.left + 1), right: at(r.right - 1), cued: cued(box)};
    });
})();"""


def test_a_table_wider_than_a_phone_shows_that_it_scrolls(server, tmp_path_factory):
    """At 400 px the matmul chapter's timings table is wider than its box: a shade lies
    over its right edge, none over its left; scrolled to its end, the shade is on the
    left and the right one is gone."""
    browser = Browser(find_chromium(), tmp_path_factory.mktemp("chromium-scroll"))
    try:
        browser.resize(400)
        browser.visit(f"{server}/book/matmul.html")
        found = browser.driver.execute_script(SCROLL_CUES_JS)
        assert found, "400 px: no table of the matmul chapter is wider than its box"
        assert all(f == {"left": False, "right": True, "cued": True} for f in found), found
        browser.evaluate("document.querySelectorAll('article.bd-article div.highlight > pre')"
                         ".forEach((box) => { box.scrollLeft = box.scrollWidth; })")
        browser.wait(0.3)
        found = browser.driver.execute_script(SCROLL_CUES_JS)
        assert all(f == {"left": True, "right": False, "cued": True} for f in found), found
    finally:
        browser.close()


@pytest.mark.parametrize("name", PAGES)
def test_contents_sidebar_code_keeps_off_the_window_edge(site, name):
    """A heading's inline code in the page's contents sidebar breaks where the column's
    does (course.js): `cuda.cg.this_grid().sync()`, whole, filled its line up to the
    window's edge at 1280 px."""
    bad = {w: codes for w, codes in site[name]["contents"].items() if codes}
    assert not bad, f"{name}: contents entries run to the sidebar's edge: {bad}"


@pytest.mark.parametrize("name", PAGES)
def test_code_listings_wrap_between_names(site, name):
    """A wrapped code line breaks between names (course.js: breakBetweenNames) and
    its indentation leaves room on a phone, so no name that fits the room its line
    wraps into is cut in two ('square_kernel[bloc' / 'ks, ...')."""
    bad = [f"{w} px: {c['name']!r} cut in: {c['line']!r}"
           for w, f in site[name]["fit"].items() for c in f["split"]]
    assert not bad, f"{name}: code wrapped inside a name:\n" + "\n".join(bad)


# The links a reader can see inside dialog `arguments[0]`, if it is open.
DIALOG_LINKS_JS = """
const dialog = document.getElementById(arguments[0]);
return dialog && dialog.open ? [...dialog.querySelectorAll("a")].filter((a) =>
  a.checkVisibility({checkVisibilityCSS: true}) && a.getBoundingClientRect().width > 0)
  .map((a) => a.href.split("#")[0]) : null;
"""
SIDEBAR_JS = """({
  shown: document.getElementById("pst-primary-sidebar").checkVisibility(
    {checkVisibilityCSS: true, checkOpacity: true}),
  article: document.querySelector("article.bd-article").getBoundingClientRect().width})"""


def test_menu_and_contents_buttons_work(server, tmp_path_factory):
    """The buttons a reader sees, clicked: on a phone the menu opens the navigation to
    every page and the contents button the page's sections; on a laptop the menu
    button folds the sidebar away, widening the text, leaving a search, and brings it
    back."""
    page = NOTEBOOK_PAGES[0]
    browser = Browser(find_chromium(), tmp_path_factory.mktemp("chromium-buttons"))
    try:
        browser.resize(400)
        browser.visit(f"{server}/{page}.html")
        sections = browser.evaluate(
            "document.querySelectorAll('#pst-secondary-sidebar nav a').length")
        for button, dialog in ((".primary-toggle", "pst-primary-sidebar-modal"),
                               (".secondary-toggle", "pst-secondary-sidebar-modal")):
            assert browser.click_shown(button), f"400 px: no {button} button shown"
            browser.wait(0.5)
            links = browser.driver.execute_script(DIALOG_LINKS_JS, dialog)
            assert links is not None, f"400 px: clicking {button} opens nothing"
            if button == ".primary-toggle":
                missing = set(PAGES) - {_page_of(url, server) for url in links}
                assert not missing, f"400 px: the menu does not show links to {missing}"
            else:
                assert len(links) == sections > 0, \
                    f"400 px: the contents show {len(links)} of the page's {sections} sections"
            browser.evaluate("document.getElementById('%s').close()" % dialog)
        browser.resize(1280)
        browser.visit(f"{server}/{page}.html")
        before = browser.evaluate(SIDEBAR_JS)
        assert before["shown"], "1280 px: the sidebar is not shown on arrival"
        assert browser.click_shown(".primary-toggle"), "1280 px: no menu button shown"
        browser.wait(0.8)
        folded = browser.evaluate(SIDEBAR_JS)
        assert not folded["shown"] and folded["article"] > before["article"] + 100, \
            f"1280 px: the menu button does not fold the sidebar away: {before} -> {folded}"
        # the sidebar's search folded away with it: the page header's comes back
        assert browser.evaluate(SEARCHES_JS) == 1, "1280 px: no search with the sidebar folded"
        browser.click_shown(".primary-toggle")
        browser.wait(0.8)
        assert browser.evaluate(SIDEBAR_JS)["shown"], "1280 px: the sidebar does not come back"
    finally:
        browser.close()


@pytest.mark.parametrize("name", PAGES)
def test_colab_button_opens_a_generated_notebook(site, name):
    links = set(site[name]["colab"])
    if name not in NOTEBOOK_PAGES:
        assert not links, f"{name} is not a notebook, yet has a Colab button: {links}"
        return
    assert links == {COLAB_PREFIX + f"{name}.ipynb"}, (
        f"{name}: the Colab button opens {links}, not the generated {name}.ipynb (an .ipynb "
        "opens only when it sits beside the .md: run `make notebooks`)")
    notebook = json.loads((ROOT / f"{name}.ipynb").read_text())
    assert notebook["cells"] and notebook["metadata"].get(notebooks.MARKER), \
        f"{name}.ipynb is not a notebook generated from {name}.md"


def test_exercise_solutions_start_collapsed(site):
    solutions = [(name, s) for name in PAGES for s in site[name]["solutions"]]
    assert solutions, "no exercise solution on any page: nothing to check"
    for name, s in solutions:
        assert s["title_visible"], f"{name}: solution {s['id']} has no visible toggle"
        assert not s["body_visible"], f"{name}: solution {s['id']} is open on page load"
    assert site["opened"], "clicking a solution's toggle does not show the solution"


@pytest.mark.parametrize("name", PAGES)
def test_navigation_reaches_every_page(site, server, name):
    reached = {_page_of(url, server) for url in site[name]["nav"]}
    missing = [p for p in PAGES if p not in reached]
    assert not missing, f"{name}: the navigation does not link to {missing}"


def test_front_door_leads_to_the_first_page(site):
    assert site["/"]["landed"] == f"/{PAGES[0]}.html", site["/"]["landed"]
    assert not _errors(site["/"]), _errors(site["/"])


def test_screenshots_saved(site):
    for name in SCREENSHOTS:
        path = ARTIFACTS / f"{name.rsplit('/', 1)[-1]}.png"
        with Image.open(path) as shot:
            assert shot.format == "PNG" and shot.width >= 1000 and shot.height >= 600, path
            # a blank page would have a handful of grey levels, a page of text and plots many
            assert len(shot.convert("L").getcolors(256)) > 16, path


# ------------------------------------------------------------------ figures


@pytest.mark.parametrize("name", PAGES)
def test_every_figure_has_a_caption_and_alt_text_that_describes_it(figures_seen, name):
    found = figures_seen[name, FIGURE_WIDTHS[0]]
    assert not found["imageless"], f"{name}: captioned figures without an image (a cell " \
        "with a figure caption also displays something else; end it with ';'): " + \
        "; ".join(repr(t) for t in found["imageless"])
    for img in found["images"]:
        where = f"{name}: image {img['file']}"
        assert img["caption"], f"{where} has no caption (mystnb: figure: caption in its cell)"
        alt = img["alt"].strip()
        assert alt and not PATH_LIKE.search(alt) and len(alt.split()) >= 5, \
            f"{where}: its alt text {alt!r} does not describe it (mystnb: image: alt)"


@pytest.mark.parametrize("width", FIGURE_WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_figures_fit_their_frame(figures_seen, name, width):
    """The whole figure is in view: none is wider than its frame, which would cut its
    right part (a legend, an axis) on a phone."""
    for img in figures_seen[name, width]["images"]:
        assert img["shown"] <= img["frame"] + 1, (
            f"{name} at {width} px: figure {img['file']} is {img['shown']:.0f} px wide in "
            f"a {img['frame']:.0f} px frame")


@pytest.mark.parametrize("width", FIGURE_WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_figure_text_is_at_least_10_px_on_screen(figures_seen, name, width):
    """Readable where it is shown or, where the column is too narrow for that (a
    phone), once a tap has opened it: the dialog then shows it with text of 10 px or
    more and scrolls inside the window."""
    from kernels import plots

    for img in figures_seen[name, width]["images"]:
        where = f"{name} at {width} px: figure {img['file']}"
        assert img["png"] is not None, \
            f"{where} was not drawn by kernels.plots: no {plots.KEY} facts in it"
        px = plots.rendered_px(img["png"], img["shown"])
        if px is None or px >= plots.MIN_PX:
            continue
        zoomed = img["zoomed"]
        assert zoomed is not None and zoomed["src"] == img["src"], \
            f"{where}: shown {img['shown']:.0f} px wide ({px:.1f} px text), and a tap " \
            "does not open it full size"
        assert zoomed["inside"], f"{where}: the opened figure's dialog is wider than the window"
        px = plots.rendered_px(img["png"], zoomed["shown"])
        assert px >= plots.MIN_PX, (
            f"{where}: opened, its smallest text ({img['png']['smallest_pt']:g} pt) shows "
            f"at {px:.1f} px, {zoomed['shown']:.0f} px wide")


# ------------------------------------------------------------ the summary pages


def _soup(built_book, name):
    return BeautifulSoup((built_book / f"{name}.html").read_text(), "html.parser")


def test_status_page_times_every_executed_chapter(built_book):
    import kernels

    page = _soup(built_book, "book/status")
    where = "the Numba CUDA simulator" if kernels.SIMULATOR else kernels.device()["name"]
    assert f"kernels: {where}" in page.get_text(), "the status page does not say where it ran"
    table = page.find("table")
    rows = {tr.find("td").get_text(strip=True): [td.get_text(strip=True) for td in tr("td")]
            for tr in table("tr") if tr.find("td")}
    assert set(NOTEBOOK_PAGES) <= set(rows), f"not in the execution table: " \
        f"{set(NOTEBOOK_PAGES) - set(rows)}"
    for name, (_, _, method, seconds, status) in rows.items():
        # in words: an emoji shows as an empty box without an emoji font (book/_tools/exec_status.py)
        assert method == "force" and float(seconds) > 0 and status == "ran", rows[name]


def test_exercise_headings_show_the_label_without_nested_parentheses(site):
    from kernels.checks import registry

    shown = set()
    for name in NOTEBOOK_PAGES:
        for ex in site[name]["exercises"]:
            assert re.fullmatch(r"Exercise \d+ \u00b7 [^()]+( \([^()]+\))? " + ex["id"],
                                ex["title"]), f"{name}: exercise heading {ex['title']!r}"
            shown.add(ex["id"])
        for title in site[name]["solution_titles"]:
            assert not re.search(r"\([^)]*\(", title), f"{name}: solution heading {title!r}"
    assert set(registry.EXERCISES) <= shown, "exercises whose label no heading shows: " \
        f"{sorted(set(registry.EXERCISES) - shown)}"


def test_exercises_are_numbered_in_their_chapter_as_in_the_notebooks(site):
    """One numbering everywhere: each chapter's exercises run 1, 2, ... on its page and
    in its Colab notebook, so "Exercise 2" means the same exercise in both."""
    for name in NOTEBOOK_PAGES:
        page = [(int(re.match(r"Exercise (\d+)", ex["title"])[1]), ex["id"])
                for ex in site[name]["exercises"]]
        markdown = "\n".join("".join(c["source"]) for c in
                             json.loads((ROOT / f"{name}.ipynb").read_text())["cells"]
                             if c["cell_type"] == "markdown")
        notebook = [(int(n), label) for n, label in
                    re.findall(r"\*\*Exercise (\d+) \u00b7 .*?\*\* `([^`]+)`", markdown)]
        assert page == notebook, f"{name}: the page numbers {page}, the notebook {notebook}"
        assert [n for n, _ in page] == list(range(1, len(page) + 1)), f"{name}: {page}"


def test_unsolved_starter_cells_print_one_line(site):
    """The book build has checkers print one line (KERNELS_CHECK_SUMMARY), not the full
    report of an empty answer."""
    summaries = 0
    for name in NOTEBOOK_PAGES:
        for out in site[name]["outputs"]:
            assert not re.search(r"\d+ of \d+ checks failed", out["text"]), \
                f"{name}: a full checker report on the page:\n{out['text'][:400]}"
            summaries += out["text"].count("not solved yet")
    assert summaries >= 10, f"only {summaries} one-line checker verdicts on the pages"


def test_performance_page_shows_every_recording(built_book):
    from kernels import performance

    summary = performance.summary()
    article = _soup(built_book, "book/performance").find("article")
    text = article.get_text(" ")
    for ln in summary.lines:
        assert ln.key in text, f"{ln.key} is recorded but not on the performance page"
        assert (f"{ln.key} STALE" in " ".join(text.split())) == ln.result.stale, ln.key
    devices = {ln.result.env["device"]["name"] for ln in summary.lines
               if ln.metric and ln.best is not None}
    picture = article.find(id="the-picture")
    assert len(picture("img")) == len(devices), "one summary figure per device with GB/s " \
        "or TFLOP/s"
    from kernels import sweeps
    recorded = [key for key in sweeps.SWEEPS if sweeps.load(key) is not None]
    assert len(article.find(id="how-cost-grows-with-size")("img")) == len(recorded), \
        "one figure per recorded size sweep"
    for key in summary.unrecorded:
        assert key in text, f"{key} is not recorded and the page does not say so"


def test_math_is_written_as_mathml_with_no_script_from_a_cdn(built_book):
    """The book's formulas are MathML in the page (book/_tools/mathml.py), so the
    offline book shows them: no page loads MathJax, none is left as LaTeX."""
    formulas = 0
    for name in PAGES:
        page = _soup(built_book, name)
        scripts = [s["src"] for s in page("script", src=True) if "mathjax" in s["src"].lower()]
        assert not scripts, f"{name} loads MathJax: {scripts}"
        for math in page.select("span.math, div.math"):
            assert math.find("math"), f"{name}: math left as LaTeX: {math.get_text()[:80]!r}"
            formulas += 1
    assert formulas >= 10, f"only {formulas} formulas in the book: is the math found?"


# ---------------------------------------------------------------------------- links

LINK_ATTRS = (("a", "href"), ("img", "src"), ("link", "href"), ("script", "src"))


def _html_files(built_book):
    # _static holds templates and vendored assets, not pages
    return [p for p in sorted(built_book.rglob("*.html")) if "_static" not in p.parts]


def _links(path):
    soup = BeautifulSoup(path.read_text(errors="replace"), "html.parser")
    for tag, attr in LINK_ATTRS:
        for el in soup.find_all(tag):
            if el.get(attr):
                yield el[attr]


@functools.lru_cache(maxsize=None)
def _anchors(path):
    soup = BeautifulSoup(path.read_text(errors="replace"), "html.parser")
    return {el["id"] for el in soup.find_all(id=True)} | \
        {el["name"] for el in soup.find_all("a", attrs={"name": True})}


def test_internal_links_resolve(built_book):
    broken, checked = [], 0
    for page in _html_files(built_book):
        for link in _links(page):
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve() \
                if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            where = f"{page.relative_to(built_book)}: {link}"
            if not target.exists():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html" and \
                    urllib.parse.unquote(parts.fragment) not in _anchors(target):
                broken.append(f"{where} (no #{parts.fragment} there)")
    assert checked > 100, f"only {checked} internal links found: is the book built?"
    assert not broken, f"{len(broken)} broken internal links:\n" + "\n".join(broken[:40])


@functools.lru_cache(maxsize=None)
def _network():
    # GitHub, where the book is published: a package mirror alone is no network
    try:
        socket.create_connection(("github.com", 443), timeout=5).close()
        return True
    except OSError:
        return False


def _status(url):
    try:
        r = requests.head(url, allow_redirects=True, timeout=15)
        if r.status_code in (403, 405, 501):  # some servers refuse HEAD; ask properly
            r = requests.get(url, allow_redirects=True, timeout=15, stream=True)
            r.close()
        return r.status_code
    except requests.RequestException as err:
        return f"{type(err).__name__}: {err}"


def test_external_links_resolve(built_book):
    urls = sorted({link.split("#")[0] for name in PAGES
                   for link in _links(built_book / f"{name}.html")
                   if link.startswith(("http://", "https://"))
                   # The course's own repository and its Colab links exist once it is
                   # published; test_colab_button_opens_a_generated_notebook checks
                   # the notebooks they open.
                   and not link.startswith((REPOSITORY, COLAB_PREFIX))})
    if not _network():
        pytest.skip(f"no network here: {len(urls)} external links not checked")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = dict(zip(urls, pool.map(_status, urls)))
    # 429: the server is there and rate-limits us, which says the link is good
    bad = {u: s for u, s in statuses.items() if not (isinstance(s, int) and (s < 400 or s == 429))}
    assert not bad, "external links that do not resolve:\n" + "\n".join(
        f"{u}: {s}" for u, s in bad.items())
