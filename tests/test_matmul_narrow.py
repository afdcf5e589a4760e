import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR, matmul as mm, matmul_narrow as mn, matmul_tuned as mt
from matmul_operands import assert_product, operands
from ptx import assert_compiles

WIDE_MATRICES = ("void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64, "
                 "boolean)")
REGS = "float32[::1], float32[::1]"
TILES = "float32[:, ::1], float32[:, ::1]"
A_B = "float32[:, ::1], float32[:, ::1]"
FRAGMENTS = "float32[::1], float32[::1]"
PTX_SIGNATURES = {
    "matmul_narrow_tiles_kernel": [WIDE_MATRICES],
    "matmul_narrow_tiles_one_block_kernel": [WIDE_MATRICES],
    "narrow_position": ["UniTuple(int64, 2)(uint32)"],
    "narrow_row": ["int64(uint32, int64)"],
    "narrow_col": ["int64(uint32, int64)"],
    "narrow_offsets": [f"UniTuple(int64, 2)({A_B}, int64, int64, int64, uint32)"],
    "fetch_narrow_until": [f"void({A_B}, {REGS}, int64, int64, int64, int64, uint32)"],
    "fetch_narrow_at": [f"void({A_B}, {REGS}, int64, int64, int64, int64, int64, int64, "
                        "boolean, uint32)"],
    "stash_narrow": [f"void({REGS}, {TILES}, uint32)"],
    "load_narrow_fragments": [f"void({TILES}, int64, {FRAGMENTS}, uint32, uint32)"],
    "narrow_products": [f"void({TILES}, {FRAGMENTS}, {FRAGMENTS}, float32[:, ::1], uint32, "
                        "uint32)"],
    "narrow_step": [f"void({A_B}, {REGS}, {TILES}, {TILES}, {FRAGMENTS}, {FRAGMENTS}, "
                    "float32[:, ::1], int64, int64, int64, int64, int64, int64, boolean, "
                    "uint32, uint32, uint32)"],
    "put_narrow_tile": ["void(float32[:, ::1], float32[:, ::1], int64, int64, uint32, uint32)"],
}
# (m, k, n): sizes that divide no tile (64 x 128, 8 deep); k = 17 and 41 run 3 and 6
# k-steps, the last partial (two per loop trip); 65 rows and 132 columns: two tiles
# along each
SHAPES = [(1, 1, 1), (17, 17, 17), (3, 41, 132), (65, 9, 3), (65, 24, 132)]
GPU_SHAPES = [(1, 1, 1), (1, 4097, 1), (4097, 1, 3), (1023, 517, 769), (1000, 1000, 1000),
              (256, 4096, 256), (2048, 2048, 2048)]


@pytest.fixture
def h100_sms(monkeypatch):
    """The simulator reports 1 SM, where every product has enough 128 x 128 tiles and
    matmul_narrow_tiles hands over to matmul_pipelined_fragments: 132, an H100's, makes
    the small products here take the narrow tiles."""
    monkeypatch.setattr(mn, "sm_count", lambda: 132)


@pytest.fixture
def narrow_launches(monkeypatch):
    """The calls of launch_narrow (the narrow tiles' launch), as operand shapes."""
    launched = []

    def counted(a, b, out, splits):
        launched.append((a.shape, b.shape))
        return launch(a, b, out, splits)
    launch = mn.launch_narrow
    monkeypatch.setattr(mn, "launch_narrow", counted)
    return launched


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_narrow_tiles_match_float64_reference(shape, h100_sms, narrow_launches, rng):
    a, b = operands(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)  # poisoned
    assert_product(mn.matmul_narrow_tiles(a, b, out), a, b, name="matmul_narrow_tiles")
    assert len(narrow_launches) == 1


def test_enough_tiles_are_pipelined_fragments(narrow_launches, monkeypatch, rng):
    # one SM (the simulator's; on a GPU, said so): one 128 x 128 tile is enough, so no
    # narrow launch
    handed = []
    monkeypatch.setattr(mn, "sm_count", lambda: 1)
    monkeypatch.setattr(mt, "matmul_pipelined_fragments",
                        lambda *args, **kw: handed.append(kw) or mm.matmul_reference(*args[:2]))
    a, b = operands(rng, 3, 5, 4)
    mn.matmul_narrow_tiles(a, b, splits=1)
    assert handed == [{"splits": 1}] and not narrow_launches


def test_split_k_adds_every_share_once(h100_sms, rng):
    a, b = operands(rng, 5, 52, 8)  # two shares: k 0..31 (4 k-steps), 32..51 (3, partial)
    out = cuda.to_device(np.full((5, 8), np.nan, dtype=np.float32))  # poisoned: zeroed first
    assert_product(mn.matmul_narrow_tiles(cuda.to_device(a), cuda.to_device(b), out,
                                          splits=2), a, b, name="matmul_narrow_tiles")


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
    load = mn.load_float4_at
    monkeypatch.setattr(mn, "load_float4_at", counted)
    return calls


def test_whole_tiles_after_the_first_load_128_bits_at_a_time(h100_sms, wide_loads, rng):
    # one block tile over the edge of a and b (its rows and columns past them are
    # clamped, not zeroed); k = 40: 5 k-steps of 8, the first loaded one by one, the
    # other 4 with one 128-bit load from a and two from b per thread
    a, b = operands(rng, 3, 40, 8)
    out = np.full((3, 8), np.nan, dtype=np.float32)
    assert_product(mn.matmul_narrow_tiles(a, b, out), a, b, name="matmul_narrow_tiles")
    if wide_loads is not None:
        assert len(wide_loads) == 4 * 3 * mn.NTHREADS


def test_rows_off_16_byte_boundaries_are_loaded_one_by_one(h100_sms, wide_loads, rng):
    a, b = operands(rng, 20, 24, 12)
    buffer = cuda.to_device(np.concatenate([[0], a.ravel()]).astype(np.float32))
    shifted = buffer[1:].reshape(a.shape)  # every row 4 bytes past a 16-byte boundary
    out = cuda.to_device(np.full((20, 12), np.nan, dtype=np.float32))
    assert_product(mn.matmul_narrow_tiles(shifted, cuda.to_device(b), out), a, b,
                   name="matmul_narrow_tiles")
    assert wide_loads is None or not wide_loads


def test_splits_on_an_h100():
    # n = 1000: 64 tiles of 128 x 128 for 132 SMs, so 16 x 8 = 128 narrow ones, no split
    assert mn.few_tiles(1000, 1000, 132) and mn.default_splits(
        "matmul_narrow_tiles", 1000, 1000, 1000, 132) == 1
    assert not mn.few_tiles(2048, 2048, 132)
    assert mn.default_splits("matmul_narrow_tiles", 4096, 4096, 4096, 132) == 1
    # 256 x 256: 8 narrow tiles, 16 shares of the sum over k = 4096
    assert mn.default_splits("matmul_narrow_tiles", 256, 256, 4096, 132) == 16
    with pytest.raises(ValueError, match="splits"):
        mn.launch_narrow(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                         np.empty((2, 2), np.float32), 0)


def test_compiles_to_ptx_with_128_bit_loads_and_no_local_memory():
    report = assert_compiles("matmul_narrow").splitlines()
    # three 128-bit loads (one from a, two from b) before the loop and in each of its
    # two k-steps
    for kernel in ("matmul_narrow_tiles_kernel", "matmul_narrow_tiles_one_block_kernel"):
        lines = [line for line in report if f".{kernel} " in line]
        assert len(lines) == 2 and all(" 0 local loads" in line for line in lines), lines
        assert all(" 9 128-bit" in line for line in lines), lines


@pytest.mark.gpu
def test_shapes_that_divide_nothing_on_gpu():
    rng = np.random.default_rng(7)
    for m, k, n in GPU_SHAPES:
        a, b = operands(rng, m, k, n)
        out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        assert_product(mn.matmul_narrow_tiles(cuda.to_device(a), cuda.to_device(b), out),
                       a, b, name=f"matmul_narrow_tiles {m}x{k} @ {k}x{n}")
