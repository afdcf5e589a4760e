"""Glued numbers in a notebook's text: the recorded values in the prose, and the
sentences that glue() prints again with the numbers of the reader's own run.

The converter (myst_to_notebook.py) turns each {glue:text}`key` role into a marker;
``Glued.fill`` then puts the recorded value in its place, labels the cell with the
device and date of the recordings, and keeps each sentence that holds a value as a
template; ``cell_code`` is the notebook's stand-in for ``myst_nb.glue``, which prints a
sentence when the last of its values is glued (in the order the chapter glued them).
"""

import re

from book_config import ConversionError

MARK = re.compile("\x00(\\d+)\x00")
ITEM = re.compile(r"^\s*(?:[*+-]|\d+\.)\s+|^\s*#+\s+|^\s*\|")
SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z\x00*`(\[])")
TITLE = "# @title glue(): the book's sentences with this run's numbers (run it, then go on)"


def plain(text):
    """Markdown as the words a reader sees (links as their text, no emphasis)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"</?\w+[^>]*>", "", text)
    text = text.replace("\\|", "|").replace("|", " ")
    return re.sub(r"\s+", " ", text.replace("*", "").replace("`", "")).strip()


def passages(text):
    """The paragraphs, list items, headings and table rows of Markdown text."""
    found, current = [], []
    for line in text.split("\n"):
        line = re.sub(r"^(\s*>)+ ?", "", line)
        if not line.strip() or ITEM.match(line):
            found.append(" ".join(current))
            current = []
        if line.strip():
            current.append(ITEM.sub("", line).strip())
    found.append(" ".join(current))
    return [p for p in found if p]


def dates(found):
    """'NVIDIA H100 80GB HBM3, 2026-11-21 and 2026-11-24' for {(device, date)}."""
    by_device = {}
    for device, date in sorted(found):
        by_device.setdefault(device, []).append(date)
    said = []
    for device, days in by_device.items():
        days = days[0] if len(days) == 1 else ", ".join(days[:-1]) + " and " + days[-1]
        said.append(f"{device}, {days}")
    return "; ".join(said)


def after_last_mark(text, line):
    """`text` with `line` as a paragraph of its own after the paragraph, list or quote
    that holds the last marker (never inside a fenced block)."""
    lines = text.split("\n")
    last = max(i for i, ln in enumerate(lines) if MARK.search(ln))
    fence, at = None, len(lines)
    for i, ln in enumerate(lines):
        if m := re.match(r"^\s*(`{3,}|~{3,})", ln):
            fence = None if fence and m[1].startswith(fence) else fence or m[1]
        if i <= last or fence or ln.strip():
            continue
        following = next((n for n in lines[i + 1:] if n.strip()), "")
        if not re.match(r"^(\s+|>|[*+-]\s|\d+\.\s)", following):
            at = i
            break
    return "\n".join(lines[:at] + ["", line] + lines[at:]).rstrip("\n")


class Glued:
    """One chapter's glued values (a glue_values store) as the converter uses them."""

    def __init__(self, chapter, store=None, strict=True):
        store = store or {"values": {}, "recorded": {}, "order": []}
        self.chapter, self.strict = chapter, strict  # not strict: a stale store, reported
        self.values, self.recorded = store["values"], store["recorded"]
        self.order = {key: i for i, key in enumerate(store["order"])}
        self.marks = []  # (key, format) of each role met in the cell being converted
        self.sentences = {}  # the key glued last: [(recorded?, template)]

    def role(self, target):
        """The marker a {glue:text}`key:format` role leaves in the converted text."""
        key, _, spec = target.partition(":")
        if key not in self.values and not self.strict:
            return ""
        if key not in self.values:
            raise ConversionError(f"{self.chapter}.md: {{glue:text}}`{target}`: the chapter's "
                                  f"code cells glue no text named {key!r}")
        self.marks.append((key, spec))
        return f"\x00{len(self.marks) - 1}\x00"

    def shown(self, mark):
        key, spec = self.marks[int(mark[1])]
        return format(self.values[key], spec)

    def fill(self, text):
        """The cell's text with the recorded values in place and a line saying where
        they come from; its sentences that hold values are kept for glue() to print."""
        if not self.marks:
            return text
        for passage in passages(text):
            for sentence in SENTENCE_END.split(passage):
                keys = [self.marks[int(i)][0] for i in MARK.findall(sentence)]
                if not keys:
                    continue
                template = MARK.sub(lambda m: "\x01{%s%s}\x02" % (
                    self.marks[int(m[1])][0], ":" * bool(self.marks[int(m[1])][1])
                    + self.marks[int(m[1])][1]), sentence)
                template = plain(template).replace("{", "{{").replace("}", "}}")
                template = template.replace("\x01{{", "{").replace("}}\x02", "}")
                last = max(keys, key=self.order.__getitem__)
                recorded = any(self.recorded.get(k) for k in keys)
                if (recorded, template) not in self.sentences.setdefault(last, []):
                    self.sentences[last].append((recorded, template))
        found = {tuple(s) for key, _ in self.marks for s in self.recorded.get(key, [])}
        if found:
            text = after_last_mark(text, (
                f"*The numbers above were recorded on {dates(found)} (book/_data/bench); "
                "the code cell that computes them prints these sentences with your run's "
                "numbers.*"))
        text = MARK.sub(self.shown, text)
        self.marks = []
        return text

    def cell_code(self):
        """The code cell that defines glue() in the notebook."""
        lines = [TITLE,
                 "# The book glues numbers that its code cells compute into the text. This",
                 "# notebook's text carries the numbers recorded on the course's GPU; the",
                 "# glue() below prints the book's sentences again with this run's numbers",
                 "# when the code cell that computes them runs.",
                 "import sys", "", "_GLUED = {}",
                 "# the value glued last: (from a recording?, a sentence it completes)",
                 "_SENTENCES = {"]
        for key in sorted(self.sentences, key=self.order.__getitem__):
            lines.append(f"    {key!r}: [")
            lines += [f"        ({recorded!r}, {template!r})," for recorded, template
                      in self.sentences[key]]
            lines.append("    ],")
        lines += ["}", "", "", CELL_GLUE]
        return "\n".join(lines)


CELL_GLUE = '''\
def glue(name, value, display=True):
    """Stand-in for myst_nb.glue: the book puts `value` in its text; here each sentence
    of the book that it completes is printed with this run's numbers."""
    if display or not isinstance(value, (int, float, str)):
        from IPython.display import display as show

        show(value)
        return
    _GLUED[name] = value
    simulator = getattr(sys.modules.get("kernels"), "SIMULATOR", False)
    for recorded, sentence in _SENTENCES.get(name, []):
        if recorded:  # on the simulator the benchmark cells return the recording
            whose = "Recorded (no GPU here)" if simulator else "Measured on this GPU"
        else:
            whose = "This run"
        try:
            print(f"{whose}: {sentence.format_map(_GLUED)}")
        except (KeyError, ValueError):
            pass  # a number this run did not compute: the sentence is not said'''
