import numpy as np
import pytest

from kernels import float4
from ptx import without_simulator


def test_the_simulator_stand_in_gives_four_consecutive_values(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    assert float4.load_float4_simulated(x, 2, 4) == tuple(x[2, 4:8])


@pytest.mark.parametrize("shape, col", [((3, 8), 2), ((3, 6), 0)])
def test_the_simulator_stand_in_refuses_a_load_off_16_byte_boundaries(shape, col):
    with pytest.raises(AssertionError, match="aligned"):
        float4.load_float4_simulated(np.ones(shape, np.float32), 1, col)


def test_the_simulator_stand_in_refuses_a_float64_array():
    with pytest.raises(TypeError, match=r"got a 2D float64 array; it accepts a 2D "
                                        r"C-contiguous float32 array"):
        float4.load_float4_simulated(np.ones((2, 8)), 0, 0)


def test_the_intrinsic_refuses_any_array_but_float32_c_contiguous_2d_when_compiled():
    # compiled for a GPU target in a process without the simulator (no GPU needed)
    code = ("from numba import cuda; from kernels import float4\n"
            "def first(x, out):\n"
            "    out[0] = float4.load_float4(x, 0, 0)[0]\n"
            "for x in ('float32[:, ::1]', 'float64[:, ::1]', 'float32[:, :]', 'float32[::1]'):\n"
            "    try:\n"
            "        cuda.compile_ptx(first, f'void({x}, float32[::1])', cc=(7, 5))\n"
            "        print(x, 'compiled')\n"
            "    except Exception as e:\n"
            "        print(x, next(line.strip() for line in str(e).splitlines()\n"
            "                      if 'load_float4 got' in line))\n")
    lines = without_simulator(code).splitlines()
    accepted = "it accepts a 2D C-contiguous float32 array (float32[:, ::1])"
    assert lines[0] == "float32[:, ::1] compiled"
    for line, given in zip(lines[1:], ("array(float64, 2d, C)", "array(float32, 2d, A)",
                                       "array(float32, 1d, C)"), strict=True):
        assert f"load_float4 got x of type {given}; {accepted}" in line, line


def test_load_float4_at_on_the_simulator_reads_at_a_flat_offset(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    assert float4.load_float4_at_simulated(x, 12) == tuple(x[1, 4:8])
    with pytest.raises(AssertionError, match="aligned"):
        float4.load_float4_at_simulated(x, 6)
    with pytest.raises(TypeError, match="load_float4_at got a 2D float64 array"):
        float4.load_float4_at_simulated(np.ones((2, 8)), 0)


def test_load_float4_at_compiles_to_one_128_bit_load_and_refuses_other_arrays():
    code = ("from numba import cuda; from kernels import float4\n"
            "def first(x, off, out):\n"
            "    out[0] = float4.load_float4_at(x, off)[3]\n"
            "for x in ('float32[:, ::1]', 'float64[:, ::1]', 'float32[:, :]'):\n"
            "    try:\n"
            "        ptx, _ = cuda.compile_ptx(first, f'void({x}, int64, float32[::1])',\n"
            "                                  cc=(7, 5))\n"
            "        print(x, ptx.count('ld.global.v4.f32'))\n"
            "    except Exception as e:\n"
            "        print(x, next(line.strip() for line in str(e).splitlines()\n"
            "                      if 'load_float4_at got' in line))\n")
    lines = without_simulator(code).splitlines()
    assert lines[0] == "float32[:, ::1] 1"
    for line, given in zip(lines[1:], ("array(float64, 2d, C)", "array(float32, 2d, A)"),
                           strict=True):
        assert f"load_float4_at got x of type {given}; it accepts a 2D C-contiguous" in line
