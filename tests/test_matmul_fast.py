import numpy as np
import pytest
from numba import cuda

from kernels import matmul as mm, matmul_fast as mf
from kernels.harness import check
from ptx import assert_compiles

MATRICES = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
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
}
# (m, k, n): sizes that divide no tile; the last two span two block tiles along n or
# m, and several k-steps
SHAPES = [(1, 1, 1), (17, 17, 17), (3, 19, 130), (130, 9, 3)]
# on a GPU, the shapes that divide nothing, and sizes that fill it
GPU_SHAPES = [(1, 1, 1), (1, 4097, 1), (4097, 1, 3), (1023, 517, 769), (1000, 1000, 1000),
              (256, 4096, 256)]


def operands(rng, m, k, n):
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def assert_product(c, a, b, name="c"):
    rtol, atol = mm.tolerance(a, b)
    check(c, mm.matmul_float64(a, b), name=name, rtol=rtol, atol=atol)


@pytest.mark.parametrize("version", sorted(mf.VERSIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_float64_reference(version, shape, rng):
    a, b = operands(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)  # poisoned
    assert_product(mf.VERSIONS[version](a, b, out), a, b, name=version)


@pytest.mark.parametrize("splits", [2, 3, 100])
def test_split_k_adds_every_share_once(splits, rng):
    a, b = operands(rng, 5, 41, 7)  # 41 = 5 k-steps and one more term
    out = cuda.to_device(np.full((5, 7), np.nan, dtype=np.float32))  # poisoned: zeroed first
    assert_product(mf.matmul_split_k(cuda.to_device(a), cuda.to_device(b), out,
                                     splits=splits), a, b, name=f"splits={splits}")


def test_split_k_fills_the_sms_only_where_the_tiles_do_not():
    assert mf.split_k(1000, 1000, 1000, 132) == 4  # 64 tiles
    assert mf.split_k(4096, 4096, 4096, 132) == 1  # 1024 tiles
    assert mf.split_k(1000, 1000, 8, 132) == 1  # too little k to share
    with pytest.raises(ValueError, match="splits"):
        mf.matmul_split_k(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), splits=0)


def test_compiles_to_ptx():
    assert_compiles("matmul_fast")


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
