"""MyST chapter -> Jupyter notebook that Colab renders (the converter of notebooks.py).

Kernel sources shown with literalinclude become code blocks, exercises quotes,
solutions collapsed <details> blocks, cross references plain text or links to the
other chapters' notebooks; glued numbers the recorded values, and `from myst_nb
import glue` a stand-in that prints the book's sentences with the reader's numbers
(glue_values.py runs the chapter for them, glue_text.py writes them in); the first
cell sets up the runtime (first_cell.py).
"""

import html
import os
import pathlib
import re
import types
import urllib.parse

import first_cell
import glue_text
import glue_values
import myst
from book_config import ConversionError, book_settings, chapters, numba_cuda_version

COLAB = "https://colab.research.google.com/github"
MARKER = "generated_from"  # notebook metadata key naming the chapter source

GLUE_IMPORT = re.compile(r"^from myst_nb import glue[ \t]*\n?", re.M)


ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "attention",
               "danger", "error", "seealso", "admonition", "margin", "sidebar", "topic",
               "epigraph", "pull-quote", "rubric"}
CONTAINERS = {"tab-set", "grid", "div", "container", "only", "card-carousel"}
TITLED_CONTAINERS = {"tab-item", "card", "grid-item", "grid-item-card"}
DROPPED = {"toctree", "tableofcontents", "contents", "index",
           "nb-exec-table"}  # the build's execution table (status page): no notebook form
CODE_DIRECTIVES = {"code-block", "code", "sourcecode"}
GLUE_DIRECTIVES = {"glue", "glue:", "glue:any", "glue:md", "glue:math", "glue:figure"}
CODE_ROLES = {"code", "samp", "file", "envvar", "command", "program", "option", "func", "meth",
              "class", "mod", "attr", "data", "obj", "exc", "const", "py:func", "py:meth",
              "py:class", "py:mod", "py:attr", "py:data", "py:obj", "py:exc", "py:const"}
ROLE = re.compile(r"\{(?P<name>[A-Za-z][\w:.+-]*)\}(?P<ticks>`+)(?P<text>.+?)(?P=ticks)(?!`)")
TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?P<rest>[^)]*)\)")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")
TARGET = re.compile(r"^\((?P<label>[^()\s]+)\)=\s*$")


def fenced(code, language=""):
    """`code` as a fenced block, with a fence longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


# between "Exercise 4" and its title, as the book shows it (book/_tools/exercise_titles.py)
DOT = " \u00b7 "


def quote(text):
    return "\n".join(f"> {line}" if line else ">" for line in text.split("\n"))


class Converter:
    """Turns the chapters of one book into notebooks (call convert twice: labels).

    `glue`: how the chapters' glued numbers are found (glue_values.values: "fresh",
    "refresh" or "stored"); `glue_root`: the book whose stores hold them (the student
    edition reads the instructors' book)."""

    def __init__(self, root, glue="fresh", glue_root=None):
        self.root = root
        self.glue_mode, self.glue_root = glue, glue_root or root
        self.stores = {}  # chapter -> its glued numbers, found once for both passes
        self.owner, self.repo, self.branch = book_settings(root)
        self.numba_cuda = numba_cuda_version(root)
        self.names = chapters(root)
        self.titles = {}
        self.labels = {}  # label -> (chapter, text a reference shows)
        self.exercises = {}  # exercise label -> (text a reference shows, title)
        self.strict = False  # unknown references are errors only once all labels are known

    # ---- URLs
    def colab_url(self, name):
        return f"{COLAB}/{self.owner}/{self.repo}/blob/{self.branch}/{name}.ipynb"

    def raw_url(self, path):
        return (f"https://raw.githubusercontent.com/{self.owner}/{self.repo}/{self.branch}/"
                f"{urllib.parse.quote(path)}")

    def blob_url(self, path):
        return f"https://github.com/{self.owner}/{self.repo}/blob/{self.branch}/{path}"

    def resolve(self, target, name):
        """A path written in chapter `name` as a path relative to the book root."""
        if target.startswith("/"):
            return target.lstrip("/")
        base = pathlib.PurePosixPath(name).parent
        return os.path.normpath(str(base / target)).replace(os.sep, "/")

    # ---- the notebook
    def notebook(self, name):
        import jupytext
        import nbformat

        self.chapter, self.exercise_count, self.pending_label = name, 0, None
        source = jupytext.read(self.root / f"{name}.md", fmt="md:myst")
        cells = [nbformat.v4.new_code_cell(first_cell.source(
            f"https://github.com/{self.owner}/{self.repo}", self.branch, self.numba_cuda),
            metadata=dict(first_cell.METADATA))]
        if name not in self.stores:
            self.stores[name] = (glue_values.values(self.glue_root, name, self.glue_mode)
                                 if glue_values.uses_glue((self.root / f"{name}.md").read_text())
                                 else None)
        self.glued = glue_text.Glued(name, self.stores[name], strict=self.glue_mode != "stored")
        glue_at = None  # where the stand-in for glue() goes: before the cell importing it
        for cell in source.cells:
            if cell.cell_type == "code":
                code, n = GLUE_IMPORT.subn("", cell.source)
                if n and glue_at is None:
                    glue_at = len(cells)
                if "myst_nb" in code:
                    raise ConversionError(f"{name}: use `from myst_nb import glue` (the form "
                                          "the notebooks replace with a stand-in)")
                if not code.strip():
                    continue
                new = nbformat.v4.new_code_cell(code.strip("\n") if n else code)
                tags = cell.metadata.get("tags", [])
                if tags:
                    new.metadata["tags"] = list(tags)
                if {"hide-input", "hide-cell", "remove-input"} & set(tags):
                    new.metadata["jupyter"] = {"source_hidden": True}
                cells.append(new)
            elif cell.cell_type == "markdown":
                text = self.markdown(cell.source)
                text = self.glued.fill(text)
                if text.strip():
                    cells.append(nbformat.v4.new_markdown_cell(text))
            else:
                cells.append(nbformat.v4.new_raw_cell(cell.source))
        if glue_at is not None:
            cells.insert(glue_at, nbformat.v4.new_code_cell(
                self.glued.cell_code(),
                metadata={**first_cell.METADATA, "jupyter": {"source_hidden": True}}))
        self.add_note(cells, name, glue_at is not None)
        for i, cell in enumerate(cells):
            cell.id = f"cell-{i}"  # stable ids: regenerating gives the same file
        nb = nbformat.v4.new_notebook(cells=cells)
        nb.metadata = {
            "accelerator": "GPU",
            "colab": {"gpuType": "T4", "provenance": [], "toc_visible": True},
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "language_info": {"name": "python"},
            MARKER: f"{name}.md",
        }
        return nb

    def add_note(self, cells, name, uses_glue):
        """Say under the title where the notebook comes from and how to run it."""
        note = (f"*This notebook is generated from [`{name}.md`]({self.blob_url(name + '.md')}) "
                "by `make notebooks`: change the chapter, not the notebook. Run the first "
                "cell before the others; in Colab, pick a GPU runtime first (Runtime > Change "
                "runtime type > T4 GPU).")
        if uses_glue:
            note += (" The numbers in the text were recorded on a GPU, as each passage says; "
                     "the code cell that computes them prints the same sentences with your "
                     "run's numbers.")
        note += "*"
        for cell in cells:
            if cell.cell_type == "markdown":
                lines = cell.source.split("\n")
                at = next((i + 1 for i, line in enumerate(lines) if line.startswith("# ")), 0)
                cell.source = "\n".join(lines[:at] + ["", note, ""] + lines[at:]).strip("\n")
                return

    # ---- Markdown
    def markdown(self, text):
        out = []
        for block in myst.split(text):
            if isinstance(block, str):
                out.append(self.inline(self.targets(block)))
            elif block.name is None:
                out.append(block.raw)
            else:
                converted = self.directive(block)
                out.append("\n".join(block.indent + line if line else line
                                     for line in converted.split("\n")))
        return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")

    def targets(self, text):
        """Drop `(label)=` targets and `%` comments, remembering which heading a label names."""
        kept = []
        for line in text.split("\n"):
            if m := TARGET.match(line.strip()):
                self.pending_label = m["label"]
                continue
            if line.startswith("%"):
                continue
            if self.pending_label and line.strip():
                heading = HEADING.match(line)
                shown = self.inline(heading["text"]) if heading else "this section"
                self.labels[self.pending_label] = (self.chapter, shown.strip("*`"))
                self.pending_label = None
            if self.chapter not in self.titles and (m := re.match(r"^# (.+)$", line)):
                self.titles[self.chapter] = m[1].strip()
            kept.append(line)
        return "\n".join(kept)

    def label(self, label, shown):
        if label:
            self.labels[label] = (self.chapter, shown)
        self.pending_label = None

    def directive(self, d):
        options, content = d.options_and_content()
        name = d.name
        where = f"{self.chapter}.md: {{{name}}} {d.arg}".rstrip()
        if name in ADMONITIONS:
            title = d.arg or name.replace("-", " ").capitalize()
            if name == "seealso":
                title = "See also"
            if "dropdown" in options.get("class", ""):
                return self.details(self.inline(title), self.markdown(content))
            return quote(f"**{self.inline(title)}**\n\n{self.markdown(content)}")
        if name == "dropdown":
            return self.details(self.inline(d.arg or "Details"), self.markdown(content))
        if name in CONTAINERS:
            return self.markdown(content)
        if name in TITLED_CONTAINERS:
            title = f"**{self.inline(d.arg)}**\n\n" if d.arg else ""
            return title + self.markdown(content)
        if name in DROPPED:
            return ""
        if name == "exercise":
            return self.exercise(d, options, content)
        if name == "solution":
            return self.solution(d, options, content)
        if name == "literalinclude":
            return self.literalinclude(d, options, where)
        if name in CODE_DIRECTIVES:
            return fenced(content, d.arg)
        if name == "math":
            self.label(options.get("label"), "the equation")
            return f"$$\n{content}\n$$"
        if name in ("figure", "image"):
            return self.figure(d, options, content)
        if name in GLUE_DIRECTIVES:
            self.label(options.get("name"), "the figure" if name == "glue:figure" else "this")
            shown = "*(The code cell above that computes it shows it when it runs.)*"
            return f"{self.markdown(content)}\n\n{shown}" if content else shown
        if name == "list-table":
            return self.list_table(d, options, content)
        if name == "raw":
            return content if d.arg.strip() == "html" else ""
        if name in ("exercise-start", "exercise-end", "solution-start", "solution-end"):
            raise ConversionError(f"{where}: gated exercises/solutions are not supported; use "
                                  "plain {exercise} and {solution} blocks (DESIGN.md)")
        raise ConversionError(f"{where}: the directive {{{name}}} has no notebook form yet; "
                              "add one to book/_tools/myst_to_notebook.py")

    def details(self, summary, body):
        return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"

    def exercise(self, d, options, content):
        title = self.inline(d.arg)
        # as the book shows it: the title after a middle dot, then the label the grader
        # and instructors use
        if "nonumber" in options:
            head = f"**Exercise{DOT + title if title else ''}**"
            shown = "the exercise"
        else:
            self.exercise_count += 1
            head = f"**Exercise {self.exercise_count}{DOT + title if title else ''}**"
            shown = f"Exercise {self.exercise_count}"
        if options.get("label"):
            head += f" `{options['label']}`"
        self.label(options.get("label"), shown)
        self.exercises[options.get("label")] = (shown, title)
        return quote(f"{head}\n\n{self.markdown(content)}")

    def solution(self, d, options, content):
        shown, title = self.exercises.get(d.arg, (None, ""))
        if shown is None:
            raise ConversionError(f"{self.chapter}.md: {{solution}} {d.arg}: no exercise with "
                                  "that label comes before it")
        summary = f"<b>Solution to {shown}</b>"
        if title:
            summary += DOT + html.escape(title)
        summary = re.sub(r"`([^`]+)`", r"<code>\1</code>", summary)
        self.label(options.get("label"), f"the solution to {shown}")
        return self.details(summary, self.markdown(content))

    def literalinclude(self, d, options, where):
        from sphinx.directives.code import LiteralIncludeReader

        path = self.resolve(d.arg, self.chapter)
        opts = dict(options)
        for key in ("dedent", "tab-width", "lineno-start"):
            if key in opts:
                opts[key] = int(opts[key])
        reader = LiteralIncludeReader(str(self.root / path), opts,
                                      types.SimpleNamespace(source_encoding="utf-8-sig"))
        try:
            code, _ = reader.read()
        except (OSError, ValueError) as err:
            raise ConversionError(f"{where}: {err}") from None
        language = options.get("language") or {".py": "python"}.get(
            pathlib.PurePosixPath(path).suffix, "")
        self.label(options.get("name"), "the listing")
        caption = options.get("caption")
        block = fenced(code, language)
        return f"*{self.inline(caption)}*\n\n{block}" if caption else block

    def figure(self, d, options, content):
        url = self.link_target(d.arg)
        alt = options.get("alt", "")
        if "width" in options:
            image = f'<img src="{url}" alt="{html.escape(alt)}" width="{options["width"]}">'
        else:
            image = f"![{alt}]({url})"
        self.label(options.get("name"), "the figure")
        return f"{image}\n\n*{self.markdown(content)}*" if content.strip() else image

    def list_table(self, d, options, content):
        rows, row = [], None
        for line in content.split("\n"):
            if m := re.match(r"^[*-] - (.*)$", line):
                row = [m[1]]
                rows.append(row)
            elif (m := re.match(r"^  - (.*)$", line)) and row is not None:
                row.append(m[1])
            elif line.strip() and row:
                row[-1] += " " + line.strip()
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        cells = [[self.inline(c).replace("|", "\\|") for c in r] + [""] * (width - len(r))
                 for r in rows]
        header = cells[0] if options.get("header-rows", "0") != "0" else [""] * width
        body = cells[1:] if options.get("header-rows", "0") != "0" else cells
        lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * width]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        title = f"**{self.inline(d.arg)}**\n\n" if d.arg else ""
        return title + "\n".join(lines)

    # ---- inline syntax
    def inline(self, text):
        text = ROLE.sub(self.role, text)
        return LINK.sub(self.link, text)

    def link_target(self, target):
        """A relative path in the chapter as a URL that works from Colab."""
        if re.match(r"^[a-z][\w+.-]*:", target) or target.startswith("#"):
            return target
        path, _, anchor = target.partition("#")
        rel = self.resolve(path, self.chapter)
        stem = rel.rsplit(".", 1)[0]
        if stem in self.names and rel.endswith((".md", ".ipynb")):
            return self.colab_url(stem) + (f"#{anchor}" if anchor else "")
        if re.search(r"\.(png|jpe?g|gif|svg|webp)$", rel, re.I):
            return self.raw_url(rel)
        return self.blob_url(rel)

    def link(self, m):
        return f"{m['bang']}[{m['text']}]({self.link_target(m['target'])}{m['rest']})"

    def role(self, m):
        name, text = m["name"], m["text"]
        titled = TITLED.match(text)
        title, target = (titled["title"], titled["target"]) if titled else (None, text)
        if name in CODE_ROLES:
            return f"`{target if name != 'code' else text}`"
        if name == "math":
            return f"${text}$"
        if name == "doc":
            ref = self.resolve(target, self.chapter)
            shown = title or self.titles.get(ref) or target
            if ref in self.names:
                return f"[{shown}]({self.colab_url(ref)})"
            return f"*{shown}*"
        if name in ("ref", "numref", "eq", "prf:ref"):
            chapter, shown = self.labels.get(target, (None, None))
            if chapter is None:
                if self.strict:
                    raise ConversionError(f"{self.chapter}.md: {{{name}}}`{text}`: no such label")
                return title or target
            shown = title or shown
            if name == "eq":
                shown = f"({shown})"
            if chapter != self.chapter:
                return f"[{shown}]({self.colab_url(chapter)})"
            return shown
        if name.startswith("glue"):
            return self.glued.role(text)
        if name in ("sup", "sub"):
            return f"<{name}>{text}</{name}>"
        if name == "kbd":
            return f"<kbd>{text}</kbd>"
        if name in ("abbr",):
            return re.sub(r"\s*\(.*\)$", "", text)
        if name in ("term", "guilabel", "menuselection", "dfn", "index"):
            return title or (f"*{text}*" if name in ("guilabel", "menuselection") else target)
        if name == "download":
            return f"[{title or target}]({self.link_target(target)})"
        raise ConversionError(f"{self.chapter}.md: the role {{{name}}} has no notebook form "
                              "yet; add one to book/_tools/myst_to_notebook.py")

    def convert(self):
        """{chapter name: notebook} for every chapter (two passes, so labels resolve)."""
        for self.strict in (False, True):
            notebooks = {name: self.notebook(name) for name in self.names}
        return notebooks
