// The course's page script (_config.yml: html_js_files), with course.css. What each
// part does is checked in the browser by tests/test_site.py.

// Tables of four or more columns stack on a narrow screen (course.css): each row
// becomes a block of "header: value" lines, so no table needs to scroll sideways.
function stackWideTables() {
  for (const table of document.querySelectorAll("article.bd-article table")) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    if (heads.length < 4) continue;
    table.classList.add("course-stacks");
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => {
        cell.dataset.label = heads[i] || "";
        const value = document.createElement("span");  // one grid item beside the label
        value.className = "course-value";
        value.append(...cell.childNodes);
        cell.append(value);
      });
    }
  }
}

// The menu and contents buttons. pydata-sphinx-theme 0.17 puts its own hidden
// .primary-toggle and .secondary-toggle in the page header, and both themes listen
// only on the first button of each class (document.querySelector), so the buttons a
// reader sees (sphinx-book-theme's, in the article header) did nothing: no menu on a
// phone, no collapsing sidebar on a desktop (pydata-sphinx-theme issue 2451). A click
// on a visible button is passed to the listened one, which opens the menu as a dialog
// on a narrow screen and collapses the sidebar on a wide one.
function connectSidebarButtons() {
  for (const kind of [".primary-toggle", ".secondary-toggle"]) {
    const [listened, ...others] = document.querySelectorAll(kind);
    for (const button of others) {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        listened.click();
      });
    }
  }
}

// Figures fit the column at any width (course.css). Where one is shown narrower than
// the width at which its smallest text is 10 px (course.css: --course-readable), a
// tap opens it at that width or more in a dialog that scrolls sideways.
function zoomableFigures() {
  const dialog = document.createElement("dialog");
  dialog.className = "course-zoom";
  dialog.setAttribute("aria-label", "The figure at full size");
  const close = document.createElement("button");
  close.className = "course-zoom-close";
  close.setAttribute("aria-label", "Close the full-size figure");
  close.textContent = "\u00d7";
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
  const readable = () => parseFloat(getComputedStyle(document.documentElement)
    .getPropertyValue("--course-readable"));
  for (const img of document.querySelectorAll("article.bd-article div.cell_output figure img")) {
    const open = () => {
      if (img.getBoundingClientRect().width >= readable()) return;  // readable as it is
      const large = document.createElement("img");  // made here: no empty image in the page
      large.src = img.currentSrc || img.src;
      large.alt = img.alt;
      dialog.replaceChildren(close, large);
      if (!dialog.isConnected) document.body.append(dialog);
      dialog.showModal();
      dialog.scrollTo(0, 0);
    };
    img.classList.add("course-zoomable");
    img.tabIndex = 0;
    img.setAttribute("role", "button");
    img.title = "Open the figure at full size";
    img.addEventListener("click", open);
    img.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(); }
    });
  }
}

// Text laid out in columns (a printed table, the race picture of the grader's feedback)
// keeps its lines whole and scrolls inside its own box on a narrow screen (course.css):
// wrapped, its columns no longer line up. Python code is never such text (it wraps,
// below); a block is when most of its lines, two at least, hold a gap of two spaces or
// more between words (a column), or it holds the picture's drawing characters.
const CODE_LANGUAGES = /\bhighlight-(python|ipython3?|default|sh|bash|console|shell)\b/;
function keepTextArt() {
  for (const block of document.querySelectorAll("article.bd-article div.highlight")) {
    if (CODE_LANGUAGES.test(block.parentElement.className)) continue;
    const lines = block.textContent.split("\n").filter((line) => line.trim());
    const columns = lines.filter((line) => /\S {2,}\S/.test(line)).length;
    const drawn = /[─│┌┐└┘├┤┬┴┼═║·]/.test(block.textContent);
    if (columns >= 2 && (drawn || 3 * columns >= 2 * lines.length)) {
      block.classList.add("course-art");
    }
  }
}

// Code listings wrap at the column's edge (course.css) instead of scrolling. Each
// line becomes its own block whose wrapped part is indented four characters past the
// line's own indentation (at most half the column), so a wrapped line never reads as a
// new statement. In code, the indentation is drawn half as wide on a phone
// (course.css: --course-space), so a deeply indented line keeps room for its words
// rather than being cut inside them. The text is unchanged (copy buttons copy the code
// as written).
function wrapCodeLines() {
  for (const pre of document.querySelectorAll("article.bd-article div.highlight > pre")) {
    if (pre.parentElement.classList.contains("course-art")) continue;  // keeps its lines
    const code = CODE_LANGUAGES.test(pre.parentElement.parentElement.className);
    const lines = [[]];
    for (const node of [...pre.childNodes]) {
      const parts = node.textContent.split("\n");
      parts.forEach((text, i) => {
        if (i > 0) lines.push([]);
        if (text === "" && i < parts.length - 1) {
          lines[lines.length - 1].push(document.createTextNode("\n"));
          return;
        }
        if (text === "") return;
        const piece = node.nodeType === Node.TEXT_NODE ? document.createTextNode("")
          : node.cloneNode(false);
        piece.textContent = text + (i < parts.length - 1 ? "\n" : "");
        lines[lines.length - 1].push(piece);
      });
    }
    if (lines.length && !lines[lines.length - 1].length) lines.pop();
    pre.replaceChildren(...lines.map((pieces) => {
      const line = document.createElement("span");
      line.className = "course-line";
      line.append(...pieces);
      const spaces = line.textContent.match(/^ */)[0].length;
      if (code && spaces) indentOf(line, spaces);
      breakBetweenNames(line);
      // at most half the column, so a deeply indented line still has room to wrap into
      const indent = code ? `min(calc(${spaces + 4} * var(--course-space)), 50%)`
        : `min(${spaces + 4}ch, 50%)`;
      line.style.paddingLeft = indent;
      line.style.textIndent = `calc(-1 * ${indent})`;
      return line;
    }));
  }
}

// A long line wraps between names, as a reader would break it: after a dot, a comma,
// an opening parenthesis or an equals sign, and after a square bracket that opens a
// list or a string (`kernel[` / `blocks, threads]`, `bad[` / `"name"]`), not one
// short index (`b[` / `j]` reads worse than `b[j]` moved whole); never inside a number
// (2.930, 1,001). Without these places, a
// run such as `harness.live_or_recorded("atomics.race")` has none but its
// spaces, and overflow-wrap cut it wherever the column ended, inside a name. A name
// is cut only when it is longer than the line's room.
function breakBetweenNames(line) {
  const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
  const texts = [];  // [node, offset of its first character in the line]
  let length = 0;
  while (walker.nextNode()) {
    texts.push([walker.currentNode, length]);
    length += walker.currentNode.data.length;
  }
  const whole = texts.map(([node]) => node.data).join("");
  // the highlighter puts each name and mark in a span of its own: the places are found
  // in the line's whole text, then made in whichever piece holds them (last first)
  const place = /(?<=[(=]|\D,)(?=\S)|(?<=\.)(?=[^\s\d.])|(?<=\[)(?=["']|[^\]\s][^\]]*,)/g;
  const places = [...whole.matchAll(place)].map((m) => m.index).reverse();
  for (const at of places) {
    const [node, start] = texts.findLast(([, start]) => start <= at);
    const after = at === start ? node : node.splitText(at - start);
    after.before(document.createElement("wbr"));
  }
}

// The first `spaces` characters of `line` (all spaces) in a span of their own, which
// course.css narrows on a phone.
function indentOf(line, spaces) {
  const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
  const indent = document.createElement("span");
  indent.className = "course-indent";
  let left = spaces;
  while (left > 0 && walker.nextNode()) {
    const text = walker.currentNode;
    const taken = Math.min(left, text.data.length);
    const rest = text.splitText(taken);  // text now holds the taken spaces
    indent.append(document.createTextNode(text.data));
    text.data = "";
    left -= taken;
    walker.currentNode = rest;
  }
  line.prepend(indent);
}

// A box that scrolls sideways (text in columns, a table or formula wider than a phone's
// column) shows that it does: a shade at each edge past which more is hidden, gone once
// the reader has scrolled to that end. A phone draws no scrollbar until one scrolls, so
// a table cut at the column's edge looked whole. The shade lies over the box's frame:
// the div.highlight that holds a listing, else a div put around the box.
function cueScrolling() {
  const boxes = [...document.querySelectorAll("article.bd-article *")].filter((el) =>
    /^(auto|scroll)$/.test(getComputedStyle(el).overflowX));
  const update = (box) => {
    const hidden = box.scrollWidth - box.clientWidth;
    if (hidden <= 1 && !box.courseFrame) return;  // fits: no frame made
    const frame = box.courseFrame || frameWithCues(box);
    frame.classList.toggle("course-hides-left", hidden > 1 && box.scrollLeft > 1);
    frame.classList.toggle("course-hides-right", hidden > 1 && box.scrollLeft < hidden - 1);
  };
  const resized = new ResizeObserver((entries) => entries.forEach((e) => update(e.target)));
  for (const box of boxes) {
    box.addEventListener("scroll", () => update(box), {passive: true});
    resized.observe(box);  // also calls update once, now
  }
}

function frameWithCues(box) {
  let frame = box.parentElement;
  if (!frame.matches("div.highlight")) {
    frame = document.createElement("div");
    box.before(frame);
    frame.append(box);
  }
  frame.classList.add("course-scroll-frame");
  for (const [side, mark] of [["left", "\u2039"], ["right", "\u203a"]]) {
    const cue = document.createElement("span");
    cue.className = `course-more course-more-${side}`;
    cue.setAttribute("aria-hidden", "true");
    cue.dataset.arrow = mark;  // drawn by course.css, so the box's text is unchanged
    frame.append(cue);
  }
  box.courseFrame = frame;
  return frame;
}

// Inline code may break where a reader would: after a dot (not inside an ellipsis:
// `(...)` stays whole), an underscore, a comma or a slash, and before an opening
// parenthesis (course.css breaks a name elsewhere only
// when no such place is left), so `cuda.threadIdx.x` in a narrow table cell reads
// "cuda.threadIdx." / "x", not "cuda.threadI" / "dx.x". The text is unchanged. The same
// in the page's contents sidebar, where a heading's `cuda.cg.this_grid().sync()`, whole,
// filled the line up to the window's edge. A command-line option (`--timeout`) is
// never broken (course.css): "--" / "timeout" reads as two things.
const OPTION = /^--?[A-Za-z][\w-]*(=\S*)?$/;
function breakableInlineCode() {
  for (const code of document.querySelectorAll(
      "article.bd-article code.literal, .bd-sidebar-secondary code.literal")) {
    if (OPTION.test(code.textContent)) {
      code.classList.add("course-option");
      continue;
    }
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    for (const text of texts) {
      const parts = text.data.split(/(?<=[_,/]|[^.]\.)(?=[^.])|(?=\()/);
      if (parts.length < 2) continue;
      text.replaceWith(...parts.flatMap((part, i) =>
        i ? [document.createElement("wbr"), part] : [part]));
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  stackWideTables();
  connectSidebarButtons();
  zoomableFigures();
  keepTextArt();
  wrapCodeLines();
  breakableInlineCode();
  cueScrolling();  // last: the boxes as the code above laid them out
});
