import re

import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR, matmul as mm, matmul_narrow as mn, matmul_wide as mw
from matmul_operands import assert_product, operands
from ptx import assert_compiles

WIDE_MATRICES = ("void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64, "
                 "boolean)")
REGS = "float32[::1], float32[::1]"
TILES = "float32[:, ::1], float32[:, ::1]"
A_B = "float32[:, ::1], float32[:, ::1]"
FRAGMENTS = "float32[::1], float32[::1]"
PTX_SIGNATURES = {
    "matmul_wide_thread_tiles_kernel": [WIDE_MATRICES],
    "wide_offsets": [f"UniTuple(int64, 2)({A_B}, int64, int64, int64, uint32)"],
    "fetch_wide_tiles_until": [f"void({A_B}, {REGS}, int64, int64, int64, int64, uint32)"],
    "fetch_wide_tiles_at": [f"void({A_B}, {REGS}, int64, int64, int64, int64, int64, int64, "
                            "boolean, uint32)"],
    "stash_wide_tiles": [f"void({REGS}, {TILES}, uint32)"],
    "load_wide_fragments": [f"void({TILES}, int64, {FRAGMENTS}, uint32, uint32)"],
    "multiply_wide_fragments": [f"void({FRAGMENTS}, float32[:, ::1])"],
    "wide_products": [f"void({TILES}, {FRAGMENTS}, {FRAGMENTS}, float32[:, ::1], uint32, "
                      "uint32)"],
    "wide_step": [f"void({A_B}, {REGS}, {TILES}, {TILES}, {FRAGMENTS}, {FRAGMENTS}, "
                  "float32[:, ::1], int64, int64, int64, int64, int64, int64, boolean, "
                  "uint32, uint32, uint32)"],
    "put_wide_tile": ["void(float32[:, ::1], float32[:, ::1], int64, int64, uint32, uint32)"],
}
# (m, k, n): sizes that divide no tile (128 x 256, 8 deep); k = 17 and 41 run 3 and 6
# k-steps, the last partial (two per loop trip), loaded one by one (rows of a off
# 16-byte boundaries); 129 x 44 x 260: two tiles along each side, rows on 16-byte
# boundaries (128-bit loads, clamped edges) and a partial last k-step
SHAPES = [(1, 1, 1), (17, 17, 17), (3, 41, 260), (129, 9, 3), (129, 44, 260)]
GPU_SHAPES = [(1, 1, 1), (1, 4097, 1), (4097, 1, 3), (1023, 517, 769), (1000, 1000, 1000),
              (2049, 777, 1500), (2050, 1500, 780), (2048, 2048, 2048)]


@pytest.fixture
def wide_launches(monkeypatch):
    """The calls of launch_wide (the wide tiles' launch), as operand shapes."""
    launched = []

    def counted(a, b, out, splits):
        launched.append((a.shape, b.shape))
        return launch(a, b, out, splits)
    launch = mw.launch_wide
    monkeypatch.setattr(mw, "launch_wide", counted)
    return launched


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_wide_thread_tiles_match_float64_reference(shape, wide_launches, monkeypatch, rng):
    # one SM (the simulator's): every product has enough 128 x 128 tiles for the wide
    # ones, so they run on a GPU too
    monkeypatch.setattr(mw, "sm_count", lambda: 1)
    a, b = operands(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)  # poisoned
    assert_product(mw.matmul_wide_thread_tiles(a, b, out), a, b,
                   name="matmul_wide_thread_tiles")
    assert len(wide_launches) == 1


def test_few_tiles_are_narrow_tiles(wide_launches, monkeypatch, rng):
    # 132 SMs (an H100's): a 3 x 4 product has one 128 x 128 tile, too few, so the
    # narrow tiles' host function takes it, and its splits
    handed = []
    monkeypatch.setattr(mw, "sm_count", lambda: 132)
    monkeypatch.setattr(mn, "matmul_narrow_tiles",
                        lambda *args, **kw: handed.append(kw) or mm.matmul_reference(*args[:2]))
    a, b = operands(rng, 3, 5, 4)
    mw.matmul_wide_thread_tiles(a, b, splits=1)
    assert handed == [{"splits": 1}] and not wide_launches


def test_split_k_adds_every_share_once(rng):
    a, b = operands(rng, 5, 52, 8)  # two shares: k 0..31 (4 k-steps), 32..51 (3, partial)
    out = cuda.to_device(np.full((5, 8), np.nan, dtype=np.float32))  # poisoned: zeroed first
    assert_product(mw.matmul_wide_thread_tiles(cuda.to_device(a), cuda.to_device(b), out,
                                               splits=2), a, b,
                   name="matmul_wide_thread_tiles")


@pytest.fixture
def wide_loads(monkeypatch):
    """On the simulator, the 128-bit loads of a run (the calls of load_float4_at); on a
    GPU, None (a compiled kernel cannot call a counting Python function)."""
    if not SIMULATOR:
        return None
    calls = []

    def counted(x, offset):
        calls.append(offset)
        return load(x, offset)
    load = mw.load_float4_at
    monkeypatch.setattr(mw, "load_float4_at", counted)
    return calls


def test_whole_tiles_after_the_first_load_128_bits_at_a_time(wide_loads, rng):
    # one block tile over the edge of a and b (its rows and columns past them are
    # clamped, not zeroed); k = 40: 5 k-steps of 8, the first loaded one by one, the
    # other 4 with one 128-bit load from a and two from b per thread
    a, b = operands(rng, 3, 40, 8)
    out = np.full((3, 8), np.nan, dtype=np.float32)
    assert_product(mw.matmul_wide_thread_tiles(a, b, out), a, b,
                   name="matmul_wide_thread_tiles")
    if wide_loads is not None:
        assert len(wide_loads) == 4 * 3 * mw.NTHREADS


def test_rows_off_16_byte_boundaries_are_loaded_one_by_one(wide_loads, rng):
    a, b = operands(rng, 20, 24, 12)
    buffer = cuda.to_device(np.concatenate([[0], a.ravel()]).astype(np.float32))
    shifted = buffer[1:].reshape(a.shape)  # every row 4 bytes past a 16-byte boundary
    out = cuda.to_device(np.full((20, 12), np.nan, dtype=np.float32))
    assert_product(mw.matmul_wide_thread_tiles(shifted, cuda.to_device(b), out), a, b,
                   name="matmul_wide_thread_tiles")
    assert wide_loads is None or not wide_loads


def test_splits_on_an_h100():
    # n = 1000: 64 tiles of 128 x 128 for 132 SMs: the narrow tiles, unsplit
    assert mw.default_splits("matmul_wide_thread_tiles", 1000, 1000, 1000, 132) == 1
    # n = 2048: 256 tiles of 128 x 128, so 16 x 8 = 128 wide ones, unsplit
    assert not mn.few_tiles(2048, 2048, 132)
    assert mw.default_splits("matmul_wide_thread_tiles", 2048, 2048, 2048, 132) == 1
    # 256 x 256: as matmul_narrow_tiles, 16 shares of the sum over k = 4096
    assert mw.default_splits("matmul_wide_thread_tiles", 256, 256, 4096, 132) == 16


@pytest.mark.parametrize("splits", [0, -1, 1.5, True, "2"])
def test_bad_splits_are_refused(splits):
    with pytest.raises(ValueError, match="splits"):
        mw.launch_wide(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                       np.empty((2, 2), np.float32), splits)


BAD_CALLS = {
    "float64": (lambda a, b: (a.astype(np.float64), b, None), TypeError,
                "dtype float64; accepted: float32"),
    "inner mismatch": (lambda a, b: (a, b[:3], None), ValueError,
                       "as many columns in a as rows in b"),
    "out shape": (lambda a, b: (a, b, np.empty((5, 5), np.float32)), ValueError,
                  "out has shape (5, 5), expected (5, 7)"),
    "host and device": (lambda a, b: (cuda.to_device(a), b, None), ValueError,
                        "all be on the host or all on the device"),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_is_refused_clearly(case, rng):
    make, error, words = BAD_CALLS[case]
    a, b = operands(rng, 5, 6, 7)
    with pytest.raises(error, match=re.escape(words)):
        mw.matmul_wide_thread_tiles(*make(a, b))


def test_compiles_to_ptx_with_128_bit_loads_and_no_local_memory():
    report = assert_compiles("matmul_wide").splitlines()
    # three 128-bit loads (one from a, two from b) before the loop and in each of its
    # two k-steps
    lines = [line for line in report if ".matmul_wide_thread_tiles_kernel " in line]
    assert len(lines) == 2 and all(" 0 local loads" in line for line in lines), lines
    assert all(" 9 128-bit" in line for line in lines), lines


@pytest.mark.gpu
def test_shapes_that_divide_nothing_on_gpu():
    rng = np.random.default_rng(7)
    for m, k, n in GPU_SHAPES:
        a, b = operands(rng, m, k, n)
        out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        assert_product(mw.matmul_wide_thread_tiles(cuda.to_device(a), cuda.to_device(b),
                                                   out), a, b,
                       name=f"matmul_wide_thread_tiles {m}x{k} @ {k}x{n}")
