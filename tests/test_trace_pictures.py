"""kernels.trace pictures, and the traced figures every chapter draws."""

import pathlib

import matplotlib
import numpy as np
import pytest
from matplotlib.patches import PathPatch

import kernels
from kernels import atomics, gridstride, plots, reduction, trace
from kernels.trace import figures, pictures
from kernels.trace import hazards

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

pytestmark = pytest.mark.skipif(not kernels.SIMULATOR, reason="records on the simulator")
BOOK = pathlib.Path(__file__).resolve().parent.parent / "book"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _content(fig):
    """Patches, collections, lines and texts drawn on the figure's axes."""
    return sum(len(ax.patches) + len(ax.collections) + len(ax.lines) + len(ax.texts)
               for ax in fig.axes)


def test_coverage_picture_colours_by_block_and_greys_missed_elements(rng):
    a = rng.random(12, dtype=np.float32)
    t = trace.launch(gridstride.vector_add_one_per_element_kernel, (2, 4), a, a,
                     np.zeros(12, np.float32))
    fig = pictures.coverage_figure([trace.coverage(t, "out")], ["title"])
    ax = fig.axes[0]
    faces = [tuple(p.get_facecolor()) for p in ax.patches]
    assert len(faces) == 12
    assert len(set(faces[:4])) == 1 and faces[0] != faces[4]  # block 0, block 1
    assert len(set(faces[8:])) == 1 and faces[8] not in faces[:8]  # never written
    assert [t.get_text() for t in ax.texts][:9] == ["0", "1", "2", "3", "4", "5", "6", "7",
                                                     "–"]


def test_coverage_picture_labels_runs_of_threads_where_cells_are_narrow(rng):
    """40 cells leave no room for two digits: one upright label per block's run."""
    a = rng.random(40, dtype=np.float32)
    t = trace.launch(gridstride.vector_add_one_per_element_kernel, (2, 20), a, a,
                     np.zeros(40, np.float32))
    ax = pictures.coverage_figure([trace.coverage(t, "out")], ["title"]).axes[0]
    assert [t.get_text() for t in ax.texts] == ["0–19", "20–39"]
    assert all(t.get_rotation() == 0 for t in ax.texts)


def test_timeline_joins_every_racing_pair_of_threads():
    t = trace.run(atomics.increment_racy, np.zeros(1, np.int64))
    fig = pictures.timeline_figure([(t, "counts", 0)], threads=4)
    ax = fig.axes[0]
    arcs = [c for c in ax.patches if isinstance(c, PathPatch)]
    assert len(arcs) == 6  # every pair of the 4 threads reads and writes unordered
    assert plots.escaping_marks(fig) == []
    assert "race: every one of the 6 pairs of these 4 threads" in ax.get_title(loc="left")
    assert len(ax.get_yticklabels()) == 4
    # no barrier in this kernel: no epoch marks, and the key does not explain them
    assert not [c for c in ax.texts if c.get_text().startswith("e")]
    assert "barriers" not in ax.get_xlabel()


def test_timeline_marks_epochs_where_the_kernel_has_barriers(rng):
    x = rng.integers(-100, 100, 45).astype(np.int32)
    t = trace.run(reduction.sum_shared_tree, x, blocks=1)
    fig = pictures.timeline_figure([(t, "partials", 1, "sum_shared_tree_kernel")])
    ax = fig.axes[0]
    assert {c.get_text() for c in ax.texts} >= {"e0", "e1"}
    assert "no race" in ax.get_title(loc="left") and "barriers" in ax.get_xlabel()
    assert not [c for c in ax.patches if isinstance(c, PathPatch)]


def test_a_race_arc_across_the_whole_timeline_stays_in_its_panel():
    """The reduction chapter's race joined the first access to the last: bowed with
    the distance between its ends, the arc left its panel through the next one's
    title. Its bow is at most 0.3 of a row, inside the half row around the rows."""
    fig, (top, bottom) = plots.figure(3, 2, 1)
    for ax in (top, bottom):
        ax.set_xlim(-0.7, 15 - 0.3)
        ax.set_ylim(1.5, -0.5)  # two threads' rows, as _timeline_panel sets them
    pictures._arc(top, (0, 1), (14, 0))
    pictures._arc(top, (14, 1), (0, 0))
    pictures._arc(top, (3, 0), (4, 1))
    assert plots.escaping_marks(fig) == []
    for arc in top.patches:  # the arcs' ends are the accesses they join
        ends = arc.get_path().vertices[[0, -1]]
        assert {tuple(ends[0]), tuple(ends[1])} in ({(0, 1), (14, 0)}, {(14, 1), (0, 0)},
                                                   {(3, 0), (4, 1)})


def test_racing_pairs_one_per_pair_of_threads():
    t = trace.run(atomics.increment_racy, np.zeros(1, np.int64))
    accesses = t.launch().of("counts")
    pairs = pictures.racing_pairs(accesses)
    threads = {(a.block, a.thread) for a in accesses}
    assert len(pairs) == len(threads) * (len(threads) - 1) // 2
    assert all(a.seq < b.seq and hazards.conflict(a, b) for a, b in pairs)
    atomic = trace.run(atomics.increment_atomic, np.zeros(1, np.int64))
    assert pictures.racing_pairs(atomic.launch().of("counts")) == []


def test_sector_panels_each_span_the_bytes_their_access_touches(rng):
    a = rng.random((32, 32), dtype=np.float32)
    counts = [trace.sectors(trace.run(gridstride.matrix_add_gridstride_2d, a, a,
                                      blocks=(1, 1), threads=shape), "a")
              for shape in ((32, 1), (1, 32))]
    fig = pictures.sectors_figure(counts)
    row, column = (ax.get_xlim() for ax in fig.axes)
    assert row[0] < 0 and 128 < row[1] < 140  # 4 sectors, not a speck on 4,000 bytes
    assert column[1] > 3968


def test_every_traced_figure_is_drawn_for_the_column():
    t = trace.run(atomics.increment_racy, np.zeros(1, np.int64))
    fig = pictures.timeline_figure([(t, "counts", 0)], threads=3)
    assert isinstance(fig, plots.CourseFigure) and fig.get_figwidth() == plots.WIDTH_IN
    assert plots.smallest_text_pt(fig) >= plots.MIN_PT
    with pytest.raises(ValueError, match="no thread of increment_racy_kernel touched"):
        pictures.timeline_figure([(t, "counts", 5)])


# What the chapters' prose says about their traced figures, panel by panel.
SAID = {
    "gridstride_coverage": ["12 elements of out were never written",
                            "every element of out was written by exactly one thread"],
    "gridstride_sectors": ["touches 4 sectors", "touches 32 sectors"],
    "atomics_race": ["race:", "no race"],
    "reduction_tree": ["race:", "no race"],
    "mutex_queue": ["no race on counter"],
    "streams_race": ["pairs of operations on different streams use the same device memory",
                     "no two operations that use the same device memory are left unordered"],
    "cooperative_rows": ["are read by a thread of another block", "0 races"],
    "matmul_banks": ["rows of 132: 1 word per bank", "rows of 128: 8 words per bank"],
}


@pytest.mark.parametrize("chapter", sorted(figures.CHAPTERS))
def test_each_chapter_draws_its_traced_figures(chapter):
    text = (BOOK / f"{chapter}.md").read_text()
    for make in figures.CHAPTERS[chapter]:
        assert f"traced.{make.__name__}()" in text, f"{chapter}.md does not draw {make.__name__}"
        fig = make()
        assert fig.axes and _content(fig) >= 10, f"{make.__name__} drew (almost) nothing"
        titles = [" ".join(ax.get_title(loc="left").split()) for ax in fig.axes
                  if ax.get_title(loc="left")]
        assert titles, f"{make.__name__} has no titles"
        for title, said in zip(titles, SAID.get(make.__name__, [])):
            assert said in title, f"{make.__name__}: {said!r} not in {title!r}"


def test_locks_picture_needs_a_lock():
    t = trace.run(atomics.increment_atomic, np.zeros(1, np.int64))
    with pytest.raises(ValueError, match=r"increment_atomic_kernel took no lock"):
        pictures.locks_figure(t, "counts")
