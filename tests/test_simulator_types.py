"""kernels.simulator_types: kernels declared with signatures run as a GPU runs them (the
float literals are tested with the block manager, in test_simulator)."""

import numpy as np
import pytest
from numba import cuda

from kernels import SIMULATOR

pytestmark = pytest.mark.skipif(not SIMULATOR, reason="the simulator's typing")


if SIMULATOR:
    @cuda.jit("void(float32[:], float32[::1], float32)")
    def scale_declared(a, out, s):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i] * s

    @cuda.jit
    def lazy(a):
        a[0] = 1

    @cuda.jit(["void(float64[:], float64[:], float64)", "void(int32[:], int32[:], int32)"])
    def scale_either(a, out, s):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i] * s


def test_a_kernel_runs_only_with_the_types_it_is_declared_for(rng):
    """As on a GPU: an array of another dtype, rank or layout fits no signature (a GPU
    misreads it or refuses the launch); a scalar is converted to the declared type."""
    a = rng.standard_normal(37).astype(np.float32)
    out = np.full(37, np.nan, np.float32)
    scale_declared[2, 32](a, out, 1.1)  # 1.1 passed as float32, as a GPU passes it
    np.testing.assert_array_equal(out, a * np.float32(1.1))
    for wrong in (a.astype(np.float64), a.reshape(1, 37)):
        with pytest.raises(TypeError, match=r"No matching definition .* scale_declared is "
                           r"declared for \(array\(float32, 1d, A\)"):
            scale_declared[2, 32](wrong, out, 1.0)
    with pytest.raises(TypeError, match="No matching definition"):  # out must be C-ordered
        scale_declared[2, 32](a, np.zeros((37, 2), np.float32)[:, 0], 1.0)
    ints = np.arange(37, dtype=np.int32)
    got = np.zeros(37, np.int32)
    scale_either[2, 32](ints, got, 3)  # the second signature
    np.testing.assert_array_equal(got, ints * 3)
    with pytest.raises(TypeError, match=r"declared for \(array\(float64.*\) or \(array\(int32"):
        scale_either[2, 32](a, out, 2.0)
    assert not hasattr(lazy, "_signatures")  # compiled at each launch: any types
