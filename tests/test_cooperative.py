import math
import pathlib
import re

import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR, checks, size
from kernels import cooperative as c
from kernels.checks import core
from kernels.harness import MismatchError, check
from answers import solution
import planted
from ptx import assert_compiles, without_simulator

HERE = pathlib.Path(__file__).resolve().parent
solutions = solution("cooperative")  # as a student hands it in: its launches count

PTX_SIGNATURES = {
    "rows_syncthreads_kernel": ["void(int32[:, ::1])"],
    "rows_grid_sync_kernel": ["void(int32[:, ::1])", "void(int64[:, ::1])"],
    "jacobi_step_kernel": ["void(float32[::1], float32[::1])"],
    "jacobi_grid_sync_kernel": ["void(float32[::1], float32[::1], float32[::1], int64)",
                                "void(float64[::1], float64[::1], float64[::1], int64)"],
}

ROW_SHAPES = ((1, 1), (5, 1), (9, 45), (4, 70))  # 45 and 70 do not divide 32 threads
JACOBI_SIZES = (1, 2, 3, 17, 1001)


def row_input(shape, dtype, rng):
    m = np.full(shape, -7, dtype=dtype)  # rows 1.. poisoned: each must be written
    m[0] = rng.integers(0, 1000, shape[1])
    return m


def one_grid(blocks):
    """The simulator runs a cooperative grid of one block; a GPU any that fits."""
    return 1 if SIMULATOR else blocks


# ------------------------------------------------------------ the row example


@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_rows_grid_sync_matches_reference(shape, dtype, rng):
    m = row_input(shape, dtype, rng)
    expected = c.rows_reference(m)
    check(c.rows_grid_sync(m, blocks=one_grid(3), threads=32), expected)


def test_rows_reference_reads_the_opposite_element():
    m = np.array([[1, 2, 3], [0, 0, 0], [0, 0, 0]], np.int32)
    assert c.rows_reference(m).tolist() == [[1, 2, 3], [4, 3, 2], [3, 4, 5]]


def test_rows_default_grid_fits_the_cooperative_limit(rng):
    m = row_input((6, 45), np.int32, rng)
    limit = c.max_cooperative_blocks(c.rows_grid_sync_kernel, (m,), 32)
    assert limit == 1 if SIMULATOR else limit >= 2
    check(c.rows_grid_sync(m, threads=32), c.rows_reference(m))


def test_rows_syncthreads_is_right_in_one_block(rng):
    m = row_input((9, 45), np.int32, rng)
    check(c.rows_syncthreads(m, blocks=1, threads=64), c.rows_reference(m))


@pytest.mark.skipif(not SIMULATOR, reason="on a GPU the wrong result varies from run to "
                                          "run; the benchmark records it")
def test_rows_syncthreads_is_wrong_across_blocks(rng):
    """The simulator runs block 0 to the end before block 1 starts, so block 0 reads
    rows that block 1 has not written: the bug shows every time."""
    m = row_input((9, 45), np.int32, rng)
    with pytest.raises(MismatchError, match="values differ"):
        check(c.rows_syncthreads(m, blocks=2, threads=32), c.rows_reference(m))


def test_too_large_cooperative_grid_is_refused_naming_the_limit(rng):
    m = row_input((3, 45), np.int32, rng)
    limit = c.max_cooperative_blocks(c.rows_grid_sync_kernel, (m,), 32)
    with pytest.raises(ValueError) as err:
        c.rows_grid_sync(m, blocks=limit + 1, threads=32)
    message = str(err.value)
    assert f"blocks={limit + 1} is too many" in message
    assert f"at most {limit} block" in message and f"blocks <= {limit}" in message
    assert "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" in message
    assert (m[1:] == -7).all()  # refused before launching: nothing written


# -------------------------------------------------------------------- Jacobi


@pytest.mark.parametrize("version", sorted(c.VERSIONS))
@pytest.mark.parametrize("n", JACOBI_SIZES)
@pytest.mark.parametrize("steps", [1, 2, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jacobi_matches_reference_exactly(version, n, steps, dtype, rng):
    u = rng.random(n).astype(dtype)
    out = np.full(n, np.nan, dtype=dtype)
    got = c.VERSIONS[version](u, steps, out, blocks=one_grid(3), threads=32)
    # a mean of two neighbours rounds the same way on the GPU and in NumPy
    check(got, c.jacobi_reference(u, steps), rtol=0, atol=0)


def test_jacobi_reference_converges_to_a_straight_line():
    u = np.zeros(9)
    u[-1] = 8.0
    assert np.allclose(c.jacobi_reference(u, 2000), np.arange(9.0))


@pytest.mark.parametrize("version", sorted(c.VERSIONS))
def test_jacobi_device_arrays_stay_on_device(version, rng):
    u = rng.random(257).astype(np.float32)
    out = c.VERSIONS[version](cuda.to_device(u), 4, scratch=cuda.device_array(257, np.float32),
                              blocks=one_grid(2), threads=64)
    assert hasattr(out, "copy_to_host")
    check(out, c.jacobi_reference(u, 4), rtol=0, atol=0)


def test_jacobi_input_is_left_unchanged(rng):
    u = rng.random(100)
    before = u.copy()
    c.jacobi_grid_sync(u, 3, threads=32)
    assert (u == before).all()


BAD_CALLS = {
    "int dtype": (lambda u: c.jacobi_grid_sync(u.astype(np.int32), 2), TypeError, "accepted"),
    "2-D": (lambda u: c.jacobi_launch_per_step(u.reshape(3, 7), 2), ValueError, "1-D"),
    "empty": (lambda u: c.jacobi_grid_sync(u[:0], 2), ValueError, "empty"),
    "zero steps": (lambda u: c.jacobi_grid_sync(u, 0), ValueError, "steps must be at least 1"),
    "float steps": (lambda u: c.jacobi_launch_per_step(u, 2.5), TypeError,
                    "steps must be an int"),
    "bool steps": (lambda u: c.jacobi_grid_sync(u, True), TypeError, "steps must be an int"),
    "bad out": (lambda u: c.jacobi_grid_sync(u, 2, np.empty(5, np.float32)), ValueError,
                "out has shape"),
    "bad scratch": (lambda u: c.jacobi_grid_sync(u, 2, scratch=np.empty(21)), TypeError,
                    "scratch has dtype float64"),
    "too many threads": (lambda u: c.jacobi_grid_sync(u, 2, threads=2048), ValueError,
                         "at most 1024"),
    "zero blocks": (lambda u: c.jacobi_grid_sync(u, 2, blocks=0), ValueError,
                    "blocks must be at least 1"),
    "grid too large": (lambda u: c.jacobi_grid_sync(u, 2, blocks=10**6), ValueError,
                       "too many for a cooperative launch"),
    "rows float": (lambda u: c.rows_grid_sync(u.reshape(3, 7)), TypeError, "accepted"),
    "rows 1-D": (lambda u: c.rows_grid_sync(u.astype(np.int32)), ValueError, "2-D"),
    "rows strided": (lambda u: c.rows_grid_sync(np.zeros((4, 8), np.int32)[:, ::2]),
                     ValueError, "C-contiguous"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    with pytest.raises(error, match=re.escape(words)):
        call(rng.random(21).astype(np.float32))


def test_compiles_to_ptx():
    assert_compiles("cooperative")


def test_jacobi_on_float32_computes_in_float32():
    """cooperative.md advises float32. A bare `* 0.5` is a float64 constant: Numba widens
    the sum to double and multiplies in double (fpext, fmul double in the LLVM IR it hands
    NVVM), which NVVM happens to narrow back (halving is exact). Neither Jacobi kernel,
    typed for float32, has a double in Numba's IR or a float64 in its PTX."""
    # compile_ptx stands in for the device that cuda.cg.this_grid asks for
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import compile_ptx as p\n"
            "from numba.cuda.compiler import _compile_pyfunc_with_fixup as compile\n"
            "from kernels import cooperative as c\n"
            "for name, sig in (('jacobi_step_kernel', 'void(float32[::1], float32[::1])'),\n"
            "                  ('jacobi_grid_sync_kernel',\n"
            "                   'void(float32[::1], float32[::1], float32[::1], int64)')):\n"
            "    kernel = getattr(c, name)\n"
            "    lib, _ = compile(kernel.py_func, sig, device=False, cc=(7, 5), abi='numba')\n"
            "    ir = lib.get_llvm_str()\n"
            "    print(name, 'fmul float' in ir, 'fpext float' in ir or 'fmul double' in ir)\n"
            "    for cc, ptx in p.compile_ptxes(kernel, sig, False).items():\n"
            "        print(name, 'mul.f32' in ptx, 'f64' in ptx)\n")
    out = without_simulator(code)
    assert out.split() == 3 * ["jacobi_step_kernel", "True", "False"] + \
        3 * ["jacobi_grid_sync_kernel", "True", "False"], out


# ------------------------------------------------------------------ checkers
# that each solution passes its checker: tests/test_grading.py (every exercise)


@cuda.jit
def _rotate_one_thread_per_column(m):
    grid = cuda.cg.this_grid()
    col = cuda.grid(1)
    rows, cols = m.shape
    for row in range(1, rows):
        if col < cols:  # no grid-stride loop: columns past the grid are never written
            m[row, col] = m[row - 1, (col + 1) % cols]
        grid.sync()


def test_rotate_rows_catches_a_grid_that_misses_columns():
    report = checks.rotate_rows(_rotate_one_thread_per_column)
    assert not report.passed and "differ" in str(report)


@cuda.jit
def _normalize_by_own_max(x, out, peak):
    start, stride = cuda.grid(1), cuda.gridsize(1)
    largest = peak[0]
    for i in range(start, x.size, stride):
        largest = max(largest, x[i])
    for i in range(start, x.size, stride):
        out[i] = x[i] / largest  # this thread's maximum, not the array's


def test_normalize_by_max_catches_a_local_maximum():
    report = checks.normalize_by_max(_normalize_by_own_max)
    assert not report.passed


def _one_sweep_too_many(u, tol, max_steps):
    result, sweeps = solutions.jacobi_until_converged(u, tol, max_steps)
    return result, sweeps + 1  # right values, one sweep more than it did


def test_jacobi_until_converged_catches_a_wrong_number_of_sweeps_with_right_values():
    report = checks.jacobi_until_converged(_one_sweep_too_many)
    failed = [case for case in report.cases if not case.passed]
    assert not report.passed and failed
    assert re.search(r"the number of sweeps: got (\d+), expected (\d+)", failed[0].detail), \
        failed[0].detail


def _numpy_values_kernel_count(u, tol, max_steps):
    """A cheat: the values from NumPy, the sweep count from the course's kernel run on
    the side (a count the grader's skipped kernels would leave at 0 is made right)."""
    result, sweeps = solutions.jacobi_until_converged(u, tol, max_steps)
    values, count = _jacobi_on_the_host(u, tol, max_steps)
    return values, (sweeps if sweeps else count)


def _host_only(name):
    """The answer `name` of planted.HOST_ONLY (computed with NumPy, no kernel)."""
    namespace = {"__name__": __name__}
    exec(planted.HOST_ONLY, namespace)
    return namespace[name]


_jacobi_on_the_host = _host_only("jacobi_until_converged")


def test_jacobi_until_converged_fails_values_from_the_host_beside_a_kernel_s_count():
    report = checks.jacobi_until_converged(_numpy_values_kernel_count)
    assert not report.passed
    assert any(not c.passed and "kernels" in c.description for c in report.cases), report


CALLS = []


def _counted(u, tol, max_steps):  # at the top level: on a GPU the tracer's process rebuilds it
    CALLS.append((u.size, tol, max_steps))
    return solutions.jacobi_until_converged(u, tol, max_steps)


def test_jacobi_until_converged_compares_values_and_sweeps_in_one_call():
    CALLS.clear()
    report = checks.jacobi_until_converged(_counted)
    assert report.passed, str(report)
    settings = [c for c in report.cases if c.description.startswith("n=")]
    # one call per setting and run (five runs each on a GPU), and the unlaunched and
    # swapped cases' (the race case's call is traced in another process on a GPU)
    assert len(CALLS) <= core.REPEATS * len(settings) + 4, CALLS


def _one_point_more(u, tol, max_steps):
    result, sweeps = solutions.jacobi_until_converged(u, tol, max_steps)
    return np.append(result, 0.0), sweeps


def test_jacobi_until_converged_says_a_wrong_shape_as_one():
    report = checks.jacobi_until_converged(_one_point_more)
    detail = next(c.detail for c in report.cases if not c.passed)
    assert not report.passed and "your result: shape (2,), expected (1,)" in detail, detail


# ---------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_rows_full_size_on_gpu():
    rows, cols = size("cooperative_rows")
    m = row_input((rows, cols), np.int32, np.random.default_rng(8))
    dm = cuda.to_device(m)
    check(c.rows_grid_sync(dm), c.rows_reference(m))
    assert math.ceil(cols / 256) > 1  # a real multi-block grid


@pytest.mark.gpu
def test_raw_launch_above_the_limit_is_refused_by_cuda():
    dm = cuda.to_device(np.zeros((3, 1024), np.int32))
    limit = c.max_cooperative_blocks(c.rows_grid_sync_kernel, (dm,), 256)
    with pytest.raises(Exception) as err:
        c.rows_grid_sync_kernel[limit + 1, 256](dm)
    assert re.search(r"COOPERATIVE_LAUNCH_TOO_LARGE|exceeds the limit|too large", str(err.value),
                     re.IGNORECASE), str(err.value)
    cuda.synchronize()
    c.rows_grid_sync(dm, blocks=limit, threads=256)  # the limit itself is fine


@pytest.mark.gpu
@pytest.mark.parametrize("version", sorted(c.VERSIONS))
def test_jacobi_full_size_on_gpu(version):
    u = np.random.default_rng(9).random(size("jacobi"), dtype=np.float32)
    check(c.VERSIONS[version](cuda.to_device(u), 16), c.jacobi_reference(u, 16))


def test_the_converge_checker_has_more_points_than_a_gpu_grid_has_threads(monkeypatch):
    from kernels.checks import cooperative as checker
    monkeypatch.setattr(checker, "SIMULATOR", False)
    monkeypatch.setattr(checker.kernels, "device",
                        lambda: {"sm_count": 40, "compute_capability": [7, 5]})  # a T4
    assert checker._past_one_grid() == 40 * 1_024 + 1_003


@cuda.jit
def _normalize_by_block_max(x, out, peak):
    best = cuda.shared.array(1, np.float32)
    if cuda.threadIdx.x == 0:
        best[0] = x[0]
    cuda.syncthreads()
    m = x[0]
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        m = max(m, x[i])
    cuda.atomic.max(best, 0, m)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        cuda.atomic.max(peak, 0, best[0])
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        out[i] = x[i] / best[0]  # WRONG on purpose: the block's maximum


@pytest.mark.skipif(not SIMULATOR, reason="the simulator's value cases run one block")
def test_normalize_by_max_compares_the_traced_launchs_values():
    """On the simulator the value cases run one block, where a block's maximum is the
    array's: the race case's 3 blocks, traced, are compared with the reference too."""
    report = checks.normalize_by_max(_normalize_by_block_max)
    assert not report.passed
    assert re.search(r"at \[3, 16\] on n=\d+ the values are wrong", str(report)), report
