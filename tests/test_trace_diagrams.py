"""kernels.trace.diagrams: the text pictures of races that checkers' reports and the
grader's feedback show, for planted racy answers and for races in large arrays."""

import re

import numpy as np
import pytest
from numba import cuda

import kernels
import planted
from kernels import trace
from kernels.trace import diagrams
from kernels.trace import hazards
from kernels.trace.model import index_text

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="traces on the simulator")
CELL = re.compile(r"\[[RWA]+\]")  # a racing access's cell
QUEUED = re.compile(r"\[(in|K|out)\]")  # a racing stream operation


def assert_drawn(picture, t, race):
    """The picture of a launch's race: within WIDTH; the element in its caption; both
    threads named; each one's racing access bracketed, with its kind, in the column
    headed by the element's last index."""
    lines = picture.splitlines()
    assert max(map(len, lines)) <= diagrams.WIDTH, picture
    assert lines[0].startswith(f"{race.array}[{index_text(race.index)}]: "), picture
    launch = t.launches[race.launch]
    names = [diagrams._who(a, launch) for a in (race.first, race.second)]
    starts = [next(i for i, line in enumerate(lines) if line.startswith(name))
              for name in names]
    marked = [(i, m) for i, line in enumerate(lines) for m in CELL.finditer(line)]
    assert len(marked) == 2, picture
    (i0, first), (i1, second) = marked
    assert starts[0] <= i0 < starts[1] <= i1, picture  # one in each thread's rows
    assert diagrams.LETTER[race.first.kind] in first[0], picture
    assert diagrams.LETTER[race.second.kind] in second[0], picture
    assert first.span() == second.span(), picture  # one column
    header = lines[starts[0] - 1]
    middle = (first.start() + first.end() - 1) // 2
    above = [m[0] for m in re.finditer(r"\S+", header) if m.start() <= middle < m.end()]
    assert above == [str(race.index[-1])], picture
    assert f"missing: {race.missing}" in _joined(picture), picture


def _joined(picture):
    """The picture's lines as one, wrapped lines unwrapped."""
    return " ".join(line.strip() for line in picture.splitlines())


def _header(picture):
    """The line of column numbers: the one above the first thread's."""
    lines = picture.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("block")) - 1]


def assert_streams_drawn(picture, race):
    """The picture of a race between streams: within WIDTH; both operations named with
    their streams, the bytes where they clash marked, each racing operation bracketed in
    its stream's queue."""
    lines = picture.splitlines()
    assert max(map(len, lines)) <= diagrams.WIDTH, picture
    assert "(kernel argument " in lines[0], picture  # the buffer, by its kernel's name
    for op in (race.first, race.second):
        assert f"{diagrams._where(op)}: {op.what[:12]}" in picture, picture
    assert any(set(line.strip()) == {"^"} for line in lines), picture
    queued = [(line.split()[0:2], m[1]) for line in lines for m in QUEUED.finditer(line)]
    assert queued == [(["stream", str(op.stream)], diagrams._short(op))
                      for op in (race.first, race.second)], picture


# The planted racy answers: a histogram without atomics (shared memory), a block
# barrier where a grid barrier is needed (2D, global), an atomic beside a plain read
# across blocks, bins updated without their lock, a missing barrier in a 2D shared
# tile, and streams: a copy against a kernel, and chunks sharing one set of buffers.
PLANTED = ("atomics-ex-256", "cooperative-ex-rotate", "cooperative-ex-normalize",
           "mutex-ex-bins", "matmul-ex-transpose", "streams-ex-one-stream",
           "streams-ex-chunked")


@pytest.fixture(scope="module")
def planted_races():
    """{label: (the race case's report, [(trace, race, picture) it drew])}, each
    planted racy answer checked as a student's would be."""
    from kernels import checks, notebook_cells
    from kernels.checks import registry

    namespace = {"__name__": "__main__"}
    notebook = planted.buggy_notebook({label: planted.RACES[label] for label in PLANTED})
    notebook_cells.run(notebook["cells"], namespace, strict=True)
    drawn, found = [], {}
    original = diagrams.text

    def text(t, race):
        picture = original(t, race)
        drawn.append((t, race, picture))
        return picture

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(diagrams, "text", text)
        for label in PLANTED:
            exercise = registry.EXERCISES[label]
            drawn.clear()
            report = getattr(checks, exercise.check_name)(namespace[exercise.names[0]])
            found[label] = (report, list(drawn))
    return found


@pytest.mark.parametrize("label", PLANTED)
def test_a_planted_race_is_drawn_after_its_explanation(planted_races, label):
    report, drawn = planted_races[label]
    assert len(drawn) == 1, label  # one picture: the first race the explanation names
    t, race, picture = drawn[0]
    if isinstance(race, hazards.StreamRace):
        assert_streams_drawn(picture, race)
    else:
        assert_drawn(picture, t, race)
    case = report.cases[0]
    explanation, *rest = case.detail.split("\n")
    assert explanation.startswith("the tracer ran your code") and race.describe() in explanation
    assert rest == [" " * 8 + line for line in picture.splitlines()]
    printed = str(report).splitlines()  # as the notebook and the feedback show it
    assert printed[-len(rest):] == rest and all(len(line) <= 80 for line in rest)


@cuda.jit
def far_race_kernel(x):
    i = cuda.grid(1)
    x[x.size // 2 + i] = i  # each thread its own element...
    if i == 5:
        x[x.size // 2] = -1  # ...but thread 5 also writes thread 0's


@cuda.jit
def far_race_2d_kernel(m):
    i = cuda.grid(1)
    rows, cols = m.shape
    m[rows // 2, cols // 2 + i] = m[rows // 2 - 1, cols // 2 + i]
    if i == 5:
        m[rows // 2, cols // 2] = 0.0


def test_a_race_in_a_large_array_shows_a_window_around_it():
    n = 100_003
    t = trace.launch(far_race_kernel, (2, 4), np.zeros(n, np.float32))
    race, = trace.races(t)
    assert race.index == (n // 2,)
    picture = diagrams.text(t, race)
    assert_drawn(picture, t, race)
    header = _header(picture).split()
    assert header[0] == header[-1] == "…"  # the array goes on at both ends
    shown = [int(j) for j in header[1:-1]]
    assert shown == list(range(shown[0], shown[-1] + 1)) and n // 2 in shown
    assert 5 <= len(shown) <= diagrams.MOST_COLUMNS
    assert f"elements {shown[0]}-{shown[-1]} shown" in _joined(picture)
    assert len(picture.splitlines()) < 12


def test_a_race_in_a_large_2d_array_shows_the_rows_and_columns_around_it():
    m = np.arange(301 * 999, dtype=np.float32).reshape(301, 999)  # 0.0 is written apart
    t = trace.launch(far_race_2d_kernel, (2, 4), m)
    race, = trace.races(t)
    assert race.index == (150, 499)
    picture = diagrams.text(t, race)
    assert_drawn(picture, t, race)
    header = _header(picture).split()
    assert header[0] == header[-1] == "…" and "499" in header
    assert (f"m is 301 × 999 in global memory; rows 149-151, columns {header[1]}-"
            f"{header[-2]} shown") in _joined(picture)
    rows = [line.split("row ")[1].split()[0] for line in picture.splitlines()
            if "row " in line]
    assert rows == ["149", "150", "151"] * 2


def test_the_instructors_page_shows_a_picture_the_tracer_draws():
    """The example on the instructors' page is what the tracer draws today."""
    from kernels import cooperative

    m = np.zeros((4, 40), np.int32)
    t = trace.run(cooperative.rows_syncthreads, m, blocks=3, threads=16)
    picture = diagrams.text(t, trace.races(t)[0])
    page = (planted.ROOT / "book" / "instructors.md").read_text()
    assert f"```text\n{picture}\n```" in page
