import re

import numpy as np
import pytest
from numba import cuda

from kernels import gridstride as g
from kernels.harness import check
from ptx import assert_compiles

PTX_SIGNATURES = {
    "vector_add_one_per_element_kernel": ["void(float32[::1], float32[::1], float32[::1])",
                                          "void(int64[::1], int64[::1], int64[::1])"],
    "vector_add_gridstride_kernel": ["void(float32[::1], float32[::1], float32[::1])",
                                     "void(int64[::1], int64[::1], int64[::1])"],
    "matrix_add_gridstride_2d_kernel": ["void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"],
}

SIZES = (1, 17, 1001)  # none divides the block size


def poisoned(n, dtype):
    return np.full(n, -7, dtype=dtype)


@pytest.mark.parametrize("version", sorted(g.VERSIONS))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_vector_add_matches_numpy(version, n, dtype, rng):
    a = (rng.random(n) * 100).astype(dtype)
    b = (rng.random(n) * 100).astype(dtype)
    out = poisoned(n, dtype)
    check(g.VERSIONS[version](a, b, out, threads=32), g.vector_add_reference(a, b))


@pytest.mark.parametrize("blocks,threads", [(1, 1), (1, 32), (3, 7), (64, 64)])
def test_gridstride_any_launch_covers_any_size(blocks, threads, rng):
    a, b = rng.random(1001).astype(np.float32), rng.random(1001).astype(np.float32)
    out = poisoned(1001, np.float32)
    check(g.vector_add_gridstride(a, b, out, blocks=blocks, threads=threads), a + b)


def test_device_arrays_stay_on_device(rng):
    a, b = rng.random(257).astype(np.float32), rng.random(257).astype(np.float32)
    out = g.vector_add_gridstride(cuda.to_device(a), cuda.to_device(b))
    assert hasattr(out, "copy_to_host")
    check(out, a + b)


@pytest.mark.parametrize("shape", [(1, 1), (17, 33), (37, 45)])
@pytest.mark.parametrize("blocks", [(1, 1), (2, 3), None])
def test_matrix_add_2d(shape, blocks, rng):
    a, b = rng.random(shape), rng.random(shape)
    out = np.full(shape, np.nan)
    check(g.matrix_add_gridstride_2d(a, b, out, blocks=blocks, threads=(8, 4)),
          g.matrix_add_reference(a, b))


def test_one_per_element_covers_only_its_grid(rng):
    """The kernel itself does one element per thread: a grid that is too small
    leaves the tail untouched. This is why the host function computes the grid."""
    a, b = rng.random(100).astype(np.float32), rng.random(100).astype(np.float32)
    out = poisoned(100, np.float32)
    g.vector_add_one_per_element_kernel[2, 32](a, b, out)
    check(out[:64], (a + b)[:64])
    assert (out[64:] == -7).all()


BAD_CALLS = {
    "wrong dtype": (lambda a, b: g.vector_add_gridstride(a, b.astype(np.float64)), TypeError,
                    "dtype float64"),
    "unsupported dtype": (lambda a, b: g.vector_add_gridstride(a.astype(np.float16),
                                                               b.astype(np.float16)),
                          TypeError, "accepted"),
    "wrong ndim": (lambda a, b: g.vector_add_gridstride(a.reshape(3, 7), b.reshape(3, 7)),
                   ValueError, "1-D"),
    "mismatched shapes": (lambda a, b: g.vector_add_gridstride(a, b[:20]), ValueError,
                          "shapes must match"),
    "non-contiguous": (lambda a, b: g.vector_add_gridstride(a[::2], b[::2]), ValueError,
                       "C-contiguous"),
    "zero blocks": (lambda a, b: g.vector_add_gridstride(a, b, blocks=0), ValueError,
                    "blocks must be at least 1"),
    "negative threads": (lambda a, b: g.vector_add_one_per_element(a, b, threads=-4),
                         ValueError, "threads must be at least 1"),
    "too many threads": (lambda a, b: g.vector_add_gridstride(a, b, threads=2048),
                         ValueError, "at most 1024"),
    "float blocks": (lambda a, b: g.vector_add_gridstride(a, b, blocks=2.5), TypeError,
                     "must be an int"),
    "empty": (lambda a, b: g.vector_add_gridstride(a[:0], b[:0]), ValueError, "empty"),
    "bad out shape": (lambda a, b: g.vector_add_gridstride(a, b, np.empty(5, np.float32)),
                      ValueError, "out has shape"),
    "host and device": (lambda a, b: g.vector_add_gridstride(cuda.to_device(a), b),
                        ValueError, "on the host or all on the device"),
    "not an array": (lambda a, b: g.vector_add_gridstride(list(a), b), TypeError,
                     "NumPy array"),
    "2d wrong ndim": (lambda a, b: g.matrix_add_gridstride_2d(a, b), ValueError, "2-D"),
    "2d bad threads": (lambda a, b: g.matrix_add_gridstride_2d(a.reshape(3, 7), b.reshape(3, 7),
                                                               threads=64), TypeError,
                       "(x, y) tuple"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    a, b = rng.random(21).astype(np.float32), rng.random(21).astype(np.float32)
    with pytest.raises(error, match=re.escape(words)):
        call(a, b)


def test_compiles_to_ptx():
    assert_compiles("gridstride")


@pytest.mark.gpu
def test_full_size_on_gpu():
    from kernels import size
    n = size("vector_add")
    rng = np.random.default_rng(3)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    for fn in g.VERSIONS.values():
        check(fn(cuda.to_device(a), cuda.to_device(b)), a + b)


# ---------------------------------------------------------------- exercises

from kernels import checks  # noqa: E402
from answers import solution  # noqa: E402

solutions = solution("gridstride")


@cuda.jit
def saxpy_one_per_element(a, x, y, out):
    # planted bug: no loop, so a grid smaller than the array leaves a tail
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def clip_2d_first_row_only(x, lo, hi, out):
    col0, _ = cuda.grid(2)
    for col in range(col0, x.shape[1], cuda.gridsize(2)[0]):
        out[0, col] = min(max(x[0, col], lo), hi)


@cuda.jit
def reverse_twice(x):
    n = x.size
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        j = n - 1 - i
        x[i], x[j] = x[j], x[i]


@pytest.mark.parametrize("checker,planted", [
    (checks.saxpy, saxpy_one_per_element),
    (checks.clip_2d, clip_2d_first_row_only),
    (checks.reverse_inplace, reverse_twice),
])
def test_checker_fails_planted_bug(checker, planted):
    # that each solution passes its checker: tests/test_grading.py (every exercise)
    bad = checker(planted)
    assert not bad.passed
    # a wrong result is shown against the reference; a race (which ends the check on
    # the simulator) is named by the tracer, and so is work not shared over the grid
    # (the first row only: each element written by every row of threads)
    assert "FAIL" in str(bad)
    assert ("expected" in str(bad) or "the tracer ran your code" in str(bad)
            or "does what the exercise asks" in str(bad))


def test_checker_reports_exceptions_in_plain_words():
    @cuda.jit
    def wrong_signature(x):
        pass

    report = checks.saxpy(wrong_signature)
    assert not report.passed and "your code raised" in str(report)


def test_every_grading_run_traces_several_blocks_on_every_axis(monkeypatch):
    """Whatever a grading run's secret draws, the traced launch has two or more blocks on
    each axis and two or more grid-stride rounds on each: a stride of one block's size
    (on any one axis), or a race between rounds, shows in every run, not in most."""
    from kernels.checks import core, gridstride

    for secret in range(300):
        monkeypatch.setattr(core, "SECRET", secret)
        (blocks, threads), n = gridstride._traced_launch(core.rng(1))
        assert blocks >= 2 and n >= 2 * blocks * threads, (secret, blocks, threads, n)
        (blocks, threads), shape = gridstride._traced_launch_2d(core.rng(1))
        assert min(blocks) >= 2, (secret, blocks)
        assert all(s >= 2 * b * t for s in shape for b, t in zip(blocks, threads)), (
            secret, blocks, threads, shape)


@cuda.jit
def _clip_columns_by_y_stride(x, lo, hi, out):
    col0, row0 = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    rows, cols = x.shape
    for r in range(row0, rows, sy):
        for c in range(col0, cols, sy):  # WRONG on purpose: the column stride is y's
            out[r, c] = min(max(x[r, c], lo), hi)


def test_clip_launches_are_drawn_wide_and_tall(monkeypatch):
    """Each grading run draws its own 2-D launches, one with more threads along x than
    along y and one the other way: a kernel that strides one axis by the other's
    gridsize misses elements in one of them."""
    from kernels.checks import core, gridstride

    seen = set()
    for secret in range(100):
        monkeypatch.setattr(core, "SECRET", secret)
        single, wide, tall = gridstride.launches_2d(core.rng(7))
        assert single == ((1, 1), (1, 1))
        (bx, by), (tx, ty) = wide
        assert bx * tx > by * ty and tall == ((by, bx), (ty, tx))
        seen.add(wide)
    assert len(seen) > 10  # drawn, not fixed


def test_clip_catches_a_column_loop_strided_by_the_rows_gridsize(monkeypatch):
    from kernels.checks import races

    monkeypatch.setattr(races, "kernel", lambda *args, **kwargs: None)  # values alone
    report = checks.clip_2d(_clip_columns_by_y_stride)
    assert not report.passed and "differ" in str(report)
