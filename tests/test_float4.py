import numpy as np
import pytest

from kernels import float4


def test_the_simulator_stand_in_gives_four_consecutive_values(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    assert float4.load_float4_simulated(x, 2, 4) == tuple(x[2, 4:8])


@pytest.mark.parametrize("shape, col", [((3, 8), 2), ((3, 6), 0)])
def test_the_simulator_stand_in_refuses_a_load_off_16_byte_boundaries(shape, col):
    with pytest.raises(AssertionError, match="aligned"):
        float4.load_float4_simulated(np.ones(shape, np.float32), 1, col)
