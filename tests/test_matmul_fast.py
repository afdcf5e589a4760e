import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR, matmul as mm, matmul_fast as mf
from kernels.trace import analyses
from kernels.trace import run as trace_run
from matmul_operands import assert_product, operands
from ptx import assert_compiles

MATRICES = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
WIDE_MATRICES = ("void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64, "
                 "boolean)")
FRAGMENTS = "float32[:, ::1], float32[:, ::1], float32[:, ::1], uint32, uint32"
PTX_SIGNATURES = {
    "matmul_unrolled_k_kernel": [MATRICES],
    "matmul_unchecked_interior_kernel": [MATRICES],
    "matmul_split_k_kernel": ["void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64)"],
    "zero_kernel": ["void(float32[:, ::1])"],
    "multiply_tiles_unrolled": [f"void({FRAGMENTS})"],
    "fetch_tiles_unchecked": ["void(float32[:, ::1], float32[:, ::1], float32[::1], "
                              "float32[::1], int64, int64, int64, int64)"],
    "fetch_tiles_until": ["void(float32[:, ::1], float32[:, ::1], float32[::1], "
                          "float32[::1], int64, int64, int64, int64, int64)"],
    "add_tile": ["void(float32[:, ::1], float32[:, ::1], int64, int64, uint32, uint32)"],
    "matmul_wide_loads_kernel": [WIDE_MATRICES],
    "matmul_clamped_edges_kernel": [WIDE_MATRICES],
    "matmul_one_block_per_sm_kernel": [WIDE_MATRICES],
    "fetch_tiles_wide": ["void(float32[:, ::1], float32[:, ::1], float32[::1], float32[::1], "
                         "int64, int64, int64, uint32)"],
    "fetch_tiles_wide_until": ["void(float32[:, ::1], float32[:, ::1], float32[::1], "
                               "float32[::1], int64, int64, int64, int64, uint32)"],
    "stash_tiles_wide": ["void(float32[::1], float32[::1], float32[:, ::1], float32[:, ::1], "
                         "uint32)"],
}
WIDE = ["matmul_wide_loads", "matmul_clamped_edges", "matmul_one_block_per_sm"]
# how many of the two blocks of test_tiles_load_128_bits_at_a_time load 128 bits at a
# time: the one inside a and b, or both (matmul_one_block_per_sm compiles the kernel of
# matmul_clamped_edges differently on a GPU, and runs it as it is on the simulator)
WIDE_BLOCKS = {"matmul_wide_loads": 1, "matmul_clamped_edges": 2}
# (m, k, n): sizes that divide no tile; the last two span two block tiles along n or
# m, and several k-steps
SHAPES = [(1, 1, 1), (17, 17, 17), (3, 19, 130), (130, 9, 3)]
# on a GPU, the shapes that divide nothing, and sizes that fill it
GPU_SHAPES = [(1, 1, 1), (1, 4097, 1), (4097, 1, 3), (1023, 517, 769), (1000, 1000, 1000),
              (256, 4096, 256)]


@pytest.mark.parametrize("version", sorted(mf.VERSIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_float64_reference(version, shape, rng):
    a, b = operands(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)  # poisoned
    assert_product(mf.VERSIONS[version](a, b, out), a, b, name=version)


@pytest.mark.parametrize("version, splits", [("matmul_split_k", 2), ("matmul_split_k", 3),
                                             ("matmul_split_k", 100),
                                             *[(version, 3) for version in WIDE]])
def test_split_k_adds_every_share_once(version, splits, rng):
    a, b = operands(rng, 5, 41, 7)  # 41 = 5 k-steps and one more term
    out = cuda.to_device(np.full((5, 7), np.nan, dtype=np.float32))  # poisoned: zeroed first
    assert_product(mf.VERSIONS[version](cuda.to_device(a), cuda.to_device(b), out,
                                        splits=splits), a, b, name=f"splits={splits}")


@pytest.fixture
def wide_loads(monkeypatch):
    """On the simulator, the 128-bit loads of a run (the calls of load_float4). On a
    GPU, None: a compiled kernel cannot call a counting Python function, so the
    results are checked and the loads not counted."""
    if not SIMULATOR:
        return None
    calls = []

    def counted(x, row, col):
        calls.append((row, col))
        return load_float4(x, row, col)
    load_float4 = mf.load_float4
    monkeypatch.setattr(mf, "load_float4", counted)
    return calls


@pytest.mark.parametrize("version", WIDE_BLOCKS)
def test_tiles_load_128_bits_at_a_time(version, wide_loads, rng):
    # two blocks along n: one inside a and b, one over the edge of b; k = 20 in two
    # shares, 0..15 and 16..19. The first k-step of a share is loaded one by one, the
    # rest wide, but for a last, partial one: so only k-step 8..15 is loaded wide
    a, b = operands(rng, 128, 20, 132)
    out = np.full((128, 132), np.nan, dtype=np.float32)
    assert_product(mf.VERSIONS[version](a, b, out, splits=2), a, b, name=version)
    if wide_loads is not None:  # each of 256 threads of a block: one of a, one of b
        assert len(wide_loads) == WIDE_BLOCKS[version] * 2 * mm.THREADS_2D


@pytest.mark.parametrize("version", WIDE)
def test_rows_off_16_byte_boundaries_are_loaded_one_by_one(version, wide_loads, rng):
    a, b = operands(rng, 128, 28, 128)
    buffer = cuda.to_device(np.concatenate([[0], a.ravel()]).astype(np.float32))
    shifted = buffer[1:].reshape(a.shape)  # every row 4 bytes past a 16-byte boundary
    assert not mf.rows_aligned(shifted) and mf.rows_aligned(cuda.to_device(a))
    out = cuda.to_device(np.full((128, 128), np.nan, dtype=np.float32))
    assert_product(mf.VERSIONS[version](shifted, cuda.to_device(b), out), a, b, name=version)
    assert wide_loads is None or not wide_loads


def test_rows_aligned_needs_a_multiple_of_4_columns():
    assert mf.rows_aligned(np.ones((3, 8), np.float32))
    assert not mf.rows_aligned(np.ones((8, 6), np.float32))


def test_split_k_fills_the_sms_only_where_the_tiles_do_not():
    assert mf.split_k(1000, 1000, 1000, 132) == 4  # 64 tiles
    assert mf.split_k(1000, 1000, 1000, 132, blocks_per_sm=1) == 2


def test_one_block_per_sm_only_where_the_grid_fits_the_sms():
    assert mf.fits_one_block_per_sm(1000, 1000, 1000, 132)  # 64 tiles x 2 shares
    assert not mf.fits_one_block_per_sm(2048, 2048, 2048, 132)  # 256 tiles
    assert mf.default_splits("matmul_one_block_per_sm", 1000, 1000, 1000, 132) == 2
    assert mf.default_splits("matmul_clamped_edges", 1000, 1000, 1000, 132) == 4
    assert mf.default_splits("matmul_unrolled_k", 1000, 1000, 1000, 132) == 1
    assert mf.split_k(4096, 4096, 4096, 132) == 1  # 1024 tiles
    assert mf.split_k(1000, 1000, 8, 132) == 1  # too little k to share
    with pytest.raises(ValueError, match="splits"):
        mf.matmul_split_k(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), splits=0)


def test_compiles_to_ptx_with_128_bit_loads_where_meant():
    report = assert_compiles("matmul_fast").splitlines()
    for kernel in ["matmul_wide_loads_kernel", "matmul_clamped_edges_kernel",
                   "matmul_one_block_per_sm_kernel", "matmul_unchecked_interior_kernel"]:
        lines = [line for line in report if f".{kernel} " in line]
        assert len(lines) == 2 and all(" 0 local loads" in line for line in lines), lines
        wide = "matmul_unchecked_interior" not in kernel
        # one of a and one of b per k-step, or none
        assert all((" 2 128-bit" in line) == wide for line in lines), lines


@pytest.mark.gpu
@pytest.mark.parametrize("version", sorted({**mm.VERSIONS, **mf.VERSIONS}.keys()
                                           - {"matmul_tiled"}))
def test_shapes_that_divide_nothing_on_gpu(version):
    fn = {**mm.VERSIONS, **mf.VERSIONS}[version]
    rng = np.random.default_rng(7)
    for m, k, n in GPU_SHAPES:
        if version == "matmul_naive" and k > 1000:
            continue  # right, but slow
        a, b = operands(rng, m, k, n)
        out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        assert_product(fn(cuda.to_device(a), cuda.to_device(b), out), a, b,
                       name=f"{version} {m}x{k} @ {k}x{n}")


def test_a_warp_stores_the_transposed_a_tile_in_32_banks(rng):
    # what the chapter says of stash_tiles_wide: 16 rows x 2 groups of 4 columns of the
    # A tile, into rows of 132 words of the transposed tile, hit 32 different banks
    a, b = operands(rng, 20, 8, 20)
    traced = trace_run(mf.matmul_wide_loads, a, b)
    stores = analyses.bank_conflicts(traced, "a_tile", kinds=("write",))
    assert stores.worst.units == 1, stores
