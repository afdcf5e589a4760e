"""The OS sandbox (kernels.grading.sandbox), end to end: the notebooks of
tests/hostile.escapes, aimed at real targets on this machine, graded with a correct
grid-stride notebook; then what each attempt left behind, on the host. Also the refusal
to grade where the sandbox cannot run.

Two grading runs, at once. Every notebook but one ends by itself (each hog stops at
twice its limit), so the time limit of their run is only a backstop, far past what they
need however loaded the machine: what they prove (a limit was hit, an attempt failed)
does not hang on how fast they get there. The notebook that only the time limit ends
(detached-and-stuck) is graded in a run of its own with a short one.
"""

import concurrent.futures
import os
import pathlib
import re
import secrets
import socket
import subprocess
import sys

import pytest

import cores
import hostile
import kernels
import planted
from kernels.checks import registry
from test_grading import ROOT, grade

BACKSTOP_S = 300  # the time limit per notebook where every notebook ends by itself
# Where the time limit ends the notebook: the worker gets at least 30% of it, plus 5 s to
# start, to reach the notebook's third cell (about 3 s on a quiet machine), and the judge
# the rest to pass its SAXPY (30 s failed once on a GPU host running 14 test workers).
# This run goes beside the other one (about 40 s on 2 cores): a longer limit adds to it.
TIMEOUT_S = 45
ENDED_BY_THE_TIME_LIMIT = ("detached-and-stuck",)


def correct_gridstride():
    labels = [ex.label for ex in registry.by_chapter("gridstride")]
    return planted.notebook([planted.answer_cell("gridstride", planted.solution_source(
        "gridstride"), labels)], "gridstride")


def grade_and_read(paths, out, seconds, home):
    """Grade `paths` in the sandbox; rows, feedback, and every file written, read as soon
    as the grader had finished."""
    rows, feedback = grade(paths, out, "--jobs", "2", "--timeout", str(seconds),
                           *hostile.LIMITS, env={"HOME": str(home)})
    return rows, feedback, {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Grade the hostile notebooks with a correct one: what they aimed at, and what the
    grader wrote."""
    folder = tmp_path_factory.mktemp("sandbox")
    home = folder / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the instructor's")
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen()
    listener.setblocking(False)
    correct = planted.write(correct_gridstride(), folder / "correct.ipynb")
    marker = f"hostile{secrets.token_hex(4)}"
    runs = {"ends": BACKSTOP_S, "stuck": TIMEOUT_S}
    cases, paths = {}, {r: [] for r in runs}
    for r in runs:
        (folder / r / "in").mkdir(parents=True)
        targets = {"other": str(correct), "out": str(folder / r / "out"),
                   "secret": str(home / "secret.txt"),
                   "answers": str(ROOT / "kernels" / "solutions"),
                   "port": listener.getsockname()[1], "marker": marker}
        for name, case in hostile.escapes(targets).items():
            if (name in ENDED_BY_THE_TIME_LIMIT) == (r == "stuck"):
                cases[name] = case
                paths[r].append(planted.write(case[0], folder / r / "in" / f"{name}.ipynb"))
    paths["ends"].append(correct)
    with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
        graded = [pool.submit(grade_and_read, paths[r], folder / r / "out", seconds, home)
                  for r, seconds in runs.items()]
        rows, feedback, written = ({k: v for f in graded for k, v in f.result()[i].items()}
                                   for i in range(3))
    yield {"rows": rows, "feedback": feedback, "cases": cases, "marker": marker,
           "outs": [folder / r / "out" for r in runs], "written": written,
           "listener": listener}
    listener.close()


@pytest.mark.parametrize("name", list(hostile.escapes(dict.fromkeys(hostile.TARGETS, 0))))
def test_each_attempt_fails_and_the_feedback_notes_it(run, name):
    _, points, lines = run["cases"][name]
    assert run["rows"][name]["total"] == str(points), run["feedback"][name]
    for line in lines:
        assert line in run["feedback"][name], (line, run["feedback"][name])


def test_the_other_submission_is_graded_as_if_alone(run):
    row, text = run["rows"]["correct"], run["feedback"]["correct"]
    assert (row["total"], row["possible"]) == ("6", "6"), text
    assert "Notes on your notebook" not in text, text


def test_nothing_outside_the_sandbox_was_touched(run):
    with pytest.raises(BlockingIOError):  # no connection reached the grader's machine
        run["listener"].accept()
    assert not (pathlib.Path(sys.prefix) / "hostile.txt").exists()


def test_detached_processes_end_with_the_sandbox(run):
    """No process of the sandbox outlives it: the detached ones, which would wait for the
    gradebook and then forge it, are gone when grading ends (looked for first: one that
    ended since could only have ended by forging), and the out folders hold what the
    grader wrote."""
    names = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            names.append(pathlib.Path(f"/proc/{entry}/comm").read_text().strip())
        except OSError:
            continue
    assert run["marker"] not in names
    after = {p: p.read_bytes() for out in run["outs"] for p in out.rglob("*") if p.is_file()}
    assert after == run["written"]
    assert not any(hostile.FORGED.encode() in data for data in after.values())


def test_without_a_sandbox_the_grader_refuses_unless_told(tmp_path):
    """Where bwrap cannot run, grading stops before it starts and says why; the unsafe
    flag, or a service that isolates each submission, lets it go on."""
    path = tmp_path / "broken.ipynb"  # graded at once: no notebook to run
    path.write_text("{")
    missing = {"KERNELS_BWRAP": str(tmp_path / "no-bwrap")}
    env = dict(os.environ, **missing, NUMBA_ENABLE_CUDASIM="1" if kernels.SIMULATOR else "0")
    proc = subprocess.run([sys.executable, "-m", "kernels", "grade", str(path), "--out",
                           str(tmp_path / "out")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "the OS sandbox cannot run here" in proc.stderr
    assert "--unsafe-no-sandbox" in proc.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()
    for extra in (["--unsafe-no-sandbox"], []):
        service = {} if extra else {"KERNELS_ISOLATED_BY": "gradescope"}
        rows, feedback = grade([path], tmp_path / f"out{len(extra)}", *extra,
                               env={**missing, **service})
        assert "not valid JSON" in feedback["broken"]


@pytest.mark.parametrize("option, value, said", [
    ("--max-memory", "lots", "'lots' is not a size"),
    ("--max-disk", "0", "'0' is not a size"),
    ("--max-processes", "10", "--max-processes must be at least 64")])
def test_bad_limits_are_refused_with_what_is_accepted(tmp_path, option, value, said):
    proc = subprocess.run([sys.executable, "-m", "kernels", "grade", str(tmp_path), "--out",
                           str(tmp_path / "out"), option, value], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


# A block of 1,024 threads that all wait at a barrier: on the simulator, 1,024 OS threads
# live at once, as two of the atomics chapter's own cells launch
BLOCK_OF_1024 = '''\
import numpy as np
from numba import cuda


@cuda.jit
def count_in_block(out):
    seen = cuda.shared.array(1024, np.int32)
    seen[cuda.threadIdx.x] = 1
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        total = 0
        for i in range(1024):
            total += seen[i]
        out[0] = total


out = np.zeros(1, np.int32)
count_in_block[1, 1024](out)
assert out[0] == 1024, out
'''


def test_the_simulator_s_largest_block_runs_under_the_default_limits(tmp_path):
    """Two notebooks graded at once with the default limits (processes and threads,
    and each process's memory, its threads' stacks included) each run a block of 1,024
    threads: the notes say nothing went wrong."""
    names = ("one", "two")
    paths = [planted.write(planted.notebook([hostile.SAXPY, BLOCK_OF_1024], "gridstride"),
                           tmp_path / f"{name}.ipynb") for name in names]
    rows, feedback = grade(paths, tmp_path / "out", "--jobs", "2")
    for name in names:
        assert "Notes on your notebook" not in feedback[name], feedback[name]
        assert rows[name]["gridstride-ex-saxpy"] == "1", feedback[name]


def test_the_default_limit_on_processes_holds_the_simulator_s_live_threads():
    from kernels import simulator
    from kernels.grading import sandbox
    from kernels.trace import blocks

    live = blocks.COOPERATIVE_BLOCKS * simulator.DEVICE_LIMITS["MAX_THREADS_PER_BLOCK"]
    assert sandbox.SIMULATED_THREADS >= live
    assert sandbox.Limits().processes >= live + 256  # Python's, NumPy's, the grader's



@pytest.mark.skipif(len(cores.ALL) < 2, reason="needs two cores to choose from")
def test_the_answer_processes_and_the_notes_run_each_keep_to_one_core(tmp_path):
    """On the simulator each sandboxed process keeps to the core it started on
    (kernels.grading.confine.keep_to_this_core), the answers' and the run for notes'
    alike; on a GPU, where the kernels run on the device, they keep every core."""
    answer = ("import os\n\n\ndef mean_variance(x, blocks):\n"
              "    raise RuntimeError(f'answered on {sorted(os.sched_getaffinity(0))}')\n")
    notes = "import os\nraise RuntimeError(f'noted on {sorted(os.sched_getaffinity(0))}')\n"
    path = planted.write(planted.notebook([answer, notes], "reduction"), tmp_path / "on.ipynb")
    _, feedback = grade([path], tmp_path / "out", "--jobs", "1", "--timeout", "300")
    cores_seen = r" \[\d+\]" if kernels.SIMULATOR else r" \[\d+, \d+"
    for said in ("answered on", "noted on"):
        assert re.search(said + cores_seen, feedback["on"]), feedback["on"]
