import os
import re
import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

from kernels import checks, matmul as mm
from kernels.harness import MismatchError, check
from answers import solution
from matmul_operands import assert_product, operands
from ptx import assert_compiles

solutions = solution("matmul")  # as a student hands it in: its launches count

MATRICES = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
PTX_SIGNATURES = {
    "matmul_naive_kernel": [MATRICES],
    "matmul_tiled_kernel": [MATRICES],
    "matmul_tiled_bounded_kernel": [MATRICES],
    "matmul_thread_tile_1d_kernel": [MATRICES],
    "matmul_thread_tile_2d_kernel": [MATRICES],
    "matmul_thread_tile_2d_prefetch_kernel": [MATRICES],
    "matmul_warp_tile_kernel": [MATRICES],
    "tile_row": ["int64(uint32, int64)"],
    "tile_col": ["int64(uint32, int64)"],
    "warp_position": ["UniTuple(int64, 2)(uint32)"],
    "fetch_tiles": ["void(float32[:, ::1], float32[:, ::1], float32[::1], float32[::1], "
                    "int64, int64, int64, int64)"],
    "stash_tiles": ["void(float32[::1], float32[::1], float32[:, ::1], float32[:, ::1], "
                    "int64)"],
    "outer_product": ["void(float32[:, ::1], float32[:, ::1], int64, float32[:, ::1], "
                      "uint32, uint32)"],
    "multiply_tiles": ["void(float32[:, ::1], float32[:, ::1], float32[:, ::1], "
                       "uint32, uint32)"],
    "write_tile": ["void(float32[:, ::1], float32[:, ::1], int64, int64, uint32, uint32)"],
}

CORRECT = sorted(set(mm.VERSIONS) - {"matmul_tiled"})
# (m, k, n): squares that do not divide any tile, then non-square products; the last
# spans two 128-wide block tiles along n and several k tiles.
SHAPES = [(1, 1, 1), (15, 15, 15), (17, 17, 17), (33, 17, 40), (3, 19, 130)]


@pytest.mark.parametrize("version", CORRECT)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_float64_reference(version, shape, rng):
    a, b = operands(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)  # poisoned
    assert_product(mm.VERSIONS[version](a, b, out), a, b, name=version)


def test_device_arrays_stay_on_device(rng):
    a, b = operands(rng, 9, 10, 11)
    out = mm.matmul_tiled_bounded(cuda.to_device(a), cuda.to_device(b))
    assert hasattr(out, "copy_to_host")
    assert_product(out, a, b)


def test_tolerance_separates_rounding_from_a_dropped_term(rng):
    a, b = operands(rng, 8, 300, 8)
    exact = mm.matmul_float64(a, b)
    rtol, atol = mm.tolerance(a, b)
    check(mm.matmul_reference(a, b), exact, rtol=rtol, atol=atol)  # float32 BLAS passes
    with pytest.raises(MismatchError):
        check(a[:, :-1] @ b[:-1], exact, rtol=rtol, atol=atol)


# The popular unbounded kernel: right when k is a multiple of TILE, silently wrong
# otherwise. Shapes with m and n multiples of TILE keep every read inside a and b.

def test_unbounded_tiled_right_when_k_divides(rng):
    a, b = operands(rng, 16, 32, 32)
    assert_product(mm.matmul_tiled(a, b), a, b)


@pytest.mark.parametrize("k", [40, 200])
def test_unbounded_tiled_drops_the_last_partial_tile(k, rng):
    a, b = operands(rng, 16, k, 16)
    c = mm.matmul_tiled(a, b)
    with pytest.raises(MismatchError):
        assert_product(c, a, b)
    whole = k // mm.TILE * mm.TILE  # exactly the whole tiles were summed
    assert_product(c, a[:, :whole], b[:whole])


def test_unbounded_tiled_sums_nothing_when_k_below_tile(rng):
    a, b = operands(rng, 16, 15, 16)
    assert (mm.matmul_tiled(a, b) == 0).all()


@pytest.mark.parametrize("shape", [(15, 15, 15), (1000, 1000, 1000), (16, 16, 17)])
def test_unbounded_tiled_refuses_shapes_it_would_overrun(shape):
    m, k, n = shape
    a, b = np.zeros((m, k), np.float32), np.zeros((k, n), np.float32)
    with pytest.raises(ValueError, match="past the edge"):
        mm.matmul_tiled(a, b)


BAD_CALLS = {
    "float64": (lambda a, b: mm.matmul_naive(a.astype(np.float64), b), TypeError,
                "dtype float64; accepted: float32"),
    "int32 b": (lambda a, b: mm.matmul_warp_tile(a, b.astype(np.int32)), TypeError,
                "b has dtype int32"),
    "1-D": (lambda a, b: mm.matmul_tiled_bounded(a.ravel(), b), ValueError, "a must be 2-D"),
    "inner mismatch": (lambda a, b: mm.matmul_thread_tile_2d(a, b[:3]), ValueError,
                       "as many columns in a as rows in b"),
    "strided": (lambda a, b: mm.matmul_thread_tile_1d(a[:, ::2], b[:3]), ValueError,
                "C-contiguous"),
    "empty": (lambda a, b: mm.matmul_naive(a[:0], b), ValueError, "a is empty"),
    "out shape": (lambda a, b: mm.matmul_naive(a, b, np.empty((5, 5), np.float32)),
                  ValueError, "out has shape (5, 5), expected (5, 7)"),
    "out dtype": (lambda a, b: mm.matmul_naive(a, b, np.empty((5, 7))), TypeError,
                  "out has dtype float64"),
    "host and device": (lambda a, b: mm.matmul_thread_tile_2d_prefetch(cuda.to_device(a), b),
                        ValueError, "all be on the host or all on the device"),
    "list": (lambda a, b: mm.matmul_naive(a.tolist(), b), TypeError, "NumPy array"),
    "too many rows": (lambda a, b: mm.matmul_naive(np.zeros((16 * 65_536, 1), np.float32),
                                                   b[:1]), ValueError, "at most 65535"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    call, error, words = BAD_CALLS[case]
    a, b = operands(rng, 5, 6, 7)
    with pytest.raises(error, match=re.escape(words)):
        call(a, b)


def test_compiles_to_ptx():
    assert_compiles("matmul")


# ------------------------------------------------------------------ exercises


def choose_tile_ignoring_threads(shared_bytes, max_threads):
    tile = 1
    while 2 * (2 * tile) ** 2 * 4 <= shared_bytes:
        tile *= 2
    return tile


@cuda.jit
def transpose_without_swap(a, out):
    # planted bug: the tile is written back as it was read, so each 16 x 16 tile
    # lands in the mirrored place but is not itself transposed
    tile = cuda.shared.array((16, 17), np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * 16 + ty, cuda.blockIdx.x * 16 + tx
    if row < a.shape[0] and col < a.shape[1]:
        tile[ty, tx] = a[row, col]
    cuda.syncthreads()
    row, col = cuda.blockIdx.x * 16 + ty, cuda.blockIdx.y * 16 + tx
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = tile[ty, tx]


@cuda.jit
def matvec_whole_chunks_only(a, x, y):
    # planted bug: the popular k // TILE loop again, dropping the last partial chunk
    chunk = cuda.shared.array(64, np.float32)
    row = cuda.grid(1)
    acc = np.float32(0.0)
    for t in range(x.size // 64):
        chunk[cuda.threadIdx.x] = x[t * 64 + cuda.threadIdx.x]
        cuda.syncthreads()
        if row < a.shape[0]:
            for j in range(64):
                acc += a[row, t * 64 + j] * chunk[j]
        cuda.syncthreads()
    if row < a.shape[0]:
        y[row] = acc


@pytest.mark.parametrize("checker,planted", [
    (checks.choose_tile, choose_tile_ignoring_threads),
    (checks.tiled_transpose, transpose_without_swap),
    (checks.tiled_matvec, matvec_whole_chunks_only),
])
def test_checker_fails_planted_bug(checker, planted):
    # that each solution passes its checker: tests/test_grading.py (every exercise)
    bad = checker(planted)
    assert not bad.passed
    assert "FAIL" in str(bad)


def test_solution_kernels_compile_for_a_gpu():
    """The simulator accepts what a GPU compiler refuses (a shared array shape such as
    (TILE, TILE + 1), computed in the kernel): compile the solutions to PTX as well."""
    code = ("import sys; from numba import cuda; from kernels.solutions import matmul as s\n"
            "for kernel, sig in [(s.transpose_tiled_kernel, 'void(float32[:, ::1], "
            "float32[:, ::1])'), (s.matvec_tiled_kernel, 'void(float32[:, ::1], "
            "float32[::1], float32[::1])')]:\n"
            "    cuda.compile_ptx(kernel.py_func, sig, cc=(7, 5))\n"
            "print('compiled')")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0 and "compiled" in proc.stdout, proc.stderr[-3000:]


def test_transpose_solution_padding_makes_its_column_reads_conflict_free():
    """The solution's prose: with rows of 18 words the warp's column reads hit 32 banks
    (17 would leave them 2-way, 16 8-way) and its row stores take 2 passes."""
    from kernels import trace

    a = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    traced = trace.launch(solutions.transpose_tiled_kernel, ((1, 1), (16, 16)), a,
                          np.zeros((16, 16), np.float32))
    assert traced.launch(None).arrays["tile"]["shape"] == (16, solutions.PADDED)

    def worst(kind, row_length=None):
        return trace.bank_conflicts(traced, "tile", kinds=(kind,),
                                    row_length=row_length).worst.units

    assert (worst("read"), worst("write")) == (1, 2)
    assert (worst("read", 17), worst("write", 17)) == (2, 2)
    assert (worst("read", 16), worst("write", 16)) == (8, 1)


def test_checker_reports_exceptions_in_plain_words():
    def crashes(shared_bytes, max_threads):
        raise ZeroDivisionError("oops")

    report = checks.choose_tile(crashes)
    assert not report.passed and "your code raised ZeroDivisionError" in str(report)


# ------------------------------------------------------------------- on a GPU


@pytest.mark.gpu
@pytest.mark.parametrize("version", CORRECT)
def test_full_size_on_gpu(version):
    rng = np.random.default_rng(5)
    for m, k, n in [(1000, 1000, 1000), (1, 1, 1), (15, 15, 15), (17, 17, 17),
                    (1000, 1500, 777), (4099, 257, 130)]:
        a, b = operands(rng, m, k, n)
        out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        assert_product(mm.VERSIONS[version](cuda.to_device(a), cuda.to_device(b), out), a, b,
                       name=f"{version} {m}x{k} @ {k}x{n}")


@pytest.mark.gpu
def test_unbounded_tiled_drops_tail_at_k_1000_on_gpu():
    rng = np.random.default_rng(6)
    a, b = operands(rng, 1024, 1000, 1024)
    c = mm.matmul_tiled(cuda.to_device(a), cuda.to_device(b)).copy_to_host()
    with pytest.raises(MismatchError):
        assert_product(c, a, b)
    assert_product(c, a[:, :992], b[:992])  # 62 whole tiles: the last 8 terms are lost


def test_the_2d_thread_tile_loads_four_128_bit_words_per_64_multiply_adds():
    """matmul.md: "The compiler then merges each group into one 128-bit load
    (`ld.shared.v4.f32` in the PTX): 4 load instructions per 64 multiply-adds"."""
    script = (
        "import sys, importlib; sys.path.insert(0, 'tests'); import compile_ptx\n"
        "from kernels import matmul\n"
        "name = 'matmul_thread_tile_2d_kernel'\n"
        "sig = importlib.import_module('test_matmul').PTX_SIGNATURES[name][0]\n"
        "ptx = compile_ptx.compile_ptxes(getattr(matmul, name), sig, False)[(9, 0)]\n"
        "print(ptx.count('ld.shared.v4.f32'), ptx.count('ld.shared.f32'), "
        "ptx.count('fma.rn.f32'))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=root, env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    wide, scalar, fmas = map(int, proc.stdout.split()[-3:])
    assert scalar == 0 and fmas > 0 and wide * 16 == fmas, (wide, scalar, fmas)
