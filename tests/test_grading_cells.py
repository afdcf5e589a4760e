"""Running a submission's cells: errors noted and passed over, one time limit, capped output."""

import time

from kernels.grading import cells
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
