"""Headless Chromium driven by Selenium, for the site tests.

Debian's Chromium and its ChromeDriver (`make test` installs both, package
chromium-driver) are given to Selenium by path, so its driver manager downloads
nothing. ``Browser.visit(url)`` loads a page and returns what the site tests look
at: console errors, images, cell outputs, Colab links, solutions, navigation;
``click_shown(selector)`` clicks as a reader would.
"""

import os
import pathlib
import shutil
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
DRIVER = "chromedriver"

# What the tests read from a loaded page, gathered in the page itself.
FACTS_JS = r"""
(() => {
  // sphinx-togglebutton collapses a solution to zero height, hidden: count neither as shown
  const visible = (el) => el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})
    && el.getBoundingClientRect().height > 0;
  const article = document.querySelector("article.bd-article") || document.body;
  return {
    title: document.title,
    images: [...document.images].map((i) => ({
      src: i.currentSrc || i.src, complete: i.complete,
      width: i.naturalWidth, height: i.naturalHeight,
      in_article: article.contains(i)})),
    outputs: [...document.querySelectorAll(".cell_output")].map((o) => ({
      text: o.textContent, traceback: !!o.querySelector(".traceback, .output.error")})),
    colab: [...document.querySelectorAll('a[href*="colab.research.google.com"]')]
      .map((a) => a.href),
    solutions: [...document.querySelectorAll(".solution")].map((s) => {
      const title = (c) => c.matches(".admonition-title, summary, button");
      return {
        id: s.id,
        title_visible: [...s.children].some((c) => title(c) && visible(c)),
        body_visible: [...s.children].some((c) =>
          !title(c) && visible(c) && c.textContent.trim() !== ""),
      };
    }),
    nav: [...document.querySelectorAll("nav.bd-docs-nav a.reference.internal")]
      .map((a) => a.href.split("#")[0]),
  };
})()
"""

# Whether a listing or output `block` (a div.highlight) is text laid out in columns (a
# printed table, the grader's race picture): not code, and most of its lines, two at
# least, hold a gap of two spaces or more between words, or it holds drawing
# characters. Such text must keep its lines whole (wrapped, its columns no longer line
# up) and may scroll inside its own box.
COLUMNAR_JS = r"""
const columnar = (block) => {
  if (/\bhighlight-(python|ipython3?|default|sh|bash|console|shell)\b/
      .test(block.parentElement.className)) return false;
  const lines = block.textContent.split("\n").filter((line) => line.trim());
  const columns = lines.filter((line) => /\S {2,}\S/.test(line)).length;
  return columns >= 2 && (/[─│┌┐└┘├┤┬┴┼═║·]/.test(block.textContent) ||
                          3 * columns >= 2 * lines.length);
};
"""

# Whether a box that scrolls sideways shows it, as a reader sees it (course.js:
# cueScrolling): at each edge past which some of it is hidden, a shown cue (a shade) at
# least 12 px wide lies over that edge, the box's whole height. Phones draw no
# scrollbar until one scrolls: without the cue a cut table looked whole.
CUED_JS = r"""
const cued = (box) => {
  const hidden = box.scrollWidth - box.clientWidth, r = box.getBoundingClientRect();
  const shown = (side) => [...document.querySelectorAll(".course-more")].some((c) => {
    if (!c.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
    const q = c.getBoundingClientRect();
    return q.width >= 12 && q.top <= r.top + 2 && q.bottom >= r.bottom - 2 &&
      Math.abs(side === "right" ? q.right - r.right : q.left - r.left) <= 2;
  });
  return (box.scrollLeft <= 1 || shown("left")) &&
    (box.scrollLeft >= hidden - 1 || shown("right"));
};
"""

# Every box of the main column that scrolls sideways at the current width (text in
# columns, a table or formula wider than a phone's column), and whether it shows it.
SCROLLING_JS = r"""
(() => {""" + CUED_JS + r"""
  const article = document.querySelector("article.bd-article");
  if (!article) return [];
  return [...article.querySelectorAll("*")].filter((el) =>
      /^(auto|scroll)$/.test(getComputedStyle(el).overflowX) && el.checkVisibility() &&
      el.scrollWidth - el.clientWidth > 1)
    .map((el) => ({hidden: el.scrollWidth - el.clientWidth, width: el.clientWidth,
                   cued: cued(el), text: el.textContent.trim().slice(0, 80)}));
})()
"""

# Tables and cell outputs of the main column that do not fit it: wider than the
# article (spilling into the margin or sidebar), or scrolled or clipped inside without
# showing it (CUED_JS: text in columns may scroll in its own box, cued).
OVERFLOW_JS = r"""
(() => {""" + CUED_JS + r"""
  const article = document.querySelector("article.bd-article");
  if (!article) return [];
  const box = article.getBoundingClientRect();  // the column, less what is off screen
  const edge = {left: Math.max(box.left, 0), width: 0,
                right: Math.min(box.right, document.documentElement.clientWidth)};
  edge.width = edge.right - edge.left;
  const name = (el) => el.tagName.toLowerCase() + (el.className && typeof el.className ===
    "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
  const found = [];
  for (const el of article.querySelectorAll(
      "table, .pst-scrollable-table-container, .cell_output, .cell_output pre, " +
      ".cell_output .output")) {
    if (!el.checkVisibility()) continue;  // e.g. inside a collapsed dropdown
    // figures have tests of their own (fit the frame, open full size on a phone), so
    // an output holding one is measured by its text parts alone
    if (el.querySelector("figure, img") || el.closest("figure")) continue;
    const r = el.getBoundingClientRect();
    const spill = Math.max(r.right - edge.right, edge.left - r.left);
    // text in columns may scroll in its own box where it shows that it does (PAGE_FIT_JS
    // checks it keeps its lines); hidden and not cued, its end is simply cut
    const hidden = cued(el) ? 0 : el.scrollWidth - el.clientWidth;
    if (spill > 1 || hidden > 1) {
      found.push({element: name(el), spill: Math.round(spill), hidden: hidden,
                  width: Math.round(r.width), column: Math.round(edge.width),
                  text: (el.textContent || "").trim().slice(0, 120)});
    }
  }
  return found;
})()
"""


# The page as a whole and its code at the current width: a page wider than the window
# scrolls sideways as a whole; inline code running past the column or cut by the edge of
# a box (an exercise) hides what a reader must type; a code listing scrolled inside its
# box hides the end of its lines (course.js wraps them), and one wrapped inside a name
# that would fit whole reads as two names; text in columns wrapped no longer lines up.
PAGE_FIT_JS = r"""
(() => {""" + COLUMNAR_JS + r"""
  const root = document.documentElement;
  const article = document.querySelector("article.bd-article");
  const found = {page: root.scrollWidth, window: root.clientWidth, code: [], listings: [],
                 art: [], split: [], ellipsis: [], words: [], options: []};
  if (!article) return found;
  const box = article.getBoundingClientRect();
  const edge = {left: Math.max(box.left, 0), right: Math.min(box.right, root.clientWidth)};
  const frameOf = (el) => {  // the nearest box that cuts what overflows it, else the column
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") {
        const r = a.getBoundingClientRect();
        return {left: Math.max(r.left, edge.left), right: Math.min(r.right, edge.right)};
      }
    }
    return edge;
  };
  // words of the prose outside code (a long name glued or written as plain text, a
  // path, a URL) that run past the column or are cut by their box, line by line
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, parent = node.parentElement;
    if (!node.data.trim() || parent.closest("pre, code, .MathJax, math, svg") ||
        !parent.checkVisibility()) continue;
    const frame = frameOf(parent);
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      const cut = Math.max(r.right - frame.right, frame.left - r.left);
      if (r.width > 0 && cut > 1) {
        found.words.push({text: node.data.trim().slice(0, 80), cut: Math.round(cut)});
        break;
      }
    }
  }
  for (const code of article.querySelectorAll("code")) {
    if (code.closest("pre") || !code.checkVisibility()) continue;
    const frame = frameOf(code);
    // an ellipsis, `kernel[blocks, threads](...)`, broken over two lines reads as a
    // sentence's full stop and a stray pair of dots (course.js splits the text node
    // where a line may break, so the dots are found across the pieces)
    const at = code.textContent.indexOf("...");
    if (at >= 0) {
      const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      const range = document.createRange();
      let offset = 0;
      while (walker.nextNode()) {
        const node = walker.currentNode, end = offset + node.data.length;
        if (offset <= at && at < end) range.setStart(node, at - offset);
        if (offset < at + 3 && at + 3 <= end) range.setEnd(node, at + 3 - offset);
        offset = end;
      }
      const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0)
        .map((r) => Math.round(r.top)));
      if (tops.size > 1) found.ellipsis.push(code.textContent.slice(0, 80));
    }
    // a command-line option broken after its hyphens ("--" / "timeout") reads as two
    if (/^--?[A-Za-z][\w-]*(=\S*)?$/.test(code.textContent) &&
        new Set([...code.getClientRects()].map((r) => Math.round(r.top))).size > 1) {
      found.options.push(code.textContent);
    }
    for (const r of code.getClientRects()) {  // one per line the code is broken over
      const cut = Math.max(r.right - frame.right, frame.left - r.left);
      if (cut > 1) {
        found.code.push({text: code.textContent.slice(0, 80), cut: Math.round(cut)});
        break;
      }
    }
  }
  for (const pre of article.querySelectorAll("div.highlight > pre")) {
    if (!pre.checkVisibility()) continue;
    const style = getComputedStyle(pre);
    if (columnar(pre.parentElement)) {  // its lines whole: as many drawn as written
      const written = pre.textContent.replace(/\n$/, "").split("\n").length;
      const drawn = Math.round((pre.scrollHeight - parseFloat(style.paddingTop) -
        parseFloat(style.paddingBottom)) / parseFloat(style.lineHeight));
      if (drawn > written) found.art.push({written: written, drawn: drawn,
                                           text: pre.textContent.slice(0, 80)});
      continue;
    }
    const hidden = pre.scrollWidth - pre.clientWidth;
    if (hidden > 1) found.listings.push({hidden: hidden, text: pre.textContent.slice(0, 80)});
    // a name, a quoted name or a number (2.930, 1,001) broken over two lines though
    // the room its line wraps into would hold it whole
    const room = pre.clientWidth - parseFloat(style.paddingLeft) -
      parseFloat(style.paddingRight);
    // course.js splits text nodes where a line may break: names are found in the
    // listing's whole text, then measured across the pieces
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const pieces = [];  // [node, offset of its first character]
    let length = 0;
    while (walker.nextNode()) {
      pieces.push([walker.currentNode, length]);
      length += walker.currentNode.data.length;
    }
    const at = (offset) => {  // the piece holding character `offset`, and where in it
      const [node, start] = pieces.findLast(([n, start]) => start <= offset && n.data.length);
      return [node, offset - start];
    };
    const whole = pieces.map(([node]) => node.data).join("");
    for (const m of whole.matchAll(/"?[A-Za-z_][A-Za-z0-9_]*"?|\d[\d.,]*\d/g)) {
      const range = document.createRange();
      range.setStart(...at(m.index));
      const [last, end] = at(m.index + m[0].length - 1);
      range.setEnd(last, end + 1);
      const rects = [...range.getClientRects()].filter((r) => r.width > 0);
      if (new Set(rects.map((r) => Math.round(r.top))).size < 2) continue;
      const line = range.startContainer.parentElement.closest(".course-line");
      const wraps = room - (line ? parseFloat(getComputedStyle(line).paddingLeft) : 0);
      if (rects.reduce((sum, r) => sum + r.width, 0) <= wraps) {
        found.split.push({name: m[0], line: (line || pre).textContent.slice(0, 80)});
      }
    }
  }
  return found;
})()
"""


# Inline code in the page's contents sidebar (shown at a laptop's width) whose line
# reaches the sidebar's edge: a heading's `cuda.cg.this_grid().sync()`, unbroken, filled
# its line up to the window's edge.
CONTENTS_CODE_JS = r"""
(() => {
  const nav = document.querySelector(".bd-sidebar-secondary nav");
  if (!nav || !nav.checkVisibility()) return [];
  const edge = nav.getBoundingClientRect().right;
  return [...nav.querySelectorAll("code")].filter((c) =>
    [...c.getClientRects()].some((r) => r.width > 0 && r.right >= edge - 4))
    .map((c) => c.textContent);
})()
"""


def find_chromium():
    """The Chromium executable: $CHROMIUM, else the first of CANDIDATES on PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    return next((shutil.which(c) for c in CANDIDATES if shutil.which(c)), None)


class Browser:
    """One headless Chromium with one page, driven synchronously."""

    def __init__(self, executable, profile_dir, width=1280, height=1000):
        driver = shutil.which(DRIVER)
        if driver is None:
            raise RuntimeError("no chromedriver on PATH: `make test` installs Debian's "
                               "chromium-driver (apt-get)")
        options = webdriver.ChromeOptions()
        options.binary_location = executable
        # --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers' /dev/shm
        # is small (64 MB in Docker) and Chromium's renderer crashes on a long page
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                    "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                    "--disable-extensions", "--hide-scrollbars",
                    f"--user-data-dir={profile_dir}", f"--window-size={width},{height}"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.driver = webdriver.Chrome(options=options, service=Service(driver))
        self.height = height
        self.resize(width)

    def resize(self, width):
        """Lay pages out `width` CSS pixels wide, as a window that wide would: a phone's
        400 too, which a desktop window cannot be (Chromium keeps it 500 or wider)."""
        self.width = width
        self._viewport(self.height)

    def _viewport(self, height):
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def visit(self, url, settle=0.5):
        """Load `url` (Selenium waits for its load event) and return the page's facts."""
        self.driver.get_log("browser")  # drop what the previous page logged
        self.driver.get(url)
        self.wait(settle)
        facts = self.evaluate(FACTS_JS)
        facts["url"] = url
        facts["console_errors"] = self.console_errors()
        return facts

    def wait(self, seconds):
        """Let the page run for `seconds` (animations, late scripts)."""
        time.sleep(seconds)

    def click_shown(self, selector):
        """Click, as a reader would, the first element matching `selector` that is
        shown; False if none is."""
        for element in self.driver.find_elements(By.CSS_SELECTOR, selector):
            if element.is_displayed():
                element.click()
                return True
        return False

    def evaluate(self, expression):
        return self.driver.execute_script(f"return ({expression});")

    def console_errors(self):
        """Errors the page logged since the last call: console.error, uncaught
        exceptions, failed loads (as "network: what (url)", like the console shows)."""
        errors = []
        for entry in self.driver.get_log("browser"):
            if entry["level"] != "SEVERE":
                continue
            message = entry["message"]
            if entry["source"] == "network" and " - " in message:
                url, _, what = message.partition(" - ")
                message = f"{what} ({url})"
            errors.append(f"{entry['source']}: {message}")
        return errors

    def screenshot(self, path, max_height=8000):
        """Save a PNG of the whole current page (up to `max_height` CSS pixels)."""
        # Grow the viewport to the page's height, as a tall window would show it.
        self._viewport(min(int(self.evaluate("document.documentElement.scrollHeight")),
                           max_height))
        try:
            pathlib.Path(path).write_bytes(self.driver.get_screenshot_as_png())
        finally:
            self._viewport(self.height)
        return path

    def close(self):
        self.driver.quit()
