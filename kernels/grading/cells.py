"""Run a submitted notebook's code cells in one namespace, as a kernel would, without Jupyter.

Like the book's plain executor (book/_tools/notebooks.py --plain), the cells run in
order in this process and honour the ``skip-execution`` tag. Unlike it, a submission
is not trusted to be well formed: a cell that does not compile or raises is noted and
the next cell runs; the whole notebook has one time limit, enforced between Python
bytecodes by SIGALRM (C code that never returns, such as a hung GPU, is left to the
runner's hard limit); what it prints is capped; IPython syntax (``%magic``, ``!shell``)
is skipped, because the grader runs plain Python; and the generated set-up cell, which
installs packages on Colab, becomes ``import kernels``: the grader installs nothing.
"""

import errno
import linecache
import re
import signal
import sys

SETUP_PREFIX = "# @title Set-up: run this cell first"  # the generated first cell (first_cell.py)
MAX_OUTPUT = 1 << 20  # characters a notebook may print in all; the rest is dropped
MAGIC = re.compile(r"^([ \t]*)[%!]")


class NotebookTimeout(BaseException):
    """The notebook ran past its time limit (a BaseException: `except Exception` in a
    cell does not swallow it)."""


class CappedOutput:
    """A text stream that passes on the first `limit` characters and counts the rest."""

    def __init__(self, stream, limit):
        self.stream, self.left, self.dropped = stream, limit, 0

    def write(self, text):
        text = str(text)
        kept = text[:max(self.left, 0)]
        self.left -= len(kept)
        self.dropped += len(text) - len(kept)
        if kept:
            self.stream.write(kept)
        return len(text)

    def flush(self):
        self.stream.flush()

    def isatty(self):
        return False


def plain_python(code):
    """(Python source, IPython lines skipped), or (None, [line]) for a cell magic cell."""
    if code.lstrip().startswith("%%"):
        return None, [code.lstrip().split("\n", 1)[0]]
    lines, skipped = [], []
    for line in code.split("\n"):
        m = MAGIC.match(line)
        if m:
            skipped.append(line.strip())
            line = f"{m[1]}pass"
        lines.append(line)
    return "\n".join(lines), skipped


def _first_line(code):
    line = next((ln.strip() for ln in code.split("\n") if ln.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def run(cells, namespace, seconds, on_cell=lambda number: None):
    """Run the code cells of `cells` (notebook cell dicts) in `namespace`, within
    `seconds` in all. Returns notes for the student: one line per thing that went wrong."""
    notes = []
    code_cells = [c for c in cells if c.get("cell_type") == "code"]
    out = CappedOutput(sys.stdout, MAX_OUTPUT)

    def alarm(signum, frame):
        raise NotebookTimeout

    previous = signal.signal(signal.SIGALRM, alarm)
    # Fires again every second, in case a cell catches the first one with a bare except.
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001), 1.0)
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    where = "the first cell"
    try:
        for number, cell in enumerate(code_cells, 1):
            text = cell.get("source", "")
            text = text if isinstance(text, str) else "".join(map(str, text))
            where = f"code cell {number} (`{_first_line(text)}`)"
            tags = (cell.get("metadata") or {}).get("tags") or []
            if "skip-execution" in tags or not text.strip():
                continue
            if number == 1 and text.startswith(SETUP_PREFIX):
                text = "import kernels"
            code, skipped = plain_python(text)
            if skipped:
                notes.append(f"{where}: skipped the IPython line(s) "
                             f"{', '.join(f'`{s}`' for s in skipped)}; the grader runs "
                             "plain Python")
            if code is None:
                continue
            on_cell(number)
            try:
                filename = f"<code cell {number}>"
                compiled = compile(code, filename, "exec")
                # its source, for the tracer's process on a GPU (kernels.trace.remote)
                linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
            except SyntaxError as err:
                notes.append(f"{where} has a syntax error (line {err.lineno}: {err.msg}); "
                             "it was skipped and the next cells ran")
                continue
            try:
                exec(compiled, namespace)
            except NotebookTimeout:
                raise
            except BaseException as err:  # a student's error, exit() included: note, go on
                message = str(err).strip().split("\n")[0][:200]
                if isinstance(err, OSError) and err.errno == errno.EFBIG:
                    message += " (while grading, a file or the output may hold 64 MB at most)"
                notes.append(f"{where} raised {type(err).__name__}"
                             + (f": {message}" if message else "")
                             + "; the next cells ran")
    except NotebookTimeout:
        notes.append(f"{where} was stopped: the notebook ran past its time limit of "
                     f"{seconds:.3g} s, so the cells after it did not run")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        sys.stdout, sys.stderr = saved
    if out.dropped:
        notes.append(f"the notebook printed {out.dropped + MAX_OUTPUT:,} characters; the "
                     f"grader kept the first {MAX_OUTPUT:,}")
    return notes
