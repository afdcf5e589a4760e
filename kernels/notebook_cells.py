"""Run a notebook's code cells in one namespace, as a kernel would, without Jupyter.

The one plain executor of the course, for two callers. The grader (kernels.grading.
worker) runs untrusted submissions: a cell that does not compile or raises is noted
and the next cell runs, and the generated set-up cell, which installs packages on
Colab, becomes ``import kernels`` (the grader installs nothing). The book's tools
(book/_tools/run_notebooks.py, where a machine has no Jupyter) run the chapters
``strict``: the first unexpected error stops the notebook, and ``keep_setup`` runs the
set-up cell as it is, because it is part of what is tested.

Either way the cells run in order, ``skip-execution`` cells are passed over, an error
in a cell tagged ``raises-exception`` is expected (written to the cell's output, as
nbclient does), what each cell prints becomes its output (and goes on to this
process's stdout), capped for the whole notebook, and IPython syntax (``%magic``,
``!shell``) is skipped and noted, or in a strict run is an error: plain Python cannot
run it. An optional time limit for the whole notebook is enforced between Python
bytecodes by SIGALRM (C code that never returns, such as a hung GPU, is left to the
caller's hard limit).

Standard library only, and no imports from the package: the book's tools load this
file without importing ``kernels``, whose import would choose GPU or simulator before
the notebook's own set-up cell can.
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


class CellError(Exception):
    """A strict run stopped at a cell that failed; the cell's own error is the cause."""


class CappedOutput:
    """A text stream that passes on the first `limit` characters and counts the rest;
    `kept` collects what it passed on since it was last emptied (one cell's output)."""

    def __init__(self, stream, limit):
        self.stream, self.left, self.dropped, self.kept = stream, limit, 0, []

    def write(self, text):
        text = str(text)
        kept = text[:max(self.left, 0)]
        self.left -= len(kept)
        self.dropped += len(text) - len(kept)
        if kept:
            self.stream.write(kept)
            self.kept.append(kept)
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


def _error(err):
    """`Type: first line of the message`, as a note shows an error."""
    message = str(err).strip().split("\n")[0][:200]
    if isinstance(err, OSError) and err.errno == errno.EFBIG:
        message += " (while grading, a file or the output may hold 64 MB at most)"
    return type(err).__name__ + (f": {message}" if message else "")


def run(cells, namespace, seconds=None, on_cell=lambda number: None, *, strict=False,
        keep_setup=False, limit=None, explain=lambda err: ""):
    """Run the code cells of `cells` (notebook cell dicts, whose outputs are replaced
    by what each prints) in `namespace`, within `seconds` in all (None: no limit);
    `limit`, where that is a share of a larger limit (the grader's), says how, in
    words that follow "its time limit"; `explain(err)` gives words that a cell's note
    adds after the error it raised (the grader's: that a limit of its own was reached).

    Returns notes: one line per thing that went wrong. With `strict`, the first cell
    that fails (an error its cell does not expect, a syntax error, IPython syntax, the
    time limit) raises CellError and no later cell runs. With `keep_setup`, the
    generated set-up cell runs as it is instead of as ``import kernels``."""
    notes = []
    code_cells = [c for c in cells if c.get("cell_type") == "code"]
    out = CappedOutput(sys.stdout, MAX_OUTPUT)

    def alarm(signum, frame):
        raise NotebookTimeout

    def fail(note, err, then):
        if strict:
            raise CellError(note) from err
        notes.append(f"{note}; {then}")

    if seconds is not None:
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
            if number == 1 and text.startswith(SETUP_PREFIX) and not keep_setup:
                text = "import kernels"
            code, skipped = plain_python(text)
            if skipped and strict:
                raise CellError(f"{where} has IPython syntax ({', '.join(skipped)}), which "
                                "plain Python cannot run")
            if skipped:
                notes.append(f"{where}: skipped the IPython line(s) "
                             f"{', '.join(f'`{s}`' for s in skipped)}; the grader runs "
                             "plain Python")
            if code is None:
                continue
            on_cell(number)
            out.kept.clear()
            try:
                filename = f"<code cell {number}>"
                try:
                    compiled = compile(code, filename, "exec")
                except SyntaxError as err:
                    fail(f"{where} has a syntax error (line {err.lineno}: {err.msg})", err,
                         "it was skipped and the next cells ran")
                    continue
                # its source, for tracebacks and the tracer's messages (on a GPU
                # machine kernels.trace.remote sends these lines with the code)
                linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
                try:
                    exec(compiled, namespace)
                except NotebookTimeout:
                    raise
                except BaseException as err:  # exit() included: a notebook must not end us
                    if "raises-exception" in tags:  # expected: shown, as nbclient shows it
                        print(f"{type(err).__name__}: {err}", file=out)
                    else:
                        fail(f"{where} raised {_error(err)}{explain(err)}", err,
                             "the next cells ran")
            finally:
                cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                                    "text": "".join(out.kept)}]
    except NotebookTimeout:
        note = (f"{where} was stopped: the notebook ran past its time limit "
                f"{limit or f'of {seconds:.3g} s'}, so the cells after it did not run")
        if strict:
            raise CellError(note) from None
        notes.append(note)
    finally:
        if seconds is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        sys.stdout, sys.stderr = saved
    if out.dropped:
        notes.append(f"the notebook printed {out.dropped + MAX_OUTPUT:,} characters; the "
                     f"grader kept the first {MAX_OUTPUT:,}")
    return notes
