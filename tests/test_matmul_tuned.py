import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR, matmul as mm, matmul_tuned as mt
from matmul_operands import assert_product, operands
from ptx import assert_compiles

WIDE_MATRICES = ("void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64, "
                 "boolean)")
REGS = "float32[::1], float32[::1]"
TILES = "float32[:, ::1], float32[:, ::1]"
A_B = "float32[:, ::1], float32[:, ::1]"
FRAGMENTS = "float32[::1], float32[::1]"
PTX_SIGNATURES = {
    "matmul_flat_offsets_kernel": [WIDE_MATRICES],
    "matmul_flat_offsets_one_block_kernel": [WIDE_MATRICES],
    "matmul_pipelined_fragments_kernel": [WIDE_MATRICES],
    "matmul_pipelined_fragments_one_block_kernel": [WIDE_MATRICES],
    "offsets": [f"UniTuple(int64, 2)({A_B}, int64, int64, int64, uint32)"],
    "fetch_at": [f"void({A_B}, {REGS}, int64, int64, int64, int64, int64, int64, boolean, "
                 "uint32)"],
    "load_fragments": [f"void({TILES}, int64, {FRAGMENTS}, uint32, uint32)"],
    "multiply_fragments": [f"void({FRAGMENTS}, float32[:, ::1])"],
    "multiply_loading_next": [f"void({TILES}, {FRAGMENTS}, {FRAGMENTS}, float32[:, ::1], "
                              "uint32, uint32)"],
    "pipelined_step": [f"void({A_B}, {REGS}, {TILES}, {TILES}, {FRAGMENTS}, {FRAGMENTS}, "
                       "float32[:, ::1], int64, int64, int64, int64, int64, int64, boolean, "
                       "uint32, uint32, uint32)"],
}
# (m, k, n): sizes that divide no tile; k = 17 and 41 run 3 and 6 k-steps, the last
# partial (the pipelined version takes two per loop trip); 132 columns: two block
# tiles along n
SHAPES = [(1, 1, 1), (17, 17, 17), (3, 41, 132), (130, 9, 3)]
GPU_SHAPES = [(1, 1, 1), (1, 4097, 1), (4097, 1, 3), (1023, 517, 769), (1000, 1000, 1000),
              (256, 4096, 256), (2048, 2048, 2048)]


@pytest.mark.parametrize("version", sorted(mt.VERSIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_float64_reference(version, shape, rng):
    a, b = operands(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)  # poisoned
    assert_product(mt.VERSIONS[version](a, b, out), a, b, name=version)


@pytest.mark.parametrize("version", sorted(mt.VERSIONS))
def test_split_k_adds_every_share_once(version, rng):
    a, b = operands(rng, 5, 52, 8)  # two shares: k 0..31 (4 k-steps), 32..51 (3, partial)
    out = cuda.to_device(np.full((5, 8), np.nan, dtype=np.float32))  # poisoned: zeroed first
    assert_product(mt.VERSIONS[version](cuda.to_device(a), cuda.to_device(b), out,
                                        splits=2), a, b, name=version)


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
    load = mt.load_float4_at
    monkeypatch.setattr(mt, "load_float4_at", counted)
    return calls


@pytest.mark.parametrize("version", sorted(mt.VERSIONS))
def test_whole_tiles_after_the_first_load_128_bits_at_a_time(version, wide_loads, rng):
    # one block tile over the edge of a and b (its rows and columns past them are
    # clamped, not zeroed); k = 40: 5 k-steps of 8, the first loaded one by one, the
    # other 4 with one 128-bit load from a and one from b per thread
    a, b = operands(rng, 3, 40, 8)
    out = np.full((3, 8), np.nan, dtype=np.float32)
    assert_product(mt.VERSIONS[version](a, b, out), a, b, name=version)
    if wide_loads is not None:
        assert len(wide_loads) == 4 * 2 * mm.THREADS_2D


@pytest.mark.parametrize("version", sorted(mt.VERSIONS))
def test_rows_off_16_byte_boundaries_are_loaded_one_by_one(version, wide_loads, rng):
    a, b = operands(rng, 20, 24, 12)
    buffer = cuda.to_device(np.concatenate([[0], a.ravel()]).astype(np.float32))
    shifted = buffer[1:].reshape(a.shape)  # every row 4 bytes past a 16-byte boundary
    out = cuda.to_device(np.full((20, 12), np.nan, dtype=np.float32))
    assert_product(mt.VERSIONS[version](shifted, cuda.to_device(b), out), a, b, name=version)
    assert wide_loads is None or not wide_loads


def test_splits_as_matmul_one_block_per_sm():
    assert mt.default_splits("matmul_pipelined_fragments", 1000, 1000, 1000, 132) == 2
    assert mt.default_splits("matmul_flat_offsets", 4096, 4096, 4096, 132) == 1
    with pytest.raises(ValueError, match="splits"):
        mt.matmul_flat_offsets(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32),
                               splits=0)


def test_compiles_to_ptx_with_128_bit_loads_and_no_local_memory():
    report = assert_compiles("matmul_tuned").splitlines()
    # the flat version fetches one k-step ahead, one 128-bit load from a and one from b;
    # the pipelined one in its loop's two k-steps and once before it
    for kernel, wide in [("matmul_flat_offsets_kernel", 2),
                         ("matmul_pipelined_fragments_kernel", 6)]:
        lines = [line for line in report if f".{kernel} " in line]
        assert len(lines) == 2 and all(" 0 local loads" in line for line in lines), lines
        assert all(f" {wide} 128-bit" in line for line in lines), lines


@pytest.mark.gpu
@pytest.mark.parametrize("version", sorted(mt.VERSIONS))
def test_shapes_that_divide_nothing_on_gpu(version):
    rng = np.random.default_rng(7)
    for m, k, n in GPU_SHAPES:
        a, b = operands(rng, m, k, n)
        out = cuda.to_device(np.full((m, n), np.nan, dtype=np.float32))
        assert_product(mt.VERSIONS[version](cuda.to_device(a), cuda.to_device(b), out), a, b,
                       name=f"{version} {m}x{k} @ {k}x{n}")
