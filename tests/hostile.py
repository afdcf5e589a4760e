"""Broken and hostile submissions of the grid-stride chapter, each with the grade and the
feedback line the grader must give it (tests/test_grading.py grades them together).

Each notebook says it is the grid-stride chapter (1 + 2 + 3 points) and answers saxpy
(1 point) correctly where the case allows, so a test can see that what went wrong
elsewhere in the notebook cost nothing else.
"""

import kernels
from planted import code_cell, module_cell, notebook, solution_source

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

# Answers to the 256-bin histogram that go after the other exercises' processes: the
# answer processes of a notebook are forked in one sandbox (kernels.grading.answers), so
# each exercise ends with every process of that sandbox ended and its scratch emptied
ANSWER_PROCESS_ATTACKS = {
    "stops-the-process-that-forks-answers": '''\
import os
import signal


def histogram_256(data):
    os.kill(os.getppid(), signal.SIGSTOP)
''',
    "stops-every-other-process": '''\
import os
import signal


def _group(pid):
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def histogram_256(data):
    for pid in range(2, 4096):  # its own threads are in its group: it goes on
        if pid != os.getppid() and _group(pid) != os.getpgid(0):
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
''',
    "leaves-a-process-holding-every-thread": '''\
import os
import sys
import time

HOLDS = """
import os, threading, time
os.setsid()
while True:
    try:
        threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
    except RuntimeError:
        break
time.sleep(600)
"""


def histogram_256(data):
    os.spawnvp(os.P_NOWAIT, sys.executable, [sys.executable, "-c", HOLDS])
    time.sleep(3)
''',
    "fills-the-scratch-folder-names": '''\
def histogram_256(data):
    for n in range(3, 40):
        open(f"/tmp/answers-{n}", "w").close()
''',
}


def beside_correct_answers(attack):
    """An atomics notebook: `attack`, and the course's answers to the other two
    exercises (2 and 3 points), which must keep their points."""
    return notebook([module_cell("histogram", solution_source("histogram"),
                                 ["atomics-ex-words", "atomics-ex-positions"]), attack],
                    "atomics")


# name -> (notebook, or raw file text; points expected; text each feedback must hold)
CASES = {
    "broken-cells": (notebook(BROKEN_CELLS, "gridstride"), 1, [
        "has a syntax error", "raised ZeroDivisionError", "the next cells ran",
        "skipped the IPython line(s) `%matplotlib inline`, `!pip install nothing`", "`%%bash`",
        "the grader kept the first"]),
    # each exercise is checked on its own: a cell that never ends costs only the notes.
    # It sleeps, or it would take a core from the other tests until the time limit (50 s
    # here); the alarm stops a busy loop the same way (tests/test_notebook_cells.py)
    "infinite-loop": (notebook([SAXPY, "import time\n\nwhile True:\n    time.sleep(1)\n",
                                REVERSE], "gridstride"), 4,
                      ["was stopped: the notebook ran past its time limit"]),
    "deadlocked-kernel": (notebook([NEVER_RETURNS, REVERSE], "gridstride"), 3,
                          ["did not finish within"]),
    "missing-function": (notebook([SAXPY.replace("def saxpy_kernel", "def saxpy_kernal")],
                                  "gridstride"), 0, ["defines no `saxpy_kernel`"]),
    "wrong-signature": (notebook([SAXPY.replace("(a, x, y, out)", "(x, y, out)")
                                  .replace("a * x[i]", "x[i]")], "gridstride"), 0,
                        ["takes 3 arguments; the exercise launches it with 4"
                         if kernels.SIMULATOR else "your code raised"]),
    "enormous-file": (notebook([SAXPY, "import os\nblock = b'x' * (1 << 20)\n"
                                "for i in range(100):\n    os.write(1, block)\n"],
                               "gridstride"), 1, ["File too large", "64 MB at most"]),
    "not-json": ("this is not a notebook {", 0, ["not valid JSON"]),
    "not-a-notebook": ('{"cells": 3}', 0, ["not a Jupyter notebook"]),
    "rewrites-the-grader": (notebook([REWRITE_GRADER, HOST_SAXPY], "gridstride"), 0,
                            ["Not graded automatically: the definition of `saxpy_kernel`"]),
    "reads-the-answer-key": (notebook([READ_ANSWER_KEY, LIST_ANSWER_KEY, SAXPY], "gridstride"),
                             1, ["raised ModuleNotFoundError", "raised FileNotFoundError"]),
    "monkeypatches-the-checker": (notebook([MONKEYPATCH], "gridstride"), 0,
                                  ["Not graded automatically: the definition of"]),
    "forges-results": (notebook([FORGE, HOST_SAXPY], "gridstride"), 0,
                       ["did not send", "it cannot change a grade"]),
    # graded after the notebook that rewrote its copy of the checkers: still fails
    "host-only-after-rewrite": (notebook([HOST_SAXPY], "gridstride"), 0,
                                ["Not graded automatically: the definition of"]),
    **{name: (beside_correct_answers(attack), 5, ["word_length_histogram: all",
                                                  "positions_of: all"])
       for name, attack in ANSWER_PROCESS_ATTACKS.items()},
}


# Notebooks that try to get out of the OS sandbox (tests/test_grading_sandbox.py). Each
# attempt is a cell that raises when the attempt fails, so the feedback notes it; the
# test checks on the host that none of them succeeded. `targets` names what they aim
# at: other (another submission), out (the out folder), secret (a file in the grader's
# home), answers (the checkout's kernels/solutions), port (a port the test listens on)
# and marker (the name the detached process takes).
TARGETS = ("other", "out", "secret", "answers", "port", "marker")
# The limits they are graded under, small so that the hogs below reach them soon. Each
# hog stops at twice its limit: a limit that does not hold fails its case (no error to
# note) instead of taking the machine, and no case waits for a time limit.
MAX_PROCESSES, MAX_MEMORY_MB, MAX_DISK_MB = 200, 1500, 256
LIMITS = ("--max-processes", str(MAX_PROCESSES), "--max-memory", f"{MAX_MEMORY_MB}M",
          "--max-disk", f"{MAX_DISK_MB}M")
# The detached process waits for the gradebook, written once every sandbox has ended,
# and then forges it: only a process that outlived its sandbox could. It polls rather
# than sleeps a fixed time, so it is still waiting when grading ends, however late.
FORGED = "detached,6 of 6"
DETACHED = '''\
import ctypes
import os
import time

if os.fork() == 0:  # double fork and a new session: no longer the worker's child
    try:
        os.setsid()
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, b"{marker}")  # PR_SET_NAME, for the test to find
            for _ in range(3000):  # ten minutes at most
                if os.path.exists("{out}/grades.csv"):
                    break
                time.sleep(0.2)
            for path in ("{out}/grades.csv", "{out}/feedback/detached.md"):
                with open(path, "w") as f:
                    f.write("{forged}")
    finally:
        os._exit(0)
os.wait()
'''

STUCK = '''\
import signal
import time

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the notebook's time limit
while True:  # never ends; asleep, so that it takes no CPU from the others meanwhile
    time.sleep(1)
'''

SNOOPS = ['open("{other}").read()  # another submission',
          'import os\n\nos.listdir("{out}")  # the out folder',
          'open("{secret}").read()  # the grader\'s home',
          'import os\n\nos.listdir("{answers}")  # the answer key of the checkout']

CONNECTIONS = ['import socket\n\nsocket.create_connection(("127.0.0.1", {port}), timeout=5)',
               'import socket\n\nsocket.create_connection(("1.1.1.1", 443), timeout=5)']

WRITES = ['with open("{out}/grades.csv", "w") as f:\n    f.write("forged")',
          'import sys\n\nopen(sys.prefix + "/hostile.txt", "w").write("planted")',
          'open("/hostile.txt", "w").write("planted")']

FORK_BOMB = f'''\
import os
import time

for _ in range({2 * MAX_PROCESSES}):
    if os.fork() == 0:  # every child keeps its place
        time.sleep(3600)
        os._exit(0)
'''

MEMORY = f'''\
hoard = []
for _ in range({2 * MAX_MEMORY_MB // 64}):
    hoard.append(b"x" * (64 << 20))  # touched, not only reserved
'''

FLOOD_FILES = 2 * MAX_DISK_MB // 16
DISK_FLOOD = f'''\
for n in range({FLOOD_FILES}):
    with open(f"{{folder}}/flood{{{{n}}}}", "wb") as f:
        f.write(b"x" * (16 << 20))
'''


def escapes(targets):
    """name -> (notebook, points, lines each feedback must hold), aimed at `targets`.
    Each ends by itself, but detached-and-stuck, which only the time limit ends."""
    t = dict(targets, forged=FORGED)
    return {
        "detached": (notebook([DETACHED.format(**t), SAXPY], "gridstride"), 1, []),
        # the grader's hard limit ends it, with what it started
        "detached-and-stuck": (notebook([SAXPY, DETACHED.format(**t), STUCK], "gridstride"),
                               1, ["stopped while running code cell 3: it ran past the time "
                                   "limit"]),
        "snoops": (notebook([s.format(**t) for s in SNOOPS] + [SAXPY], "gridstride"), 1,
                   [f"FileNotFoundError: [Errno 2] No such file or directory: '{p}'"
                    for p in (t["other"], t["out"], t["secret"], t["answers"])]),
        "connects": (notebook([c.format(**t) for c in CONNECTIONS] + [SAXPY], "gridstride"), 1,
                     ["raised ConnectionRefusedError", "Network is unreachable"]),
        "writes-outside": (notebook([w.format(**t) for w in WRITES] + [SAXPY], "gridstride"), 1,
                           [f"No such file or directory: '{t['out']}/grades.csv'",
                            "Read-only file system: '/hostile.txt'",
                            "Read-only file system: '"]),
        # the note says that the grader's limit stopped it, not a bug of the student's
        "fork-bomb": (notebook([FORK_BOMB], "gridstride"), 0,
                      ["raised BlockingIOError: [Errno 11] Resource temporarily unavailable "
                       f"(this is the grader's limit of {MAX_PROCESSES} processes and "
                       "threads per notebook"]),
        "eats-memory": (notebook([MEMORY], "gridstride"), 0,
                        ["raised MemoryError (this is the grader's limit of "
                         f"{MAX_MEMORY_MB / 1024:.3g} GiB of memory per process"]),
        "floods-disk": (notebook([DISK_FLOOD.format(folder="."),
                                  DISK_FLOOD.format(folder="/dev/shm"), SAXPY], "gridstride"), 1,
                        [f"code cell {n} (`for n in range({FLOOD_FILES}):`) raised OSError: "
                         "[Errno 28] No space left on device" for n in (1, 2)]),
    }
