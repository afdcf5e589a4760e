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

// Code listings wrap at the column's edge (course.css) instead of scrolling. Each
// line becomes its own block whose wrapped part is indented four characters past the
// line's own indentation (at most half the column), so a wrapped line never reads as a
// new statement. The text
// is unchanged (copy buttons copy the code as written).
function wrapCodeLines() {
  for (const pre of document.querySelectorAll("article.bd-article div.highlight > pre")) {
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
      // at most half the column, so a deeply indented line still has room to wrap into
      const indent = `min(${line.textContent.match(/^ */)[0].length + 4}ch, 50%)`;
      line.style.paddingLeft = indent;
      line.style.textIndent = `calc(-1 * ${indent})`;
      return line;
    }));
  }
}

// Inline code may break where a reader would: after a dot, an underscore, a comma or
// a slash, and before an opening parenthesis (course.css breaks a name elsewhere only
// when no such place is left), so `cuda.threadIdx.x` in a narrow table cell reads
// "cuda.threadIdx." / "x", not "cuda.threadI" / "dx.x". The text is unchanged.
function breakableInlineCode() {
  for (const code of document.querySelectorAll("article.bd-article code.literal")) {
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    for (const text of texts) {
      const parts = text.data.split(/(?<=[._,/])|(?=\()/);
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
  wrapCodeLines();
  breakableInlineCode();
});
