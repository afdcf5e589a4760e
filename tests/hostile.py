"""Broken and hostile submissions of the grid-stride chapter, each with the grade and the
feedback line the grader must give it (tests/test_grading.py grades them together).

Each notebook says it is the grid-stride chapter (1 + 2 + 3 points) and answers saxpy
(1 point) correctly where the case allows, so a test can see that what went wrong
elsewhere in the notebook cost nothing else.
"""

from planted import code_cell, notebook

SAXPY = '''\
from numba import cuda


@cuda.jit
def saxpy_kernel(a, x, y, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a * x[i] + y[i]
'''

REVERSE = '''\
from numba import cuda


@cuda.jit
def reverse_inplace_kernel(x):
    n = x.size
    for i in range(cuda.grid(1), n // 2, cuda.gridsize(1)):
        x[i], x[n - 1 - i] = x[n - 1 - i], x[i]
'''

NEVER_RETURNS = '''\
from numba import cuda


@cuda.jit
def saxpy_kernel(a, x, y, out):
    while x.size > 0:  # spins for ever, like a lock nobody releases
        pass
'''

REWRITE_GRADER = '''\
import pathlib

import kernels

# Make every later check pass, if the file were shared: it is this notebook's copy.
core = pathlib.Path(kernels.__file__).parent / "checks" / "core.py"
core.write_text(core.read_text() + """
def run_cases(exercise, cases, run, **options):
    return Report(exercise, [Case("forged", True, "")])
""")
'''

READ_ANSWER_KEY = '''\
import pathlib

import kernels

from kernels.solutions import gridstride  # the answer key: not in the grader's copy
'''

LIST_ANSWER_KEY = '''\
import pathlib

import kernels

found = sorted(p.name for p in (pathlib.Path(kernels.__file__).parent / "solutions").iterdir())
'''

MONKEYPATCH = '''\
from kernels.checks import core

core.check = lambda *args, **kwargs: "all good"  # every result would match
saxpy_kernel = lambda *args: None
'''

FORGE = '''\
import os

forged = b'{"event": "exercise", "label": "gridstride-ex-saxpy", "passed": true}\\n'
for fd in range(3, 64):
    try:
        os.write(fd, forged)
    except OSError:
        pass
'''

HOST_SAXPY = '''\
class HostKernel:
    def __getitem__(self, launch):
        def run(a, x, y, out):
            out[:] = a * x + y
        return run


saxpy_kernel = HostKernel()
'''

BROKEN_CELLS = [code_cell("%matplotlib inline\n!pip install nothing\n" + SAXPY),
                "def reverse_inplace_kernel(x:\n    pass\n", "1 / 0",
                code_cell("%%bash\necho hello\n"),
                "for i in range(100_000):\n    print('spam' * 50)\n"]

# name -> (notebook, or raw file text; points expected; text each feedback must hold)
CASES = {
    "broken-cells": (notebook(BROKEN_CELLS, "gridstride"), 1, [
        "has a syntax error", "raised ZeroDivisionError", "the next cells ran",
        "skipped the IPython line(s) `%matplotlib inline`, `!pip install nothing`", "`%%bash`",
        "the grader kept the first"]),
    "infinite-loop": (notebook([SAXPY, "while True:\n    pass\n", REVERSE], "gridstride"), 1,
                      ["was stopped: the notebook ran past its time limit"]),
    "deadlocked-kernel": (notebook([NEVER_RETURNS, REVERSE], "gridstride"), 3,
                          ["did not finish within"]),
    "missing-function": (notebook([SAXPY.replace("def saxpy_kernel", "def saxpy_kernal")],
                                  "gridstride"), 0, ["defines no `saxpy_kernel`"]),
    "wrong-signature": (notebook([SAXPY.replace("(a, x, y, out)", "(x, y, out)")
                                  .replace("a * x[i]", "x[i]")], "gridstride"), 0,
                        ["your code raised"]),
    "enormous-file": (notebook([SAXPY, "import os\nblock = b'x' * (1 << 20)\n"
                                "for i in range(100):\n    os.write(1, block)\n"],
                               "gridstride"), 1, ["File too large", "64 MB at most"]),
    "not-json": ("this is not a notebook {", 0, ["not valid JSON"]),
    "not-a-notebook": ('{"cells": 3}', 0, ["not a Jupyter notebook"]),
    "rewrites-the-grader": (notebook([REWRITE_GRADER, HOST_SAXPY], "gridstride"), 0,
                            ["no kernel of yours was launched"]),
    "reads-the-answer-key": (notebook([READ_ANSWER_KEY, LIST_ANSWER_KEY, SAXPY], "gridstride"),
                             1, ["raised ModuleNotFoundError", "raised FileNotFoundError"]),
    "monkeypatches-the-checker": (notebook([MONKEYPATCH], "gridstride"), 0,
                                  ["interfered with the grader", "kernels.checks.core.check"]),
    "forges-results": (notebook([FORGE, HOST_SAXPY], "gridstride"), 0,
                       ["interfered with the grader", "did not send"]),
    # graded after the notebook that rewrote its copy of the checkers: still fails
    "host-only-after-rewrite": (notebook([HOST_SAXPY], "gridstride"), 0,
                                ["no kernel of yours was launched"]),
}
