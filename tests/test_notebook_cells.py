"""Running a notebook's cells without Jupyter: for the grader, errors noted and passed
over, one time limit, capped output; for the book's tools, strict (the first unexpected
error stops the run) with the set-up cell run as it is."""

import re
import time

import pytest

from kernels import notebook_cells as cells
from planted import code_cell


def test_ipython_syntax_is_skipped_and_said():
    code, skipped = cells.plain_python("x = 1\n  %timeit f()\n!ls\ny = 2")
    assert code == "x = 1\n  pass\npass\ny = 2" and skipped == ["%timeit f()", "!ls"]
    assert cells.plain_python("%%bash\necho hi") == (None, ["%%bash"])


def test_errors_are_noted_and_the_next_cells_run():
    ns = {}
    notes = cells.run([code_cell("a = 1"), code_cell("def f(:"), code_cell("1 / 0"),
                       code_cell("import sys\nsys.exit(3)"), code_cell("b = a + 1"),
                       code_cell("c = 1", tags=["skip-execution"]),
                       {"cell_type": "markdown", "source": "# title"}], ns, 30)
    assert ns["b"] == 2 and "c" not in ns
    assert [n.split(" (")[0] for n in notes] == ["code cell 2", "code cell 3", "code cell 4"]
    assert "syntax error" in notes[0] and "ZeroDivisionError" in notes[1]
    assert "SystemExit: 3" in notes[2]


def test_the_set_up_cell_becomes_an_import():
    ns = {}
    cells.run([code_cell(cells.SETUP_PREFIX + "\nraise RuntimeError('pip install')")], ns, 30)
    assert "kernels" in ns


def test_a_notebook_that_runs_too_long_is_stopped_and_the_rest_skipped():
    ns = {}
    start = time.monotonic()
    notes = cells.run([code_cell("a = 1"),
                       code_cell("while True:\n    try:\n        pass\n    except Exception:\n"
                                 "        pass"),
                       code_cell("b = 2")], ns, 0.5)
    assert time.monotonic() - start < 5
    assert ns["a"] == 1 and "b" not in ns
    assert len(notes) == 1 and "code cell 2" in notes[0] and "time limit of 0.5 s" in notes[0]


def test_output_is_capped(capsys):
    notes = cells.run([code_cell("for i in range(3000):\n    print('x' * 1000)")], {}, 30)
    assert len(capsys.readouterr().out) == cells.MAX_OUTPUT
    assert notes == [f"the notebook printed 3,003,000 characters; the grader kept the first "
                     f"{cells.MAX_OUTPUT:,}"]


def test_each_cell_keeps_what_it_printed_as_its_output(capsys):
    nb = [code_cell("print('one')"), code_cell("import sys\nprint('two', file=sys.stderr)"),
          code_cell("print('not run')", tags=["skip-execution"])]
    cells.run(nb, {}, 30)
    assert [c["outputs"] for c in nb[:2]] == [
        [{"output_type": "stream", "name": "stdout", "text": text}] for text in ("one\n", "two\n")]
    assert nb[2]["outputs"] == [] and capsys.readouterr().out == "one\ntwo\n"


def test_a_strict_run_stops_at_the_first_error():
    ns = {}
    nb = [code_cell("a = 1"), code_cell("print('before')\n1 / 0"), code_cell("b = 2")]
    with pytest.raises(cells.CellError, match=r"code cell 2 \(`print\('before'\)`\) raised "
                                              "ZeroDivisionError: division by zero") as caught:
        cells.run(nb, ns, strict=True)
    assert isinstance(caught.value.__cause__, ZeroDivisionError)
    assert ns["a"] == 1 and "b" not in ns and nb[2]["outputs"] == []
    assert nb[1]["outputs"][0]["text"] == "before\n"


@pytest.mark.parametrize("source, complaint", [
    ("def f(:", "has a syntax error"), ("%timeit f()", "has IPython syntax (%timeit f())"),
    ("import sys\nsys.exit(3)", "raised SystemExit: 3")])
def test_a_strict_run_fails_what_the_grader_passes_over(source, complaint):
    with pytest.raises(cells.CellError, match=re.escape(complaint)):
        cells.run([code_cell(source), code_cell("b = 2")], {}, strict=True)


@pytest.mark.parametrize("strict", [False, True])
def test_an_error_in_a_cell_tagged_raises_exception_is_expected(strict):
    ns = {}
    nb = [code_cell("raise ValueError('bad size')", tags=["raises-exception"]),
          code_cell("b = 2")]
    assert cells.run(nb, ns, strict=strict) == [] and ns["b"] == 2
    assert nb[0]["outputs"][0]["text"] == "ValueError: bad size\n"


def test_keep_setup_runs_the_set_up_cell_as_it_is():
    setup = code_cell(cells.SETUP_PREFIX + "\nran_as_written = True")
    ns = {}
    cells.run([setup], ns, strict=True, keep_setup=True)
    assert ns["ran_as_written"] and "kernels" not in ns
    with pytest.raises(cells.CellError, match="RuntimeError: pip install"):
        cells.run([code_cell(cells.SETUP_PREFIX + "\nraise RuntimeError('pip install')")], {},
                  strict=True, keep_setup=True)


def test_no_time_limit_leaves_the_alarm_alone():
    import signal

    handler = signal.getsignal(signal.SIGALRM)
    cells.run([code_cell("a = 1")], {}, strict=True)
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_cells_source_can_be_found_by_its_file_name():
    """For tracebacks and the tracer's messages (inspect reads it through linecache)."""
    import inspect

    ns = {}
    cells.run([code_cell("x = 1"), code_cell("def f(a):\n    return a + 1")], ns, strict=True)
    assert inspect.getsource(ns["f"]) == "def f(a):\n    return a + 1"
